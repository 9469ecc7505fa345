/*
 * core/ring — the ring R = Z[X]/(X^N + 1) in RNS form: ring contexts,
 * RNS polynomials, automorphisms and sampling.
 *
 * A ring context (ts_ring_t, opaque, reference-counted, immutable after
 * creation, safe to share between threads) holds N, the modulus chain
 * Q = q_0 ... q_{L} and the special primes P = p_0 ... p_{K-1} (all NTT
 * primes = 1 mod 2N, distinct, < 2^62), the backend that computes on its
 * polynomials and the backend's tables for them. Moduli are indexed globally:
 * index i < q_count is q_i, index q_count + j is p_j.
 *
 * A polynomial (ts_poly_t, public struct, one owner) has nq Q-limbs
 * q_0..q_{nq-1} (its level is nq - 1) followed by np P-limbs p_0..p_{np-1}
 * (np is 0 or the ring's p_count). Its data live in backend memory, limb-major:
 * limb l is the N words data[l * N .. (l + 1) * N), reduced mod its prime.
 * is_ntt says whether the limbs are in NTT form (bit-reversed evaluation order,
 * see core/math/math.h) or coefficient form. All operations check shapes and
 * forms and return TS_EMISMATCH (different rings or shapes), TS_EINVAL
 * (wrong form, bad arguments) or TS_ELEVEL (limb counts out of range); outputs
 * may alias inputs unless stated.
 *
 * Sampling draws from a ts_prng_t and writes the same small integer into
 * every limb (so the polynomial is one integer polynomial in RNS form):
 *  - uniform mod Q: each limb independently uniform by rejection (not "the
 *    same integer"; that is the point of uniform mod Q);
 *  - uniform ternary {-1, 0, 1}, each with probability 1/3 (rejection on a byte);
 *  - sparse ternary with exactly h nonzero coefficients (positions by a
 *    Fisher-Yates partial shuffle, signs uniform);
 *  - discrete Gaussian, sigma (default 3.2) truncated at 6 sigma, by inversion
 *    of a cumulative table built once per sigma: a 64-bit uniform draw is
 *    compared with EVERY table entry (no early exit, no data-dependent
 *    branch: "constant-time-ish"), then a random sign.
 */
#ifndef TS_RING_H
#define TS_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/backend/backend.h"
#include "core/base/base.h"
#include "core/math/math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_ring ts_ring_t;

/* Literal parameters of a ring; the arrays are copied. */
typedef struct ts_ring_params {
    uint32_t n;            /* power of two, 2 .. 2^17 */
    const uint64_t *q;     /* q_count primes, the chain (q_0 first, dropped last) */
    uint32_t q_count;      /* >= 1 */
    const uint64_t *p;     /* p_count special primes (may be NULL when 0) */
    uint32_t p_count;      /* >= 0 */
    ts_backend_t *backend; /* NULL: ts_backend_default() */
} ts_ring_params_t;

/* [out] a ring with one reference. TS_EINVAL/TS_EPARAMS on bad parameters
 * (non-prime, not 1 mod 2N, duplicate, >= 2^62), TS_ENOMEM. */
ts_status_t ts_ring_new(const ts_ring_params_t *params, ts_ring_t **out);
/* Take one more reference; returns r. */
ts_ring_t *ts_ring_ref(ts_ring_t *r);
/* Drop one reference; the last one frees. Accepts NULL. */
void ts_ring_free(ts_ring_t *r);

