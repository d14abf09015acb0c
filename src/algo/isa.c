/*
 * isa.c - the CPU instruction-set levels' names (see isa.h).
 */
#include "algo/isa.h"

#include <stddef.h>
#include <strings.h>

static const char *const isa_names[CF_ISA_COUNT] = {"portable", "avx2", "avx512"};

const char *cf_isa_name(cf_isa level)
{
    if ((int)level < 0 || (int)level >= CF_ISA_COUNT)
        return "unknown";
    return isa_names[level];
}

int cf_isa_parse(const char *s)
{
    if (s == NULL)
        return -1;
    for (int i = 0; i < CF_ISA_COUNT; i++)
        if (strcasecmp(s, isa_names[i]) == 0)
            return i;
    return -1;
}
