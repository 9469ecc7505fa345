/*
 * Secret, public and key-switching keys (layout and formulas in rlwe.h).
 */
#include <string.h>

#include "core/rlwe/rlwe_int.h"

/* ----------------------------------------------------------- secret key */

static ts_status_t sk_build(ts_ring_t *r, const int64_t *c, bool sparse, ts_rlwe_sk_t **out)
{
    const uint32_t n = ts_ring_n(r);
    ts_rlwe_sk_t *sk = ts_calloc(1, sizeof *sk);
    if (!sk)
        return TS_ENOMEM;
    ts_status_t st = TS_ENOMEM;
    sk->coeffs = ts_malloc(n);
    if (!sk->coeffs)
        goto out_free;
    for (uint32_t i = 0; i < n; i++) {
        sk->coeffs[i] = (int8_t)c[i];
        sk->hamming += c[i] != 0;
    }
    sk->sparse = sparse;
    st = ts_poly_new(r, ts_ring_q_count(r), ts_ring_p_count(r), false, &sk->s);
    if (st != TS_OK)
        goto out_free;
    st = ts_poly_set_i64(sk->s, c);
    if (st == TS_OK)
        st = ts_poly_ntt(sk->s);
    if (st != TS_OK)
        goto out_free;
    sk->ring = ts_ring_ref(r);
    *out = sk;
    return TS_OK;
out_free:
    ts_rlwe_sk_free(sk);
    return st;
}

ts_status_t ts_rlwe_sk_new(ts_ring_t *r, ts_prng_t *prng, uint32_t h, ts_rlwe_sk_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!r || !prng || h > ts_ring_n(r))
        return TS_EINVAL;
    const uint32_t n = ts_ring_n(r);
    int64_t *c = ts_malloc((size_t)n * sizeof(int64_t));
    if (!c)
        return TS_ENOMEM;
    ts_status_t st =
        h ? ts_ring_sample_sparse_ternary(prng, n, h, c) : ts_ring_sample_ternary(prng, n, c);
    if (st == TS_OK)
        st = sk_build(r, c, h != 0, out);
    ts_free_secret(c);
    return st;
}

ts_status_t ts_rlwe_sk_from_coeffs(ts_ring_t *r, const int8_t *coeffs, ts_rlwe_sk_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!r || !coeffs)
        return TS_EINVAL;
    const uint32_t n = ts_ring_n(r);
    for (uint32_t i = 0; i < n; i++)
        if (coeffs[i] < -1 || coeffs[i] > 1)
            return TS_EINVAL;
    int64_t *c = ts_malloc((size_t)n * sizeof(int64_t));
    if (!c)
        return TS_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        c[i] = coeffs[i];
    ts_status_t st = sk_build(r, c, false, out);
    ts_free_secret(c);
    return st;
}

static void poly_free_secret(ts_poly_t *p)
{
    if (!p)
        return;
    ts_poly_zero(p);
    ts_poly_free(p);
}

void ts_rlwe_sk_free(ts_rlwe_sk_t *sk)
{
    if (!sk)
        return;
    poly_free_secret(sk->s);
    ts_free_secret(sk->coeffs);
    ts_ring_free(sk->ring);
    ts_memzero(sk, sizeof *sk);
    ts_free(sk);
}

/* ------------------------------------------------------------ seeded a */

ts_status_t ts_rlwe_expand_a(const uint8_t seed[TS_SEED_BYTES], uint64_t stream_id, ts_poly_t *p)
{
    if (!seed || !p)
        return TS_EINVAL;
    ts_prng_t *prng;
    ts_status_t st = ts_prng_new_seeded(seed, stream_id, &prng);
    if (st != TS_OK)
        return st;
    st = ts_poly_sample_uniform(p, prng);
    p->is_ntt = true;
    ts_prng_free(prng);
    return st;
}

/* ------------------------------------------------------------ public key */

void ts_rlwe_pk_free(ts_rlwe_pk_t *pk)
{
    if (!pk)
        return;
    ts_poly_free(pk->a);
    ts_poly_free(pk->b);
    ts_free(pk);
}

