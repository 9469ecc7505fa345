/*
 * gpu/gpu_kern.h — the per-element bodies of the GPU kernels and the NTT
 * tiling schedule, written once as inline functions that compile both as CUDA
 * device code (inside the .cu files of gpu/) and as host C11. The kernels call them; the
 * unit test tests/unit/test_gpu_ops.c runs the very same functions on the host
 * in a serial emulation of each kernel's launch (every block, every thread,
 * every stage) and compares with the CPU backend, so the index math and the
 * arithmetic are checked even on machines without a GPU.
 *
 * Bit-exactness with the CPU backend: every integer op has a unique reduced
 * result, so only correctness matters there. The one floating-point step, the
 * HPS correction v = floor(0.5 + sum_i y_i * (1/a_i)) of basis conversion
 * (core/math/rns.c), is evaluated with the same IEEE double operations in the
 * same order: on the device with the explicitly rounded intrinsics
 * (__dmul_rn, __dadd_rn, __ull2double_rn, __double2ull_rz) so nvcc cannot
 * contract them into an FMA; on the host in ISO C (no contraction).
 */
#ifndef TS_GPU_KERN_H
#define TS_GPU_KERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/math/math.h"

#ifdef __CUDACC__
#define TSG_FN static __forceinline__ __host__ __device__
#else
#define TSG_FN static inline
#endif

#ifndef __CUDA_ARCH__
__extension__ typedef unsigned __int128 tsg_u128_t;
#endif

/* Largest limb count of one batch (mod_idx and per-limb scalars travel in
 * kernel parameters). */
#define TSG_MAX_LIMBS 128
/* Largest digit count of the key-switch inner product (as the CPU backend). */
#define TSG_MAX_DIGITS 64

/* One ring modulus on the device: q, Barrett floor(2^128 / q), and the
 * constants of the last inverse-NTT stage (see core/math/ntt.c). */
typedef struct tsg_mod {
    uint64_t q, bhi, blo;
    uint64_t n_inv, n_inv_sh, n_inv_w, n_inv_w_sh;
} tsg_mod_t;

/* Per-limb modulus indices of a batch (npolys x nlimbs), passed by value to kernels. */
typedef struct tsg_limbs {
    uint32_t nlimbs, npolys;
    uint16_t mi[TSG_MAX_LIMBS];
} tsg_limbs_t;

/* Per-limb scalars and their Shoup constants (mul_scalar, add_scalar). */
typedef struct tsg_scalars {
    uint64_t v[TSG_MAX_LIMBS], vp[TSG_MAX_LIMBS];
} tsg_scalars_t;

/* An operand: words (limb l of poly p at data + p * stride + l * N) and the
 * stride between polynomials. */
typedef struct tsg_arg {
    uint64_t *data;
    size_t stride;
} tsg_arg_t;

/* ------------------------------------------------------------ words */

TSG_FN uint64_t tsg_mulhi(uint64_t a, uint64_t b)
{
#ifdef __CUDA_ARCH__
    return __umul64hi(a, b);
#else
    return (uint64_t)(((tsg_u128_t)a * b) >> 64);
#endif
}

TSG_FN uint64_t tsg_add(uint64_t a, uint64_t b, uint64_t q)
{
    uint64_t s = a + b;
    return s >= q ? s - q : s;
}

TSG_FN uint64_t tsg_sub(uint64_t a, uint64_t b, uint64_t q)
{
    return a >= b ? a - b : a + q - b;
}

TSG_FN uint64_t tsg_neg(uint64_t a, uint64_t q)
{
    return a == 0 ? 0 : q - a;
}

/*
 * Barrett reduction of hi:lo (any 128-bit value) to [0, q): the quotient
 * estimate floor(x * floor(2^128/q) / 2^128) of ts_mod_reduce128, of which only
 * the low word is needed (the remainder is lo - quot * q mod 2^64).
 */
TSG_FN uint64_t tsg_reduce128(uint64_t hi, uint64_t lo, const tsg_mod_t *m)
{
    const uint64_t rl = m->blo, rh = m->bhi, q = m->q;
    const uint64_t ll_hi = tsg_mulhi(lo, rl);
    const uint64_t lh_lo = lo * rh, lh_hi = tsg_mulhi(lo, rh);
    const uint64_t hl_lo = hi * rl, hl_hi = tsg_mulhi(hi, rl);
    const uint64_t hh_lo = hi * rh;
    uint64_t s1 = ll_hi + lh_lo;
    uint64_t c = s1 < ll_hi;
    uint64_t s2 = s1 + hl_lo;
    c += s2 < s1;
    const uint64_t quot = hh_lo + lh_hi + hl_hi + c;
    uint64_t rem = lo - quot * q;
    while (rem >= q)
        rem -= q;
    return rem;
}

