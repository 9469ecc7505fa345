/*
 * Negacyclic NTT over Z_q[X]/(X^N + 1): Cooley-Tukey forward (standard order
 * in, bit-reversed out) and Gentleman-Sande inverse, with Harvey's lazy
 * butterflies (D. Harvey, "Faster arithmetic for number-theoretic transforms",
 * J. Symb. Comp. 2014) and Shoup twiddles. Stage m (m = 1, 2, 4, ..., N/2) of
 * the forward transform uses twiddle fwd[m + i] = psi^bitrev(m + i) for group i;
 * the inverse runs the stages backwards with inv[m + i] = fwd[m + i]^{-1}.
 */
#include <stdatomic.h>

#include "core/math/math_int.h"

/* floor(w * 2^52 / q), the Shoup constant of the 52-bit IFMA kernels */
static uint64_t shoup52(uint64_t w, uint64_t q)
{
    return (uint64_t)(((ts_u128_t)w << 52) / q);
}

ts_status_t ts_ntt_table_new(uint32_t n, uint64_t q, ts_ntt_table_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (n < 2 || (n & (n - 1)) || n > (1u << TS_NTT_MAX_LOGN))
        return TS_EINVAL;
    ts_modulus_t mod;
    if (ts_modulus_init(&mod, q) != TS_OK || (q - 1) % (2 * (uint64_t)n) || !ts_is_prime(q))
        return TS_EINVAL;
    uint64_t psi;
    ts_status_t st = ts_primitive_root_2pow(q, 2 * (uint64_t)n, &psi);
    if (st != TS_OK)
        return st;
    ts_ntt_table_t *t = ts_calloc(1, sizeof *t);
    if (!t)
        return TS_ENOMEM;
    t->n = n;
    while ((1u << t->logn) < n)
        t->logn++;
    t->mod = mod;
    t->psi = psi;
    t->psi_inv = ts_mod_inv(psi, q);
    size_t bytes = (size_t)n * sizeof(uint64_t);
    t->fwd = ts_malloc(bytes);
    t->fwd_shoup = ts_malloc(bytes);
    t->inv = ts_malloc(bytes);
    t->inv_shoup = ts_malloc(bytes);
    if (!t->fwd || !t->fwd_shoup || !t->inv || !t->inv_shoup) {
        ts_ntt_table_free(t);
        return TS_ENOMEM;
    }
    /* powers psi^j in natural order, then scatter to bit-reversed positions */
    uint64_t p = 1, pi = 1;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t r = ts_bitrev(j, t->logn);
        t->fwd[r] = p;
        t->inv[r] = pi;
        p = ts_mod_mul(p, psi, &mod);
        pi = ts_mod_mul(pi, t->psi_inv, &mod);
    }
    for (uint32_t j = 0; j < n; j++) {
        t->fwd_shoup[j] = ts_shoup_precompute(t->fwd[j], q);
        t->inv_shoup[j] = ts_shoup_precompute(t->inv[j], q);
    }
    t->n_inv = ts_mod_inv(n % q, q);
    t->n_inv_shoup = ts_shoup_precompute(t->n_inv, q);
    t->n_inv_w = ts_mod_mul(t->n_inv, t->inv[1], &mod);
    t->n_inv_w_shoup = ts_shoup_precompute(t->n_inv_w, q);
    if (q < (1ULL << 50)) {
        t->fwd_shoup52 = ts_malloc(bytes);
        t->inv_shoup52 = ts_malloc(bytes);
        if (!t->fwd_shoup52 || !t->inv_shoup52) {
            ts_ntt_table_free(t);
            return TS_ENOMEM;
        }
        for (uint32_t j = 0; j < n; j++) {
            t->fwd_shoup52[j] = shoup52(t->fwd[j], q);
            t->inv_shoup52[j] = shoup52(t->inv[j], q);
        }
        t->n_inv_shoup52 = shoup52(t->n_inv, q);
        t->n_inv_w_shoup52 = shoup52(t->n_inv_w, q);
    }
    *out = t;
    return TS_OK;
}

void ts_ntt_table_free(ts_ntt_table_t *t)
{
    if (!t)
        return;
    ts_free(t->fwd);
    ts_free(t->fwd_shoup);
    ts_free(t->inv);
    ts_free(t->inv_shoup);
    ts_free(t->fwd_shoup52);
    ts_free(t->inv_shoup52);
    ts_free(t);
}

