/*
 * fuzz_problem.c - libFuzzer target for problem validation (convfind_problem_create).
 *
 * The input bytes become every field of a convfind_conv_desc, garbage enums, negative
 * counts and huge int64 values included.  Most values are drawn small so that valid
 * problems are common and the shape formulas get exercised, not only the early
 * rejections.  On success the target checks invariants that must hold for every valid
 * problem (output >= 1, the ONNX size identity with the resolved pads, counts that match
 * the dims) and traps when one breaks, so a wrong resolution is a finding, not only a
 * crash.  Build: cmake -DCMAKE_C_COMPILER=clang -DCONVFIND_FUZZ=ON ...
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "convfind.h"
#include "problem/problem.h"

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

/* Missing bytes read as zero, so every prefix of an input is still a description. */
static uint64_t take(reader *r, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++) {
        v = v << 8 | (r->n ? *r->p : 0);
        if (r->n) {
            r->p++;
            r->n--;
        }
    }
    return v;
}

/* An int64 attribute or dim: mostly small (-1..8), sometimes near the int64 limits,
 * sometimes raw bits. */
static int64_t value(reader *r)
{
    const uint8_t sel = (uint8_t)take(r, 1);
    if (sel < 200)
        return 1 + sel % 8;
    if (sel < 215)
        return (int64_t)(sel % 3) - 1;
    if (sel < 230)
        return INT64_MAX - (int64_t)take(r, 1);
    if (sel < 240)
        return (int64_t)1 << (take(r, 1) % 63);
    return (int64_t)take(r, 8);
}

static int small_int(reader *r) { return (int)(int8_t)take(r, 1); }

/* An enum: usually one of its `n` values, sometimes any 32-bit pattern the caller's
 * memory may hold. */
static int enum_value(reader *r, int n)
{
    const uint8_t sel = (uint8_t)take(r, 1);
    return sel < 240 ? sel % n : (int)(uint32_t)take(r, 4);
}

/* An attribute list: absent, the right length for `nsp` axes, or any count. */
static void ints(reader *r, convfind_ints *v, int per_axis, int nsp)
{
    const uint8_t sel = (uint8_t)take(r, 1);
    v->count = sel < 100 ? 0 : sel < 230 ? per_axis * nsp : small_int(r);
    for (size_t i = 0; i < sizeof v->v / sizeof v->v[0]; i++)
        v->v[i] = value(r);
}

static float param(reader *r)
{
    const uint8_t sel = (uint8_t)take(r, 1);
    if (sel < 200)
        return (float)sel / 16.0f - 4.0f;
    const uint32_t bits = (uint32_t)take(r, 4);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Channels consistent with group for the op (usually) or raw values. */
static void channels(reader *r, convfind_conv_desc *d)
{
    if ((uint8_t)take(r, 1) >= 200) {
        d->group = value(r);
        d->x_dims[1] = value(r);
        d->w_dims[0] = value(r);
        d->w_dims[1] = value(r);
        return;
    }
    const int64_t g = 1 + (int64_t)take(r, 1) % 4, cpg = 1 + (int64_t)take(r, 1) % 3,
                  mpg = 1 + (int64_t)take(r, 1) % 3;
    d->group = g;
    d->x_dims[1] = g * cpg;
    d->w_dims[0] = d->op == CONVFIND_OP_CONV_TRANSPOSE ? g * cpg : g * mpg;
    d->w_dims[1] = d->op == CONVFIND_OP_CONV_TRANSPOSE ? mpg : cpg;
}

static void check(int ok)
{
    if (!ok)
        __builtin_trap();
}

static void check_valid(const convfind_problem *p)
{
    int rank = 0;
    int64_t dims[CONVFIND_MAX_RANK];
    int64_t pads[2 * CONVFIND_MAX_SPATIAL];
    size_t xe, we, ye, be;
    check(convfind_problem_output_dims(p, &rank, dims) == CONVFIND_OK);
    check(convfind_problem_resolved_pads(p, pads) == CONVFIND_OK);
    check(convfind_problem_sizes(p, &xe, &we, &ye, &be) == CONVFIND_OK);
    check(rank == p->nsp + 2 && dims[0] == p->n && dims[1] == p->m);

    __int128 y = (__int128)p->n * p->m;
    for (int i = 0; i < p->nsp; i++) {
        const int64_t o = dims[2 + i], pb = pads[i], pe = pads[p->nsp + i];
        const __int128 ext = (__int128)(p->k[i] - 1) * p->dil[i] + 1;
        check(o >= 1);
        y *= o;
        if (p->op == CONVFIND_OP_CONV) {
            const __int128 span = (__int128)p->in[i] + pb + pe - ext;
            check(pb >= 0 && pe >= 0 && span >= 0 && span / p->stride[i] + 1 == o);
        } else {
            const __int128 full =
                (__int128)p->stride[i] * (p->in[i] - 1) + p->out_pad[i] + ext;
            check(full - pb - pe == o);
            check(p->out_pad[i] < p->stride[i] || p->out_pad[i] < p->dil[i]);
        }
    }
    check(y == (__int128)ye && be == (p->has_bias ? (size_t)p->m : 0));

    char small[16], big[512];
    const size_t need = convfind_problem_describe(p, small, sizeof small);
    check(strlen(small) < sizeof small);
    check(convfind_problem_describe(p, big, sizeof big) == need);
    check(need >= sizeof big || strlen(big) == need);
    (void)convfind_problem_flops(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.op = (convfind_op)enum_value(&r, 2);
    d.dtype = (convfind_dtype)enum_value(&r, 3);
    d.layout = (convfind_layout)enum_value(&r, 2);
    d.math_mode = (convfind_math_mode)enum_value(&r, 2);
    d.auto_pad = (convfind_auto_pad)enum_value(&r, 4);
    d.activation = (convfind_activation)enum_value(&r, 7);
    d.x_rank = take(&r, 1) < 240 ? 3 + (int)take(&r, 1) % 3 : small_int(&r);
    d.w_rank = take(&r, 1) < 240 ? d.x_rank : small_int(&r);
    for (int i = 0; i < CONVFIND_MAX_RANK; i++)
        d.x_dims[i] = value(&r);
    for (int i = 0; i < CONVFIND_MAX_RANK; i++)
        d.w_dims[i] = value(&r);
    channels(&r, &d);
    d.has_bias = small_int(&r);
    d.has_residual = small_int(&r);
    /* The spatial rank the lists are sized for; garbage ranks still get lists. */
    const int nsp = d.x_rank >= 3 && d.x_rank <= 5 ? d.x_rank - 2 : 1;
    ints(&r, &d.kernel_shape, 1, nsp);
    ints(&r, &d.strides, 1, nsp);
    ints(&r, &d.dilations, 1, nsp);
    ints(&r, &d.pads, 2, nsp);
    ints(&r, &d.output_padding, 1, nsp);
    ints(&r, &d.output_shape, 1, nsp);
    d.alpha = param(&r);
    d.beta = param(&r);

    convfind_problem *p = (convfind_problem *)&r;
    const convfind_status st = convfind_problem_create(&d, &p);
    if (st == CONVFIND_OK) {
        check(p != NULL && convfind_last_error()[0] == '\0');
        check_valid(p);
    } else {
        /* Every failure says why and hands back nothing. */
        check(p == NULL && convfind_last_error()[0] != '\0');
    }
    convfind_problem_destroy(p);
    return 0;
}
