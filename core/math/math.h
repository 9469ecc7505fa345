/*
 * core/math — word-level modular arithmetic, NTT-friendly primes, the
 * negacyclic NTT and RNS (residue number system) tools.
 *
 * Contracts used everywhere above this layer:
 *
 *  - Moduli are odd primes q with 2 <= q < 2^62 (so 4q fits in a 64-bit word,
 *    which Harvey's lazy butterflies need). NTT primes satisfy q = 1 mod 2N.
 *  - "Reduced" means in [0, q). "Lazy" ranges are stated per function:
 *    [0, 2q) or [0, 4q).
 *  - Shoup multiplication by a fixed operand w < q uses w' = floor(w * 2^64 / q)
 *    (ts_shoup_precompute); the result of ts_mod_mul_shoup_lazy is in [0, 2q)
 *    for any 64-bit input a, and ts_mod_mul_shoup reduces it to [0, q).
 *  - Barrett reduction uses floor(2^128 / q) (two words) kept in ts_modulus_t.
 *
 * NTT (negacyclic, Z_q[X]/(X^N + 1)):
 *  - ts_ntt_forward maps coefficients a_0..a_{N-1} (standard order, inputs in
 *    [0, 4q) are accepted) to evaluations in BIT-REVERSED order:
 *        out[i] = a(psi^(2 * bitrev_logN(i) + 1)) mod q,
 *    where psi is the table's primitive 2N-th root of unity (ts_ntt_table_t.psi,
 *    the smallest one, so every implementation agrees). Output is in [0, q).
 *  - ts_ntt_inverse takes that bit-reversed order (inputs in [0, 4q) accepted)
 *    back to coefficients in standard order, in [0, q), including the 1/N.
 *  - Pointwise products of two forward transforms followed by the inverse give
 *    the negacyclic product. Cooley-Tukey forward / Gentleman-Sande inverse with
 *    Harvey's lazy butterflies (values kept in [0, 4q) resp. [0, 2q)) and
 *    precomputed Shoup twiddles; one final reduction pass.
 *  - An AVX2 implementation (math/ntt_avx2.c) and an AVX-512 one
 *    (math/ntt_avx512.c, 52-bit IFMA products for q < 2^50) are chosen at run
 *    time from the CPU's features (ts_ntt_auto_impl); all are bit-exact with
 *    the portable one (each returns the unique reduced result).
 *    ts_ntt_forward_impl lets tests and benchmarks force one.
 *  - The automorphism X -> X^k (k odd) in this order is a permutation of slots:
 *    see ts_ntt_automorphism_index.
 *
 * RNS: a ts_rns_basis_t is an ordered list of distinct primes with CRT
 * constants; a residue vector of one integer is res[i * stride] mod q_i.
 * ts_rns_conv_t is the fast basis conversion from basis A to basis B
 * (Halevi-Polyakov-Shoup, "An improved RNS variant of the BFV scheme",
 * CT-RSA 2019, section 2.3/4): with y_i = [x_i * (A/a_i)^{-1}]_{a_i} it computes
 *     x' = sum_i y_i * (A/a_i) - v * A  (mod b_j),  v = round(sum_i y_i / a_i)
 * where v is found in double precision. The result is the CENTERED lift of
 * x mod A, i.e. x' = x - A*[x > A/2] (exact unless the fractional part of
 * sum y_i/a_i lies within ~2^-40 of 1/2, i.e. |x| within ~A*2^-40 of A/2,
 * which for key-switching digits happens with negligible probability and
 * then errs by exactly +-A, harmless noise-wise). ModDown (divide by P with
 * rounding) is ts_rns_conv_moddown: (x_Q - conv_{P->Q}(x_P)) * P^{-1}.
 * Exact CRT composition to a centered big integer is ts_rns_compose_*.
 */
#ifndef TS_MATH_H
#define TS_MATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------- 128-bit words */

