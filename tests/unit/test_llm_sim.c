/*
 * The ciphertext-aligned simulator on the bundled model. Oracles: the exact
 * forward pass (the all-exact configuration must match it bit for bit), the
 * README's greedy ids, and monotonicity (errors shrink as the degree grows).
 */
#include "tests/unit/ts_test.h"

#include "core/llm/llm.h"

static const int seq[49] = {1,   303, 281, 269, 435, 447, 275, 429, 464, 448, 464, 464, 464,
                            464, 464, 464, 448, 429, 468, 342, 358, 402, 327, 446, 299, 303,
                            266, 437, 443, 434, 438, 451, 306, 443, 259, 430, 446, 299, 303,
                            266, 437, 443, 434, 438, 451, 306, 443, 259, 430};

static ts_llm_model_t *load_model(void)
{
    char path[512], err[256] = "";
    snprintf(path, sizeof(path), "%s/aidreams260K.bin", ts_test_model_dir());
    ts_llm_model_t *m = NULL;
    ck_assert_msg(ts_llm_model_load(path, &m, err, sizeof(err)) == TS_OK, "%s", err);
    return m;
}

START_TEST(test_sim_exact)
{
    ts_llm_model_t *m = load_model();
    ts_llm_sim_config_t cfg;
    ts_llm_sim_config_default(&cfg);
    ts_llm_sim_report_t r;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 49, &r));
    ck_assert_int_eq(r.positions, 49);
    ck_assert_int_eq(r.agree, 49);
    ck_assert(r.logits_max_err == 0.0); /* bit for bit */
    for (int l = 0; l < r.n_layers; l++) {
        ck_assert(r.layer_max_err[l] == 0.0);
        ck_assert(r.layer_rms[l] > 0.0);
    }
    ck_assert(r.ppl_exact == r.ppl_approx);
    ck_assert(r.ppl_exact > 1.0 && r.ppl_exact < 10.0);
    for (int f = 0; f < TS_NL_FN_COUNT; f++)
        ck_assert(r.prim[f].max_abs_err == 0.0);
    /* Inputs seen by the primitives are recorded even when exact. */
    ck_assert_int_gt(r.prim[TS_NL_FN_SILU].count, 0);
    ck_assert_int_gt(r.prim[TS_NL_FN_RSQRT].count, 0);
    ck_assert(r.prim[TS_NL_FN_RSQRT].in_min > 0.0);
    ck_assert(r.score_min < r.score_max);
    ts_llm_sim_report_clear(&r);
    /* Free-running greedy with the exact configuration: the README ids. */
    int out[49];
    size_t n;
    ck_assert_ts_ok(ts_llm_simulate_greedy(m, &cfg, seq, 7, 49, out, &n));
    ck_assert_int_eq(n, 49);
    ck_assert_int_eq(memcmp(out, seq, sizeof(seq)), 0);
    ck_assert_ts_status(ts_llm_simulate(m, &cfg, seq, 0, &r), TS_EINVAL);
    ts_llm_model_free(m);
}
END_TEST

static const char rosetta_yaml[] = "softmax_k: 4\n"
                                   "exp: {method: poly, lo: -4, hi: 2, degree: 12}\n"
                                   "recip:\n"
                                   "  method: lut\n"
                                   "  lo: 0.0078125\n"
                                   "  hi: 8192\n"
                                   "  segments: 4\n"
                                   "  entries: 256\n"
                                   "  bounds: log\n"
                                   "  index_bits: 16\n"
                                   "rsqrt:\n"
                                   "  method: lut\n"
                                   "  lo: 0.001\n"
                                   "  hi: 64\n"
                                   "  segments: 4\n"
                                   "  entries: 256\n"
                                   "  bounds: log\n"
                                   "silu:\n"
                                   "  method: lut\n"
                                   "  lo: -20\n"
                                   "  hi: 20\n"
                                   "  segments: 4\n"
                                   "  entries: 256\n"
                                   "  bounds: uniform\n";

