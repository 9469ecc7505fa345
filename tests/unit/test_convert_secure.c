/*
 * The 128-bit conversion (core/convert security gate, the tfhe_conv128 set).
 *  - gate: at a secure CKKS set (N = 2^13, q_0 of 60 bits, a 61-bit P) the
 *    test-size small ring (N_br = 2^10, tfhe_test_small) and tfhe_std128
 *    (N_br = 2^11) are refused once flagged secure, by
 *    ts_convert_security_check and by ts_convert_keygen (TS_ESECURITY);
 *    tfhe_conv128 (N_br = 2^12) passes, with the dedicated 46-bit special
 *    prime of the small ring; an insecure flag skips the gate. At N_br =
 *    2^12 with that prime (two digits of q_0) the server's deserialized copy
 *    switches bit-identically, a flipped byte is refused, and the trace keeps
 *    the constant coefficient within 2^20 (a single-digit switch over the
 *    46-bit prime would leave ~2^31).
 *  - end to end at an insecure CKKS preset (test-boot-n12, q_0 of 60 bits)
 *    with tfhe_conv128: values at slots go through split (SlotToCoeff,
 *    RingSwitch, Trace), the look-up (TFHE: one PBS of p = 32; HYBRID: the
 *    engine's segmented LUT shape, 4 segments x 32 intervals, index_bits 5)
 *    and merge (RingSwitch up, ModRecover); the decrypted slots equal the
 *    cleartext reference ts_nonlinear_slots_ref at the same grid input within
 *    out_max 2^-16 (HYBRID: or the line of a neighbouring interval when the
 *    interval position is within 4 sigma of a rounding tie, counted), every
 *    other slot is 0 within the same bound.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/nonlinear/nonlinear.h"
#include "tests/unit/ts_test.h"

/* A secure CKKS set with the 128-bit presets' q_0 and P primes, small enough for a test. */
static const char secure_yaml[] = "name: gate-n13\n"
                                  "log_n: 13\n"
                                  "logq: [60, 40]\n"
                                  "logp: [61]\n"
                                  "dnum: 1\n"
                                  "scale_log2: 40\n"
                                  "secret: ternary\n";

static bool rlwe_eq(ts_tfhe_rlwe_t *a, ts_tfhe_rlwe_t *b, uint32_t n)
{
    return memcmp(ts_tfhe_rlwe_poly(a, 0), ts_tfhe_rlwe_poly(b, 0), n * 8) == 0 &&
           memcmp(ts_tfhe_rlwe_poly(a, 1), ts_tfhe_rlwe_poly(b, 1), n * 8) == 0;
}

static void digits_check(ts_ckks_params_t *p, const ts_tfhe_params_lit_t *lit,
                         const ts_ckks_secret_key_t *sk, ts_convert_t *cv, ts_prng_t *prng)
{
    uint32_t nbr = ts_convert_n_br(cv);
    uint64_t q = ts_convert_q(cv);
    uint8_t *b = NULL;
    size_t nb = 0;
    ck_assert_ts_ok(ts_convert_keys_serialize(cv, 0, &b, &nb));
    ts_convert_t *srv = NULL;
    ck_assert_ts_ok(ts_convert_keys_deserialize(p, lit, b, nb, &srv));
    /* a flipped byte in the keys is refused */
    b[nb / 2] ^= 0x40;
    ts_convert_t *bad = NULL;
    ck_assert_int_ne(ts_convert_keys_deserialize(p, lit, b, nb, &bad), TS_OK);
    ck_assert_ptr_null(bad);
    ts_free(b);
    ck_assert_uint_eq(ts_convert_keys_bytes(srv), ts_convert_keys_bytes(cv));
    /* RingSwitch down from a CKKS ciphertext at level 0 */
    ts_ckks_encoder_t *enc;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    size_t slots = ts_ckks_params_slots(p);
    double *v = calloc(slots, sizeof(double));
    for (size_t i = 0; i < slots; i++)
        v[i] = sin(0.1 * (double)i);
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(p, 0, &ct));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(enc, sk, v, slots, slots, 0, ts_ckks_params_scale(p),
                                            prng, NULL, ct));
    ts_tfhe_rlwe_t *r1, *r2;
    ck_assert_ts_ok(ts_tfhe_rlwe_new(ts_convert_tfhe_params(cv), &r1));
    ck_assert_ts_ok(ts_tfhe_rlwe_new(ts_convert_tfhe_params(srv), &r2));
    ck_assert_ts_ok(ts_convert_ring_down(cv, ct, r1));
    ck_assert_ts_ok(ts_convert_ring_down(srv, ct, r2));
    ck_assert(rlwe_eq(r1, r2, nbr));
    /* Trace of a fresh small-ring encryption of m(Y) */
    uint64_t *m = calloc(nbr, 8), *ph = calloc(nbr, 8);
    for (uint32_t i = 0; i < nbr; i++)
        m[i] = (uint64_t)(i + 1) << 40;
    ck_assert_ts_ok(ts_tfhe_rlwe_encrypt(ts_convert_rlwe_key(cv), r1, m, prng));
    ck_assert_ts_ok(ts_tfhe_rlwe_copy(r2, r1));
    ck_assert_ts_ok(ts_convert_trace(cv, r1));
    ck_assert_ts_ok(ts_convert_trace(srv, r2));
    ck_assert(rlwe_eq(r1, r2, nbr));
    ck_assert_ts_ok(ts_tfhe_rlwe_phase(ts_convert_rlwe_key(cv), r1, ph));
    double worst = 0;
    for (uint32_t i = 0; i < nbr; i++) {
        int64_t want = i == 0 ? (int64_t)m[0] : 0;
        worst = fmax(worst, fabs((double)(ts_tfhe_centered(ph[i], q) - want)));
    }
    fprintf(stderr, "convert128 digits: trace at N_br = %u, q0 P_br keys: max |error| 2^%.1f\n",
            nbr, log2(worst + 1));
    /* one switch adds ~2^4, the trace at most N_br times that */
    ck_assert(worst < 0x1p20);
    free(m);
    free(ph);
    free(v);
    ts_tfhe_rlwe_free(r1);
    ts_tfhe_rlwe_free(r2);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_encoder_free(enc);
    ts_convert_free(srv);
}

