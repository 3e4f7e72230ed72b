/* run_data.c — Q/K/V sources: synthetic generators and tensor files, and
 * the data section's parameter table. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_fs.h"
#include "core/rl_safetensors.h"
#include "core/rl_util.h"
#include "core/rl_npy.h"
#include "pe/rope.h"
#include "run/run_int.h"

/* ---- the data section's parameters ---------------------------------------- */

/* seed -1: the batch's seed (filled in after parsing). The keys from
 * band_lo on belong to source structured (run_data_resolve removes them for
 * the other sources). */
const rl_param run_data_params[] = {
    {.key = "source", .type = RL_P_ENUM, .def = "\"gaussian\"",
     .choices = "gaussian|ones|shared|structured|npy|safetensors|capture",
     .help = "where Q/K/V come from (docs/runner.md: what each source can show)"},
    {.key = "seed", .type = RL_P_INT, .min = 0, .max = 9007199254740991.0, .def = "-1",
     .help = "seeds the synthetic data (default: the batch's seed)"},
    {.key = "scale", .type = RL_P_NUM, .min = 0, .max = 1e30, .def = "1",
     .help = "gaussian/ones/shared: amplitude of every element"},
    {.key = "noise", .type = RL_P_NUM, .min = 0, .max = 1e30, .def = "0.1",
     .help = "shared: standard deviation of the noise added to each key element"},
    {.key = "path", .type = RL_P_STR, .def = "null",
     .help = "safetensors: the file; capture: the file scripts/capture_qk.py wrote"},
    {.key = "q", .type = RL_P_STR, .def = "null", .help = "npy: file; safetensors: tensor name"},
    {.key = "k", .type = RL_P_STR, .def = "null", .help = "npy: file; safetensors: tensor name"},
    {.key = "v", .type = RL_P_STR, .def = "null", .help = "npy: file; safetensors: tensor name"},
    {.key = "layout", .type = RL_P_ENUM, .def = "\"thd\"", .choices = "thd|htd",
     .help = "file tensors: thd = [tokens][heads][head_dim], htd = [heads][tokens][head_dim]"},
    {.key = "layer", .type = RL_P_INT, .min = 0, .max = 1 << 20, .def = "null",
     .help = "capture: the captured layer whose q/k/v are read (tensors layer.<layer>.q/k/v)"},
    {.key = "band_lo", .type = RL_P_NUM, .min = 0, .max = 1, .def = "0.125",
     .help = "structured: first rotary pair of the mean band, as a fraction of the pairs "
             "from the fastest (0) to the slowest (1); pair j is in the band when "
             "band_lo <= (j + 1/2) / (head_dim / 2) < band_hi"},
    {.key = "band_hi", .type = RL_P_NUM, .min = 0, .max = 1, .def = "1",
     .help = "structured: end of the mean band (fraction of the pairs, exclusive)"},
    {.key = "position_logit", .type = RL_P_NUM, .min = 0, .max = 1e4, .def = "8",
     .help = "structured: <mu_q, mu_k> / sqrt(head_dim), the logit the shared mean gives a "
             "key at distance 0 (it falls off as sum_j cos(r theta_j) over the band)"},
    {.key = "content_logit", .type = RL_P_NUM, .min = 0, .max = 1e4, .def = "1",
     .help = "structured: variance per element of the zero-mean content part, = the "
             "standard deviation of its content-content logit <c_q, c_k> / sqrt(head_dim)"},
    {.key = "temperature", .type = RL_P_NUM, .min = 1e-6, .max = 1e6, .def = "1",
     .help = "structured: every logit divided by it (q and k scaled by temperature^-1/2)"},
    {.key = "pairs", .type = RL_P_ENUM, .def = "\"half\"", .choices = "half|interleaved",
     .help = "structured: which elements form rotary pair j (half: j, j + head_dim/2; "
             "interleaved: 2j, 2j + 1), as the encoding's layout"},
};
const size_t run_data_n_params = sizeof run_data_params / sizeof run_data_params[0];

