/*
 * test_cli_layers.c - the CLI's suite CSV reader (tools/layers.c): every suite file of
 * the repository reads and gives valid problems with the output sizes the format's
 * formula gives; each column family lands in the right descriptor field (1-D and 3-D
 * axes, ConvTranspose's W, asymmetric pads, output padding, the epilogue, defaults,
 * columns in any order); one case per rejection with its message.
 *
 * The repository root comes as the first argument (ctest passes it).
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

#include "layers.h"

static const char *source_dir;

/* The output sizes of docs/benchmarks.md's format, computed apart from the library. */
static void expected_out(const cli_layer *l, int64_t *out)
{
    for (int j = 0; j < l->dims; j++) {
        int64_t span = (l->kern[j] - 1) * l->dil[j] + 1, pad = l->pads[j] + l->pads[l->dims + j];
        out[j] = l->transpose ? (l->x[j] - 1) * l->stride[j] + span - pad + l->opad[j]
                              : (l->x[j] + pad - span) / l->stride[j] + 1;
    }
}

static int data_rows(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    int rows = -1; /* the header */
    while (fgets(line, sizeof line, f))
        rows += line[0] != '#' && line[0] != '\n';
    fclose(f);
    return rows;
}

static void check_file(const char *path)
{
    cli_layer *rows;
    size_t n;
    char err[400];
    if (cli_layers_read(path, &rows, &n, err, sizeof err) != 0)
        fail_msg("%s: %s", path, err);
    assert_int_equal(n, data_rows(path));
    for (size_t i = 0; i < n; i++) {
        convfind_conv_desc d;
        cli_layer_desc(&rows[i], &d);
        convfind_problem *p;
        if (convfind_problem_create(&d, &p) != CONVFIND_OK)
            fail_msg("%s row %s: %s", path, rows[i].name, convfind_last_error());
        int rank;
        int64_t y[CONVFIND_MAX_RANK], want[3];
        assert_int_equal(convfind_problem_output_dims(p, &rank, y), CONVFIND_OK);
        expected_out(&rows[i], want);
        assert_int_equal(rank, rows[i].dims + 2);
        assert_int_equal(y[0], rows[i].n);
        assert_int_equal(y[1], rows[i].k);
        for (int j = 0; j < rows[i].dims; j++)
            assert_int_equal(y[2 + j], want[j]);
        convfind_problem_destroy(p);
    }
    free(rows);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

static void test_repository_suites_read(void **state)
{
    (void)state;
    const char *dirs[] = {"data", "data/suites"};
    int files = 0, ops[2] = {0, 0}, ranks[4] = {0};
    for (size_t k = 0; k < 2; k++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", source_dir, dirs[k]);
        DIR *dp = opendir(dir);
        assert_non_null(dp);
        struct dirent *e;
        while ((e = readdir(dp)) != NULL) {
            if (!ends_with(e->d_name, ".csv"))
                continue;
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            check_file(path);
            cli_layer *rows;
            size_t n;
            char err[400];
            assert_int_equal(cli_layers_read(path, &rows, &n, err, sizeof err), 0);
            for (size_t i = 0; i < n; i++)
                ops[rows[i].transpose]++, ranks[rows[i].dims]++;
            free(rows);
            files++;
        }
        closedir(dp);
    }
    /* The suites cover what the reader must handle: both ops, ranks 1 to 3. */
    assert_true(files >= 30);
    assert_true(ops[0] > 0 && ops[1] > 0);
    assert_true(ranks[1] > 0 && ranks[2] > 0 && ranks[3] > 0);
}

/* Writes `text` to a temporary file and reads it. */
static int read_text(const char *text, cli_layer **rows, size_t *n, char *err, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/test_cli_layers_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    int rc = cli_layers_read(path, rows, n, err, size);
    remove(path);
    return rc;
}

static void test_columns_land_in_their_fields(void **state)
{
    (void)state;
    const char *text =
        "# comment lines and blank lines are skipped\n"
        "\n"
        " k , n,c,name,dims,op,d,h,w,t,r,s,pads,stride_d,stride_h,stride_w,dil_w,output_padding,"
        "group,bias,act,alpha,beta,count\n"
        "6,2,4,up3d,3,convT,3,5,7,1,2,3,0 1 0 0 1 2,1,2,3,2,0 1 2,2,1,clip,-1.5,6,3\n"
        "8,1,2,line,1,,,,11,,,5,,,,,2,,,,leaky_relu,0.25,,\n"
        "8,1,8,dw,,,,9,9,,3,3,,,2,2,,,8,,,,,\n";
    cli_layer *l;
    size_t n;
    char err[400];
    if (read_text(text, &l, &n, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(n, 3);

    convfind_conv_desc d;
    cli_layer_desc(&l[0], &d);
    assert_string_equal(l[0].name, "up3d");
    assert_int_equal(l[0].count, 3);
    assert_int_equal(d.op, CONVFIND_OP_CONV_TRANSPOSE);
    assert_int_equal(d.x_rank, 5);
    const int64_t x0[5] = {2, 4, 3, 5, 7}, w0[5] = {4, 3, 1, 2, 3}, pads0[6] = {0, 1, 0, 0, 1, 2};
    assert_memory_equal(d.x_dims, x0, sizeof x0);
    assert_memory_equal(d.w_dims, w0, sizeof w0); /* C x M/group x kernel */
    assert_int_equal(d.pads.count, 6);
    assert_memory_equal(d.pads.v, pads0, sizeof pads0);
    assert_int_equal(d.strides.v[0], 1);
    assert_int_equal(d.strides.v[1], 2);
    assert_int_equal(d.strides.v[2], 3);
    assert_int_equal(d.dilations.v[2], 2);
    assert_int_equal(d.output_padding.count, 3);
    assert_int_equal(d.output_padding.v[2], 2);
    assert_int_equal(d.group, 2);
    assert_int_equal(d.has_bias, 1);
    assert_int_equal(d.activation, CONVFIND_ACT_CLIP);
    assert_true(d.alpha == -1.5f && d.beta == 6.0f);

    cli_layer_desc(&l[1], &d);
    assert_int_equal(d.op, CONVFIND_OP_CONV);
    assert_int_equal(d.x_rank, 3);
    const int64_t x1[3] = {1, 2, 11}, w1[3] = {8, 2, 5};
    assert_memory_equal(d.x_dims, x1, sizeof x1);
    assert_memory_equal(d.w_dims, w1, sizeof w1);
    assert_int_equal(d.pads.count, 2);
    assert_int_equal(d.pads.v[0] + d.pads.v[1], 0);
    assert_int_equal(d.dilations.v[0], 2);
    assert_int_equal(d.output_padding.count, 0);
    assert_int_equal(d.activation, CONVFIND_ACT_LEAKY_RELU);
    assert_true(d.alpha == 0.25f && d.beta == 0.0f); /* as written, not ONNX's 0.01 */
    assert_int_equal(l[1].count, 1);

    cli_layer_desc(&l[2], &d); /* dims and op by default: a 2-D Conv */
    const int64_t w2[4] = {8, 1, 3, 3}, pads2[4] = {0, 0, 0, 0};
    assert_int_equal(d.x_rank, 4);
    assert_memory_equal(d.w_dims, w2, sizeof w2);
    assert_memory_equal(d.pads.v, pads2, sizeof pads2);
    assert_int_equal(d.strides.v[0], 2);
    assert_int_equal(d.activation, CONVFIND_ACT_NONE);
    assert_int_equal(d.has_bias, 0);
    free(l);
}

static void test_symmetric_pads_per_axis(void **state)
{
    (void)state;
    cli_layer *l;
    size_t n;
    char err[400];
    assert_int_equal(read_text("name,n,c,h,w,k,r,s,pad_h,pad_w\na,1,3,9,9,4,3,5,1,2\n", &l, &n,
                               err, sizeof err), 0);
    const int64_t pads[4] = {1, 2, 1, 2};
    assert_memory_equal(l[0].pads, pads, sizeof pads);
    free(l);
}

static void test_rejections_name_line_and_column(void **state)
{
    (void)state;
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"name,count\n", "line 1: the header lacks the required column 'n'"},
        {"name,n,c,k,h,w,r,s,colour\n", "line 1: unknown column 'colour'"},
        {"name,n,c,k,h,w,r,s,n\n", "line 1: column 'n' appears twice"},
        {"# nothing\n", "line 1: no header line"},
        {"name,n,c,k,h,w,r,s\n", "no layers in the file"},
        {"name,n,c,k,h,w,r,s\na,1,4,4,9,9,3\n", "line 2: 7 fields, expected 8"},
        {"name,n,c,k,h,w,r,s\na,1,4,4,9,9,3,3,1\n", "line 2: more than 8 fields, expected 8"},
        {"name,n,c,k,h,w,r,s,stride_h\na,1,4,4,9,9,3,3,x\n", "line 2: stride_h 'x' is not an integer"},
        {"name,count,n,c,k,h,w,r,s\na,0,1,4,4,9,9,3,3\n", "line 2: count 0 must be >= 1"},
        {"name,n,c,k,h,w,r,s,group\na,1,4,4,9,9,3,3,3\n", "line 2: group 3 does not divide c 4 and k 4"},
        {"name,n,c,k,h,w,r,s,group\na,1,4,4,9,9,3,3,0\n", "line 2: group 0 must be >= 1"},
        {"name,n,c,k,h,w,r,s,op\na,1,4,4,9,9,3,3,deconv\n", "line 2: op 'deconv' is not conv or convT"},
        {"name,n,c,k,h,w,r,s,dims\na,1,4,4,9,9,3,3,4\n", "line 2: dims 4 must be 1, 2 or 3"},
        {"name,n,c,k,w,s,dims,h\na,1,4,4,9,3,1,9\n", "line 2: h given for a 1-D layer"},
        {"name,n,c,k,h,w,r\na,1,4,4,9,9,3\n", "line 2: s is required for a 2-D layer"},
        {"name,n,c,k,h,w,r,s,pads\na,1,4,4,9,9,3,3,1 1 1\n", "line 2: pads has 3 values, a 2-D layer needs 4"},
        {"name,n,c,k,h,w,r,s,pads\na,1,4,4,9,9,3,3,1 -1 1 1\n", "line 2: pads '1 -1 1 1' must be 4 integers >= 0"},
        {"name,n,c,k,h,w,r,s,output_padding\na,1,4,4,9,9,3,3,1 0\n", "line 2: output_padding is for op=convT only"},
        {"name,n,c,k,h,w,r,s,bias\na,1,4,4,9,9,3,3,2\n", "line 2: bias 2 must be 0 or 1"},
        {"name,n,c,k,h,w,r,s,act\na,1,4,4,9,9,3,3,gelu\n", "line 2: act 'gelu' is not one of"},
        {"name,n,c,k,h,w,r,s,alpha\na,1,4,4,9,9,3,3,big\n", "line 2: alpha 'big' is not a number"},
        {"name,n,c,k,h,w,r,s\n,1,4,4,9,9,3,3\n", "line 2: the layer name must have 1 to 127"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_layer *l = (cli_layer *)&l;
        size_t n = 7;
        char err[400] = "";
        assert_int_equal(read_text(cases[i].text, &l, &n, err, sizeof err), -1);
        assert_null(l);
        assert_int_equal(n, 0);
        if (!strstr(err, cases[i].message))
            fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].message);
    }
}

static void test_header_detection(void **state)
{
    (void)state;
    assert_true(cli_layers_is_header("name,n,c,k"));
    assert_true(cli_layers_is_header(" name , count"));
    assert_false(cli_layers_is_header("name=a x=1,4,6,6 w=4,4,3,3"));
    assert_false(cli_layers_is_header("MIOpenDriver conv -n 1"));
    assert_true(cli_layers_is_header("n,c,name"));
    assert_false(cli_layers_is_header("label,n,c"));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli_layers SOURCE_DIR\n");
        return 2;
    }
    source_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repository_suites_read),
        cmocka_unit_test(test_columns_land_in_their_fields),
        cmocka_unit_test(test_symmetric_pads_per_axis),
        cmocka_unit_test(test_rejections_name_line_and_column),
        cmocka_unit_test(test_header_detection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
