/*
 * Sparse-secret encapsulation for bootstrapping (issue 4): the computation
 * secret is dense (uniform ternary, preset test-boot-n10-dense, INSECURE
 * N = 2^10), ModRaise runs under an ephemeral sparse secret of weight 32
 * reached through the two encapsulation keys. Oracles: the plaintext slots
 * (precision after bootstrap, full and sparse slots, CoeffToSlot first, and
 * ModRecover from the SlotToCoeff-first order), the metadata (level, scale,
 * slots), and the errors: keys must be set (TS_ENOKEY) and match h'; without
 * encapsulation the dense interval (K = 53) needs a cosine of degree 79
 * instead of 35. The config
 * helper gives K = 12 for h' = 32 and refuses h' where no sparse-secret
 * security row admits q_0 p_e at secure parameters. A few seconds.
 */
#include <complex.h>
#include <math.h>

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
    ts_boot_encap_keys_t *keys;
    ts_boot_config_t cfg;
} fx_t;

static ts_ckks_params_t *load_params(const char *name, bool insecure)
{
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/%s.yaml", root ? root : "", root ? "/" : "",
             name);
    ts_ckks_params_t *p = NULL;
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_ckks_params_load_file(path, insecure, &p, &err));
    return p;
}

/* The fixture on parameters p (taken over). */
static void fx_init_params(fx_t *f, ts_ckks_params_t *p, int log_slots, int dft_levels, int order)
{
    memset(f, 0, sizeof(*f));
    f->p = p;
    ck_assert_int_eq(ts_ckks_params_secret(f->p), TS_CKKS_SECRET_TERNARY);
    uint8_t seed[TS_SEED_BYTES] = {4, 2};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 3, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ck_assert_ts_ok(ts_boot_config_default(f->p, &f->cfg));
    ck_assert_ts_ok(ts_boot_config_encapsulate(f->p, 32, &f->cfg));
    ck_assert_int_eq(f->cfg.encap_h, 32);
    ck_assert(f->cfg.k == 12.0);
    if (log_slots) {
        f->cfg.log_slots = log_slots;
        f->cfg.cts_levels = f->cfg.stc_levels = dft_levels;
    }
    f->cfg.order = order;
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    ck_assert_ts_ok(ts_boot_keygen(f->p, &f->cfg, f->ek, f->sk, f->prng));
    ck_assert_ts_ok(ts_boot_encap_keygen(f->p, &f->cfg, f->sk, f->prng, &f->keys));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f->p, f->ek, &f->ev));
    ck_assert_ts_ok(ts_boot_new(f->p, &f->cfg, &f->bt));
}

static void fx_init_preset(fx_t *f, const char *preset, int log_slots, int dft_levels, int order)
{
    fx_init_params(f, load_params(preset, true), log_slots, dft_levels, order);
}

static void fx_init(fx_t *f, int log_slots, int order)
{
    fx_init_preset(f, "test-boot-n10-dense", log_slots, 2, order);
}

static void fx_clear(fx_t *f)
{
    ts_boot_free(f->bt);
    ts_boot_encap_keys_free(f->keys);
    ts_ckks_evaluator_free(f->ev);
    ts_ckks_evalkeys_free(f->ek);
    ts_ckks_encoder_free(f->enc);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
}

static uint64_t rng_state = 0x853c49e6748fea9bULL;
static double unif(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1;
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

static double precision(fx_t *f, const ts_ckks_ciphertext_t *ct, const double complex *want,
                        size_t n)
{
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, ts_ckks_params_max_level(f->p), &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f->sk, ct, pt));
    double complex *got = malloc(sizeof(double complex) * n);
    ck_assert_ts_ok(ts_ckks_decode(f->enc, pt, got, n));
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, cabs(got[i] - want[i]));
    free(got);
    ts_ckks_plaintext_free(pt);
    return -log2(worst);
}

