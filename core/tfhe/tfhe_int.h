/*
 * core/tfhe internals shared by the files of the module (not a public header).
 */
#ifndef TS_TFHE_INT_H
#define TS_TFHE_INT_H

#include "core/math/math.h"
#include "core/rlwe/rlwe.h"
#include "core/tfhe/tfhe.h"

struct ts_tfhe_params {
    ts_tfhe_params_lit_t lit;
    uint32_t n_br;
    uint64_t q_br;
    uint64_t q_lwe;
    ts_modulus_t mod_br;
    ts_ntt_table_t *ntt;
    /* the bootstrapping key's gadget (core/rlwe's multiply-shift
     * decomposition): base 2^br_log_base, br_levels digits, gad.g[j] =
     * round(Q / B^(j+1)) */
    ts_gadget_t gad;
};

struct ts_tfhe_lwe_key {
    uint32_t n;
    ts_tfhe_secret_t dist;
    int32_t *s; /* n coefficients */
};

struct ts_tfhe_lwe {
    uint32_t n;
    uint64_t q;
    uint64_t b;
    uint64_t *a; /* n words, allocated with the struct */
};

struct ts_tfhe_ksk {
    uint32_t n_in, n_out;
    uint32_t logq, log_base, levels;
    uint64_t q;
    uint8_t seed[TS_SEED_BYTES];
    /* row (i, j) = LWE_to(s_from[i] * q / B^(j+1)): n_out mask words then the body,
     * at data + ((size_t)i * levels + j) * (n_out + 1); q <= 2^32, so 32-bit
     * words with wrap-around arithmetic (2^32 is a multiple of q) */
    uint32_t *data;
};

struct ts_tfhe_rlwe_key {
    const ts_tfhe_params_t *params;
    int32_t *s;      /* N coefficients */
    uint64_t *s_ntt; /* NTT form mod Q */
};

struct ts_tfhe_rlwe {
    const ts_tfhe_params_t *params;
    uint64_t *a, *b; /* coefficient form, N words each (one block) */
};

/* 2 * levels rows, each (a, b) in NTT form: row j < levels has phase
 * e - m g_j s (the gadget term folded into b, so masks stay seeded), row
 * levels + j has phase e + m g_j, with g_j = round(Q / B^(j+1)). */
struct ts_tfhe_rgsw {
    const ts_tfhe_params_t *params;
    uint64_t *rows; /* [2 * levels][2][N] */
};

struct ts_tfhe_evalkey {
    const ts_tfhe_params_t *params;
    uint32_t n;            /* small LWE dimension */
    ts_tfhe_secret_t dist; /* binary: n RGSW; ternary: 2n (s = +1, s = -1) */
    uint8_t seed[TS_SEED_BYTES];
    uint64_t *bsk; /* count * rgsw_words, NTT form */
    size_t rgsw_words;
    ts_tfhe_ksk_t *ksk;
};

struct ts_tfhe_evaluator {
    const ts_tfhe_params_t *params;
    const ts_tfhe_evalkey_t *ek;
    uint64_t *dig;                 /* 2 * levels * N: decomposed digits, NTT form */
    uint64_t *acc;                 /* 2 * N: NTT-domain accumulator of the external product */
    uint64_t *tmp;                 /* 2 * N */
    uint64_t *tmp2;                /* 2 * N */
    ts_tfhe_rlwe_t *r0, *r1, *r2;  /* RLWE scratch */
    ts_tfhe_lwe_t *small, *small2; /* n, q_lwe */
    ts_tfhe_lwe_t *mid;            /* N_br, q_lwe */
    ts_tfhe_lwe_t *big1, *big2;    /* N_br, Q */
    uint32_t *phase2n;             /* n + 1 rotations */
};

struct ts_tfhe_lut {
    const ts_tfhe_params_t *params;
    uint64_t p_in;
    uint64_t delta_out;
    uint64_t *tv;          /* test polynomial, N coefficients mod Q */
    uint64_t *factor;      /* multi-value factor v(X) in NTT form */
    uint64_t *factor_coef; /* the same in coefficient form (mod Q) */
    double factor_norm2;   /* ||v||^2 in message units */
};

