/*
 * CKKS bootstrapping and ModRecover (core/circuits) against the plaintext
 * values, at the insecure preset test-boot-n10 (N = 2^10, h = 32, K = 12,
 * message ratio q0 / Delta = 2^20, lowered to 2^12 by the CoeffToSlot-first bootstrap). Precision
 * is -log2(max |error|) over the slots; inputs are uniform in the square [-1, 1] + i [-1, 1] (the
 * whole message range the ratio is sized for). The bounds (PREC_BITS) sit a few bits below what the
 * runs show, which is limited by the 2^-20 message ratio times the EvalMod/CoeffToSlot noise at
 * 60-bit scales.
 *
 * TS_SLOW_TESTS=1 adds one bootstrap at the 128-bit N = 2^16 preset
 * (boot-n16-h192; minutes and ~10 GB of memory).
 */
#include <complex.h>

#include "core/circuits/circuits.h"
#include "core/ckks/ckks.h"
#include "tests/unit/ts_test.h"

#define PREC_BITS 18.0

typedef struct {
    ts_ckks_params_t *p;
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_ckks_evalkeys_t *ek;
    ts_ckks_encoder_t *enc;
    ts_ckks_evaluator_t *ev;
    ts_boot_t *bt;
    ts_boot_config_t cfg;
} fx_t;

static void load(fx_t *f, const char *name)
{
    memset(f, 0, sizeof(*f));
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/%s.yaml", root ? root : "", root ? "/" : "",
             name);
    ts_log_level_t lv = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &f->p, &err));
    ts_log_set_level(lv);
    uint8_t seed[TS_SEED_BYTES] = {9, 8, 7};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 5, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ck_assert_ts_ok(ts_boot_config_default(f->p, &f->cfg));
}

/* Keys exactly as ts_boot_rotation_steps lists them, and the bootstrapper. */
static void setup(fx_t *f)
{
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    ck_assert_ts_ok(ts_boot_keygen(f->p, &f->cfg, f->ek, f->sk, f->prng));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f->p, f->ek, &f->ev));
    ck_assert_ts_ok(ts_boot_new(f->p, &f->cfg, &f->bt));
}

static void fx_clear(fx_t *f)
{
    ts_boot_free(f->bt);
    ts_ckks_evaluator_free(f->ev);
    ts_ckks_evalkeys_free(f->ek);
    ts_ckks_encoder_free(f->enc);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
}

static uint64_t rng_state = 88172645463325252ULL;
static double unif(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1;
}

static void fill(double complex *v, size_t n, bool real)
{
    for (size_t i = 0; i < n; i++)
        v[i] = real ? unif() : unif() + I * unif();
}

static ts_ckks_ciphertext_t *encrypt(fx_t *f, const double complex *v, size_t n, int level)
{
    ts_ckks_plaintext_t *pt;
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, level, &pt));
    ck_assert_ts_ok(ts_ckks_encode(f->enc, v, n, n, level, ts_ckks_params_scale(f->p), pt));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, level, &ct));
    ck_assert_ts_ok(ts_ckks_encrypt_sk(f->sk, pt, f->prng, NULL, ct));
    ts_ckks_plaintext_free(pt);
    return ct;
}

/* -log2 max |dec(ct) - want| over n slots. */
static double precision(fx_t *f, const ts_ckks_ciphertext_t *ct, const double complex *want,
                        size_t n)
{
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, ts_ckks_params_max_level(f->p), &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f->sk, ct, pt));
    double complex *got = malloc(sizeof(double complex) * n);
    ck_assert_ts_ok(ts_ckks_decode(f->enc, pt, got, n));
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = cabs(got[i] - want[i]);
        worst = e > worst ? e : worst;
    }
    free(got);
    ts_ckks_plaintext_free(pt);
    return -log2(worst);
}

