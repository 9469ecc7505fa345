/*
 * The CKKS <-> TFHE conversion steps (see convert.h for the math).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/convert/convert.h"
#include "core/math/math.h"
#include "core/ring/ring.h"
#include "core/rlwe/rlwe.h"
#include "core/serial/serial.h"

/* The mutable state of a trace on the small ring: the convert object's own
 * (ts_convert_trace) or a worker's (ts_convert_worker_trace). */
typedef struct {
    ts_rlwe_ks_t *ks;
    ts_poly_t *s0, *s1, *su0, *su1, *sr0, *sr1; /* 1 limb */
    ts_poly_t *sd, *st0, *st1;                  /* digit scratch */
    uint64_t *host, *host2;                     /* N_br words */
} trace_scr_t;

struct ts_convert {
    ts_ckks_params_t *ckks;
    ts_ring_t *big;              /* borrowed from ckks */
    ts_ring_t *small;            /* (N_br, {q0}, P_br) */
    ts_ring_t *bigd;             /* (N, {q0}, P_br): ksk_down (its secret lies in the subring) */
    ts_ring_t *bigu;             /* (N, {q0}, P): ksk_up */
    uint64_t pbr[TS_CKKS_MAX_P]; /* P_br: the special primes of the small-ring keys */
    uint32_t npbr;
    uint32_t n, n_br, g, log_n_br;
    uint64_t q;
    ts_modulus_t qm;
    ts_tfhe_params_t *tp;
    ts_tfhe_rlwe_key_t *rlwe_key;
    ts_tfhe_lwe_key_t *lwe_key;   /* extracted key, dimension N_br */
    ts_tfhe_lwe_key_t *small_key; /* TFHE small LWE key */
    ts_tfhe_evalkey_t *ek;
    ts_tfhe_evaluator_t *tev;
    /* Keys over P_br switch q0 in ndig unsigned digits of dig_bits (B = 2^dig_bits):
     * digit key i switches B^i s_from -> s, so the key-switching noise is
     * digit * e / P_br instead of q0 e / P_br (ndig 1 when P_br is the CKKS P). */
    uint32_t ndig, dig_bits;
    ts_rlwe_ksk_t **ksk_down; /* ndig */
    ts_rlwe_ksk_t *ksk_up;
    ts_rlwe_ksk_t **gal; /* log_n_br * ndig keys: element 2^k + 1, digit i at (k-1) ndig + i */
    ts_rlwe_ks_t *ks_down, *ks_up;
    trace_scr_t tr; /* the trace's scratch (small ring) */
    /* scratch */
    ts_poly_t *b0, *b1, *bu0, *bu1; /* ring bigd, 1 limb */
    ts_poly_t *c0, *c1, *cu0, *cu1; /* ring bigu, 1 limb */
    ts_poly_t *bd, *bt0, *bt1;      /* digit scratch (bigd) */
    uint64_t *host, *host2;         /* N words */
    ts_tfhe_rlwe_t *tmp, *acc;
    size_t key_bytes;
};

static ts_status_t poly1(ts_ring_t *r, ts_poly_t **p)
{
    return ts_poly_new(r, 1, 0, false, p);
}

static void trace_scr_clear(trace_scr_t *t)
{
    ts_rlwe_ks_free(t->ks);
    ts_poly_free(t->s0);
    ts_poly_free(t->s1);
    ts_poly_free(t->su0);
    ts_poly_free(t->su1);
    ts_poly_free(t->sr0);
    ts_poly_free(t->sr1);
    ts_poly_free(t->sd);
    ts_poly_free(t->st0);
    ts_poly_free(t->st1);
    ts_free(t->host);
    ts_free(t->host2);
    memset(t, 0, sizeof(*t));
}

/* t: zeroed; cleared by the caller on failure too. */
static ts_status_t trace_scr_init(const ts_convert_t *cv, trace_scr_t *t)
{
    ts_status_t st;
    if ((st = ts_rlwe_ks_new(cv->small, 1, &t->ks)) != TS_OK)
        return st;
    t->host = ts_malloc((size_t)cv->n_br * 8);
    t->host2 = ts_malloc((size_t)cv->n_br * 8);
    if (!t->host || !t->host2)
        return TS_ENOMEM;
    if ((st = poly1(cv->small, &t->s0)) != TS_OK || (st = poly1(cv->small, &t->s1)) != TS_OK ||
        (st = poly1(cv->small, &t->su0)) != TS_OK || (st = poly1(cv->small, &t->su1)) != TS_OK ||
        (st = poly1(cv->small, &t->sr0)) != TS_OK || (st = poly1(cv->small, &t->sr1)) != TS_OK ||
        (st = poly1(cv->small, &t->sd)) != TS_OK || (st = poly1(cv->small, &t->st0)) != TS_OK ||
        (st = poly1(cv->small, &t->st1)) != TS_OK)
        return st;
    return TS_OK;
}

void ts_convert_free(ts_convert_t *cv)
{
    if (!cv)
        return;
    ts_poly_free(cv->b0);
    ts_poly_free(cv->b1);
    ts_poly_free(cv->bu0);
    ts_poly_free(cv->bu1);
    ts_poly_free(cv->c0);
    ts_poly_free(cv->c1);
    ts_poly_free(cv->cu0);
    ts_poly_free(cv->cu1);
    trace_scr_clear(&cv->tr);
    ts_free(cv->host);
    ts_tfhe_rlwe_free(cv->tmp);
    ts_tfhe_rlwe_free(cv->acc);
    ts_rlwe_ks_free(cv->ks_down);
    ts_rlwe_ks_free(cv->ks_up);
    if (cv->gal)
        for (uint32_t k = 0; k < cv->log_n_br * cv->ndig; k++)
            ts_rlwe_ksk_free(cv->gal[k]);
    ts_free(cv->gal);
    if (cv->ksk_down)
        for (uint32_t i = 0; i < cv->ndig; i++)
            ts_rlwe_ksk_free(cv->ksk_down[i]);
    ts_free(cv->ksk_down);
    ts_rlwe_ksk_free(cv->ksk_up);
    ts_poly_free(cv->bd);
    ts_poly_free(cv->bt0);
    ts_poly_free(cv->bt1);
    ts_free(cv->host2);
    ts_tfhe_evaluator_free(cv->tev);
    ts_tfhe_evalkey_free(cv->ek);
    ts_tfhe_lwe_key_free(cv->small_key);
    ts_tfhe_lwe_key_free(cv->lwe_key);
    ts_tfhe_rlwe_key_free(cv->rlwe_key);
    ts_tfhe_params_free(cv->tp);
    ts_ring_free(cv->small);
    ts_ring_free(cv->bigd);
    ts_ring_free(cv->bigu);
    ts_ckks_params_free(cv->ckks);
    ts_free(cv);
}