/* The one wrapper over the compiler's 128-bit integer (GCC/Clang). */
__extension__ typedef unsigned __int128 ts_u128_t;

/* Full 64x64 -> 128 product split into words. */
static inline void ts_mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    ts_u128_t p = (ts_u128_t)a * b;
    *hi = (uint64_t)(p >> 64);
    *lo = (uint64_t)p;
}

/* High word of a 64x64 product. */
static inline uint64_t ts_mul64_hi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((ts_u128_t)a * b) >> 64);
}

/* ------------------------------------------------------------- a modulus */

#define TS_MODULUS_MAX_BITS 62 /* q < 2^62 */

/* A modulus with its Barrett constant; plain data, copy freely. */
typedef struct ts_modulus {
    uint64_t q;
    uint64_t barrett_hi; /* floor(2^128 / q), high word */
    uint64_t barrett_lo; /* floor(2^128 / q), low word */
    uint32_t bits;       /* bit length of q */
} ts_modulus_t;

/* [out] m for q in [2, 2^62). TS_EINVAL otherwise. */
ts_status_t ts_modulus_init(ts_modulus_t *m, uint64_t q);

static inline uint64_t ts_mod_add(uint64_t a, uint64_t b, uint64_t q) /* a, b < q */
{
    uint64_t s = a + b;
    return s >= q ? s - q : s;
}

static inline uint64_t ts_mod_sub(uint64_t a, uint64_t b, uint64_t q) /* a, b < q */
{
    return a >= b ? a - b : a + q - b;
}

static inline uint64_t ts_mod_neg(uint64_t a, uint64_t q) /* a < q */
{
    return a == 0 ? 0 : q - a;
}

/* Barrett reduction of a 128-bit value hi:lo (any value < 2^128) to [0, q). */
static inline uint64_t ts_mod_reduce128(uint64_t hi, uint64_t lo, const ts_modulus_t *m)
{
    /* quotient estimate floor(x * floor(2^128/q) / 2^128), off by at most 2 */
    /* (hi:lo) * (barrett_hi:barrett_lo) >> 128 from 64-bit limbs */
    uint64_t xl = lo, xh = hi, rl = m->barrett_lo, rh = m->barrett_hi;
    ts_u128_t ll = (ts_u128_t)xl * rl;
    ts_u128_t lh = (ts_u128_t)xl * rh;
    ts_u128_t hl = (ts_u128_t)xh * rl;
    ts_u128_t hh = (ts_u128_t)xh * rh;
    ts_u128_t mid = (ll >> 64) + (uint64_t)lh + (uint64_t)hl;
    ts_u128_t quot = hh + (lh >> 64) + (hl >> 64) + (mid >> 64);
    uint64_t rem = lo - (uint64_t)quot * m->q;
    while (rem >= m->q)
        rem -= m->q;
    return rem;
}

/* Barrett reduction of one word to [0, q). */
static inline uint64_t ts_mod_reduce64(uint64_t a, const ts_modulus_t *m)
{
    uint64_t quot = ts_mul64_hi(a, m->barrett_hi);
    uint64_t rem = a - quot * m->q;
    return rem >= m->q ? rem - m->q : rem;
}

/* a * b mod q for a, b < 2^64 (any), result in [0, q). */
static inline uint64_t ts_mod_mul(uint64_t a, uint64_t b, const ts_modulus_t *m)
{
    uint64_t hi, lo;
    ts_mul64(a, b, &hi, &lo);
    return ts_mod_reduce128(hi, lo, m);
}

/* w' = floor(w * 2^64 / q) for w < q. */
static inline uint64_t ts_shoup_precompute(uint64_t w, uint64_t q)
{
    return (uint64_t)(((ts_u128_t)w << 64) / q);
}

