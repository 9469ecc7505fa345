/*
 * core/ckks internals shared by the files of this module only.
 */
#ifndef TS_CKKS_INT_H
#define TS_CKKS_INT_H

#include <complex.h>
#include <stdatomic.h>

#include "core/ckks/ckks.h"
#include "core/math/math.h"
#include "core/ring/ring.h"

#define TS_CKKS_MIN_LOGN       3
#define TS_CKKS_MAX_LOGN       17
#define TS_CKKS_MAX_PRIME_BITS 61
#define TS_CKKS_DEFAULT_SIGMA  3.19

struct ts_ckks_params {
    atomic_int refs;
    char name[TS_CKKS_NAME_BYTES];
    int log_n;
    size_t n;
    int log_slots;
    size_t nq, np;
    uint64_t q[TS_CKKS_MAX_Q];
    uint64_t p[TS_CKKS_MAX_P];
    int dnum;
    double scale, scale_log2, sigma;
    int secret;
    int64_t h;
    bool insecure;
    double logq_prefix[TS_CKKS_MAX_Q]; /* log2(Q_l) */
    double logqp;
    uint64_t id;

    /* built by ts__ckks_params_build */
    uint64_t *rot_group; /* 5^j mod 2N, j < N/2 */
    double complex *ksi; /* exp(2 pi i k / 2N), k <= 2N */
    /* inverse special FFT twiddles by stage: for len = 2, 4, .., N/2 (half =
     * len / 2), fft_inv_tw[half - 1 + j] = ksi[(4 len - (rot_group[j] mod 4 len)) * 2N / (4 len)]
     */
    double complex *fft_inv_tw;
    ts_modulus_t qmod[TS_CKKS_MAX_Q];
    ts_ring_t *ring;             /* N, Q then P, default backend */
    ts_poly_t *imag_ntt;         /* X^{N/2} (the slot-wise imaginary unit), NTT form, top level */
    ts_bk_conv_t **rescale_conv; /* [l]: {q_l} -> {q_0..q_{l-1}}, l >= 1 */
    uint64_t *rescale_qinv;      /* [l * nq + i] = q_l^{-1} mod q_i, i < l */
};

struct ts_ckks_plaintext {
    ts_ckks_params_t *params; /* reference */
    ts_poly_t *poly;          /* capacity: top level */
    double scale;
    int log_slots;
};

struct ts_ckks_ciphertext {
    ts_ckks_params_t *params; /* reference */
    ts_poly_t *c[3];          /* c[2] allocated on first use */
    int degree;               /* 1 or 2 */
    double scale;
    int log_slots;
    bool seeded; /* c[1] is expand_a(seed, TS_CKKS_SEED_STREAM) */
    uint8_t seed[TS_SEED_BYTES];
};

/* The stream id of the "a" half of symmetric ciphertexts. */
#define TS_CKKS_SEED_STREAM UINT64_C(0x636b6b732d637400)

#define TS_CKKS_EV_TMP 4

struct ts_ckks_evaluator {
    ts_ckks_params_t *params;       /* reference */
    const ts_ckks_evalkeys_t *keys; /* borrowed, may be NULL */
    ts_backend_t *be;
    ts_bk_ring_t *bk;
    const uint32_t *idx;            /* global modulus index of Q limb l is idx[l] */
    ts_poly_t *tmp[TS_CKKS_EV_TMP]; /* NTT form, top-level capacity */
    ts_poly_t *rs_limb;             /* rescale: one limb in coefficient form */
    ts_poly_t *rs_ext;              /* rescale: its extension */
    uint64_t *scalars;              /* nq words */
    void *ks;                       /* key-switching scratch (keys.c) */
};

