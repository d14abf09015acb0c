/*
 * record.c - decisions and records to and from JSON, with every field checked (see
 * record.h), and the environment fingerprint records are validated against.
 *
 * Everything read here may come from a damaged file or another machine, so each field
 * is checked for type and range before it reaches a cf_decision: algorithm names must
 * fit and be printable, times finite and non-negative, counts integral and bounded.
 */
#include "decision/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decision/confidence.h"
#include "decision/json.h"
#include "problem/key.h"
#include "util/error.h"

static void copy_string(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src);
}

void cf_db_env_make(cf_db_env *env, const cf_fingerprint *host)
{
    memset(env, 0, sizeof *env);
    copy_string(env->library, sizeof env->library, CONVFIND_VERSION_STRING);
    copy_string(env->backends, sizeof env->backends, "cpu");
    /* The same CPU name and ISA level the key's fingerprint carries (key.h). */
    snprintf(env->device, sizeof env->device, "%s;%s", host->cpu, host->isa);
}

bool cf_db_env_equal(const cf_db_env *a, const cf_db_env *b)
{
    return strcmp(a->library, b->library) == 0 && strcmp(a->backends, b->backends) == 0 &&
           strcmp(a->device, b->device) == 0;
}

void cf_db_env_describe(const cf_db_env *env, char *buf, size_t size)
{
    snprintf(buf, size, "%s|%s|%s", env->library, env->backends, env->device);
}

convfind_status cf_db_decision_copy(cf_decision *dst, const cf_decision *src)
{
    *dst = *src;
    dst->candidates = NULL;
    if (src->n_candidates > 0) {
        dst->candidates = malloc((size_t)src->n_candidates * sizeof *dst->candidates);
        if (!dst->candidates) {
            memset(dst, 0, sizeof *dst);
            return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy a decision of %d candidates",
                           src->n_candidates);
        }
        memcpy(dst->candidates, src->candidates,
               (size_t)src->n_candidates * sizeof *dst->candidates);
    }
    return CONVFIND_OK;
}

void cf_db_bad_candidates(const cf_decision *d, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < d->n_candidates && n + CF_ALGO_NAME_MAX + 2 < size; i++)
        if (d->candidates[i].status == CF_CAND_FAILED)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", d->candidates[i].algo);
}

void cf_db_record_clear(cf_db_record *r)
{
    if (!r)
        return;
    free(r->key);
    cf_decision_clear(&r->decision);
    memset(r, 0, sizeof *r);
}

static const char *const status_names[] = {"ok", "failed", "not_applicable", "abandoned"};

static void decision_json(cf_strbuf *b, const cf_decision *d)
{
    cf_strbuf_append(b, "{\"algo\":");
    cf_strbuf_append_quoted(b, d->algo);
    cf_strbuf_append(b, ",\"candidates\":[");
    for (int i = 0; i < d->n_candidates; i++) {
        const cf_candidate_stats *c = &d->candidates[i];
        unsigned st = (unsigned)c->status < 4 ? (unsigned)c->status : 1u;
        cf_strbuf_append(b, i ? ",{\"algo\":" : "{\"algo\":");
        cf_strbuf_append_quoted(b, c->algo);
        /* %.17g round-trips a double exactly, so replay sees the very numbers Find saw. */
        cf_strbuf_printf(b,
                         ",\"status\":\"%s\",\"median_ms\":%.17g,\"min_ms\":%.17g,"
                         "\"spread\":%.17g,\"repeats\":%d,\"workspace\":%zu,\"validated\":%s",
                         status_names[st], c->median_ms, c->min_ms, c->spread, c->repeats,
                         c->workspace_bytes, c->validated ? "true" : "false");
        /* Written only when set: readers before it ignore the member, and every other
         * record stays as it was. */
        cf_strbuf_append(b, c->not_needed ? ",\"not_needed\":true}" : "}");
    }
    cf_strbuf_append(b, "]}");
}

char *cf_db_decision_to_json(const cf_decision *d)
{
    cf_strbuf b = {0};
    decision_json(&b, d);
    if (b.failed) {
        cf_strbuf_free(&b);
        return NULL;
    }
    return b.data;
}