static void run(int log_slots, int order, int in_level)
{
    fx_t f;
    fx_init(&f, log_slots, order);
    size_t n = (size_t)1 << f.cfg.log_slots;
    double complex *v = malloc(sizeof(double complex) * n);
    for (size_t i = 0; i < n; i++)
        v[i] = unif() + I * unif();
    ts_ckks_ciphertext_t *ct = encrypt(&f, v, n, in_level);
    /* keys not given yet */
    ck_assert_ts_status(ts_boot_bootstrap(f.bt, f.ev, ct, ct), TS_ENOKEY);
    ck_assert_ts_ok(ts_boot_set_encap_keys(f.bt, f.keys));
    for (int rep = 0; rep < 2; rep++) {
        ck_assert_ts_ok(ts_boot_bootstrap(f.bt, f.ev, ct, ct));
        ck_assert_int_eq(ts_ckks_ciphertext_level(ct), ts_boot_levels_left(f.bt));
        ck_assert_uint_eq(ts_ckks_ciphertext_slots(ct), n);
        ck_assert(ts_ckks_ciphertext_scale(ct) == ts_ckks_params_scale(f.p));
        double bits = precision(&f, ct, v, n);
        if (getenv("TS_TEST_VERBOSE"))
            printf("encap boot log_slots=%d order=%d: %.2f bits, %d levels left\n", f.cfg.log_slots,
                   order, bits, ts_boot_levels_left(f.bt));
        ck_assert_msg(bits >= PREC_BITS, "precision %.2f bits < %.1f", bits, PREC_BITS);
        if (order == TS_BOOT_STC_FIRST) /* back up to where SlotToCoeff starts */
            break;
    }
    ts_ckks_ciphertext_free(ct);
    free(v);
    fx_clear(&f);
}

/*
 * EvalMod and CoeffToSlot primes smaller than q_0 (test-boot-n10-dense's
 * chain with its thirteen 60-bit DFT and EvalMod primes at 55 bits):
 * CoeffToSlot's plaintext scales hand EvalMod a scale near its own primes
 * (ts_boot_new), so the bootstrap runs (it failed with TS_ESCALE while the
 * scale stayed at q_0 and grew squared through the Chebyshev basis) and
 * keeps the precision the smaller primes allow (~4 bits below the 60-bit
 * chain's, docs/parameters.md).
 */
START_TEST(test_encap_small_evalmod_primes)
{
    ts_ckks_params_literal_t lit;
    ts_ckks_params_literal_init(&lit);
    snprintf(lit.name, sizeof lit.name, "test-boot-n10-dense-em55");
    lit.log_n = 10;
    const int64_t logq[] = {60, 40, 45, 45, 45, 55, 55, 55, 55, 55, 55, 55, 55, 55, 55, 55, 55, 55};
    for (size_t i = 0; i < sizeof logq / sizeof logq[0]; i++)
        lit.logq[lit.logq_count++] = logq[i];
    lit.logp[lit.logp_count++] = 61;
    lit.logp[lit.logp_count++] = 61;
    lit.scale_log2 = 40;
    lit.insecure = true;
    ts_ckks_params_t *p = NULL;
    ck_assert_ts_ok(ts_ckks_params_new(&lit, true, &p));
    fx_t f;
    fx_init_params(&f, p, 0, 0, TS_BOOT_CTS_FIRST);
    size_t n = (size_t)1 << f.cfg.log_slots;
    double complex *v = malloc(sizeof(double complex) * n);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < n; i++)
        v[i] = unif() + I * unif();
    ts_ckks_ciphertext_t *ct = encrypt(&f, v, n, 0);
    ck_assert_ts_ok(ts_boot_set_encap_keys(f.bt, f.keys));
    ck_assert_ts_ok(ts_boot_bootstrap(f.bt, f.ev, ct, ct));
    ck_assert_int_eq(ts_ckks_ciphertext_level(ct), ts_boot_levels_left(f.bt));
    ck_assert(ts_ckks_ciphertext_scale(ct) == ts_ckks_params_scale(f.p));
    double bits = precision(&f, ct, v, n);
    printf("encap boot, 55-bit EvalMod and CoeffToSlot primes: %.2f bits\n", bits);
    ck_assert_msg(bits >= PREC_BITS - 4, "precision %.2f bits", bits);
    ts_ckks_ciphertext_free(ct);
    free(v);
    fx_clear(&f);
}
END_TEST

/*
 * The output scale of EvalMod (ts_boot_new, boot_cts): EvalMod ends 2n above
 * the output scale and SlotToCoeff takes the 2n back, so the noise of
 * EvalMod's last rescale, fixed per coefficient, no longer grows with the
 * 2n coefficients SlotToCoeff sums into each slot. test-boot-n12-dense at
 * 2^10 sparse slots (h' = 32), random slots in [-1, 1] + i [-1, 1]: the
 * mean over the slots of -log2 |error| was 24.7 bits with EvalMod ending at
 * the output scale, 25.5 with the gain (docs/parameters.md, session 30).
 */