/*
 * The special primes P_br of the keys whose secret is s_br (the trace's
 * Galois keys in (N_br, {q0}, P_br) and ksk_down, whose secret s_sub lies in
 * the subring, so that the server sees it as g RLWE samples of dimension
 * N_br modulo q0 P_br). When q0 P fits the dense-ternary security bound at
 * N_br, the CKKS P; otherwise one dedicated prime of
 * floor(bound - log2 q0) bits (at most 61), 1 mod 2N and distinct from the
 * CKKS primes, when that leaves at least TS_CONVERT_MIN_PBR_BITS; otherwise
 * (an insecure small ring, refused by the gate unless flagged) the CKKS P.
 * Deterministic in (CKKS params, log_n_br): client and server agree.
 */
#define TS_CONVERT_MIN_PBR_BITS 30

static double log2_p_sum(const uint64_t *p, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += log2((double)p[i]);
    return s;
}

static ts_status_t small_special_primes(const ts_ckks_params_t *ckks, uint32_t log_n_br,
                                        uint64_t *out, uint32_t *count)
{
    size_t np = ts_ckks_params_p_count(ckks), nq = ts_ckks_params_q_count(ckks);
    if (np == 0 || np > TS_CKKS_MAX_P)
        return TS_EPARAMS;
    for (size_t i = 0; i < np; i++)
        out[i] = ts_ckks_params_p(ckks, i);
    *count = (uint32_t)np;
    double lq0 = log2((double)ts_ckks_params_q(ckks, 0)), bound = 0;
    if (ts_ckks_security_max_logqp((int)log_n_br, TS_CKKS_SECRET_TERNARY, 0, &bound) != TS_OK)
        return TS_OK;
    if (lq0 + log2_p_sum(out, np) <= bound)
        return TS_OK;
    double room = floor(bound - lq0);
    if (room < TS_CONVERT_MIN_PBR_BITS)
        return TS_OK;
    uint32_t bits = room > 61 ? 61 : (uint32_t)room;
    uint64_t *ex = ts_malloc((nq + np) * sizeof(uint64_t));
    if (!ex)
        return TS_ENOMEM;
    for (size_t i = 0; i < nq; i++)
        ex[i] = ts_ckks_params_q(ckks, i);
    for (size_t i = 0; i < np; i++)
        ex[nq + i] = ts_ckks_params_p(ckks, i);
    uint64_t pr = 0;
    ts_status_t st = ts_primes_ntt(bits, 2 * (uint64_t)ts_ckks_params_n(ckks), 1,
                                   TS_PRIMES_DESCENDING, ex, nq + np, &pr);
    ts_free(ex);
    if (st != TS_OK)
        return TS_OK; /* no such prime: keep P (the gate decides) */
    out[0] = pr;
    *count = 1;
    return TS_OK;
}

static void why_set(char *why, size_t why_size, const char *msg, double have, double bound)
{
    if (why && why_size)
        snprintf(why, why_size, "%s: %.2f bits against %.2f", msg, have, bound);
}

ts_status_t ts_convert_security_check(const ts_ckks_params_t *ckks,
                                      const ts_tfhe_params_lit_t *tlit, char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = 0;
    if (!ckks || !tlit)
        return TS_EINVAL;
    if (tlit->log_n_br < 4 || (int)tlit->log_n_br > ts_ckks_params_log_n(ckks))
        return TS_EINVAL;
    uint64_t pbr[TS_CKKS_MAX_P];
    uint32_t npbr = 0;
    ts_status_t st = small_special_primes(ckks, tlit->log_n_br, pbr, &npbr);
    if (st != TS_OK)
        return st;
    double lq0 = log2((double)ts_ckks_params_q(ckks, 0)), bound = 0, margin = 0;
    double lkeys = lq0 + log2_p_sum(pbr, npbr);
    /* the small ring: ciphertexts and the bootstrapping key at q0, the
     * trace's Galois keys and ksk_down at q0 P_br (dense ternary s_br) */
    if (ts_ckks_security_max_logqp((int)tlit->log_n_br, TS_CKKS_SECRET_TERNARY, 0, &bound) !=
        TS_OK) {
        why_set(why, why_size, "small ring: no security table row for this N_br",
                (double)tlit->log_n_br, 0);
        return TS_ESECURITY;
    }
    if (ts_ckks_security_check((int)tlit->log_n_br, TS_CKKS_SECRET_TERNARY, 0, lkeys) != TS_OK) {
        why_set(why, why_size, "small ring keys: log2(q0 P_br) at N_br", lkeys, bound);
        return TS_ESECURITY;
    }
    /* the same ring against the TFHE form of the table (sigma taken into account) */
    if (ts_tfhe_security_check(1u << tlit->log_n_br, lq0, tlit->rlwe_sigma, TS_TFHE_SECRET_TERNARY,
                               &margin) != TS_OK) {
        why_set(why, why_size, "small ring (TFHE table, sigma): margin", margin, 0);
        return TS_ESECURITY;
    }
    /* the small LWE (and the LWE key-switching key under it) */
    if (ts_tfhe_security_check(tlit->lwe_n, tlit->lwe_logq, tlit->lwe_sigma, tlit->lwe_secret,
                               &margin) != TS_OK) {
        why_set(why, why_size, "small LWE: margin", margin, 0);
        return TS_ESECURITY;
    }
    return TS_OK;
}

/* The parts of a ts_convert_t every copy has: rings, TFHE parameters, key-switch
 * work objects and scratch (no keys). */
