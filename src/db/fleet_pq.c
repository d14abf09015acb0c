/*
 * fleet_pq.c - libpq loaded at run time, connections and statements within a deadline,
 * and connection strings described without their secrets (see fleet_pq.h).
 *
 * Only libpq's stable C interface is used (the soname libpq.so.5 has not changed since
 * PostgreSQL 8.2), and only the non-blocking half of it: PQconnectStartParams and
 * PQconnectPoll to connect, PQsendQueryParams, PQflush, PQconsumeInput and PQgetResult
 * to run a statement, so that a server that stopped answering costs one deadline, never
 * a hang.
 */
#define _POSIX_C_SOURCE 200809L

#include "db/fleet_pq.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* libpq's constants used here (libpq-fe.h; its enums only ever grow at the end). */
enum {
    PQ_CONNECTION_BAD = 1,
    PQ_POLLING_FAILED = 0,
    PQ_POLLING_READING = 1,
    PQ_POLLING_WRITING = 2,
    PQ_POLLING_OK = 3,
    PQ_COMMAND_OK = 1,
    PQ_TUPLES_OK = 2,
    PQ_DIAG_SQLSTATE = 'C'
};

/* libpq's PQconninfoOption. */
typedef struct pq_option {
    char *keyword, *envvar, *compiled, *val, *label;
    char *dispchar; /* "*": a secret, never to be shown */
    int dispsize;
} pq_option;

/* The functions of libpq this file calls, by their libpq names. */
typedef struct pq_api {
    struct pg_conn *(*PQconnectStartParams)(const char *const *keywords,
                                            const char *const *values, int expand_dbname);
    unsigned (*PQconnectPoll)(struct pg_conn *conn);
    unsigned (*PQstatus)(const struct pg_conn *conn);
    char *(*PQerrorMessage)(const struct pg_conn *conn);
    int (*PQsocket)(const struct pg_conn *conn);
    void (*PQfinish)(struct pg_conn *conn);
    int (*PQsetnonblocking)(struct pg_conn *conn, int arg);
    void (*(*PQsetNoticeProcessor)(struct pg_conn *conn, void (*proc)(void *, const char *),
                                   void *arg))(void *, const char *);
    int (*PQsendQueryParams)(struct pg_conn *conn, const char *command, int nParams,
                             const unsigned int *paramTypes, const char *const *paramValues,
                             const int *paramLengths, const int *paramFormats,
                             int resultFormat);
    int (*PQflush)(struct pg_conn *conn);
    int (*PQconsumeInput)(struct pg_conn *conn);
    int (*PQisBusy)(struct pg_conn *conn);
    struct pg_result *(*PQgetResult)(struct pg_conn *conn);
    unsigned (*PQresultStatus)(const struct pg_result *res);
    char *(*PQresultErrorMessage)(const struct pg_result *res);
    char *(*PQresultErrorField)(const struct pg_result *res, int fieldcode);
    void (*PQclear)(struct pg_result *res);
    int (*PQntuples)(const struct pg_result *res);
    char *(*PQgetvalue)(const struct pg_result *res, int tup_num, int field_num);
    int (*PQgetlength)(const struct pg_result *res, int tup_num, int field_num);
    pq_option *(*PQconninfoParse)(const char *conninfo, char **errmsg);
    void (*PQconninfoFree)(pq_option *connOptions);
    void (*PQfreemem)(void *ptr);
} pq_api;

#ifdef CONVFIND_LIBPQ_HEADER
/* The declarations above against libpq's own header, where it is installed. */
#include <stddef.h>

#include <libpq-fe.h>
#define SAME_TYPE(fn)                                                                           \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), __typeof__(((pq_api *)0)->fn)), \
                   #fn " is declared otherwise in libpq-fe.h")
