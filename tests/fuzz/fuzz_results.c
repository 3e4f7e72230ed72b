/* libFuzzer harness for the results.csv reader behind `ropelab plot` (and
 * the tables `merge` combines): RFC 4180 parsing, column checks, grouping
 * into figures and series (seeds merged, intervals found), series labels — everything but the
 * gnuplot run itself (whose input quoting test_plot and test_cli cover). */
#include <stdlib.h>

#include "fuzz_file.h"
#include "plot/plot_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    const char *path = fuzz_file(data, size, ".csv");
    plot_csv t;
    rl_error err = {0};
    plot_ctx c = {.dir = "/nonexistent", .t = &t};
    plot_figure *figs = NULL;
    size_t n_figs = 0;
    if (plot_csv_read(path, &t, &err) == RL_OK && plot_ctx_columns(&c, path, &err) == RL_OK &&
        plot_group(&c, &figs, &n_figs, &err) == RL_OK) {
        char label[512];
        for (size_t f = 0; f < n_figs; f++)
            for (size_t s = 0; s < figs[f].n; s++) {
                plot_series_label(&c, &figs[f], s, -1, label, sizeof label);
            }
    }
    plot_figures_free(figs, n_figs);
    free(c.is_param);
    free(c.is_seed);
    free(c.is_ident);
    plot_csv_free(&t);
    return 0;
}
