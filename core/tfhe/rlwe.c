/*
 * core/tfhe/rlwe.c — RLWE and RGSW ciphertexts of the blind-rotation ring
 * Z_Q[X]/(X^N + 1), signed gadget decomposition, the RGSW x RLWE external
 * product in NTT form, CMux and sample extraction (CGGI, J. Cryptology 2020,
 * sections 3.3-3.4 and 4.2).
 */
#include <string.h>

#include "core/ring/ring.h"
#include "core/tfhe/tfhe_int.h"

/* ------------------------------------------------------------ sampling */

ts_status_t ts__tfhe_uniform(ts_prng_t *prng, uint64_t q, uint64_t *out, size_t n)
{
    uint64_t mask = q - 1;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    size_t done = 0;
    while (done < n) {
        ts_status_t st = ts_prng_bytes(prng, out + done, (n - done) * sizeof(uint64_t));
        if (st != TS_OK)
            return st;
        size_t w = done;
        for (size_t i = done; i < n; i++) {
            uint64_t v = out[i] & mask;
            if (v < q)
                out[w++] = v;
        }
        done = w;
    }
    return TS_OK;
}

static ts_status_t gauss_poly(ts_prng_t *prng, double sigma, uint64_t q, uint64_t *out, size_t n)
{
    if (sigma > 64 || sigma == 0) {
        for (size_t i = 0; i < n; i++) {
            int64_t e;
            ts_status_t st = ts__tfhe_gauss(prng, sigma, &e);
            if (st != TS_OK)
                return st;
            out[i] = ts__tfhe_from_signed(e, q);
        }
        return TS_OK;
    }
    /* the int64 samples are written over `out` in place, then reduced */
    int64_t *e = (int64_t *)out;
    ts_status_t st = ts_ring_sample_gaussian(prng, n, sigma, e);
    if (st != TS_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        out[i] = ts__tfhe_from_signed(e[i], q);
    return TS_OK;
}

/* ------------------------------------------------------------- helpers */

void ts__tfhe_poly_rotate(uint64_t *out, const uint64_t *in, uint32_t n, uint32_t k, uint64_t q)
{
    /* X^k * sum in_i X^i: coefficient i moves to i + k, negated past N */
    k &= 2 * n - 1;
    bool neg = k >= n;
    if (neg)
        k -= n;
    for (uint32_t i = 0; i < n - k; i++)
        out[i + k] = neg ? ts_mod_neg(in[i], q) : in[i];
    for (uint32_t i = n - k; i < n; i++)
        out[i + k - n] = neg ? in[i] : ts_mod_neg(in[i], q);
}

void ts__tfhe_poly_rotate_minus(uint64_t *out, const uint64_t *in, uint32_t n, uint32_t k,
                                uint64_t q)
{
    k &= 2 * n - 1;
    bool neg = k >= n;
    if (neg)
        k -= n;
    for (uint32_t i = 0; i < n - k; i++) {
        uint64_t v = neg ? ts_mod_neg(in[i], q) : in[i];
        out[i + k] = ts_mod_sub(v, in[i + k], q);
    }
    for (uint32_t i = n - k; i < n; i++) {
        uint64_t v = neg ? in[i] : ts_mod_neg(in[i], q);
        out[i + k - n] = ts_mod_sub(v, in[i + k - n], q);
    }
}

uint64_t ts__tfhe_gadget(const ts_tfhe_params_t *params, uint32_t j)
{
    return params->gad.g[j];
}

void ts__tfhe_decompose(const ts_tfhe_params_t *params, const uint64_t *in, uint64_t *out)
{
    ts_gadget_decompose_mod(&params->gad, in, params->n_br, out);
}

/* out = a * s (negacyclic) using the key's NTT form; tmp: N words. */
static void mul_by_key(const ts_tfhe_rlwe_key_t *key, const uint64_t *a, uint64_t *out)
{
    const ts_tfhe_params_t *p = key->params;
    memcpy(out, a, (size_t)p->n_br * sizeof(uint64_t));
    ts_ntt_forward(p->ntt, out);
    for (uint32_t i = 0; i < p->n_br; i++)
        out[i] = ts_mod_mul(out[i], key->s_ntt[i], &p->mod_br);
    ts_ntt_inverse(p->ntt, out);
}

/* ---------------------------------------------------------------- keys */

ts_status_t ts_tfhe_rlwe_key_from_coeffs(const ts_tfhe_params_t *params, const int32_t *s,
                                         ts_tfhe_rlwe_key_t **out)
{
    if (!params || !s || !out)
        return TS_EINVAL;
    uint32_t n = params->n_br;
    ts_tfhe_rlwe_key_t *k = ts_calloc(1, sizeof(*k));
    if (!k)
        return TS_ENOMEM;
    k->params = params;
    k->s = ts_calloc(n, sizeof(int32_t));
    k->s_ntt = ts_calloc(n, sizeof(uint64_t));
    if (!k->s || !k->s_ntt) {
        ts_tfhe_rlwe_key_free(k);
        return TS_ENOMEM;
    }
    memcpy(k->s, s, (size_t)n * sizeof(int32_t));
    for (uint32_t i = 0; i < n; i++)
        k->s_ntt[i] = ts__tfhe_from_signed(s[i], params->q_br);
    ts_ntt_forward(params->ntt, k->s_ntt);
    *out = k;
    return TS_OK;
}

ts_status_t ts_tfhe_rlwe_key_new(const ts_tfhe_params_t *params, ts_prng_t *prng,
                                 ts_tfhe_rlwe_key_t **out)
{
    if (!params || !prng || !out)
        return TS_EINVAL;
    ts_tfhe_lwe_key_t *tmp;
    ts_status_t st = ts_tfhe_lwe_key_new(params->n_br, params->lit.rlwe_secret, prng, &tmp);
    if (st != TS_OK)
        return st;
    st = ts_tfhe_rlwe_key_from_coeffs(params, tmp->s, out);
    ts_tfhe_lwe_key_free(tmp);
    return st;
}

void ts_tfhe_rlwe_key_free(ts_tfhe_rlwe_key_t *key)
{
    if (!key)
        return;
    ts_free_secret(key->s);
    ts_free_secret(key->s_ntt);
    ts_free_secret(key);
}

ts_status_t ts_tfhe_rlwe_key_lwe(const ts_tfhe_rlwe_key_t *key, ts_tfhe_lwe_key_t **out)
{
    if (!key || !out)
        return TS_EINVAL;
    return ts_tfhe_lwe_key_from_coeffs(key->s, key->params->n_br, key->params->lit.rlwe_secret,
                                       out);
}

/* --------------------------------------------------------------- RLWE */

ts_status_t ts_tfhe_rlwe_new(const ts_tfhe_params_t *params, ts_tfhe_rlwe_t **out)
{
    if (!params || !out)
        return TS_EINVAL;
    ts_tfhe_rlwe_t *ct = ts_calloc(1, sizeof(*ct));
    if (!ct)
        return TS_ENOMEM;
    ct->params = params;
    ct->a = ts_calloc(2 * (size_t)params->n_br, sizeof(uint64_t));
    if (!ct->a) {
        ts_free(ct);
        return TS_ENOMEM;
    }
    ct->b = ct->a + params->n_br;
    *out = ct;
    return TS_OK;
}

void ts_tfhe_rlwe_free(ts_tfhe_rlwe_t *ct)
{
    if (!ct)
        return;
    ts_free(ct->a);
    ts_free(ct);
}

uint64_t *ts_tfhe_rlwe_poly(ts_tfhe_rlwe_t *ct, int i)
{
    return i == 0 ? ct->a : ct->b;
}

ts_status_t ts_tfhe_rlwe_copy(ts_tfhe_rlwe_t *dst, const ts_tfhe_rlwe_t *src)
{
    if (!dst || !src)
        return TS_EINVAL;
    if (dst->params->n_br != src->params->n_br || dst->params->q_br != src->params->q_br)
        return TS_EMISMATCH;
    if (dst != src)
        memcpy(dst->a, src->a, 2 * (size_t)src->params->n_br * sizeof(uint64_t));
    return TS_OK;
}

void ts_tfhe_rlwe_trivial(ts_tfhe_rlwe_t *ct, const uint64_t *mu)
{
    size_t n = ct->params->n_br;
    memset(ct->a, 0, n * sizeof(uint64_t));
    if (mu)
        memcpy(ct->b, mu, n * sizeof(uint64_t));
    else
        memset(ct->b, 0, n * sizeof(uint64_t));
}

ts_status_t ts_tfhe_rlwe_encrypt(const ts_tfhe_rlwe_key_t *key, ts_tfhe_rlwe_t *ct,
                                 const uint64_t *mu, ts_prng_t *prng)
{
    if (!key || !ct || !prng)
        return TS_EINVAL;
    const ts_tfhe_params_t *p = key->params;
    if (ct->params->n_br != p->n_br || ct->params->q_br != p->q_br)
        return TS_EMISMATCH;
    uint32_t n = p->n_br;
    uint64_t q = p->q_br;
    ts_status_t st = ts__tfhe_uniform(prng, q, ct->a, n);
    if (st != TS_OK)
        return st;
    st = gauss_poly(prng, p->lit.rlwe_sigma, q, ct->b, n); /* e into b for now */
    if (st != TS_OK)
        return st;
    uint64_t *as = ts_malloc(n * sizeof(uint64_t));
    if (!as)
        return TS_ENOMEM;
    mul_by_key(key, ct->a, as);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = ts_mod_add(as[i], ct->b[i], q);
        ct->b[i] = mu ? ts_mod_add(v, mu[i] % q, q) : v;
    }
    ts_free(as);
    return TS_OK;
}

