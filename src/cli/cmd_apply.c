/* ropelab apply --encoding NAME [--set key=value ...] [--hf-config FILE]
 *               [--precision MODE] --input FILE [--tensor NAME]
 *               --positions FILE|START:STOP --out FILE [--device D] [--json]
 * Applies a registry encoding's vector transform to Q or K read from .npy
 * or .safetensors ([tokens][heads][head_dim] or [tokens][head_dim]) on the
 * device, verifies the result against the CPU reference (and, in RoPE's
 * framework emulation modes, against the CPU emulation of the same
 * arithmetic), and writes float32 .npy atomically (temp name + rename). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rl_fs.h"
#include "cli/cli.h"
#include "core/rl_npy.h"
#include "core/rl_safetensors.h"
#include "core/rl_util.h"
#include "pe/pe.h"
#include "pe/hf_model.h"
#include "pe/rope.h"
#include "verify/vf.h"

typedef struct apply_ctx {
    const char *encoding, *out;
    const json_t *params;
    float *x;          /* [tokens][heads][head_dim] */
    uint32_t *pos;     /* [tokens] */
    uint64_t tokens;
    uint32_t heads, head_dim, ndim;
    uint64_t shape[3];
    pe_role role;      /* --role: the input is Q (default) or K */
} apply_ctx;

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The input tensor as float32 with its shape (2-D or 3-D). */
static rl_status load_input(const char *path, const char *tensor, apply_ctx *c, rl_error *err)
{
    uint64_t shape[RL_NPY_MAX_DIMS];
    uint32_t ndim = 0;
    if (ends_with(path, ".safetensors")) {
        if (!tensor)
            return rl_fail(err, RL_ERR_ARG, "--input %s: name the tensor with --tensor NAME", path);
        rl_safetensors st;
        rl_status s = rl_safetensors_open(path, &st, err);
        if (s)
            return s;
        const rl_st_tensor *t = rl_safetensors_find(&st, tensor);
        if (!t) {
            s = rl_fail(err, RL_ERR_ARG, "--tensor %s: no such tensor in %s", tensor, path);
        } else if (t->rank < 2 || t->rank > 3) {
            s = rl_fail(err, RL_ERR_ARG, "--tensor %s: rank %u; need [tokens][head_dim] or "
                        "[tokens][heads][head_dim]", tensor, t->rank);
        } else {
            ndim = t->rank;
            uint64_t count = 1;
            for (uint32_t i = 0; i < ndim; i++)
                count *= (shape[i] = t->shape[i]);
            c->x = malloc((count ? count : 1) * sizeof *c->x);
            if (!c->x)
                s = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %s", tensor);
            else
                s = rl_safetensors_read_f32(&st, t, 0, count, c->x, err);
        }
        rl_safetensors_close(&st);
        if (s)
            return s;
    } else {
        if (tensor)
            return rl_fail(err, RL_ERR_ARG, "--tensor applies to .safetensors inputs, not %s", path);
        rl_npy a;
        rl_status s = rl_npy_load(path, &a, err);
        if (s)
            return s;
        if (a.ndim < 2 || a.ndim > 3) {
            uint32_t nd = a.ndim;
            rl_npy_free(&a);
            return rl_fail(err, RL_ERR_ARG, "--input %s: %u dimensions; need [tokens][head_dim] or "
                           "[tokens][heads][head_dim]", path, nd);
        }
        ndim = a.ndim;
        memcpy(shape, a.shape, sizeof(uint64_t) * ndim);
        c->x = a.data; /* ownership moves to c */
    }
    c->ndim = ndim;
    memcpy(c->shape, shape, sizeof(uint64_t) * ndim);
    c->tokens = shape[0];
    c->heads = ndim == 3 ? (uint32_t)shape[1] : 1;
    uint64_t hd = shape[ndim - 1];
    if (c->tokens == 0 || c->heads == 0 || hd == 0 || hd > 65536 || shape[1] > UINT32_MAX)
        return rl_fail(err, RL_ERR_ARG, "--input %s: shape has an empty or oversized dimension", path);
    c->head_dim = (uint32_t)hd;
    return RL_OK;
}

