/*
 * outfile.c - outputs written beside their target and renamed into place (see
 * outfile.h).
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void reset(cli_outfile *o)
{
    free(o->final);
    free(o->temp);
    memset(o, 0, sizeof *o);
}

int cli_outfile_open(cli_outfile *o, const char *path, char *err, size_t errsize)
{
    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        /* No O_TRUNC, no O_CREAT: a device or FIFO is written as it is. */
        int fd = open(path, O_WRONLY);
        o->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (!o->f) {
            snprintf(err, errsize, "cannot open for writing: %s", strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        return 0;
    }
    char resolved[PATH_MAX];
    o->final = strdup(exists && realpath(path, resolved) ? resolved : path);
    size_t n = o->final ? strlen(o->final) : 0;
    o->temp = o->final ? malloc(n + 16) : NULL;
    if (!o->temp) {
        snprintf(err, errsize, "out of memory");
        reset(o);
        return -1;
    }
    /* ".<name>.XXXXXX" in the target's directory, so that the rename stays on one file
     * system and cannot be mistaken for the output. */
    const char *slash = strrchr(o->final, '/');
    size_t dir = slash ? (size_t)(slash - o->final) + 1 : 0;
    snprintf(o->temp, n + 16, "%.*s.%s.XXXXXX", (int)dir, o->final, o->final + dir);
    int fd = mkstemp(o->temp);
    if (fd < 0) {
        snprintf(err, errsize, "cannot create a file beside it: %s", strerror(errno));
        reset(o);
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, exists ? (st.st_mode & 07777) : (0666 & ~mask));
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        snprintf(err, errsize, "cannot write: %s", strerror(errno));
        close(fd);
        unlink(o->temp);
        reset(o);
        return -1;
    }
    return 0;
}

int cli_outfile_commit(cli_outfile *o, char *err, size_t errsize)
{
    if (o->f == stdout) {
        int bad = fflush(stdout) != 0 || ferror(stdout);
        if (bad)
            snprintf(err, errsize, "cannot write: %s", strerror(errno));
        memset(o, 0, sizeof *o);
        return bad ? -1 : 0;
    }
    bool ok = fflush(o->f) == 0 && !ferror(o->f) && (!o->temp || fsync(fileno(o->f)) == 0);
    int saved = errno;
    if (fclose(o->f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    o->f = NULL;
    if (ok && o->temp && rename(o->temp, o->final) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        snprintf(err, errsize, "cannot write: %s", strerror(saved));
        if (o->temp)
            unlink(o->temp);
    }
    reset(o);
    return ok ? 0 : -1;
}

void cli_outfile_abort(cli_outfile *o)
{
    if (o->f && o->f != stdout)
        fclose(o->f);
    if (o->temp)
        unlink(o->temp);
    reset(o);
}
