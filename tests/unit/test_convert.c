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
#include "core/serial/serial.h"
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

/* ----------------------------------------------- conversion-key serialization */

/* Words of an RLWE ciphertext equal (the server must compute bit for bit what the client does). */
static bool rlwe_equal(const ts_tfhe_rlwe_t *a, const ts_tfhe_rlwe_t *b, uint32_t n)
{
    return memcmp(ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)a, 0),
                  ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)b, 0), (size_t)n * 8) == 0 &&
           memcmp(ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)a, 1),
                  ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)b, 1), (size_t)n * 8) == 0;
}

static int64_t ident_fn(void *ctx, uint64_t m)
{
    (void)ctx;
    return (int64_t)m;
}

/* Re-seal a modified payload under the original's type and parameter id (a valid digest). */
static uint8_t *reseal(const uint8_t *orig, size_t on, const uint8_t *payload, size_t pn,
                       size_t *out_n)
{
    ts_serial_header_t h;
    ck_assert_ts_ok(ts_serial_peek(orig, on, &h));
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_bytes(&w, payload, pn);
    uint8_t *out = NULL;
    ck_assert_ts_ok(ts_serial_seal(&w, h.type, h.param_id, 0, &out, out_n));
    ts_writer_clear(&w);
    return out;
}

/*
 * The key set a server receives: serialized without secrets, seeded, loaded
 * back; the server copy computes RingSwitch down and up, Trace and PBS bit
 * for bit like the client's. Tampered inputs are refused with a status.
 */
