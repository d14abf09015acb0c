/*
 * test_npy.c - the CLI's .npy reader and writer: round trips, the exact bytes NumPy
 * expects, one case per rejection class with its status and message, and writes that
 * fail without harming an existing file.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npy.h"

/* Builds magic + version + header length + header + `data_bytes` bytes of 0x3f. */
static unsigned char *make_image(int major, const char *header, size_t data_bytes,
                                 size_t *size)
{
    size_t hlen = strlen(header);
    size_t len_bytes = major == 1 ? 2 : 4;
    size_t prefix = 8 + len_bytes;
    *size = prefix + hlen + data_bytes;
    unsigned char *b = malloc(*size + 1);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    for (size_t i = 0; i < len_bytes; i++)
        b[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + prefix, header, hlen);
    memset(b + prefix + hlen, 0x3f, data_bytes);
    return b;
}

static void test_round_trip_memory(void **state)
{
    (void)state;
    const int64_t shapes[][4] = {{2, 3, 4, 5}, {7, 0, 0, 0}, {1, 1, 1, 1}, {3, 0, 2, 0}};
    const int ndims[] = {4, 1, 0, 3};
    for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++) {
        size_t count = 1;
        for (int i = 0; i < ndims[s]; i++)
            count *= (size_t)shapes[s][i];
        float *data = malloc((count ? count : 1) * sizeof(float));
        assert_non_null(data);
        for (size_t i = 0; i < count; i++)
            data[i] = (float)i * -0.37f + 1e-30f;
        void *image;
        size_t size;
        char err[CF_NPY_ERROR_SIZE];
        assert_int_equal(cf_npy_encode(ndims[s], shapes[s], data, &image, &size, err, sizeof err),
                         CONVFIND_OK);
        cf_npy_array a;
        assert_int_equal(cf_npy_parse(image, size, &a, err, sizeof err), CONVFIND_OK);
        assert_int_equal(a.ndim, ndims[s]);
        assert_int_equal(a.count, count);
        for (int i = 0; i < ndims[s]; i++)
            assert_int_equal(a.dims[i], shapes[s][i]);
        if (count)
            assert_memory_equal(a.data, data, count * sizeof(float));
        else
            assert_null(a.data);
        cf_npy_free(&a);
        assert_null(a.data);
        free(image);
        free(data);
    }
}

/* What NumPy writes for np.zeros((2, 3), np.float32): version 1.0, the dict in this
 * exact spelling, padded with spaces to a 64-byte boundary and ended by a newline. */
static void test_encode_matches_numpy_layout(void **state)
{
    (void)state;
    const int64_t dims[2] = {2, 3};
    const float data[6] = {0};
    void *image;
    size_t size;
    assert_int_equal(cf_npy_encode(2, dims, data, &image, &size, NULL, 0), CONVFIND_OK);
    const unsigned char *b = image;
    const char dict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_int_equal(size, 128 + 24);
    assert_memory_equal(b, "\x93NUMPY\x01\x00", 8);
    assert_int_equal(b[8] | b[9] << 8, 118);
    assert_memory_equal(b + 10, dict, sizeof dict - 1);
    for (size_t i = 10 + sizeof dict - 1; i < 127; i++)
        assert_int_equal(b[i], ' ');
    assert_int_equal(b[127], '\n');
    free(image);

    /* One dimension is written as a one-element tuple. */
    const int64_t one[1] = {5};
    const float five[5] = {0};
    assert_int_equal(cf_npy_encode(1, one, five, &image, &size, NULL, 0), CONVFIND_OK);
    assert_non_null(strstr((const char *)image + 10, "'shape': (5,), }"));
    free(image);
}

static void test_round_trip_file(void **state)
{
    (void)state;
    char path[] = "/tmp/convfind_test_npy_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fclose(fdopen(fd, "w"));
    const int64_t dims[3] = {2, 2, 3};
    float data[12];
    for (int i = 0; i < 12; i++)
        data[i] = (float)i - 5.5f;
    char err[CF_NPY_ERROR_SIZE];
    assert_int_equal(cf_npy_write_file(path, 3, dims, data, err, sizeof err), CONVFIND_OK);
    cf_npy_array a;
    assert_int_equal(cf_npy_read_file(path, &a, err, sizeof err), CONVFIND_OK);
    assert_int_equal(a.ndim, 3);
    assert_memory_equal(a.data, data, sizeof data);
    cf_npy_free(&a);
    remove(path);

    assert_int_equal(cf_npy_read_file(path, &a, err, sizeof err), CONVFIND_ERR_IO);
    assert_non_null(strstr(err, "cannot open"));
    assert_int_equal(a.ndim, 0);
    assert_null(a.data);
}

typedef struct accept_case {
    int major;
    const char *header;
    int ndim;
    int64_t dim0;
} accept_case;

