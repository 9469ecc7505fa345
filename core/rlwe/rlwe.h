/*
 * core/rlwe — keys and key switching shared by CKKS and TFHE.
 *
 * Secret keys are ternary polynomials s (uniform ternary, or sparse ternary
 * with exact Hamming weight h), kept both as small integers and in NTT form
 * over every prime of the ring (Q and P). They are wiped when freed.
 *
 * Seeded halves: the uniform "a" half of a public key or of each
 * key-switching-key row is never stored independently: it is regenerated from
 * a 32-byte public seed with ts_prng_new_seeded(seed, stream_id), one stream
 * per row (ts_rlwe_expand_a), directly in NTT form (uniform in either form).
 * Serializers store the seed instead of the a polynomials.
 *
 * Hybrid key switching (Han-Ki, "Better bootstrapping for approximate
 * homomorphic encryption", CT-RSA 2020, section 3; the "dnum" of
 * Kim-Polyakov-Zucca 2021): the Q primes q_0..q_{L} are cut into dnum digits of
 * alpha = ceil((L + 1) / dnum) consecutive primes (digit j = q_{j alpha} ..),
 * and the key for s' -> s is, for each digit j, over Q*P in NTT form:
 *     b_j = -a_j s + e_j + [P]_{q_i} s'   on the primes q_i of digit j,
 *     b_j = -a_j s + e_j                  on every other prime (Q and P).
 * Key switching a polynomial c at level l (nq = l + 1 limbs): decompose into
 * the digits [c]_{Q_j} (the digit's primes present at that level), lift each
 * with the centered HPS fast basis extension (core/math) to Q_l * P (ModUp),
 * take the inner products with (b_j, a_j) over Q_l * P (backend
 * keyswitch_inner), and divide by P with rounding (ModDown). The result
 * (u0, u1), NTT form over Q_l, satisfies u0 + u1 s = c s' + e_ks with
 *     |e_ks| <= (sum_j |d_j e_j|) / P + (1 + |s|_1) / 2      (coefficient-wise),
 * see tests/unit/test_rlwe.c for the numbers. P must be at least as large as
 * the largest digit product for the noise to stay small.
 *
 * Gadget decomposition in base 2^k over one modulus (TFHE, and any single-
 * prime use): ts_gadget_*.
 */
#ifndef TS_RLWE_H
#define TS_RLWE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"
#include "core/ring/ring.h"
#include "core/serial/serial.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------- secret key */

typedef struct ts_rlwe_sk {
    ts_ring_t *ring;  /* holds a reference */
    int8_t *coeffs;   /* N coefficients in {-1, 0, 1} */
    ts_poly_t *s;     /* NTT form over all Q and P primes */
    uint32_t hamming; /* number of nonzero coefficients */
    bool sparse;      /* sampled with a fixed Hamming weight */
} ts_rlwe_sk_t;

/* [out] a uniform ternary key (h = 0) or a sparse ternary key with exactly h
 * nonzero coefficients (1 <= h <= N). */
ts_status_t ts_rlwe_sk_new(ts_ring_t *r, ts_prng_t *prng, uint32_t h, ts_rlwe_sk_t **out);
/* [out] a key from given coefficients (each in {-1, 0, 1}; TS_EINVAL otherwise). */
ts_status_t ts_rlwe_sk_from_coeffs(ts_ring_t *r, const int8_t *coeffs, ts_rlwe_sk_t **out);
/* Wipes and frees. Accepts NULL. */
void ts_rlwe_sk_free(ts_rlwe_sk_t *sk);

/* ------------------------------------------------------------ seeded "a" */

/* Fill p (any shape; marked NTT form) with the uniform polynomial of
 * (seed, stream_id). Same inputs give the same bits on every machine. */
ts_status_t ts_rlwe_expand_a(const uint8_t seed[TS_SEED_BYTES], uint64_t stream_id, ts_poly_t *p);

/* ------------------------------------------------------------ public key */

/* pk = (b, a) = (-a s + e, a) over the Q primes (nq = q_count, np = 0), NTT form,
 * a expanded from seed (stream 0). */
typedef struct ts_rlwe_pk {
    ts_poly_t *b, *a;
    uint8_t seed[TS_SEED_BYTES];
} ts_rlwe_pk_t;

