/*
 * core/ckks — the CKKS scheme (Cheon, Kim, Kim, Song, Asiacrypt 2017) in its
 * full-RNS form (Cheon, Han, Kim, Kim, Song, SAC 2018) with hybrid key
 * switching (Han, Ki, CT-RSA 2020).
 *
 * Parameters. A preset is a plain literal (ts_ckks_params_literal_t) filled
 * from YAML (configs/params/NAME.yaml) and validated once into an immutable,
 * reference-counted ts_ckks_params_t. Validation generates the primes that
 * are given by bit size only, checks that every prime is NTT-friendly
 * (q = 1 mod 2N) and distinct, and applies the security gate: log2(QP) must be
 * at most the bound for the ring degree and the secret distribution at
 * 128-bit classical security (see ts_ckks_security_max_logqp). Literals
 * marked `insecure: true` are only admitted when the caller passes
 * allow_insecure, and then the gate is skipped.
 *
 * Levels. The modulus chain is Q = q_0 * q_1 * ... * q_L. A ciphertext at
 * level l lives modulo Q_l = q_0 * ... * q_l; rescaling divides by q_l and
 * moves to level l - 1. q_0 is the base prime (kept to the end), q_1..q_L are
 * the scale primes, dropped from the top. Level L (max_level) is the fresh
 * level. Note: FHElium numbers levels the other way ("level 0" = all primes);
 * its level k is our level L - k.
 *
 * Scale. Each plaintext and ciphertext carries its scale as a double (exact
 * for powers of two, exact up to rounding of one multiplication after a
 * rescale) and its log2; slot values are coefficients / scale.
 */
#ifndef TS_CKKS_H
#define TS_CKKS_H

#include <complex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"
#include "core/ring/ring.h"
#include "core/rlwe/rlwe.h"
#include "core/serial/serial.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ parameters */

#define TS_CKKS_MAX_Q      64 /* primes in the Q chain */
#define TS_CKKS_MAX_P      16 /* special (key-switching) primes */
#define TS_CKKS_NAME_BYTES 64

typedef enum {
    TS_CKKS_SECRET_TERNARY = 0,        /* uniform over {-1, 0, 1} (dense) */
    TS_CKKS_SECRET_SPARSE_TERNARY = 1, /* exactly h nonzero coefficients in {-1, 1} */
} ts_ckks_secret_dist_t;

/*
 * A parameter literal: plain data, filled by hand or from YAML. Either the Q
 * chain is given as explicit primes (q, q_count) or as bit sizes (logq,
 * logq_count); likewise P. logq[0] / q[0] is the base prime.
 */
typedef struct ts_ckks_params_literal {
    char name[TS_CKKS_NAME_BYTES];
    int64_t log_n;               /* ring degree N = 2^log_n, 3..17 */
    int64_t logq[TS_CKKS_MAX_Q]; /* bit sizes of q_0..q_L (20..61) */
    size_t logq_count;
    int64_t q[TS_CKKS_MAX_Q]; /* or explicit primes */
    size_t q_count;
    int64_t logp[TS_CKKS_MAX_P]; /* bit sizes of the special primes */
    size_t logp_count;
    int64_t p[TS_CKKS_MAX_P]; /* or explicit primes */
    size_t p_count;
    int64_t dnum;           /* key-switching digits; 0 = ceil(#Q / #P) */
    double scale_log2;      /* default scale 2^scale_log2 */
    int secret;             /* ts_ckks_secret_dist_t */
    int64_t hamming_weight; /* sparse ternary only */
    int64_t log_slots;      /* default slot count 2^log_slots; 0 = N/2 */
    double sigma;           /* error standard deviation; 0 = 3.19 */
    bool insecure;          /* test-only set: refused unless allowed */
} ts_ckks_params_literal_t;

/* Fill a literal with the defaults (everything zero, sigma 3.19, ternary). */
void ts_ckks_params_literal_init(ts_ckks_params_literal_t *lit);

/*
 * Load a literal from a YAML preset. Keys: name, log_n, logq | q, logp | p,
 * dnum, scale_log2, secret (ternary | sparse_ternary), hamming_weight,
 * log_slots, sigma, insecure. Unknown or duplicate keys, wrong types and
 * out-of-range values are TS_ECONFIG with the position in *err (optional).
 * The literal is initialised first (ts_ckks_params_literal_init).
 */
ts_status_t ts_ckks_params_literal_load_file(const char *path, ts_ckks_params_literal_t *lit,
                                             ts_cfg_error_t *err);
ts_status_t ts_ckks_params_literal_load_string(const char *text, size_t size, const char *name,
                                               ts_ckks_params_literal_t *lit, ts_cfg_error_t *err);

/*
 * The security gate: the largest admissible log2(QP) for ring degree 2^log_n
 * and the given secret at 128-bit classical security. Dense ternary: the lower
 * of the HE Standard v1.1 (2018) and the 2024 Security Guidelines
 * (ePrint 2024/463) tables. Sparse ternary: lattice-estimator results for the
 * sparse sets published by libraries (SparseLWEkit); rows exist for h >= 192
 * at N = 2^15..2^17, h >= 128 at N = 2^17 and h >= 32 at N = 2^16 only.
 * Returns TS_ESECURITY for combinations no table covers.
 */