rl_status run_data_resolve(json_t *d, rl_error *err)
{
    const char *src = json_string_value(json_object_get(d, "source"));
    int structured = src && !strcmp(src, "structured");
    int capture = src && !strcmp(src, "capture");
    if (!capture && json_is_integer(json_object_get(d, "layer")))
        return rl_fail_key(err, RL_ERR_ARG, "layer",
                           "layer applies to source capture only (source is %s)",
                           src ? src : "?");
    if (capture) {
        for (const char *w = "qkv"; *w; w++) {
            char key[2] = {*w, 0};
            if (json_is_string(json_object_get(d, key)))
                return rl_fail_key(err, RL_ERR_ARG, key, "source capture names its tensors "
                                   "layer.<layer>.q/k/v itself; give layer, not %s", key);
        }
        if (strcmp(json_string_value(json_object_get(d, "layout")), "thd"))
            return rl_fail_key(err, RL_ERR_ARG, "layout",
                               "source capture stores [tokens][heads][head_dim] "
                               "(layout thd); layout %s does not apply",
                               json_string_value(json_object_get(d, "layout")));
        if (!json_is_string(json_object_get(d, "path")))
            return rl_fail_key(err, RL_ERR_ARG, "path",
                               "source capture needs 'path: file.safetensors' (a "
                               "file scripts/capture_qk.py wrote)");
        if (!json_is_integer(json_object_get(d, "layer")))
            return rl_fail_key(err, RL_ERR_ARG, "layer",
                               "source capture needs 'layer: N', one of the "
                               "captured layers");
    }
    long first = rl_param_find(run_data_params, run_data_n_params, "band_lo");
    for (size_t i = (size_t)first; first >= 0 && i < run_data_n_params; i++) {
        const rl_param *p = &run_data_params[i];
        json_t *v = json_object_get(d, p->key);
        if (structured || !v)
            continue;
        json_error_t je;
        json_t *def = json_loads(p->def, JSON_DECODE_ANY, &je);
        int same = def && (json_is_number(v) ? json_is_number(def) &&
                                                   json_number_value(v) == json_number_value(def)
                                             : json_equal(v, def));
        json_decref(def);
        if (!same)
            return rl_fail_key(err, RL_ERR_ARG, p->key,
                               "%s applies to source structured only (source is "
                               "%s)", p->key, src ? src : "?");
        json_object_del(d, p->key);
    }
    if (structured) {
        double lo = json_number_value(json_object_get(d, "band_lo")),
               hi = json_number_value(json_object_get(d, "band_hi"));
        if (!(lo < hi))
            return rl_fail_key(err, RL_ERR_ARG, "band_lo",
                               "band_lo %g must be below band_hi %g", lo, hi);
    }
    return RL_OK;
}

/* ---- tensor files --------------------------------------------------------- */

typedef struct tfile {
    int is_npy, is_capture;
    char path[1200];
    rl_npy npy;    /* header only (data read per slice from npy_fp) */
    FILE *npy_fp;  /* the one stream the header came from (rl_npy_open) */
    rl_safetensors st;
    run_capture cap;
    const rl_safetensors *stp;   /* &st or &cap.st */
    const rl_st_tensor *t;
    uint32_t rank;
    const uint64_t *shape;
} tfile;

static void tfile_close(tfile *f)
{
    if (f->is_capture)
        run_capture_close(&f->cap);
    else if (!f->is_npy)
        rl_safetensors_close(&f->st);
    if (f->npy_fp)
        fclose(f->npy_fp);
    f->npy_fp = NULL;
}

static void join_path(char *dst, size_t cap, const char *base, const char *p)
{
    if (p[0] == '/')
        snprintf(dst, cap, "%s", p);
    else
        snprintf(dst, cap, "%s/%s", base, p);
}

