/*
 * test_key.c - the decision key (src/problem/key.c): complete, minimal, canonical.
 *
 * Every single change of a problem field or of a backend fingerprint field must change
 * the key (pairwise distinct over all variants); problems that differ only in how the
 * attributes were spelled, in data pointers or in weight values must share it; the text
 * must parse back to the same problem and fingerprint; malformed text must be refused
 * with a status, never crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "convfind.h"
#include "problem/key.h"

#define INTS(...)                                                                          \
    {                                                                                      \
        .count = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),                \
        .v = {__VA_ARGS__}                                                                 \
    }

static convfind_conv_desc base_desc(void)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    int64_t x[] = {1, 8, 10, 12}, w[] = {6, 4, 3, 3};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.group = 2;
    d.pads = (convfind_ints)INTS(1, 1, 1, 1);
    d.has_bias = 1;
    d.activation = CONVFIND_ACT_CLIP;
    d.alpha = 0.0f;
    d.beta = 6.0f;
    return d;
}

static cf_fingerprint base_fp(void)
{
    cf_fingerprint fp = {.cpu = "GenuineTest Model 9 @ 3.0GHz", .isa = "avx2", .threads = 4,
                         .ws_class = -1};
    return fp;
}

static void key_of(const convfind_conv_desc *d, const cf_fingerprint *fp, cf_key *key)
{
    convfind_problem *p;
    convfind_status st = convfind_problem_create(d, &p);
    if (st != CONVFIND_OK)
        fail_msg("problem: %s", convfind_last_error());
    assert_int_equal(cf_key_make(p, fp, key), CONVFIND_OK);
    convfind_problem_destroy(p);
}

/* Each variant changes exactly one thing relative to base_desc / base_fp. */
typedef void (*mutate_fn)(convfind_conv_desc *d, cf_fingerprint *fp);

static void m_none(convfind_conv_desc *d, cf_fingerprint *fp) { (void)d; (void)fp; }
static void m_op(convfind_conv_desc *d, cf_fingerprint *fp)
{
    (void)fp;
    d->op = CONVFIND_OP_CONV_TRANSPOSE; /* W is C x M/g x k: 8 x 4 x 3 x 3 */
    d->w_dims[0] = 8;
}
static void m_dtype(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->dtype = CONVFIND_DTYPE_F16; }
static void m_layout(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->layout = CONVFIND_LAYOUT_NHWC; }
static void m_math(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->math_mode = CONVFIND_MATH_ALLOW_TF32; }
static void m_n(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->x_dims[0] = 2; }
static void m_c(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->x_dims[1] = 12; d->w_dims[1] = 6; }
static void m_h(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->x_dims[2] = 11; }
static void m_w(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->x_dims[3] = 13; }
static void m_m(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->w_dims[0] = 8; }
static void m_kh(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->w_dims[2] = 1; d->pads.v[0] = d->pads.v[2] = 0; }
static void m_kw(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->w_dims[3] = 5; d->pads.v[1] = d->pads.v[3] = 2; }
static void m_group(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->group = 1; d->w_dims[1] = 8; }
static void m_stride(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->strides = (convfind_ints)INTS(1, 2); }
static void m_dil(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->dilations = (convfind_ints)INTS(2, 1); d->pads = (convfind_ints)INTS(2, 1, 2, 1); }
static void m_pad_begin(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->pads = (convfind_ints)INTS(2, 1, 0, 1); }
static void m_pad_end(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->pads = (convfind_ints)INTS(1, 1, 1, 2); }
static void m_bias(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->has_bias = 0; }
static void m_residual(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->has_residual = 1; }
static void m_act(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->activation = CONVFIND_ACT_RELU; }
static void m_alpha(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->alpha = -1.0f; }
static void m_beta(convfind_conv_desc *d, cf_fingerprint *fp) { (void)fp; d->beta = 6.5f; }
static void m_cpu(convfind_conv_desc *d, cf_fingerprint *fp) { (void)d; strcpy(fp->cpu, "GenuineTest Model 10 @ 3.0GHz"); }
static void m_isa(convfind_conv_desc *d, cf_fingerprint *fp) { (void)d; strcpy(fp->isa, "avx512"); }
static void m_threads(convfind_conv_desc *d, cf_fingerprint *fp) { (void)d; fp->threads = 2; }
static void m_ws(convfind_conv_desc *d, cf_fingerprint *fp) { (void)d; fp->ws_class = 20; }
static void m_ws2(convfind_conv_desc *d, cf_fingerprint *fp) { (void)d; fp->ws_class = 21; }
static void m_weights(convfind_conv_desc *d, cf_fingerprint *fp) { (void)d; fp->weights = CF_WEIGHTS_CONSTANT; }
/* 1-D and 3-D: the spatial rank itself is a field. */
static void m_rank1(convfind_conv_desc *d, cf_fingerprint *fp)
{
    (void)fp;
    d->x_rank = d->w_rank = 3;
    d->x_dims[2] = 12;
    d->w_dims[2] = 3;
    d->pads = (convfind_ints)INTS(1, 1);
}
static void m_rank3(convfind_conv_desc *d, cf_fingerprint *fp)
{
    (void)fp;
    d->x_rank = d->w_rank = 5;
    d->x_dims[4] = 4;
    d->w_dims[4] = 1;
    d->pads = (convfind_ints)INTS(1, 1, 0, 1, 1, 0);
}

