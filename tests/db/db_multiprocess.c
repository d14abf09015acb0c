/*
 * db_multiprocess.c - several processes tuning overlapping problem lists on one
 * database at the same time (DESIGN.md non-negotiables 3 and 7).
 *
 * Each worker walks its own slice of the key list through cf_db_begin/cf_db_finish,
 * "measuring" (a short sleep) only when it holds the key's lease.  Afterwards: no
 * worker saw a warning, every key is stored with the decision its measurer made, and
 * every key was measured exactly once across all workers -- the lease works.
 */
#include <sys/wait.h>

#include "db_fixture.h"

/* Worker w covers keys w*STRIDE .. w*STRIDE+PER_WORKER-1: a worker that finds a key
 * already stored runs ahead until it meets another, and from then on they compete for
 * the same keys, so without working leases keys would be measured several times. */
enum { WORKERS = 4, KEYS = 48, PER_WORKER = 36, STRIDE = 4 };

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "db_multiprocess: FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

/* One worker: returns through the pipe how many keys it measured, or -1. */
static int worker(const char *path, int w, int fd, int go)
{
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    int measured = -1;
    if (cf_db_open(&c, &db) == CONVFIND_OK && cf_db_is_persistent(db)) {
        measured = 0;
        char byte;
        if (read(go, &byte, 1) != 1) /* start together: contention is the point */
            measured = -1;
        for (int j = 0; j < PER_WORKER && measured >= 0; j++) {
            int i = (w * STRIDE + j) % KEYS;
            char key[128];
            fx_key(i, key, sizeof key);
            cf_decision d;
            cf_db_action a =
                cf_db_begin(db, key, &(cf_db_request){.wait_ms = 10000}, &d);
            if (a == CF_DB_ACTION_BENCHMARK) {
                cf_decision_clear(&d);
                struct timespec ts = {0, 3 * 1000000L};
                nanosleep(&ts, NULL);
                d = fx_decision(i, 1 + i % 6);
                cf_db_finish(db, key, &d);
                measured++;
            } else if (a != CF_DB_ACTION_USE || sscanf(d.algo, "algo%d_", &(int){0}) != 1) {
                fprintf(stderr, "worker %d: key %d: action %d, algo \"%s\"\n", w, i, (int)a,
                        d.algo);
                measured = -1;
            }
            cf_decision_clear(&d);
        }
        if (cf_db_warning_count(db) != 0) {
            char w_[512];
            cf_db_last_warning(db, w_, sizeof w_);
            fprintf(stderr, "worker %d: warning: %s\n", w, w_);
            measured = -1;
        }
    }
    if (db && !cf_db_is_persistent(db)) {
        char w_[512];
        cf_db_last_warning(db, w_, sizeof w_);
        fprintf(stderr, "worker %d: not persistent: %s\n", w, w_);
    }
    cf_db_close(db);
    return write(fd, &measured, sizeof measured) == sizeof measured ? 0 : 1;
}

int main(void)
{
    char dir[256], path[300];
    fx_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/shared.sqlite", dir);
    int fds[2], go[2];
    CHECK(pipe(fds) == 0 && pipe(go) == 0, "pipe");
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        CHECK(pids[w] >= 0, "fork");
        if (pids[w] == 0)
            _exit(worker(path, w, fds[1], go[0]));
    }
    close(fds[1]);
    CHECK(write(go[1], "gogo", WORKERS) == WORKERS, "start");
    int total = 0;
    for (int w = 0; w < WORKERS; w++) {
        int status = 0, measured = -1;
        CHECK(waitpid(pids[w], &status, 0) == pids[w], "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "worker %d exited badly", w);
        CHECK(read(fds[0], &measured, sizeof measured) == sizeof measured, "read");
        CHECK(measured >= 0, "a worker saw an error, a warning or a bad decision");
        total += measured;
    }

    /* Every key some worker covered is stored, with the measurer's decision. */
    bool covered[KEYS] = {false};
    for (int w = 0; w < WORKERS; w++)
        for (int j = 0; j < PER_WORKER; j++)
            covered[(w * STRIDE + j) % KEYS] = true;
    int expected = 0;
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    CHECK(cf_db_open(&c, &db) == CONVFIND_OK, "open");
    for (int i = 0; i < KEYS; i++) {
        if (!covered[i])
            continue;
        expected++;
        char key[128];
        fx_key(i, key, sizeof key);
        cf_decision got, want = fx_decision(i, 1 + i % 6);
        cf_db_found found;
        CHECK(cf_db_lookup(db, key, &got, &found) == CONVFIND_OK && found == CF_DB_HIT,
              "key %d lost", i);
        CHECK(fx_decision_equal(&got, &want), "key %d has a wrong decision", i);
        cf_decision_clear(&got);
        cf_decision_clear(&want);
    }
    cf_db_stats st;
    CHECK(cf_db_get_stats(db, &st) == CONVFIND_OK, "stats");
    CHECK((int)st.records == expected, "%zu records, expected %d", st.records, expected);
    CHECK(st.leases == 0, "%zu leases left behind", st.leases);
    CHECK(cf_db_verify(db, NULL) == CONVFIND_OK, "verify: %s", convfind_last_error());
    cf_db_close(db);
    CHECK(total == expected, "%d measurements for %d keys: a key was measured twice", total,
          expected);
    fx_rmdir(dir);
    printf("db_multiprocess: %d workers, %d keys, %d measurements, 0 warnings: ok\n", WORKERS,
           expected, total);
    return 0;
}