ts_status_t ts_tfhe_rlwe_phase(const ts_tfhe_rlwe_key_t *key, const ts_tfhe_rlwe_t *ct,
                               uint64_t *phase)
{
    if (!key || !ct || !phase)
        return TS_EINVAL;
    const ts_tfhe_params_t *p = key->params;
    if (ct->params->n_br != p->n_br || ct->params->q_br != p->q_br)
        return TS_EMISMATCH;
    mul_by_key(key, ct->a, phase);
    for (uint32_t i = 0; i < p->n_br; i++)
        phase[i] = ts_mod_sub(ct->b[i], phase[i], p->q_br);
    return TS_OK;
}

ts_status_t ts_tfhe_rlwe_sample_extract(const ts_tfhe_rlwe_t *ct, uint32_t idx, ts_tfhe_lwe_t *out)
{
    if (!ct || !out)
        return TS_EINVAL;
    uint32_t n = ct->params->n_br;
    uint64_t q = ct->params->q_br;
    if (out->n != n || out->q != q || idx >= n)
        return TS_EMISMATCH;
    /* (a*s)_idx = sum_{k<=idx} a_{idx-k} s_k - sum_{k>idx} a_{N+idx-k} s_k */
    for (uint32_t k = 0; k <= idx; k++)
        out->a[k] = ct->a[idx - k];
    for (uint32_t k = idx + 1; k < n; k++)
        out->a[k] = ts_mod_neg(ct->a[n + idx - k], q);
    out->b = ct->b[idx];
    return TS_OK;
}

