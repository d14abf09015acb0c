/*
 * cmd_tune.c - `convfind tune FILE...`: obtains and stores the decision of every
 * problem in the files, so later processes find them in the database instead of
 * measuring (docs/db.md).
 *
 * A file is either a layer CSV (the format of data/resnet50_convs.csv) or MIOpenDriver
 * command lines, one per line ("MIOpenDriver conv -n 1 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3
 * -p 1 -q 1"), so problem lists collected from MIOpen users can be tuned as they are.
 * Each problem goes through an ordinary plan creation under the HYBRID policy (stored
 * decision, else Find and store; EXHAUSTIVE with --policy exhaustive), so tuning is the
 * very path a first inference would take.  Progress is a bar with ETA on a terminal and
 * one line per problem otherwise; the last line is always
 *   tuned=<problems> finds=<finds run> db_hits=<decisions read from the database> seconds=<s>
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "core/context.h"
#include "decide.h"
#include "layers.h"

typedef struct tune_options {
    const char *db, *system_db;
    int policy, env_policy;
    int threads;
    int budget_ms;
} tune_options;

#define TUNE_FIELD(f) offsetof(tune_options, f)

static const cli_choice tune_policies[] = {
    {"hybrid", CONVFIND_FIND_HYBRID}, {"exhaustive", CONVFIND_FIND_EXHAUSTIVE}, {NULL, 0}};
static const cli_choice env_policies[] = {
    {"retune", CONVFIND_DB_ENV_RETUNE}, {"ignore", CONVFIND_DB_ENV_IGNORE}, {NULL, 0}};

/* Enum flags store into an int field of tune_options through their choice table. */
static int apply_choice(const cli_flag *flag, void *target, const char *value)
{
    char label[64];
    snprintf(label, sizeof label, "--%s", flag->name);
    return cli_parse_choice(label, value, flag->choices, (int *)((char *)target + flag->offset));
}

static const cli_flag tune_flags[] = {
    {"db", 0, "PATH", "find database (default: $CONVFIND_DB_PATH, then ~/.cache/convfind)",
     cli_apply_string, TUNE_FIELD(db), NULL},
    {"system-db", 0, "PATH", "read-only system database under it (default: $CONVFIND_SYSTEM_DB)",
     cli_apply_string, TUNE_FIELD(system_db), NULL},
    {"policy", 0, "hybrid|exhaustive",
     "hybrid (default): measure only what is not stored; exhaustive: measure everything",
     apply_choice, TUNE_FIELD(policy), tune_policies},
    {"env-policy", 0, "retune|ignore",
     "records from another environment: re-time their top candidates (default) or ignore them",
     apply_choice, TUNE_FIELD(env_policy), env_policies},
    {"threads", 0, "N", "worker threads (default 0: all online cores)", cli_apply_int,
     TUNE_FIELD(threads), NULL},
    {"budget-ms", 0, "MS", "Find time per problem in milliseconds (default: the library's, 1000)",
     cli_apply_int, TUNE_FIELD(budget_ms), NULL},
};
#define TUNE_FLAG_COUNT ((int)(sizeof tune_flags / sizeof tune_flags[0]))

typedef struct tune_item {
    char name[96];
    convfind_conv_desc desc;
} tune_item;

typedef struct item_list {
    tune_item *v;
    size_t n, cap;
} item_list;

static tune_item *push(item_list *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        tune_item *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return NULL;
        l->v = v;
        l->cap = cap;
    }
    tune_item *it = &l->v[l->n++];
    memset(it, 0, sizeof *it);
    return it;
}

/* One MIOpenDriver flag this reader understands: short and long spelling, and where the
 * value goes (index into the values array below), or -1 for flags that only steer the
 * driver itself (timing, verification) and are accepted and ignored. */
typedef struct mio_flag {
    char short_name;
    const char *long_name;
    int slot;
} mio_flag;

enum { M_N, M_C, M_H, M_W, M_K, M_Y, M_X, M_P, M_Q, M_U, M_V, M_L, M_J, M_G, M_F, M_B, M_SLOTS };

