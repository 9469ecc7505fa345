/*
 * Element-wise modular vector operations (see math.h "vectors mod q"): the
 * portable loops and the run-time choice of the AVX-512 kernels
 * (math/vecmod_avx512.c). Every kernel returns the unique reduced result, so
 * all implementations give the same words.
 */
#include "core/math/math_int.h"

static void vec_portable(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b,
                         uint64_t s, size_t n, const ts_modulus_t *m)
{
    const uint64_t q = m->q;
    switch (op) {
    case TS_VEC_ADD:
        for (size_t i = 0; i < n; i++)
            o[i] = ts_mod_add(a[i], b[i], q);
        break;
    case TS_VEC_SUB:
        for (size_t i = 0; i < n; i++)
            o[i] = ts_mod_sub(a[i], b[i], q);
        break;
    case TS_VEC_MUL:
        for (size_t i = 0; i < n; i++)
            o[i] = ts_mod_mul(a[i], b[i], m);
        break;
    case TS_VEC_MUL_ADD:
        for (size_t i = 0; i < n; i++) {
            uint64_t hi, lo;
            ts_mul64(a[i], b[i], &hi, &lo);
            ts_u128_t x = (((ts_u128_t)hi << 64) | lo) + o[i];
            o[i] = ts_mod_reduce128((uint64_t)(x >> 64), (uint64_t)x, m);
        }
        break;
    case TS_VEC_MUL_SCALAR: {
        const uint64_t sp = ts_shoup_precompute(s, q);
        for (size_t i = 0; i < n; i++)
            o[i] = ts_mod_mul_shoup(a[i], s, sp, q);
        break;
    }
    case TS_VEC_MUL_SCALAR_ADD: {
        const uint64_t sp = ts_shoup_precompute(s, q);
        for (size_t i = 0; i < n; i++)
            o[i] = ts_mod_add(o[i], ts_mod_mul_shoup(a[i], s, sp, q), q);
        break;
    }
    case TS_VEC_SUB_MUL_SCALAR: {
        const uint64_t sp = ts_shoup_precompute(s, q);
        for (size_t i = 0; i < n; i++)
            o[i] = ts_mod_mul_shoup(ts_mod_sub(a[i], b[i], q), s, sp, q);
        break;
    }
    }
}

static bool vec_avx512_ok(ts_vec_op_t op, const ts_modulus_t *m)
{
    if (!ts__vec_avx512_built() || !ts_cpu_has_avx512())
        return false;
    /* products: the IFMA kernels take q < 2^62 (52-bit below 2^50, split operands above) */
    if ((op == TS_VEC_MUL || op == TS_VEC_MUL_ADD) && m->q >= (1ULL << 62))
        return false;
    return true;
}

static void vec_run(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b, uint64_t s,
                    size_t n, const ts_modulus_t *m, bool vec)
{
    size_t done = 0;
    if (vec) {
        done = n & ~(size_t)7;
        if (done)
            ts__vec_avx512(op, o, a, b, s, done, m);
    }
    if (done < n)
        vec_portable(op, o + done, a ? a + done : NULL, b ? b + done : NULL, s, n - done, m);
}

void ts_vec_op(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b, uint64_t s,
               size_t n, const ts_modulus_t *m)
{
    vec_run(op, o, a, b, s, n, m, vec_avx512_ok(op, m));
}

/* Whether a forced implementation (the *_impl entry points) runs the
 * AVX-512 kernels: TS_ENOTSUP when asked for them without them. */
static ts_status_t vec_impl(ts_ntt_impl_t impl, bool *vec)
{
    switch (impl) {
    case TS_NTT_IMPL_AUTO:
        *vec = ts__vec_avx512_built() && ts_cpu_has_avx512();
        return TS_OK;
    case TS_NTT_IMPL_PORTABLE:
    case TS_NTT_IMPL_AVX2:
        *vec = false;
        return TS_OK;
    case TS_NTT_IMPL_AVX512:
        if (!ts__vec_avx512_built() || !ts_cpu_has_avx512())
            return TS_ENOTSUP;
        *vec = true;
        return TS_OK;
    default:
        return TS_EINVAL;
    }
}

