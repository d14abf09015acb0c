/*
 * json_out.h - the pieces of JSON the tool prints for --json: strings with the escapes
 * RFC 8259 requires, and numbers that stay valid JSON (no inf or nan).
 */
#ifndef CONVFIND_TOOLS_JSON_OUT_H
#define CONVFIND_TOOLS_JSON_OUT_H

#include <stdio.h>

/* `s` as a quoted JSON string; NULL as null. */
void cli_json_string(FILE *out, const char *s);

/* `v` with enough digits to read back the same double; null when not finite. */
void cli_json_number(FILE *out, double v);

#endif /* CONVFIND_TOOLS_JSON_OUT_H */
