/*
 * db_replay.c - the ctest `replay_determinism`: decisions measured once are replayed
 * identically by other processes sharing the database (DESIGN.md non-negotiables 7, 8).
 *
 * Through the public API only: a HYBRID context measures a few tiny problems and stores
 * them; a second HYBRID context (same process) must answer all of them from the
 * database without a Find; then two REPLAY processes, started at the same time, must
 * choose exactly the stored algorithm for each problem (source STORED, no Find), and
 * for a problem never stored both must fall back to the same heuristic choice.
 */
#include <sys/wait.h>

#include "convfind.h"
#include "db_fixture.h"

enum { STORED_PROBLEMS = 4, PROBLEMS = STORED_PROBLEMS + 1 };

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "replay_determinism: FAIL %s:%d: ", __FILE__, __LINE__);            \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

/* Problem i: small 2-D convolutions of different shapes (1x1, 3x3, strided, grouped). */
static convfind_problem *problem(int i)
{
    static const int64_t shapes[PROBLEMS][6] = {
        /* c, hw, m, k, stride, group */
        {8, 12, 16, 1, 1, 1}, {8, 10, 8, 3, 1, 1}, {16, 9, 16, 3, 2, 1},
        {16, 8, 16, 3, 1, 16}, {4, 7, 12, 5, 1, 1},
    };
    const int64_t *s = shapes[i];
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t x[4] = {1, s[0], s[1], s[1]}, w[4] = {s[2], s[0] / s[5], s[3], s[3]};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.group = s[5];
    d.strides = (convfind_ints){2, {s[4], s[4]}};
    d.pads = (convfind_ints){4, {s[3] / 2, s[3] / 2, s[3] / 2, s[3] / 2}};
    convfind_problem *p = NULL;
    return convfind_problem_create(&d, &p) == CONVFIND_OK ? p : NULL;
}

static convfind_context *context(const char *path, convfind_find_policy policy)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = 1;
    o.find_policy = policy;
    o.db_path = path;
    o.find_time_budget_s = 0.02;
    convfind_context *ctx = NULL;
    return convfind_context_create(&o, &ctx) == CONVFIND_OK ? ctx : NULL;
}

typedef struct choice {
    char algo[64];
    int source;
} choice;

/* Plans problems [0, n) on ctx; *finds gets the context's Find count afterwards. */
static int plan_all(convfind_context *ctx, int n, choice *out, uint64_t *finds)
{
    for (int i = 0; i < n; i++) {
        convfind_problem *p = problem(i);
        convfind_plan *plan = NULL;
        convfind_plan_info info;
        if (!p || convfind_plan_create(ctx, p, &plan) != CONVFIND_OK ||
            convfind_plan_get_info(plan, &info) != CONVFIND_OK)
            return -1;
        snprintf(out[i].algo, sizeof out[i].algo, "%s", info.algorithm);
        out[i].source = (int)info.source;
        convfind_plan_destroy(plan);
        convfind_problem_destroy(p);
    }
    convfind_context_stats st = {.struct_size = sizeof st};
    if (convfind_context_stats_get(ctx, &st) != CONVFIND_OK)
        return -1;
    *finds = st.finds;
    return 0;
}

static int replayer(const char *path, int fd)
{
    convfind_context *ctx = context(path, CONVFIND_FIND_REPLAY);
    choice c[PROBLEMS];
    uint64_t finds = 1;
    int ok = ctx && plan_all(ctx, PROBLEMS, c, &finds) == 0 && finds == 0;
    convfind_context_destroy(ctx);
    if (!ok)
        memset(c, 0, sizeof c);
    return write(fd, c, sizeof c) == (ssize_t)sizeof c ? 0 : 1;
}

int main(void)
{
    char dir[256], path[300];
    fx_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/replay.sqlite", dir);

    choice measured[STORED_PROBLEMS], again[STORED_PROBLEMS];
    uint64_t finds = 0;
    convfind_context *ctx = context(path, CONVFIND_FIND_HYBRID);
    CHECK(ctx && plan_all(ctx, STORED_PROBLEMS, measured, &finds) == 0, "hybrid: %s",
          convfind_last_error());
    CHECK(finds == STORED_PROBLEMS, "hybrid: %llu finds for %d new problems",
          (unsigned long long)finds, STORED_PROBLEMS);
    convfind_context_destroy(ctx);
    ctx = context(path, CONVFIND_FIND_HYBRID);
    CHECK(ctx && plan_all(ctx, STORED_PROBLEMS, again, &finds) == 0, "hybrid again");
    CHECK(finds == 0, "second hybrid context ran %llu finds", (unsigned long long)finds);
    for (int i = 0; i < STORED_PROBLEMS; i++)
        CHECK(again[i].source == CONVFIND_SOURCE_STORED && strcmp(again[i].algo,
              measured[i].algo) == 0, "problem %d: %s (source %d), measured %s", i,
              again[i].algo, again[i].source, measured[i].algo);
    convfind_context_destroy(ctx);

    int fds[2][2];
    pid_t pids[2];
    for (int k = 0; k < 2; k++) {
        CHECK(pipe(fds[k]) == 0, "pipe");
        pids[k] = fork();
        CHECK(pids[k] >= 0, "fork");
        if (pids[k] == 0)
            _exit(replayer(path, fds[k][1]));
        close(fds[k][1]);
    }
    choice replay[2][PROBLEMS];
    for (int k = 0; k < 2; k++) {
        int status = 0;
        CHECK(read(fds[k][0], replay[k], sizeof replay[k]) == (ssize_t)sizeof replay[k], "read");
        CHECK(waitpid(pids[k], &status, 0) == pids[k] && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0, "replayer %d failed", k);
        CHECK(replay[k][0].algo[0], "replayer %d: plan failed or ran a Find", k);
    }
    for (int i = 0; i < PROBLEMS; i++) {
        CHECK(strcmp(replay[0][i].algo, replay[1][i].algo) == 0 &&
              replay[0][i].source == replay[1][i].source,
              "problem %d: processes disagree: %s vs %s", i, replay[0][i].algo,
              replay[1][i].algo);
        if (i < STORED_PROBLEMS)
            CHECK(replay[0][i].source == CONVFIND_SOURCE_STORED &&
                  strcmp(replay[0][i].algo, measured[i].algo) == 0,
                  "problem %d: replay chose %s (source %d), stored %s", i, replay[0][i].algo,
                  replay[0][i].source, measured[i].algo);
        else
            CHECK(replay[0][i].source == CONVFIND_SOURCE_HEURISTIC,
                  "unstored problem: source %d, expected the heuristic", replay[0][i].source);
    }
    fx_rmdir(dir);
    printf("replay_determinism: %d stored decisions replayed identically by 2 processes, "
           "no Find: ok\n", STORED_PROBLEMS);
    return 0;
}