/* [out] a public key; the seed and the error come from prng. */
ts_status_t ts_rlwe_pk_new(const ts_rlwe_sk_t *sk, ts_prng_t *prng, ts_rlwe_pk_t **out);
void ts_rlwe_pk_free(ts_rlwe_pk_t *pk);

/* ------------------------------------------------------ key switching keys */

/*
 * A key-switching key s' -> s (layout in the overview). Heavy and shared:
 * reference-counted, immutable after creation. `data` is backend memory holding
 * 2 * ndig polynomials of (kq + p_count) limbs in NTT form; polynomial 2j is
 * b_j, 2j + 1 is a_j (regenerable from seed, stream j + 1).
 *
 * Level-capped keys: a key may hold only the first kq Q primes (and all P
 * primes): it then switches ciphertexts of at most kq limbs (level kq - 1)
 * and needs only the ndig = ceil(kq / alpha) digits covering them. The gadget
 * is the full key's restricted to those primes (digit j is 1 on its own
 * primes, 0 on the others), so a capped key is the full key with limbs and
 * digits left out: at N = 2^16 a rotation used only at the computation levels
 * takes a quarter of the memory. kq = q_count is a full key.
 */
typedef struct ts_rlwe_ksk {
    ts_ring_t *ring; /* holds a reference */
    uint32_t dnum;   /* digits of the full key (the ring's and key switcher's shape) */
    uint32_t alpha;  /* primes per digit */
    uint32_t kq;     /* Q limbs held (1..q_count): serves levels 0 .. kq - 1 */
    uint32_t ndig;   /* digits held: ceil(kq / alpha) */
    uint64_t galois; /* k for a Galois key s(X^k) -> s; 0 otherwise. A Galois
                      * key's data is held as sigma_k^-1 of the key (the key
                      * switch rotates its inner product once instead of every
                      * digit); serialized bodies hold the key itself. */
    uint8_t seed[TS_SEED_BYTES];
    uint64_t *data;
    int refs; /* use ts_rlwe_ksk_ref / ts_rlwe_ksk_free */
} ts_rlwe_ksk_t;

/* alpha = ceil(q_count / dnum); TS_EPARAMS when dnum is 0, exceeds q_count,
 * leaves an empty digit, or the ring has no P primes. */
ts_status_t ts_rlwe_ksk_shape(const ts_ring_t *r, uint32_t dnum, uint32_t *alpha);

/* [out] the key s_from -> sk. s_from: NTT form over all Q and P primes. */
ts_status_t ts_rlwe_ksk_new(const ts_rlwe_sk_t *sk, const ts_poly_t *s_from, uint32_t dnum,
                            ts_prng_t *prng, ts_rlwe_ksk_t **out);
/* The same key capped at kq Q limbs (1..q_count; see ts_rlwe_ksk_t). */
ts_status_t ts_rlwe_ksk_new_capped(const ts_rlwe_sk_t *sk, const ts_poly_t *s_from, uint32_t dnum,
                                   uint32_t kq, ts_prng_t *prng, ts_rlwe_ksk_t **out);
/* Bytes of the key's data (both halves). */
size_t ts_rlwe_ksk_bytes(const ts_rlwe_ksk_t *k);
/* Relinearization key s^2 -> s. */
ts_status_t ts_rlwe_relin_key_new(const ts_rlwe_sk_t *sk, uint32_t dnum, ts_prng_t *prng,
                                  ts_rlwe_ksk_t **out);
/* Galois key s(X^k) -> s for an odd k (ts_ring_galois_rotate / _conjugate),
 * capped at kq Q limbs (0: a full key). */
ts_status_t ts_rlwe_galois_key_new(const ts_rlwe_sk_t *sk, uint64_t k, uint32_t dnum, uint32_t kq,
                                   ts_prng_t *prng, ts_rlwe_ksk_t **out);
ts_rlwe_ksk_t *ts_rlwe_ksk_ref(ts_rlwe_ksk_t *k);
void ts_rlwe_ksk_free(ts_rlwe_ksk_t *k); /* drops a reference; accepts NULL */

/*
 * Serialized body of a seeded key-switching key (core/serial): the b halves
 * of the ndig digits, each over its kq Q limbs and the P limbs, every limb
 * bit-packed at its prime's width, in digit then limb order; the a halves are regenerated from
 * k->seed (streams 1..dnum) and not written. level0: only limb 0 and the P limbs of digit 0 (a key
 * used at level 0 only, e.g. the RingSwitch keys of core/convert); the other limbs read back as
 * zero. Callers write and check their own header (dnum, Galois element, seed).
 */
