/*
 * cmd_find.c - `convfind find`: measures every algorithm on one problem and prints the
 * ranked list and the decision (what convfind_find returns).
 *
 * The problem comes either from MIOpenDriver's `conv` flags (-n -c -H -W -k -y -x -p -q
 * -u -v -l -j -g, -m conv|trans, --spatial_dim 3 with --in_d --fil_d --pad_d
 * --conv_stride_d --dilation_d, and --trans_output_pad_h/_w/_d), so a MIOpen command line
 * can be pasted, or from the ONNX attribute flags of `convfind run` plus --x-shape and
 * --w-shape.  MIOpen's unset flags take the driver's defaults; its pads are symmetric.
 * --json prints exactly one JSON object on stdout and nothing else there.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"

#define UNSET INT64_MIN

/* MIOpenDriver conv flags, UNSET until given. */
enum {
    F_N, F_C, F_H, F_W, F_K, F_Y, F_X, F_P, F_Q, F_U, F_V, F_L, F_J, F_G,
    F_SPATIAL_DIM, F_IN_D, F_FIL_D, F_PAD_D, F_STRIDE_D, F_DIL_D, F_OPAD_H, F_OPAD_W, F_OPAD_D,
    F_COUNT
};

typedef struct miopen_flags {
    int64_t v[F_COUNT];
    const char *mode;
} miopen_flags;

#define MI(f) offsetof(miopen_flags, v[F_##f])

static const cli_flag miopen_flag_table[] = {
    {"batchsize", 'n', "N", "MIOpen: batch size (default 100)", cli_apply_int64, MI(N), NULL},
    {"in_channels", 'c', "C", "MIOpen: input channels (default 3)", cli_apply_int64, MI(C), NULL},
    {"in_h", 'H', "H", "MIOpen: input height (default 32)", cli_apply_int64, MI(H), NULL},
    {"in_w", 'W', "W", "MIOpen: input width (default 32)", cli_apply_int64, MI(W), NULL},
    {"out_channels", 'k', "K", "MIOpen: output channels (default 32)", cli_apply_int64, MI(K), NULL},
    {"fil_h", 'y', "Y", "MIOpen: filter height (default 3)", cli_apply_int64, MI(Y), NULL},
    {"fil_w", 'x', "X", "MIOpen: filter width (default 3)", cli_apply_int64, MI(X), NULL},
    {"pad_h", 'p', "P", "MIOpen: zero padding of height, both sides (default 0)",
     cli_apply_int64, MI(P), NULL},
    {"pad_w", 'q', "Q", "MIOpen: zero padding of width, both sides (default 0)",
     cli_apply_int64, MI(Q), NULL},
    {"conv_stride_h", 'u', "U", "MIOpen: stride of height (default 1)", cli_apply_int64, MI(U), NULL},
    {"conv_stride_w", 'v', "V", "MIOpen: stride of width (default 1)", cli_apply_int64, MI(V), NULL},
    {"dilation_h", 'l', "L", "MIOpen: dilation of height (default 1)", cli_apply_int64, MI(L), NULL},
    {"dilation_w", 'j', "J", "MIOpen: dilation of width (default 1)", cli_apply_int64, MI(J), NULL},
    {"group_count", 'g', "G", "MIOpen: groups (default 1)", cli_apply_int64, MI(G), NULL},
    {"mode", 'm', "conv|trans", "MIOpen: convolution or transposed convolution",
     cli_apply_string, offsetof(miopen_flags, mode), NULL},
    {"spatial_dim", 0, "2|3", "MIOpen: spatial dimensions (default 2)", cli_apply_int64,
     MI(SPATIAL_DIM), NULL},
    {"in_d", 0, "D", "MIOpen: input depth (3-D, default 32)", cli_apply_int64, MI(IN_D), NULL},
    {"fil_d", 0, "D", "MIOpen: filter depth (3-D, default 3)", cli_apply_int64, MI(FIL_D), NULL},
    {"pad_d", 0, "P", "MIOpen: zero padding of depth (3-D, default 0)", cli_apply_int64,
     MI(PAD_D), NULL},
    {"conv_stride_d", 0, "S", "MIOpen: stride of depth (3-D, default 1)", cli_apply_int64,
     MI(STRIDE_D), NULL},
    {"dilation_d", 0, "L", "MIOpen: dilation of depth (3-D, default 1)", cli_apply_int64,
     MI(DIL_D), NULL},
    {"trans_output_pad_h", 0, "P", "MIOpen: output padding of height (trans)", cli_apply_int64,
     MI(OPAD_H), NULL},
    {"trans_output_pad_w", 0, "P", "MIOpen: output padding of width (trans)", cli_apply_int64,
     MI(OPAD_W), NULL},
    {"trans_output_pad_d", 0, "P", "MIOpen: output padding of depth (trans, 3-D)",
     cli_apply_int64, MI(OPAD_D), NULL},
};