uint32_t ts_ring_n(const ts_ring_t *r);
uint32_t ts_ring_logn(const ts_ring_t *r);
uint32_t ts_ring_q_count(const ts_ring_t *r);
uint32_t ts_ring_p_count(const ts_ring_t *r);
/* Modulus of global index idx (< q_count + p_count); NULL when out of range. */
const ts_modulus_t *ts_ring_modulus(const ts_ring_t *r, uint32_t idx);
ts_backend_t *ts_ring_backend(const ts_ring_t *r);
ts_bk_ring_t *ts_ring_bk(const ts_ring_t *r);
/* The CRT basis q_0..q_{nq-1} (1 <= nq <= q_count), and P (NULL if p_count = 0). */
const ts_rns_basis_t *ts_ring_basis_q(const ts_ring_t *r, uint32_t nq);
const ts_rns_basis_t *ts_ring_basis_p(const ts_ring_t *r);
/* Global modulus indices of the limbs of a (nq, np) polynomial: a static
 * table valid as long as the ring: idx[l] = l for l < nq, q_count + l - nq after. */
const uint32_t *ts_ring_limb_index(const ts_ring_t *r, uint32_t nq, uint32_t np);

/* Galois elements: 5^step mod 2N (step may be negative: rotation to the right),
 * and 2N - 1 for complex conjugation. */
uint64_t ts_ring_galois_rotate(const ts_ring_t *r, int64_t step);
uint64_t ts_ring_galois_conjugate(const ts_ring_t *r);

/* ------------------------------------------------------------ polynomials */

typedef struct ts_poly {
    ts_ring_t *ring;    /* holds a reference */
    uint64_t *data;     /* backend memory, (nq + np) * N words */
    uint32_t nq;        /* Q limbs, 1..q_count (level = nq - 1) */
    uint32_t np;        /* P limbs, 0 or p_count */
    uint32_t cap_limbs; /* limbs allocated */
    bool is_ntt;
} ts_poly_t;

/* [out] a zero polynomial with nq Q-limbs and np P-limbs. */
ts_status_t ts_poly_new(ts_ring_t *r, uint32_t nq, uint32_t np, bool is_ntt, ts_poly_t **out);
/* [out] the same with room for cap_limbs >= nq + np limbs (a later reshape up
 * to them needs no new memory); only the shape's limbs are zeroed, the others
 * hold whatever the allocator gave until a reshape writes them. */
ts_status_t ts_poly_new_cap(ts_ring_t *r, uint32_t cap_limbs, uint32_t nq, uint32_t np, bool is_ntt,
                            ts_poly_t **out);
void ts_poly_free(ts_poly_t *p); /* accepts NULL */
/* dst takes src's shape, form and values; dst needs cap_limbs >= src's limbs. */
ts_status_t ts_poly_copy(ts_poly_t *dst, const ts_poly_t *src);
/* dst = the first nq Q-limbs of src (src without P-limbs, 1 <= nq <= src's;
 * src's form), writing only those limbs: a lower-level copy without copying
 * the limbs a drop would discard. dst may be src (then a drop). */
ts_status_t ts_poly_copy_prefix(ts_poly_t *dst, const ts_poly_t *src, uint32_t nq);
/* [out] a new copy. */
ts_status_t ts_poly_clone(const ts_poly_t *src, ts_poly_t **out);
/* Set all limbs to 0, keep shape and form. */
ts_status_t ts_poly_zero(ts_poly_t *p);
/* Change the shape (values become 0) within the capacity. */
ts_status_t ts_poly_reshape(ts_poly_t *p, uint32_t nq, uint32_t np, bool is_ntt);

/* The same without the zeroing: the words keep whatever they held (not even
 * reduced modulo the new limbs' primes), so the caller must write every word
 * before any other use (an encoder that writes the whole polynomial next). */
ts_status_t ts_poly_reshape_uninit(ts_poly_t *p, uint32_t nq, uint32_t np, bool is_ntt);

/* The batch view of a polynomial (one poly, its limbs, their modulus indices). */
ts_bk_batch_t ts_poly_batch(const ts_poly_t *p);

