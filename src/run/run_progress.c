/* run_progress.c — the text of progress lines (the scheduler decides when
 * and where they are shown: stderr, live on a terminal, one line per job
 * otherwise). */
#include <math.h>
#include <stdio.h>

#include "run/run_int.h"

/* "12.3 s", "4 min 05 s", "2 h 03 min". */
static void fmt_secs(double s, char *buf, size_t cap)
{
    if (!(s >= 0) || s > 1e7)
        snprintf(buf, cap, "?");
    else if (s < 100)
        snprintf(buf, cap, "%.1f s", s);
    else if (s < 3600)
        snprintf(buf, cap, "%d min %02d s", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, cap, "%d h %02d min", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void run_progress_line(char *buf, size_t cap, size_t k, size_t n, const char *id,
                       const char *kind, const char *enc, const char *phase, double done,
                       double total, double elapsed)
{
    char el[32], eta[32];
    fmt_secs(elapsed, el, sizeof el);
    double frac = total > 0 ? done / total : 0;
    if (frac > 1)
        frac = 1;
    if (done > 0 && total >= done)
        fmt_secs(elapsed * (total - done) / done, eta, sizeof eta);
    else
        snprintf(eta, sizeof eta, "?");
    snprintf(buf, cap, "run %zu/%zu %s %s %s: %s %3.0f%% %s, ETA %s", k, n, id, kind, enc, phase,
             100 * frac, el, eta);
}

void run_progress_done_line(char *buf, size_t cap, size_t k, size_t n, const char *id,
                            const char *kind, const char *enc, const char *dev, int ok,
                            const char *reason, double wall_s, double device_s)
{
    if (ok)
        snprintf(buf, cap, "run %zu/%zu %s %s %s on %s: passed, verified (%.2f s wall, %.2f s "
                           "device)", k, n, id, kind, enc, dev, wall_s, device_s);
    else
        snprintf(buf, cap, "run %zu/%zu %s %s %s on %s: FAILED: %s (%.2f s wall)", k, n, id, kind,
                 enc, dev, reason, wall_s);
}