ts_status_t ts_ckks_security_max_logqp(int log_n, int secret, int64_t hamming_weight,
                                       double *max_logqp);
/* TS_OK when logqp <= the bound, TS_ESECURITY otherwise (or when unknown). */
ts_status_t ts_ckks_security_check(int log_n, int secret, int64_t hamming_weight, double logqp);

typedef struct ts_ckks_params ts_ckks_params_t;

/*
 * Validate a literal into a parameter object (refcount 1). Errors:
 * TS_EPARAMS (malformed: not NTT-friendly, not prime, duplicates, bad sizes,
 * scale not below the top primes, ...), TS_ESECURITY (the gate refuses it, or
 * it is marked insecure and allow_insecure is false), TS_ENOMEM.
 */
ts_status_t ts_ckks_params_new(const ts_ckks_params_literal_t *lit, bool allow_insecure,
                               ts_ckks_params_t **out);
/* Load a YAML preset and validate it. */
ts_status_t ts_ckks_params_load_file(const char *path, bool allow_insecure, ts_ckks_params_t **out,
                                     ts_cfg_error_t *err);
/* Take one more reference; returns params. */
ts_ckks_params_t *ts_ckks_params_ref(ts_ckks_params_t *params);
/* Drop one reference; frees at zero. Accepts NULL. */
void ts_ckks_params_free(ts_ckks_params_t *params);

const char *ts_ckks_params_name(const ts_ckks_params_t *params);
int ts_ckks_params_log_n(const ts_ckks_params_t *params);
size_t ts_ckks_params_n(const ts_ckks_params_t *params);
/* Default slot count (a power of two, at most N/2) and its log2. */
size_t ts_ckks_params_slots(const ts_ckks_params_t *params);
int ts_ckks_params_log_slots(const ts_ckks_params_t *params);
/* L: the top level (number of Q primes - 1). */
int ts_ckks_params_max_level(const ts_ckks_params_t *params);
size_t ts_ckks_params_q_count(const ts_ckks_params_t *params);
size_t ts_ckks_params_p_count(const ts_ckks_params_t *params);
uint64_t ts_ckks_params_q(const ts_ckks_params_t *params, size_t i);
uint64_t ts_ckks_params_p(const ts_ckks_params_t *params, size_t i);
int ts_ckks_params_dnum(const ts_ckks_params_t *params);
double ts_ckks_params_scale(const ts_ckks_params_t *params);
double ts_ckks_params_scale_log2(const ts_ckks_params_t *params);
double ts_ckks_params_sigma(const ts_ckks_params_t *params);
int ts_ckks_params_secret(const ts_ckks_params_t *params);
int64_t ts_ckks_params_hamming_weight(const ts_ckks_params_t *params);
bool ts_ckks_params_insecure(const ts_ckks_params_t *params);
/* log2(Q_level) and log2(QP) (exact sums of log2 of the primes). */
double ts_ckks_params_logq(const ts_ckks_params_t *params, int level);
double ts_ckks_params_logqp(const ts_ckks_params_t *params);
/*
 * A 64-bit identifier of the parameter set: a hash of N, the primes, dnum,
 * the secret distribution and sigma. Two sets with equal ids are
 * interchangeable for every object in this module.
 */
uint64_t ts_ckks_params_id(const ts_ckks_params_t *params);
/* True when a and b are the same object or have the same id. */
bool ts_ckks_params_equal(const ts_ckks_params_t *a, const ts_ckks_params_t *b);

/*
 * The ring of a parameter set: N, the Q chain then the P primes, on the default
 * backend. Borrowed (valid as long as params).
 */
ts_ring_t *ts_ckks_params_ring(const ts_ckks_params_t *params);

/* ------------------------------------------------ plaintexts, ciphertexts */

/*
 * A plaintext is one RNS polynomial at a level with a scale and a slot count;
 * a ciphertext is (c_0, c_1[, c_2]) with m ~ c_0 + c_1 s (+ c_2 s^2). Both
 * keep the capacity of the top level, so operations never reallocate. Their
 * polynomials are in NTT form between operations. One owner each; they hold a
 * reference to their parameters.
 */
typedef struct ts_ckks_plaintext ts_ckks_plaintext_t;
typedef struct ts_ckks_ciphertext ts_ckks_ciphertext_t;

/* [out] a zero plaintext at `level` (0..L), scale 1, default slot count. */
ts_status_t ts_ckks_plaintext_new(ts_ckks_params_t *params, int level, ts_ckks_plaintext_t **out);
void ts_ckks_plaintext_free(ts_ckks_plaintext_t *pt); /* wipes; accepts NULL */
int ts_ckks_plaintext_level(const ts_ckks_plaintext_t *pt);
double ts_ckks_plaintext_scale(const ts_ckks_plaintext_t *pt);
size_t ts_ckks_plaintext_slots(const ts_ckks_plaintext_t *pt);
const ts_poly_t *ts_ckks_plaintext_poly(const ts_ckks_plaintext_t *pt);