char *cf_db_record_to_jsonl(const cf_db_record *r)
{
    cf_strbuf b = {0};
    cf_strbuf_append(&b, "{\"format\":\"" CF_DB_FORMAT "\",\"key\":");
    cf_strbuf_append_quoted(&b, r->key);
    cf_strbuf_append(&b, ",\"env\":{\"library\":");
    cf_strbuf_append_quoted(&b, r->env.library);
    cf_strbuf_append(&b, ",\"backends\":");
    cf_strbuf_append_quoted(&b, r->env.backends);
    cf_strbuf_append(&b, ",\"device\":");
    cf_strbuf_append_quoted(&b, r->env.device);
    cf_strbuf_append(&b, "},\"decision\":");
    decision_json(&b, &r->decision);
    cf_confidence c;
    cf_decision_confidence(&r->decision, &c);
    cf_strbuf_append(&b, ",\"measured\":{\"budget_ms\":");
    if (r->decision.budget_ms > 0)
        cf_strbuf_printf(&b, "%.17g", r->decision.budget_ms);
    else
        cf_strbuf_append(&b, "null");
    cf_strbuf_printf(&b, ",\"spread\":%.17g,\"margin\":", c.spread);
    if (c.runner_up)
        cf_strbuf_printf(&b, "%.17g}", c.margin);
    else
        cf_strbuf_append(&b, "null}");
    cf_strbuf_append(&b, ",\"provenance\":{\"host\":");
    cf_strbuf_append_quoted(&b, r->host);
    cf_strbuf_printf(&b, ",\"time\":%lld}}", (long long)r->time);
    if (b.failed) {
        cf_strbuf_free(&b);
        return NULL;
    }
    return b.data;
}

/* A string member that must exist, fit `size` bytes and be printable ASCII. */
static convfind_status get_text(const cf_json *obj, const char *name, char *dst, size_t size,
                                bool allow_empty)
{
    const cf_json *v = cf_json_get(obj, name);
    if (!v || v->type != CF_JSON_STRING)
        return cf_fail(CONVFIND_ERR_IO, "record field \"%s\" is missing or not a string", name);
    size_t n = strlen(v->string);
    if (n >= size || (n == 0 && !allow_empty))
        return cf_fail(CONVFIND_ERR_IO, "record field \"%s\" has length %zu, allowed %s..%zu",
                       name, n, allow_empty ? "0" : "1", size - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v->string[i] < 0x20 || v->string[i] == 0x7f)
            return cf_fail(CONVFIND_ERR_IO, "record field \"%s\" has a control character at %zu",
                           name, i);
    memcpy(dst, v->string, n + 1);
    return CONVFIND_OK;
}

/* A number member that must exist, be finite and lie in [lo, hi]; integral if asked. */
static convfind_status get_number(const cf_json *obj, const char *name, double lo, double hi,
                                  bool integral, double *out)
{
    const cf_json *v = cf_json_get(obj, name);
    if (!v || v->type != CF_JSON_NUMBER)
        return cf_fail(CONVFIND_ERR_IO, "record field \"%s\" is missing or not a number", name);
    double x = v->number;
    if (!isfinite(x) || x < lo || x > hi || (integral && x != floor(x)))
        return cf_fail(CONVFIND_ERR_IO, "record field \"%s\" = %g is not %s in [%g, %g]", name, x,
                       integral ? "an integer" : "a number", lo, hi);
    *out = x;
    return CONVFIND_OK;
}

static convfind_status check_algo_name(const char *field, const char *name)
{
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-' || *c == '.' || *c == '+' ||
              /* parameterised algorithms, "cuda.cudnn:nhwc:e12:k3=2,5=1" (algo/algo.h) */
              *c == ':' || *c == '=' || *c == ','))
            return cf_fail(CONVFIND_ERR_IO, "record field \"%s\" = \"%s\" is not an algorithm name",
                           field, name);
    return CONVFIND_OK;
}

