/*
 * core/tfhe — the TFHE engine of tessera: LWE, RLWE and RGSW ciphertexts and
 * keys, the RGSW x RLWE external product and CMux, CGGI blind rotation,
 * sample extraction, LWE key switching, modulus switching, programmable
 * bootstrapping (PBS) with arbitrary look-up tables, multi-value PBS, and the
 * high-precision comparison HomComp (ROSETTA section 3.2, step 1).
 *
 * Two LWE domains (the KS-then-PBS pipeline of ROSETTA section 3.3):
 *
 *   big    LWE of dimension N_br modulo the NTT prime Q, under the key made of
 *          the coefficients of the RLWE secret s(X) (ts_tfhe_rlwe_key_lwe).
 *          PBS outputs and the LWEs extracted from CKKS live here.
 *   small  LWE of dimension n modulo q_lwe = 2^lwe_logq under the LWE key.
 *          Blind rotation consumes these.
 *
 * One PBS: big --(ModSwitch Q -> q_lwe, KeySwitch)--> small --(ModSwitch
 * q_lwe -> 2 N_br)--> BlindRotate(test polynomial) --> SampleExtract --> big.
 *
 * Conventions (all ciphertexts):
 *  - LWE (a, b) has phase b - <a, s> mod q; coefficients are stored reduced,
 *    in [0, q). RLWE (a(X), b(X)) has phase b - a*s in Z_Q[X]/(X^N + 1);
 *    tfhe keeps RLWE ciphertexts in coefficient form, RGSW rows in NTT form
 *    (core/math's bit-reversed evaluation order).
 *  - Message encoding with one bit of padding: m in [0, p) is encoded as
 *    mu = round(m * q / (2p)) (ts_tfhe_encode). The top half of the torus is
 *    left empty so the negacyclic rotation X^N = -1 never flips the sign of a
 *    look-up. p need not be a power of two (p <= N_br).
 *  - Test polynomial of a LUT f: Z_p -> Z with output scale delta_out:
 *        TV[j] = delta_out * f(floor(j * p / N)) mod Q,   j in [0, N).
 *    The PBS adds half a box, q/(4p), to the input before the rotation so that
 *    an input with noise in (-q/(4p), q/(4p)) lands in its own box.
 *  - Multi-value PBS (Carpov, Izabachene, Mollimard, "New techniques for
 *    multi-value input homomorphic evaluation and applications", CT-RSA 2019):
 *    one blind rotation of the shared accumulator TV0 = c * (1 + X + ... +
 *    X^{N-1}), c = round(delta_out / 2), then per LUT one multiplication by
 *    the factor polynomial v(X) = (T[0] + T[N-1]) + sum_{k>=1} (T[k] - T[k-1])
 *    X^k with T the LUT's box function in message units. The noise of the
 *    accumulator grows by ||v||_2, reported by ts_tfhe_lut_factor_norm2.
 *
 * Objects are opaque and single-owner; *_free accepts NULL; secret keys are
 * wiped when freed. An evaluator holds scratch memory and is not thread-safe:
 * use one per thread (keys and LUTs are read-only and may be shared).
 */
#ifndef TS_TFHE_H
#define TS_TFHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ parameters */

typedef enum {
    TS_TFHE_SECRET_BINARY = 0,  /* uniform in {0, 1} */
    TS_TFHE_SECRET_TERNARY = 1, /* uniform in {-1, 0, 1} */
} ts_tfhe_secret_t;

/*
 * A plain parameter literal (filled from a preset or YAML), validated once by
 * ts_tfhe_params_new into an immutable ts_tfhe_params_t.
 */
typedef struct ts_tfhe_params_lit {
    char name[64];
    bool insecure; /* test-only set: no security check */
    /* small LWE */
    uint32_t lwe_n;              /* n */
    uint32_t lwe_logq;           /* q_lwe = 2^lwe_logq, in [8, 32] */
    double lwe_sigma;            /* std of LWE / key-switching-key noise, q_lwe units */
    ts_tfhe_secret_t lwe_secret; /* binary or ternary; ternary uses two RGSW per coefficient */
    /* RLWE ring of the blind rotation */
    uint32_t log_n_br;            /* N_br = 2^log_n_br, in [4, 14] */
    uint32_t log_q_br;            /* Q: largest NTT prime below 2^log_q_br (when q_br == 0) */
    uint64_t q_br;                /* explicit prime Q = 1 mod 2N (e.g. the CKKS q0), or 0 */
    double rlwe_sigma;            /* std of RLWE/RGSW noise, Q units */
    ts_tfhe_secret_t rlwe_secret; /* secret of the RLWE ring */
    /* gadget of the bootstrapping key: base 2^br_log_base, br_levels signed digits */
    uint32_t br_log_base, br_levels;
    /* gadget of the LWE key-switching key (modulo q_lwe) */
    uint32_t ks_log_base, ks_levels;
} ts_tfhe_params_lit_t;

