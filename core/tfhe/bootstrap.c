/*
 * core/tfhe/bootstrap.c — evaluation keys, the evaluator, CGGI blind rotation
 * (Chillotti et al., J. Cryptology 2020, Algorithm 3; ternary keys with two
 * RGSW per coefficient as in Bonnoron, Ducas, Fillinger / Micciancio-Polyakov
 * "Bootstrapping in FHEW-like cryptosystems", 2021), look-up tables,
 * programmable bootstrapping and multi-value PBS (Carpov, Izabachene,
 * Mollimard, CT-RSA 2019).
 */
#include <math.h>
#include <string.h>

#include "core/tfhe/tfhe_int.h"

/* --------------------------------------------------------------- keys */

ts_status_t ts_tfhe_evalkey_new(const ts_tfhe_params_t *params, const ts_tfhe_lwe_key_t *lwe_key,
                                const ts_tfhe_rlwe_key_t *rlwe_key, const uint8_t *seed,
                                ts_prng_t *prng, ts_tfhe_evalkey_t **out)
{
    if (!params || !lwe_key || !rlwe_key || !prng || !out)
        return TS_EINVAL;
    const ts_tfhe_params_lit_t *l = &params->lit;
    if (lwe_key->n != l->lwe_n || lwe_key->dist != l->lwe_secret ||
        rlwe_key->params->n_br != params->n_br || rlwe_key->params->q_br != params->q_br)
        return TS_EMISMATCH;
    ts_status_t st;
    ts_prng_t *mask = NULL;
    ts_tfhe_lwe_key_t *big = NULL;
    ts_tfhe_evalkey_t *ek = ts_calloc(1, sizeof(*ek));
    if (!ek)
        return TS_ENOMEM;
    ek->params = params;
    ek->n = l->lwe_n;
    ek->dist = l->lwe_secret;
    ek->rgsw_words = ts__tfhe_rgsw_words(params);
    size_t count = ek->dist == TS_TFHE_SECRET_BINARY ? ek->n : 2 * (size_t)ek->n, words;
    if (!ts_size_mul(count, ek->rgsw_words, &words) ||
        !(ek->bsk = ts_malloc(words * sizeof(uint64_t)))) {
        st = TS_ENOMEM;
        goto out_free_key;
    }
    if (seed)
        memcpy(ek->seed, seed, TS_SEED_BYTES);
    else if ((st = ts_prng_bytes(prng, ek->seed, TS_SEED_BYTES)) != TS_OK)
        goto out_free_key;
    /* stream 0x42534b ("BSK") for the masks of the bootstrapping key */
    if ((st = ts_prng_new_seeded(ek->seed, 0x42534b, &mask)) != TS_OK)
        goto out_free_key;
    for (uint32_t i = 0; i < ek->n; i++) {
        int32_t s = lwe_key->s[i];
        if (ek->dist == TS_TFHE_SECRET_BINARY) {
            st = ts__tfhe_rgsw_encrypt_raw(rlwe_key, ek->bsk + (size_t)i * ek->rgsw_words, s, mask,
                                           prng);
        } else {
            st = ts__tfhe_rgsw_encrypt_raw(rlwe_key, ek->bsk + (2 * (size_t)i) * ek->rgsw_words,
                                           s == 1, mask, prng);
            if (st == TS_OK)
                st = ts__tfhe_rgsw_encrypt_raw(
                    rlwe_key, ek->bsk + (2 * (size_t)i + 1) * ek->rgsw_words, s == -1, mask, prng);
        }
        if (st != TS_OK)
            goto out_free_prng;
    }
    if ((st = ts_tfhe_rlwe_key_lwe(rlwe_key, &big)) != TS_OK)
        goto out_free_prng;
    st = ts_tfhe_ksk_new(big, lwe_key, l->lwe_logq, l->ks_log_base, l->ks_levels, l->lwe_sigma,
                         ek->seed, prng, &ek->ksk);
    ts_tfhe_lwe_key_free(big);
    if (st != TS_OK)
        goto out_free_prng;
    ts_prng_free(mask);
    *out = ek;
    return TS_OK;
out_free_prng:
    ts_prng_free(mask);
out_free_key:
    ts_tfhe_evalkey_free(ek);
    return st;
}

void ts_tfhe_evalkey_free(ts_tfhe_evalkey_t *ek)
{
    if (!ek)
        return;
    ts_free(ek->bsk);
    ts_tfhe_ksk_free(ek->ksk);
    ts_free(ek);
}