START_TEST(test_sim_approx)
{
    ts_llm_model_t *m = load_model();
    ts_llm_sim_config_t cfg;
    ts_llm_sim_config_default(&cfg);
    char err[256] = "";
    ck_assert_msg(ts_llm_sim_config_load_string(rosetta_yaml, strlen(rosetta_yaml), &cfg, err,
                                                sizeof(err)) == TS_OK,
                  "%s", err);
    ck_assert_int_eq(cfg.softmax_k, 4);
    ck_assert_int_eq(cfg.prim[TS_NL_FN_RECIP].method, TS_NL_LUT);
    ck_assert_int_eq(cfg.prim[TS_NL_FN_RECIP].n_br, 256);
    ck_assert_int_eq(cfg.prim[TS_NL_FN_RECIP].bounds, TS_NL_BOUNDS_LOG);
    ck_assert_int_eq(cfg.prim[TS_NL_FN_GELU].method, TS_NL_EXACT);
    ts_llm_sim_report_t r;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 49, &r));
    ck_assert(r.logits_max_err > 0.0 && isfinite(r.logits_max_err));
    ck_assert_msg(r.logits_max_err < 0.05, "logits error %g", r.logits_max_err);
    ck_assert_msg(r.agree >= 47, "agreement %zu / 49", r.agree);
    ck_assert_msg(fabs(r.ppl_approx / r.ppl_exact - 1.0) < 0.01, "ppl %g vs %g", r.ppl_approx,
                  r.ppl_exact);
    for (int l = 0; l < r.n_layers; l++)
        ck_assert(r.layer_max_err[l] > 0.0 && isfinite(r.layer_max_err[l]));
    ck_assert(r.softmax_count > 0 && r.softmax_max_err > 0.0 && r.softmax_max_err < 0.01);
    ck_assert(r.prim[TS_NL_FN_RECIP].max_abs_err > 0.0);
    ck_assert_int_eq(r.prim[TS_NL_FN_RECIP].count, 4 * r.softmax_count);
    ts_llm_sim_report_clear(&r);

    /* Errors shrink as the SiLU polynomial degree grows. */
    double prev_logit = INFINITY, prev_silu = INFINITY;
    for (int d = 4; d <= 32; d *= 2) {
        ts_llm_sim_config_default(&cfg);
        cfg.prim[TS_NL_FN_SILU] =
            (ts_nonlinear_spec_t){.method = TS_NL_POLY, .lo = -8, .hi = 8, .degree = d};
        ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 49, &r));
        ck_assert_msg(r.prim[TS_NL_FN_SILU].max_abs_err < prev_silu, "degree %d", d);
        ck_assert_msg(r.logits_max_err < prev_logit, "degree %d: %g vs %g", d, r.logits_max_err,
                      prev_logit);
        prev_silu = r.prim[TS_NL_FN_SILU].max_abs_err;
        prev_logit = r.logits_max_err;
        ts_llm_sim_report_clear(&r);
    }
    ts_llm_model_free(m);
}
END_TEST

/*
 * The encrypted engine's softmax variant (recip_norm, softmax_mean_first):
 * with exact primitives it is the softmax (the per-round factors cancel), and
 * the hybrid policy's configuration, through ts_llm_enc_config_to_sim and
 * through YAML, keeps every position's argmax on 32 positions.
 */