typedef struct ts_tfhe_params ts_tfhe_params_t;

/*
 * [out] lit: a named preset. Secure: "tfhe_std128" (binary LWE key, the
 * ROSETTA shape n = 1024, N_br = 2048, 53-bit Q), "tfhe_std128_ternary",
 * "tfhe_conv128" (the CKKS <-> TFHE conversion's set: N_br = 4096 on the
 * CKKS q_0 of up to 60 bits, n = 1024, BR gadget 2^15 x 3). Insecure, for tests: "tfhe_test_tiny",
 * "tfhe_test_small". TS_ENOENT otherwise.
 */
ts_status_t ts_tfhe_params_preset(const char *name, ts_tfhe_params_lit_t *lit);
/* Names of the presets, NULL-terminated. */
const char *const *ts_tfhe_params_preset_names(void);

/*
 * [in,out] lit: fields present in the YAML file override the values already
 * there (start from a preset with ts_tfhe_params_preset). Keys: the field names.
 * TS_ECONFIG / TS_EFORMAT with `err` filled on a bad file.
 */
ts_status_t ts_tfhe_params_load_yaml(const char *path, ts_tfhe_params_lit_t *lit,
                                     ts_cfg_error_t *err);

/*
 * Security of one LWE/RLWE instance against the Homomorphic Encryption
 * Standard (Albrecht et al. 2019, table for uniform ternary secrets, 128-bit
 * classical, sigma = 3.2): log2(q / sigma) must not exceed the table's
 * log2(q_max / 3.2) at dimension n (linear interpolation between the rows
 * 1024, 2048, 4096, ...), sigma must be at least 3.2, and n at least 1024.
 * Binary secrets are held to a bound one bit lower (the table does not cover
 * them; the margin is our conservative choice, see docs/parameters.md).
 * [out] margin_bits: bound - log2(q/sigma) (negative = insecure).
 */
ts_status_t ts_tfhe_security_check(uint32_t n, double log2_q, double sigma, ts_tfhe_secret_t secret,
                                   double *margin_bits);

/*
 * [out] out: validated parameters with the NTT tables of (N_br, Q).
 * TS_EPARAMS for inconsistent values, TS_ESECURITY when a non-insecure set
 * fails ts_tfhe_security_check for the small LWE or the RLWE ring.
 */
ts_status_t ts_tfhe_params_new(const ts_tfhe_params_lit_t *lit, ts_tfhe_params_t **out);
void ts_tfhe_params_free(ts_tfhe_params_t *params);

const ts_tfhe_params_lit_t *ts_tfhe_params_literal(const ts_tfhe_params_t *params);
uint32_t ts_tfhe_params_n_br(const ts_tfhe_params_t *params);  /* N_br */
uint64_t ts_tfhe_params_q_br(const ts_tfhe_params_t *params);  /* Q */
uint64_t ts_tfhe_params_q_lwe(const ts_tfhe_params_t *params); /* 2^lwe_logq */

/* ----------------------------------------------------------------- noise */

/*
 * Noise of one PBS chain from the analytic formulas (variances, in the units
 * of the stated modulus). The input of a blind rotation is the output of a
 * previous PBS, so this is the steady state of chained PBS.
 */
typedef struct ts_tfhe_noise {
    double var_fresh_small; /* fresh small LWE encryption, q_lwe^2 units */
    double var_br;          /* blind rotation output, Q^2 units (before ModSwitch) */
    double var_br_ext;      /* of which: gadget terms; the rest is decomposition rounding */
    double var_ms_big;      /* ModSwitch Q -> q_lwe rounding, q_lwe units */
    double var_ks;          /* key switching (key noise + dropped digits), q_lwe units */
    double var_ms_2n;       /* ModSwitch q_lwe -> 2N rounding, 2N units */
    double var_total_2n;    /* everything at the blind-rotation input, 2N units */
    uint64_t p;             /* message space used for the failure probability */
    double half_box_2n;     /* distance to the box edge, N / (2p), 2N units */
    double log2_pfail;      /* log2 of the probability that one PBS is wrong */
} ts_tfhe_noise_t;