void ts__ntt_forward_portable(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint64_t q = t->mod.q, q2 = 2 * q;
    const uint32_t n = t->n;
    uint32_t gap = n;
    for (uint32_t m = 1; m < n; m <<= 1) {
        gap >>= 1;
        for (uint32_t i = 0; i < m; i++) {
            const uint64_t w = t->fwd[m + i], wp = t->fwd_shoup[m + i];
            uint64_t *x = a + 2 * (size_t)i * gap, *y = x + gap;
            for (uint32_t j = 0; j < gap; j++) {
                uint64_t u = x[j];
                u -= (u >= q2) ? q2 : 0;
                uint64_t v = ts_mod_mul_shoup_lazy(y[j], w, wp, q);
                x[j] = u + v;
                y[j] = u - v + q2;
            }
        }
    }
    for (uint32_t j = 0; j < n; j++) {
        uint64_t u = a[j];
        u -= (u >= q2) ? q2 : 0;
        u -= (u >= q) ? q : 0;
        a[j] = u;
    }
}

void ts__ntt_inverse_portable(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint64_t q = t->mod.q, q2 = 2 * q;
    const uint32_t n = t->n;
    /* inputs in [0, 4q): bring to [0, 2q) */
    for (uint32_t j = 0; j < n; j++)
        a[j] -= (a[j] >= q2) ? q2 : 0;
    uint32_t gap = 1;
    for (uint32_t m = n >> 1; m > 1; m >>= 1) {
        for (uint32_t i = 0; i < m; i++) {
            const uint64_t w = t->inv[m + i], wp = t->inv_shoup[m + i];
            uint64_t *x = a + 2 * (size_t)i * gap, *y = x + gap;
            for (uint32_t j = 0; j < gap; j++) {
                uint64_t u = x[j], v = y[j];
                uint64_t s = u + v;
                s -= (s >= q2) ? q2 : 0;
                x[j] = s;
                y[j] = ts_mod_mul_shoup_lazy(u - v + q2, w, wp, q);
            }
        }
        gap <<= 1;
    }
    /* last stage (one group) with 1/N merged in */
    {
        const uint64_t ni = t->n_inv, nip = t->n_inv_shoup;
        const uint64_t nw = t->n_inv_w, nwp = t->n_inv_w_shoup;
        uint64_t *x = a, *y = a + gap;
        for (uint32_t j = 0; j < gap; j++) {
            uint64_t u = x[j], v = y[j];
            x[j] = ts_mod_mul_shoup(u + v, ni, nip, q);
            y[j] = ts_mod_mul_shoup(u - v + q2, nw, nwp, q);
        }
    }
}

bool ts_cpu_has_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* an atomic cache: several threads may ask at once */
    static _Atomic int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") ? 1 : 0;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v == 1;
#else
    return false;
#endif
}

bool ts_cpu_has_avx512(void)
{
#if defined(__x86_64__)
    static _Atomic int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512ifma") &&
            __builtin_cpu_supports("avx2");
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v == 1;
#else
    return false;
#endif
}

const char *ts_cpu_kernels(void)
{
    if (ts_cpu_has_avx512() && ts__vec_avx512_built() && ts__rns_conv_avx512_built())
        return "avx512";
    return ts_cpu_has_avx2() ? "avx2" : "portable";
}

ts_ntt_impl_t ts_ntt_auto_impl(const ts_ntt_table_t *t)
{
    /* measured with tests/bench/bench_ntt (see docs): AVX-512 wins with IFMA
     * (q < 2^50) and with the 64-bit product; AVX2 beats portable everywhere */
    if (t->n >= 16 && ts_cpu_has_avx512())
        return TS_NTT_IMPL_AVX512;
    if (ts_cpu_has_avx2())
        return TS_NTT_IMPL_AVX2;
    return TS_NTT_IMPL_PORTABLE;
}

void ts_ntt_forward(const ts_ntt_table_t *t, uint64_t *a)
{
    switch (ts_ntt_auto_impl(t)) {
    case TS_NTT_IMPL_AVX512:
        ts__ntt_forward_avx512(t, a);
        break;
    case TS_NTT_IMPL_AVX2:
        ts__ntt_forward_avx2(t, a);
        break;
    default:
        ts__ntt_forward_portable(t, a);
        break;
    }
}

void ts_ntt_inverse(const ts_ntt_table_t *t, uint64_t *a)
{
    switch (ts_ntt_auto_impl(t)) {
    case TS_NTT_IMPL_AVX512:
        ts__ntt_inverse_avx512(t, a);
        break;
    case TS_NTT_IMPL_AVX2:
        ts__ntt_inverse_avx2(t, a);
        break;
    default:
        ts__ntt_inverse_portable(t, a);
        break;
    }
}

ts_status_t ts_ntt_forward_impl(const ts_ntt_table_t *t, uint64_t *a, ts_ntt_impl_t impl)
{
    switch (impl) {
    case TS_NTT_IMPL_AUTO:
        ts_ntt_forward(t, a);
        return TS_OK;
    case TS_NTT_IMPL_PORTABLE:
        ts__ntt_forward_portable(t, a);
        return TS_OK;
    case TS_NTT_IMPL_AVX2:
        if (!ts_cpu_has_avx2())
            return TS_ENOTSUP;
        ts__ntt_forward_avx2(t, a);
        return TS_OK;
    case TS_NTT_IMPL_AVX512:
        if (!ts_cpu_has_avx512())
            return TS_ENOTSUP;
        ts__ntt_forward_avx512(t, a);
        return TS_OK;
    }
    return TS_EINVAL;
}

