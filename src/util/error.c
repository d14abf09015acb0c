/*
 * error.c - thread-local error messages and status names (see error.h).
 */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char cf_error_message[512];

convfind_status cf_fail(convfind_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cf_error_message, sizeof cf_error_message, fmt, ap);
    va_end(ap);
    return status;
}

void cf_clear_error(void) { cf_error_message[0] = '\0'; }

const char *convfind_last_error(void) { return cf_error_message; }

const char *convfind_status_name(convfind_status status)
{
    switch (status) {
    case CONVFIND_OK: return "CONVFIND_OK";
    case CONVFIND_ERR_NULL_POINTER: return "CONVFIND_ERR_NULL_POINTER";
    case CONVFIND_ERR_INVALID_ENUM: return "CONVFIND_ERR_INVALID_ENUM";
    case CONVFIND_ERR_INVALID_RANK: return "CONVFIND_ERR_INVALID_RANK";
    case CONVFIND_ERR_INVALID_SHAPE: return "CONVFIND_ERR_INVALID_SHAPE";
    case CONVFIND_ERR_INVALID_ATTRIBUTE: return "CONVFIND_ERR_INVALID_ATTRIBUTE";
    case CONVFIND_ERR_OVERFLOW: return "CONVFIND_ERR_OVERFLOW";
    case CONVFIND_ERR_UNSUPPORTED: return "CONVFIND_ERR_UNSUPPORTED";
    case CONVFIND_ERR_OUT_OF_MEMORY: return "CONVFIND_ERR_OUT_OF_MEMORY";
    case CONVFIND_ERR_NOT_FOUND: return "CONVFIND_ERR_NOT_FOUND";
    case CONVFIND_ERR_BACKEND: return "CONVFIND_ERR_BACKEND";
    case CONVFIND_ERR_IO: return "CONVFIND_ERR_IO";
    case CONVFIND_ERR_UNAVAILABLE: return "CONVFIND_ERR_UNAVAILABLE";
    }
    return "CONVFIND_ERR_UNKNOWN";
}

const char *convfind_version_string(void) { return CONVFIND_VERSION_STRING; }