/*
 * [out] out: the noise budget of PBS at message space p (2 <= p <= N_br),
 * with one bit of padding. Also the right numbers for a multi-value PBS
 * output when var_br is multiplied by the factor norm (see the LUT section).
 */
ts_status_t ts_tfhe_noise_estimate(const ts_tfhe_params_t *params, uint64_t p,
                                   ts_tfhe_noise_t *out);

/*
 * Writes a human-readable description of the parameters, their security
 * margins and the PBS failure probability for p = 2, 4, ..., 64 into buf
 * (always NUL-terminated). Returns the length it wanted (like snprintf).
 */
size_t ts_tfhe_params_describe(const ts_tfhe_params_t *params, char *buf, size_t size);

/* ------------------------------------------------------------ LWE plain */

/* round(m * q / (2p)) mod q: m in [0, p) with one bit of padding. */
uint64_t ts_tfhe_encode(uint64_t q, uint64_t m, uint64_t p);
/* round(phase * 2p / q) mod 2p: a value >= p means the padding bit was hit. */
uint64_t ts_tfhe_decode(uint64_t q, uint64_t phase, uint64_t p);
/* The centered representative of x mod q, in (-q/2, q/2]. */
int64_t ts_tfhe_centered(uint64_t x, uint64_t q);

/* ---------------------------------------------------------------- LWE keys */

typedef struct ts_tfhe_lwe_key ts_tfhe_lwe_key_t;

/* [out] out: a fresh secret of dimension n from `prng` (use ts_prng_new_os). */
ts_status_t ts_tfhe_lwe_key_new(uint32_t n, ts_tfhe_secret_t dist, ts_prng_t *prng,
                                ts_tfhe_lwe_key_t **out);
/* [out] out: a key with the given coefficients (each in [-1, 1] for binary/ternary use;
 * any small integers allowed, e.g. a Gaussian RLWE secret). */
ts_status_t ts_tfhe_lwe_key_from_coeffs(const int32_t *s, uint32_t n, ts_tfhe_secret_t dist,
                                        ts_tfhe_lwe_key_t **out);
void ts_tfhe_lwe_key_free(ts_tfhe_lwe_key_t *key); /* wipes */
uint32_t ts_tfhe_lwe_key_dim(const ts_tfhe_lwe_key_t *key);
ts_tfhe_secret_t ts_tfhe_lwe_key_dist(const ts_tfhe_lwe_key_t *key);

/* ------------------------------------------------------- LWE ciphertexts */

typedef struct ts_tfhe_lwe ts_tfhe_lwe_t;

/* [out] out: the zero ciphertext of dimension n modulo q (2 <= q <= 2^62). */
ts_status_t ts_tfhe_lwe_new(uint32_t n, uint64_t q, ts_tfhe_lwe_t **out);
void ts_tfhe_lwe_free(ts_tfhe_lwe_t *ct);
uint32_t ts_tfhe_lwe_dim(const ts_tfhe_lwe_t *ct);
uint64_t ts_tfhe_lwe_modulus(const ts_tfhe_lwe_t *ct);
/* The mask a[0..n) and the body b; writable, values must stay in [0, q). */
uint64_t *ts_tfhe_lwe_mask(ts_tfhe_lwe_t *ct);
uint64_t *ts_tfhe_lwe_body(ts_tfhe_lwe_t *ct);
const uint64_t *ts_tfhe_lwe_mask_const(const ts_tfhe_lwe_t *ct);
uint64_t ts_tfhe_lwe_body_get(const ts_tfhe_lwe_t *ct);
/* dst = src. TS_EMISMATCH when dimensions or moduli differ. */
ts_status_t ts_tfhe_lwe_copy(ts_tfhe_lwe_t *dst, const ts_tfhe_lwe_t *src);

