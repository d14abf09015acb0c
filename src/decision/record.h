/*
 * record.h - one stored decision with its provenance, and its JSON form.
 *
 * The same JSON text is what the database keeps in its `decision` column and what
 * `convfind db export` writes one line per record (JSON Lines), so one loader checks
 * every byte that comes back from disk or from another machine.  The loader is the
 * libFuzzer target tests/fuzz/fuzz_db_record.c.
 */
#ifndef CONVFIND_DECISION_RECORD_H
#define CONVFIND_DECISION_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convfind.h"
#include "decision/decision.h"
#include "problem/key.h"

#define CF_DB_KEY_MAX 4096       /* longest canonical key text accepted, bytes */
#define CF_DB_MAX_CANDIDATES 1024
#define CF_DB_FORMAT "convfind-db-record/1" /* the "format" member of an exported line */
#define CF_DB_BUDGET_MAX_MS 1e9  /* largest Find budget a record may claim (11.6 days) */

/* The environment a decision was measured in.  A record is used as-is only when all
 * three strings equal the current ones (DESIGN.md non-negotiable 7). */
typedef struct cf_db_env {
    char library[32];   /* convfind version, "0.1.0" */
    char backends[128]; /* backends and their versions, "cpu" or "cpu;cudnn-9.1.0" */
    char device[256];   /* device fingerprint: CPU model, or GPU name + capability */
} cf_db_env;

typedef struct cf_db_record {
    char *key;           /* canonical key text, owned */
    cf_db_env env;
    cf_decision decision; /* candidates owned */
    char host[256];
    int64_t time;        /* when it was measured, Unix seconds */
} cf_db_record;

/* Fills `env` for decisions made by this library on host `host`: library version, the
 * host backend, and the host's CPU name and ISA level.  Pure. */
void cf_db_env_make(cf_db_env *env, const cf_fingerprint *host);

bool cf_db_env_equal(const cf_db_env *a, const cf_db_env *b);

/* "library|backends|device", for messages and `convfind db stats`. */
void cf_db_env_describe(const cf_db_env *env, char *buf, size_t size);

/* A deep copy of `src` into `dst` (which is overwritten, not freed). */
convfind_status cf_db_decision_copy(cf_decision *dst, const cf_decision *src);

/* The comma-separated names of the candidates that failed (status CF_CAND_FAILED):
 * remembered as bad for the record's environment.  Truncated to fit `size`. */
void cf_db_bad_candidates(const cf_decision *d, char *buf, size_t size);

/* Frees what `r` owns and empties it.  NULL allowed. */
void cf_db_record_clear(cf_db_record *r);

/* JSON text of a decision; malloc'd, NULL when out of memory. */
char *cf_db_decision_to_json(const cf_decision *d);

/* Parses and checks a decision (`len` bytes, not necessarily NUL-terminated).  On
 * failure returns CONVFIND_ERR_IO with a message naming the field, and `out` is empty. */
convfind_status cf_db_decision_from_json(const char *text, size_t len, cf_decision *out);

/* One JSON Lines line (no trailing newline) for export; malloc'd, NULL when out of
 * memory.  Its "measured" member says how the decision was measured: the budget (null
 * when unknown), and the choice's spread and margin to the runner-up (null without
 * one), which follow from the candidates and are written for readers. */
char *cf_db_record_to_jsonl(const cf_db_record *r);

/* Parses and checks one exported line.  On failure returns CONVFIND_ERR_IO with a
 * message naming the field, and `out` is empty.  A line without "measured" (written
 * before it existed) has an unknown budget; spread and margin are checked but taken
 * from the candidates. */
convfind_status cf_db_record_from_jsonl(const char *line, size_t len, cf_db_record *out);

/* Checks canonical key text as stored: non-empty, at most CF_DB_KEY_MAX bytes,
 * printable ASCII.  CONVFIND_ERR_IO naming the problem otherwise. */
convfind_status cf_db_check_key(const char *key);

#endif /* CONVFIND_DECISION_RECORD_H */