START_TEST(test_sim_engine_softmax)
{
    ts_llm_model_t *m = load_model();
    ts_llm_sim_config_t cfg;
    ts_llm_sim_config_default(&cfg);
    cfg.softmax_k = 5;
    cfg.softmax_mean_first = true;
    /* a crude 1/x (one segment of 4 secants: positive, up to ~50% off) in
     * rounds 2..5: the last round normalizes with it, the softmax is off */
    cfg.recip_norm = (ts_nonlinear_spec_t){.method = TS_NL_LUT,
                                           .lo = 0.02,
                                           .hi = 1.5,
                                           .n_seg = 1,
                                           .n_br = 4,
                                           .bounds = TS_NL_BOUNDS_UNIFORM};
    ts_llm_sim_report_t r;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 32, &r));
    double bad = r.softmax_max_err;
    ts_llm_sim_report_clear(&r);
    /* the same crude 1/x in the middle rounds only and a precise last round:
     * the middle rounds' per-head factors cancel */
    cfg.recip_last = (ts_nonlinear_spec_t){.method = TS_NL_LUT,
                                           .lo = 1e-6,
                                           .hi = 1e6,
                                           .n_seg = 24,
                                           .n_br = 256,
                                           .bounds = TS_NL_BOUNDS_LOG};
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 32, &r));
    double mid_only = r.softmax_max_err;
    ts_llm_sim_report_clear(&r);
    cfg.recip_norm.method = TS_NL_EXACT;
    cfg.recip_last.method = TS_NL_EXACT;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 32, &r));
    ck_assert_msg(r.softmax_max_err < 1e-9, "exact variant: softmax error %g", r.softmax_max_err);
    ck_assert_msg(bad > 1e-2, "a crude 1/x in the later rounds went unnoticed (%g)", bad);
    ck_assert_msg(mid_only < 1e-4, "middle rounds' factors did not cancel: %g", mid_only);
    printf("sim engine softmax: crude 1/x in rounds 2..5 -> error %.3g; in rounds 2..4 only -> "
           "%.3g\n",
           bad, mid_only);
    ts_llm_sim_report_clear(&r);
    /* centered scores (softmax_center): exactly the softmax with exact
     * primitives (a shift of every score of a row) */
    cfg.softmax_center = true;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 32, &r));
    ck_assert_msg(r.softmax_max_err < 1e-9, "centered: softmax error %g", r.softmax_max_err);
    ts_llm_sim_report_clear(&r);

    /* The ckks policy's softmax: k = 3, centered, the first round's 1/x of
     * the mean sum by Goldschmidt on [0.8, 256] only (Jensen: the centered
     * mean sum is at least 1), the last round's to 12 bits: every argmax
     * kept. Up to 16 positions exp is the degree-12 series (probabilities
     * within 1e-3); from 17 the degree-7 one (core/llm/enc.c
     * EXP_SHALLOW_POS: probabilities within 1e-2), whose logits stay as
     * close to the exact model's as degree 12's. */
    ts_llm_enc_config_t ck;
    double lerr[2], serr[2];
    ts_llm_enc_config_policy(&ck, TS_SCHED_CKKS, 16);
    ck_assert_int_eq(ck.exp.degree, 12);
    ts_llm_enc_config_policy(&ck, TS_SCHED_CKKS, 17);
    ck_assert_int_eq(ck.exp.degree, 7);
    for (int i = 0; i < 2; i++) {
        /* the 32 positions' configuration, with either series */
        ts_llm_enc_config_policy(&ck, TS_SCHED_CKKS, 32);
        if (!i)
            ck.exp.degree = 12;
        ts_llm_enc_config_to_sim(&ck, &cfg);
        ck_assert(cfg.softmax_center && cfg.softmax_mean_first);
        ck_assert(cfg.prim[TS_NL_FN_RECIP].lo >= 0.8);
        ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 32, &r));
        printf("sim ckks engine config (exp degree %d): softmax error %.3g, logits %.3g, "
               "agreement %zu / 32\n",
               cfg.prim[TS_NL_FN_EXP].degree, r.softmax_max_err, r.logits_max_err, r.agree);
        ck_assert_uint_eq(r.agree, 32);
        serr[i] = r.softmax_max_err;
        lerr[i] = r.logits_max_err;
        ts_llm_sim_report_clear(&r);
    }
    ck_assert_msg(serr[0] < 1e-3, "ckks softmax error %g (exp degree 12)", serr[0]);
    ck_assert_msg(serr[1] < 1e-2, "ckks softmax error %g (exp degree 7)", serr[1]);
    ck_assert_msg(lerr[1] < 1.05 * lerr[0], "degree-7 exp: logits error %g against %g", lerr[1],
                  lerr[0]);

    ts_llm_enc_config_t ec;
    ts_llm_enc_config_policy(&ec, TS_SCHED_HYBRID, 32);
    ts_llm_enc_config_to_sim(&ec, &cfg);
    ck_assert(cfg.softmax_mean_first);
    ck_assert_int_eq(cfg.recip_norm.method, TS_NL_LUT);
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 32, &r));
    printf("sim hybrid engine config: agreement %zu / 32, logits max err %.3g, softmax %.3g\n",
           r.agree, r.logits_max_err, r.softmax_max_err);
    ck_assert_uint_eq(r.agree, 32);
    ck_assert(r.logits_max_err < 0.5);
    ts_llm_sim_report_clear(&r);

    static const char yaml[] = "softmax_k: 5\nsoftmax_mean_first: true\nsoftmax_center: true\n"
                               "recip_norm: {method: lut, lo: 0.025, hi: 1.25, segments: 8, "
                               "entries: 16, bounds: log, index_bits: 5}\n";
    char err[256] = "";
    ts_llm_sim_config_default(&cfg);
    ck_assert_msg(ts_llm_sim_config_load_string(yaml, strlen(yaml), &cfg, err, sizeof err) == TS_OK,
                  "%s", err);
    ck_assert(cfg.softmax_mean_first && cfg.softmax_center);
    ck_assert_int_eq(cfg.recip_norm.n_seg, 8);
    static const char bad_yaml[] = "recip_norm: {method: iter, lo: -1, hi: 1, steps: 3}\n";
    ck_assert_ts_status(
        ts_llm_sim_config_load_string(bad_yaml, strlen(bad_yaml), &cfg, err, sizeof err),
        TS_ECONFIG);
    ck_assert_msg(strstr(err, "recip_norm") != NULL, "%s", err);
    ts_llm_model_free(m);
}
END_TEST