/* [out] a zero ciphertext of degree 1 at `level`, scale 1, default slots. */
ts_status_t ts_ckks_ciphertext_new(ts_ckks_params_t *params, int level, ts_ckks_ciphertext_t **out);
void ts_ckks_ciphertext_free(ts_ckks_ciphertext_t *ct); /* accepts NULL */
/* dst takes src's level, degree, scale, slots and values (same parameters). */
ts_status_t ts_ckks_ciphertext_copy(ts_ckks_ciphertext_t *dst, const ts_ckks_ciphertext_t *src);
int ts_ckks_ciphertext_level(const ts_ckks_ciphertext_t *ct);
int ts_ckks_ciphertext_degree(const ts_ckks_ciphertext_t *ct); /* 1 or 2 */
double ts_ckks_ciphertext_scale(const ts_ckks_ciphertext_t *ct);
double ts_ckks_ciphertext_scale_log2(const ts_ckks_ciphertext_t *ct);
size_t ts_ckks_ciphertext_slots(const ts_ckks_ciphertext_t *ct);
ts_ckks_params_t *ts_ckks_ciphertext_params(const ts_ckks_ciphertext_t *ct);
/* Polynomial i (0..degree) for serialization and conversions; borrowed. */
ts_poly_t *ts_ckks_ciphertext_poly(ts_ckks_ciphertext_t *ct, int i);
/* Set the metadata after filling the polynomials directly (deserialization):
 * TS_ELEVEL / TS_EINVAL when out of range. */
ts_status_t ts_ckks_ciphertext_set_meta(ts_ckks_ciphertext_t *ct, int level, int degree,
                                        double scale, size_t slots);

/* ---------------------------------------------------------------- encoder */

/*
 * The encoder owns scratch for one vector (not thread-safe; one per thread).
 * Slot counts are powers of two up to N/2; `count` <= slots values are
 * given, the rest are zero. Encoding rounds z * scale through the special
 * inverse FFT and reduces each integer coefficient exactly mod q_0..q_level;
 * decoding lifts each coefficient exactly (CRT over Q_level), divides by the
 * plaintext's scale and applies the special FFT.
 */
typedef struct ts_ckks_encoder ts_ckks_encoder_t;

ts_status_t ts_ckks_encoder_new(ts_ckks_params_t *params, ts_ckks_encoder_t **out);
void ts_ckks_encoder_free(ts_ckks_encoder_t *enc); /* accepts NULL */
/*
 * [in] values: count complex (or real) values; [out] pt is overwritten: level
 * `level`, the given scale and slot count (slots = 0: the default). Errors:
 * TS_EINVAL (shape, non-finite input), TS_ELEVEL, TS_ESCALE (scale < 1),
 * TS_ERANGE (|value| * scale does not fit below Q_level / 2), TS_EMISMATCH.
 */
ts_status_t ts_ckks_encode(ts_ckks_encoder_t *enc, const double complex *values, size_t count,
                           size_t slots, int level, double scale, ts_ckks_plaintext_t *pt);
ts_status_t ts_ckks_encode_real(ts_ckks_encoder_t *enc, const double *values, size_t count,
                                size_t slots, int level, double scale, ts_ckks_plaintext_t *pt);
/* [out] the first `count` slots (count <= slots of pt). pt is not modified. */
ts_status_t ts_ckks_decode(ts_ckks_encoder_t *enc, const ts_ckks_plaintext_t *pt,
                           double complex *values, size_t count);
ts_status_t ts_ckks_decode_real(ts_ckks_encoder_t *enc, const ts_ckks_plaintext_t *pt,
                                double *values, size_t count);

/* -------------------------------------------------------------- evaluator */

/*
 * The evaluator: parameters, optional evaluation keys, and scratch sized at
 * creation (operations do not allocate, except a ciphertext's third
 * polynomial the first time it receives a degree-2 result). Not thread-safe:
 * one per thread. Outputs may alias inputs everywhere.
 *
 * Rules checked by every operation (and the error returned):
 *  - objects from other parameter sets: TS_EMISMATCH; different slot counts:
 *    TS_EMISMATCH;
 *  - binary operations need equal levels (TS_ELEVEL; drop the higher operand
 *    with ts_ckks_drop_level first); a plaintext may sit at a higher level
 *    than the ciphertext (its lower limbs are used);
 *  - additions need equal scales up to a relative 2^-36 (TS_ESCALE);
 *  - multiplications, rotations and rescaling need degree-1 inputs
 *    (TS_EINVAL; relinearize first); rescale and drop need a level left
 *    (TS_ELEVEL);
 *  - operations needing a key the evaluator lacks: TS_ENOKEY.
 */
typedef struct ts_ckks_evaluator ts_ckks_evaluator_t;
typedef struct ts_ckks_evalkeys ts_ckks_evalkeys_t;

/* [in] keys: may be NULL (no relinearization/rotation); referenced, not copied. */
ts_status_t ts_ckks_evaluator_new(ts_ckks_params_t *params, const ts_ckks_evalkeys_t *keys,
                                  ts_ckks_evaluator_t **out);
void ts_ckks_evaluator_free(ts_ckks_evaluator_t *ev); /* accepts NULL */
/* The evaluation keys ev was made with (borrowed; NULL: none). */
const ts_ckks_evalkeys_t *ts_ckks_evaluator_keys(const ts_ckks_evaluator_t *ev);