TSG_FN uint64_t tsg_mul(uint64_t a, uint64_t b, const tsg_mod_t *m)
{
    return tsg_reduce128(tsg_mulhi(a, b), a * b, m);
}

/* (a * b + c) mod q for a, b, c < 2^62. */
TSG_FN uint64_t tsg_mul_add(uint64_t a, uint64_t b, uint64_t c, const tsg_mod_t *m)
{
    uint64_t lo = a * b, hi = tsg_mulhi(a, b);
    uint64_t lo2 = lo + c;
    hi += lo2 < lo;
    return tsg_reduce128(hi, lo2, m);
}

/* Shoup: a * w mod q in [0, 2q) for any 64-bit a; wp = floor(w 2^64 / q). */
TSG_FN uint64_t tsg_shoup_lazy(uint64_t a, uint64_t w, uint64_t wp, uint64_t q)
{
    return a * w - tsg_mulhi(a, wp) * q;
}

TSG_FN uint64_t tsg_shoup(uint64_t a, uint64_t w, uint64_t wp, uint64_t q)
{
    uint64_t r = tsg_shoup_lazy(a, w, wp, q);
    return r >= q ? r - q : r;
}

/* A 128-bit accumulator of 64x64 products. */
typedef struct tsg_acc {
    uint64_t lo, hi;
} tsg_acc_t;

TSG_FN void tsg_acc_mad(tsg_acc_t *acc, uint64_t a, uint64_t b)
{
    uint64_t lo = a * b, hi = tsg_mulhi(a, b);
    acc->lo += lo;
    acc->hi += hi + (acc->lo < lo);
}

/* ----------------------------------------------------- floating point */

TSG_FN double tsg_u64_to_f64(uint64_t x)
{
#ifdef __CUDA_ARCH__
    return __ull2double_rn(x);
#else
    return (double)x;
#endif
}

/* s + y * inv, two roundings (never an FMA). */
TSG_FN double tsg_f64_mul_add(double s, uint64_t y, double inv)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(s, __dmul_rn(__ull2double_rn(y), inv));
#else
    double p = (double)y * inv;
    return s + p;
#endif
}

TSG_FN uint64_t tsg_f64_to_u64(double s)
{
#ifdef __CUDA_ARCH__
    return __double2ull_rz(s);
#else
    return (uint64_t)s;
#endif
}

/* ------------------------------------------------------ element-wise */

enum {
    TSG_OP_ADD = 0,
    TSG_OP_SUB,
    TSG_OP_NEG,
    TSG_OP_MUL,
    TSG_OP_MUL_ADD,
    TSG_OP_MUL_SHOUP,
    TSG_OP_MUL_SCALAR,
    TSG_OP_ADD_SCALAR,
    TSG_OP_MUL_SCALAR_ADD, /* out += a * s (the backend's mul_scalar_add) */
    TSG_OP_SUB_MUL_SCALAR, /* out = (a - b) * s (sub_mul_scalar) */
};

/*
 * One output word of an element-wise op: o is the old output word (mul_add),
 * a and b the operands, c the Shoup constant of b (mul_shoup, mul_scalar).
 * For the scalar ops b (and c) is the limb's scalar.
 */
TSG_FN uint64_t tsg_ew(int op, uint64_t o, uint64_t a, uint64_t b, uint64_t c, const tsg_mod_t *m)
{
    switch (op) {
    case TSG_OP_ADD:
    case TSG_OP_ADD_SCALAR:
        return tsg_add(a, b, m->q);
    case TSG_OP_SUB:
        return tsg_sub(a, b, m->q);
    case TSG_OP_NEG:
        return tsg_neg(a, m->q);
    case TSG_OP_MUL:
        return tsg_mul(a, b, m);
    case TSG_OP_MUL_ADD:
        return tsg_mul_add(a, b, o, m);
    case TSG_OP_MUL_SHOUP:
    case TSG_OP_MUL_SCALAR:
        return tsg_shoup(a, b, c, m->q);
    case TSG_OP_MUL_SCALAR_ADD:
        return tsg_add(o, tsg_shoup(a, b, c, m->q), m->q);
    default:
        return 0;
    }
}

/* --------------------------------------------------------- automorphisms */

