/*
 * json.c - strict JSON reading into a tree, and JSON text writing (see json.h).
 *
 * Recursive descent with an explicit depth bound, so hostile input (an import file, a
 * damaged database row, the fuzzer) can neither overflow the stack nor make the reader
 * look past `len`.  Numbers are checked against the JSON grammar before strtod sees
 * them, because strtod alone accepts "inf", hex and leading '+'.
 */
#include "decision/json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *s;
    size_t len, pos;
    char *err;
    size_t errsize;
    bool failed;
} parser;

static bool fail(parser *p, const char *what)
{
    if (!p->failed && p->errsize > 0)
        snprintf(p->err, p->errsize, "JSON error at byte %zu: %s", p->pos, what);
    p->failed = true;
    return false;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len &&
           (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
            p->s[p->pos] == '\r'))
        p->pos++;
}

static bool literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return fail(p, "unknown literal");
    p->pos += n;
    return true;
}

static int hex4(parser *p)
{
    if (p->len - p->pos < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos + i];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    p->pos += 4;
    return v;
}

static void put_utf8(char *out, size_t *n, uint32_t cp)
{
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* Reads a string starting at the opening quote.  The decoded text is never longer than
 * the encoded one (an escape of 6 bytes yields at most 3, a pair of 12 at most 4), and
 * no escape can cross the closing quote because '"' is not a hex digit. */
static char *parse_string(parser *p)
{
    p->pos++; /* opening quote */
    size_t start = p->pos, end = start;
    while (end < p->len && p->s[end] != '"')
        end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->len) {
        fail(p, "unterminated string");
        return NULL;
    }
    char *out = malloc(end - start + 1);
    if (!out) {
        fail(p, "out of memory");
        return NULL;
    }
    size_t n = 0;
    while (p->pos < end) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c < 0x20) {
            fail(p, "control character in string");
            goto bad;
        }
        if (c != '\\') {
            out[n++] = (char)c;
            p->pos++;
            continue;
        }
        p->pos++;
        char e = p->s[p->pos++];
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            int hi = hex4(p);
            if (hi < 0) {
                fail(p, "bad \\u escape");
                goto bad;
            }
            uint32_t cp = (uint32_t)hi;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                int lo = -1;
                if (p->pos + 2 <= end && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
                    p->pos += 2;
                    lo = hex4(p);
                }
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail(p, "unpaired surrogate");
                    goto bad;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(p, "unpaired surrogate");
                goto bad;
            }
            if (cp == 0) {
                fail(p, "NUL in string");
                goto bad;
            }
            put_utf8(out, &n, cp);
            break;
        }
        default:
            fail(p, "bad escape");
            goto bad;
        }
    }
    out[n] = '\0';
    p->pos = end + 1;
    return out;
bad:
    free(out);
    return NULL;
}

/* The index just past the run of decimal digits starting at i (i itself if none). */
static size_t skip_digits(const parser *p, size_t i)
{
    while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
        i++;
    return i;
}

static bool parse_number(parser *p, double *out)
{
    size_t i = p->pos;
    const char *s = p->s;
    if (i < p->len && s[i] == '-')
        i++;
    if (i < p->len && s[i] == '0')
        i++;
    else if (i < p->len && s[i] >= '1' && s[i] <= '9')
        i = skip_digits(p, i);
    else
        return fail(p, "bad number");
    if (i < p->len && s[i] == '.') {
        size_t d = i + 1;
        if ((i = skip_digits(p, d)) == d)
            return fail(p, "bad number");
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        size_t d = i + 1 < p->len && (s[i + 1] == '+' || s[i + 1] == '-') ? i + 2 : i + 1;
        if ((i = skip_digits(p, d)) == d)
            return fail(p, "bad number");
    }
    char buf[64];
    if (i - p->pos >= sizeof buf)
        return fail(p, "number too long");
    memcpy(buf, s + p->pos, i - p->pos);
    buf[i - p->pos] = '\0';
    *out = strtod(buf, NULL);
    p->pos = i;
    return true;
}

static bool parse_value(parser *p, cf_json *v, int depth);

