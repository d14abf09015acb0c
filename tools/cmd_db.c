/*
 * cmd_db.c - `convfind db SUBCOMMAND`: look into and maintain the find database
 * (docs/db.md).
 *
 *   path          the user database file in use (and the system tier, if any)
 *   list          one line per record: key, algorithm, median, environment, host, time
 *   show KEY      every record of KEY with all its candidates' statistics
 *   stats         record, environment and lease counts, file size
 *   export FILE   all records as JSON Lines ("-": stdout)
 *   import FILE   JSON Lines records, all or nothing ("-": stdin)
 *   prune         drop records of other environments, unreadable rows, dead leases
 *   verify        SQLite integrity check and a parse of every record
 *   vacuum        rebuild the file to its minimal size
 *
 * The database opens exactly as a context would open it (same location order, same
 * quarantine and fallback rules), so `convfind db path` answers "where do my decisions
 * go?" truthfully.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "algo/registry.h"
#include "db/db.h"

typedef struct db_options {
    const char *db, *system_db;
} db_options;

#define DB_FIELD(f) offsetof(db_options, f)

static const cli_flag db_flags[] = {
    {"db", 0, "PATH", "find database (default: $CONVFIND_DB_PATH, then ~/.cache/convfind)",
     cli_apply_string, DB_FIELD(db), NULL},
    {"system-db", 0, "PATH", "read-only system database (default: $CONVFIND_SYSTEM_DB)",
     cli_apply_string, DB_FIELD(system_db), NULL},
};

typedef struct subcommand {
    const char *name;
    bool takes_arg;
    int (*run)(const cli_command *cmd, cf_db *db, const char *arg);
} subcommand;

static void format_time(int64_t t, char *buf, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, size, "%lld", (long long)t);
}

typedef struct list_ctx {
    const cf_db_env *env;
    size_t n;
} list_ctx;

static double chosen_median(const cf_decision *d)
{
    const cf_candidate_stats *c = cf_decision_candidate(d, d->algo);
    return c ? c->median_ms : 0;
}

static int list_one(const cf_db_record *r, void *arg)
{
    list_ctx *l = arg;
    char when[32];
    format_time(r->time, when, sizeof when);
    printf("%s\t%s\t%.4f ms\t%s\t%s\t%s\n", r->key, r->decision.algo, chosen_median(&r->decision),
           cf_db_env_equal(&r->env, l->env) ? "current" : "foreign", r->host, when);
    l->n++;
    return 0;
}

static const char *const cand_status[] = {"ok", "failed", "not_applicable", "abandoned"};

static int show_one(const cf_db_record *r, void *arg)
{
    list_ctx *l = arg;
    char when[32];
    format_time(r->time, when, sizeof when);
    printf("key:       %s\nchosen:    %s\nenv:       library %s, backends %s, device %s (%s)\n"
           "measured:  on %s at %s\n",
           r->key, r->decision.algo, r->env.library, r->env.backends, r->env.device,
           cf_db_env_equal(&r->env, l->env) ? "current" : "foreign", r->host, when);
    printf("  %-28s %-15s %10s %10s %8s %7s %12s %9s\n", "candidate", "status", "median ms",
           "min ms", "spread", "repeats", "workspace", "validated");
    for (int i = 0; i < r->decision.n_candidates; i++) {
        const cf_candidate_stats *c = &r->decision.candidates[i];
        printf("  %-28s %-15s %10.4f %10.4f %8.3f %7d %12zu %9s\n", c->algo,
               cand_status[(unsigned)c->status < 4 ? c->status : 1], c->median_ms, c->min_ms,
               c->spread, c->repeats, c->workspace_bytes, c->validated ? "yes" : "no");
    }
    l->n++;
    return 0;
}

static int run_path(const cli_command *cmd, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    printf("%s\n", cf_db_location(db));
    return CLI_EXIT_OK;
}

/* A database configuration for this host's environment. */
static void host_config(cf_db_config *c)
{
    cf_fingerprint host;
    cf_host_fingerprint(1, 0, &host);
    cf_db_config_init(c, &host);
}

static int run_list(const cli_command *cmd, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    cf_db_config c;
    host_config(&c);
    list_ctx l = {&c.env, 0};
    convfind_status st = cf_db_foreach(db, NULL, list_one, &l);
    return st == CONVFIND_OK ? CLI_EXIT_OK : cli_library_error(st);
}

static int run_show(const cli_command *cmd, cf_db *db, const char *key)
{
    cf_db_config c;
    host_config(&c);
    list_ctx l = {&c.env, 0};
    convfind_status st = cf_db_foreach(db, key, show_one, &l);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    if (l.n == 0)
        return cli_failure(cmd, "no record for key '%s' in %s", key, cf_db_location(db));
    return CLI_EXIT_OK;
}