/* A batch view of limbs [first, first + count) of p. */
static inline ts_bk_batch_t ts__ckks_view(const ts_ckks_evaluator_t *ev, const ts_poly_t *p,
                                          uint32_t first, uint32_t count)
{
    ts_bk_batch_t b = {.data = p->data + (size_t)first * ev->params->n,
                       .npolys = 1,
                       .nlimbs = count,
                       .poly_stride = (size_t)count * ev->params->n,
                       .mod_idx = ev->idx + first};
    return b;
}

static inline int ts__ckks_level(const ts_poly_t *p)
{
    return (int)p->nq - 1;
}

/* Make sure ct->c[2] exists (capacity of the top level). */
ts_status_t ts__ckks_ct_ensure_c2(ts_ckks_ciphertext_t *ct);
/* Reshape every polynomial of ct to (level, degree), NTT form, values zero. */
ts_status_t ts__ckks_ct_reshape(ts_ckks_ciphertext_t *ct, int level, int degree);
/* The same shape without the zeroing, for a caller that writes every word of
 * polys 0..degree next (a pass over tens of MB saved at N = 2^16). */
ts_status_t ts__ckks_ct_shape(ts_ckks_ciphertext_t *ct, int level, int degree);

/* Build the derived tables of a validated parameter object. */
ts_status_t ts__ckks_params_build(ts_ckks_params_t *p);
/* Free a parameter object regardless of its count (error paths and last unref). */
void ts__ckks_params_destroy(ts_ckks_params_t *p);

/*
 * The special FFT of Cheon-Kim-Kim-Song on n slots (n a power of two, n <= N/2):
 * ts__ckks_fft_inv maps slot values to the "coefficient" vector of the
 * embedding (u_i with m_i = Re u_i, m_{i+n} = Im u_i at stride N/(2n)),
 * ts__ckks_fft_fwd is its inverse. In place, no allocation.
 */
void ts__ckks_fft_inv(const ts_ckks_params_t *p, double complex *vals, size_t n);
void ts__ckks_fft_fwd(const ts_ckks_params_t *p, double complex *vals, size_t n);

/* x mod q for a double holding an integer (any magnitude below 2^1023). */
uint64_t ts__ckks_double_mod(double x, const ts_modulus_t *m);

/*
 * Encode `count` values (vals complex, or reals when vals is NULL) into `slots`
 * slots at `scale`, as limbs 0..level of a coefficient-form polynomial (limb l
 * at limbs + l * limb_stride). scratch: `slots` complex values. Errors:
 * TS_EINVAL (shape, non-finite values), TS_ESCALE, TS_ERANGE (a coefficient
 * does not fit below Q_level / 2).
 */
ts_status_t ts__ckks_encode_limbs(const ts_ckks_params_t *p, const double complex *vals,
                                  const double *reals, size_t count, size_t slots, double scale,
                                  int level, uint64_t *limbs, size_t limb_stride,
                                  double complex *scratch);
/*
 * Decode limbs 0..level (coefficient form) at `scale` into the first `count`
 * of `slots` slots (out complex and/or out_real, either may be NULL).
 * scratch: `slots` complex values; crt_scratch: 2 * words of Q_level words.
 */
ts_status_t ts__ckks_decode_limbs(const ts_ckks_params_t *p, const uint64_t *limbs,
                                  size_t limb_stride, int level, double scale, size_t slots,
                                  double complex *out, double *out_real, size_t count,
                                  double complex *scratch, uint64_t *crt_scratch);

/*
 * Encode into `out` in coefficient form at `level` (out reshaped; values and
 * slots as ts_ckks_encode), with err[0..N) (|e| small, or NULL) added to
 * every coefficient.
 */
ts_status_t ts__ckks_encode_coeff(ts_ckks_encoder_t *e, const double complex *cv, const double *rv,
                                  size_t count, size_t slots, int level, double scale,
                                  ts_poly_t *out, const int64_t *err);
