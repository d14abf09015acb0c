/*
 * cli_setup.c - the problem and the context of a command line (see cli_setup.h).
 */
#include "cli_setup.h"

#include <string.h>

#include "cli_common.h"
#include "miopen.h"

/* Flags that describe a problem in ONNX terms only. */
static const int onnx_only[] = {CLI_X_SHAPE,     CLI_W_SHAPE,        CLI_OP,
                                CLI_DTYPE,       CLI_LAYOUT,         CLI_PADS,
                                CLI_STRIDES,     CLI_DILATIONS,      CLI_GROUP,
                                CLI_KERNEL_SHAPE, CLI_AUTO_PAD,      CLI_OUTPUT_PADDING,
                                CLI_OUTPUT_SHAPE, -1};
/* Flags of either kind of problem. */
static const int shared[] = {CLI_BIAS, CLI_RESIDUAL, CLI_ACTIVATION, CLI_MATH, -1};

const int cli_onnx_problem_flags[] = {CLI_X_SHAPE,     CLI_W_SHAPE,  CLI_OP,
                                      CLI_DTYPE,       CLI_LAYOUT,   CLI_MATH,
                                      CLI_PADS,        CLI_STRIDES,  CLI_DILATIONS,
                                      CLI_GROUP,       CLI_KERNEL_SHAPE, CLI_AUTO_PAD,
                                      CLI_OUTPUT_PADDING, CLI_OUTPUT_SHAPE, CLI_BIAS,
                                      CLI_RESIDUAL,    CLI_ACTIVATION, -1};

/* The first flag of `ids` that was given, or -1. */
static int first_given(const cli_args *a, const int *ids)
{
    for (; *ids >= 0; ids++)
        if (a->given[*ids])
            return *ids;
    return -1;
}

bool cli_problem_flags_given(const cli_args *a, int except)
{
    const int *lists[3] = {onnx_only, shared, cli_miopen_problem_flags};
    for (int l = 0; l < 3; l++)
        for (const int *id = lists[l]; *id >= 0; id++)
            if (a->given[*id] && *id != except)
                return true;
    return false;
}

int cli_problem_from_args(const cli_command *cmd, const cli_args *a, char *const *words,
                          int nwords, convfind_conv_desc *d)
{
    char err[400];
    bool found;
    convfind_dtype dtype = CONVFIND_DTYPE_F32;
    if (cli_miopen_words(words, nwords, &found, &dtype, err, sizeof err) != 0)
        return cli_usage_error(cmd, "%s", err);
    int onnx = first_given(a, onnx_only), mio = -1;
    for (const int *id = cli_miopen_problem_flags; *id >= 0 && mio < 0; id++)
        if (a->given[*id] && *id != CLI_BIAS)
            mio = *id;
    if (onnx >= 0 && (mio >= 0 || found))
        return cli_usage_error(cmd, "give the problem either with MIOpenDriver flags or with "
                               "--x-shape, --w-shape and ONNX flags, not both (--%s with %s%s)",
                               cli_flags[onnx].name, found ? "" : "--",
                               found ? "a MIOpenDriver command" : cli_flags[mio].name);
    if (mio >= 0 || found) {
        if (cli_miopen_desc(a, dtype, d, err, sizeof err) != 0)
            return cli_usage_error(cmd, "%s", err);
    } else {
        if (a->x_shape.count == 0 || a->w_shape.count == 0)
            return cli_usage_error(cmd, "give the problem with MIOpenDriver flags (-n -c -H -W "
                                   "-k -y -x ...) or with --x-shape and --w-shape");
        if (a->x_shape.count > CONVFIND_MAX_RANK || a->w_shape.count > CONVFIND_MAX_RANK)
            return cli_usage_error(cmd, "--x-shape and --w-shape take at most %d dims",
                                   CONVFIND_MAX_RANK);
        *d = a->desc;
        d->x_rank = a->x_shape.count;
        d->w_rank = a->w_shape.count;
        memcpy(d->x_dims, a->x_shape.v, sizeof(int64_t) * (size_t)d->x_rank);
        memcpy(d->w_dims, a->w_shape.v, sizeof(int64_t) * (size_t)d->w_rank);
    }
    d->has_bias = a->bias;
    d->has_residual = a->residual;
    d->activation = a->desc.activation;
    d->alpha = a->desc.alpha;
    d->beta = a->desc.beta;
    d->math_mode = a->desc.math_mode;
    return CLI_EXIT_OK;
}

int cli_context_open(const cli_command *cmd, const cli_args *a, convfind_find_policy policy,
                     convfind_context **ctx)
{
    if (a->budget_ms < 0)
        return cli_usage_error(cmd, "--budget-ms %d must be >= 0", a->budget_ms);
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = a->threads;
    o.find_policy = policy;
    o.workspace_limit = (size_t)a->workspace;
    o.db_path = a->db;
    o.system_db_path = a->system_db;
    o.db_env_policy = (convfind_db_env_policy)a->env_policy;
    o.find_time_budget_s = a->budget_ms / 1000.0;
    o.find_skip_validation = CLI_MIO(a, CLI_M_VERIFY) == 0;
    o.device = a->device;
    o.device_index = a->device_index;
    convfind_status st = convfind_context_create(&o, ctx);
    return st == CONVFIND_OK ? CLI_EXIT_OK : cli_library_error(st);
}
