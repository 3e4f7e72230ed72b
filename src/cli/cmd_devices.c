/* ropelab devices [--json] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "attn/attn_cm.h"
#include "attn/attn_path.h"
#include "cli/cli.h"
#include "run/run.h"
#include "core/rl_util.h"

/* The attention paths of a device (attn_path.c) at the reference shape of
 * `ropelab bench attention` (head_dim 128, with O: the largest staging):
 * the default, then each path with its tiles or why it does not run. */
static const attn_path_shape path_shape = {.head_dim = 128, .key_operands = 2};

static json_t *paths_json(const rlvk_device_info *in)
{
    attn_path_props p;
    attn_path_props_of(in, &p);
    attn_path a;
    attn_path_choose(&p, &path_shape, &a);
    json_t *all = json_array();
    for (int k = ATTN_PATH_SCALAR; k < ATTN_PATH_COUNT; k++) {
        attn_path e;
        attn_path_eval(&p, &path_shape, (attn_path_kind)k, &e);
        json_array_append_new(all, json_pack("{s:s,s:b,s:i,s:i,s:i,s:i,s:b,s:s}", "name",
                                             attn_path_name(e.kind), "supported", e.supported,
                                             "lanes_per_row", (int)e.split, "rows_per_workgroup",
                                             (int)attn_path_rows(&e), "workgroup", (int)e.wg_size,
                                             "block_keys", (int)e.block_keys, "texel_reads",
                                             e.texel, "why", e.why));
    }
    return json_pack("{s:s,s:s,s:s,s:o}", "shape", "head_dim 128, statistics + O", "default",
                     attn_path_name(a.kind), "why", a.why, "paths", all);
}

static void paths_print(const rlvk_device_info *in)
{
    attn_path_props p;
    attn_path_props_of(in, &p);
    attn_path a;
    attn_path_choose(&p, &path_shape, &a);
    printf("    subgroup operations 0x%x in stages 0x%x\n", in->subgroup_ops, in->subgroup_stages);
    printf("    attention path (head_dim 128 with O): %s — %s\n", attn_path_name(a.kind), a.why);
    for (int k = ATTN_PATH_SCALAR; k < ATTN_PATH_COUNT; k++) {
        attn_path e;
        attn_path_eval(&p, &path_shape, (attn_path_kind)k, &e);
        printf("      %-8s %s: %s\n", attn_path_name(e.kind), e.supported ? "yes" : "no ", e.why);
    }
}

static void version_str(uint32_t v, char *buf, size_t cap)
{
    snprintf(buf, cap, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
             VK_API_VERSION_PATCH(v));
}

/* Cooperative matrices: extensions, listed shapes, the attention path. */
static void print_coopmat(const rlvk_device_info *in)
{
    const rlvk_cm_info *cm = &in->cm;
    printf("    cooperative matrix: VK_NV_cooperative_matrix %s, VK_KHR_cooperative_matrix %s\n",
           cm->has_nv ? (cm->feat_nv ? "yes" : "listed, feature off") : "no",
           cm->has_khr ? (cm->feat_khr ? "yes" : "listed, feature off") : "no");
    for (uint32_t i = 0; i < cm->n_shapes; i++) {
        const rlvk_cm_shape *s = &cm->shapes[i];
        char b[4][16];
        printf("      %s %ux%ux%u %s x %s + %s -> %s, %s scope%s\n", s->khr ? "KHR" : "NV ",
               s->m, s->n, s->k, rlvk_cm_type_name(s->a, b[0], 16),
               rlvk_cm_type_name(s->b, b[1], 16), rlvk_cm_type_name(s->c, b[2], 16),
               rlvk_cm_type_name(s->result, b[3], 16), rlvk_cm_scope_name(s->scope),
               s->saturating ? ", saturating" : "");
    }
    if (cm->n_listed > cm->n_shapes)
        printf("      (%u more not shown)\n", cm->n_listed - cm->n_shapes);
    const char *why;
    attn_cm_shape cs;
    char sb[64];
    if (attn_cm_shape_of(in, &cs, &why))
        printf("    attention cooperative-matrix path: yes (attn_cm.comp, %s fp16 x fp16 + fp32)\n",
               attn_cm_shape_str(&cs, sb, sizeof sb));
    else
        printf("    attention cooperative-matrix path: no (%s)\n", why);
}

