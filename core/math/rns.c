/*
 * RNS bases, exact CRT composition and the fast (HPS-centered) basis
 * conversion used by ModUp/ModDown of hybrid key switching. See math.h.
 */
#include <math.h>
#include <string.h>

#include "core/math/math_int.h"

/* ------------------------------------------------------ multi-precision */

uint64_t ts__mp_mul_word(uint64_t *r, const uint64_t *a, uint64_t b, uint32_t w)
{
    uint64_t carry = 0;
    for (uint32_t i = 0; i < w; i++) {
        ts_u128_t p = (ts_u128_t)a[i] * b + carry;
        r[i] = (uint64_t)p;
        carry = (uint64_t)(p >> 64);
    }
    return carry;
}

uint64_t ts__mp_add(uint64_t *a, const uint64_t *b, uint32_t w)
{
    uint64_t carry = 0;
    for (uint32_t i = 0; i < w; i++) {
        ts_u128_t s = (ts_u128_t)a[i] + b[i] + carry;
        a[i] = (uint64_t)s;
        carry = (uint64_t)(s >> 64);
    }
    return carry;
}

uint64_t ts__mp_sub(uint64_t *a, const uint64_t *b, uint32_t w)
{
    uint64_t borrow = 0;
    for (uint32_t i = 0; i < w; i++) {
        uint64_t bi = b[i] + borrow;
        uint64_t nb = (bi < borrow) || (a[i] < bi);
        a[i] -= bi;
        borrow = nb;
    }
    return borrow;
}

int ts__mp_cmp(const uint64_t *a, const uint64_t *b, uint32_t w)
{
    for (uint32_t i = w; i-- > 0;) {
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}

static bool distinct_primes(const uint64_t *m, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        if (m[i] < 2 || m[i] >> TS_MODULUS_MAX_BITS)
            return false;
        for (uint32_t j = 0; j < i; j++)
            if (m[i] == m[j])
                return false;
    }
    return true;
}

/* ---------------------------------------------------------------- basis */

void ts_rns_basis_free(ts_rns_basis_t *b)
{
    if (!b)
        return;
    ts_free(b->mods);
    ts_free(b->qhat_inv);
    ts_free(b->qhat_inv_sh);
    ts_free(b->prod);
    ts_free(b->half);
    ts_free(b->qhat);
    ts_free(b);
}

ts_status_t ts_rns_basis_new(const uint64_t *moduli, uint32_t count, ts_rns_basis_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!moduli || count == 0 || count > TS_RNS_MAX_MODULI || !distinct_primes(moduli, count))
        return TS_EINVAL;
    ts_rns_basis_t *b = ts_calloc(1, sizeof *b);
    if (!b)
        return TS_ENOMEM;
    b->count = count;
    b->words = count + 1; /* each prime < 2^62 adds at most one word */
    uint32_t w = b->words;
    b->mods = ts_calloc(count, sizeof *b->mods);
    b->qhat_inv = ts_calloc(count, sizeof(uint64_t));
    b->qhat_inv_sh = ts_calloc(count, sizeof(uint64_t));
    b->prod = ts_calloc(w, sizeof(uint64_t));
    b->half = ts_calloc(w, sizeof(uint64_t));
    b->qhat = ts_calloc((size_t)count * w, sizeof(uint64_t));
    if (!b->mods || !b->qhat_inv || !b->qhat_inv_sh || !b->prod || !b->half || !b->qhat) {
        ts_rns_basis_free(b);
        return TS_ENOMEM;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (ts_modulus_init(&b->mods[i], moduli[i]) != TS_OK) {
            ts_rns_basis_free(b);
            return TS_EINVAL;
        }
    }
    b->prod[0] = 1;
    b->log2_prod = 0;
    for (uint32_t i = 0; i < count; i++) {
        ts__mp_mul_word(b->prod, b->prod, moduli[i], w);
        b->log2_prod += log2((double)moduli[i]);
        uint64_t *qh = b->qhat + (size_t)i * w;
        qh[0] = 1;
        uint64_t qhat_mod = 1;
        for (uint32_t j = 0; j < count; j++) {
            if (j == i)
                continue;
            ts__mp_mul_word(qh, qh, moduli[j], w);
            qhat_mod = ts_mod_mul(qhat_mod, moduli[j], &b->mods[i]);
        }
        b->qhat_inv[i] = ts_mod_inv(qhat_mod, moduli[i]);
        if (b->qhat_inv[i] == 0) { /* not coprime: not distinct primes */
            ts_rns_basis_free(b);
            return TS_EINVAL;
        }
        b->qhat_inv_sh[i] = ts_shoup_precompute(b->qhat_inv[i], moduli[i]);
    }
    /* half = prod >> 1 */
    for (uint32_t i = 0; i < w; i++)
        b->half[i] = (b->prod[i] >> 1) | (i + 1 < w ? b->prod[i + 1] << 63 : 0);
    *out = b;
    return TS_OK;
}

