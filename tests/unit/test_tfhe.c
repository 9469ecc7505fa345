/*
 * Tests of core/tfhe: LWE/RLWE/RGSW against plaintext arithmetic, key
 * switching, exhaustive PBS over small message spaces for several LUTs,
 * multi-value PBS, measured noise against the analytic formulas, HomComp
 * against plaintext comparison, and one PBS at the ROSETTA-size set.
 */
#include <fcntl.h>
#include <unistd.h>

#include "tests/unit/ts_test.h"

#include "core/tfhe/tfhe.h"

/* A fixture: parameters, keys, evaluation key and evaluator of one preset. */
typedef struct {
    ts_tfhe_params_t *params;
    ts_prng_t *prng;
    ts_tfhe_lwe_key_t *lwe_key;
    ts_tfhe_rlwe_key_t *rlwe_key;
    ts_tfhe_lwe_key_t *big_key;
    ts_tfhe_evalkey_t *ek;
    ts_tfhe_evaluator_t *ev;
    uint64_t Q, q;
    uint32_t N, n;
} fx_t;

static void fx_init_lit(fx_t *f, const ts_tfhe_params_lit_t *lit, bool with_ek)
{
    memset(f, 0, sizeof(*f));
    ck_assert_ts_ok(ts_tfhe_params_new(lit, &f->params));
    uint8_t seed[TS_SEED_BYTES] = {7, 1, 2, 3};
    /* deterministic keys keep failures reproducible; production keys use ts_prng_new_os */
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 99, &f->prng));
    f->Q = ts_tfhe_params_q_br(f->params);
    f->q = ts_tfhe_params_q_lwe(f->params);
    f->N = ts_tfhe_params_n_br(f->params);
    f->n = ts_tfhe_params_literal(f->params)->lwe_n;
    ck_assert_ts_ok(ts_tfhe_lwe_key_new(f->n, ts_tfhe_params_literal(f->params)->lwe_secret,
                                        f->prng, &f->lwe_key));
    ck_assert_ts_ok(ts_tfhe_rlwe_key_new(f->params, f->prng, &f->rlwe_key));
    ck_assert_ts_ok(ts_tfhe_rlwe_key_lwe(f->rlwe_key, &f->big_key));
    if (with_ek)
        ck_assert_ts_ok(
            ts_tfhe_evalkey_new(f->params, f->lwe_key, f->rlwe_key, NULL, f->prng, &f->ek));
    ck_assert_ts_ok(ts_tfhe_evaluator_new(f->params, f->ek, &f->ev));
}

static void fx_init(fx_t *f, const char *preset, bool with_ek)
{
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset(preset, &lit));
    fx_init_lit(f, &lit, with_ek);
}

static void fx_clear(fx_t *f)
{
    ts_tfhe_evaluator_free(f->ev);
    ts_tfhe_evalkey_free(f->ek);
    ts_tfhe_lwe_key_free(f->big_key);
    ts_tfhe_rlwe_key_free(f->rlwe_key);
    ts_tfhe_lwe_key_free(f->lwe_key);
    ts_prng_free(f->prng);
    ts_tfhe_params_free(f->params);
}

static uint64_t rnd(fx_t *f, uint64_t bound)
{
    uint64_t v;
    ck_assert_ts_ok(ts_prng_uniform(f->prng, bound, &v));
    return v;
}

/* Encrypt m in [0, p) under the big key (dimension N, modulus Q). */
static ts_tfhe_lwe_t *enc_big(fx_t *f, uint64_t m, uint64_t p)
{
    ts_tfhe_lwe_t *ct;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f->N, f->Q, &ct));
    ck_assert_ts_ok(ts_tfhe_lwe_encrypt(f->big_key, ct, ts_tfhe_encode(f->Q, m, p),
                                        ts_tfhe_params_literal(f->params)->rlwe_sigma, f->prng));
    return ct;
}

static uint64_t phase_big(fx_t *f, const ts_tfhe_lwe_t *ct)
{
    uint64_t ph;
    ck_assert_ts_ok(ts_tfhe_lwe_phase(f->big_key, ct, &ph));
    return ph;
}

/* v * delta mod Q for a signed v */
static uint64_t signed_encode(uint64_t Q, int64_t v, uint64_t delta)
{
    __extension__ unsigned __int128 x = (unsigned __int128)(uint64_t)(v < 0 ? -v : v) * delta;
    uint64_t r = (uint64_t)(x % Q);
    return v < 0 && r ? Q - r : r;
}

/* ------------------------------------------------------------ params */

