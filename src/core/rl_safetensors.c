#include "core/rl_fs.h"
#include "core/rl_safetensors.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"

#define RL_ST_MAX_HEADER (100u << 20)

static uint64_t dtype_size(const char *d)
{
    static const struct { const char *n; uint64_t s; } t[] = {
        {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
        {"I16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1}, {"U16", 2}, {"U32", 4}, {"U64", 8},
        {"F8_E4M3", 1}, {"F8_E5M2", 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].n, d))
            return t[i].s;
    return 0;
}

void rl_safetensors_close(rl_safetensors *st)
{
    for (size_t i = 0; i < st->n_meta; i++) {
        free(st->meta[i].key);
        free(st->meta[i].value);
    }
    free(st->meta);
    free(st->tensors);
    memset(st, 0, sizeof *st);
}

rl_status rl_safetensors_open(const char *path, rl_safetensors *st, rl_error *err)
{
    memset(st, 0, sizeof *st);
    snprintf(st->path, sizeof st->path, "%s", path);
    FILE *fp = rl_fs_open_input(path, err);
    if (!fp)
        return err ? err->status : RL_ERR_IO;
    unsigned char lenb[8];
    rl_status stt = RL_OK;
    char *hdr = NULL;
    json_t *root = NULL;
    if (fseek(fp, 0, SEEK_END) != 0 || (long)(st->file_size = (uint64_t)ftell(fp)) < 0 ||
        fseek(fp, 0, SEEK_SET) != 0) {
        stt = rl_fail(err, RL_ERR_IO, "%s: cannot seek", path);
        goto done;
    }
    if (fread(lenb, 1, 8, fp) != 8) {
        stt = rl_fail(err, RL_ERR_PARSE, "%s: not a safetensors file (shorter than 8 bytes)", path);
        goto done;
    }
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | lenb[i];
    if (hl == 0 || hl > RL_ST_MAX_HEADER || hl > st->file_size - 8) {
        stt = rl_fail(err, RL_ERR_PARSE, "%s: header length %llu is impossible (file has %llu "
                      "bytes)", path, (unsigned long long)hl, (unsigned long long)st->file_size);
        goto done;
    }
    hdr = malloc(hl);
    if (!hdr) {
        stt = rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory for the header", path);
        goto done;
    }
    if (fread(hdr, 1, hl, fp) != hl) {
        stt = rl_fail(err, RL_ERR_IO, "%s: short read of the header", path);
        goto done;
    }
    st->data_start = 8 + hl;
    json_error_t je;
    root = json_loadb(hdr, hl, 0, &je);
    if (!json_is_object(root)) {
        stt = rl_fail(err, RL_ERR_PARSE, "%s: header is not a JSON object: %s", path,
                      root ? "wrong type" : je.text);
        goto done;
    }
    st->tensors = calloc(json_object_size(root) + 1, sizeof *st->tensors);
    if (!st->tensors) {
        stt = rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory", path);
        goto done;
    }
    const char *key;
    json_t *v;
    json_t *meta = json_object_get(root, "__metadata__");
    if (meta) {
        if (!json_is_object(meta)) {
            stt = rl_fail(err, RL_ERR_PARSE, "%s: __metadata__ is not a JSON object", path);
            goto done;
        }
        st->meta = calloc(json_object_size(meta) + 1, sizeof *st->meta);
        if (!st->meta) {
            stt = rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory", path);
            goto done;
        }
        json_object_foreach(meta, key, v) {
            if (!json_is_string(v)) {
                stt = rl_fail(err, RL_ERR_PARSE, "%s: __metadata__ key '%.200s' is not a string "
                              "(the format maps strings to strings)", path, key);
                goto done;
            }
            rl_st_meta *e = &st->meta[st->n_meta];
            e->key = strdup(key);
            e->value = strdup(json_string_value(v));
            st->n_meta += e->key || e->value; /* a half-made entry is freed by close */
            if (!e->key || !e->value) {
                stt = rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory", path);
                goto done;
            }
        }
    }
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__"))
            continue;
        rl_st_tensor *t = &st->tensors[st->n];
        json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
               *off = json_object_get(v, "data_offsets");
        if (strlen(key) >= sizeof t->name || !json_is_string(dt) || !json_is_array(sh) ||
            json_array_size(sh) > RL_ST_MAX_RANK || !json_is_array(off) ||
            json_array_size(off) != 2) {
            stt = rl_fail(err, RL_ERR_PARSE, "%s: tensor '%.200s': malformed entry (needs dtype, "
                          "shape of rank <= %d, data_offsets [begin, end])", path, key,
                          RL_ST_MAX_RANK);
            goto done;
        }
        snprintf(t->name, sizeof t->name, "%s", key);
        snprintf(t->dtype, sizeof t->dtype, "%s", json_string_value(dt));
        uint64_t es = dtype_size(t->dtype), numel = 1;
        if (!es) {
            stt = rl_fail(err, RL_ERR_PARSE, "%s: tensor '%s': unknown dtype '%s'", path, key,
                          t->dtype);
            goto done;
        }
        t->rank = (uint32_t)json_array_size(sh);
        for (uint32_t i = 0; i < t->rank; i++) {
            json_t *d = json_array_get(sh, i);
            if (!json_is_integer(d) || json_integer_value(d) < 0 ||
                json_integer_value(d) > (json_int_t)1 << 40) {
                stt = rl_fail(err, RL_ERR_PARSE, "%s: tensor '%s': bad shape", path, key);
                goto done;
            }
            t->shape[i] = (uint64_t)json_integer_value(d);
            /* checked before multiplying: a product that wrapped around 2^64
             * (or to 0) would otherwise pass the span check below */
            if (t->shape[i] && numel > ((uint64_t)1 << 50) / t->shape[i]) {
                stt = rl_fail(err, RL_ERR_PARSE, "%s: tensor '%s': shape too large", path, key);
                goto done;
            }
            numel *= t->shape[i];
        }
        json_t *b = json_array_get(off, 0), *e = json_array_get(off, 1);
        if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
            json_integer_value(e) < json_integer_value(b)) {
            stt = rl_fail(err, RL_ERR_PARSE, "%s: tensor '%s': bad data_offsets", path, key);
            goto done;
        }
        t->begin = (uint64_t)json_integer_value(b);
        t->end = (uint64_t)json_integer_value(e);
        if (t->end - t->begin != numel * es) {
            stt = rl_fail(err, RL_ERR_PARSE, "%s: tensor '%s': data_offsets span %llu bytes but "
                          "shape x %s needs %llu", path, key,
                          (unsigned long long)(t->end - t->begin), t->dtype,
                          (unsigned long long)(numel * es));
            goto done;
        }
        if (t->end > st->file_size - st->data_start) {
            stt = rl_fail(err, RL_ERR_PARSE, "%s: tensor '%s' ends past the end of the file",
                          path, key);
            goto done;
        }
        st->n++;
    }