ts_status_t ts_ckks_add(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                        const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out);
ts_status_t ts_ckks_sub(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                        const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out);
ts_status_t ts_ckks_neg(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                        ts_ckks_ciphertext_t *out);
/* out = a + pt, a - pt (equal scales), a * pt (scale: product; rescale after). */
ts_status_t ts_ckks_add_plain(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_plaintext_t *pt, ts_ckks_ciphertext_t *out);
ts_status_t ts_ckks_sub_plain(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_plaintext_t *pt, ts_ckks_ciphertext_t *out);
ts_status_t ts_ckks_mul_plain(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_plaintext_t *pt, ts_ckks_ciphertext_t *out);
/* out = a + c in every slot (c rounded at a's scale). */
ts_status_t ts_ckks_add_const(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              double complex c, ts_ckks_ciphertext_t *out);
/* out = a * k for an integer k: exact, scale unchanged. */
ts_status_t ts_ckks_mul_int(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int64_t k,
                            ts_ckks_ciphertext_t *out);
/*
 * out = a * c: c is rounded at const_scale (0 = q_level, so that the next
 * rescale returns exactly to a's scale); out's scale = a's scale * const_scale.
 * A real c costs one scalar product; a complex c one more (times X^{N/2}).
 */
ts_status_t ts_ckks_mul_const(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              double complex c, double const_scale, ts_ckks_ciphertext_t *out);
/* out = a * b (degree 2, scale a.scale * b.scale). */
ts_status_t ts_ckks_mul(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                        const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out);
/* Degree 2 -> 1 with the relinearization key (TS_ENOKEY without it). */
ts_status_t ts_ckks_relinearize(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                ts_ckks_ciphertext_t *out);
/* mul then relinearize. */
ts_status_t ts_ckks_mul_relin(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out);
/* Divide by q_level with rounding: level - 1, scale / q_level. */
ts_status_t ts_ckks_rescale(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                            ts_ckks_ciphertext_t *out);
/* Drop `levels` top primes without dividing (the modulus switch): scale unchanged. */
ts_status_t ts_ckks_drop_level(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int levels,
                               ts_ckks_ciphertext_t *out);
/* Drop to `level` (<= a's level). */
ts_status_t ts_ckks_drop_to_level(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int level,
                                  ts_ckks_ciphertext_t *out);

/* ------------------------------------------------------------------ keys */

/*
 * Keys wrap core/rlwe: the secret s (ternary or sparse ternary as the
 * parameters say), the public key (-a s + e, a) with a regenerated from a
 * 32-byte seed, and the evaluation keys (relinearization, Galois keys for
 * rotations and conjugation) with hybrid key switching (dnum digits, the P
 * primes). Randomness comes from the caller's prng (ts_prng_new_os for keys).
 */
typedef struct ts_ckks_secret_key ts_ckks_secret_key_t;
typedef struct ts_ckks_public_key ts_ckks_public_key_t;

ts_status_t ts_ckks_keygen_secret(ts_ckks_params_t *params, ts_prng_t *prng,
                                  ts_ckks_secret_key_t **out);
void ts_ckks_secret_key_free(ts_ckks_secret_key_t *sk); /* wipes; accepts NULL */
/* The seed of "a" and the error come from prng. */
ts_status_t ts_ckks_keygen_public(const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                  ts_ckks_public_key_t **out);
/* The rlwe objects inside (borrowed), for serialization and conversions. */
const ts_rlwe_sk_t *ts_ckks_secret_key_rlwe(const ts_ckks_secret_key_t *sk);
const ts_rlwe_pk_t *ts_ckks_public_key_rlwe(const ts_ckks_public_key_t *pk);
void ts_ckks_public_key_free(ts_ckks_public_key_t *pk); /* accepts NULL */

/* An empty set of evaluation keys for params; keys are added by the gen calls. */
ts_status_t ts_ckks_evalkeys_new(ts_ckks_params_t *params, ts_ckks_evalkeys_t **out);
void ts_ckks_evalkeys_free(ts_ckks_evalkeys_t *ek); /* accepts NULL */
ts_status_t ts_ckks_evalkeys_gen_relin(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                       ts_prng_t *prng);
/* Galois keys for rotations by each step (left rotation for step > 0, taken
 * mod the slot count of the parameters; duplicates and 0 are skipped). */
ts_status_t ts_ckks_evalkeys_gen_rotations(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                           const int64_t *steps, size_t count, ts_prng_t *prng);
/*
 * The same with level-capped keys: the key of steps[i] serves ciphertexts up
 * to level levels[i] only (it holds the first levels[i] + 1 Q primes and the
 * digits covering them; see ts_rlwe_ksk_t), a fraction of a full key's memory
 * and bytes when the rotation is only used low in the chain. levels NULL or a
 * level < 0 or >= the top: full keys. A step whose key already serves that
 * level is kept; a narrower key is replaced by a wider one. Rotating a
 * ciphertext above its key's level returns TS_ELEVEL.
 */
ts_status_t ts_ckks_evalkeys_gen_rotations_at(ts_ckks_evalkeys_t *ek,
                                              const ts_ckks_secret_key_t *sk, const int64_t *steps,
                                              const int *levels, size_t count, ts_prng_t *prng);
ts_status_t ts_ckks_evalkeys_gen_conjugate(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                           ts_prng_t *prng);
bool ts_ckks_evalkeys_has_relin(const ts_ckks_evalkeys_t *ek);
/* Whether a key for step exists (it may be level-capped: see
 * ts_ckks_evalkeys_rotation_level). */