static ts_status_t cv_alloc(ts_ckks_params_t *ckks, const ts_tfhe_params_lit_t *tlit,
                            ts_convert_t **out)
{
    *out = NULL;
    int log_n = ts_ckks_params_log_n(ckks);
    if (tlit->log_n_br < 4 || (int)tlit->log_n_br > log_n)
        return TS_EINVAL;
    size_t np = ts_ckks_params_p_count(ckks);
    if (np == 0 || np > TS_CKKS_MAX_P)
        return TS_EPARAMS;
    ts_status_t st = TS_ENOMEM;
    ts_convert_t *cv = ts_calloc(1, sizeof(*cv));
    if (!cv)
        return TS_ENOMEM;
    cv->ckks = ts_ckks_params_ref(ckks);
    cv->big = ts_ckks_params_ring(ckks);
    cv->n = (uint32_t)ts_ckks_params_n(ckks);
    cv->log_n_br = tlit->log_n_br;
    cv->n_br = 1u << tlit->log_n_br;
    cv->g = cv->n / cv->n_br;
    cv->q = ts_ckks_params_q(ckks, 0);
    if ((st = ts_modulus_init(&cv->qm, cv->q)) != TS_OK)
        goto fail;
    if ((st = small_special_primes(ckks, tlit->log_n_br, cv->pbr, &cv->npbr)) != TS_OK)
        goto fail;
    /* rings: (N_br, {q0}, P_br), (N, {q0}, P_br), (N, {q0}, P) */
    {
        uint64_t q0 = cv->q, pp[TS_CKKS_MAX_P];
        for (size_t i = 0; i < np; i++)
            pp[i] = ts_ckks_params_p(ckks, i);
        ts_ring_params_t rp = {.n = cv->n_br,
                               .q = &q0,
                               .q_count = 1,
                               .p = cv->pbr,
                               .p_count = cv->npbr,
                               .backend = ts_ring_backend(cv->big)};
        if ((st = ts_ring_new(&rp, &cv->small)) != TS_OK)
            goto fail;
        rp.n = cv->n;
        if ((st = ts_ring_new(&rp, &cv->bigd)) != TS_OK)
            goto fail;
        rp.p = pp;
        rp.p_count = (uint32_t)np;
        if ((st = ts_ring_new(&rp, &cv->bigu)) != TS_OK)
            goto fail;
    }
    /* TFHE parameters on Q = q0 */
    {
        ts_tfhe_params_lit_t l = *tlit;
        l.q_br = cv->q;
        if ((st = ts_tfhe_params_new(&l, &cv->tp)) != TS_OK)
            goto fail;
    }
    if ((st = ts_rlwe_ks_new(cv->bigd, 1, &cv->ks_down)) != TS_OK ||
        (st = ts_rlwe_ks_new(cv->bigu, 1, &cv->ks_up)) != TS_OK ||
        (st = trace_scr_init(cv, &cv->tr)) != TS_OK)
        goto fail;
    /* two digits of q0 for keys over a dedicated P_br (see the struct) */
    {
        bool dedicated = cv->npbr == 1 && (np != 1 || cv->pbr[0] != ts_ckks_params_p(ckks, 0));
        uint32_t qbits = 64 - (uint32_t)__builtin_clzll(cv->q);
        cv->ndig = dedicated ? 2 : 1;
        cv->dig_bits = (qbits + cv->ndig - 1) / cv->ndig;
    }
    st = TS_ENOMEM;
    cv->gal = ts_calloc((size_t)cv->log_n_br * cv->ndig, sizeof(*cv->gal));
    cv->ksk_down = ts_calloc(cv->ndig, sizeof(*cv->ksk_down));
    cv->host = ts_malloc((size_t)cv->n * 8);
    cv->host2 = ts_malloc((size_t)cv->n * 8);
    if (!cv->gal || !cv->ksk_down || !cv->host || !cv->host2)
        goto fail;
    if ((st = poly1(cv->bigd, &cv->bd)) != TS_OK || (st = poly1(cv->bigd, &cv->bt0)) != TS_OK ||
        (st = poly1(cv->bigd, &cv->bt1)) != TS_OK)
        goto fail;
    if ((st = poly1(cv->bigd, &cv->b0)) != TS_OK || (st = poly1(cv->bigd, &cv->b1)) != TS_OK ||
        (st = poly1(cv->bigd, &cv->bu0)) != TS_OK || (st = poly1(cv->bigd, &cv->bu1)) != TS_OK ||
        (st = poly1(cv->bigu, &cv->c0)) != TS_OK || (st = poly1(cv->bigu, &cv->c1)) != TS_OK ||
        (st = poly1(cv->bigu, &cv->cu0)) != TS_OK || (st = poly1(cv->bigu, &cv->cu1)) != TS_OK ||
        (st = ts_tfhe_rlwe_new(cv->tp, &cv->tmp)) != TS_OK ||
        (st = ts_tfhe_rlwe_new(cv->tp, &cv->acc)) != TS_OK)
        goto fail;
    *out = cv;
    return TS_OK;
fail:
    ts_convert_free(cv);
    return st;
}

static void count_key_bytes(ts_convert_t *cv)
{
    cv->key_bytes = ts_rlwe_ksk_bytes(cv->ksk_up) + ts_tfhe_evalkey_bytes(cv->ek);
    for (uint32_t i = 0; i < cv->ndig; i++)
        cv->key_bytes += ts_rlwe_ksk_bytes(cv->ksk_down[i]);
    for (uint32_t k = 0; k < cv->log_n_br * cv->ndig; k++)
        cv->key_bytes += ts_rlwe_ksk_bytes(cv->gal[k]);
}

/* keys[i]: B^i sigma_el(s_from) -> sk (el 0: no automorphism), i < ndig, one digit each. */
static ts_status_t digit_keys(ts_convert_t *cv, const ts_rlwe_sk_t *sk, const ts_poly_t *s_from,
                              uint64_t el, ts_prng_t *prng, ts_rlwe_ksk_t **keys)
{
    ts_ring_t *r = sk->ring;
    uint32_t nl = ts_ring_q_count(r) + ts_ring_p_count(r);
    ts_poly_t *t = NULL, *u = NULL;
    ts_status_t st;
    if ((st = ts_poly_clone(s_from, &t)) != TS_OK || (st = ts_poly_clone(s_from, &u)) != TS_OK)
        goto out;
    if (el && (st = ts_poly_automorphism(t, s_from, el)) != TS_OK)
        goto out;
    for (uint32_t i = 0; i < cv->ndig; i++) {
        uint64_t sc[TS_RNS_MAX_MODULI];
        for (uint32_t l = 0; l < nl; l++) {
            const ts_modulus_t *m = ts_ring_modulus(r, l);
            uint64_t b = ((uint64_t)1 << cv->dig_bits) % m->q, v = 1;
            for (uint32_t j = 0; j < i; j++)
                v = ts_mod_mul(v, b, m);
            sc[l] = v;
        }
        if ((st = ts_poly_mul_scalar(u, t, sc)) != TS_OK ||
            (st = ts_rlwe_ksk_new(sk, u, 1, prng, &keys[i])) != TS_OK)
            goto out;
    }
out:
    if (t)
        ts_poly_zero(t);
    if (u)
        ts_poly_zero(u);
    ts_poly_free(t);
    ts_poly_free(u);
    return st;
}

/*
 * (u0, u1), NTT form, 1 limb, with u0 + u1 s = c s_from: c (1 limb, any form,
 * not modified) split into ndig unsigned digits, digit i switched with keys[i].
 * dig, t0, t1: scratch polys of ks's ring.
 */
static ts_status_t ks_digits(const ts_convert_t *cv, uint64_t *host, uint64_t *host2,
                             ts_rlwe_ks_t *ks, const ts_poly_t *c, ts_rlwe_ksk_t *const *keys,
                             ts_poly_t *dig, ts_poly_t *t0, ts_poly_t *t1, ts_poly_t *u0,
                             ts_poly_t *u1)
{
    ts_status_t st;
    uint32_t n = ts_ring_n(dig->ring);
    if ((st = ts_poly_copy(t0, c)) != TS_OK || (st = ts_poly_intt(t0)) != TS_OK ||
        (st = ts_poly_download(t0, host)) != TS_OK)
        return st;
    const uint64_t mask = ((uint64_t)1 << cv->dig_bits) - 1;
    for (uint32_t i = 0; i < cv->ndig; i++) {
        for (uint32_t j = 0; j < n; j++)
            host2[j] = (host[j] >> (i * cv->dig_bits)) & mask;
        if ((st = ts_poly_reshape(dig, 1, 0, false)) != TS_OK ||
            (st = ts_poly_upload(dig, host2)) != TS_OK)
            return st;
        ts_poly_t *o0 = i ? t0 : u0, *o1 = i ? t1 : u1;
        if ((st = ts_poly_reshape(o0, 1, 0, true)) != TS_OK ||
            (st = ts_poly_reshape(o1, 1, 0, true)) != TS_OK ||
            (st = ts_rlwe_keyswitch(ks, dig, 1, keys[i], o0, o1)) != TS_OK)
            return st;
        if (i &&
            ((st = ts_poly_add(u0, u0, t0)) != TS_OK || (st = ts_poly_add(u1, u1, t1)) != TS_OK))
            return st;
    }
    return TS_OK;
}