ts_status_t ts_vec_op_impl(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b,
                           uint64_t s, size_t n, const ts_modulus_t *m, ts_ntt_impl_t impl)
{
    const bool scalar =
        op == TS_VEC_MUL_SCALAR || op == TS_VEC_MUL_SCALAR_ADD || op == TS_VEC_SUB_MUL_SCALAR;
    if (!m || (n && (!o || !a)) || op < TS_VEC_ADD || op > TS_VEC_SUB_MUL_SCALAR)
        return TS_EINVAL;
    if (n && (op == TS_VEC_SUB_MUL_SCALAR || !scalar) && !b)
        return TS_EINVAL;
    if (scalar && s >= m->q)
        return TS_EINVAL;
    bool vec;
    ts_status_t st = vec_impl(impl, &vec);
    if (st != TS_OK)
        return st;
    vec_run(op, o, a, b, s, n, m, vec && vec_avx512_ok(op, m));
    return TS_OK;
}

static void lift_portable(uint64_t *o, const uint64_t *x, size_t n, uint64_t p,
                          const ts_modulus_t *m)
{
    const uint64_t half = p / 2, q = m->q;
    for (size_t j = 0; j < n; j++) {
        uint64_t v = x[j];
        if (v <= half) {
            o[j] = v < q ? v : ts_mod_reduce64(v, m);
        } else {
            uint64_t a = p - v; /* the lift is -a, 0 < a <= p / 2 */
            uint64_t r = a < q ? a : ts_mod_reduce64(a, m);
            o[j] = ts_mod_neg(r, q);
        }
    }
}

static void lift_run(uint64_t *o, const uint64_t *x, size_t n, uint64_t p, const ts_modulus_t *m,
                     bool vec)
{
    size_t done = 0;
    if (vec) {
        done = n & ~(size_t)7;
        if (done)
            ts__vec_center_lift_avx512(o, x, done, p, m);
    }
    if (done < n)
        lift_portable(o + done, x + done, n - done, p, m);
}

void ts_vec_center_lift(uint64_t *o, const uint64_t *x, size_t n, uint64_t p, const ts_modulus_t *m)
{
    lift_run(o, x, n, p, m, ts__vec_avx512_built() && ts_cpu_has_avx512());
}

ts_status_t ts_vec_center_lift_impl(uint64_t *o, const uint64_t *x, size_t n, uint64_t p,
                                    const ts_modulus_t *m, ts_ntt_impl_t impl)
{
    if (!m || (n && (!o || !x)) || !(p & 1) || p >> TS_MODULUS_MAX_BITS)
        return TS_EINVAL;
    bool vec;
    ts_status_t st = vec_impl(impl, &vec);
    if (st != TS_OK)
        return st;
    lift_run(o, x, n, p, m, vec);
    return TS_OK;
}

static void from_i64_run(uint64_t *o, const int64_t *x, size_t n, const ts_modulus_t *m, bool vec)
{
    size_t done = 0;
    if (vec) {
        done = n & ~(size_t)7;
        if (done)
            ts__vec_from_i64_avx512(o, x, done, m);
    }
    for (size_t i = done; i < n; i++) {
        int64_t v = x[i];
        uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; /* |INT64_MIN| too */
        uint64_t r = ts_mod_reduce64(u, m);
        o[i] = v < 0 ? ts_mod_neg(r, m->q) : r;
    }
}

void ts_vec_from_i64(uint64_t *o, const int64_t *x, size_t n, const ts_modulus_t *m)
{
    from_i64_run(o, x, n, m, ts__vec_avx512_built() && ts_cpu_has_avx512());
}

ts_status_t ts_vec_from_i64_impl(uint64_t *o, const int64_t *x, size_t n, const ts_modulus_t *m,
                                 ts_ntt_impl_t impl)
{
    if (!m || (n && (!o || !x)))
        return TS_EINVAL;
    bool vec;
    ts_status_t st = vec_impl(impl, &vec);
    if (st != TS_OK)
        return st;
    from_i64_run(o, x, n, m, vec);
    return TS_OK;
}

