/*
 * fuzz_db_record.c - libFuzzer target for the find-db record loader: the bytes go to
 * both parsers that read what another process or machine wrote -- the stored decision
 * (a database row's `decision` column) and the exported JSON Lines record (`convfind
 * db import`).  Whatever they accept must survive a write/read round trip unchanged.
 *   ./tests/fuzz/fuzz_db_record -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decision/record.h"

static void check_decision(const cf_decision *d)
{
    char *json = cf_db_decision_to_json(d);
    if (!json)
        return;
    cf_decision again;
    if (cf_db_decision_from_json(json, strlen(json), &again) != CONVFIND_OK ||
        strcmp(again.algo, d->algo) != 0 || again.n_candidates != d->n_candidates)
        abort();
    cf_decision_clear(&again);
    free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    cf_decision d;
    if (cf_db_decision_from_json(text, size, &d) == CONVFIND_OK) {
        check_decision(&d);
        cf_decision_clear(&d);
    }
    cf_db_record r;
    if (cf_db_record_from_jsonl(text, size, &r) == CONVFIND_OK) {
        char *line = cf_db_record_to_jsonl(&r);
        cf_db_record back;
        if (line && (cf_db_record_from_jsonl(line, strlen(line), &back) != CONVFIND_OK ||
                     strcmp(back.key, r.key) != 0 || !cf_db_env_equal(&back.env, &r.env)))
            abort();
        if (line)
            cf_db_record_clear(&back);
        free(line);
        check_decision(&r.decision);
        cf_db_record_clear(&r);
    }
    return 0;
}
