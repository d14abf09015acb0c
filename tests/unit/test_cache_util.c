/*
 * test_cache_util.c - see test_cache_util.h.
 */
#include "test_cache_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

convfind_problem *tu_conv2d(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k,
                            int64_t group)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    int64_t x[] = {n, c, h, w}, wd[] = {m, c / group, k, k};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, wd, sizeof wd);
    d.group = group;
    d.pads.count = 4;
    for (int i = 0; i < 4; i++)
        d.pads.v[i] = k / 2;
    d.has_bias = 1;
    d.activation = CONVFIND_ACT_RELU;
    convfind_problem *p;
    if (convfind_problem_create(&d, &p) != CONVFIND_OK) {
        fprintf(stderr, "tu_conv2d: %s\n", convfind_last_error());
        abort();
    }
    return p;
}

convfind_context *tu_context_with(convfind_context_options *o, convfind_find_policy policy,
                                  int threads)
{
    convfind_context_options defaults;
    convfind_context_options_init(&defaults);
    if (!o)
        o = &defaults;
    o->db_path = ":memory:";
    o->find_policy = policy;
    o->num_threads = threads;
    o->find_time_budget_s = 0.01;
    convfind_context *ctx;
    if (convfind_context_create(o, &ctx) != CONVFIND_OK) {
        fprintf(stderr, "tu_context: %s\n", convfind_last_error());
        abort();
    }
    return ctx;
}

convfind_context *tu_context(convfind_find_policy policy, int threads)
{
    return tu_context_with(NULL, policy, threads);
}

convfind_context_stats tu_stats(const convfind_context *ctx)
{
    convfind_context_stats st = {.struct_size = sizeof st};
    if (convfind_context_stats_get(ctx, &st) != CONVFIND_OK) {
        fprintf(stderr, "tu_stats: %s\n", convfind_last_error());
        abort();
    }
    return st;
}

static float *filled(size_t n, unsigned seed)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        abort();
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        v[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

void tu_data_init(tu_data *d, const convfind_problem *p, unsigned seed)
{
    size_t nx, nw, ny, nb;
    convfind_problem_sizes(p, &nx, &nw, &ny, &nb);
    d->x = filled(nx, seed);
    d->w = filled(nw, seed + 1);
    d->b = filled(nb, seed + 2);
    d->z = filled(ny, seed + 3);
    d->y = filled(ny, seed + 4);
    d->expect = filled(ny, 0);
    d->ny = ny;
    cf_exec_args a = {.x = d->x, .w = d->w, .b = p->has_bias ? d->b : NULL,
                      .z = p->has_residual ? d->z : NULL, .y = d->expect};
    if (cf_algo_cpu_reference.execute(p, NULL, &a) != CONVFIND_OK)
        abort();
}

void tu_data_free(tu_data *d)
{
    free(d->x);
    free(d->w);
    free(d->b);
    free(d->z);
    free(d->y);
    free(d->expect);
}

convfind_tensors tu_tensors(const tu_data *d, const convfind_problem *p)
{
    convfind_tensors t = {.x = d->x, .w = d->w, .y = d->y,
                          .b = p->has_bias ? d->b : NULL, .z = p->has_residual ? d->z : NULL};
    return t;
}

int tu_matches(const tu_data *d)
{
    for (size_t i = 0; i < d->ny; i++)
        if (!(fabsf(d->y[i] - d->expect[i]) <= 1e-4f * (1.0f + fabsf(d->expect[i]))))
            return 0;
    return 1;
}

static bool any_f32(const cf_problem *p)
{
    return p->dtype == CONVFIND_DTYPE_F32;
}

static convfind_status ws_256(const cf_problem *p, size_t *bytes)
{
    (void)p;
    *bytes = 256;
    return CONVFIND_OK;
}

static convfind_status exec_ws(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    if (!a->workspace || a->workspace_size < 256)
        return CONVFIND_ERR_BACKEND;
    memset(a->workspace, 0xab, 256);
    cf_exec_args r = *a;
    r.workspace = NULL;
    r.workspace_size = 0;
    return cf_algo_cpu_reference.execute(p, NULL, &r);
}

static convfind_status exec_plain(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    return cf_algo_cpu_reference.execute(p, NULL, a);
}

static convfind_status exec_wrong(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    convfind_status st = exec_plain(p, state, a);
    float *y = a->y;
    for (size_t i = 0; i < p->y_elems; i++)
        y[i] += 1.0f;
    return st;
}

const cf_algo tu_algo_ws = {.name = "test.ws", .family = "direct", .applicable = any_f32,
                            .workspace = ws_256, .execute = exec_ws};
const cf_algo tu_algo_plain = {.name = "test.plain", .family = "gemm", .applicable = any_f32,
                               .execute = exec_plain};
const cf_algo tu_algo_wrong = {.name = "test.wrong", .family = "direct", .applicable = any_f32,
                               .execute = exec_wrong};

atomic_int tu_packs, tu_frees, tu_extents, tu_runs_packed, tu_runs_unpacked;

void tu_counts_reset(void)
{
    atomic_store(&tu_packs, 0);
    atomic_store(&tu_frees, 0);
    atomic_store(&tu_extents, 0);
    atomic_store(&tu_runs_packed, 0);
    atomic_store(&tu_runs_unpacked, 0);
}

convfind_status tu_pack_copy(const cf_problem *p, const void *state, const void *w,
                             void **packed)
{
    (void)state;
    float *copy = malloc(p->w_elems * sizeof *copy);
    if (!copy)
        return CONVFIND_ERR_OUT_OF_MEMORY;
    memcpy(copy, w, p->w_elems * sizeof *copy);
    *packed = copy;
    atomic_fetch_add(&tu_packs, 1);
    return CONVFIND_OK;
}

void tu_free_copy(void *packed)
{
    free(packed);
    atomic_fetch_add(&tu_frees, 1);
}

size_t tu_packed_extent(const cf_problem *p, const void *packed, const void **start)
{
    *start = packed;
    atomic_fetch_add(&tu_extents, 1);
    return p->w_elems * sizeof(float);
}

convfind_status tu_run_counted(const cf_problem *p, const cf_exec_args *a)
{
    if (a->packed_w && memcmp(a->packed_w, a->w, p->w_elems * sizeof(float)) != 0)
        return CONVFIND_ERR_BACKEND;
    atomic_fetch_add(a->packed_w ? &tu_runs_packed : &tu_runs_unpacked, 1);
    cf_exec_args r = *a;
    r.packed_w = NULL;
    return cf_algo_cpu_reference.execute(p, NULL, &r);
}

static convfind_status exec_packs(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    return tu_run_counted(p, a);
}

const cf_algo tu_algo_packs = {.name = "test.packs", .family = "direct", .applicable = any_f32,
                               .execute = exec_packs, .pack_weights = tu_pack_copy,
                               .free_packed = tu_free_copy, .packed_extent = tu_packed_extent};
