/*
 * fleet_pq.h - PostgreSQL's client library (libpq), loaded at run time, and the few
 * things the fleet tier does with it: connect and run one statement, each within a
 * deadline, and describe a connection string without its secrets.
 *
 * libpq is not linked: it is opened (dlopen "libpq.so.5", its stable soname) the first
 * time a fleet tier is asked for, once per process, so that libconvfind needs neither
 * libpq nor what libpq needs (OpenSSL, Kerberos, LDAP) on a machine without a fleet
 * tier (docs/dependencies.md).  The declarations below are libpq's; where libpq-fe.h is
 * found at build time, fleet_pq.c checks them against it.
 *
 * Deadlines are absolute CLOCK_MONOTONIC milliseconds (cf_pq_now_ms).  Nothing here
 * blocks past one: connecting and every statement use libpq's non-blocking interface
 * and poll() the socket.  A connection is used by one thread at a time (the caller
 * holds its lock).
 */
#ifndef CONVFIND_DB_FLEET_PQ_H
#define CONVFIND_DB_FLEET_PQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pg_conn;   /* libpq's PGconn */
struct pg_result; /* libpq's PGresult */

typedef struct cf_pq_conn cf_pq_conn;
typedef struct pg_result cf_pq_result;

/* Loads libpq (once per process).  False with the reason in `why` when it cannot be:
 * not installed (Debian: libpq5), or a symbol missing. */
bool cf_pq_load(char *why, size_t size);

/* Monotonic milliseconds, the clock of every deadline here. */
int64_t cf_pq_now_ms(void);

/* Connects with `conninfo` (a libpq connection string or URI) before `deadline`.
 * NULL on failure, with the reason in `err` (secrets of `conninfo` removed).  Server
 * notices are dropped: they would go to stderr. */
cf_pq_conn *cf_pq_connect(const char *conninfo, int64_t deadline, char *err, size_t size);

/* Closes the connection.  NULL allowed. */
void cf_pq_close(cf_pq_conn *c);

/* Runs one statement with `n` text parameters before `deadline`.  Returns its result
 * (cf_pq_clear), or NULL with the reason in `err`; *sqlstate gets the server's error
 * code ("" when the failure was not the server's answer: a timeout, a lost connection).
 * After a timeout or a lost connection the connection must be closed. */
cf_pq_result *cf_pq_exec(cf_pq_conn *c, const char *sql, int n, const char *const *params,
                         int64_t deadline, char *err, size_t size, char sqlstate[6]);

void cf_pq_clear(cf_pq_result *r);
int cf_pq_rows(const cf_pq_result *r);
/* The text of a field ("" for NULL) and its length. */
const char *cf_pq_value(const cf_pq_result *r, int row, int col);
int cf_pq_length(const cf_pq_result *r, int row, int col);

/* A description of `conninfo` safe to print: its host, port, database and user, never
 * a password or any other secret ("a connection string that does not parse" when
 * libpq cannot read it).  Needs cf_pq_load. */
void cf_pq_describe(const char *conninfo, char *buf, size_t size);

/* Replaces, in `text`, every occurrence of a secret of `conninfo` (its password and
 * any other option libpq marks as secret) by "***".  Needs cf_pq_load. */
void cf_pq_redact(const char *conninfo, char *text);

#endif /* CONVFIND_DB_FLEET_PQ_H */