bool ts_ckks_evalkeys_has_rotation(const ts_ckks_evalkeys_t *ek, int64_t step);
bool ts_ckks_evalkeys_has_conjugate(const ts_ckks_evalkeys_t *ek);
/* The highest level the rotation key of step serves (-1: no key). */
int ts_ckks_evalkeys_rotation_level(const ts_ckks_evalkeys_t *ek, int64_t step);
/* Memory held by the keys of ek (bytes of key data). */
size_t ts_ckks_evalkeys_bytes(const ts_ckks_evalkeys_t *ek);
/* The relinearization key and the Galois key of element k (NULL when absent). */
const ts_rlwe_ksk_t *ts_ckks_evalkeys_relin(const ts_ckks_evalkeys_t *ek);
const ts_rlwe_ksk_t *ts_ckks_evalkeys_galois(const ts_ckks_evalkeys_t *ek, uint64_t k);

/*
 * Key switching with an explicit key (e.g. the sparse-secret encapsulation keys
 * of core/circuits): a encrypts m under s_from, key is a ts_rlwe_ksk_t from
 * s_from to the secret s_to, both of this parameter set's ring and dnum
 * (ts_rlwe_ksk_new); out = (c_0 + u_0, u_1) encrypts m under s_to, same level,
 * scale and slots. TS_ENOKEY (key NULL), TS_EMISMATCH (another ring or a
 * Galois key), TS_EINVAL (degree 2). out may alias a.
 */
ts_status_t ts_ckks_keyswitch(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_rlwe_ksk_t *key, ts_ckks_ciphertext_t *out);

/* ------------------------------------------------------ encrypt, decrypt */

/*
 * Noise flooding: c_0 of ct += e, every coefficient of e drawn independently
 * from prng (the OS CSPRNG for a real flood) and reduced into each limb of
 * ct's level: gauss false, integers uniform in [-2^ceil(param), 2^ceil(param)]
 * (0 <= param <= 60); gauss true, round(param z) with z standard normal
 * (Box-Muller on 53-bit uniforms; 0 <= param <= 2^60). The message
 * decrypts plus e. e is drawn on the host and wiped (a device's copy
 * through the backend). TS_EINVAL (NULL, param out of range, degree 2).
 */
ts_status_t ts_ckks_flood(ts_ckks_ciphertext_t *ct, bool gauss, double param, ts_prng_t *prng);

/* Public-key encryption of pt: (v pk_0 + e_0 + m, v pk_1 + e_1), v ternary. */
ts_status_t ts_ckks_encrypt_pk(const ts_ckks_public_key_t *pk, const ts_ckks_plaintext_t *pt,
                               ts_prng_t *prng, ts_ckks_ciphertext_t *ct);
/*
 * Symmetric encryption (-a s + e + m, a) with a expanded from `seed` (NULL:
 * drawn from prng). The seed is kept with the ciphertext (ts_ckks_ciphertext_seed)
 * until an operation changes c_1, so serialization can send 32 bytes for c_1.
 */
ts_status_t ts_ckks_encrypt_sk(const ts_ckks_secret_key_t *sk, const ts_ckks_plaintext_t *pt,
                               ts_prng_t *prng, const uint8_t *seed, ts_ckks_ciphertext_t *ct);
/*
 * The client path in one call: encode `count` values into `slots` slots at
 * (level, scale) and encrypt symmetrically as ts_ckks_encrypt_sk does. The
 * message and the error are added in coefficient form, so each limb takes one
 * NTT instead of two. Errors as ts_ckks_encode and ts_ckks_encrypt_sk.
 */
ts_status_t ts_ckks_encrypt_sk_values(ts_ckks_encoder_t *enc, const ts_ckks_secret_key_t *sk,
                                      const double complex *values, size_t count, size_t slots,
                                      int level, double scale, ts_prng_t *prng, const uint8_t *seed,
                                      ts_ckks_ciphertext_t *ct);
ts_status_t ts_ckks_encrypt_sk_real(ts_ckks_encoder_t *enc, const ts_ckks_secret_key_t *sk,
                                    const double *values, size_t count, size_t slots, int level,
                                    double scale, ts_prng_t *prng, const uint8_t *seed,
                                    ts_ckks_ciphertext_t *ct);
/* True (and the seed copied) when c_1 is still the seeded uniform polynomial. */
bool ts_ckks_ciphertext_seed(const ts_ckks_ciphertext_t *ct, uint8_t seed[TS_SEED_BYTES]);
/*
 * Deserialization of a seeded ciphertext: set c_1 (at ct's level, degree 1) to
 * the uniform polynomial expanded from `seed`, exactly the c_1 that
 * ts_ckks_encrypt_sk produced with that seed; the ciphertext is seeded again.
 * TS_EINVAL for degree 2.
 */
ts_status_t ts_ckks_ciphertext_set_seeded_c1(ts_ckks_ciphertext_t *ct,
                                             const uint8_t seed[TS_SEED_BYTES]);
/* pt = c_0 + c_1 s (+ c_2 s^2), at the ciphertext's level and scale. */
ts_status_t ts_ckks_decrypt(const ts_ckks_secret_key_t *sk, const ts_ckks_ciphertext_t *ct,
                            ts_ckks_plaintext_t *pt);
/* The N coefficients of ct's decryption, centered mod q_0 (ct dropped to
 * level 0 first: dropping primes keeps small coefficients as they are), for
 * noise measurements; the scratch is wiped. */