START_TEST(test_sim_noise_and_config)
{
    ts_llm_model_t *m = load_model();
    ts_llm_sim_config_t cfg;
    ts_llm_sim_config_default(&cfg);
    cfg.noise_bits = 20;
    cfg.seed = 7;
    ts_llm_sim_report_t a, b;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 20, &a));
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 20, &b));
    ck_assert(a.logits_max_err > 0.0 && a.logits_max_err < 0.01);
    ck_assert(a.logits_max_err == b.logits_max_err); /* same seed, same noise */
    ts_llm_sim_report_clear(&b);
    cfg.seed = 8;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 20, &b));
    ck_assert(a.logits_max_err != b.logits_max_err);
    ts_llm_sim_report_clear(&a);
    ts_llm_sim_report_clear(&b);
    /* More noise bits, less error. */
    cfg.noise_bits = 30;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 20, &a));
    cfg.noise_bits = 12;
    ck_assert_ts_ok(ts_llm_simulate(m, &cfg, seq, 20, &b));
    ck_assert(a.logits_max_err < b.logits_max_err);
    ts_llm_sim_report_clear(&a);
    ts_llm_sim_report_clear(&b);

    /* Configuration errors are reported with a position or the primitive. */
    char err[256] = "";
    const char *bad1 = "softmax_k: 4\nbogus: 1\n";
    ck_assert_ts_status(ts_llm_sim_config_load_string(bad1, strlen(bad1), &cfg, err, sizeof(err)),
                        TS_ECONFIG);
    ck_assert_msg(strstr(err, "bogus") != NULL, "message: %s", err);
    const char *bad2 = "recip: {method: iter, lo: -1, hi: 1, steps: 4}\n";
    ck_assert_ts_status(ts_llm_sim_config_load_string(bad2, strlen(bad2), &cfg, err, sizeof(err)),
                        TS_ECONFIG);
    ck_assert_msg(strstr(err, "recip") != NULL, "message: %s", err);
    const char *bad3 = "silu: {method: cubic}\n";
    ck_assert_ts_status(ts_llm_sim_config_load_string(bad3, strlen(bad3), &cfg, err, sizeof(err)),
                        TS_ECONFIG);
    ts_llm_model_free(m);
}
END_TEST

/* Layering a file over the ckks policy's configuration: a section that sets
 * `method` describes its primitive afresh (its absent keys take the method's
 * defaults, lo and hi carry over), one without `method` changes only the keys
 * it names; `iter` reads classic|scaled. */
START_TEST(test_sim_config_layering)
{
    ts_llm_enc_config_t ec;
    ts_llm_enc_config_policy(&ec, TS_SCHED_CKKS, 16);
    ck_assert_int_eq(ec.recip.iter, TS_NL_ITER_SCALED);
    ck_assert_int_gt(ec.recip.degree, 0);
    ts_llm_sim_config_t cfg;
    ts_llm_enc_config_to_sim(&ec, &cfg);
    const char *y = "recip: {method: iter, lo: 0.5, hi: 12, steps: 6}\n"
                    "rsqrt: {steps: 3}\n"
                    "recip_last: {hi: 2}\n"
                    "recip_norm: {method: iter, steps: 2, degree: 7, iter: scaled}\n";
    char err[256] = "";
    ck_assert_msg(ts_llm_sim_config_load_string(y, strlen(y), &cfg, err, sizeof err) == TS_OK, "%s",
                  err);
    const ts_nonlinear_spec_t *r = &cfg.prim[TS_NL_FN_RECIP], *q = &cfg.prim[TS_NL_FN_RSQRT];
    ck_assert_int_eq(r->method, TS_NL_ITER);
    ck_assert_int_eq(r->degree, 0);
    ck_assert_int_eq(r->iter, TS_NL_ITER_CLASSIC);
    ck_assert_int_eq(r->steps, 6);
    ck_assert_double_eq(r->lo, 0.5);
    ck_assert_int_eq(q->degree, ec.rsqrt.degree); /* kept */
    ck_assert_int_eq(q->iter, ec.rsqrt.iter);
    ck_assert_int_eq(q->steps, 3);
    ck_assert_double_eq(q->lo, ec.rsqrt.lo);
    ck_assert_double_eq(cfg.recip_last.hi, 2.0);
    ck_assert_int_eq(cfg.recip_last.degree, ec.recip_last.degree);
    ck_assert_double_eq(cfg.recip_norm.lo, ec.recip_norm.lo); /* lo carries over */
    ck_assert_int_eq(cfg.recip_norm.degree, 7);
    ck_assert_int_eq(cfg.recip_norm.iter, TS_NL_ITER_SCALED);
    const char *bad = "recip: {iter: fast}\n";
    ck_assert_ts_status(ts_llm_sim_config_load_string(bad, strlen(bad), &cfg, err, sizeof err),
                        TS_ECONFIG);
}
END_TEST

TS_TEST_SUITE(llm_sim)
{
    Suite *s = suite_create("llm_sim");
    TCase *tc = ts_tcase("sim", 0);
    tcase_add_test(tc, test_sim_exact);
    tcase_add_test(tc, test_sim_approx);
    tcase_add_test(tc, test_sim_engine_softmax);
    tcase_add_test(tc, test_sim_noise_and_config);
    tcase_add_test(tc, test_sim_config_layering);
    suite_add_tcase(s, tc);
    return s;
}