/*
 * [in,out] ct (its n and q fixed at creation): an encryption of mu in [0, q)
 * with Gaussian noise of standard deviation sigma (q units); the mask from
 * `prng`. TS_EMISMATCH when the key dimension differs.
 */
ts_status_t ts_tfhe_lwe_encrypt(const ts_tfhe_lwe_key_t *key, ts_tfhe_lwe_t *ct, uint64_t mu,
                                double sigma, ts_prng_t *prng);
/* [out] phase = b - <a, s> mod q. */
ts_status_t ts_tfhe_lwe_phase(const ts_tfhe_lwe_key_t *key, const ts_tfhe_lwe_t *ct,
                              uint64_t *phase);
/* ct = (0, mu). */
void ts_tfhe_lwe_trivial(ts_tfhe_lwe_t *ct, uint64_t mu);

/* Linear operations, all modulo the shared modulus; out may alias the inputs. */
ts_status_t ts_tfhe_lwe_add(ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *x, const ts_tfhe_lwe_t *y);
ts_status_t ts_tfhe_lwe_sub(ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *x, const ts_tfhe_lwe_t *y);
void ts_tfhe_lwe_neg(ts_tfhe_lwe_t *ct);
void ts_tfhe_lwe_add_const(ts_tfhe_lwe_t *ct, uint64_t c); /* b += c (c < q) */
void ts_tfhe_lwe_mul_const(ts_tfhe_lwe_t *ct, int64_t k);  /* (a, b) *= k */

/*
 * Modulus switching: out_i = round(in_i * q_out / q_in) for every coefficient
 * (out has the dimension of in and its own modulus). Adds rounding noise of
 * variance about (1 + n * E[s^2]) / 12 in q_out units.
 */
ts_status_t ts_tfhe_lwe_modswitch(ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *in);

/* ------------------------------------------------------ LWE key switching */

typedef struct ts_tfhe_ksk ts_tfhe_ksk_t;

/*
 * [out] out: key-switching key from `from` (dimension N) to `to` (dimension
 * n), modulo q = 2^logq (logq <= 32), with gadget base 2^log_base and `levels` signed
 * digits taken from the top of the 2^logq word (log_base * levels <= logq; the
 * dropped low digits add rounding noise). Masks are expanded from the public
 * `seed` (32 bytes; NULL draws one from noise_prng) so the key can be stored
 * seeded; noise (std sigma) comes from noise_prng.
 */
ts_status_t ts_tfhe_ksk_new(const ts_tfhe_lwe_key_t *from, const ts_tfhe_lwe_key_t *to,
                            uint32_t logq, uint32_t log_base, uint32_t levels, double sigma,
                            const uint8_t *seed, ts_prng_t *noise_prng, ts_tfhe_ksk_t **out);
void ts_tfhe_ksk_free(ts_tfhe_ksk_t *ksk);
/* The seed of the masks. */
const uint8_t *ts_tfhe_ksk_seed(const ts_tfhe_ksk_t *ksk);

/*
 * out (dimension n, modulus 2^logq) = KeySwitch(in) where in has dimension N
 * and modulus 2^logq. TS_EMISMATCH otherwise. No allocation.
 */
ts_status_t ts_tfhe_lwe_keyswitch(const ts_tfhe_ksk_t *ksk, ts_tfhe_lwe_t *out,
                                  const ts_tfhe_lwe_t *in);

/* ------------------------------------------------------- RLWE and RGSW */

typedef struct ts_tfhe_rlwe_key ts_tfhe_rlwe_key_t;
typedef struct ts_tfhe_rlwe ts_tfhe_rlwe_t;
typedef struct ts_tfhe_rgsw ts_tfhe_rgsw_t;

/* [out] out: a fresh RLWE secret of the blind-rotation ring (params->rlwe_secret). */
ts_status_t ts_tfhe_rlwe_key_new(const ts_tfhe_params_t *params, ts_prng_t *prng,
                                 ts_tfhe_rlwe_key_t **out);
/* [out] out: the secret with coefficients s[0..N) (small integers, e.g. the
 * ring-switched CKKS secret). */
ts_status_t ts_tfhe_rlwe_key_from_coeffs(const ts_tfhe_params_t *params, const int32_t *s,
                                         ts_tfhe_rlwe_key_t **out);
