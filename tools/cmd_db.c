/*
 * cmd_db.c - `convfind db SUBCOMMAND`: look into and maintain the find database
 * (docs/db.md).
 *
 *   path          the user database file (and whether it exists)
 *   list          one line per record: key, algorithm, median, environment, host, time
 *   show KEY      every record of KEY with all its candidates' statistics
 *   stats         record, environment and lease counts, file size
 *   verify        SQLite's integrity check and a parse of every record
 *   export FILE   all records as JSON Lines ("-": stdout)
 *   import FILE   JSON Lines records, all or nothing ("-": stdin)
 *   prune         drop records of other environments, unreadable rows, dead leases
 *   vacuum        rebuild the file to its minimal size
 *
 * The first five only read: the database is opened as CF_DB_INSPECT, which creates no
 * directory or file, moves nothing and leaves no -wal or -shm behind, so any user may
 * inspect any database.  The last three must change the file: CF_DB_MAINTAIN makes
 * every problem with it an error instead of a fallback.  The location order is the
 * context's, so `convfind db path` answers "where do my decisions go?" truthfully.
 *
 * This file is the tool's only user of db/db.h (besides ctx_private.c): the database
 * has no public API yet.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/registry.h"
#include "cli_common.h"
#include "db/db.h"
#include "json_out.h"
#include "outfile.h"

typedef struct subcommand {
    const char *name;
    bool takes_arg;
    cf_db_mode mode;
    int (*run)(const cli_command *cmd, const cli_args *a, cf_db *db, const char *arg);
} subcommand;

static void format_time(int64_t t, char *buf, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, size, "%lld", (long long)t);
}

static double chosen_median(const cf_decision *d)
{
    const cf_candidate_stats *c = cf_decision_candidate(d, d->algo);
    return c ? c->median_ms : 0;
}

static const char *const cand_status[] = {"ok", "failed", "not_applicable", "abandoned"};

typedef struct walk {
    const cli_args *a;
    cf_db_env env; /* the environment of this process: "current" or "foreign" */
    size_t n;
} walk;

/* The fields list and show have in common, as JSON members. */
static void json_record_head(const cf_db_record *r, const walk *w)
{
    printf("{\"key\": ");
    cli_json_string(stdout, r->key);
    printf(", \"algorithm\": ");
    cli_json_string(stdout, r->decision.algo);
    printf(", \"median_ms\": ");
    cli_json_number(stdout, chosen_median(&r->decision));
    printf(", \"environment\": {\"library\": ");
    cli_json_string(stdout, r->env.library);
    printf(", \"backends\": ");
    cli_json_string(stdout, r->env.backends);
    printf(", \"device\": ");
    cli_json_string(stdout, r->env.device);
    printf(", \"current\": %s}, \"host\": ", cf_db_env_equal(&r->env, &w->env) ? "true" : "false");
    cli_json_string(stdout, r->host);
    printf(", \"time\": %lld", (long long)r->time);
}

static int list_one(const cf_db_record *r, void *arg)
{
    walk *w = arg;
    if (w->a->json) {
        printf("%s", w->n ? ", " : "");
        json_record_head(r, w);
        printf("}");
    } else {
        char when[32];
        format_time(r->time, when, sizeof when);
        printf("%s\t%s\t%.4f ms\t%s\t%s\t%s\n", r->key, r->decision.algo,
               chosen_median(&r->decision), cf_db_env_equal(&r->env, &w->env) ? "current" : "foreign",
               r->host, when);
    }
    w->n++;
    return 0;
}