size_t ts_tfhe_evalkey_bytes(const ts_tfhe_evalkey_t *ek)
{
    size_t count = ek->dist == TS_TFHE_SECRET_BINARY ? ek->n : 2 * (size_t)ek->n;
    /* key-switching rows are 32-bit words */
    size_t ksk = ek->ksk ? (size_t)ek->ksk->n_in * ek->ksk->levels * (ek->ksk->n_out + 1) : 0;
    return count * ek->rgsw_words * sizeof(uint64_t) + ksk * sizeof(uint32_t);
}

/* ---------------------------------------------------------- evaluator */

ts_status_t ts_tfhe_evaluator_new(const ts_tfhe_params_t *params, const ts_tfhe_evalkey_t *ek,
                                  ts_tfhe_evaluator_t **out)
{
    if (!params || !out)
        return TS_EINVAL;
    if (ek &&
        (ek->params->n_br != params->n_br || ek->params->q_br != params->q_br ||
         ek->params->lit.br_levels != params->lit.br_levels ||
         ek->params->lit.br_log_base != params->lit.br_log_base || ek->n != params->lit.lwe_n))
        return TS_EMISMATCH;
    const size_t n = params->n_br, L = params->lit.br_levels;
    ts_status_t st = TS_ENOMEM;
    ts_tfhe_evaluator_t *ev = ts_calloc(1, sizeof(*ev));
    if (!ev)
        return TS_ENOMEM;
    ev->params = params;
    ev->ek = ek;
    ev->dig = ts_malloc(2 * L * n * sizeof(uint64_t));
    ev->acc = ts_malloc(2 * n * sizeof(uint64_t));
    ev->tmp = ts_malloc(2 * n * sizeof(uint64_t));
    ev->tmp2 = ts_malloc(2 * n * sizeof(uint64_t));
    ev->phase2n = ts_malloc(((size_t)params->lit.lwe_n + 1) * sizeof(uint32_t));
    if (!ev->dig || !ev->acc || !ev->tmp || !ev->tmp2 || !ev->phase2n)
        goto out_free;
    if ((st = ts_tfhe_rlwe_new(params, &ev->r0)) != TS_OK ||
        (st = ts_tfhe_rlwe_new(params, &ev->r1)) != TS_OK ||
        (st = ts_tfhe_rlwe_new(params, &ev->r2)) != TS_OK ||
        (st = ts_tfhe_lwe_new(params->lit.lwe_n, params->q_lwe, &ev->small)) != TS_OK ||
        (st = ts_tfhe_lwe_new(params->lit.lwe_n, params->q_lwe, &ev->small2)) != TS_OK ||
        (st = ts_tfhe_lwe_new(params->n_br, params->q_lwe, &ev->mid)) != TS_OK ||
        (st = ts_tfhe_lwe_new(params->n_br, params->q_br, &ev->big1)) != TS_OK ||
        (st = ts_tfhe_lwe_new(params->n_br, params->q_br, &ev->big2)) != TS_OK)
        goto out_free;
    *out = ev;
    return TS_OK;
out_free:
    ts_tfhe_evaluator_free(ev);
    return st;
}

void ts_tfhe_evaluator_free(ts_tfhe_evaluator_t *ev)
{
    if (!ev)
        return;
    ts_free(ev->dig);
    ts_free(ev->acc);
    ts_free(ev->tmp);
    ts_free(ev->tmp2);
    ts_free(ev->phase2n);
    ts_tfhe_rlwe_free(ev->r0);
    ts_tfhe_rlwe_free(ev->r1);
    ts_tfhe_rlwe_free(ev->r2);
    ts_tfhe_lwe_free(ev->small);
    ts_tfhe_lwe_free(ev->small2);
    ts_tfhe_lwe_free(ev->mid);
    ts_tfhe_lwe_free(ev->big1);
    ts_tfhe_lwe_free(ev->big2);
    ts_free(ev);
}

/* ---------------------------------------------------- switching steps */

ts_status_t ts_tfhe_keyswitch_to_small(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *out,
                                       const ts_tfhe_lwe_t *in)
{
    if (!ev || !out || !in)
        return TS_EINVAL;
    if (!ev->ek)
        return TS_ENOKEY;
    const ts_tfhe_params_t *p = ev->params;
    if (in->n != p->n_br || out->n != p->lit.lwe_n || out->q != p->q_lwe)
        return TS_EMISMATCH;
    ts_status_t st = ts_tfhe_lwe_modswitch(ev->mid, in);
    if (st != TS_OK)
        return st;
    return ts_tfhe_lwe_keyswitch(ev->ek->ksk, out, ev->mid);
}

static uint32_t log2_u64(uint64_t x)
{
    uint32_t r = 0;
    while ((x >> r) > 1)
        r++;
    return r;
}

