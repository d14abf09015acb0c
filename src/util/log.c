/*
 * log.c - formatting and routing the library's messages (see log.h).
 */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

/* Long enough for a database warning naming a whole key and two paths. */
#define CF_LOG_MESSAGE_MAX 8192

static const char *const level_names[] = {"log", "error", "warning", "info", "debug"};

const char *cf_log_level_name(convfind_log_level level)
{
    return (unsigned)level <= (unsigned)CONVFIND_LOG_DEBUG ? level_names[level] : "log";
}

convfind_log_level cf_log_level_parse(const char *s)
{
    for (int i = CONVFIND_LOG_ERROR; s && i <= CONVFIND_LOG_DEBUG; i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return (convfind_log_level)i;
    return CONVFIND_LOG_DEFAULT;
}

bool cf_log_enabled(const cf_log *log, convfind_log_level level)
{
    convfind_log_level max = log && log->level != CONVFIND_LOG_DEFAULT ? log->level
                                                                       : CONVFIND_LOG_WARNING;
    return level != CONVFIND_LOG_DEFAULT && level <= max;
}

void cf_log_msg(const cf_log *log, convfind_log_level level, const char *fmt, ...)
{
    if (!cf_log_enabled(log, level))
        return;
    char text[CF_LOG_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (char *c = text; *c; c++) /* one line, whatever was formatted into it */
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
    if (log && log->fn)
        log->fn(log->user, level, text);
    else
        fprintf(stderr, "convfind: %s: %s\n", cf_log_level_name(level), text);
}
