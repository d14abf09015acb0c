/*
 * db_fixture.h - what the find-db tests share: a scratch directory, decisions with a
 * recognisable shape, and a config that does not print warnings.
 *
 * Header-only (static functions) because it serves both the cmocka unit tests and the
 * multi-process drivers in tests/db/, which are separate executables.
 */
#ifndef CONVFIND_TEST_DB_FIXTURE_H
#define CONVFIND_TEST_DB_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "algo/registry.h"
#include "db/db.h"

/* Makes a new empty directory under $TMPDIR (or /tmp) and writes its path to buf.
 * Exits on failure: a test without a scratch directory cannot say anything. */
static inline void fx_tmpdir(char *buf, size_t size)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/convfind-dbtest-XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Removes a scratch directory and everything in it. */
static inline void fx_rmdir(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* A cmocka test's scratch directory: fx_setup makes it and fx_teardown removes it
 * (cmocka's setup/teardown signature, for a whole group or for one test). */
static char fx_dir[256];

static inline int fx_setup(void **state)
{
    (void)state;
    fx_tmpdir(fx_dir, sizeof fx_dir);
    return 0;
}

static inline int fx_teardown(void **state)
{
    (void)state;
    fx_rmdir(fx_dir);
    return 0;
}

/* A decision of `n` candidates named "algo<seed>_<i>", the first chosen, with timings
 * derived from `seed` so that two different seeds never give equal decisions. */
static inline cf_decision fx_decision(int seed, int n)
{
    cf_decision d;
    memset(&d, 0, sizeof d);
    d.n_candidates = n;
    d.candidates = calloc((size_t)n, sizeof *d.candidates);
    for (int i = 0; i < n; i++) {
        cf_candidate_stats *c = &d.candidates[i];
        snprintf(c->algo, sizeof c->algo, "algo%d_%d", seed, i);
        c->status = i == n - 1 && n > 2 ? CF_CAND_FAILED : CF_CAND_OK;
        c->median_ms = 1.0 + seed * 0.001 + i * 0.5;
        c->min_ms = c->median_ms * 0.9;
        c->spread = 0.01 * (i + 1);
        c->repeats = 10 + i;
        c->workspace_bytes = (size_t)(i * 4096);
        c->validated = i % 2 == 0;
    }
    snprintf(d.algo, sizeof d.algo, "%s", n ? d.candidates[0].algo : "ref");
    return d;
}

/* Equal decisions: same choice and the same statistics for every candidate. */
static inline int fx_decision_equal(const cf_decision *a, const cf_decision *b)
{
    if (strcmp(a->algo, b->algo) != 0 || a->n_candidates != b->n_candidates)
        return 0;
    for (int i = 0; i < a->n_candidates; i++) {
        const cf_candidate_stats *x = &a->candidates[i], *y = &b->candidates[i];
        if (strcmp(x->algo, y->algo) || x->status != y->status || x->median_ms != y->median_ms ||
            x->min_ms != y->min_ms || x->spread != y->spread || x->repeats != y->repeats ||
            x->workspace_bytes != y->workspace_bytes || x->validated != y->validated ||
            x->not_needed != y->not_needed)
            return 0;
    }
    return 1;
}

/* The key text of test problem `i` (printable, canonical-looking, distinct per i). */
static inline void fx_key(int i, char *buf, size_t size)
{
    snprintf(buf, size, "v1;test;conv;f32;nchw;n=1;c=%d;h=8;w=8;m=4;k=3x3", i);
}

/* convfind_read_fn and convfind_write_fn over a FILE *. */
static inline long fx_file_read(void *f, void *buf, size_t size)
{
    size_t n = fread(buf, 1, size, f);
    return ferror((FILE *)f) ? -1 : (long)n;
}

static inline int fx_file_write(void *f, const void *data, size_t size)
{
    return fwrite(data, 1, size, f) == size ? 0 : -1;
}

/* A quiet config for `path` in the environment this host's contexts record their
 * decisions in, so that what a test stores or reads is what a context does. */
static inline cf_db_config fx_host_config(const char *path)
{
    cf_fingerprint host;
    cf_host_fingerprint(1, 0, &host);
    cf_db_config c;
    cf_db_config_init(&c, &host);
    c.path = path;
    c.quiet = true;
    return c;
}

/* A small problem every CPU algorithm family for 3x3 convolutions takes: X 1x4x8x8,
 * W 8x4x3x3, pads 1.  NULL if it cannot be created (which no test expects). */
static inline convfind_problem *fx_small_problem(void)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t x[4] = {1, 4, 8, 8}, w[4] = {8, 4, 3, 3};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.pads = (convfind_ints){4, {1, 1, 1, 1}};
    convfind_problem *p = NULL;
    return convfind_problem_create(&d, &p) == CONVFIND_OK ? p : NULL;
}

/* A quiet config for `path` with a fixed environment ("test-env"). */
static inline cf_db_config fx_config(const char *path)
{
    cf_db_config c = fx_host_config(path);
    snprintf(c.env.device, sizeof c.env.device, "test-device");
    return c;
}

/* Looks `key` up in the database at `path` as a context of this host would: what it
 * finds, the decision in `out` (the caller clears it).  CF_DB_MISS also when the file
 * cannot be opened. */
static inline cf_db_found fx_lookup_at(const char *path, const char *key, cf_decision *out)
{
    cf_db_config c = fx_host_config(path);
    cf_db *db = NULL;
    cf_db_found found = CF_DB_MISS;
    memset(out, 0, sizeof *out);
    if (cf_db_open(&c, &db) == CONVFIND_OK && cf_db_lookup(db, key, out, &found) != CONVFIND_OK)
        found = CF_DB_MISS;
    cf_db_close(db);
    return found;
}

#endif /* CONVFIND_TEST_DB_FIXTURE_H */