/* bitrev of i over `bits` bits (1 <= bits <= 31). */
TSG_FN uint32_t tsg_bitrev(uint32_t i, uint32_t bits)
{
#ifdef __CUDA_ARCH__
    return __brev(i) >> (32 - bits);
#else
    uint32_t r = 0;
    for (uint32_t b = 0; b < bits; b++) {
        r = (r << 1) | (i & 1);
        i >>= 1;
    }
    return r;
#endif
}

/* NTT form: out[i] = a[tsg_auto_ntt_src(i)] (the CPU backend's formula). */
TSG_FN uint32_t tsg_auto_ntt_src(uint32_t i, uint32_t logn, uint64_t k)
{
    const uint64_t mask = (2ull << logn) - 1;
    const uint64_t e = 2 * (uint64_t)tsg_bitrev(i, logn) + 1;
    return tsg_bitrev((uint32_t)(((e * (k & mask)) & mask) >> 1), logn);
}

/* Coefficient form: a[i] goes to out[dst], negated when *neg. */
TSG_FN uint32_t tsg_auto_coeff_dst(uint32_t i, uint32_t logn, uint64_t k, int *neg)
{
    const uint64_t n = 1ull << logn, mask = 2 * n - 1;
    const uint64_t e = ((uint64_t)i * (k & mask)) & mask;
    *neg = e >= n;
    return (uint32_t)(e >= n ? e - n : e);
}

/* ------------------------------------------------ key-switch inner product */

/*
 * sum_{d < nd} dig[d * dstride] * key[d * kstride] mod q, a 128-bit
 * accumulator reduced once every 15 terms (as the CPU backend; the sum is
 * unique anyway).
 */
TSG_FN uint64_t tsg_ks_elem(uint32_t nd, const uint64_t *dig, size_t dstride, const uint64_t *key,
                            size_t kstride, const tsg_mod_t *m)
{
    tsg_acc_t acc = {0, 0};
    uint32_t terms = 0;
    for (uint32_t d = 0; d < nd; d++) {
        tsg_acc_mad(&acc, dig[(size_t)d * dstride], key[(size_t)d * kstride]);
        if (++terms == 15) {
            acc.lo = tsg_reduce128(acc.hi, acc.lo, m);
            acc.hi = 0;
            terms = 1;
        }
    }
    return tsg_reduce128(acc.hi, acc.lo, m);
}

/* ------------------------------------------------------ basis conversion */

/*
 * The constants of ts_rns_conv_t (core/math) laid out in one blob; the
 * pointers address the device copy (or a host copy in the emulation).
 */
typedef struct tsg_conv {
    uint32_t na, nb;
    const uint64_t *from_q;      /* na */
    const uint64_t *ahat_inv;    /* na */
    const uint64_t *ahat_inv_sh; /* na */
    const double *a_inv_d;       /* na */
    const tsg_mod_t *to;         /* nb */
    const uint64_t *ahat_mod_b;  /* na x nb, [i * nb + j] */
    const uint64_t *a_mod_b;     /* nb */
    const uint64_t *a_inv_mod_b; /* nb */
    const uint64_t *a_inv_mod_b_sh;
} tsg_conv_t;

/* y_i = [x_i * (A/a_i)^{-1}]_{a_i} */
TSG_FN uint64_t tsg_conv_y(const tsg_conv_t *c, uint32_t i, uint64_t x)
{
    return tsg_shoup(x, c->ahat_inv[i], c->ahat_inv_sh[i], c->from_q[i]);
}

/*
 * Output limb j from the y_i (at ys[i * ystride]) and v: the dot product with
 * (A/a_i) mod b_j, minus v * A mod b_j; for ModDown then (x_b - that) * A^{-1}.
 */
TSG_FN uint64_t tsg_conv_out(const tsg_conv_t *c, uint32_t j, const uint64_t *ys, size_t ystride,
                             uint64_t v, int moddown, uint64_t xb)
{
    const tsg_mod_t *mb = &c->to[j];
    const uint64_t qb = mb->q;
    tsg_acc_t acc = {0, 0};
    uint32_t terms = 0;
    for (uint32_t i = 0; i < c->na; i++) {
        tsg_acc_mad(&acc, ys[(size_t)i * ystride], c->ahat_mod_b[(size_t)i * c->nb + j]);
        if (++terms == 15) {
            acc.lo = tsg_reduce128(acc.hi, acc.lo, mb);
            acc.hi = 0;
            terms = 1;
        }
    }
    uint64_t red = tsg_reduce128(acc.hi, acc.lo, mb);
    red = tsg_sub(red, tsg_mul(v, c->a_mod_b[j], mb), qb);
    if (moddown)
        red = tsg_shoup(tsg_sub(xb, red, qb), c->a_inv_mod_b[j], c->a_inv_mod_b_sh[j], qb);
    return red;
}