START_TEST(test_tfhe_params)
{
    const char *const *names = ts_tfhe_params_preset_names();
    for (size_t i = 0; names[i]; i++) {
        ts_tfhe_params_lit_t lit;
        ts_tfhe_params_t *p;
        ck_assert_ts_ok(ts_tfhe_params_preset(names[i], &lit));
        ck_assert_ts_ok(ts_tfhe_params_new(&lit, &p));
        char buf[4096];
        ts_tfhe_params_describe(p, buf, sizeof(buf));
        fprintf(stderr, "%s", buf);
        if (!lit.insecure) {
            /* the secure sets meet 2^-64 at 3 bits of message (tfhe_std128 at 4) */
            ts_tfhe_noise_t nz;
            uint64_t pmax = strcmp(names[i], "tfhe_std128") == 0 ? 16 : 8;
            ck_assert_ts_ok(ts_tfhe_noise_estimate(p, pmax, &nz));
            ck_assert_msg(nz.log2_pfail <= -64.0, "%s: p=%llu fails with 2^%.1f", names[i],
                          (unsigned long long)pmax, nz.log2_pfail);
            ck_assert_uint_ge(ts_tfhe_homcomp_max_bits(p), 8);
        }
        ts_tfhe_params_free(p);
    }
    /* a weakened set is refused */
    ts_tfhe_params_lit_t lit;
    ts_tfhe_params_t *p = NULL;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_std128", &lit));
    lit.lwe_n = 700;
    ck_assert_ts_status(ts_tfhe_params_new(&lit, &p), TS_ESECURITY);
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_std128", &lit));
    lit.log_q_br = 58;
    ck_assert_ts_status(ts_tfhe_params_new(&lit, &p), TS_ESECURITY);
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_std128", &lit));
    lit.ks_levels = 10; /* 40 bits of digits in a 26-bit modulus */
    ck_assert_ts_status(ts_tfhe_params_new(&lit, &p), TS_EPARAMS);
    ck_assert_ts_status(ts_tfhe_params_preset("nope", &lit), TS_ENOENT);
    /* the HE-standard rows themselves pass with zero margin (ternary) */
    double m;
    ck_assert_ts_ok(ts_tfhe_security_check(2048, 54, 3.2, TS_TFHE_SECRET_TERNARY, &m));
    ck_assert(fabs(m) < 1e-9);
    ck_assert_ts_status(ts_tfhe_security_check(2048, 54, 3.2, TS_TFHE_SECRET_BINARY, &m),
                        TS_ESECURITY);
}
END_TEST

START_TEST(test_tfhe_params_yaml)
{
    char path[] = "/tmp/tfhe_params_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *doc = "name: custom\ninsecure: true\nlwe_n: 300\nlwe_secret: ternary\n"
                      "ks_levels: 4\n";
    ck_assert_int_eq(write(fd, doc, strlen(doc)), (int)strlen(doc));
    close(fd);
    ts_tfhe_params_lit_t lit;
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_small", &lit));
    ck_assert_ts_ok(ts_tfhe_params_load_yaml(path, &lit, &err));
    ck_assert_str_eq(lit.name, "custom");
    ck_assert_uint_eq(lit.lwe_n, 300);
    ck_assert_int_eq(lit.lwe_secret, TS_TFHE_SECRET_TERNARY);
    ck_assert_uint_eq(lit.ks_levels, 4);
    ck_assert_uint_eq(lit.log_n_br, 10); /* untouched */
    /* unknown key */
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *bad = "lwe_nn: 3\n";
    ck_assert_int_eq(write(fd, bad, strlen(bad)), (int)strlen(bad));
    close(fd);
    ck_assert_int_ne(ts_tfhe_params_load_yaml(path, &lit, &err), TS_OK);
    unlink(path);
    /* the committed YAML files describe exactly the presets */
    const char *files[] = {"tfhe_std128", "tfhe_std128_ternary", "tfhe_conv128", "tfhe_test_small"};
    for (size_t i = 0; i < 4; i++) {
        char fpath[256];
        snprintf(fpath, sizeof fpath, "configs/params/%s.yaml", files[i]);
        ts_tfhe_params_lit_t want, got;
        ck_assert_ts_ok(ts_tfhe_params_preset(files[i], &want));
        ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_tiny", &got));
        ts_status_t st = ts_tfhe_params_load_yaml(fpath, &got, &err);
        char msg[512];
        ts_cfg_error_format(&err, msg, sizeof msg);
        ck_assert_msg(st == TS_OK, "%s: %s", fpath, msg);
        ck_assert_str_eq(want.name, got.name);
        ck_assert(want.insecure == got.insecure && want.lwe_n == got.lwe_n &&
                  want.lwe_logq == got.lwe_logq && want.lwe_sigma == got.lwe_sigma &&
                  want.lwe_secret == got.lwe_secret && want.log_n_br == got.log_n_br &&
                  want.log_q_br == got.log_q_br && want.q_br == got.q_br &&
                  want.rlwe_sigma == got.rlwe_sigma && want.rlwe_secret == got.rlwe_secret &&
                  want.br_log_base == got.br_log_base && want.br_levels == got.br_levels &&
                  want.ks_log_base == got.ks_log_base && want.ks_levels == got.ks_levels);
    }
}
END_TEST

/* ---------------------------------------------------------------- LWE */

