/*
 * winograd_portable.c - the Winograd transforms in portable C (compiler vector
 * extensions), for any architecture.
 */
#define CF_SIMD_PORTABLE
#include "cpu/winograd_kernels.h"