/* b = -a s + e over the limbs of b (a prefix of s's limbs, or all of them). */
static ts_status_t rlwe_sample(const ts_rlwe_sk_t *sk, const ts_poly_t *s, ts_poly_t *b,
                               const ts_poly_t *a, ts_prng_t *prng)
{
    ts_poly_t *e;
    ts_status_t st = ts_poly_new(a->ring, a->nq, a->np, false, &e);
    if (st != TS_OK)
        return st;
    (void)sk;
    st = ts_poly_sample_gaussian(e, prng, TS_GAUSSIAN_SIGMA);
    if (st == TS_OK)
        st = ts_poly_ntt(e);
    if (st == TS_OK)
        st = ts_poly_mul(b, a, s);
    if (st == TS_OK)
        st = ts_poly_sub(b, e, b);
    poly_free_secret(e);
    return st;
}

ts_status_t ts_rlwe_pk_new(const ts_rlwe_sk_t *sk, ts_prng_t *prng, ts_rlwe_pk_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!sk || !prng)
        return TS_EINVAL;
    ts_ring_t *r = sk->ring;
    const uint32_t nq = ts_ring_q_count(r);
    ts_rlwe_pk_t *pk = ts_calloc(1, sizeof *pk);
    if (!pk)
        return TS_ENOMEM;
    ts_status_t st = ts_prng_bytes(prng, pk->seed, TS_SEED_BYTES);
    if (st == TS_OK)
        st = ts_poly_new(r, nq, 0, true, &pk->a);
    if (st == TS_OK)
        st = ts_poly_new(r, nq, 0, true, &pk->b);
    if (st == TS_OK)
        st = ts_rlwe_expand_a(pk->seed, 0, pk->a);
    if (st == TS_OK) {
        ts_poly_t s_q = ts__poly_view(r, sk->s->data, nq, 0, true);
        st = rlwe_sample(sk, &s_q, pk->b, pk->a, prng);
    }
    if (st != TS_OK) {
        ts_rlwe_pk_free(pk);
        return st;
    }
    *out = pk;
    return TS_OK;
}

/* ------------------------------------------------------ key switching keys */

ts_status_t ts_rlwe_ksk_shape(const ts_ring_t *r, uint32_t dnum, uint32_t *alpha)
{
    if (!r || !alpha)
        return TS_EINVAL;
    const uint32_t lq = ts_ring_q_count(r);
    if (dnum == 0 || dnum > lq || ts_ring_p_count(r) == 0)
        return TS_EPARAMS;
    uint32_t a = (lq + dnum - 1) / dnum;
    if ((dnum - 1) * a >= lq) /* the last digit would be empty */
        return TS_EPARAMS;
    *alpha = a;
    return TS_OK;
}

void ts_rlwe_ksk_free(ts_rlwe_ksk_t *k)
{
    if (!k)
        return;
    if (ts__atomic_dec(&k->refs) > 0)
        return;
    if (k->ring) {
        ts_backend_buf_free(ts_ring_backend(k->ring), k->data);
        ts_ring_free(k->ring);
    }
    ts_free(k);
}

ts_rlwe_ksk_t *ts_rlwe_ksk_ref(ts_rlwe_ksk_t *k)
{
    if (k)
        ts__atomic_inc(&k->refs);
    return k;
}

/* [out] a copy of p (Q and P limbs, NTT form) keeping its first kq Q limbs. */
static ts_status_t limbs_prefix(const ts_poly_t *p, uint32_t kq, ts_poly_t **out)
{
    ts_status_t st = ts_poly_new(p->ring, kq, p->np, p->is_ntt, out);
    if (st != TS_OK)
        return st;
    ts_backend_t *be = ts_ring_backend(p->ring);
    const size_t n = ts_ring_n(p->ring);
    st = ts_backend_copy(be, (*out)->data, p->data, (size_t)kq * n * sizeof(uint64_t));
    if (st == TS_OK && p->np)
        st = ts_backend_copy(be, (*out)->data + (size_t)kq * n, p->data + (size_t)p->nq * n,
                             (size_t)p->np * n * sizeof(uint64_t));
    return st;
}

size_t ts_rlwe_ksk_bytes(const ts_rlwe_ksk_t *k)
{
    if (!k)
        return 0;
    return 2 * (size_t)k->ndig * (k->kq + ts_ring_p_count(k->ring)) * ts_ring_n(k->ring) *
           sizeof(uint64_t);
}