void ts_rlwe_ksk_put_body(ts_writer_t *w, const ts_rlwe_ksk_t *k, bool level0);
/*
 * Read such a body for a key of `ring` with dnum digits capped at kq Q limbs
 * (0: a full key), Galois element `galois` and seed `seed`: its exact size is checked against what
 * the reader holds before allocating, residues are checked below their moduli. Errors: TS_EFORMAT
 * (short, malformed, dnum not valid for the ring), TS_ENOMEM.
 */
ts_status_t ts_rlwe_ksk_get_body(ts_reader_t *r, ts_ring_t *ring, uint32_t dnum, uint32_t kq,
                                 uint64_t galois, const uint8_t seed[TS_SEED_BYTES], bool level0,
                                 ts_rlwe_ksk_t **out);

/* A set of Galois keys (rotation steps and optionally conjugation). */
typedef struct ts_rlwe_galois_keys {
    size_t count;
    uint64_t *elements;   /* the k of each key */
    ts_rlwe_ksk_t **keys; /* one reference each */
} ts_rlwe_galois_keys_t;

/* [out] keys for every step in steps[0..nsteps) (duplicates and steps that are
 * the identity are skipped) and, when conjugate, for k = 2N - 1. */
ts_status_t ts_rlwe_galois_keys_new(const ts_rlwe_sk_t *sk, const int64_t *steps, size_t nsteps,
                                    bool conjugate, uint32_t dnum, ts_prng_t *prng,
                                    ts_rlwe_galois_keys_t **out);
/* The key for element k, NULL when absent. */
const ts_rlwe_ksk_t *ts_rlwe_galois_keys_find(const ts_rlwe_galois_keys_t *g, uint64_t k);
void ts_rlwe_galois_keys_free(ts_rlwe_galois_keys_t *g);

/* ----------------------------------------------------------- key switch */

/*
 * A key switcher for one ring and one dnum: the precomputed ModUp/ModDown
 * conversions of every level and the scratch space, so switching does not
 * allocate. One owner; not for concurrent use (make one per thread).
 */
typedef struct ts_rlwe_ks ts_rlwe_ks_t;
ts_status_t ts_rlwe_ks_new(ts_ring_t *r, uint32_t dnum, ts_rlwe_ks_t **out);
void ts_rlwe_ks_free(ts_rlwe_ks_t *ks);

/* The ModUp'ed digits of one polynomial, kept for hoisting (one owner). */
typedef struct ts_rlwe_decomp ts_rlwe_decomp_t;
ts_status_t ts_rlwe_decomp_new(const ts_rlwe_ks_t *ks, ts_rlwe_decomp_t **out);
void ts_rlwe_decomp_free(ts_rlwe_decomp_t *d);

/* [out] d = the digits of c (Q limbs only, np = 0, either form), NTT form over Q_l * P. */
ts_status_t ts_rlwe_decompose(ts_rlwe_ks_t *ks, const ts_poly_t *c, ts_rlwe_decomp_t *d);

/*
 * [out] (u0, u1), NTT form over c's Q limbs, with u0 + u1 s = sigma_k(c) s'' where
 * the key switches s'' -> s: for k = 1 the key's own s'' = s'; with a Galois key
 * for k, s'' = s(X^k) and the output is the key-switched part of a rotation
 * (the caller adds sigma_k(c0) to u0). k must equal key->galois when that is set
 * (or be 1 for other keys). u0, u1 need capacity for c's limbs; they may not
 * alias each other. TS_EMISMATCH for keys of another ring/dnum; TS_ELEVEL when
 * c has more limbs than a capped key holds.
 */
ts_status_t ts_rlwe_keyswitch_hoisted(ts_rlwe_ks_t *ks, const ts_rlwe_decomp_t *d, uint64_t k,
                                      const ts_rlwe_ksk_t *key, ts_poly_t *u0, ts_poly_t *u1);
