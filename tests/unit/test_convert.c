/*
 * core/convert: every conversion step against a decryption oracle.
 *  - RingSwitch down: small phase i == big phase i*g (within the key-switching noise);
 *  - ExtractLWE: LWE phase == small phase at the index (exactly);
 *  - Trace: constant kept, other coefficients ~ 0;
 *  - LWE -> RLWE, repacking: coefficient pos[i] == LWE i;
 *  - RingSwitch up: big phase i*g == small phase i, others ~ 0;
 *  - split/merge with SlotToCoeff and ModRecover (bootstrapping set): slots
 *    come back (identity between split and merge).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/convert/convert.h"
#include "tests/unit/ts_test.h"

typedef struct {
    ts_ckks_params_t *p;
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_ckks_encoder_t *enc;
    ts_convert_t *cv;
    uint64_t q;
    uint32_t n, nbr;
} cfx_t;

static void cfx_init(cfx_t *f, const char *name, uint32_t log_n_br)
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
    uint8_t seed[TS_SEED_BYTES] = {3, 1, 4, 1, 5};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 11, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_small", &lit));
    lit.log_n_br = log_n_br;
    ck_assert_ts_ok(ts_convert_keygen(f->p, f->sk, &lit, f->prng, &f->cv));
    f->q = ts_convert_q(f->cv);
    f->n = (uint32_t)ts_ckks_params_n(f->p);
    f->nbr = ts_convert_n_br(f->cv);
}

static void cfx_clear(cfx_t *f)
{
    ts_convert_free(f->cv);
    ts_ckks_encoder_free(f->enc);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
}

/* The phase of a CKKS ciphertext mod q0, coefficient form, centered. */
static void big_phase(cfx_t *f, const ts_ckks_ciphertext_t *ct, int64_t *out)
{
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, ts_ckks_ciphertext_level(ct), &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f->sk, ct, pt));
    ts_poly_t *c;
    ck_assert_ts_ok(ts_poly_clone(ts_ckks_plaintext_poly(pt), &c));
    if (c->is_ntt)
        ck_assert_ts_ok(ts_poly_intt(c));
    uint64_t *h = malloc((size_t)f->n * 8 * c->nq);
    ck_assert_ts_ok(ts_poly_download(c, h));
    for (uint32_t i = 0; i < f->n; i++)
        out[i] = ts_tfhe_centered(h[i], f->q);
    free(h);
    ts_poly_free(c);
    ts_ckks_plaintext_free(pt);
}

static void small_phase(cfx_t *f, const ts_tfhe_rlwe_t *ct, int64_t *out)
{
    uint64_t *ph = malloc((size_t)f->nbr * 8);
    ck_assert_ts_ok(ts_tfhe_rlwe_phase(ts_convert_rlwe_key(f->cv), ct, ph));
    for (uint32_t i = 0; i < f->nbr; i++)
        out[i] = ts_tfhe_centered(ph[i], f->q);
    free(ph);
}

static uint64_t enc_signed(uint64_t q, int64_t v)
{
    return v < 0 ? q - (uint64_t)(-v) % q : (uint64_t)v % q;
}

static ts_tfhe_rlwe_t *small_encrypt(cfx_t *f, const int64_t *m)
{
    uint64_t *mu = malloc((size_t)f->nbr * 8);
    for (uint32_t i = 0; i < f->nbr; i++)
        mu[i] = enc_signed(f->q, m[i]);
    ts_tfhe_rlwe_t *ct;
    ck_assert_ts_ok(ts_tfhe_rlwe_new(ts_convert_tfhe_params(f->cv), &ct));
    ck_assert_ts_ok(ts_tfhe_rlwe_encrypt(ts_convert_rlwe_key(f->cv), ct, mu, f->prng));
    free(mu);
    return ct;
}

static int64_t rnd_signed(cfx_t *f, int bits)
{
    uint64_t v;
    ck_assert_ts_ok(ts_prng_uniform(f->prng, 1ull << bits, &v));
    return (int64_t)v - (1ll << (bits - 1));
}

#define NOISE_BOUND (1ll << 20) /* q0 ~ 2^55: conversion noise far below 2^20 */