/* a * w mod q in [0, 2q) for any 64-bit a; w < q, wp = ts_shoup_precompute(w, q). */
static inline uint64_t ts_mod_mul_shoup_lazy(uint64_t a, uint64_t w, uint64_t wp, uint64_t q)
{
    uint64_t quot = ts_mul64_hi(a, wp);
    return a * w - quot * q;
}

/* a * w mod q in [0, q). */
static inline uint64_t ts_mod_mul_shoup(uint64_t a, uint64_t w, uint64_t wp, uint64_t q)
{
    uint64_t r = ts_mod_mul_shoup_lazy(a, w, wp, q);
    return r >= q ? r - q : r;
}

/* a^e mod q. */
uint64_t ts_mod_pow(uint64_t a, uint64_t e, const ts_modulus_t *m);
/* a^{-1} mod q via extended Euclid; 0 when gcd(a, q) != 1. Any q >= 2. */
uint64_t ts_mod_inv(uint64_t a, uint64_t q);

/* ----------------------------------------------------- vectors mod q */

/*
 * Element-wise operations on n words mod m->q, inputs reduced, outputs
 * reduced; o may alias a or b. An AVX-512 kernel is chosen at run time
 * (products with the 52-bit IFMA unit: directly when q < 2^50, with the
 * operands split at bit 52 when 2^50 <= q < 2^62); every implementation
 * returns the unique reduced result, so they agree word for word.
 *   TS_VEC_ADD        o = a + b          TS_VEC_SUB  o = a - b
 *   TS_VEC_MUL        o = a b            TS_VEC_MUL_ADD  o = o + a b
 *   TS_VEC_MUL_SCALAR o = a s (s < q; b unused, may be NULL)
 *   TS_VEC_MUL_SCALAR_ADD o = o + a s (s < q; b unused: one pass where a
 *                     scalar product and an addition took two)
 *   TS_VEC_SUB_MUL_SCALAR o = (a - b) s (s < q: rescaling's and ModDown's
 *                     (x - lift) / q in one pass)
 */
typedef enum {
    TS_VEC_ADD = 0,
    TS_VEC_SUB = 1,
    TS_VEC_MUL = 2,
    TS_VEC_MUL_ADD = 3,
    TS_VEC_MUL_SCALAR = 4,
    TS_VEC_MUL_SCALAR_ADD = 5,
    TS_VEC_SUB_MUL_SCALAR = 6,
} ts_vec_op_t;

void ts_vec_op(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b, uint64_t s,
               size_t n, const ts_modulus_t *m);

/*
 * The centered lift of residues mod p into Z_q: for x in [0, p) (p odd,
 * p < 2^62), o = x mod q when x <= p / 2, else -(p - x) mod q. o may alias x.
 * (Rescaling's lift of the dropped limb.) Same words from every kernel.
 */
void ts_vec_center_lift(uint64_t *o, const uint64_t *x, size_t n, uint64_t p,
                        const ts_modulus_t *m);

/*
 * Dot products over `terms` vectors: o[i] = sum_t x[t][i] y[t][i] mod q
 * (inputs reduced; o must not alias an input). 128-bit accumulation; the
 * AVX-512 kernels keep the products as 52-bit-weighted sums and reduce once:
 * two sums for q < 2^50 (terms < 4096), three with the operands split at bit
 * 52 for 2^50 <= q < 2^62 (terms <= 1024). Same words from every kernel.
 */
void ts_vec_dot(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y, size_t terms,
                size_t n, const ts_modulus_t *m);

/* Signed integers to residues: o = x mod q in [0, q) for every int64 x
 * (INT64_MIN included). o may alias x (the same words reinterpreted). */
void ts_vec_from_i64(uint64_t *o, const int64_t *x, size_t n, const ts_modulus_t *m);

/* --------------------------------------------------------------- primes */

/* Deterministic Miller-Rabin for all 64-bit n (bases 2..37). */
bool ts_is_prime(uint64_t n);