START_TEST(test_tfhe_lwe_encrypt)
{
    fx_t f;
    fx_init(&f, "tfhe_test_small", false);
    const uint64_t p = 16;
    ts_tfhe_lwe_t *x, *y, *z;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.n, f.q, &x));
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.n, f.q, &y));
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.n, f.q, &z));
    for (int it = 0; it < 200; it++) {
        uint64_t a = rnd(&f, p / 2), b = rnd(&f, p / 2);
        ck_assert_ts_ok(ts_tfhe_lwe_encrypt(f.lwe_key, x, ts_tfhe_encode(f.q, a, p), 3.2, f.prng));
        ck_assert_ts_ok(ts_tfhe_lwe_encrypt(f.lwe_key, y, ts_tfhe_encode(f.q, b, p), 3.2, f.prng));
        uint64_t ph;
        ck_assert_ts_ok(ts_tfhe_lwe_phase(f.lwe_key, x, &ph));
        ck_assert_uint_eq(ts_tfhe_decode(f.q, ph, p), a);
        ck_assert_ts_ok(ts_tfhe_lwe_add(z, x, y));
        ck_assert_ts_ok(ts_tfhe_lwe_phase(f.lwe_key, z, &ph));
        ck_assert_uint_eq(ts_tfhe_decode(f.q, ph, p), a + b);
        ck_assert_ts_ok(ts_tfhe_lwe_sub(z, x, y));
        ck_assert_ts_ok(ts_tfhe_lwe_phase(f.lwe_key, z, &ph));
        ck_assert_uint_eq(ts_tfhe_decode(f.q, ph, p), (a + 2 * p - b) % (2 * p));
        ts_tfhe_lwe_copy(z, x);
        ts_tfhe_lwe_mul_const(z, 3);
        ts_tfhe_lwe_add_const(z, ts_tfhe_encode(f.q, 1, p));
        ck_assert_ts_ok(ts_tfhe_lwe_phase(f.lwe_key, z, &ph));
        ck_assert_uint_eq(ts_tfhe_decode(f.q, ph, p), (3 * a + 1) % (2 * p));
        ts_tfhe_lwe_neg(z);
        ck_assert_ts_ok(ts_tfhe_lwe_phase(f.lwe_key, z, &ph));
        ck_assert_uint_eq(ts_tfhe_decode(f.q, ph, p), (2 * p - (3 * a + 1) % (2 * p)) % (2 * p));
    }
    /* modulus switching q -> 2^14 keeps the message */
    ts_tfhe_lwe_t *s;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.n, 1u << 14, &s));
    for (uint64_t m = 0; m < p; m++) {
        ck_assert_ts_ok(ts_tfhe_lwe_encrypt(f.lwe_key, x, ts_tfhe_encode(f.q, m, p), 3.2, f.prng));
        ck_assert_ts_ok(ts_tfhe_lwe_modswitch(s, x));
        uint64_t ph;
        ck_assert_ts_ok(ts_tfhe_lwe_phase(f.lwe_key, s, &ph));
        ck_assert_uint_eq(ts_tfhe_decode(1u << 14, ph, p), m);
    }
    ck_assert_ts_status(ts_tfhe_lwe_add(z, x, s), TS_EMISMATCH);
    ts_tfhe_lwe_free(s);
    ts_tfhe_lwe_free(x);
    ts_tfhe_lwe_free(y);
    ts_tfhe_lwe_free(z);
    fx_clear(&f);
}
END_TEST

START_TEST(test_tfhe_keyswitch)
{
    fx_t f;
    fx_init(&f, "tfhe_test_small", true);
    const uint64_t p = 32;
    ts_tfhe_lwe_t *small;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.n, f.q, &small));
    double sum2 = 0;
    int count = 0;
    for (uint64_t m = 0; m < p; m++) {
        ts_tfhe_lwe_t *ct = enc_big(&f, m, p);
        ck_assert_ts_ok(ts_tfhe_keyswitch_to_small(f.ev, small, ct));
        uint64_t ph;
        ck_assert_ts_ok(ts_tfhe_lwe_phase(f.lwe_key, small, &ph));
        ck_assert_uint_eq(ts_tfhe_decode(f.q, ph, p), m);
        double e = (double)ts_tfhe_centered(ph - ts_tfhe_encode(f.q, m, p), f.q);
        sum2 += e * e;
        count++;
        ts_tfhe_lwe_free(ct);
    }
    ts_tfhe_noise_t nz;
    ck_assert_ts_ok(ts_tfhe_noise_estimate(f.params, 2, &nz));
    double var = sum2 / count, pred = nz.var_ms_big + nz.var_ks;
    fprintf(stderr, "tfhe keyswitch: measured var %.4g, predicted %.4g (ratio %.2f)\n", var, pred,
            var / pred);
    ck_assert_msg(var < 4 * pred && var > pred / 4, "KS variance %.4g vs formula %.4g", var, pred);
    /* ModSwitch q -> 2N: rounding variance (1 + n E[s^2]) / 12 */
    ts_tfhe_lwe_t *s2n;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.n, 2ull * f.N, &s2n));
    sum2 = 0;
    const int ms_samples = 400;
    for (int i = 0; i < ms_samples; i++) {
        ck_assert_ts_ok(ts_tfhe_lwe_encrypt(f.lwe_key, small, 0, 0.0, f.prng));
        ck_assert_ts_ok(ts_tfhe_lwe_modswitch(s2n, small));
        uint64_t ph;
        ck_assert_ts_ok(ts_tfhe_lwe_phase(f.lwe_key, s2n, &ph));
        double e = (double)ts_tfhe_centered(ph, 2ull * f.N);
        sum2 += e * e;
    }
    var = sum2 / ms_samples;
    fprintf(stderr, "tfhe modswitch to 2N: measured var %.3g, predicted %.3g (ratio %.2f)\n", var,
            nz.var_ms_2n, var / nz.var_ms_2n);
    ck_assert_msg(var < 2 * nz.var_ms_2n && var > nz.var_ms_2n / 2,
                  "ModSwitch variance %.4g vs %.4g", var, nz.var_ms_2n);
    ts_tfhe_lwe_free(s2n);
    ts_tfhe_lwe_free(small);
    fx_clear(&f);
}
END_TEST

/* ------------------------------------------------------- RLWE / RGSW */

