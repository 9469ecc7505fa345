/*
 * The decode-step graph as JSON and Graphviz dot (issue 7): every operator
 * appears once, every input becomes one edge, and `tessera graph` prints the
 * same graph for the bundled model.
 */
#include "tests/unit/ts_test.h"

#include "core/sched/sched.h"

static size_t count_substr(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static ts_sched_graph_t *bundled_graph(void)
{
    ts_sched_model_dims_t d = {.dim = 64,
                               .hidden_dim = 172,
                               .n_layers = 4,
                               .n_heads = 4,
                               .n_kv_heads = 4,
                               .vocab = 512,
                               .act = TS_ACT_SWIGLU,
                               .norm = TS_NORM_RMS};
    ts_sched_graph_t *g = NULL;
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&d, &g));
    return g;
}

START_TEST(test_json_and_dot_cover_the_graph)
{
    ts_sched_graph_t *g = bundled_graph();
    size_t n = ts_sched_graph_count(g), edges = 0, nonarith = 0;
    for (size_t i = 0; i < n; i++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, i);
        edges += (op->in[0] != TS_SCHED_NONE) + (op->in[1] != TS_SCHED_NONE);
        nonarith += ts_op_kind_is_nonarith(op->kind);
    }
    char *json = NULL, *dot = NULL;
    size_t jlen = 0, dlen = 0;
    ck_assert_ts_ok(ts_sched_graph_to_json(g, &json, &jlen));
    ck_assert_ts_ok(ts_sched_graph_to_dot(g, &dot, &dlen));
    ck_assert_uint_eq(strlen(json), jlen);
    ck_assert_uint_eq(count_substr(json, "{\"id\":"), n);
    ck_assert_uint_eq(count_substr(json, "\"arithmetic\":false"), nonarith);
    ck_assert_uint_eq(count_substr(json, "\"range\":["), nonarith);
    ck_assert_uint_eq(count_substr(dot, " -> n"), edges);
    ck_assert_uint_eq(count_substr(dot, "fillcolor=lightblue"), nonarith);
    ck_assert_ptr_nonnull(strstr(dot, "digraph decode_step {"));
    ck_assert_int_eq(dot[dlen - 2], '}');
    /* Every operator name is in both. */
    for (size_t i = 0; i < n; i++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, i);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", op->name);
        ck_assert_msg(strstr(json, quoted), "%s missing from JSON", op->name);
        ck_assert_msg(strstr(dot, op->name), "%s missing from dot", op->name);
    }
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_INVSQRT), 9);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_SILU), 4);
    ts_free(json);
    ts_free(dot);
    ts_sched_graph_free(g);
}
END_TEST

START_TEST(test_names_are_escaped)
{
    ts_sched_graph_t *g = NULL;
    ck_assert_ts_ok(ts_sched_graph_new(&g));
    ts_sched_op_t op = {.kind = TS_OP_ADD_CC,
                        .layer = 0,
                        .in = {TS_SCHED_FRESH, TS_SCHED_FRESH},
                        .n_ct = 1,
                        .n_impl = 1};
    snprintf(op.name, sizeof op.name, "odd \"name\" \\ here");
    snprintf(op.impl[0].name, sizeof op.impl[0].name, "add");
    ck_assert_ts_ok(ts_sched_graph_add_op(g, &op, NULL, 0, NULL));
    char *json = NULL, *dot = NULL;
    ck_assert_ts_ok(ts_sched_graph_to_json(g, &json, NULL));
    ck_assert_ts_ok(ts_sched_graph_to_dot(g, &dot, NULL));
    ck_assert_ptr_nonnull(strstr(json, "\"odd \\\"name\\\" \\\\ here\""));
    ck_assert_ptr_nonnull(strstr(dot, "label=\"odd \\\"name\\\" \\\\ here\\nadd_cc\""));
    ck_assert_uint_eq(count_substr(dot, "fresh -> n0;"), 2);
    ck_assert_ts_status(ts_sched_graph_to_json(NULL, &json, NULL), TS_EINVAL);
    ts_free(json);
    ts_free(dot);
    ts_sched_graph_free(g);
}
END_TEST

START_TEST(test_cli_graph)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/tessera graph --model %s/aidreams260K.bin --format dot",
             ts_test_build_dir(), ts_test_model_dir());
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    static char out[1 << 20];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    ts_sched_graph_t *g = bundled_graph();
    char *dot = NULL;
    ck_assert_ts_ok(ts_sched_graph_to_dot(g, &dot, NULL));
    ck_assert_str_eq(out, dot); /* the CLI prints the graph built from the file's dims */
    ts_free(dot);
    ts_sched_graph_free(g);
    snprintf(cmd, sizeof cmd, "%s/tessera graph --model /nonexistent.bin 2>/dev/null",
             ts_test_build_dir());
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 1);
    snprintf(cmd, sizeof cmd, "%s/tessera graph --model x --format svg 2>/dev/null",
             ts_test_build_dir());
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
}
END_TEST

TS_TEST_SUITE(sched_graph_out)
{
    Suite *s = suite_create("sched_graph_out");
    TCase *tc = ts_tcase("export", 0);
    tcase_add_test(tc, test_json_and_dot_cover_the_graph);
    tcase_add_test(tc, test_names_are_escaped);
    tcase_add_test(tc, test_cli_graph);
    suite_add_tcase(s, tc);
    return s;
}
