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

/* An error report: the status and a full sentence naming what failed
 * ("out of device memory allocating 512 MiB for K"). Zero-initialise it. */
typedef struct rl_error {
    rl_status status;
    char msg[1024];
} rl_error;

/* Short fixed name of a status ("invalid argument"); never NULL. */
const char *rl_status_str(rl_status st);

/* Records st and a printf-style message in err (err may be NULL) and returns
 * st, so callers write `return rl_fail(err, RL_ERR_ARG, "...", ...);`. */
rl_status rl_fail(rl_error *err, rl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
rl_status rl_failv(rl_error *err, rl_status st, const char *fmt, va_list ap);

/* Prefixes the existing message in err with "context: " (keeps the status). */
void rl_error_prefix(rl_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
