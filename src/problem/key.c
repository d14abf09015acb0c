/*
 * key.c - the canonical key text, its hash, and its parser (see key.h, docs/key.md).
 *
 * The writer and the parser share one field table order; the parser accepts only text
 * that the writer would produce, checked by rebuilding the key from the parsed fields
 * and comparing, so two spellings of one problem can never become two database rows.
 */
#include "problem/key.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem/shape.h"
#include "util/error.h"

int cf_workspace_class(size_t limit)
{
    if (limit == 0)
        return -1;
    int c = 0;
    while (limit >>= 1)
        c++;
    return c;
}

size_t cf_workspace_class_bytes(int ws_class)
{
    return ws_class < 0 ? 0 : (size_t)1 << ws_class;
}

/* Multiply-xorshift over 8-byte words: about 5 cycles per word instead of FNV-1a's
 * 4 cycles per byte, which keeps hashing a ~250-byte key well under the hit budget. */
uint64_t cf_key_hash_bytes(const char *text, size_t len)
{
    const uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t h = 0xcbf29ce484222325ull ^ (len * k);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, text + i, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    memcpy(&tail, text + i, len - i);
    h = (h ^ tail) * k;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

/* ------------------------------------------------------------------------- */
/* Writer                                                                     */
/* ------------------------------------------------------------------------- */

static const char *const op_names[] = {"conv", "convtranspose"};
static const char *const dtype_names[] = {"f32", "f16", "bf16"};
static const char *const layout_names[] = {"nchw", "nhwc"};
static const char *const math_names[] = {"strict", "tf32", "split_tf32"};
static const char *const weights_names[] = {"per_call", "constant"};
static const char *const act_names[] = {"none",    "relu", "leaky_relu",  "clip",
                                        "sigmoid", "tanh", "hard_sigmoid"};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Parameters each activation reads, in order (alpha, then beta). */
static int act_params(convfind_activation act)
{
    return act == CONVFIND_ACT_LEAKY_RELU ? 1
           : act == CONVFIND_ACT_CLIP || act == CONVFIND_ACT_HARD_SIGMOID ? 2 : 0;
}

static const char *name_of(const char *const *names, int count, int value)
{
    return value >= 0 && value < count ? names[value] : NULL;
}

/* The writer appends with hand-rolled formatting: the key is built on every plan
 * creation, and ~25 snprintf calls cost microseconds where this costs a few hundred ns. */
typedef struct text_buf {
    char *s;
    size_t size, len; /* len may exceed size: then the text did not fit */
} text_buf;

static void put_str(text_buf *t, const char *str)
{
    for (; *str; str++, t->len++)
        if (t->len < t->size)
            t->s[t->len] = *str;
}

static void put_char(text_buf *t, char ch)
{
    if (t->len < t->size)
        t->s[t->len] = ch;
    t->len++;
}

static void put_i64(text_buf *t, int64_t v)
{
    char digits[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        put_char(t, '-');
    while (n)
        put_char(t, digits[--n]);
}

/* ";name=value" */
static void put_field(text_buf *t, const char *name, int64_t v)
{
    put_char(t, ';');
    put_str(t, name);
    put_char(t, '=');
    put_i64(t, v);
}

static void put_dims(text_buf *t, const char *name, const int64_t *v, int n, char sep)
{
    put_char(t, ';');
    put_str(t, name);
    put_char(t, '=');
    for (int i = 0; i < n; i++) {
        if (i)
            put_char(t, sep);
        put_i64(t, v[i]);
    }
}

/* Shortest-enough decimal that reads back as the same float. */
static void put_float(text_buf *t, float f)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.9g", (double)f);
    put_str(t, buf);
}

convfind_status cf_key_make(const cf_problem *p, const cf_fingerprint *fp, cf_key *key)
{
    const char *op = name_of(op_names, COUNT(op_names), (int)p->op);
    const char *dt = name_of(dtype_names, COUNT(dtype_names), (int)p->dtype);
    const char *lay = name_of(layout_names, COUNT(layout_names), (int)p->layout);
    const char *math = name_of(math_names, COUNT(math_names), (int)p->math_mode);
    const char *act = name_of(act_names, COUNT(act_names), (int)p->act);
    const char *weights = name_of(weights_names, COUNT(weights_names), (int)fp->weights);
    if (!op || !dt || !lay || !math || !act || p->nsp < 1 || p->nsp > CF_SP)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM,
                       "problem has an unknown op %d, dtype %d, layout %d, math %d, "
                       "activation %d or spatial rank %d", (int)p->op, (int)p->dtype,
                       (int)p->layout, (int)p->math_mode, (int)p->act, p->nsp);
    if (!weights)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "weights usage %d is not a cf_weights",
                       (int)fp->weights);
    text_buf t = {key->text, sizeof key->text, 0};
    put_char(&t, 'v');
    put_i64(&t, CF_KEY_VERSION);
    const char *words[] = {op, dt, lay};
    for (int i = 0; i < 3; i++) {
        put_char(&t, ';');
        put_str(&t, words[i]);
    }
    put_field(&t, "n", p->n);
    put_field(&t, "c", p->c);
    put_dims(&t, "in", p->in, p->nsp, 'x');
    put_field(&t, "m", p->m);
    put_dims(&t, "k", p->k, p->nsp, 'x');
    put_field(&t, "g", p->group);
    put_dims(&t, "s", p->stride, p->nsp, 'x');
    put_dims(&t, "d", p->dil, p->nsp, 'x');
    put_dims(&t, "pb", p->pad_begin, p->nsp, ',');
    put_dims(&t, "pe", p->pad_end, p->nsp, ',');
    put_dims(&t, "opad", p->out_pad, p->nsp, ',');
    put_dims(&t, "out", p->out, p->nsp, 'x');
    put_field(&t, "bias", p->has_bias ? 1 : 0);
    put_field(&t, "z", p->has_residual ? 1 : 0);
    put_str(&t, ";act=");
    put_str(&t, act);
    int np = act_params(p->act);
    if (np >= 1) {
        put_char(&t, '(');
        put_float(&t, p->alpha);
        if (np == 2) {
            put_char(&t, ',');
            put_float(&t, p->beta);
        }
        put_char(&t, ')');
    }
    put_str(&t, ";math=");
    put_str(&t, math);
    put_str(&t, ";weights=");
    put_str(&t, weights);
    if (fp->ws_class < 0) {
        put_str(&t, ";ws=inf");
    } else {
        put_str(&t, ";ws=2^");
        put_i64(&t, fp->ws_class);
    }
    put_str(&t, ";be=cpu:");
    put_str(&t, fp->cpu);
    put_char(&t, ':');
    put_str(&t, fp->isa);
    put_str(&t, ":t");
    put_i64(&t, fp->threads);
    put_char(&t, '\0');
    t.len--; /* the terminator is written but not counted */
    if (t.len >= t.size) {
        key->text[0] = '\0';
        key->len = 0;
        key->hash = 0;
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "key text needs %zu bytes, more than the %d allowed", t.len + 1,
                       CF_KEY_TEXT_MAX);
    }
    key->len = t.len;
    key->hash = cf_key_hash_bytes(key->text, key->len);
    key->weights = fp->weights;
    return CONVFIND_OK;
}