static void check_meta(fx_t *f, const ts_ckks_ciphertext_t *ct, int level, size_t slots)
{
    ck_assert_int_eq(ts_ckks_ciphertext_level(ct), level);
    ck_assert_uint_eq(ts_ckks_ciphertext_slots(ct), slots);
    ck_assert_int_eq(ts_ckks_ciphertext_degree(ct), 1);
    double s = ts_ckks_ciphertext_scale(ct), want = ts_ckks_params_scale(f->p);
    ck_assert_msg(s == want, "scale %.17g, expected %.17g", s, want);
}

/* One bootstrap of random values; returns the precision in bits. */
static double boot_once(fx_t *f, size_t n, bool real, int in_level)
{
    double complex *v = malloc(sizeof(double complex) * n);
    fill(v, n, real);
    ts_ckks_ciphertext_t *ct = encrypt(f, v, n, in_level);
    ck_assert_ts_ok(ts_boot_bootstrap(f->bt, f->ev, ct, ct));
    check_meta(f, ct, ts_boot_levels_left(f->bt), n);
    double bits = precision(f, ct, v, n);
    ts_ckks_ciphertext_free(ct);
    free(v);
    return bits;
}

static void run_boot(int log_slots, int order, bool real_only, int in_level)
{
    fx_t f;
    load(&f, "test-boot-n10");
    f.cfg.log_slots = log_slots ? log_slots : f.cfg.log_slots;
    if (log_slots && log_slots < 6)
        f.cfg.cts_levels = f.cfg.stc_levels = 2;
    f.cfg.order = order;
    f.cfg.real_only = real_only;
    setup(&f);
    size_t n = (size_t)1 << f.cfg.log_slots;
    for (int rep = 0; rep < 2; rep++) {
        double bits = boot_once(&f, n, real_only, in_level);
        if (getenv("TS_TEST_VERBOSE"))
            printf("boot log_slots=%d order=%d real=%d: %.2f bits, %d levels left\n",
                   f.cfg.log_slots, order, real_only, bits, ts_boot_levels_left(f.bt));
        ck_assert_msg(bits >= PREC_BITS, "precision %.2f bits < %.1f", bits, PREC_BITS);
    }
    fx_clear(&f);
}

START_TEST(test_boot_full_cts_first)
{
    run_boot(0, TS_BOOT_CTS_FIRST, false, 0);
}
END_TEST

START_TEST(test_boot_sparse_cts_first)
{
    run_boot(3, TS_BOOT_CTS_FIRST, false, 0);
    run_boot(5, TS_BOOT_CTS_FIRST, false, 2);
}
END_TEST

/* Encrypt re + i im (n slots) at level 1, pair-bootstrap with ct2 made the
 * same way; returns the precision of both real parts in bits (min). */
static double pair_once(fx_t *f, const double complex *a, const double complex *b, size_t n,
                        double bound)
{
    double complex ra[32], rb[32];
    ck_assert_uint_le(n, 32);
    for (size_t i = 0; i < n; i++) {
        ra[i] = creal(a[i]);
        rb[i] = creal(b[i]);
    }
    ts_ckks_ciphertext_t *ca = encrypt(f, a, n, 1), *cb = encrypt(f, b, n, 1);
    ck_assert_ts_ok(ts_boot_bootstrap_pair(f->bt, f->ev, ca, cb, bound));
    check_meta(f, ca, ts_boot_levels_left(f->bt), n);
    check_meta(f, cb, ts_boot_levels_left(f->bt), n);
    double pa = precision(f, ca, ra, n), pb = precision(f, cb, rb, n);
    ts_ckks_ciphertext_free(ca);
    ts_ckks_ciphertext_free(cb);
    return pa < pb ? pa : pb;
}

/*
 * Two real vectors in one bootstrap (ts_boot_bootstrap_pair: Re a + i Re b,
 * split by a conjugation, no level spent beyond the bootstrap's). Oracles:
 * both real parts vs the plaintext, scale and level exactly a bootstrap's;
 * (1) values up to 4 at bound 4; (2) imaginary parts of 0.5 in both inputs
 * (as a large Goldschmidt 1/x carries) do not reach the other's real part
 * (packed as they come, each would be off by 0.5: -log2 0.5 = 1 bit);
 * (3) the bound is precision: values below 1/64 at bound 1/64 come out at
 * least 3 bits more precise (absolute) than at bound 64 (measured 30.6 and
 * 24.1 bits: the error grows with the bound above a floor of ~2^-30 here; at
 * boot-n16-dense it is ~2^-19.5 times the bound). Refusals: the same
 * ciphertext twice, a bound out of range, different scales, STC_FIRST;
 * ts_boot_bootstrap_scaled above the input's scale.
 */
