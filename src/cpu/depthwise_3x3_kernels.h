/*
 * depthwise_3x3_kernels.h - cpu.depthwise_3x3's kernel: 3x3 planes read in place, NCHW,
 * strides 1 and 2, written once over cpu/simd.h and included by one
 * depthwise_3x3_<isa>.c per ISA.
 *
 * Like cpu.depthwise's kernels (depthwise_kernels.h) it aims at memory traffic and
 * shuffles rather than FMA throughput: each input row is loaded once per plane (or strip
 * of columns), and bias, residual and activation are applied before the one store of
 * each output vector.
 */
#include "cpu/depthwise_simd.h"

/* Lanes l < n of a vector, as bits. */
static inline unsigned dw_lanes_below(int64_t n)
{
    return n <= 0 ? 0u : n >= CF_VL ? (unsigned)((1ull << CF_VL) - 1u) : (1u << n) - 1u;
}

/* The weights and bias of output channel m, one vector each. */
static inline void dw_3x3_weights(const cf_dw_job *j, int64_t m, cf_vf *w, cf_vf *bias)
{
    for (int t = 0; t < 9; t++)
        w[t] = cf_vbcast(j->w[m * 9 + t]);
    *bias = cf_vbcast(j->b ? j->b[m] : 0.0f);
}

/* The weights and biases (w[9]) of a group of np planes of consecutive channels from m
 * on, sharing a vector: plane i's in lanes[i] (lanes[0] is not read: plane 0's fill the
 * rest).  Returns the channel after the group's. */
DW_INLINE int64_t dw_3x3_group_weights(const cf_dw_job *j, int64_t m, int np,
                                       const unsigned *lanes, cf_vf *w)
{
    dw_3x3_weights(j, m, w, &w[9]);
    for (int i = 1; i < np; i++) {
        m = m + 1 == j->p->m ? 0 : m + 1;
        cf_vf wi[10];
        dw_3x3_weights(j, m, wi, &wi[9]);
        for (int t = 0; t < 10; t++)
            w[t] = cf_vblend(lanes[i], w[t], wi[t]);
    }
    return m + 1 == j->p->m ? 0 : m + 1;
}

/* The kernels compute output row oy from its three input rows held in registers as a
 * window that moves down the plane, so each input row is loaded once, one load per
 * vector, and the side taps are lane shifts of the rows' vectors (stride 1) or of their
 * even and odd columns (stride 2).  Loads are masked to the row, so a row's vectors are
 * zero past its end, and the shifts bring in zeros at both ends: the padding, with no
 * mask on any tap.  Rows wider than DW_WIN_VECS output vectors run in strips of
 * columns, each from the top of the plane to the bottom, the columns just outside the
 * strip broadcast into the shifts.  The flat kernels these replaced computed every lane
 * of their vectors but paid for it in lane masks per tap and in loads of neighbours
 * that cross cache lines (docs/performance.md). */

/* The widest strip, in output vectors: the window's rows and the ten weights must stay
 * in registers.  AVX-512's 32 hold strips of 4 vectors (56x56 planes at stride 1: 1300
 * cycles a plane against 1780 for the flat kernel; 7 vectors, 112x112, took 7850
 * against 6550), 16 registers strips of 2 (AVX2: 14x14 planes 243 against 479; 28x28
 * as 4 vectors 1084 against 1037).  Zen 5, one thread. */
#if CF_VL == 16
#define DW_WIN_VECS 4
#else
#define DW_WIN_VECS 2
#endif

/* Strip s of a row of `vecs` output vectors cut into `strips` strips of balanced widths
 * (at most DW_WIN_VECS each) starts at vector dw_strip_start(vecs, strips, s). */
static inline int dw_strips(int64_t vecs)
{
    return (int)((vecs + DW_WIN_VECS - 1) / DW_WIN_VECS);
}

static inline int64_t dw_strip_start(int64_t vecs, int strips, int s)
{
    return vecs * s / strips;
}