static void dot_run(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y, size_t terms,
                    size_t n, const ts_modulus_t *m, bool vec)
{
    size_t done = 0;
    if (vec && m->q < (1ULL << 50) && terms < 4096) {
        done = n & ~(size_t)7;
        if (done)
            ts__vec_dot_avx512(o, x, y, terms, done, m);
    } else if (vec && m->q < (1ULL << 62) && terms <= 1024) {
        done = n & ~(size_t)7;
        if (done)
            ts__vec_dot62_avx512(o, x, y, terms, done, m);
    }
    if (terms <= 15) {
        /* < 2^124 per term for q < 2^62: one reduction per output; four
         * outputs at a time share the loads of the term pointers and keep
         * four independent sums in flight */
        for (; done + 4 <= n; done += 4) {
            ts_u128_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            for (size_t t = 0; t < terms; t++) {
                const uint64_t *xt = x[t] + done, *yt = y[t] + done;
                a0 += (ts_u128_t)xt[0] * yt[0];
                a1 += (ts_u128_t)xt[1] * yt[1];
                a2 += (ts_u128_t)xt[2] * yt[2];
                a3 += (ts_u128_t)xt[3] * yt[3];
            }
            o[done] = ts_mod_reduce128((uint64_t)(a0 >> 64), (uint64_t)a0, m);
            o[done + 1] = ts_mod_reduce128((uint64_t)(a1 >> 64), (uint64_t)a1, m);
            o[done + 2] = ts_mod_reduce128((uint64_t)(a2 >> 64), (uint64_t)a2, m);
            o[done + 3] = ts_mod_reduce128((uint64_t)(a3 >> 64), (uint64_t)a3, m);
        }
    }
    for (size_t i = done; i < n; i++) {
        ts_u128_t acc = 0;
        uint32_t k = 0;
        for (size_t t = 0; t < terms; t++) {
            if (k == 15) { /* < 2^124 per term for q < 2^62 */
                acc = ts_mod_reduce128((uint64_t)(acc >> 64), (uint64_t)acc, m);
                k = 1;
            }
            acc += (ts_u128_t)x[t][i] * y[t][i];
            k++;
        }
        o[i] = ts_mod_reduce128((uint64_t)(acc >> 64), (uint64_t)acc, m);
    }
}

void ts_vec_dot(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y, size_t terms,
                size_t n, const ts_modulus_t *m)
{
    dot_run(o, x, y, terms, n, m, ts__vec_avx512_built() && ts_cpu_has_avx512());
}

ts_status_t ts_vec_dot_impl(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y,
                            size_t terms, size_t n, const ts_modulus_t *m, ts_ntt_impl_t impl)
{
    if (!m || (n && (!o || (terms && (!x || !y)))))
        return TS_EINVAL;
    bool vec;
    ts_status_t st = vec_impl(impl, &vec);
    if (st != TS_OK)
        return st;
    dot_run(o, x, y, terms, n, m, vec);
    return TS_OK;
}

static void mrs_run(uint64_t *o, const uint64_t *x, size_t n, uint64_t m, unsigned s, bool vec)
{
    size_t done = 0;
    if (vec) {
        done = n & ~(size_t)7;
        if (done)
            ts__vec_mul_round_shift_avx512(o, x, done, m, s);
    }
    const ts_u128_t rnd = (ts_u128_t)1 << (s - 1);
    for (size_t i = done; i < n; i++)
        o[i] = (uint64_t)(((ts_u128_t)x[i] * m + rnd) >> s);
}

void ts_vec_mul_round_shift(uint64_t *o, const uint64_t *x, size_t n, uint64_t m, unsigned s)
{
    mrs_run(o, x, n, m, s, ts__vec_avx512_built() && ts_cpu_has_avx512());
}

ts_status_t ts_vec_mul_round_shift_impl(uint64_t *o, const uint64_t *x, size_t n, uint64_t m,
                                        unsigned s, ts_ntt_impl_t impl)
{
    if ((n && (!o || !x)) || s < 65 || s > 127)
        return TS_EINVAL;
    bool vec;
    ts_status_t st = vec_impl(impl, &vec);
    if (st != TS_OK)
        return st;
    mrs_run(o, x, n, m, s, vec);
    return TS_OK;
}
