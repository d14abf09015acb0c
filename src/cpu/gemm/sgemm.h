/*
 * sgemm.h - convfind's own single-precision GEMM, BLIS style, with a fused epilogue.
 *
 *   C (m x n) = A (m x k) * B (k x n)  [+ C]  then  act(. + bias + Z)
 *
 * Structure (after BLIS): a register-blocked microkernel per ISA computes an MR x NR
 * tile of C from an MR-row panel of packed A and an NR-column panel of packed B; the
 * driver (sgemm.c) walks the tiles in cache blocks (KC from L1, MC from L2) and applies
 * the epilogue to each C tile while it is still in L1, so bias, residual and activation
 * cost no extra pass over C.
 *
 * Convolutions use the packed interface: weights are packed once (cf_sgemm_pack_a or
 * cf_sgemm_pack_b) and reused across executions; activations are packed per execution,
 * possibly by the caller's own generator (im2col writes straight into packed-B form);
 * operands already in a usable order are read in place (cf_sgemm_compute).
 * cf_sgemm() is the plain all-in-one call on strided matrices, for tests and simple uses.
 *
 * Packed formats (the contract for callers that generate packed data themselves):
 *   packed A, m x k: ceil(m / MR) panels, panel i holding rows [i*MR, i*MR + MR),
 *     each panel k * MR floats: element (row i*MR + r, col kk) at panel[kk * MR + r].
 *     Rows past m are zero.  Total cf_sgemm_packed_a_floats(kern, m, k) floats.
 *   packed B, k x n: ceil(n / NR) panels, panel j holding columns [j*NR, j*NR + NR),
 *     each panel k * NR floats: element (row kk, col j*NR + c) at panel[kk * NR + c].
 *     Columns past n are zero.  Total cf_sgemm_packed_b_floats(kern, k, n) floats.
 * Packed data is only valid with the kernel (ISA level) it was packed for: MR and NR
 * differ between levels.
 *
 * Strides are in elements and may be anything (transposes are just strides): element
 * (i, j) of a matrix X with strides (rs, cs) is X[i * rs + j * cs].
 *
 * Thread safety: every function here is reentrant; functions taking a pool split their
 * work with cf_parallel_for and return when all of it is done.  Nothing allocates.
 */
#ifndef CONVFIND_CPU_SGEMM_H
#define CONVFIND_CPU_SGEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "convfind.h"
#include "cpu/isa.h"
#include "util/threadpool.h"

/* Largest register block of any kernel in this build (scratch tiles are this big). */
#define CF_SGEMM_MR_MAX 14
#define CF_SGEMM_NR_MAX 32

/* Clamp a microkernel applies in registers before storing: the activations that are a
 * min/max (ReLU, Clip).  Other activations are applied by the driver on the stored tile. */
typedef enum cf_sgemm_clamp {
    CF_SGEMM_CLAMP_NONE = 0,
    CF_SGEMM_CLAMP_RELU = 1, /* max(v, 0), NaN -> 0 as cf_activate */
    CF_SGEMM_CLAMP_CLIP = 2  /* min(hi, max(lo, v)), NaN passes as cf_activate */
} cf_sgemm_clamp;

/* What a microkernel does to its MR x NR tile after the product, in this order:
 *   v = product (+ C when accumulate) (+ bias_row[r]) (+ bias_col[c]) (+ z[r*ldz + c]),
 *   then the clamp.  NULL pointers mean "not present".  `trans` (only for kernels with
 * trans_c): C and z are column-major, element (r, c) at [c * ldc + r] and [c * ldz + r]
 * (an NCHW output whose GEMM rows are pixels). */
typedef struct cf_sgemm_tile_ep {
    bool trans;
    bool accumulate;
    const float *bias_row; /* MR values */
    const float *bias_col; /* NR values */
    const float *z;        /* MR x NR residual tile, unit column stride */
    size_t ldz;
    cf_sgemm_clamp clamp;
    float lo, hi;          /* CLIP bounds */
} cf_sgemm_tile_ep;