static int show_one(const cf_db_record *r, void *arg)
{
    walk *w = arg;
    const cf_decision *d = &r->decision;
    if (w->a->json) {
        printf("%s", w->n ? ", " : "");
        json_record_head(r, w);
        printf(", \"candidates\": [");
        for (int i = 0; i < d->n_candidates; i++) {
            const cf_candidate_stats *c = &d->candidates[i];
            printf("%s{\"algo\": ", i ? ", " : "");
            cli_json_string(stdout, c->algo);
            printf(", \"status\": \"%s\", \"median_ms\": ",
                   cand_status[(unsigned)c->status < 4 ? c->status : 1]);
            cli_json_number(stdout, c->median_ms);
            printf(", \"min_ms\": ");
            cli_json_number(stdout, c->min_ms);
            printf(", \"spread\": ");
            cli_json_number(stdout, c->spread);
            printf(", \"repeats\": %d, \"workspace_bytes\": %zu, \"validated\": %s}", c->repeats,
                   c->workspace_bytes, c->validated ? "true" : "false");
        }
        printf("]}");
        w->n++;
        return 0;
    }
    char when[32];
    format_time(r->time, when, sizeof when);
    printf("%skey:       %s\nchosen:    %s\nenv:       library %s, backends %s, device %s (%s)\n"
           "measured:  on %s at %s\n",
           w->n ? "\n" : "", r->key, d->algo, r->env.library, r->env.backends, r->env.device,
           cf_db_env_equal(&r->env, &w->env) ? "current" : "foreign", r->host, when);
    printf("  %-28s %-15s %10s %10s %8s %7s %12s %9s\n", "candidate", "status", "median ms",
           "min ms", "spread", "repeats", "workspace", "validated");
    for (int i = 0; i < d->n_candidates; i++) {
        const cf_candidate_stats *c = &d->candidates[i];
        printf("  %-28s %-15s %10.4f %10.4f %8.3f %7d %12zu %9s\n", c->algo,
               cand_status[(unsigned)c->status < 4 ? c->status : 1], c->median_ms, c->min_ms,
               c->spread, c->repeats, c->workspace_bytes, c->validated ? "yes" : "no");
    }
    w->n++;
    return 0;
}

/* A database configuration for this host's environment, as a context records it. */
static void host_config(cf_db_config *c)
{
    cf_fingerprint host;
    cf_host_fingerprint(1, 0, &host);
    cf_db_config_init(c, &host);
}

static walk walk_of(const cli_args *a)
{
    walk w;
    memset(&w, 0, sizeof w);
    w.a = a;
    cf_db_config c;
    host_config(&c);
    w.env = c.env;
    return w;
}

static int run_path(const cli_command *cmd, const cli_args *a, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    if (a->json) {
        printf("{\"path\": ");
        cli_json_string(stdout, cf_db_location(db));
        printf(", \"exists\": %s}\n", cf_db_exists(db) ? "true" : "false");
    } else {
        printf("%s\n", cf_db_location(db));
    }
    return CLI_EXIT_OK;
}

static int run_walk(const cli_args *a, cf_db *db, const char *key, cf_db_record_fn fn,
                    walk *w)
{
    if (a->json) {
        printf("{\"database\": ");
        cli_json_string(stdout, cf_db_location(db));
        printf(", \"records\": [");
    }
    convfind_status st = cf_db_foreach(db, key, fn, w);
    if (a->json)
        printf("]}\n");
    return st == CONVFIND_OK ? CLI_EXIT_OK : cli_library_error(st);
}

static int run_list(const cli_command *cmd, const cli_args *a, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    walk w = walk_of(a);
    return run_walk(a, db, NULL, list_one, &w);
}

static int run_show(const cli_command *cmd, const cli_args *a, cf_db *db, const char *key)
{
    walk w = walk_of(a);
    int rc = run_walk(a, db, key, show_one, &w);
    if (rc == CLI_EXIT_OK && w.n == 0)
        return cli_failure(cmd, "no record for key '%s' in %s", key, cf_db_location(db));
    return rc;
}

static int run_stats(const cli_command *cmd, const cli_args *a, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    cf_db_stats s;
    convfind_status st = cf_db_get_stats(db, &s);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    cf_db_config c;
    host_config(&c);
    char desc[420];
    cf_db_env_describe(&c.env, desc, sizeof desc);
    if (a->json) {
        printf("{\"database\": ");
        cli_json_string(stdout, cf_db_location(db));
        printf(", \"exists\": %s, \"environment\": ", cf_db_exists(db) ? "true" : "false");
        cli_json_string(stdout, desc);
        printf(", \"records\": %zu, \"current\": %zu, \"foreign\": %zu, \"unreadable\": %zu, "
               "\"leases\": %zu, \"system_records\": %zu, \"file_bytes\": %lld}\n",
               s.records, s.current, s.foreign, s.unreadable, s.leases, s.system_records,
               (long long)s.file_bytes);
        return CLI_EXIT_OK;
    }
    const char *where = cf_db_location(db);
    printf("database:        %s%s\n", where,
           cf_db_exists(db) || strcmp(where, CF_DB_MEMORY) == 0 ? "" : " (does not exist yet)");
    printf("environment:     %s\n", desc);
    printf("records:         %zu (%zu this environment, %zu other, %zu unreadable)\n",
           s.records, s.current, s.foreign, s.unreadable);
    printf("leases:          %zu\n", s.leases);
    printf("system records:  %zu\n", s.system_records);
    if (s.file_bytes >= 0)
        printf("file bytes:      %lld\n", (long long)s.file_bytes);
    return CLI_EXIT_OK;
}