ts_status_t ts_convert_keygen(ts_ckks_params_t *ckks, const ts_ckks_secret_key_t *sk,
                              const ts_tfhe_params_lit_t *tlit, ts_prng_t *prng, ts_convert_t **out)
{
    if (!ckks || !sk || !tlit || !prng || !out)
        return TS_EINVAL;
    *out = NULL;
    if (!ts_ckks_params_insecure(ckks) && !tlit->insecure) {
        char why[160];
        ts_status_t sc = ts_convert_security_check(ckks, tlit, why, sizeof(why));
        if (sc != TS_OK) {
            if (sc == TS_ESECURITY)
                ts_log(TS_LOG_WARN, "convert",
                       "conversion keys refused for %s with TFHE set %s (N_br = 2^%u): %s",
                       ts_ckks_params_name(ckks), tlit->name, tlit->log_n_br, why);
            return sc;
        }
    }
    ts_convert_t *cv = NULL;
    ts_status_t st = cv_alloc(ckks, tlit, &cv);
    if (st != TS_OK)
        return st;
    int8_t *sc = NULL, *sbig = NULL;
    int32_t *s32 = NULL;
    int64_t *tmp = NULL;
    ts_rlwe_sk_t *sk_br = NULL, *sub_d = NULL, *s_d = NULL, *sub_u = NULL, *s_u = NULL;
    /* s_br: ternary */
    st = TS_ENOMEM;
    sc = ts_calloc(cv->n_br, 1);
    sbig = ts_calloc(cv->n, 1);
    s32 = ts_calloc(cv->n_br, sizeof(int32_t));
    tmp = ts_calloc(cv->n_br, sizeof(int64_t));
    if (!sc || !sbig || !s32 || !tmp)
        goto fail;
    if ((st = ts_ring_sample_ternary(prng, cv->n_br, tmp)) != TS_OK)
        goto fail;
    for (uint32_t i = 0; i < cv->n_br; i++) {
        sc[i] = (int8_t)tmp[i];
        s32[i] = (int32_t)tmp[i];
        sbig[(size_t)i * cv->g] = (int8_t)tmp[i];
    }
    const ts_rlwe_sk_t *s = ts_ckks_secret_key_rlwe(sk);
    /* s_br on the small ring; s_sub and s on the two level-0 rings */
    if ((st = ts_rlwe_sk_from_coeffs(cv->small, sc, &sk_br)) != TS_OK ||
        (st = ts_rlwe_sk_from_coeffs(cv->bigd, sbig, &sub_d)) != TS_OK ||
        (st = ts_rlwe_sk_from_coeffs(cv->bigd, s->coeffs, &s_d)) != TS_OK ||
        (st = ts_rlwe_sk_from_coeffs(cv->bigu, sbig, &sub_u)) != TS_OK ||
        (st = ts_rlwe_sk_from_coeffs(cv->bigu, s->coeffs, &s_u)) != TS_OK)
        goto fail;
    if ((st = ts_tfhe_rlwe_key_from_coeffs(cv->tp, s32, &cv->rlwe_key)) != TS_OK ||
        (st = ts_tfhe_rlwe_key_lwe(cv->rlwe_key, &cv->lwe_key)) != TS_OK)
        goto fail;
    const ts_tfhe_params_lit_t *tl = ts_tfhe_params_literal(cv->tp);
    if ((st = ts_tfhe_lwe_key_new(tl->lwe_n, tl->lwe_secret, prng, &cv->small_key)) != TS_OK ||
        (st = ts_tfhe_evalkey_new(cv->tp, cv->small_key, cv->rlwe_key, NULL, prng, &cv->ek)) !=
            TS_OK ||
        (st = ts_tfhe_evaluator_new(cv->tp, cv->ek, &cv->tev)) != TS_OK)
        goto fail;
    /* ring-switching keys, level 0 only (one digit: q0 over P_br / P);
     * ksk_down first (the order of the randomness as before) */
    if (cv->ndig == 1) {
        if ((st = ts_rlwe_ksk_new(sub_d, s_d->s, 1, prng, &cv->ksk_down[0])) != TS_OK ||
            (st = ts_rlwe_ksk_new(s_u, sub_u->s, 1, prng, &cv->ksk_up)) != TS_OK)
            goto fail;
        /* Galois keys of the trace */
        for (uint32_t k = 1; k <= cv->log_n_br; k++)
            if ((st = ts_rlwe_galois_key_new(sk_br, (1ull << k) + 1, 1, 0, prng,
                                             &cv->gal[k - 1])) != TS_OK)
                goto fail;
    } else {
        if ((st = digit_keys(cv, sub_d, s_d->s, 0, prng, cv->ksk_down)) != TS_OK ||
            (st = ts_rlwe_ksk_new(s_u, sub_u->s, 1, prng, &cv->ksk_up)) != TS_OK)
            goto fail;
        for (uint32_t k = 1; k <= cv->log_n_br; k++)
            if ((st = digit_keys(cv, sk_br, sk_br->s, (1ull << k) + 1, prng,
                                 cv->gal + (size_t)(k - 1) * cv->ndig)) != TS_OK)
                goto fail;
    }
    count_key_bytes(cv);
    st = TS_OK;
    *out = cv;
    cv = NULL;
fail:
    ts_rlwe_sk_free(sk_br);
    ts_rlwe_sk_free(sub_d);
    ts_rlwe_sk_free(s_d);
    ts_rlwe_sk_free(sub_u);
    ts_rlwe_sk_free(s_u);
    ts_free_secret(sc);
    ts_free_secret(sbig);
    ts_free_secret(s32);
    ts_free_secret(tmp);
    ts_convert_free(cv);
    return st;
}

const ts_tfhe_params_t *ts_convert_tfhe_params(const ts_convert_t *cv)
{
    return cv ? cv->tp : NULL;
}
ts_tfhe_evaluator_t *ts_convert_tfhe_evaluator(ts_convert_t *cv)
{
    return cv ? cv->tev : NULL;
}
const ts_tfhe_rlwe_key_t *ts_convert_rlwe_key(const ts_convert_t *cv)
{
    return cv ? cv->rlwe_key : NULL;
}
const ts_tfhe_lwe_key_t *ts_convert_lwe_key(const ts_convert_t *cv)
{
    return cv ? cv->lwe_key : NULL;
}
size_t ts_convert_keys_bytes(const ts_convert_t *cv)
{
    return cv ? cv->key_bytes : 0;
}
uint32_t ts_convert_n_br(const ts_convert_t *cv)
{
    return cv ? cv->n_br : 0;
}
uint64_t ts_convert_q(const ts_convert_t *cv)
{
    return cv ? cv->q : 0;
}