ts_status_t ts_rlwe_ksk_new(const ts_rlwe_sk_t *sk, const ts_poly_t *s_from, uint32_t dnum,
                            ts_prng_t *prng, ts_rlwe_ksk_t **out)
{
    return ts_rlwe_ksk_new_capped(sk, s_from, dnum, sk ? ts_ring_q_count(sk->ring) : 0, prng, out);
}

ts_status_t ts_rlwe_ksk_new_capped(const ts_rlwe_sk_t *sk, const ts_poly_t *s_from, uint32_t dnum,
                                   uint32_t kq, ts_prng_t *prng, ts_rlwe_ksk_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!sk || !s_from || !prng)
        return TS_EINVAL;
    ts_ring_t *r = sk->ring;
    const uint32_t lq = ts_ring_q_count(r), kp = ts_ring_p_count(r), n = ts_ring_n(r);
    if (s_from->ring != r || s_from->nq != lq || s_from->np != kp || !s_from->is_ntt)
        return TS_EMISMATCH;
    if (kq < 1 || kq > lq)
        return TS_EINVAL;
    uint32_t alpha;
    ts_status_t st = ts_rlwe_ksk_shape(r, dnum, &alpha);
    if (st != TS_OK)
        return st;
    ts_rlwe_ksk_t *k = ts_calloc(1, sizeof *k);
    if (!k)
        return TS_ENOMEM;
    k->refs = 1;
    k->dnum = dnum;
    k->alpha = alpha;
    k->kq = kq;
    k->ndig = (kq + alpha - 1) / alpha;
    k->ring = ts_ring_ref(r);
    const size_t poly_words = (size_t)(kq + kp) * n;
    ts_poly_t *t = NULL, *s_to = NULL, *s_fr = NULL;
    st = ts_backend_alloc(ts_ring_backend(r), 2 * k->ndig * poly_words * sizeof(uint64_t),
                          (void **)&k->data);
    if (st != TS_OK)
        goto out_free;
    st = ts_prng_bytes(prng, k->seed, TS_SEED_BYTES);
    if (st == TS_OK)
        st = ts_poly_new(r, kq, kp, true, &t);
    /* both secrets on the key's limbs (the first kq Q primes and P) */
    if (st == TS_OK)
        st = limbs_prefix(sk->s, kq, &s_to);
    if (st == TS_OK)
        st = limbs_prefix(s_from, kq, &s_fr);
    if (st != TS_OK)
        goto out_free;
    /* [P]_{q_i} for every Q prime */
    uint64_t pmod[TS_RNS_MAX_MODULI], scal[TS_RNS_MAX_MODULI];
    for (uint32_t i = 0; i < kq; i++) {
        const ts_modulus_t *m = ts_ring_modulus(r, i);
        uint64_t v = 1;
        for (uint32_t j = 0; j < kp; j++)
            v = ts_mod_mul(v, ts_ring_modulus(r, lq + j)->q, m);
        pmod[i] = v;
    }
    for (uint32_t j = 0; j < k->ndig && st == TS_OK; j++) {
        ts_poly_t b = ts__poly_view(r, k->data + 2 * j * poly_words, kq, kp, true);
        ts_poly_t a = ts__poly_view(r, k->data + (2 * j + 1) * poly_words, kq, kp, true);
        st = ts_rlwe_expand_a(k->seed, j + 1, &a);
        if (st == TS_OK)
            st = rlwe_sample(sk, s_to, &b, &a, prng);
        /* + [P]_{q_i} s_from on the primes of digit j */
        for (uint32_t l = 0; l < kq + kp; l++)
            scal[l] = (l < kq && l >= j * alpha && l < (j + 1) * alpha) ? pmod[l] : 0;
        if (st == TS_OK)
            st = ts_poly_mul_scalar(t, s_fr, scal);
        if (st == TS_OK)
            st = ts_poly_add(&b, &b, t);
    }
    ts_memzero(scal, sizeof scal);
    if (st != TS_OK)
        goto out_free;
    poly_free_secret(t);
    poly_free_secret(s_to);
    poly_free_secret(s_fr);
    *out = k;
    return TS_OK;