/* -------------------------------------------------------------- NTT */

/*
 * The NTT of N = 2^logn words runs in one or two passes; a pass does the
 * forward stages [s0, s1) (stage s has 2^s groups with gap N >> (s + 1), the
 * loop of core/math/ntt.c) inside shared memory. Over those stages the
 * butterflies only pair words that agree on x mod L (L = N >> s1) and on
 * x div H (H = N >> s0), so x = h * H + k * L + c splits into independent
 * sub-problems of S = H / L words (k varies). A tile (one thread block) takes
 * 2^log_hb consecutive h and 2^log_cb consecutive c, all k: at most
 * 2^TSG_NTT_TILE_LOG words, with consecutive local indices on consecutive
 * addresses whenever L > 1 (c innermost) or L = 1 (k innermost), so loads and
 * stores coalesce. The inverse runs the passes and stages in reverse.
 */
#define TSG_NTT_TILE_LOG   12 /* 4096 words = 32 KiB of shared memory */
#define TSG_NTT_MAX_PASSES 2

typedef struct tsg_ntt_pass {
    uint32_t logn, s0, s1;
    uint32_t log_s, log_l, log_h; /* S = 2^(s1-s0), L = N >> s1, H = N >> s0 */
    uint32_t log_cb, log_hb;      /* columns and rows per tile */
    uint32_t log_tile;            /* log_hb + log_s + log_cb */
    uint32_t ntiles;
} tsg_ntt_pass_t;

static inline uint32_t tsg_min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* Fill passes[] for N = 2^logn (1 <= logn <= 17); returns the pass count. */
static inline uint32_t tsg_ntt_plan(uint32_t logn, tsg_ntt_pass_t *passes)
{
    const uint32_t np = logn <= TSG_NTT_TILE_LOG ? 1 : 2;
    const uint32_t split = np == 1 ? logn : (logn + 1) / 2;
    for (uint32_t k = 0; k < np; k++) {
        tsg_ntt_pass_t *p = &passes[k];
        p->logn = logn;
        p->s0 = k == 0 ? 0 : split;
        p->s1 = k == 0 ? split : logn;
        p->log_s = p->s1 - p->s0;
        p->log_l = logn - p->s1;
        p->log_h = logn - p->s0;
        const uint32_t room = TSG_NTT_TILE_LOG - p->log_s;
        p->log_cb = tsg_min_u32(p->log_l, room);
        p->log_hb = tsg_min_u32(p->s0, room - p->log_cb);
        p->log_tile = p->log_hb + p->log_s + p->log_cb;
        p->ntiles = 1u << (logn - p->log_tile);
    }
    return np;
}

/* The global word index of local element e (< 2^log_tile) of tile b. */
TSG_FN uint32_t tsg_ntt_elem(const tsg_ntt_pass_t *p, uint32_t b, uint32_t e)
{
    const uint32_t ctiles_log = p->log_l - p->log_cb;
    const uint32_t hb_idx = b >> ctiles_log, cb_idx = b & ((1u << ctiles_log) - 1);
    const uint32_t hh = e >> (p->log_s + p->log_cb);
    const uint32_t k = (e >> p->log_cb) & ((1u << p->log_s) - 1);
    const uint32_t cc = e & ((1u << p->log_cb) - 1);
    const uint32_t h = (hb_idx << p->log_hb) + hh, c = (cb_idx << p->log_cb) + cc;
    return (h << p->log_h) + (k << p->log_l) + c;
}

/*
 * Butterfly t (< 2^(log_tile - 1)) of stage s (s0 <= s < s1) in tile b: the
 * local indices *ex and *ey (the pair at distance gap = N >> (s + 1)) and the
 * return value, the twiddle index (1 << s) + group of core/math/ntt.c, where
 * group = x >> (logn - s) for the global index x of *ex.
 */
