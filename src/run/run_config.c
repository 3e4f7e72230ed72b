/* run_config.c — the configuration directory: model presets
 * (models/<name>.yaml) and encoding sets (encodings/<name>.yaml). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_int.h"
#include "run/run_yaml.h"

#ifndef RL_CONFIG_DIR
#define RL_CONFIG_DIR "configs"
#endif

static int name_ok(const char *s)
{
    if (!*s || strlen(s) > 100)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.'))
            return 0;
    return 1;
}

static const char *config_dir(void)
{
    const char *dir = getenv("ROPELAB_CONFIG_DIR");
    return dir && *dir ? dir : RL_CONFIG_DIR;
}

rl_status run_encoding_set_load(const char *name, run_node **root, char *path, size_t cap,
                                rl_error *err)
{
    *root = NULL;
    if (!name_ok(name) || name[0] == '.')
        return rl_fail(err, RL_ERR_ARG,
                       "encoding set '%s': names use letters, digits, '-', '_', '.'", name);
    snprintf(path, cap, "%s/encodings/%s.yaml", config_dir(), name);
    char *text;
    size_t len;
    rl_status st = run_read_file(path, 1u << 20, &text, &len, err);
    if (st == RL_ERR_IO)
        return rl_fail(err, RL_ERR_ARG, "no encoding set '%s' (looked for %s)", name, path);
    if (st)
        return st;
    st = run_yaml_parse(path, text, len, root, err);
    free(text);
    if (st)
        return st;
    if (!*root || (*root)->type != RUN_NODE_SEQ || (*root)->n == 0) {
        run_node_free(*root);
        *root = NULL;
        return rl_fail(err, RL_ERR_PARSE, "%s: an encoding set is a non-empty list of encodings",
                       path);
    }
    return RL_OK;
}

void run_preset_path(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/models/%s.yaml", config_dir(), name);
}

rl_status run_preset_load(const char *name, json_t **out, rl_error *err)
{
    *out = NULL;
    if (!name_ok(name) || name[0] == '.')
        return rl_fail(err, RL_ERR_ARG, "preset '%s': names use letters, digits, '-', '_', '.'",
                       name);
    char path[1200];
    run_preset_path(name, path, sizeof path);
    char *text;
    size_t len;
    rl_status st = run_read_file(path, 1u << 20, &text, &len, err);
    if (st) {
        if (st == RL_ERR_IO)
            return rl_fail(err, RL_ERR_ARG, "no model preset '%s' (looked for %s)", name, path);
        return st;
    }
    run_node *root = NULL;
    st = run_yaml_parse(path, text, len, &root, err);
    free(text);
    if (st)
        return st;
    if (!root || root->type != RUN_NODE_MAP) {
        run_node_free(root);
        return rl_fail(err, RL_ERR_PARSE, "%s: a preset is a mapping of model keys", path);
    }
    *out = run_node_json(root);
    run_node_free(root);
    return *out ? RL_OK : rl_fail(err, RL_ERR_NOMEM, "out of host memory");
}