static json_t *coopmat_json(const rlvk_device_info *in)
{
    const rlvk_cm_info *cm = &in->cm;
    json_t *shapes = json_array();
    for (uint32_t i = 0; i < cm->n_shapes; i++) {
        const rlvk_cm_shape *s = &cm->shapes[i];
        char b[4][16];
        json_array_append_new(shapes, json_pack("{s:s,s:i,s:i,s:i,s:s,s:s,s:s,s:s,s:s,s:b}",
            "ext", s->khr ? "KHR" : "NV", "m", (int)s->m, "n", (int)s->n, "k", (int)s->k,
            "a", rlvk_cm_type_name(s->a, b[0], 16), "b", rlvk_cm_type_name(s->b, b[1], 16),
            "c", rlvk_cm_type_name(s->c, b[2], 16), "result", rlvk_cm_type_name(s->result, b[3], 16),
            "scope", rlvk_cm_scope_name(s->scope), "saturating", s->saturating));
    }
    const char *why;
    attn_cm_shape cs;
    char sb[64];
    int ok = attn_cm_shape_of(in, &cs, &why);
    return json_pack("{s:b,s:b,s:b,s:b,s:b,s:o,s:b,s:s?,s:s?}", "nv", cm->has_nv, "khr",
                     cm->has_khr, "nv_feature", cm->feat_nv, "khr_feature", cm->feat_khr,
                     "nv_compute", cm->nv_compute, "shapes", shapes, "attention_path", ok,
                     "attention_path_reason", ok ? NULL : why, "attention_path_shape",
                     ok ? attn_cm_shape_str(&cs, sb, sizeof sb) : NULL);
}

json_t *cli_device_identity_json(const rlvk_device_info *in)
{
    return run_device_identity_json(in); /* one decoder, shared with manifest.json */
}