static rl_status tfile_open(const json_t *d, const char *base, char which, tfile *f,
                            rl_error *err)
{
    memset(f, 0, sizeof *f);
    const char *src = json_string_value(json_object_get(d, "source"));
    char key[2] = {which, 0};
    const char *name = json_string_value(json_object_get(d, key));
    f->is_npy = !strcmp(src, "npy");
    rl_status st;
    if (f->is_npy) {
        if (!name)
            return rl_fail_key(err, RL_ERR_ARG, key, "source npy needs '%s: file.npy'", key);
        join_path(f->path, sizeof f->path, base, name);
        if ((st = rl_npy_open(f->path, &f->npy, &f->npy_fp, err))) {
            rl_error_set_key(err, key);
            return st;
        }
        f->rank = f->npy.ndim;
        f->shape = f->npy.shape;
        return RL_OK;
    }
    const char *path = json_string_value(json_object_get(d, "path"));
    if (!strcmp(src, "capture")) {
        f->is_capture = 1;
        if (!path)
            return rl_fail_key(err, RL_ERR_ARG, "path",
                               "source capture needs 'path: file.safetensors'");
        join_path(f->path, sizeof f->path, base, path);
        if ((st = run_capture_open(f->path, &f->cap, err))) {
            rl_error_set_key(err, "path");
            return st;
        }
        uint32_t layer = (uint32_t)json_integer_value(json_object_get(d, "layer"));
        if ((st = run_capture_has_layer(&f->cap, layer, err))) {
            rl_error_set_key(err, "layer");
            run_capture_close(&f->cap);
            return st;
        }
        f->stp = &f->cap.st;
        f->t = run_capture_tensor(&f->cap, layer, which);
        f->rank = f->t->rank;
        f->shape = f->t->shape;
        return RL_OK;
    }
    if (!path)
        return rl_fail_key(err, RL_ERR_ARG, "path",
                           "source safetensors needs 'path: file.safetensors'");
    if (!name)
        return rl_fail_key(err, RL_ERR_ARG, key,
                           "source safetensors needs '%s: <tensor name>'", key);
    join_path(f->path, sizeof f->path, base, path);
    if ((st = rl_safetensors_open(f->path, &f->st, err))) {
        rl_error_set_key(err, "path");
        return st;
    }
    f->t = rl_safetensors_find(&f->st, name);
    if (!f->t) {
        rl_safetensors_close(&f->st);
        return rl_fail_key(err, RL_ERR_ARG, key, "%s: no tensor named '%s'", f->path, name);
    }
    f->stp = &f->st;
    if (strcmp(f->t->dtype, "F32") && strcmp(f->t->dtype, "F16") && strcmp(f->t->dtype, "BF16")) {
        rl_status s2 = rl_fail_key(err, RL_ERR_UNSUPPORTED, key,
                                   "%s: tensor '%s' has dtype %s (F32, "
                                   "F16 or BF16 needed)", f->path, name, f->t->dtype);
        rl_safetensors_close(&f->st);
        return s2;
    }
    f->rank = f->t->rank;
    f->shape = f->t->shape;
    return RL_OK;
}

/* Checks rank 3 and the declared layout against heads and head_dim;
 * *tokens receives the token count. */
static rl_status tfile_check(const tfile *f, const char *layout, uint32_t heads,
                             uint32_t head_dim, char which, uint64_t *tokens, rl_error *err)
{
    int htd = !strcmp(layout, "htd");
    char key[2] = {which, 0}; /* the data key naming the tensor (npy, safetensors) */
    if (f->rank != 3)
        return rl_fail_key(err, RL_ERR_ARG, key,
                           "%s: tensor %c has rank %u, expected 3 (%s)", f->path,
                           which, f->rank,
                           htd ? "[heads][tokens][head_dim]" : "[tokens][heads][head_dim]");
    uint64_t h = htd ? f->shape[0] : f->shape[1], t = htd ? f->shape[1] : f->shape[0];
    if (h != heads || f->shape[2] != head_dim)
        return rl_fail_key(err, RL_ERR_ARG, key,
                           "%s: tensor %c has shape [%llu, %llu, %llu] but layout "
                           "%s and the model need %s=%u, head_dim=%u", f->path, which,
                           (unsigned long long)f->shape[0], (unsigned long long)f->shape[1],
                           (unsigned long long)f->shape[2], layout,
                           htd ? "dim 0 heads" : "dim 1 heads",
                           heads, head_dim);
    if (t == 0)
        return rl_fail_key(err, RL_ERR_ARG, key, "%s: tensor %c has no tokens", f->path, which);
    *tokens = t;
    return RL_OK;
}

