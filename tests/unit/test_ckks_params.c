/*
 * CKKS parameters: the security gate at every table boundary (+-1 bit), the
 * presets in configs/params, YAML errors, insecure handling and validation.
 */
#include "core/ckks/ckks.h"
#include "tests/unit/ts_test.h"

static ts_log_level_t saved_level;

static void quiet(void)
{
    saved_level = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
}

static void loud(void)
{
    ts_log_set_level(saved_level);
}

START_TEST(test_gate_dense_boundaries)
{
    static const struct {
        int log_n;
        double bound;
    } rows[] = {{10, 26},  {11, 53},  {12, 106},  {13, 214},
                {14, 430}, {15, 868}, {16, 1747}, {17, 3523}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        double b = 0;
        ck_assert_ts_ok(ts_ckks_security_max_logqp(rows[i].log_n, TS_CKKS_SECRET_TERNARY, 0, &b));
        ck_assert_msg(b == rows[i].bound, "logN %d: bound %.0f, expected %.0f", rows[i].log_n, b,
                      rows[i].bound);
        ck_assert_ts_ok(
            ts_ckks_security_check(rows[i].log_n, TS_CKKS_SECRET_TERNARY, 0, rows[i].bound - 1));
        ck_assert_ts_ok(
            ts_ckks_security_check(rows[i].log_n, TS_CKKS_SECRET_TERNARY, 0, rows[i].bound));
        ck_assert_ts_status(
            ts_ckks_security_check(rows[i].log_n, TS_CKKS_SECRET_TERNARY, 0, rows[i].bound + 1),
            TS_ESECURITY);
    }
    /* the quoted bounds, each as the lower of the two tables */
    ck_assert_ts_status(ts_ckks_security_check(13, TS_CKKS_SECRET_TERNARY, 0, 215), TS_ESECURITY);
    ck_assert_ts_status(ts_ckks_security_check(14, TS_CKKS_SECRET_TERNARY, 0, 432), TS_ESECURITY);
    ck_assert_ts_status(ts_ckks_security_check(15, TS_CKKS_SECRET_TERNARY, 0, 869), TS_ESECURITY);
    /* unknown ring degrees are refused */
    double b;
    ck_assert_ts_status(ts_ckks_security_max_logqp(9, TS_CKKS_SECRET_TERNARY, 0, &b), TS_ESECURITY);
    ck_assert_ts_status(ts_ckks_security_max_logqp(18, TS_CKKS_SECRET_TERNARY, 0, &b),
                        TS_ESECURITY);
    ck_assert_ts_status(ts_ckks_security_max_logqp(14, 7, 0, &b), TS_ESECURITY);
}
END_TEST

START_TEST(test_gate_sparse_boundaries)
{
    static const struct {
        int log_n;
        int64_t h;
        double bound;
    } rows[] = {{15, 192, 767}, {16, 192, 1553}, {17, 192, 3104},
                {16, 128, 300}, {17, 128, 2341}, {16, 32, 117}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int ln = rows[i].log_n;
        int64_t h = rows[i].h;
        ck_assert_ts_ok(
            ts_ckks_security_check(ln, TS_CKKS_SECRET_SPARSE_TERNARY, h, rows[i].bound - 1));
        ck_assert_ts_ok(
            ts_ckks_security_check(ln, TS_CKKS_SECRET_SPARSE_TERNARY, h, rows[i].bound));
        ck_assert_ts_status(
            ts_ckks_security_check(ln, TS_CKKS_SECRET_SPARSE_TERNARY, h, rows[i].bound + 1),
            TS_ESECURITY);
    }
    /* h = 192 is not covered by the dense rows, and smaller h is refused */
    double b;
    ck_assert_ts_status(ts_ckks_security_max_logqp(14, TS_CKKS_SECRET_SPARSE_TERNARY, 192, &b),
                        TS_ESECURITY);
    ck_assert_ts_status(ts_ckks_security_max_logqp(13, TS_CKKS_SECRET_SPARSE_TERNARY, 192, &b),
                        TS_ESECURITY);
    ck_assert_ts_status(ts_ckks_security_max_logqp(15, TS_CKKS_SECRET_SPARSE_TERNARY, 191, &b),
                        TS_ESECURITY);
    ck_assert_ts_status(ts_ckks_security_max_logqp(16, TS_CKKS_SECRET_SPARSE_TERNARY, 31, &b),
                        TS_ESECURITY);
    /* h = 150 at 2^16 falls to the h >= 128 row */
    ck_assert_ts_ok(ts_ckks_security_max_logqp(16, TS_CKKS_SECRET_SPARSE_TERNARY, 150, &b));
    ck_assert(b == 300);
    /* h = 1000 at 2^16 uses the h >= 192 row */
    ck_assert_ts_ok(ts_ckks_security_max_logqp(16, TS_CKKS_SECRET_SPARSE_TERNARY, 1000, &b));
    ck_assert(b == 1553);
}
END_TEST