START_TEST(test_boot_pair_scaled)
{
    fx_t f;
    load(&f, "test-boot-n10");
    f.cfg.log_slots = 5;
    setup(&f);
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_conjugate(f.ek, f.sk, f.prng));
    size_t n = 32;
    double complex a[32], b[32];
    fill(a, n, true);
    fill(b, n, true);
    for (size_t i = 0; i < n; i++) { /* up to 4 in magnitude, as the engine's */
        a[i] *= 4;
        b[i] *= 3;
    }
    double p1 = pair_once(&f, a, b, n, 4.0);
    for (size_t i = 0; i < n; i++) {
        a[i] += 0.5 * I;
        b[i] -= 0.5 * I;
    }
    double p2 = pair_once(&f, a, b, n, 4.0);
    for (size_t i = 0; i < n; i++) {
        a[i] = creal(a[i]) / 256;
        b[i] = creal(b[i]) / 256;
    }
    double loose = pair_once(&f, a, b, n, 64.0), tight = pair_once(&f, a, b, n, 1.0 / 64);
    if (getenv("TS_TEST_VERBOSE"))
        printf("pair bootstrap: %.2f bits, with imaginary parts %.2f, values < 1/64 at bound 64 "
               "%.2f, at 1/64 %.2f\n",
               p1, p2, loose, tight);
    ck_assert_msg(p1 >= PREC_BITS - 4 && p2 >= PREC_BITS - 4, "precision %.2f / %.2f bits", p1, p2);
    ck_assert_msg(tight >= loose + 3, "bound 1/64: %.2f bits, bound 64: %.2f", tight, loose);
    /* refusals */
    ts_ckks_ciphertext_t *ca = encrypt(&f, a, n, 1), *cb = encrypt(&f, b, n, 1);
    ck_assert_ts_status(ts_boot_bootstrap_pair(f.bt, f.ev, ca, ca, 1.0), TS_EINVAL);
    ck_assert_ts_status(ts_boot_bootstrap_pair(f.bt, f.ev, ca, cb, 0.0), TS_EINVAL);
    ck_assert_ts_status(ts_boot_bootstrap_pair(f.bt, f.ev, ca, cb, 0x1p21), TS_EINVAL);
    double d = ts_ckks_params_scale(f.p);
    ck_assert_ts_ok(ts_ckks_ciphertext_set_meta(cb, 1, 1, d * 2, n));
    ck_assert_ts_status(ts_boot_bootstrap_pair(f.bt, f.ev, ca, cb, 1.0), TS_EINVAL);
    ck_assert_ts_status(ts_boot_bootstrap_scaled(f.bt, f.ev, ca, d * 2, ca),
                        TS_EINVAL); /* > in.scale */
    ts_boot_t *stc = NULL;
    ts_boot_config_t sc = f.cfg;
    sc.order = TS_BOOT_STC_FIRST;
    ck_assert_ts_ok(ts_boot_new(f.p, &sc, &stc));
    ck_assert_ts_ok(ts_ckks_ciphertext_set_meta(cb, 1, 1, d, n));
    ck_assert_ts_status(ts_boot_bootstrap_pair(stc, f.ev, ca, cb, 1.0), TS_ENOTSUP);
    ts_boot_free(stc);
    ts_ckks_ciphertext_free(ca);
    ts_ckks_ciphertext_free(cb);
    fx_clear(&f);
}
END_TEST

START_TEST(test_boot_stc_first)
{
    run_boot(0, TS_BOOT_STC_FIRST, false, 3);
    run_boot(4, TS_BOOT_STC_FIRST, false, 3);
    run_boot(0, TS_BOOT_STC_FIRST, true, 3);
    run_boot(4, TS_BOOT_STC_FIRST, true, 3);
}
END_TEST