START_TEST(test_encap_sparse_precision)
{
    fx_t f;
    fx_init_preset(&f, "test-boot-n12-dense", 10, 3, TS_BOOT_CTS_FIRST);
    size_t n = (size_t)1 << f.cfg.log_slots;
    double complex *v = malloc(sizeof(double complex) * n),
                   *got = malloc(sizeof(double complex) * n);
    ck_assert(v && got);
    for (size_t i = 0; i < n; i++)
        v[i] = unif() + I * unif();
    ts_ckks_ciphertext_t *ct = encrypt(&f, v, n, 0);
    ck_assert_ts_ok(ts_boot_set_encap_keys(f.bt, f.keys));
    ck_assert_ts_ok(ts_boot_bootstrap(f.bt, f.ev, ct, ct));
    ck_assert(ts_ckks_ciphertext_scale(ct) == ts_ckks_params_scale(f.p));
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, ts_ckks_params_max_level(f.p), &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f.sk, ct, pt));
    ck_assert_ts_ok(ts_ckks_decode(f.enc, pt, got, n));
    double mean = 0;
    for (size_t i = 0; i < n; i++)
        mean += -log2(fmax(cabs(got[i] - v[i]), 0x1p-60)) / (double)n;
    printf("encap boot, test-boot-n12-dense 2^10 slots: %.2f bits mean\n", mean);
    ck_assert_msg(mean >= 25.1, "mean precision %.2f bits", mean);
    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(ct);
    free(v);
    free(got);
    fx_clear(&f);
}
END_TEST

START_TEST(test_encap_full)
{
    run(0, TS_BOOT_CTS_FIRST, 0);
}
END_TEST

START_TEST(test_encap_sparse)
{
    run(3, TS_BOOT_CTS_FIRST, 1);
}
END_TEST

START_TEST(test_encap_stc_first)
{
    run(0, TS_BOOT_STC_FIRST, 5);
}
END_TEST

/* Phases (ns) of one bootstrap of a fresh ciphertext at level lv by bt; the wall time in *wall. */
static ts_boot_phases_t profile_once(fx_t *f, const ts_boot_t *bt, int lv, uint64_t *wall)
{
    size_t n = (size_t)1 << f->cfg.log_slots;
    double complex *v = malloc(sizeof(double complex) * n);
    for (size_t i = 0; i < n; i++)
        v[i] = unif() + I * unif();
    ts_ckks_ciphertext_t *ct = encrypt(f, v, n, lv);
    ts_boot_phases_t a, b, d;
    ck_assert_ts_ok(ts_boot_phases(bt, &a));
    uint64_t t0 = ts_now_ns();
    ck_assert_ts_ok(ts_boot_bootstrap(bt, f->ev, ct, ct));
    *wall = ts_now_ns() - t0;
    ck_assert_ts_ok(ts_boot_phases(bt, &b));
    ck_assert_msg(precision(f, ct, v, n) >= PREC_BITS, "profiled bootstrap imprecise");
    d.runs = b.runs - a.runs;
    for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++) {
        ck_assert_uint_ge(b.ns[i], a.ns[i]);
        d.ns[i] = b.ns[i] - a.ns[i];
    }
    ts_ckks_ciphertext_free(ct);
    free(v);
    return d;
}

/*
 * ts_boot_profile: off by default (nothing counted); on, one bootstrap adds
 * one run and time to every phase it has (the trace only at sparse slots),
 * the phases within the call's wall time; a view adds to its owner's
 * totals; off again stops counting. Names and argument checks.
 */