/* A literal whose log2(QP) is just below (delta < 0) or above an integer bound. */
static void literal_bits(ts_ckks_params_literal_t *lit, int log_n, int total_bits)
{
    ts_ckks_params_literal_init(lit);
    lit->log_n = log_n;
    lit->scale_log2 = 30;
    /* primes are generated just below 2^bits, so log2(QP) is a hair under
     * the sum of the bit sizes */
    int left = total_bits;
    size_t k = 0;
    while (left > 0) {
        int b = left > 50 ? 50 : left;
        if (left - b > 0 && left - b < 30)
            b = left - 30;
        lit->logq[k++] = b;
        left -= b;
    }
    lit->logq_count = k;
}

START_TEST(test_gate_on_literals)
{
    quiet();
    static const struct {
        int log_n;
        int bound;
    } rows[] = {{13, 214}, {14, 430}, {15, 868}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ts_ckks_params_literal_t lit;
        ts_ckks_params_t *p = NULL;
        literal_bits(&lit, rows[i].log_n, rows[i].bound);
        ck_assert_ts_ok(ts_ckks_params_new(&lit, false, &p));
        ck_assert(ts_ckks_params_logqp(p) <= rows[i].bound);
        ck_assert(ts_ckks_params_logqp(p) > rows[i].bound - 1);
        ts_ckks_params_free(p);
        literal_bits(&lit, rows[i].log_n, rows[i].bound + 1);
        ck_assert_ts_status(ts_ckks_params_new(&lit, false, &p), TS_ESECURITY);
        ck_assert_ptr_null(p);
        /* the same set marked insecure loads only with the explicit flag */
        lit.insecure = true;
        ck_assert_ts_status(ts_ckks_params_new(&lit, false, &p), TS_ESECURITY);
        ck_assert_ts_ok(ts_ckks_params_new(&lit, true, &p));
        ck_assert(ts_ckks_params_insecure(p));
        ts_ckks_params_free(p);
    }
    loud();
}
END_TEST

static void preset_path(char *buf, size_t size, const char *name)
{
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(buf, size, "%s%sconfigs/params/%s.yaml", root ? root : "", root ? "/" : "", name);
}