static size_t bitrev(size_t x, int bits)
{
    size_t r = 0;
    for (int i = 0; i < bits; i++)
        r |= ((x >> i) & 1u) << (bits - 1 - i);
    return r;
}

int64_t ts_convert_slot_coeff(int log_n, int log_slots, uint32_t n_br, size_t j, bool imag)
{
    if (log_slots < 0 || log_slots >= log_n || j >= ((size_t)1 << log_slots) || n_br == 0)
        return -1;
    size_t n = (size_t)1 << log_n, slots = (size_t)1 << log_slots;
    size_t gc = n / (2 * slots), g = n / n_br;
    size_t big = (bitrev(j, log_slots) + (imag ? slots : 0)) * gc;
    if (g == 0 || big % g)
        return -1;
    return (int64_t)(big / g);
}

/* ------------------------------------------------------------ the steps */

ts_status_t ts_convert_slot_to_coeff(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                     const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = ts_boot_slot_to_coeff(bt, ev, in, out);
    if (st != TS_OK)
        return st;
    return ts_ckks_drop_to_level(ev, out, 0, out);
}

/* small tfhe ct (a, b) -> (c0, c1) = (b, -a) in NTT form on the small ring */
static ts_status_t small_from_tfhe(const ts_convert_t *cv, uint64_t *host, const ts_tfhe_rlwe_t *in,
                                   ts_poly_t *c0, ts_poly_t *c1)
{
    const uint64_t *a = ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)in, 0);
    const uint64_t *b = ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)in, 1);
    ts_status_t st;
    if ((st = ts_poly_reshape(c0, 1, 0, false)) != TS_OK ||
        (st = ts_poly_reshape(c1, 1, 0, false)) != TS_OK)
        return st;
    if ((st = ts_poly_upload(c0, b)) != TS_OK)
        return st;
    for (uint32_t i = 0; i < cv->n_br; i++)
        host[i] = ts_mod_neg(a[i], cv->q);
    if ((st = ts_poly_upload(c1, host)) != TS_OK)
        return st;
    if ((st = ts_poly_ntt(c0)) != TS_OK)
        return st;
    return ts_poly_ntt(c1);
}

static ts_status_t small_to_tfhe(const ts_convert_t *cv, uint64_t *host, ts_poly_t *c0,
                                 ts_poly_t *c1, ts_tfhe_rlwe_t *out)
{
    ts_status_t st;
    if (c0->is_ntt && (st = ts_poly_intt(c0)) != TS_OK)
        return st;
    if (c1->is_ntt && (st = ts_poly_intt(c1)) != TS_OK)
        return st;
    uint64_t *a = ts_tfhe_rlwe_poly(out, 0), *b = ts_tfhe_rlwe_poly(out, 1);
    if ((st = ts_poly_download(c0, b)) != TS_OK || (st = ts_poly_download(c1, host)) != TS_OK)
        return st;
    for (uint32_t i = 0; i < cv->n_br; i++)
        a[i] = ts_mod_neg(host[i], cv->q);
    return TS_OK;
}

ts_status_t ts_convert_ring_down(ts_convert_t *cv, const ts_ckks_ciphertext_t *in,
                                 ts_tfhe_rlwe_t *out)
{
    if (!cv || !in || !out)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(ts_ckks_ciphertext_params(in), cv->ckks))
        return TS_EMISMATCH;
    if (ts_ckks_ciphertext_degree(in) != 1)
        return TS_EINVAL;
    ts_status_t st;
    ts_poly_t *c0 = ts_ckks_ciphertext_poly((ts_ckks_ciphertext_t *)in, 0);
    ts_poly_t *c1 = ts_ckks_ciphertext_poly((ts_ckks_ciphertext_t *)in, 1);
    /* limb 0 of each (the level-0 part), NTT form */
    if ((st = ts_poly_reshape(cv->b0, 1, 0, c0->is_ntt)) != TS_OK ||
        (st = ts_poly_reshape(cv->b1, 1, 0, c1->is_ntt)) != TS_OK)
        return st;
    size_t bytes = (size_t)cv->n * 8;
    uint64_t *h = ts_malloc(bytes * (c0->nq > c1->nq ? c0->nq : c1->nq));
    if (!h)
        return TS_ENOMEM;
    if ((st = ts_poly_download(c0, h)) == TS_OK)
        st = ts_poly_upload(cv->b0, h);
    if (st == TS_OK && (st = ts_poly_download(c1, h)) == TS_OK)
        st = ts_poly_upload(cv->b1, h);
    ts_free(h);
    if (st != TS_OK)
        return st;
    if (!cv->b0->is_ntt && (st = ts_poly_ntt(cv->b0)) != TS_OK)
        return st;
    if (!cv->b1->is_ntt && (st = ts_poly_ntt(cv->b1)) != TS_OK)
        return st;
    if ((st = ts_poly_reshape(cv->bu0, 1, 0, true)) != TS_OK ||
        (st = ts_poly_reshape(cv->bu1, 1, 0, true)) != TS_OK)
        return st;
    /* u0 + u1 s_sub = c1 s */
    if (cv->ndig == 1)
        st = ts_rlwe_keyswitch(cv->ks_down, cv->b1, 1, cv->ksk_down[0], cv->bu0, cv->bu1);
    else
        st = ks_digits(cv, cv->host, cv->host2, cv->ks_down, cv->b1, cv->ksk_down, cv->bd, cv->bt0,
                       cv->bt1, cv->bu0, cv->bu1);
    if (st != TS_OK)
        return st;
    if ((st = ts_poly_add(cv->bu0, cv->bu0, cv->b0)) != TS_OK)
        return st;
    if ((st = ts_poly_intt(cv->bu0)) != TS_OK || (st = ts_poly_intt(cv->bu1)) != TS_OK)
        return st;
    uint64_t *a = ts_tfhe_rlwe_poly(out, 0), *b = ts_tfhe_rlwe_poly(out, 1);
    if ((st = ts_poly_download(cv->bu0, cv->host)) != TS_OK)
        return st;
    for (uint32_t i = 0; i < cv->n_br; i++)
        b[i] = cv->host[(size_t)i * cv->g];
    if ((st = ts_poly_download(cv->bu1, cv->host)) != TS_OK)
        return st;
    for (uint32_t i = 0; i < cv->n_br; i++)
        a[i] = ts_mod_neg(cv->host[(size_t)i * cv->g], cv->q);
    return TS_OK;
}

