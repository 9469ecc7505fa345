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
/* A Gaussian flood's largest sigma (bits): samples stay below 2^(that + 4),
 * exactly representable in a double (Box-Muller's |z| < 8.6 with 53-bit
 * uniforms). */
#define SAN_MAX_SIGMA_BITS 48.0

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

/*
 * ct (level l, slots S, message periodic with period `period`) -> its
 * projection on the subring of X^(N / 2 period) (ts_ckks_trace, as
 * bootstrapping's ModRaise does): a periodic message is unchanged; every
 * other component (the computation's noise off that subring) is gone, and
 * the key switches add noise that depends only on c_1 and the keys.
 */
static ts_status_t project(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *ct, int period)
{
    size_t slots = ts_ckks_ciphertext_slots(ct);
    ts_status_t st = ts_ckks_trace(ev, ct, (size_t)period);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(ct, ts_ckks_ciphertext_level(ct), 1,
                                         ts_ckks_ciphertext_scale(ct), slots);
    return st;
}

ts_status_t ts_llm_sanitize_plan_rd(const ts_ckks_params_t *p, int level, int period,
                                    double noise_l2_log2, double queries_log2,
                                    ts_llm_sanitize_info_t *info)
{
    if (!p || !info || period < 1 || (period & (period - 1)) || !(noise_l2_log2 > 0) ||
        !(noise_l2_log2 < 64) || !(queries_log2 >= 0) || !(queries_log2 <= 40))
        return TS_EINVAL;
    if ((size_t)period > ts_ckks_params_n(p) / 2)
        return TS_EINVAL;
    /* the projection's Galois keys are rotations on N/2 slots: a preset of
     * fewer slots has no key for the steps at or above its own count */
    if (ts_ckks_params_log_slots(p) != ts_ckks_params_log_n(p) - 1)
        return TS_ENOTSUP;
    if (level < 0 || level > ts_ckks_params_max_level(p))
        return TS_ELEVEL;
    memset(info, 0, sizeof(*info));
    double delta = ts_ckks_params_scale(p);
    info->mode = TS_LLM_SANITIZE_RD;
    info->level = level;
    info->scale = delta;
    info->period = period;
    info->noise_log2 = noise_l2_log2;
    info->queries_log2 = queries_log2;
    /* Renyi divergence of order 2 between the view with the noise e and
     * without: exp(||e||^2 / sigma^2) per query for a Gaussian of sigma
     * per coefficient (the integer rounding is a function of the shifted
     * value: it cannot increase it); 2^queries of them multiply. sigma =
     * ||e|| sqrt(2^queries / ln 2) keeps the product at 2. */
    info->sigma_log2 = noise_l2_log2 + 0.5 * (queries_log2 - log2(log(2.0)));
    info->rd = exp(exp2(queries_log2 + 2.0 * (noise_l2_log2 - info->sigma_log2)));
    info->flood_log2 = info->sigma_log2;
    /* a slot decoded at `period` slots (ts_llm_enc_decrypt_logits) reads the
     * 2 period coefficients of the subring: its real part moves by sigma
     * sqrt(period) / Delta (one sigma); 6 sigma as the uniform mode's bound */
    info->err_bound = 6.0 * exp2(info->sigma_log2) * sqrt((double)period) / delta;
    info->precision_bits = -log2(info->err_bound);
    info->stat_security = NAN;
    double logq = ts_ckks_params_logq(p, level);
    if (info->sigma_log2 > SAN_MAX_SIGMA_BITS || info->sigma_log2 + 6.0 > logq - 1.0 ||
        log2(delta) + 8.0 > logq - 1.0)
        return TS_ERANGE;
    return TS_OK;
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
    info->mode = TS_LLM_SANITIZE_UNIFORM;
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
    ts_llm_sanitize_info_t plan;
    ts_status_t st = ts_llm_sanitize_plan(ts_ckks_ciphertext_params(ct), level, lambda, &plan);
    if (st == TS_OK)
        st = ts_llm_sanitize_with(ev, pk, &plan, prng, ct);
    if (st == TS_OK && info)
        *info = plan;
    return st;
}

ts_status_t ts_llm_sanitize_with(ts_ckks_evaluator_t *ev, const ts_ckks_public_key_t *pk,
                                 const ts_llm_sanitize_info_t *plan, ts_prng_t *prng,
                                 ts_ckks_ciphertext_t *ct)
{
    if (!ev || !pk || !prng || !ct || !plan)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(ct);
    const int level = plan->level;
    ts_status_t st = TS_OK;
    if (plan->mode != TS_LLM_SANITIZE_UNIFORM && plan->mode != TS_LLM_SANITIZE_RD)
        return TS_EINVAL;
    if (level < 0 || level > ts_ckks_params_max_level(p))
        return TS_ELEVEL;
    if (!(fabs(plan->scale / ts_ckks_params_scale(p) - 1.0) < 0x1p-30))
        return TS_EMISMATCH;
    if (ts_ckks_ciphertext_degree(ct) != 1)
        return TS_EINVAL;
    size_t slots0 = ts_ckks_ciphertext_slots(ct);
    if (plan->mode == TS_LLM_SANITIZE_RD) {
        if (plan->period < 1 || (size_t)plan->period > slots0 || slots0 % (size_t)plan->period)
            return TS_EINVAL;
        /* the projection's keys, before ct is touched */
        int64_t miss = 0;
        if ((st = ts_ckks_trace_keys(ev, level, (size_t)plan->period, &miss)) != TS_OK) {
            if (st == TS_ENOKEY)
                ts_log(TS_LOG_DEBUG, "llm",
                       "sanitize: no rotation key for step %lld at level %d (the projection on "
                       "the logits' period %d: ts_ckks_trace_steps)",
                       (long long)miss, level, plan->period);
            return st;
        }
    }
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
    /* 4. (Renyi mode) project on the logits' subring: after the
     * re-randomization, so that the key switches' noise depends on a fresh
     * c_1 only */
    if (st == TS_OK && plan->mode == TS_LLM_SANITIZE_RD)
        st = project(ev, ct, plan->period);
    /* 5. flood c_0 */
    if (st == TS_OK && plan->mode == TS_LLM_SANITIZE_UNIFORM && plan->lambda > 0)
        st = ts_ckks_flood(ct, false, plan->flood_log2, prng);
    if (st == TS_OK && plan->mode == TS_LLM_SANITIZE_RD)
        st = ts_ckks_flood(ct, true, exp2(plan->sigma_log2), prng);
    ts_ckks_ciphertext_free(z);
    ts_ckks_plaintext_free(pt);
    ts_free(zeros);
    return st;
}