START_TEST(test_convert_secure_gate)
{
    ts_ckks_params_literal_t cl;
    ts_cfg_error_t err;
    ck_assert_ts_ok(
        ts_ckks_params_literal_load_string(secure_yaml, strlen(secure_yaml), NULL, &cl, &err));
    ts_ckks_params_t *p = NULL;
    ck_assert_ts_ok(ts_ckks_params_new(&cl, false, &p));
    ck_assert(!ts_ckks_params_insecure(p));
    char why[160];
    ts_tfhe_params_lit_t lit;
    /* the engine's test-size configuration, flagged secure */
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_small", &lit));
    lit.log_n_br = 10;
    lit.br_levels = 3;
    lit.insecure = false;
    ck_assert_ts_status(ts_convert_security_check(p, &lit, why, sizeof(why)), TS_ESECURITY);
    fprintf(stderr, "convert gate: tfhe_test_small at N_br = 2^10 refused: %s\n", why);
    uint8_t seed[TS_SEED_BYTES] = {8};
    ts_prng_t *prng;
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 1, &prng));
    ts_ckks_secret_key_t *sk;
    ck_assert_ts_ok(ts_ckks_keygen_secret(p, prng, &sk));
    ts_convert_t *cv = NULL;
    ts_log_level_t lv = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
    ck_assert_ts_status(ts_convert_keygen(p, sk, &lit, prng, &cv), TS_ESECURITY);
    ck_assert_ptr_null(cv);
    /* its ring alone at 2^12 still fails on the small LWE (n = 256) */
    lit.log_n_br = 12;
    ck_assert_ts_status(ts_convert_security_check(p, &lit, why, sizeof(why)), TS_ESECURITY);
    ck_assert_ptr_nonnull(strstr(why, "LWE"));
    /* tfhe_std128: N_br = 2^11 cannot hold the 60-bit q_0 */
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_std128", &lit));
    ck_assert_ts_status(ts_convert_security_check(p, &lit, why, sizeof(why)), TS_ESECURITY);
    ck_assert_ts_status(ts_convert_keygen(p, sk, &lit, prng, &cv), TS_ESECURITY);
    fprintf(stderr, "convert gate: tfhe_std128 refused: %s\n", why);
    ts_log_set_level(lv);
    /* the 128-bit set passes; flagged insecure, the test set is let through */
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_conv128", &lit));
    ck_assert_ts_ok(ts_convert_security_check(p, &lit, why, sizeof(why)));
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_small", &lit));
    ck_assert(lit.insecure);
    ck_assert_ts_ok(ts_convert_keygen(p, sk, &lit, prng, &cv));
    ts_convert_free(cv);
    /* N_br = 2^12 with the dedicated P_br and two digits of q_0 (the small
     * test LWE keeps it cheap): the server's copy from the serialized keys
     * switches bit-identically, and a traced ciphertext keeps its constant
     * coefficient with small noise (the digits keep every switch near the
     * ModDown rounding) */
    lit.log_n_br = 12;
    ck_assert_ts_ok(ts_convert_keygen(p, sk, &lit, prng, &cv));
    digits_check(p, &lit, sk, cv, prng);
    ts_convert_free(cv);
    ck_assert_ts_status(ts_convert_security_check(NULL, &lit, NULL, 0), TS_EINVAL);
    lit.log_n_br = 14; /* above log N */
    ck_assert_ts_status(ts_convert_security_check(p, &lit, NULL, 0), TS_EINVAL);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
}
END_TEST