void ts_rns_compose_mp(const ts_rns_basis_t *b, const uint64_t *res, size_t stride, uint64_t *mag,
                       bool *neg)
{
    const uint32_t w = b->words;
    uint64_t tmp[TS_RNS_MAX_MODULI + 2];
    memset(mag, 0, w * sizeof(uint64_t));
    long double frac = 0;
    for (uint32_t i = 0; i < b->count; i++) {
        const uint64_t q = b->mods[i].q;
        uint64_t y = ts_mod_mul_shoup(res[i * stride], b->qhat_inv[i], b->qhat_inv_sh[i], q);
        ts__mp_mul_word(tmp, b->qhat + (size_t)i * w, y, w);
        ts__mp_add(mag, tmp, w); /* sum < count * Q < 2^(64 w) */
        frac += (long double)y / (long double)q;
    }
    /* subtract floor(frac) * Q (estimate), then fix by +-Q */
    uint64_t v = (uint64_t)floorl(frac);
    if (v > 0) {
        ts__mp_mul_word(tmp, b->prod, v, w);
        if (ts__mp_sub(mag, tmp, w))
            ts__mp_add(mag, b->prod, w);
    }
    while (ts__mp_cmp(mag, b->prod, w) >= 0)
        ts__mp_sub(mag, b->prod, w);
    /* center: x > Q/2 becomes x - Q */
    if (ts__mp_cmp(mag, b->half, w) > 0) {
        memcpy(tmp, b->prod, w * sizeof(uint64_t));
        ts__mp_sub(tmp, mag, w);
        memcpy(mag, tmp, w * sizeof(uint64_t));
        *neg = true;
    } else {
        *neg = false;
    }
}

long double ts_rns_compose_ld(const ts_rns_basis_t *b, const uint64_t *res, size_t stride,
                              double scale_log2, uint64_t *scratch)
{
    bool neg;
    ts_rns_compose_mp(b, res, stride, scratch, &neg);
    long double v = 0;
    for (uint32_t i = b->words; i-- > 0;)
        v = v * 18446744073709551616.0L + (long double)scratch[i];
    v = v * exp2l(-(long double)scale_log2);
    return neg ? -v : v;
}

/* ----------------------------------------------------------- conversion */

void ts_rns_conv_free(ts_rns_conv_t *c)
{
    if (!c)
        return;
    ts_free(c->from);
    ts_free(c->to);
    ts_free(c->ahat_inv);
    ts_free(c->ahat_inv_sh);
    ts_free(c->ahat_mod_b);
    ts_free(c->a_mod_b);
    ts_free(c->a_inv_mod_b);
    ts_free(c->a_inv_mod_b_sh);
    ts_free(c->a_inv_d);
    ts_free(c->va_mod_b);
    ts_free(c->ahat_mod_b_sh);
    ts_free(c->ahat_mod_b_sh52);
    ts_free(c->va_mod_b_t);
    ts_free(c->ahat_mod_b_mont);
    ts_free(c->b_neg_inv);
    ts_free(c);
}

