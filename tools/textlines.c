/*
 * textlines.c - bounded line reading (see textlines.h).
 */
#include "textlines.h"

#include <errno.h>
#include <string.h>

int cli_lines_open(cli_lines *r, const char *path, char *err, size_t errsize)
{
    cli_lines_from(r, NULL, path); /* closable whatever happens below */
    if (strcmp(path, "-") == 0) {
        cli_lines_from(r, stdin, "stdin");
        return 0;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errsize, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    cli_lines_from(r, f, path);
    r->own = 1;
    return 0;
}

void cli_lines_from(cli_lines *r, FILE *f, const char *name)
{
    r->f = f;
    r->name = name;
    r->lineno = 0;
    r->own = 0;
}

int cli_lines_next(cli_lines *r, char **line, char *err, size_t errsize)
{
    size_t n = 0;
    int c;
    r->lineno++;
    while ((c = getc(r->f)) != EOF && c != '\n') {
        if (c == '\0') {
            snprintf(err, errsize, "a NUL byte: this is not a text file");
            return -1;
        }
        if (n == CLI_LINE_MAX) {
            snprintf(err, errsize, "longer than %d characters", CLI_LINE_MAX);
            return -1;
        }
        r->buf[n++] = (char)c;
    }
    if (ferror(r->f)) {
        snprintf(err, errsize, "cannot read: %s", strerror(errno));
        return -1;
    }
    if (c == EOF && n == 0) {
        r->lineno--;
        return 0;
    }
    while (n > 0 && r->buf[n - 1] == '\r')
        n--;
    r->buf[n] = '\0';
    *line = r->buf;
    return 1;
}

void cli_lines_close(cli_lines *r)
{
    if (r->own && r->f)
        fclose(r->f);
    r->f = NULL;
}