static convfind_status candidate_from(const cf_json *o, cf_candidate_stats *c)
{
    if (!o || o->type != CF_JSON_OBJECT)
        return cf_fail(CONVFIND_ERR_IO, "a candidate is not an object");
    convfind_status st = get_text(o, "algo", c->algo, sizeof c->algo, false);
    if (st == CONVFIND_OK)
        st = check_algo_name("algo", c->algo);
    if (st != CONVFIND_OK)
        return st;
    char status[32];
    if ((st = get_text(o, "status", status, sizeof status, false)) != CONVFIND_OK)
        return st;
    int k = 0;
    while (k < 4 && strcmp(status, status_names[k]) != 0)
        k++;
    if (k == 4)
        return cf_fail(CONVFIND_ERR_IO, "candidate status \"%s\" is not one of ok, failed, "
                                        "not_applicable, abandoned", status);
    c->status = (cf_candidate_status)k;
    double rep = 0, ws = 0;
    if ((st = get_number(o, "median_ms", 0, 1e12, false, &c->median_ms)) != CONVFIND_OK ||
        (st = get_number(o, "min_ms", 0, 1e12, false, &c->min_ms)) != CONVFIND_OK ||
        (st = get_number(o, "spread", 0, 1e12, false, &c->spread)) != CONVFIND_OK ||
        (st = get_number(o, "repeats", 0, 1e9, true, &rep)) != CONVFIND_OK ||
        (st = get_number(o, "workspace", 0, 9007199254740992.0, true, &ws)) != CONVFIND_OK)
        return st;
    if ((double)(size_t)ws != ws)
        return cf_fail(CONVFIND_ERR_IO, "candidate workspace %g does not fit in size_t", ws);
    c->repeats = (int)rep;
    c->workspace_bytes = (size_t)ws;
    const cf_json *v = cf_json_get(o, "validated");
    if (!v || v->type != CF_JSON_BOOL)
        return cf_fail(CONVFIND_ERR_IO, "candidate field \"validated\" is missing or not a bool");
    c->validated = v->boolean;
    const cf_json *nn = cf_json_get(o, "not_needed"); /* optional (see decision_json) */
    if (nn && nn->type != CF_JSON_BOOL)
        return cf_fail(CONVFIND_ERR_IO, "candidate field \"not_needed\" is not a bool");
    c->not_needed = nn && nn->boolean;
    return CONVFIND_OK;
}

static convfind_status decision_from(const cf_json *o, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    if (!o || o->type != CF_JSON_OBJECT)
        return cf_fail(CONVFIND_ERR_IO, "record field \"decision\" is missing or not an object");
    convfind_status st = get_text(o, "algo", out->algo, sizeof out->algo, false);
    if (st == CONVFIND_OK)
        st = check_algo_name("algo", out->algo);
    if (st != CONVFIND_OK)
        return st;
    const cf_json *list = cf_json_get(o, "candidates");
    if (!list || list->type != CF_JSON_ARRAY)
        return cf_fail(CONVFIND_ERR_IO, "record field \"candidates\" is missing or not an array");
    if (list->count > CF_DB_MAX_CANDIDATES)
        return cf_fail(CONVFIND_ERR_IO, "decision has %zu candidates, at most %d allowed",
                       list->count, CF_DB_MAX_CANDIDATES);
    if (list->count > 0) {
        out->candidates = calloc(list->count, sizeof *out->candidates);
        if (!out->candidates)
            return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu candidates",
                           list->count);
    }
    out->n_candidates = (int)list->count;
    bool chosen_listed = list->count == 0;
    for (size_t i = 0; i < list->count; i++) {
        if ((st = candidate_from(&list->items[i], &out->candidates[i])) != CONVFIND_OK) {
            cf_decision_clear(out);
            return st;
        }
        chosen_listed |= strcmp(out->candidates[i].algo, out->algo) == 0;
    }
    if (!chosen_listed) {
        st = cf_fail(CONVFIND_ERR_IO, "chosen algorithm \"%s\" is not among the candidates",
                     out->algo);
        cf_decision_clear(out);
    }
    return st;
}

convfind_status cf_db_decision_from_json(const char *text, size_t len, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    char err[160];
    cf_json *root = cf_json_parse(text, len, err, sizeof err);
    if (!root)
        return cf_fail(CONVFIND_ERR_IO, "stored decision: %s", err);
    convfind_status st = decision_from(root, out);
    cf_json_free(root);
    return st;
}