ts_status_t ts_rns_conv_new(const uint64_t *from, uint32_t na, const uint64_t *to, uint32_t nb,
                            ts_rns_conv_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!from || !to || na == 0 || nb == 0 || na > TS_RNS_MAX_MODULI || nb > TS_RNS_MAX_MODULI ||
        !distinct_primes(from, na) || !distinct_primes(to, nb))
        return TS_EINVAL;
    for (uint32_t i = 0; i < na; i++)
        for (uint32_t j = 0; j < nb; j++)
            if (from[i] == to[j])
                return TS_EINVAL;
    ts_rns_conv_t *c = ts_calloc(1, sizeof *c);
    if (!c)
        return TS_ENOMEM;
    c->na = na;
    c->nb = nb;
    c->from = ts_calloc(na, sizeof *c->from);
    c->to = ts_calloc(nb, sizeof *c->to);
    c->ahat_inv = ts_calloc(na, sizeof(uint64_t));
    c->ahat_inv_sh = ts_calloc(na, sizeof(uint64_t));
    c->ahat_mod_b = ts_calloc((size_t)na * nb, sizeof(uint64_t));
    c->a_mod_b = ts_calloc(nb, sizeof(uint64_t));
    c->a_inv_mod_b = ts_calloc(nb, sizeof(uint64_t));
    c->a_inv_mod_b_sh = ts_calloc(nb, sizeof(uint64_t));
    c->a_inv_d = ts_calloc(na, sizeof(double));
    c->va_mod_b = ts_calloc(((size_t)na + 1) * nb, sizeof(uint64_t));
    c->ahat_mod_b_sh = ts_calloc((size_t)na * nb, sizeof(uint64_t));
    c->ahat_mod_b_sh52 = ts_calloc((size_t)na * nb, sizeof(uint64_t));
    c->va_mod_b_t = ts_calloc((size_t)nb * 16, sizeof(uint64_t));
    if (!c->from || !c->to || !c->ahat_inv || !c->ahat_inv_sh || !c->ahat_mod_b || !c->a_mod_b ||
        !c->a_inv_mod_b || !c->a_inv_mod_b_sh || !c->a_inv_d || !c->va_mod_b || !c->ahat_mod_b_sh ||
        !c->ahat_mod_b_sh52 || !c->va_mod_b_t) {
        ts_rns_conv_free(c);
        return TS_ENOMEM;
    }
    for (uint32_t i = 0; i < na; i++)
        ts_modulus_init(&c->from[i], from[i]);
    for (uint32_t j = 0; j < nb; j++)
        ts_modulus_init(&c->to[j], to[j]);
    ts_u128_t a_sum = 0;
    for (uint32_t i = 0; i < na; i++)
        a_sum += from[i];
    if (a_sum <= ((ts_u128_t)1 << 64)) {
        c->ahat_mod_b_mont = ts_calloc((size_t)na * nb, sizeof(uint64_t));
        c->b_neg_inv = ts_calloc(nb, sizeof(uint64_t));
        if (!c->ahat_mod_b_mont || !c->b_neg_inv) {
            ts_rns_conv_free(c);
            return TS_ENOMEM;
        }
        for (uint32_t j = 0; j < nb; j++) {
            uint64_t inv = to[j]; /* b inv = 1 mod 2^3 for odd b; each step doubles the bits */
            for (int k = 0; k < 5; k++)
                inv *= 2 - to[j] * inv;
            c->b_neg_inv[j] = (uint64_t)0 - inv;
        }
    }
    for (uint32_t i = 0; i < na; i++) {
        uint64_t m = 1;
        for (uint32_t k = 0; k < na; k++)
            if (k != i)
                m = ts_mod_mul(m, from[k], &c->from[i]);
        c->ahat_inv[i] = ts_mod_inv(m, from[i]);
        c->ahat_inv_sh[i] = ts_shoup_precompute(c->ahat_inv[i], from[i]);
        c->a_inv_d[i] = 1.0 / (double)from[i];
        for (uint32_t j = 0; j < nb; j++) {
            uint64_t h = 1;
            for (uint32_t k = 0; k < na; k++)
                if (k != i)
                    h = ts_mod_mul(h, from[k], &c->to[j]);
            c->ahat_mod_b[(size_t)i * nb + j] = h;
            c->ahat_mod_b_sh[(size_t)i * nb + j] = ts_shoup_precompute(h, to[j]);
            if (c->ahat_mod_b_mont) /* h 2^64 mod b */
                c->ahat_mod_b_mont[(size_t)i * nb + j] = (uint64_t)(((ts_u128_t)h << 64) % to[j]);
            if (to[j] < (1ULL << 50))
                c->ahat_mod_b_sh52[(size_t)i * nb + j] = (uint64_t)(((ts_u128_t)h << 52) / to[j]);
        }
    }
    for (uint32_t j = 0; j < nb; j++) {
        uint64_t a = 1;
        for (uint32_t k = 0; k < na; k++)
            a = ts_mod_mul(a, from[k], &c->to[j]);
        c->a_mod_b[j] = a;
        c->a_inv_mod_b[j] = ts_mod_inv(a, to[j]);
        c->a_inv_mod_b_sh[j] = ts_shoup_precompute(c->a_inv_mod_b[j], to[j]);
        for (uint32_t v = 0; v <= na; v++) {
            c->va_mod_b[(size_t)v * nb + j] = ts_mod_mul(v, a, &c->to[j]);
            if (v < 16)
                c->va_mod_b_t[(size_t)j * 16 + v] = c->va_mod_b[(size_t)v * nb + j];
        }
    }
    *out = c;
    return TS_OK;
}

