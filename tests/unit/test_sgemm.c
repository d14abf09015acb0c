/*
 * test_sgemm.c - convfind's SGEMM against a naive double-precision triple loop.
 *
 * Every ISA level this machine supports is forced in turn (cf_isa_force), so the
 * portable, AVX2 and AVX-512 microkernels are all checked here.  Sizes cover every
 * edge case of the register blocks (1..67 in M, N and K around MR, NR multiples) and a
 * K long enough to be sliced by the KC blocking; operands are taken plain and
 * transposed (strides), C plain and strided, with and without every epilogue part, and
 * with either operand read in place instead of packed.
 * Bound per element: |got - want| <= 1e-4 * sum_k |a*b| + 1e-6 (fp32 accumulation of
 * at most a few hundred terms is well inside it; a wrong element is not).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/epilogue.h"
#include "cpu/gemm/sgemm.h"
#include "cpu/isa.h"
#include "cpu/kernel_table.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float frand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffff) / 32768.0f - 1.0f;
}

static float *rand_buf(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

typedef struct gemm_case {
    size_t m, n, k;
    bool trans_a, trans_b, strided_c, accumulate, bias, bias_per_col, residual;
    bool trans_c; /* C and Z column-major (an NCHW output with pixels as GEMM rows) */
    convfind_activation act;
} gemm_case;

/* Runs one case at the active ISA level on `pool` and checks every element of C
 * (including that elements between strided C's columns are untouched). */
static void check_case(const gemm_case *t, cf_threadpool *pool)
{
    const size_t m = t->m, n = t->n, k = t->k;
    float *a = rand_buf(m * k), *b = rand_buf(k * n);
    ptrdiff_t rs_a = t->trans_a ? 1 : (ptrdiff_t)k, cs_a = t->trans_a ? (ptrdiff_t)m : 1;
    ptrdiff_t rs_b = t->trans_b ? 1 : (ptrdiff_t)n, cs_b = t->trans_b ? (ptrdiff_t)k : 1;
    size_t cstride = t->strided_c ? 2 : 1; /* strided C: every other float is a guard */
    size_t c_len = m * n * cstride;
    float *c = rand_buf(c_len), *c0 = malloc(c_len * sizeof(float));
    assert_non_null(c0);
    memcpy(c0, c, c_len * sizeof(float));
    float *bias = rand_buf(t->bias_per_col ? n : m), *z = rand_buf(m * n);

    cf_sgemm_epilogue ep = {.accumulate = t->accumulate, .act = t->act,
                            .alpha = 0.1f, .beta = 0.6f};
    if (t->act == CONVFIND_ACT_CLIP) {
        ep.alpha = -0.5f;
        ep.beta = 0.5f;
    }
    if (t->act == CONVFIND_ACT_HARD_SIGMOID) {
        ep.alpha = 0.2f;
        ep.beta = 0.5f;
    }
    if (t->bias) {
        ep.bias = bias;
        ep.bias_per_col = t->bias_per_col;
    }
    if (t->residual) {
        ep.z = z;
        ep.rs_z = t->trans_c ? 1 : (ptrdiff_t)n;
        ep.cs_z = t->trans_c ? (ptrdiff_t)m : 1;
    }
    size_t ws_bytes = 0;
    assert_int_equal(cf_sgemm_workspace(cf_isa_active(), m, n, k, &ws_bytes), CONVFIND_OK);
    void *ws = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) / 64 * 64) : NULL;
    ptrdiff_t rs_c = (ptrdiff_t)(n * cstride), cs_c = (ptrdiff_t)cstride;
    if (t->trans_c) {
        rs_c = (ptrdiff_t)cstride;
        cs_c = (ptrdiff_t)(m * cstride);
    }
    assert_int_equal(cf_sgemm(cf_isa_active(), m, n, k, a, rs_a, cs_a, b, rs_b, cs_b, c, rs_c,
                              cs_c, &ep, ws, ws_bytes, pool),
                     CONVFIND_OK);

    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            double sum = 0.0, mag = 0.0;
            for (size_t kk = 0; kk < k; kk++) {
                double p = (double)a[(ptrdiff_t)i * rs_a + (ptrdiff_t)kk * cs_a] *
                           (double)b[(ptrdiff_t)kk * rs_b + (ptrdiff_t)j * cs_b];
                sum += p;
                mag += fabs(p);
            }
            size_t ci = i * (size_t)rs_c + j * (size_t)cs_c;
            if (t->accumulate) {
                sum += c0[ci];
                mag += fabs(c0[ci]);
            }
            if (t->bias)
                sum += t->bias_per_col ? bias[j] : bias[i];
            if (t->residual)
                sum += z[i * (size_t)ep.rs_z + j * (size_t)ep.cs_z];
            float want = cf_activate((float)sum, t->act, ep.alpha, ep.beta);
            float got = c[ci];
            double bound = 1e-4 * (mag + 1.0) + 1e-6;
            if (!(fabs((double)got - (double)want) <= bound))
                fail_msg("isa %s m=%zu n=%zu k=%zu ta=%d tb=%d tc=%d sc=%d acc=%d bias=%d/%d "
                         "z=%d act=%d: C[%zu][%zu] = %.8g, want %.8g",
                         cf_isa_name(cf_isa_active()), m, n, k, t->trans_a, t->trans_b,
                         t->trans_c, t->strided_c, t->accumulate, t->bias, t->bias_per_col,
                         t->residual, (int)t->act, i, j, got, want);
            if (t->strided_c)
                assert_true(c[ci + 1] == c0[ci + 1]);
        }
    }
    free(ws);
    free(a);
    free(b);
    free(c);
    free(c0);
    free(bias);
    free(z);
}

