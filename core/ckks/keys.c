/*
 * CKKS keys, encryption, decryption and the key-switching operations
 * (relinearization, rotations, conjugation, hoisted rotations), all on top of
 * core/rlwe (keys, seeded "a", hybrid key switching with dnum digits).
 */
#include <math.h>
#include <string.h>

#include "core/ckks/ckks_int.h"

struct ts_ckks_secret_key {
    ts_ckks_params_t *params;
    ts_rlwe_sk_t *sk;
    ts_poly_t *neg_s; /* -s over the Q primes, NTT form: c0 = m + e + a (-s) in one pass */
};

struct ts_ckks_public_key {
    ts_ckks_params_t *params;
    ts_rlwe_pk_t *pk;
};

struct ts_ckks_evalkeys {
    ts_ckks_params_t *params;
    ts_rlwe_ksk_t *relin;
    size_t ngal, capgal;
    uint64_t *gal_el;
    ts_rlwe_ksk_t **gal;
};

typedef struct {
    ts_rlwe_ks_t *ks;
    ts_rlwe_decomp_t *d;
    uint64_t p_mod_q[TS_CKKS_MAX_Q]; /* [P]_{q_i} (double hoisting: c0 enters as P c0) */
} ks_scratch_t;

/* ------------------------------------------------------------ scratch */

ts_status_t ts__ckks_ks_scratch_new(ts_ckks_evaluator_t *ev)
{
    if (ev->params->np == 0)
        return TS_OK; /* no key switching with this parameter set */
    ks_scratch_t *s = ts_calloc(1, sizeof(*s));
    if (!s)
        return TS_ENOMEM;
    ev->ks = s;
    const ts_ckks_params_t *p = ev->params;
    for (size_t i = 0; i < p->nq; i++) {
        const ts_modulus_t *m = &p->qmod[i];
        uint64_t v = 1;
        for (size_t j = 0; j < p->np; j++)
            v = ts_mod_mul(v, p->p[j] % m->q, m);
        s->p_mod_q[i] = v;
    }
    ts_status_t st = ts_rlwe_ks_new(ev->params->ring, (uint32_t)ev->params->dnum, &s->ks);
    if (st == TS_OK)
        st = ts_rlwe_decomp_new(s->ks, &s->d);
    return st;
}

void ts__ckks_ks_scratch_free(ts_ckks_evaluator_t *ev)
{
    ks_scratch_t *s = ev->ks;
    if (!s)
        return;
    ts_rlwe_decomp_free(s->d);
    ts_rlwe_ks_free(s->ks);
    ts_free(s);
    ev->ks = NULL;
}

/* --------------------------------------------------------------- keys */