typedef struct {
    ts_ckks_params_t *p;
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_ckks_encoder_t *enc;
    ts_ckks_evalkeys_t *ek;
    ts_ckks_evaluator_t *ev;
    ts_boot_t *bt;
    ts_convert_t *cv;
    size_t n;
} qfx_t;

static void qfx_init(qfx_t *f)
{
    memset(f, 0, sizeof(*f));
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/test-boot-n12.yaml", root ? root : "",
             root ? "/" : "");
    ts_log_level_t lv = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &f->p, &err));
    ts_log_set_level(lv);
    uint8_t seed[TS_SEED_BYTES] = {1, 2, 8};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 5, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ts_boot_config_t cfg;
    ck_assert_ts_ok(ts_boot_config_default(f->p, &cfg));
    cfg.order = TS_BOOT_STC_FIRST;
    cfg.real_only = true;
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    ck_assert_ts_ok(ts_boot_keygen(f->p, &cfg, f->ek, f->sk, f->prng));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f->p, f->ek, &f->ev));
    ck_assert_ts_ok(ts_boot_new(f->p, &cfg, &f->bt));
    f->n = (size_t)1 << ts_boot_config(f->bt)->log_slots;
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_conv128", &lit));
    ck_assert_ts_ok(ts_convert_keygen(f->p, f->sk, &lit, f->prng, &f->cv));
    ck_assert_uint_eq(ts_convert_n_br(f->cv), 4096);
}

static void qfx_clear(qfx_t *f)
{
    ts_convert_free(f->cv);
    ts_boot_free(f->bt);
    ts_ckks_evaluator_free(f->ev);
    ts_ckks_evalkeys_free(f->ek);
    ts_ckks_encoder_free(f->enc);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
}

/*
 * |y - ref|, or, when x's interval position V = t 2^k + 2^(k-1) is within 4
 * sigma of a rounding threshold (sigma: the TFHE noise of V after the
 * ModSwitch to 2 N_br, in units of V's boxes), the distance to the line of a
 * neighbouring interval of the same segment when smaller (as
 * test_nonlinear_slots: near a tie either line is the look-up's answer).
 */
static double lut_err(const ts_nonlinear_lut_t *lut, double sigma_v, double x, double y, double ref,
                      double tol, int *neighbour)
{
    double err = fabs(y - ref);
    if (!lut || err < tol)
        return err;
    int sg = ts_nonlinear_lut_segment(lut, x);
    double w = lut->bounds[sg + 1] - lut->bounds[sg];
    double v = (x - lut->bounds[sg]) / w * ldexp(1.0, lut->index_bits);
    double fr = v - floor(v);
    if (fabs(fr - 0.5) < 4 * sigma_v) {
        int i = ts_nonlinear_lut_interval(lut, sg, x);
        for (int d = -1; d <= 1; d += 2) {
            int i2 = i + d;
            if (i2 < 0 || i2 >= lut->n_br)
                continue;
            size_t e = (size_t)sg * (size_t)lut->n_br + (size_t)i2;
            double e2 = fabs(y - (lut->slope[e] * x + lut->offset[e]));
            if (e2 < err) {
                err = e2;
                if (e2 < tol)
                    (*neighbour)++;
            }
        }
    }
    return err;
}

/* rsqrt on the engine's range and LUT shape at `count` slots through `mode`;
 * returns the largest |enc - cleartext| in units of out_max. */
