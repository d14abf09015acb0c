/*
 * textlines.h - reading a text file line by line with a bound: every problem file the
 * tool reads (suite CSV, problem lists, MIOpenDriver lines, what a Python converter
 * prints) goes through it.
 *
 * A line longer than CLI_LINE_MAX is an error at that line, found without reading the
 * rest of it, so `tune /dev/zero` stops at once instead of filling memory; a NUL byte is
 * an error too (the file is not text); line numbers count real lines.
 */
#ifndef CONVFIND_TOOLS_TEXTLINES_H
#define CONVFIND_TOOLS_TEXTLINES_H

#include <stddef.h>
#include <stdio.h>

#define CLI_LINE_MAX 65536

typedef struct cli_lines {
    FILE *f;
    const char *name; /* for messages */
    long lineno;      /* of the line last returned */
    int own;          /* f was opened here and is closed by cli_lines_close */
    char buf[CLI_LINE_MAX + 1];
} cli_lines;

/* Reads `path` ("-": standard input).  0, or -1 with "PATH: cannot open: reason" in
 * err; either way cli_lines_close may be called. */
int cli_lines_open(cli_lines *r, const char *path, char *err, size_t errsize);

/* Reads a stream the caller owns; `name` names it in messages. */
void cli_lines_from(cli_lines *r, FILE *f, const char *name);

/* The next line without its newline (and a trailing CR) in *line, valid until the next
 * call: 1; 0 at the end; -1 with the reason in err (too long, a NUL byte, a read
 * error) and r->lineno the line it concerns. */
int cli_lines_next(cli_lines *r, char **line, char *err, size_t errsize);

void cli_lines_close(cli_lines *r);

#endif /* CONVFIND_TOOLS_TEXTLINES_H */