ts_status_t ts_ckks_keygen_secret(ts_ckks_params_t *params, ts_prng_t *prng,
                                  ts_ckks_secret_key_t **out)
{
    if (!params || !prng || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_ckks_secret_key_t *k = ts_calloc(1, sizeof(*k));
    if (!k)
        return TS_ENOMEM;
    uint32_t h = params->secret == TS_CKKS_SECRET_SPARSE_TERNARY ? (uint32_t)params->h : 0;
    ts_status_t st = ts_rlwe_sk_new(params->ring, prng, h, &k->sk);
    if (st == TS_OK)
        st = ts_poly_new(params->ring, (uint32_t)params->nq, 0, true, &k->neg_s);
    if (st == TS_OK) {
        ts_bk_batch_t o = {.data = k->neg_s->data,
                           .npolys = 1,
                           .nlimbs = (uint32_t)params->nq,
                           .poly_stride = params->nq * params->n,
                           .mod_idx = ts_ring_limb_index(params->ring, (uint32_t)params->nq, 0)};
        ts_bk_batch_t x = o;
        x.data = k->sk->s->data; /* the Q limbs come first */
        st = ts_backend_neg(ts_ring_backend(params->ring), ts_ring_bk(params->ring), &o, &x);
    }
    if (st != TS_OK) {
        if (k->neg_s)
            ts_poly_reshape(k->neg_s, k->neg_s->cap_limbs, 0, true);
        ts_poly_free(k->neg_s);
        ts_rlwe_sk_free(k->sk);
        ts_free(k);
        return st;
    }
    k->params = ts_ckks_params_ref(params);
    *out = k;
    return TS_OK;
}

void ts_ckks_secret_key_free(ts_ckks_secret_key_t *sk)
{
    if (!sk)
        return;
    ts_rlwe_sk_free(sk->sk);
    if (sk->neg_s)
        ts_poly_reshape(sk->neg_s, sk->neg_s->cap_limbs, 0, true); /* zeroes */
    ts_poly_free(sk->neg_s);
    ts_ckks_params_free(sk->params);
    ts_free_secret(sk);
}

const ts_rlwe_sk_t *ts_ckks_secret_key_rlwe(const ts_ckks_secret_key_t *sk)
{
    return sk ? sk->sk : NULL;
}

ts_status_t ts_ckks_keygen_public(const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                  ts_ckks_public_key_t **out)
{
    if (!sk || !prng || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_ckks_public_key_t *k = ts_calloc(1, sizeof(*k));
    if (!k)
        return TS_ENOMEM;
    ts_status_t st = ts_rlwe_pk_new(sk->sk, prng, &k->pk);
    if (st != TS_OK) {
        ts_free(k);
        return st;
    }
    k->params = ts_ckks_params_ref(sk->params);
    *out = k;
    return TS_OK;
}

void ts_ckks_public_key_free(ts_ckks_public_key_t *pk)
{
    if (!pk)
        return;
    ts_rlwe_pk_free(pk->pk);
    ts_ckks_params_free(pk->params);
    ts_free(pk);
}

const ts_rlwe_pk_t *ts_ckks_public_key_rlwe(const ts_ckks_public_key_t *pk)
{
    return pk ? pk->pk : NULL;
}

ts_status_t ts_ckks_evalkeys_new(ts_ckks_params_t *params, ts_ckks_evalkeys_t **out)
{
    if (!params || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_ckks_evalkeys_t *ek = ts_calloc(1, sizeof(*ek));
    if (!ek)
        return TS_ENOMEM;
    ek->params = ts_ckks_params_ref(params);
    *out = ek;
    return TS_OK;
}

void ts_ckks_evalkeys_free(ts_ckks_evalkeys_t *ek)
{
    if (!ek)
        return;
    ts_rlwe_ksk_free(ek->relin);
    for (size_t i = 0; i < ek->ngal; i++)
        ts_rlwe_ksk_free(ek->gal[i]);
    ts_free(ek->gal);
    ts_free(ek->gal_el);
    ts_ckks_params_free(ek->params);
    ts_free(ek);
}

static ts_status_t check_keygen(const ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                ts_prng_t *prng)
{
    if (!ek || !sk || !prng)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(ek->params, sk->params))
        return TS_EMISMATCH;
    if (ek->params->np == 0)
        return TS_ENOTSUP; /* no special primes: no key switching */
    return TS_OK;
}

ts_status_t ts_ckks_evalkeys_gen_relin(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                       ts_prng_t *prng)
{
    ts_status_t st = check_keygen(ek, sk, prng);
    if (st != TS_OK)
        return st;
    ts_rlwe_ksk_t *k = NULL;
    st = ts_rlwe_relin_key_new(sk->sk, (uint32_t)ek->params->dnum, prng, &k);
    if (st != TS_OK)
        return st;
    ts_rlwe_ksk_free(ek->relin);
    ek->relin = k;
    return TS_OK;
}

static const ts_rlwe_ksk_t *find_galois(const ts_ckks_evalkeys_t *ek, uint64_t k)
{
    if (!ek)
        return NULL;
    for (size_t i = 0; i < ek->ngal; i++)
        if (ek->gal_el[i] == k)
            return ek->gal[i];
    return NULL;
}

/* Add (or widen) the key of element k so that it serves levels 0 .. level
 * (level < 0 or >= the top: a full key). An existing key that already serves
 * them is kept; a narrower one is replaced. */
static ts_status_t add_galois(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk, uint64_t k,
                              int level, ts_prng_t *prng)
{
    const uint32_t lq = (uint32_t)ek->params->nq;
    const uint32_t kq = (level < 0 || (uint32_t)level + 1 >= lq) ? lq : (uint32_t)level + 1;
    size_t at = ek->ngal;
    for (size_t i = 0; i < ek->ngal; i++)
        if (ek->gal_el[i] == k) {
            if (ek->gal[i]->kq >= kq)
                return TS_OK;
            at = i;
        }
    if (at == ek->ngal && ek->ngal == ek->capgal) {
        size_t cap = ek->capgal ? 2 * ek->capgal : 8;
        uint64_t *el = ts_realloc(ek->gal_el, sizeof(uint64_t) * cap);
        if (!el)
            return TS_ENOMEM;
        ek->gal_el = el;
        ts_rlwe_ksk_t **g = ts_realloc(ek->gal, sizeof(*g) * cap);
        if (!g)
            return TS_ENOMEM;
        ek->gal = g;
        ek->capgal = cap;
    }
    ts_rlwe_ksk_t *key = NULL;
    ts_status_t st = ts_rlwe_galois_key_new(sk->sk, k, (uint32_t)ek->params->dnum, kq, prng, &key);
    if (st != TS_OK)
        return st;
    if (at < ek->ngal) {
        ts_rlwe_ksk_free(ek->gal[at]);
    } else {
        ek->gal_el[at] = k;
        ek->ngal++;
    }
    ek->gal[at] = key;
    return TS_OK;
}

/* The Galois element of a left rotation by step on `slots` slots. */
static uint64_t rotation_element(const ts_ckks_params_t *p, int64_t step, size_t slots)
{
    int64_t s = step % (int64_t)slots;
    if (s < 0)
        s += (int64_t)slots;
    return ts_ring_galois_rotate(p->ring, s);
}

ts_status_t ts_ckks_evalkeys_gen_rotations(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                           const int64_t *steps, size_t count, ts_prng_t *prng)
{
    return ts_ckks_evalkeys_gen_rotations_at(ek, sk, steps, NULL, count, prng);
}

ts_status_t ts_ckks_evalkeys_gen_rotations_at(ts_ckks_evalkeys_t *ek,
                                              const ts_ckks_secret_key_t *sk, const int64_t *steps,
                                              const int *levels, size_t count, ts_prng_t *prng)
{
    ts_status_t st = check_keygen(ek, sk, prng);
    if (st != TS_OK)
        return st;
    if (count && !steps)
        return TS_EINVAL;
    size_t slots = (size_t)1 << ek->params->log_slots;
    for (size_t i = 0; i < count && st == TS_OK; i++) {
        if (steps[i] % (int64_t)slots == 0)
            continue;
        st = add_galois(ek, sk, rotation_element(ek->params, steps[i], slots),
                        levels ? levels[i] : -1, prng);
    }
    return st;
}

ts_status_t ts_ckks_evalkeys_gen_conjugate(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                           ts_prng_t *prng)
{
    ts_status_t st = check_keygen(ek, sk, prng);
    if (st != TS_OK)
        return st;
    return add_galois(ek, sk, ts_ring_galois_conjugate(ek->params->ring), -1, prng);
}

bool ts_ckks_evalkeys_has_relin(const ts_ckks_evalkeys_t *ek)
{
    return ek && ek->relin;
}

bool ts_ckks_evalkeys_has_rotation(const ts_ckks_evalkeys_t *ek, int64_t step)
{
    if (!ek)
        return false;
    size_t slots = (size_t)1 << ek->params->log_slots;
    if (step % (int64_t)slots == 0)
        return true;
    return find_galois(ek, rotation_element(ek->params, step, slots)) != NULL;
}

int ts_ckks_evalkeys_rotation_level(const ts_ckks_evalkeys_t *ek, int64_t step)
{
    if (!ek)
        return -1;
    size_t slots = (size_t)1 << ek->params->log_slots;
    if (step % (int64_t)slots == 0)
        return ek->params->nq - 1;
    const ts_rlwe_ksk_t *k = find_galois(ek, rotation_element(ek->params, step, slots));
    return k ? (int)k->kq - 1 : -1;
}

size_t ts_ckks_evalkeys_bytes(const ts_ckks_evalkeys_t *ek)
{
    if (!ek)
        return 0;
    size_t b = ts_rlwe_ksk_bytes(ek->relin);
    for (size_t i = 0; i < ek->ngal; i++)
        b += ts_rlwe_ksk_bytes(ek->gal[i]);
    return b;
}

bool ts_ckks_evalkeys_has_conjugate(const ts_ckks_evalkeys_t *ek)
{
    return ek && find_galois(ek, ts_ring_galois_conjugate(ek->params->ring));
}

const ts_rlwe_ksk_t *ts_ckks_evalkeys_relin(const ts_ckks_evalkeys_t *ek)
{
    return ek ? ek->relin : NULL;
}

const ts_rlwe_ksk_t *ts_ckks_evalkeys_galois(const ts_ckks_evalkeys_t *ek, uint64_t k)
{
    return find_galois(ek, k);
}

/* ------------------------------------------------- encrypt, decrypt */

static ts_backend_t *backend(const ts_ckks_params_t *p)
{
    return ts_ring_backend(p->ring);
}

/* A batch view of the first nq limbs of p. */
static ts_bk_batch_t view(const ts_ckks_params_t *p, const ts_poly_t *x, uint32_t nq)
{
    ts_bk_batch_t b = {.data = x->data,
                       .npolys = 1,
                       .nlimbs = nq,
                       .poly_stride = (size_t)nq * p->n,
                       .mod_idx = ts_ring_limb_index(p->ring, (uint32_t)p->nq, 0)};
    return b;
}

static ts_status_t check_pt_ct(const ts_ckks_params_t *p, const ts_ckks_plaintext_t *pt,
                               const ts_ckks_ciphertext_t *ct)
{
    if (!pt || !ct)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(p, pt->params) || !ts_ckks_params_equal(p, ct->params))
        return TS_EMISMATCH;
    if (!pt->poly->is_ntt)
        return TS_EINVAL;
    return TS_OK;
}

ts_status_t ts_ckks_flood(ts_ckks_ciphertext_t *ct, bool gauss, double param, ts_prng_t *prng)
{
    if (!ct || !prng || !(param >= 0) || (!gauss && param > 60) || (gauss && param > 0x1p60) ||
        ct->degree != 1)
        return TS_EINVAL;
    const ts_ckks_params_t *p = ct->params;
    ts_poly_t *c0 = ct->c[0];
    const size_t n = p->n;
    const uint64_t half = gauss ? 0 : (uint64_t)1 << (int)ceil(param), span = 2 * half + 1;
    int64_t *v = ts_malloc(n * sizeof(int64_t));
    ts_poly_t *e = NULL;
    ts_status_t st = v ? ts_poly_new(p->ring, c0->nq, 0, false, &e) : TS_ENOMEM;
    double z[2] = {0, 0};
    for (size_t k = 0; k < n && st == TS_OK; k++) {
        if (gauss) {
            if (k % 2 == 0) {
                double u1 = 0, u2 = 0;
                st = ts_prng_double(prng, &u1);
                if (st == TS_OK)
                    st = ts_prng_double(prng, &u2);
                double r = sqrt(-2.0 * log(1.0 - u1)); /* 1 - u1 in (0, 1] */
                z[0] = r * cos(2.0 * M_PI * u2);
                z[1] = r * sin(2.0 * M_PI * u2);
            }
            v[k] = (int64_t)nearbyint(param * z[k % 2]);
        } else {
            uint64_t u = 0;
            st = ts_prng_uniform(prng, span, &u);
            v[k] = (int64_t)u - (int64_t)half;
        }
    }
    z[0] = z[1] = 0;
    if (st == TS_OK)
        st = ts_poly_set_i64(e, v);
    if (st == TS_OK)
        st = ts_poly_ntt(e);
    if (st == TS_OK)
        st = ts_poly_add(c0, c0, e);
    if (v)
        ts_memzero(v, n * sizeof(int64_t));
    ts_free(v);
    if (e && ts_poly_zero(e) != TS_OK && st == TS_OK)
        st = TS_EINTERNAL; /* not wiped */
    ts_poly_free(e);
    return st;
}

ts_status_t ts_ckks_encrypt_pk(const ts_ckks_public_key_t *pk, const ts_ckks_plaintext_t *pt,
                               ts_prng_t *prng, ts_ckks_ciphertext_t *ct)
{
    if (!pk || !prng)
        return TS_EINVAL;
    const ts_ckks_params_t *p = pk->params;
    ts_status_t st = check_pt_ct(p, pt, ct);
    if (st != TS_OK)
        return st;
    uint32_t nq = pt->poly->nq;
    double scale = pt->scale;
    int log_slots = pt->log_slots;
    /* no allocation: the ternary v lives in ct's third polynomial (allocated
     * once per ciphertext object), each error is sampled straight into its
     * output polynomial, then c_i = NTT(e_i) + v pk_i by one multiply-add;
     * the randomness is drawn in the same order as before (v, e0, e1), so the
     * words are the same */
    st = ts__ckks_ct_ensure_c2(ct);
    if (st == TS_OK)
        st = ts__ckks_ct_reshape(ct, (int)nq - 1, 1);
    ts_poly_t *v = ct->c[2];
    /* v ternary; c0 = v b + e0 + m, c1 = v a + e1 */
    if (st == TS_OK)
        st = ts_poly_reshape(v, nq, 0, false);
    if (st == TS_OK)
        st = ts_poly_sample_ternary(v, prng);
    if (st == TS_OK)
        st = ts_poly_ntt(v);
    ts_backend_t *be = backend(p);
    ts_bk_ring_t *bk = ts_ring_bk(p->ring);
    ts_bk_batch_t vb = view(p, v, nq);
    const ts_poly_t *pkp[2] = {pk->pk->b, pk->pk->a};
    for (int i = 0; i < 2 && st == TS_OK; i++) {
        ts_bk_batch_t kb = view(p, pkp[i], nq), cb = view(p, ct->c[i], nq);
        st = ts_poly_reshape(ct->c[i], nq, 0, false);
        if (st == TS_OK)
            st = ts_poly_sample_gaussian(ct->c[i], prng, p->sigma);
        if (st == TS_OK)
            st = ts_poly_ntt(ct->c[i]);
        if (st == TS_OK)
            st = ts_backend_mul_add(be, bk, &cb, &vb, &kb);
    }
    if (st == TS_OK) {
        ts_bk_batch_t c0 = view(p, ct->c[0], nq), mb = view(p, pt->poly, nq);
        st = ts_backend_add(be, bk, &c0, &c0, &mb);
    }
    if (v)
        ts_poly_reshape(v, nq, 0, true); /* wipe the ephemeral secret */
    ct->degree = 1;
    if (st != TS_OK)
        return st;
    ct->scale = scale;
    ct->log_slots = log_slots;
    ct->seeded = false;
    return TS_OK;
}

ts_status_t ts_ckks_encrypt_sk(const ts_ckks_secret_key_t *sk, const ts_ckks_plaintext_t *pt,
                               ts_prng_t *prng, const uint8_t *seed, ts_ckks_ciphertext_t *ct)
{
    if (!sk || !prng)
        return TS_EINVAL;
    const ts_ckks_params_t *p = sk->params;
    ts_status_t st = check_pt_ct(p, pt, ct);
    if (st != TS_OK)
        return st;
    uint8_t s[TS_SEED_BYTES];
    if (seed)
        memcpy(s, seed, sizeof(s));
    else if ((st = ts_prng_bytes(prng, s, sizeof(s))) != TS_OK)
        return st;
    uint32_t nq = pt->poly->nq;
    double scale = pt->scale;
    int log_slots = pt->log_slots;
    ts_backend_t *be = backend(p);
    ts_bk_ring_t *bk = ts_ring_bk(p->ring);
    /* c1 = a (seeded), c0 = -a s + e + m */
    st = ts__ckks_ct_reshape(ct, (int)nq - 1, 1);
    if (st == TS_OK)
        st = ts_rlwe_expand_a(s, TS_CKKS_SEED_STREAM, ct->c[1]);
    if (st == TS_OK)
        st = ts_poly_sample_gaussian(ct->c[0], prng, p->sigma);
    if (st == TS_OK)
        st = ts_poly_ntt(ct->c[0]);
    ts_bk_batch_t c0 = view(p, ct->c[0], nq), c1 = view(p, ct->c[1], nq);
    ts_bk_batch_t sb = view(p, sk->sk->s, nq), mb = view(p, pt->poly, nq);
    if (st == TS_OK)
        st = ts_backend_add(be, bk, &c0, &c0, &mb);
    /* c0 - a s: use the mul_add on the negation of a s */
    ts_poly_t *t = NULL;
    if (st == TS_OK)
        st = ts_poly_new(p->ring, nq, 0, true, &t);
    if (st == TS_OK) {
        ts_bk_batch_t tb = view(p, t, nq);
        st = ts_backend_mul(be, bk, &tb, &c1, &sb);
        if (st == TS_OK)
            st = ts_backend_sub(be, bk, &c0, &c0, &tb);
        ts_poly_reshape(t, t->cap_limbs, 0, true);
    }
    ts_poly_free(t);
    if (st != TS_OK)
        return st;
    ct->scale = scale;
    ct->log_slots = log_slots;
    ct->seeded = true;
    memcpy(ct->seed, s, sizeof(s));
    return TS_OK;
}

static ts_status_t encrypt_values(ts_ckks_encoder_t *enc, const ts_ckks_secret_key_t *sk,
                                  const double complex *cv, const double *rv, size_t count,
                                  size_t slots, int level, double scale, ts_prng_t *prng,
                                  const uint8_t *seed, ts_ckks_ciphertext_t *ct)
{
    if (!enc || !sk || !prng || !ct || (!cv && !rv && count))
        return TS_EINVAL;
    const ts_ckks_params_t *p = sk->params;
    if (!ts_ckks_params_equal(p, ts__ckks_encoder_params(enc)) ||
        !ts_ckks_params_equal(p, ct->params))
        return TS_EMISMATCH;
    if (level < 0 || (size_t)level >= p->nq)
        return TS_ELEVEL;
    if (slots == 0)
        slots = (size_t)1 << p->log_slots;
    if (slots & (slots - 1) || slots > p->n / 2)
        return TS_EINVAL;
    uint8_t s[TS_SEED_BYTES];
    ts_status_t st = TS_OK;
    if (seed)
        memcpy(s, seed, sizeof(s));
    else if ((st = ts_prng_bytes(prng, s, sizeof(s))) != TS_OK)
        return st;
    /* c0 = m + e in coefficient form (the error sampled first and added to
     * the integer coefficients), one NTT per limb, then c0 - a s */
    int64_t *err = ts__ckks_encoder_err(enc);
    uint32_t nq = (uint32_t)level + 1;
    ts_backend_t *be = backend(p);
    st = ts__ckks_ct_reshape(ct, level, 1);
    if (st == TS_OK)
        st = ts_ring_sample_gaussian(prng, p->n, p->sigma, err);
    if (st == TS_OK)
        st = ts__ckks_encode_coeff(enc, cv, rv, count, slots, level, scale, ct->c[0],
                                   be->host_memory ? err : NULL);
    if (st != TS_OK)
        goto out;
    if (!be->host_memory) {
        /* device memory: add the error as a polynomial */
        ts_poly_t *t = NULL;
        st = ts_poly_new(p->ring, nq, 0, false, &t);
        if (st == TS_OK)
            st = ts_poly_set_i64(t, err);
        if (st == TS_OK)
            st = ts_poly_add(ct->c[0], ct->c[0], t);
        ts_poly_free(t);
    }
    if (st == TS_OK)
        st = ts_poly_ntt(ct->c[0]);
    if (st == TS_OK)
        st = ts_rlwe_expand_a(s, TS_CKKS_SEED_STREAM, ct->c[1]);
    if (st != TS_OK)
        goto out;
    /* c0 += a (-s) */
    ts_bk_ring_t *bk = ts_ring_bk(p->ring);
    ts_bk_batch_t c0 = view(p, ct->c[0], nq), c1 = view(p, ct->c[1], nq);
    ts_bk_batch_t nsb = view(p, sk->neg_s, nq);
    st = ts_backend_mul_add(be, bk, &c0, &c1, &nsb);
    if (st != TS_OK)
        goto out;
    ct->scale = scale;
    int ls = 0;
    while (((size_t)1 << ls) < slots)
        ls++;
    ct->log_slots = ls;
    ct->seeded = true;
    memcpy(ct->seed, s, sizeof(s));
out:
    ts_memzero(err, sizeof(int64_t) * p->n);
    return st;
}

ts_status_t ts_ckks_encrypt_sk_values(ts_ckks_encoder_t *enc, const ts_ckks_secret_key_t *sk,
                                      const double complex *values, size_t count, size_t slots,
                                      int level, double scale, ts_prng_t *prng, const uint8_t *seed,
                                      ts_ckks_ciphertext_t *ct)
{
    return encrypt_values(enc, sk, values, NULL, count, slots, level, scale, prng, seed, ct);
}

ts_status_t ts_ckks_encrypt_sk_real(ts_ckks_encoder_t *enc, const ts_ckks_secret_key_t *sk,
                                    const double *values, size_t count, size_t slots, int level,
                                    double scale, ts_prng_t *prng, const uint8_t *seed,
                                    ts_ckks_ciphertext_t *ct)
{
    return encrypt_values(enc, sk, NULL, values, count, slots, level, scale, prng, seed, ct);
}

bool ts_ckks_ciphertext_seed(const ts_ckks_ciphertext_t *ct, uint8_t seed[TS_SEED_BYTES])
{
    if (!ct || !ct->seeded || ct->degree != 1)
        return false;
    if (seed)
        memcpy(seed, ct->seed, TS_SEED_BYTES);
    return true;
}

ts_status_t ts_ckks_decrypt(const ts_ckks_secret_key_t *sk, const ts_ckks_ciphertext_t *ct,
                            ts_ckks_plaintext_t *pt)
{
    if (!sk)
        return TS_EINVAL;
    const ts_ckks_params_t *p = sk->params;
    if (!pt || !ct)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(p, pt->params) || !ts_ckks_params_equal(p, ct->params))
        return TS_EMISMATCH;
    if (ct->degree < 1 || ct->degree > 2)
        return TS_EINVAL;
    for (int i = 0; i <= ct->degree; i++)
        if (!ct->c[i] || !ct->c[i]->is_ntt || ct->c[i]->np != 0 || ct->c[i]->nq != ct->c[0]->nq)
            return TS_EINVAL;
    uint32_t nq = ct->c[0]->nq;
    ts_status_t st = ts_poly_reshape(pt->poly, nq, 0, true);
    if (st != TS_OK)
        return st;
    ts_backend_t *be = backend(p);
    ts_bk_ring_t *bk = ts_ring_bk(p->ring);
    ts_bk_batch_t m = view(p, pt->poly, nq), sb = view(p, sk->sk->s, nq);
    ts_bk_batch_t c0 = view(p, ct->c[0], nq);
    /* Horner in s: ((c2 s) + c1) s + c0 */
    ts_bk_batch_t top = view(p, ct->c[ct->degree], nq);
    st = ts_backend_mul(be, bk, &m, &top, &sb);
    for (int i = ct->degree - 1; i >= 1 && st == TS_OK; i--) {
        ts_bk_batch_t ci = view(p, ct->c[i], nq);
        st = ts_backend_add(be, bk, &m, &m, &ci);
        if (st == TS_OK)
            st = ts_backend_mul(be, bk, &m, &m, &sb);
    }
    if (st == TS_OK)
        st = ts_backend_add(be, bk, &m, &m, &c0);
    if (st != TS_OK)
        return st;
    pt->scale = ct->scale;
    pt->log_slots = ct->log_slots;
    return TS_OK;
}