/* Every level the machine supports, the active one last restored by cf_isa_unforce. */
static void for_each_level(void (*body)(cf_threadpool *pool), cf_threadpool *pool)
{
    for (int level = 0; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        assert_int_equal(cf_isa_active(), level);
        assert_true(cf_kernel_table_for((cf_isa)level)->sgemm->isa <= (cf_isa)level);
        body(pool);
    }
    cf_isa_unforce();
}

static const size_t edge_sizes[] = {1, 2, 3, 5, 6, 7, 8, 9, 13, 16, 17, 31, 32, 33, 48, 67};
#define N_EDGE (sizeof edge_sizes / sizeof edge_sizes[0])

static void sizes_body(cf_threadpool *pool)
{
    static const size_t ks[] = {1, 2, 7, 16, 33, 67};
    for (size_t im = 0; im < N_EDGE; im++)
        for (size_t in = 0; in < N_EDGE; in++)
            for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++) {
                if ((im + in + ik) % 3 != 0) /* a third of the cube keeps the test fast */
                    continue;
                gemm_case t = {.m = edge_sizes[im], .n = edge_sizes[in], .k = ks[ik]};
                check_case(&t, pool);
                t.trans_c = true;
                t.residual = true;
                t.bias = true;
                t.bias_per_col = true;
                t.act = CONVFIND_ACT_RELU;
                check_case(&t, pool);
            }
}

static void test_sizes_every_isa(void **state)
{
    (void)state;
    for_each_level(sizes_body, NULL);
}

static void all_dims_body(cf_threadpool *pool)
{
    /* Every M, N and K from 1 to 67 at least once (with the other two varying). */
    for (size_t s = 1; s <= 67; s++) {
        gemm_case t1 = {.m = s, .n = 67 - s + 1, .k = 1 + (s * 7) % 67};
        gemm_case t2 = {.m = 1 + (s * 5) % 67, .n = s, .k = 68 - s};
        check_case(&t1, pool);
        check_case(&t2, pool);
    }
}

static void test_every_dim_1_to_67(void **state)
{
    (void)state;
    for_each_level(all_dims_body, NULL);
}