/* Arrays and objects share one loop; objects also read "name": before each value. */
static bool parse_container(parser *p, cf_json *v, int depth, bool object)
{
    char close = object ? '}' : ']';
    size_t cap = 0;
    v->type = object ? CF_JSON_OBJECT : CF_JSON_ARRAY;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return true;
    }
    for (;;) {
        if (v->count == cap) {
            size_t ncap = cap ? 2 * cap : 4;
            cf_json *items = realloc(v->items, ncap * sizeof *items);
            if (!items)
                return fail(p, "out of memory");
            v->items = items;
            if (object) {
                char **names = realloc(v->names, ncap * sizeof *names);
                if (!names)
                    return fail(p, "out of memory");
                v->names = names;
            }
            cap = ncap;
        }
        skip_ws(p);
        if (object) {
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return fail(p, "expected a member name");
            char *name = parse_string(p);
            if (!name)
                return false;
            v->names[v->count] = name;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                free(name);
                return fail(p, "expected ':'");
            }
            p->pos++;
        }
        cf_json *item = &v->items[v->count];
        memset(item, 0, sizeof *item);
        bool ok = parse_value(p, item, depth + 1);
        v->count++; /* counted even on failure so cf_json_free releases the partial item */
        if (!ok)
            return false;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return true;
        }
        return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static bool parse_value(parser *p, cf_json *v, int depth)
{
    if (depth > CF_JSON_MAX_DEPTH)
        return fail(p, "nesting too deep");
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end of input");
    switch (p->s[p->pos]) {
    case '{': return parse_container(p, v, depth, true);
    case '[': return parse_container(p, v, depth, false);
    case '"':
        v->type = CF_JSON_STRING;
        v->string = parse_string(p);
        return v->string != NULL;
    case 't': v->type = CF_JSON_BOOL; v->boolean = true; return literal(p, "true");
    case 'f': v->type = CF_JSON_BOOL; v->boolean = false; return literal(p, "false");
    case 'n': v->type = CF_JSON_NULL; return literal(p, "null");
    default: v->type = CF_JSON_NUMBER; return parse_number(p, &v->number);
    }
}

static void release(cf_json *v)
{
    free(v->string);
    for (size_t i = 0; i < v->count; i++) {
        release(&v->items[i]);
        if (v->names)
            free(v->names[i]);
    }
    free(v->items);
    free(v->names);
}

cf_json *cf_json_parse(const char *text, size_t len, char *err, size_t errsize)
{
    if (errsize > 0)
        err[0] = '\0';
    cf_json *root = calloc(1, sizeof *root);
    if (!root) {
        if (errsize > 0)
            snprintf(err, errsize, "out of memory");
        return NULL;
    }
    parser p = {.s = text, .len = text ? len : 0, .err = err, .errsize = errsize};
    bool ok = parse_value(&p, root, 0);
    if (ok) {
        skip_ws(&p);
        if (p.pos != p.len)
            ok = fail(&p, "trailing characters");
    }
    if (!ok) {
        cf_json_free(root);
        return NULL;
    }
    return root;
}

void cf_json_free(cf_json *value)
{
    if (!value)
        return;
    release(value);
    free(value);
}

const cf_json *cf_json_get(const cf_json *obj, const char *name)
{
    if (!obj || obj->type != CF_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->count; i++)
        if (strcmp(obj->names[i], name) == 0)
            return &obj->items[i];
    return NULL;
}

static void reserve(cf_strbuf *b, size_t extra)
{
    if (b->failed || b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->failed = true;
        return;
    }
    b->data = d;
    b->cap = cap;
}

void cf_strbuf_append(cf_strbuf *b, const char *text)
{
    size_t n = strlen(text);
    reserve(b, n);
    if (b->failed)
        return;
    memcpy(b->data + b->len, text, n + 1);
    b->len += n;
}

void cf_strbuf_printf(cf_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    reserve(b, (size_t)n);
    if (b->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void cf_strbuf_append_quoted(cf_strbuf *b, const char *text)
{
    cf_strbuf_append(b, "\"");
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') {
            char esc[3] = {'\\', (char)*c, '\0'};
            cf_strbuf_append(b, esc);
        } else if (*c < 0x20) {
            cf_strbuf_printf(b, "\\u%04x", *c);
        } else {
            char one[2] = {(char)*c, '\0'};
            cf_strbuf_append(b, one);
        }
    }
    cf_strbuf_append(b, "\"");
}

void cf_strbuf_free(cf_strbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
