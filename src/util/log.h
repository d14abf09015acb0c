/*
 * log.h - where the library's messages go: a context's (or database handle's) log
 * function, or one line on stderr.
 *
 * Everything the library has to say outside a call's status (a database quarantined, an
 * environment variable it could not use, a decision published) is written through
 * cf_log_msg, so that an embedding runtime can route it (convfind_log_fn) and nothing
 * else in the library writes to stderr.  A message is one line: control characters are
 * replaced by spaces before it is passed on.
 */
#ifndef CONVFIND_LOG_H
#define CONVFIND_LOG_H

#include <stdbool.h>

#include "convfind.h"
#include "util/error.h"

/* A log sink.  All zero is a valid sink: stderr at WARNING. */
typedef struct cf_log {
    convfind_log_fn fn;       /* NULL: stderr */
    void *user;
    convfind_log_level level; /* messages above it are dropped; DEFAULT: WARNING */
} cf_log;

/* Whether a message of `level` would be passed on by `log` (NULL: the zero sink). */
bool cf_log_enabled(const cf_log *log, convfind_log_level level);

/* Formats one message and passes it on if its level is enabled.  Thread-safe as the
 * sink's function is (convfind_log_fn: callable concurrently). */
void cf_log_msg(const cf_log *log, convfind_log_level level, const char *fmt, ...)
    CF_PRINTF(3, 4);

/* "error", "warning", "info", "debug"; "log" for anything else. */
const char *cf_log_level_name(convfind_log_level level);

/* The level a CONVFIND_LOG spelling names (case-insensitive), or CONVFIND_LOG_DEFAULT
 * when `s` is none of them. */
convfind_log_level cf_log_level_parse(const char *s);

#endif /* CONVFIND_LOG_H */
