/*
 * decide.h - obtains the decision of one problem the way a first inference would (an
 * ordinary plan creation under the context's find policy) and reports where it came
 * from, how fast the chosen algorithm measured and how long deciding took.
 *
 * `convfind tune` and `convfind demo` both decide lists of problems and print the same
 * table of decisions; this is the one place that does it, so the two commands cannot
 * drift apart in what "stored" or "measured" means.
 */
#ifndef CONVFIND_TOOLS_DECIDE_H
#define CONVFIND_TOOLS_DECIDE_H

#include <stdbool.h>

#include "convfind.h"
#include "cuda_copy.h"

/* One decided problem.  On failure `status` is not CONVFIND_OK, `error` holds the
 * library's message (copied, because releasing the problem clears the thread's
 * convfind_last_error()) and the other fields past `name` are unset. */
typedef struct cli_decision {
    char name[256];
    char algo[96];                   /* copied: a CUDA variant's name dies with its plan */
    convfind_decision_source source;
    double median_ms;                /* the chosen algorithm's stored median; 0 if none */
    double seconds;                  /* wall time of problem and plan creation */
    convfind_status status;
    char error[256];
} cli_decision;

/* "measured" (Find ran now), "stored" (read from the find database), "forced" or
 * "heuristic". */
const char *cli_source_name(convfind_decision_source source);

/* Creates the problem of `desc` and a plan for it on `ctx` and fills `out` (its `name`
 * is left as the caller set it).  With `constant` the plan is given constant weights
 * (zeros: a decision does not depend on their values; on the device through `cuda`
 * when it is not NULL, which then owns them), and its decision is the one for plans
 * with constant weights; else the plan takes its weights per call.  With `retune` the
 * plan measures the problem now whatever is cached or stored (convfind_plan_options.retune).
 * When `plan` is not NULL and the call succeeded, the plan is handed to the caller, who
 * destroys it; otherwise it is destroyed here.  Safe to call from several threads on one
 * context, each with its own `out` (not with one `cuda`). */
void cli_decide(convfind_context *ctx, const convfind_conv_desc *desc, bool constant,
                bool retune, cli_cuda *cuda, cli_decision *out, convfind_plan **plan);

/* The table of decisions: name, algorithm, source, median ms, seconds; a failed row
 * shows its status name instead.  The header and single rows are separate so a command
 * can print each row as soon as it is decided. */
void cli_decision_header(void);
void cli_decision_row(const cli_decision *row);
void cli_decision_table(const cli_decision *rows, size_t count);

#endif /* CONVFIND_TOOLS_DECIDE_H */
