/*
 * options.c - the struct_size rules of the public structs (see options.h).
 */
#include "core/options.h"

#include <string.h>

#include "util/error.h"

/* The caller's size of a struct whose first member is struct_size: 0 means `size`. */
static convfind_status caller_size(const void *s, size_t size, const char *what, size_t *n)
{
    size_t declared;
    memcpy(&declared, s, sizeof declared);
    *n = declared ? declared : size;
    if (*n > size)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "%s.struct_size = %zu, larger than this library's %zu: it comes from a "
                       "newer convfind header than the library (%s)", what, declared, size,
                       CONVFIND_VERSION_STRING);
    if (*n < sizeof(size_t))
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "%s.struct_size = %zu is too small to be a %s", what, declared, what);
    return CONVFIND_OK;
}

convfind_status cf_options_read(const void *src, size_t size, const char *what, void *dst)
{
    memset(dst, 0, size);
    size_t n = size;
    if (src) {
        convfind_status st = caller_size(src, size, what, &n);
        if (st != CONVFIND_OK)
            return st;
        memcpy(dst, src, n);
    }
    memcpy(dst, &size, sizeof size);
    return CONVFIND_OK;
}

convfind_status cf_options_write(const void *src, size_t size, const char *what, void *dst)
{
    size_t n;
    convfind_status st = caller_size(dst, size, what, &n);
    if (st != CONVFIND_OK)
        return st;
    size_t declared;
    memcpy(&declared, dst, sizeof declared);
    memcpy(dst, src, n);
    memcpy(dst, &declared, sizeof declared);
    return CONVFIND_OK;
}
