/*
 * intern.h - strings that live as long as the process, one copy per distinct text.
 *
 * The public API promises names in static storage (convfind_find_result.algorithm), but
 * parameterised algorithms (a cuDNN engine configuration, "cuda.cudnn:nhwc:e12:k3=2")
 * have names made at run time.  Interning gives such a name a stable address without
 * making the caller free anything.  The table only grows, by the number of distinct
 * configuration names this process has measured: a few hundred short strings.
 */
#ifndef CONVFIND_UTIL_INTERN_H
#define CONVFIND_UTIL_INTERN_H

/* The process-lifetime copy of `s` (the same pointer for equal texts), or NULL when
 * out of memory.  Thread-safe. */
const char *cf_intern(const char *s);

#endif /* CONVFIND_UTIL_INTERN_H */
