/*
 * ref_conv.c - "cpu.reference": the direct, obviously-correct Conv and ConvTranspose.
 *
 * This algorithm defines correctness for every other one and is the always-valid
 * fallback, so it handles every problem convfind can describe in f32 and favours
 * clarity over speed.  Each output value is, in effect, a gather: for every kernel tap,
 * find the input position that feeds it (or none), multiply, and accumulate in double so
 * that the result carries essentially no rounding error of its own.  Along the innermost
 * axis the taps' input positions are found for a run of outputs at once (ref_run_of), so
 * the loops read X along its rows; the sums are the per-output gather's, term for term.
 *
 * Conv and ConvTranspose share the loop; they differ only in which input position a
 * (output position, kernel tap) pair reads and in how W is laid out:
 *   Conv:          i = o * stride - pad_begin + k * dil                    W: M x C/g x k
 *   ConvTranspose: o = i * stride - pad_begin + k * dil, so
 *                  i = (o + pad_begin - k * dil) / stride when that divides W: C x M/g x k
 * Negative ConvTranspose pads need no special case: they only move which output
 * positions receive contributions, and positions receiving none hold just the epilogue.
 *
 * Work is split over (image, output channel) pairs; each pair writes a disjoint set of
 * outputs, so the result does not depend on the thread count.
 */
#include <stdint.h>

#include "algo/algo.h"
#include "cpu/epilogue.h"
#include "problem/shape.h"

/* Element strides of a tensor with `ch` channels and spatial dims `sp`, stored in
 * `layout`: of the batch index, the channel index and each spatial axis. */
typedef struct ref_strides {
    int64_t n, c, sp[CF_SP];
} ref_strides;

static ref_strides ref_strides_of(convfind_layout layout, int64_t ch, const int64_t sp[CF_SP])
{
    ref_strides s;
    int64_t inner = 1; /* elements of one spatial position's trailing axes */
    int64_t per_pixel = layout == CONVFIND_LAYOUT_NHWC ? ch : 1;
    for (int a = CF_SP - 1; a >= 0; a--) {
        s.sp[a] = inner * per_pixel;
        inner *= sp[a];
    }
    s.c = layout == CONVFIND_LAYOUT_NHWC ? 1 : inner;
    s.n = inner * ch;
    return s;
}

/* The input position along axis `a` that kernel tap `k` reads for output position `o`,
 * or -1 when it reads padding (Conv) or no input feeds it (ConvTranspose).  Nothing here
 * overflows for any problem validation accepts, however large its attributes: a Conv
 * window lies inside the padded input (o * stride + k * dil < in + pads), and a
 * ConvTranspose's o + pad_begin is below its unpadded output. */
static int64_t ref_source(const cf_problem *p, int a, int64_t o, int64_t k)
{
    if (p->op == CONVFIND_OP_CONV) {
        int64_t i = o * p->stride[a] - p->pad_begin[a] + k * p->dil[a];
        return i >= 0 && i < p->in[a] ? i : -1;
    }
    int64_t t = o + p->pad_begin[a] - k * p->dil[a];
    if (t < 0 || t % p->stride[a] != 0)
        return -1;
    t /= p->stride[a];
    return t < p->in[a] ? t : -1;
}

/* The positions along axis `a` that kernel tap `k` connects inside the output range
 * [oa, ob): output oa + o_first + j * o_step reads (Conv) or receives from
 * (ConvTranspose) input i_first + j * i_step, for j in [0, count).  The same pairs as
 * ref_source gives one output at a time, found by solving its condition for the range:
 * Conv reads i = o * stride + e (e = k * dil - pad_begin) where 0 <= i < in, and a
 * ConvTranspose input i lands on o = i * stride + e.  Nothing overflows, for the reason
 * ref_source's comment gives. */
typedef struct ref_run {
    int64_t o_first, o_step, i_first, i_step, count;
} ref_run;

static ref_run ref_run_of(const cf_problem *p, int a, int64_t k, int64_t oa, int64_t ob)
{
    const int64_t s = p->stride[a], e = k * p->dil[a] - p->pad_begin[a];
    ref_run r = {0};
    int64_t lo, hi; /* the first and last o (Conv) or i (ConvTranspose) */
    const bool conv = p->op == CONVFIND_OP_CONV;
    if (conv) {
        lo = -cf_floor_div(e, s); /* ceil(-e / s): the first o whose i >= 0 */
        hi = cf_floor_div(p->in[a] - 1 - e, s);
        lo = lo > oa ? lo : oa;
        hi = hi < ob - 1 ? hi : ob - 1;
    } else {
        lo = -cf_floor_div(e - oa, s); /* ceil((oa - e) / s) */
        hi = cf_floor_div(ob - 1 - e, s);
        lo = lo > 0 ? lo : 0;
        hi = hi < p->in[a] - 1 ? hi : p->in[a] - 1;
    }
    /* Only a run that exists has positions to compute: with none, lo * s may be past
     * any int64 (a stride of 2^62 with one input). */
    if (hi >= lo)
        r = conv ? (ref_run){lo - oa, 1, lo * s + e, s, hi - lo + 1}
                 : (ref_run){lo * s + e - oa, s, lo, 1, hi - lo + 1};
    return r;
}

/* ac[j * ac_step] += x[j * x_step] * wv for j < count.  Unit steps (Conv along NCHW
 * rows at stride 1, the common case) get a loop of their own, which the compiler
 * vectorizes. */
static void ref_axpy(double *restrict ac, int64_t ac_step, const float *restrict x,
                     int64_t x_step, int64_t count, double wv)
{
    if (ac_step == 1 && x_step == 1) {
        for (int64_t j = 0; j < count; j++)
            ac[j] += (double)x[j] * wv;
        return;
    }
    for (int64_t j = 0; j < count; j++)
        ac[j * ac_step] += (double)x[j * x_step] * wv;
}