typedef enum {
    TS_PRIMES_DESCENDING = 0, /* largest primes below 2^bits, going down */
    TS_PRIMES_ASCENDING = 1,  /* smallest primes above 2^bits, going up */
    TS_PRIMES_NEAREST = 2,    /* alternate below/above 2^bits, nearest first */
} ts_primes_order_t;

/*
 * [out] `count` distinct primes q = 1 mod two_n (two_n a power of two >= 2),
 * close to 2^bits in the given order, skipping any listed in `exclude`
 * (may be NULL when n_exclude = 0). bits in [two_n's log + 2, 61]; primes stay
 * below 2^62. TS_EINVAL for bad arguments, TS_ERANGE when the range runs out.
 */
ts_status_t ts_primes_ntt(uint32_t bits, uint64_t two_n, size_t count, ts_primes_order_t order,
                          const uint64_t *exclude, size_t n_exclude, uint64_t *out);

/* A primitive m-th root of unity mod prime q (m | q-1, m a power of two): the
 * smallest one, deterministic. TS_EINVAL when none exists. */
ts_status_t ts_primitive_root_2pow(uint64_t q, uint64_t m, uint64_t *out);

/* ------------------------------------------------------------------ NTT */

#define TS_NTT_MAX_LOGN 17

/*
 * Tables for one (N, q). Read-only after ts_ntt_table_new; public so that a
 * device backend can upload them. fwd[i] = psi^bitrev(i) (i in [0, N)),
 * inv[i] = psi^-(bitrev(i)) ordered for the Gentleman-Sande inverse (see
 * math/ntt.c), *_shoup the matching Shoup constants. All in [0, q).
 */
typedef struct ts_ntt_table {
    uint32_t n;
    uint32_t logn;
    ts_modulus_t mod;
    uint64_t psi;     /* primitive 2N-th root used (smallest) */
    uint64_t psi_inv; /* psi^{-1} */
    uint64_t *fwd, *fwd_shoup;
    uint64_t *inv, *inv_shoup;
    uint64_t n_inv, n_inv_shoup; /* N^{-1} mod q */
    /* N^{-1} * inv[1] for the merged last inverse stage (see ntt.c) */
    uint64_t n_inv_w, n_inv_w_shoup;
    /* 52-bit Shoup constants floor(w 2^52 / q) for the AVX512-IFMA kernels,
     * present only when q < 2^50 (NULL / 0 otherwise) */
    uint64_t *fwd_shoup52, *inv_shoup52;
    uint64_t n_inv_shoup52, n_inv_w_shoup52;
} ts_ntt_table_t;

/* [out] tables for N = 2^logn (1 <= logn <= 17) and prime q = 1 mod 2N, q < 2^62. */
ts_status_t ts_ntt_table_new(uint32_t n, uint64_t q, ts_ntt_table_t **out);
void ts_ntt_table_free(ts_ntt_table_t *t); /* accepts NULL */

typedef enum {
    TS_NTT_IMPL_AUTO = 0,     /* the best available (AVX2 when the CPU has it) */
    TS_NTT_IMPL_PORTABLE = 1, /* plain C, 64-bit words */
    TS_NTT_IMPL_AVX2 = 2,     /* TS_ENOTSUP when the CPU lacks AVX2 */
    TS_NTT_IMPL_AVX512 = 3,   /* AVX-512 F/DQ/VL/IFMA; TS_ENOTSUP when absent */
} ts_ntt_impl_t;

/* True when the running CPU supports AVX2 (named wrapper over the builtin). */
bool ts_cpu_has_avx2(void);
/* True when it supports AVX-512 F, DQ, VL and IFMA (and the build has the kernels). */
bool ts_cpu_has_avx512(void);
/* The class of vector kernels core/math runs on this CPU and build: "avx512"
 * (IFMA products, the NTT), "avx2" (the NTT only) or "portable"; CKKS
 * latencies differ by ~3.5x between the first two (docs/benchmarks.md). */
