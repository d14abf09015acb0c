/*
 * pg_server.h - a PostgreSQL server of the caller's own (pg_fixture.sh, started in a
 * scratch directory, a Unix socket only) and checks that end the program: what the
 * fleet tier's tests and bench/bench_fleet share.  It needs nothing of the library, so
 * the benchmark, which lives on include/convfind.h alone, can use it too.
 *
 * CONVFIND_PG_FIXTURE must name pg_fixture.sh (the build defines it).  A program that
 * cannot get the server binaries exits 77 (ctest: skipped) after pg_fixture.sh said
 * why on stderr; any other failure to start the server fails the program.
 */
#ifndef CONVFIND_TEST_FLEET_PG_SERVER_H
#define CONVFIND_TEST_FLEET_PG_SERVER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define FL_SKIP 77

#define FL_CHECK(cond, ...)                                                                     \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

/* Makes a new empty directory under $TMPDIR (or /tmp) and writes its path to buf. */
static inline void fl_tmpdir(char *buf, size_t size)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/convfind-fleet-XXXXXX", base && base[0] ? base : "/tmp");
    FL_CHECK(mkdtemp(buf) != NULL, "mkdtemp %s failed", buf);
}

/* Runs `pg_fixture.sh CMD DIR [ARG]`; its stdout (first line) into out when given.
 * Returns the script's exit status. */
static inline int fl_fixture(const char *cmd, const char *dir, const char *arg, char *out,
                             size_t size)
{
    char line[8192];
    snprintf(line, sizeof line, "'%s' %s '%s'%s%s%s", CONVFIND_PG_FIXTURE, cmd, dir,
             arg ? " \"" : "", arg ? arg : "", arg ? "\"" : "");
    FILE *p = popen(line, "r");
    if (!p)
        return -1;
    char buf[4096] = "";
    if (!fgets(buf, sizeof buf, p))
        buf[0] = '\0';
    while (fgetc(p) != EOF)
        continue;
    int status = pclose(p);
    buf[strcspn(buf, "\n")] = '\0';
    if (out)
        snprintf(out, size, "%s", buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Starts the server in `dir` and writes its connection string to `conninfo`.  Exits 77
 * when the server binaries are missing. */
static inline void fl_server_start(const char *dir, char *conninfo, size_t size)
{
    int rc = fl_fixture("start", dir, NULL, conninfo, size);
    if (rc == FL_SKIP)
        exit(FL_SKIP); /* pg_fixture.sh said why */
    FL_CHECK(rc == 0 && conninfo[0], "pg_fixture.sh start failed (status %d)", rc);
}

/* One SQL query's first row (psql -At), "" when none. */
static inline void fl_sql(const char *dir, const char *query, char *out, size_t size)
{
    FL_CHECK(fl_fixture("sql", dir, query, out, size) == 0, "query failed: %s", query);
}

static inline long fl_sql_long(const char *dir, const char *query)
{
    char out[64];
    fl_sql(dir, query, out, sizeof out);
    return strtol(out, NULL, 10);
}

/* Server and scratch directory gone. */
static inline void fl_finish(const char *dir)
{
    fl_fixture("destroy", dir, NULL, NULL, 0);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

#endif /* CONVFIND_TEST_FLEET_PG_SERVER_H */