static void variants_body(cf_threadpool *pool)
{
    static const convfind_activation acts[] = {
        CONVFIND_ACT_NONE, CONVFIND_ACT_RELU, CONVFIND_ACT_LEAKY_RELU, CONVFIND_ACT_CLIP,
        CONVFIND_ACT_SIGMOID, CONVFIND_ACT_TANH, CONVFIND_ACT_HARD_SIGMOID};
    int v = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (size_t ia = 0; ia < sizeof acts / sizeof acts[0]; ia++, v++) {
                /* Full tiles (48 x 64) and ragged ones (19 x 37) for every variant. */
                gemm_case t = {.m = v % 2 ? 19 : 48, .n = v % 2 ? 37 : 64, .k = 23,
                               .trans_a = ta, .trans_b = tb, .strided_c = v % 3 == 0,
                               .accumulate = v % 4 == 1, .bias = v % 5 != 4,
                               .bias_per_col = v % 2 == 0, .residual = v % 3 != 1,
                               .act = acts[ia]};
                check_case(&t, pool);
                t.m = 16;
                t.n = 32;
                t.strided_c = false;
                check_case(&t, pool);
                t.trans_c = true;
                check_case(&t, pool);
                t.m = v % 2 ? 19 : 48;
                t.n = v % 2 ? 37 : 64;
                t.strided_c = v % 3 == 0;
                check_case(&t, pool);
            }
}

static void test_transposes_and_epilogues(void **state)
{
    (void)state;
    for_each_level(variants_body, NULL);
}

static void long_k_body(cf_threadpool *pool)
{
    /* K beyond one KC slice: slices accumulate into C, the epilogue runs once. */
    gemm_case t = {.m = 40, .n = 70, .k = 1500, .bias = true, .residual = true,
                   .act = CONVFIND_ACT_RELU};
    check_case(&t, pool);
    gemm_case t2 = {.m = 9, .n = 33, .k = 777, .accumulate = true, .bias = true,
                    .bias_per_col = true, .act = CONVFIND_ACT_TANH};
    check_case(&t2, pool);
    t.trans_c = true;
    t.n = 49; /* a 7x7 NCHW output, pixels as rows */
    check_case(&t, pool);
}

static void test_long_k_sliced(void **state)
{
    (void)state;
    for_each_level(long_k_body, NULL);
}

/* One operand read in place, the other packed (cf_sgemm_compute): A in place with padded
 * rows, or transposed (column-major) when k is odd; or B in place with padded rows.  A
 * ReLU and a row or column bias run the fused epilogue on those paths too.  `c_cols`:
 * C column-major (an NCHW output with pixels as rows, whose K is sliced only past a
 * larger limit).  `variant`: 7, 14 or 1 for the level's 7-, 14- or one-row kernel variant
 * where it has one (the pixels of 7x7 and 14x14 maps, one pixel), 0 for the level's
 * kernel. */
static void check_in_place_kern(size_t m, size_t n, size_t k, bool a_in_place, bool c_cols,
                                int variant, cf_threadpool *pool)
{
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    if (variant == 7 && kern->mr7 != NULL)
        kern = kern->mr7;
    if (variant == 14 && kern->mr14 != NULL)
        kern = kern->mr14;
    if (variant == 1 && kern->mr1 != NULL)
        kern = kern->mr1;
    const bool a_cols = a_in_place && k % 2 == 1;
    const size_t ars = a_cols ? 1 : k + 3, acs = a_cols ? m + 2 : 1, ldb = n + 5;
    float *a = rand_buf((m + 2) * (k + 3)), *b = rand_buf(k * ldb), *c = rand_buf(m * n);
    float *bias = rand_buf(a_in_place ? n : m);
    size_t floats = a_in_place ? cf_sgemm_packed_b_floats(kern, k, n, NULL)
                               : cf_sgemm_packed_a_floats(kern, m, k, NULL);
    float *packed = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
    assert_non_null(packed);
    cf_sgemm_epilogue ep = {.bias = bias, .bias_per_col = a_in_place, .act = CONVFIND_ACT_RELU};
    const ptrdiff_t rs_c = c_cols ? 1 : (ptrdiff_t)n, cs_c = c_cols ? (ptrdiff_t)m : 1;
    if (a_in_place) {
        cf_sgemm_pack_b(kern, k, n, b, (ptrdiff_t)ldb, 1, packed, pool);
        cf_sgemm_compute(kern, m, n, k, (cf_sgemm_operand){a, false, ars, acs},
                         (cf_sgemm_operand){packed, true, 0, 0}, c, rs_c, cs_c, &ep, pool);
    } else {
        cf_sgemm_pack_a(kern, m, k, a, (ptrdiff_t)ars, (ptrdiff_t)acs, packed);
        cf_sgemm_compute(kern, m, n, k, (cf_sgemm_operand){packed, true, 0, 0},
                         (cf_sgemm_operand){b, false, ldb, 1}, c, rs_c, cs_c, &ep, pool);
    }
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0.0, mag = 0.0;
            for (size_t kk = 0; kk < k; kk++) {
                double p = (double)a[i * ars + kk * acs] * (double)b[kk * ldb + j];
                sum += p;
                mag += fabs(p);
            }
            sum += a_in_place ? bias[j] : bias[i];
            float want = cf_activate((float)sum, CONVFIND_ACT_RELU, 0.0f, 0.0f);
            float got = c[(ptrdiff_t)i * rs_c + (ptrdiff_t)j * cs_c];
            if (!(fabs((double)got - (double)want) <= 1e-4 * (mag + 1.0) + 1e-6))
                fail_msg("isa %s %s in place m=%zu n=%zu k=%zu c_cols=%d: C[%zu][%zu] = %.8g, "
                         "want %.8g", cf_isa_name(cf_isa_active()), a_in_place ? "A" : "B", m, n,
                         k, c_cols, i, j, got, want);
        }
    free(a);
    free(b);
    free(c);
    free(bias);
    free(packed);
}