/* The microkernel: computes the MR x ncols block of C  sum over kk < k of A(r, kk) * B(kk, j)
 * where A(r, kk) = a[r*a_rs + kk*a_ks]: a packed A panel (a_rs = 1, a_ks = MR) or A read
 * in place (a_rs its row stride, a_ks = 1).  The block is ceil(ncols / NR) tiles of NR
 * columns (the last one possibly partial), all with this A panel: tile q reads B at
 * b + q * b_panel, rows ldb apart (packed B panels: ldb == NR, b_panel == k * NR; B read
 * in place: ldb its row stride, b_panel == NR), and its C, bias_col and z are q * NR
 * columns on.  One call walks the column panels so that its set-up (the call, the copy
 * of the epilogue, the variant's choice) is paid once for them all: at short K (16 to 40,
 * MobileNet's and EfficientNet's expansion layers) that set-up is a tenth of a tile's
 * FMAs.  k >= 1.  Applies `ep` and stores each tile to C (row stride ldc, unit column
 * stride; `trans`: column stride ldc, unit row stride).  Only columns [0, ncols) of B, C,
 * bias_col and z are read or written, so the last column panel needs no scratch tile and
 * B in place is never read past its last column; kernels may skip the arithmetic of whole
 * vectors past ncols.  All MR rows of A are read and of C written: the driver passes a
 * packed copy of A and a scratch tile when fewer rows remain. */
typedef void (*cf_sgemm_ukernel_fn)(size_t k, const float *a, size_t a_rs, size_t a_ks,
                                    const float *b, size_t ldb, size_t b_panel, float *c,
                                    size_t ldc, size_t ncols, const cf_sgemm_tile_ep *ep);

/* One ISA level's microkernel and its register-block shape.  Static storage. */
typedef struct cf_sgemm_kernel {
    cf_isa isa;
    int mr, nr;                /* tile of C one microkernel call computes */
    cf_sgemm_ukernel_fn ukernel;
    bool trans_c;              /* stores column-major C tiles itself (tile_ep.trans); for
                                * the others the driver goes through a scratch tile */
    const struct cf_sgemm_kernel *mr7; /* the same kernel with MR = 7 (same NR, so the same
                                * packed B), for row counts 7 divides and 8 does not (the
                                * pixels of 7x7 maps, and of 14x14 ones without mr14); NULL
                                * when there is none */
    const struct cf_sgemm_kernel *mr14; /* the same with MR = 14, for row counts 14 divides
                                * and 8 does not (14x14 maps: half the transposed stores of
                                * the 7-row kernel); NULL when there is none */
    const struct cf_sgemm_kernel *mr1; /* the same with MR = 1, for a GEMM of one row (a
                                * Conv with one output pixel: squeeze-and-excite and
                                * classifier 1x1 layers, where the MR-row kernel computes
                                * MR - 1 rows of padding); NULL when there is none */
} cf_sgemm_kernel;

/* Applied while C tiles are stored, after the product (and the accumulation into C
 * when `accumulate` is set):  C = act(C + bias + Z).  All-zero (the default from
 * `= {0}`) means plain C = A*B.  Z is added with the first K slice of each tile, which
 * reads it before anything of that tile is stored, so z may be C itself (the same
 * strides): the residual added in place. */
typedef struct cf_sgemm_epilogue {
    bool accumulate;          /* C += A*B instead of C = A*B */
    const float *bias;        /* NULL, or one value per row (bias_per_col false: NCHW
                               * output channels are rows) or per column (NHWC) */
    bool bias_per_col;
    const float *z;           /* residual, m x n with strides (rs_z, cs_z), or NULL */
    ptrdiff_t rs_z, cs_z;
    convfind_activation act;  /* CONVFIND_ACT_NONE: no activation */
    float alpha, beta;        /* activation parameters (convfind.h) */
} cf_sgemm_epilogue;

/* Float counts of the packed forms (include the zero padding up to MR / NR).
 * Return 0 and set *overflow (when non-NULL) if the count does not fit in size_t. */
size_t cf_sgemm_packed_a_floats(const cf_sgemm_kernel *kern, size_t m, size_t k,
                                bool *overflow);
size_t cf_sgemm_packed_b_floats(const cf_sgemm_kernel *kern, size_t k, size_t n,
                                bool *overflow);

/* Packs the m x k matrix `a` (strides rs, cs) into `dst` (packed-A form).  Single-
 * threaded (weights are packed once). */
void cf_sgemm_pack_a(const cf_sgemm_kernel *kern, size_t m, size_t k, const float *a,
                     ptrdiff_t rs, ptrdiff_t cs, float *dst);