/* --------------------------------------------------------------- RGSW */

size_t ts__tfhe_rgsw_words(const ts_tfhe_params_t *params)
{
    return 4 * (size_t)params->lit.br_levels * params->n_br;
}

ts_status_t ts_tfhe_rgsw_new(const ts_tfhe_params_t *params, ts_tfhe_rgsw_t **out)
{
    if (!params || !out)
        return TS_EINVAL;
    ts_tfhe_rgsw_t *ct = ts_calloc(1, sizeof(*ct));
    if (!ct)
        return TS_ENOMEM;
    ct->params = params;
    ct->rows = ts_calloc(ts__tfhe_rgsw_words(params), sizeof(uint64_t));
    if (!ct->rows) {
        ts_free(ct);
        return TS_ENOMEM;
    }
    *out = ct;
    return TS_OK;
}

void ts_tfhe_rgsw_free(ts_tfhe_rgsw_t *ct)
{
    if (!ct)
        return;
    ts_free(ct->rows);
    ts_free(ct);
}

ts_status_t ts__tfhe_rgsw_encrypt_raw(const ts_tfhe_rlwe_key_t *key, uint64_t *rows, int64_t m,
                                      ts_prng_t *mask_prng, ts_prng_t *noise_prng)
{
    const ts_tfhe_params_t *p = key->params;
    const uint32_t n = p->n_br, L = p->lit.br_levels;
    const uint64_t q = p->q_br;
    const uint64_t mq = ts__tfhe_from_signed(m, q);
    for (uint32_t r = 0; r < 2 * L; r++) {
        uint64_t *a = rows + (size_t)r * 2 * n, *b = a + n;
        /* a uniform directly in NTT form; b = a * s + e in NTT form */
        ts_status_t st = ts__tfhe_uniform(mask_prng, q, a, n);
        if (st == TS_OK)
            st = gauss_poly(noise_prng, p->lit.rlwe_sigma, q, b, n);
        if (st != TS_OK)
            return st;
        ts_ntt_forward(p->ntt, b);
        for (uint32_t i = 0; i < n; i++)
            b[i] = ts_mod_add(b[i], ts_mod_mul(a[i], key->s_ntt[i], &p->mod_br), q);
        /* m * g_j is a constant polynomial: the same value in every NTT slot.
         * Row j < L has phase e - m g_j s: it is put into b (b -= m g_j s) so
         * that every mask stays the pure seeded stream (seeded storage). */
        uint64_t add = ts_mod_mul(mq, p->gad.g[r % L], &p->mod_br);
        if (r < L) {
            for (uint32_t i = 0; i < n; i++)
                b[i] = ts_mod_sub(b[i], ts_mod_mul(add, key->s_ntt[i], &p->mod_br), q);
        } else {
            for (uint32_t i = 0; i < n; i++)
                b[i] = ts_mod_add(b[i], add, q);
        }
    }
    return TS_OK;
}