ts_status_t ts_ckks_decrypt_coeffs(const ts_ckks_secret_key_t *sk, ts_ckks_evaluator_t *ev,
                                   const ts_ckks_ciphertext_t *ct, int64_t *out)
{
    if (!sk || !ev || !ct || !out)
        return TS_EINVAL;
    ts_ckks_params_t *p = ev->params;
    size_t N = ts_ckks_params_n(p);
    uint64_t q0 = p->q[0];
    ts_ckks_ciphertext_t *c = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ts_poly_t *poly = NULL;
    uint64_t *w = ts_malloc(N * sizeof *w);
    ts_status_t st = w ? ts_ckks_ciphertext_new(p, 0, &c) : TS_ENOMEM;
    if (st == TS_OK)
        st = ts_ckks_drop_to_level(ev, ct, 0, c);
    if (st == TS_OK)
        st = ts_ckks_plaintext_new(p, 0, &pt);
    if (st == TS_OK)
        st = ts_ckks_decrypt(sk, c, pt);
    if (st == TS_OK)
        st = ts_poly_clone(ts_ckks_plaintext_poly(pt), &poly);
    if (st == TS_OK && poly->is_ntt)
        st = ts_poly_intt(poly);
    if (st == TS_OK)
        st = ts_poly_download(poly, w);
    for (size_t i = 0; st == TS_OK && i < N; i++)
        out[i] = w[i] > q0 / 2 ? -(int64_t)(q0 - w[i]) : (int64_t)w[i];
    if (w)
        ts_memzero(w, N * sizeof *w);
    ts_free(w);
    if (poly)
        ts_poly_zero(poly); /* through the backend: its memory may be a device's */
    ts_poly_free(poly);
    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(c);
    return st;
}