convfind_status cf_db_check_key(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > CF_DB_KEY_MAX)
        return cf_fail(CONVFIND_ERR_IO, "key length %zu is outside 1..%d", n, CF_DB_KEY_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)key[i] < 0x20 || (unsigned char)key[i] > 0x7e)
            return cf_fail(CONVFIND_ERR_IO, "key has a non-printable byte 0x%02x at %zu",
                           (unsigned char)key[i], i);
    return CONVFIND_OK;
}

/* A number member that may be null (unknown) or absent: *out is then 0. */
static convfind_status get_optional(const cf_json *obj, const char *name, double lo, double hi,
                                    double *out)
{
    const cf_json *v = cf_json_get(obj, name);
    *out = 0;
    return !v || v->type == CF_JSON_NULL ? CONVFIND_OK : get_number(obj, name, lo, hi, false, out);
}

/* The optional "measured" member: the budget; spread and margin are checked, but what
 * counts is what the candidates say. */
static convfind_status measured_from(const cf_json *m, double *budget_ms)
{
    *budget_ms = 0;
    if (!m)
        return CONVFIND_OK;
    if (m->type != CF_JSON_OBJECT)
        return cf_fail(CONVFIND_ERR_IO, "record field \"measured\" is not an object");
    double unused;
    convfind_status st = get_optional(m, "budget_ms", 0, CF_DB_BUDGET_MAX_MS, budget_ms);
    if (st == CONVFIND_OK)
        st = get_optional(m, "spread", 0, 1e12, &unused);
    if (st == CONVFIND_OK)
        st = get_optional(m, "margin", -1, 1e12, &unused);
    if (st != CONVFIND_OK) {
        char why[200];
        snprintf(why, sizeof why, "%s", convfind_last_error());
        st = cf_fail(st, "record field \"measured\": %s", why);
    }
    return st;
}

static convfind_status record_from(const cf_json *root, cf_db_record *out)
{
    if (root->type != CF_JSON_OBJECT)
        return cf_fail(CONVFIND_ERR_IO, "a record line is not a JSON object");
    char format[64];
    convfind_status st = get_text(root, "format", format, sizeof format, false);
    if (st != CONVFIND_OK)
        return st;
    if (strcmp(format, CF_DB_FORMAT) != 0)
        return cf_fail(CONVFIND_ERR_IO, "record format \"%s\" is not \"%s\"", format,
                       CF_DB_FORMAT);
    const cf_json *key = cf_json_get(root, "key");
    if (!key || key->type != CF_JSON_STRING)
        return cf_fail(CONVFIND_ERR_IO, "record field \"key\" is missing or not a string");
    if ((st = cf_db_check_key(key->string)) != CONVFIND_OK)
        return st;
    const cf_json *env = cf_json_get(root, "env");
    const cf_json *prov = cf_json_get(root, "provenance");
    if (!env || env->type != CF_JSON_OBJECT || !prov || prov->type != CF_JSON_OBJECT)
        return cf_fail(CONVFIND_ERR_IO, "record fields \"env\" and \"provenance\" must be objects");
    double t = 0;
    if ((st = get_text(env, "library", out->env.library, sizeof out->env.library, false)) ||
        (st = get_text(env, "backends", out->env.backends, sizeof out->env.backends, false)) ||
        (st = get_text(env, "device", out->env.device, sizeof out->env.device, false)) ||
        (st = get_text(prov, "host", out->host, sizeof out->host, true)) ||
        (st = get_number(prov, "time", 0, 1e15, true, &t)))
        return st;
    out->time = (int64_t)t;
    double budget = 0;
    if ((st = measured_from(cf_json_get(root, "measured"), &budget)) != CONVFIND_OK ||
        (st = decision_from(cf_json_get(root, "decision"), &out->decision)) != CONVFIND_OK)
        return st;
    out->decision.budget_ms = budget;
    out->key = strdup(key->string);
    if (!out->key)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy a key");
    return CONVFIND_OK;
}

convfind_status cf_db_record_from_jsonl(const char *line, size_t len, cf_db_record *out)
{
    memset(out, 0, sizeof *out);
    char err[160];
    cf_json *root = cf_json_parse(line, len, err, sizeof err);
    if (!root)
        return cf_fail(CONVFIND_ERR_IO, "record line: %s", err);
    convfind_status st = record_from(root, out);
    cf_json_free(root);
    if (st != CONVFIND_OK)
        cf_db_record_clear(out);
    return st;
}
