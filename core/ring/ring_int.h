/* Internals of core/ring shared between its files. */
#ifndef TS_RING_INT_H
#define TS_RING_INT_H

#include <stdatomic.h>

#include "core/ring/ring.h"

struct ts_ring {
    atomic_int refs;
    uint32_t n, logn;
    uint32_t q_count, p_count;
    ts_modulus_t *mods;       /* q_count + p_count */
    uint32_t *idx_all;        /* 0 .. q_count + p_count - 1 */
    uint32_t **idx_qp;        /* [nq]: 0..nq-1 then q_count..q_count+p_count-1 */
    ts_rns_basis_t **basis_q; /* [nq - 1] */
    ts_rns_basis_t *basis_p;  /* NULL when p_count = 0 */
    ts_backend_t *backend;
    ts_bk_ring_t *bk;
};

void ts__ring_destroy(ts_ring_t *r);

/* AVX-512 sampler kernels (ring/sample_avx512.c), only when
 * ts__ring_avx512_built() and ts_cpu_has_avx512():
 * mag[i] = #{k < bound : u[i] >= cdt[k]} for i < cnt (cnt a multiple of 8);
 * the words (w[i] & mask) < q of w[0..cnt) in order into out, at most `room`
 * of them; returns how many were written (the words after the last one
 * written are not looked at by the caller). */
bool ts__ring_avx512_built(void);
void ts__ring_cdt_count_avx512(const uint64_t *u, size_t cnt, const uint64_t *cdt, int bound,
                               int64_t *mag);
size_t ts__ring_accept_avx512(const uint64_t *w, size_t cnt, uint64_t mask, uint64_t q,
                              uint64_t *out, size_t room);

#endif
