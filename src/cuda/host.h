/*
 * host.h - the services the core lends the CUDA module (algo/backend.h,
 * cf_host_services), kept for the module's life.
 */
#ifndef CONVFIND_CUDA_HOST_H
#define CONVFIND_CUDA_HOST_H

#include "algo/backend.h"

/* Keeps `host` (which outlives the module) for cf_fail()/cf_clear_error(). */
void cf_cuda_host_set(const cf_host_services *host);

#endif /* CONVFIND_CUDA_HOST_H */
