/*
 * onnx_list.c - the problems of an ONNX model, for `convfind tune MODEL.onnx`.
 *
 * Reading ONNX protobufs is Python's job (the `convfind.onnx` module of convfind's
 * Python package): it prints the model's convolutions in the problem-list format on
 * stdout, and this reads that output with the same reader as a problem file.  The
 * interpreter is $CONVFIND_PYTHON, else python3 from PATH.  Its stderr is kept aside
 * so that a failure becomes one line naming the cause, most of all the common one: the
 * module is not installed.
 */
#include "onnx_list.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_args.h"

extern char **environ;

/* The last non-empty line of what the child printed on stderr (`f`, rewound). */
static void last_line(FILE *f, char *buf, size_t size)
{
    char line[512];
    buf[0] = '\0';
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0])
            snprintf(buf, size, "%s", line);
    }
}

int cli_onnx_problems(const char *model, const char *const *shapes, int nshapes,
                      const char *math, cli_problem_list *list, char *err, size_t errsize)
{
    const char *python = getenv("CONVFIND_PYTHON");
    if (!python || !python[0])
        python = "python3";
    const char *argv[6 + 2 * CLI_MAX_INPUT_SHAPES + 1];
    int argc = 0;
    argv[argc++] = python;
    argv[argc++] = "-m";
    argv[argc++] = "convfind.onnx";
    argv[argc++] = model;
    for (int i = 0; i < nshapes && i < CLI_MAX_INPUT_SHAPES; i++) {
        argv[argc++] = "--input-shape";
        argv[argc++] = shapes[i];
    }
    argv[argc++] = "--math";
    argv[argc++] = math;
    argv[argc] = NULL;

    int out[2] = {-1, -1};
    FILE *errors = tmpfile();
    posix_spawn_file_actions_t fa;
    pid_t pid = -1;
    int rc = !errors || pipe(out) != 0 ? errno : 0;
    if (rc == 0 && (rc = posix_spawn_file_actions_init(&fa)) == 0) {
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, fileno(errors), STDERR_FILENO);
        posix_spawn_file_actions_addclose(&fa, out[0]);
        rc = posix_spawnp(&pid, python, &fa, NULL, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    if (out[1] >= 0)
        close(out[1]);
    if (rc != 0) {
        snprintf(err, errsize, "%s: cannot run %s to read the model: %s", model, python,
                 strerror(rc));
        if (out[0] >= 0)
            close(out[0]);
        if (errors)
            fclose(errors);
        return -1;
    }

    char name[600];
    snprintf(name, sizeof name, "%s (as printed by %s -m convfind.onnx)", model, python);
    FILE *f = fdopen(out[0], "r");
    cli_lines *r = f ? malloc(sizeof *r) : NULL;
    int result = -1;
    if (r) {
        cli_lines_from(r, f, name);
        result = cli_problems_read(r, list, err, errsize);
    } else {
        snprintf(err, errsize, "%s: out of memory", model);
    }
    free(r);
    /* Closing our end first: a child still writing after a parse error gets EPIPE. */
    if (f)
        fclose(f);
    else
        close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        continue;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char why[512];
        last_line(errors, why, sizeof why);
        if (strstr(why, "No module named") && strstr(why, "convfind"))
            snprintf(err, errsize, "%s: the Python module convfind.onnx is not importable by %s "
                     "(install convfind's Python package or set PYTHONPATH; it said: %s)",
                     model, python, why);
        else if (result == 0 || !WIFEXITED(status))
            snprintf(err, errsize, "%s: %s -m convfind.onnx failed (%s %d): %s", model, python,
                     WIFEXITED(status) ? "exit status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                     why[0] ? why : "no message");
        result = -1;
    }
    fclose(errors);
    return result;
}