/* Runs CALL(k0, v, begin, end) for each strip of a row of `vecs_row` output vectors:
 * from vector k0, v vectors wide (a constant, for the kernels' instances), `begin` and
 * `end` whether the strip starts or ends the row.  A row of one strip (the common case)
 * gets its own instances with `begin` and `end` constant too: with them at run time,
 * 14x14 to 56x56 planes took 15-30% longer. */
#define DW_STRIP_CALL(CALL, v)                                                             \
    (dw_n == 1 ? CALL(0, v, true, true) : CALL(dw_k0, v, dw_s == 0, dw_s + 1 == dw_n))
#if DW_WIN_VECS >= 4
#define DW_STRIP_WIDTHS(CALL)                                                              \
    case 4: DW_STRIP_CALL(CALL, 4); break;                                                 \
    case 3: DW_STRIP_CALL(CALL, 3); break;
#else
#define DW_STRIP_WIDTHS(CALL)
#endif
#define DW_FOR_STRIPS(vecs_row, CALL)                                                      \
    for (int dw_s = 0, dw_n = dw_strips(vecs_row); dw_s < dw_n; dw_s++) {                 \
        const int64_t dw_k0 = dw_strip_start(vecs_row, dw_n, dw_s);                       \
        switch ((int)(dw_strip_start(vecs_row, dw_n, dw_s + 1) - dw_k0)) {                 \
            DW_STRIP_WIDTHS(CALL)                                                          \
        case 2: DW_STRIP_CALL(CALL, 2); break;                                             \
        default: DW_STRIP_CALL(CALL, 1);                                                   \
        }                                                                                  \
    }

/* ---- stride 1 ---- */

/* Stride 1 (pads 1, so Y's planes are X's).  Rows of at most a vector (7x7 and 14x14
 * planes at 16 lanes) hold `planes` planes side by side, plane i's row in lanes
 * [i (W + 1), i (W + 1) + W) and a zero lane after each row, so that the shifts never
 * reach into another plane. */
typedef struct dw_s1_window {
    int64_t vecs;             /* vectors per row: ceil(W / CF_VL) */
    int planes;               /* planes per vector: (CF_VL + 1) / (W + 1), or 1 */
    unsigned lanes[CF_VL];    /* the lanes of plane i's row in the row's last vector */
    ptrdiff_t shift[CF_VL];   /* plane i's offset, in floats, from plane 0's position
                               * of the same lane: i HW - i (W + 1) */
} dw_s1_window;

static inline void dw_3x3s1_window_of(const cf_dw_job *j, dw_s1_window *pw)
{
    const int64_t wd = j->s.in[2], hw = j->p->in_sp;
    pw->vecs = (wd + CF_VL - 1) / CF_VL;
    pw->planes = pw->vecs == 1 ? (int)((CF_VL + 1) / (wd + 1)) : 1;
    const int64_t last = wd - (pw->vecs - 1) * CF_VL; /* lanes of the last vector */
    for (int i = 0; i < pw->planes; i++) {
        pw->lanes[i] = dw_lanes_below(last) << (i * (wd + 1));
        pw->shift[i] = (ptrdiff_t)(i * hw - i * (wd + 1));
    }
}

/* One input row of a strip of `vecs` vectors (a constant): v[1 .. vecs], with the
 * columns just before and after the strip broadcast into v[0] and v[vecs + 1] (zero at
 * the row's ends). */
typedef struct dw_s1_row {
    cf_vf v[DW_WIN_VECS + 2];
} dw_s1_row;

/* Vector k of a strip's row at q (the strip's first column, in the group's first plane);
 * in the row's last strip (`end`), the last vector masked to each plane's lanes
 * (`lanes` as dw_s1_window's, zero for planes the group lacks). */
DW_INLINE cf_vf dw_s1_load(const float *q, int k, int vecs, bool end, int np,
                           const dw_s1_window *pw, const unsigned *lanes)
{
    if (!end || k + 1 < vecs)
        return cf_vload(q + k * CF_VL);
    cf_vf v = cf_vload_mask(q + k * CF_VL, lanes[0]);
    for (int i = 1; i < np; i++)
        v = cf_vblend(lanes[i], v, cf_vload_mask(q + pw->shift[i], lanes[i]));
    return v;
}

