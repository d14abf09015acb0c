/*
 * cmd_db.c - `convfind db SUBCOMMAND`: look into and maintain the find database
 * (docs/db.md), through the public database handle (convfind_db_*).
 *
 *   path          the user database file (and whether it exists)
 *   list          one line per record: key, algorithm, median, environment, host, time,
 *                 confidence
 *   show KEY      every record of KEY: how it was measured (budget, spread, margin to the
 *                 runner-up, confidence) and all its candidates' statistics
 *   stats         record, environment and lease counts, file size
 *   verify        SQLite's integrity check and a check of every record
 *   export FILE   all records as JSON Lines ("-": stdout)
 *   import FILE   JSON Lines records, all or nothing ("-": stdin)
 *   prune         drop records of other environments or that this build cannot use,
 *                 dead leases
 *   vacuum        rebuild the file to its minimal size
 *
 * The first six only read: the database is opened READ_ONLY, which creates no directory
 * or file, moves nothing and leaves no -wal or -shm behind, so any user may inspect any
 * database.  The last three must change the file: READ_WRITE makes every problem with
 * it an error instead of a fallback.  The location order is the context's, so
 * `convfind db path` answers "where do my decisions go?" truthfully.  list and show
 * print the user tier's records.  With --fleet URL all but verify and vacuum act on the
 * fleet tier instead (convfind_db_options.fleet_db), which must answer.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "json_out.h"
#include "outfile.h"

typedef struct subcommand {
    const char *name;
    bool takes_arg;
    bool fleet; /* also on the fleet tier (--fleet) */
    convfind_db_mode mode;
    int (*run)(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *arg);
} subcommand;

static void format_time(int64_t t, char *buf, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, size, "%lld", (long long)t);
}

/* The decision's own candidate; NULL when the record does not list it. */
static const convfind_find_result *chosen(const convfind_db_record *r)
{
    for (int i = 0; i < r->n_candidates; i++)
        if (strcmp(r->candidates[i].algorithm, r->algorithm) == 0)
            return &r->candidates[i];
    return NULL;
}

static double chosen_median(const convfind_db_record *r)
{
    return chosen(r) ? chosen(r)->median_ms : 0;
}

static const char *const cand_status[] = {"ok", "failed", "not_applicable", "abandoned"};

typedef struct walk {
    const cli_args *a;
    size_t n;
} walk;

/* The reasons of a low-confidence record, in the order of their flags. */
static const struct {
    unsigned flag;
    const char *text;
} low_reasons[] = {{CONVFIND_CONFIDENCE_UNKNOWN_BUDGET, "budget unknown"},
                   {CONVFIND_CONFIDENCE_UNTIMED, "candidates untimed"},
                   {CONVFIND_CONFIDENCE_NOISE, "runner-up within the noise"},
                   {CONVFIND_CONFIDENCE_ONCE, "timed once"}};

/* How a decision was measured and how far it can be trusted, as a JSON member:
 * "measured": {"budget_ms" (null: unknown), "spread", "margin" and "runner_up" (null
 * without one), "untimed", "confidence": "confident" or "low", "reasons": [...]}. */
static void json_measured(const convfind_db_record *r)
{
    printf(", \"measured\": {\"budget_ms\": ");
    if (r->budget_s > 0)
        cli_json_number(stdout, 1000.0 * r->budget_s);
    else
        printf("null");
    printf(", \"spread\": ");
    cli_json_number(stdout, chosen(r) ? chosen(r)->spread : 0);
    printf(", \"margin\": ");
    if (r->runner_up)
        cli_json_number(stdout, r->margin);
    else
        printf("null");
    printf(", \"runner_up\": ");
    if (r->runner_up)
        cli_json_string(stdout, r->runner_up);
    else
        printf("null");
    printf(", \"untimed\": %d, \"confidence\": \"%s\", \"reasons\": [", r->untimed,
           r->low_confidence ? "low" : "confident");
    for (size_t i = 0, n = 0; i < sizeof low_reasons / sizeof low_reasons[0]; i++)
        if (r->low_confidence & low_reasons[i].flag)
            printf("%s\"%s\"", n++ ? ", " : "", low_reasons[i].text);
    printf("]}");
}

