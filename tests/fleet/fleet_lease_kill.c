/*
 * fleet_lease_kill.c - a machine killed (SIGKILL) while it holds a key's fleet lease
 * blocks the key only until the lease expires; then another machine takes it over,
 * measures it and stores it, and the dead machine's lease is gone (issue 20).
 *
 * The machines are processes of this host with their own user databases, so no local
 * lease or process check can help: only the fleet lease's expiry (the server's clock)
 * frees the key.
 */
#include "fleet_fixture.h"

enum { LEASE_MS = 2500 };

static int64_t now_ms(void)
{
    return cf_pq_now_ms();
}

int main(void)
{
    char dir[256], conninfo[512], path[512], key[128];
    fx_tmpdir(dir, sizeof dir);
    fl_start(dir, conninfo, sizeof conninfo);
    fx_key(7, key, sizeof key);

    int ready[2];
    FL_CHECK(pipe(ready) == 0, "pipe");
    pid_t holder = fork();
    FL_CHECK(holder >= 0, "fork");
    if (holder == 0) {
        cf_db_config c = fl_config(dir, 0, conninfo, path, sizeof path);
        c.fleet_lease_ms = LEASE_MS;
        cf_db *db = fl_open(&c);
        cf_decision d;
        cf_db_action a = cf_db_begin(db, key, &(cf_db_request){.wait_ms = 0}, &d);
        char ok = a == CF_DB_ACTION_BENCHMARK ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause(); /* "measuring" until killed */
    }
    char ok = 0;
    FL_CHECK(read(ready[0], &ok, 1) == 1 && ok == 'y', "the first machine did not get the key");
    int64_t leased_at = now_ms();
    FL_CHECK(fl_sql_long(dir, "SELECT count(*) FROM convfind_fleet_leases") == 1,
             "the measuring machine holds no fleet lease");
    kill(holder, SIGKILL);
    int status;
    waitpid(holder, &status, 0);
    FL_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the holder was not killed");

    cf_db_config c = fl_config(dir, 1, conninfo, path, sizeof path);
    c.fleet_lease_ms = LEASE_MS;
    cf_db *db = fl_open(&c);
    cf_decision d;
    /* While the dead machine's lease lasts, the key is someone else's: wait, then the
     * heuristic. */
    cf_db_action a = cf_db_begin(db, key, &(cf_db_request){.wait_ms = 200}, &d);
    FL_CHECK(a == CF_DB_ACTION_HEURISTIC || now_ms() - leased_at >= LEASE_MS,
             "a live lease of a dead machine was taken over after %lld ms (action %d)",
             (long long)(now_ms() - leased_at), (int)a);
    cf_decision_clear(&d);
    /* Once it expires, this machine measures the key. */
    a = cf_db_begin(db, key, &(cf_db_request){.wait_ms = 4 * LEASE_MS}, &d);
    int64_t waited = now_ms() - leased_at;
    FL_CHECK(a == CF_DB_ACTION_BENCHMARK, "the key was not taken over after the lease expired "
             "(action %d after %lld ms)", (int)a, (long long)waited);
    FL_CHECK(waited >= LEASE_MS - 100, "taken over after %lld ms, before the lease expired",
             (long long)waited);
    cf_decision_clear(&d);
    d = fx_decision(7, 3);
    cf_db_finish(db, key, &d);
    cf_decision_clear(&d);
    FL_CHECK(cf_db_warning_count(db) == 0, "warnings on the machine that took over");
    cf_db_close(db);
    FL_CHECK(fl_fleet_has(dir, 7), "the decision of the machine that took over is not stored");
    FL_CHECK(fl_sql_long(dir, "SELECT count(*) FROM convfind_fleet_leases") == 0,
             "the lease was not ended by the store");

    fl_finish(dir);
    printf("fleet_lease_kill: the key of a machine killed holding its lease was taken over "
           "after %lld ms (lease %d ms)\n", (long long)waited, LEASE_MS);
    return 0;
}
