/*
 * core/llm output sanitization of encrypted logits (issue 10): a fixed level
 * and scale, a fresh public-key encryption of zero (re-randomizes c_1) and
 * flooding noise in c_0 (hides the noise the computation left). See
 * ts_llm_sanitize in core/llm/llm.h and docs/SECURITY.md.
 */
#include <math.h>
#include <string.h>

#include "core/llm/llm_int.h"
#include "core/ring/ring.h"

/* Largest flooding bound (bits) we draw: uniform values stay below 2^63. */
#define SAN_MAX_FLOOD_BITS 60.0

double ts_llm_sanitize_noise_bound(const ts_ckks_params_t *p)
{
    if (!p)
        return 0.0;
    double n = (double)ts_ckks_params_n(p);
    double h = (double)ts_ckks_params_hamming_weight(p);
    if (h <= 0) /* uniform ternary: about 2N/3 nonzero coefficients */
        h = 2.0 * n / 3.0;
    /* A rescale leaves round(c_0) + round(c_1) s: each coefficient a sum of
     * 1 + h roundings uniform in [-1/2, 1/2] (variance (1 + h) / 12), bounded
     * at 6 sigma; doubled for the key-switching remainder left after rescaling. */
    return 2.0 * 6.0 * sqrt((1.0 + h) / 12.0);
}

/* c_0 += uniform integers in [-F, F] (F = 2^fbits, fbits <= 60), in NTT form. */
static ts_status_t flood(ts_ckks_ciphertext_t *ct, double fbits, ts_prng_t *prng)
{
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(ct);
    ts_poly_t *c0 = ts_ckks_ciphertext_poly(ct, 0);
    size_t n = ts_ckks_params_n(p);
    uint64_t half = (uint64_t)ldexp(1.0, (int)ceil(fbits)), span = 2 * half + 1;
    ts_poly_t *e = NULL;
    ts_status_t st = ts_poly_new(ts_ckks_params_ring(p), c0->nq, 0, false, &e);
    for (size_t k = 0; k < n && st == TS_OK; k++) {
        uint64_t u = 0;
        st = ts_prng_uniform(prng, span, &u);
        bool neg = u < half;
        uint64_t mag = neg ? half - u : u - half;
        for (uint32_t j = 0; j < c0->nq; j++) {
            uint64_t q = ts_ckks_params_q(p, j), r = mag % q;
            e->data[(size_t)j * n + k] = !neg || r == 0 ? r : q - r;
        }
    }
    if (st == TS_OK)
        st = ts_poly_ntt(e);
    if (st == TS_OK)
        st = ts_poly_add(c0, c0, e);
    if (e)
        ts_memzero(e->data, (size_t)c0->nq * n * sizeof(uint64_t));
    ts_poly_free(e);
    return st;
}

ts_status_t ts_llm_sanitize_plan(const ts_ckks_params_t *p, int level, int lambda,
                                 ts_llm_sanitize_info_t *info)
{
    if (!p || !info || lambda < 0 || lambda > 128)
        return TS_EINVAL;
    if (level < 0 || level > ts_ckks_params_max_level(p))
        return TS_ELEVEL;
    memset(info, 0, sizeof(*info));
    double n = (double)ts_ckks_params_n(p), delta = ts_ckks_params_scale(p);
    double b = ts_llm_sanitize_noise_bound(p);
    info->level = level;
    info->scale = delta;
    info->lambda = lambda;
    info->noise_log2 = log2(b);
    info->flood_log2 = ceil(lambda + info->noise_log2);
    /* a uniform coefficient error in [-F, F] moves each real slot by a sum of
     * N terms of variance F^2 / 3 times cos^2: standard deviation F sqrt(N / 6) */
    double sd = ldexp(1.0, (int)info->flood_log2) * sqrt(n / 6.0) / delta;
    info->err_bound = 6.0 * sd;
    info->precision_bits = -log2(info->err_bound);
    /* statistical distance of the flooded noise from pure flooding: N 2^-lambda */
    info->stat_security = lambda - log2(n);
    /* room: |m| Delta + flood + fresh noise must stay far below q_0 ... q_level / 2 */
    double logq = ts_ckks_params_logq(p, level);
    if (info->flood_log2 > SAN_MAX_FLOOD_BITS || info->flood_log2 + 2.0 > logq - 1.0 ||
        log2(delta) + 8.0 > logq - 1.0)
        return TS_ERANGE;
    return TS_OK;
}

ts_status_t ts_llm_sanitize(ts_ckks_evaluator_t *ev, const ts_ckks_public_key_t *pk, int level,
                            int lambda, ts_prng_t *prng, ts_ckks_ciphertext_t *ct,
                            ts_llm_sanitize_info_t *info)
{
    if (!ev || !pk || !prng || !ct)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(ct);
    ts_llm_sanitize_info_t plan;
    ts_status_t st = ts_llm_sanitize_plan(p, level, lambda, &plan);
    if (st != TS_OK)
        return st;
    if (ts_ckks_ciphertext_degree(ct) != 1)
        return TS_EINVAL;
    int lv = ts_ckks_ciphertext_level(ct);
    if (lv < level)
        return TS_ELEVEL;
    double delta = ts_ckks_params_scale(p), r = ts_ckks_ciphertext_scale(ct) / delta;
    size_t slots = ts_ckks_ciphertext_slots(ct);
    ts_ckks_plaintext_t *pt = NULL;
    ts_ckks_ciphertext_t *z = NULL;
    double *zeros = NULL;
    /* 1. the scale: snapped when within 2^-30 of Delta, else corrected exactly (one level) */
    if (!(fabs(r - 1.0) < 0x1p-30)) {
        if (lv <= level || !(r > 0x1p-20 && r < 0x1p20))
            return TS_ELEVEL;
        double q = (double)ts_ckks_params_q(p, (size_t)lv);
        if ((st = ts_ckks_mul_const(ev, ct, 1.0, q / r, ct)) != TS_OK ||
            (st = ts_ckks_rescale(ev, ct, ct)) != TS_OK)
            return st;
    }
    if ((st = ts_ckks_ciphertext_set_meta(ct, ts_ckks_ciphertext_level(ct), 1, delta, slots)) !=
        TS_OK)
        return st;
    /* 2. the level */
    if ((st = ts_ckks_drop_to_level(ev, ct, level, ct)) != TS_OK)
        return st;
    /* 3. re-randomize: + Enc_pk(0) at (level, Delta) */
    zeros = ts_calloc(slots, sizeof(double));
    st = zeros ? ts_ckks_plaintext_new(p, level, &pt) : TS_ENOMEM;
    if (st == TS_OK) {
        ts_ckks_encoder_t *ecd = NULL;
        st = ts_ckks_encoder_new(p, &ecd);
        if (st == TS_OK)
            st = ts_ckks_encode_real(ecd, zeros, slots, slots, level, delta, pt);
        ts_ckks_encoder_free(ecd);
    }
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, level, &z);
    if (st == TS_OK)
        st = ts_ckks_encrypt_pk(pk, pt, prng, z);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(z, level, 1, delta, slots);
    if (st == TS_OK)
        st = ts_ckks_add(ev, ct, z, ct);
    /* 4. flood c_0 */
    if (st == TS_OK && plan.lambda > 0)
        st = flood(ct, plan.flood_log2, prng);
    if (st == TS_OK && info)
        *info = plan;
    ts_ckks_ciphertext_free(z);
    ts_ckks_plaintext_free(pt);
    ts_free(zeros);
    return st;
}