/* The encoder's N-word error scratch (for the fused encode+encrypt). */
int64_t *ts__ckks_encoder_err(ts_ckks_encoder_t *e);
/* One inverse special FFT stage of length len (half = len / 2 >= 4) over
 * vals[0..n) with the stage's twiddles tw[0..half), AVX-512 (fft_avx512.c;
 * only when ts__ckks_fft_avx512_built() and the CPU has AVX-512): the same
 * double operations as the scalar loop, so the same values. */
void ts__ckks_fft_inv_stage_avx512(double complex *vals, size_t n, size_t len,
                                   const double complex *tw);
bool ts__ckks_fft_avx512_built(void);
/* The parameters of an encoder (borrowed). */
ts_ckks_params_t *ts__ckks_encoder_params(const ts_ckks_encoder_t *enc);
/* ct belongs to ev's parameters and keeps the invariants (NTT form, Q limbs
 * only, equal limb counts): TS_EMISMATCH / TS_EINVAL otherwise. */
ts_status_t ts__ckks_check_ct(const ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *ct);
/* out = a * c at `level` <= a's (ts_ckks_mul_const of a dropped to level,
 * reading only the limbs kept: no copy of a first; out may alias a). */
ts_status_t ts__ckks_mul_const_at(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                  double complex c, double const_scale, int level,
                                  ts_ckks_ciphertext_t *out);
/* acc += round(c const_scale) a on acc's limbs (acc's level <= a's, equal
 * degrees; one fused pass per polynomial where the backend has
 * mul_scalar_add). acc keeps its scale: the caller makes a's scale times
 * const_scale acc's (a term of a polynomial's leaf sum). a must not alias acc. */
ts_status_t ts__ckks_mul_const_add(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, double c,
                                   double const_scale, ts_ckks_ciphertext_t *acc);
/* out = a * b (degree 2, not rescaled) at the lower of their levels, reading
 * only the limbs kept (ts_ckks_mul of the higher one dropped: no copy). */
ts_status_t ts__ckks_mul_lo(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                            const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out);
/* True when two scales agree up to the tolerance of additions. */
bool ts__ckks_scales_match(double a, double b);

/*
 * Double hoisting (keys.c, for lintrans.c; Bossuat, Mouchet, Troncoso-Pastoriza,
 * Hubaux, Eurocrypt 2021). Rotations of a (degree 1) by steps[0..count) (keys
 * present) kept in the extended basis: (v[2i], v[2i + 1]), NTT form over a's Q
 * limbs and the P limbs (capacity level + 1 + np each), = (P sigma_k(c0) + w0, w1)
 * where (w0, w1) is ts_rlwe_keyswitch_hoisted_qp of c1; a step of 0 (mod the
 * slots) gives (P c0, P c1). ts__ckks_moddown of a pair is the rotation
 * ts_ckks_rotate_hoisted returns, bit for bit. One decomposition of c1 for all.
 */
ts_status_t ts__ckks_rotate_hoisted_qp(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                       const int64_t *steps, size_t count, ts_poly_t *const *v);
/*
 * The giant step of double hoisting: (acc0, acc1) (+)= the rotation by step (on
 * `slots` slots) of (t0, t1), everything over Q_l * P: t1 comes down to Q_l
 * (ModDown, in place: t1 is left Q-only), is decomposed and switched without
 * ModDown, and sigma_k(t0) is added over Q_l * P. accumulate false: acc is set.
 * w0, w1: scratch of capacity level + 1 + np. Uses the evaluator's decomposition.
 */
ts_status_t ts__ckks_rotate_qp_acc(ts_ckks_evaluator_t *ev, int64_t step, size_t slots,
                                   ts_poly_t *t0, ts_poly_t *t1, ts_poly_t *w0, ts_poly_t *w1,
                                   ts_poly_t *acc0, ts_poly_t *acc1, bool accumulate);
/* ts_rlwe_moddown with the evaluator's key switcher (TS_ENOKEY without one). */
ts_status_t ts__ckks_moddown(ts_ckks_evaluator_t *ev, const ts_poly_t *v0, const ts_poly_t *v1,
                             ts_poly_t *u0, ts_poly_t *u1);
