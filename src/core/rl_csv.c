/* rl_csv.c — CSV read into a table (RFC 4180: quoted fields, ""
 * escapes, CRLF), fields parsed in place; and its field writer. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_fs.h"
#include "core/rl_csv.h"

void rl_csv_free(rl_csv *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->rows[i].f);
    free(t->rows);
    free(t->text);
    memset(t, 0, sizeof *t);
}

static int push_field(rl_csv_row *r, size_t *cap, char *f)
{
    if (r->n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        char **p = realloc(r->f, c * sizeof *p);
        if (!p)
            return -1;
        r->f = p;
        *cap = c;
    }
    r->f[r->n++] = f;
    return 0;
}

/* The whole file into *buf (NUL-terminated, caller frees). */
static rl_status read_all(const char *path, char **buf_out, size_t *len_out, rl_error *err)
{
    FILE *fp = rl_fs_open_input_max(path, RL_FS_MAX_RESULTS, err);
    if (!fp)
        return err ? err->status : RL_ERR_IO;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += got;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(fp);
    if (!buf)
        return rl_fail(err, RL_ERR_NOMEM, "%s: out of memory reading", path);
    buf[len] = '\0';
    *buf_out = buf;
    *len_out = len;
    return RL_OK;
}

/* One row from *pp (advanced past it; *line counts newlines, also those
 * inside quoted fields), fields NUL-terminated in place. On error row->f is
 * freed. */
static rl_status parse_row(char **pp, char *end, size_t *line, rl_csv_row *row,
                           const char *path, rl_error *err)
{
    char *p = *pp;
    size_t fcap = 0;
    for (;;) {
        char *out = p, *start = p;
        if (*p == '"') {
            p++;
            start = out = p;
            for (;;) {
                if (p >= end) {
                    free(row->f);
                    return rl_fail(err, RL_ERR_PARSE, "%s:%zu: unterminated quoted field", path,
                                   row->line);
                }
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    if (*p == '\n')
                        (*line)++;
                    *out++ = *p++;
                }
            }
        } else {
            while (p < end && *p != ',' && *p != '\n' && *p != '\r')
                p++;
            out = p;
        }
        char term = p < end ? *p : '\n';
        if (term == '\r' && p + 1 < end && p[1] == '\n')
            p++;
        if (term != ',' && term != '\n' && term != '\r') {
            free(row->f);
            return rl_fail(err, RL_ERR_PARSE, "%s:%zu: unexpected character after a quoted field",
                           path, row->line);
        }
        *out = '\0';
        if (p < end)
            p++;
        if (push_field(row, &fcap, start) != 0) {
            free(row->f);
            return rl_fail(err, RL_ERR_NOMEM, "%s: out of memory", path);
        }
        if (term != ',')
            break;
    }
    *pp = p;
    return RL_OK;
}

rl_status rl_csv_read(const char *path, rl_csv *t, rl_error *err)
{
    memset(t, 0, sizeof *t);
    size_t len = 0;
    rl_status st = read_all(path, &t->text, &len, err);
    if (st)
        return st;
    /* Parse in place: fields are NUL-terminated inside the text. */
    char *p = t->text, *end = t->text + len;
    size_t line = 1;
    while (p < end) {
        rl_csv_row row = {.line = line};
        if ((st = parse_row(&p, end, &line, &row, path, err)))
            return st;
        line++;
        if (row.n == 1 && row.f[0][0] == '\0') { /* blank line */
            free(row.f);
            continue;
        }
        if (t->n == t->cap) {
            size_t c = t->cap ? t->cap * 2 : 256;
            rl_csv_row *nr = realloc(t->rows, c * sizeof *nr);
            if (!nr) {
                free(row.f);
                return rl_fail(err, RL_ERR_NOMEM, "%s: out of memory", path);
            }
            t->rows = nr;
            t->cap = c;
        }
        t->rows[t->n++] = row;
    }
    return RL_OK;
}

int rl_csv_col(const rl_csv_row *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->f[i], name) == 0)
            return (int)i;
    return -1;
}

int rl_csv_num(const char *s, double *v)
{
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *end == '\0' && errno == 0 && isfinite(*v);
}

static const struct {
    unsigned flag;
    const char *word;
} plot_words[] = {{RL_PLOT_LOGX, "log-x"},         {RL_PLOT_LOGY, "log-y"},
                  {RL_PLOT_HIDE, "hide"},          {RL_PLOT_REF, "ref"},
                  {RL_PLOT_FRACTION, "fraction"},  {RL_PLOT_ONE, "line-1"},
                  {RL_PLOT_TRAIN, "train-len"},    {RL_PLOT_CI, "ci"}};

void rl_plot_words_write(FILE *fp, unsigned f)
{
    int first = 1;
    for (size_t i = 0; i < sizeof plot_words / sizeof plot_words[0]; i++)
        if (f & plot_words[i].flag) {
            fprintf(fp, "%s%s", first ? "" : " ", plot_words[i].word);
            first = 0;
        }
}

unsigned rl_plot_words_parse(const char *words)
{
    unsigned f = 0;
    while (*words) {
        size_t n = strcspn(words, " ");
        for (size_t i = 0; i < sizeof plot_words / sizeof plot_words[0]; i++)
            if (strlen(plot_words[i].word) == n && strncmp(words, plot_words[i].word, n) == 0)
                f |= plot_words[i].flag;
        words += n;
        words += strspn(words, " ");
    }
    return f;
}

void rl_csv_field(FILE *fp, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}