SAME_TYPE(PQconnectStartParams);
SAME_TYPE(PQerrorMessage);
SAME_TYPE(PQsocket);
SAME_TYPE(PQfinish);
SAME_TYPE(PQsetnonblocking);
SAME_TYPE(PQsetNoticeProcessor);
SAME_TYPE(PQsendQueryParams);
SAME_TYPE(PQflush);
SAME_TYPE(PQconsumeInput);
SAME_TYPE(PQisBusy);
SAME_TYPE(PQgetResult);
SAME_TYPE(PQresultErrorMessage);
SAME_TYPE(PQresultErrorField);
SAME_TYPE(PQclear);
SAME_TYPE(PQntuples);
SAME_TYPE(PQgetvalue);
SAME_TYPE(PQgetlength);
SAME_TYPE(PQfreemem);
/* The three returning an enum are declared returning its (unsigned) underlying type. */
_Static_assert(sizeof(ConnStatusType) == sizeof(unsigned) &&
               sizeof(PostgresPollingStatusType) == sizeof(unsigned) &&
               sizeof(ExecStatusType) == sizeof(unsigned), "libpq's enums are not int-sized");
_Static_assert((int)CONNECTION_BAD == PQ_CONNECTION_BAD &&
               (int)PGRES_POLLING_FAILED == PQ_POLLING_FAILED &&
               (int)PGRES_POLLING_READING == PQ_POLLING_READING &&
               (int)PGRES_POLLING_WRITING == PQ_POLLING_WRITING &&
               (int)PGRES_POLLING_OK == PQ_POLLING_OK && (int)PGRES_COMMAND_OK == PQ_COMMAND_OK &&
               (int)PGRES_TUPLES_OK == PQ_TUPLES_OK && PG_DIAG_SQLSTATE == PQ_DIAG_SQLSTATE,
               "libpq's constants differ");
_Static_assert(sizeof(PQconninfoOption) == sizeof(pq_option) &&
               offsetof(PQconninfoOption, val) == offsetof(pq_option, val) &&
               offsetof(PQconninfoOption, dispchar) == offsetof(pq_option, dispchar),
               "PQconninfoOption is laid out otherwise in libpq-fe.h");
#endif

struct cf_pq_conn {
    struct pg_conn *pg;
};

static pq_api pq;
static char load_error[300];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define LIBPQ_SONAME "libpq.so.5"

static void load(void)
{
    void *h = dlopen(LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load %s (Debian: libpq5): %s",
                 LIBPQ_SONAME, e ? e : "unknown error");
        return;
    }
    /* The table in the order of pq_api's members, each found by its own name. */
    static const char *const names[] = {
        "PQconnectStartParams", "PQconnectPoll", "PQstatus", "PQerrorMessage", "PQsocket",
        "PQfinish", "PQsetnonblocking", "PQsetNoticeProcessor", "PQsendQueryParams", "PQflush",
        "PQconsumeInput", "PQisBusy", "PQgetResult", "PQresultStatus", "PQresultErrorMessage",
        "PQresultErrorField", "PQclear", "PQntuples", "PQgetvalue", "PQgetlength",
        "PQconninfoParse", "PQconninfoFree", "PQfreemem"};
    _Static_assert(sizeof names / sizeof names[0] == sizeof(pq_api) / sizeof(void (*)(void)),
                   "one name per member of pq_api");
    pq_api api;
    void (**slot)(void) = (void (**)(void))&api;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *sym = dlsym(h, names[i]);
        if (!sym) {
            snprintf(load_error, sizeof load_error, "%s has no %s", LIBPQ_SONAME, names[i]);
            dlclose(h);
            return;
        }
        memcpy(&slot[i], &sym, sizeof sym); /* a data pointer to a function pointer, POSIX */
    }
    pq = api;
}

bool cf_pq_load(char *why, size_t size)
{
    pthread_once(&load_once, load);
    if (pq.PQconnectStartParams)
        return true;
    if (why && size)
        snprintf(why, size, "%s", load_error);
    return false;
}

int64_t cf_pq_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until `fd` is ready for `events` or `deadline` passes: 1 ready, 0 timed out,
 * -1 an error of poll itself. */