/*
 * Encode like ts_ckks_encode (same integer coefficients) into `out` over the Q
 * limbs 0..level AND the P limbs (out reshaped to (level + 1, np), NTT form;
 * capacity level + 1 + np): the plaintexts of double-hoisted products.
 */
ts_status_t ts__ckks_encode_qp(ts_ckks_encoder_t *e, const double complex *values,
                               const double *reals, size_t count, size_t slots, int level,
                               double scale, ts_poly_t *out);
/*
 * The same real-slot encoding over Q_level * P in the compact (spread) form:
 * dst (backend memory) gets level + 1 + np limbs of 2 slots words, word k of a limb standing
 * for the run of N / (2 slots) equal words k gap .. of the full NTT form (the
 * storage ts__ckks_bsgs_dot takes with that gap). Sparse slots only
 * (slots < N / 2); TS_ENOTSUP when the backend lacks ntt_forward_compact or a
 * coefficient is not below 2^62 (the caller then encodes the full form).
 */
ts_status_t ts__ckks_encode_qp_compact(ts_ckks_encoder_t *e, const double *reals, size_t count,
                                       size_t slots, int level, double scale, uint64_t *dst);
/*
 * ts_ckks_bsgs internals (lintrans.c): the inner sum += sum_{i < count} rot_{b0 + i}(x) .
 * diags[i] for `count` (<= 64) consecutive baby steps and as many consecutive Q_l * P
 * diagonals at diags (one lazy-reduction inner product; gap > 1: spread diagonals of
 * n / gap words per limb, struct ts_ckks_lintrans); and the same for one full diagonal.
 */
ts_status_t ts__ckks_bsgs_dot(ts_ckks_bsgs_t *h, size_t b0, size_t count, const uint64_t *diags,
                              uint32_t gap, double scale);
ts_status_t ts__ckks_bsgs_mul_add_poly(ts_ckks_bsgs_t *h, size_t b, const ts_poly_t *d,
                                       double scale);
/* The words-per-run of lt's stored diagonals (1: full limbs; struct ts_ckks_lintrans). */
uint32_t ts__ckks_lintrans_gap(const ts_ckks_lintrans_t *lt);

/*
 * Key objects around deserialized core/rlwe parts (serialize.c). The wrap
 * functions take ownership of the rlwe object, also when they fail.
 */
ts_status_t ts__ckks_secret_key_wrap(ts_ckks_params_t *params, ts_rlwe_sk_t *rsk,
                                     ts_ckks_secret_key_t **out);
ts_status_t ts__ckks_public_key_wrap(ts_ckks_params_t *params, ts_rlwe_pk_t *rpk,
                                     ts_ckks_public_key_t **out);
ts_ckks_params_t *ts__ckks_secret_key_params(const ts_ckks_secret_key_t *sk);
ts_ckks_params_t *ts__ckks_public_key_params(const ts_ckks_public_key_t *pk);
ts_ckks_params_t *ts__ckks_evalkeys_params(const ts_ckks_evalkeys_t *ek);
/* The i-th Galois key of ek (i < count), NULL past the end. */
size_t ts__ckks_evalkeys_galois_count(const ts_ckks_evalkeys_t *ek);
const ts_rlwe_ksk_t *ts__ckks_evalkeys_galois_at(const ts_ckks_evalkeys_t *ek, size_t i);
/* Install a relinearization key / add a Galois key (k->galois); ownership taken. */
void ts__ckks_evalkeys_put_relin(ts_ckks_evalkeys_t *ek, ts_rlwe_ksk_t *k);
ts_status_t ts__ckks_evalkeys_put_galois(ts_ckks_evalkeys_t *ek, ts_rlwe_ksk_t *k);

#endif /* TS_CKKS_INT_H */