START_TEST(test_presets)
{
    quiet();
    char path[512];
    ts_cfg_error_t err;
    ts_ckks_params_t *p = NULL;

    preset_path(path, sizeof(path), "fhelium-n14");
    ck_assert_ts_ok(ts_ckks_params_load_file(path, false, &p, &err));
    ck_assert_int_eq(ts_ckks_params_log_n(p), 14);
    ck_assert_int_eq(ts_ckks_params_max_level(p), 7);
    ck_assert_uint_eq(ts_ckks_params_q(p, 0), UINT64_C(1152921504606748673));
    ck_assert_uint_eq(ts_ckks_params_q(p, 7), UINT64_C(1099510054913));
    ck_assert_uint_eq(ts_ckks_params_p(p, 0), UINT64_C(1152921504606683137));
    ck_assert_int_eq(ts_ckks_params_dnum(p), 8);
    ck_assert(ts_ckks_params_scale(p) == 1099511627776.0);
    ck_assert_uint_eq(ts_ckks_params_slots(p), 8192);
    ck_assert(fabs(ts_ckks_params_logqp(p) - 400.0) < 0.01);
    ck_assert(!ts_ckks_params_insecure(p));
    ts_ckks_params_t *r = ts_ckks_params_ref(p);
    ck_assert_ptr_eq(r, p);
    ts_ckks_params_free(r);
    ts_ckks_params_free(p);

    preset_path(path, sizeof(path), "seed001-client-n13");
    ck_assert_ts_ok(ts_ckks_params_load_file(path, false, &p, &err));
    ck_assert_int_eq(ts_ckks_params_log_n(p), 13);
    ck_assert_uint_eq(ts_ckks_params_q_count(p), 6);
    ck_assert_uint_eq(ts_ckks_params_p_count(p), 0);
    ck_assert(ts_ckks_params_scale_log2(p) == 25.0);
    ts_ckks_params_free(p);

    preset_path(path, sizeof(path), "pfedckks-n13");
    ck_assert_ts_ok(ts_ckks_params_load_file(path, false, &p, &err));
    ck_assert_uint_eq(ts_ckks_params_q_count(p), 2);
    ck_assert_uint_eq(ts_ckks_params_p_count(p), 1);
    ck_assert(ts_ckks_params_q(p, 0) >> 27 == 1);
    ck_assert(ts_ckks_params_q(p, 1) >> 25 == 1);
    ts_ckks_params_free(p);

    if (!ts_test_quick()) {
        preset_path(path, sizeof(path), "n16-128");
        ck_assert_ts_ok(ts_ckks_params_load_file(path, false, &p, &err));
        ck_assert_int_eq(ts_ckks_params_max_level(p), 34);
        ck_assert(ts_ckks_params_logqp(p) <= 1747);
        ts_ckks_params_free(p);

        preset_path(path, sizeof(path), "n16-h192");
        ck_assert_ts_ok(ts_ckks_params_load_file(path, false, &p, &err));
        ck_assert_int_eq(ts_ckks_params_secret(p), TS_CKKS_SECRET_SPARSE_TERNARY);
        ck_assert_int_eq(ts_ckks_params_hamming_weight(p), 192);
        ck_assert(ts_ckks_params_logqp(p) <= 1553);
        ts_ckks_params_free(p);
    }

    static const char *const insecure[] = {"test-n10", "test-n11", "test-n11-sparse"};
    for (size_t i = 0; i < 3; i++) {
        preset_path(path, sizeof(path), insecure[i]);
        ck_assert_ts_status(ts_ckks_params_load_file(path, false, &p, &err), TS_ESECURITY);
        ck_assert_ptr_null(p);
        ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &p, &err));
        ck_assert(ts_ckks_params_insecure(p));
        ts_ckks_params_free(p);
    }
    loud();
}
END_TEST

static ts_status_t load_str(const char *text, ts_ckks_params_t **p, ts_cfg_error_t *err)
{
    ts_ckks_params_literal_t lit;
    *p = NULL;
    ts_status_t st = ts_ckks_params_literal_load_string(text, strlen(text), "t.yaml", &lit, err);
    if (st != TS_OK)
        return st;
    return ts_ckks_params_new(&lit, true, p);
}