START_TEST(test_tfhe_rlwe_rgsw)
{
    fx_t f;
    fx_init(&f, "tfhe_test_small", false);
    const uint32_t N = f.N;
    const uint64_t Q = f.Q, delta = Q >> 8;
    uint64_t *mu = ts_malloc(N * 8), *ph = ts_malloc(N * 8);
    int64_t *msg = ts_malloc(N * 8);
    ts_tfhe_rlwe_t *c0, *c1, *out;
    ts_tfhe_rgsw_t *g;
    ck_assert_ts_ok(ts_tfhe_rlwe_new(f.params, &c0));
    ck_assert_ts_ok(ts_tfhe_rlwe_new(f.params, &c1));
    ck_assert_ts_ok(ts_tfhe_rlwe_new(f.params, &out));
    ck_assert_ts_ok(ts_tfhe_rgsw_new(f.params, &g));
    for (uint32_t i = 0; i < N; i++) {
        msg[i] = (int64_t)rnd(&f, 16) - 8;
        mu[i] = (uint64_t)((int64_t)delta * msg[i] + (msg[i] < 0 ? (int64_t)Q : 0));
    }
    ck_assert_ts_ok(ts_tfhe_rlwe_encrypt(f.rlwe_key, c0, mu, f.prng));
    ck_assert_ts_ok(ts_tfhe_rlwe_phase(f.rlwe_key, c0, ph));
    for (uint32_t i = 0; i < N; i++)
        ck_assert_int_lt(llabs(ts_tfhe_centered(ph[i] - mu[i] + Q, Q)), 64);
    /* sample extraction: every index */
    ts_tfhe_lwe_t *ex;
    ck_assert_ts_ok(ts_tfhe_lwe_new(N, Q, &ex));
    for (uint32_t idx = 0; idx < N; idx += 37) {
        ck_assert_ts_ok(ts_tfhe_rlwe_sample_extract(c0, idx, ex));
        ck_assert_uint_eq(phase_big(&f, ex), ph[idx]);
    }
    /* external product with m in {1, 0, -1, 3}: phase ~ m * mu */
    const int64_t ms[] = {1, 0, -1, 3};
    for (size_t k = 0; k < 4; k++) {
        ck_assert_ts_ok(ts_tfhe_rgsw_encrypt(f.rlwe_key, g, ms[k], f.prng));
        ck_assert_ts_ok(ts_tfhe_external_product(f.ev, out, g, c0));
        ck_assert_ts_ok(ts_tfhe_rlwe_phase(f.rlwe_key, out, ph));
        for (uint32_t i = 0; i < N; i++) {
            int64_t want = ms[k] * msg[i];
            int64_t got = ts_tfhe_centered(ph[i], Q);
            double err = (double)got - (double)want * (double)delta;
            ck_assert_msg(fabs(err) < (double)delta / 4, "external product m=%lld coeff %u",
                          (long long)ms[k], i);
        }
    }
    /* CMux: selects c1 (encrypting 2*msg) when the selector is 1 */
    for (uint32_t i = 0; i < N; i++)
        mu[i] = (uint64_t)((int64_t)delta * 2 * msg[i] + (msg[i] < 0 ? (int64_t)Q : 0));
    ck_assert_ts_ok(ts_tfhe_rlwe_encrypt(f.rlwe_key, c1, mu, f.prng));
    for (int sel = 0; sel <= 1; sel++) {
        ck_assert_ts_ok(ts_tfhe_rgsw_encrypt(f.rlwe_key, g, sel, f.prng));
        ck_assert_ts_ok(ts_tfhe_cmux(f.ev, out, g, c0, c1));
        ck_assert_ts_ok(ts_tfhe_rlwe_phase(f.rlwe_key, out, ph));
        for (uint32_t i = 0; i < N; i++) {
            double want = (double)(sel ? 2 * msg[i] : msg[i]) * (double)delta;
            ck_assert(fabs((double)ts_tfhe_centered(ph[i], Q) - want) < (double)delta / 4);
        }
    }
    ts_tfhe_lwe_free(ex);
    ts_tfhe_rgsw_free(g);
    ts_tfhe_rlwe_free(c0);
    ts_tfhe_rlwe_free(c1);
    ts_tfhe_rlwe_free(out);
    ts_free(mu);
    ts_free(ph);
    ts_free(msg);
    fx_clear(&f);
}
END_TEST

/* ----------------------------------------------------------------- PBS */

static int64_t f_identity(void *ctx, uint64_t m)
{
    (void)ctx;
    return (int64_t)m;
}

static int64_t f_square(void *ctx, uint64_t m)
{
    uint64_t p = *(const uint64_t *)ctx;
    return (int64_t)((m * m) % p);
}

/* 1/x on a grid: x = (m + 1) / p in (0, 1], output round(p_out / (p x)) = round(p_out / (m + 1))
 * clamped to [0, p_out) (p_out = p here) */
static int64_t f_inverse(void *ctx, uint64_t m)
{
    uint64_t p = *(const uint64_t *)ctx;
    uint64_t v = (2 * p + (m + 1)) / (2 * (m + 1));
    return (int64_t)(v >= p ? p - 1 : v);
}

/* sign of m seen as a signed value of Z_p: +1 / -1 (full-range output, no padding) */
static int64_t f_sign(void *ctx, uint64_t m)
{
    uint64_t p = *(const uint64_t *)ctx;
    return m < p / 2 ? 1 : -1;
}

