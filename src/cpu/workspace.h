/*
 * workspace.h - overflow-checked carving of one workspace buffer into aligned parts.
 *
 * Algorithms compute their workspace() size and later split args->workspace with the
 * same sequence of cf_ws_take() calls, so the size and the layout cannot drift apart.
 * Every part starts on a 64-byte boundary (a cache line, and a full zmm register).
 * Overflow is sticky: once a product or sum does not fit in size_t, `overflow` stays set
 * and the offsets are meaningless; callers check it once at the end.
 */
#ifndef CONVFIND_CPU_WORKSPACE_H
#define CONVFIND_CPU_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cf_ws {
    size_t bytes;  /* running total, a multiple of 64 */
    bool overflow;
} cf_ws;

/* a * b, setting ws->overflow (and returning 0) when it does not fit. */
static inline size_t cf_ws_mul(cf_ws *ws, size_t a, size_t b)
{
    if (b != 0 && a > SIZE_MAX / b) {
        ws->overflow = true;
        return 0;
    }
    return a * b;
}

/* Reserves `count` elements of `elem` bytes and returns the part's byte offset. */
static inline size_t cf_ws_take(cf_ws *ws, size_t count, size_t elem)
{
    size_t offset = ws->bytes;
    size_t size = cf_ws_mul(ws, count, elem);
    if (size > SIZE_MAX - 63 - offset) {
        ws->overflow = true;
        return 0;
    }
    ws->bytes = offset + ((size + 63) & ~(size_t)63);
    return offset;
}

#endif /* CONVFIND_CPU_WORKSPACE_H */
