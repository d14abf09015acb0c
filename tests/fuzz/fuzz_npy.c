/*
 * fuzz_npy.c - libFuzzer target for the CLI's .npy parser (tools/npy.c).
 *
 * Besides "no crash, no out-of-bounds access" (ASan/UBSan), every accepted input must
 * be consistent: the element count is the product of the dims, and writing the array
 * back and parsing that image again gives the same shape and the same bits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_npy_array a;
    char err[CF_NPY_ERROR_SIZE];
    if (cf_npy_parse(data, size, &a, err, sizeof err) != CONVFIND_OK) {
        if (a.data || a.ndim || a.count || err[0] == '\0' || strchr(err, '\n'))
            abort(); /* a rejection must leave the array empty and say why on one line */
        return 0;
    }
    size_t count = 1;
    for (int i = 0; i < a.ndim; i++)
        count *= (size_t)a.dims[i];
    if (count != a.count || (count > 0) != (a.data != NULL))
        abort();

    void *image;
    size_t image_size;
    if (cf_npy_encode(a.ndim, a.dims, a.data, &image, &image_size, err, sizeof err) !=
        CONVFIND_OK)
        abort();
    cf_npy_array b;
    if (cf_npy_parse(image, image_size, &b, err, sizeof err) != CONVFIND_OK)
        abort();
    if (b.ndim != a.ndim || b.count != a.count ||
        memcmp(b.dims, a.dims, sizeof a.dims) != 0 ||
        (a.count && memcmp(a.data, b.data, a.count * sizeof(float)) != 0))
        abort();
    free(image);
    cf_npy_free(&b);
    cf_npy_free(&a);
    return 0;
}