/* "<verb> <n> records in <db>" (text) or {"<verb>": n, "database": ...} (JSON). */
static void report_count(const cli_args *a, cf_db *db, const char *verb, size_t n, FILE *text)
{
    if (a->json) {
        printf("{\"database\": ");
        cli_json_string(stdout, cf_db_location(db));
        printf(", \"%s\": %zu}\n", verb, n);
    } else {
        fprintf(text, "%s %zu records in %s\n", verb, n, cf_db_location(db));
    }
}

/* "<text> <db>" (text) or {"database": ..., "<member>": true} (JSON). */
static void report_done(const cli_args *a, cf_db *db, const char *text, const char *member)
{
    if (a->json) {
        printf("{\"database\": ");
        cli_json_string(stdout, cf_db_location(db));
        printf(", \"%s\": true}\n", member);
    } else {
        printf("%s %s\n", text, cf_db_location(db));
    }
}

static int run_verify(const cli_command *cmd, const cli_args *a, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    size_t bad = 0;
    convfind_status st = cf_db_verify(db, &bad);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    report_done(a, db, "ok:", "ok");
    return CLI_EXIT_OK;
}

static int run_export(const cli_command *cmd, const cli_args *a, cf_db *db, const char *path)
{
    cli_outfile out;
    char err[300];
    if (cli_outfile_open(&out, path, err, sizeof err) != 0)
        return cli_failure(cmd, "%s: %s", path, err);
    size_t n = 0;
    convfind_status st = cf_db_export(db, out.f, &n);
    if (st != CONVFIND_OK) {
        cli_outfile_abort(&out);
        return cli_library_error(st);
    }
    bool to_stdout = out.f == stdout;
    if (cli_outfile_commit(&out, err, sizeof err) != 0)
        return cli_failure(cmd, "%s: %s", path, err);
    /* With the records on stdout, the count goes to stderr, as text. */
    if (to_stdout)
        fprintf(stderr, "exported %zu records from %s\n", n, cf_db_location(db));
    else
        report_count(a, db, "exported", n, stdout);
    return CLI_EXIT_OK;
}

static int run_import(const cli_command *cmd, const cli_args *a, cf_db *db, const char *path)
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
    report_count(a, db, "imported", n, stdout);
    return CLI_EXIT_OK;
}

static int run_prune(const cli_command *cmd, const cli_args *a, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    size_t n = 0;
    convfind_status st = cf_db_prune(db, &n);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    report_count(a, db, "pruned", n, stdout);
    return CLI_EXIT_OK;
}

static int run_vacuum(const cli_command *cmd, const cli_args *a, cf_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    convfind_status st = cf_db_vacuum(db);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    report_done(a, db, "vacuumed", "vacuumed");
    return CLI_EXIT_OK;
}

static const subcommand subcommands[] = {
    {"path", false, CF_DB_INSPECT, run_path},       {"list", false, CF_DB_INSPECT, run_list},
    {"show", true, CF_DB_INSPECT, run_show},        {"stats", false, CF_DB_INSPECT, run_stats},
    {"verify", false, CF_DB_INSPECT, run_verify},   {"export", true, CF_DB_INSPECT, run_export},
    {"import", true, CF_DB_MAINTAIN, run_import},   {"prune", false, CF_DB_MAINTAIN, run_prune},
    {"vacuum", false, CF_DB_MAINTAIN, run_vacuum},
};
#define SUBCOMMAND_COUNT (sizeof subcommands / sizeof subcommands[0])

