/*
 * cuda_copy.h - device memory for `convfind run --device cuda`: a CUDA context executes
 * on device pointers, and the tool has its tensors on the host.
 *
 * The tool has no link-time dependency on a GPU stack (DESIGN.md non-negotiable 10), so
 * this loads the CUDA driver (libcuda.so.1) at run time and uses the device's primary
 * context, the one the CUDA runtime and so the library's CUDA backend use too: pointers
 * allocated here are valid there.
 */
#ifndef CONVFIND_TOOLS_CUDA_COPY_H
#define CONVFIND_TOOLS_CUDA_COPY_H

#include <stddef.h>

typedef struct cli_cuda cli_cuda;

/* Loads the driver and makes device `index`'s primary context usable.  0, or -1 with the
 * reason in err. */
int cli_cuda_open(int index, cli_cuda **out, char *err, size_t errsize);

/* A device copy of `bytes` bytes at `host` (host NULL: uninitialised) in *dev, freed by
 * cli_cuda_close.  0, or -1 with the reason in err. */
int cli_cuda_upload(cli_cuda *c, const void *host, size_t bytes, void **dev, char *err,
                    size_t errsize);

/* Waits for the device's work, then copies `bytes` bytes from `dev` to `host`. */
int cli_cuda_download(cli_cuda *c, void *host, const void *dev, size_t bytes, char *err,
                      size_t errsize);

/* Frees every allocation and releases the context.  NULL allowed. */
void cli_cuda_close(cli_cuda *c);

#endif /* CONVFIND_TOOLS_CUDA_COPY_H */