/* bit reversal of j on log2 n bits */
static size_t rev(size_t j, size_t n)
{
    size_t r = 0;
    for (size_t b = 1; b < n; b <<= 1, j >>= 1)
        r = (r << 1) | (j & 1);
    return r;
}

/* ModRecover: a level-0 ciphertext whose coefficients carry the values. */
static void run_recover(int log_slots, bool real_only)
{
    fx_t f;
    load(&f, "test-boot-n10");
    f.cfg.log_slots = log_slots;
    if (log_slots < 6)
        f.cfg.cts_levels = f.cfg.stc_levels = 2;
    f.cfg.order = TS_BOOT_STC_FIRST;
    f.cfg.real_only = real_only;
    setup(&f);
    size_t n = (size_t)1 << log_slots, N = ts_ckks_params_n(f.p), g = N / (2 * n);
    double delta = ts_ckks_params_scale(f.p);
    double complex *v = malloc(sizeof(double complex) * n);
    int64_t *coef = calloc(N, sizeof(int64_t));
    fill(v, n, real_only);
    for (size_t j = 0; j < n; j++) {
        coef[rev(j, n) * g] = llround(creal(v[j]) * delta);
        coef[(rev(j, n) + n) * g] = llround(cimag(v[j]) * delta);
    }
    /* Enc(0) at level 0, plus the coefficient polynomial */
    double complex zero = 0;
    ts_ckks_ciphertext_t *ct = encrypt(&f, &zero, 1, 0);
    ck_assert_ts_ok(ts_ckks_ciphertext_set_meta(ct, 0, 1, delta, n));
    ts_poly_t *m;
    ck_assert_ts_ok(ts_poly_new(ts_ckks_params_ring(f.p), 1, 0, false, &m));
    ck_assert_ts_ok(ts_poly_set_i64(m, coef));
    ck_assert_ts_ok(ts_poly_ntt(m));
    ts_poly_t *c0 = ts_ckks_ciphertext_poly(ct, 0);
    ck_assert_ts_ok(ts_poly_add(c0, c0, m));

    int level = ts_boot_mod_recover_level(f.bt);
    ck_assert_int_ge(level, 1);
    ts_ckks_ciphertext_t *out;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &out));
    ck_assert_ts_ok(ts_boot_mod_recover(f.bt, f.ev, ct, level - 1, out));
    check_meta(&f, out, level - 1, n);
    double bits = precision(&f, out, v, n);
    if (getenv("TS_TEST_VERBOSE"))
        printf("modrecover log_slots=%d real=%d: %.2f bits at level %d\n", log_slots, real_only,
               bits, level - 1);
    ck_assert_msg(bits >= PREC_BITS, "precision %.2f bits < %.1f", bits, PREC_BITS);
    /* SlotToCoeff puts the values where ModRecover reads them */
    ts_ckks_ciphertext_t *s = encrypt(&f, v, n, f.cfg.stc_levels);
    ck_assert_ts_ok(ts_boot_slot_to_coeff(f.bt, f.ev, s, s));
    ck_assert_int_eq(ts_ckks_ciphertext_level(s), 0);
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, 0, &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f.sk, s, pt));
    uint64_t *raw = malloc(sizeof(uint64_t) * N);
    ts_poly_t *pp;
    ck_assert_ts_ok(ts_poly_clone(ts_ckks_plaintext_poly(pt), &pp));
    ck_assert_ts_ok(ts_poly_intt(pp));
    ck_assert_ts_ok(ts_poly_download(pp, raw));
    uint64_t q0 = ts_ckks_params_q(f.p, 0);
    double worst = 0, sc = ts_ckks_ciphertext_scale(s);
    for (size_t k = 0; k < 2 * n; k++) {
        double c = raw[k * g] > q0 / 2 ? -(double)(q0 - raw[k * g]) : (double)raw[k * g];
        double want = (double)coef[k * g] / delta;
        double e = fabs(c / sc - want);
        worst = e > worst ? e : worst;
    }
    ck_assert_msg(-log2(worst) >= PREC_BITS, "SlotToCoeff coefficients: %.2f bits", -log2(worst));
    ts_poly_free(pp);
    free(raw);
    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(s);
    ts_ckks_ciphertext_free(out);
    ts_poly_free(m);
    ts_ckks_ciphertext_free(ct);
    free(coef);
    free(v);
    fx_clear(&f);
}