ts_status_t ts_ckks_decrypt_coeffs(const ts_ckks_secret_key_t *sk, ts_ckks_evaluator_t *ev,
                                   const ts_ckks_ciphertext_t *ct, int64_t *out);

/* ------------------------------------------------------------- rotations */

/* Rotate the slots left by step (right for step < 0): slot i gets slot i + step. */
ts_status_t ts_ckks_rotate(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int64_t step,
                           ts_ckks_ciphertext_t *out);
/* Complex conjugation of every slot. */
ts_status_t ts_ckks_conjugate(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              ts_ckks_ciphertext_t *out);
/*
 * In place, the trace of ct onto the subring of X^(N / 2 period) (period a
 * power of two <= N/2): times (N / 2 period)^-1 mod each q, then ct +=
 * rot_s(ct) for s = period, 2 period, ... < N/2 on N/2 slots (Galois keys
 * for those steps). A message repeating every `period` slots is unchanged,
 * every other component vanishes (bootstrapping's ModRaise at sparse slots,
 * the Renyi sanitization's projection). ct comes back labeled N/2 slots,
 * at its level and scale. TS_ENOKEY (ct untouched) without a key for one of
 * those steps at ct's level.
 */
ts_status_t ts_ckks_trace(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *ct, size_t period);
/* TS_OK when ev holds every Galois key ts_ckks_trace at period needs at
 * level, else TS_ENOKEY with *missing (may be NULL) the first step without
 * one (callers check before touching a ciphertext); TS_EINVAL. */
ts_status_t ts_ckks_trace_keys(const ts_ckks_evaluator_t *ev, int level, size_t period,
                               int64_t *missing);
/* The rotation steps (Galois keys, on N/2 slots) of ts_ckks_trace at period:
 * period 2^i below N/2 (capacity *count; steps NULL: count only; TS_ERANGE
 * when they do not fit). */
ts_status_t ts_ckks_trace_steps(const ts_ckks_params_t *params, size_t period, int64_t *steps,
                                size_t *count);
/*
 * Hoisted rotations: one digit decomposition of a's c_1 (ModUp) shared by all
 * steps; outs[i] receives a rotated by steps[i] (0 = a copy). outs must be
 * distinct from a.
 */
ts_status_t ts_ckks_rotate_hoisted(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                   const int64_t *steps, size_t count,
                                   ts_ckks_ciphertext_t *const *outs);

/* ------------------------------------------------------ linear transforms */

/*
 * y = M x on the slots, by the diagonal method with baby-step giant-step
 * (Halevi-Shoup diagonals, BSGS as in Han-Ki / Bossuat et al.):
 *     M x = sum_g rot_{g n1}( sum_b rot_{-g n1}(d_{g n1 + b}) . rot_b(x) ),
 * d_i[j] = M[j][(j + i) mod n]. Only nonzero diagonals are kept. Double
 * hoisting (Bossuat et al., Eurocrypt 2021): one ModUp of x's c1 for all baby
 * rotations, which stay in the extended basis Q_l * P (no ModDown each), the
 * inner sums are taken there, each giant rotation brings only c1 down and
 * switches it without ModDown, and the transform ends with one ModDown. The
 * diagonals are encoded at the given level and scale (0 = q_level, so a
 * rescale after the transform restores x's scale) over Q_level * P, i.e.
 * level + 1 + (P primes) limbs each.
 */
typedef struct ts_ckks_lintrans ts_ckks_lintrans_t;

/* [in] m: slots x slots, row-major. n1: baby steps (0 = about sqrt of the
 * number of diagonals, a power of two). */
ts_status_t ts_ckks_lintrans_new(ts_ckks_encoder_t *enc, const double complex *m, size_t slots,
                                 int level, double scale, size_t n1, ts_ckks_lintrans_t **out);
void ts_ckks_lintrans_free(ts_ckks_lintrans_t *lt); /* accepts NULL */
/*
 * [in] the nonzero diagonals instead of a dense matrix: offsets[k] (mod slots,
 * distinct) and diags[k * slots + j] = M[j][(j + offsets[k]) mod slots],
 * k < ndiag. n1 = 0: about sqrt(ndiag) baby steps at the offsets' stride.
 */
ts_status_t ts_ckks_lintrans_new_diagonals(ts_ckks_encoder_t *enc, size_t slots, size_t ndiag,
                                           const int64_t *offsets, const double complex *diags,
                                           int level, double scale, size_t n1,
                                           ts_ckks_lintrans_t **out);
/* [out] the rotation steps apply() needs (at most *count; *count set to the number). */
ts_status_t ts_ckks_lintrans_steps(const ts_ckks_lintrans_t *lt, int64_t *steps, size_t *count);
/* out = M a (scale a.scale * lt scale, not rescaled). a at lt's level. */
ts_status_t ts_ckks_lintrans_apply(ts_ckks_evaluator_t *ev, const ts_ckks_lintrans_t *lt,
                                   const ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *out);

