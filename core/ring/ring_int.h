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

#endif
