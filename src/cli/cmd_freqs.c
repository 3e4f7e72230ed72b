/* ropelab freqs [--hf-config FILE] [--rope-type T --factor F ...] [--seq-len N] [--json|--csv]
 * Prints the effective rotation (rope_freqs_compute) of one RoPE setting. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/rl_util.h"
#include "pe/hf_model.h"
#include "pe/pe.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"
#include "run/run.h"

#define NOT_GIVEN_U32 UINT32_MAX

/* "1,2.5,3" -> JSON array (NULL + message on a bad entry). */
static json_t *parse_list(const char *flag, const char *s)
{
    json_t *a = json_array();
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end && *end != ',')) {
            cli_error("%s: '%s' is not a comma-separated list of numbers", flag, s);
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, json_real(v));
        p = *end ? end + 1 : end;
    }
    return a;
}

static int set_key(rope_desc *d, const char *flag, const char *key, json_t *v)
{
    rl_error err = {0};
    rl_status st = v ? rope_desc_set_json(d, key, v, &err) : RL_ERR_ARG;
    json_decref(v);
    if (st) {
        if (err.msg[0])
            cli_error("%s: %s", flag, err.msg);
        return -1;
    }
    return 0;
}

/* The RoPE of one layer type of a config.json or of a preset (hf_model.h,
 * the one reader). */
static int import_hf(rope_desc *d, const char *path, const char *preset, const char *layer_type)
{
    hfm_model m;
    rl_error err = {0};
    const hfm_layer_type *t = NULL;
    int defaulted = 0;
    rl_status st = preset ? run_preset_model(preset, &m, &err) : hfm_load(path, &m, &err);
    if (preset)
        path = m.path;
    if (!st)
        st = hfm_select(&m, layer_type, &t, &defaulted, &err);
    if (!st)
        st = hfm_rope_desc(&m, t, d, &err);
    if (st) {
        cli_error("%s %s", preset ? "--preset" : "--hf-config", err.msg);
        hfm_free(&m);
        return -1;
    }
    if (m.n_types > 1)
        fprintf(stderr, "ropelab: %s: layer type %s%s (the model has %u layer types; --layer-type picks one)\n",
                path, t->name, defaulted ? " (default: the full-attention layers)" : "", m.n_types);
    hfm_free(&m);
    return 0;
}