/* "budget 50 ms, spread 0.021, margin +12.3% to cpu.x; low: 3 candidates untimed" on
 * one line. */
static void text_measured(const convfind_db_record *r, char *buf, size_t size)
{
    size_t n = r->budget_s > 0 ? (size_t)snprintf(buf, size, "budget %g ms", 1000.0 * r->budget_s)
                               : (size_t)snprintf(buf, size, "budget unknown");
    if (n < size)
        n += (size_t)snprintf(buf + n, size - n, ", spread %.3f",
                              chosen(r) ? chosen(r)->spread : 0);
    if (n < size && r->runner_up)
        n += (size_t)snprintf(buf + n, size - n, ", margin %+.1f%% to %s", 100.0 * r->margin,
                              r->runner_up);
    if (n < size)
        n += (size_t)snprintf(buf + n, size - n, "; %s", r->low_confidence ? "low:" : "confident");
    const char *sep = " ";
    for (size_t i = 0; i < sizeof low_reasons / sizeof low_reasons[0] && n < size; i++) {
        if (!(r->low_confidence & low_reasons[i].flag))
            continue;
        if (low_reasons[i].flag == CONVFIND_CONFIDENCE_UNTIMED)
            n += (size_t)snprintf(buf + n, size - n, "%s%d candidate%s untimed", sep, r->untimed,
                                  r->untimed == 1 ? "" : "s");
        else
            n += (size_t)snprintf(buf + n, size - n, "%s%s", sep, low_reasons[i].text);
        sep = ", ";
    }
}

/* The fields list and show have in common, as JSON members. */
static void json_record_head(const convfind_db_record *r)
{
    printf("{\"key\": ");
    cli_json_string(stdout, r->key);
    printf(", \"algorithm\": ");
    cli_json_string(stdout, r->algorithm);
    printf(", \"median_ms\": ");
    cli_json_number(stdout, chosen_median(r));
    printf(", \"environment\": {\"library\": ");
    cli_json_string(stdout, r->library);
    printf(", \"backends\": ");
    cli_json_string(stdout, r->backends);
    printf(", \"device\": ");
    cli_json_string(stdout, r->device);
    printf(", \"current\": %s}, \"host\": ", r->current_environment ? "true" : "false");
    cli_json_string(stdout, r->host);
    printf(", \"time\": %lld", (long long)r->time);
    json_measured(r);
}

static int list_one(void *arg, const convfind_db_record *r)
{
    walk *w = arg;
    if (strcmp(r->tier, "system") == 0)
        return 0;
    if (w->a->json) {
        printf("%s", w->n ? ", " : "");
        json_record_head(r);
        printf("}");
    } else {
        char when[32];
        format_time(r->time, when, sizeof when);
        printf("%s\t%s\t%.4f ms\t%s\t%s\t%s\t%s\n", r->key, r->algorithm, chosen_median(r),
               r->current_environment ? "current" : "foreign", r->host, when,
               r->low_confidence ? "low-confidence" : "confident");
    }
    w->n++;
    return 0;
}