/* ------------------------------------------------------ key switching */

static ts_status_t check_unary(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                               const ts_ckks_ciphertext_t *out)
{
    if (!ev || !a || !out)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(ev->params, out->params))
        return TS_EMISMATCH;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st != TS_OK)
        return st;
    if (!ev->ks)
        return TS_ENOKEY;
    return TS_OK;
}

ts_status_t ts_ckks_relinearize(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_unary(ev, a, out);
    if (st != TS_OK)
        return st;
    if (a->degree == 1)
        return ts_ckks_ciphertext_copy(out, a);
    const ts_rlwe_ksk_t *key = ts_ckks_evalkeys_relin(ev->keys);
    if (!key)
        return TS_ENOKEY;
    ks_scratch_t *s = ev->ks;
    uint32_t nq = a->c[0]->nq;
    ts_poly_t *u0 = ev->tmp[0], *u1 = ev->tmp[1];
    /* the switch's ModDown writes every word of u0, u1 */
    st = ts_poly_reshape_uninit(u0, nq, 0, true);
    if (st == TS_OK)
        st = ts_poly_reshape_uninit(u1, nq, 0, true);
    if (st == TS_OK)
        st = ts_rlwe_keyswitch(s->ks, a->c[2], 1, key, u0, u1);
    /* out = (a0 + u0, a1 + u1), read from a (no copy of a's three polys first) */
    if (st == TS_OK && out != a)
        st = ts__ckks_ct_shape(out, (int)nq - 1, 1);
    if (st != TS_OK)
        return st;
    ts_bk_batch_t o0 = ts__ckks_view(ev, out->c[0], 0, nq),
                  o1 = ts__ckks_view(ev, out->c[1], 0, nq);
    ts_bk_batch_t x0 = ts__ckks_view(ev, a->c[0], 0, nq), x1 = ts__ckks_view(ev, a->c[1], 0, nq);
    ts_bk_batch_t b0 = ts__ckks_view(ev, u0, 0, nq), b1 = ts__ckks_view(ev, u1, 0, nq);
    st = ts_backend_add(ev->be, ev->bk, &o0, &x0, &b0);
    if (st == TS_OK)
        st = ts_backend_add(ev->be, ev->bk, &o1, &x1, &b1);
    out->degree = 1;
    out->scale = a->scale;
    out->log_slots = a->log_slots;
    out->seeded = false;
    return st;
}