#define CONV_BLOCK 16

/* The ModDown tail: out = (x_b - r) * A^{-1} mod b. */
static inline uint64_t moddown_one(const ts_rns_conv_t *c, uint32_t j, uint64_t xb, uint64_t r)
{
    const uint64_t qb = c->to[j].q;
    return ts_mod_mul_shoup(ts_mod_sub(xb, r, qb), c->a_inv_mod_b[j], c->a_inv_mod_b_sh[j], qb);
}

/*
 * One source prime (A = a): y = x, v = [x > a/2], so the conversion is the
 * centered lift of x reduced mod b_j: x mod b_j, minus a mod b_j when x > a/2.
 */
static void conv_single(const ts_rns_conv_t *c, const uint64_t *in, uint64_t *out,
                        size_t out_stride, size_t off, size_t cnt, bool moddown,
                        const uint64_t *x_b)
{
    const uint64_t a = c->from[0].q, half = a >> 1;
    const uint64_t *src = in + off;
    for (uint32_t j = 0; j < c->nb; j++) {
        const ts_modulus_t *mb = &c->to[j];
        const uint64_t qb = mb->q, am = c->a_mod_b[j];
        uint64_t *dst = out + j * out_stride + off;
        const uint64_t *xb = moddown ? x_b + j * out_stride + off : NULL;
        if (a <= qb) { /* x < a <= b: no reduction of x needed */
            for (size_t k = 0; k < cnt; k++) {
                uint64_t x = src[k];
                uint64_t r = x > half ? ts_mod_sub(x, am, qb) : x;
                dst[k] = moddown ? moddown_one(c, j, xb[k], r) : r;
            }
        } else {
            for (size_t k = 0; k < cnt; k++) {
                uint64_t x = src[k];
                uint64_t r = ts_mod_reduce64(x, mb);
                r = x > half ? ts_mod_sub(r, am, qb) : r;
                dst[k] = moddown ? moddown_one(c, j, xb[k], r) : r;
            }
        }
    }
}