START_TEST(test_boot_mod_recover)
{
    run_recover(9, false);
    run_recover(9, true);
    run_recover(4, false);
    run_recover(4, true);
}
END_TEST

/* Ten bootstraps in a row (each refreshes the previous output at level 0). */
START_TEST(test_boot_repeated)
{
    fx_t f;
    load(&f, "test-boot-n10");
    f.cfg.log_slots = 4;
    f.cfg.cts_levels = f.cfg.stc_levels = 2;
    setup(&f);
    size_t n = 16;
    double complex v[16];
    fill(v, n, false);
    ts_ckks_ciphertext_t *ct = encrypt(&f, v, n, 0);
    double first = 0;
    int rounds = ts_test_quick() ? 4 : 10;
    for (int i = 0; i < rounds; i++) {
        ck_assert_ts_ok(ts_boot_bootstrap(f.bt, f.ev, ct, ct));
        check_meta(&f, ct, ts_boot_levels_left(f.bt), n);
        double bits = precision(&f, ct, v, n);
        if (getenv("TS_TEST_VERBOSE"))
            printf("repeated bootstrap %d: %.2f bits\n", i + 1, bits);
        if (i == 0)
            first = bits;
        /* errors add up (each round re-encrypts the previous error) */
        ck_assert_msg(bits >= first - 4.0 && bits >= PREC_BITS - 2,
                      "round %d: %.2f bits (first %.2f)", i + 1, bits, first);
        ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, ct, 0, ct));
    }
    ts_ckks_ciphertext_free(ct);
    fx_clear(&f);
}
END_TEST

/* Key list: no duplicates, all in range; the sparse DFTs need fewer keys
 * and smaller transforms than the full ones; bad configs are refused. */