void ts__tfhe_small_to_2n(const ts_tfhe_evaluator_t *ev, const ts_tfhe_lwe_t *in,
                          uint32_t window_log, uint32_t *phase2n)
{
    const uint32_t lg = ev->params->lit.log_n_br + 1, n = in->n;
    const uint64_t two_n_mask = (1ull << lg) - 1;
    const uint64_t wmask = window_log >= 64 ? ~0ull : (1ull << window_log) - 1;
    for (uint32_t i = 0; i <= n; i++) {
        uint64_t c = (i < n ? in->a[i] : in->b) & wmask, v;
        if (window_log > lg) {
            uint32_t sh = window_log - lg;
            v = (c + (1ull << (sh - 1))) >> sh;
        } else {
            v = c << (lg - window_log);
        }
        phase2n[i] = (uint32_t)(v & two_n_mask);
    }
}

/* Phases modulo 2N of a small LWE with any modulus (power of two or not). */
static void small_phases(const ts_tfhe_evaluator_t *ev, const ts_tfhe_lwe_t *in, uint64_t offset,
                         uint32_t *phase2n)
{
    const uint64_t q = in->q, two_n = 2ull * ev->params->n_br;
    if ((q & (q - 1)) == 0) {
        ts__tfhe_small_to_2n(ev, in, log2_u64(q), phase2n);
        if (offset) {
            /* the body with the offset, switched the same way */
            uint64_t b = (in->b + offset) & (q - 1);
            phase2n[in->n] = (uint32_t)ts__tfhe_modswitch1(b, q, two_n);
        }
        return;
    }
    for (uint32_t i = 0; i < in->n; i++)
        phase2n[i] = (uint32_t)ts__tfhe_modswitch1(in->a[i], q, two_n);
    phase2n[in->n] = (uint32_t)ts__tfhe_modswitch1(ts_mod_add(in->b, offset % q, q), q, two_n);
}

/* ---------------------------------------------------- blind rotation */

void ts__tfhe_blind_rotate_raw(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *acc,
                               const uint32_t *phase2n)
{
    const ts_tfhe_params_t *p = ev->params;
    const ts_tfhe_evalkey_t *ek = ev->ek;
    const uint32_t n = p->n_br, nl = ek->n, two_n = 2 * n;
    const uint64_t q = p->q_br;
    uint64_t *t1 = ev->tmp, *t2 = ev->tmp2;
    /* acc *= X^{-b~} */
    uint32_t rot = (two_n - phase2n[nl]) & (two_n - 1);
    if (rot) {
        ts__tfhe_poly_rotate(t1, acc->a, n, rot, q);
        ts__tfhe_poly_rotate(t1 + n, acc->b, n, rot, q);
        memcpy(acc->a, t1, 2 * (size_t)n * sizeof(uint64_t));
    }
    /* acc *= X^{a~_i s_i}: acc += RGSW(s_i) [x] ((X^{a~_i} - 1) acc) */
    for (uint32_t i = 0; i < nl; i++) {
        uint32_t ai = phase2n[i];
        if (ai == 0)
            continue; /* X^0 - 1 = 0 (the mask is public) */
        if (ek->dist == TS_TFHE_SECRET_BINARY) {
            const uint64_t *rows = ek->bsk + (size_t)i * ek->rgsw_words;
            ts__tfhe_poly_rotate_minus(t1, acc->a, n, ai, q);
            ts__tfhe_poly_rotate_minus(t1 + n, acc->b, n, ai, q);
            ts__tfhe_external_product_raw(ev, acc->a, acc->b, rows, t1, t1 + n, true);
        } else {
            const uint64_t *rp = ek->bsk + (2 * (size_t)i) * ek->rgsw_words;
            const uint64_t *rm = rp + ek->rgsw_words;
            uint32_t na = two_n - ai;
            ts__tfhe_poly_rotate_minus(t1, acc->a, n, ai, q);
            ts__tfhe_poly_rotate_minus(t1 + n, acc->b, n, ai, q);
            ts__tfhe_poly_rotate_minus(t2, acc->a, n, na, q);
            ts__tfhe_poly_rotate_minus(t2 + n, acc->b, n, na, q);
            ts__tfhe_external_product_raw(ev, acc->a, acc->b, rp, t1, t1 + n, true);
            ts__tfhe_external_product_raw(ev, acc->a, acc->b, rm, t2, t2 + n, true);
        }
    }
}