static int freqs_run(int argc, char **argv, const char *const *sets, int nset)
{
    const char *hf = NULL, *preset = NULL, *layer_type = NULL, *type = NULL, *layout = NULL,
               *shortf = NULL, *longf = NULL, *semantics = NULL, *framework = NULL;
    int json = 0, csv = 0, no_truncate = 0;
    const char *set_seen = NULL; /* --set is collected by cmd_freqs; listed for --help */
    uint32_t u_head = NOT_GIVEN_U32, u_rot = NOT_GIVEN_U32, u_orig = NOT_GIVEN_U32,
             u_max = NOT_GIVEN_U32, u_seq = NOT_GIVEN_U32;
    double f_theta = NAN, f_factor = NAN, f_prf = NAN, f_bf = NAN, f_bs = NAN, f_ms = NAN,
           f_msa = NAN, f_att = NAN, f_lo = NAN, f_hi = NAN, f_alpha = NAN, f_mixed_b = NAN;
    const cli_opt opts[] = {
        {"--hf-config", CLI_STR, &hf, "FILE", "read rope_theta, rope_scaling/rope_parameters, head_dim, ... from an HF config.json"},
        {"--preset", CLI_STR, &preset, "NAME", "read them from a model preset, configs/models/NAME.yaml (as a batch's model: {preset: NAME})"},
        {"--layer-type", CLI_STR, &layer_type, "T", "with --hf-config or --preset: the layer type to read (default: the full-attention layers)"},
        {"--rope-type", CLI_STR, &type, rope_type_choices(), rope_type_list()}, /* the registry's */
        {"--head-dim", CLI_U32, &u_head, "D", "head dimension"},
        {"--rotary-dim", CLI_U32, &u_rot, "R", "rotated dimensions (default head_dim)"},
        {"--partial-rotary-factor", CLI_F64, &f_prf, "P", "rotary_dim = int(head_dim * P)"},
        {"--rope-theta", CLI_F64, &f_theta, "B", "base (default 10000)"},
        {"--factor", CLI_F64, &f_factor, "F", "scaling factor >= 1"},
        {"--original-max-position-embeddings", CLI_U32, &u_orig, "L", "pre-training context length"},
        {"--max-position-embeddings", CLI_U32, &u_max, "M", "model's maximum length"},
        {"--seq-len", CLI_U32, &u_seq, "N", "sequence length in use (dynamic, dynamic_yarn, longrope)"},
        {"--beta-fast", CLI_F64, &f_bf, "X", "yarn (default 32)"},
        {"--beta-slow", CLI_F64, &f_bs, "X", "yarn (default 1)"},
        {"--mscale", CLI_F64, &f_ms, "X", "yarn attention factor (with --mscale-all-dim)"},
        {"--mscale-all-dim", CLI_F64, &f_msa, "X", "yarn attention factor denominator"},
        {"--no-truncate", CLI_FLAG, &no_truncate, NULL, "yarn: do not floor/ceil the correction range"},
        {"--attention-factor", CLI_F64, &f_att, "A", "override the attention factor (yarn, longrope)"},
        {"--low-freq-factor", CLI_F64, &f_lo, "X", "llama3"},
        {"--high-freq-factor", CLI_F64, &f_hi, "X", "llama3"},
        {"--short-factor", CLI_STR, &shortf, "LIST", "longrope: comma-separated rotary_dim/2 numbers"},
        {"--long-factor", CLI_STR, &longf, "LIST", "longrope: comma-separated rotary_dim/2 numbers"},
        {"--layout", CLI_STR, &layout, "half|interleaved", "half (default) or interleaved: which dimensions pair up"},
        {"--semantics", CLI_STR, &semantics, "hf|vllm", "hf (default) or vllm: vLLM's reading of dynamic and ntk"},
        {"--alpha", CLI_F64, &f_alpha, "X", "semantics vllm, dynamic: HunYuan's NTK alpha"},
        {"--mixed-b", CLI_F64, &f_mixed_b, "X", "semantics vllm, ntk: mixed-NTK exponent b"},
        {"--set", CLI_STR, &set_seen, "KEY=VALUE", "any RoPE key of `ropelab encodings` (rope), e.g. a "
         "scaling's own (truncated: truncate_b=0.0123); repeatable, value parsed as JSON when it parses"},
        {"--framework", CLI_STR, &framework, "hf|vllm",
         "also the float32 inv_freq that framework computes (its own program and operation order: "
         "what precision hf|vllm uses)"},
        {"--json", CLI_FLAG, &json, NULL, "print JSON (inv_freq at full double precision)"},
        {"--csv", CLI_FLAG, &csv, NULL, "print a CSV table"},
    };
    int rc = cli_parse("ropelab freqs [--hf-config FILE|--preset NAME] [--rope-type T --factor F ...] [--seq-len N] [--json|--csv]",
                       "Prints the effective rotation of a RoPE setting: per rotary pair its inverse\n"
                       "frequency, wavelength in tokens and the scale applied (unscaled / scaled), plus\n"
                       "the attention factor (multiplies cos and sin) and the effective base. Semantics\n"
                       "follow Hugging Face transformers' modeling_rope_utils.py (--semantics vllm: vLLM's\n"
                       "reading of dynamic and ntk); flags override values read by --hf-config or\n"
                       "--preset. See docs/rope.md.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    if (json && csv) {
        cli_error("--json and --csv are exclusive");
        return CLI_EXIT_USAGE;
    }
    rope_desc d = {0};
    rl_error err = {0};
    if (layer_type && !hf && !preset) {
        cli_error("--layer-type needs --hf-config or --preset");
        return CLI_EXIT_USAGE;
    }
    if (hf && preset) {
        cli_error("--hf-config and --preset are exclusive");
        return CLI_EXIT_USAGE;
    }
    if ((hf || preset) && import_hf(&d, hf, preset, layer_type) != 0)
        return CLI_EXIT_USAGE;
    const struct { const char *flag, *key; uint32_t v; } us[] = {
        {"--head-dim", "head_dim", u_head}, {"--rotary-dim", "rotary_dim", u_rot},
        {"--original-max-position-embeddings", "original_max_position_embeddings", u_orig},
        {"--max-position-embeddings", "max_position_embeddings", u_max}, {"--seq-len", "seq_len", u_seq},
    };
    const struct { const char *flag, *key; double v; } fs[] = {
        {"--rope-theta", "rope_theta", f_theta}, {"--factor", "factor", f_factor},
        {"--partial-rotary-factor", "partial_rotary_factor", f_prf}, {"--beta-fast", "beta_fast", f_bf},
        {"--beta-slow", "beta_slow", f_bs}, {"--mscale", "mscale", f_ms},
        {"--mscale-all-dim", "mscale_all_dim", f_msa}, {"--attention-factor", "attention_factor", f_att},
        {"--low-freq-factor", "low_freq_factor", f_lo}, {"--high-freq-factor", "high_freq_factor", f_hi},
        {"--alpha", "alpha", f_alpha}, {"--mixed-b", "mixed_b", f_mixed_b},
    };
    if (type && set_key(&d, "--rope-type", "rope_type", json_string(type)))
        return CLI_EXIT_USAGE;
    if (layout && set_key(&d, "--layout", "layout", json_string(layout)))
        return CLI_EXIT_USAGE;
    if (semantics && set_key(&d, "--semantics", "semantics", json_string(semantics)))
        return CLI_EXIT_USAGE;
    for (size_t i = 0; i < RL_ARRAY_LEN(us); i++)
        if (us[i].v != NOT_GIVEN_U32 && set_key(&d, us[i].flag, us[i].key, json_integer(us[i].v)))
            return CLI_EXIT_USAGE;
    for (size_t i = 0; i < RL_ARRAY_LEN(fs); i++)
        if (!isnan(fs[i].v) && set_key(&d, fs[i].flag, fs[i].key, json_real(fs[i].v)))
            return CLI_EXIT_USAGE;
    if (no_truncate)
        d.truncate = -1;
    if (shortf && set_key(&d, "--short-factor", "short_factor", parse_list("--short-factor", shortf)))
        return CLI_EXIT_USAGE;
    if (longf && set_key(&d, "--long-factor", "long_factor", parse_list("--long-factor", longf)))
        return CLI_EXIT_USAGE;
    for (int i = 0; i < nset; i++) {
        json_t *o = json_object();
        rl_status st = o ? pe_set_parse(o, sets[i], &err) : RL_ERR_NOMEM;
        if (!st)
            st = rope_desc_from_json(&d, o, &err);
        json_decref(o);
        if (st) {
            cli_error("--set: %s", o ? err.msg : "out of host memory");
            return CLI_EXIT_USAGE;
        }
    }
    /* a scaling flag or --set key the resolved rope_type does not read is
     * refused (a config's own keys are the config's: not checked here) */
    for (size_t i = 0; i < RL_ARRAY_LEN(us); i++)
        if (us[i].v != NOT_GIVEN_U32 && rope_key_applies(d.rope_type, d.resonance, us[i].key, &err)) {
            cli_error("%s: %s", us[i].flag, err.msg);
            return CLI_EXIT_USAGE;
        }
    for (size_t i = 0; i < RL_ARRAY_LEN(fs); i++)
        if (!isnan(fs[i].v) && rope_key_applies(d.rope_type, d.resonance, fs[i].key, &err)) {
            cli_error("%s: %s", fs[i].flag, err.msg);
            return CLI_EXIT_USAGE;
        }
    const struct { const char *flag, *key; int given; } ls[] = {
        {"--short-factor", "short_factor", shortf != NULL},
        {"--long-factor", "long_factor", longf != NULL},
        {"--no-truncate", "truncate", no_truncate},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(ls); i++)
        if (ls[i].given && rope_key_applies(d.rope_type, d.resonance, ls[i].key, &err)) {
            cli_error("%s: %s", ls[i].flag, err.msg);
            return CLI_EXIT_USAGE;
        }
    json_t *pj = json_pack("{s:s,s:b}", "rope_type", rope_type_name(d.rope_type), "resonance",
                           d.resonance);
    int sr = cli_sets_apply("rope", pj, (const char *const *)sets, nset);
    json_decref(pj);
    if (sr >= 0)
        return sr;
    if (d.head_dim == 0) {
        cli_error("freqs: give --head-dim D or --hf-config FILE");
        return CLI_EXIT_USAGE;
    }
    rope_freqs *f = malloc(sizeof *f);
    if (!f) {
        cli_error("out of host memory");
        return CLI_EXIT_USAGE;
    }
    if (rope_freqs_compute(&d, f, &err) != RL_OK) {
        cli_error("%s", err.msg);
        free(f);
        return CLI_EXIT_USAGE;
    }
    const char *tn = rope_type_name(f->rope_type);
    uint32_t h = f->rotary_dim / 2;
    int fw = 0, has_prog = 0;
    float fwinv[ROPE_MAX_PAIRS];
    if (framework) {
        if (strcmp(framework, "hf") && strcmp(framework, "vllm")) {
            cli_error("--framework '%s': hf or vllm", framework);
            free(f);
            return CLI_EXIT_USAGE;
        }
        fw = strcmp(framework, "hf") == 0 ? RL_ROPE_PREC_HF : RL_ROPE_PREC_VLLM;
        has_prog = rope_emu_program(f, fw, fwinv);
    }
    if (json) {
        json_t *inv = json_array(), *wl = json_array(), *sc = json_array();
        for (uint32_t j = 0; j < f->n_pairs; j++) {
            json_array_append_new(inv, json_real(f->inv_freq[j]));
            json_array_append_new(wl, f->inv_freq[j] > 0 ? json_real(2 * 3.14159265358979323846 / f->inv_freq[j])
                                                         : json_null());
            json_array_append_new(sc, f->inv_freq[j] > 0 ? json_real(f->scale[j]) : json_null());
        }
        json_t *o = json_pack("{s:s,s:s,s:i,s:i,s:s,s:o,s:f,s:o,s:f,s:f,s:f,s:o,s:o}", "rope_type", tn,
                              "semantics", rope_semantics_name(f->desc.semantics),
                              "head_dim", (int)f->head_dim, "rotary_dim", (int)f->rotary_dim, "layout",
                              rope_layout_name(f->layout), "inv_freq", inv,
                              "attention_factor", f->attention_factor, "seq_len",
                              f->seq_len ? json_integer(f->seq_len) : json_null(), "rope_theta", f->base,
                              "effective_base", f->theta, "factor", f->factor, "wavelength", wl, "scale", sc);
        if (fw) {
            /* each float32 exactly (a double holds it; 9 digits would too) */
            json_t *fa = json_array();
            for (uint32_t j = 0; j < f->n_pairs; j++)
                json_array_append_new(fa, json_real((double)fwinv[j]));
            json_object_set_new(o, "framework", json_string(framework));
            json_object_set_new(o, "framework_program", json_boolean(has_prog));
            json_object_set_new(o, "framework_inv_freq", fa);
        }
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    } else if (csv) {
        printf("pair,dim_a,dim_b,inv_freq,wavelength_tokens,scale\n");
        for (uint32_t j = 0; j < f->n_pairs; j++) {
            uint32_t a = f->layout == RL_ROPE_LAYOUT_HALF ? j : 2 * j;
            uint32_t b = f->layout == RL_ROPE_LAYOUT_HALF ? j + h : 2 * j + 1;
            printf("%u,%u,%u,%.17g,%.17g,%.17g\n", j, a, b, f->inv_freq[j],
                   f->inv_freq[j] > 0 ? 2 * 3.14159265358979323846 / f->inv_freq[j] : INFINITY, f->scale[j]);
        }
    } else {
        printf("rope_type %s, head_dim %u, rotary_dim %u (%u pairs, %s layout)\n", tn, f->head_dim,
               f->rotary_dim, f->n_pairs, rope_layout_name(f->layout));
        if (f->desc.semantics != ROPE_SEM_HF)
            printf("semantics %s (docs/rope.md \"vLLM's readings\")\n",
                   rope_semantics_name(f->desc.semantics));
        printf("rope_theta %.17g, effective base %.17g, factor %.17g\n", f->base, f->theta, f->factor);
        printf("attention factor %.17g (multiplies cos and sin; logits scale by %.9g)\n",
               f->attention_factor, f->attention_factor * f->attention_factor);
        if (f->seq_len)
            printf("seq_len %u\n", f->seq_len);
        if (fw)
            printf("%s's float32 inv_freq: %s (docs/rope.md \"Framework frequency programs\")\n",
                   framework, has_prog ? "its own program, in its operation order"
                                       : "no program of its own for this type: the double inv_freq "
                                         "rounded to float32");
        if (fw) {
            printf("%6s %25s %16s %6s\n", "pair", "inv_freq", "float32", "ulps");
            for (uint32_t j = 0; j < f->n_pairs; j++) {
                float r = (float)f->inv_freq[j];
                int32_t a, b;
                memcpy(&a, &r, 4);
                memcpy(&b, &fwinv[j], 4);
                printf("%6u %25.17g %16.9g %6d\n", j, f->inv_freq[j], (double)fwinv[j], b - a);
            }
            free(f);
            return CLI_EXIT_OK;
        }
        printf("%6s %11s %25s %22s %12s\n", "pair", "dims", "inv_freq", "wavelength (tokens)", "scale");
        for (uint32_t j = 0; j < f->n_pairs; j++) {
            char dims[32];
            snprintf(dims, sizeof dims, "%u,%u", f->layout == RL_ROPE_LAYOUT_HALF ? j : 2 * j,
                     f->layout == RL_ROPE_LAYOUT_HALF ? j + h : 2 * j + 1);
            if (f->inv_freq[j] > 0)
                printf("%6u %11s %25.17g %22.6f %12.6f\n", j, dims, f->inv_freq[j],
                       2 * 3.14159265358979323846 / f->inv_freq[j], f->scale[j]);
            else
                printf("%6u %11s %25.17g %22s %12s\n", j, dims, 0.0, "inf (not rotated)", "-");
        }
    }
    free(f);
    return CLI_EXIT_OK;
}

int cmd_freqs(int argc, char **argv)
{
    /* --set may repeat: collect those pairs first, pass the rest on. */
    char **rest = malloc((size_t)(argc + 1) * sizeof *rest);
    const char **sets = malloc((size_t)(argc + 1) * sizeof *sets);
    int nrest = 0, nset = 0, rc = CLI_EXIT_USAGE;
    if (!rest || !sets)
        cli_error("out of host memory");
    else if ((rc = cli_split_sets(argc, argv, rest, &nrest, sets, &nset)) < 0)
        rc = freqs_run(nrest, rest, sets, nset);
    free(rest);
    free(sets);
    return rc;
}