const char *ts_cpu_kernels(void);
/* The implementation TS_NTT_IMPL_AUTO uses for table t on this CPU. */
ts_ntt_impl_t ts_ntt_auto_impl(const ts_ntt_table_t *t);

/* [in,out] a: N words, in [0, 4q) on entry, [0, q) in bit-reversed order on exit. */
void ts_ntt_forward(const ts_ntt_table_t *t, uint64_t *a);
/* [in,out] a: N words in bit-reversed order, in [0, 4q) on entry; coefficients in [0, q). */
void ts_ntt_inverse(const ts_ntt_table_t *t, uint64_t *a);
/* The same with a forced implementation; TS_ENOTSUP if unavailable. */
ts_status_t ts_ntt_forward_impl(const ts_ntt_table_t *t, uint64_t *a, ts_ntt_impl_t impl);
ts_status_t ts_ntt_inverse_impl(const ts_ntt_table_t *t, uint64_t *a, ts_ntt_impl_t impl);

/*
 * Forward NTT of a sparse polynomial a(X) = b(X^gap), gap a power of two with
 * 1 <= gap <= N/2 (the CKKS encoding of N/(2 gap) slots): on entry
 * a[k * gap] = b_k (in [0, 4q)) for k < M = N / gap, the other words are not
 * read; on exit a holds exactly what ts_ntt_forward gives for that a. Cost:
 * one M-point NTT and a spread instead of an N-point NTT.
 * Why: with i = h * gap + r (h < M, r < gap), bitrev_logN(i) = bitrev_logM(h)
 * + M * bitrev_loggap(r), and psi^gap is a primitive 2M-th root, so
 * out[i] = b(psi^(gap (2 bitrev_logM(h) + 1))) = NTT_M(b)[h] for every r: the
 * M-point bit-reversed transform with root psi^gap, each value repeated over
 * gap consecutive words. Its twiddles (psi^gap)^bitrev_logM(j) = psi^bitrev_logN(j)
 * are the first M entries of t's tables, so any implementation runs it on a
 * view of t with n = M. impl as ts_ntt_forward_impl; TS_EINVAL for a bad gap.
 */
ts_status_t ts_ntt_forward_sparse(const ts_ntt_table_t *t, uint32_t gap, uint64_t *a,
                                  ts_ntt_impl_t impl);
/*
 * The same transform kept compact: on entry a[k] = b_k (in [0, 4q)) for
 * k < M = N / gap; on exit a[h] = NTT_M(b)[h], the word ts_ntt_forward_sparse
 * repeats over words h gap .. h gap + gap - 1 (one word per run: the spread
 * storage of core/ckks linear transforms and keyswitch_inner_spread). M words
 * read and written. gap = 1 is ts_ntt_forward_impl; TS_EINVAL for a bad gap.
 */
ts_status_t ts_ntt_forward_compact(const ts_ntt_table_t *t, uint32_t gap, uint64_t *a,
                                   ts_ntt_impl_t impl);

/* ts_vec_op with a forced implementation (tests): TS_NTT_IMPL_PORTABLE,
 * TS_NTT_IMPL_AVX512 (TS_ENOTSUP when absent; a tail below 8 words runs the
 * portable code) or TS_NTT_IMPL_AUTO. TS_EINVAL for
 * bad arguments (s >= q included). */
ts_status_t ts_vec_op_impl(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b,
                           uint64_t s, size_t n, const ts_modulus_t *m, ts_ntt_impl_t impl);

/* ts_vec_dot with a forced implementation (tests), as ts_vec_op_impl. */
ts_status_t ts_vec_dot_impl(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y,
                            size_t terms, size_t n, const ts_modulus_t *m, ts_ntt_impl_t impl);

/* ts_vec_from_i64 with a forced implementation (tests), as ts_vec_op_impl. */
ts_status_t ts_vec_from_i64_impl(uint64_t *o, const int64_t *x, size_t n, const ts_modulus_t *m,
                                 ts_ntt_impl_t impl);

