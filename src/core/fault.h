/*
 * fault.h - test-only fault injection into plan execution.
 *
 * Compiled into the library, inert until a test sets a fault.  A fault makes the first
 * algorithm an execution tries fail in one of the two ways DESIGN.md non-negotiable 5
 * names, so tests can check that the call falls back, stays correct, counts the
 * fallback and leaves the decision alone.  The reference, the last resort, is exempt.
 */
#ifndef CONVFIND_FAULT_H
#define CONVFIND_FAULT_H

typedef enum cf_fault {
    CF_FAULT_NONE = 0,
    CF_FAULT_WORKSPACE = 1, /* its workspace allocation fails (algorithms with workspace) */
    CF_FAULT_EXECUTE = 2    /* it returns CONVFIND_ERR_BACKEND */
} cf_fault;

/* Sets the fault for every later execution in the process (CF_FAULT_NONE clears). */
void cf_fault_set(cf_fault fault);

/* The fault in effect (an atomic read). */
cf_fault cf_fault_get(void);

#endif /* CONVFIND_FAULT_H */
