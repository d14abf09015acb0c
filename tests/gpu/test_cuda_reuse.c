/*
 * test_cuda_reuse.c - decisions persist: a first process measures three problems on
 * the GPU into a find-db file, then a second process (this program run again with
 * "--child") opens the same file, plans the same problems with no Find (finds == 0,
 * every plan's source STORED) and computes correct results with the stored cuDNN
 * configurations.  Exits 77 (skip) without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_util.h"

#define N_PROBLEMS 3

static void desc_of(convfind_conv_desc *d, int i)
{
    convfind_conv_desc_init(d);
    d->x_rank = d->w_rank = 4;
    d->layout = i == 1 ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
    d->dtype = i == 2 ? CONVFIND_DTYPE_F16 : CONVFIND_DTYPE_F32;
    d->x_dims[0] = 2;
    d->x_dims[1] = 16 * (i + 1);
    d->x_dims[2] = d->x_dims[3] = 10;
    d->w_dims[0] = 32;
    d->w_dims[1] = 16 * (i + 1);
    d->w_dims[2] = d->w_dims[3] = 3;
    d->pads.count = 4;
    d->pads.v[0] = d->pads.v[1] = d->pads.v[2] = d->pads.v[3] = 1;
}

/* Plans and checks every problem; returns the number of failures. */
static int run(const char *db, int child)
{
    convfind_context *ctx = gu_context(child ? CONVFIND_FIND_REPLAY : CONVFIND_FIND_HYBRID, db);
    int failures = 0;
    for (int i = 0; i < N_PROBLEMS; i++) {
        convfind_conv_desc d;
        desc_of(&d, i);
        convfind_problem *p = gu_problem(&d);
        gu_data data;
        gu_data_init(&data, &d, p, (unsigned)i + 3);
        convfind_plan *plan;
        gu_check(convfind_plan_create(ctx, p, &plan), "plan");
        convfind_plan_info info;
        gu_check(convfind_plan_get_info(plan, &info), "info");
        convfind_tensors t = gu_tensors(&data);
        gu_poison(&data);
        gu_check(convfind_execute(plan, &t), "execute");
        double err = gu_error(&data);
        printf("%s: problem %d -> %s (source %d), error %.3g\n", child ? "child" : "parent", i,
               info.algorithm, (int)info.source, err);
        failures += !(err <= gu_tolerance(&d));
        if (child && info.source != CONVFIND_SOURCE_STORED) {
            printf("FAIL: child plan %d was not served from the database\n", i);
            failures++;
        }
        convfind_plan_destroy(plan);
        gu_data_free(&data);
        convfind_problem_destroy(p);
    }
    convfind_context_stats s = {.struct_size = sizeof s};
    gu_check(convfind_context_stats_get(ctx, &s), "stats");
    printf("%s: finds %llu\n", child ? "child" : "parent", (unsigned long long)s.finds);
    if ((child && s.finds != 0) || (!child && s.finds != N_PROBLEMS)) {
        printf("FAIL: %s ran %llu finds\n", child ? "child" : "parent",
               (unsigned long long)s.finds);
        failures++;
    }
    convfind_context_destroy(ctx);
    return failures;
}

int main(int argc, char **argv)
{
    gu_require_gpu();
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return run(argv[2], 1) ? 1 : 0;
    char db[] = "/tmp/convfind-cuda-reuse-XXXXXX";
    int fd = mkstemp(db);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    unlink(db); /* the database creates the file itself */
    int failures = run(db, 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "--child", db, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        printf("FAIL: the second process failed (status %d)\n", status);
        failures++;
    }
    char side[sizeof db + 16];
    unlink(db);
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
