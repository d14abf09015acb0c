/*
 * npy.c - the .npy reader and writer (see npy.h for what is accepted).
 *
 * The header is a Python dict literal.  Rather than a general Python parser, this reads
 * exactly the grammar NumPy writes (and what a hand-written header may reasonably
 * contain: either quote style, any whitespace, keys in any order, a trailing comma) and
 * rejects everything else with the byte offset of the problem.  Every length taken from
 * the file is checked against the bytes actually present before it is used, and every
 * product is checked for overflow, because the input is untrusted (see fuzz_npy.c).
 */
#include "npy.h"

#include "outfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64

static convfind_status fail(char *err, size_t err_size, convfind_status status,
                            const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static convfind_status fail(char *err, size_t err_size, convfind_status status,
                            const char *fmt, ...)
{
    if (err && err_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* "(2, 3)" for messages; truncated safely when long. */
static void format_shape(char *buf, size_t size, int ndim, const int64_t *dims)
{
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < ndim && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64, i ? ", " : "", dims[i]);
    if (len < size)
        snprintf(buf + len, size - len, ndim == 1 ? ",)" : ")");
}

/* Element and byte counts of a shape, or the overflow message. */
static convfind_status shape_counts(int ndim, const int64_t *dims, size_t *count,
                                    size_t *bytes, char *err, size_t err_size)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0)
            return fail(err, err_size, CONVFIND_ERR_INVALID_SHAPE,
                        "dimension %d is negative (%" PRId64 ")", i, dims[i]);
        if ((uint64_t)dims[i] > SIZE_MAX)
            return fail(err, err_size, CONVFIND_ERR_OVERFLOW,
                        "dimension %d (%" PRId64 ") overflows size_t", i, dims[i]);
        size_t d = (size_t)dims[i];
        if (d != 0 && n > SIZE_MAX / d) {
            char s[160];
            format_shape(s, sizeof s, ndim, dims);
            return fail(err, err_size, CONVFIND_ERR_OVERFLOW,
                        "the element count of shape %s overflows size_t", s);
        }
        n *= d;
    }
    /* A zero dimension makes n 0 even after an earlier partial product was huge, which
     * is what NumPy means too. */
    if (n > SIZE_MAX / sizeof(float)) {
        char s[160];
        format_shape(s, sizeof s, ndim, dims);
        return fail(err, err_size, CONVFIND_ERR_OVERFLOW,
                    "the byte count of shape %s overflows size_t", s);
    }
    *count = n;
    *bytes = n * sizeof(float);
    return CONVFIND_OK;
}

/* ---- header dict parser ------------------------------------------------------- */

typedef struct header_parser {
    const char *begin, *p, *end;
    char *err;
    size_t err_size;
} header_parser;

static convfind_status syntax(header_parser *hp, const char *expected)
{
    if (hp->p >= hp->end)
        return fail(hp->err, hp->err_size, CONVFIND_ERR_IO,
                    "malformed .npy header: expected %s, found the end of the header",
                    expected);
    unsigned char c = (unsigned char)*hp->p;
    return fail(hp->err, hp->err_size, CONVFIND_ERR_IO,
                "malformed .npy header at byte %td: expected %s, found '%c' (0x%02x)",
                hp->p - hp->begin, expected, (c >= 0x20 && c < 0x7f) ? c : '?', c);
}

static void skip_space(header_parser *hp)
{
    while (hp->p < hp->end &&
           (*hp->p == ' ' || *hp->p == '\t' || *hp->p == '\n' || *hp->p == '\r'))
        hp->p++;
}

