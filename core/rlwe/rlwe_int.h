/* Internals of core/rlwe shared between its files. */
#ifndef TS_RLWE_INT_H
#define TS_RLWE_INT_H

#include "core/rlwe/rlwe.h"

/* A non-owning polynomial view of backend memory (never ts_poly_free'd). */
static inline ts_poly_t ts__poly_view(ts_ring_t *r, uint64_t *data, uint32_t nq, uint32_t np,
                                      bool is_ntt)
{
    ts_poly_t v = {
        .ring = r, .data = data, .nq = nq, .np = np, .cap_limbs = nq + np, .is_ntt = is_ntt};
    return v;
}

/* Named wrappers over the compiler's atomic builtins (GCC/Clang). */
static inline void ts__atomic_inc(int *p)
{
    __atomic_fetch_add(p, 1, __ATOMIC_RELAXED);
}
static inline int ts__atomic_dec(int *p) /* returns the new value */
{
    return __atomic_sub_fetch(p, 1, __ATOMIC_ACQ_REL);
}

#endif