out_free:
    poly_free_secret(t);
    poly_free_secret(s_to);
    poly_free_secret(s_fr);
    ts_rlwe_ksk_free(k);
    return st;
}

ts_status_t ts_rlwe_relin_key_new(const ts_rlwe_sk_t *sk, uint32_t dnum, ts_prng_t *prng,
                                  ts_rlwe_ksk_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!sk)
        return TS_EINVAL;
    ts_poly_t *s2;
    ts_status_t st = ts_poly_new(sk->ring, sk->s->nq, sk->s->np, true, &s2);
    if (st != TS_OK)
        return st;
    st = ts_poly_mul(s2, sk->s, sk->s);
    if (st == TS_OK)
        st = ts_rlwe_ksk_new(sk, s2, dnum, prng, out);
    poly_free_secret(s2);
    return st;
}

/* k^-1 modulo 2N for an odd k (Newton's iteration modulo 2^64). */
static uint64_t galois_inverse(uint64_t k, uint32_t n)
{
    uint64_t inv = k;
    for (int i = 0; i < 6; i++)
        inv *= 2 - k * inv;
    return inv & (2 * (uint64_t)n - 1);
}

/*
 * A Galois key for k is held permuted: every limb of both halves is
 * sigma_k^-1 of the key's, so that the key switch applies sigma_k once to its
 * inner product (two polynomials) instead of to every digit (keyswitch.c):
 * sum_j sigma(d_j) key_j = sigma(sum_j d_j sigma^-1(key_j)) exactly. Applies
 * sigma_e to all of k's limbs (e = k^-1 to store, e = k to read back).
 */
static ts_status_t ksk_permute(ts_rlwe_ksk_t *k, uint64_t e)
{
    ts_ring_t *r = k->ring;
    ts_backend_t *be = ts_ring_backend(r);
    const uint32_t kp = ts_ring_p_count(r), nl = k->kq + kp;
    const size_t words = (size_t)nl * ts_ring_n(r);
    const uint32_t *idx = ts_ring_limb_index(r, k->kq, kp);
    uint64_t *tmp = NULL;
    ts_status_t st = ts_backend_alloc(be, words * sizeof(uint64_t), (void **)&tmp);
    for (uint32_t p = 0; p < 2 * k->ndig && st == TS_OK; p++) {
        ts_bk_batch_t in = {.data = k->data + p * words,
                            .npolys = 1,
                            .nlimbs = nl,
                            .poly_stride = words,
                            .mod_idx = idx};
        ts_bk_batch_t o = in;
        o.data = tmp;
        st = ts_backend_automorphism_ntt(be, ts_ring_bk(r), &o, &in, e);
        if (st == TS_OK)
            st = ts_backend_copy(be, in.data, tmp, words * sizeof(uint64_t));
    }
    if (tmp)
        ts_backend_buf_free(be, tmp);
    return st;
}

ts_status_t ts_rlwe_galois_key_new(const ts_rlwe_sk_t *sk, uint64_t k, uint32_t dnum, uint32_t kq,
                                   ts_prng_t *prng, ts_rlwe_ksk_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!sk)
        return TS_EINVAL;
    const uint64_t mask = 2 * (uint64_t)ts_ring_n(sk->ring) - 1;
    k &= mask;
    if (!(k & 1))
        return TS_EINVAL;
    ts_poly_t *sk_k;
    ts_status_t st = ts_poly_new(sk->ring, sk->s->nq, sk->s->np, true, &sk_k);
    if (st != TS_OK)
        return st;
    st = ts_poly_automorphism(sk_k, sk->s, k);
    if (st == TS_OK)
        st = ts_rlwe_ksk_new_capped(sk, sk_k, dnum, kq ? kq : ts_ring_q_count(sk->ring), prng, out);
    if (st == TS_OK) {
        (*out)->galois = k;
        st = ksk_permute(*out, galois_inverse(k, ts_ring_n(sk->ring)));
        if (st != TS_OK) {
            ts_rlwe_ksk_free(*out);
            *out = NULL;
        }
    }
    poly_free_secret(sk_k);
    return st;
}