static const mio_flag mio_flags[] = {
    {'n', "batchsize", M_N},     {'c', "in_channels", M_C},     {'H', "in_h", M_H},
    {'W', "in_w", M_W},          {'k', "out_channels", M_K},    {'y', "fil_h", M_Y},
    {'x', "fil_w", M_X},         {'p', "pad_h", M_P},           {'q', "pad_w", M_Q},
    {'u', "conv_stride_h", M_U}, {'v', "conv_stride_w", M_V},   {'l', "dilation_h", M_L},
    {'j', "dilation_w", M_J},    {'g', "group_count", M_G},     {'F', "forw", M_F},
    {'b', "bias", M_B},          {'t', "time", -1},             {'V', "verify", -1},
    {'i', "iter", -1},           {'s', "search", -1},           {'w', "wall", -1},
    {'S', "solution", -1},
};

static const mio_flag *mio_lookup(const char *arg)
{
    for (size_t i = 0; i < sizeof mio_flags / sizeof mio_flags[0]; i++)
        if ((arg[1] == mio_flags[i].short_name && arg[2] == '\0') ||
            (arg[1] == '-' && strcmp(arg + 2, mio_flags[i].long_name) == 0))
            return &mio_flags[i];
    return NULL;
}

/* Parses one MIOpenDriver line into `it`; returns 0, or -1 with `err` naming the token. */
static int parse_miopen(char *line, tune_item *it, char *err, size_t errsize)
{
    /* The driver's own defaults, so a line means what it meant to MIOpenDriver. */
    int64_t v[M_SLOTS] = {100, 3, 32, 32, 32, 3, 3, 0, 0, 1, 1, 1, 1, 1, 1, 0};
    char *save = NULL, *tok = strtok_r(line, " \t", &save);
    while (tok && strcmp(tok, "conv") != 0 && strcmp(tok, "convfp16") != 0 &&
           strcmp(tok, "convbfp16") != 0)
        tok = strtok_r(NULL, " \t", &save);
    if (!tok) {
        snprintf(err, errsize, "no 'conv', 'convfp16' or 'convbfp16' command");
        return -1;
    }
    convfind_dtype dtype = strcmp(tok, "conv") == 0        ? CONVFIND_DTYPE_F32
                           : strcmp(tok, "convfp16") == 0 ? CONVFIND_DTYPE_F16
                                                           : CONVFIND_DTYPE_BF16;
    bool transpose = false;
    while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
        char *value = strtok_r(NULL, " \t", &save);
        if (tok[0] != '-' || !value) {
            snprintf(err, errsize, "'%.40s' is not a flag followed by a value", tok);
            return -1;
        }
        if (strcmp(tok, "-m") == 0 || strcmp(tok, "--mode") == 0) {
            if (strcmp(value, "conv") != 0 && strcmp(value, "trans") != 0) {
                snprintf(err, errsize, "-m '%.40s' is neither conv nor trans", value);
                return -1;
            }
            transpose = strcmp(value, "trans") == 0;
            continue;
        }
        const mio_flag *f = mio_lookup(tok);
        if (!f) {
            snprintf(err, errsize, "unsupported MIOpenDriver flag '%.40s'", tok);
            return -1;
        }
        int64_t x;
        if (!cli_int64_from_span(value, strlen(value), &x)) {
            snprintf(err, errsize, "%s '%.40s' is not an integer", tok, value);
            return -1;
        }
        if (f->slot >= 0)
            v[f->slot] = x;
    }
    if (v[M_F] != 0 && v[M_F] != 1) {
        snprintf(err, errsize, "-F %lld: only the forward direction (-F 1 or 0) is tuned",
                 (long long)v[M_F]);
        return -1;
    }
    convfind_conv_desc *d = &it->desc;
    convfind_conv_desc_init(d);
    d->op = transpose ? CONVFIND_OP_CONV_TRANSPOSE : CONVFIND_OP_CONV;
    d->dtype = dtype;
    d->x_rank = d->w_rank = 4;
    int64_t g = v[M_G] > 0 ? v[M_G] : 1; /* 0 is the library's to reject, not ours to divide */
    const int64_t x[4] = {v[M_N], v[M_C], v[M_H], v[M_W]};
    const int64_t w[4] = {transpose ? v[M_C] : v[M_K], transpose ? v[M_K] / g : v[M_C] / g,
                          v[M_Y], v[M_X]};
    memcpy(d->x_dims, x, sizeof x);
    memcpy(d->w_dims, w, sizeof w);
    d->group = v[M_G];
    d->has_bias = v[M_B] != 0;
    d->pads = (convfind_ints){4, {v[M_P], v[M_Q], v[M_P], v[M_Q]}};
    d->strides = (convfind_ints){2, {v[M_U], v[M_V]}};
    d->dilations = (convfind_ints){2, {v[M_L], v[M_J]}};
    snprintf(it->name, sizeof it->name, "%s_n%lld_c%lld_%lldx%lld_k%lld_%lldx%lld_g%lld",
             transpose ? "trans" : "conv", (long long)v[M_N], (long long)v[M_C],
             (long long)v[M_H], (long long)v[M_W], (long long)v[M_K], (long long)v[M_Y],
             (long long)v[M_X], (long long)v[M_G]);
    return 0;
}

