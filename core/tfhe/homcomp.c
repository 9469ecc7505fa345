/*
 * core/tfhe/homcomp.c — HomComp: [x >= tau] for an encrypted x of more bits
 * than one PBS resolves (ROSETTA section 3.2 step 1, citing Bian et al. 2023;
 * the flooring follows Liu, Micciancio, Song, "Large-precision homomorphic
 * sign evaluation using FHEW/TFHE bootstrapping", Asiacrypt 2022).
 *
 * With d = x - tau in (-2^bits, 2^bits) and Delta = Q / 2^(bits+1), the big
 * ciphertext holds (d + 1/2) Delta: the sign of the phase is [x < tau] and the
 * half step keeps every value half a step away from a box edge. Digits of b
 * bits are removed from the bottom, level i working on Delta_i = Delta 2^(b i):
 *
 *   window  the small ciphertext (after key switching) reduced modulo
 *           W_i = 2^b Delta_i (in q_lwe units), which keeps t = d mod 2^b,
 *           switched to 2N: t sits at (t + 1/2) 2N / 2^b.
 *   PBS 1   constant test polynomial c = 2^(b-2) Delta_i: returns +c when
 *           t < 2^(b-1), -c otherwise (the negacyclic sign, no padding needed);
 *           ct += r1 - c clears bit b-1 of d.
 *   PBS 2   t now lies in the positive half: the test polynomial
 *           TV[j] = Delta_i floor(j 2^b / 2N) returns t Delta_i; ct -= r2
 *           clears the digit.
 *   then    ct += (Delta_{i+1} - Delta_i) / 2 restores the half step.
 *
 * After the last level the remaining d has at most b bits (two's complement)
 * and one sign PBS on the whole small modulus gives +-delta_out/2; adding
 * delta_out/2 yields [d >= 0] delta_out. Floor keeps the sign of d, so the
 * answer is exact whenever no PBS fails.
 */
#include <math.h>
#include <string.h>

#include "core/tfhe/tfhe_int.h"

/* Noise (variance, q_lwe units) of a small LWE obtained by key switching a
 * big LWE that carries PBS-output noise. */
static double small_var(const ts_tfhe_params_t *p)
{
    ts_tfhe_noise_t nz;
    ts_tfhe_noise_estimate(p, 2, &nz);
    double r = (double)p->q_lwe / (double)p->q_br;
    return nz.var_br * r * r * 4.0 /* a few PBS outputs summed */ + nz.var_ms_big + nz.var_ks;
}

static double ms2n_var(const ts_tfhe_params_t *p)
{
    double s2 = p->lit.lwe_secret == TS_TFHE_SECRET_BINARY ? 0.5 : 2.0 / 3.0;
    return (1.0 + p->lit.lwe_n * s2) / 12.0;
}

/* log2 failure of the worst PBS of HomComp at `bits` with digits of b bits:
 * the first window, where the small-domain noise is scaled up the most. */
static double homcomp_log2_fail(const ts_tfhe_params_t *p, uint32_t bits, uint32_t b)
{
    double N = p->n_br, q = (double)p->q_lwe;
    double w0 = bits + 1 <= b ? q : ldexp(q, (int)b - (int)(bits + 1)); /* q_lwe units */
    double scale = 2.0 * N / w0;
    double v = small_var(p) * scale * scale + (w0 > 2.0 * N ? ms2n_var(p) : 0.0);
    return ts__tfhe_log2_tail(N / ldexp(1.0, (int)b), v);
}

uint32_t ts_tfhe_homcomp_digit_bits(const ts_tfhe_params_t *params, uint32_t bits)
{
    /* the largest digit (fewest PBS) that keeps every PBS below 2^-64 */
    for (uint32_t b = 8; b >= 2; b--) {
        if (b <= params->lit.log_n_br && homcomp_log2_fail(params, bits, b) <= -64.0)
            return b;
    }
    return 0;
}

uint32_t ts_tfhe_homcomp_max_bits(const ts_tfhe_params_t *params)
{
    uint32_t best = 0;
    for (uint32_t bits = 1; bits + 2 < params->lit.lwe_logq && bits <= 40; bits++) {
        if (ts_tfhe_homcomp_digit_bits(params, bits) == 0)
            break;
        best = bits;
    }
    return best;
}

static uint32_t homcomp_levels(uint32_t bits, uint32_t b)
{
    return bits + 1 > b ? (bits + 1 - b + b - 1) / b : 0;
}

uint32_t ts_tfhe_homcomp_pbs_count(const ts_tfhe_params_t *params, uint32_t bits)
{
    uint32_t b = ts_tfhe_homcomp_digit_bits(params, bits);
    return b ? 2 * homcomp_levels(bits, b) + 1 : 0;
}