static const struct {
    const char *name;
    mutate_fn fn;
} variants[] = {
    {"base", m_none},        {"op", m_op},         {"dtype", m_dtype},
    {"layout", m_layout},    {"math", m_math},     {"n", m_n},
    {"c", m_c},              {"h", m_h},           {"w", m_w},
    {"m", m_m},              {"kh", m_kh},         {"kw", m_kw},
    {"group", m_group},      {"stride", m_stride}, {"dilation", m_dil},
    {"pad_begin", m_pad_begin}, {"pad_end", m_pad_end}, {"bias", m_bias},
    {"residual", m_residual}, {"act", m_act},      {"alpha", m_alpha},
    {"beta", m_beta},        {"cpu", m_cpu},       {"isa", m_isa},
    {"threads", m_threads},  {"ws_class", m_ws},   {"ws_class2", m_ws2},
    {"rank1", m_rank1},      {"rank3", m_rank3},     {"weights", m_weights},
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

static void variant_key(int i, cf_key *key)
{
    convfind_conv_desc d = base_desc();
    cf_fingerprint fp = base_fp();
    variants[i].fn(&d, &fp);
    key_of(&d, &fp, key);
}

static void test_every_field_changes_the_key(void **state)
{
    (void)state;
    static cf_key keys[NVARIANTS];
    for (int i = 0; i < NVARIANTS; i++)
        variant_key(i, &keys[i]);
    for (int i = 0; i < NVARIANTS; i++)
        for (int j = i + 1; j < NVARIANTS; j++)
            if (cf_key_equal(&keys[i], &keys[j]) || strcmp(keys[i].text, keys[j].text) == 0)
                fail_msg("variants %s and %s share the key %s", variants[i].name,
                         variants[j].name, keys[i].text);
}

/* ConvTranspose's own fields: output_padding, and the output size it implies. */
static void test_transpose_fields(void **state)
{
    (void)state;
    convfind_conv_desc d = base_desc();
    cf_fingerprint fp = base_fp();
    m_op(&d, &fp);
    d.strides = (convfind_ints)INTS(2, 2);
    cf_key a, b, c;
    key_of(&d, &fp, &a);
    d.output_padding = (convfind_ints)INTS(1, 0);
    key_of(&d, &fp, &b);
    d.output_padding = (convfind_ints)INTS(0, 1);
    key_of(&d, &fp, &c);
    assert_false(cf_key_equal(&a, &b));
    assert_false(cf_key_equal(&a, &c));
    assert_false(cf_key_equal(&b, &c));
    assert_non_null(strstr(b.text, ";opad=1,0;"));
}

/* Attributes spelled differently but resolving to the same problem share a key;
 * parameters an activation does not read do not split it. */
static void test_same_problem_same_key(void **state)
{
    (void)state;
    convfind_conv_desc d = base_desc();
    cf_fingerprint fp = base_fp();
    cf_key a, b;
    key_of(&d, &fp, &a);
    d.strides = (convfind_ints)INTS(1, 1);
    d.dilations = (convfind_ints)INTS(1, 1);
    d.kernel_shape = (convfind_ints)INTS(3, 3);
    key_of(&d, &fp, &b);
    assert_true(cf_key_equal(&a, &b));
    d = base_desc();
    d.auto_pad = CONVFIND_AUTO_PAD_SAME_UPPER;
    d.pads.count = 0;
    key_of(&d, &fp, &b);
    assert_true(cf_key_equal(&a, &b));
    d = base_desc();
    d.activation = CONVFIND_ACT_RELU;
    d.alpha = 1.0f;
    key_of(&d, &fp, &a);
    d.alpha = 2.0f;
    d.beta = 3.0f;
    key_of(&d, &fp, &b);
    assert_true(cf_key_equal(&a, &b));
}

/* Two plans of one problem executed with different pointers and weight values keep one
 * key, and the context's key equals cf_key_make under the detected fingerprint. */
static void test_data_never_in_key(void **state)
{
    (void)state;
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:"; /* hermetic: no decisions from earlier runs */
    o.num_threads = 1;
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    convfind_context *ctx;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
    convfind_conv_desc d = base_desc();
    convfind_problem *p;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    size_t nx, nw, ny, nb;
    convfind_problem_sizes(p, &nx, &nw, &ny, &nb);
    char keys[2][CF_KEY_TEXT_MAX];
    for (int r = 0; r < 2; r++) {
        float *x = calloc(nx, 4), *w = calloc(nw, 4), *y = calloc(ny, 4), *b = calloc(nb, 4);
        for (size_t i = 0; i < nw; i++)
            w[i] = (float)(r + 1) * 0.25f;
        convfind_plan *plan;
        assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
        convfind_tensors t = {.x = x, .w = w, .b = b, .y = y};
        assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
        convfind_plan_info info;
        assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
        snprintf(keys[r], sizeof keys[r], "%s", info.key);
        char via_api[CF_KEY_TEXT_MAX];
        assert_int_equal(convfind_problem_key(ctx, p, CONVFIND_WEIGHTS_PER_CALL, via_api, sizeof via_api), strlen(info.key));
        assert_string_equal(via_api, info.key);
        convfind_plan_destroy(plan);
        free(x);
        free(w);
        free(y);
        free(b);
    }
    assert_string_equal(keys[0], keys[1]);
    cf_fingerprint fp;
    assert_int_equal(cf_host_fingerprint(1, 0, &fp), CONVFIND_OK);
    cf_key k;
    assert_int_equal(cf_key_make(p, &fp, &k), CONVFIND_OK);
    assert_string_equal(k.text, keys[0]);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

static void test_round_trip(void **state)
{
    (void)state;
    for (int i = 0; i < NVARIANTS; i++) {
        cf_key key, again;
        variant_key(i, &key);
        cf_problem p;
        cf_fingerprint fp;
        if (cf_key_parse(key.text, &p, &fp) != CONVFIND_OK)
            fail_msg("%s: %s does not parse: %s", variants[i].name, key.text, convfind_last_error());
        assert_int_equal(cf_key_make(&p, &fp, &again), CONVFIND_OK);
        assert_string_equal(again.text, key.text);
        assert_true(again.hash == key.hash);
        /* derived counts agree with what problem_create computed */
        convfind_conv_desc d = base_desc();
        cf_fingerprint unused = base_fp();
        variants[i].fn(&d, &unused);
        convfind_problem *orig;
        assert_int_equal(convfind_problem_create(&d, &orig), CONVFIND_OK);
        assert_int_equal(p.x_elems, orig->x_elems);
        assert_int_equal(p.w_elems, orig->w_elems);
        assert_int_equal(p.y_elems, orig->y_elems);
        assert_int_equal(p.nsp, orig->nsp);
        assert_true(p.alpha == orig->alpha && p.beta == orig->beta);
        convfind_problem_destroy(orig);
    }
}

static void test_parse_rejects(void **state)
{
    (void)state;
    cf_key key;
    variant_key(0, &key);
    cf_problem p;
    cf_fingerprint fp;
    /* every truncation */
    char buf[CF_KEY_TEXT_MAX];
    for (size_t n = 0; n < key.len; n++) {
        memcpy(buf, key.text, n);
        buf[n] = '\0';
        assert_int_not_equal(cf_key_parse(buf, &p, &fp), CONVFIND_OK);
    }
    const struct {
        const char *from, *to;
        convfind_status want;
    } edits[] = {
        {"v2;", "v1;", CONVFIND_ERR_NOT_FOUND},
        {";n=1;", ";n=01;", CONVFIND_ERR_INVALID_ATTRIBUTE},         /* not canonical */
        {";out=10x12;", ";out=10x13;", CONVFIND_ERR_INVALID_SHAPE},  /* inconsistent */
        {";g=2;", ";g=3;", CONVFIND_ERR_INVALID_SHAPE},
        {";n=1;", ";n=0;", CONVFIND_ERR_INVALID_SHAPE},
        {";k=3x3;", ";k=3x3x3;", CONVFIND_ERR_INVALID_ATTRIBUTE},
        {";act=clip(0,6);", ";act=clip(0);", CONVFIND_ERR_INVALID_ATTRIBUTE},
        {";bias=1;", ";bias=2;", CONVFIND_ERR_INVALID_ATTRIBUTE},
        {";math=strict;", ";math=loose;", CONVFIND_ERR_INVALID_ATTRIBUTE},
        {";weights=per_call;", ";weights=packed;", CONVFIND_ERR_INVALID_ATTRIBUTE},
        {";weights=per_call;", ";", CONVFIND_ERR_INVALID_ATTRIBUTE},
        {":t4", ":t0", CONVFIND_ERR_INVALID_ATTRIBUTE},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        const char *at = strstr(key.text, edits[i].from);
        if (!at)
            fail_msg("edit %zu: \"%s\" not in %s", i, edits[i].from, key.text);
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - key.text), key.text, edits[i].to,
                 at + strlen(edits[i].from));
        convfind_status st = cf_key_parse(buf, &p, &fp);
        if (st != edits[i].want)
            fail_msg("%s: got %s, want %s (%s)", buf, convfind_status_name(st),
                     convfind_status_name(edits[i].want), convfind_last_error());
        assert_true(strlen(convfind_last_error()) > 0);
    }
    assert_int_equal(cf_key_parse(NULL, &p, &fp), CONVFIND_ERR_NULL_POINTER);
}