ts_status_t ts_ckks_keyswitch(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_rlwe_ksk_t *key, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_unary(ev, a, out);
    if (st != TS_OK)
        return st;
    if (!key)
        return TS_ENOKEY;
    if (a->degree != 1)
        return TS_EINVAL;
    if (key->galois != 0)
        return TS_EMISMATCH;
    ks_scratch_t *s = ev->ks;
    uint32_t nq = a->c[0]->nq;
    ts_poly_t *u0 = ev->tmp[0], *u1 = ev->tmp[1];
    /* the switch's ModDown writes every word of u0, u1 */
    st = ts_poly_reshape_uninit(u0, nq, 0, true);
    if (st == TS_OK)
        st = ts_poly_reshape_uninit(u1, nq, 0, true);
    if (st == TS_OK)
        st = ts_rlwe_keyswitch(s->ks, a->c[1], 1, key, u0, u1);
    double scale = a->scale;
    int log_slots = a->log_slots;
    /* out = (a0 + u0, u1), a0 read from a (no copy of a first) */
    if (st == TS_OK && out != a)
        st = ts__ckks_ct_shape(out, (int)nq - 1, 1);
    if (st != TS_OK)
        return st;
    ts_bk_batch_t o0 = ts__ckks_view(ev, out->c[0], 0, nq),
                  o1 = ts__ckks_view(ev, out->c[1], 0, nq);
    ts_bk_batch_t x0 = ts__ckks_view(ev, a->c[0], 0, nq);
    ts_bk_batch_t b0 = ts__ckks_view(ev, u0, 0, nq), b1 = ts__ckks_view(ev, u1, 0, nq);
    st = ts_backend_add(ev->be, ev->bk, &o0, &x0, &b0);
    if (st == TS_OK)
        st = ts_backend_copy(ev->be, o1.data, b1.data, sizeof(uint64_t) * nq * ev->params->n);
    out->scale = scale;
    out->log_slots = log_slots;
    out->seeded = false;
    return st;
}

