/*
 * module.h - loading the CUDA backend, which lives in a module of its own.
 *
 * libconvfind and the convfind tool have no link-time dependency on CUDA, cudart or
 * cuDNN: the CUDA backend is libconvfind_cuda.so (CONVFIND_CUDA_MODULE_FILE), which
 * links them, and is loaded with dlopen() the first time something asks for it (a
 * context with CONVFIND_DEVICE_CUDA, convfind_cuda_available(), the algorithm list), in
 * the way ONNX Runtime loads its CUDA provider.  Where it is looked for, in order:
 *
 *   1. the path the first request names (CONVFIND_CUDA_MODULE, which the core reads
 *      with the rest of the environment, core/env.h): when given, the only place tried;
 *   2. the directory of the loaded core library (dladdr(): libconvfind.so's directory,
 *      or the program's for a program linked with libconvfind.a);
 *   3. the install libdir this library was configured with;
 *   4. the dynamic loader's search path (LD_LIBRARY_PATH, ld.so.cache).
 *
 * The module's entry (CF_MODULE_ENTRY) must accept this library's ABI and version.  The
 * attempt is made once per process, by the first request: the path a later request
 * names is not looked at.  Its result, or the one-line reason it failed (the path tried
 * and dlerror(), a missing entry, a version mismatch), is remembered.  The module stays
 * loaded until the process exits.
 */
#ifndef CONVFIND_ALGO_MODULE_H
#define CONVFIND_ALGO_MODULE_H

#include "algo/backend.h"

/* The CUDA backend, loaded now from `path` (NULL or empty: the usual places, above)
 * unless an earlier call loaded it or failed to.  CONVFIND_ERR_UNAVAILABLE, with the
 * remembered reason as the error message, when its module cannot be loaded.
 * Thread-safe. */
convfind_status cf_module_cuda(const char *path, const cf_backend **out);

#endif /* CONVFIND_ALGO_MODULE_H */
