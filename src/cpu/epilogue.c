/*
 * epilogue.c - the row forms of the shared fused epilogue (see epilogue.h).
 *
 * The per-element rule lives in cf_epilogue_value(); these loops only feed it rows so
 * that vectorising kernels can hand over whole runs at once.
 */
#include "cpu/epilogue.h"

void cf_epilogue_channel_run(const cf_problem *p, float *y, size_t count, float bias,
                             const float *z)
{
    for (size_t i = 0; i < count; i++)
        y[i] = cf_epilogue_value(p, y[i], bias, z ? z[i] : 0.0f);
}

void cf_epilogue_pixel_run(const cf_problem *p, float *y, size_t count, const float *bias,
                           const float *z)
{
    for (size_t i = 0; i < count; i++)
        y[i] = cf_epilogue_value(p, y[i], bias ? bias[i] : 0.0f, z ? z[i] : 0.0f);
}