/*
 * Double-hoisted baby-step giant-step sums, for callers that make their
 * diagonals on the fly (the transform above is built on it):
 *     out = sum_g rot_g( sum_b rot_{baby[b]}(x) . d_{g,b} ).
 * new() rotates x by every baby step (0 allowed) with one ModUp of c1 and keeps
 * the rotations over Q_l * P (2 (level + 1 + P primes) limbs each; keys for
 * the nonzero steps needed, TS_ENOKEY otherwise). mul_add() encodes a
 * diagonal (count complex values, or reals; x's slot count, x's level, the
 * given scale, the same for all) over Q_l * P and adds rot_{baby[b]}(x) . d to
 * the inner sum; giant(step) adds rot_step(inner sum) to the sum (its key
 * switch without ModDown, only c1 brought down; step 0: the inner sum itself)
 * and empties the inner sum; finish() adds a pending inner sum as giant step
 * 0 and writes the sum's one ModDown to out (level of x, scale x.scale *
 * the diagonals' scale, not rescaled), then starts a new sum over the same
 * baby rotations (e.g. the next matrix applied to the same x). The object
 * borrows ev (and its key-switching scratch) and uses it for every call.
 */
typedef struct ts_ckks_bsgs ts_ckks_bsgs_t;
ts_status_t ts_ckks_bsgs_new(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *x,
                             const int64_t *baby_steps, size_t nb, ts_ckks_bsgs_t **out);
ts_status_t ts_ckks_bsgs_mul_add(ts_ckks_bsgs_t *h, size_t b, ts_ckks_encoder_t *enc,
                                 const double complex *values, const double *reals, size_t count,
                                 double scale);
/*
 * mul_add for the consecutive baby steps b0 .. b0 + count - 1 (count <= 64) at
 * once, with real diagonals (reals: count rows of `slots` values, slots = x's
 * slot count): the same sum, in one pass over the baby rotations. At sparse
 * slots on a host-memory backend with the spread ops each diagonal is encoded
 * in 1 / gap of the words (ts__ckks_encode_qp_compact) and the inner product
 * takes them spread; otherwise mul_add runs per diagonal.
 */
ts_status_t ts_ckks_bsgs_mul_add_run(ts_ckks_bsgs_t *h, size_t b0, size_t count,
                                     ts_ckks_encoder_t *enc, const double *reals, size_t slots,
                                     double scale);
ts_status_t ts_ckks_bsgs_giant(ts_ckks_bsgs_t *h, int64_t step);
ts_status_t ts_ckks_bsgs_finish(ts_ckks_bsgs_t *h, ts_ckks_ciphertext_t *out);
void ts_ckks_bsgs_free(ts_ckks_bsgs_t *h); /* accepts NULL */

/* ------------------------------------------------- polynomial evaluation */

typedef enum {
    TS_CKKS_POLY_AUTO = 0,     /* Paterson-Stockmeyer with k ~ sqrt(2 degree) */
    TS_CKKS_POLY_HORNER = 1,   /* depth = degree, degree products */
    TS_CKKS_POLY_BALANCED = 2, /* all powers by a balanced tree: depth ceil(log2 d) + 1 */
    TS_CKKS_POLY_PS = 3,       /* Paterson-Stockmeyer with the given k */
} ts_ckks_poly_method_t;

/*
 * out = p(a) = sum_i coeffs[i] a^i (power basis), coeffs[0..degree]. The
 * result has scale target_scale (0 = the parameters' default scale) exactly
 * and the lowest level the method allows. Needs the relinearization key.
 * TS_ELEVEL when a has too few levels for the method's depth.
 */
ts_status_t ts_ckks_eval_poly(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const double *coeffs, size_t degree, ts_ckks_poly_method_t method,
                              size_t ps_k, double target_scale, ts_ckks_ciphertext_t *out);
/*
 * out = sum_i coeffs[i] T_i(y), y = (2a - (lo + hi)) / (hi - lo): a Chebyshev
 * series on [lo, hi], evaluated with baby-step giant-step (Paterson-
 * Stockmeyer over T_i; T_{2n} = 2 T_n^2 - 1, T_{m+n} = 2 T_m T_n - T_{|m-n|}).
 * The change of variable costs one level unless [lo, hi] = [-1, 1].
 */
ts_status_t ts_ckks_eval_chebyshev(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                   const double *coeffs, size_t degree, double lo, double hi,
                                   double target_scale, ts_ckks_ciphertext_t *out);
/*
 * The baby-step count ts_ckks_eval_chebyshev uses for a degree (the power of
 * two of least depth, ceil(log2(degree + 1)), with the fewest relinearized
 * products among those), and the depth on [-1, 1] when every coefficient is
 * nonzero (a polynomial with zeros may end higher, never lower).
 */
size_t ts_ckks_chebyshev_ps_k(size_t degree);
int ts_ckks_chebyshev_depth(size_t degree);
/* The relinearized products of that evaluation (baby steps, giants, tree). */
size_t ts_ckks_chebyshev_products(size_t degree);
/* Chebyshev interpolation of f on [lo, hi] at the degree + 1 Chebyshev nodes. */
ts_status_t ts_ckks_chebyshev_fit(double (*f)(double x, void *ctx), void *ctx, double lo, double hi,
                                  size_t degree, double *coeffs);

/* --------------------------------------------------------- serialization */

