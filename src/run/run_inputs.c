/* run_inputs.c — the files a batch reads (hf_config, presets, encoding
 * sets, data files, encodings' tables): noted while the batch is loaded,
 * hashed (SHA-256), copied content-addressed into OUT/inputs/ and recorded
 * in manifest.json when it runs; --resume refuses a changed input. Also the
 * device identity every record of a device carries (`ropelab devices`,
 * check --json, manifest.json). */
#define _XOPEN_SOURCE 700 /* realpath */
#define _DEFAULT_SOURCE /* st_mtim */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/rl_fs.h"
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

/* The identity of the file at path as it was when the batch was loaded
 * ("dev:ino:size:mtime_ns"), so the snapshot can tell a file replaced
 * between the load that parsed it and the copy the runs read. */
static void file_identity(const struct stat *sb, char *buf, size_t cap)
{
    snprintf(buf, cap, "%llu:%llu:%lld:%lld.%09ld", (unsigned long long)sb->st_dev,
             (unsigned long long)sb->st_ino, (long long)sb->st_size,
             (long long)sb->st_mtim.tv_sec, (long)sb->st_mtim.tv_nsec);
}

int run_inputs_note(run_batch *b, const char *role, const char *given, const char *path)
{
    if (!given || !*given)
        return 1;
    if (!b->inputs && !(b->inputs = json_array()))
        return 0;
    if (!b->input_seen && !(b->input_seen = json_object()))
        return 0;
    /* a hash lookup: noting stays linear in the number of runs */
    if (json_object_get(b->input_seen, path))
        return 1;
    char id[128] = "";
    struct stat sb;
    if (stat(path, &sb) == 0)
        file_identity(&sb, id, sizeof id);
    return json_object_set_new(b->input_seen, path, json_true()) == 0 &&
           json_array_append_new(b->inputs, json_pack("{s:s,s:s,s:s,s:s}", "role", role, "path",
                                                      given, "opened", path, "identity",
                                                      id)) == 0;
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

/* Copies src (a file the user named, or below src_root: a shard's copy) to
 * dst below out, created new, hashing what it copied into hex; *size gets
 * its length and, when want_id is not NULL, the file read must still be
 * the one noted at load (same identity). */
static rl_status copy_hashed(const char *src_root, const char *src, const char *out,
                             const char *dst, const char *want_id, char hex[65],
                             uint64_t *size, rl_error *err)
{
    FILE *in = src_root ? rl_fs_fopen(src_root, src, "r", err) : rl_fs_open_input(src, err);
    if (!in)
        return err ? err->status : RL_ERR_IO;
    struct stat sb;
    char id[128];
    if (want_id && want_id[0] && fstat(fileno(in), &sb) == 0 &&
        (file_identity(&sb, id, sizeof id), strcmp(id, want_id))) {
        fclose(in);
        return rl_fail(err, RL_ERR_IO, "%s changed between the batch's load and its snapshot "
                       "(was %s, now %s as device:inode:size:mtime); run again once it is "
                       "no longer being written", src, want_id, id);
    }
    FILE *o = rl_fs_fopen(out, dst, "x", err);
    if (!o) {
        fclose(in);
        return err ? err->status : RL_ERR_IO;
    }
    rl_sha256_ctx c;
    rl_sha256_init(&c);
    unsigned char buf[1 << 16];
    size_t n;
    uint64_t total = 0;
    int bad = 0, e = 0;
    while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        rl_sha256_update(&c, buf, n);
        if (fwrite(buf, 1, n, o) != n)
            bad = 1, e = errno;
        total += n;
    }
    if (!bad && ferror(in))
        bad = 1, e = errno;
    fclose(in);
    if (!bad && (fflush(o) != 0 || fsync(fileno(o)) != 0))
        bad = 1, e = errno;
    if (fclose(o) != 0 && !bad)
        bad = 1, e = errno;
    if (bad) {
        rl_fs_remove(out, dst, NULL);
        return rl_fail(err, RL_ERR_IO, "copying %s to %s failed: %s", src, dst,
                       e ? strerror(e) : "read error");
    }
    uint8_t d[32];
    rl_sha256_final(&c, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    *size = total;
    return RL_OK;
}

/* SHA-256 of the file at path below root; -1 when it cannot be read. */
static int hash_below(const char *root, const char *path, char hex[65])
{
    FILE *fp = rl_fs_fopen(root, path, "r", NULL);
    if (!fp)
        return -1;
    rl_sha256_ctx c;
    rl_sha256_init(&c);
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        rl_sha256_update(&c, buf, n);
    int bad = ferror(fp);
    fclose(fp);
    uint8_t d[32];
    rl_sha256_final(&c, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return bad ? -1 : 0;
}

/* Moves the copy at tmp (below out) to out/copy, its content-addressed
 * name; an existing file there is kept only when its bytes have that hash
 * (a received folder's copy is not trusted by its name). */
static rl_status place_copy(const char *out, const char *tmp, const char *copy, const char *hex,
                            rl_error *err)
{
    char dst[1400], have[65];
    snprintf(dst, sizeof dst, "%s/%s", out, copy);
    int k = rl_fs_kind(out, dst, err);
    if (k < 0)
        return err ? err->status : RL_ERR_IO;
    if (k == 'f' && hash_below(out, dst, have) == 0 && !strcmp(have, hex))
        return rl_fs_remove(out, tmp, err);
    if (k && k != 'f')
        return rl_fail(err, RL_ERR_ARG, "%s is not a regular file where ropelab keeps an "
                       "input's copy; remove it", dst);
    return rl_fs_rename(out, tmp, dst, err);
}

rl_status run_inputs_copy(const char *out, const char *src_root, const char *opened,
                          const json_t *rec, rl_error *err)
{
    const char *hex = json_string_value(json_object_get(rec, "sha256"));
    const char *copy = json_string_value(json_object_get(rec, "copy"));
    if (!hex || !copy || strncmp(copy, "inputs/", 7) || strchr(copy + 7, '/') ||
        strncmp(copy + 7, hex, 64) || strlen(hex) != 64 || copy[7 + 64] != '.')
        return rl_fail(err, RL_ERR_PARSE, "input record of %s: copy '%s' is not "
                       "inputs/<its sha256>.<ext>", opened, copy ? copy : "");
    char tmp[1400], hex2[65];
    uint64_t size;
    snprintf(tmp, sizeof tmp, "%s/inputs/incoming.tmp.%ld", out, (long)getpid());
    rl_status st = rl_fs_remove(out, tmp, err);
    if (!st)
        st = copy_hashed(src_root, opened, out, tmp, NULL, hex2, &size, err);
    if (!st && strcmp(hex, hex2))
        st = rl_fail(err, RL_ERR_IO, "%s does not match its record (sha256 %.16s... recorded, "
                     "%.16s... read)", opened, hex, hex2);
    if (!st)
        st = place_copy(out, tmp, copy, hex, err);
    if (st)
        rl_fs_remove(out, tmp, NULL);
    return st;
}

/* --resume: every input the earlier manifest recorded that this batch
 * reads again must have the recorded hash. */
static rl_status check_resume(const char *out, const json_t *recs, rl_error *err)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/manifest.json", out);
    json_t *man = rl_fs_load_json(out, path, RL_FS_MAX_MANIFEST, NULL);
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
    char dir[1300], tmp[1400];
    snprintf(dir, sizeof dir, "%s/inputs", out);
    rl_status st = json_array_size(b->inputs) ? rl_fs_mkdirs(out, dir, err) : RL_OK;
    size_t i;
    json_t *note;
    /* each input read once: copied (hashing what is copied) to a temporary
     * name, from which its record is made; the runs read the copy */
    json_array_foreach(b->inputs, i, note) {
        if (st)
            break;
        const char *opened = json_string_value(json_object_get(note, "opened"));
        const char *given = json_string_value(json_object_get(note, "path"));
        char hex[65], ext[20], copy[200], real[PATH_MAX];
        uint64_t size = 0;
        snprintf(tmp, sizeof tmp, "%s/inputs/%zu.tmp.%ld", out, i, (long)getpid());
        if ((st = rl_fs_remove(out, tmp, err)) ||
            (st = copy_hashed(NULL, opened, out, tmp,
                              json_string_value(json_object_get(note, "identity")), hex, &size,
                              err)))
            break;
        copy_ext(given, ext, sizeof ext);
        snprintf(copy, sizeof copy, "inputs/%s.%s", hex, ext);
        json_array_append_new(*recs,
                              json_pack("{s:O,s:s,s:s,s:I,s:s,s:s}", "role",
                                        json_object_get(note, "role"), "path", given, "resolved",
                                        realpath(opened, real) ? real : opened, "bytes",
                                        (json_int_t)size, "sha256", hex, "copy", copy));
    }
    /* resuming: refused before any copy takes its name */
    if (!st && resume)
        st = check_resume(out, *recs, err);
    json_array_foreach(b->inputs, i, note) {
        snprintf(tmp, sizeof tmp, "%s/inputs/%zu.tmp.%ld", out, i, (long)getpid());
        if (st || i >= json_array_size(*recs)) {
            rl_fs_remove(out, tmp, NULL);
            continue;
        }
        const json_t *r = json_array_get(*recs, i);
        st = place_copy(out, tmp, json_string_value(json_object_get(r, "copy")),
                        json_string_value(json_object_get(r, "sha256")), err);
    }
    if (st) {
        json_decref(*recs);
        *recs = NULL;
    }
    return st;
}

json_t *run_inputs_snapshots(const run_batch *b, const json_t *recs, const char *out)
{
    json_t *map = json_object();
    char abs_out[PATH_MAX], p[PATH_MAX + 300];
    if (!realpath(out, abs_out))
        snprintf(abs_out, sizeof abs_out, "%s", out);
    size_t i;
    json_t *note;
    json_array_foreach(b->inputs, i, note) {
        const char *copy = json_string_value(json_object_get(json_array_get(recs, i), "copy"));
        if (!copy)
            continue;
        snprintf(p, sizeof p, "%s/%s", abs_out, copy);
        json_object_set_new(map, json_string_value(json_object_get(note, "opened")),
                            json_string(p));
    }
    return map;
}