static int run_stats(const cli_command *cmd, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    cf_db_stats s;
    convfind_status st = cf_db_get_stats(db, &s);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    cf_db_config c;
    host_config(&c);
    char env[420];
    cf_db_env_describe(&c.env, env, sizeof env);
    printf("database:        %s\n", cf_db_location(db));
    printf("environment:     %s\n", env);
    printf("records:         %zu (%zu this environment, %zu other, %zu unreadable)\n",
           s.records, s.current, s.foreign, s.unreadable);
    printf("leases:          %zu\n", s.leases);
    printf("system records:  %zu\n", s.system_records);
    if (s.file_bytes >= 0)
        printf("file bytes:      %lld\n", (long long)s.file_bytes);
    return CLI_EXIT_OK;
}

static int run_export(const cli_command *cmd, cf_db *db, const char *path)
{
    bool out = strcmp(path, "-") == 0;
    FILE *f = out ? stdout : fopen(path, "w");
    if (!f)
        return cli_failure(cmd, "cannot write %s", path);
    size_t n = 0;
    convfind_status st = cf_db_export(db, f, &n);
    if (!out && fclose(f) != 0 && st == CONVFIND_OK)
        return cli_failure(cmd, "cannot write %s", path);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    fprintf(out ? stderr : stdout, "exported %zu records to %s\n", n, path);
    return CLI_EXIT_OK;
}

static int run_import(const cli_command *cmd, cf_db *db, const char *path)
{
    bool in = strcmp(path, "-") == 0;
    FILE *f = in ? stdin : fopen(path, "r");
    if (!f)
        return cli_failure(cmd, "cannot read %s", path);
    size_t n = 0;
    convfind_status st = cf_db_import(db, f, in ? "stdin" : path, &n);
    if (!in)
        fclose(f);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    printf("imported %zu records into %s\n", n, cf_db_location(db));
    return CLI_EXIT_OK;
}

static int run_prune(const cli_command *cmd, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    size_t n = 0;
    convfind_status st = cf_db_prune(db, &n);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    printf("pruned %zu records\n", n);
    return CLI_EXIT_OK;
}

static int run_verify(const cli_command *cmd, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    convfind_status st = cf_db_verify(db, NULL);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    printf("ok: %s\n", cf_db_location(db));
    return CLI_EXIT_OK;
}

static int run_vacuum(const cli_command *cmd, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    convfind_status st = cf_db_vacuum(db);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    printf("vacuumed %s\n", cf_db_location(db));
    return CLI_EXIT_OK;
}

static const subcommand subcommands[] = {
    {"path", false, run_path},     {"list", false, run_list},     {"show", true, run_show},
    {"stats", false, run_stats},   {"export", true, run_export},  {"import", true, run_import},
    {"prune", false, run_prune},   {"verify", false, run_verify}, {"vacuum", false, run_vacuum},
};
#define SUBCOMMAND_COUNT (sizeof subcommands / sizeof subcommands[0])

static int db_main(const cli_command *cmd, int argc, char **argv)
{
    db_options o = {0};
    const cli_flag_group groups[] = {{db_flags, (int)(sizeof db_flags / sizeof db_flags[0]), &o}};
    if (argc < 2 || argv[1][0] == '-') {
        int parsed = cli_parse(cmd, argc, argv, groups, 1);
        if (parsed == CLI_HELP_SHOWN) {
            printf("\nsubcommands: path list show stats export import prune verify vacuum\n");
            return CLI_EXIT_OK;
        }
        return parsed == CLI_PARSED ? cli_usage_error(cmd, "no subcommand (see convfind db --help)")
                                    : CLI_EXIT_USAGE;
    }
    const subcommand *sub = NULL;
    for (size_t i = 0; i < SUBCOMMAND_COUNT; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            sub = &subcommands[i];
    if (!sub)
        return cli_usage_error(cmd, "unknown subcommand '%s' (see convfind db --help)", argv[1]);
    if (sub->takes_arg && (argc < 3 || argv[2][0] == '\0'))
        return cli_usage_error(cmd, "'%s' needs an argument (see convfind db --help)", sub->name);
    int used = sub->takes_arg ? 2 : 1; /* argv[used] becomes the parser's argv[0] */
    int parsed = cli_parse(cmd, argc - used, argv + used, groups, 1);
    if (parsed == CLI_HELP_SHOWN)
        return CLI_EXIT_OK;
    if (parsed != CLI_PARSED)
        return CLI_EXIT_USAGE;

    cf_db_config c;
    host_config(&c);
    c.path = o.db;
    c.system_path = o.system_db;
    cf_db *db = NULL;
    convfind_status st = cf_db_open(&c, &db);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    int rc = sub->run(cmd, db, sub->takes_arg ? argv[2] : NULL);
    cf_db_close(db);
    return rc;
}

const cli_command cli_cmd_db = {
    "db",
    "inspect and maintain the find database",
    "path|list|show KEY|stats|export FILE|import FILE|prune|verify|vacuum [options]",
    db_main,
};
