/*
 * contender_convfind.c - convfind as a benchmark contender, through the public API only
 * (include/convfind.h), used the way an inference runtime uses it: the decision comes
 * from Find (run by the "find" request, timed on its own and reported apart), the plan
 * is made once, the weights are packed once outside the timing, X and Y are NCHW (or
 * NCW / NCDHW) buffers of the caller, or channels-last ones with --layout nhwc (the
 * layout a network would run in whole, as oneDNN runs in its blocked ones).  Decisions live in an in-memory find-db, so every
 * worker process measures afresh and never reads or writes the user's database.
 *
 * Extra requests:
 *   find ID PROBLEM   -> "found ID SECONDS ALGO CANDIDATES"  (convfind_find's wall time)
 *   algos ID PROBLEM  -> "algos ID NAME..."  every CPU algorithm that can run it (regret)
 *   peak              -> "peak GFLOPS BITS"  the FMA peak of this machine, measured now
 * A "prep" whose problem carries algo=NAME forces that algorithm instead of Find's.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_tensor.h"
#include "contender.h"
#include "convfind.h"
#include "fma_peak.h"

static convfind_context *ctx;
static int threads;
static convfind_layout layout;

typedef struct cf_state {
    convfind_plan *plan;
    float *x, *w, *b, *y;
    convfind_tensors t;
} cf_state;

const char *contender_name(void)
{
    return "convfind";
}

/* The vector width the kernels run at, for the peak: what CONVFIND_ISA allows. */
static int kernels_512(void)
{
    const char *isa = getenv("CONVFIND_ISA");
    if (isa && (strcmp(isa, "avx2") == 0 || strcmp(isa, "portable") == 0))
        return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

int contender_init(const contender_options *opt, char *settings, size_t size)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = threads = opt->threads;
    layout = opt->channels_last ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
    o.find_policy = CONVFIND_FIND_HYBRID;
    o.db_path = ":memory:";
    o.find_time_budget_s = opt->find_budget_s;
    if (convfind_context_create(&o, &ctx) != CONVFIND_OK) {
        snprintf(settings, size, "context: %s", convfind_last_error());
        return -1;
    }
    const char *isa = getenv("CONVFIND_ISA");
    char budget[48];
    if (opt->find_budget_s > 0)
        snprintf(budget, sizeof budget, "%g s", opt->find_budget_s);
    else
        snprintf(budget, sizeof budget, "1 s (library default)");
    snprintf(settings, size,
             "convfind %s, public API, %d threads, ISA %s, %s in/out, Find's decision "
             "(in-memory find-db, Find budget %s per problem), constant weights packed once "
             "untimed",
             convfind_version_string(), threads, isa ? isa : "native",
             opt->channels_last ? "NHWC" : "NCHW", budget);
    return 0;
}

int contender_variants(void)
{
    return 1;
}

/* The convfind problem of p; NULL with the message in info. */
static convfind_problem *make_problem(const bench_problem *p, char *info, size_t size)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.op = p->transpose ? CONVFIND_OP_CONV_TRANSPOSE : CONVFIND_OP_CONV;
    d.layout = layout; /* x_dims stay in ONNX order whatever the memory layout */
    d.x_rank = d.w_rank = p->dims + 2;
    d.x_dims[0] = p->n;
    d.x_dims[1] = p->c;
    d.w_dims[0] = p->transpose ? p->c : p->k;
    d.w_dims[1] = p->transpose ? p->k / p->group : p->c / p->group;
    d.strides.count = d.dilations.count = p->dims;
    d.pads.count = 2 * p->dims;
    for (int i = 0; i < p->dims; i++) {
        d.x_dims[2 + i] = p->x[i];
        d.w_dims[2 + i] = p->kern[i];
        d.strides.v[i] = p->stride[i];
        d.dilations.v[i] = p->dil[i];
        d.pads.v[i] = p->pads[i];
        d.pads.v[p->dims + i] = p->pads[p->dims + i];
    }
    if (p->transpose) {
        d.output_padding.count = p->dims;
        for (int i = 0; i < p->dims; i++)
            d.output_padding.v[i] = p->opad[i];
    }
    d.group = p->group;
    d.has_bias = p->bias;
    d.activation = (convfind_activation)p->act;
    d.alpha = p->alpha;
    d.beta = p->beta;
    convfind_problem *prob = NULL;
    if (convfind_problem_create(&d, &prob) != CONVFIND_OK)
        snprintf(info, size, "%s", convfind_last_error());
    return prob;
}

void contender_release(void *state)
{
    cf_state *s = state;
    if (!s)
        return;
    convfind_plan_destroy(s->plan);
    free(s->x);
    free(s->w);
    free(s->b);
    free(s->y);
    free(s);
}