/* The structured source's band for head_dim hd: pairs [*j0, *j1). */
static void structured_band(const json_t *d, uint32_t hd, uint32_t *j0, uint32_t *j1)
{
    double lo = json_number_value(json_object_get(d, "band_lo")),
           hi = json_number_value(json_object_get(d, "band_hi"));
    uint32_t n = hd / 2, a = n, b = 0;
    for (uint32_t j = 0; j < n; j++) {
        double c = (j + 0.5) / n;
        if (c >= lo && c < hi) {
            a = j < a ? j : a;
            b = j + 1;
        }
    }
    *j0 = a < b ? a : 0;
    *j1 = a < b ? b : 0;
}

rl_status run_data_probe(const json_t *d, const exp_model *m, const char *base, rl_error *err)
{
    const char *src = json_string_value(json_object_get(d, "source"));
    if (!strcmp(src, "structured")) {
        uint32_t j0, j1;
        structured_band(d, m->head_dim, &j0, &j1);
        if (j1 == j0 && json_number_value(json_object_get(d, "position_logit")) > 0)
            return rl_fail(err, RL_ERR_ARG, "structured: the band [%g, %g) holds no rotary "
                           "pair of head_dim %u (pair j sits at (j + 1/2) / %u)",
                           json_number_value(json_object_get(d, "band_lo")),
                           json_number_value(json_object_get(d, "band_hi")), m->head_dim,
                           m->head_dim / 2);
        return RL_OK;
    }
    if (!strcmp(src, "capture")) {
        tfile f;
        rl_status st = tfile_open(d, base, 'q', &f, err);
        if (st)
            return st;
        static const char *const keys[] = {"heads", "kv_heads", "head_dim"};
        uint32_t model[] = {m->heads, m->kv_heads, m->head_dim},
                 file[] = {f.cap.heads, f.cap.kv_heads, f.cap.head_dim};
        for (size_t i = 0; !st && i < 3; i++)
            if (model[i] != file[i])
                st = rl_fail(err, RL_ERR_ARG, "%s: model %s is %u in the batch but %u in the "
                             "capture (its metadata key '%s'); use model: {capture: FILE}, "
                             "or set %s: %u", f.path, keys[i], model[i], file[i], keys[i],
                             keys[i], file[i]);
        tfile_close(&f);
        return st;
    }
    if (strcmp(src, "npy") && strcmp(src, "safetensors"))
        return RL_OK;
    const char *layout = json_string_value(json_object_get(d, "layout"));
    int any = 0;
    for (const char *w = "qkv"; *w; w++) {
        char key[2] = {*w, 0};
        if (!json_object_get(d, key) && *w != 'q')
            continue;
        any = 1;
        tfile f;
        uint64_t t;
        rl_status st = tfile_open(d, base, *w, &f, err);
        if (!st) {
            st = tfile_check(&f, layout, *w == 'q' ? m->heads : m->kv_heads, m->head_dim, *w, &t,
                             err);
            tfile_close(&f);
        }
        if (st)
            return st;
    }
    (void)any;
    return RL_OK;
}

rl_status run_data_check_rows(const json_t *d, uint64_t rows, const char *base, rl_error *err)
{
    const char *src = json_string_value(json_object_get(d, "source"));
    if (!src || strcmp(src, "capture"))
        return RL_OK;
    tfile f;
    rl_status st = tfile_open(d, base, 'q', &f, err);
    if (st)
        return st;
    if (rows > f.cap.tokens)
        st = rl_fail(err, RL_ERR_LIMIT, "%s: this run reads %llu tokens but the capture holds "
                     "%llu (its metadata key 'tokens'); lower the run's length or capture a "
                     "longer text", f.path, (unsigned long long)rows,
                     (unsigned long long)f.cap.tokens);
    tfile_close(&f);
    return st;
}

/* ---- filling ------------------------------------------------------------- */

