/* run_inputs.c — the files a batch reads (hf_config, presets, encoding
 * sets, data files, encodings' tables): noted while the batch is loaded,
 * hashed (SHA-256), copied content-addressed into OUT/inputs/ and recorded
 * in manifest.json when it runs; --resume refuses a changed input. Also the
 * device identity every record of a device carries (`ropelab devices`,
 * check --json, manifest.json). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "core/rl_sha256.h"
#include "core/rl_util.h"
#include "pe/pe.h"
#include "run/run_int.h"

json_t *run_device_identity_json(const rlvk_device_info *in)
{
    char vid[16], did[16], conf[32] = "", uuid[33] = "";
    snprintf(vid, sizeof vid, "0x%04x", in->vendor_id);
    snprintf(did, sizeof did, "0x%04x", in->device_id);
    if (in->has_driver_props)
        snprintf(conf, sizeof conf, "%u.%u.%u.%u", in->conformance[0], in->conformance[1],
                 in->conformance[2], in->conformance[3]);
    if (in->has_uuid)
        rlvk_uuid_hex(in->device_uuid, uuid);
    return json_pack("{s:s,s:s,s:I,s:s,s:s,s:i,s:s,s:s}", "vendor_id_hex", vid, "device_id_hex",
                     did, "driver_version_raw", (json_int_t)in->driver_version,
                     "driver_version_decoded", in->driver_version_str, "driver_id",
                     rlvk_driver_id_name(in->driver_id), "driver_id_value", (int)in->driver_id,
                     "conformance_version", conf, "device_uuid", uuid);
}

void run_host_name(char *buf, size_t cap)
{
    struct utsname u;
    snprintf(buf, cap, "%s", uname(&u) == 0 ? u.nodename : "");
}

/* ---- noting inputs while loading ------------------------------------------- */

int run_inputs_note(run_batch *b, const char *role, const char *given, const char *path)
{
    if (!given || !*given)
        return 1;
    if (!b->inputs && !(b->inputs = json_array()))
        return 0;
    size_t i;
    json_t *e;
    json_array_foreach(b->inputs, i, e) {
        if (!strcmp(json_string_value(json_object_get(e, "opened")), path))
            return 1;
    }
    return json_array_append_new(b->inputs, json_pack("{s:s,s:s,s:s}", "role", role, "path",
                                                      given, "opened", path)) == 0;
}

/* A data path as run_data.c opens it: absolute, or under the batch's
 * directory. */
static void data_path(char *dst, size_t cap, const char *base, const char *p)
{
    if (p[0] == '/' || !base[0])
        snprintf(dst, cap, "%s", p);
    else
        snprintf(dst, cap, "%s/%s", base, p);
}