int cmd_devices(int argc, char **argv)
{
    int json = 0;
    const cli_opt opts[] = {
        {"--json", CLI_FLAG, &json, NULL, "print a JSON array instead of a table"},
    };
    int rc = cli_parse("ropelab devices [--json]",
                       "Lists every Vulkan device with its index (for --device), type, vendor and\n"
                       "device id (hex), driver (name, info, driverID, version decoded as vulkaninfo\n"
                       "does), conformance version, device UUID, API version, subgroup size, shared\n"
                       "memory, workgroup count/size/invocation limits, fp16/fp64/int64 support and\n"
                       "memory heaps, cooperative-matrix extensions and shapes, and the attention\n"
                       "kernel path it gets (attn_path.c: scalar, subgroup split; the cooperative-\n"
                       "matrix kernel where it runs) with each path's tiles or why it does not\n"
                       "run. Conformance, driverID and UUID are empty/UNKNOWN on a device\n"
                       "without Vulkan 1.2 / VK_KHR_driver_properties (1.1 for the UUID).",
                       argc, argv, opts, RL_ARRAY_LEN(opts), NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    cli_devices d;
    if ((rc = cli_open("all", 0, &d)) >= 0)
        return rc;
    json_t *arr = json_array();
    for (uint32_t k = 0; k < d.n; k++) {
        rlvk_device_info in;
        rl_error err = {0};
        if (rlvk_device_info_query(&d.inst, d.index[k], &in, &err) != RL_OK) {
            cli_error("%s", err.msg);
            continue;
        }
        char api[32];
        version_str(in.api_version, api, sizeof api);
        if (json) {
            json_t *heaps = json_array();
            for (uint32_t h = 0; h < in.n_heaps; h++)
                json_array_append_new(heaps, json_pack("{s:I,s:b}", "bytes", (json_int_t)in.heaps[h].size,
                                                       "device_local", in.heaps[h].device_local));
            json_t *o = json_pack(
                "{s:i,s:s,s:s,s:i,s:i,s:s,s:s,s:i,s:s,s:i,s:i,s:I,s:[i,i,i],s:b,s:b,s:b,s:b,s:b,s:f,s:o}",
                "index", (int)in.index, "name", in.name, "type", in.type, "vendor_id", (int)in.vendor_id,
                "device_id", (int)in.device_id, "driver_name", in.driver_name, "driver_info",
                in.driver_info, "driver_version", (int)in.driver_version, "api_version", api,
                "subgroup_size", (int)in.subgroup_size, "max_shared_memory", (int)in.max_shared_memory,
                "max_storage_buffer_range", (json_int_t)in.max_storage_buffer_range,
                "max_workgroup_count", (int)in.max_workgroup_count[0], (int)in.max_workgroup_count[1],
                (int)in.max_workgroup_count[2], "fp16", in.fp16, "fp64", in.fp64, "int64", in.int64,
                "storage_buffer_16bit", in.storage16, "timestamps", in.timestamps,
                "timestamp_period_ns", in.timestamp_period_ns, "heaps", heaps);
            json_t *ident = cli_device_identity_json(&in);
            json_object_update(o, ident);
            json_decref(ident);
            json_object_set_new(o, "max_workgroup_size",
                                json_pack("[i,i,i]", (int)in.max_workgroup_size[0],
                                          (int)in.max_workgroup_size[1],
                                          (int)in.max_workgroup_size[2]));
            json_object_set_new(o, "max_workgroup_invocations",
                                json_integer(in.max_workgroup_invocations));
            json_object_set_new(o, "subgroup_operations", json_integer(in.subgroup_ops));
            json_object_set_new(o, "subgroup_stages", json_integer(in.subgroup_stages));
            json_object_set_new(o, "max_texel_buffer_elements", json_integer(in.max_texel_elements));
            json_object_set_new(o, "cooperative_matrix", coopmat_json(&in));
            json_object_set_new(o, "attention", paths_json(&in));
            json_array_append_new(arr, o);
        } else {
            printf("[%u] %s\n", in.index, in.name);
            printf("    type %s, vendor 0x%04x, device 0x%04x, Vulkan %s\n", in.type, in.vendor_id,
                   in.device_id, api);
            char uuid[33] = "";
            if (in.has_uuid)
                rlvk_uuid_hex(in.device_uuid, uuid);
            printf("    driver %s (%s), driverID %s, version %s (0x%08x)\n", in.driver_name,
                   in.driver_info, rlvk_driver_id_name(in.driver_id), in.driver_version_str,
                   in.driver_version);
            if (in.has_driver_props)
                printf("    conformance version %u.%u.%u.%u\n", in.conformance[0],
                       in.conformance[1], in.conformance[2], in.conformance[3]);
            else
                printf("    conformance version unknown (no VK_KHR_driver_properties)\n");
            printf("    device UUID %s\n", in.has_uuid ? uuid : "unknown");
            printf("    max workgroup size %u x %u x %u, max invocations %u\n",
                   in.max_workgroup_size[0], in.max_workgroup_size[1], in.max_workgroup_size[2],
                   in.max_workgroup_invocations);
            printf("    subgroup %u, shared memory %u B, max storage buffer range %llu B, "
                   "max texel buffer elements %u, max workgroups %u x %u x %u\n",
                   in.subgroup_size, in.max_shared_memory,
                   (unsigned long long)in.max_storage_buffer_range, in.max_texel_elements,
                   in.max_workgroup_count[0], in.max_workgroup_count[1], in.max_workgroup_count[2]);
            printf("    fp16 %s, fp64 %s, int64 %s, 16-bit storage %s, timestamps %s (period %g ns)\n",
                   in.fp16 ? "yes" : "no", in.fp64 ? "yes" : "no", in.int64 ? "yes" : "no",
                   in.storage16 ? "yes" : "no", in.timestamps ? "yes" : "no",
                   in.timestamp_period_ns);
            paths_print(&in);
            for (uint32_t h = 0; h < in.n_heaps; h++) {
                char b[32];
                printf("    heap %u: %s%s\n", h, rl_fmt_bytes(in.heaps[h].size, b, sizeof b),
                       in.heaps[h].device_local ? " device-local" : "");
            }
            print_coopmat(&in);
        }
    }
    if (json) {
        char *s = json_dumps(arr, JSON_INDENT(2));
        if (s)
            puts(s);
        free(s);
    }
    json_decref(arr);
    cli_close(&d);
    return CLI_EXIT_OK;
}