void ts_rlwe_galois_keys_free(ts_rlwe_galois_keys_t *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->count; i++)
        ts_rlwe_ksk_free(g->keys[i]);
    ts_free(g->keys);
    ts_free(g->elements);
    ts_free(g);
}

ts_status_t ts_rlwe_galois_keys_new(const ts_rlwe_sk_t *sk, const int64_t *steps, size_t nsteps,
                                    bool conjugate, uint32_t dnum, ts_prng_t *prng,
                                    ts_rlwe_galois_keys_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!sk || !prng || (nsteps && !steps))
        return TS_EINVAL;
    size_t cap = nsteps + (conjugate ? 1 : 0);
    ts_rlwe_galois_keys_t *g = ts_calloc(1, sizeof *g);
    if (!g)
        return TS_ENOMEM;
    g->elements = ts_calloc(cap ? cap : 1, sizeof(uint64_t));
    g->keys = ts_calloc(cap ? cap : 1, sizeof(ts_rlwe_ksk_t *));
    if (!g->elements || !g->keys) {
        ts_rlwe_galois_keys_free(g);
        return TS_ENOMEM;
    }
    for (size_t i = 0; i < cap; i++) {
        uint64_t k = i < nsteps ? ts_ring_galois_rotate(sk->ring, steps[i])
                                : ts_ring_galois_conjugate(sk->ring);
        if (k == 1 || ts_rlwe_galois_keys_find(g, k))
            continue;
        ts_status_t st = ts_rlwe_galois_key_new(sk, k, dnum, 0, prng, &g->keys[g->count]);
        if (st != TS_OK) {
            ts_rlwe_galois_keys_free(g);
            return st;
        }
        g->elements[g->count++] = k;
    }
    *out = g;
    return TS_OK;
}

const ts_rlwe_ksk_t *ts_rlwe_galois_keys_find(const ts_rlwe_galois_keys_t *g, uint64_t k)
{
    if (!g)
        return NULL;
    for (size_t i = 0; i < g->count; i++)
        if (g->elements[i] == k)
            return g->keys[i];
    return NULL;
}

/* ------------------------------------------------------- serialized body */

static bool limb_in_body(bool level0, uint32_t nq, uint32_t j, uint32_t l)
{
    return !level0 || (j == 0 && (l == 0 || l >= nq));
}

void ts_rlwe_ksk_put_body(ts_writer_t *w, const ts_rlwe_ksk_t *k, bool level0)
{
    if (!w || !k)
        return;
    uint32_t kq = k->kq, np = ts_ring_p_count(k->ring), n = ts_ring_n(k->ring);
    const uint32_t *idx = ts_ring_limb_index(k->ring, kq, np);
    size_t pw = (size_t)(kq + np) * n;
    /* a Galois key is written as the key itself, not as held (ksk_permute) */
    const bool perm = k->galois > 1;
    ts_backend_t *be = ts_ring_backend(k->ring);
    uint64_t *tmp = NULL, *host = NULL; /* host: a limb staged off a device */
    if (perm && w->err == TS_OK &&
        ts_backend_alloc(be, n * sizeof(uint64_t), (void **)&tmp) != TS_OK)
        w->err = TS_ENOMEM;
    if (!be->host_memory && w->err == TS_OK && !(host = ts_malloc(n * sizeof(uint64_t))))
        w->err = TS_ENOMEM;
    for (uint32_t j = 0; j < k->ndig && w->err == TS_OK; j++)
        for (uint32_t l = 0; l < kq + np && w->err == TS_OK; l++) {
            if (!limb_in_body(level0, kq, j, l))
                continue;
            const uint64_t *limb = k->data + 2 * j * pw + (size_t)l * n;
            if (perm) {
                ts_bk_batch_t in = {.data = (uint64_t *)limb,
                                    .npolys = 1,
                                    .nlimbs = 1,
                                    .poly_stride = n,
                                    .mod_idx = idx + l};
                ts_bk_batch_t o = in;
                o.data = tmp;
                ts_status_t st =
                    ts_backend_automorphism_ntt(be, ts_ring_bk(k->ring), &o, &in, k->galois);
                if (st != TS_OK) {
                    w->err = st;
                    break;
                }
                limb = tmp;
            }
            if (host) {
                ts_status_t st = ts_backend_download(be, host, limb, n * sizeof(uint64_t));
                if (st != TS_OK) {
                    w->err = st;
                    break;
                }
                limb = host;
            }
            ts_put_packed(w, limb, n, ts_serial_width(ts_ring_modulus(k->ring, idx[l])->q));
        }
    if (tmp)
        ts_backend_buf_free(be, tmp);
    ts_free(host);
}

