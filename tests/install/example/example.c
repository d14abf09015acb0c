/*
 * example.c - the smallest complete convfind program, built by the install test against
 * an installed convfind (find_package and pkg-config) to prove the installed headers,
 * libraries and package files are usable on their own.
 *
 * It runs one 2-D Conv whose output is easy to check by hand:
 *   X: 1x1x4x4 holding 0..15 (X[r][c] = 4r + c), pads 1, strides 2, bias {0.5, -1}
 *   W: filter 0 is a 3x3 box of ones, filter 1 has only its centre tap set, to 2.
 * Y is 1x2x2x2 (floor((4 + 2 - 3) / 2) + 1 = 2 per axis); see expected[] below.
 * The weights are the plan's constant weights, the fast way: copied and packed once at
 * plan creation, so executions pass no w.
 * Exit status 0 only if every value, the output shape, the version and the error path
 * are right.
 */
#include <convfind.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check(convfind_status st, const char *what)
{
    if (st != CONVFIND_OK) {
        fprintf(stderr, "example: %s failed: %s: %s\n", what, convfind_status_name(st),
                convfind_last_error());
        return 1;
    }
    return 0;
}

static void describe_conv(convfind_conv_desc *d)
{
    static const int64_t x_dims[] = {1, 1, 4, 4};
    static const int64_t w_dims[] = {2, 1, 3, 3};
    convfind_conv_desc_init(d);
    d->x_rank = 4;
    d->w_rank = 4;
    memcpy(d->x_dims, x_dims, sizeof x_dims);
    memcpy(d->w_dims, w_dims, sizeof w_dims);
    d->has_bias = 1;
    d->strides.count = 2;
    d->strides.v[0] = d->strides.v[1] = 2;
    d->pads.count = 4;
    d->pads.v[0] = d->pads.v[1] = d->pads.v[2] = d->pads.v[3] = 1;
}

/* An invalid problem must be refused with a status and a message, through the
 * installed library exactly as in the build tree. */
static int check_error_path(void)
{
    convfind_conv_desc d;
    convfind_problem *p = NULL;
    describe_conv(&d);
    d.group = 3; /* C = 1 is not divisible by 3 */
    convfind_status st = convfind_problem_create(&d, &p);
    if (st == CONVFIND_OK || p != NULL || convfind_last_error()[0] == '\0') {
        fprintf(stderr, "example: group 3 with 1 input channel was accepted (%s)\n",
                convfind_status_name(st));
        convfind_problem_destroy(p);
        return 1;
    }
    printf("invalid group refused: %s: %s\n", convfind_status_name(st), convfind_last_error());
    return 0;
}

int main(void)
{
    /* Window sums of X around (0,0), (0,2), (2,0), (2,2) with zero padding, + 0.5;
     * then 2 * X at the same points, - 1. */
    static const float expected[8] = {10.5f, 24.5f, 51.5f, 90.5f,
                                      -1.0f, 3.0f,  15.0f, 19.0f};
    static const int64_t expected_dims[4] = {1, 2, 2, 2};
    float x[16], w[18], b[2] = {0.5f, -1.0f}, y[8];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    for (int i = 0; i < 9; i++)
        w[i] = 1.0f;
    for (int i = 9; i < 18; i++)
        w[i] = i == 13 ? 2.0f : 0.0f;

    if (strcmp(convfind_version_string(), CONVFIND_VERSION_STRING) != 0 ||
        convfind_version_number() != CONVFIND_VERSION_NUMBER) {
        fprintf(stderr, "example: header version %s (%d) but library version %s (%d)\n",
                CONVFIND_VERSION_STRING, CONVFIND_VERSION_NUMBER, convfind_version_string(),
                convfind_version_number());
        return 1;
    }

    convfind_context_options opts;
    convfind_context_options_init(&opts);
    opts.num_threads = 1;
    opts.find_policy = CONVFIND_FIND_HEURISTIC;
    convfind_plan_options plan_opts;
    convfind_plan_options_init(&plan_opts);
    plan_opts.weights = w;
    convfind_context *ctx = NULL;
    convfind_problem *prob = NULL;
    convfind_plan *plan = NULL;
    convfind_conv_desc desc;
    describe_conv(&desc);
    int rank = 0;
    int64_t dims[CONVFIND_MAX_RANK];
    int bad = check(convfind_context_create(&opts, &ctx), "convfind_context_create") ||
              check(convfind_problem_create(&desc, &prob), "convfind_problem_create") ||
              check(convfind_problem_output_dims(prob, &rank, dims), "convfind_problem_output_dims") ||
              check(convfind_plan_create_ex(ctx, prob, &plan_opts, &plan),
                    "convfind_plan_create_ex");
    if (!bad && (rank != 4 || memcmp(dims, expected_dims, sizeof expected_dims) != 0)) {
        fprintf(stderr, "example: output rank %d dims %lld %lld %lld %lld, expected 1 2 2 2\n",
                rank, (long long)dims[0], (long long)dims[1], (long long)dims[2],
                (long long)dims[3]);
        bad = 1;
    }
    for (int i = 0; i < 18; i++)
        w[i] = -1.0f; /* the plan holds its own copy: this must not change the result */
    if (!bad) {
        convfind_tensors t = {.x = x, .w = NULL, .b = b, .z = NULL, .y = y};
        bad = check(convfind_execute(plan, &t), "convfind_execute");
    }
    for (int i = 0; !bad && i < 8; i++) {
        if (fabsf(y[i] - expected[i]) > 1e-5f) {
            fprintf(stderr, "example: y[%d] = %g, expected %g\n", i, (double)y[i],
                    (double)expected[i]);
            bad = 1;
        }
    }
    if (!bad) {
        char text[256];
        convfind_problem_describe(prob, text, sizeof text);
        printf("convfind %s, algorithm %s: %s -> y[0] = %g, y[7] = %g\n",
               convfind_version_string(), convfind_plan_algorithm(plan), text,
               (double)y[0], (double)y[7]);
        bad = check_error_path();
    }
    convfind_plan_destroy(plan);
    convfind_problem_destroy(prob);
    convfind_context_destroy(ctx);
    return bad;
}
