/*
 * db_similar.c - decisions that travel to similar machines: the record of a compatible
 * key, to seed a short re-time when nothing is stored for a key (see db.h,
 * cf_db_request.similar, and docs/db.md "Similar machines").
 *
 * A key ends with its fingerprint, ";be=BACKEND:NAME:ISA:tTHREADS" (docs/key.md), and
 * nothing before it names the machine.  Keys that share everything up to NAME describe
 * the same problem under the same workspace class on the same backend, so a range scan
 * of the primary key's B-tree from that prefix finds them all.  Of those, compatible
 * are the ones with the same ISA level (the same kernels can run); the CPU model and
 * the thread count may differ, because a decision tuned on 2 threads is a good start on
 * 1 or 4, and one from a sibling CPU model on this one.  The best is the same model
 * with the nearest thread count, then another model with the nearest thread count, then
 * the newest.
 */
#include "db/db_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* More rows of one prefix than this are not examined: a key has one per machine
 * configuration it was tuned on, so this is never reached in practice. */
#define SIMILAR_SCAN_MAX 256

typedef struct fingerprint {
    size_t prefix;                  /* bytes up to and including "be=BACKEND:" */
    char name[CF_FP_CPU_MAX + 1];
    char isa[CF_FP_ISA_MAX + 1];
    long threads;
} fingerprint;

/* Splits a key's fingerprint field; false when `key` has none in the expected form. */
static bool split(const char *key, fingerprint *fp)
{
    const char *be = strstr(key, ";be=");
    if (!be)
        return false;
    const char *name = strchr(be + 4, ':');
    const char *isa = name ? strchr(name + 1, ':') : NULL;
    const char *t = isa ? strchr(isa + 1, ':') : NULL;
    if (!t || t[1] != 't' || (size_t)(isa - name - 1) > CF_FP_CPU_MAX ||
        (size_t)(t - isa - 1) > CF_FP_ISA_MAX)
        return false;
    char *end;
    fp->threads = strtol(t + 2, &end, 10);
    if (*end || fp->threads < 1)
        return false;
    fp->prefix = (size_t)(name + 1 - key);
    memcpy(fp->name, name + 1, (size_t)(isa - name - 1));
    fp->name[isa - name - 1] = '\0';
    memcpy(fp->isa, isa + 1, (size_t)(t - isa - 1));
    fp->isa[t - isa - 1] = '\0';
    return true;
}

/* Lower is better: another model costs more than any thread-count difference. */
static double distance(const fingerprint *want, const fingerprint *have)
{
    double d = fabs(log2((double)have->threads / (double)want->threads));
    return strcmp(want->name, have->name) == 0 ? d : 1000.0 + d;
}

static bool has_ok_candidate(const cf_decision *d)
{
    for (int i = 0; i < d->n_candidates; i++)
        if (d->candidates[i].status == CF_CAND_OK && d->candidates[i].repeats > 0)
            return true;
    return false;
}

int cf_db_similar_lookup(sqlite3 *conn, const char *key, cf_decision *out, bool *found)
{
    *found = false;
    fingerprint want;
    if (!split(key, &want))
        return SQLITE_OK;
    char lo[CF_DB_KEY_MAX + 2];
    if (want.prefix + 1 >= sizeof lo)
        return SQLITE_OK;
    memcpy(lo, key, want.prefix);
    lo[want.prefix] = '\0';
    char hi[sizeof lo];
    memcpy(hi, lo, want.prefix);
    hi[want.prefix] = '\x7f'; /* above every printable byte a key may hold */
    hi[want.prefix + 1] = '\0';
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT key, decision, %s FROM decisions WHERE key > ?1 AND key < ?2 AND key <> ?3 "
             "ORDER BY created_at DESC LIMIT %d",
             cf_db_budget_column(conn), SIMILAR_SCAN_MAX);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(conn, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, lo, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
    double best = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *other = (const char *)sqlite3_column_text(st, 0);
        const char *text = (const char *)sqlite3_column_text(st, 1);
        fingerprint have;
        if (!other || !text || !split(other, &have) || have.prefix != want.prefix ||
            strcmp(have.isa, want.isa) != 0)
            continue;
        double d = distance(&want, &have);
        if (*found && d >= best) /* newest first: a tie keeps the newer record */
            continue;
        cf_decision dec;
        if (cf_db_decision_from_json(text, (size_t)sqlite3_column_bytes(st, 1), &dec) !=
            CONVFIND_OK) {
            cf_clear_error(); /* an unreadable row seeds nothing; lookups report it */
            continue;
        }
        if (!has_ok_candidate(&dec)) {
            cf_decision_clear(&dec);
            continue;
        }
        dec.budget_ms = cf_db_column_budget(st, 2);
        cf_decision_clear(out);
        *out = dec;
        *found = true;
        best = d;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}