done:
    json_decref(root);
    free(hdr);
    fclose(fp);
    if (stt)
        rl_safetensors_close(st);
    return stt;
}

const rl_st_tensor *rl_safetensors_find(const rl_safetensors *st, const char *name)
{
    for (size_t i = 0; i < st->n; i++)
        if (!strcmp(st->tensors[i].name, name))
            return &st->tensors[i];
    return NULL;
}

const char *rl_safetensors_meta(const rl_safetensors *st, const char *key)
{
    for (size_t i = 0; i < st->n_meta; i++)
        if (!strcmp(st->meta[i].key, key))
            return st->meta[i].value;
    return NULL;
}

rl_status rl_safetensors_read_i64(const rl_safetensors *st, const rl_st_tensor *t,
                                  uint64_t first, uint64_t count, int64_t *out, rl_error *err)
{
    int i32 = !strcmp(t->dtype, "I32");
    if (!i32 && strcmp(t->dtype, "I64"))
        return rl_fail(err, RL_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s; only I64 and I32 "
                       "are read as integers", st->path, t->name, t->dtype);
    uint64_t es = i32 ? 4 : 8;
    if (first > (t->end - t->begin) / es || count > (t->end - t->begin) / es - first)
        return rl_fail(err, RL_ERR_ARG, "%s: tensor '%s': elements %llu..%llu out of range",
                       st->path, t->name, (unsigned long long)first,
                       (unsigned long long)(first + count));
    FILE *fp = rl_fs_open_input(st->path, err);
    if (!fp)
        return err ? err->status : RL_ERR_IO;
    rl_status s = RL_OK;
    if (fseek(fp, (long)(st->data_start + t->begin + first * es), SEEK_SET) != 0)
        s = rl_fail(err, RL_ERR_IO, "%s: cannot seek", st->path);
    for (uint64_t i = 0; i < count && !s; i++) {
        unsigned char b[8];
        if (fread(b, 1, es, fp) != es) {
            s = rl_fail(err, RL_ERR_IO, "%s: short read", st->path);
            break;
        }
        uint64_t u = 0;
        for (uint64_t k = es; k-- > 0;)
            u = u << 8 | b[k];
        if (i32) /* sign-extend */
            u = (u ^ 0x80000000u) - 0x80000000u;
        memcpy(&out[i], &u, 8);
    }
    fclose(fp);
    return s;
}

