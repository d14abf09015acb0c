/*
 * module.c - finding and loading the CUDA backend module (see module.h).
 *
 * CMake gives this file the module's file name (CONVFIND_CUDA_MODULE_FILE) and the
 * configured install libdir (CONVFIND_INSTALL_LIBDIR) in every build, with or without
 * the CUDA backend: the core does not know whether a module exists until it looks.
 */
#define _GNU_SOURCE /* dladdr */
#include "algo/module.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"

#if !defined(CONVFIND_CUDA_MODULE_FILE) || !defined(CONVFIND_INSTALL_LIBDIR)
#error "CMake defines CONVFIND_CUDA_MODULE_FILE and CONVFIND_INSTALL_LIBDIR for this file"
#endif

#define PATH_BYTES 4096

/* The first request loads under `mu`; `tried` lets every later one skip the lock. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool tried;
static const cf_backend *loaded;
static char failure[512];

/* snprintf() for the messages and paths below, which are cut to fit on purpose. */
static void format(char *dst, size_t size, const char *fmt, ...) CF_PRINTF(3, 4);
static void format(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, size, fmt, ap);
    va_end(ap);
}

static void host_set_error(const char *message)
{
    cf_fail(CONVFIND_OK, "%s", message);
}

static void host_clear_error(void)
{
    cf_clear_error();
}

static const cf_host_services host = {
    .abi = CF_BACKEND_ABI,
    .version = CONVFIND_VERSION_STRING,
    .set_error = host_set_error,
    .clear_error = host_clear_error,
};

/* Loads `path` and takes its backend.  Otherwise `why` names the path and the reason;
 * *present is false when the module file itself was not found there. */
static bool try_load(const char *path, char *why, size_t size, bool *present)
{
    *present = true;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        e = e ? e : "dlopen failed";
        /* dlerror() names the module when the module is missing, and the library it
         * lacks (libcudnn.so.9, ...) when only a dependency is. */
        *present = strncmp(e, path, strlen(path)) != 0 ||
                   (strchr(path, '/') && access(path, F_OK) == 0);
        if (strstr(e, path))
            format(why, size, "%s", e);
        else
            format(why, size, "%s: %s", path, e);
        return false;
    }
    void *sym = dlsym(h, CF_MODULE_ENTRY_NAME);
    if (!sym) {
        format(why, size, "%s: no %s (not a convfind backend module)", path,
               CF_MODULE_ENTRY_NAME);
        dlclose(h);
        return false;
    }
    cf_module_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* POSIX: a dlsym() address converts to a function */
    char reason[256] = "";
    const cf_backend *b = entry(&host, reason, sizeof reason);
    if (!b || b->abi != CF_BACKEND_ABI) {
        format(why, size, "%s: %s", path,
               b ? "it implements another version of the backend interface" : reason);
        dlclose(h);
        return false;
    }
    loaded = b;
    return true;
}

static void load(const char *explicit_path)
{
    char why[PATH_BYTES];
    bool present;
    if (explicit_path && *explicit_path) {
        if (!try_load(explicit_path, why, sizeof why, &present))
            format(failure, sizeof failure,
                   "cannot load the CUDA backend module (CONVFIND_CUDA_MODULE): %s", why);
        return;
    }
    static char own_dir[PATH_BYTES], paths[3][PATH_BYTES];
    int n = 0;
    Dl_info info;
    const char *self = dladdr(&loaded, &info) && info.dli_fname ? info.dli_fname : "";
    const char *slash = strrchr(self, '/');
    format(own_dir, sizeof own_dir, "%.*s", slash ? (int)(slash - self) : 0, self);
    if (own_dir[0] && strcmp(own_dir, CONVFIND_INSTALL_LIBDIR) != 0)
        format(paths[n++], PATH_BYTES, "%s/%s", own_dir, CONVFIND_CUDA_MODULE_FILE);
    format(paths[n++], PATH_BYTES, "%s/%s", CONVFIND_INSTALL_LIBDIR, CONVFIND_CUDA_MODULE_FILE);
    format(paths[n++], PATH_BYTES, "%s", CONVFIND_CUDA_MODULE_FILE);
    for (int i = 0; i < n; i++) {
        if (try_load(paths[i], why, sizeof why, &present))
            return;
        /* The first module that is there but will not load says most. */
        if (present && !failure[0])
            format(failure, sizeof failure, "cannot load the CUDA backend module: %s", why);
    }
    if (failure[0])
        return;
    const char *hint = "CONVFIND_CUDA=ON builds it; CONVFIND_CUDA_MODULE names it";
    if (n == 3)
        format(failure, sizeof failure, "no CUDA backend module: %s is neither in %s, nor in "
               "%s, nor on the loader's search path (%s)", CONVFIND_CUDA_MODULE_FILE, own_dir,
               CONVFIND_INSTALL_LIBDIR, hint);
    else
        format(failure, sizeof failure, "no CUDA backend module: %s is neither in %s nor on "
               "the loader's search path (%s)", CONVFIND_CUDA_MODULE_FILE,
               CONVFIND_INSTALL_LIBDIR, hint);
}

convfind_status cf_module_cuda(const char *path, const cf_backend **out)
{
    if (!atomic_load_explicit(&tried, memory_order_acquire)) {
        pthread_mutex_lock(&mu);
        if (!atomic_load_explicit(&tried, memory_order_relaxed)) {
            load(path);
            atomic_store_explicit(&tried, true, memory_order_release);
        }
        pthread_mutex_unlock(&mu);
    }
    *out = loaded;
    return loaded ? CONVFIND_OK : cf_fail(CONVFIND_ERR_UNAVAILABLE, "%s", failure);
}