START_TEST(test_boot_keys_and_config)
{
    fx_t f;
    load(&f, "test-boot-n10");
    size_t cnt = 0, N = ts_ckks_params_n(f.p);
    bool conj = false;
    ck_assert_ts_ok(ts_boot_rotation_steps(f.p, &f.cfg, NULL, NULL, &cnt, &conj));
    ck_assert(conj);
    int64_t *steps = malloc(sizeof(int64_t) * cnt);
    size_t small = 1;
    ck_assert_ts_status(ts_boot_rotation_steps(f.p, &f.cfg, steps, NULL, &small, NULL), TS_ERANGE);
    ck_assert_uint_eq(small, cnt);
    ck_assert_ts_ok(ts_boot_rotation_steps(f.p, &f.cfg, steps, NULL, &cnt, NULL));
    for (size_t i = 0; i < cnt; i++) {
        ck_assert(steps[i] > 0 && steps[i] < (int64_t)N / 2);
        for (size_t j = 0; j < i; j++)
            ck_assert(steps[i] != steps[j]);
    }
    ts_boot_config_t c = f.cfg;
    c.log_slots = 3;
    c.cts_levels = c.stc_levels = 2;
    size_t cnt_sparse = 0;
    ck_assert_ts_ok(ts_boot_rotation_steps(f.p, &c, NULL, NULL, &cnt_sparse, NULL));
    ck_assert_uint_lt(cnt_sparse, cnt);
    int left_full, left_sparse, em;
    ck_assert_ts_ok(ts_boot_depth(f.p, &f.cfg, NULL, &em, NULL, &left_full));
    ck_assert_ts_ok(ts_boot_depth(f.p, &c, NULL, NULL, NULL, &left_sparse));
    ck_assert_int_eq(left_full, ts_ckks_params_max_level(f.p) - 6 - em);
    ck_assert_int_eq(left_sparse, left_full + 2);
    c = f.cfg;
    c.cts_levels = 0;
    ck_assert_ts_status(ts_boot_rotation_steps(f.p, &c, NULL, NULL, &cnt, NULL), TS_EINVAL);
    c = f.cfg;
    c.real_only = true; /* CTS_FIRST bootstraps complex coefficients */
    ck_assert_ts_status(ts_boot_depth(f.p, &c, NULL, NULL, NULL, NULL), TS_EINVAL);
    c = f.cfg;
    c.cts_levels = c.stc_levels = 9; /* too deep for the chain */
    ts_boot_t *bt = NULL;
    ck_assert_ts_status(ts_boot_new(f.p, &c, &bt), TS_EPARAMS);
    /* a bootstrapper at fewer slots like this one: its EvalMod and as many
     * DFT levels in all, CoeffToSlot at like's budget but at most
     * log_slots / 2 and SlotToCoeff the rest, so the same levels left; where
     * the budgets must shrink (below them in log slots) the levels differ:
     * TS_ENOTSUP */
    ts_boot_config_t like;
    ck_assert_ts_ok(ts_boot_config_slots(f.p, 7, &like));
    ck_assert_int_eq(like.cts_levels, 3);
    ck_assert_ts_ok(ts_boot_config_slots_like(f.p, 6, &like, &c));
    ck_assert_int_eq(c.cts_levels, like.cts_levels);
    ck_assert_int_eq(c.stc_levels, like.stc_levels);
    ck_assert_ts_ok(ts_boot_config_slots_like(f.p, 4, &like, &c));
    ck_assert_int_eq(c.log_slots, 4);
    ck_assert_int_eq(c.cts_levels + c.stc_levels, like.cts_levels + like.stc_levels);
    ck_assert_int_eq(c.cts_levels, 2); /* 4 / 2: no radix-2 CoeffToSlot group */
    ck_assert_int_le(c.stc_levels, 4);
    ck_assert_int_eq(c.cheb_degree, like.cheb_degree);
    int l_like = -1, l_c = -2;
    ck_assert_ts_ok(ts_boot_depth(f.p, &like, NULL, NULL, NULL, &l_like));
    ck_assert_ts_ok(ts_boot_depth(f.p, &c, NULL, NULL, NULL, &l_c));
    ck_assert_int_eq(l_c, l_like);
    ts_boot_config_t d;
    ck_assert_ts_ok(ts_boot_config_slots(f.p, 4, &d)); /* its own defaults: more levels */
    ck_assert_ts_ok(ts_boot_depth(f.p, &d, NULL, NULL, NULL, &l_c));
    ck_assert_int_gt(l_c, l_like);
    /* two levels in all: one each */
    ts_boot_config_t l2 = like;
    l2.cts_levels = 1;
    l2.stc_levels = 1;
    ck_assert_ts_ok(ts_boot_config_slots_like(f.p, 4, &l2, &c));
    ck_assert_int_eq(c.cts_levels, 1);
    ck_assert_int_eq(c.stc_levels, 1);
    /* more than log_slots / 2 + log_slots in all: CoeffToSlot takes the rest */
    l2.cts_levels = 3;
    l2.stc_levels = 3;
    ck_assert_ts_ok(ts_boot_config_slots_like(f.p, 3, &l2, &c));
    ck_assert_int_eq(c.cts_levels + c.stc_levels, 6);
    ck_assert_int_eq(c.stc_levels, 3);
    ck_assert_ts_status(ts_boot_config_slots_like(f.p, 1, &like, &c), TS_ENOTSUP);
    ck_assert_ts_status(ts_boot_config_slots_like(f.p, 0, &like, &c), TS_EINVAL);
    free(steps);
    fx_clear(&f);
}
END_TEST

