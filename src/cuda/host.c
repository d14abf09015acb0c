/*
 * host.c - the module's cf_fail() and cf_clear_error() (util/error.h): the message goes
 * to the core's thread-local buffer through the host services, so that
 * convfind_last_error() shows it however the core was linked (the module has no
 * buffer, and no symbol, of its own for it).
 */
#include "cuda/host.h"

#include <stdarg.h>
#include <stdio.h>

#include "util/error.h"

static const cf_host_services *services;

void cf_cuda_host_set(const cf_host_services *host)
{
    services = host;
}

convfind_status cf_fail(convfind_status status, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (services)
        services->set_error(message);
    return status;
}

void cf_clear_error(void)
{
    if (services)
        services->clear_error();
}