/* Headers NumPy or a careful hand may write that must be accepted. */
static void test_accepted_headers(void **state)
{
    (void)state;
    static const accept_case cases[] = {
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   \n", 2, 2},
        {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", 1, 4},
        {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", 0, 0},
        {1, "{\"shape\": (3,2), \"descr\": \"<f4\", \"fortran_order\": False}", 2, 3},
        {1, "{ 'descr' : '<f4' ,\n'fortran_order':False,'shape':(2L,3L,)}\n", 2, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t size;
        const int64_t counts[] = {6, 4, 1, 6, 6};
        unsigned char *b = make_image(cases[i].major, cases[i].header, (size_t)counts[i] * 4, &size);
        cf_npy_array a;
        char err[CF_NPY_ERROR_SIZE];
        convfind_status st = cf_npy_parse(b, size, &a, err, sizeof err);
        if (st != CONVFIND_OK)
            fail_msg("case %zu rejected: %s", i, err);
        assert_int_equal(a.ndim, cases[i].ndim);
        assert_int_equal(a.count, (size_t)counts[i]);
        if (a.ndim)
            assert_int_equal(a.dims[0], cases[i].dim0);
        cf_npy_free(&a);
        free(b);
    }
}

typedef struct reject_case {
    const char *what;
    int major;
    const char *header;  /* NULL: use `raw` as the whole image */
    size_t data_bytes;
    convfind_status status;
    const char *message; /* a substring the message must contain */
} reject_case;

#define F32_2x3 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n"

static void test_rejections(void **state)
{
    (void)state;
    static const reject_case cases[] = {
        {"big-endian", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
         CONVFIND_ERR_UNSUPPORTED, "big-endian"},
        {"float64", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16,
         CONVFIND_ERR_UNSUPPORTED, "dtype '<f8'"},
        {"int32", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8,
         CONVFIND_ERR_UNSUPPORTED, "dtype '<i4'"},
        {"fortran order", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24,
         CONVFIND_ERR_UNSUPPORTED, "Fortran"},
        {"version 4.0", 4, F32_2x3, 24, CONVFIND_ERR_IO, "version 4.0"},
        {"no shape", 1, "{'descr': '<f4', 'fortran_order': False, }", 0, CONVFIND_ERR_IO,
         "no 'shape'"},
        {"duplicate key", 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False}", 0,
         CONVFIND_ERR_IO, "duplicate key 'descr'"},
        {"unknown key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}", 4,
         CONVFIND_ERR_IO, "unknown key 'x'"},
        {"int shape", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", 12,
         CONVFIND_ERR_IO, "not a tuple"},
        {"negative dim", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", 0,
         CONVFIND_ERR_IO, "non-negative integer"},
        {"bad bool", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }", 12,
         CONVFIND_ERR_IO, "True or False"},
        {"unclosed dict", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 12,
         CONVFIND_ERR_IO, "end of the header"},
        {"unclosed string", 1, "{'descr: 1}", 0, CONVFIND_ERR_IO, "closing quote"},
        {"not a dict", 1, "['descr']", 0, CONVFIND_ERR_IO, "'{'"},
        {"garbage after dict", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()} x", 4,
         CONVFIND_ERR_IO, "only whitespace"},
        {"truncated data", 1, F32_2x3, 20, CONVFIND_ERR_INVALID_SHAPE, "truncated .npy data"},
        {"trailing data", 1, F32_2x3, 28, CONVFIND_ERR_INVALID_SHAPE, "trailing"},
        {"dim overflows int64", 1,
         "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0,
         CONVFIND_ERR_OVERFLOW, "overflows a 64-bit integer"},
        {"element count overflows", 1,
         "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0,
         CONVFIND_ERR_OVERFLOW, "element count"},
        {"byte count overflows", 1,
         "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0,
         CONVFIND_ERR_OVERFLOW, "byte count"},
        {"too many dims", 1,
         "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
         "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }",
         4, CONVFIND_ERR_INVALID_RANK, "more than 32"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const reject_case *c = &cases[i];
        size_t size;
        unsigned char *b = make_image(c->major, c->header, c->data_bytes, &size);
        cf_npy_array a;
        char err[CF_NPY_ERROR_SIZE];
        convfind_status st = cf_npy_parse(b, size, &a, err, sizeof err);
        if (st != c->status || !strstr(err, c->message))
            fail_msg("%s: got %s \"%s\", want %s containing \"%s\"", c->what,
                     convfind_status_name(st), err, convfind_status_name(c->status), c->message);
        assert_int_equal(a.ndim, 0);
        assert_null(a.data);
        free(b);
    }
}

/* Damage outside the header dict: magic, length field, sizes below the fixed prefix. */
static void test_rejected_prefixes(void **state)
{
    (void)state;
    size_t size;
    unsigned char *b = make_image(1, F32_2x3, 24, &size);
    cf_npy_array a;
    char err[CF_NPY_ERROR_SIZE];

    for (size_t cut = 0; cut < 10; cut++) {
        assert_int_equal(cf_npy_parse(b, cut, &a, err, sizeof err), CONVFIND_ERR_IO);
        assert_true(strstr(err, "not a .npy file") || strstr(err, "truncated"));
    }
    /* Cut inside the header: the length field now promises more than there is. */
    assert_int_equal(cf_npy_parse(b, 40, &a, err, sizeof err), CONVFIND_ERR_IO);
    assert_non_null(strstr(err, "header claims"));

    b[1] = 'n';
    assert_int_equal(cf_npy_parse(b, size, &a, err, sizeof err), CONVFIND_ERR_IO);
    assert_non_null(strstr(err, "not a .npy file"));
    b[1] = 'N';
    b[7] = 1; /* version 1.1 does not exist */
    assert_int_equal(cf_npy_parse(b, size, &a, err, sizeof err), CONVFIND_ERR_IO);
    assert_non_null(strstr(err, "version 1.1"));
    b[7] = 0;
    assert_int_equal(cf_npy_parse(b, size, &a, err, sizeof err), CONVFIND_OK);
    cf_npy_free(&a);

    assert_int_equal(cf_npy_parse(NULL, 10, &a, err, sizeof err), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_npy_parse(b, size, NULL, err, sizeof err), CONVFIND_ERR_NULL_POINTER);
    free(b);
}

/* A NUL (or another control character) inside a header string: "'<f4\\0'" would compare
 * equal to '<f4' once copied into a C string. */
static void test_control_characters_in_strings(void **state)
{
    (void)state;
    static const char header[] = "{'descr': '<f4\0', 'fortran_order': False, 'shape': (2,), }";
    const size_t hlen = sizeof header - 1;
    size_t size = 10 + hlen + 8;
    unsigned char *b = calloc(1, size);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)hlen;
    memcpy(b + 10, header, hlen);
    cf_npy_array a;
    char err[CF_NPY_ERROR_SIZE];
    assert_int_equal(cf_npy_parse(b, size, &a, err, sizeof err), CONVFIND_ERR_IO);
    assert_non_null(strstr(err, "control characters"));
    b[10 + 14] = '\t';
    assert_int_equal(cf_npy_parse(b, size, &a, err, sizeof err), CONVFIND_ERR_IO);
    free(b);
}