/* ------------------------------------------------------------------------- */
/* Parser                                                                     */
/* ------------------------------------------------------------------------- */

typedef struct cursor {
    const char *s;
    const char *field; /* name of the field being read, for messages */
} cursor;

static convfind_status bad(const cursor *c)
{
    return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                   "key text: field \"%s\" is malformed near \"%.24s\"", c->field, c->s);
}

/* Consumes `lit` or fails. */
static int eat(cursor *c, const char *lit)
{
    size_t n = strlen(lit);
    if (strncmp(c->s, lit, n) != 0)
        return 0;
    c->s += n;
    return 1;
}

static int read_i64(cursor *c, int64_t *v)
{
    if (!(*c->s == '-' || (*c->s >= '0' && *c->s <= '9')))
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(c->s, &end, 10);
    if (errno || end == c->s)
        return 0;
    *v = x;
    c->s = end;
    return 1;
}

static int read_word(cursor *c, const char *const *names, int count, int *value)
{
    for (int i = 0; i < count; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(c->s, names[i], n) == 0 && (c->s[n] == ';' || c->s[n] == '(' || !c->s[n])) {
            *value = i;
            c->s += n;
            return 1;
        }
    }
    return 0;
}

/* ";name=" then one value. */
static int read_field(cursor *c, const char *name, int64_t *v)
{
    c->field = name;
    return eat(c, ";") && eat(c, name) && eat(c, "=") && read_i64(c, v);
}