typedef struct find_options {
    convfind_ints x_shape, w_shape;
    int bias, residual, json, no_validate, threads;
    const char *budget, *db;
} find_options;

#define FO(f) offsetof(find_options, f)

static int apply_true(const cli_flag *flag, void *target, const char *value)
{
    (void)value;
    *(int *)((char *)target + flag->offset) = 1;
    return 0;
}

static const cli_flag find_flag_table[] = {
    {"x-shape", 0, "N,C,D...", "ONNX style: logical shape of X (N, C, spatial...)",
     cli_apply_ints, FO(x_shape), NULL},
    {"w-shape", 0, "M,C/G,K...", "ONNX style: shape of W (ConvTranspose: C, M/G, K...)",
     cli_apply_ints, FO(w_shape), NULL},
    {"bias", 'b', NULL, "the problem has a bias B", apply_true, FO(bias), NULL},
    {"residual", 0, NULL, "the problem has a residual Z", apply_true, FO(residual), NULL},
    {"threads", 't', "N", "worker threads (default 0: all online cores)", cli_apply_int,
     FO(threads), NULL},
    {"budget", 0, "SECONDS", "Find time budget for this problem (default 1)", cli_apply_string,
     FO(budget), NULL},
    {"no-validate", 0, NULL, "do not check candidates against the reference", apply_true,
     FO(no_validate), NULL},
    {"db", 0, "PATH", "find database (\":memory:\" for none; default: the usual location)",
     cli_apply_string, FO(db), NULL},
    {"json", 0, NULL, "print one JSON object instead of the table", apply_true, FO(json), NULL},
};

static bool miopen_given(const miopen_flags *m)
{
    for (int i = 0; i < F_COUNT; i++)
        if (m->v[i] != UNSET)
            return true;
    return m->mode != NULL;
}

static int64_t or_default(int64_t v, int64_t dflt)
{
    return v == UNSET ? dflt : v;
}

/* Builds the ONNX description of a MIOpenDriver command line. */
static int desc_from_miopen(const cli_command *cmd, const miopen_flags *m, convfind_conv_desc *d)
{
    int64_t sd = or_default(m->v[F_SPATIAL_DIM], 2);
    if (sd != 2 && sd != 3)
        return cli_usage_error(cmd, "--spatial_dim %" PRId64 " is not 2 or 3", sd);
    if (m->mode && strcmp(m->mode, "conv") != 0 && strcmp(m->mode, "trans") != 0)
        return cli_usage_error(cmd, "-m %s is not conv or trans", m->mode);
    bool trans = m->mode && strcmp(m->mode, "trans") == 0;
    int64_t c = or_default(m->v[F_C], 3), k = or_default(m->v[F_K], 32);
    int64_t g = or_default(m->v[F_G], 1);
    if (g < 1 || c % g != 0 || k % g != 0)
        return cli_usage_error(cmd, "-g %" PRId64 " must divide -c %" PRId64 " and -k %" PRId64,
                               g, c, k);
    /* Per spatial axis in ONNX order ((D,) H, W): the flags and MIOpenDriver's defaults
     * of input size, filter size, pad, stride, dilation and output padding. */
    static const int axis_flags[3][6] = {
        {F_IN_D, F_FIL_D, F_PAD_D, F_STRIDE_D, F_DIL_D, F_OPAD_D},
        {F_H, F_Y, F_P, F_U, F_L, F_OPAD_H},
        {F_W, F_X, F_Q, F_V, F_J, F_OPAD_W},
    };
    static const int64_t axis_defaults[6] = {32, 3, 0, 1, 1, 0};
    const int ax = (int)sd, first = 3 - ax;
    int64_t in[3], fil[3], pad[3], stride[3], dil[3], opad[3];
    int64_t *dst[6] = {in, fil, pad, stride, dil, opad};
    for (int i = 0; i < ax; i++)
        for (int f = 0; f < 6; f++)
            dst[f][i] = or_default(m->v[axis_flags[first + i][f]], axis_defaults[f]);
    d->op = trans ? CONVFIND_OP_CONV_TRANSPOSE : CONVFIND_OP_CONV;
    d->x_rank = d->w_rank = 2 + ax;
    d->x_dims[0] = or_default(m->v[F_N], 100);
    d->x_dims[1] = c;
    d->w_dims[0] = trans ? c : k;
    d->w_dims[1] = trans ? k / g : c / g;
    d->group = g;
    d->strides.count = d->dilations.count = ax;
    d->pads.count = 2 * ax;
    d->output_padding.count = trans ? ax : 0;
    for (int i = 0; i < ax; i++) {
        d->x_dims[2 + i] = in[i];
        d->w_dims[2 + i] = fil[i];
        d->strides.v[i] = stride[i];
        d->dilations.v[i] = dil[i];
        d->pads.v[i] = d->pads.v[ax + i] = pad[i];
        d->output_padding.v[i] = opad[i];
    }
    return CLI_EXIT_OK;
}