/* A write that fails (the file size limit, as a full disk would) leaves an existing
 * output exactly as it was and no temporary file; a write through a symbolic link
 * replaces the file it points to and keeps the link. */
static void test_failed_write_keeps_the_target(void **state)
{
    (void)state;
    char dir[] = "/tmp/convfind_test_npy_dir_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char target[128], link[128];
    snprintf(target, sizeof target, "%s/y.npy", dir);
    snprintf(link, sizeof link, "%s/link.npy", dir);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fputs("precious", f);
    fclose(f);
    static float data[4096];
    const int64_t dims[1] = {4096};
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {4096, 4096};
        char err[CF_NPY_ERROR_SIZE];
        _exit(setrlimit(RLIMIT_FSIZE, &lim) == 0 &&
              cf_npy_write_file(target, 1, dims, data, err, sizeof err) == CONVFIND_ERR_IO
                  ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char back[32] = "";
    f = fopen(target, "r");
    assert_non_null(f);
    assert_non_null(fgets(back, sizeof back, f));
    fclose(f);
    assert_string_equal(back, "precious");

    assert_int_equal(symlink("y.npy", link), 0);
    char err[CF_NPY_ERROR_SIZE];
    assert_int_equal(cf_npy_write_file(link, 1, dims, data, err, sizeof err), CONVFIND_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    cf_npy_array a;
    assert_int_equal(cf_npy_read_file(target, &a, err, sizeof err), CONVFIND_OK);
    assert_int_equal(a.count, 4096);
    cf_npy_free(&a);
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 2); /* y.npy and link.npy: no temporary file left */
    unlink(link);
    unlink(target);
    rmdir(dir);
}

static void test_encode_rejections(void **state)
{
    (void)state;
    void *image = (void *)1;
    size_t size = 1;
    char err[CF_NPY_ERROR_SIZE];
    const int64_t dims[2] = {2, -1};
    const float data[2] = {0};
    assert_int_equal(cf_npy_encode(33, dims, data, &image, &size, err, sizeof err),
                     CONVFIND_ERR_INVALID_RANK);
    assert_null(image);
    assert_int_equal(cf_npy_encode(2, dims, data, &image, &size, err, sizeof err),
                     CONVFIND_ERR_INVALID_SHAPE);
    assert_non_null(strstr(err, "dimension 1 is negative"));
    const int64_t big[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    assert_int_equal(cf_npy_encode(2, big, data, &image, &size, err, sizeof err),
                     CONVFIND_ERR_OVERFLOW);
    assert_int_equal(cf_npy_write_file("/nonexistent-dir/y.npy", 1, dims, data, err, sizeof err),
                     CONVFIND_ERR_IO);
    assert_non_null(strstr(err, "cannot create"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_memory),
        cmocka_unit_test(test_encode_matches_numpy_layout),
        cmocka_unit_test(test_round_trip_file),
        cmocka_unit_test(test_accepted_headers),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_rejected_prefixes),
        cmocka_unit_test(test_encode_rejections),
        cmocka_unit_test(test_control_characters_in_strings),
        cmocka_unit_test(test_failed_write_keeps_the_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