/* START:STOP (STOP exclusive) or a file: .npy of integers, else text with
 * one or more non-negative integers separated by spaces, commas or lines. */
static rl_status load_positions(const char *spec, apply_ctx *c, rl_error *err)
{
    const char *colon = strchr(spec, ':');
    uint64_t n = 0;
    if (colon && !strchr(spec, '/') && !ends_with(spec, ".npy")) {
        char *end;
        errno = 0;
        unsigned long long a = strtoull(spec, &end, 10);
        if (end != colon || spec[0] < '0' || spec[0] > '9')
            return rl_fail(err, RL_ERR_ARG, "--positions %s: expected START:STOP (integers)", spec);
        unsigned long long b = strtoull(colon + 1, &end, 10);
        if (*end || colon[1] < '0' || colon[1] > '9' || errno || b <= a || b - 1 > UINT32_MAX)
            return rl_fail(err, RL_ERR_ARG, "--positions %s: need 0 <= START < STOP <= 2^32", spec);
        n = b - a;
        if (n != c->tokens)
            return rl_fail(err, RL_ERR_ARG, "--positions %s gives %" PRIu64 " positions for %" PRIu64
                           " tokens", spec, n, c->tokens);
        c->pos = malloc(n * sizeof *c->pos);
        if (!c->pos)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
        for (uint64_t i = 0; i < n; i++)
            c->pos[i] = (uint32_t)(a + i);
        return RL_OK;
    }
    if (ends_with(spec, ".npy")) {
        rl_status s = rl_npy_load_u32(spec, &c->pos, &n, err);
        if (s)
            return s;
    } else {
        FILE *fp = rl_fs_open_input_max(spec, RL_FS_MAX_CONFIG_JSON, err);
        if (!fp) {
            rl_error_prefix(err, "--positions");
            return err ? err->status : RL_ERR_IO;
        }
        uint64_t cap = 1024;
        c->pos = malloc(cap * sizeof *c->pos);
        char tok[32];
        int ch;
        size_t len = 0;
        rl_status s = c->pos ? RL_OK : rl_fail(err, RL_ERR_NOMEM, "out of host memory");
        do {
            ch = fgetc(fp);
            if (ch >= '0' && ch <= '9' && len + 1 < sizeof tok) {
                tok[len++] = (char)ch;
            } else if (ch == EOF || ch == ' ' || ch == ',' || ch == '\n' || ch == '\r' || ch == '\t') {
                if (!len)
                    continue;
                tok[len] = '\0';
                len = 0;
                unsigned long long v = strtoull(tok, NULL, 10);
                if (v > UINT32_MAX) {
                    s = rl_fail(err, RL_ERR_ARG, "--positions %s: entry %" PRIu64 " (%s) exceeds "
                                "2^32 - 1", spec, n, tok);
                    break;
                }
                if (n == cap) {
                    uint32_t *p = realloc(c->pos, 2 * cap * sizeof *p);
                    if (!p) {
                        s = rl_fail(err, RL_ERR_NOMEM, "out of host memory");
                        break;
                    }
                    c->pos = p;
                    cap *= 2;
                }
                c->pos[n++] = (uint32_t)v;
            } else {
                s = rl_fail(err, RL_ERR_ARG, "--positions %s: entry %" PRIu64 " is not a "
                            "non-negative integer (found '%c')", spec, n, ch);
                break;
            }
        } while (!s && ch != EOF);
        fclose(fp);
        if (s)
            return s;
    }
    if (n != c->tokens)
        return rl_fail(err, RL_ERR_ARG, "--positions %s has %" PRIu64 " positions for %" PRIu64
                       " tokens", spec, n, c->tokens);
    return RL_OK;
}

/* Writes y as float32 .npy under a temporary name, then renames it. */
static rl_status save_output(const apply_ctx *c, const float *y, rl_error *err)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", c->out, (long)getpid());
    uint64_t n = c->tokens * c->heads * c->head_dim;
    rl_status st = rl_npy_save_raw(tmp, "<f4", 0, c->shape, c->ndim, y, n * sizeof *y, err);
    if (!st && rename(tmp, c->out) != 0)
        st = rl_fail(err, RL_ERR_IO, "--out %s: cannot rename %s onto it: %s", c->out, tmp,
                     strerror(errno));
    if (st)
        remove(tmp);
    return st;
}