TSG_FN uint32_t tsg_ntt_bfly(const tsg_ntt_pass_t *p, uint32_t b, uint32_t s, uint32_t t,
                             uint32_t *ex, uint32_t *ey)
{
    const uint32_t r = s - p->s0;
    const uint32_t log_gk = p->log_s - r - 1; /* gap in units of L */
    const uint32_t cc = t & ((1u << p->log_cb) - 1);
    const uint32_t rest = t >> p->log_cb;
    const uint32_t pi = rest & ((1u << (p->log_s - 1)) - 1);
    const uint32_t hh = rest >> (p->log_s - 1);
    const uint32_t kx = ((pi >> log_gk) << (log_gk + 1)) + (pi & ((1u << log_gk) - 1));
    *ex = (hh << (p->log_s + p->log_cb)) + (kx << p->log_cb) + cc;
    *ey = *ex + (1u << (log_gk + p->log_cb));
    const uint32_t xg = tsg_ntt_elem(p, b, *ex);
    return (1u << s) + (xg >> (p->logn - s));
}

/* Harvey forward (Cooley-Tukey) butterfly: inputs in [0, 4q), outputs in [0, 4q). */
TSG_FN void tsg_ct_bfly(uint64_t *x, uint64_t *y, uint64_t w, uint64_t wp, uint64_t q)
{
    const uint64_t q2 = 2 * q;
    uint64_t u = *x;
    u -= (u >= q2) ? q2 : 0;
    const uint64_t v = tsg_shoup_lazy(*y, w, wp, q);
    *x = u + v;
    *y = u - v + q2;
}

/* Gentleman-Sande inverse butterfly: inputs and outputs in [0, 2q). */
TSG_FN void tsg_gs_bfly(uint64_t *x, uint64_t *y, uint64_t w, uint64_t wp, uint64_t q)
{
    const uint64_t q2 = 2 * q;
    const uint64_t u = *x, v = *y;
    uint64_t s = u + v;
    s -= (s >= q2) ? q2 : 0;
    *x = s;
    *y = tsg_shoup_lazy(u - v + q2, w, wp, q);
}

/* The last inverse stage (s = 0) with 1/N merged in; outputs reduced. */
TSG_FN void tsg_gs_last(uint64_t *x, uint64_t *y, const tsg_mod_t *m)
{
    const uint64_t q = m->q, q2 = 2 * q;
    const uint64_t u = *x, v = *y;
    *x = tsg_shoup(u + v, m->n_inv, m->n_inv_sh, q);
    *y = tsg_shoup(u - v + q2, m->n_inv_w, m->n_inv_w_sh, q);
}

/* [0, 4q) -> [0, q) (end of the forward transform). */
TSG_FN uint64_t tsg_reduce_4q(uint64_t u, uint64_t q)
{
    u -= (u >= 2 * q) ? 2 * q : 0;
    u -= (u >= q) ? q : 0;
    return u;
}

/* [0, 4q) -> [0, 2q) (start of the inverse transform). */
TSG_FN uint64_t tsg_reduce_4q_2q(uint64_t u, uint64_t q)
{
    return u - ((u >= 2 * q) ? 2 * q : 0);
}

/* ------------------------------------------- one thread of each kernel
 *
 * The kernels are grid-stride loops over idx in [0, total) calling these; the
 * host emulation calls them for every idx. idx = (t << logn) + i with
 * t = p * nlimbs + l (poly p, limb l, word i).
 */

/* Total threads of the limb-parallel kernels. */
TSG_FN size_t tsg_total(const tsg_limbs_t *lm, uint32_t logn)
{
    return ((size_t)lm->npolys * lm->nlimbs) << logn;
}

TSG_FN void tsg_ew_thread(int op, size_t idx, const tsg_limbs_t *lm, uint32_t logn, tsg_arg_t out,
                          tsg_arg_t a, tsg_arg_t b, tsg_arg_t c, const tsg_mod_t *mods)
{
    const size_t t = idx >> logn, i = idx & (((size_t)1 << logn) - 1);
    const uint32_t p = (uint32_t)(t / lm->nlimbs), l = (uint32_t)(t - (size_t)p * lm->nlimbs);
    const size_t lo = ((size_t)l << logn) + i;
    uint64_t *o = out.data + (size_t)p * out.stride + lo;
    const uint64_t av = a.data[(size_t)p * a.stride + lo];
    const uint64_t ov = op == TSG_OP_MUL_ADD ? *o : 0;
    const uint64_t bv = b.data ? b.data[(size_t)p * b.stride + lo] : 0;
    const uint64_t cv = c.data ? c.data[(size_t)p * c.stride + lo] : 0;
    *o = tsg_ew(op, ov, av, bv, cv, &mods[lm->mi[l]]);
}