static int read_miopen(const cli_command *cmd, const char *path, FILE *f, item_list *items)
{
    char line[2048];
    long lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        char *s = line;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '\0' || *s == '#')
            continue;
        tune_item *it = push(items);
        char err[160];
        if (!it)
            return cli_failure(cmd, "%s: out of memory", path);
        if (parse_miopen(s, it, err, sizeof err) != 0)
            return cli_failure(cmd, "%s:%ld: %s", path, lineno, err);
    }
    return CLI_EXIT_OK;
}

/* Reads one problem file, deciding its format by its first line. */
static int read_file(const cli_command *cmd, const char *path, item_list *items)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return cli_failure(cmd, "%s: cannot open: %s", path, strerror(errno));
    char first[64] = "";
    if (!fgets(first, sizeof first, f))
        first[0] = '\0';
    bool csv = strncmp(first, "name,", 5) == 0;
    int rc = CLI_EXIT_OK;
    if (!csv) {
        rewind(f);
        rc = read_miopen(cmd, path, f, items);
    }
    fclose(f);
    if (!csv)
        return rc;
    cli_layer *layers = NULL;
    size_t n = 0;
    char err[256];
    if (cli_layers_read(path, &layers, &n, err, sizeof err) != 0)
        return cli_failure(cmd, "%s: %s", path, err);
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        tune_item *it = push(items);
        if (!it) {
            rc = cli_failure(cmd, "%s: out of memory", path);
            break;
        }
        snprintf(it->name, sizeof it->name, "%s", layers[i].name);
        cli_layer_desc(&layers[i], &it->desc);
    }
    free(layers);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(bool tty, size_t done, size_t total, double elapsed,
                     const cli_decision *row)
{
    if (!tty) {
        if (row->status == CONVFIND_OK)
            printf("[%zu/%zu] %s: %s (%s) %.3f s\n", done, total, row->name, row->algo,
                   cli_source_name(row->source), row->seconds);
        else
            printf("[%zu/%zu] %s: %s: %s\n", done, total, row->name,
                   convfind_status_name(row->status), row->error);
        fflush(stdout);
        return;
    }
    enum { WIDTH = 30 };
    int filled = (int)(WIDTH * done / total);
    double eta = done ? elapsed / (double)done * (double)(total - done) : 0;
    printf("\r[%.*s%.*s] %zu/%zu  ETA %5.1f s  %-40.40s", filled,
           "##############################", WIDTH - filled, "..............................",
           done, total, eta, row->name);
    fflush(stdout);
}

