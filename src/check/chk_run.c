/* `ropelab check`: runs every kernel's case table on one device. Adding a
 * kernel = one chk_<kernel>.c file with its cases + one line here. */
#include <stdio.h>

#include "check/chk.h"
#include "core/rl_util.h"

typedef struct chk_suite {
    const char *name;
    rl_status (*run)(rlvk_device *dev, const chk_options *opt, chk_report *report, rl_error *err);
} chk_suite;

static const chk_suite suites[] = {
    {"rope", chk_rope_cases},
    {"rope-emu", chk_rope_emu_cases},
    {"pe", chk_pe_cases},
    {"attn", chk_attn_cases},
};

rl_status chk_run_device(rlvk_device *dev, const chk_options *opt, chk_report *report,
                         rl_error *err)
{
    snprintf(report->device, sizeof report->device, "%s", dev->info.name);
    snprintf(report->driver, sizeof report->driver, "%s %s", dev->info.driver_name,
             dev->info.driver_info);
    report->device_index = dev->info.index;
    report->kernel_pattern = opt->kernel_pattern;
    report->shape_pattern = opt->shape_pattern;
    unsigned before = rlvk_instance_messages(dev->inst);
    rl_status st = RL_OK;
    for (size_t i = 0; i < RL_ARRAY_LEN(suites) && st == RL_OK; i++) {
        st = suites[i].run(dev, opt, report, err);
        if (st)
            rl_error_prefix(err, "check %s", suites[i].name);
    }
    report->validation_messages = rlvk_instance_messages(dev->inst) - before;
    if (report->validation_messages)
        report->failed = 1;
    return st;
}