/* ts_vec_center_lift with a forced implementation (tests), as ts_vec_op_impl. */
ts_status_t ts_vec_center_lift_impl(uint64_t *o, const uint64_t *x, size_t n, uint64_t p,
                                    const ts_modulus_t *m, ts_ntt_impl_t impl);

/*
 * The rounded top of 128-bit products (the gadget decomposition's rounding,
 * core/rlwe): o[i] = floor((x[i] m + 2^(s-1)) / 2^s) for 65 <= s <= 127 and
 * x[i] m < 2^127. o may alias x. Same words from every kernel.
 */
void ts_vec_mul_round_shift(uint64_t *o, const uint64_t *x, size_t n, uint64_t m, unsigned s);
/* ts_vec_mul_round_shift with a forced implementation (tests), as
 * ts_vec_op_impl; TS_EINVAL for s outside [65, 127]. */
ts_status_t ts_vec_mul_round_shift_impl(uint64_t *o, const uint64_t *x, size_t n, uint64_t m,
                                        unsigned s, ts_ntt_impl_t impl);

/* bitrev of i over `bits` bits. */
static inline uint32_t ts_bitrev(uint32_t i, uint32_t bits)
{
    uint32_t r = 0;
    for (uint32_t b = 0; b < bits; b++) {
        r = (r << 1) | (i & 1);
        i >>= 1;
    }
    return r;
}

/*
 * Slot permutation of X -> X^k (k odd, taken mod 2N) in the NTT order above:
 * NTT(a(X^k))[i] = NTT(a)[idx[i]]. [out] idx: N entries.
 */
void ts_ntt_automorphism_index(uint32_t n, uint64_t k, uint32_t *idx);

/* ------------------------------------------------------------------ RNS */

#define TS_RNS_MAX_MODULI 128

/*
 * An ordered basis of distinct primes with CRT constants. Read-only after
 * creation; public so device backends can upload what they need.
 * Big integers are little-endian arrays of `words` 64-bit words.
 */
typedef struct ts_rns_basis {
    uint32_t count;
    uint32_t words;        /* words of the product Q (and of every big value) */
    ts_modulus_t *mods;    /* count */
    uint64_t *qhat_inv;    /* (Q/q_i)^{-1} mod q_i */
    uint64_t *qhat_inv_sh; /* Shoup constants of qhat_inv */
    uint64_t *prod;        /* Q, `words` words */
    uint64_t *half;        /* floor(Q/2), `words` words */
    uint64_t *qhat;        /* Q/q_i, count x words */
    double log2_prod;      /* log2(Q) */
} ts_rns_basis_t;

/* [out] basis of `count` (1..128) distinct primes < 2^62. TS_EINVAL otherwise. */
ts_status_t ts_rns_basis_new(const uint64_t *moduli, uint32_t count, ts_rns_basis_t **out);
void ts_rns_basis_free(ts_rns_basis_t *b);

/*
 * Exact CRT composition of res[i * stride] (i < count, each reduced) to the
 * centered integer x in (-Q/2, Q/2]: [out] mag (b->words words) = |x|, *neg = (x < 0).
 */
void ts_rns_compose_mp(const ts_rns_basis_t *b, const uint64_t *res, size_t stride, uint64_t *mag,
                       bool *neg);
/* The centered x as a long double times 2^-scale_log2 (exact composition, then
 * one rounding). `scratch` holds at least 2 * b->words words (no allocation). */
long double ts_rns_compose_ld(const ts_rns_basis_t *b, const uint64_t *res, size_t stride,
                              double scale_log2, uint64_t *scratch);

/*
 * Fast basis conversion from basis A (moduli from[0..na)) to basis B
 * (to[0..nb)), the HPS centered variant described at the top of this file.
 * A and B must be disjoint. Read-only after creation; public for devices.
 */