/* ----------------------------------------------------------- helpers */

/* acc[t] -= m * row[t] (mod 2^32) for t < n: the key-switching inner loop. */
void ts__tfhe_ks_row_sub(uint32_t *acc, const uint32_t *row, uint32_t m, size_t n);
void ts__tfhe_ks_row_sub_avx2(uint32_t *acc, const uint32_t *row, uint32_t m, size_t n);
/* Masks of key-switching row `row` (n_out words, reduced) from the seeded stream. */
ts_status_t ts__tfhe_ksk_mask_row(ts_prng_t *mask, uint32_t *row, uint32_t n_out, uint64_t q);
/* log2 P(|X| >= t), X ~ N(0, var). */
double ts__tfhe_log2_tail(double t, double var);
/* n values uniform in [0, q) (rejection on masked 64-bit words). */
ts_status_t ts__tfhe_uniform(ts_prng_t *prng, uint64_t q, uint64_t *out, size_t n);
/* A rounded Gaussian of standard deviation sigma (Box-Muller on the prng). */
ts_status_t ts__tfhe_gauss(ts_prng_t *prng, double sigma, int64_t *out);
/* x mod q for a signed x. */
static inline uint64_t ts__tfhe_from_signed(int64_t x, uint64_t q)
{
    int64_t r = x % (int64_t)q;
    return (uint64_t)(r < 0 ? r + (int64_t)q : r);
}
/* round(x * q_out / q_in) mod q_out for x in [0, q_in). */
static inline uint64_t ts__tfhe_modswitch1(uint64_t x, uint64_t q_in, uint64_t q_out)
{
    ts_u128_t num = (ts_u128_t)x * q_out + (q_in >> 1);
    uint64_t r = (uint64_t)(num / q_in);
    return r >= q_out ? r - q_out : r;
}

/* out = X^k * in in Z_Q[X]/(X^N+1), k in [0, 2N); out must not alias in. */
void ts__tfhe_poly_rotate(uint64_t *out, const uint64_t *in, uint32_t n, uint32_t k, uint64_t q);
/* out = X^k * in - in (same rules). */
void ts__tfhe_poly_rotate_minus(uint64_t *out, const uint64_t *in, uint32_t n, uint32_t k,
                                uint64_t q);
/* Signed gadget decomposition of the N coefficients of `in` (mod Q) into
 * `levels` digit polynomials (each mod Q, coefficients in [-B/2, B/2]) at out + j * N. */
void ts__tfhe_decompose(const ts_tfhe_params_t *params, const uint64_t *in, uint64_t *out);
/* The gadget value g_j = round(Q / B^(j+1)). */
uint64_t ts__tfhe_gadget(const ts_tfhe_params_t *params, uint32_t j);
/* Number of uint64 words of one RGSW. */
size_t ts__tfhe_rgsw_words(const ts_tfhe_params_t *params);
/* Encrypt m under key into the RGSW rows at `rows`, masks from mask_prng. */
ts_status_t ts__tfhe_rgsw_encrypt_raw(const ts_tfhe_rlwe_key_t *key, uint64_t *rows, int64_t m,
                                      ts_prng_t *mask_prng, ts_prng_t *noise_prng);
/* acc += rgsw [x] (a, b) where the RLWE is given by coefficient polynomials. Result to out. */
void ts__tfhe_external_product_raw(ts_tfhe_evaluator_t *ev, uint64_t *out_a, uint64_t *out_b,
                                   const uint64_t *rows, const uint64_t *in_a, const uint64_t *in_b,
                                   bool accumulate);

/* Blind rotation by an explicit modswitched phase vector (n + 1 values in [0, 2N):
 * phase2n[0..n) the mask, phase2n[n] the body). */
void ts__tfhe_blind_rotate_raw(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *acc,
                               const uint32_t *phase2n);
/* Small LWE modulo 2^w -> phase vector modulo 2N, taking the bits [w - window_log, w)
 * ... i.e. coefficients reduced mod 2^window_log then switched to 2N. */
void ts__tfhe_small_to_2n(const ts_tfhe_evaluator_t *ev, const ts_tfhe_lwe_t *in,
                          uint32_t window_log, uint32_t *phase2n);

#endif
