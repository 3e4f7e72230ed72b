#include "core/rl_status.h"

#include <stdio.h>
#include <string.h>

static const char *const status_names[RL_STATUS_COUNT] = {
#define RL_X_NAME(name, text) text,
    RL_STATUS_LIST(RL_X_NAME)
#undef RL_X_NAME
};

const char *rl_status_str(rl_status st)
{
    if ((unsigned)st >= RL_STATUS_COUNT)
        return "unknown status";
    return status_names[st];
}

rl_status rl_failv(rl_error *err, rl_status st, const char *fmt, va_list ap)
{
    if (err) {
        err->status = st;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        err->key[0] = '\0';
    }
    return st;
}

void rl_error_set_key(rl_error *err, const char *key)
{
    if (!err)
        return;
    size_t n = key ? strlen(key) : 0;
    if (n > sizeof err->key - 1)
        n = sizeof err->key - 1;
    if (n)
        memcpy(err->key, key, n);
    err->key[n] = '\0';
}

rl_status rl_fail_key(rl_error *err, rl_status st, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rl_failv(err, st, fmt, ap);
    va_end(ap);
    rl_error_set_key(err, key);
    return st;
}

rl_status rl_fail(rl_error *err, rl_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rl_failv(err, st, fmt, ap);
    va_end(ap);
    return st;
}

void rl_error_prefix(rl_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char head[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    size_t n = strlen(head);
    if (n > sizeof err->msg - 3)
        n = sizeof err->msg - 3;
    memcpy(err->msg, head, n);
    memcpy(err->msg + n, ": ", 2);
    size_t room = sizeof err->msg - n - 3, len = strlen(old);
    if (len > room)
        len = room;
    memcpy(err->msg + n + 2, old, len);
    err->msg[n + 2 + len] = '\0';
}
