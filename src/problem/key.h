/*
 * key.h - the decision key: what a cached or stored decision is valid for.
 *
 * One function (cf_key_make) defines the key.  Its canonical text form names every
 * field that can change which algorithms are valid or which one is fastest (DESIGN.md
 * non-negotiable 1) and nothing else; docs/key.md documents each field.  The text is
 * versioned ("v1;..."), human readable and exactly what the database stores; the hash
 * only picks a bucket, equality is always decided on the full text.
 *
 * The backend fingerprint is passed in (cf_fingerprint) rather than read inside
 * cf_key_make, so that tests can vary every part of it; the backend that runs the
 * problem fills it (algo/backend.h), since only it knows its device.
 */
#ifndef CONVFIND_KEY_H
#define CONVFIND_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "problem/problem.h"

#define CF_KEY_VERSION 2
#define CF_KEY_TEXT_MAX 512
#define CF_FP_CPU_MAX 96
#define CF_FP_ISA_MAX 16

/* How a plan is given its weights, which changes what an execution costs: constant
 * weights are rearranged once for the algorithm, per-call weights by every execution
 * of an algorithm that reads them rearranged. */
typedef enum cf_weights {
    CF_WEIGHTS_PER_CALL = 0,
    CF_WEIGHTS_CONSTANT = 1
} cf_weights;

/* Where, under which limits and for which usage a decision is measured. */
typedef struct cf_fingerprint {
    char cpu[CF_FP_CPU_MAX]; /* vendor and model; ';', ':', '=' and controls become '_' */
    char isa[CF_FP_ISA_MAX]; /* ISA level the kernels use ("avx512", "avx2", "portable") */
    int threads;             /* threads one execution uses (>= 1) */
    int ws_class;            /* cf_workspace_class() of the workspace limit */
    cf_weights weights;      /* how the plans of the key take their weights */
} cf_fingerprint;

typedef struct cf_key {
    uint64_t hash;
    size_t len;                  /* strlen(text) */
    cf_weights weights;          /* the fingerprint's usage, also named in the text: what
                                    a Find for the key times */
    char text[CF_KEY_TEXT_MAX];
} cf_key;

/* The workspace budget class of a limit in bytes: -1 for 0 (unlimited), else
 * floor(log2(limit)).  Every limit in one class is served by one decision because Find
 * and the heuristic only admit workspaces up to cf_workspace_class_bytes(class). */
int cf_workspace_class(size_t limit);

/* The largest workspace a decision of `ws_class` may use: 2^ws_class bytes, or 0
 * (unlimited) for -1. */
size_t cf_workspace_class_bytes(int ws_class);

/* Copies `src` into a fingerprint field of `size` bytes, truncated, with the characters
 * that would break the key's field syntax (';', ':', '=', controls and non-ASCII)
 * replaced by '_': the fingerprint only has to tell machines apart, and readable beats
 * reversible here.  Backends fill their fingerprints with it (algo/backend.h). */
static inline void cf_fingerprint_text(char *dst, size_t size, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < size; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = (ch < 0x20 || ch > 0x7e || ch == ';' || ch == ':' || ch == '=') ? '_' : (char)ch;
    }
    dst[i] = '\0';
}

/* Builds the key of `p` under `fp`.  CONVFIND_ERR_INVALID_ATTRIBUTE when the text would
 * not fit CF_KEY_TEXT_MAX (message names the length).  Pure; thread-safe. */
convfind_status cf_key_make(const cf_problem *p, const cf_fingerprint *fp, cf_key *key);

/* 64-bit hash of `len` bytes (8 bytes per step, then a final avalanche). */
uint64_t cf_key_hash_bytes(const char *text, size_t len);

/* Equal keys: same hash, same length and same text. */
static inline bool cf_key_equal(const cf_key *a, const cf_key *b)
{
    return a->hash == b->hash && a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
}

/* Parses canonical key text back into the problem (derived counts included) and the
 * fingerprint, for the database.  Only canonical text is accepted: the parsed fields
 * must rebuild exactly `text`, and the shapes must be consistent (output dims follow
 * from the other fields).  CONVFIND_ERR_INVALID_ATTRIBUTE naming the first bad field
 * otherwise (CONVFIND_ERR_NOT_FOUND for another key version).  Thread-safe. */
convfind_status cf_key_parse(const char *text, cf_problem *p, cf_fingerprint *fp);

#endif /* CONVFIND_KEY_H */