TSG_FN void tsg_ew_scalar_thread(int op, size_t idx, const tsg_limbs_t *lm, uint32_t logn,
                                 tsg_arg_t out, tsg_arg_t a, const tsg_scalars_t *s,
                                 const tsg_mod_t *mods)
{
    const size_t t = idx >> logn, i = idx & (((size_t)1 << logn) - 1);
    const uint32_t p = (uint32_t)(t / lm->nlimbs), l = (uint32_t)(t - (size_t)p * lm->nlimbs);
    const size_t lo = ((size_t)l << logn) + i;
    const uint64_t av = a.data[(size_t)p * a.stride + lo];
    out.data[(size_t)p * out.stride + lo] = tsg_ew(op, 0, av, s->v[l], s->vp[l], &mods[lm->mi[l]]);
}

/* The fused scalar ops: out += a * s[l] (TSG_OP_MUL_SCALAR_ADD; b unused) and
 * out = (a - b) * s[l] (TSG_OP_SUB_MUL_SCALAR); each word read and written by
 * one thread, so out may alias a or b. */
TSG_FN void tsg_ew_scalar2_thread(int op, size_t idx, const tsg_limbs_t *lm, uint32_t logn,
                                  tsg_arg_t out, tsg_arg_t a, tsg_arg_t b, const tsg_scalars_t *s,
                                  const tsg_mod_t *mods)
{
    const size_t t = idx >> logn, i = idx & (((size_t)1 << logn) - 1);
    const uint32_t p = (uint32_t)(t / lm->nlimbs), l = (uint32_t)(t - (size_t)p * lm->nlimbs);
    const size_t lo = ((size_t)l << logn) + i;
    const tsg_mod_t *m = &mods[lm->mi[l]];
    uint64_t *o = out.data + (size_t)p * out.stride + lo;
    const uint64_t av = a.data[(size_t)p * a.stride + lo];
    if (op == TSG_OP_SUB_MUL_SCALAR) {
        const uint64_t bv = b.data[(size_t)p * b.stride + lo];
        *o = tsg_shoup(tsg_sub(av, bv, m->q), s->v[l], s->vp[l], m->q);
    } else {
        *o = tsg_ew(TSG_OP_MUL_SCALAR_ADD, *o, av, s->v[l], s->vp[l], m);
    }
}

/* Automorphism: NTT form gathers out[i] = a[src(i)]; coefficient form scatters
 * a[i] to out[dst(i)] with a sign. out must not alias a. */
TSG_FN void tsg_auto_thread(int ntt_form, size_t idx, const tsg_limbs_t *lm, uint32_t logn,
                            tsg_arg_t out, tsg_arg_t a, uint64_t k, const tsg_mod_t *mods)
{
    const size_t t = idx >> logn;
    const uint32_t i = (uint32_t)(idx & (((size_t)1 << logn) - 1));
    const uint32_t p = (uint32_t)(t / lm->nlimbs), l = (uint32_t)(t - (size_t)p * lm->nlimbs);
    uint64_t *o = out.data + (size_t)p * out.stride + ((size_t)l << logn);
    const uint64_t *x = a.data + (size_t)p * a.stride + ((size_t)l << logn);
    if (ntt_form) {
        o[i] = x[tsg_auto_ntt_src(i, logn, k)];
    } else {
        int neg;
        const uint32_t d = tsg_auto_coeff_dst(i, logn, k, &neg);
        const uint64_t v = x[i];
        o[d] = neg ? tsg_neg(v, mods[lm->mi[l]].q) : v;
    }
}

/* set_i64: word i of out's limb l = src[i] mod q_l (signed; |src[i]| up to
 * 2^63), one polynomial. */
TSG_FN void tsg_set_i64_thread(size_t idx, const tsg_limbs_t *lm, uint32_t logn, tsg_arg_t out,
                               const int64_t *src, const tsg_mod_t *mods)
{
    const uint32_t l = (uint32_t)(idx >> logn);
    const size_t i = idx & (((size_t)1 << logn) - 1);
    const tsg_mod_t *m = &mods[lm->mi[l]];
    const int64_t v = src[i];
    const uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    const uint64_t r = tsg_reduce128(0, mag, m);
    out.data[((size_t)l << logn) + i] = v < 0 ? tsg_neg(r, m->q) : r;
}

/* spread_expand: word i of out's limb l = word i >> lg of a's (limbs of
 * 2^(logn - lg) words); lm describes out (and a: same npolys, nlimbs). */