START_TEST(test_encap_profile)
{
    for (int full = 0; full < 2; full++) {
        fx_t f;
        fx_init(&f, full ? 0 : 4, TS_BOOT_CTS_FIRST);
        ck_assert_ts_ok(ts_boot_set_encap_keys(f.bt, f.keys));
        uint64_t wall;
        ts_boot_phases_t d = profile_once(&f, f.bt, 3, &wall);
        ck_assert_uint_eq(d.runs, 0);
        for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++)
            ck_assert_uint_eq(d.ns[i], 0);
        ck_assert_ts_ok(ts_boot_profile(f.bt, true));
        d = profile_once(&f, f.bt, 3, &wall);
        ck_assert_uint_eq(d.runs, 1);
        uint64_t sum = 0;
        for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++) {
            if (i == TS_BOOT_PHASE_SUBSUM && full)
                ck_assert_uint_eq(d.ns[i], 0); /* no trace at full slots */
            else
                ck_assert_msg(d.ns[i] > 0, "phase %s not timed", ts_boot_phase_name(i));
            sum += d.ns[i];
        }
        ck_assert_uint_le(sum, wall);
        /* a view (the daemon's per-session bootstrapper) adds to the owner's totals */
        ts_boot_t *view = NULL;
        ck_assert_ts_ok(ts_boot_view(f.bt, f.keys, &view));
        ts_boot_phases_t before, after;
        ck_assert_ts_ok(ts_boot_phases(f.bt, &before));
        d = profile_once(&f, view, 0, &wall);
        ck_assert_uint_eq(d.runs, 1);
        ck_assert_ts_ok(ts_boot_phases(f.bt, &after));
        ck_assert_uint_eq(after.runs, before.runs + 1);
        ck_assert_uint_gt(after.ns[TS_BOOT_PHASE_EVAL_MOD], before.ns[TS_BOOT_PHASE_EVAL_MOD]);
        ts_boot_free(view);
        ck_assert_ts_ok(ts_boot_profile(f.bt, false));
        d = profile_once(&f, f.bt, 0, &wall);
        ck_assert_uint_eq(d.runs, 0);
        for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++)
            ck_assert_uint_eq(d.ns[i], 0);
        fx_clear(&f);
    }
    const char *names[] = {"mod_raise", "subsum", "cts", "eval_mod", "stc"};
    for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++)
        ck_assert_str_eq(ts_boot_phase_name(i), names[i]);
    ck_assert_ptr_null(ts_boot_phase_name(-1));
    ck_assert_ptr_null(ts_boot_phase_name(TS_BOOT_PHASE_COUNT));
    ts_boot_phases_t ph;
    ck_assert_ts_status(ts_boot_profile(NULL, true), TS_EINVAL);
    ck_assert_ts_status(ts_boot_phases(NULL, &ph), TS_EINVAL);
}
END_TEST