ts_status_t ts_ntt_inverse_impl(const ts_ntt_table_t *t, uint64_t *a, ts_ntt_impl_t impl)
{
    switch (impl) {
    case TS_NTT_IMPL_AUTO:
        ts_ntt_inverse(t, a);
        return TS_OK;
    case TS_NTT_IMPL_PORTABLE:
        ts__ntt_inverse_portable(t, a);
        return TS_OK;
    case TS_NTT_IMPL_AVX2:
        if (!ts_cpu_has_avx2())
            return TS_ENOTSUP;
        ts__ntt_inverse_avx2(t, a);
        return TS_OK;
    case TS_NTT_IMPL_AVX512:
        if (!ts_cpu_has_avx512())
            return TS_ENOTSUP;
        ts__ntt_inverse_avx512(t, a);
        return TS_OK;
    }
    return TS_EINVAL;
}

/* The checks of the sparse transforms (gap, impl). */
static ts_status_t sparse_args(const ts_ntt_table_t *t, uint32_t gap, const uint64_t *a,
                               ts_ntt_impl_t impl)
{
    if (!t || !a || !gap || (gap & (gap - 1)) || gap > t->n / 2)
        return TS_EINVAL;
    if (impl != TS_NTT_IMPL_AUTO && impl != TS_NTT_IMPL_PORTABLE && impl != TS_NTT_IMPL_AVX2 &&
        impl != TS_NTT_IMPL_AVX512)
        return TS_EINVAL;
    if ((impl == TS_NTT_IMPL_AVX2 && !ts_cpu_has_avx2()) ||
        (impl == TS_NTT_IMPL_AVX512 && !ts_cpu_has_avx512()))
        return TS_ENOTSUP;
    return TS_OK;
}

/* The M-point transform of a[0..M), M = N / gap: a view of t with the first M twiddles. */
static ts_status_t forward_head(const ts_ntt_table_t *t, uint32_t gap, uint64_t *a,
                                ts_ntt_impl_t impl)
{
    ts_ntt_table_t sub = *t;
    sub.n = t->n / gap;
    sub.logn = 0;
    while ((1u << sub.logn) < sub.n)
        sub.logn++;
    return ts_ntt_forward_impl(&sub, a, impl);
}

ts_status_t ts_ntt_forward_compact(const ts_ntt_table_t *t, uint32_t gap, uint64_t *a,
                                   ts_ntt_impl_t impl)
{
    ts_status_t st = sparse_args(t, gap, a, impl);
    if (st != TS_OK)
        return st;
    return gap == 1 ? ts_ntt_forward_impl(t, a, impl) : forward_head(t, gap, a, impl);
}

ts_status_t ts_ntt_forward_sparse(const ts_ntt_table_t *t, uint32_t gap, uint64_t *a,
                                  ts_ntt_impl_t impl)
{
    ts_status_t st = sparse_args(t, gap, a, impl);
    if (st != TS_OK)
        return st;
    if (gap == 1)
        return ts_ntt_forward_impl(t, a, impl);
    const uint32_t m = t->n / gap;
    /* gather b into a[0..m) (a[k] <- a[k gap]: each source lies above every
     * destination written before it) */
    for (uint32_t k = 1; k < m; k++)
        a[k] = a[(size_t)k * gap];
    st = forward_head(t, gap, a, impl);
    if (st != TS_OK) /* not reached: impl was checked above */
        return st;
    /* spread, top down: block h (words h gap .. h gap + gap - 1) only covers
     * a[j] with j >= h, already read */
    if ((gap >= 8 || m % 8 == 0) && ts_cpu_has_avx512()) {
        ts__ntt_spread_avx512(a, m, gap);
        return TS_OK;
    }
    for (uint32_t h = m; h-- > 0;) {
        const uint64_t v = a[h];
        uint64_t *d = a + (size_t)h * gap;
        for (uint32_t r = 0; r < gap; r++)
            d[r] = v;
    }
    return TS_OK;
}

void ts_ntt_automorphism_index(uint32_t n, uint64_t k, uint32_t *idx)
{
    uint32_t logn = 0;
    while ((1u << logn) < n)
        logn++;
    const uint64_t mask = 2 * (uint64_t)n - 1;
    k &= mask;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = 2 * (uint64_t)ts_bitrev(i, logn) + 1;
        uint64_t ek = (e * k) & mask;
        idx[i] = ts_bitrev((uint32_t)((ek - 1) >> 1), logn);
    }
}