TSG_FN void tsg_expand_thread(size_t idx, const tsg_limbs_t *lm, uint32_t logn, uint32_t lg,
                              tsg_arg_t out, tsg_arg_t a)
{
    const size_t t = idx >> logn, i = idx & (((size_t)1 << logn) - 1);
    const uint32_t p = (uint32_t)(t / lm->nlimbs), l = (uint32_t)(t - (size_t)p * lm->nlimbs);
    out.data[(size_t)p * out.stride + ((size_t)l << logn) + i] =
        a.data[(size_t)p * a.stride + ((size_t)l << (logn - lg)) + (i >> lg)];
}

/* Key-switch inner product: lm describes out (npolys = components), klm.mi[l]
 * is the key limb of out limb l; digit d of limb l at dig.data + d * dig.stride.
 * lg = log2 of the digits' gap: 0 for full digits, > 0 for spread ones
 * (keyswitch_inner_spread: each limb 2^(logn - lg) words, word k standing
 * for words k 2^lg .. k 2^lg + 2^lg - 1 of the full limb). */
TSG_FN void tsg_ks_thread(size_t idx, const tsg_limbs_t *lm, uint32_t logn, uint32_t lg,
                          tsg_arg_t out, tsg_arg_t dig, uint32_t nd, tsg_arg_t key,
                          const tsg_limbs_t *klm, const tsg_mod_t *mods)
{
    const uint32_t nout = lm->npolys;
    const size_t t = idx >> logn, i = idx & (((size_t)1 << logn) - 1);
    const uint32_t c = (uint32_t)(t / lm->nlimbs), l = (uint32_t)(t - (size_t)c * lm->nlimbs);
    const uint64_t *dp = dig.data + ((size_t)l << (logn - lg)) + (i >> lg);
    const uint64_t *kp = key.data + (size_t)c * key.stride + ((size_t)klm->mi[l] << logn) + i;
    out.data[(size_t)c * out.stride + ((size_t)l << logn) + i] =
        tsg_ks_elem(nd, dp, dig.stride, kp, (size_t)nout * key.stride, &mods[lm->mi[l]]);
}

/* Basis conversion of coefficient i of poly p: y (the thread's column, stride
 * ystride) receives the na values y_a; then every output limb. */
TSG_FN void tsg_conv_thread(const tsg_conv_t *c, uint32_t logn, uint32_t p, uint32_t i,
                            tsg_arg_t out, tsg_arg_t in, tsg_arg_t xb, int moddown, uint64_t *y,
                            size_t ystride)
{
    const uint64_t *x = in.data + (size_t)p * in.stride + i;
    double s = 0.5; /* round(sum) = floor(sum + 1/2) */
    for (uint32_t a = 0; a < c->na; a++) {
        const uint64_t t = tsg_conv_y(c, a, x[(size_t)a << logn]);
        y[(size_t)a * ystride] = t;
        s = tsg_f64_mul_add(s, t, c->a_inv_d[a]);
    }
    const uint64_t v = tsg_f64_to_u64(s);
    uint64_t *o = out.data + (size_t)p * out.stride + i;
    const uint64_t *b = moddown ? xb.data + (size_t)p * xb.stride + i : 0;
    for (uint32_t j = 0; j < c->nb; j++) {
        const uint64_t xbv = moddown ? b[(size_t)j << logn] : 0;
        o[(size_t)j << logn] = tsg_conv_out(c, j, y, ystride, v, moddown, xbv);
    }
}

/* ------------------------------------------------- host-side packing */

/* The device modulus record of one NTT table. */
static inline tsg_mod_t tsg_mod_from_table(const ts_ntt_table_t *t)
{
    tsg_mod_t m;
    m.q = t->mod.q;
    m.bhi = t->mod.barrett_hi;
    m.blo = t->mod.barrett_lo;
    m.n_inv = t->n_inv;
    m.n_inv_sh = t->n_inv_shoup;
    m.n_inv_w = t->n_inv_w;
    m.n_inv_w_sh = t->n_inv_w_shoup;
    return m;
}

/*
 * The device tables of a ring in one blob: count tsg_mod_t records, then the
 * fwd, fwd_shoup, inv and inv_shoup tables of core/math (count x N words
 * each, modulus i's table at i * N). The kernels index them as
 * table + (mi << logn).
 */
typedef struct tsg_ring_tables {
    const tsg_mod_t *mods;
    const uint64_t *fwd, *fwd_sh, *inv, *inv_sh;
} tsg_ring_tables_t;