/* ";name=" then up to CF_SP values separated by `sep`; *n receives the count. */
static int read_list(cursor *c, const char *name, char sep, int64_t *v, int *n)
{
    c->field = name;
    if (!eat(c, ";") || !eat(c, name) || !eat(c, "="))
        return 0;
    int i = 0;
    do {
        if (i == CF_SP || !read_i64(c, &v[i]))
            return 0;
        i++;
    } while (*c->s == sep && c->s++);
    *n = i;
    return 1;
}

static int read_float(cursor *c, float *v)
{
    char *end;
    *v = strtof(c->s, &end);
    if (end == c->s)
        return 0;
    c->s = end;
    return 1;
}

/* The spatial fields, each with exactly nsp values. */
static convfind_status parse_spatial(cursor *c, cf_problem *p, int64_t *kdims)
{
    struct {
        const char *name;
        char sep;
        int64_t *dst;
    } f[] = {{"k", 'x', kdims},          {"g", 0, NULL},
             {"s", 'x', p->stride},      {"d", 'x', p->dil},
             {"pb", ',', p->pad_begin},  {"pe", ',', p->pad_end},
             {"opad", ',', p->out_pad},  {"out", 'x', p->out}};
    for (int i = 0; i < COUNT(f); i++) {
        int n;
        if (!f[i].dst) {
            if (!read_field(c, f[i].name, &p->group))
                return bad(c);
            continue;
        }
        if (!read_list(c, f[i].name, f[i].sep, f[i].dst, &n))
            return bad(c);
        if (n != p->nsp)
            return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                           "key text: field \"%s\" has %d values, spatial rank is %d",
                           f[i].name, n, p->nsp);
    }
    return CONVFIND_OK;
}

/* Values in a range that keeps every formula below far from int64 overflow. */
#define KEY_DIM_MAX ((int64_t)1 << 31)

