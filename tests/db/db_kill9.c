/*
 * db_kill9.c - a writer killed with SIGKILL at random moments, many times
 * (DESIGN.md non-negotiable 7: "a kill -9 at any moment leaves a usable database").
 *
 * Each round forks a writer that opens the database (the first round creates it, so a
 * kill can land in the schema creation) and stores batches of decisions in a loop
 * until it is killed after a random 0-25 ms.  After every kill the database must open
 * without a warning (so without a quarantine), pass SQLite's integrity check, parse
 * every record, and hold only complete records: every stored decision equals the one
 * its seed describes, and every batch is all there or not there at all.
 */
#include <signal.h>
#include <sys/wait.h>

#include "db_fixture.h"

enum { ROUNDS = 40, BATCH = 6, KEYS = 60 };

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "db_kill9: FAIL %s:%d: ", __FILE__, __LINE__);                      \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

/* Batch b of round r writes keys (b*BATCH + j) % KEYS with seed r*100000 + b*100 + j:
 * all of a batch's keys share r and b, which the check below relies on. */
static void writer(const char *path, int round)
{
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    if (cf_db_open(&c, &db) != CONVFIND_OK)
        _exit(3);
    for (int b = 0;; b++) {
        char keys[BATCH][128];
        const char *kp[BATCH];
        cf_decision ds[BATCH];
        for (int j = 0; j < BATCH; j++) {
            int seed = round * 100000 + (b % 1000) * 100 + j;
            fx_key((b * BATCH + j) % KEYS, keys[j], sizeof keys[j]);
            kp[j] = keys[j];
            ds[j] = fx_decision(seed, 1 + seed % 7);
        }
        cf_db_store(db, kp, ds, BATCH);
        for (int j = 0; j < BATCH; j++)
            cf_decision_clear(&ds[j]);
    }
}

typedef struct seen {
    int bad;
    int records;
    int seed_of[KEYS]; /* -1: key absent */
} seen;

static int check_record(const cf_db_record *r, void *arg)
{
    seen *s = arg;
    int seed, key;
    s->records++;
    if (sscanf(r->decision.algo, "algo%d_", &seed) != 1 ||
        sscanf(r->key, "v1;test;conv;f32;nchw;n=1;c=%d;", &key) != 1 || key < 0 || key >= KEYS) {
        s->bad++;
        return 0;
    }
    s->seed_of[key] = seed;
    cf_decision want = fx_decision(seed, 1 + seed % 7);
    if (!fx_decision_equal(&want, &r->decision))
        s->bad++;
    cf_decision_clear(&want);
    return 0;
}

/* KEYS / BATCH groups of keys, each always written by one batch: a group must be
 * entirely absent or entirely from one (round, batch).  A torn batch shows up here. */
static int torn_groups(const seen *s)
{
    int torn = 0;
    for (int g = 0; g < KEYS / BATCH; g++) {
        const int *k = &s->seed_of[g * BATCH];
        for (int j = 1; j < BATCH; j++)
            if ((k[0] < 0) != (k[j] < 0) || (k[0] >= 0 && k[0] / 100 != k[j] / 100)) {
                torn++;
                break;
            }
    }
    return torn;
}

int main(void)
{
    char dir[256], path[300];
    fx_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/crash.sqlite", dir);
    srand(12345);
    static seen s;
    int total_records = 0;
    for (int round = 1; round <= ROUNDS; round++) {
        pid_t pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0)
            writer(path, round);
        struct timespec ts = {0, (long)(rand() % 25000) * 1000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
              "round %d: writer failed on its own (status %d)", round, status);

        cf_db_config c = fx_config(path);
        cf_db *db = NULL;
        CHECK(cf_db_open(&c, &db) == CONVFIND_OK, "open");
        CHECK(cf_db_is_persistent(db), "round %d: database fell back to memory", round);
        char w[512];
        cf_db_last_warning(db, w, sizeof w);
        CHECK(cf_db_warning_count(db) == 0, "round %d: warning after kill: %s", round, w);
        size_t unreadable = 0;
        CHECK(cf_db_verify(db, &unreadable) == CONVFIND_OK, "round %d: %s", round,
              convfind_last_error());
        memset(&s, 0, sizeof s);
        memset(s.seed_of, 0xff, sizeof s.seed_of);
        CHECK(cf_db_foreach(db, NULL, check_record, &s) == CONVFIND_OK, "foreach");
        CHECK(s.bad == 0, "round %d: %d incomplete or wrong records", round, s.bad);
        CHECK(s.records <= KEYS, "round %d: %d records for %d keys", round, s.records, KEYS);
        CHECK(torn_groups(&s) == 0, "round %d: %d batches only partly stored", round,
              torn_groups(&s));
        total_records += s.records;
        cf_db_close(db);
    }
    fx_rmdir(dir);
    printf("db_kill9: %d writers killed, database usable with only complete records "
           "(%d records checked): ok\n", ROUNDS, total_records);
    return 0;
}