DW_INLINE void dw_s1_store(float *q, int k, int vecs, bool end, int np, const dw_s1_window *pw,
                           const unsigned *lanes, cf_vf v)
{
    if (!end || k + 1 < vecs) {
        cf_vstore(q + k * CF_VL, v);
        return;
    }
    cf_vstore_mask(q + k * CF_VL, v, lanes[0]);
    for (int i = 1; i < np; i++)
        cf_vstore_mask(q + pw->shift[i], v, lanes[i]);
}

/* Row q of the strip (NULL: a row of padding) into r. */
DW_INLINE void dw_s1_row_load(dw_s1_row *r, const float *q, int vecs, bool begin, bool end,
                              int np, const dw_s1_window *pw, const unsigned *lanes)
{
    for (int k = 0; k < vecs; k++)
        r->v[k + 1] = q ? dw_s1_load(q, k, vecs, end, np, pw, lanes) : cf_vzero();
    r->v[0] = q && !begin ? cf_vbcast(q[-1]) : cf_vzero();
    r->v[vecs + 1] = q && !end ? cf_vbcast(q[vecs * CF_VL]) : cf_vzero();
}

/* *dst = *src for a strip of `vecs` vectors: a copy of the whole struct moved the unused
 * vectors too (14x14 planes took 10% longer). */
DW_INLINE void dw_s1_row_move(dw_s1_row *dst, const dw_s1_row *src, int vecs)
{
    for (int k = 0; k < vecs + 2; k++)
        dst->v[k] = src->v[k];
}

/* Kernel row t's three taps on vector k of row r, added to acc. */
DW_INLINE cf_vf dw_s1_taps(const dw_s1_row *r, int k, const cf_vf *w, int t, cf_vf acc)
{
    const cf_vf *v = r->v + k + 1;
    acc = cf_vfma(w[t + 1], v[0], acc);
    acc = cf_vfma(w[t], cf_vshift(v[-1], v[0], CF_VL - 1), acc);
    return cf_vfma(w[t + 2], cf_vshift(v[0], v[1], 1), acc);
}

/* The strip of `vecs` vectors (a constant) from vector k0 of the rows of a group of
 * planes at x, y, z; `begin`, `end`: the strip starts (ends) the row. */
DW_INLINE void dw_s1_strip(const cf_dw_job *j, const float *x, float *y, const float *z,
                           int64_t k0, int vecs, bool begin, bool end, int np,
                           const dw_s1_window *pw, const unsigned *lanes, const cf_vf *w,
                           convfind_activation act)
{
    const int64_t wd = j->s.in[2], h = j->s.in[1];
    x += k0 * CF_VL;
    y += k0 * CF_VL;
    z = z ? z + k0 * CF_VL : NULL;
    dw_s1_row up, at, down;
    dw_s1_row_load(&up, NULL, vecs, begin, end, np, pw, lanes);
    dw_s1_row_load(&at, x, vecs, begin, end, np, pw, lanes);
    for (int64_t r = 0; r < h; r++) {
        dw_s1_row_load(&down, r + 1 < h ? x + (r + 1) * wd : NULL, vecs, begin, end, np, pw,
                       lanes);
        for (int k = 0; k < vecs; k++) {
            cf_vf acc = cf_vadd(dw_s1_taps(&at, k, w, 3, w[9]),
                                cf_vadd(dw_s1_taps(&up, k, w, 0, cf_vzero()),
                                        dw_s1_taps(&down, k, w, 6, cf_vzero())));
            if (z)
                acc = cf_vadd(acc, dw_s1_load(z + r * wd, k, vecs, end, np, pw, lanes));
            acc = cf_vactivate(acc, act, j->p->alpha, j->p->beta);
            dw_s1_store(y + r * wd, k, vecs, end, np, pw, lanes, acc);
        }
        dw_s1_row_move(&up, &at, vecs);
        dw_s1_row_move(&at, &down, vecs);
    }
}