static int desc_from_onnx(const cli_command *cmd, const find_options *o, convfind_conv_desc *d)
{
    if (o->x_shape.count == 0 || o->w_shape.count == 0)
        return cli_usage_error(cmd, "give the problem with MIOpen flags (-n -c -H -W -k -y -x "
                                    "...) or with --x-shape and --w-shape");
    d->x_rank = o->x_shape.count;
    d->w_rank = o->w_shape.count;
    memcpy(d->x_dims, o->x_shape.v, sizeof(int64_t) * (size_t)(d->x_rank < 6 ? d->x_rank : 5));
    memcpy(d->w_dims, o->w_shape.v, sizeof(int64_t) * (size_t)(d->w_rank < 6 ? d->w_rank : 5));
    return CLI_EXIT_OK;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* The table's word for a status; JSON folds "abandoned" into "ok" plus a flag. */
static const char *status_word(convfind_candidate_status s, bool json)
{
    switch (s) {
    case CONVFIND_CANDIDATE_OK:
        return "ok";
    case CONVFIND_CANDIDATE_FAILED:
        return "failed";
    case CONVFIND_CANDIDATE_NOT_APPLICABLE:
        return "not_applicable";
    case CONVFIND_CANDIDATE_ABANDONED:
    default:
        return json ? "ok" : "abandoned";
    }
}

static void print_json(const char *key, const convfind_find_result *r, int n)
{
    printf("{\"key\": ");
    json_string(key);
    printf(", \"decision\": ");
    json_string(r[0].algorithm);
    printf(", \"candidates\": [");
    for (int i = 0; i < n; i++) {
        printf("%s{\"algo\": ", i ? ", " : "");
        json_string(r[i].algorithm);
        printf(", \"median_ms\": %.6g, \"min_ms\": %.6g, \"spread\": %.4g, \"repeats\": %d, "
               "\"workspace_bytes\": %zu, \"validated\": %s, \"status\": \"%s\", "
               "\"abandoned\": %s}",
               r[i].median_ms, r[i].min_ms, r[i].spread, r[i].repeats, r[i].workspace_bytes,
               r[i].validated ? "true" : "false", status_word(r[i].status, true),
               r[i].status == CONVFIND_CANDIDATE_ABANDONED ? "true" : "false");
    }
    printf("]}\n");
}

static void print_table(const char *key, const char *problem, const convfind_find_result *r,
                        int n, double gflop)
{
    printf("problem  %s\nkey      %s\n\n", problem, key);
    printf("%-4s %-28s %-14s %11s %11s %8s %7s %14s %9s %s\n", "rank", "algorithm", "status",
           "median_ms", "min_ms", "spread", "repeats", "workspace", "GFLOP/s", "validated");
    for (int i = 0; i < n; i++) {
        char rate[32] = "-";
        if (r[i].median_ms > 0)
            snprintf(rate, sizeof rate, "%.1f", gflop / (r[i].median_ms * 1e-3));
        printf("%-4d %-28s %-14s %11.4f %11.4f %8.3f %7d %14zu %9s %s\n", i + 1, r[i].algorithm,
               status_word(r[i].status, false), r[i].median_ms, r[i].min_ms, r[i].spread, r[i].repeats,
               r[i].workspace_bytes, rate, r[i].validated ? "yes" : "no");
    }
    printf("\ndecision %s\n", r[0].algorithm);
}

typedef struct find_state {
    convfind_problem *problem;
    convfind_context *context;
    convfind_find_result *results;
} find_state;

static int run_find(const cli_command *cmd, const find_options *o, const convfind_conv_desc *d,
                    find_state *s)
{
    convfind_context_options co;
    convfind_context_options_init(&co);
    co.num_threads = o->threads;
    co.find_policy = CONVFIND_FIND_EXHAUSTIVE;
    co.find_validate = !o->no_validate;
    co.db_path = o->db;
    if (o->budget) {
        char *end;
        co.find_time_budget_s = strtod(o->budget, &end);
        if (end == o->budget || *end || !(co.find_time_budget_s > 0))
            return cli_usage_error(cmd, "--budget %s is not a positive number of seconds",
                                   o->budget);
    }
    convfind_status st;
    if ((st = convfind_problem_create(d, &s->problem)) != CONVFIND_OK ||
        (st = convfind_context_create(&co, &s->context)) != CONVFIND_OK)
        return cli_library_error(st);
    int n = 0;
    if ((st = convfind_find(s->context, s->problem, NULL, 0, &n)) != CONVFIND_OK)
        return cli_library_error(st);
    s->results = calloc((size_t)(n > 0 ? n : 1), sizeof *s->results);
    if (!s->results)
        return cli_failure(cmd, "out of memory");
    if ((st = convfind_find(s->context, s->problem, s->results, n, &n)) != CONVFIND_OK)
        return cli_library_error(st);
    char key[1024], problem[512];
    convfind_problem_key(s->context, s->problem, key, sizeof key);
    convfind_problem_describe(s->problem, problem, sizeof problem);
    if (o->json)
        print_json(key, s->results, n);
    else
        print_table(key, problem, s->results, n, convfind_problem_flops(s->problem) * 1e-9);
    return CLI_EXIT_OK;
}

static int find_main(const cli_command *cmd, int argc, char **argv)
{
    miopen_flags m;
    for (int i = 0; i < F_COUNT; i++)
        m.v[i] = UNSET;
    m.mode = NULL;
    find_options o;
    memset(&o, 0, sizeof o);
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    const cli_flag_group groups[] = {
        {find_flag_table, (int)(sizeof find_flag_table / sizeof find_flag_table[0]), &o},
        {cli_problem_flags, cli_problem_flag_count, &d},
        {miopen_flag_table, (int)(sizeof miopen_flag_table / sizeof miopen_flag_table[0]), &m},
    };
    int r = cli_parse(cmd, argc, argv, groups, 3);
    if (r == CLI_HELP_SHOWN)
        return CLI_EXIT_OK;
    if (r != CLI_PARSED)
        return CLI_EXIT_USAGE;
    if (miopen_given(&m)) {
        if (o.x_shape.count || o.w_shape.count)
            return cli_usage_error(cmd, "give either MIOpen flags or --x-shape/--w-shape, not both");
        r = desc_from_miopen(cmd, &m, &d);
    } else {
        r = desc_from_onnx(cmd, &o, &d);
    }
    if (r != CLI_EXIT_OK)
        return r;
    d.has_bias = o.bias;
    d.has_residual = o.residual;
    find_state s = {0};
    r = run_find(cmd, &o, &d, &s);
    free(s.results);
    convfind_context_destroy(s.context);
    convfind_problem_destroy(s.problem);
    return r;
}

const cli_command cli_cmd_find = {
    .name = "find",
    .summary = "measure every algorithm on one problem; print the ranking and the decision",
    .synopsis = "(-n N -c C -H H -W W -k K -y Y -x X ... | --x-shape N,C,... --w-shape M,C/G,...) "
                "[--json]",
    .main = find_main,
};