/* A missing key is reported, not crashed on. */
START_TEST(test_boot_missing_key)
{
    fx_t f;
    load(&f, "test-boot-n10");
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f.p, &f.ek));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_relin(f.ek, f.sk, f.prng));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, f.ek, &f.ev));
    ck_assert_ts_ok(ts_boot_new(f.p, &f.cfg, &f.bt));
    size_t n = ts_ckks_params_slots(f.p);
    double complex *v = calloc(n, sizeof(double complex));
    ts_ckks_ciphertext_t *ct = encrypt(&f, v, n, 0);
    ck_assert_ts_status(ts_boot_bootstrap(f.bt, f.ev, ct, ct), TS_ENOKEY);
    ts_ckks_ciphertext_free(ct);
    free(v);
    fx_clear(&f);
}
END_TEST

/* Decrypt n slots of ct into got. */
static void decrypt_values(fx_t *f, const ts_ckks_ciphertext_t *ct, double complex *got, size_t n)
{
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, ts_ckks_params_max_level(f->p), &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f->sk, ct, pt));
    ck_assert_ts_ok(ts_ckks_decode(f->enc, pt, got, n));
    ts_ckks_plaintext_free(pt);
}

/* log2 rms |a - b| over n slots. */
static double rms_diff_log2(const double complex *a, const double complex *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += cabs(a[i] - b[i]) * cabs(a[i] - b[i]);
    return 0.5 * log2(s / (double)n);
}

/*
 * The message ratio (ts_boot_config_t log_message_ratio), what its rule
 * rests on and the rule. At test-boot-n10's full 2^9 slots, two fresh
 * encryptions of the same random vector bootstrapped at ratio 2^12 and at
 * 2^8: their difference (the bootstrap's noise: EvalMod's, times the ratio)
 * at least 2.5 bits smaller at 2^8 (4 expected). A constant vector c = 0.9 +
 * 0.9 i (its coefficients as large as its values) at ratio 2^6: the output
 * is the sine's, sin(2 pi rho c) / (2 pi rho) per part with rho = Delta 2^a
 * / q_0 exactly (a the bootstrapper's shift; rho ~ 2^-7 here), to 2^-14,
 * while it stands ~2^-11.2 (rms) from c. The rule at boot-n16-dense (parameters only): 2^12 up to
 * 2^11 slots, 2^11 at 2^12-2^13, 2^10 at 2^14-2^15; a bootstrapper "like"
 * another at other slots takes its own slot count's ratio, or like's where
 * like's is not the default.
 */
