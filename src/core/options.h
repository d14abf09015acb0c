/*
 * options.h - reading and writing the public structs that grow (convfind.h, "Options
 * structs that grow").
 *
 * Each such struct starts with `size_t struct_size`, the size of the struct in the
 * header the caller was compiled with.  The library reads only that many bytes of an
 * options struct, so an older caller's struct is never read past its end and the fields
 * it lacks keep their zero defaults, and writes only that many bytes of a struct it
 * fills.  A struct_size above the library's means a header newer than the library:
 * refused with both sizes named, rather than guessed at.
 */
#ifndef CONVFIND_CORE_OPTIONS_H
#define CONVFIND_CORE_OPTIONS_H

#include <stddef.h>

#include "convfind.h"

/* Copies the caller's `src` (NULL: all defaults) into `dst`, this release's `size` bytes:
 * the first src->struct_size bytes (0: `size`), zeros after them, and dst's struct_size
 * set to `size`.  `what` names the struct in messages.  CONVFIND_ERR_UNSUPPORTED for a
 * struct_size above `size`, CONVFIND_ERR_INVALID_ATTRIBUTE for one too small to hold
 * struct_size itself. */
convfind_status cf_options_read(const void *src, size_t size, const char *what, void *dst);

/* Writes this release's `src` (`size` bytes, its struct_size ignored) into the caller's
 * `dst`: the first dst->struct_size bytes (0: `size`), leaving dst->struct_size as the
 * caller set it.  Errors as cf_options_read. */
convfind_status cf_options_write(const void *src, size_t size, const char *what, void *dst);

#endif /* CONVFIND_CORE_OPTIONS_H */