ts_status_t ts_convert_ring_up(ts_convert_t *cv, const ts_tfhe_rlwe_t *in, double scale,
                               size_t slots, ts_ckks_ciphertext_t *out)
{
    if (!cv || !in || !out)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(ts_ckks_ciphertext_params(out), cv->ckks))
        return TS_EMISMATCH;
    ts_status_t st;
    const uint64_t *a = ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)in, 0);
    const uint64_t *b = ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)in, 1);
    if ((st = ts_poly_reshape(cv->c0, 1, 0, false)) != TS_OK ||
        (st = ts_poly_reshape(cv->c1, 1, 0, false)) != TS_OK)
        return st;
    memset(cv->host, 0, (size_t)cv->n * 8);
    for (uint32_t i = 0; i < cv->n_br; i++)
        cv->host[(size_t)i * cv->g] = b[i];
    if ((st = ts_poly_upload(cv->c0, cv->host)) != TS_OK)
        return st;
    for (uint32_t i = 0; i < cv->n_br; i++)
        cv->host[(size_t)i * cv->g] = ts_mod_neg(a[i], cv->q);
    if ((st = ts_poly_upload(cv->c1, cv->host)) != TS_OK)
        return st;
    if ((st = ts_poly_ntt(cv->c0)) != TS_OK || (st = ts_poly_ntt(cv->c1)) != TS_OK)
        return st;
    if ((st = ts_poly_reshape(cv->cu0, 1, 0, true)) != TS_OK ||
        (st = ts_poly_reshape(cv->cu1, 1, 0, true)) != TS_OK)
        return st;
    if ((st = ts_rlwe_keyswitch(cv->ks_up, cv->c1, 1, cv->ksk_up, cv->cu0, cv->cu1)) != TS_OK)
        return st;
    if ((st = ts_poly_add(cv->cu0, cv->cu0, cv->c0)) != TS_OK)
        return st;
    /* into the CKKS ring (same q0 and N: the NTT forms agree) */
    ts_poly_t *o0 = ts_ckks_ciphertext_poly(out, 0), *o1 = ts_ckks_ciphertext_poly(out, 1);
    if ((st = ts_poly_reshape(o0, 1, 0, true)) != TS_OK ||
        (st = ts_poly_reshape(o1, 1, 0, true)) != TS_OK)
        return st;
    if ((st = ts_poly_download(cv->cu0, cv->host)) != TS_OK ||
        (st = ts_poly_upload(o0, cv->host)) != TS_OK ||
        (st = ts_poly_download(cv->cu1, cv->host)) != TS_OK ||
        (st = ts_poly_upload(o1, cv->host)) != TS_OK)
        return st;
    return ts_ckks_ciphertext_set_meta(out, 0, 1, scale, slots);
}

ts_status_t ts_convert_extract(const ts_tfhe_rlwe_t *in, uint32_t idx, ts_tfhe_lwe_t *out)
{
    return ts_tfhe_rlwe_sample_extract(in, idx, out);
}

ts_status_t ts_convert_modswitch(ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *in)
{
    return ts_tfhe_lwe_modswitch(out, in);
}

/* out[i] = in[i] * X^e negacyclically, one polynomial of n words mod q */
static void mono(uint64_t *p, uint64_t *tmp, uint32_t n, int64_t e, uint64_t q)
{
    int64_t m = e % (2 * (int64_t)n);
    if (m < 0)
        m += 2 * (int64_t)n;
    if (m == 0)
        return;
    for (uint32_t i = 0; i < n; i++) {
        int64_t j = (int64_t)i + m;
        bool neg = false;
        while (j >= (int64_t)n) {
            j -= n;
            neg = !neg;
        }
        tmp[j] = neg ? ts_mod_neg(p[i], q) : p[i];
    }
    memcpy(p, tmp, (size_t)n * 8);
}

void ts_convert_monomial_mul(ts_convert_t *cv, ts_tfhe_rlwe_t *ct, int64_t e)
{
    mono(ts_tfhe_rlwe_poly(ct, 0), cv->host, cv->n_br, e, cv->q);
    mono(ts_tfhe_rlwe_poly(ct, 1), cv->host, cv->n_br, e, cv->q);
}

/* The trace of ct with scratch t (cv's keys and constants only read). */
static ts_status_t trace_with(const ts_convert_t *cv, trace_scr_t *t, ts_tfhe_rlwe_t *ct)
{
    ts_status_t st;
    /* times N_br^{-1} mod Q */
    uint64_t inv = ts_mod_inv(cv->n_br % cv->q, cv->q);
    for (int i = 0; i < 2; i++) {
        uint64_t *p = ts_tfhe_rlwe_poly(ct, i);
        for (uint32_t j = 0; j < cv->n_br; j++)
            p[j] = ts_mod_mul(p[j], inv, &cv->qm);
    }
    if ((st = small_from_tfhe(cv, t->host, ct, t->s0, t->s1)) != TS_OK)
        return st;
    for (uint32_t k = cv->log_n_br; k >= 1; k--) {
        uint64_t el = (1ull << k) + 1;
        if ((st = ts_poly_reshape(t->su0, 1, 0, true)) != TS_OK ||
            (st = ts_poly_reshape(t->su1, 1, 0, true)) != TS_OK ||
            (st = ts_poly_reshape(t->sr0, 1, 0, true)) != TS_OK)
            return st;
        /* sigma(c0) + ks(sigma(c1)) */
        if (cv->ndig == 1) {
            if ((st = ts_rlwe_keyswitch(t->ks, t->s1, el, cv->gal[k - 1], t->su0, t->su1)) != TS_OK)
                return st;
        } else {
            if ((st = ts_poly_reshape(t->sr1, 1, 0, true)) != TS_OK ||
                (st = ts_poly_automorphism(t->sr1, t->s1, el)) != TS_OK ||
                (st = ks_digits(cv, t->host, t->host2, t->ks, t->sr1,
                                cv->gal + (size_t)(k - 1) * cv->ndig, t->sd, t->st0, t->st1, t->su0,
                                t->su1)) != TS_OK)
                return st;
        }
        if ((st = ts_poly_automorphism(t->sr0, t->s0, el)) != TS_OK)
            return st;
        if ((st = ts_poly_add(t->su0, t->su0, t->sr0)) != TS_OK ||
            (st = ts_poly_add(t->s0, t->s0, t->su0)) != TS_OK ||
            (st = ts_poly_add(t->s1, t->s1, t->su1)) != TS_OK)
            return st;
    }
    return small_to_tfhe(cv, t->host, t->s0, t->s1, ct);
}

ts_status_t ts_convert_trace(ts_convert_t *cv, ts_tfhe_rlwe_t *ct)
{
    if (!cv || !ct)
        return TS_EINVAL;
    return trace_with(cv, &cv->tr, ct);
}

