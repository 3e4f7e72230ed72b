/* rl_status.h — ropelab's status codes and error messages (prefix rl_).
 *
 * Every function that can fail because of something outside the program
 * (flags, files, the driver) returns an rl_status and, when it fails, fills an
 * rl_error with a complete human-readable sentence. Programmer errors are
 * assert()s instead. The status table is generated from one list, so the
 * enum and its names cannot drift apart. */
#ifndef RL_STATUS_H
#define RL_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#define RL_STATUS_LIST(X)                                              \
    X(RL_OK, "ok")                                                     \
    X(RL_ERR_ARG, "invalid argument")                                  \
    X(RL_ERR_IO, "input/output error")                                 \
    X(RL_ERR_PARSE, "parse error")                                     \
    X(RL_ERR_NOMEM, "out of host memory")                              \
    X(RL_ERR_NO_VULKAN, "no Vulkan loader")                            \
    X(RL_ERR_NO_DEVICE, "no such Vulkan device")                       \
    X(RL_ERR_VK, "Vulkan error")                                       \
    X(RL_ERR_LIMIT, "exceeds a device limit")                          \
    X(RL_ERR_UNSUPPORTED, "unsupported on this device")                \
    X(RL_ERR_VALIDATION, "Vulkan validation layer reported a message") \
    X(RL_ERR_MISMATCH, "result outside tolerance")

typedef enum rl_status {
#define RL_X_ENUM(name, text) name,
    RL_STATUS_LIST(RL_X_ENUM)
#undef RL_X_ENUM
    RL_STATUS_COUNT
} rl_status;

/* An error report: the status, a full sentence naming what failed
 * ("out of device memory allocating 512 MiB for K"), and, when the failure
 * is about one named parameter, that parameter's key as data ("factor",
 * "attn_remap_window"; "" when no one key is at fault). The key is the name
 * in the object the failing validator was given (an encoding's parameters,
 * an experiment kind's params, a runner section), so a caller that knows
 * where that object came from (the batch runner: its YAML mapping) finds
 * the key's line and column from err.key and never by searching msg.
 * Zero-initialise it. */
#define RL_ERROR_KEY_MAX 64
typedef struct rl_error {
    rl_status status;
    char msg[1024];
    char key[RL_ERROR_KEY_MAX]; /* NUL-terminated; a longer key is truncated to 63 bytes */
} rl_error;

/* Short fixed name of a status ("invalid argument"); never NULL. */
const char *rl_status_str(rl_status st);

/* Records st and a printf-style message in err (err may be NULL) and returns
 * st, so callers write `return rl_fail(err, RL_ERR_ARG, "...", ...);`. The
 * error names no key: err->key is cleared (a reused rl_error keeps no stale
 * key from an earlier failure). */
rl_status rl_fail(rl_error *err, rl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
rl_status rl_failv(rl_error *err, rl_status st, const char *fmt, va_list ap);

/* As rl_fail, and records key (the failing parameter's name; NULL or "":
 * none) in err->key, truncated to RL_ERROR_KEY_MAX - 1 bytes. err may be
 * NULL. Validators whose message is about one parameter use this, so
 * callers locate the parameter without reading the message:
 * `return rl_fail_key(err, RL_ERR_ARG, "factor", "factor %g must be >= 1", f);`. */
rl_status rl_fail_key(rl_error *err, rl_status st, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sets (key non-empty) or clears (NULL or "") the failing key of an error
 * already recorded in err, keeping its status and message; truncates as
 * rl_fail_key. For a caller that knows which of its parameters a nested
 * call's failure is about, or that passes on an error whose key belongs to
 * another object's keys (clear it then). err may be NULL. */
void rl_error_set_key(rl_error *err, const char *key);

/* Prefixes the existing message in err with "context: " (keeps the status
 * and the key). */
void rl_error_prefix(rl_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
