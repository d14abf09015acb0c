/*
 * test_cuda_reuse.c - decisions persist: a first process measures three problems on
 * the GPU into a find-db file, then a second process (this program run again with
 * "--child") opens the same file, plans the same problems with no Find (finds == 0,
 * every plan's source STORED) and computes correct results with the stored cuDNN
 * configurations.  The last problem is a depthwise one, where cuDNN's runtime-compiled
 * engines win (docs/cuda.md): when the parent's choice there compiled code, the parent
 * stored it (compiled_stored) and the child loads it instead of compiling
 * (compiled_loaded), with correct results.  Exits 77 (skip) without a GPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_util.h"

#define N_PROBLEMS 4
#define DEPTHWISE (N_PROBLEMS - 1)

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
    if (i == DEPTHWISE) { /* MobileNetV2's expanded 56x56 depthwise layer */
        d->x_dims[0] = 8;
        d->x_dims[1] = d->w_dims[0] = d->group = 96;
        d->x_dims[2] = d->x_dims[3] = 56;
        d->w_dims[1] = 1;
    }
}

/* Plans and checks every problem; returns the number of failures. */
static int run(const char *db, int child, uint64_t *stored)
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
    printf("%s: finds %llu, compiled code stored %llu, loaded %llu\n", child ? "child" : "parent",
           (unsigned long long)s.finds, (unsigned long long)s.compiled_stored,
           (unsigned long long)s.compiled_loaded);
    if (!child)
        *stored = s.compiled_stored;
    else if (s.compiled_loaded != *stored || s.compiled_stored != 0) {
        printf("FAIL: the child loaded %llu compiled plans (the parent stored %llu) and "
               "stored %llu\n", (unsigned long long)s.compiled_loaded,
               (unsigned long long)*stored, (unsigned long long)s.compiled_stored);
        failures++;
    }
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
    uint64_t stored = 0;
    if (argc == 4 && strcmp(argv[1], "--child") == 0) {
        stored = strtoull(argv[3], NULL, 10);
        return run(argv[2], 1, &stored) ? 1 : 0;
    }
    char db[] = "/tmp/convfind-cuda-reuse-XXXXXX";
    int fd = mkstemp(db);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    unlink(db); /* the database creates the file itself */
    int failures = run(db, 0, &stored);
    if (!stored)
        printf("NOTE: no choice of the parent compiled code at run time, so loading compiled "
               "code was not exercised\n");
    char stored_arg[32];
    snprintf(stored_arg, sizeof stored_arg, "%llu", (unsigned long long)stored);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "--child", db, stored_arg, (char *)NULL);
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