static rl_status fill_file(const run_data *rd, char which, uint64_t tokens, float *out,
                           rl_error *err)
{
    char key[2] = {which, 0};
    const char *src = json_string_value(json_object_get(rd->desc, "source"));
    if (strcmp(src, "capture") && !json_object_get(rd->desc, key))
        return rl_fail(err, RL_ERR_ARG, "data: this run needs tensor '%s', which the data "
                       "section does not name", key);
    tfile f;
    uint64_t avail = 0;
    uint32_t heads = which == 'q' ? rd->model.heads : rd->model.kv_heads, hd = rd->model.head_dim;
    const char *layout = json_string_value(json_object_get(rd->desc, "layout"));
    rl_status st = tfile_open(rd->desc, rd->base_dir, which, &f, err);
    if (st)
        return st;
    if ((st = tfile_check(&f, layout, heads, hd, which, &avail, err)))
        goto done;
    if (tokens > avail) {
        st = rl_fail(err, RL_ERR_LIMIT, "%s: this run needs %llu tokens, tensor %c has %llu%s",
                     f.path, (unsigned long long)tokens, which, (unsigned long long)avail,
                     f.is_capture ? " (the capture's token count)" : "");
        goto done;
    }
    int htd = !strcmp(layout, "htd");
    /* read [tokens][heads][hd] rows; htd files are read head by head */
    for (uint32_t h = 0; h < (htd ? heads : 1) && !st; h++) {
        for (uint64_t t = 0; t < (htd ? tokens : 1) && !st; t++) {
            uint64_t first = htd ? ((uint64_t)h * avail + t) * hd : 0;
            uint64_t count = htd ? hd : tokens * heads * hd;
            float *dst = htd ? out + (t * heads + h) * hd : out;
            if (f.is_npy) { /* the one .npy reader, on the one stream */
                st = rl_npy_read_f32(f.npy_fp, f.path, &f.npy, first, count, dst, err);
            } else {
                st = rl_safetensors_read_f32(f.stp, f.t, first, count, dst, err);
            }
        }
    }
done:
    tfile_close(&f);
    return st;
}

/* The structured source (docs/runner.md "Data sources"): q and k rows are
 *
 *   x_t = temperature^-1/2 (mu + sqrt(content_logit) eps_t),  eps_t ~ N(0, I)
 *
 * with one mean mu, the same for q and k, every head and every token: each
 * element of each rotary pair j in the band [j0, j1) is A, the others 0, and
 * A^2 = position_logit sqrt(d) / (2 (j1 - j0)), so <mu, mu> / sqrt(d) =
 * position_logit. After RoPE the mean gives the logit of key n for query m
 * a position term (1/T) (2A^2/sqrt(d)) sum_band cos((n - m) theta_j) (times
 * the attention factor's square), which a rotation scaling changes; the
 * content part is the isotropic term on which all rotations agree. Real
 * Q/K carry such large token-shared components in their low-frequency
 * pairs (Jin et al. 2025, arXiv:2502.01563, ICML 2025: "massive values"
 * concentrated in low-frequency dimensions of Q and K, not of V, caused by
 * RoPE). v is N(0, 1) per element. Rows are drawn in order from the streams
 * data.q / data.k / data.v, so the first T rows do not depend on how many
 * are asked for, and q and k contents are independent: every key is a
 * distractor of the same distribution, and the retrieval kind's needle
 * (its query copied, mean included) differs from them only by content. */
