/*
 * test_db_record.c - the record loader: the strict JSON reader, decisions and exported
 * lines round-tripping exactly, and every kind of damaged record rejected with a
 * message naming the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../db/db_fixture.h"
#include "decision/json.h"
#include "problem/key.h"
#include "decision/record.h"

static void json_accepts_valid_documents(void **state)
{
    (void)state;
    const char *text = " {\"a\": [1, -2.5e3, true, false, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\n\"} ";
    char err[128];
    cf_json *v = cf_json_parse(text, strlen(text), err, sizeof err);
    assert_non_null(v);
    const cf_json *a = cf_json_get(v, "a");
    assert_non_null(a);
    assert_int_equal(a->type, CF_JSON_ARRAY);
    assert_int_equal(a->count, 5);
    assert_true(a->items[1].number == -2500.0);
    assert_true(a->items[2].boolean);
    assert_int_equal(a->items[4].type, CF_JSON_NULL);
    const cf_json *s = cf_json_get(v, "s");
    assert_string_equal(s->string, "x\xc3\xa9\xf0\x9f\x98\x80\n");
    assert_null(cf_json_get(v, "missing"));
    cf_json_free(v);
}

static void json_rejects_malformed_documents(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "{", "[1,]", "{\"a\":}", "{\"a\" 1}", "01", "1.", "-", "+1", "1e", "1e+", "inf", "nan",
        "\"abc", "\"\\x\"", "\"\\ud800\"", "\"\\u0000\"", "\"a\tb\"", "tru", "[1] 2",
        "{\"a\":1,}", "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]", "\"\\u12\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[128] = "";
        cf_json *v = cf_json_parse(bad[i], strlen(bad[i]), err, sizeof err);
        if (v)
            fail_msg("accepted bad JSON #%zu: %s", i, bad[i]);
        assert_non_null(strstr(err, "JSON error at byte"));
    }
    /* The length is honoured: a valid prefix followed by bytes past len is fine. */
    char err[64];
    cf_json *v = cf_json_parse("[1]garbage", 3, err, sizeof err);
    assert_non_null(v);
    cf_json_free(v);
}

static void decision_round_trips_exactly(void **state)
{
    (void)state;
    cf_decision d = fx_decision(7, 4);
    d.candidates[1].median_ms = 0.1 + 0.2; /* not representable in few digits */
    d.candidates[2].status = CF_CAND_ABANDONED;
    d.candidates[2].repeats = 0;
    d.candidates[2].not_needed = true; /* the one optional member */
    char *json = cf_db_decision_to_json(&d);
    assert_non_null(json);
    /* Written for that candidate only: the others' text is what it was before it. */
    const char *nn = strstr(json, "\"not_needed\":true");
    assert_non_null(nn);
    assert_null(strstr(nn + strlen("\"not_needed\""), "not_needed"));
    assert_non_null(strstr(json, "\"validated\":true}"));
    cf_decision back;
    assert_int_equal(cf_db_decision_from_json(json, strlen(json), &back), CONVFIND_OK);
    assert_true(fx_decision_equal(&d, &back));
    assert_int_equal(back.candidates[3].status, CF_CAND_FAILED);
    char bad[256];
    cf_db_bad_candidates(&back, bad, sizeof bad);
    assert_string_equal(bad, "algo7_3");
    free(json);
    cf_decision_clear(&back);
    cf_decision_clear(&d);
}

static void record_line_round_trips(void **state)
{
    (void)state;
    cf_db_record r;
    memset(&r, 0, sizeof r);
    r.key = strdup("v1;conv;\"quoted\";back\\slash");
    snprintf(r.env.library, sizeof r.env.library, "0.1.0");
    snprintf(r.env.backends, sizeof r.env.backends, "cpu");
    snprintf(r.env.device, sizeof r.env.device, "Some CPU @ 2.0GHz");
    snprintf(r.host, sizeof r.host, "node-17");
    r.time = 1764400000;
    r.decision = fx_decision(3, 3);
    char *line = cf_db_record_to_jsonl(&r);
    assert_non_null(line);
    assert_null(strchr(line, '\n'));
    cf_db_record back;
    assert_int_equal(cf_db_record_from_jsonl(line, strlen(line), &back), CONVFIND_OK);
    assert_string_equal(back.key, r.key);
    assert_true(cf_db_env_equal(&back.env, &r.env));
    assert_string_equal(back.host, "node-17");
    assert_int_equal(back.time, r.time);
    assert_true(fx_decision_equal(&back.decision, &r.decision));
    free(line);
    cf_db_record_clear(&back);
    cf_db_record_clear(&r);
}