static convfind_status check_shapes(cf_problem *p)
{
    int64_t scal[] = {p->n, p->c, p->m, p->group};
    for (int i = 0; i < COUNT(scal); i++)
        if (scal[i] < 1 || scal[i] > KEY_DIM_MAX)
            return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                           "key text: n, c, m or group value %" PRId64 " out of range", scal[i]);
    if (p->c % p->group || p->m % p->group)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                       "key text: group %" PRId64 " does not divide c %" PRId64 " and m %" PRId64,
                       p->group, p->c, p->m);
    for (int a = 0; a < p->nsp; a++) {
        int64_t pos[] = {p->in[a], p->k[a], p->stride[a], p->dil[a], p->out[a]};
        for (int i = 0; i < COUNT(pos); i++)
            if (pos[i] < 1 || pos[i] > KEY_DIM_MAX)
                return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                               "key text: spatial axis %d has value %" PRId64 " out of range", a,
                               pos[i]);
        int64_t pads[] = {p->pad_begin[a], p->pad_end[a], p->out_pad[a]};
        for (int i = 0; i < COUNT(pads); i++)
            if (pads[i] < -KEY_DIM_MAX || pads[i] > KEY_DIM_MAX)
                return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                               "key text: pad %" PRId64 " on axis %d out of range", pads[i], a);
        int64_t span = p->dil[a] * (p->k[a] - 1) + 1, want;
        if (p->op == CONVFIND_OP_CONV)
            want = cf_floor_div(p->in[a] + p->pad_begin[a] + p->pad_end[a] - span,
                                p->stride[a]) + 1;
        else
            want = p->stride[a] * (p->in[a] - 1) + p->out_pad[a] + span - p->pad_begin[a] -
                   p->pad_end[a];
        if (want != p->out[a])
            return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                           "key text: out %" PRId64 " on axis %d, the other fields give %" PRId64,
                           p->out[a], a, want);
    }
    int64_t in_sp = 1, out_sp = 1, k_sp = 1;
    for (int a = 0; a < CF_SP; a++) {
        if (__builtin_mul_overflow(in_sp, p->in[a], &in_sp) ||
            __builtin_mul_overflow(out_sp, p->out[a], &out_sp) ||
            __builtin_mul_overflow(k_sp, p->k[a], &k_sp))
            return cf_fail(CONVFIND_ERR_OVERFLOW, "key text: spatial sizes overflow");
    }
    int64_t wa = p->op == CONVFIND_OP_CONV ? p->m : p->c;
    int64_t wb = p->op == CONVFIND_OP_CONV ? p->c / p->group : p->m / p->group;
    int64_t x, w, y, bytes, ds = (int64_t)cf_dtype_size(p->dtype);
    if (__builtin_mul_overflow(p->n * p->c, in_sp, &x) || __builtin_mul_overflow(x, ds, &bytes) ||
        __builtin_mul_overflow(wa * wb, k_sp, &w) || __builtin_mul_overflow(w, ds, &bytes) ||
        __builtin_mul_overflow(p->n * p->m, out_sp, &y) || __builtin_mul_overflow(y, ds, &bytes) ||
        (uint64_t)x > SIZE_MAX / 4 || (uint64_t)w > SIZE_MAX / 4 || (uint64_t)y > SIZE_MAX / 4)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "key text: tensor sizes overflow");
    p->in_sp = in_sp;
    p->out_sp = out_sp;
    p->k_sp = k_sp;
    p->x_elems = (size_t)x;
    p->w_elems = (size_t)w;
    p->y_elems = (size_t)y;
    return CONVFIND_OK;
}

static convfind_status parse_fingerprint(cursor *c, cf_fingerprint *fp)
{
    int w;
    c->field = "weights";
    if (!eat(c, ";weights=") || !read_word(c, weights_names, COUNT(weights_names), &w))
        return bad(c);
    fp->weights = (cf_weights)w;
    c->field = "ws";
    if (!eat(c, ";ws="))
        return bad(c);
    if (eat(c, "inf")) {
        fp->ws_class = -1;
    } else {
        int64_t v;
        if (!eat(c, "2^") || !read_i64(c, &v) || v < 0 || v >= (int64_t)(8 * sizeof(size_t)))
            return bad(c);
        fp->ws_class = (int)v;
    }
    c->field = "be";
    if (!eat(c, ";be=cpu:"))
        return bad(c);
    const char *colon = strchr(c->s, ':');
    if (!colon || (size_t)(colon - c->s) >= sizeof fp->cpu)
        return bad(c);
    memcpy(fp->cpu, c->s, (size_t)(colon - c->s));
    fp->cpu[colon - c->s] = '\0';
    c->s = colon + 1;
    colon = strchr(c->s, ':');
    if (!colon || (size_t)(colon - c->s) >= sizeof fp->isa)
        return bad(c);
    memcpy(fp->isa, c->s, (size_t)(colon - c->s));
    fp->isa[colon - c->s] = '\0';
    c->s = colon + 1;
    int64_t t;
    if (!eat(c, "t") || !read_i64(c, &t) || t < 1 || t > 4096 || *c->s)
        return bad(c);
    fp->threads = (int)t;
    return CONVFIND_OK;
}