/* `count` planes from `first`, `np` planes a vector (the last group may have fewer; more
 * than one only where a row is one vector). */
DW_INLINE void dw_3x3s1_window(const cf_dw_job *j, size_t first, size_t count, int np,
                               const dw_s1_window *pw, convfind_activation act)
{
    const cf_problem *p = j->p;
    const int64_t hw = p->in_sp;
    int64_t m = (int64_t)(first % (size_t)p->m);
    for (size_t g = 0; g < count; g += (size_t)np) {
        const size_t plane = first + g;
        const float *x = j->x + plane * (size_t)hw;
        float *y = j->y + plane * (size_t)hw;
        const float *z = j->z ? j->z + plane * (size_t)hw : NULL;
        /* The group's lanes and weights (w[9] the bias), each plane's in its lanes. */
        unsigned lanes[CF_VL] = {pw->lanes[0]};
        for (int i = 1; i < np; i++)
            lanes[i] = g + (size_t)i < count ? pw->lanes[i] : 0u;
        cf_vf w[10];
        m = dw_3x3_group_weights(j, m, np, lanes, w);
        if (np != 1) {
            dw_s1_strip(j, x, y, z, 0, 1, true, true, np, pw, lanes, w, act);
            continue;
        }
#define DW_S1_STRIP(k0, v, begin, end)                                                     \
    dw_s1_strip(j, x, y, z, k0, v, begin, end, 1, pw, lanes, w, act)
        DW_FOR_STRIPS(pw->vecs, DW_S1_STRIP)
#undef DW_S1_STRIP
    }
}

/* dw_3x3s1_window with the activation and (for one and two) the planes per vector
 * constants in each instance, in a function of its own: inlined into the task beside
 * the other kernels, a stride-1 kernel changed how those were compiled (the stride-2
 * layers took 12% longer, s2 c96 112², 2 threads: 0.039 -> 0.043 ms). */
static __attribute__((noinline)) void dw_3x3s1_window_any(const cf_dw_job *j, size_t first,
                                                          size_t count,
                                                          convfind_activation act)
{
    dw_s1_window pw;
    dw_3x3s1_window_of(j, &pw);
#define DW_S1_WIN(a)                                                                       \
    (pw.planes == 1   ? dw_3x3s1_window(j, first, count, 1, &pw, a)                        \
     : pw.planes == 2 ? dw_3x3s1_window(j, first, count, 2, &pw, a)                        \
                      : dw_3x3s1_window(j, first, count, pw.planes, &pw, a))
    switch (act) {
        CF_VACT_CASES(DW_S1_WIN, return)
    default:
        DW_S1_WIN(CONVFIND_ACT_NONE);
    }
#undef DW_S1_WIN
}

/* ---- stride 2 ---- */

/* Stride 2 (pads 1 at the start of each axis, at most 1 at the end): each input row is
 * split into its even and odd columns once, and the split of row 2 oy + 1, the last of
 * output row oy's three, is kept as the first of row oy + 1's.  Output column ox reads
 * input columns 2 ox - 1 (the odd columns shifted by a lane, the previous vector's last
 * or the column before the strip shifted in), 2 ox and 2 ox + 1.  The two other rows
 * are split a vector at a time as the output vectors need them: held whole, the three
 * rows did not fit AVX2's registers (s2 28x28 planes 297 -> 375 cycles). */

/* Input columns 2 k CF_VL .. + 2 CF_VL - 1 of `q` (the strip's first input column of a
 * row; NULL: a row of padding) as even and odd columns, loads masked by ma, mb; plain
 * loads where `whole` (every column inside the row: all but a row's last output vector)
 * and masked ones cost more (CF_VMASK_FREE 0).  At AVX2 the masked loads (vmaskmovps)
 * and their mask vectors, spilled from 16 registers, cost stride-2 planes 8-14% of their
 * time.  AVX-512 keeps its masked loads, which cost what plain ones do, in the very code
 * it had: GCC laid the kernel out differently even for a branch it could fold away. */
