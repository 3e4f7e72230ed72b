/* rl_csv — the one CSV reader and writer (RFC 4180): results.csv, a run's
 * tables, files received from elsewhere. */
#ifndef RL_CSV_H
#define RL_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "core/rl_status.h"

typedef struct rl_csv_row {
    char **f;                    /* [n] fields, NUL-terminated inside the table's text */
    size_t n;
    size_t line;                 /* 1-based line where the row starts */
} rl_csv_row;

typedef struct rl_csv {
    rl_csv_row *rows;            /* rows[0] is the header */
    size_t n, cap;
    char *text;                  /* owned file contents; fields point into it */
} rl_csv;

/* Reads path (quoted fields, "" escapes, CRLF; blank lines skipped; at most
 * RL_FS_MAX_RESULTS bytes, opened as rl_fs_open_input does: no FIFO, no
 * device). RL_ERR_IO, RL_ERR_PARSE (message names file and line),
 * RL_ERR_NOMEM; t is to be freed with rl_csv_free in every case. */
rl_status rl_csv_read(const char *path, rl_csv *t, rl_error *err);
void rl_csv_free(rl_csv *t);

/* Index of the header column called name, or -1. */
int rl_csv_col(const rl_csv_row *header, const char *name);

/* A finite number filling all of s (empty is not a number). */
int rl_csv_num(const char *s, double *v);

/* Writes s as one field: quoted ("" inside) when it holds a comma, a quote
 * or a line break, else as is. */
void rl_csv_field(FILE *fp, const char *s);

#endif
