/* ropelab encodings [--json] — the encoding registry with every parameter. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/rl_util.h"
#include "exp/exp.h"
#include "pe/pe.h"

static const char *acts_str(int acts)
{
    switch (acts) {
    case PE_ACTS_VECTORS: return "vectors";
    case PE_ACTS_LOGITS: return "logits";
    case PE_ACTS_VECTORS | PE_ACTS_LOGITS: return "both";
    default: return "nothing";
    }
}

/* The default as shown: the declared one, or, when the owner derives it
 * (def "null", rl_param.h), what the help's closing "(default ...)" says. */
static void default_text(const pe_param *p, char *buf, size_t cap, size_t *help_len)
{
    *help_len = strlen(p->help);
    const char *d = strcmp(p->def, "null") == 0 ? strstr(p->help, "(default ") : NULL;
    for (const char *n = d; n && (n = strstr(n + 1, "(default "));)
        d = n; /* the last one */
    size_t dl = d ? strlen(d) : 0;
    if (d && dl > 10 && d[dl - 1] == ')') {
        snprintf(buf, cap, "%.*s", (int)(dl - 10), d + 9);
        *help_len = (size_t)(d - p->help);
        while (*help_len && p->help[*help_len - 1] == ' ')
            (*help_len)--;
    } else {
        snprintf(buf, cap, "%s", p->def);
    }
}

/* "number >= 1", "int in [0, 64]", "enum a|b", "bool", "json". */
static void type_text(const pe_param *p, char *buf, size_t cap)
{
    const char *t = rl_ptype_name(p->type);
    if (p->type == RL_P_ENUM) {
        snprintf(buf, cap, "%s %s", t, p->choices);
    } else if (p->type == RL_P_INT || p->type == RL_P_NUM) {
        int open_top = p->max >= 1e300 || (p->type == RL_P_INT && p->max >= 4294967295.0);
        if (open_top)
            snprintf(buf, cap, "%s >= %.10g", t, p->min);
        else
            snprintf(buf, cap, "%s in [%.10g, %.10g]", t, p->min, p->max);
    } else {
        snprintf(buf, cap, "%s", t);
    }
}

static json_t *param_json(const pe_param *p)
{
    json_error_t je;
    char def[160];
    size_t help_len;
    default_text(p, def, sizeof def, &help_len);
    json_t *o = json_pack("{s:s,s:s,s:o,s:s}", "key", p->key, "type", rl_ptype_name(p->type),
                          "default", json_loads(p->def, JSON_DECODE_ANY, &je), "help", p->help);
    /* A derived default (the declared one is null: not given) as text. */
    if (strcmp(p->def, "null") == 0 && strcmp(def, "null") != 0)
        json_object_set_new(o, "default_text", json_string(def));
    if (p->type == RL_P_INT || p->type == RL_P_NUM) {
        json_object_set_new(o, "min", p->type == RL_P_INT ? json_integer((json_int_t)p->min)
                                                        : json_real(p->min));
        json_object_set_new(o, "max", p->type == RL_P_INT ? json_integer((json_int_t)p->max)
                                                        : json_real(p->max));
    }
    if (p->type == RL_P_ENUM) {
        json_t *c = json_array();
        const char *s = p->choices;
        while (s && *s) {
            const char *bar = strchr(s, '|');
            size_t n = bar ? (size_t)(bar - s) : strlen(s);
            json_array_append_new(c, json_stringn(s, n));
            s = bar ? bar + 1 : NULL;
        }
        json_object_set_new(o, "choices", c);
    }
    return o;
}

int cmd_encodings(int argc, char **argv)
{
    int json = 0;
    const cli_opt opts[] = {
        {"--json", CLI_FLAG, &json, NULL, "print a JSON array instead of text"},
    };
    int rc = cli_parse("ropelab encodings [--json]",
                       "Lists the encoding registry: each encoding's name, title, source paper,\n"
                       "what it acts on (q/k vectors, attention logits, both) and its parameters\n"
                       "with type (range or choices), default and help (set them with\n"
                       "`--set key=value`). A default the encoding derives from other keys or the\n"
                       "model (most of rope's) is shown as the help states it. The text ends with\n"
                       "the attention-side methods (masks, sinks, temperature, position remapping),\n"
                       "which are batch keys of the attention kinds, not encodings.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    json_t *arr = json_array();
    for (size_t i = 0; i < pe_family_count(); i++) {
        const pe_family *f = pe_family_at(i);
        json_t *ps = json_array();
        size_t n_params;
        const pe_param *params = pe_family_params(f, &n_params);
        for (size_t k = 0; k < n_params; k++)
            json_array_append_new(ps, param_json(&params[k]));
        if (json) {
            json_array_append_new(
                arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "name", f->name, "title", f->title,
                               "paper", f->paper, "acts_on", acts_str(f->acts), "bias",
                               pe_bias_variant(f), "formula", f->formula, "params", ps));
            continue;
        }
        printf("%-11s %s (acts on: %s)\n", f->name, f->title, acts_str(f->acts));
        printf("            %s\n            %s\n", f->formula, f->paper);
        for (size_t k = 0; k < n_params; k++) {
            const pe_param *p = &params[k];
            char ty[160], def[160];
            size_t help_len;
            type_text(p, ty, sizeof ty);
            default_text(p, def, sizeof def, &help_len);
            printf("    %-16s %s; default %s\n    %-16s %.*s\n", p->key, ty, def, "",
                   (int)help_len, p->help);
        }
        if (n_params == 0)
            printf("    (no parameters)\n");
        printf("\n");
        json_decref(ps);
    }
    if (!json) {
        /* The attention-side methods: the attention kinds' own attn_* keys
         * (declared once in exp.h, EXP_ATTN_MASK_PARAMS / _REMAP_PARAMS),
         * printed from the entropy kind's list. */
        const exp_kind *k = exp_find("entropy");
        printf("attention   attention-side methods: batch keys (params) of the entropy, retrieval "
               "and distortion kinds\n            docs/attention.md (masks, learned sinks, "
               "temperature, position remapping)\n");
        for (size_t j = 0; k && j < k->n_params; j++) {
            const pe_param *p = &k->params[j];
            if (strncmp(p->key, "attn_", 5) != 0)
                continue;
            char ty[160], def[160];
            size_t help_len;
            type_text(p, ty, sizeof ty);
            default_text(p, def, sizeof def, &help_len);
            printf("    %-16s %s; default %s\n    %-16s %.*s\n", p->key, ty, def, "",
                   (int)help_len, p->help);
        }
        /* the attn_remap methods, from their registry (attn/attn_remap.h) */
        printf("    attn_remap methods (the keys each reads):\n");
        for (int m = 1; m < attn_remap_count(); m++) {
            const attn_remap_method *rm = attn_remap_method_at(m);
            printf("    %-16s %s\n    %-16s %s\n    %-16s", rm->name, rm->summary, "",
                   rm->source, "");
            for (const char *const *kk = rm->keys; kk && *kk; kk++)
                printf(" %s", *kk);
            printf("\n");
        }
        printf("\n");
    }
    if (json) {
        char *s = json_dumps(arr, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        if (s)
            puts(s);
        free(s);
    }
    json_decref(arr);
    return CLI_EXIT_OK;
}