static double run_slots(qfx_t *f, ts_nonlinear_slots_mode_t mode, const size_t *slots, size_t count)
{
    ts_nonlinear_spec_t sp = {.method = TS_NL_LUT,
                              .lo = 0.005,
                              .hi = 1.0,
                              .n_seg = 4,
                              .n_br = 32,
                              .bounds = TS_NL_BOUNDS_LOG,
                              .index_bits = 5};
    ts_nonlinear_approx_t *a;
    ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_RSQRT, &sp, &a));
    ts_nonlinear_slots_cfg_t cfg;
    ts_nonlinear_slots_cfg_default(mode, &cfg);
    ts_nonlinear_slots_t *ns;
    ck_assert_ts_ok(ts_nonlinear_slots_new(f->cv, f->bt, a, &cfg, &ns));
    double *v = calloc(f->n, sizeof(double)), *out = calloc(f->n, sizeof(double));
    double x[8];
    for (size_t j = 0; j < f->n; j++)
        v[j] = 0.005 + 0.99 * (double)(j % 97) / 97.0; /* junk in range */
    for (size_t i = 0; i < count; i++) {
        uint64_t u;
        ck_assert_ts_ok(ts_prng_uniform(f->prng, 1ull << cfg.in_bits, &u));
        x[i] = ts_nonlinear_slots_grid(ns, (double)u);
        v[slots[i]] = x[i];
    }
    int L = ts_ckks_params_max_level(f->p);
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, L, &ct));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(f->enc, f->sk, v, f->n, f->n, L,
                                            ts_ckks_params_scale(f->p), f->prng, NULL, ct));
    ck_assert_ts_ok(ts_nonlinear_slots_eval(ns, f->ev, ct, slots, count, -1, ct));
    int level = ts_ckks_ciphertext_level(ct);
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, level, &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f->sk, ct, pt));
    ck_assert_ts_ok(ts_ckks_decode_real(f->enc, pt, out, f->n));
    double om = ts_nonlinear_slots_out_max(ns), tol = om * ldexp(1.0, -16), worst = 0, other = 0,
           sigma_v = 0;
    int neighbour = 0;
    const ts_nonlinear_lut_t *lut = mode == TS_NL_SLOTS_HYBRID ? ts_nonlinear_approx_lut(a) : NULL;
    if (lut) {
        ts_tfhe_noise_t nz;
        uint64_t p3 = 2ull << lut->index_bits;
        ck_assert_ts_ok(ts_tfhe_noise_estimate(ts_convert_tfhe_params(f->cv), p3, &nz));
        sigma_v = sqrt(nz.var_total_2n) / (double)(ts_convert_n_br(f->cv) / p3);
    }
    for (size_t j = 0; j < f->n; j++) {
        size_t i = 0;
        while (i < count && slots[i] != j)
            i++;
        if (i == count) {
            other = fmax(other, fabs(out[j]));
            continue;
        }
        double ref = ts_nonlinear_slots_ref(ns, x[i]);
        double err = lut_err(lut, sigma_v, x[i], out[j], ref, tol, &neighbour);
        ck_assert_msg(err < tol, "%s slot %zu x=%.9g: enc %.9g, cleartext %.9g (err %.3g)",
                      ts_nonlinear_slots_mode_name(mode), j, x[i], out[j], ref, err);
        worst = fmax(worst, err);
    }
    ck_assert_msg(other < tol, "other slots up to %.3g", other);
    fprintf(stderr,
            "convert128 %s rsqrt [0.005, 1] 4x32, %zu values, N_br = 4096: max |enc - cleartext| "
            "2^%.1f of out_max %.3g (neighbour picks %d), other slots %.3g\n",
            ts_nonlinear_slots_mode_name(mode), count, log2(worst / om), om, neighbour, other);
    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(ct);
    free(v);
    free(out);
    ts_nonlinear_slots_free(ns);
    ts_nonlinear_approx_free(a);
    return worst / om;
}

START_TEST(test_convert_secure_slots)
{
    qfx_t f;
    qfx_init(&f);
    fprintf(stderr, "convert128: keys %.1f MiB in memory\n",
            (double)ts_convert_keys_bytes(f.cv) / (1 << 20));
    size_t s4[4] = {0, 64, 128, 192};
    run_slots(&f, TS_NL_SLOTS_TFHE, s4, ts_test_quick() ? 2 : 4);
    if (!ts_test_quick())
        run_slots(&f, TS_NL_SLOTS_HYBRID, s4, 1);
    qfx_clear(&f);
}
END_TEST

TS_TEST_SUITE(convert_secure)
{
    Suite *s = suite_create("convert_secure");
    TCase *tc = ts_tcase("secure", 0);
    tcase_add_test(tc, test_convert_secure_gate);
    tcase_add_test(tc, test_convert_secure_slots);
    suite_add_tcase(s, tc);
    return s;
}