ts_status_t ts_ckks_mul_relin(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out)
{
    if (ev && !ts_ckks_evalkeys_relin(ev->keys))
        return TS_ENOKEY;
    ts_status_t st = ts_ckks_mul(ev, a, b, out);
    if (st == TS_OK)
        st = ts_ckks_relinearize(ev, out, out);
    return st;
}

/* out = (sigma_k(c0) + u0, u1) with (u0, u1) from the decomposition in ev->ks. */
static ts_status_t apply_galois(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, uint64_t k,
                                bool decomposed, ts_ckks_ciphertext_t *out)
{
    const ts_rlwe_ksk_t *key = ts_ckks_evalkeys_galois(ev->keys, k);
    if (!key)
        return TS_ENOKEY;
    ks_scratch_t *s = ev->ks;
    uint32_t nq = a->c[0]->nq;
    ts_poly_t *u0 = ev->tmp[0], *u1 = ev->tmp[1], *r0 = ev->tmp[2];
    /* the switch's ModDown writes every word of u0, u1, the automorphism r0's */
    ts_status_t st = ts_poly_reshape_uninit(u0, nq, 0, true);
    if (st == TS_OK)
        st = ts_poly_reshape_uninit(u1, nq, 0, true);
    if (st == TS_OK)
        st = decomposed ? ts_rlwe_keyswitch_hoisted(s->ks, s->d, k, key, u0, u1)
                        : ts_rlwe_keyswitch(s->ks, a->c[1], k, key, u0, u1);
    if (st == TS_OK)
        st = ts_poly_reshape_uninit(r0, nq, 0, true);
    if (st == TS_OK)
        st = ts_poly_automorphism(r0, a->c[0], k);
    if (st != TS_OK)
        return st;
    double scale = a->scale;
    int log_slots = a->log_slots;
    st = ts__ckks_ct_shape(out, (int)nq - 1, 1); /* both written in full below */
    ts_bk_batch_t o0 = ts__ckks_view(ev, out->c[0], 0, nq),
                  o1 = ts__ckks_view(ev, out->c[1], 0, nq);
    ts_bk_batch_t b0 = ts__ckks_view(ev, u0, 0, nq), b1 = ts__ckks_view(ev, u1, 0, nq);
    ts_bk_batch_t rb = ts__ckks_view(ev, r0, 0, nq);
    if (st == TS_OK)
        st = ts_backend_add(ev->be, ev->bk, &o0, &rb, &b0);
    if (st == TS_OK)
        st = ts_backend_copy(ev->be, o1.data, b1.data, sizeof(uint64_t) * nq * ev->params->n);
    out->scale = scale;
    out->log_slots = log_slots;
    out->seeded = false;
    return st;
}

static ts_status_t check_rot(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                             const ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_unary(ev, a, out);
    if (st != TS_OK)
        return st;
    if (a->degree != 1)
        return TS_EINVAL;
    return TS_OK;
}

ts_status_t ts_ckks_rotate(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int64_t step,
                           ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_rot(ev, a, out);
    if (st != TS_OK)
        return st;
    size_t slots = (size_t)1 << a->log_slots;
    if (step % (int64_t)slots == 0)
        return ts_ckks_ciphertext_copy(out, a);
    return apply_galois(ev, a, rotation_element(ev->params, step, slots), false, out);
}

ts_status_t ts_ckks_conjugate(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_rot(ev, a, out);
    if (st != TS_OK)
        return st;
    return apply_galois(ev, a, ts_ring_galois_conjugate(ev->params->ring), false, out);
}

ts_status_t ts_ckks_trace_steps(const ts_ckks_params_t *p, size_t period, int64_t *steps,
                                size_t *count)
{
    if (!p || !count || period < 1 || (period & (period - 1)))
        return TS_EINVAL;
    size_t half = ts_ckks_params_n(p) / 2, n = 0, cap = steps ? *count : 0;
    for (size_t s = period; s < half; s *= 2) {
        if (n < cap)
            steps[n] = (int64_t)s;
        n++;
    }
    bool fits = !steps || n <= cap;
    *count = n;
    return fits ? TS_OK : TS_ERANGE;
}

ts_status_t ts_ckks_trace_keys(const ts_ckks_evaluator_t *ev, int level, size_t period,
                               int64_t *missing)
{
    if (!ev)
        return TS_EINVAL;
    size_t half = ts_ckks_params_n(ev->params) / 2;
    if (period < 1 || (period & (period - 1)) || period > half)
        return TS_EINVAL;
    for (size_t s = period; s < half; s *= 2)
        if (!ev->keys || ts_ckks_evalkeys_rotation_level(ev->keys, (int64_t)s) < level) {
            if (missing)
                *missing = (int64_t)s;
            return TS_ENOKEY;
        }
    return TS_OK;
}

ts_status_t ts_ckks_trace(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *ct, size_t period)
{
    ts_status_t st = check_rot(ev, ct, ct);
    if (st != TS_OK)
        return st;
    size_t half = ts_ckks_params_n(ev->params) / 2;
    int level = ts__ckks_level(ct->c[0]);
    /* every key first: ct is left untouched without them */
    if ((st = ts_ckks_trace_keys(ev, level, period, NULL)) != TS_OK)
        return st;
    uint64_t g = half / period, ginv[TS_CKKS_MAX_Q];
    for (int l = 0; l <= level; l++) {
        uint64_t q = ev->params->q[l];
        ginv[l] = ts_mod_inv(g % q, q);
    }
    ts_ckks_ciphertext_t *r = NULL;
    if (period < half)
        st = ts_ckks_ciphertext_new(ev->params, level, &r);
    for (int i = 0; i < 2 && st == TS_OK && period < half; i++)
        st = ts_poly_mul_scalar(ct->c[i], ct->c[i], ginv);
    if (st == TS_OK)
        ct->log_slots = ts_ckks_params_log_n(ev->params) - 1;
    for (size_t s = period; s < half && st == TS_OK; s *= 2) {
        st = ts_ckks_rotate(ev, ct, (int64_t)s, r);
        if (st == TS_OK)
            st = ts_ckks_add(ev, ct, r, ct);
    }
    ts_ckks_ciphertext_free(r);
    return st;
}