START_TEST(test_convert_ring_switch)
{
    cfx_t f;
    cfx_init(&f, "test-n10", 8);
    uint32_t g = f.n / f.nbr;
    /* a CKKS ciphertext at level 2 with random slots */
    size_t slots = ts_ckks_params_slots(f.p);
    double *v = malloc(slots * sizeof(double));
    for (size_t i = 0; i < slots; i++)
        v[i] = sin(0.37 * (double)i) * 3.0;
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 2, &ct));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(f.enc, f.sk, v, slots, slots, 2,
                                            ts_ckks_params_scale(f.p), f.prng, NULL, ct));
    int64_t *bp = malloc((size_t)f.n * 8), *sp = malloc((size_t)f.n * 8);
    big_phase(&f, ct, bp);
    ts_tfhe_rlwe_t *small;
    ck_assert_ts_ok(ts_tfhe_rlwe_new(ts_convert_tfhe_params(f.cv), &small));
    ck_assert_ts_ok(ts_convert_ring_down(f.cv, ct, small));
    small_phase(&f, small, sp);
    int64_t mx = 0;
    for (uint32_t i = 0; i < f.nbr; i++) {
        int64_t d = llabs(sp[i] - bp[(size_t)i * g]);
        mx = d > mx ? d : mx;
    }
    fprintf(stderr, "convert: ring down N=%u -> %u: max |error| 2^%.1f (scale 2^40)\n", f.n, f.nbr,
            log2((double)mx + 1));
    ck_assert_int_lt(mx, NOISE_BOUND);

    /* ExtractLWE: exact */
    ts_tfhe_lwe_t *lwe;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.nbr, f.q, &lwe));
    for (uint32_t idx = 0; idx < f.nbr; idx += 37) {
        ck_assert_ts_ok(ts_convert_extract(small, idx, lwe));
        uint64_t ph;
        ck_assert_ts_ok(ts_tfhe_lwe_phase(ts_convert_lwe_key(f.cv), lwe, &ph));
        ck_assert_int_eq(ts_tfhe_centered(ph, f.q), sp[idx]);
    }
    /* ModSwitch of the extracted LWE to 2^32 keeps the value (relative) */
    ts_tfhe_lwe_t *l32;
    ck_assert_ts_ok(ts_tfhe_lwe_new(f.nbr, 1ull << 32, &l32));
    ck_assert_ts_ok(ts_convert_modswitch(l32, lwe));
    ts_tfhe_lwe_free(l32);

    /* RingSwitch up */
    ck_assert_ts_ok(ts_convert_ring_up(f.cv, small, ts_ckks_params_scale(f.p), 0, ct));
    ck_assert_int_eq(ts_ckks_ciphertext_level(ct), 0);
    big_phase(&f, ct, bp);
    mx = 0;
    for (uint32_t i = 0; i < f.n; i++) {
        int64_t want = i % g ? 0 : sp[i / g];
        int64_t d = llabs(bp[i] - want);
        mx = d > mx ? d : mx;
    }
    fprintf(stderr, "convert: ring up: max |error| 2^%.1f\n", log2((double)mx + 1));
    ck_assert_int_lt(mx, NOISE_BOUND);
    ts_tfhe_lwe_free(lwe);
    ts_tfhe_rlwe_free(small);
    ts_ckks_ciphertext_free(ct);
    free(bp);
    free(sp);
    free(v);
    cfx_clear(&f);
}
END_TEST

START_TEST(test_convert_trace_repack)
{
    cfx_t f;
    cfx_init(&f, "test-n10", 8);
    int64_t *m = malloc((size_t)f.nbr * 8), *ph = malloc((size_t)f.nbr * 8);
    for (uint32_t i = 0; i < f.nbr; i++)
        m[i] = rnd_signed(&f, 40);
    ts_tfhe_rlwe_t *ct = small_encrypt(&f, m);
    /* monomial rotation then trace isolates coefficient c */
    const uint32_t cs[] = {0, 1, 77, f.nbr - 1};
    ts_tfhe_rlwe_t *t;
    ck_assert_ts_ok(ts_tfhe_rlwe_new(ts_convert_tfhe_params(f.cv), &t));
    int64_t mx = 0;
    for (size_t k = 0; k < 4; k++) {
        ck_assert_ts_ok(ts_tfhe_rlwe_copy(t, ct));
        ts_convert_monomial_mul(f.cv, t, -(int64_t)cs[k]);
        ck_assert_ts_ok(ts_convert_trace(f.cv, t));
        small_phase(&f, t, ph);
        for (uint32_t i = 0; i < f.nbr; i++) {
            int64_t want = i == 0 ? m[cs[k]] : 0;
            int64_t d = llabs(ph[i] - want);
            mx = d > mx ? d : mx;
        }
    }
    fprintf(stderr, "convert: trace (N_br=%u): max |error| 2^%.1f\n", f.nbr, log2((double)mx + 1));
    ck_assert_int_lt(mx, NOISE_BOUND);

    /* repack LWEs extracted from ct at some positions into new positions */
    enum { K = 5 };
    ts_tfhe_lwe_t *l[K];
    uint32_t src[K] = {3, 9, 100, 200, 255}, dst[K] = {0, 17, 64, 128, 250};
    for (int i = 0; i < K; i++) {
        ck_assert_ts_ok(ts_tfhe_lwe_new(f.nbr, f.q, &l[i]));
        ck_assert_ts_ok(ts_convert_extract(ct, src[i], l[i]));
    }
    ck_assert_ts_ok(ts_convert_repack(f.cv, (const ts_tfhe_lwe_t *const *)l, dst, K, t));
    small_phase(&f, t, ph);
    mx = 0;
    for (uint32_t i = 0; i < f.nbr; i++) {
        int64_t want = 0;
        for (int k = 0; k < K; k++)
            if (dst[k] == i)
                want = m[src[k]];
        int64_t d = llabs(ph[i] - want);
        mx = d > mx ? d : mx;
    }
    fprintf(stderr, "convert: repack %d LWEs: max |error| 2^%.1f\n", K, log2((double)mx + 1));
    ck_assert_int_lt(mx, NOISE_BOUND);
    for (int i = 0; i < K; i++)
        ts_tfhe_lwe_free(l[i]);
    ts_tfhe_rlwe_free(t);
    ts_tfhe_rlwe_free(ct);
    free(m);
    free(ph);
    cfx_clear(&f);
}
END_TEST