static inline size_t tsg_ring_blob_words(uint32_t count, uint32_t n)
{
    return (sizeof(tsg_mod_t) / 8) * (size_t)count + 4 * (size_t)count * n;
}

/* Pointers into the copy of the blob at address base. */
static inline tsg_ring_tables_t tsg_ring_view(uintptr_t base, uint32_t count, uint32_t n)
{
    tsg_ring_tables_t t;
    const size_t mod_words = (sizeof(tsg_mod_t) / 8) * (size_t)count, tab = (size_t)count * n;
    t.mods = (const tsg_mod_t *)base;
    t.fwd = (const uint64_t *)(base + 8 * mod_words);
    t.fwd_sh = t.fwd + tab;
    t.inv = t.fwd_sh + tab;
    t.inv_sh = t.inv + tab;
    return t;
}

/* Write table i (of count) into the blob (host memory). */
static inline void tsg_ring_pack(const ts_ntt_table_t *t, uint32_t i, uint32_t count,
                                 uint64_t *blob)
{
    const uint32_t n = t->n;
    const size_t mod_words = (sizeof(tsg_mod_t) / 8) * (size_t)count, tab = (size_t)count * n;
    const tsg_mod_t m = tsg_mod_from_table(t);
    memcpy(blob + (sizeof(tsg_mod_t) / 8) * i, &m, sizeof m);
    const size_t off = mod_words + (size_t)i * n, bytes = (size_t)n * sizeof(uint64_t);
    memcpy(blob + off, t->fwd, bytes);
    memcpy(blob + off + tab, t->fwd_shoup, bytes);
    memcpy(blob + off + 2 * tab, t->inv, bytes);
    memcpy(blob + off + 3 * tab, t->inv_shoup, bytes);
}

/* Words of the blob of a conversion from na to nb moduli. */
static inline size_t tsg_conv_blob_words(uint32_t na, uint32_t nb)
{
    return 4 * (size_t)na + (sizeof(tsg_mod_t) / 8) * (size_t)nb + (size_t)na * nb + 3 * (size_t)nb;
}

/*
 * Write the constants of c into blob (tsg_conv_blob_words words, host memory)
 * and fill *view with pointers into the copy of that blob that will live at
 * address `base` (the device copy; the blob itself for host use).
 */
static inline void tsg_conv_pack(const ts_rns_conv_t *c, uint64_t *blob, uintptr_t base,
                                 tsg_conv_t *view)
{
    const uint32_t na = c->na, nb = c->nb;
    size_t off = 0;
    view->na = na;
    view->nb = nb;
    view->from_q = (const uint64_t *)(base + 8 * off);
    for (uint32_t i = 0; i < na; i++)
        blob[off + i] = c->from[i].q;
    off += na;
    view->ahat_inv = (const uint64_t *)(base + 8 * off);
    memcpy(blob + off, c->ahat_inv, 8 * (size_t)na);
    off += na;
    view->ahat_inv_sh = (const uint64_t *)(base + 8 * off);
    memcpy(blob + off, c->ahat_inv_sh, 8 * (size_t)na);
    off += na;
    view->a_inv_d = (const double *)(base + 8 * off);
    memcpy(blob + off, c->a_inv_d, 8 * (size_t)na);
    off += na;
    view->to = (const tsg_mod_t *)(base + 8 * off);
    for (uint32_t j = 0; j < nb; j++) {
        tsg_mod_t m;
        memset(&m, 0, sizeof m);
        m.q = c->to[j].q;
        m.bhi = c->to[j].barrett_hi;
        m.blo = c->to[j].barrett_lo;
        memcpy(blob + off + (sizeof m / 8) * j, &m, sizeof m);
    }
    off += (sizeof(tsg_mod_t) / 8) * nb;
    view->ahat_mod_b = (const uint64_t *)(base + 8 * off);
    memcpy(blob + off, c->ahat_mod_b, 8 * (size_t)na * nb);
    off += (size_t)na * nb;
    view->a_mod_b = (const uint64_t *)(base + 8 * off);
    memcpy(blob + off, c->a_mod_b, 8 * (size_t)nb);
    off += nb;
    view->a_inv_mod_b = (const uint64_t *)(base + 8 * off);
    memcpy(blob + off, c->a_inv_mod_b, 8 * (size_t)nb);
    off += nb;
    view->a_inv_mod_b_sh = (const uint64_t *)(base + 8 * off);
    memcpy(blob + off, c->a_inv_mod_b_sh, 8 * (size_t)nb);
}

#endif /* TS_GPU_KERN_H */