START_TEST(test_yaml_errors)
{
    quiet();
    ts_cfg_error_t err;
    ts_ckks_params_t *p = NULL;
    /* unknown key */
    ck_assert_ts_status(load_str("log_n: 10\nscale_log2: 30\nlogq: [40]\nbogus: 1\n", &p, &err),
                        TS_ECONFIG);
    ck_assert_int_eq(err.line, 4);
    /* missing required key */
    ck_assert_ts_status(load_str("logq: [40]\nscale_log2: 30\n", &p, &err), TS_ECONFIG);
    /* wrong type */
    ck_assert_ts_status(load_str("log_n: ten\nscale_log2: 30\nlogq: [40]\n", &p, &err), TS_ECONFIG);
    /* out of range */
    ck_assert_ts_status(load_str("log_n: 30\nscale_log2: 30\nlogq: [40]\n", &p, &err), TS_ECONFIG);
    ck_assert_ts_status(load_str("log_n: 10\nscale_log2: 30\nlogq: [40, 70]\n", &p, &err),
                        TS_ECONFIG);
    /* bad enum */
    ck_assert_ts_status(
        load_str("log_n: 10\nscale_log2: 30\nlogq: [40]\nsecret: gaussian\n", &p, &err),
        TS_ECONFIG);
    /* duplicate key */
    ck_assert_ts_status(load_str("log_n: 10\nlog_n: 11\nscale_log2: 30\nlogq: [40]\n", &p, &err),
                        TS_ECONFIG);
    /* a missing file */
    ck_assert_int_ne(ts_ckks_params_load_file("/nonexistent/x.yaml", true, &p, &err), TS_OK);
    ck_assert_ptr_null(p);
    /* well-formed YAML, invalid parameters */
    ck_assert_ts_status(load_str("log_n: 10\nscale_log2: 30\n", &p, &err), TS_EPARAMS);
    ck_assert_ts_status(load_str("log_n: 10\nscale_log2: 30\nlogq: [40]\nq: [12289]\n", &p, &err),
                        TS_EPARAMS);
    /* not prime */
    ck_assert_ts_status(load_str("log_n: 10\nscale_log2: 30\nq: [12291]\n", &p, &err), TS_EPARAMS);
    /* prime but not 1 mod 2N (12289 = 1 mod 4096, not mod 2^12 * 2 for N = 2^12) */
    ck_assert_ts_status(load_str("log_n: 12\nscale_log2: 10\nq: [12289]\n", &p, &err), TS_EPARAMS);
    /* 12289 = 3 * 2^12 + 1 is fine for N = 2^10 */
    ck_assert_ts_ok(load_str("log_n: 10\nscale_log2: 10\nq: [12289]\n", &p, &err));
    ts_ckks_params_free(p);
    /* duplicate prime across Q and P */
    ck_assert_ts_status(load_str("log_n: 10\nscale_log2: 10\nq: [12289]\np: [12289]\n", &p, &err),
                        TS_EPARAMS);
    /* dnum without P, dnum too large */
    ck_assert_ts_status(load_str("log_n: 10\nscale_log2: 30\nlogq: [40]\ndnum: 1\n", &p, &err),
                        TS_EPARAMS);
    ck_assert_ts_status(
        load_str("log_n: 10\nscale_log2: 30\nlogq: [40]\nlogp: [40]\ndnum: 2\n", &p, &err),
        TS_EPARAMS);
    /* scale larger than Q */
    ck_assert_ts_status(load_str("log_n: 10\nscale_log2: 45\nlogq: [40]\n", &p, &err), TS_EPARAMS);
    /* sparse without weight, ternary with weight, slots too many */
    ck_assert_ts_status(
        load_str("log_n: 10\nscale_log2: 30\nlogq: [40]\nsecret: sparse_ternary\n", &p, &err),
        TS_EPARAMS);
    ck_assert_ts_status(
        load_str("log_n: 10\nscale_log2: 30\nlogq: [40]\nhamming_weight: 64\n", &p, &err),
        TS_EPARAMS);
    ck_assert_ts_status(
        load_str("log_n: 10\nscale_log2: 30\nlogq: [40]\nlog_slots: 10\n", &p, &err), TS_EPARAMS);
    /* the generated chain: distinct NTT-friendly primes of the asked sizes */
    ck_assert_ts_ok(load_str("log_n: 10\nscale_log2: 30\nlogq: [40, 30, 30, 30]\nlogp: [40]\n"
                             "log_slots: 4\ninsecure: true\n",
                             &p, &err));
    ck_assert_uint_eq(ts_ckks_params_slots(p), 16);
    ck_assert_int_eq(ts_ckks_params_dnum(p), 4);
    for (size_t i = 0; i < 4; i++) {
        uint64_t q = ts_ckks_params_q(p, i);
        ck_assert_uint_eq(q % 2048, 1);
        for (size_t j = 0; j < i; j++)
            ck_assert_uint_ne(q, ts_ckks_params_q(p, j));
        ck_assert_uint_ne(q, ts_ckks_params_p(p, 0));
    }
    ts_ckks_params_free(p);
    loud();
}
END_TEST

START_TEST(test_params_alloc_failures)
{
    quiet();
    ts_ckks_params_literal_t lit;
    literal_bits(&lit, 12, 100);
    for (uint64_t n = 1; n < 64; n++) {
        ts_ckks_params_t *p = NULL;
        int64_t live = ts_alloc_live();
        ts_alloc_fail_after(n, true);
        ts_status_t st = ts_ckks_params_new(&lit, false, &p);
        ts_alloc_fail_after(0, false);
        if (st == TS_OK) {
            ts_ckks_params_free(p);
            ck_assert_int_eq(ts_alloc_live(), live);
            break;
        }
        ck_assert_ts_status(st, TS_ENOMEM);
        ck_assert_ptr_null(p);
        ck_assert_int_eq(ts_alloc_live(), live);
    }
    loud();
}
END_TEST

TS_TEST_SUITE(ckks_params)
{
    Suite *s = suite_create("ckks_params");
    TCase *tc = ts_tcase("params", 0);
    tcase_add_test(tc, test_gate_dense_boundaries);
    tcase_add_test(tc, test_gate_sparse_boundaries);
    tcase_add_test(tc, test_gate_on_literals);
    tcase_add_test(tc, test_presets);
    tcase_add_test(tc, test_yaml_errors);
    tcase_add_test(tc, test_params_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}
