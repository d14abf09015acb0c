/*
 * error.c - thread-local error messages, status names and explanations, and the
 * library's version (see error.h).
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

const char *convfind_status_message(convfind_status status)
{
    switch (status) {
    case CONVFIND_OK: return "the call succeeded";
    case CONVFIND_ERR_NULL_POINTER: return "a required pointer argument was NULL";
    case CONVFIND_ERR_INVALID_ENUM: return "an enum argument had a value the library does not know";
    case CONVFIND_ERR_INVALID_RANK: return "a tensor rank or an attribute's length was wrong";
    case CONVFIND_ERR_INVALID_SHAPE:
        return "a dimension was not positive or did not agree with another";
    case CONVFIND_ERR_INVALID_ATTRIBUTE: return "an attribute or option was outside its range";
    case CONVFIND_ERR_OVERFLOW: return "an element, byte or workspace count did not fit";
    case CONVFIND_ERR_UNSUPPORTED:
        return "the request was valid but this build or backend cannot carry it out";
    case CONVFIND_ERR_OUT_OF_MEMORY: return "an allocation failed";
    case CONVFIND_ERR_NOT_FOUND: return "a named algorithm, record or key does not exist";
    case CONVFIND_ERR_BACKEND: return "an algorithm or the device reported an error";
    case CONVFIND_ERR_IO: return "a file could not be read or written";
    case CONVFIND_ERR_UNAVAILABLE:
        return "the backend asked for cannot run in this process (no CUDA module, driver, "
               "device or cuDNN)";
    }
    return "an unknown status";
}

const char *convfind_version_string(void) { return CONVFIND_VERSION_STRING; }

int convfind_version_number(void) { return CONVFIND_VERSION_NUMBER; }