static ts_status_t lwe_to_rlwe_with(const ts_convert_t *cv, trace_scr_t *t, const ts_tfhe_lwe_t *in,
                                    ts_tfhe_rlwe_t *out)
{
    if (ts_tfhe_lwe_dim(in) != cv->n_br || ts_tfhe_lwe_modulus(in) != cv->q)
        return TS_EMISMATCH;
    const uint64_t *a = ts_tfhe_lwe_mask_const(in);
    uint64_t *A = ts_tfhe_rlwe_poly(out, 0), *B = ts_tfhe_rlwe_poly(out, 1);
    memset(B, 0, (size_t)cv->n_br * 8);
    B[0] = ts_tfhe_lwe_body_get(in);
    /* constant coefficient of A s = sum_i a_i s_i: A = a_0 - sum_{i>0} a_i Y^{N-i} */
    A[0] = a[0];
    for (uint32_t i = 1; i < cv->n_br; i++)
        A[cv->n_br - i] = ts_mod_neg(a[i], cv->q);
    return trace_with(cv, t, out);
}

ts_status_t ts_convert_lwe_to_rlwe(ts_convert_t *cv, const ts_tfhe_lwe_t *in, ts_tfhe_rlwe_t *out)
{
    if (!cv || !in || !out)
        return TS_EINVAL;
    return lwe_to_rlwe_with(cv, &cv->tr, in, out);
}

/* ------------------------------------------------------------- workers */

struct ts_convert_worker {
    const ts_convert_t *cv; /* borrowed: keys, rings and constants, read only */
    ts_tfhe_evaluator_t *tev;
    trace_scr_t tr;
};

ts_status_t ts_convert_worker_new(const ts_convert_t *cv, ts_convert_worker_t **out)
{
    if (!cv || !out)
        return TS_EINVAL;
    *out = NULL;
    if (!cv->ek)
        return TS_ENOKEY;
    ts_convert_worker_t *w = ts_calloc(1, sizeof(*w));
    if (!w)
        return TS_ENOMEM;
    w->cv = cv;
    ts_status_t st;
    if ((st = ts_tfhe_evaluator_new(cv->tp, cv->ek, &w->tev)) != TS_OK ||
        (st = trace_scr_init(cv, &w->tr)) != TS_OK) {
        ts_convert_worker_free(w);
        return st;
    }
    *out = w;
    return TS_OK;
}

void ts_convert_worker_free(ts_convert_worker_t *w)
{
    if (!w)
        return;
    ts_tfhe_evaluator_free(w->tev);
    trace_scr_clear(&w->tr);
    ts_free(w);
}

ts_tfhe_evaluator_t *ts_convert_worker_tfhe_evaluator(ts_convert_worker_t *w)
{
    return w ? w->tev : NULL;
}

ts_status_t ts_convert_worker_trace(ts_convert_worker_t *w, ts_tfhe_rlwe_t *ct)
{
    if (!w || !ct)
        return TS_EINVAL;
    return trace_with(w->cv, &w->tr, ct);
}

ts_status_t ts_convert_worker_lwe_to_rlwe(ts_convert_worker_t *w, const ts_tfhe_lwe_t *in,
                                          ts_tfhe_rlwe_t *out)
{
    if (!w || !in || !out)
        return TS_EINVAL;
    return lwe_to_rlwe_with(w->cv, &w->tr, in, out);
}

static void rlwe_add(ts_convert_t *cv, ts_tfhe_rlwe_t *acc, const ts_tfhe_rlwe_t *x)
{
    for (int i = 0; i < 2; i++) {
        uint64_t *p = ts_tfhe_rlwe_poly(acc, i);
        const uint64_t *q = ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)x, i);
        for (uint32_t j = 0; j < cv->n_br; j++)
            p[j] = ts_mod_add(p[j], q[j], cv->q);
    }
}

ts_status_t ts_convert_repack(ts_convert_t *cv, const ts_tfhe_lwe_t *const *in, const uint32_t *pos,
                              size_t count, ts_tfhe_rlwe_t *out)
{
    if (!cv || (!in && count) || (!pos && count) || !out)
        return TS_EINVAL;
    ts_tfhe_rlwe_trivial(out, NULL);
    for (size_t i = 0; i < count; i++) {
        if (pos[i] >= cv->n_br)
            return TS_ERANGE;
        ts_status_t st = ts_convert_lwe_to_rlwe(cv, in[i], cv->tmp);
        if (st != TS_OK)
            return st;
        ts_convert_monomial_mul(cv, cv->tmp, pos[i]);
        rlwe_add(cv, out, cv->tmp);
    }
    return TS_OK;
}

ts_status_t ts_convert_mod_recover(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                   const ts_ckks_ciphertext_t *in, int level,
                                   ts_ckks_ciphertext_t *out)
{
    return ts_boot_mod_recover(bt, ev, in, level, out);
}

/* ------------------------------------------------ multi-value batching */

ts_status_t ts_convert_split(ts_convert_t *cv, const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                             const ts_ckks_ciphertext_t *in, const uint32_t *pos, size_t count,
                             ts_tfhe_rlwe_t *const *out, ts_tfhe_lwe_t *const *lwe)
{
    if (!cv || !in || (count && (!pos || !out)))
        return TS_EINVAL;
    ts_status_t st;
    ts_ckks_ciphertext_t *c = NULL;
    if ((st = ts_ckks_ciphertext_new(cv->ckks, ts_ckks_ciphertext_level(in), &c)) != TS_OK)
        return st;
    if (bt)
        st = ts_convert_slot_to_coeff(bt, ev, in, c);
    else
        st = ts_ckks_ciphertext_copy(c, in);
    if (st == TS_OK)
        st = ts_convert_ring_down(cv, c, cv->acc);
    ts_ckks_ciphertext_free(c);
    for (size_t i = 0; st == TS_OK && i < count; i++) {
        if (pos[i] >= cv->n_br) {
            st = TS_ERANGE;
            break;
        }
        if ((st = ts_tfhe_rlwe_copy(out[i], cv->acc)) != TS_OK)
            break;
        ts_convert_monomial_mul(cv, out[i], -(int64_t)pos[i]);
        if ((st = ts_convert_trace(cv, out[i])) != TS_OK)
            break;
        if (lwe && lwe[i])
            st = ts_convert_extract(out[i], 0, lwe[i]);
    }
    return st;
}

ts_status_t ts_convert_merge(ts_convert_t *cv, const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                             const ts_tfhe_rlwe_t *const *results, const uint32_t *pos,
                             size_t count, double scale, int level, ts_ckks_ciphertext_t *out)
{
    if (!cv || !out || (count && (!results || !pos)))
        return TS_EINVAL;
    ts_status_t st;
    ts_tfhe_rlwe_trivial(cv->acc, NULL);
    for (size_t i = 0; i < count; i++) {
        if (pos[i] >= cv->n_br)
            return TS_ERANGE;
        if ((st = ts_tfhe_rlwe_copy(cv->tmp, results[i])) != TS_OK)
            return st;
        ts_convert_monomial_mul(cv, cv->tmp, pos[i]);
        rlwe_add(cv, cv->acc, cv->tmp);
    }
    size_t slots = bt ? ((size_t)1 << ts_boot_config(bt)->log_slots) : 0;
    if ((st = ts_convert_ring_up(cv, cv->acc, scale, slots, out)) != TS_OK)
        return st;
    if (!bt)
        return TS_OK;
    return ts_convert_mod_recover(bt, ev, out, level, out);
}

