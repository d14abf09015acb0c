/*
 * test_control.c - the test-only settings (see test_control.h).
 */
#include "core/test_control.h"

#include <stdarg.h>
#include <stdatomic.h>

#include "algo/registry.h"
#include "util/error.h"

static atomic_int fault_kind;

cf_fault cf_test_fault(void)
{
    return (cf_fault)atomic_load_explicit(&fault_kind, memory_order_relaxed);
}

static convfind_status set_fault(int fault)
{
    if (fault < CF_FAULT_NONE || fault > CF_FAULT_EXECUTE)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "fault %d is not a cf_fault", fault);
    atomic_store_explicit(&fault_kind, fault, memory_order_relaxed);
    return CONVFIND_OK;
}

static convfind_status set_algorithms(const cf_algo *const *list, int count)
{
    if (list && (count < 1 || list[count - 1] != cf_backend_host()->reference))
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "a substitute algorithm list must end with %s",
                       cf_backend_host()->reference->name);
    cf_algos_override(list, count);
    return CONVFIND_OK;
}

convfind_status cf_test_control(cf_test_op op, ...)
{
    va_list ap;
    va_start(ap, op);
    convfind_status st;
    switch (op) {
    case CF_TEST_FAULT:
        st = set_fault(va_arg(ap, int));
        break;
    case CF_TEST_ALGORITHMS: {
        const cf_algo *const *list = va_arg(ap, const cf_algo *const *);
        st = set_algorithms(list, va_arg(ap, int));
        break;
    }
    default:
        st = cf_fail(CONVFIND_ERR_INVALID_ENUM, "test control op %d is unknown", (int)op);
        break;
    }
    va_end(ap);
    return st;
}
