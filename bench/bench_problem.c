/*
 * bench_problem.c - parses the wire line of one benchmark layer (bench_problem.h).
 */
#include "bench_problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const act_names[] = {"none", "relu", "leaky_relu", "clip", "sigmoid",
                                        "tanh", "hard_sigmoid"};

/* "a,b,c" into v[0..want); 0 when exactly `want` integers were read. */
static int parse_list(const char *s, int64_t *v, int want)
{
    for (int i = 0; i < want; i++) {
        char *end;
        v[i] = strtoll(s, &end, 10);
        if (end == s || (i + 1 < want ? *end != ',' : *end != '\0'))
            return -1;
        s = end + 1;
    }
    return 0;
}

static int set_field(bench_problem *p, const char *key, const char *val)
{
    int nd = p->dims;
    if (strcmp(key, "op") == 0) {
        if (strcmp(val, "conv") != 0 && strcmp(val, "convT") != 0)
            return -1;
        p->transpose = strcmp(val, "convT") == 0;
        return 0;
    }
    if (strcmp(key, "dims") == 0) {
        p->dims = atoi(val);
        return p->dims >= 1 && p->dims <= 3 ? 0 : -1;
    }
    if (strcmp(key, "act") == 0) {
        for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
            if (strcmp(val, act_names[i]) == 0) {
                p->act = (bench_act)i;
                return 0;
            }
        return -1;
    }
    if (strcmp(key, "algo") == 0)
        return snprintf(p->algo, sizeof p->algo, "%s", val) < (int)sizeof p->algo ? 0 : -1;
    if (strcmp(key, "alpha") == 0 || strcmp(key, "beta") == 0) {
        char *end;
        float f = strtof(val, &end);
        *(key[0] == 'a' ? &p->alpha : &p->beta) = f;
        return *end == '\0' && end != val ? 0 : -1;
    }
    static const struct {
        const char *key;
        size_t offset;
    } scalars[] = {{"n", offsetof(bench_problem, n)}, {"c", offsetof(bench_problem, c)},
                   {"k", offsetof(bench_problem, k)}, {"g", offsetof(bench_problem, group)}};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        if (strcmp(key, scalars[i].key) == 0)
            return parse_list(val, (int64_t *)((char *)p + scalars[i].offset), 1);
    if (strcmp(key, "bias") == 0) {
        int64_t b;
        if (parse_list(val, &b, 1) != 0 || (b != 0 && b != 1))
            return -1;
        p->bias = (int)b;
        return 0;
    }
    /* The lists need dims, which the driver always sends first. */
    if (nd == 0)
        return -1;
    if (strcmp(key, "x") == 0)
        return parse_list(val, p->x, nd);
    if (strcmp(key, "kern") == 0)
        return parse_list(val, p->kern, nd);
    if (strcmp(key, "stride") == 0)
        return parse_list(val, p->stride, nd);
    if (strcmp(key, "dil") == 0)
        return parse_list(val, p->dil, nd);
    if (strcmp(key, "pads") == 0)
        return parse_list(val, p->pads, 2 * nd);
    if (strcmp(key, "opad") == 0)
        return parse_list(val, p->opad, nd);
    return -1;
}

int bench_problem_parse(const char *text, bench_problem *p, char *err, size_t err_size)
{
    memset(p, 0, sizeof *p);
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf) {
        snprintf(err, err_size, "problem text too long");
        return -1;
    }
    char *save = NULL;
    for (char *tok = strtok_r(buf, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
        char *eq = strchr(tok, '=');
        if (eq)
            *eq = '\0';
        if (!eq || set_field(p, tok, eq + 1) != 0) {
            snprintf(err, err_size, "bad token '%s%s%s'", tok, eq ? "=" : "", eq ? eq + 1 : "");
            return -1;
        }
    }
    if (p->dims == 0 || p->n < 1 || p->c < 1 || p->k < 1 || p->group < 1 || p->x[0] < 1 ||
        p->kern[0] < 1 || p->stride[0] < 1 || p->dil[0] < 1) {
        snprintf(err, err_size, "incomplete problem '%s'", text);
        return -1;
    }
    return 0;
}

void bench_problem_out(const bench_problem *p, int64_t out[3])
{
    for (int i = 0; i < p->dims; i++) {
        int64_t span = (p->kern[i] - 1) * p->dil[i] + 1, pad = p->pads[i] + p->pads[p->dims + i];
        out[i] = p->transpose ? (p->x[i] - 1) * p->stride[i] + span - pad + p->opad[i]
                              : (p->x[i] + pad - span) / p->stride[i] + 1;
    }
}

static size_t prod(const int64_t *v, int n)
{
    size_t r = 1;
    for (int i = 0; i < n; i++)
        r *= (size_t)v[i];
    return r;
}

size_t bench_problem_x_elems(const bench_problem *p)
{
    return (size_t)(p->n * p->c) * prod(p->x, p->dims);
}

size_t bench_problem_w_elems(const bench_problem *p)
{
    return (size_t)(p->transpose ? p->c * (p->k / p->group) : p->k * (p->c / p->group)) *
           prod(p->kern, p->dims);
}

size_t bench_problem_y_elems(const bench_problem *p)
{
    int64_t out[3];
    bench_problem_out(p, out);
    return (size_t)(p->n * p->k) * prod(out, p->dims);
}