static void print_stats(const char *what, const vf_stats *s, json_t *obj)
{
    if (obj) {
        json_object_set_new(obj, what, vf_stats_json(s)); /* the one tolerance record */
        return;
    }
    /* error and bound of the same element (the one with the worst ratio) */
    printf("  %-10s worst element: error %.3e  bound %.3e  err/bnd %.3f  (max abs %.3e)  nmse %.3e"
           "  gate %.3e  %s\n", what, s->err_at_worst, s->bound_at_worst, s->worst_ratio,
           s->max_abs, s->nmse, s->nmse_gate, s->pass ? "pass" : "FAIL");
}

static rl_status apply_on(rlvk_device *dev, void *vctx, json_t *arr, rl_error *err)
{
    apply_ctx *c = vctx;
    pe_shape shape = {.head_dim = c->head_dim, .heads = c->heads, .seed = 1};
    /* xPos centres at ceil(L/2) of the sequence the positions span, as
     * torchscale's XPOS does for a sequence of L = max position + 1 tokens
     * (its default center, from max_positions; --set center=C overrides) */
    if (!strcmp(c->encoding, "xpos")) {
        uint64_t top = 0;
        for (uint64_t t = 0; t < c->tokens; t++)
            top = c->pos[t] > top ? c->pos[t] : top;
        shape.max_positions = top + 1;
    }
    pe_encoding *e = NULL;
    pe_vec_gpu g = {0};
    uint64_t n = c->tokens * c->heads * c->head_dim;
    float *y = malloc(n * sizeof *y), *ye = NULL, *xk = NULL;
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    rl_status st = RL_OK;
    if (!y || !ref || !bound || !scale) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %" PRIu64 " elements", n);
        goto done;
    }
    if ((st = pe_encoding_create(c->encoding, c->params, &shape, &e, err)))
        goto done;
    if (!pe_has_vectors(e) && pe_has_bias(e)) { /* nope: the identity transform runs */
        st = rl_fail(err, RL_ERR_ARG, "--encoding %s acts on logits, not on Q/K vectors",
                     c->encoding);
        goto done;
    }
    /* rotary_part last (DeepSeek's cat(q_nope, q_pe)): the input's rotated
     * part moved to the front, where the kernels and references rotate it,
     * and the output moved back (rope_part_permute: no arithmetic) */
    const rope_freqs *rf = pe_rope_freqs(e);
    const float *x = c->x;
    if (rf && rf->rotary_part == ROPE_PART_LAST) {
        if (!(xk = malloc(n * sizeof *xk))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory");
            goto done;
        }
        memcpy(xk, c->x, n * sizeof *xk);
        rope_part_permute(rf, xk, c->tokens * c->heads, 1);
        x = xk;
    }
    int guard_ok = 0;
    if ((st = pe_vec_gpu_create_role(dev, e, c->heads, c->role, &g, err)) ||
        (st = pe_vec_gpu_apply(dev, &g, x, c->pos, c->tokens, y, &guard_ok, err)) ||
        (st = pe_vec_ref_role(e, c->role, x, c->pos, c->tokens, c->heads, ref, err)))
        goto done;
    pe_vec_bound_role(e, c->role, x, c->pos, c->tokens, c->heads, bound, scale);
    vf_stats sref, semu = {0};
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &sref);
    vf_set_guard(&sref, guard_ok);
    /* Emulation modes: the same arithmetic on the CPU (ggml-vulkan's pow
     * differs from the host's, so only the double comparison applies). */
    int emu = rf && rope_prec_is_emu(rf->precision) && rf->precision != RL_ROPE_PREC_GGML_VULKAN;
    if (emu) {
        if (!(ye = malloc(n * sizeof *ye))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory");
            goto done;
        }
        rope_emu_apply(rf, x, c->pos, c->tokens, c->heads, NULL, ye, NULL);
        for (uint64_t i = 0; i < n; i++)
            ref[i] = ye[i];
        rope_emu_bounds(rf, x, c->tokens, c->heads, bound);
        vf_compare(y, ref, bound, NULL, n, VF_GATE_ELEM, &semu);
    }
    json_t *obj = arr ? json_pack("{s:s,s:s,s:O,s:I,s:i,s:i}", "device", dev->info.name, "encoding",
                                  c->encoding, "params", pe_encoding_params(e), "tokens",
                                  (json_int_t)c->tokens, "heads", c->heads, "head_dim", c->head_dim)
                      : NULL;
    if (!arr) {
        /* the keys that hold a value (the family's unset ones are null:
         * --json keeps the whole record) */
        json_t *set = json_object();
        const char *k;
        json_t *v;
        json_t *all = (json_t *)pe_encoding_params(e); /* read only: jansson iterates non-const */
        json_object_foreach(all, k, v)
            if (!json_is_null(v))
                json_object_set(set, k, v);
        char *ps = set ? json_dumps(set, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
        printf("%s on %s: %" PRIu64 " tokens x %u heads x %u dims\n  params: %s\n", c->encoding,
               dev->info.name, c->tokens, c->heads, c->head_dim, ps ? ps : "{}");
        free(ps);
        json_decref(set);
    }
    print_stats("reference", &sref, obj);
    if (emu)
        print_stats("emulation", &semu, obj);
    int pass = sref.pass && (!emu || semu.pass);
    if (xk)
        rope_part_permute(rf, y, c->tokens * c->heads, 0); /* back to the input's order */
    if (pass && (st = save_output(c, y, err)) == RL_OK) {
        if (obj)
            json_object_set_new(obj, "out", json_string(c->out));
        else
            printf("  wrote %s\n", c->out);
    }
    if (obj)
        json_array_append_new(arr, obj);
    if (!st && !pass)
        st = rl_fail(err, RL_ERR_MISMATCH, "apply: the device result is outside its bound; %s not "
                     "written", c->out);
done:
    pe_vec_gpu_destroy(&g);
    pe_encoding_destroy(e);
    free(y);
    free(ye);
    free(xk);
    free(ref);
    free(bound);
    free(scale);
    return st;
}