static rl_status fill_structured(const json_t *d, char which, uint64_t tokens, uint32_t heads,
                                 uint32_t hd, float *out)
{
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(d, "seed"));
    rl_rng rng;
    char stream[16] = "data.?";
    stream[5] = which;
    rl_rng_seed(&rng, seed, stream);
    uint64_t n = tokens * heads * hd;
    if (which == 'v') {
        for (uint64_t i = 0; i < n; i++)
            out[i] = (float)rl_rng_normal(&rng);
        return RL_OK;
    }
    double P = json_number_value(json_object_get(d, "position_logit")),
           C = json_number_value(json_object_get(d, "content_logit")),
           T = json_number_value(json_object_get(d, "temperature"));
    int interleaved = rope_layout_parse(json_string_value(json_object_get(d, "pairs"))) ==
                      RL_ROPE_LAYOUT_INTERLEAVED;
    uint32_t j0, j1;
    structured_band(d, hd, &j0, &j1);
    double A = j1 > j0 ? sqrt(P * sqrt((double)hd) / (2.0 * (j1 - j0))) : 0.0;
    double g = 1.0 / sqrt(T), sc = sqrt(C);
    double mu[ROPE_MAX_HEAD_DIM] = {0};
    for (uint32_t j = j0; j < j1; j++) {
        mu[interleaved ? 2 * j : j] = A;
        mu[interleaved ? 2 * j + 1 : j + hd / 2] = A;
    }
    for (uint64_t i = 0; i < n; i++)
        out[i] = (float)(g * (mu[i % hd] + sc * rl_rng_normal(&rng)));
    return RL_OK;
}

rl_status run_data_fill(void *user, char which, uint64_t tokens, float *out, rl_error *err)
{
    const run_data *rd = user;
    const json_t *d = rd->desc;
    const char *src = json_string_value(json_object_get(d, "source"));
    if (!strcmp(src, "npy") || !strcmp(src, "safetensors") || !strcmp(src, "capture")) {
        rl_status st = fill_file(rd, which, tokens, out, err);
        /* the model's order -> the kernels' (rotated part first); the same
         * permutation of q and k keeps every q.k, v is not rotated */
        if (!st && rd->rope_part && which != 'v')
            rope_part_permute(rd->rope_part, out,
                              tokens * (which == 'q' ? rd->model.heads : rd->model.kv_heads), 1);
        return st;
    }
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(d, "seed"));
    double scale = json_number_value(json_object_get(d, "scale"));
    double noise = json_number_value(json_object_get(d, "noise"));
    uint32_t hd = rd->model.head_dim, hq = rd->model.heads, hk = rd->model.kv_heads;
    uint32_t heads = which == 'q' ? hq : hk;
    uint64_t n = tokens * heads * hd;
    if (!strcmp(src, "structured"))
        return fill_structured(d, which, tokens, heads, hd, out);
    if (!strcmp(src, "ones")) {
        for (uint64_t i = 0; i < n; i++)
            out[i] = (float)scale;
        return RL_OK;
    }
    rl_rng rng;
    char stream[16] = "data.?";
    stream[5] = which;
    rl_rng_seed(&rng, seed, stream);
    if (!strcmp(src, "gaussian") || which == 'q' || which == 'v') {
        /* rows are drawn in order, so the first T rows do not depend on how
         * many are asked for */
        for (uint64_t i = 0; i < n; i++)
            out[i] = (float)(scale * rl_rng_normal(&rng));
        return RL_OK;
    }
    /* shared: k_j = q_{perm(j)} + noise * N(0, 1), kv head g taking query
     * head g * (heads / kv_heads), so each key has exactly one matching
     * query and retrieval is meaningful */
    float *q = malloc(tokens * hq * hd * sizeof *q);
    uint64_t *perm = malloc(tokens * sizeof *perm);
    if (!q || !perm) {
        free(q), free(perm);
        return rl_fail(err, RL_ERR_NOMEM, "data: out of host memory for %llu tokens",
                       (unsigned long long)tokens);
    }
    rl_status st = run_data_fill(user, 'q', tokens, q, err);
    if (!st) {
        rl_rng pr;
        rl_rng_seed(&pr, seed, "data.perm");
        for (uint64_t i = 0; i < tokens; i++)
            perm[i] = i;
        for (uint64_t i = tokens; i > 1; i--) {
            uint64_t j = rl_rng_u64(&pr) % i;
            uint64_t t = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = t;
        }
        uint32_t group = hq / hk;
        for (uint64_t t = 0; t < tokens; t++)
            for (uint32_t g = 0; g < hk; g++)
                for (uint32_t i = 0; i < hd; i++)
                    out[(t * hk + g) * hd + i] =
                        (float)(q[(perm[t] * hq + (uint64_t)g * group) * hd + i] +
                                noise * rl_rng_normal(&rng));
    }
    free(q), free(perm);
    return st;
}