static convfind_status parse_fields(cursor *c, cf_problem *p, cf_fingerprint *fp)
{
    int v;
    c->field = "version";
    int64_t version;
    if (!eat(c, "v") || !read_i64(c, &version))
        return bad(c);
    if (version != CF_KEY_VERSION)
        return cf_fail(CONVFIND_ERR_NOT_FOUND,
                       "key text has version %" PRId64 ", this build reads %d", version,
                       CF_KEY_VERSION);
    c->field = "op";
    if (!eat(c, ";") || !read_word(c, op_names, COUNT(op_names), &v))
        return bad(c);
    p->op = (convfind_op)v;
    c->field = "dtype";
    if (!eat(c, ";") || !read_word(c, dtype_names, COUNT(dtype_names), &v))
        return bad(c);
    p->dtype = (convfind_dtype)v;
    c->field = "layout";
    if (!eat(c, ";") || !read_word(c, layout_names, COUNT(layout_names), &v))
        return bad(c);
    p->layout = (convfind_layout)v;
    if (!read_field(c, "n", &p->n) || !read_field(c, "c", &p->c) ||
        !read_list(c, "in", 'x', p->in, &p->nsp) || !read_field(c, "m", &p->m))
        return bad(c);
    int64_t kdims[CF_SP];
    convfind_status st = parse_spatial(c, p, kdims);
    if (st != CONVFIND_OK)
        return st;
    memcpy(p->k, kdims, sizeof(int64_t) * (size_t)p->nsp);
    int64_t bias, z;
    if (!read_field(c, "bias", &bias) || bias < 0 || bias > 1 || !read_field(c, "z", &z) ||
        z < 0 || z > 1)
        return bad(c);
    p->has_bias = bias == 1;
    p->has_residual = z == 1;
    c->field = "act";
    if (!eat(c, ";act=") || !read_word(c, act_names, COUNT(act_names), &v))
        return bad(c);
    p->act = (convfind_activation)v;
    int np = act_params(p->act);
    if (np > 0 && (!eat(c, "(") || !read_float(c, &p->alpha) ||
                   (np == 2 && (!eat(c, ",") || !read_float(c, &p->beta))) || !eat(c, ")")))
        return bad(c);
    c->field = "math";
    if (!eat(c, ";math=") || !read_word(c, math_names, COUNT(math_names), &v))
        return bad(c);
    p->math_mode = (convfind_math_mode)v;
    return parse_fingerprint(c, fp);
}

convfind_status cf_key_parse(const char *text, cf_problem *p, cf_fingerprint *fp)
{
    if (!text || !p || !fp)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "key text, problem or fingerprint is NULL");
    size_t len = strlen(text);
    if (len >= CF_KEY_TEXT_MAX)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "key text is %zu bytes, longer than %d",
                       len, CF_KEY_TEXT_MAX - 1);
    memset(p, 0, sizeof *p);
    memset(fp, 0, sizeof *fp);
    for (int a = 0; a < CF_SP; a++)
        p->in[a] = p->out[a] = p->k[a] = p->stride[a] = p->dil[a] = 1;
    cursor c = {text, "version"};
    convfind_status st = parse_fields(&c, p, fp);
    if (st == CONVFIND_OK)
        st = check_shapes(p);
    cf_key again;
    if (st == CONVFIND_OK && (st = cf_key_make(p, fp, &again)) == CONVFIND_OK &&
        strcmp(again.text, text) != 0)
        st = cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                     "key text is not canonical: it reads back as \"%s\"", again.text);
    if (st != CONVFIND_OK) {
        memset(p, 0, sizeof *p);
        memset(fp, 0, sizeof *fp);
    }
    return st;
}