void *contender_prepare(const bench_problem *p, int variant, char *info, size_t size)
{
    (void)variant;
    convfind_problem *prob = make_problem(p, info, size);
    cf_state *s = prob ? calloc(1, sizeof *s) : NULL;
    if (!s) {
        convfind_problem_destroy(prob);
        return NULL;
    }
    size_t xn = 0, wn = 0, yn = 0, bn = 0;
    convfind_problem_sizes(prob, &xn, &wn, &yn, &bn);
    unsigned seed = 777u;
    s->x = bench_tensor_alloc(xn);
    s->w = bench_tensor_alloc(wn);
    s->b = bn ? bench_tensor_alloc(bn) : NULL;
    s->y = bench_tensor_alloc(yn);
    if (!s->x || !s->w || !s->y || (bn && !s->b)) {
        snprintf(info, size, "out of memory");
        convfind_problem_destroy(prob);
        contender_release(s);
        return NULL;
    }
    bench_tensor_fill(s->x, xn, &seed);
    bench_tensor_fill(s->w, wn, &seed);
    if (s->b)
        bench_tensor_fill(s->b, bn, &seed);
    bench_tensor_fill(s->y, yn, &seed);
    /* Constant weights: copied and packed once here, untimed, as a runtime's initializers. */
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.weights = s->w;
    o.algorithm = p->algo[0] ? p->algo : NULL;
    convfind_status st = convfind_plan_create_ex(ctx, prob, &o, &s->plan);
    convfind_problem_destroy(prob);
    if (st != CONVFIND_OK) {
        snprintf(info, size, "%s", convfind_last_error());
        contender_release(s);
        return NULL;
    }
    s->t = (convfind_tensors){.x = s->x, .b = s->b, .y = s->y};
    snprintf(info, size, "%s", convfind_plan_algorithm(s->plan));
    return s;
}

int contender_run(void *state)
{
    cf_state *s = state;
    return convfind_execute(s->plan, &s->t) != CONVFIND_OK;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "ID PROBLEM" of a find or algos request: the id and the problem, or -1. */
static int parse_request(const char *args, bench_problem *p, char *err, size_t size)
{
    int id = -1, used = 0;
    if (sscanf(args, "%d%n", &id, &used) != 1 || id < 0) {
        snprintf(err, size, "no layer id");
        return -1;
    }
    return bench_problem_parse(args + used, p, err, size) == 0 ? id : -1;
}

static void find_request(const char *args, FILE *out)
{
    char err[256];
    bench_problem p;
    int id = parse_request(args, &p, err, sizeof err);
    convfind_problem *prob = id >= 0 ? make_problem(&p, err, sizeof err) : NULL;
    convfind_find_result best;
    int count = 0;
    double t0 = now_s();
    if (prob && convfind_find(ctx, prob, CONVFIND_WEIGHTS_CONSTANT, &best, 1, &count) ==
                    CONVFIND_OK &&
        count > 0)
        fprintf(out, "found %d %.6f %s %d\n", id, now_s() - t0, best.algorithm, count);
    else
        fprintf(out, "na %d %s\n", id, prob ? convfind_last_error() : err);
    convfind_problem_destroy(prob);
}

static void algos_request(const char *args, FILE *out)
{
    char err[256];
    bench_problem p;
    int id = parse_request(args, &p, err, sizeof err);
    convfind_problem *prob = id >= 0 ? make_problem(&p, err, sizeof err) : NULL;
    if (!prob) {
        fprintf(out, "na %d %s\n", id, err);
        return;
    }
    fprintf(out, "algos %d", id);
    for (int i = 0; i < convfind_algorithm_count(); i++) {
        const char *name = convfind_algorithm_name(i);
        convfind_plan *plan = NULL;
        if (strncmp(name, "cpu.", 4) == 0 &&
            convfind_plan_create_with_algorithm(ctx, prob, name, &plan) == CONVFIND_OK)
            fprintf(out, " %s", name);
        convfind_plan_destroy(plan);
    }
    fprintf(out, "\n");
    convfind_problem_destroy(prob);
}

int contender_command(const char *verb, const char *args, FILE *out)
{
    if (strcmp(verb, "find") == 0)
        find_request(args, out);
    else if (strcmp(verb, "algos") == 0)
        algos_request(args, out);
    else if (strcmp(verb, "peak") == 0) {
        int wide = kernels_512();
        fprintf(out, "peak %.3f %d\n", fma_peak_gflops(threads, wide), wide ? 512 : 256);
    } else
        return 0;
    return 1;
}