ts_status_t ts_tfhe_blind_rotate(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *acc,
                                 const ts_tfhe_lwe_t *in)
{
    if (!ev || !acc || !in)
        return TS_EINVAL;
    if (!ev->ek)
        return TS_ENOKEY;
    if (in->n != ev->ek->n || acc->params->n_br != ev->params->n_br ||
        acc->params->q_br != ev->params->q_br)
        return TS_EMISMATCH;
    small_phases(ev, in, 0, ev->phase2n);
    ts__tfhe_blind_rotate_raw(ev, acc, ev->phase2n);
    return TS_OK;
}

/* Half a box of the input, q / (4p), in the small modulus. */
static uint64_t half_box(uint64_t q, uint64_t p)
{
    return (uint64_t)(((ts_u128_t)q + 2 * p) / (4 * p));
}

ts_status_t ts_tfhe_blind_rotate_index(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *acc,
                                       const ts_tfhe_lwe_t *in, uint64_t p_in)
{
    if (!ev || !acc || !in || p_in < 2)
        return TS_EINVAL;
    if (!ev->ek)
        return TS_ENOKEY;
    if (p_in > ev->params->n_br || acc->params->n_br != ev->params->n_br ||
        acc->params->q_br != ev->params->q_br)
        return TS_EMISMATCH;
    ts_status_t st = ts_tfhe_keyswitch_to_small(ev, ev->small, in);
    if (st != TS_OK)
        return st;
    small_phases(ev, ev->small, half_box(ev->small->q, p_in), ev->phase2n);
    ts__tfhe_blind_rotate_raw(ev, acc, ev->phase2n);
    return TS_OK;
}

/* ---------------------------------------------------------------- LUTs */

static int64_t table_fn(void *ctx, uint64_t m)
{
    return ((const int64_t *)ctx)[m];
}

ts_status_t ts_tfhe_lut_new(const ts_tfhe_params_t *params, uint64_t p_in, ts_tfhe_lut_fn f,
                            void *ctx, uint64_t delta_out, ts_tfhe_lut_t **out)
{
    if (!params || !f || !out || p_in < 2 || p_in > params->n_br)
        return TS_EINVAL;
    const uint32_t n = params->n_br;
    const uint64_t q = params->q_br;
    ts_status_t st = TS_ENOMEM;
    int64_t *vals = NULL;
    ts_tfhe_lut_t *lut = ts_calloc(1, sizeof(*lut));
    if (!lut)
        return TS_ENOMEM;
    lut->params = params;
    lut->p_in = p_in;
    lut->delta_out = delta_out % q;
    lut->tv = ts_malloc(n * sizeof(uint64_t));
    lut->factor = ts_malloc(n * sizeof(uint64_t));
    lut->factor_coef = ts_malloc(n * sizeof(uint64_t));
    vals = ts_malloc(p_in * sizeof(int64_t));
    if (!lut->tv || !lut->factor || !lut->factor_coef || !vals)
        goto out_free;
    for (uint64_t m = 0; m < p_in; m++)
        vals[m] = f(ctx, m);
    /* TV[j] = delta * f(floor(j p / N)); T(j) in message units for the factor */
    double norm2 = 0;
    int64_t prev = 0, first = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t m = (uint64_t)(((ts_u128_t)j * p_in) / n);
        int64_t t = vals[m];
        lut->tv[j] = ts_mod_mul(ts__tfhe_from_signed(t, q), lut->delta_out, &params->mod_br);
        if (j == 0) {
            first = t;
        } else {
            int64_t v = t - prev;
            lut->factor[j] = ts__tfhe_from_signed(v, q);
            norm2 += (double)v * (double)v;
        }
        prev = t;
    }
    lut->factor[0] = ts__tfhe_from_signed(first + prev, q);
    norm2 += (double)(first + prev) * (double)(first + prev);
    lut->factor_norm2 = norm2;
    memcpy(lut->factor_coef, lut->factor, n * sizeof(uint64_t));
    ts_ntt_forward(params->ntt, lut->factor);
    ts_free(vals);
    *out = lut;
    return TS_OK;
out_free:
    ts_free(vals);
    ts_tfhe_lut_free(lut);
    return st;
}

ts_status_t ts_tfhe_lut_from_table(const ts_tfhe_params_t *params, uint64_t p_in,
                                   const int64_t *table, uint64_t delta_out, ts_tfhe_lut_t **out)
{
    if (!table)
        return TS_EINVAL;
    return ts_tfhe_lut_new(params, p_in, table_fn, (void *)table, delta_out, out);
}

void ts_tfhe_lut_free(ts_tfhe_lut_t *lut)
{
    if (!lut)
        return;
    ts_free(lut->tv);
    ts_free(lut->factor);
    ts_free(lut->factor_coef);
    ts_free(lut);
}