int cmd_apply(int argc, char **argv)
{
    /* --set repeats: collect those pairs, pass the rest on. */
    char **rest = malloc((size_t)(argc + 1) * sizeof *rest);
    const char **sets = malloc((size_t)(argc + 1) * sizeof *sets);
    int nrest = 0, nset = 0, rc = -1;
    if (!rest || !sets) {
        cli_error("out of host memory");
        rc = CLI_EXIT_USAGE;
    } else {
        rc = cli_split_sets(argc, argv, rest, &nrest, sets, &nset);
    }
    const char *device = "auto", *encoding = NULL, *hf = NULL, *precision = NULL, *input = NULL,
               *tensor = NULL, *positions = NULL, *out = NULL, *set_seen = NULL, *role = "q";
    int json = 0, validate = 1;
    const cli_opt opts[] = {
        {"--encoding", CLI_STR, &encoding, "ENCODING", "registry encoding (`ropelab encodings`)"},
        {"--set", CLI_STR, &set_seen, "KEY=VALUE", "set a parameter (repeatable; JSON value when it "
                                                   "parses, else a string)"},
        {"--hf-config", CLI_STR, &hf, "FILE", "rope: RoPE settings from an HF config.json (--set "
                                              "overrides)"},
        {"--precision", CLI_STR, &precision, "fp32|table|precise|hf|vllm|ggml-cpu|ggml-vulkan|cuda-fast", "rope: fp32, table, precise, hf, vllm, ggml-cpu, "
                                                     "ggml-vulkan, cuda-fast"},
        {"--input", CLI_STR, &input, "FILE", "Q or K: .npy (float32/float16) or .safetensors"},
        {"--tensor", CLI_STR, &tensor, "NAME", "the tensor's name in a .safetensors input"},
        {"--positions", CLI_STR, &positions, "P", "START:STOP (STOP exclusive), an integer .npy, or "
                                                  "a text file of integers"},
        {"--out", CLI_STR, &out, "FILE", "output .npy (float32: the mode's dtype widened)"},
        {"--role", CLI_STR, &role, "q|k", "the input is queries (default) or keys (xpos scales "
                                          "them differently)"},
        CLI_OPT_DEVICE(&device),
        {"--json", CLI_FLAG, &json, NULL, "print the verification as JSON"},
        CLI_OPTS_VALIDATE(&validate, CLI_VALIDATE_ON),
    };
    if (rc < 0)
        rc = cli_parse("ropelab apply --encoding NAME --input FILE --positions P --out FILE "
                       "[--set key=value ...] [--hf-config FILE] [--precision MODE] [--tensor NAME]",
                       "Applies an encoding's vector transform to Q or K ([tokens][heads][head_dim]\n"
                       "or [tokens][head_dim]) on the device, verifies it against the CPU reference\n"
                       "(and RoPE's framework emulation modes against the CPU emulation of the same\n"
                       "arithmetic), prints max error and bound, and writes float32 .npy. Exit 1 if\n"
                       "the result is outside its bound (nothing is written).",
                       nrest, rest, opts, RL_ARRAY_LEN(opts), NULL, 0, NULL);
    free(rest);
    apply_ctx c = {0};
    json_t *params = json_object();
    rl_error err = {0};
    if (rc >= 0)
        goto out;
    rc = CLI_EXIT_USAGE;
    if (!encoding || !input || !positions || !out) {
        cli_error("apply: --encoding, --input, --positions and --out are required");
        goto out;
    }
    if (strcmp(role, "q") && strcmp(role, "k")) {
        cli_error("apply: --role %s: expected q or k", role);
        goto out;
    }
    c.role = strcmp(role, "k") == 0 ? PE_ROLE_K : PE_ROLE_Q;
    if (!pe_family_find(encoding)) {
        cli_error("--encoding %s: unknown (one of %s)", encoding, pe_family_names());
        goto out;
    }
    int is_rope = strcmp(encoding, "rope") == 0;
    if ((hf || precision) && !is_rope) {
        cli_error("--%s applies to --encoding rope only", hf ? "hf-config" : "precision");
        goto out;
    }
    if (load_input(input, tensor, &c, &err) || load_positions(positions, &c, &err)) {
        cli_error("%s", err.msg);
        goto out;
    }
    if (hf) {
        /* the one config.json reader; its full-attention layers (the
         * default layer type) give the RoPE settings */
        rope_desc d = {0};
        hfm_model m;
        const hfm_layer_type *t = NULL;
        int defaulted = 0;
        rl_status hs = hfm_load(hf, &m, &err);
        if (!hs)
            hs = hfm_select(&m, NULL, &t, &defaulted, &err);
        if (!hs)
            hs = hfm_rope_desc(&m, t, &d, &err);
        if (!hs && m.n_types > 1)
            fprintf(stderr, "ropelab: %s: layer type %s (the full-attention layers, of %u)\n", hf,
                    t->name, m.n_types);
        hfm_free(&m);
        if (hs) {
            cli_error("--hf-config %s", err.msg);
            goto out;
        }
        if (d.head_dim && d.head_dim != c.head_dim) {
            cli_error("--hf-config %s: head_dim %u, but the input's last dimension is %u", hf,
                      d.head_dim, c.head_dim);
            goto out;
        }
        json_t *o = rope_desc_to_json(&d);
        json_object_update(params, o);
        json_decref(o);
    }
    if (precision)
        json_object_set_new(params, "precision", json_string(precision));
    for (int i = 0; i < nset; i++)
        if (pe_set_parse(params, sets[i], &err) != RL_OK) {
            cli_error("%s", err.msg);
            goto out;
        }
    if (cli_sets_apply(encoding, params, sets, nset) >= 0)
        goto out; /* rc is CLI_EXIT_USAGE here */
    c.encoding = encoding;
    c.out = out;
    c.params = params;
    cli_devices d;
    if ((rc = cli_open(device, validate, &d)) >= 0)
        goto out;
    rc = cli_each_device(&d, apply_on, &c, json ? json_array() : NULL);
    cli_close(&d);
out:
    json_decref(params);
    free(c.x);
    free(c.pos);
    free(sets);
    return rc;
}