static int wait_socket(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - cf_pq_now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* `what`, then libpq's message (several lines, a newline at the end) on one line, into
 * `err`; redacted when `conninfo` is given. */
static void set_error(char *err, size_t size, const char *conninfo, const char *what,
                      const char *msg)
{
    snprintf(err, size, "%s%s%s", what, what[0] && msg && msg[0] ? ": " : "", msg ? msg : "");
    char *out = err;
    for (const char *in = err; *in; in++) {
        char c = (unsigned char)*in < 0x20 ? ' ' : *in;
        if (c != ' ' || (out > err && out[-1] != ' '))
            *out++ = c;
    }
    while (out > err && out[-1] == ' ')
        out--;
    *out = '\0';
    if (conninfo)
        cf_pq_redact(conninfo, err);
}

static void drop_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

cf_pq_conn *cf_pq_connect(const char *conninfo, int64_t deadline, char *err, size_t size)
{
    char why[300];
    if (!cf_pq_load(why, sizeof why)) {
        set_error(err, size, NULL, why, NULL);
        return NULL;
    }
    /* libpq's own parser says whether the string is one; its message may quote the
     * string, secrets included, so it is not passed on. */
    char *perr = NULL;
    pq_option *opts = pq.PQconninfoParse(conninfo, &perr);
    if (perr)
        pq.PQfreemem(perr);
    if (!opts) {
        set_error(err, size, NULL, "the connection string does not parse", NULL);
        return NULL;
    }
    pq.PQconninfoFree(opts);
    /* Keywords are applied in order, so the caller's string (dbname, expanded) can
     * override the fallback application name. */
    static const char *const keywords[] = {"fallback_application_name", "dbname", NULL};
    const char *values[] = {"convfind", conninfo, NULL};
    struct pg_conn *pg = pq.PQconnectStartParams(keywords, values, 1);
    if (!pg) {
        set_error(err, size, NULL, "out of memory", NULL);
        return NULL;
    }
    pq.PQsetNoticeProcessor(pg, drop_notice, NULL);
    unsigned state = pq.PQstatus(pg) == PQ_CONNECTION_BAD ? PQ_POLLING_FAILED
                                                           : PQ_POLLING_WRITING;
    while (state != PQ_POLLING_OK && state != PQ_POLLING_FAILED) {
        int ready = wait_socket(pq.PQsocket(pg), state == PQ_POLLING_READING ? POLLIN : POLLOUT,
                                deadline);
        if (ready <= 0) {
            set_error(err, size, conninfo, ready == 0 ? "no answer in time" : "poll failed",
                      NULL);
            pq.PQfinish(pg);
            return NULL;
        }
        state = pq.PQconnectPoll(pg);
    }
    if (state == PQ_POLLING_FAILED || pq.PQsetnonblocking(pg, 1) != 0) {
        set_error(err, size, conninfo, "", pq.PQerrorMessage(pg));
        pq.PQfinish(pg);
        return NULL;
    }
    cf_pq_conn *c = malloc(sizeof *c);
    if (!c) {
        set_error(err, size, NULL, "out of memory", NULL);
        pq.PQfinish(pg);
        return NULL;
    }
    c->pg = pg;
    return c;
}

void cf_pq_close(cf_pq_conn *c)
{
    if (!c)
        return;
    pq.PQfinish(c->pg);
    free(c);
}

/* Sends what libpq has queued, reading meanwhile so that the server never blocks on
 * us.  False on a timeout or an error, with `err` set. */
static bool flush_all(struct pg_conn *pg, int64_t deadline, char *err, size_t size)
{
    int f;
    while ((f = pq.PQflush(pg)) == 1) {
        int ready = wait_socket(pq.PQsocket(pg), POLLIN | POLLOUT, deadline);
        if (ready <= 0 || !pq.PQconsumeInput(pg)) {
            set_error(err, size, NULL, ready == 0 ? "no answer in time" : "connection lost",
                      ready == 0 ? NULL : pq.PQerrorMessage(pg));
            return false;
        }
    }
    if (f < 0)
        set_error(err, size, NULL, "connection lost", pq.PQerrorMessage(pg));
    return f == 0;
}

cf_pq_result *cf_pq_exec(cf_pq_conn *c, const char *sql, int n, const char *const *params,
                         int64_t deadline, char *err, size_t size, char sqlstate[6])
{
    sqlstate[0] = '\0';
    struct pg_conn *pg = c->pg;
    if (!pq.PQsendQueryParams(pg, sql, n, NULL, params, NULL, NULL, 0)) {
        set_error(err, size, NULL, "cannot send", pq.PQerrorMessage(pg));
        return NULL;
    }
    if (!flush_all(pg, deadline, err, size))
        return NULL;
    struct pg_result *res = NULL;
    for (;;) {
        while (pq.PQisBusy(pg)) {
            int ready = wait_socket(pq.PQsocket(pg), POLLIN, deadline);
            if (ready <= 0 || !pq.PQconsumeInput(pg)) {
                set_error(err, size, NULL, ready == 0 ? "no answer in time" : "connection lost",
                          ready == 0 ? NULL : pq.PQerrorMessage(pg));
                pq.PQclear(res);
                return NULL;
            }
        }
        struct pg_result *r = pq.PQgetResult(pg);
        if (!r)
            break;
        /* One statement gives one result; an error that follows it is what counts. */
        unsigned s = pq.PQresultStatus(r);
        if (!res || s != PQ_COMMAND_OK) {
            pq.PQclear(res);
            res = r;
        } else {
            pq.PQclear(r);
        }
    }
    unsigned s = res ? pq.PQresultStatus(res) : PQ_POLLING_FAILED;
    if (s == PQ_COMMAND_OK || s == PQ_TUPLES_OK)
        return res;
    if (res) {
        const char *code = pq.PQresultErrorField(res, PQ_DIAG_SQLSTATE);
        snprintf(sqlstate, 6, "%s", code ? code : "");
        set_error(err, size, NULL, "the server refused a statement", pq.PQresultErrorMessage(res));
        pq.PQclear(res);
    } else {
        set_error(err, size, NULL, "connection lost", pq.PQerrorMessage(pg));
    }
    return NULL;
}

void cf_pq_clear(cf_pq_result *r)
{
    if (r)
        pq.PQclear(r);
}

int cf_pq_rows(const cf_pq_result *r)
{
    return pq.PQntuples(r);
}

const char *cf_pq_value(const cf_pq_result *r, int row, int col)
{
    return pq.PQgetvalue(r, row, col);
}

int cf_pq_length(const cf_pq_result *r, int row, int col)
{
    return pq.PQgetlength(r, row, col);
}

void cf_pq_describe(const char *conninfo, char *buf, size_t size)
{
    char *perr = NULL;
    pq_option *opts = cf_pq_load(NULL, 0) ? pq.PQconninfoParse(conninfo, &perr) : NULL;
    if (perr)
        pq.PQfreemem(perr);
    if (!opts) {
        snprintf(buf, size, "(a connection string that does not parse)");
        return;
    }
    static const char *const shown[] = {"host", "hostaddr", "port", "dbname", "user"};
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
        for (pq_option *o = opts; o->keyword; o++)
            if (strcmp(o->keyword, shown[i]) == 0 && o->val && o->val[0] &&
                !(o->dispchar && strchr(o->dispchar, '*')) && len < size)
                len += (size_t)snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "",
                                        o->keyword, o->val);
    if (!buf[0])
        snprintf(buf, size, "(libpq's defaults)");
    cf_pq_redact(conninfo, buf);
    pq.PQconninfoFree(opts);
}

/* Replaces every occurrence of `secret` in `text` by "***" (never longer: a secret
 * shorter than 3 bytes is replaced by as many '*'). */
static void mask(char *text, const char *secret)
{
    size_t n = strlen(secret);
    if (n == 0)
        return;
    const char *stars = "***";
    size_t m = n < 3 ? n : 3;
    for (char *p = text; (p = strstr(p, secret)) != NULL; p += m) {
        memcpy(p, stars, m);
        memmove(p + m, p + n, strlen(p + n) + 1);
    }
}

void cf_pq_redact(const char *conninfo, char *text)
{
    if (!cf_pq_load(NULL, 0))
        return;
    char *perr = NULL;
    pq_option *opts = pq.PQconninfoParse(conninfo, &perr);
    if (perr)
        pq.PQfreemem(perr);
    if (!opts)
        return;
    for (pq_option *o = opts; o->keyword; o++)
        if (o->dispchar && strchr(o->dispchar, '*') && o->val)
            mask(text, o->val);
    pq.PQconninfoFree(opts);
}