static bool accept(header_parser *hp, char c)
{
    skip_space(hp);
    if (hp->p < hp->end && *hp->p == c) {
        hp->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes (NumPy never writes any in the keys or '<f4'). */
static convfind_status parse_string(header_parser *hp, char *out, size_t out_size)
{
    skip_space(hp);
    if (hp->p >= hp->end || (*hp->p != '\'' && *hp->p != '"'))
        return syntax(hp, "a quoted string");
    char quote = *hp->p++;
    const char *start = hp->p;
    while (hp->p < hp->end && *hp->p != quote) {
        /* A NUL or another control character would make "'<f4\\0'" compare equal to
         * '<f4' once copied into a C string. */
        if (*hp->p == '\\' || (unsigned char)*hp->p < 0x20)
            return syntax(hp, "a plain string without escapes or control characters");
        hp->p++;
    }
    if (hp->p >= hp->end)
        return syntax(hp, "a closing quote");
    size_t len = (size_t)(hp->p - start);
    hp->p++;
    if (len >= out_size) {
        hp->p = start;
        return syntax(hp, "a string of at most 31 characters");
    }
    memcpy(out, start, len);
    out[len] = '\0';
    return CONVFIND_OK;
}

static convfind_status parse_bool(header_parser *hp, bool *out)
{
    skip_space(hp);
    size_t left = (size_t)(hp->end - hp->p);
    if (left >= 4 && memcmp(hp->p, "True", 4) == 0) {
        hp->p += 4;
        *out = true;
    } else if (left >= 5 && memcmp(hp->p, "False", 5) == 0) {
        hp->p += 5;
        *out = false;
    } else {
        return syntax(hp, "True or False");
    }
    return CONVFIND_OK;
}

static convfind_status parse_dim(header_parser *hp, int index, int64_t *out)
{
    skip_space(hp);
    if (hp->p >= hp->end || *hp->p < '0' || *hp->p > '9')
        return syntax(hp, "a non-negative integer dimension");
    int64_t v = 0;
    while (hp->p < hp->end && *hp->p >= '0' && *hp->p <= '9') {
        int digit = *hp->p - '0';
        if (v > (INT64_MAX - digit) / 10)
            return fail(hp->err, hp->err_size, CONVFIND_ERR_OVERFLOW,
                        "dimension %d of the .npy shape overflows a 64-bit integer", index);
        v = v * 10 + digit;
        hp->p++;
    }
    /* Python 2 wrote long integers as "3L". */
    if (hp->p < hp->end && *hp->p == 'L')
        hp->p++;
    *out = v;
    return CONVFIND_OK;
}

/* A Python tuple of integers: "()", "(3,)", "(2, 3)", "(2, 3,)".  "(3)" is an int in
 * Python, not a tuple, and NumPy rejects it, so this does too. */
static convfind_status parse_shape(header_parser *hp, int *ndim, int64_t *dims)
{
    if (!accept(hp, '('))
        return syntax(hp, "'(' starting the shape tuple");
    int n = 0;
    bool trailing_comma = false;
    while (!accept(hp, ')')) {
        if (n == CF_NPY_MAX_DIMS)
            return fail(hp->err, hp->err_size, CONVFIND_ERR_INVALID_RANK,
                        "the .npy shape has more than %d dimensions", CF_NPY_MAX_DIMS);
        convfind_status st = parse_dim(hp, n, &dims[n]);
        if (st != CONVFIND_OK)
            return st;
        n++;
        trailing_comma = accept(hp, ',');
        if (!trailing_comma) {
            if (!accept(hp, ')'))
                return syntax(hp, "',' or ')' in the shape tuple");
            break;
        }
    }
    if (n == 1 && !trailing_comma)
        return fail(hp->err, hp->err_size, CONVFIND_ERR_IO,
                    "malformed .npy header: shape (%" PRId64 ") is not a tuple; write (%" PRId64
                    ",)",
                    dims[0], dims[0]);
    *ndim = n;
    return CONVFIND_OK;
}

typedef struct npy_header {
    char descr[32];
    bool fortran_order;
    int ndim;
    int64_t dims[CF_NPY_MAX_DIMS];
} npy_header;

static convfind_status parse_header_dict(header_parser *hp, npy_header *h)
{
    enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4 };
    unsigned seen = 0;
    convfind_status st;
    if (!accept(hp, '{'))
        return syntax(hp, "'{' starting the header dict");
    while (!accept(hp, '}')) {
        char key[32];
        const char *key_at = hp->p;
        if ((st = parse_string(hp, key, sizeof key)) != CONVFIND_OK)
            return st;
        unsigned bit = strcmp(key, "descr") == 0           ? KEY_DESCR
                       : strcmp(key, "fortran_order") == 0 ? KEY_FORTRAN
                       : strcmp(key, "shape") == 0         ? KEY_SHAPE
                                                           : 0;
        if (bit == 0 || (seen & bit)) {
            hp->p = key_at;
            skip_space(hp);
            return fail(hp->err, hp->err_size, CONVFIND_ERR_IO,
                        "malformed .npy header at byte %td: %s key '%s'", hp->p - hp->begin,
                        bit ? "duplicate" : "unknown", key);
        }
        seen |= bit;
        if (!accept(hp, ':'))
            return syntax(hp, "':' after a key");
        if (bit == KEY_DESCR)
            st = parse_string(hp, h->descr, sizeof h->descr);
        else if (bit == KEY_FORTRAN)
            st = parse_bool(hp, &h->fortran_order);
        else
            st = parse_shape(hp, &h->ndim, h->dims);
        if (st != CONVFIND_OK)
            return st;
        if (!accept(hp, ',')) {
            if (!accept(hp, '}'))
                return syntax(hp, "',' or '}' in the header dict");
            break;
        }
    }
    skip_space(hp);
    if (hp->p != hp->end)
        return syntax(hp, "only whitespace after the header dict");
    const char *missing = !(seen & KEY_DESCR)     ? "descr"
                          : !(seen & KEY_FORTRAN) ? "fortran_order"
                          : !(seen & KEY_SHAPE)   ? "shape"
                                                  : NULL;
    if (missing)
        return fail(hp->err, hp->err_size, CONVFIND_ERR_IO,
                    "malformed .npy header: no '%s' key", missing);
    return CONVFIND_OK;
}

static convfind_status check_dtype(const npy_header *h, char *err, size_t err_size)
{
    if (strcmp(h->descr, "<f4") == 0)
        return CONVFIND_OK;
    if (strcmp(h->descr, ">f4") == 0)
        return fail(err, err_size, CONVFIND_ERR_UNSUPPORTED,
                    "dtype '>f4' is big-endian float32; only little-endian float32 ('<f4') "
                    "is supported");
    return fail(err, err_size, CONVFIND_ERR_UNSUPPORTED,
                "dtype '%s' is not little-endian float32 ('<f4')", h->descr);
}

static uint32_t load_le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void empty(cf_npy_array *a) { memset(a, 0, sizeof *a); }

convfind_status cf_npy_parse(const void *buf, size_t size, cf_npy_array *out, char *err,
                             size_t err_size)
{
    if (err && err_size > 0)
        err[0] = '\0';
    if (!out)
        return fail(err, err_size, CONVFIND_ERR_NULL_POINTER, "output array is NULL");
    empty(out);
    if (!buf && size > 0)
        return fail(err, err_size, CONVFIND_ERR_NULL_POINTER, "buffer is NULL");
    const unsigned char *b = buf;

    if (size < NPY_MAGIC_LEN + 2 || memcmp(b, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return fail(err, err_size, CONVFIND_ERR_IO,
                    "not a .npy file: it does not start with \"\\x93NUMPY\"");
    unsigned major = b[6], minor = b[7];
    size_t len_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
    if (len_bytes == 0 || minor != 0)
        return fail(err, err_size, CONVFIND_ERR_IO,
                    "unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are supported)",
                    major, minor);
    size_t prefix = NPY_MAGIC_LEN + 2 + len_bytes;
    if (size < prefix)
        return fail(err, err_size, CONVFIND_ERR_IO,
                    "truncated .npy file: %zu bytes, the header length field alone needs %zu",
                    size, prefix);
    size_t header_len = len_bytes == 2 ? (size_t)b[8] | (size_t)b[9] << 8 : load_le32(b + 8);
    if (header_len > size - prefix)
        return fail(err, err_size, CONVFIND_ERR_IO,
                    "truncated .npy file: the header claims %zu bytes but only %zu follow",
                    header_len, size - prefix);

    npy_header h;
    memset(&h, 0, sizeof h);
    header_parser hp = {(const char *)b + prefix, (const char *)b + prefix,
                        (const char *)b + prefix + header_len, err, err_size};
    convfind_status st = parse_header_dict(&hp, &h);
    if (st != CONVFIND_OK)
        return st;
    if ((st = check_dtype(&h, err, err_size)) != CONVFIND_OK)
        return st;
    if (h.fortran_order)
        return fail(err, err_size, CONVFIND_ERR_UNSUPPORTED,
                    "Fortran-order arrays are not supported; save the array in C order "
                    "(numpy.ascontiguousarray)");

    size_t count, bytes;
    if ((st = shape_counts(h.ndim, h.dims, &count, &bytes, err, err_size)) != CONVFIND_OK)
        return st;
    size_t have = size - prefix - header_len;
    if (have != bytes) {
        char s[160];
        format_shape(s, sizeof s, h.ndim, h.dims);
        return fail(err, err_size, CONVFIND_ERR_INVALID_SHAPE,
                    have < bytes ? "truncated .npy data: shape %s needs %zu bytes, the file "
                                   "has %zu"
                                 : "shape %s needs %zu bytes of data but the file has %zu "
                                   "(trailing bytes)",
                    s, bytes, have);
    }

    float *data = NULL;
    if (count > 0) {
        data = malloc(bytes);
        if (!data)
            return fail(err, err_size, CONVFIND_ERR_OUT_OF_MEMORY,
                        "cannot allocate %zu bytes for the array data", bytes);
        const unsigned char *src = b + prefix + header_len;
        for (size_t i = 0; i < count; i++) {
            uint32_t bits = load_le32(src + 4 * i);
            memcpy(&data[i], &bits, sizeof bits);
        }
    }
    out->ndim = h.ndim;
    memcpy(out->dims, h.dims, sizeof h.dims);
    out->count = count;
    out->data = data;
    return CONVFIND_OK;
}

convfind_status cf_npy_read_file(const char *path, cf_npy_array *out, char *err,
                                 size_t err_size)
{
    if (out)
        empty(out);
    if (!path || !out)
        return fail(err, err_size, CONVFIND_ERR_NULL_POINTER, "path or output array is NULL");
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, err_size, CONVFIND_ERR_IO, "cannot open: %s", strerror(errno));

    /* Read by doubling chunks rather than trusting a file size, so pipes and files
     * that change while being read are handled the same way. */
    unsigned char *buf = NULL;
    size_t size = 0, cap = 0;
    convfind_status st = CONVFIND_OK;
    for (;;) {
        if (size == cap) {
            size_t next = cap ? cap * 2 : 65536;
            unsigned char *grown = next > cap ? realloc(buf, next) : NULL;
            if (!grown) {
                st = fail(err, err_size, CONVFIND_ERR_OUT_OF_MEMORY,
                          "cannot allocate %zu bytes to read the file", next);
                break;
            }
            buf = grown;
            cap = next;
        }
        size_t got = fread(buf + size, 1, cap - size, f);
        size += got;
        if (got == 0) {
            if (ferror(f))
                st = fail(err, err_size, CONVFIND_ERR_IO, "cannot read: %s", strerror(errno));
            break;
        }
    }
    fclose(f);
    if (st == CONVFIND_OK)
        st = cf_npy_parse(buf, size, out, err, err_size);
    free(buf);
    return st;
}

convfind_status cf_npy_encode(int ndim, const int64_t *dims, const float *data,
                              void **image, size_t *image_size, char *err, size_t err_size)
{
    if (err && err_size > 0)
        err[0] = '\0';
    if (!image || !image_size || (ndim > 0 && !dims))
        return fail(err, err_size, CONVFIND_ERR_NULL_POINTER, "dims or output is NULL");
    *image = NULL;
    *image_size = 0;
    if (ndim < 0 || ndim > CF_NPY_MAX_DIMS)
        return fail(err, err_size, CONVFIND_ERR_INVALID_RANK,
                    "cannot write %d dimensions (0 to %d are supported)", ndim,
                    CF_NPY_MAX_DIMS);
    size_t count, bytes;
    convfind_status st = shape_counts(ndim, dims, &count, &bytes, err, err_size);
    if (st != CONVFIND_OK)
        return st;
    if (count > 0 && !data)
        return fail(err, err_size, CONVFIND_ERR_NULL_POINTER, "data is NULL");

    char shape[CF_NPY_MAX_DIMS * 22 + 8];
    format_shape(shape, sizeof shape, ndim, dims);
    char dict[sizeof shape + 64];
    int dict_len = snprintf(dict, sizeof dict,
                            "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape);
    /* Pad with spaces and a final newline so magic + version + length + header is a
     * multiple of NPY_ALIGN, as NumPy writes it. */
    size_t prefix = NPY_MAGIC_LEN + 2 + 2;
    size_t header_len = (size_t)dict_len + 1;
    header_len += (NPY_ALIGN - (prefix + header_len) % NPY_ALIGN) % NPY_ALIGN;
    if (bytes > SIZE_MAX - prefix - header_len)
        return fail(err, err_size, CONVFIND_ERR_OVERFLOW, "the .npy image size overflows");
    size_t total = prefix + header_len + bytes;
    unsigned char *out = malloc(total);
    if (!out)
        return fail(err, err_size, CONVFIND_ERR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes for the .npy image", total);
    memcpy(out, NPY_MAGIC, NPY_MAGIC_LEN);
    out[6] = 1;
    out[7] = 0;
    out[8] = (unsigned char)(header_len & 0xff);
    out[9] = (unsigned char)(header_len >> 8);
    memcpy(out + prefix, dict, (size_t)dict_len);
    memset(out + prefix + dict_len, ' ', header_len - (size_t)dict_len - 1);
    out[prefix + header_len - 1] = '\n';
    unsigned char *dst = out + prefix + header_len;
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &data[i], sizeof bits);
        dst[4 * i + 0] = (unsigned char)(bits & 0xff);
        dst[4 * i + 1] = (unsigned char)(bits >> 8 & 0xff);
        dst[4 * i + 2] = (unsigned char)(bits >> 16 & 0xff);
        dst[4 * i + 3] = (unsigned char)(bits >> 24);
    }
    *image = out;
    *image_size = total;
    return CONVFIND_OK;
}

convfind_status cf_npy_write_file(const char *path, int ndim, const int64_t *dims,
                                  const float *data, char *err, size_t err_size)
{
    if (!path)
        return fail(err, err_size, CONVFIND_ERR_NULL_POINTER, "path is NULL");
    void *image;
    size_t size;
    convfind_status st = cf_npy_encode(ndim, dims, data, &image, &size, err, err_size);
    if (st != CONVFIND_OK)
        return st;
    cli_outfile out;
    char why[200];
    if (cli_outfile_open(&out, path, why, sizeof why) != 0) {
        free(image);
        return fail(err, err_size, CONVFIND_ERR_IO, "%s", why);
    }
    bool ok = fwrite(image, 1, size, out.f) == size;
    int saved = errno;
    free(image);
    if (!ok) {
        cli_outfile_abort(&out);
        return fail(err, err_size, CONVFIND_ERR_IO, "cannot write: %s", strerror(saved));
    }
    if (cli_outfile_commit(&out, why, sizeof why) != 0)
        return fail(err, err_size, CONVFIND_ERR_IO, "%s", why);
    return CONVFIND_OK;
}

void cf_npy_free(cf_npy_array *array)
{
    if (!array)
        return;
    free(array->data);
    empty(array);
}