DW_INLINE void dw_s2_split(const float *q, int k, bool whole, unsigned ma, unsigned mb,
                           cf_vf *even, cf_vf *odd)
{
#if CF_VMASK_FREE
    (void)whole;
    const cf_vf a = q ? cf_vload_mask(q + 2 * k * CF_VL, ma) : cf_vzero();
    const cf_vf b = q ? cf_vload_mask(q + (2 * k + 1) * CF_VL, mb) : cf_vzero();
#else
    const cf_vf a = !q     ? cf_vzero()
                    : whole ? cf_vload(q + 2 * k * CF_VL)
                            : cf_vload_mask(q + 2 * k * CF_VL, ma);
    const cf_vf b = !q     ? cf_vzero()
                    : whole ? cf_vload(q + (2 * k + 1) * CF_VL)
                            : cf_vload_mask(q + (2 * k + 1) * CF_VL, mb);
#endif
    *even = cf_veven(a, b);
    *odd = cf_vodd(a, b);
}

/* Kernel row t's taps on an output vector from its row's even and odd columns and the
 * odd columns before them, added to acc. */
DW_INLINE cf_vf dw_s2_taps(cf_vf even, cf_vf odd, cf_vf odd_prev, const cf_vf *w, int t,
                           cf_vf acc)
{
    acc = cf_vfma(w[t + 1], even, acc);
    acc = cf_vfma(w[t + 2], odd, acc);
    return cf_vfma(w[t], cf_vshift(odd_prev, odd, CF_VL - 1), acc);
}

/* The strip of `vecs` output vectors (a constant) from vector k0 of one plane's rows;
 * `begin`, `end`: the strip starts (ends) the row. */
DW_INLINE void dw_s2_strip(const cf_dw_job *j, const float *x, float *y, const float *z,
                           int64_t k0, int vecs, bool begin, bool end, const cf_vf *w,
                           convfind_activation act)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2], ho = j->s.out[1], wo = j->s.out[2];
    unsigned ma[DW_WIN_VECS], mb[DW_WIN_VECS];
    for (int k = 0; k < vecs; k++) {
        ma[k] = dw_lanes_below(wi - 2 * (k0 + k) * CF_VL);
        mb[k] = dw_lanes_below(wi - (2 * (k0 + k) + 1) * CF_VL);
    }
    const unsigned last = end ? dw_lanes_below(wo - (k0 + vecs - 1) * CF_VL) : ~0u;
    x += 2 * k0 * CF_VL;
    y += k0 * CF_VL;
    z = z ? z + k0 * CF_VL : NULL;
    /* Row 2 oy - 1, split, and the column before the strip: zeros (padding) for oy = 0. */
    cf_vf e0[DW_WIN_VECS], o0[DW_WIN_VECS], left0 = cf_vzero();
    for (int k = 0; k < vecs; k++)
        e0[k] = o0[k] = cf_vzero();
    for (int64_t oy = 0; oy < ho; oy++) {
        const float *q1 = x + 2 * oy * wi; /* 2 oy <= hi - 1 for every output row */
        const float *q2 = 2 * oy + 1 < hi ? q1 + wi : NULL;
        cf_vf p0 = left0;
        cf_vf p1 = begin ? cf_vzero() : cf_vbcast(q1[-1]);
        cf_vf p2 = begin || !q2 ? cf_vzero() : cf_vbcast(q2[-1]);
        left0 = p2;
        for (int k = 0; k < vecs; k++) {
            cf_vf e1, o1, e2, o2;
            dw_s2_split(q1, k, !end || k + 1 < vecs, ma[k], mb[k], &e1, &o1);
            dw_s2_split(q2, k, !end || k + 1 < vecs, ma[k], mb[k], &e2, &o2);
            cf_vf acc = cf_vadd(dw_s2_taps(e1, o1, p1, w, 3, w[9]),
                                cf_vadd(dw_s2_taps(e0[k], o0[k], p0, w, 0, cf_vzero()),
                                        dw_s2_taps(e2, o2, p2, w, 6, cf_vzero())));
            p0 = o0[k];
            p1 = o1;
            p2 = o2;
            e0[k] = e2;
            o0[k] = o2;
            float *q = y + oy * wo + k * CF_VL;
            const bool whole = !end || k + 1 < vecs;
            if (z)
                acc = cf_vadd(acc, whole ? cf_vload(z + oy * wo + k * CF_VL)
                                         : cf_vload_mask(z + oy * wo + k * CF_VL, last));
            acc = cf_vactivate(acc, act, j->p->alpha, j->p->beta);
            if (whole)
                cf_vstore(q, acc);
            else
                cf_vstore_mask(q, acc, last);
        }
    }
}