int run_inputs_note_item(run_batch *b, const run_item *it)
{
    int ok = 1;
    const json_t *d = json_object_get(it->resolved, "data");
    const char *src = json_string_value(json_object_get(d, "source"));
    char p[2200];
    static const char *const npy_keys[] = {"q", "k", "v"};
    for (size_t k = 0; src && k < 3; k++) {
        const char *key = !strcmp(src, "npy") ? npy_keys[k]
                          : k == 0 && (!strcmp(src, "safetensors") || !strcmp(src, "capture"))
                              ? "path"
                              : NULL;
        const char *v = key ? json_string_value(json_object_get(d, key)) : NULL;
        if (v && *v) {
            data_path(p, sizeof p, b->base_dir, v);
            ok &= run_inputs_note(b, "data", v, p);
        }
    }
    /* an encoding's tables: the keys its family declares as files, opened
     * as given (pe/ reads them) */
    const char *type = json_string_value(json_object_get(
        json_object_get(it->resolved, "encoding"), "type"));
    const pe_family *fam = type ? pe_family_find(type) : NULL;
    if (fam && fam->file_keys) {
        char keys[256];
        snprintf(keys, sizeof keys, "%s", fam->file_keys);
        char *save = NULL;
        for (char *k = strtok_r(keys, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
            const char *v = json_string_value(json_object_get(it->enc_params, k));
            if (v && *v)
                ok &= run_inputs_note(b, "encoding", v, v);
        }
    }
    return ok;
}

/* ---- hashing and copying when the batch runs --------------------------------- */

/* The extension of path's file name for the copy: [A-Za-z0-9]{1,16} after
 * the last '.', else "bin". */
static void copy_ext(const char *path, char *ext, size_t cap)
{
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    const char *dot = strrchr(name, '.');
    size_t n = dot ? strlen(dot + 1) : 0;
    int ok = dot && n >= 1 && n <= 16 && dot != name;
    for (size_t i = 0; ok && i < n; i++) {
        char c = dot[1 + i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }
    snprintf(ext, cap, "%s", ok ? dot + 1 : "bin");
}

/* Copies src to dst atomically, hashing what it copied into hex. */
static rl_status copy_hashed(const char *src, const char *dst, char hex[65], rl_error *err)
{
    FILE *in = fopen(src, "rb");
    if (!in)
        return rl_fail(err, RL_ERR_IO, "%s: cannot open (%s)", src, strerror(errno));
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, dst, err);
    if (st) {
        fclose(in);
        return st;
    }
    rl_sha256_ctx c;
    rl_sha256_init(&c);
    unsigned char buf[1 << 16];
    size_t n;
    int bad = 0;
    while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        rl_sha256_update(&c, buf, n);
        bad = fwrite(buf, 1, n, af.fp) != n;
    }
    bad |= ferror(in);
    fclose(in);
    if (bad) {
        rl_atomic_abort(&af);
        return rl_fail(err, RL_ERR_IO, "copying %s to %s failed", src, dst);
    }
    uint8_t d[32];
    rl_sha256_final(&c, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return rl_atomic_commit(&af, err);
}

/* The record of one noted input: size, sha256, resolved path, and the name
 * its copy gets (made by copy_one). */
static rl_status record_one(const json_t *note, json_t **rec, rl_error *err)
{
    const char *opened = json_string_value(json_object_get(note, "opened"));
    const char *given = json_string_value(json_object_get(note, "path"));
    char hex[65], ext[20], copy[200];
    uint64_t size = 0;
    rl_status st = rl_sha256_file(opened, hex, &size, err);
    if (st)
        return st;
    copy_ext(given, ext, sizeof ext);
    snprintf(copy, sizeof copy, "inputs/%s.%s", hex, ext);
    char real[PATH_MAX];
    *rec = json_pack("{s:O,s:s,s:s,s:I,s:s,s:s}", "role", json_object_get(note, "role"), "path",
                     given, "resolved", realpath(opened, real) ? real : opened, "bytes",
                     (json_int_t)size, "sha256", hex, "copy", copy);
    return *rec ? RL_OK : rl_fail(err, RL_ERR_NOMEM, "out of host memory");
}

rl_status run_inputs_copy(const char *out, const char *opened, const json_t *rec, rl_error *err)
{
    const char *hex = json_string_value(json_object_get(rec, "sha256"));
    const char *copy = json_string_value(json_object_get(rec, "copy"));
    if (!hex || !copy || strncmp(copy, "inputs/", 7) || strchr(copy + 7, '/') ||
        strncmp(copy + 7, hex, 64) || strlen(hex) != 64)
        return rl_fail(err, RL_ERR_PARSE, "input record of %s: copy '%s' is not "
                       "inputs/<its sha256>.<ext>", opened, copy ? copy : "");
    char dst[1400], hex2[65];
    snprintf(dst, sizeof dst, "%s/%s", out, copy);
    FILE *have = fopen(dst, "rb");
    if (have) {
        fclose(have);
        return RL_OK;
    }
    rl_status st = copy_hashed(opened, dst, hex2, err);
    if (!st && strcmp(hex, hex2)) {
        remove(dst);
        st = rl_fail(err, RL_ERR_IO, "%s changed while it was read (sha256 %.16s..., then "
                     "%.16s...)", opened, hex, hex2);
    }
    return st;
}

/* --resume: every input the earlier manifest recorded that this batch
 * reads again must have the recorded hash. */
static rl_status check_resume(const char *out, const json_t *recs, rl_error *err)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/manifest.json", out);
    json_t *man = json_load_file(path, 0, NULL);
    const json_t *old = json_object_get(man, "inputs");
    rl_status st = RL_OK;
    size_t i, j;
    json_t *o, *n;
    json_array_foreach(old, i, o) {
        json_array_foreach(recs, j, n) {
            const char *ro = json_string_value(json_object_get(o, "resolved"));
            if (!ro || strcmp(ro, json_string_value(json_object_get(n, "resolved"))))
                continue;
            const char *was = json_string_value(json_object_get(o, "sha256"));
            const char *now = json_string_value(json_object_get(n, "sha256"));
            if (was && strcmp(was, now)) {
                st = rl_fail(err, RL_ERR_ARG,
                             "--resume: input %s (%s) changed since %s recorded it: sha256 was "
                             "%.16s..., now %.16s...; the complete runs were made from the old "
                             "file (its copy: %s/%s). Restore it, or run without --resume into "
                             "a new output directory",
                             json_string_value(json_object_get(n, "path")),
                             json_string_value(json_object_get(n, "role")), path, was, now, out,
                             json_string_value(json_object_get(o, "copy")));
                goto done;
            }
        }
    }
done:
    json_decref(man);
    return st;
}

rl_status run_inputs_record(const run_batch *b, const char *out, int resume, json_t **recs,
                            rl_error *err)
{
    *recs = json_array();
    if (!*recs)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    char dir[1300];
    snprintf(dir, sizeof dir, "%s/inputs", out);
    rl_status st = RL_OK;
    size_t i;
    json_t *note;
    json_array_foreach(b->inputs, i, note) {
        json_t *rec = NULL;
        if ((st = record_one(note, &rec, err)))
            break;
        json_array_append_new(*recs, rec);
    }
    /* resuming: refused before anything is written */
    if (!st && resume)
        st = check_resume(out, *recs, err);
    if (!st && json_array_size(b->inputs))
        st = run_mkdir_p(dir, err);
    json_array_foreach(b->inputs, i, note) {
        if (st)
            break;
        st = run_inputs_copy(out, json_string_value(json_object_get(note, "opened")),
                             json_array_get(*recs, i), err);
    }
    if (st) {
        json_decref(*recs);
        *recs = NULL;
    }
    return st;
}
