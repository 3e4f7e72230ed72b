/* ropelab model FILE|--preset NAME [--layer-type T] [--json]
 * What ropelab will compute for a model's config.json (pe/hf_model.h, the
 * one reader): shape, each layer type's encoding with every resolved
 * parameter, per-layer differences, train length, logit scale. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/rl_util.h"
#include "pe/hf_model.h"
#include "pe/rope.h"
#include "run/run.h"

/* The resolved rotation of a rope layer type (NULL + message otherwise). */
static rope_freqs *freqs_of(const hfm_model *m, const hfm_layer_type *t, rl_error *err)
{
    if (strcmp(json_string_value(json_object_get(t->encoding, "type")), "rope"))
        return NULL;
    rope_desc d;
    rl_status st = hfm_rope_desc(m, t, &d, err);
    rope_freqs *f = malloc(sizeof *f);
    if (!st && f && rope_freqs_compute(&d, f, err) == RL_OK)
        return f;
    free(f);
    return NULL;
}

static json_t *resolved_json(const rope_freqs *f)
{
    return json_pack("{s:s,s:i,s:i,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f}", "rope_type",
                     rope_type_name(f->rope_type), "rotary_dim", (int)f->rotary_dim, "pairs",
                     (int)f->n_pairs, "layout",
                     rope_layout_name(f->layout), "rotary_part",
                     f->rotary_part == ROPE_PART_LAST ? "last" : "first", "rope_theta",
                     f->base, "effective_base", f->theta, "factor", f->factor,
                     "attention_factor", f->attention_factor, "inv_freq_first", f->inv_freq[0],
                     "inv_freq_last", f->inv_freq[f->n_pairs - 1]);
}