ts_status_t ts_ckks_rotate_hoisted(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                   const int64_t *steps, size_t count,
                                   ts_ckks_ciphertext_t *const *outs)
{
    if (count && (!steps || !outs))
        return TS_EINVAL;
    ts_status_t st = check_unary(ev, a, a);
    if (st != TS_OK)
        return st;
    if (a->degree != 1)
        return TS_EINVAL;
    size_t slots = (size_t)1 << a->log_slots;
    for (size_t i = 0; i < count; i++) {
        if (!outs[i] || outs[i] == a)
            return TS_EINVAL;
        if (!ts_ckks_params_equal(ev->params, outs[i]->params))
            return TS_EMISMATCH;
        if (steps[i] % (int64_t)slots != 0 &&
            !ts_ckks_evalkeys_galois(ev->keys, rotation_element(ev->params, steps[i], slots)))
            return TS_ENOKEY;
    }
    bool decomposed = false;
    for (size_t i = 0; i < count && st == TS_OK; i++) {
        if (steps[i] % (int64_t)slots == 0) {
            st = ts_ckks_ciphertext_copy(outs[i], a);
            continue;
        }
        if (!decomposed) {
            st = ts_rlwe_decompose(((ks_scratch_t *)ev->ks)->ks, a->c[1],
                                   ((ks_scratch_t *)ev->ks)->d);
            decomposed = true;
            if (st != TS_OK)
                break;
        }
        st = apply_galois(ev, a, rotation_element(ev->params, steps[i], slots), true, outs[i]);
    }
    return st;
}

/* The fields of a (nq, np) NTT-form shape, values kept (every word is overwritten next). */
static void set_shape(ts_poly_t *x, uint32_t nq, uint32_t np)
{
    x->nq = nq;
    x->np = np;
    x->is_ntt = true;
}

ts_status_t ts__ckks_rotate_hoisted_qp(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                       const int64_t *steps, size_t count, ts_poly_t *const *v)
{
    if (count && (!steps || !v))
        return TS_EINVAL;
    ts_status_t st = check_rot(ev, a, a);
    if (st != TS_OK)
        return st;
    ks_scratch_t *s = ev->ks;
    const ts_ckks_params_t *p = ev->params;
    const size_t slots = (size_t)1 << a->log_slots;
    const uint32_t nq = a->c[0]->nq, np = (uint32_t)p->np;
    bool any = false;
    for (size_t i = 0; i < count; i++) {
        if (!v[2 * i] || !v[2 * i + 1] || v[2 * i] == v[2 * i + 1])
            return TS_EINVAL;
        if (v[2 * i]->ring != p->ring || v[2 * i + 1]->ring != p->ring)
            return TS_EMISMATCH;
        if (v[2 * i]->cap_limbs < nq + np || v[2 * i + 1]->cap_limbs < nq + np)
            return TS_ELEVEL;
        if (steps[i] % (int64_t)slots == 0)
            continue;
        any = true;
        if (!ts_ckks_evalkeys_galois(ev->keys, rotation_element(p, steps[i], slots)))
            return TS_ENOKEY;
    }
    if (any)
        st = ts_rlwe_decompose(s->ks, a->c[1], s->d);
    ts_poly_t *r0 = ev->tmp[2];
    for (size_t i = 0; i < count && st == TS_OK; i++) {
        ts_poly_t *v0 = v[2 * i], *v1 = v[2 * i + 1];
        ts_bk_batch_t vb = ts__ckks_view(ev, v0, 0, nq);
        if (steps[i] % (int64_t)slots == 0) {
            /* (P c0, P c1): the Q limbs times [P]_{q_i}, the P limbs 0 */
            for (int c = 0; c < 2 && st == TS_OK; c++) {
                ts_poly_t *vc = c ? v1 : v0;
                ts_bk_batch_t ob = ts__ckks_view(ev, vc, 0, nq),
                              ib = ts__ckks_view(ev, a->c[c], 0, nq);
                set_shape(vc, nq, np);
                st = ts_backend_mul_scalar(ev->be, ev->bk, &ob, &ib, s->p_mod_q);
                if (st == TS_OK)
                    st = ts_backend_zero(ev->be, vc->data + (size_t)nq * p->n,
                                         sizeof(uint64_t) * np * p->n);
            }
            continue;
        }
        const uint64_t k = rotation_element(p, steps[i], slots);
        st = ts_rlwe_keyswitch_hoisted_qp(s->ks, s->d, k, ts_ckks_evalkeys_galois(ev->keys, k), v0,
                                          v1);
        /* + P sigma_k(c0): sigma_k(c0) [P]_{q_i} on the Q limbs (0 on the P limbs) */
        set_shape(r0, nq, 0);
        ts_bk_batch_t rb = ts__ckks_view(ev, r0, 0, nq);
        if (st == TS_OK)
            st = ts_poly_automorphism(r0, a->c[0], k);
        if (st == TS_OK)
            st = ts_backend_mul_scalar(ev->be, ev->bk, &rb, &rb, s->p_mod_q);
        if (st == TS_OK)
            st = ts_backend_add(ev->be, ev->bk, &vb, &vb, &rb);
    }
    return st;
}