/* Packs the k x n matrix `b` (strides rs, cs) into `dst` (packed-B form), the panels
 * split over `pool` (may be NULL). */
void cf_sgemm_pack_b(const cf_sgemm_kernel *kern, size_t k, size_t n, const float *b,
                     ptrdiff_t rs, ptrdiff_t cs, float *dst, cf_threadpool *pool);

/* Packs columns [0, ncols) (ncols <= NR) of the k x ncols matrix `b` into one panel at
 * `dst` (k * NR floats), zero-filling columns ncols..NR-1.  For callers that pack panel
 * by panel inside their own parallel loop. */
void cf_sgemm_pack_b_panel(const cf_sgemm_kernel *kern, size_t k, size_t ncols,
                           const float *b, ptrdiff_t rs, ptrdiff_t cs, float *dst);

/* C = epilogue(packed_a * packed_b) for packed operands made with `kern`.  C has strides
 * (rs_c, cs_c); cs_c == 1 is the fast path, and rs_c == 1 too for a kernel with trans_c;
 * anything else goes through a scratch tile.
 * m or n == 0: nothing is written; k == 0: the product is zero and the epilogue still
 * applies.  `ep` may be NULL (plain product).
 * Work is split over M and N blocks on `pool` (may be NULL); no workspace is needed. */
void cf_sgemm_packed(const cf_sgemm_kernel *kern, size_t m, size_t n, size_t k,
                     const float *packed_a, const float *packed_b, float *c,
                     ptrdiff_t rs_c, ptrdiff_t cs_c, const cf_sgemm_epilogue *ep,
                     cf_threadpool *pool);

/* An operand of cf_sgemm_compute: packed for the kernel (formats above; rs, cs unused)
 * or read in place, element (i, j) at p[i * rs + j * cs].  In place is for operands a
 * convolution already holds in a usable order: the weights (A, any strides), or NCHW /
 * NHWC activations of a 1x1 stride-1 convolution (B with cs == 1, A row-major). */
typedef struct cf_sgemm_operand {
    const float *p;
    bool packed;
    size_t rs, cs;
} cf_sgemm_operand;

/* As cf_sgemm_packed, for any mix of packed and in-place operands.  B in place must have
 * cs == 1 (its rows are what the microkernel's vectors load); it is never read past its
 * last column.  A in place may have any strides; partial row panels are copied. */
void cf_sgemm_compute(const cf_sgemm_kernel *kern, size_t m, size_t n, size_t k,
                      cf_sgemm_operand a, cf_sgemm_operand b, float *c, ptrdiff_t rs_c,
                      ptrdiff_t cs_c, const cf_sgemm_epilogue *ep, cf_threadpool *pool);

/* Bytes of workspace cf_sgemm() needs for these sizes at level `isa` (the kernel of
 * cf_kernel_table_for(isa), cpu/kernel_table.h): both packed operands.
 * CONVFIND_ERR_OVERFLOW when that does not fit in size_t. */
convfind_status cf_sgemm_workspace(cf_isa isa, size_t m, size_t n, size_t k, size_t *bytes);

/* C = epilogue(A * B) on plain strided matrices with the kernel of
 * cf_kernel_table_for(isa) (never above what the machine runs; pass cf_isa_active()
 * normally).  Packs both operands into
 * `workspace` (>= cf_sgemm_workspace() bytes, 64-byte alignment recommended).  Errors:
 * CONVFIND_ERR_NULL_POINTER for a NULL matrix or workspace when one is needed,
 * CONVFIND_ERR_INVALID_SHAPE when the workspace is too small (message names the sizes);
 * C is untouched on error.  Zero sizes behave as in cf_sgemm_packed(). */
convfind_status cf_sgemm(cf_isa isa, size_t m, size_t n, size_t k,
                         const float *a, ptrdiff_t rs_a, ptrdiff_t cs_a,
                         const float *b, ptrdiff_t rs_b, ptrdiff_t cs_b,
                         float *c, ptrdiff_t rs_c, ptrdiff_t cs_c,
                         const cf_sgemm_epilogue *ep, void *workspace, size_t workspace_size,
                         cf_threadpool *pool);

#endif /* CONVFIND_CPU_SGEMM_H */