void ts_tfhe_rlwe_key_free(ts_tfhe_rlwe_key_t *key); /* wipes */
/* [out] out: the LWE key (dimension N_br) of ciphertexts sample-extracted under `key`. */
ts_status_t ts_tfhe_rlwe_key_lwe(const ts_tfhe_rlwe_key_t *key, ts_tfhe_lwe_key_t **out);

ts_status_t ts_tfhe_rlwe_new(const ts_tfhe_params_t *params, ts_tfhe_rlwe_t **out);
void ts_tfhe_rlwe_free(ts_tfhe_rlwe_t *ct);
/* Coefficient-form polynomials a (i = 0) and b (i = 1), N words each, in [0, Q). */
uint64_t *ts_tfhe_rlwe_poly(ts_tfhe_rlwe_t *ct, int i);
ts_status_t ts_tfhe_rlwe_copy(ts_tfhe_rlwe_t *dst, const ts_tfhe_rlwe_t *src);
/* [in,out] ct: encryption of mu (N coefficients in [0, Q)), noise std params->rlwe_sigma. */
ts_status_t ts_tfhe_rlwe_encrypt(const ts_tfhe_rlwe_key_t *key, ts_tfhe_rlwe_t *ct,
                                 const uint64_t *mu, ts_prng_t *prng);
/* [out] phase: N coefficients of b - a*s in [0, Q). */
ts_status_t ts_tfhe_rlwe_phase(const ts_tfhe_rlwe_key_t *key, const ts_tfhe_rlwe_t *ct,
                               uint64_t *phase);
/* ct = (0, mu); mu may be NULL for zero. */
void ts_tfhe_rlwe_trivial(ts_tfhe_rlwe_t *ct, const uint64_t *mu);
/*
 * [out] out (dimension N_br, modulus Q): the LWE whose phase is coefficient
 * `idx` of the phase of ct, under ts_tfhe_rlwe_key_lwe's key.
 */
ts_status_t ts_tfhe_rlwe_sample_extract(const ts_tfhe_rlwe_t *ct, uint32_t idx, ts_tfhe_lwe_t *out);

ts_status_t ts_tfhe_rgsw_new(const ts_tfhe_params_t *params, ts_tfhe_rgsw_t **out);
void ts_tfhe_rgsw_free(ts_tfhe_rgsw_t *ct);
/* [in,out] ct: RGSW encryption of the integer m (times X^0), gadget of the bootstrapping key. */
ts_status_t ts_tfhe_rgsw_encrypt(const ts_tfhe_rlwe_key_t *key, ts_tfhe_rgsw_t *ct, int64_t m,
                                 ts_prng_t *prng);

/* -------------------------------------------------------------- keys */

typedef struct ts_tfhe_evalkey ts_tfhe_evalkey_t;

/*
 * [out] out: the bootstrapping key (RGSW encryptions of the small LWE key under
 * the RLWE key, NTT form; two per coefficient for a ternary LWE key) and the
 * key-switching key from the extracted key to the small LWE key. Masks are
 * expanded from `seed` (NULL: a fresh one from prng), noise from prng (use an
 * OS-keyed CSPRNG).
 */
ts_status_t ts_tfhe_evalkey_new(const ts_tfhe_params_t *params, const ts_tfhe_lwe_key_t *lwe_key,
                                const ts_tfhe_rlwe_key_t *rlwe_key, const uint8_t *seed,
                                ts_prng_t *prng, ts_tfhe_evalkey_t **out);
void ts_tfhe_evalkey_free(ts_tfhe_evalkey_t *ek);
/* Bytes held by the key (bootstrapping + key-switching key, expanded). */
size_t ts_tfhe_evalkey_bytes(const ts_tfhe_evalkey_t *ek);

/* ---------------------------------------------------------- serialization */

/* SHA-256 of the canonical encoding of the parameters (the envelope's parameter id). */
ts_status_t ts_tfhe_params_id(const ts_tfhe_params_t *params, uint8_t id[32]);
/*
 * Evaluation key <-> core/serial envelope (TS_OBJ_TFHE_BOOTSTRAP_KEY, bound
 * to the parameter id). Seeded: the seed plus the bodies of every RGSW and
 * key-switching row (bit-packed); masks are regenerated on load. [out] *buf
 * is ts_malloc'd. Deserialization checks the envelope, the parameter id, every
 * count and every residue (TS_EFORMAT / TS_EMISMATCH) before use.
 */