START_TEST(test_encap_config_and_keys)
{
    ts_ckks_params_t *p = load_params("test-boot-n10-dense", true);
    ts_boot_config_t cfg;
    ck_assert_ts_ok(ts_boot_config_default(p, &cfg));
    /* the dense interval K is much larger, and so is the cosine's degree */
    ck_assert(cfg.k > 40);
    int dense_degree = cfg.cheb_degree, dense_em = 0, em = 0;
    ck_assert_ts_ok(ts_boot_depth(p, &cfg, NULL, &dense_em, NULL, NULL));
    ts_boot_t *bt = NULL;
    ck_assert_ts_status(ts_boot_config_encapsulate(p, 0, &cfg), TS_EINVAL);
    ck_assert_ts_status(ts_boot_config_encapsulate(p, 2000, &cfg), TS_EINVAL);
    ck_assert_ts_ok(ts_boot_config_encapsulate(p, 32, &cfg));
    ck_assert_int_lt(cfg.cheb_degree, dense_degree / 2);
    /* K = 12: r = 2 double angles and degree 47 (depth 6), 8 levels, where
     * r = 3 takes degree 35 (error bound at 31, converged series at 35) in
     * 6 + 3 = 9 and r = 1 degree 75 in 7 + 1 = 8 with more products */
    ck_assert_int_eq(cfg.k, 12);
    ck_assert_int_eq(cfg.double_angle, 2);
    ck_assert_int_eq(cfg.cheb_degree, 47);
    int left = -1;
    ck_assert_ts_ok(ts_boot_depth(p, &cfg, NULL, &em, NULL, &left));
    ck_assert_int_eq(em, 8);
    /* the sparse h = 192 presets (K = 29) keep r = 3: degree 55 in 6 + 3,
     * where r = 2 takes degree 83 in 7 + 2 and r = 4 degree 39 in 6 + 4 */
    {
        ts_ckks_params_t *ps = load_params("boot-n16-h192", false);
        ts_boot_config_t c2;
        int em2 = 0;
        ck_assert_ts_ok(ts_boot_config_default(ps, &c2));
        ck_assert_int_eq(c2.k, 29);
        ck_assert_int_eq(c2.double_angle, 3);
        ck_assert_int_eq(c2.cheb_degree, 55);
        ck_assert_ts_ok(ts_boot_depth(ps, &c2, NULL, &em2, NULL, NULL));
        ck_assert_int_eq(em2, 9);
        ts_ckks_params_free(ps);
    }
    ck_assert_int_le(em, dense_em);
    ck_assert_int_ge(left, 0);
    ck_assert_ts_ok(ts_boot_new(p, &cfg, &bt));
    /* keys for another h' are refused; so is a config without encapsulation */
    uint8_t seed[TS_SEED_BYTES] = {1};
    ts_prng_t *prng;
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 1, &prng));
    ts_ckks_secret_key_t *sk;
    ck_assert_ts_ok(ts_ckks_keygen_secret(p, prng, &sk));
    ts_boot_config_t other = cfg;
    other.encap_h = 64;
    ts_boot_encap_keys_t *keys = NULL;
    ck_assert_ts_ok(ts_boot_encap_keygen(p, &other, sk, prng, &keys));
    ck_assert_double_gt(ts_boot_encap_keys_logqp(keys), 100);
    ck_assert_ts_status(ts_boot_set_encap_keys(bt, keys), TS_EINVAL);
    other.encap_h = 0;
    ts_boot_encap_keys_t *none = NULL;
    ck_assert_ts_status(ts_boot_encap_keygen(p, &other, sk, prng, &none), TS_EINVAL);
    ts_boot_encap_keys_free(keys);
    ts_boot_free(bt);

    /* Secure sets: the sparse row for (N, h') must admit q_0 times a >= 40-bit prime.
     * N = 2^16, h' = 32: <= 117 bits, q_0 60 bits -> p_e of 57 bits; N = 2^15 has no
     * h' = 32 row. */
    ts_ckks_params_t *big = load_params("boot-n16-dense", false);
    ck_assert_int_eq(ts_ckks_params_secret(big), TS_CKKS_SECRET_TERNARY);
    ck_assert_ts_ok(ts_boot_config_default(big, &cfg));
    ck_assert_ts_ok(ts_boot_config_encapsulate(big, 32, &cfg));
    ck_assert(cfg.k == 12.0);
    ck_assert_ts_ok(ts_boot_depth(big, &cfg, NULL, NULL, NULL, &left));
    ck_assert_int_ge(left, 9);
    ts_ckks_params_literal_t lit;
    ts_ckks_params_literal_init(&lit);
    snprintf(lit.name, sizeof lit.name, "n15-dense");
    lit.log_n = 15;
    lit.logq[0] = 60;
    lit.logq[1] = 40;
    lit.logq_count = 2;
    lit.logp[0] = 61;
    lit.logp_count = 1;
    lit.scale_log2 = 40;
    ts_ckks_params_t *n15 = NULL;
    ck_assert_ts_ok(ts_ckks_params_new(&lit, false, &n15));
    ck_assert_ts_status(ts_boot_config_encapsulate(n15, 32, &cfg), TS_ESECURITY);
    ck_assert_ts_ok(ts_boot_config_encapsulate(n15, 192, &cfg));
    ts_ckks_params_free(n15);
    ts_ckks_params_free(big);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
}
END_TEST

/* The keys travel: serialize, deserialize, bootstrap with the copy; tampered,
 * truncated and foreign bytes are refused. */