/* Index of the first FILE: options come first, then the files. */
static int first_positional(int argc, char **argv)
{
    int i = 1;
    while (i < argc && argv[i][0] == '-' && argv[i][1] != '\0') {
        if (strcmp(argv[i], "--") == 0)
            return i + 1;
        bool takes_value = false;
        for (int k = 0; k < TUNE_FLAG_COUNT; k++)
            if (strncmp(argv[i], "--", 2) == 0 && strcmp(argv[i] + 2, tune_flags[k].name) == 0)
                takes_value = tune_flags[k].metavar != NULL;
        i += takes_value ? 2 : 1;
    }
    return i < argc ? i : argc;
}

static int tune_main(const cli_command *cmd, int argc, char **argv)
{
    tune_options o = {.policy = CONVFIND_FIND_HYBRID, .env_policy = CONVFIND_DB_ENV_RETUNE};
    const cli_flag_group groups[] = {{tune_flags, TUNE_FLAG_COUNT, &o}};
    int files = first_positional(argc, argv);
    int parsed = cli_parse(cmd, files - (files > 1 && strcmp(argv[files - 1], "--") == 0),
                           argv, groups, 1);
    if (parsed == CLI_HELP_SHOWN)
        return CLI_EXIT_OK;
    if (parsed != CLI_PARSED)
        return CLI_EXIT_USAGE;
    if (files >= argc)
        return cli_usage_error(cmd, "no problem FILE given (see convfind tune --help)");
    if (o.budget_ms < 0)
        return cli_usage_error(cmd, "--budget-ms %d must be >= 0", o.budget_ms);

    double t0 = now_s();
    item_list items = {0};
    int rc = CLI_EXIT_OK;
    for (int i = files; i < argc && rc == CLI_EXIT_OK; i++)
        rc = read_file(cmd, argv[i], &items);
    convfind_context *ctx = NULL;
    cli_decision *rows = rc == CLI_EXIT_OK ? calloc(items.n ? items.n : 1, sizeof *rows) : NULL;
    if (rc == CLI_EXIT_OK && !rows)
        rc = cli_failure(cmd, "out of memory for %zu problems", items.n);
    if (rc == CLI_EXIT_OK) {
        convfind_context_options opt;
        convfind_context_options_init(&opt);
        opt.num_threads = o.threads;
        opt.find_policy = (convfind_find_policy)o.policy;
        opt.db_path = o.db;
        opt.system_db_path = o.system_db;
        opt.db_env_policy = (convfind_db_env_policy)o.env_policy;
        opt.find_time_budget_s = o.budget_ms / 1000.0;
        convfind_status st = convfind_context_create(&opt, &ctx);
        if (st != CONVFIND_OK)
            rc = cli_library_error(st);
    }
    if (rc != CLI_EXIT_OK) {
        free(rows);
        free(items.v);
        return rc;
    }

    printf("tuning %zu problems into %s\n", items.n, cf_db_location(ctx->db));
    bool tty = isatty(STDOUT_FILENO) != 0;
    int db_hits = 0, failures = 0;
    double start = now_s();
    for (size_t i = 0; i < items.n; i++) {
        snprintf(rows[i].name, sizeof rows[i].name, "%s", items.v[i].name);
        cli_decide(ctx, &items.v[i].desc, &rows[i], NULL);
        db_hits += rows[i].status == CONVFIND_OK && rows[i].source == CONVFIND_SOURCE_STORED;
        failures += rows[i].status != CONVFIND_OK;
        progress(tty, i + 1, items.n, now_s() - start, &rows[i]);
    }
    if (tty)
        printf("\n");
    cli_decision_table(rows, items.n);
    convfind_context_stats stats;
    convfind_context_stats_get(ctx, &stats);
    printf("tuned=%zu finds=%llu db_hits=%d seconds=%.2f\n", items.n,
           (unsigned long long)stats.finds, db_hits, now_s() - t0);
    convfind_context_destroy(ctx);
    free(rows);
    free(items.v);
    return failures ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

const cli_command cli_cmd_tune = {
    "tune",
    "measure and store the decisions of every problem in CSV or MIOpenDriver files",
    "[options] FILE...",
    tune_main,
};