/* ------------------------------------------------------- serialization */

/*
 * Payload of TS_OBJ_RING_SWITCH_KEY (version 2):
 *   u32 version, u32 log_n_br, u32 ndig (digits of q0 for the P_br keys)
 *   ndig ksk_down digit keys (ring (N, {q0}, P_br)), then ksk_up (ring
 *     (N, {q0}, P)): each u64 galois (0), u32 dnum (1), seed, then the b
 *     part (all limbs), packed
 *   log_n_br x ndig Galois keys (k = 1.., digit i inner): u64 element
 *     (2^k + 1 when ndig = 1, else 0: the digit keys switch B^i sigma(s_br)),
 *     u32 dnum (1), seed, b (all 1 + #P_br limbs), packed
 *   u64 length + the TFHE evaluation key's own envelope (seeded)
 * Every a part is regenerated from its seed (stream j + 1, as
 * ts_rlwe_ksk_new draws it). P_br is not written: both sides derive it
 * from the parameters (small_special_primes).
 */
#define CV_KEYS_VERSION 2u

static ts_status_t cv_param_id(const ts_convert_t *cv, uint8_t id[TS_SHA256_BYTES])
{
    uint8_t both[2 * TS_SHA256_BYTES];
    ts_ckks_params_serial_id(cv->ckks, both);
    ts_status_t st = ts_tfhe_params_id(cv->tp, both + TS_SHA256_BYTES);
    if (st != TS_OK)
        return st;
    return ts_sha256(both, sizeof(both), id);
}

static void put_key(ts_writer_t *w, const ts_rlwe_ksk_t *k, bool level0)
{
    ts_put_u64(w, k->galois);
    ts_put_u32(w, k->dnum);
    ts_put_bytes(w, k->seed, TS_SEED_BYTES);
    ts_rlwe_ksk_put_body(w, k, level0);
}

/* Read a key of ring r with `dnum` digits and Galois element `galois`. */
static ts_status_t get_key(ts_reader_t *r, ts_ring_t *ring, uint32_t dnum, uint64_t galois,
                           bool level0, ts_rlwe_ksk_t **out)
{
    *out = NULL;
    uint64_t el = ts_get_u64(r);
    uint32_t d = ts_get_u32(r);
    uint8_t seed[TS_SEED_BYTES];
    ts_get_bytes(r, seed, TS_SEED_BYTES);
    if (r->err != TS_OK)
        return r->err;
    if (el != galois || d != dnum)
        return TS_EFORMAT;
    return ts_rlwe_ksk_get_body(r, ring, dnum, 0, galois, seed, level0, out);
}

ts_status_t ts_convert_keys_serialize(const ts_convert_t *cv, int zstd_level, uint8_t **out,
                                      size_t *size)
{
    if (!cv || !out || !size)
        return TS_EINVAL;
    *out = NULL;
    *size = 0;
    if (!cv->ksk_down[0] || !cv->ksk_up || !cv->ek)
        return TS_ENOKEY;
    uint8_t id[TS_SHA256_BYTES];
    ts_status_t st = cv_param_id(cv, id);
    if (st != TS_OK)
        return st;
    uint8_t *ekb = NULL;
    size_t eks = 0;
    if ((st = ts_tfhe_evalkey_serialize(cv->ek, &ekb, &eks)) != TS_OK)
        return st;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u32(&w, CV_KEYS_VERSION);
    ts_put_u32(&w, cv->log_n_br);
    ts_put_u32(&w, cv->ndig);
    for (uint32_t i = 0; i < cv->ndig; i++)
        put_key(&w, cv->ksk_down[i], false);
    put_key(&w, cv->ksk_up, false);
    for (uint32_t k = 0; k < cv->log_n_br * cv->ndig; k++)
        put_key(&w, cv->gal[k], false);
    ts_put_u64(&w, eks);
    ts_put_bytes(&w, ekb, eks);
    ts_free(ekb);
    st = w.err;
    if (st == TS_OK)
        st = ts_serial_seal(&w, TS_OBJ_RING_SWITCH_KEY, id, zstd_level, out, size);
    ts_writer_clear(&w);
    return st;
}

ts_status_t ts_convert_keys_deserialize(ts_ckks_params_t *ckks, const ts_tfhe_params_lit_t *tlit,
                                        const void *data, size_t size, ts_convert_t **out)
{
    if (!ckks || !tlit || !data || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_convert_t *cv = NULL;
    ts_status_t st = cv_alloc(ckks, tlit, &cv);
    if (st != TS_OK)
        return st;
    uint8_t id[TS_SHA256_BYTES];
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_reader_t r;
    if ((st = cv_param_id(cv, id)) != TS_OK)
        goto fail;
    ts_serial_header_t hdr;
    if ((st = ts_serial_open(data, size, TS_OBJ_RING_SWITCH_KEY, id, NULL, &hdr, &payload,
                             &psize)) != TS_OK)
        goto fail;
    ts_reader_init(&r, payload, psize);
    uint32_t ver = ts_get_u32(&r), lb = ts_get_u32(&r), dnum = ts_get_u32(&r);
    if ((st = r.err) != TS_OK)
        goto fail;
    if (ver != CV_KEYS_VERSION || lb != cv->log_n_br || dnum != cv->ndig) {
        st = TS_EFORMAT;
        goto fail;
    }
    for (uint32_t i = 0; i < cv->ndig; i++)
        if ((st = get_key(&r, cv->bigd, 1, 0, false, &cv->ksk_down[i])) != TS_OK)
            goto fail;
    if ((st = get_key(&r, cv->bigu, 1, 0, false, &cv->ksk_up)) != TS_OK)
        goto fail;
    for (uint32_t k = 1; k <= cv->log_n_br; k++)
        for (uint32_t i = 0; i < cv->ndig; i++)
            if ((st = get_key(&r, cv->small, 1, cv->ndig == 1 ? (1ull << k) + 1 : 0, false,
                              &cv->gal[(size_t)(k - 1) * cv->ndig + i])) != TS_OK)
                goto fail;
    uint64_t eks = ts_get_u64(&r);
    if ((st = r.err) != TS_OK)
        goto fail;
    if (eks != ts_reader_left(&r)) {
        st = TS_EFORMAT;
        goto fail;
    }
    if ((st = ts_tfhe_evalkey_deserialize(cv->tp, r.p + r.pos, (size_t)eks, &cv->ek)) != TS_OK)
        goto fail;
    r.pos += (size_t)eks;
    if ((st = ts_reader_finish(&r)) != TS_OK ||
        (st = ts_tfhe_evaluator_new(cv->tp, cv->ek, &cv->tev)) != TS_OK)
        goto fail;
    count_key_bytes(cv);
    ts_free(payload);
    *out = cv;
    return TS_OK;
fail:
    ts_free(payload);
    ts_convert_free(cv);
    return st;
}

bool ts_convert_has_secrets(const ts_convert_t *cv)
{
    return cv && cv->rlwe_key && cv->small_key;
}
