/*
 * find_images.h - which images of the batch Find's validation checks, shared by the
 * backends' Find hooks (backend.h; src/cpu/find.c, src/cuda/find.c).  In algo/, not
 * find/, as the backends include no layer above this one (tests/layers/check_layers.py).
 *
 * The reference a candidate is compared with is a simple kernel, not a fast one, so it
 * computes the first and the last image only, each as a problem of one image: a
 * candidate that gets the batch stride wrong fails on the last one.  Header-only: the
 * CUDA module uses it without the core (cmake/convfindCuda.cmake).
 */
#ifndef CONVFIND_ALGO_FIND_IMAGES_H
#define CONVFIND_ALGO_FIND_IMAGES_H

#include <stddef.h>
#include <stdint.h>

#include "problem/problem.h"

typedef struct cf_find_images {
    int64_t index[2];        /* the images checked, in batch order */
    int n;                   /* how many: 2, or the batch's size when it is 0 or 1 */
    size_t image_x, image_y; /* values of one image of X, of Y */
    cf_problem one;          /* p as a problem of one image, for the reference */
} cf_find_images;

/* The checked images of problem `p`. */
static inline cf_find_images cf_find_images_of(const cf_problem *p)
{
    cf_find_images im = {.index = {0, p->n - 1}, .n = p->n > 1 ? 2 : (int)p->n, .one = *p};
    im.image_x = p->n > 0 ? p->x_elems / (size_t)p->n : 0;
    im.image_y = p->n > 0 ? p->y_elems / (size_t)p->n : 0;
    im.one.n = 1;
    im.one.x_elems = im.image_x;
    im.one.y_elems = im.image_y;
    return im;
}

#endif /* CONVFIND_ALGO_FIND_IMAGES_H */
