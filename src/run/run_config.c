/* run_config.c — the configuration directory: model presets
 * (models/<name>.yaml) and encoding sets (encodings/<name>.yaml). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/run_int.h"
#include "run/run_yaml.h"

/* Where the configuration directory lies relative to the directory of the
 * running executable (resolved at run time through /proc/self/exe, so a
 * moved install or a moved tree still finds it): RL_DATA_REL for an
 * installed binary (bindir -> datadir/ropelab/configs, "../share/ropelab/
 * configs"), RL_BUILD_REL for the uninstalled binary in the build directory
 * (build dir -> source configs/, "../configs" for a build inside the
 * source). RL_DATA_ABS is the install prefix's directory, for a binary
 * copied away from its install. meson.build sets all three. */
#ifndef RL_DATA_REL
#define RL_DATA_REL "../share/ropelab/configs"
#endif
#ifndef RL_BUILD_REL
#define RL_BUILD_REL "../configs"
#endif
#ifndef RL_DATA_ABS
#define RL_DATA_ABS "/usr/local/share/ropelab/configs"
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

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The configuration directory into dir: $ROPELAB_CONFIG_DIR when set (and
 * then only it), else the first directory of RL_DATA_REL, RL_BUILD_REL
 * (both from the executable's directory) and RL_DATA_ABS that exists.
 * RL_ERR_ARG naming every place searched when none does. */
static rl_status config_dir(char *dir, size_t cap, rl_error *err)
{
    const char *env = getenv("ROPELAB_CONFIG_DIR");
    if (env && *env) {
        if (!is_dir(env))
            return rl_fail(err, RL_ERR_ARG, "ROPELAB_CONFIG_DIR=%s is not a directory", env);
        snprintf(dir, cap, "%s", env);
        return RL_OK;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char cand[3][PATH_MAX + 64];
    size_t nc = 0;
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = 0;
        snprintf(cand[nc++], sizeof cand[0], "%s/%s", exe, RL_DATA_REL);
        snprintf(cand[nc++], sizeof cand[0], "%s/%s", exe, RL_BUILD_REL);
    }
    snprintf(cand[nc++], sizeof cand[0], "%s", RL_DATA_ABS);
    for (size_t i = 0; i < nc; i++) {
        if (!is_dir(cand[i]))
            continue;
        char real[PATH_MAX];
        const char *d = realpath(cand[i], real) ? real : cand[i];
        if (strlen(d) >= cap)
            return rl_fail(err, RL_ERR_ARG, "configuration directory path too long: %s", d);
        memcpy(dir, d, strlen(d) + 1);
        return RL_OK;
    }
    char looked[3 * (PATH_MAX + 64)] = "";
    for (size_t i = 0; i < nc; i++) {
        if (i)
            strcat(looked, ", ");
        strcat(looked, cand[i]);
    }
    return rl_fail(err, RL_ERR_ARG,
                   "no configuration directory (presets): ROPELAB_CONFIG_DIR is not set and none "
                   "of %s exists; set ROPELAB_CONFIG_DIR to a directory with models/ and "
                   "encodings/ (the source tree's configs/)", looked);
}

rl_status run_encoding_set_load(const char *name, run_node **root, char *path, size_t cap,
                                rl_error *err)
{
    *root = NULL;
    if (!name_ok(name) || name[0] == '.')
        return rl_fail(err, RL_ERR_ARG,
                       "encoding set '%s': names use letters, digits, '-', '_', '.'", name);
    char dir[PATH_MAX];
    rl_status st = config_dir(dir, sizeof dir, err);
    if (st)
        return st;
    snprintf(path, cap, "%s/encodings/%s.yaml", dir, name);
    char *text;
    size_t len;
    st = run_read_file(path, 1u << 20, &text, &len, err);
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
    char dir[PATH_MAX];
    rl_error err = {0};
    /* without a configuration directory run_preset_load reports it, naming
     * every place searched; the path is then only relative */
    if (config_dir(dir, sizeof dir, &err) == RL_OK)
        snprintf(path, cap, "%s/models/%s.yaml", dir, name);
    else
        snprintf(path, cap, "models/%s.yaml", name);
}

rl_status run_preset_load(const char *name, json_t **out, rl_error *err)
{
    *out = NULL;
    if (!name_ok(name) || name[0] == '.')
        return rl_fail(err, RL_ERR_ARG, "preset '%s': names use letters, digits, '-', '_', '.'",
                       name);
    char dir[PATH_MAX], path[PATH_MAX + 128];
    rl_status st = config_dir(dir, sizeof dir, err);
    if (st)
        return st;
    snprintf(path, sizeof path, "%s/models/%s.yaml", dir, name);
    char *text;
    size_t len;
    st = run_read_file(path, 1u << 20, &text, &len, err);
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