/* `count` planes from `first`, each in strips of output vectors. */
DW_INLINE void dw_3x3s2_window(const cf_dw_job *j, size_t first, size_t count,
                               convfind_activation act)
{
    const cf_problem *p = j->p;
    const int64_t vecs_row = (j->s.out[2] + CF_VL - 1) / CF_VL;
    int64_t m = (int64_t)(first % (size_t)p->m);
    for (size_t plane = first; plane < first + count; plane++) {
        const float *x = j->x + plane * (size_t)p->in_sp;
        float *y = j->y + plane * (size_t)p->out_sp;
        const float *z = j->z ? j->z + plane * (size_t)p->out_sp : NULL;
        cf_vf w[10];
        m = dw_3x3_group_weights(j, m, 1, NULL, w);
#define DW_S2_STRIP(k0, v, begin, end) dw_s2_strip(j, x, y, z, k0, v, begin, end, w, act)
        DW_FOR_STRIPS(vecs_row, DW_S2_STRIP)
#undef DW_S2_STRIP
    }
}

/* dw_3x3s2_window with the activation a constant in each instance, in a function of
 * its own as dw_3x3s1_window_any. */
static __attribute__((noinline)) void dw_3x3s2_window_any(const cf_dw_job *j, size_t first,
                                                          size_t count,
                                                          convfind_activation act)
{
#define DW_S2_WIN(a) dw_3x3s2_window(j, first, count, a)
    switch (act) {
        CF_VACT_CASES(DW_S2_WIN, return)
    default:
        DW_S2_WIN(CONVFIND_ACT_NONE);
    }
#undef DW_S2_WIN
}

/* Stride 2 where two output rows fit one vector (2 wo + 1 <= CF_VL: 7x7 outputs at 16
 * lanes, where a vector per row leaves 9 of 16 lanes idle): two planes at a time, lanes
 * [0, wo) holding row oy of the first and [wo, 2 wo) row oy of the second, each lane
 * with its plane's weights.  For kernel row r, input row 2 oy - 1 + r of each plane is
 * loaded once from its column -1 on, and tap dx of every lane is one two-source permute
 * of the two: lane 2 (l mod wo) + dx of the first plane's row for the first wo lanes, of
 * the second's for the next wo.  (Two rows of one plane per vector left the last of 7
 * rows alone in its vector.)  The permutes zero the lanes whose tap is column -1 or a
 * column past the row (the padding), so the rows whose loads stay inside the plane load
 * without masks: masked, the loads took a fifth of a plane's time; the first and last
 * rows mask their loads to the input. */
typedef struct dw_s2_pairs {
    cf_vidx idx[3];   /* per dx */
    unsigned keep[3]; /* per dx: the lanes whose tap is inside the row */
    unsigned lo, hi;  /* the first plane's lanes, the second's */
    int64_t mid;      /* rows [1, mid) load without masks */
} dw_s2_pairs;