START_TEST(test_tfhe_pbs_exhaustive)
{
    fx_t f;
    fx_init(&f, "tfhe_test_small", true);
    const uint64_t p = 8;
    uint64_t pp = p;
    int64_t table[8];
    for (uint64_t m = 0; m < p; m++)
        table[m] = (int64_t)rnd(&f, p);
    const uint64_t delta = ts_tfhe_delta(f.Q, p);
    ts_tfhe_lut_t *luts[5];
    ck_assert_ts_ok(ts_tfhe_lut_new(f.params, p, f_identity, NULL, delta, &luts[0]));
    ck_assert_ts_ok(ts_tfhe_lut_new(f.params, p, f_square, &pp, delta, &luts[1]));
    ck_assert_ts_ok(ts_tfhe_lut_new(f.params, p, f_sign, &pp, delta, &luts[2]));
    ck_assert_ts_ok(ts_tfhe_lut_from_table(f.params, p, table, delta, &luts[3]));
    ck_assert_ts_ok(ts_tfhe_lut_new(f.params, p, f_inverse, &pp, delta, &luts[4]));
    ts_tfhe_lwe_t *out[5];
    for (int k = 0; k < 5; k++)
        ck_assert_ts_ok(ts_tfhe_lwe_new(f.N, f.Q, &out[k]));
    for (uint64_t m = 0; m < p; m++) {
        ts_tfhe_lwe_t *ct = enc_big(&f, m, p);
        int64_t want[5] = {(int64_t)m, (int64_t)((m * m) % p), m < p / 2 ? 1 : -1, table[m],
                           f_inverse(&pp, m)};
        for (int k = 0; k < 5; k++) {
            ck_assert_ts_ok(ts_tfhe_pbs(f.ev, out[k], ct, luts[k]));
            uint64_t ph = phase_big(&f, out[k]);
            uint64_t w = signed_encode(f.Q, want[k], delta);
            ck_assert_msg(llabs(ts_tfhe_centered(ph - w + f.Q, f.Q)) < (int64_t)(delta / 4),
                          "LUT %d at m=%llu: phase %llu, want %lld", k, (unsigned long long)m,
                          (unsigned long long)ph, (long long)want[k]);
        }
        /* chained: the output is a valid input of the next PBS */
        ck_assert_ts_ok(ts_tfhe_pbs(f.ev, out[0], out[1], luts[0]));
        ck_assert_uint_eq(ts_tfhe_decode(f.Q, phase_big(&f, out[0]), p), (m * m) % p);
        /* multi-value: the five LUTs from one blind rotation */
        ck_assert_ts_ok(ts_tfhe_pbs_multi(f.ev, out, ct, (const ts_tfhe_lut_t *const *)luts, 5));
        for (int k = 0; k < 5; k++) {
            uint64_t ph = phase_big(&f, out[k]);
            uint64_t w = signed_encode(f.Q, want[k], delta);
            ck_assert_msg(llabs(ts_tfhe_centered(ph - w + f.Q, f.Q)) < (int64_t)(delta / 4),
                          "multi LUT %d at m=%llu", k, (unsigned long long)m);
        }
        ts_tfhe_lwe_free(ct);
    }
    for (int k = 0; k < 5; k++) {
        ts_tfhe_lwe_free(out[k]);
        ts_tfhe_lut_free(luts[k]);
    }
    fx_clear(&f);
}
END_TEST

/* Ternary LWE key: blind rotation with two RGSW per coefficient. */
START_TEST(test_tfhe_pbs_ternary)
{
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_small", &lit));
    lit.lwe_secret = TS_TFHE_SECRET_TERNARY;
    fx_t f;
    fx_init_lit(&f, &lit, true);
    const uint64_t p = 8, delta = ts_tfhe_delta(f.Q, p);
    uint64_t pp = p;
    ts_tfhe_lut_t *lut;
    ck_assert_ts_ok(ts_tfhe_lut_new(f.params, p, f_square, &pp, delta, &lut));
    ts_tfhe_lwe_t *out;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.N, f.Q, &out));
    for (uint64_t m = 0; m < p; m++) {
        ts_tfhe_lwe_t *ct = enc_big(&f, m, p);
        ck_assert_ts_ok(ts_tfhe_pbs(f.ev, out, ct, lut));
        ck_assert_uint_eq(ts_tfhe_decode(f.Q, phase_big(&f, out), p), (m * m) % p);
        ts_tfhe_lwe_free(ct);
    }
    ts_tfhe_lwe_free(out);
    ts_tfhe_lut_free(lut);
    fx_clear(&f);
}
END_TEST

/* Select with an encrypted test polynomial (ROSETTA's construct-then-select):
 * the candidates are encrypted, the index is an LWE; coefficient 0 of the
 * rotated accumulator holds the selected candidate. */
START_TEST(test_tfhe_select_encrypted)
{
    fx_t f;
    fx_init(&f, "tfhe_test_small", true);
    const uint64_t p = 8, scale = f.Q >> 12;
    uint64_t cand[8], *tv = ts_malloc(f.N * 8), *ph = ts_malloc(f.N * 8);
    for (uint64_t j = 0; j < p; j++)
        cand[j] = 100 + 37 * j;
    for (uint32_t k = 0; k < f.N; k++)
        tv[k] = cand[(uint64_t)k * p / f.N] * scale % f.Q;
    ts_tfhe_rlwe_t *acc;
    ck_assert_ts_ok(ts_tfhe_rlwe_new(f.params, &acc));
    for (uint64_t m = 0; m < p; m++) {
        ck_assert_ts_ok(ts_tfhe_rlwe_encrypt(f.rlwe_key, acc, tv, f.prng));
        ts_tfhe_lwe_t *idx = enc_big(&f, m, p);
        ck_assert_ts_ok(ts_tfhe_blind_rotate_index(f.ev, acc, idx, p));
        ck_assert_ts_ok(ts_tfhe_rlwe_phase(f.rlwe_key, acc, ph));
        double got = (double)ts_tfhe_centered(ph[0], f.Q) / (double)scale;
        ck_assert_msg(fabs(got - (double)cand[m]) < 0.5, "select %llu: got %.2f, want %llu",
                      (unsigned long long)m, got, (unsigned long long)cand[m]);
        ts_tfhe_lwe_free(idx);
    }
    ts_tfhe_rlwe_free(acc);
    ts_free(tv);
    ts_free(ph);
    fx_clear(&f);
}
END_TEST