ts_status_t ts__ckks_rotate_qp_acc(ts_ckks_evaluator_t *ev, int64_t step, size_t slots,
                                   ts_poly_t *t0, ts_poly_t *t1, ts_poly_t *w0, ts_poly_t *w1,
                                   ts_poly_t *acc0, ts_poly_t *acc1, bool accumulate)
{
    if (!ev || !t0 || !t1 || !w0 || !w1 || !acc0 || !acc1 || !slots)
        return TS_EINVAL;
    if (!ev->ks)
        return TS_ENOKEY;
    ks_scratch_t *s = ev->ks;
    const ts_ckks_params_t *p = ev->params;
    if (step % (int64_t)slots == 0)
        return TS_EINVAL;
    const uint64_t k = rotation_element(p, step, slots);
    const ts_rlwe_ksk_t *key = ts_ckks_evalkeys_galois(ev->keys, k);
    if (!key)
        return TS_ENOKEY;
    const uint32_t nq = t0->nq, np = (uint32_t)p->np;
    if (t0->np != np || t1->nq != nq || t1->np != np || acc0->cap_limbs < nq + np ||
        acc1->cap_limbs < nq + np)
        return TS_ELEVEL;
    /* t1 down to Q_l (in place), decomposed, switched without ModDown */
    ts_status_t st = ts_rlwe_moddown(s->ks, t1, NULL, t1, NULL);
    if (st == TS_OK)
        st = ts_rlwe_decompose(s->ks, t1, s->d);
    if (st == TS_OK)
        st = ts_rlwe_keyswitch_hoisted_qp(s->ks, s->d, k, key, w0, w1);
    if (st != TS_OK)
        return st;
    const uint32_t *idx = ts_ring_limb_index(p->ring, nq, np);
    ts_bk_batch_t qp = {
        .npolys = 1, .nlimbs = nq + np, .poly_stride = (size_t)(nq + np) * p->n, .mod_idx = idx};
    ts_bk_batch_t a0 = qp, a1 = qp, b0 = qp, b1 = qp, x0 = qp;
    a0.data = acc0->data;
    a1.data = acc1->data;
    b0.data = w0->data;
    b1.data = w1->data;
    x0.data = t0->data;
    if (accumulate) {
        st = ts_backend_add(ev->be, ev->bk, &a0, &a0, &b0);
        if (st == TS_OK)
            st = ts_backend_add(ev->be, ev->bk, &a1, &a1, &b1);
    } else {
        set_shape(acc0, nq, np);
        set_shape(acc1, nq, np);
        const size_t bytes = sizeof(uint64_t) * (nq + np) * p->n;
        st = ts_backend_copy(ev->be, acc0->data, w0->data, bytes);
        if (st == TS_OK)
            st = ts_backend_copy(ev->be, acc1->data, w1->data, bytes);
    }
    /* + sigma_k(t0) over Q_l * P (w0 as scratch) */
    if (st == TS_OK)
        st = ts_backend_automorphism_ntt(ev->be, ev->bk, &b0, &x0, k);
    if (st == TS_OK)
        st = ts_backend_add(ev->be, ev->bk, &a0, &a0, &b0);
    return st;
}

ts_status_t ts__ckks_moddown(ts_ckks_evaluator_t *ev, const ts_poly_t *v0, const ts_poly_t *v1,
                             ts_poly_t *u0, ts_poly_t *u1)
{
    if (!ev || !ev->ks)
        return ev ? TS_ENOKEY : TS_EINVAL;
    return ts_rlwe_moddown(((ks_scratch_t *)ev->ks)->ks, v0, v1, u0, u1);
}

/* ------------------------------------------- deserialization (serialize.c) */

ts_status_t ts__ckks_secret_key_wrap(ts_ckks_params_t *params, ts_rlwe_sk_t *rsk,
                                     ts_ckks_secret_key_t **out)
{
    *out = NULL;
    ts_ckks_secret_key_t *k = ts_calloc(1, sizeof(*k));
    if (!k) {
        ts_rlwe_sk_free(rsk);
        return TS_ENOMEM;
    }
    k->sk = rsk;
    ts_status_t st = ts_poly_new(params->ring, (uint32_t)params->nq, 0, true, &k->neg_s);
    if (st == TS_OK) {
        ts_bk_batch_t o = {.data = k->neg_s->data,
                           .npolys = 1,
                           .nlimbs = (uint32_t)params->nq,
                           .poly_stride = params->nq * params->n,
                           .mod_idx = ts_ring_limb_index(params->ring, (uint32_t)params->nq, 0)};
        ts_bk_batch_t x = o;
        x.data = k->sk->s->data;
        st = ts_backend_neg(ts_ring_backend(params->ring), ts_ring_bk(params->ring), &o, &x);
    }
    k->params = ts_ckks_params_ref(params);
    if (st != TS_OK) {
        ts_ckks_secret_key_free(k);
        return st;
    }
    *out = k;
    return TS_OK;
}

ts_status_t ts__ckks_public_key_wrap(ts_ckks_params_t *params, ts_rlwe_pk_t *rpk,
                                     ts_ckks_public_key_t **out)
{
    *out = NULL;
    ts_ckks_public_key_t *k = ts_calloc(1, sizeof(*k));
    if (!k) {
        ts_rlwe_pk_free(rpk);
        return TS_ENOMEM;
    }
    k->pk = rpk;
    k->params = ts_ckks_params_ref(params);
    *out = k;
    return TS_OK;
}

ts_ckks_params_t *ts__ckks_secret_key_params(const ts_ckks_secret_key_t *sk)
{
    return sk->params;
}
ts_ckks_params_t *ts__ckks_public_key_params(const ts_ckks_public_key_t *pk)
{
    return pk->params;
}
ts_ckks_params_t *ts__ckks_evalkeys_params(const ts_ckks_evalkeys_t *ek)
{
    return ek->params;
}
size_t ts__ckks_evalkeys_galois_count(const ts_ckks_evalkeys_t *ek)
{
    return ek->ngal;
}
const ts_rlwe_ksk_t *ts__ckks_evalkeys_galois_at(const ts_ckks_evalkeys_t *ek, size_t i)
{
    return i < ek->ngal ? ek->gal[i] : NULL;
}

void ts__ckks_evalkeys_put_relin(ts_ckks_evalkeys_t *ek, ts_rlwe_ksk_t *k)
{
    ts_rlwe_ksk_free(ek->relin);
    ek->relin = k;
}

ts_status_t ts__ckks_evalkeys_put_galois(ts_ckks_evalkeys_t *ek, ts_rlwe_ksk_t *k)
{
    for (size_t i = 0; i < ek->ngal; i++) {
        if (ek->gal_el[i] == k->galois) { /* replace */
            ts_rlwe_ksk_free(ek->gal[i]);
            ek->gal[i] = k;
            return TS_OK;
        }
    }
    if (ek->ngal == ek->capgal) {
        size_t cap = ek->capgal ? 2 * ek->capgal : 8;
        uint64_t *el = ts_realloc(ek->gal_el, sizeof(uint64_t) * cap);
        if (!el) {
            ts_rlwe_ksk_free(k);
            return TS_ENOMEM;
        }
        ek->gal_el = el;
        ts_rlwe_ksk_t **g = ts_realloc(ek->gal, sizeof(*g) * cap);
        if (!g) {
            ts_rlwe_ksk_free(k);
            return TS_ENOMEM;
        }
        ek->gal = g;
        ek->capgal = cap;
    }
    ek->gal_el[ek->ngal] = k->galois;
    ek->gal[ek->ngal] = k;
    ek->ngal++;
    return TS_OK;
}