ts_status_t ts_rlwe_ksk_get_body(ts_reader_t *r, ts_ring_t *ring, uint32_t dnum, uint32_t kq,
                                 uint64_t galois, const uint8_t seed[TS_SEED_BYTES], bool level0,
                                 ts_rlwe_ksk_t **out)
{
    if (!r || !ring || !seed || !out)
        return TS_EINVAL;
    *out = NULL;
    if (r->err != TS_OK)
        return r->err;
    uint32_t alpha, lq = ts_ring_q_count(ring), np = ts_ring_p_count(ring), n = ts_ring_n(ring);
    if (ts_rlwe_ksk_shape(ring, dnum, &alpha) != TS_OK)
        return TS_EFORMAT;
    if (kq == 0)
        kq = lq;
    if (kq > lq)
        return TS_EFORMAT;
    const uint32_t ndig = (kq + alpha - 1) / alpha;
    const uint32_t *idx = ts_ring_limb_index(ring, kq, np);
    /* the exact size of what follows is known: check before allocating */
    size_t need = 0;
    for (uint32_t l = 0; l < kq + np; l++) {
        size_t b;
        if (!ts_serial_packed_bytes(n, ts_serial_width(ts_ring_modulus(ring, idx[l])->q), &b))
            return TS_EFORMAT;
        need += (level0 ? (l == 0 || l >= kq) : ndig) * b;
    }
    if (ts_reader_left(r) < need)
        return TS_EFORMAT;
    ts_rlwe_ksk_t *k = ts_calloc(1, sizeof(*k));
    if (!k)
        return TS_ENOMEM;
    k->refs = 1;
    k->dnum = dnum;
    k->alpha = alpha;
    k->kq = kq;
    k->ndig = ndig;
    k->galois = galois;
    memcpy(k->seed, seed, TS_SEED_BYTES);
    k->ring = ts_ring_ref(ring);
    size_t pw = (size_t)(kq + np) * n;
    ts_backend_t *be = ts_ring_backend(ring);
    uint64_t *host = NULL; /* a limb staged for a device */
    ts_status_t st = ts_backend_alloc(be, 2 * (size_t)ndig * pw * 8, (void **)&k->data);
    if (st == TS_OK && level0)
        st = ts_backend_zero(be, k->data, 2 * (size_t)ndig * pw * 8);
    if (st == TS_OK && !be->host_memory && !(host = ts_malloc(n * sizeof(uint64_t))))
        st = TS_ENOMEM;
    for (uint32_t j = 0; j < ndig && st == TS_OK; j++) {
        for (uint32_t l = 0; l < kq + np && r->err == TS_OK; l++) {
            uint64_t q = ts_ring_modulus(ring, idx[l])->q;
            if (!limb_in_body(level0, kq, j, l))
                continue;
            uint64_t *limb = k->data + 2 * j * pw + (size_t)l * n;
            ts_get_packed(r, host ? host : limb, n, ts_serial_width(q), q);
            if (host && r->err == TS_OK)
                r->err = ts_backend_upload(be, limb, host, n * sizeof(uint64_t));
        }
        st = r->err;
        ts_poly_t a = {.ring = ring,
                       .data = k->data + (2 * j + 1) * pw,
                       .nq = kq,
                       .np = np,
                       .cap_limbs = kq + np,
                       .is_ntt = true};
        if (st == TS_OK)
            st = ts_rlwe_expand_a(seed, j + 1, &a);
    }
    ts_free(host);
    if (st == TS_OK && galois > 1)
        st = ksk_permute(k, galois_inverse(galois, n));
    if (st != TS_OK) {
        ts_rlwe_ksk_free(k);
        return st;
    }
    *out = k;
    return TS_OK;
}