/* round(Q * num / 2^den_log) */
static uint64_t scaled(uint64_t q, uint64_t num, uint32_t den_log)
{
    ts_u128_t v = (ts_u128_t)q * num;
    if (den_log == 0)
        return (uint64_t)(v % q);
    v += (ts_u128_t)1 << (den_log - 1);
    return (uint64_t)((v >> den_log) % q);
}

/* One PBS of HomComp: key switch `ct` to small, take the window of log size
 * window_log, blind rotate the test polynomial held in ev->r1 (copied), extract
 * into `out`. */
static ts_status_t window_pbs(ts_tfhe_evaluator_t *ev, const ts_tfhe_lwe_t *ct, uint32_t window_log,
                              const uint64_t *tv, ts_tfhe_lwe_t *out)
{
    ts_status_t st = ts_tfhe_keyswitch_to_small(ev, ev->small2, ct);
    if (st != TS_OK)
        return st;
    ts__tfhe_small_to_2n(ev, ev->small2, window_log, ev->phase2n);
    ts_tfhe_rlwe_trivial(ev->r1, tv);
    ts__tfhe_blind_rotate_raw(ev, ev->r1, ev->phase2n);
    return ts_tfhe_rlwe_sample_extract(ev->r1, 0, out);
}

ts_status_t ts_tfhe_homcomp(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *in,
                            uint32_t bits, uint64_t tau, uint64_t delta_out)
{
    if (!ev || !out || !in || bits == 0 || bits > 40)
        return TS_EINVAL;
    if (!ev->ek)
        return TS_ENOKEY;
    const ts_tfhe_params_t *p = ev->params;
    const uint32_t n = p->n_br, lq = p->lit.lwe_logq;
    const uint64_t q = p->q_br;
    if (in->n != n || in->q != q || out->n != n || out->q != q)
        return TS_EMISMATCH;
    const uint32_t b = ts_tfhe_homcomp_digit_bits(p, bits);
    if (b == 0)
        return TS_ERANGE;
    if (tau == 0 || tau >= (1ull << bits)) {
        /* decided by the plaintext alone */
        ts_tfhe_lwe_trivial(out, tau == 0 ? delta_out : 0);
        return TS_OK;
    }
    const uint32_t levels = homcomp_levels(bits, b);
    uint64_t *tv = ts_malloc(n * sizeof(uint64_t));
    if (!tv)
        return TS_ENOMEM;
    ts_status_t st = TS_OK;
    ts_tfhe_lwe_t *ct = ev->big1, *r = ev->big2;
    /* ct = x - tau + 1/2, at Delta = Q / 2^(bits+1) */
    if ((st = ts_tfhe_lwe_copy(ct, in)) != TS_OK)
        goto out_free;
    ts_tfhe_lwe_add_const(ct, q - scaled(q, tau, bits + 1));
    ts_tfhe_lwe_add_const(ct, scaled(q, 1, bits + 2));
    for (uint32_t i = 0; i < levels; i++) {
        /* Delta_i = Q 2^(b i) / 2^(bits+1); window 2^b Delta_i in q_lwe units */
        uint32_t dl = bits + 1 - b * i; /* Delta_i = Q / 2^dl */
        uint32_t window_log = lq + b - dl;
        uint64_t c = scaled(q, 1ull << (b - 2), dl);
        for (uint32_t j = 0; j < n; j++)
            tv[j] = c;
        if ((st = window_pbs(ev, ct, window_log, tv, r)) != TS_OK)
            goto out_free;
        ts_tfhe_lwe_add(ct, ct, r);
        ts_tfhe_lwe_add_const(ct, q - c);
        /* identity on the positive half: TV[j] = Delta_i floor(j 2^b / 2N) */
        for (uint32_t j = 0; j < n; j++)
            tv[j] = scaled(q, ((uint64_t)j << b) / (2ull * n), dl);
        if ((st = window_pbs(ev, ct, window_log, tv, r)) != TS_OK)
            goto out_free;
        ts_tfhe_lwe_sub(ct, ct, r);
        /* half step of the next level: (Delta_{i+1} - Delta_i) / 2 */
        uint64_t h_next = scaled(q, 1, dl - b + 1), h_cur = scaled(q, 1, dl + 1);
        ts_tfhe_lwe_add_const(ct, ts_mod_sub(h_next, h_cur, q));
    }
    /* the sign of the whole phase */
    uint64_t half = delta_out / 2;
    for (uint32_t j = 0; j < n; j++)
        tv[j] = half % q;
    if ((st = window_pbs(ev, ct, lq, tv, out)) != TS_OK)
        goto out_free;
    ts_tfhe_lwe_add_const(out, (delta_out - half) % q);
out_free:
    ts_free(tv);
    return st;
}