/* Each damaged decision names what is wrong with it. */
static void damaged_decisions_are_rejected(void **state)
{
    (void)state;
    static const struct {
        const char *json, *needle;
    } cases[] = {
        {"[]", "decision"},
        {"{\"candidates\":[]}", "\"algo\""},
        {"{\"algo\":\"a b\",\"candidates\":[]}", "algorithm name"},
        {"{\"algo\":\"x\",\"candidates\":{}}", "candidates"},
        {"{\"algo\":\"x\",\"candidates\":[{\"algo\":\"y\",\"status\":\"ok\",\"median_ms\":1,"
         "\"min_ms\":1,\"spread\":0,\"repeats\":1,\"workspace\":0,\"validated\":true}]}",
         "not among the candidates"},
        {"{\"algo\":\"x\",\"candidates\":[{\"algo\":\"x\",\"status\":\"great\",\"median_ms\":1,"
         "\"min_ms\":1,\"spread\":0,\"repeats\":1,\"workspace\":0,\"validated\":true}]}",
         "status"},
        {"{\"algo\":\"x\",\"candidates\":[{\"algo\":\"x\",\"status\":\"ok\",\"median_ms\":-1,"
         "\"min_ms\":1,\"spread\":0,\"repeats\":1,\"workspace\":0,\"validated\":true}]}",
         "median_ms"},
        {"{\"algo\":\"x\",\"candidates\":[{\"algo\":\"x\",\"status\":\"ok\",\"median_ms\":1,"
         "\"min_ms\":1,\"spread\":0,\"repeats\":1.5,\"workspace\":0,\"validated\":true}]}",
         "repeats"},
        {"{\"algo\":\"x\",\"candidates\":[{\"algo\":\"x\",\"status\":\"ok\",\"median_ms\":1,"
         "\"min_ms\":1,\"spread\":0,\"repeats\":1,\"workspace\":1e300,\"validated\":true}]}",
         "workspace"},
        {"{\"algo\":\"x\",\"candidates\":[{\"algo\":\"x\",\"status\":\"ok\",\"median_ms\":1,"
         "\"min_ms\":1,\"spread\":0,\"repeats\":1,\"workspace\":0,\"validated\":1}]}",
         "validated"},
        {"{\"algo\":\"x\",\"candidates\":[{\"algo\":\"x\",\"status\":\"ok\",\"median_ms\":1,"
         "\"min_ms\":1,\"spread\":0,\"repeats\":1,\"workspace\":0,\"validated\":true,"
         "\"not_needed\":0}]}",
         "not_needed"},
        {"{\"algo\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\","
         "\"candidates\":[]}", "length"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cf_decision d;
        convfind_status st = cf_db_decision_from_json(cases[i].json, strlen(cases[i].json), &d);
        if (st != CONVFIND_ERR_IO)
            fail_msg("case %zu accepted: %s", i, cases[i].json);
        if (!strstr(convfind_last_error(), cases[i].needle))
            fail_msg("case %zu: message \"%s\" does not name \"%s\"", i, convfind_last_error(),
                     cases[i].needle);
        assert_null(d.candidates);
    }
}

static void damaged_lines_are_rejected(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"format\":\"other/1\"}",
        "{\"format\":\"convfind-db-record/1\",\"key\":\"\"}",
        "{\"format\":\"convfind-db-record/1\",\"key\":\"k\\u0001\"}",
        "{\"format\":\"convfind-db-record/1\",\"key\":\"k\",\"env\":1,\"provenance\":{}}",
        "{\"format\":\"convfind-db-record/1\",\"key\":\"k\",\"env\":{\"library\":\"1\","
        "\"backends\":\"cpu\",\"device\":\"d\"},\"provenance\":{\"host\":\"h\",\"time\":-5},"
        "\"decision\":{\"algo\":\"a\",\"candidates\":[]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_db_record r;
        assert_int_equal(cf_db_record_from_jsonl(bad[i], strlen(bad[i]), &r), CONVFIND_ERR_IO);
        assert_null(r.key);
    }
    assert_int_equal(cf_db_check_key("v1;ok"), CONVFIND_OK);
    assert_int_equal(cf_db_check_key("tab\there"), CONVFIND_ERR_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_accepts_valid_documents),
        cmocka_unit_test(json_rejects_malformed_documents),
        cmocka_unit_test(decision_round_trips_exactly),
        cmocka_unit_test(record_line_round_trips),
        cmocka_unit_test(damaged_decisions_are_rejected),
        cmocka_unit_test(damaged_lines_are_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