START_TEST(test_convert_keys_serial)
{
    cfx_t f;
    cfx_init(&f, "test-n10", 8);
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_small", &lit));
    lit.log_n_br = 8;
    uint8_t *b = NULL;
    size_t n = 0;
    ck_assert_ts_ok(ts_convert_keys_serialize(f.cv, 0, &b, &n));
    fprintf(stderr, "convert: keys for a server: %zu bytes serialized (%zu expanded in memory)\n",
            n, ts_convert_keys_bytes(f.cv));
    ck_assert_uint_lt(n, ts_convert_keys_bytes(f.cv) / 2);
    ts_convert_t *srv = NULL;
    ck_assert_ts_ok(ts_convert_keys_deserialize(f.p, &lit, b, n, &srv));
    ck_assert(!ts_convert_has_secrets(srv));
    ck_assert(ts_convert_has_secrets(f.cv));
    ck_assert_ptr_null(ts_convert_rlwe_key(srv));
    ck_assert_ptr_null(ts_convert_lwe_key(srv));
    ck_assert_uint_eq(ts_convert_n_br(srv), f.nbr);
    ck_assert_uint_eq(ts_convert_q(srv), f.q);
    /* the server serializes to the same bytes */
    {
        uint8_t *b2 = NULL;
        size_t n2 = 0;
        ck_assert_ts_ok(ts_convert_keys_serialize(srv, 0, &b2, &n2));
        ck_assert_uint_eq(n2, n);
        ck_assert(memcmp(b, b2, n) == 0);
        ts_free(b2);
    }
    /* same results: RingSwitch down and up, Trace, PBS */
    size_t slots = ts_ckks_params_slots(f.p);
    double *v = malloc(slots * sizeof(double));
    for (size_t i = 0; i < slots; i++)
        v[i] = cos(0.3 * (double)i);
    ts_ckks_ciphertext_t *ct, *c1, *c2;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 2, &ct));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 2, &c1));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 2, &c2));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(f.enc, f.sk, v, slots, slots, 2,
                                            ts_ckks_params_scale(f.p), f.prng, NULL, ct));
    ts_tfhe_rlwe_t *r1, *r2;
    ck_assert_ts_ok(ts_tfhe_rlwe_new(ts_convert_tfhe_params(f.cv), &r1));
    ck_assert_ts_ok(ts_tfhe_rlwe_new(ts_convert_tfhe_params(srv), &r2));
    ck_assert_ts_ok(ts_convert_ring_down(f.cv, ct, r1));
    ck_assert_ts_ok(ts_convert_ring_down(srv, ct, r2));
    ck_assert(rlwe_equal(r1, r2, f.nbr));
    ck_assert_ts_ok(ts_convert_trace(f.cv, r1));
    ck_assert_ts_ok(ts_convert_trace(srv, r2));
    ck_assert(rlwe_equal(r1, r2, f.nbr));
    ck_assert_ts_ok(ts_convert_ring_up(f.cv, r1, ts_ckks_params_scale(f.p), 0, c1));
    ck_assert_ts_ok(ts_convert_ring_up(srv, r2, ts_ckks_params_scale(f.p), 0, c2));
    for (int i = 0; i < 2; i++) {
        size_t words = (size_t)f.n;
        uint64_t *h1 = malloc(words * 8), *h2 = malloc(words * 8);
        ck_assert_ts_ok(ts_poly_download(ts_ckks_ciphertext_poly(c1, i), h1));
        ck_assert_ts_ok(ts_poly_download(ts_ckks_ciphertext_poly(c2, i), h2));
        ck_assert(memcmp(h1, h2, words * 8) == 0);
        free(h1);
        free(h2);
    }
    {
        const uint64_t p = 16;
        ts_tfhe_lut_t *l1, *l2;
        ck_assert_ts_ok(ts_tfhe_lut_new(ts_convert_tfhe_params(f.cv), p, ident_fn, NULL,
                                        ts_tfhe_delta(f.q, p), &l1));
        ck_assert_ts_ok(ts_tfhe_lut_new(ts_convert_tfhe_params(srv), p, ident_fn, NULL,
                                        ts_tfhe_delta(f.q, p), &l2));
        ts_tfhe_lwe_t *in, *o1, *o2;
        ck_assert_ts_ok(ts_tfhe_lwe_new(f.nbr, f.q, &in));
        ck_assert_ts_ok(ts_tfhe_lwe_new(f.nbr, f.q, &o1));
        ck_assert_ts_ok(ts_tfhe_lwe_new(f.nbr, f.q, &o2));
        ck_assert_ts_ok(ts_tfhe_lwe_encrypt(ts_convert_lwe_key(f.cv), in,
                                            ts_tfhe_encode(f.q, 11, p), 3.2, f.prng));
        ck_assert_ts_ok(ts_tfhe_pbs(ts_convert_tfhe_evaluator(f.cv), o1, in, l1));
        ck_assert_ts_ok(ts_tfhe_pbs(ts_convert_tfhe_evaluator(srv), o2, in, l2));
        uint64_t ph1, ph2;
        ck_assert_ts_ok(ts_tfhe_lwe_phase(ts_convert_lwe_key(f.cv), o1, &ph1));
        ck_assert_ts_ok(ts_tfhe_lwe_phase(ts_convert_lwe_key(f.cv), o2, &ph2));
        ck_assert_uint_eq(ph1, ph2);
        ck_assert_uint_eq(ts_tfhe_decode(f.q, ph2, p), 11);
        ts_tfhe_lwe_free(in);
        ts_tfhe_lwe_free(o1);
        ts_tfhe_lwe_free(o2);
        ts_tfhe_lut_free(l1);
        ts_tfhe_lut_free(l2);
    }
    ts_convert_free(srv);
    srv = NULL;

    /* tampering: every case is refused with a status and leaves nothing behind */
    int64_t live = ts_alloc_live();
    ck_assert_ts_status(ts_convert_keys_deserialize(f.p, &lit, b, n - 1, &srv), TS_EFORMAT);
    ck_assert_ts_status(ts_convert_keys_deserialize(f.p, &lit, b, 40, &srv), TS_EFORMAT);
    for (size_t off = TS_SERIAL_HEADER_BYTES; off < n; off += n / 7) {
        b[off] ^= 0x20;
        ck_assert_ts_status(ts_convert_keys_deserialize(f.p, &lit, b, n, &srv), TS_EFORMAT);
        b[off] ^= 0x20;
    }
    ck_assert_ptr_null(srv);
    /* other parameters: TFHE literal, CKKS set */
    ts_tfhe_params_lit_t lit2 = lit;
    lit2.br_levels = 3;
    ck_assert_ts_status(ts_convert_keys_deserialize(f.p, &lit2, b, n, &srv), TS_EMISMATCH);
    {
        ts_ckks_params_t *p2;
        ts_cfg_error_t err;
        char path[512];
        const char *root = getenv("TS_SOURCE_DIR");
        snprintf(path, sizeof(path), "%s%sconfigs/params/test-boot-n10.yaml", root ? root : "",
                 root ? "/" : "");
        ts_log_level_t lv = ts_log_get_level();
        ts_log_set_level(TS_LOG_ERROR);
        ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &p2, &err));
        ts_log_set_level(lv);
        ck_assert_ts_status(ts_convert_keys_deserialize(p2, &lit, b, n, &srv), TS_EMISMATCH);
        ts_ckks_params_free(p2);
    }
    /* hostile payloads behind a valid digest */
    uint8_t *pl = NULL;
    size_t pn = 0;
    ts_serial_header_t h;
    ck_assert_ts_ok(ts_serial_open(b, n, TS_OBJ_RING_SWITCH_KEY, NULL, NULL, &h, &pl, &pn));
    struct {
        size_t off;
        uint8_t xor_val;
        const char *what;
    } edits[] = {
        {0, 0x02, "version"},
        {4, 0x01, "log N_br"},
        {8, 0x07, "dnum"},
        {12, 0x04, "ksk_down element"},
        {12 + 8, 0x01, "ksk_down digits"},
    };
    for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
        pl[edits[e].off] ^= edits[e].xor_val;
        size_t mn = 0;
        uint8_t *m = reseal(b, n, pl, pn, &mn);
        ts_status_t st = ts_convert_keys_deserialize(f.p, &lit, m, mn, &srv);
        ck_assert_msg(st == TS_EFORMAT, "%s: %s", edits[e].what, ts_strerror(st));
        ts_free(m);
        pl[edits[e].off] ^= edits[e].xor_val;
    }
    {
        /* a residue >= q_0: the first packed word of ksk_down set to all ones */
        size_t off = 12 + 8 + 4 + TS_SEED_BYTES;
        uint8_t save[8];
        memcpy(save, pl + off, 8);
        memset(pl + off, 0xff, 8);
        size_t mn = 0;
        uint8_t *m = reseal(b, n, pl, pn, &mn);
        ck_assert_ts_status(ts_convert_keys_deserialize(f.p, &lit, m, mn, &srv), TS_EFORMAT);
        ts_free(m);
        memcpy(pl + off, save, 8);
        /* truncated payload, a trailing byte, a huge embedded length */
        m = reseal(b, n, pl, pn - 1, &mn);
        ck_assert_ts_status(ts_convert_keys_deserialize(f.p, &lit, m, mn, &srv), TS_EFORMAT);
        ts_free(m);
        uint8_t *longer = malloc(pn + 1);
        memcpy(longer, pl, pn);
        longer[pn] = 0;
        m = reseal(b, n, longer, pn + 1, &mn);
        ts_status_t st = ts_convert_keys_deserialize(f.p, &lit, m, mn, &srv);
        ck_assert_msg(st == TS_EFORMAT || st == TS_EMISMATCH, "trailing byte: %s", ts_strerror(st));
        ts_free(m);
        free(longer);
    }
    /* a CKKS object of another type */
    {
        ts_ckks_ciphertext_t *small;
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &small));
        uint8_t *cb = NULL;
        size_t cn = 0;
        ck_assert_ts_ok(ts_ckks_ciphertext_serialize(ct, 0, &cb, &cn));
        ck_assert_ts_status(ts_convert_keys_deserialize(f.p, &lit, cb, cn, &srv), TS_EMISMATCH);
        ts_free(cb);
        ts_ckks_ciphertext_free(small);
    }
    ck_assert_ptr_null(srv);
    ts_free_secret(pl);
    ck_assert_int_eq(ts_alloc_live(), live);
    /* allocation failures at sampled points of a load: ENOMEM, nothing leaked */
    {
        uint64_t c0 = ts_alloc_count();
        ck_assert_ts_ok(ts_convert_keys_deserialize(f.p, &lit, b, n, &srv));
        uint64_t total = ts_alloc_count() - c0;
        ts_convert_free(srv);
        srv = NULL;
        uint64_t stride = total / (ts_test_quick() ? 6 : 24) + 1;
        for (uint64_t k = 1; k <= total; k += stride) {
            ts_alloc_fail_after(k, false);
            ts_status_t st = ts_convert_keys_deserialize(f.p, &lit, b, n, &srv);
            ts_alloc_fail_after(0, false);
            ck_assert_msg(st == TS_ENOMEM, "allocation %llu of %llu: %s", (unsigned long long)k,
                          (unsigned long long)total, ts_strerror(st));
            ck_assert_ptr_null(srv);
            ck_assert_int_eq(ts_alloc_live(), live);
        }
    }
    ts_tfhe_rlwe_free(r1);
    ts_tfhe_rlwe_free(r2);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_ciphertext_free(c1);
    ts_ckks_ciphertext_free(c2);
    free(v);
    ts_free(b);
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
    tcase_add_test(tc, test_convert_keys_serial);
    suite_add_tcase(s, tc);
    return s;
}