/*
 * Montgomery reduction: t 2^-64 mod b for t < b 2^64 (b odd < 2^62), with
 * bneg = -b^{-1} mod 2^64: m = t bneg mod 2^64 makes t + m b a multiple of
 * 2^64 below 2 b 2^64, so its high word is in [0, 2b).
 */
static inline uint64_t mont_reduce(ts_u128_t t, uint64_t b, uint64_t bneg)
{
    uint64_t m = (uint64_t)t * bneg;
    uint64_t r = (uint64_t)((t + (ts_u128_t)m * b) >> 64);
    return r >= b ? r - b : r;
}

/*
 * One block of up to CONV_BLOCK coefficients: y[i][k] and v[k], then for each
 * target prime the 128-bit dot products of the block. With the Montgomery
 * constants (sum_i a_i <= 2^64: every key-switching basis of the presets)
 * each coefficient's sum of y_i (h_ij 2^64) stays in registers and one
 * Montgomery step (two products) reduces it: ~1.5x faster than the Barrett
 * path (four products and a low one), which keeps the block's sums in memory
 * and reduces once per 15 terms. Both give the unique reduced value.
 */
static void conv_block(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride, uint64_t *out,
                       size_t out_stride, size_t off, size_t cnt, bool moddown, const uint64_t *x_b)
{
    if (c->na == 1) {
        conv_single(c, in, out, out_stride, off, cnt, moddown, x_b);
        return;
    }
    uint64_t y[TS_RNS_MAX_MODULI][CONV_BLOCK];
    uint32_t v[CONV_BLOCK];
    double s[CONV_BLOCK];
    ts_u128_t acc[CONV_BLOCK];
    for (size_t k = 0; k < cnt; k++)
        s[k] = 0.5; /* round(sum) = floor(sum + 1/2) */
    for (uint32_t i = 0; i < c->na; i++) {
        const uint64_t q = c->from[i].q, w = c->ahat_inv[i], wp = c->ahat_inv_sh[i];
        const uint64_t *src = in + i * in_stride + off;
        const double inv = c->a_inv_d[i];
        for (size_t k = 0; k < cnt; k++) {
            uint64_t t = ts_mod_mul_shoup(src[k], w, wp, q);
            y[i][k] = t;
            s[k] += (double)t * inv;
        }
    }
    for (size_t k = 0; k < cnt; k++)
        v[k] = (uint32_t)s[k]; /* 0 <= v <= na */
    for (uint32_t j = 0; j < c->nb; j++) {
        const ts_modulus_t *mb = &c->to[j];
        const uint64_t qb = mb->q;
        const uint64_t *va = c->va_mod_b + j;
        uint64_t *dst = out + j * out_stride + off;
        if (c->ahat_mod_b_mont) { /* one coefficient at a time, its sum in registers */
            uint64_t h[TS_RNS_MAX_MODULI];
            for (uint32_t i = 0; i < c->na; i++)
                h[i] = c->ahat_mod_b_mont[(size_t)i * c->nb + j];
            const uint64_t bneg = c->b_neg_inv[j];
            for (size_t k = 0; k < cnt; k++) {
                ts_u128_t t = 0;
                for (uint32_t i = 0; i < c->na; i++)
                    t += (ts_u128_t)y[i][k] * h[i];
                uint64_t red = ts_mod_sub(mont_reduce(t, qb, bneg), va[(size_t)v[k] * c->nb],
                                          qb); /* - v A mod b */
                dst[k] = moddown ? moddown_one(c, j, x_b[j * out_stride + off + k], red) : red;
            }
            continue;
        }
        for (size_t k = 0; k < cnt; k++)
            acc[k] = 0;
        uint32_t terms = 0;
        for (uint32_t i = 0; i < c->na; i++) {
            const uint64_t h = c->ahat_mod_b[(size_t)i * c->nb + j];
            for (size_t k = 0; k < cnt; k++)
                acc[k] += (ts_u128_t)y[i][k] * h;
            if (++terms == 15 && i + 1 < c->na) {
                for (size_t k = 0; k < cnt; k++)
                    acc[k] = ts_mod_reduce128((uint64_t)(acc[k] >> 64), (uint64_t)acc[k], mb);
                terms = 1;
            }
        }
        for (size_t k = 0; k < cnt; k++) {
            uint64_t red = ts_mod_reduce128((uint64_t)(acc[k] >> 64), (uint64_t)acc[k], mb);
            red = ts_mod_sub(red, va[(size_t)v[k] * c->nb], qb); /* - v A mod b */
            dst[k] = moddown ? moddown_one(c, j, x_b[j * out_stride + off + k], red) : red;
        }
    }
}