static void check_in_place(size_t m, size_t n, size_t k, bool a_in_place, bool c_cols,
                           cf_threadpool *pool)
{
    check_in_place_kern(m, n, k, a_in_place, c_cols, 0, pool);
}

static void in_place_body(cf_threadpool *pool)
{
    static const size_t ks[] = {1, 5, 64, 700}; /* 700: several K slices */
    for (size_t im = 0; im < N_EDGE; im += 2)
        for (size_t in = 1; in < N_EDGE; in += 3)
            for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++) {
                check_in_place(edge_sizes[im], edge_sizes[in], ks[ik], true, false, pool);
                check_in_place(edge_sizes[im], edge_sizes[in], ks[ik], false, false, pool);
            }
    /* Pixels as rows, C column-major, A column-major (odd k) with a partial last row
     * panel: one K slice of 1101 (the partial panel copied whole), then two slices. */
    static const size_t long_ks[] = {1101, 1537, 700};
    for (size_t ik = 0; ik < sizeof long_ks / sizeof long_ks[0]; ik++) {
        check_in_place(50, 70, long_ks[ik], true, true, pool);
        check_in_place(13, 33, long_ks[ik], true, true, pool);
    }
}

/* Column-major C stored by the kernel (pixels as rows) with only a bias and a clamp, the
 * epilogue the kernel applies before its transpose, and row-major C: 1-, 7-, 8- and
 * 14-row kernels, full and partial row panels, every column count class of the last panel
 * (under 16, 16, between 16 and 32, whole panels), short K (the one-row kernel's steps of
 * four k and every remainder). */
static void trans_store_body(cf_threadpool *pool)
{
    static const size_t ms[] = {1, 7, 14, 28, 49, 50, 196};
    static const size_t ns[] = {5, 16, 20, 32, 37, 64};
    static const int variants[] = {0, 7, 14, 1};
    for (size_t im = 0; im < sizeof ms / sizeof ms[0]; im++)
        for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++)
            for (size_t k = 1; k <= 20; k += 1 + (im + in) % 4)
                for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
                    check_in_place_kern(ms[im], ns[in], k, true, true, variants[v], pool);
                    check_in_place_kern(ms[im], ns[in], k, true, false, variants[v], pool);
                }
    /* Long K with a partial last row panel (copied whole): one slice, then two, whose
     * second accumulates into C (the epilogue reading C, after the transpose). */
    static const size_t long_ks[] = {1101, 1537};
    for (size_t ik = 0; ik < sizeof long_ks / sizeof long_ks[0]; ik++)
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            check_in_place_kern(50, 70, long_ks[ik], true, true, variants[v], pool);
            check_in_place_kern(50, 37, long_ks[ik], true, false, variants[v], pool);
        }
}

static void test_trans_store(void **state)
{
    (void)state;
    for_each_level(trans_store_body, NULL);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    check_in_place_kern(196, 384, 64, true, true, 14, pool);
    check_in_place_kern(196, 96, 40, true, true, 7, pool);
    check_in_place_kern(49, 160, 17, true, true, 7, pool);
    cf_threadpool_destroy(pool);
}

