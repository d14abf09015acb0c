/*
 * test_control.h - the one entry point through which tests reach inside the library:
 * fault injection into executions and the substitution of the host backend's
 * algorithm list.
 *
 * Compiled into the library and inert until a test calls cf_test_control; no other
 * function exists for tests alone.  The settings are process-wide and are not to be
 * changed while another thread creates plans or executes them.
 */
#ifndef CONVFIND_CORE_TEST_CONTROL_H
#define CONVFIND_CORE_TEST_CONTROL_H

#include "convfind.h"

/* What an injected fault does to the first algorithm an execution tries (never to the
 * reference, the last resort), so tests can check that the call falls back, stays
 * correct, counts the fallback and leaves the decision alone (DESIGN.md
 * non-negotiable 5). */
typedef enum cf_fault {
    CF_FAULT_NONE = 0,
    CF_FAULT_WORKSPACE = 1, /* its workspace allocation fails (algorithms with workspace) */
    CF_FAULT_EXECUTE = 2    /* it returns CONVFIND_ERR_BACKEND */
} cf_fault;

typedef enum cf_test_op {
    /* (cf_fault fault): the fault of every later execution; CF_FAULT_NONE clears it. */
    CF_TEST_FAULT = 1,
    /* (const cf_algo *const *list, int count): the host backend's algorithm list for
     * every later Find and plan (algo/registry.h); `list` ends with the reference and
     * outlives its use.  NULL restores the backend's own. */
    CF_TEST_ALGORITHMS = 2
} cf_test_op;

/* Applies one setting.  CONVFIND_ERR_INVALID_ENUM for an unknown op or fault,
 * CONVFIND_ERR_INVALID_ATTRIBUTE for a list without the reference last. */
convfind_status cf_test_control(cf_test_op op, ...);

/* The fault in effect (an atomic read; what plan execution consults). */
cf_fault cf_test_fault(void);

#endif /* CONVFIND_CORE_TEST_CONTROL_H */