static void conv_portable(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride,
                          uint64_t *out, size_t out_stride, size_t from, size_t n, bool moddown,
                          const uint64_t *x_b)
{
    for (size_t off = from; off < n; off += CONV_BLOCK) {
        size_t cnt = n - off < CONV_BLOCK ? n - off : CONV_BLOCK;
        conv_block(c, in, in_stride, out, out_stride, off, cnt, moddown, x_b);
    }
}

static bool avx512_ok(const ts_rns_conv_t *c)
{
    return c->na <= 15 && ts__rns_conv_avx512_built() && ts_cpu_has_avx512();
}

static ts_status_t conv_run(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride,
                            uint64_t *out, size_t out_stride, size_t n, bool moddown,
                            const uint64_t *x_b, ts_ntt_impl_t impl)
{
    bool vec;
    switch (impl) {
    case TS_NTT_IMPL_AUTO:
        vec = avx512_ok(c);
        break;
    case TS_NTT_IMPL_PORTABLE:
    case TS_NTT_IMPL_AVX2:
        vec = false;
        break;
    case TS_NTT_IMPL_AVX512:
        if (!ts__rns_conv_avx512_built() || !ts_cpu_has_avx512())
            return TS_ENOTSUP;
        vec = avx512_ok(c);
        break;
    default:
        return TS_EINVAL;
    }
    size_t done = 0;
    if (vec) {
        done = n & ~(size_t)7;
        if (done && c->na == 1)
            ts__rns_conv1_avx512(c, in, out, out_stride, done, moddown, x_b);
        else if (done)
            ts__rns_conv_avx512(c, in, in_stride, out, out_stride, done, moddown, x_b);
    }
    conv_portable(c, in, in_stride, out, out_stride, done, n, moddown, x_b);
    return TS_OK;
}

void ts_rns_conv_apply(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride, uint64_t *out,
                       size_t out_stride, size_t n)
{
    (void)conv_run(c, in, in_stride, out, out_stride, n, false, NULL, TS_NTT_IMPL_AUTO);
}

void ts_rns_conv_moddown(const ts_rns_conv_t *c, const uint64_t *x_a, size_t a_stride,
                         const uint64_t *x_b, uint64_t *out, size_t b_stride, size_t n)
{
    (void)conv_run(c, x_a, a_stride, out, b_stride, n, true, x_b, TS_NTT_IMPL_AUTO);
}

ts_status_t ts_rns_conv_apply_impl(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride,
                                   uint64_t *out, size_t out_stride, size_t n, ts_ntt_impl_t impl)
{
    if (!c || (n && (!in || !out)))
        return TS_EINVAL;
    return conv_run(c, in, in_stride, out, out_stride, n, false, NULL, impl);
}

ts_status_t ts_rns_conv_moddown_impl(const ts_rns_conv_t *c, const uint64_t *x_a, size_t a_stride,
                                     const uint64_t *x_b, uint64_t *out, size_t b_stride, size_t n,
                                     ts_ntt_impl_t impl)
{
    if (!c || (n && (!x_a || !x_b || !out)))
        return TS_EINVAL;
    return conv_run(c, x_a, a_stride, out, b_stride, n, true, x_b, impl);
}