static void test_workspace_class(void **state)
{
    (void)state;
    assert_int_equal(cf_workspace_class(0), -1);
    assert_int_equal(cf_workspace_class(1), 0);
    assert_int_equal(cf_workspace_class(1023), 9);
    assert_int_equal(cf_workspace_class(1024), 10);
    assert_int_equal(cf_workspace_class_bytes(-1), 0);
    assert_int_equal(cf_workspace_class_bytes(10), 1024);
    for (size_t v = 1; v < 100000; v = v * 3 + 1) {
        int c = cf_workspace_class(v);
        assert_true(cf_workspace_class_bytes(c) <= v && v < 2 * cf_workspace_class_bytes(c));
    }
}

/* The detected fingerprint carries the context's settings and stays parseable whatever
 * the CPU calls itself. */
static void test_detected_fingerprint(void **state)
{
    (void)state;
    cf_fingerprint detected;
    assert_int_equal(cf_host_fingerprint(3, 4096, &detected), CONVFIND_OK);
    assert_int_equal(detected.threads, 3);
    assert_int_equal(detected.ws_class, 12);
    assert_null(strpbrk(detected.cpu, ";:="));
    assert_true(strlen(detected.cpu) > 0 && strlen(detected.isa) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_changes_the_key),
        cmocka_unit_test(test_transpose_fields),
        cmocka_unit_test(test_same_problem_same_key),
        cmocka_unit_test(test_data_never_in_key),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_workspace_class),
        cmocka_unit_test(test_detected_fingerprint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
