/*
 * sgemm_ukernel_portable.c - the plain C microkernel (4 x 16), for any architecture and
 * for CONVFIND_ISA=portable.  Written so that compilers can keep the accumulators in
 * registers and vectorize the inner loop with the baseline ISA (SSE2 on x86-64).  Stores
 * column-major tiles (trans_c) by strides.
 */
#include "cpu/epilogue.h"
#include "cpu/gemm/sgemm_kernels.h"

#define MR 4
#define NR 16

/* One tile of at most NR columns. */
static void tile_4x16(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
                      size_t ldb, float *c, size_t ldc, size_t ncols, const cf_sgemm_tile_ep *ep)
{
    float acc[MR][NR] = {{0}};
    for (size_t kk = 0; kk < k; kk++) {
        const float *bk = b + kk * ldb;
        for (int r = 0; r < MR; r++) {
            float av = a[kk * a_ks + (size_t)r * a_rs];
            for (size_t j = 0; j < ncols; j++)
                acc[r][j] += av * bk[j];
        }
    }
    /* Strides of C and z from row to row and column to column (tile_ep.trans). */
    const size_t crs = ep->trans ? 1 : ldc, ccs = ep->trans ? ldc : 1;
    const size_t zrs = ep->trans ? 1 : ep->ldz, zcs = ep->trans ? ep->ldz : 1;
    for (int r = 0; r < MR; r++) {
        float *cr = c + (size_t)r * crs;
        const float *zr = ep->z ? ep->z + (size_t)r * zrs : NULL;
        for (size_t j = 0; j < ncols; j++) {
            float v = acc[r][j];
            if (ep->accumulate)
                v += cr[j * ccs];
            if (ep->bias_row)
                v += ep->bias_row[r];
            if (ep->bias_col)
                v += ep->bias_col[j];
            if (zr)
                v += zr[j * zcs];
            if (ep->clamp == CF_SGEMM_CLAMP_RELU)
                v = cf_activate(v, CONVFIND_ACT_RELU, 0.0f, 0.0f);
            else if (ep->clamp == CF_SGEMM_CLAMP_CLIP)
                v = cf_activate(v, CONVFIND_ACT_CLIP, ep->lo, ep->hi);
            cr[j * ccs] = v;
        }
    }
}

/* The tiles of consecutive column panels (sgemm.h), one after the other. */
static void ukernel_4x16(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
                         size_t ldb, size_t b_panel, float *c, size_t ldc, size_t ncols,
                         const cf_sgemm_tile_ep *ep)
{
    cf_sgemm_tile_ep e = *ep;
    for (size_t j = 0; j < ncols; j += NR) {
        tile_4x16(k, a, a_rs, a_ks, b + j / NR * b_panel, ldb, c + j * (ep->trans ? ldc : 1),
                  ldc, ncols - j < NR ? ncols - j : NR, &e);
        if (e.bias_col)
            e.bias_col += NR;
        if (e.z)
            e.z += NR * (ep->trans ? ep->ldz : 1);
    }
}

const cf_sgemm_kernel cf_sgemm_kernel_portable = {CF_ISA_PORTABLE, MR, NR, ukernel_4x16, true,
                                                  NULL, NULL, NULL};