/* out = a + b, a - b, -a: same ring, shape and form. */
ts_status_t ts_poly_add(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b);
ts_status_t ts_poly_sub(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b);
ts_status_t ts_poly_neg(ts_poly_t *out, const ts_poly_t *a);
/* out = a * b, both in NTT form (TS_EINVAL otherwise). */
ts_status_t ts_poly_mul(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b);
/* out += a * b, all in NTT form. */
ts_status_t ts_poly_mul_add(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b);
/* out = a * c for a signed integer c (any form). */
ts_status_t ts_poly_mul_int(ts_poly_t *out, const ts_poly_t *a, int64_t c);
/* out = a * s[l] in limb l (reduced scalars, one per limb of a). */
ts_status_t ts_poly_mul_scalar(ts_poly_t *out, const ts_poly_t *a, const uint64_t *s);
/* In-place form changes; no-ops when already in the requested form. */
ts_status_t ts_poly_ntt(ts_poly_t *p);
ts_status_t ts_poly_intt(ts_poly_t *p);
/* The forward NTT of a sparse polynomial a(X) = b(X^gap), gap a power of two
 * <= N/2 (a CKKS encoding of N/(2 gap) slots): p in coefficient form holds b_k
 * at coefficient k * gap of every limb; the other coefficients are not read
 * (taken as 0). p becomes the NTT form of a, bit-exactly ts_poly_ntt's result
 * for that a, at the cost of an (N/gap)-point NTT and a spread per limb
 * (core/math ts_ntt_forward_sparse) when the backend has the op, else of
 * zeroing + ts_poly_ntt. gap = 1 is ts_poly_ntt; a no-op in NTT form;
 * TS_EINVAL for a bad gap. */
ts_status_t ts_poly_ntt_sparse(ts_poly_t *p, uint32_t gap);
/* out = a(X^k) for odd k (any form; out keeps a's form). out must not alias a. */
ts_status_t ts_poly_automorphism(ts_poly_t *out, const ts_poly_t *a, uint64_t k);
/* Keep the first nq Q-limbs (requires np == 0 and 1 <= nq <= p->nq). */
ts_status_t ts_poly_drop_limbs(ts_poly_t *p, uint32_t nq);

/* Load a signed integer polynomial (N coefficients, |c| < 2^63) into every limb,
 * coefficient form. */
ts_status_t ts_poly_set_i64(ts_poly_t *p, const int64_t *coeffs);
/* Copy raw limbs out of / into backend memory (host array of (nq+np)*N words). */
ts_status_t ts_poly_download(const ts_poly_t *p, uint64_t *host);
ts_status_t ts_poly_upload(ts_poly_t *p, const uint64_t *host);
/* True when every coefficient of p and q (same shape and form) agrees. */
bool ts_poly_equal(const ts_poly_t *a, const ts_poly_t *b);

/* --------------------------------------------------------------- sampling */

#define TS_GAUSSIAN_SIGMA 3.2

/* Small signed samples into a host array of n int64 (see the overview). */
ts_status_t ts_ring_sample_ternary(ts_prng_t *prng, size_t n, int64_t *out);
/* exactly h nonzero (h <= n). */
ts_status_t ts_ring_sample_sparse_ternary(ts_prng_t *prng, size_t n, size_t h, int64_t *out);
/* discrete Gaussian with deviation sigma (0 < sigma <= 64), truncated at 6 sigma. */
ts_status_t ts_ring_sample_gaussian(ts_prng_t *prng, size_t n, double sigma, int64_t *out);

/* The same into every limb of p, leaving p in coefficient form. */
ts_status_t ts_poly_sample_ternary(ts_poly_t *p, ts_prng_t *prng);
ts_status_t ts_poly_sample_sparse_ternary(ts_poly_t *p, ts_prng_t *prng, size_t h);
ts_status_t ts_poly_sample_gaussian(ts_poly_t *p, ts_prng_t *prng, double sigma);
/* Uniform mod each limb's prime (rejection sampling); p keeps its is_ntt flag
 * (uniform in one form is uniform in the other). */
ts_status_t ts_poly_sample_uniform(ts_poly_t *p, ts_prng_t *prng);

#ifdef __cplusplus
}
#endif

#endif /* TS_RING_H */