static void test_operand_in_place(void **state)
{
    (void)state;
    for_each_level(in_place_body, NULL);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    check_in_place(37, 70, 130, true, false, pool);
    check_in_place(37, 70, 130, false, false, pool);
    check_in_place(50, 70, 1101, true, true, pool);
    cf_threadpool_destroy(pool);
}

static void half_panel_blocks_body(cf_threadpool *pool)
{
    static const size_t ns[] = {70, 160, 100};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        gemm_case t = {.m = 49, .n = ns[i], .k = 100, .bias = true, .bias_per_col = true,
                       .residual = true, .act = CONVFIND_ACT_RELU};
        check_case(&t, pool);
        t.trans_c = true;
        t.accumulate = true;
        t.act = CONVFIND_ACT_SIGMOID;
        check_case(&t, pool);
    }
}

/* Two threads where the larger dimension's panels (and half panels) do not split evenly,
 * so that both dimensions are split (a grid of tasks), at every level: 392 columns (13
 * panels of 32 and 25 halves; 25 panels of 16 and 49 halves) over 48 rows, and 100 rows
 * (13, 17 or 25 panels of 8, 6 or 4) over 64 columns. */
static void grid_split_body(cf_threadpool *pool)
{
    static const size_t shapes[][2] = {{48, 392}, {100, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        gemm_case t = {.m = shapes[i][0], .n = shapes[i][1], .k = 40, .bias = true,
                       .act = CONVFIND_ACT_RELU};
        check_case(&t, pool);
        t.trans_c = true;
        t.accumulate = true;
        t.residual = true;
        check_case(&t, pool);
    }
}

static void test_threaded(void **state)
{
    (void)state;
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(3, &pool), CONVFIND_OK);
    for_each_level(long_k_body, pool);
    gemm_case t = {.m = 200, .n = 301, .k = 64, .bias = true, .act = CONVFIND_ACT_CLIP};
    check_case(&t, pool);
    cf_threadpool_destroy(pool);
    /* Two threads and an odd number of column panels: column blocks that start and end
     * inside a panel (half panels), C plain and column-major. */
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    for_each_level(half_panel_blocks_body, pool);
    for_each_level(grid_split_body, pool);
    cf_threadpool_destroy(pool);
}

/* A task's B beyond half of L2 is streamed (sgemm.c): groups of an eighth of L2, the
 * next fetched by the row panels after the first, in shares.  20 rows are 5, 4 or 3 row
 * panels (the last partial at some levels); B read in place and packed, one K slice and
 * two (520), a last group shorter than the others, one thread and two. */
static void streamed_b_body(cf_threadpool *pool)
{
    const size_t n = 4 * cf_cpu_caches()->l2 / (64 * sizeof(float)) + 37;
    check_in_place(20, n, 64, false, false, pool);
    gemm_case t = {.m = 20, .n = n, .k = 520, .bias = true, .residual = true,
                   .act = CONVFIND_ACT_RELU};
    check_case(&t, pool);
}

static void test_streamed_b(void **state)
{
    (void)state;
    for_each_level(streamed_b_body, NULL);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    for_each_level(streamed_b_body, pool);
    cf_threadpool_destroy(pool);
}

/* B read in place from rows 1024 floats apart or more, with 128 rows of A or more and a
 * K of 96 or more: sgemm.c copies B a column panel at a time (gemm_task_repack), where
 * every tile reads the copy instead of B.  Full and partial row panels (128, 133 rows), a
 * partial last column panel, one K slice and several (520), the whole epilogue (row bias,
 * residual, accumulation into C, a clamp or an activation applied after the store).  With
 * two threads the columns split at a half panel (33 panels), with three into blocks of 11
 * panels; the rows are never split here. */
