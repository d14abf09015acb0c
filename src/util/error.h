/*
 * error.h - the thread-local "last error" message behind convfind_last_error().
 *
 * Every public entry point calls cf_clear_error() first; every failure path returns
 * through cf_fail(), which formats a message naming the offending value.  The buffer is
 * _Thread_local so concurrent callers never see each other's messages.  error.c defines
 * both in the core; the CUDA module defines them over the core's through the host
 * services it is given (src/cuda/host.c), so there is one buffer per thread however
 * the core was linked.
 */
#ifndef CONVFIND_ERROR_H
#define CONVFIND_ERROR_H

#include "convfind.h"

#if defined(__GNUC__)
#define CF_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CF_PRINTF(fmt, args)
#endif

/* Records the formatted message for the calling thread and returns `status`. */
convfind_status cf_fail(convfind_status status, const char *fmt, ...) CF_PRINTF(2, 3);

/* Empties the calling thread's message. */
void cf_clear_error(void);

#endif /* CONVFIND_ERROR_H */
