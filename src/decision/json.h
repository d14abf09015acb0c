/*
 * json.h - the small, strict JSON reader and writer behind stored and exported records.
 *
 * Decisions are stored in the database as JSON text and exported as JSON Lines, so one
 * parser serves both the database loader and `convfind db import`; both read bytes that
 * another process, another version or a person may have written, so the reader is
 * strict (RFC 8259 grammar, bounded depth, no NUL inside strings) and never reads past
 * the length it is given.  It builds a small tree that the record layer walks.
 */
#ifndef CONVFIND_DECISION_JSON_H
#define CONVFIND_DECISION_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define CF_JSON_MAX_DEPTH 16

typedef enum cf_json_type {
    CF_JSON_NULL,
    CF_JSON_BOOL,
    CF_JSON_NUMBER,
    CF_JSON_STRING,
    CF_JSON_ARRAY,
    CF_JSON_OBJECT
} cf_json_type;

typedef struct cf_json cf_json;
struct cf_json {
    cf_json_type type;
    bool boolean;
    double number;
    char *string;    /* decoded UTF-8, NUL-terminated (STRING) */
    size_t count;    /* ARRAY / OBJECT: number of items */
    cf_json *items;  /* ARRAY / OBJECT: the values */
    char **names;    /* OBJECT: the member names, parallel to items */
};

/* Parses exactly `len` bytes of `text` (surrounding whitespace allowed, nothing else).
 * Returns a tree the caller frees with cf_json_free(), or NULL with a message naming
 * the byte offset and the problem in `err` (always NUL-terminated when errsize > 0).
 * Thread-safe. */
cf_json *cf_json_parse(const char *text, size_t len, char *err, size_t errsize);

void cf_json_free(cf_json *value);

/* The member `name` of an object, or NULL (also when `obj` is not an object). */
const cf_json *cf_json_get(const cf_json *obj, const char *name);

/* A growable text buffer for writing JSON.  Once an allocation fails `failed` stays set
 * and further appends do nothing, so writers check once at the end. */
typedef struct cf_strbuf {
    char *data;
    size_t len, cap;
    bool failed;
} cf_strbuf;

void cf_strbuf_append(cf_strbuf *b, const char *text);
void cf_strbuf_printf(cf_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends `text` as a quoted JSON string with the required escapes. */
void cf_strbuf_append_quoted(cf_strbuf *b, const char *text);
void cf_strbuf_free(cf_strbuf *b);

#endif /* CONVFIND_DECISION_JSON_H */