START_TEST(test_boot_message_ratio)
{
    fx_t f;
    load(&f, "test-boot-n10");
    setup(&f);
    size_t n = (size_t)1 << f.cfg.log_slots;
    double complex *v = malloc(sizeof(double complex) * n);
    double complex *g[2] = {malloc(sizeof(double complex) * n), malloc(sizeof(double complex) * n)};
    fill(v, n, false);
    double noise[2];
    const double ratios[2] = {12, 8};
    for (int k = 0; k < 2; k++) {
        ts_boot_config_t c = f.cfg;
        c.log_message_ratio = ratios[k];
        ts_boot_t *bt = NULL;
        ck_assert_ts_ok(ts_boot_new(f.p, &c, &bt));
        for (int r = 0; r < 2; r++) {
            ts_ckks_ciphertext_t *ct = encrypt(&f, v, n, 0);
            ck_assert_ts_ok(ts_boot_bootstrap(bt, f.ev, ct, ct));
            decrypt_values(&f, ct, g[r], n);
            ts_ckks_ciphertext_free(ct);
        }
        noise[k] = rms_diff_log2(g[0], g[1], n);
        ts_boot_free(bt);
    }
    if (getenv("TS_TEST_VERBOSE"))
        printf("boot noise: ratio 2^12 2^%.2f, 2^8 2^%.2f\n", noise[0], noise[1]);
    ck_assert_msg(noise[1] <= noise[0] - 2.5, "noise 2^%.2f at ratio 2^8, 2^%.2f at 2^12", noise[1],
                  noise[0]);
    /* the sine's distortion of a constant vector */
    ts_boot_config_t c = f.cfg;
    c.log_message_ratio = 6;
    ts_boot_t *bt = NULL;
    ck_assert_ts_ok(ts_boot_new(f.p, &c, &bt));
    for (size_t i = 0; i < n; i++)
        v[i] = 0.9 + 0.9 * I;
    ts_ckks_ciphertext_t *ct = encrypt(&f, v, n, 0);
    double delta = ts_ckks_ciphertext_scale(ct), q0 = (double)ts_ckks_params_q(f.p, 0);
    ck_assert_ts_ok(ts_boot_bootstrap(bt, f.ev, ct, ct));
    decrypt_values(&f, ct, g[0], n);
    double rho = ldexp(delta, (int)floor(log2(q0 / delta) - 6)) / q0;
    double part = sin(2 * M_PI * rho * 0.9) / (2 * M_PI * rho);
    for (size_t i = 0; i < n; i++)
        g[1][i] = part + part * I;
    double model = rms_diff_log2(g[0], g[1], n), off = rms_diff_log2(g[0], v, n);
    if (getenv("TS_TEST_VERBOSE"))
        printf("boot ratio 2^6, constant 0.9 + 0.9i: 2^%.2f from the sine's, 2^%.2f from c\n",
               model, off);
    ck_assert_msg(model < -14 && off > -12, "2^%.2f from the sine's value, 2^%.2f from c", model,
                  off);
    ts_ckks_ciphertext_free(ct);
    ts_boot_free(bt);
    free(v);
    free(g[0]);
    free(g[1]);
    fx_clear(&f);
    /* the rule */
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/boot-n16-dense.yaml", root ? root : "",
             root ? "/" : "");
    ts_ckks_params_t *p = NULL;
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_ckks_params_load_file(path, false, &p, &err));
    for (int ls = 6; ls <= 15; ls++) {
        ck_assert_ts_ok(ts_boot_config_slots(p, ls, &c));
        ck_assert_msg(c.log_message_ratio == (ls <= 11   ? 12
                                              : ls <= 13 ? 11
                                                         : 10),
                      "2^%d slots: ratio 2^%g", ls, c.log_message_ratio);
    }
    ts_boot_config_t like, sub;
    ck_assert_ts_ok(ts_boot_config_slots(p, 14, &like));
    ck_assert_ts_ok(ts_boot_config_slots_like(p, 9, &like, &sub));
    ck_assert(sub.log_message_ratio == 12);
    like.log_message_ratio = 9;
    ck_assert_ts_ok(ts_boot_config_slots_like(p, 9, &like, &sub));
    ck_assert(sub.log_message_ratio == 9);
    ts_ckks_params_free(p);
}
END_TEST

/* The real N = 2^16 preset (TS_SLOW_TESTS=1 only). */
START_TEST(test_boot_n16_slow)
{
    if (!getenv("TS_SLOW_TESTS"))
        return;
    fx_t f;
    load(&f, "boot-n16-h192");
    f.cfg.log_slots = 7;
    setup(&f);
    double bits = boot_once(&f, 128, false, 0);
    printf("N=2^16 sparse 128 slots: %.2f bits, %d levels left\n", bits, ts_boot_levels_left(f.bt));
    ck_assert_msg(bits >= PREC_BITS, "precision %.2f bits", bits);
    fx_clear(&f);
}
END_TEST

TS_TEST_SUITE(boot)
{
    Suite *s = suite_create("boot");
    TCase *tc = ts_tcase("boot", 0);
    tcase_add_test(tc, test_boot_keys_and_config);
    tcase_add_test(tc, test_boot_missing_key);
    tcase_add_test(tc, test_boot_full_cts_first);
    tcase_add_test(tc, test_boot_sparse_cts_first);
    tcase_add_test(tc, test_boot_pair_scaled);
    tcase_add_test(tc, test_boot_stc_first);
    tcase_add_test(tc, test_boot_mod_recover);
    tcase_add_test(tc, test_boot_repeated);
    tcase_add_test(tc, test_boot_message_ratio);
    TCase *slow = ts_tcase("slow", 3600);
    tcase_add_test(slow, test_boot_n16_slow);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, slow);
    return s;
}