ts_status_t ts_tfhe_rgsw_encrypt(const ts_tfhe_rlwe_key_t *key, ts_tfhe_rgsw_t *ct, int64_t m,
                                 ts_prng_t *prng)
{
    if (!key || !ct || !prng)
        return TS_EINVAL;
    if (ct->params->n_br != key->params->n_br || ct->params->q_br != key->params->q_br ||
        ct->params->lit.br_levels != key->params->lit.br_levels)
        return TS_EMISMATCH;
    return ts__tfhe_rgsw_encrypt_raw(key, ct->rows, m, prng, prng);
}

/* ------------------------------------------------------ external product */

void ts__tfhe_external_product_raw(ts_tfhe_evaluator_t *ev, uint64_t *out_a, uint64_t *out_b,
                                   const uint64_t *rows, const uint64_t *in_a, const uint64_t *in_b,
                                   bool accumulate)
{
    const ts_tfhe_params_t *p = ev->params;
    const uint32_t n = p->n_br, L = p->lit.br_levels, R = 2 * L;
    const uint64_t q = p->q_br;
    uint64_t *dig = ev->dig, *acc_a = ev->acc, *acc_b = ev->acc + n;
    ts__tfhe_decompose(p, in_a, dig);
    ts__tfhe_decompose(p, in_b, dig + (size_t)L * n);
    for (uint32_t r = 0; r < R; r++)
        ts_ntt_forward(p->ntt, dig + (size_t)r * n);
    /* the sums over rows, sum_r digit_r * row_r (a and b halves): the dot
     * kernels (AVX-512 where present, the same words as the portable one) */
    const uint64_t *xs[2 * 62], *ya[2 * 62], *yb[2 * 62];
    for (uint32_t r = 0; r < R; r++) {
        xs[r] = dig + (size_t)r * n;
        ya[r] = rows + (size_t)r * 2 * n;
        yb[r] = ya[r] + n;
    }
    ts_vec_dot(acc_a, xs, ya, R, n, &p->mod_br);
    ts_vec_dot(acc_b, xs, yb, R, n, &p->mod_br);
    ts_ntt_inverse(p->ntt, acc_a);
    ts_ntt_inverse(p->ntt, acc_b);
    if (accumulate) {
        for (uint32_t i = 0; i < n; i++) {
            out_a[i] = ts_mod_add(out_a[i], acc_a[i], q);
            out_b[i] = ts_mod_add(out_b[i], acc_b[i], q);
        }
    } else {
        memcpy(out_a, acc_a, n * sizeof(uint64_t));
        memcpy(out_b, acc_b, n * sizeof(uint64_t));
    }
}

static bool same_ring(const ts_tfhe_params_t *a, const ts_tfhe_params_t *b)
{
    return a == b ||
           (a->n_br == b->n_br && a->q_br == b->q_br && a->lit.br_levels == b->lit.br_levels &&
            a->lit.br_log_base == b->lit.br_log_base);
}

ts_status_t ts_tfhe_external_product(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *out,
                                     const ts_tfhe_rgsw_t *c, const ts_tfhe_rlwe_t *in)
{
    if (!ev || !out || !c || !in)
        return TS_EINVAL;
    if (!same_ring(ev->params, c->params) || !same_ring(ev->params, in->params) ||
        !same_ring(ev->params, out->params))
        return TS_EMISMATCH;
    ts__tfhe_external_product_raw(ev, out->a, out->b, c->rows, in->a, in->b, false);
    return TS_OK;
}

ts_status_t ts_tfhe_cmux(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *out, const ts_tfhe_rgsw_t *sel,
                         const ts_tfhe_rlwe_t *c0, const ts_tfhe_rlwe_t *c1)
{
    if (!ev || !out || !sel || !c0 || !c1)
        return TS_EINVAL;
    if (!same_ring(ev->params, sel->params) || !same_ring(ev->params, c0->params) ||
        !same_ring(ev->params, c1->params) || !same_ring(ev->params, out->params))
        return TS_EMISMATCH;
    const uint32_t n = ev->params->n_br;
    const uint64_t q = ev->params->q_br;
    uint64_t *da = ev->tmp, *db = ev->tmp + n;
    for (uint32_t i = 0; i < n; i++) {
        da[i] = ts_mod_sub(c1->a[i], c0->a[i], q);
        db[i] = ts_mod_sub(c1->b[i], c0->b[i], q);
    }
    if (out != c0)
        memcpy(out->a, c0->a, 2 * (size_t)n * sizeof(uint64_t));
    ts__tfhe_external_product_raw(ev, out->a, out->b, sel->rows, da, db, true);
    return TS_OK;
}
