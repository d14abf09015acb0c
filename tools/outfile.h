/*
 * outfile.h - writing an output file so that a failed write never destroys anything:
 * the data goes to a temporary file beside the target, which is renamed over it only
 * once complete; on failure only that temporary file is removed.  A target that exists
 * and is not a regular file (a FIFO, a device, /dev/stdout) cannot be replaced by a
 * rename; it is written in place, never truncated, created or removed.  A symbolic link
 * is followed: the file it points to is replaced, the link stays.
 */
#ifndef CONVFIND_TOOLS_OUTFILE_H
#define CONVFIND_TOOLS_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct cli_outfile {
    FILE *f;     /* write here */
    char *final; /* the file that is replaced (a link resolved); NULL when written in place */
    char *temp;  /* the temporary file; NULL when written in place */
} cli_outfile;

/* Opens `path` for writing ("-": standard output, in place).  0, or -1 with the reason
 * in err. */
int cli_outfile_open(cli_outfile *o, const char *path, char *err, size_t errsize);

/* Flushes and closes, then renames the temporary file into place.  0, or -1 with the
 * reason in err, the temporary file removed and the target untouched. */
int cli_outfile_commit(cli_outfile *o, char *err, size_t errsize);

/* Closes and removes the temporary file; the target is untouched. */
void cli_outfile_abort(cli_outfile *o);

#endif /* CONVFIND_TOOLS_OUTFILE_H */
