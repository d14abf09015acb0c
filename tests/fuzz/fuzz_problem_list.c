/*
 * fuzz_problem_list.c - libFuzzer target for the problem files `convfind tune` reads
 * (tools/problem_list.c): the key=value problem list, the suite CSV and MIOpenDriver
 * lines, through the bounded line reader and the tool's flag parser.
 *
 * Besides "no crash, no out-of-bounds access" (ASan/UBSan): a rejection names the
 * stream on one line of text; an accepted input gives at least one problem, each with
 * ranks that fit the descriptor and a count of at least 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    cli_lines *r = malloc(sizeof *r);
    if (!r) {
        fclose(f);
        return 0;
    }
    cli_lines_from(r, f, "fuzz");
    cli_problem_list list = {0};
    char err[1024];
    int rc = cli_problems_read(r, &list, err, sizeof err);
    fclose(f);
    free(r);
    if (rc != 0) {
        if (strncmp(err, "fuzz", 4) != 0 || strchr(err, '\n'))
            abort(); /* the message names the stream and stays on one line */
    } else {
        if (list.n == 0)
            abort();
        for (size_t i = 0; i < list.n; i++) {
            const convfind_conv_desc *d = &list.v[i].desc;
            if (d->x_rank < 0 || d->x_rank > CONVFIND_MAX_RANK || d->w_rank < 0 ||
                d->w_rank > CONVFIND_MAX_RANK || list.v[i].count < 1)
                abort();
        }
    }
    cli_problems_free(&list);
    return 0;
}