/* Measured variance of PBS outputs against the analytic blind-rotation variance. */
START_TEST(test_tfhe_pbs_noise)
{
    fx_t f;
    fx_init(&f, "tfhe_test_small", true);
    const uint64_t p = 8, delta = ts_tfhe_delta(f.Q, p);
    ts_tfhe_lut_t *lut;
    ck_assert_ts_ok(ts_tfhe_lut_new(f.params, p, f_identity, NULL, delta, &lut));
    ts_tfhe_lwe_t *out;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.N, f.Q, &out));
    const int samples = ts_test_quick() ? 24 : 96;
    double sum2 = 0, sum2m = 0;
    ts_tfhe_lwe_t *mout;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.N, f.Q, &mout));
    for (int i = 0; i < samples; i++) {
        uint64_t m = rnd(&f, p);
        ts_tfhe_lwe_t *ct = enc_big(&f, m, p);
        /* multi-value output: noise times ||v||^2, plus |T| from 2c = delta - 1 */
        ck_assert_ts_ok(ts_tfhe_pbs_multi(f.ev, &mout, ct, (const ts_tfhe_lut_t *const *)&lut, 1));
        double em = (double)ts_tfhe_centered(
            phase_big(&f, mout) - signed_encode(f.Q, (int64_t)m, delta) + f.Q, f.Q);
        sum2m += em * em;
        ck_assert_ts_ok(ts_tfhe_pbs(f.ev, out, ct, lut));
        double e = (double)ts_tfhe_centered(
            phase_big(&f, out) - signed_encode(f.Q, (int64_t)m, delta) + f.Q, f.Q);
        sum2 += e * e;
        ts_tfhe_lwe_free(ct);
    }
    ts_tfhe_noise_t nz;
    ck_assert_ts_ok(ts_tfhe_noise_estimate(f.params, p, &nz));
    double var = sum2 / samples;
    fprintf(stderr,
            "tfhe PBS noise: measured var 2^%.2f, formula 2^%.2f (ratio %.2f), %d samples\n",
            log2(var), log2(nz.var_br), var / nz.var_br, samples);
    /* the formula is an average-case estimate; allow a factor 3 either way */
    ck_assert_msg(var < 3 * nz.var_br && var > nz.var_br / 3, "PBS variance %.4g vs formula %.4g",
                  var, nz.var_br);
    double varm = sum2m / samples, predm = nz.var_br * ts_tfhe_lut_factor_norm2(lut);
    fprintf(stderr,
            "tfhe multi-value PBS noise: measured var 2^%.2f, formula 2^%.2f (ratio %.2f)\n",
            log2(varm), log2(predm), varm / predm);
    ck_assert_msg(varm < 3 * predm && varm > predm / 3, "multi-value variance %.4g vs %.4g", varm,
                  predm);
    ts_tfhe_lwe_free(mout);
    ts_tfhe_lwe_free(out);
    ts_tfhe_lut_free(lut);
    fx_clear(&f);
}
END_TEST

static void homcomp_check(fx_t *f, uint32_t bits, uint64_t x, uint64_t tau, ts_tfhe_lwe_t *out)
{
    const uint64_t delta_out = ts_tfhe_delta(f->Q, 4);
    ts_tfhe_lwe_t *ct = enc_big(f, x, 1ull << bits);
    ck_assert_ts_ok(ts_tfhe_homcomp(f->ev, out, ct, bits, tau, delta_out));
    uint64_t got = ts_tfhe_decode(f->Q, phase_big(f, out), 4);
    ck_assert_msg(got == (x >= tau ? 1u : 0u), "HomComp(%llu >= %llu) at %u bits gave %llu",
                  (unsigned long long)x, (unsigned long long)tau, bits, (unsigned long long)got);
    ts_tfhe_lwe_free(ct);
}

START_TEST(test_tfhe_homcomp)
{
    fx_t f;
    fx_init(&f, "tfhe_test_small", true);
    ts_tfhe_lwe_t *out;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.N, f.Q, &out));
    uint32_t maxb = ts_tfhe_homcomp_max_bits(f.params);
    uint32_t bits = maxb < 10 ? maxb : 10;
    ck_assert_uint_ge(bits, 6);
    fprintf(stderr, "tfhe HomComp: %u bits, digits of %u bits, %u PBS (max %u bits)\n", bits,
            ts_tfhe_homcomp_digit_bits(f.params, bits), ts_tfhe_homcomp_pbs_count(f.params, bits),
            maxb);
    const uint64_t top = 1ull << bits;
    /* boundaries: x at tau - 1, tau, tau + 1 for thresholds across the range,
     * and the ends of the input range */
    const uint64_t taus[] = {1, 2, top / 2 - 1, top / 2, top / 2 + 1, top - 1, 37 % top, 0, top};
    for (size_t i = 0; i < sizeof(taus) / sizeof(taus[0]); i++) {
        uint64_t tau = taus[i];
        const int64_t dx[] = {-1, 0, 1};
        for (int k = 0; k < 3; k++) {
            int64_t x = (int64_t)tau + dx[k];
            if (x < 0 || x >= (int64_t)top)
                continue;
            homcomp_check(&f, bits, (uint64_t)x, tau, out);
        }
        homcomp_check(&f, bits, 0, tau, out);
        homcomp_check(&f, bits, top - 1, tau, out);
    }
    /* every input of a 5-bit range against two thresholds */
    const uint64_t taus5[] = {13, 31};
    for (size_t t = 0; t < 2 && !ts_test_quick(); t++)
        for (uint64_t x = 0; x < 32; x++)
            homcomp_check(&f, 5, x, taus5[t], out);
    /* random pairs */
    const int pairs = ts_test_quick() ? 4 : 16;
    for (int i = 0; i < pairs; i++)
        homcomp_check(&f, bits, rnd(&f, top), rnd(&f, top + 1), out);
    /* too many bits for the noise: refused */
    ts_tfhe_lwe_t *ct = enc_big(&f, 0, 2);
    ck_assert_ts_status(ts_tfhe_homcomp(f.ev, out, ct, maxb + 1, 1, 1), TS_ERANGE);
    ts_tfhe_lwe_free(ct);
    ts_tfhe_lwe_free(out);
    fx_clear(&f);
}
END_TEST