static inline void dw_3x3s2_pairs_of(const cf_dw_job *j, dw_s2_pairs *pp)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2], ho = j->s.out[1], wo = j->s.out[2];
    for (int dx = 0; dx < 3; dx++) {
        int32_t lanes[CF_VL];
        for (int64_t l = 0; l < CF_VL; l++)
            lanes[l] = (int32_t)(l < wo ? 2 * l + dx : l < 2 * wo ? CF_VL + 2 * (l - wo) + dx : 0);
        pp->idx[dx] = cf_vidx_load(lanes);
    }
    const unsigned all = dw_lanes_below(CF_VL);
    pp->keep[0] = all & ~(1u | 1u << wo);
    pp->keep[1] = all;
    pp->keep[2] = 2 * wo - 1 >= wi ? all & ~(1u << (wo - 1) | 1u << (2 * wo - 1)) : all;
    pp->lo = dw_lanes_below(wo);
    pp->hi = dw_lanes_below(2 * wo) & ~pp->lo;
    /* Row oy >= 1 reads input rows 2 oy - 1 .. 2 oy + 1, each from one column before it
     * to CF_VL - 2 after (past the row's end where CF_VL > wi + 1): inside the plane
     * while (2 oy + 1) wi + CF_VL - 1 <= hi wi. */
    const int64_t room = hi * wi - CF_VL + 1;
    const int64_t last_iy = room >= 0 ? room / wi : -1; /* the last row so read */
    pp->mid = dw_max(1, dw_min(ho, last_iy >= 1 ? (last_iy - 1) / 2 + 1 : 1));
}

/* Input row iy of planes xa and, where `pair`, xb as the three taps (dx = 0, 1, 2) of an
 * output vector, t[dx]: for the first wo lanes columns 2 l + dx - 1 of xa's row, for the
 * next wo lanes the same of xb's.  `inside` (a constant in each instance): the loads
 * need no masks. */
DW_INLINE void dw_s2_pair_taps(const cf_dw_job *j, const float *xa, const float *xb,
                               bool pair, int64_t iy, bool inside, const dw_s2_pairs *pp,
                               cf_vf *t)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2];
    const unsigned cols = dw_lanes_below(dw_min(wi + 1, CF_VL)) & ~1u;
    const unsigned m = iy >= 0 && iy < hi ? cols : 0u;
    const float *qa = xa + iy * wi - 1, *qb = xb + iy * wi - 1;
    const cf_vf a = inside ? cf_vload(qa) : cf_vload_mask(qa, m);
    const cf_vf b = inside ? cf_vload(qb) : cf_vload_mask(qb, pair ? m : 0u);
    for (int dx = 0; dx < 3; dx++)
        t[dx] = cf_vperm2_mask(a, pp->idx[dx], b, pp->keep[dx]);
}

/* Output row oy of planes (ya, za) and, where `pair`, (yb, zb) from the taps of its
 * input rows 2 oy - 1 + r, t[r]. */
DW_INLINE void dw_3x3s2_pair_out(const cf_dw_job *j, float *ya, float *yb, const float *za,
                                 const float *zb, bool pair, const cf_vf *w,
                                 const dw_s2_pairs *pp, int64_t oy, const cf_vf (*t)[3],
                                 convfind_activation act)
{
    const int64_t wo = j->s.out[2];
    cf_vf acc[3];
    for (int r = 0; r < 3; r++) {
        acc[r] = r ? cf_vzero() : w[9];
        for (int dx = 0; dx < 3; dx++)
            acc[r] = cf_vfma(w[3 * r + dx], t[r][dx], acc[r]);
    }
    cf_vf v = cf_vadd(acc[0], cf_vadd(acc[1], acc[2]));
    const int64_t at = oy * wo;
    const unsigned hi_lanes = pair ? pp->hi : 0u;
    if (za)
        v = cf_vadd(v, cf_vadd(cf_vload_mask(za + at, pp->lo),
                               cf_vload_mask(zb + at - wo, hi_lanes)));
    v = cf_vactivate(v, act, j->p->alpha, j->p->beta);
    cf_vstore_mask(ya + at, v, pp->lo);
    cf_vstore_mask(yb + at - wo, v, hi_lanes);
}

/* Planes `plane` and, where `pair`, plane + 1 (their weights and biases blended into w,
 * the second plane's in the upper lanes), as a window of rows: the taps of input row
 * 2 oy + 1, the last of output row oy's three, are the first of row oy + 1's. */