/* Multi-value batching end to end: SlotToCoeff, RingSwitch, per-value X^-c +
 * Trace (split), then shift back, RingSwitch up and ModRecover (merge): the
 * K chosen slots come back, the others are 0. */
START_TEST(test_convert_split_merge)
{
    cfx_t f;
    cfx_init(&f, "test-boot-n10", 10);
    ts_boot_config_t cfg;
    ck_assert_ts_ok(ts_boot_config_default(f.p, &cfg));
    cfg.order = TS_BOOT_STC_FIRST;
    cfg.real_only = true;
    ts_ckks_evalkeys_t *ek;
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f.p, &ek));
    ck_assert_ts_ok(ts_boot_keygen(f.p, &cfg, ek, f.sk, f.prng));
    ts_ckks_evaluator_t *ev;
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, ek, &ev));
    ts_boot_t *bt;
    ck_assert_ts_ok(ts_boot_new(f.p, &cfg, &bt));
    size_t n = (size_t)1 << ts_boot_config(bt)->log_slots;
    double *v = calloc(n, sizeof(double)), *out = calloc(n, sizeof(double));
    for (size_t i = 0; i < n; i++)
        v[i] = 0.5 * cos(0.11 * (double)i);
    int L = ts_ckks_params_max_level(f.p);
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, L, &ct));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(f.enc, f.sk, v, n, n, L, ts_ckks_params_scale(f.p),
                                            f.prng, NULL, ct));
    enum { K = 4 };
    const size_t slots[K] = {0, 1, 5, n - 1};
    uint32_t pos[K];
    ts_tfhe_rlwe_t *r[K];
    for (int i = 0; i < K; i++) {
        int64_t c = ts_convert_slot_coeff(ts_ckks_params_log_n(f.p), ts_boot_config(bt)->log_slots,
                                          f.nbr, slots[i], false);
        ck_assert_int_ge(c, 0);
        pos[i] = (uint32_t)c;
        ck_assert_ts_ok(ts_tfhe_rlwe_new(ts_convert_tfhe_params(f.cv), &r[i]));
    }
    ck_assert_ts_ok(ts_convert_split(f.cv, bt, ev, ct, pos, K, r, NULL));
    ck_assert_ts_ok(ts_convert_merge(f.cv, bt, ev, (const ts_tfhe_rlwe_t *const *)r, pos, K,
                                     ts_ckks_params_scale(f.p), -1, ct));
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, L, &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f.sk, ct, pt));
    ck_assert_ts_ok(ts_ckks_decode_real(f.enc, pt, out, n));
    double mx = 0;
    for (size_t j = 0; j < n; j++) {
        double want = 0;
        for (int i = 0; i < K; i++)
            if (slots[i] == j)
                want = v[j];
        mx = fmax(mx, fabs(out[j] - want));
    }
    fprintf(stderr,
            "convert: split/merge %d of %zu slots through StC and ModRecover: max |error| "
            "%.3g (level %d)\n",
            K, n, mx, ts_ckks_ciphertext_level(ct));
    ck_assert_double_lt(mx, 1e-3);
    for (int i = 0; i < K; i++)
        ts_tfhe_rlwe_free(r[i]);
    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(ct);
    free(v);
    free(out);
    ts_boot_free(bt);
    ts_ckks_evaluator_free(ev);
    ts_ckks_evalkeys_free(ek);
    cfx_clear(&f);
}
END_TEST

TS_TEST_SUITE(convert)
{
    Suite *s = suite_create("convert");
    TCase *tc = ts_tcase("steps", 0);
    tcase_add_test(tc, test_convert_ring_switch);
    tcase_add_test(tc, test_convert_trace_repack);
    tcase_add_test(tc, test_convert_split_merge);
    suite_add_tcase(s, tc);
    return s;
}