static void check_b_rows_apart(size_t m, size_t k, bool accumulate, convfind_activation act,
                               cf_threadpool *pool)
{
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    const size_t n = 33 * 32 - 1, ldb = n + 3;
    float *a = rand_buf(m * k), *b = rand_buf(k * ldb), *c = rand_buf(m * n);
    float *c0 = malloc(m * n * sizeof(float)), *bias = rand_buf(m), *z = rand_buf(m * n);
    size_t pa_bytes = cf_sgemm_packed_a_floats(kern, m, k, NULL) * sizeof(float);
    float *packed = aligned_alloc(64, (pa_bytes + 63) / 64 * 64);
    assert_non_null(c0);
    assert_non_null(packed);
    memcpy(c0, c, m * n * sizeof(float));
    cf_sgemm_pack_a(kern, m, k, a, (ptrdiff_t)k, 1, packed);
    cf_sgemm_epilogue ep = {.accumulate = accumulate, .bias = bias, .z = z, .rs_z = (ptrdiff_t)n,
                            .cs_z = 1, .act = act, .alpha = -0.5f, .beta = 0.5f};
    cf_sgemm_compute(kern, m, n, k, (cf_sgemm_operand){packed, true, 0, 0},
                     (cf_sgemm_operand){b, false, ldb, 1}, c, (ptrdiff_t)n, 1, &ep, pool);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = accumulate ? c0[i * n + j] : 0.0, mag = fabs(sum);
            for (size_t kk = 0; kk < k; kk++) {
                double p = (double)a[i * k + kk] * (double)b[kk * ldb + j];
                sum += p;
                mag += fabs(p);
            }
            sum += bias[i] + z[i * n + j];
            float want = cf_activate((float)sum, act, ep.alpha, ep.beta);
            float got = c[i * n + j];
            if (!(fabs((double)got - (double)want) <= 1e-4 * (mag + 1.0) + 1e-6))
                fail_msg("isa %s B rows apart m=%zu k=%zu acc=%d act=%d: C[%zu][%zu] = %.8g, "
                         "want %.8g", cf_isa_name(cf_isa_active()), m, k, accumulate, (int)act,
                         i, j, got, want);
        }
    free(a);
    free(b);
    free(c);
    free(c0);
    free(bias);
    free(z);
    free(packed);
}

static void b_rows_apart_body(cf_threadpool *pool)
{
    check_b_rows_apart(128, 96, false, CONVFIND_ACT_RELU, pool);
    check_b_rows_apart(133, 300, true, CONVFIND_ACT_CLIP, pool);
    check_b_rows_apart(133, 520, false, CONVFIND_ACT_SIGMOID, pool);
}

static void test_b_rows_apart(void **state)
{
    (void)state;
    for_each_level(b_rows_apart_body, NULL);
    for (int threads = 2; threads <= 3; threads++) {
        cf_threadpool *pool = NULL;
        assert_int_equal(cf_threadpool_create(threads, &pool), CONVFIND_OK);
        for_each_level(b_rows_apart_body, pool);
        cf_threadpool_destroy(pool);
    }
}

/* Short K on many column panels: the microkernel walks a row panel's column panels in one
 * call (sgemm.h), stepping B, C, the column bias and the residual from tile to tile, and
 * ends in a partial panel of every class (under 16 columns, over 16, none).  Row-major C
 * and column-major C (stored by the kernel where it transposes), B packed and in place,
 * full and partial row panels. */
static void short_k_panels_body(cf_threadpool *pool)
{
    static const size_t ks[] = {1, 16, 24, 40};
    static const size_t ns[] = {5 * 32 + 7, 4 * 32 + 21, 6 * 32};
    for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++)
        for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++) {
            gemm_case t = {.m = in == 1 ? 19 : 16, .n = ns[in], .k = ks[ik], .bias = true,
                           .bias_per_col = true, .residual = true,
                           .act = in == 2 ? CONVFIND_ACT_SIGMOID : CONVFIND_ACT_RELU};
            check_case(&t, pool);
            t.accumulate = true;
            t.bias_per_col = false;
            check_case(&t, pool);
            t.trans_c = true;
            t.accumulate = false;
            t.bias_per_col = true;
            check_case(&t, pool);
            check_in_place(in == 1 ? 19 : 24, ns[in], ks[ik], false, false, pool);
        }
}

static void test_short_k_panels(void **state)
{
    (void)state;
    for_each_level(short_k_panels_body, NULL);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    for_each_level(short_k_panels_body, pool);
    cf_threadpool_destroy(pool);
}