typedef struct ts_rns_conv {
    uint32_t na, nb;
    ts_modulus_t *from; /* na */
    ts_modulus_t *to;   /* nb */
    uint64_t *ahat_inv; /* (A/a_i)^{-1} mod a_i, na */
    uint64_t *ahat_inv_sh;
    uint64_t *ahat_mod_b;  /* (A/a_i) mod b_j at [i * nb + j] */
    uint64_t *a_mod_b;     /* A mod b_j, nb */
    uint64_t *a_inv_mod_b; /* A^{-1} mod b_j, nb (the P^{-1} of ModDown) */
    uint64_t *a_inv_mod_b_sh;
    double *a_inv_d;    /* 1.0 / a_i, na */
    uint64_t *va_mod_b; /* (v * A) mod b_j at [v * nb + j], v = 0..na */
    /* for the vector kernels: Shoup constants of ahat_mod_b (64-bit, and the
     * 52-bit floor(h 2^52 / b_j) where b_j < 2^50, else 0), same indexing;
     * va_mod_b transposed, [j * 16 + v], v = 0..min(na, 15), zero padded */
    uint64_t *ahat_mod_b_sh;
    uint64_t *ahat_mod_b_sh52;
    uint64_t *va_mod_b_t;
    /* for the portable kernel's Montgomery reduction, used when sum_i a_i <=
     * 2^64 (then sum_i y_i h_ij < b_j 2^64): (A/a_i) 2^64 mod b_j at
     * [i * nb + j], and -b_j^{-1} mod 2^64, nb; NULL when the bound fails */
    uint64_t *ahat_mod_b_mont;
    uint64_t *b_neg_inv;
} ts_rns_conv_t;

ts_status_t ts_rns_conv_new(const uint64_t *from, uint32_t na, const uint64_t *to, uint32_t nb,
                            ts_rns_conv_t **out);
void ts_rns_conv_free(ts_rns_conv_t *c);

/*
 * Convert n coefficients: in + i*in_stride is limb i (mod from[i]), out + j*out_stride
 * is limb j (mod to[j]). Inputs reduced; outputs reduced. No allocation.
 * `out` must not overlap `in`.
 */
void ts_rns_conv_apply(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride, uint64_t *out,
                       size_t out_stride, size_t n);

/*
 * ModDown, divide by A with rounding: for the value x given by x_B (limbs mod to[j])
 * and x_A (limbs mod from[i]) of the same integer mod A*B, writes
 * out_j = (x_B_j - conv(x_A)_j) * A^{-1} mod b_j = round(x / A) (+-1 noise).
 * `out` may alias `x_b`. No allocation.
 */
void ts_rns_conv_moddown(const ts_rns_conv_t *c, const uint64_t *x_a, size_t a_stride,
                         const uint64_t *x_b, uint64_t *out, size_t b_stride, size_t n);

/*
 * The same two with a forced implementation (tests, benchmarks):
 * TS_NTT_IMPL_PORTABLE, TS_NTT_IMPL_AVX512 (TS_ENOTSUP when the CPU or the
 * build lacks it) or TS_NTT_IMPL_AUTO; AVX2 has no kernel of its own and runs
 * the portable code. The AVX-512 kernels take na <= 15 (na = 1: the exact
 * centered lift) and any n (a tail below 8 runs the portable code); all give
 * identical results.
 */
ts_status_t ts_rns_conv_apply_impl(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride,
                                   uint64_t *out, size_t out_stride, size_t n, ts_ntt_impl_t impl);
ts_status_t ts_rns_conv_moddown_impl(const ts_rns_conv_t *c, const uint64_t *x_a, size_t a_stride,
                                     const uint64_t *x_b, uint64_t *out, size_t b_stride, size_t n,
                                     ts_ntt_impl_t impl);

#ifdef __cplusplus
}
#endif

#endif /* TS_MATH_H */