START_TEST(test_encap_keys_serial)
{
    int64_t live = ts_alloc_live();
    fx_t f;
    fx_init(&f, 3, TS_BOOT_CTS_FIRST);
    uint8_t *b = NULL;
    size_t n = 0;
    ck_assert_ts_ok(ts_boot_encap_keys_serialize(f.keys, 0, &b, &n));
    ts_boot_encap_keys_t *copy = NULL;
    ck_assert_ts_ok(ts_boot_encap_keys_deserialize(f.p, &f.cfg, b, n, &copy));
    ck_assert_double_eq(ts_boot_encap_keys_logqp(copy), ts_boot_encap_keys_logqp(f.keys));
    ck_assert_ts_ok(ts_boot_set_encap_keys(f.bt, copy));
    double complex v[8];
    for (size_t i = 0; i < 8; i++)
        v[i] = unif() + I * unif();
    ts_ckks_ciphertext_t *ct = encrypt(&f, v, 8, 0);
    ck_assert_ts_ok(ts_boot_bootstrap(f.bt, f.ev, ct, ct));
    double bits = precision(&f, ct, v, 8);
    ck_assert_msg(bits >= PREC_BITS, "precision %.2f bits after a key round trip", bits);
    ts_ckks_ciphertext_free(ct);

    /* compressed bytes decode to the same keys */
    uint8_t *z = NULL;
    size_t zn = 0;
    ck_assert_ts_ok(ts_boot_encap_keys_serialize(f.keys, 3, &z, &zn));
    ts_boot_encap_keys_t *k2 = NULL;
    ck_assert_ts_ok(ts_boot_encap_keys_deserialize(f.p, &f.cfg, z, zn, &k2));
    ts_boot_encap_keys_free(k2);
    ts_free(z);

    /* truncations and bit flips */
    size_t cuts[] = {0, 10, n / 3, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        k2 = NULL;
        ck_assert(ts_boot_encap_keys_deserialize(f.p, &f.cfg, b, cuts[i], &k2) != TS_OK);
        ck_assert_ptr_null(k2);
    }
    size_t flips[] = {5, 40, n / 2, n - 2};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        b[flips[i]] ^= 0x10;
        k2 = NULL;
        ck_assert(ts_boot_encap_keys_deserialize(f.p, &f.cfg, b, n, &k2) != TS_OK);
        ck_assert_ptr_null(k2);
        b[flips[i]] ^= 0x10;
    }
    /* another h' in the configuration, another parameter set, no encapsulation */
    ts_boot_config_t other = f.cfg;
    other.encap_h = 64;
    ck_assert_ts_status(ts_boot_encap_keys_deserialize(f.p, &other, b, n, &k2), TS_EFORMAT);
    other.encap_h = 0;
    ck_assert_ts_status(ts_boot_encap_keys_deserialize(f.p, &other, b, n, &k2), TS_EINVAL);
    ts_ckks_params_t *sparse = load_params("test-boot-n10", true);
    ck_assert_ts_status(ts_boot_encap_keys_deserialize(sparse, &f.cfg, b, n, &k2), TS_EMISMATCH);
    ts_ckks_params_free(sparse);
    ts_free(b);
    fx_clear(&f);
    ts_boot_encap_keys_free(copy);
    ck_assert_int_eq(ts_alloc_live(), live); /* nothing leaked, on success or refusal */
}
END_TEST

/*
 * TS_SLOW_TESTS=1: one bootstrap at the 128-bit dense preset boot-n16-dense
 * (N = 2^16, 128 slots, CtS/StC 3/3, encapsulation h' = 32; ~5 GB of keys, a
 * minute or two): 12 levels left, precision measured 25.3 bits mean, 23.7 min
 * (docs/benchmarks.md).
 */
START_TEST(test_encap_n16_slow)
{
    if (!getenv("TS_SLOW_TESTS"))
        return;
    fx_t f;
    fx_init_preset(&f, "boot-n16-dense", 7, 3, TS_BOOT_CTS_FIRST);
    ck_assert_ts_ok(ts_boot_set_encap_keys(f.bt, f.keys));
    double complex v[128];
    for (size_t i = 0; i < 128; i++)
        v[i] = unif() + I * unif();
    ts_ckks_ciphertext_t *ct = encrypt(&f, v, 128, 0);
    ck_assert_ts_ok(ts_boot_bootstrap(f.bt, f.ev, ct, ct));
    ck_assert_int_eq(ts_ckks_ciphertext_level(ct), 12);
    double bits = precision(&f, ct, v, 128);
    printf("N=2^16 dense + encapsulation, 128 slots: %.2f bits, %d levels left\n", bits,
           ts_ckks_ciphertext_level(ct));
    ck_assert_msg(bits >= PREC_BITS, "precision %.2f bits", bits);
    ts_ckks_ciphertext_free(ct);
    fx_clear(&f);
}
END_TEST

TS_TEST_SUITE(boot_encap)
{
    Suite *s = suite_create("boot_encap");
    TCase *tc = ts_tcase("encap", 0);
    tcase_add_test(tc, test_encap_config_and_keys);
    tcase_add_test(tc, test_encap_full);
    tcase_add_test(tc, test_encap_small_evalmod_primes);
    tcase_add_test(tc, test_encap_sparse);
    tcase_add_test(tc, test_encap_sparse_precision);
    tcase_add_test(tc, test_encap_stc_first);
    tcase_add_test(tc, test_encap_keys_serial);
    tcase_add_test(tc, test_encap_profile);
    suite_add_tcase(s, tc);
    TCase *slow = ts_tcase("slow", 3600);
    tcase_add_test(slow, test_encap_n16_slow);
    suite_add_tcase(s, slow);
    return s;
}