const uint64_t *ts_tfhe_lut_test_poly(const ts_tfhe_lut_t *lut)
{
    return lut->tv;
}

double ts_tfhe_lut_factor_norm2(const ts_tfhe_lut_t *lut)
{
    return lut->factor_norm2;
}

/* ----------------------------------------------------------------- PBS */

ts_status_t ts_tfhe_pbs_small(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *out,
                              const ts_tfhe_lwe_t *in_small, const ts_tfhe_lut_t *lut)
{
    if (!ev || !out || !in_small || !lut)
        return TS_EINVAL;
    if (!ev->ek)
        return TS_ENOKEY;
    const ts_tfhe_params_t *p = ev->params;
    if (in_small->n != p->lit.lwe_n || out->n != p->n_br || out->q != p->q_br ||
        lut->params->n_br != p->n_br || lut->params->q_br != p->q_br)
        return TS_EMISMATCH;
    small_phases(ev, in_small, half_box(in_small->q, lut->p_in), ev->phase2n);
    ts_tfhe_rlwe_trivial(ev->r0, lut->tv);
    ts__tfhe_blind_rotate_raw(ev, ev->r0, ev->phase2n);
    return ts_tfhe_rlwe_sample_extract(ev->r0, 0, out);
}

ts_status_t ts_tfhe_pbs(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *in,
                        const ts_tfhe_lut_t *lut)
{
    if (!ev || !out || !in || !lut)
        return TS_EINVAL;
    ts_status_t st = ts_tfhe_keyswitch_to_small(ev, ev->small, in);
    if (st != TS_OK)
        return st;
    return ts_tfhe_pbs_small(ev, out, ev->small, lut);
}

ts_status_t ts_tfhe_pbs_multi(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *const *out,
                              const ts_tfhe_lwe_t *in, const ts_tfhe_lut_t *const *luts,
                              size_t count)
{
    if (!ev || !out || !in || !luts || count == 0)
        return TS_EINVAL;
    const ts_tfhe_params_t *p = ev->params;
    const uint32_t n = p->n_br;
    const uint64_t q = p->q_br;
    for (size_t i = 0; i < count; i++) {
        if (!luts[i] || !out[i])
            return TS_EINVAL;
        if (luts[i]->p_in != luts[0]->p_in || luts[i]->delta_out != luts[0]->delta_out ||
            luts[i]->params->n_br != n || luts[i]->params->q_br != q || out[i]->n != n ||
            out[i]->q != q || out[i] == in)
            return TS_EMISMATCH;
    }
    ts_status_t st = ts_tfhe_keyswitch_to_small(ev, ev->small, in);
    if (st != TS_OK)
        return st;
    small_phases(ev, ev->small, half_box(ev->small->q, luts[0]->p_in), ev->phase2n);
    /* shared accumulator c * (1 + X + ... + X^{N-1}), c = delta / 2 */
    uint64_t c = luts[0]->delta_out / 2;
    ts_tfhe_rlwe_t *acc = ev->r0;
    memset(acc->a, 0, n * sizeof(uint64_t));
    for (uint32_t j = 0; j < n; j++)
        acc->b[j] = c;
    ts__tfhe_blind_rotate_raw(ev, acc, ev->phase2n);
    /* per LUT: (A v, B v); only coefficient 0 of B v is needed */
    uint64_t *a_ntt = ev->tmp2, *prod = ev->tmp;
    memcpy(a_ntt, acc->a, n * sizeof(uint64_t));
    ts_ntt_forward(p->ntt, a_ntt);
    for (size_t i = 0; i < count; i++) {
        const ts_tfhe_lut_t *lut = luts[i];
        for (uint32_t k = 0; k < n; k++)
            prod[k] = ts_mod_mul(a_ntt[k], lut->factor[k], &p->mod_br);
        ts_ntt_inverse(p->ntt, prod);
        const uint64_t *bv_coef = lut->factor_coef;
        /* (B v)_0 = B_0 v_0 - sum_{k >= 1} B_{N-k} v_k */
        uint64_t b0 = ts_mod_mul(acc->b[0], bv_coef[0], &p->mod_br);
        for (uint32_t k = 1; k < n; k++)
            b0 = ts_mod_sub(b0, ts_mod_mul(acc->b[n - k], bv_coef[k], &p->mod_br), q);
        /* sample extraction of coefficient 0 of (A v, B v) */
        ts_tfhe_lwe_t *o = out[i];
        o->a[0] = prod[0];
        for (uint32_t k = 1; k < n; k++)
            o->a[k] = ts_mod_neg(prod[n - k], q);
        o->b = b0;
    }
    return TS_OK;
}