/*
 * Double hoisting (Bossuat, Mouchet, Troncoso-Pastoriza, Hubaux, "Efficient
 * Bootstrapping for Approximate Homomorphic Encryption with Non-Sparse Keys",
 * Eurocrypt 2021, the hoisted BSGS of its linear transforms): the same switch without its
 * ModDown. [out] (v0, v1), NTT form over c's Q limbs AND the P limbs (nq = c's
 * limbs, np = p_count; capacity nq + p_count limbs each), sigma_k applied, with
 *     v0 + v1 s = P sigma_k(c) s'' + e_ks P     (over Q_l * P),
 * and ts_rlwe_moddown(v0, v1) = ts_rlwe_keyswitch_hoisted's (u0, u1) bit for bit.
 * Sums of such outputs times plaintexts (encoded over Q_l * P too) can share
 * one ModDown; a ciphertext part c0 enters as P c0, which is c0 [P]_{q_i} on the Q
 * limbs and 0 on the P limbs (or, the same thing after ModDown, c0 added to its
 * output). Errors as ts_rlwe_keyswitch_hoisted.
 */
ts_status_t ts_rlwe_keyswitch_hoisted_qp(ts_rlwe_ks_t *ks, const ts_rlwe_decomp_t *d, uint64_t k,
                                         const ts_rlwe_ksk_t *key, ts_poly_t *v0, ts_poly_t *v1);
/*
 * ModDown, Q_l * P -> Q_l: u = round(v / P) mod Q_l, computed in NTT form as
 * (v - NTT(conv_{P->Q}(INTT(v mod P)))) [P^{-1}]_{q_i} with the centered fast
 * conversion (error of the rounding at most (1 + |s|_1) / 2 in the secret-key
 * relation). v0, v1: NTT form over nq Q limbs and the P limbs; u0, u1: capacity nq,
 * set to (nq, np = 0, NTT form). v1 and u1 may both be NULL (one polynomial); u_c
 * may alias v_c (in place), nothing else aliases. The one ModDown of core/rlwe
 * (ts_rlwe_keyswitch runs the same code). TS_ELEVEL for other shapes.
 */
ts_status_t ts_rlwe_moddown(ts_rlwe_ks_t *ks, const ts_poly_t *v0, const ts_poly_t *v1,
                            ts_poly_t *u0, ts_poly_t *u1);
/* Decompose then switch (k = 1 or the key's galois element). */
ts_status_t ts_rlwe_keyswitch(ts_rlwe_ks_t *ks, const ts_poly_t *c, uint64_t k,
                              const ts_rlwe_ksk_t *key, ts_poly_t *u0, ts_poly_t *u1);

/* ------------------------------------------------------------ gadgets */

/*
 * Base-2^log_base gadget over one modulus q (< 2^62), `levels` digits taken
 * from the top: x in [0, q) is rounded to a multiple of q / B^levels
 * (B = 2^log_base) and written as sum_i d_i g_i, with balanced digits d_i in
 * [-B/2, B/2) and g_i = round(q / B^(i+1)) (i = 0 most significant).
 * The rounding t = round(x B^levels / q) is computed without a division, as
 * (x * dec_mul + 2^(dec_shift - 1)) >> dec_shift with dec_shift =
 * 62 + bitlen(q) - log_base * levels and dec_mul = round(2^(dec_shift +
 * log_base * levels) / q); it differs from the exact rounding only within
 * 2^(log_base * levels - 63) of a tie. |x - sum d_i g_i mod q| <=
 * q / (2 B^levels) + 1 + levels * B / 2. The one implementation of the
 * TFHE blind rotation's decomposition too.
 */
typedef struct ts_gadget {
    ts_modulus_t mod;
    uint32_t log_base; /* 1..30 */
    uint32_t levels;   /* log_base * levels <= 62 */
    uint64_t g[64];    /* g_i mod q */
    uint64_t dec_mul;  /* see above */
    uint32_t dec_shift;
} ts_gadget_t;

ts_status_t ts_gadget_init(ts_gadget_t *g, uint64_t q, uint32_t log_base, uint32_t levels);
/* [out] digits[i * n + j] = d_i of in[j] (in reduced mod q). No allocation. */
void ts_gadget_decompose(const ts_gadget_t *g, const uint64_t *in, size_t n, int64_t *digits);
/* The same digits as residues mod q (d_i + q when negative): out[i * n + j]. */
void ts_gadget_decompose_mod(const ts_gadget_t *g, const uint64_t *in, size_t n, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* TS_RLWE_H */