int cmd_model(int argc, char **argv)
{
    const char *layer_type = NULL, *preset = NULL;
    int json = 0;
    const cli_opt opts[] = {
        {"--preset", CLI_STR, &preset, "NAME", "a model preset, configs/models/NAME.yaml, instead of FILE"},
        {"--layer-type", CLI_STR, &layer_type, "T", "show only this layer type (and refuse it as a run would)"},
        {"--json", CLI_FLAG, &json, NULL, "print JSON"},
    };
    const char *pos[1];
    int n_pos = 0;
    int rc = cli_parse("ropelab model FILE|--preset NAME [--layer-type T] [--json]",
                       "Shows what ropelab computes for a model's config.json: heads, kv heads,\n"
                       "head_dim, each layer type's encoding with every resolved parameter (rotary\n"
                       "dim, layout, scaling, attention factor), per-layer differences (sliding /\n"
                       "chunked windows, NoPE layers, temperature), train length and logit scale.\n"
                       "Keys ropelab cannot represent are refused, naming the key. FILE may also\n"
                       "be a capture (.safetensors from scripts/capture_qk.py): its embedded\n"
                       "config.json, checked against the capture's shape. docs/rope.md.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), pos, 1, &n_pos);
    if (rc >= 0)
        return rc;
    if (n_pos != !preset) {
        cli_error("model: name the config.json or a preset: `ropelab model FILE` or `ropelab model "
                  "--preset NAME`");
        return CLI_EXIT_USAGE;
    }
    hfm_model m;
    rl_error err = {0};
    size_t pl = preset ? 0 : strlen(pos[0]);
    int capture = !preset && pl > 12 && !strcmp(pos[0] + pl - 12, ".safetensors");
    if (preset    ? run_preset_model(preset, &m, &err)
        : capture ? run_capture_model(pos[0], &m, &err) /* its embedded config.json */
                  : hfm_load(pos[0], &m, &err)) {
        cli_error("%s", err.msg);
        hfm_free(&m);
        return CLI_EXIT_USAGE;
    }
    const hfm_layer_type *only = NULL;
    if (layer_type && hfm_select(&m, layer_type, &only, NULL, &err)) {
        cli_error("%s", err.msg);
        hfm_free(&m);
        return CLI_EXIT_USAGE;
    }
    const hfm_layer_type *def = NULL;
    rl_error derr = {0};
    int dflt = 0;
    (void)hfm_select(&m, NULL, &def, &dflt, &derr);
    json_t *o = hfm_to_json(&m);
    json_t *types = json_object_get(o, "layer_types");
    for (uint32_t i = 0; i < m.n_types; i++) {
        rope_freqs *f = freqs_of(&m, &m.types[i], &err);
        if (f)
            json_object_set_new(json_array_get(types, i), "resolved", resolved_json(f));
        free(f);
        /* what the runner's attention kinds take from this type (run/) */
        json_object_set_new(json_array_get(types, i), "applied",
                            run_model_attn_params(&m.types[i], NULL));
    }
    if (only) {
        for (size_t i = json_array_size(types); i-- > 0;)
            if (strcmp(json_string_value(json_object_get(json_array_get(types, i), "name")),
                       only->name))
                json_array_remove(types, i);
    }
    json_object_set_new(o, "default_layer_type", json_string(m.n_types ? (def ? def->name : "") : ""));
    if (json) {
        json_object_del(o, "layers_by_index");
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
    } else {
        printf("%s: model_type %s\n", m.path, m.model_type[0] ? m.model_type : "(none: Llama-style)");
        printf("heads %u, kv heads %u, head_dim %u", m.heads, m.kv_heads, m.head_dim);
        if (m.v_head_dim)
            printf(" (v_head_dim %u)", m.v_head_dim);
        /* what the source does not give (a preset names the shape and the
         * encoding only) is not printed as 0 */
        if (m.hidden_size)
            printf(", hidden %u", m.hidden_size);
        if (m.hidden_size || m.n_layers > 1)
            printf(", layers %u", m.n_layers);
        printf("\ntrain length %u (the length runs use)", m.train_len);
        if (m.max_position_embeddings)
            printf(", max positions %u", m.max_position_embeddings);
        printf("\n");
        printf("logit scale %.9g (q.k multiplier before softmax; RoPE's attention factor a multiplies "
               "cos and sin, logits by a^2)", m.logit_scale);
        if (m.softcap > 0)
            printf(", soft cap %g", m.softcap);
        printf("\n");
        size_t n = json_array_size(types);
        for (size_t i = 0; i < n; i++) {
            json_t *t = json_array_get(types, i);
            const char *name = json_string_value(json_object_get(t, "name"));
            printf("layer type %s: %d layers", name, (int)json_integer_value(json_object_get(t, "count")));
            if (json_integer_value(json_object_get(t, "window")))
                printf(", window %d tokens", (int)json_integer_value(json_object_get(t, "window")));
            if (json_integer_value(json_object_get(t, "chunk")))
                printf(", attention chunk %d tokens",
                       (int)json_integer_value(json_object_get(t, "chunk")));
            if (def && !strcmp(def->name, name))
                printf(" (default layer type)");
            printf("\n");
            const json_t *ap = json_object_get(t, "applied");
            if (json_object_size(ap)) {
                printf("  applied by the runner's attention kinds (unless the batch gives the key):");
                const char *k;
                json_t *v;
                int first = 1;
                json_object_foreach((json_t *)ap, k, v) {
                    json_t *x = json_object_get(v, "value");
                    if (json_is_string(x))
                        printf("%s %s %s", first ? "" : ",", k, json_string_value(x));
                    else
                        printf("%s %s %.9g", first ? "" : ",", k, json_number_value(x));
                    printf(" (%s)", json_string_value(json_object_get(v, "from")));
                    first = 0;
                }
                printf("\n");
            }
            char *enc = json_dumps(json_object_get(t, "encoding"), JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER);
            printf("  encoding %s\n", enc ? enc : "?");
            free(enc);
            json_t *r = json_object_get(t, "resolved");
            if (r)
                printf("  resolved: %s, rotary dim %d (%d pairs, %s layout, the %s dimensions of a "
                       "head), base %.17g (effective %.17g), "
                       "factor %.17g, attention factor %.17g\n  inv_freq first %.17g, last %.17g\n",
                       json_string_value(json_object_get(r, "rope_type")),
                       (int)json_integer_value(json_object_get(r, "rotary_dim")),
                       (int)json_integer_value(json_object_get(r, "pairs")),
                       json_string_value(json_object_get(r, "layout")),
                       json_string_value(json_object_get(r, "rotary_part")),
                       json_real_value(json_object_get(r, "rope_theta")),
                       json_real_value(json_object_get(r, "effective_base")),
                       json_real_value(json_object_get(r, "factor")),
                       json_real_value(json_object_get(r, "attention_factor")),
                       json_real_value(json_object_get(r, "inv_freq_first")),
                       json_real_value(json_object_get(r, "inv_freq_last")));
            if (json_is_string(json_object_get(t, "refused")))
                printf("  refused: %s\n", json_string_value(json_object_get(t, "refused")));
        }
        if (json_object_size(m.attrs)) {
            char *a = json_dumps(m.attrs, JSON_COMPACT | JSON_PRESERVE_ORDER);
            printf("attributes (reported only, not applied by the engine): %s\n", a ? a : "?");
            free(a);
        }
        if (m.n_types > 1) {
            printf("layers:");
            size_t i;
            json_t *v;
            json_array_foreach(m.layers, i, v)
                printf(" %s", json_string_value(v));
            printf("\n");
        }
    }
    json_decref(o);
    int refused = only && only->refuse[0];
    hfm_free(&m);
    return refused ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
