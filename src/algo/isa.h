/*
 * isa.h - the CPU instruction-set levels by name: what a context's environment may
 * limit the CPU backend's kernels to (CONVFIND_ISA, read by core/env.c) and what the
 * CPU backend's fingerprint names in a key.  Both sides parse and print the levels
 * here, so the spellings the environment accepts are the ones keys carry.  Which level
 * the machine runs and which kernels each level has are the CPU backend's business
 * (cpu/isa.h, cpu/kernel_table.h).
 */
#ifndef CONVFIND_ALGO_ISA_H
#define CONVFIND_ALGO_ISA_H

/* Ordered: a higher value includes every lower one. */
typedef enum cf_isa {
    CF_ISA_PORTABLE = 0, /* plain C, any architecture */
    CF_ISA_AVX2_FMA = 1, /* x86-64 AVX2 + FMA3 (256-bit) */
    CF_ISA_AVX512F = 2   /* x86-64 AVX-512 F, BW, DQ, VL + FMA3 (512-bit, 32 zmm registers) */
} cf_isa;

#define CF_ISA_COUNT 3

/* "portable", "avx2", "avx512" (the CONVFIND_ISA spellings); "unknown" otherwise. */
const char *cf_isa_name(cf_isa level);

/* Parses a CONVFIND_ISA spelling (case-insensitive); -1 when `s` is none of them. */
int cf_isa_parse(const char *s);

#endif /* CONVFIND_ALGO_ISA_H */