static void test_k_zero_applies_epilogue(void **state)
{
    (void)state;
    float c[6] = {1, 2, 3, 4, 5, 6};
    float bias[2] = {10, -20};
    cf_sgemm_epilogue ep = {.accumulate = true, .bias = bias, .act = CONVFIND_ACT_RELU};
    assert_int_equal(cf_sgemm(cf_isa_active(), 2, 3, 0, NULL, 0, 0, NULL, 0, 0, c, 3, 1, &ep,
                              NULL, 0, NULL),
                     CONVFIND_OK);
    const float want[6] = {11, 12, 13, 0, 0, 0};
    for (int i = 0; i < 6; i++)
        assert_true(c[i] == want[i]);
}

static void test_errors_leave_c_untouched(void **state)
{
    (void)state;
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {7, 7, 7, 7};
    float ws[8];
    size_t need = 0;
    assert_int_equal(cf_sgemm_workspace(cf_isa_active(), 2, 2, 2, &need), CONVFIND_OK);
    assert_true(need > sizeof ws);
    assert_int_equal(cf_sgemm(cf_isa_active(), 2, 2, 2, a, 2, 1, b, 2, 1, c, 2, 1, NULL, ws,
                              sizeof ws, NULL),
                     CONVFIND_ERR_INVALID_SHAPE);
    assert_int_equal(cf_sgemm(cf_isa_active(), 2, 2, 2, NULL, 2, 1, b, 2, 1, c, 2, 1, NULL, ws,
                              sizeof ws, NULL),
                     CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_sgemm(cf_isa_active(), 2, 2, 2, a, 2, 1, b, 2, 1, c, 2, 1, NULL, NULL,
                              0, NULL),
                     CONVFIND_ERR_NULL_POINTER);
    for (int i = 0; i < 4; i++)
        assert_true(c[i] == 7.0f);
    size_t bytes = 0;
    assert_int_equal(cf_sgemm_workspace(cf_isa_active(), SIZE_MAX / 2, 4, SIZE_MAX / 4, &bytes),
                     CONVFIND_ERR_OVERFLOW);
}

static void test_isa_levels_and_caches(void **state)
{
    (void)state;
    assert_int_equal(cf_isa_parse("portable"), CF_ISA_PORTABLE);
    assert_int_equal(cf_isa_parse("AVX2"), CF_ISA_AVX2_FMA);
    assert_int_equal(cf_isa_parse("avx512"), CF_ISA_AVX512F);
    assert_int_equal(cf_isa_parse("sse9"), -1);
    assert_int_equal(cf_isa_parse(NULL), -1);
    assert_string_equal(cf_isa_name(CF_ISA_AVX2_FMA), "avx2");
    assert_string_equal(cf_isa_name((cf_isa)42), "unknown");
    assert_int_equal(cf_isa_force((cf_isa)42), CONVFIND_ERR_UNSUPPORTED);
    if (cf_isa_machine() < CF_ISA_AVX512F)
        assert_int_equal(cf_isa_force(CF_ISA_AVX512F), CONVFIND_ERR_UNSUPPORTED);
    assert_true(cf_isa_active() <= cf_isa_machine());
    const cf_cache_sizes *cs = cf_cpu_caches();
    assert_true(cs->l1d >= 4096 && cs->l2 >= cs->l1d && cs->l3 >= cs->l2);
    assert_non_null(cf_cpu_name());
    for (int level = 0; level < CF_ISA_COUNT; level++) {
        const cf_sgemm_kernel *kern = cf_kernel_table_for((cf_isa)level)->sgemm;
        assert_true(kern->mr >= 1 && kern->mr <= CF_SGEMM_MR_MAX);
        assert_true(kern->nr >= 1 && kern->nr <= CF_SGEMM_NR_MAX);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isa_levels_and_caches),
        cmocka_unit_test(test_sizes_every_isa),
        cmocka_unit_test(test_every_dim_1_to_67),
        cmocka_unit_test(test_transposes_and_epilogues),
        cmocka_unit_test(test_trans_store),
        cmocka_unit_test(test_long_k_sliced),
        cmocka_unit_test(test_threaded),
        cmocka_unit_test(test_operand_in_place),
        cmocka_unit_test(test_streamed_b),
        cmocka_unit_test(test_b_rows_apart),
        cmocka_unit_test(test_short_k_panels),
        cmocka_unit_test(test_k_zero_applies_epilogue),
        cmocka_unit_test(test_errors_leave_c_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