static int db_main(const cli_command *cmd, cli_args *a)
{
    if (a->npos == 0)
        return cli_usage_error(cmd, "no subcommand (see convfind help db)");
    const subcommand *sub = NULL;
    for (size_t i = 0; i < SUBCOMMAND_COUNT; i++)
        if (strcmp(a->pos[0], subcommands[i].name) == 0)
            sub = &subcommands[i];
    if (!sub)
        return cli_usage_error(cmd, "unknown subcommand '%s' (see convfind help db)", a->pos[0]);
    if (sub->takes_arg && (a->npos < 2 || a->pos[1][0] == '\0'))
        return cli_usage_error(cmd, "'%s' needs an argument (see convfind help db)", sub->name);
    if (a->npos > 1 + sub->takes_arg)
        return cli_usage_error(cmd, "unexpected argument '%s' (see convfind help db)",
                               a->pos[1 + sub->takes_arg]);
    cf_db_config c;
    host_config(&c);
    c.path = a->db;
    c.system_path = a->system_db;
    c.mode = sub->mode;
    cf_db *db = NULL;
    convfind_status st = cf_db_open(&c, &db);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    int rc = sub->run(cmd, a, db, sub->takes_arg ? a->pos[1] : NULL);
    cf_db_close(db);
    return rc;
}

static const char *const subcommand_names[] = {"path",   "list",   "show",  "stats", "verify",
                                               "export", "import", "prune", "vacuum", NULL};
static const int db_flags[] = {CLI_DB, CLI_SYSTEM_DB, -1};
static const int output_flags[] = {CLI_JSON, -1};
static const cli_section sections[] = {
    {"the database", db_flags},
    {"output", output_flags},
};

const cli_command cli_cmd_db = {
    .name = "db",
    .summary = "inspect and maintain the find database",
    .synopsis = "path|list|stats|verify|prune|vacuum [options]\n"
                "show KEY | export FILE | import FILE [options]",
    .description =
        "Looks into and maintains the find database where decisions are stored "
        "(docs/db.md), at the same place a context uses: --db, else $CONVFIND_DB_PATH, "
        "else $XDG_CACHE_HOME/convfind/finddb.sqlite, else ~/.cache/convfind/finddb.sqlite.\n"
        "\n"
        "Subcommands that only read, and change nothing (no directory or file is created, "
        "nothing is moved, no -wal or -shm file is left; a missing database reads as empty):\n"
        "  path          the database file in use\n"
        "  list          one line per record: key, algorithm, median, current/foreign, host, time\n"
        "  show KEY      every record of KEY with every candidate's statistics\n"
        "  stats         record, environment and lease counts, the file's size\n"
        "  verify        SQLite's integrity check and a parse of every record; damage is an\n"
        "                error (exit status 1) and the file stays exactly as it was\n"
        "  export FILE   every record as JSON Lines (\"-\": stdout), written beside FILE and\n"
        "                renamed into place\n"
        "\n"
        "Subcommands that change the file; any problem with it is an error:\n"
        "  import FILE   JSON Lines records (\"-\": stdin) in one transaction, all or nothing;\n"
        "                a line over 1 MiB or a read error fails the whole import\n"
        "  prune         delete records of other environments, unreadable rows, dead leases\n"
        "  vacuum        rebuild the file to its minimal size\n"
        "\n"
        "With --json every subcommand prints one JSON object: list and show "
        "{\"database\", \"records\": [{\"key\", \"algorithm\", \"median_ms\", \"environment\": "
        "{\"library\", \"backends\", \"device\", \"current\"}, \"host\", \"time\"}]} (show adds "
        "\"candidates\"), stats {\"database\", \"exists\", \"environment\", \"records\", "
        "\"current\", \"foreign\", \"unreadable\", \"leases\", \"system_records\", "
        "\"file_bytes\"}, path {\"path\", \"exists\"}, the others their count. Options may "
        "come before or after the subcommand.",
    .sections = sections,
    .nsections = 2,
    .examples = "convfind db list --db team.sqlite\n"
                "convfind db --json stats\n"
                "convfind db export decisions.jsonl && convfind db import decisions.jsonl "
                "--db /opt/app/system.sqlite",
    .words = subcommand_names,
    .max_pos = 2,
    .run = db_main,
};