DW_INLINE void dw_3x3s2_pair_planes(const cf_dw_job *j, size_t plane, bool pair,
                                    const cf_vf *w, const dw_s2_pairs *pp,
                                    convfind_activation act)
{
    const cf_problem *p = j->p;
    const size_t in_sp = (size_t)p->in_sp, out_sp = (size_t)p->out_sp;
    const float *xa = j->x + plane * in_sp, *xb = xa + in_sp;
    float *ya = j->y + plane * out_sp, *yb = ya + out_sp;
    const float *za = j->z ? j->z + plane * out_sp : NULL, *zb = za ? za + out_sp : NULL;
    cf_vf t[3][3] = {{cf_vzero(), cf_vzero(), cf_vzero()}}; /* row -1: the padding */
    for (int64_t oy = 0; oy < j->s.out[1]; oy++) {
        if (pair && oy >= 1 && oy < pp->mid) {
            dw_s2_pair_taps(j, xa, xb, true, 2 * oy, true, pp, t[1]);
            dw_s2_pair_taps(j, xa, xb, true, 2 * oy + 1, true, pp, t[2]);
        } else {
            dw_s2_pair_taps(j, xa, xb, pair, 2 * oy, false, pp, t[1]);
            dw_s2_pair_taps(j, xa, xb, pair, 2 * oy + 1, false, pp, t[2]);
        }
        dw_3x3s2_pair_out(j, ya, yb, za, zb, pair, w, pp, oy, (const cf_vf(*)[3])t, act);
        for (int dx = 0; dx < 3; dx++)
            t[0][dx] = t[2][dx];
    }
}

/* `count` (image, channel) planes from `first` (n * M + m), X and Y in place; W as ONNX
 * stores it.  One call per run of planes: the activation is switched on once, and
 * consecutive planes overlap in the core (2 threads, s2 c96 112²: 0.042-0.045 -> 0.038-0.040
 * ms against a call per plane). */
DW_INLINE void dw_3x3_planes_act(const cf_dw_job *j, size_t first, size_t count,
                                 convfind_activation act)
{
    const cf_problem *p = j->p;
    /* The problem's stride, not geom3's, which is 1 on an axis of one output (a stride-2
     * row of 3 pixels), where the stride-1 kernel would take Y's planes for X's. */
    if (p->stride[1] == 1) {
        dw_3x3s1_window_any(j, first, count, act);
        return;
    }
    if (2 * j->s.out[2] + 1 > CF_VL) {
        dw_3x3s2_window_any(j, first, count, act);
        return;
    }
    dw_s2_pairs pp;
    dw_3x3s2_pairs_of(j, &pp);
    int64_t m = (int64_t)(first % (size_t)p->m);
    const unsigned lanes[2] = {pp.lo, pp.hi};
    for (size_t plane = first; plane < first + count; plane += 2) {
        const bool pair = plane + 1 < first + count;
        cf_vf w[10];
        m = dw_3x3_group_weights(j, m, 2, lanes, w);
        dw_3x3s2_pair_planes(j, plane, pair, w, &pp, act);
    }
}

/* The activation as a compile-time constant in each instance; sigmoid and tanh (libm)
 * go over the planes afterwards, residual already added. */
static void dw_3x3_planes(const cf_dw_job *j, size_t first, size_t count)
{
    const cf_problem *p = j->p;
#define DW_3X3_CALL(a) dw_3x3_planes_act(j, first, count, a)
    switch (p->act) {
        CF_VACT_CASES(DW_3X3_CALL, return)
    default: {
        dw_3x3_planes_act(j, first, count, CONVFIND_ACT_NONE);
        float *y = j->y + first * (size_t)p->out_sp;
        for (size_t i = 0; i < count * (size_t)p->out_sp; i++)
            y[i] = cf_activate(y[i], p->act, p->alpha, p->beta);
    }
    }
#undef DW_3X3_CALL
}

const cf_dw3x3_kernels CF_SIMD_SYM(cf_dw3x3) = {
    .planes = dw_3x3_planes,
};
