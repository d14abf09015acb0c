/*
 * npy.h - reading and writing NumPy .npy files of float32 data for the convfind CLI.
 *
 * Only what the CLI exchanges with NumPy is supported: dtype '<f4' (little-endian
 * float32), C order, any number of dimensions up to CF_NPY_MAX_DIMS, format versions
 * 1.0, 2.0 and 3.0 on input; version 1.0 on output.  Everything else (big-endian,
 * other dtypes, Fortran order, malformed headers, truncated or trailing data, sizes that
 * overflow) is rejected with a specific status and a one-line message naming the
 * offending value.
 *
 * Parsing works on a memory buffer so that the file reader, the tests and the fuzz
 * target all exercise the same code.  The functions keep no state: any number of
 * threads may call them at once on different arrays.
 */
#ifndef CONVFIND_TOOLS_NPY_H
#define CONVFIND_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "convfind.h"

#define CF_NPY_MAX_DIMS 32 /* NumPy's own historical limit */
#define CF_NPY_ERROR_SIZE 256

/* A dense C-ordered float32 array.  `data` is owned by the array (malloc) and released
 * by cf_npy_free(); it is NULL when count == 0. */
typedef struct cf_npy_array {
    int ndim;
    int64_t dims[CF_NPY_MAX_DIMS];
    size_t count; /* product of dims (1 for a 0-d array) */
    float *data;
} cf_npy_array;

/* Parses a complete .npy image of `size` bytes.  On success fills *out (which the caller
 * releases with cf_npy_free) and returns CONVFIND_OK.  On failure *out is left empty
 * (ndim 0, count 0, data NULL), a message is written to `err` (always NUL-terminated,
 * CF_NPY_ERROR_SIZE bytes suffice) and the status says which class of problem it is:
 *   CONVFIND_ERR_IO            not a .npy image: bad magic, version or header syntax
 *   CONVFIND_ERR_UNSUPPORTED   valid .npy, but not little-endian float32 in C order
 *   CONVFIND_ERR_INVALID_SHAPE data shorter or longer than the shape says
 *   CONVFIND_ERR_INVALID_RANK  more than CF_NPY_MAX_DIMS dimensions
 *   CONVFIND_ERR_OVERFLOW      a dimension, the element count or byte count overflows
 *   CONVFIND_ERR_OUT_OF_MEMORY the data buffer could not be allocated
 *   CONVFIND_ERR_NULL_POINTER  buf (with size > 0) or out is NULL */
convfind_status cf_npy_parse(const void *buf, size_t size, cf_npy_array *out, char *err,
                             size_t err_size);

/* Reads the file at `path` and parses it as cf_npy_parse does.  A file that cannot be
 * opened or read gives CONVFIND_ERR_IO with the system's reason.  The message does not
 * repeat the path; callers prefix it. */
convfind_status cf_npy_read_file(const char *path, cf_npy_array *out, char *err,
                                 size_t err_size);

/* Encodes `count` = product(dims) floats as a version 1.0 .npy image in a new malloc'd
 * buffer (*image, *image_size), header padded so the data starts on a 64-byte boundary
 * as NumPy does.  ndim may be 0..CF_NPY_MAX_DIMS; dims must be >= 0. */
convfind_status cf_npy_encode(int ndim, const int64_t *dims, const float *data,
                              void **image, size_t *image_size, char *err, size_t err_size);

/* Writes cf_npy_encode's image to `path` through a temporary file beside it, renamed
 * into place once complete (outfile.h): on failure an existing file is left as it was
 * and nothing else remains. */
convfind_status cf_npy_write_file(const char *path, int ndim, const int64_t *dims,
                                  const float *data, char *err, size_t err_size);

/* Releases the data of an array and empties it.  NULL is allowed. */
void cf_npy_free(cf_npy_array *array);

#endif /* CONVFIND_TOOLS_NPY_H */
