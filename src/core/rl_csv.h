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

/* results.csv's `plot` column: how a metric is drawn, as flags here and as
 * words in the file (docs/runner.md "results.csv"); one list for the
 * writer (run/) and the reader (plot/). An x column's flags and a value
 * column's flags combine for the value's figure. */
enum {
    RL_PLOT_LOGX = 1u << 0,     /* "log-x": x on a log axis (lengths, distances in decades) */
    RL_PLOT_LOGY = 1u << 1,     /* "log-y": y on a log axis (errors over decades) */
    RL_PLOT_HIDE = 1u << 2,     /* "hide": no figure (bookkeeping, a constant) */
    RL_PLOT_REF = 1u << 3,      /* "ref": a reference curve, in its table's figures of the
                                   same unit */
    RL_PLOT_FRACTION = 1u << 4, /* "fraction": y in [0, 1], both inside the frame */
    RL_PLOT_ONE = 1u << 5,      /* "line-1": a horizontal line at y = 1 (error / bound) */
    RL_PLOT_TRAIN = 1u << 6,    /* "train-len": x in tokens, a vertical line at train_len */
    RL_PLOT_LENGTH = 1u << 7,   /* (no word; an x column's) x is the context length: fills
                                   results.csv's length column */
    RL_PLOT_CI = 1u << 8,       /* "ci": X_lo95 / X_hi95, a bound of X's 95 % interval, drawn
                                   as X's error bars / band, never a series of its own */
};
/* Writes flags' words, space-separated (RL_PLOT_LENGTH has none). */
void rl_plot_words_write(FILE *fp, unsigned flags);
/* The flags a `plot` field names (unknown words are ignored: a newer
 * writer's word draws nothing wrong). */
unsigned rl_plot_words_parse(const char *words);

/* Writes s as one field: quoted ("" inside) when it holds a comma, a quote
 * or a line break, else as is. */
void rl_csv_field(FILE *fp, const char *s);

#endif