rl_status rl_safetensors_read_f32(const rl_safetensors *st, const rl_st_tensor *t,
                                  uint64_t first, uint64_t count, float *out, rl_error *err)
{
    int f16 = !strcmp(t->dtype, "F16"), bf16 = !strcmp(t->dtype, "BF16");
    if (!f16 && !bf16 && strcmp(t->dtype, "F32"))
        return rl_fail(err, RL_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s; only F32, F16 and "
                       "BF16 are read", st->path, t->name, t->dtype);
    uint64_t es = f16 || bf16 ? 2 : 4;
    if (first + count > (t->end - t->begin) / es)
        return rl_fail(err, RL_ERR_ARG, "%s: tensor '%s': elements %llu..%llu out of range",
                       st->path, t->name, (unsigned long long)first,
                       (unsigned long long)(first + count));
    FILE *fp = rl_fs_open_input(st->path, err);
    if (!fp)
        return err ? err->status : RL_ERR_IO;
    rl_status s = RL_OK;
    if (fseek(fp, (long)(st->data_start + t->begin + first * es), SEEK_SET) != 0) {
        s = rl_fail(err, RL_ERR_IO, "%s: cannot seek", st->path);
    } else if (f16 || bf16) {
        for (uint64_t i = 0; i < count && !s; i++) {
            unsigned char b[2];
            if (fread(b, 1, 2, fp) != 2) {
                s = rl_fail(err, RL_ERR_IO, "%s: short read", st->path);
            } else if (f16) {
                out[i] = rl_half_to_float((uint16_t)(b[0] | b[1] << 8));
            } else { /* bfloat16 is the high half of a float32: exact */
                uint32_t u = (uint32_t)b[0] << 16 | (uint32_t)b[1] << 24;
                memcpy(&out[i], &u, 4);
            }
        }
    } else {
        for (uint64_t i = 0; i < count && !s; i++) {
            unsigned char b[4];
            if (fread(b, 1, 4, fp) != 4) {
                s = rl_fail(err, RL_ERR_IO, "%s: short read", st->path);
            } else {
                uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                             (uint32_t)b[3] << 24;
                memcpy(&out[i], &u, 4);
            }
        }
    }
    fclose(fp);
    for (uint64_t i = 0; i < count && !s; i++)
        if (!isfinite(out[i]))
            s = rl_fail(err, RL_ERR_ARG,
                        "%s: tensor '%s': element %llu is %s; ropelab's inputs must be finite",
                        st->path, t->name, (unsigned long long)(first + i),
                        isnan(out[i]) ? "NaN" : "infinite");
    return s;
}
