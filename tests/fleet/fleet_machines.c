/*
 * fleet_machines.c - several processes standing in for machines (each its own user
 * database, one fleet tier) tune overlapping key lists at the same time: every key is
 * measured exactly once across all of them (issue 20, single flight across machines).
 *
 * Each worker walks its slice through cf_db_begin/cf_db_finish, "measuring" (a sleep,
 * then the decision fx_decision makes) only when it holds the key's leases.  Afterwards:
 * no worker saw a warning, every key was measured once, the fleet holds every key with
 * its measurer's decision, and each machine's own user tier holds every key it covered
 * (measured there, or copied from the fleet tier), so it could go on without the
 * server.  A second round on fresh user databases then measures nothing: a fleet warm
 * start.
 */
#include "fleet_fixture.h"

/* Worker w covers keys w*STRIDE .. w*STRIDE+PER_WORKER-1 (mod KEYS): the workers run
 * into each other's keys, so without working fleet leases keys would be measured twice. */
enum { WORKERS = 4, KEYS = 40, PER_WORKER = 30, STRIDE = 5 };

/* One machine; sends back through `fd` how many keys it measured, or -1. */
static int worker(const char *dir, const char *conninfo, int round, int w, int fd, int go)
{
    char path[512];
    cf_db_config c = fl_config(dir, 10 * round + w, conninfo, path, sizeof path);
    cf_db *db = fl_open(&c);
    int measured = 0;
    char byte;
    if (read(go, &byte, 1) != 1) /* start together: contention is the point */
        measured = -1;
    for (int j = 0; j < PER_WORKER && measured >= 0; j++) {
        int i = (w * STRIDE + j) % KEYS;
        char key[128];
        fx_key(i, key, sizeof key);
        cf_decision d;
        cf_db_action a = cf_db_begin(db, key, &(cf_db_request){.wait_ms = 20000}, &d);
        if (a == CF_DB_ACTION_BENCHMARK) {
            cf_decision_clear(&d);
            struct timespec ts = {0, 5 * 1000000L};
            nanosleep(&ts, NULL);
            d = fx_decision(i, 1 + i % 5);
            cf_db_finish(db, key, &d);
            measured++;
        } else if (a != CF_DB_ACTION_USE || sscanf(d.algo, "algo%d_", &(int){0}) != 1) {
            fprintf(stderr, "machine %d: key %d: action %d, algo \"%s\"\n", w, i, (int)a,
                    d.algo);
            measured = -1;
        }
        cf_decision_clear(&d);
    }
    cf_db_stats s = fl_stats(db);
    if (cf_db_warning_count(db) != 0 || !s.fleet_connected || s.fleet_faults != 0) {
        char msg[512];
        cf_db_last_warning(db, msg, sizeof msg);
        fprintf(stderr, "machine %d: warnings %d, connected %d, faults %llu: %s\n", w,
                cf_db_warning_count(db), s.fleet_connected, (unsigned long long)s.fleet_faults,
                msg);
        measured = -1;
    }
    cf_db_close(db);
    /* Its own disk now answers every key it covered, without the fleet. */
    c.fleet = "";
    db = fl_open(&c);
    for (int j = 0; j < PER_WORKER && measured >= 0; j++) {
        int i = (w * STRIDE + j) % KEYS;
        char key[128];
        fx_key(i, key, sizeof key);
        cf_decision d;
        cf_db_found found;
        cf_db_lookup(db, key, &d, &found);
        if (found != CF_DB_HIT) {
            fprintf(stderr, "machine %d: key %d is not in its user tier\n", w, i);
            measured = -1;
        }
        cf_decision_clear(&d);
    }
    cf_db_close(db);
    return write(fd, &measured, sizeof measured) == sizeof measured ? 0 : 1;
}

/* Runs WORKERS machines at once; returns the keys they measured together. */
static int run_round(const char *dir, const char *conninfo, int round)
{
    int results[2], go[2];
    FL_CHECK(pipe(results) == 0 && pipe(go) == 0, "pipe");
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        FL_CHECK(pids[w] >= 0, "fork");
        if (pids[w] == 0) {
            close(results[0]);
            close(go[1]);
            _exit(worker(dir, conninfo, round, w, results[1], go[0]));
        }
    }
    close(results[1]);
    close(go[0]);
    char start[WORKERS] = {0};
    FL_CHECK(write(go[1], start, sizeof start) == (ssize_t)sizeof start, "go");
    close(go[1]);
    int total = 0;
    for (int w = 0; w < WORKERS; w++) {
        int status, measured;
        FL_CHECK(read(results[0], &measured, sizeof measured) == sizeof measured,
                 "a machine died without reporting");
        FL_CHECK(measured >= 0, "a machine failed (its message is above)");
        total += measured;
        waitpid(pids[w], &status, 0);
        FL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "machine exit status %d",
                 status);
    }
    close(results[0]);
    return total;
}

int main(void)
{
    char dir[256], conninfo[512];
    fx_tmpdir(dir, sizeof dir);
    fl_start(dir, conninfo, sizeof conninfo);

    int measured = run_round(dir, conninfo, 0);
    FL_CHECK(measured == KEYS, "%d measurements across the machines for %d keys", measured,
             KEYS);
    for (int i = 0; i < KEYS; i++)
        FL_CHECK(fl_fleet_has(dir, i), "the fleet lacks key %d or holds another decision", i);
    FL_CHECK(fl_sql_long(dir, "SELECT count(*) FROM convfind_fleet_decisions") == KEYS,
             "the fleet holds other records than the keys measured");
    FL_CHECK(fl_sql_long(dir, "SELECT count(*) FROM convfind_fleet_leases") == 0,
             "leases were left behind");

    /* New machines joining the fleet measure nothing. */
    measured = run_round(dir, conninfo, 1);
    FL_CHECK(measured == 0, "%d keys measured again by machines joining a warm fleet",
             measured);

    fl_finish(dir);
    printf("fleet_machines: %d machines, %d keys, each measured once; a warm fleet measured "
           "nothing\n", WORKERS, KEYS);
    return 0;
}