/*
 * Every object is a core/serial envelope (serial.h) whose parameter id is
 * ts_ckks_params_serial_id; residues are bit-packed at the exact width of
 * their prime. Payloads (all little endian):
 *
 *  ciphertext (TS_OBJ_CKKS_CIPHERTEXT): u8 form (1: every polynomial;
 *    2: seeded, c_1 is the 32-byte seed of ts_ckks_encrypt_sk), u8 level,
 *    u8 degree, u8 log2(slots), f64 scale, then for c_0 .. c_degree (c_0 only
 *    when seeded) the N residues of limbs 0..level in NTT form (the domain of
 *    every ciphertext of this module; log2(scale) is recomputed from the
 *    double), then the seed when seeded.
 *  plaintext (TS_OBJ_CKKS_PLAINTEXT): u8 form (1), u8 level, u8 log2(slots),
 *    u8 is_ntt, f64 scale, the residues of limbs 0..level.
 *  secret key (TS_OBJ_SECRET_KEY): u8 form (1: packed ternary), u8 sparse,
 *    u32 Hamming weight, N coefficients at 2 bits (0, 1, 2 = -1).
 *  public key (TS_OBJ_PUBLIC_KEY): u32 nq, u32 np, u8 is_ntt, the residues of
 *    b over its Q then P limbs, the 32-byte seed of a (stream 0).
 *  relinearization key (TS_OBJ_RELIN_KEY): one key-switching key:
 *    u32 dnum, u32 kq (the Q primes the key holds; all of them for the
 *    relinearization key), u64 Galois element (0), the 32-byte seed of the
 *    a_j (stream j + 1), then b_0 .. b_{ndig-1} (ndig = ceil(kq / alpha)),
 *    each over the first kq Q primes and the P primes.
 *  Galois keys (TS_OBJ_GALOIS_KEYS): u64 count, then count times: i64 step
 *    (the left rotation j with k = 5^j mod 2N, or -1 when k is not a power of
 *    5, e.g. conjugation k = 2N - 1) and a key-switching key as above with its
 *    odd element k (distinct keys, each step checked against its element;
 *    1 <= kq <= the Q primes: level-capped keys keep their cap).
 *
 * Deserializers validate everything against `params` (the envelope's
 * parameter id: TS_EMISMATCH; counts before allocation, level, degree,
 * domain, slot count, every residue below its modulus, scale finite and
 * >= 1, Hamming weight: TS_EFORMAT / TS_ELEVEL; size caps: TS_ELIMIT) and
 * never crash on any input. zstd_level 0 stores raw, 1..19 compresses.
 * Serialized bytes are ts_malloc'd: free them with ts_free (ts_free_secret
 * for secret keys; the file mode of a stored secret key is the caller's job).
 */

/* The 32-byte parameter id: SHA-256 of the canonical encoding (N, primes,
 * dnum, secret distribution and weight, sigma, scale, slots). */
void ts_ckks_params_serial_id(const ts_ckks_params_t *params, uint8_t id[TS_SHA256_BYTES]);

ts_status_t ts_ckks_ciphertext_serialize(const ts_ckks_ciphertext_t *ct, int zstd_level,
                                         uint8_t **out, size_t *size);
/* max_degree 1 refuses unrelinearized ciphertexts. [out] a new ciphertext. */
ts_status_t ts_ckks_ciphertext_deserialize(ts_ckks_params_t *params, const void *data, size_t size,
                                           int max_degree, ts_ckks_ciphertext_t **out);
ts_status_t ts_ckks_plaintext_serialize(const ts_ckks_plaintext_t *pt, int zstd_level,
                                        uint8_t **out, size_t *size);
ts_status_t ts_ckks_plaintext_deserialize(ts_ckks_params_t *params, const void *data, size_t size,
                                          ts_ckks_plaintext_t **out);
/* The bytes are secret: free them with ts_free_secret. */
ts_status_t ts_ckks_secret_key_serialize(const ts_ckks_secret_key_t *sk, uint8_t **out,
                                         size_t *size);
ts_status_t ts_ckks_secret_key_deserialize(ts_ckks_params_t *params, const void *data, size_t size,
                                           ts_ckks_secret_key_t **out);
ts_status_t ts_ckks_public_key_serialize(const ts_ckks_public_key_t *pk, int zstd_level,
                                         uint8_t **out, size_t *size);
ts_status_t ts_ckks_public_key_deserialize(ts_ckks_params_t *params, const void *data, size_t size,
                                           ts_ckks_public_key_t **out);
/* The relinearization key of ek (TS_ENOKEY when it has none). */
ts_status_t ts_ckks_relin_key_serialize(const ts_ckks_evalkeys_t *ek, int zstd_level, uint8_t **out,
                                        size_t *size);
/* Install the key in ek (replacing one it had); ek is unchanged on error. */
ts_status_t ts_ckks_relin_key_deserialize(ts_ckks_evalkeys_t *ek, const void *data, size_t size);
/* Every Galois key of ek (rotations and conjugation); count may be 0. */
ts_status_t ts_ckks_galois_keys_serialize(const ts_ckks_evalkeys_t *ek, int zstd_level,
                                          uint8_t **out, size_t *size);
/*
 * Add the keys to ek (same element: replaced). Malformed input is refused
 * before ek is touched; an allocation failure part-way (TS_ENOMEM) may leave
 * the keys added so far in ek, each complete and valid.
 */
ts_status_t ts_ckks_galois_keys_deserialize(ts_ckks_evalkeys_t *ek, const void *data, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* TS_CKKS_H */
