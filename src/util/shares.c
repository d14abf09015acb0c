/*
 * shares.c - contiguous shares of a range of indices, claimed own share first
 * (see shares.h).
 */
#include "util/shares.h"

void cf_shares_deal(cf_share *shares, size_t n, size_t count)
{
    for (size_t t = 0; t < n; t++) {
        atomic_init(&shares[t].next, t * count / n);
        shares[t].end = (t + 1) * count / n;
    }
}

void cf_shares_run(cf_share *shares, size_t n, size_t self, convfind_task_fn fn, void *arg)
{
    for (size_t k = 0; k < n; k++) {
        cf_share *s = &shares[(self + k) % n];
        /* A share already used up is passed over by a load, which leaves its line shared
         * among the cores, rather than an increment, which takes it from the others. */
        if (atomic_load_explicit(&s->next, memory_order_relaxed) >= s->end)
            continue;
        for (;;) {
            size_t i = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
            if (i >= s->end)
                break;
            fn(arg, i);
        }
    }
}