/* Serialization round trips; corrupted or mismatched input is refused. */
START_TEST(test_tfhe_serial)
{
    fx_t f;
    fx_init(&f, "tfhe_test_tiny", true);
    uint8_t *buf = NULL;
    size_t size = 0;
    /* evaluation key: seeded, then a PBS with the reloaded key */
    ck_assert_ts_ok(ts_tfhe_evalkey_serialize(f.ek, &buf, &size));
    ts_tfhe_evalkey_t *ek2 = NULL;
    ck_assert_ts_ok(ts_tfhe_evalkey_deserialize(f.params, buf, size, &ek2));
    fprintf(stderr, "tfhe evalkey (tiny): %zu bytes serialized, %zu bytes expanded\n", size,
            ts_tfhe_evalkey_bytes(ek2));
    ck_assert_uint_lt(size, ts_tfhe_evalkey_bytes(ek2));
    ts_tfhe_evaluator_t *ev2;
    ck_assert_ts_ok(ts_tfhe_evaluator_new(f.params, ek2, &ev2));
    const uint64_t p = 4, delta = ts_tfhe_delta(f.Q, p);
    ts_tfhe_lut_t *lut;
    ck_assert_ts_ok(ts_tfhe_lut_new(f.params, p, f_identity, NULL, delta, &lut));
    ts_tfhe_lwe_t *out;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.N, f.Q, &out));
    for (uint64_t m = 0; m < p; m++) {
        ts_tfhe_lwe_t *ct = enc_big(&f, m, p);
        ck_assert_ts_ok(ts_tfhe_pbs(ev2, out, ct, lut));
        ck_assert_uint_eq(ts_tfhe_decode(f.Q, phase_big(&f, out), p), m);
        ts_tfhe_lwe_free(ct);
    }
    /* a flipped byte anywhere is refused (digest), as is a truncation */
    ts_tfhe_evalkey_t *bad = NULL;
    buf[size / 2] ^= 0x40;
    ck_assert_int_ne(ts_tfhe_evalkey_deserialize(f.params, buf, size, &bad), TS_OK);
    buf[size / 2] ^= 0x40;
    ck_assert_int_ne(ts_tfhe_evalkey_deserialize(f.params, buf, size - 9, &bad), TS_OK);
    ck_assert_ptr_null(bad);
    /* other parameters: refused */
    ts_tfhe_params_lit_t lit;
    ts_tfhe_params_t *other;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_tiny", &lit));
    lit.ks_levels = 4;
    ck_assert_ts_ok(ts_tfhe_params_new(&lit, &other));
    ck_assert_ts_status(ts_tfhe_evalkey_deserialize(other, buf, size, &bad), TS_EMISMATCH);
    ts_free(buf);
    /* LWE ciphertext */
    ts_tfhe_lwe_t *ct = enc_big(&f, 3, p), *ct2 = NULL;
    ck_assert_ts_ok(ts_tfhe_lwe_serialize(f.params, ct, &buf, &size));
    ck_assert_ts_ok(ts_tfhe_lwe_deserialize(f.params, buf, size, &ct2));
    ck_assert_uint_eq(phase_big(&f, ct2), phase_big(&f, ct));
    ts_tfhe_lwe_free(ct2);
    ct2 = NULL;
    ck_assert_ts_status(ts_tfhe_lwe_deserialize(other, buf, size, &ct2), TS_EMISMATCH);
    ts_free(buf);
    ts_tfhe_lwe_free(ct);
    /* secret keys */
    ck_assert_ts_ok(ts_tfhe_secret_serialize(f.params, f.lwe_key, f.rlwe_key, &buf, &size));
    ts_tfhe_lwe_key_t *lk = NULL;
    ts_tfhe_rlwe_key_t *rk = NULL;
    ck_assert_ts_ok(ts_tfhe_secret_deserialize(f.params, buf, size, &lk, &rk));
    ts_tfhe_lwe_key_t *bk;
    ck_assert_ts_ok(ts_tfhe_rlwe_key_lwe(rk, &bk));
    ts_tfhe_lwe_t *c3 = enc_big(&f, 1, p);
    uint64_t ph;
    ck_assert_ts_ok(ts_tfhe_lwe_phase(bk, c3, &ph));
    ck_assert_uint_eq(ph, phase_big(&f, c3));
    ts_tfhe_lwe_free(c3);
    ts_tfhe_lwe_key_free(bk);
    ts_tfhe_lwe_key_free(lk);
    ts_tfhe_rlwe_key_free(rk);
    ts_free_secret(buf);
    ts_tfhe_params_free(other);
    ts_tfhe_lwe_free(out);
    ts_tfhe_lut_free(lut);
    ts_tfhe_evaluator_free(ev2);
    ts_tfhe_evalkey_free(ek2);
    fx_clear(&f);
}
END_TEST

/* Every allocation failure inside key generation, the evaluator, LUTs and a
 * PBS is reported as TS_ENOMEM and leaks nothing. */