typedef struct ref_job {
    const cf_problem *p;
    const cf_exec_args *a;
    ref_strides xs, ys;
} ref_job;

/* Outputs along the innermost axis summed at a time: a row of the output, or a piece
 * of a long one, whose sums stay in L1. */
#define REF_CHUNK 512

/* Computes every output of image `index / m`, channel `index % m`.  Each output is the
 * sum, in double, of its terms in the order (k0, k1, k2, input channel) that a gather
 * per output takes; the loops run over a chunk of outputs along the innermost spatial
 * axis (axis nsp - 1: the axes after it have size 1) innermost, so that X is read along
 * its rows instead of a channel plane apart per term (Find validates every candidate
 * against this, so its speed is Find's on large layers).  The products are exact in
 * double and each output's additions come in the same order, so the sums are the
 * gather's, bit for bit. */
static void ref_task(void *arg, size_t index)
{
    const ref_job *job = arg;
    const cf_problem *p = job->p;
    const float *x = job->a->x;
    const float *w = job->a->w;
    const float *b = job->a->b;
    const float *z = job->a->z;
    float *y = job->a->y;

    int64_t n = (int64_t)index / p->m;
    int64_t m = (int64_t)index % p->m;
    int64_t cg = cf_cin_per_group(p);
    int64_t mg = cf_cout_per_group(p);
    int64_t g = m / mg;

    /* W offset of (this output channel, first input channel of the group) and the step
     * from one input channel to the next; kernel taps are contiguous after that. */
    int64_t w_base, w_step;
    if (p->op == CONVFIND_OP_CONV) {
        w_base = m * cg * p->k_sp;
        w_step = p->k_sp;
    } else {
        w_base = ((g * cg) * mg + (m - g * mg)) * p->k_sp;
        w_step = mg * p->k_sp;
    }
    const float *xg = x + n * job->xs.n + g * cg * job->xs.c;
    float bias = b ? b[m] : 0.0f;
    int64_t y_base = n * job->ys.n + m * job->ys.c;

    /* Axis `ra` runs in chunks; the axes before it (at most two) are walked one output
     * at a time, their taps checked by ref_source, and those after it have size 1. */
    const int ra = p->nsp - 1;
    const int64_t out0 = ra > 0 ? p->out[0] : 1, out1 = ra > 1 ? p->out[1] : 1;
    const int64_t k0n = ra > 0 ? p->k[0] : 1, k1n = ra > 1 ? p->k[1] : 1;
    const int64_t tap_step = ra == 0 ? p->k[1] * p->k[2] : ra == 1 ? p->k[2] : 1;
    double acc[REF_CHUNK];

    for (int64_t o0 = 0; o0 < out0; o0++)
    for (int64_t o1 = 0; o1 < out1; o1++)
    for (int64_t oa = 0; oa < p->out[ra]; oa += REF_CHUNK) {
        int64_t ob = p->out[ra] - oa < REF_CHUNK ? p->out[ra] : oa + REF_CHUNK;
        for (int64_t o = 0; o < ob - oa; o++)
            acc[o] = 0.0;
        for (int64_t k0 = 0; k0 < k0n; k0++) {
            int64_t i0 = ra > 0 ? ref_source(p, 0, o0, k0) : 0;
            if (i0 < 0)
                continue;
            for (int64_t k1 = 0; k1 < k1n; k1++) {
                int64_t i1 = ra > 1 ? ref_source(p, 1, o1, k1) : 0;
                if (i1 < 0)
                    continue;
                for (int64_t ka = 0; ka < p->k[ra]; ka++) {
                    const ref_run r = ref_run_of(p, ra, ka, oa, ob);
                    if (r.count == 0)
                        continue;
                    const float *xrow = xg + i0 * job->xs.sp[0] + i1 * job->xs.sp[1] +
                                        r.i_first * job->xs.sp[ra];
                    const float *wp = w + w_base + ((k0 * p->k[1] + k1) * p->k[2]) +
                                      ka * tap_step;
                    /* A run of one position takes no step, which could be past int64 (a
                     * stride of 2^62 times the channels of an NHWC pixel). */
                    const int64_t x_step = r.count > 1 ? r.i_step * job->xs.sp[ra] : 0;
                    for (int64_t ci = 0; ci < cg; ci++)
                        ref_axpy(acc + r.o_first, r.o_step, xrow + ci * job->xs.c, x_step,
                                 r.count, (double)wp[ci * w_step]);
                }
            }
        }
        for (int64_t o = oa; o < ob; o++) {
            int64_t yi = y_base + o0 * job->ys.sp[0] + o1 * job->ys.sp[1] + o * job->ys.sp[ra];
            y[yi] = cf_epilogue_value(p, (float)acc[o - oa], bias, z ? z[yi] : 0.0f);
        }
    }
}

static bool ref_applicable(const cf_problem *p) { return p->dtype == CONVFIND_DTYPE_F32; }

static convfind_status ref_workspace(const cf_problem *p, size_t *bytes)
{
    (void)p;
    *bytes = 0;
    return CONVFIND_OK;
}

static convfind_status ref_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    ref_job job = {
        .p = p,
        .a = a,
        .xs = ref_strides_of(p->layout, p->c, p->in),
        .ys = ref_strides_of(p->layout, p->m, p->out),
    };
    cf_parallel_for(a->pool, (size_t)(p->n * p->m), ref_task, &job);
    return CONVFIND_OK;
}

const cf_algo cf_algo_cpu_reference = {
    .name = "cpu.reference",
    .family = "reference",
    .applicable = ref_applicable,
    .workspace = ref_workspace,
    .prepare = NULL,
    .release = NULL,
    .execute = ref_execute,
};