ts_status_t ts_tfhe_evalkey_serialize(const ts_tfhe_evalkey_t *ek, uint8_t **buf, size_t *size);
ts_status_t ts_tfhe_evalkey_deserialize(const ts_tfhe_params_t *params, const uint8_t *buf,
                                        size_t size, ts_tfhe_evalkey_t **out);
/* An LWE ciphertext of either shape of the parameters (big or small). */
ts_status_t ts_tfhe_lwe_serialize(const ts_tfhe_params_t *params, const ts_tfhe_lwe_t *ct,
                                  uint8_t **buf, size_t *size);
ts_status_t ts_tfhe_lwe_deserialize(const ts_tfhe_params_t *params, const uint8_t *buf, size_t size,
                                    ts_tfhe_lwe_t **out);
/* The two secret keys (TS_OBJ_TFHE_SECRET_KEY; free the buffer with ts_free_secret). */
ts_status_t ts_tfhe_secret_serialize(const ts_tfhe_params_t *params,
                                     const ts_tfhe_lwe_key_t *lwe_key,
                                     const ts_tfhe_rlwe_key_t *rlwe_key, uint8_t **buf,
                                     size_t *size);
ts_status_t ts_tfhe_secret_deserialize(const ts_tfhe_params_t *params, const uint8_t *buf,
                                       size_t size, ts_tfhe_lwe_key_t **lwe_key,
                                       ts_tfhe_rlwe_key_t **rlwe_key);

/* ------------------------------------------------------------ evaluator */

typedef struct ts_tfhe_evaluator ts_tfhe_evaluator_t;

/*
 * [out] out: scratch space for the parameters; `ek` (borrowed, must outlive
 * the evaluator) may be NULL when only external products / CMux are used.
 */
ts_status_t ts_tfhe_evaluator_new(const ts_tfhe_params_t *params, const ts_tfhe_evalkey_t *ek,
                                  ts_tfhe_evaluator_t **out);
void ts_tfhe_evaluator_free(ts_tfhe_evaluator_t *ev);

/* out = c [x] in (RGSW x RLWE, NTT form inside). out may alias in. No allocation. */
ts_status_t ts_tfhe_external_product(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *out,
                                     const ts_tfhe_rgsw_t *c, const ts_tfhe_rlwe_t *in);
/* out = c0 + sel [x] (c1 - c0): c1 when sel encrypts 1, c0 when 0. out may alias c0. */
ts_status_t ts_tfhe_cmux(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *out, const ts_tfhe_rgsw_t *sel,
                         const ts_tfhe_rlwe_t *c0, const ts_tfhe_rlwe_t *c1);

/*
 * Big -> small: ModSwitch Q -> q_lwe, then key switching to the small key.
 * in: dimension N_br modulo Q; out: dimension n modulo q_lwe.
 */
ts_status_t ts_tfhe_keyswitch_to_small(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *out,
                                       const ts_tfhe_lwe_t *in);

/*
 * [in,out] acc := acc * X^{-phase~} where phase~ = ModSwitch(in, 2N) is the
 * rounded phase of the small LWE `in` (dimension n, modulus q_lwe, or already
 * modulo 2N): CGGI blind rotation with the bootstrapping key. The accumulator
 * may be any RLWE ciphertext (a trivial test polynomial or an encrypted one).
 */
ts_status_t ts_tfhe_blind_rotate(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *acc,
                                 const ts_tfhe_lwe_t *in);

/*
 * [in,out] acc := acc * X^{-phase~} for the big LWE `in` that encodes an index
 * m in [0, p_in) as ts_tfhe_encode(Q, m, p_in): key switching to the small
 * key, half a box of offset, then the blind rotation. When acc holds a test
 * polynomial (trivial or encrypted, e.g. candidate values built online as in
 * ROSETTA's construct-then-select, section 3.2) whose coefficients
 * [j N / p_in, (j + 1) N / p_in) all hold value j, coefficient 0 of the result
 * holds value m. The result stays an RLWE ciphertext (for Trace/repacking).
 */
ts_status_t ts_tfhe_blind_rotate_index(ts_tfhe_evaluator_t *ev, ts_tfhe_rlwe_t *acc,
                                       const ts_tfhe_lwe_t *in, uint64_t p_in);