static int show_one(void *arg, const convfind_db_record *r)
{
    walk *w = arg;
    if (strcmp(r->tier, "system") == 0)
        return 0;
    if (w->a->json) {
        printf("%s", w->n ? ", " : "");
        json_record_head(r);
        printf(", \"candidates\": [");
        for (int i = 0; i < r->n_candidates; i++) {
            const convfind_find_result *c = &r->candidates[i];
            printf("%s{\"algo\": ", i ? ", " : "");
            cli_json_string(stdout, c->algorithm);
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
    char when[32], how[400];
    format_time(r->time, when, sizeof when);
    text_measured(r, how, sizeof how);
    printf("%skey:       %s\nchosen:    %s\nenv:       library %s, backends %s, device %s (%s)\n"
           "measured:  on %s at %s\nfind:      %s\n",
           w->n ? "\n" : "", r->key, r->algorithm, r->library, r->backends, r->device,
           r->current_environment ? "current" : "foreign", r->host, when, how);
    printf("  %-28s %-15s %10s %10s %8s %7s %12s %9s\n", "candidate", "status", "median ms",
           "min ms", "spread", "repeats", "workspace", "validated");
    for (int i = 0; i < r->n_candidates; i++) {
        const convfind_find_result *c = &r->candidates[i];
        printf("  %-28s %-15s %10.4f %10.4f %8.3f %7d %12zu %9s\n", c->algorithm,
               cand_status[(unsigned)c->status < 4 ? c->status : 1], c->median_ms, c->min_ms,
               c->spread, c->repeats, c->workspace_bytes, c->validated ? "yes" : "no");
    }
    w->n++;
    return 0;
}

/* The handle's description; a failure is the command's. */
static int info_of(convfind_db *db, convfind_db_info *info)
{
    *info = (convfind_db_info){.struct_size = sizeof *info};
    convfind_status st = convfind_db_get_info(db, info);
    return st == CONVFIND_OK ? CLI_EXIT_OK : cli_library_error(st);
}

static int run_path(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    convfind_db_info info;
    int rc = info_of(db, &info);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (a->json) {
        printf("{\"path\": ");
        cli_json_string(stdout, info.path);
        printf(", \"exists\": %s}\n", info.exists ? "true" : "false");
    } else {
        printf("%s\n", info.path);
    }
    return CLI_EXIT_OK;
}

static int run_walk(const cli_args *a, convfind_db *db, const char *key,
                    convfind_db_record_fn fn, walk *w, const char **where)
{
    convfind_db_info info;
    int rc = info_of(db, &info);
    if (rc != CLI_EXIT_OK)
        return rc;
    *where = info.path;
    if (a->json) {
        printf("{\"database\": ");
        cli_json_string(stdout, info.path);
        printf(", \"records\": [");
    }
    convfind_status st = convfind_db_foreach(db, key, fn, w);
    if (a->json)
        printf("]}\n");
    return st == CONVFIND_OK ? CLI_EXIT_OK : cli_library_error(st);
}

static int run_list(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    walk w = {.a = a};
    const char *where;
    return run_walk(a, db, NULL, list_one, &w, &where);
}

static int run_show(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *key)
{
    walk w = {.a = a};
    const char *where = "";
    int rc = run_walk(a, db, key, show_one, &w, &where);
    if (rc == CLI_EXIT_OK && w.n == 0)
        return cli_failure(cmd, "no record for key '%s' in %s", key, where);
    return rc;
}

static int run_stats(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    convfind_db_info s;
    int rc = info_of(db, &s);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (a->json) {
        printf("{\"database\": ");
        cli_json_string(stdout, s.path);
        printf(", \"exists\": %s, \"environment\": ", s.exists ? "true" : "false");
        cli_json_string(stdout, s.environment);
        printf(", \"records\": %zu, \"current\": %zu, \"foreign\": %zu, \"unreadable\": %zu, "
               "\"leases\": %zu, \"system_records\": %zu, \"file_bytes\": %lld, "
               "\"artifacts\": %zu, \"artifact_bytes\": %lld}\n",
               s.records, s.current, s.foreign, s.unreadable, s.leases, s.system_records,
               (long long)s.file_bytes, s.artifacts, (long long)s.artifact_bytes);
        return CLI_EXIT_OK;
    }
    printf("database:        %s%s\n", s.path,
           s.exists || strcmp(s.path, ":memory:") == 0 ? "" : " (does not exist yet)");
    printf("environment:     %s\n", s.environment);
    printf("records:         %zu (%zu this environment, %zu other, %zu unreadable)\n",
           s.records, s.current, s.foreign, s.unreadable);
    printf("leases:          %zu\n", s.leases);
    if (!a->fleet)
        printf("compiled forms:  %zu (%lld bytes)\n", s.artifacts, (long long)s.artifact_bytes);
    if (!a->fleet)
        printf("system records:  %zu\n", s.system_records);
    if (s.file_bytes >= 0)
        printf("file bytes:      %lld\n", (long long)s.file_bytes);
    return CLI_EXIT_OK;
}

/* "<verb> <n> records in <db>" (text) or {"<verb>": n, "database": ...} (JSON). */
static int report_count(const cli_args *a, convfind_db *db, const char *verb, size_t n,
                        FILE *text)
{
    convfind_db_info info;
    int rc = info_of(db, &info);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (a->json) {
        printf("{\"database\": ");
        cli_json_string(stdout, info.path);
        printf(", \"%s\": %zu}\n", verb, n);
    } else {
        fprintf(text, "%s %zu records in %s\n", verb, n, info.path);
    }
    return CLI_EXIT_OK;
}

/* "<text> <db>" (text) or {"database": ..., "<member>": true} (JSON). */
static int report_done(const cli_args *a, convfind_db *db, const char *text, const char *member)
{
    convfind_db_info info;
    int rc = info_of(db, &info);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (a->json) {
        printf("{\"database\": ");
        cli_json_string(stdout, info.path);
        printf(", \"%s\": true}\n", member);
    } else {
        printf("%s %s\n", text, info.path);
    }
    return CLI_EXIT_OK;
}

static int run_verify(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    size_t bad = 0;
    convfind_status st = convfind_db_verify(db, &bad);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    return report_done(a, db, "ok:", "ok");
}

static int write_file(void *f, const void *data, size_t size)
{
    return fwrite(data, 1, size, f) == size ? 0 : -1;
}

static long read_file(void *f, void *buf, size_t size)
{
    size_t n = fread(buf, 1, size, f);
    return ferror((FILE *)f) ? -1 : (long)n;
}

static int run_export(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *path)
{
    cli_outfile out;
    char err[300];
    if (cli_outfile_open(&out, path, err, sizeof err) != 0)
        return cli_failure(cmd, "%s: %s", path, err);
    size_t n = 0;
    convfind_status st = convfind_db_export(db, write_file, out.f, &n);
    if (st != CONVFIND_OK) {
        cli_outfile_abort(&out);
        return cli_library_error(st);
    }
    bool to_stdout = out.f == stdout;
    if (cli_outfile_commit(&out, err, sizeof err) != 0)
        return cli_failure(cmd, "%s: %s", path, err);
    if (!to_stdout)
        return report_count(a, db, "exported", n, stdout);
    /* With the records on stdout, the count goes to stderr, as text. */
    convfind_db_info info;
    int rc = info_of(db, &info);
    if (rc == CLI_EXIT_OK)
        fprintf(stderr, "exported %zu records from %s\n", n, info.path);
    return rc;
}

static int run_import(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *path)
{
    bool in = strcmp(path, "-") == 0;
    FILE *f = in ? stdin : fopen(path, "r");
    if (!f)
        return cli_failure(cmd, "cannot read %s", path);
    size_t n = 0;
    convfind_status st = convfind_db_import(db, read_file, f, in ? "stdin" : path, &n);
    if (!in)
        fclose(f);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    return report_count(a, db, "imported", n, stdout);
}

static int run_prune(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    size_t n = 0;
    convfind_status st = convfind_db_prune(db, &n);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    return report_count(a, db, "pruned", n, stdout);
}

static int run_vacuum(const cli_command *cmd, const cli_args *a, convfind_db *db, const char *arg)
{
    (void)cmd;
    (void)arg;
    convfind_status st = convfind_db_vacuum(db);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    return report_done(a, db, "vacuumed", "vacuumed");
}

static const subcommand subcommands[] = {
    {"path", false, true, CONVFIND_DB_READ_ONLY, run_path},
    {"list", false, true, CONVFIND_DB_READ_ONLY, run_list},
    {"show", true, true, CONVFIND_DB_READ_ONLY, run_show},
    {"stats", false, true, CONVFIND_DB_READ_ONLY, run_stats},
    {"verify", false, false, CONVFIND_DB_READ_ONLY, run_verify},
    {"export", true, true, CONVFIND_DB_READ_ONLY, run_export},
    {"import", true, true, CONVFIND_DB_READ_WRITE, run_import},
    {"prune", false, true, CONVFIND_DB_READ_WRITE, run_prune},
    {"vacuum", false, false, CONVFIND_DB_READ_WRITE, run_vacuum},
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
    if (a->fleet && (a->db || a->system_db))
        return cli_usage_error(cmd, "--fleet acts on the fleet tier: --db and --system-db name "
                               "other databases");
    if (a->fleet && !sub->fleet)
        return cli_usage_error(cmd, "'%s' is for the SQLite file, not the fleet tier",
                               sub->name);
    convfind_db_options o;
    convfind_db_options_init(&o);
    o.path = a->db;
    o.system_path = a->system_db;
    o.mode = sub->mode;
    o.fleet_db = a->fleet;
    convfind_db *db = NULL;
    convfind_status st = convfind_db_open(&o, &db);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    int rc = sub->run(cmd, a, db, sub->takes_arg ? a->pos[1] : NULL);
    convfind_db_close(db);
    return rc;
}

static const char *const subcommand_names[] = {"path",   "list",   "show",  "stats", "verify",
                                               "export", "import", "prune", "vacuum", NULL};
static const int db_flags[] = {CLI_DB, CLI_SYSTEM_DB, CLI_FLEET, -1};
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
        "  list          one line per record: key, algorithm, median, current/foreign, host, "
        "time,\n"
        "                confident/low-confidence\n"
        "  show KEY      every record of KEY: how it was measured (Find budget, the choice's\n"
        "                spread, its margin to the runner-up, confidence) and every\n"
        "                candidate's statistics\n"
        "  stats         record, environment and lease counts, the file's size\n"
        "  verify        SQLite's integrity check and a check of every record; damage, or a\n"
        "                record this build cannot use, is an error (exit status 1) and the\n"
        "                file stays exactly as it was\n"
        "  export FILE   every record as JSON Lines (\"-\": stdout), written beside FILE and\n"
        "                renamed into place\n"
        "\n"
        "Subcommands that change the file; any problem with it is an error:\n"
        "  import FILE   JSON Lines records (\"-\": stdin) in one transaction, all or nothing;\n"
        "                a line over 1 MiB, a record this build cannot use (an unknown\n"
        "                algorithm, one that cannot run the key's problem, every candidate\n"
        "                failed) or a read error fails the whole import, naming the line\n"
        "  prune         delete records of other environments or that this build cannot\n"
        "                use, and dead leases\n"
        "  vacuum        rebuild the file to its minimal size\n"
        "\n"
        "With --json every subcommand prints one JSON object: list and show "
        "{\"database\", \"records\": [{\"key\", \"algorithm\", \"median_ms\", \"environment\": "
        "{\"library\", \"backends\", \"device\", \"current\"}, \"host\", \"time\"}]} (show adds "
        "\"candidates\"), stats {\"database\", \"exists\", \"environment\", \"records\", "
        "\"current\", \"foreign\", \"unreadable\", \"leases\", \"system_records\", "
        "\"file_bytes\", \"artifacts\", \"artifact_bytes\"}, path {\"path\", \"exists\"}, the "
        "others their count. Options may come before or after the subcommand.\n"
        "\n"
        "With --fleet URL, path, list, show, stats, export, import and prune act on the fleet "
        "tier, the PostgreSQL database machines share decisions through (docs/db.md), "
        "instead of the user database; it is named by its host, port, database and user, "
        "never its password. There prune deletes expired leases and records that do not "
        "parse, not other environments' records: they are other machines' decisions.",
    .sections = sections,
    .nsections = 2,
    .examples = "convfind db list --db team.sqlite\n"
                "convfind db stats --fleet 'host=db.internal dbname=convfind user=tuner'\n"
                "convfind db --json stats\n"
                "convfind db export decisions.jsonl && convfind db import decisions.jsonl "
                "--db /opt/app/system.sqlite",
    .words = subcommand_names,
    .max_pos = 2,
    .run = db_main,
};