START_TEST(test_tfhe_alloc_failures)
{
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_tiny", &lit));
    uint8_t seed[TS_SEED_BYTES] = {3};
    bool done = false;
    for (uint64_t k = 1; k < 400 && !done; k++) {
        int64_t live = ts_alloc_live();
        ts_tfhe_params_t *params = NULL;
        ts_prng_t *prng = NULL;
        ts_tfhe_lwe_key_t *lk = NULL;
        ts_tfhe_rlwe_key_t *rk = NULL;
        ts_tfhe_evalkey_t *ek = NULL;
        ts_tfhe_evaluator_t *ev = NULL;
        ts_tfhe_lut_t *lut = NULL;
        ts_tfhe_lwe_t *ct = NULL;
        uint8_t *buf = NULL;
        size_t size = 0;
        ts_tfhe_evalkey_t *ek2 = NULL;
        ck_assert_ts_ok(ts_prng_new_seeded(seed, 1, &prng));
        ts_alloc_fail_after(k, true);
        ts_status_t st = ts_tfhe_params_new(&lit, &params);
        if (st == TS_OK)
            st = ts_tfhe_lwe_key_new(lit.lwe_n, lit.lwe_secret, prng, &lk);
        if (st == TS_OK)
            st = ts_tfhe_rlwe_key_new(params, prng, &rk);
        if (st == TS_OK)
            st = ts_tfhe_evalkey_new(params, lk, rk, NULL, prng, &ek);
        if (st == TS_OK)
            st = ts_tfhe_evaluator_new(params, ek, &ev);
        if (st == TS_OK)
            st = ts_tfhe_lut_new(params, 4, f_identity, NULL, ts_tfhe_delta(1ull << 40, 4), &lut);
        if (st == TS_OK)
            st = ts_tfhe_lwe_new(ts_tfhe_params_n_br(params), ts_tfhe_params_q_br(params), &ct);
        if (st == TS_OK)
            st = ts_tfhe_pbs(ev, ct, ct, lut);
        if (st == TS_OK)
            st = ts_tfhe_evalkey_serialize(ek, &buf, &size);
        if (st == TS_OK)
            st = ts_tfhe_evalkey_deserialize(params, buf, size, &ek2);
        ts_alloc_fail_after(0, false);
        if (st == TS_OK)
            done = true;
        else
            ck_assert_msg(st == TS_ENOMEM, "allocation %llu: %s", (unsigned long long)k,
                          ts_status_name(st));
        ts_tfhe_evalkey_free(ek2);
        ts_free(buf);
        ts_tfhe_lwe_free(ct);
        ts_tfhe_lut_free(lut);
        ts_tfhe_evaluator_free(ev);
        ts_tfhe_evalkey_free(ek);
        ts_tfhe_rlwe_key_free(rk);
        ts_tfhe_lwe_key_free(lk);
        ts_tfhe_params_free(params);
        ts_prng_free(prng);
        ck_assert_int_eq(ts_alloc_live(), live);
    }
    ck_assert(done);
}
END_TEST

/* One PBS at the ROSETTA-size set (N_br = 2048, n = 1024, 53-bit Q). */
START_TEST(test_tfhe_pbs_std128)
{
    if (ts_test_quick())
        return;
    fx_t f;
    fx_init(&f, "tfhe_std128", true);
    const uint64_t p = 16, delta = ts_tfhe_delta(f.Q, p);
    uint64_t pp = p;
    ts_tfhe_lut_t *lut;
    ck_assert_ts_ok(ts_tfhe_lut_new(f.params, p, f_square, &pp, delta, &lut));
    ts_tfhe_lwe_t *out;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.N, f.Q, &out));
    const uint64_t ms[] = {3, 15};
    for (int i = 0; i < 2; i++) {
        ts_tfhe_lwe_t *ct = enc_big(&f, ms[i], p);
        uint64_t t0 = ts_now_ns();
        ck_assert_ts_ok(ts_tfhe_pbs(f.ev, out, ct, lut));
        uint64_t t1 = ts_now_ns();
        fprintf(stderr, "tfhe_std128 PBS: %.1f ms\n", (double)(t1 - t0) / 1e6);
        ck_assert_uint_eq(ts_tfhe_decode(f.Q, phase_big(&f, out), p), (ms[i] * ms[i]) % p);
        ts_tfhe_lwe_free(ct);
    }
    ts_tfhe_lwe_free(out);
    ts_tfhe_lut_free(lut);
    fx_clear(&f);
}
END_TEST

TS_TEST_SUITE(tfhe)
{
    Suite *s = suite_create("tfhe");
    TCase *tc = ts_tcase("tfhe", 0);
    tcase_add_test(tc, test_tfhe_params);
    tcase_add_test(tc, test_tfhe_params_yaml);
    tcase_add_test(tc, test_tfhe_lwe_encrypt);
    tcase_add_test(tc, test_tfhe_keyswitch);
    tcase_add_test(tc, test_tfhe_rlwe_rgsw);
    tcase_add_test(tc, test_tfhe_pbs_exhaustive);
    tcase_add_test(tc, test_tfhe_pbs_ternary);
    tcase_add_test(tc, test_tfhe_select_encrypted);
    tcase_add_test(tc, test_tfhe_pbs_noise);
    tcase_add_test(tc, test_tfhe_homcomp);
    tcase_add_test(tc, test_tfhe_serial);
    tcase_add_test(tc, test_tfhe_alloc_failures);
    tcase_add_test(tc, test_tfhe_pbs_std128);
    suite_add_tcase(s, tc);
    return s;
}