/* ------------------------------------------------------------------ LUTs */

typedef struct ts_tfhe_lut ts_tfhe_lut_t;

/* A look-up function: m in [0, p_in) to an integer (taken mod Q after scaling). */
typedef int64_t (*ts_tfhe_lut_fn)(void *ctx, uint64_t m);

/* round(Q / (2 p)): the scale of messages in [0, p) with one bit of padding. */
uint64_t ts_tfhe_delta(uint64_t q, uint64_t p);

/*
 * [out] out: LUT of f over inputs in [0, p_in) (2 <= p_in <= N_br), output
 * value delta_out * f(m) mod Q. Builds the test polynomial (see the top of
 * this file) and the multi-value factor polynomial.
 */
ts_status_t ts_tfhe_lut_new(const ts_tfhe_params_t *params, uint64_t p_in, ts_tfhe_lut_fn f,
                            void *ctx, uint64_t delta_out, ts_tfhe_lut_t **out);
/* The same from a table of p_in values. */
ts_status_t ts_tfhe_lut_from_table(const ts_tfhe_params_t *params, uint64_t p_in,
                                   const int64_t *table, uint64_t delta_out, ts_tfhe_lut_t **out);
void ts_tfhe_lut_free(ts_tfhe_lut_t *lut);
/* The test polynomial (N coefficients mod Q). */
const uint64_t *ts_tfhe_lut_test_poly(const ts_tfhe_lut_t *lut);
/* ||v||_2^2 of the multi-value factor polynomial (noise growth of ts_tfhe_pbs_multi). */
double ts_tfhe_lut_factor_norm2(const ts_tfhe_lut_t *lut);

/*
 * Programmable bootstrapping: out (big) = LUT(in (big)), both dimension N_br
 * modulo Q; in encodes m in [0, lut's p_in) as ts_tfhe_encode(Q, m, p_in).
 * out may alias in.
 */
ts_status_t ts_tfhe_pbs(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *in,
                        const ts_tfhe_lut_t *lut);
/* The same starting from a small LWE (dimension n modulo q_lwe). */
ts_status_t ts_tfhe_pbs_small(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *out,
                              const ts_tfhe_lwe_t *in_small, const ts_tfhe_lut_t *lut);
/*
 * Multi-value PBS: count LUTs (same p_in) from one blind rotation (CIM19, see
 * the top of this file). out[i] = luts[i](in). No out[i] may alias in.
 */
ts_status_t ts_tfhe_pbs_multi(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *const *out,
                              const ts_tfhe_lwe_t *in, const ts_tfhe_lut_t *const *luts,
                              size_t count);

/* --------------------------------------------------------------- HomComp */

/*
 * HomComp (ROSETTA section 3.2 step 1, after Bian et al. 2023 and the
 * large-precision sign of Liu, Micciancio, Song, Asiacrypt 2022):
 * out = [x >= tau] * delta_out, where `in` (big) encrypts x in [0, 2^bits)
 * as ts_tfhe_encode(Q, x, 2^bits) and tau is a plaintext in [0, 2^bits].
 * The difference x - tau is floored digit by digit (digits of
 * ts_tfhe_homcomp_digit_bits; two chained PBS per digit) and its sign taken
 * by a last PBS. bits must not exceed ts_tfhe_homcomp_max_bits (the noise of
 * the small LWE domain limits it); TS_ERANGE otherwise.
 */
ts_status_t ts_tfhe_homcomp(ts_tfhe_evaluator_t *ev, ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *in,
                            uint32_t bits, uint64_t tau, uint64_t delta_out);
/* The digit size HomComp uses at `bits`: the largest b in [2, 8] with failure
 * <= 2^-64 for every PBS; 0 when no digit size is safe. */
uint32_t ts_tfhe_homcomp_digit_bits(const ts_tfhe_params_t *params, uint32_t bits);
/* The largest `bits` with per-PBS failure probability <= 2^-64 (0 when none). */
uint32_t ts_tfhe_homcomp_max_bits(const ts_tfhe_params_t *params);
/* Number of PBS one HomComp at `bits` costs. */
uint32_t ts_tfhe_homcomp_pbs_count(const ts_tfhe_params_t *params, uint32_t bits);

#ifdef __cplusplus
}
#endif

#endif /* TS_TFHE_H */
