/*
 * The CPU backend: the reference implementation of struct ts_backend_i.
 * Memory is host memory from ts_malloc; work is split into tasks of one
 * (polynomial, limb) pair (or a coefficient range for basis conversion) and
 * spread over the backend's thread pool. No allocation on the op paths.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/backend_int.h"

#define AUTO_CACHE 128

struct ts_bk_ring {
    uint32_t n, logn, count;
    ts_modulus_t *mods;
    ts_ntt_table_t **ntt;
    uint32_t *bitrev; /* bitrev over logn bits, for NTT-form automorphisms */
    /* source-index tables of NTT-form automorphisms, one per Galois element
     * met so far (at most AUTO_CACHE; beyond that the index is computed per
     * slot). A mutable cache behind its own lock: the ring is otherwise
     * read-only. Plain malloc, like the default backend's bookkeeping, so it
     * stays out of ts_malloc's accounting and injected failures. */
    pthread_mutex_t auto_lock;
    uint32_t auto_count;
    uint64_t auto_k[AUTO_CACHE];
    uint32_t *auto_idx[AUTO_CACHE];
};

struct ts_bk_conv {
    ts_rns_conv_t *conv;
};

typedef struct cpu_ctx {
    ts_pool_t *pool;
    bool raw; /* the default backend: allocated with calloc, see cpu_new */
} cpu_ctx_t;

static ts_pool_t *pool_of(ts_backend_t *be)
{
    return ((cpu_ctx_t *)be->ctx)->pool;
}

/* ------------------------------------------------------------- memory */

static ts_status_t cpu_alloc(ts_backend_t *be, size_t bytes, void **out)
{
    (void)be;
    *out = ts_malloc(bytes ? bytes : 1);
    return *out ? TS_OK : TS_ENOMEM;
}

static void cpu_buf_free(ts_backend_t *be, void *p)
{
    (void)be;
    ts_free(p);
}

/*
 * Copies and zeroing of whole ciphertexts (tens of MB at N = 2^16) run on the
 * pool in MEM_CHUNK pieces: done by the calling thread alone they were ~8% of
 * a two-thread bootstrap's wall time with the other core idle. Overlapping
 * moves (memmove semantics) and small sizes stay on the calling thread.
 */
#define MEM_CHUNK ((size_t)1 << 20)

typedef struct {
    uint8_t *dst;
    const uint8_t *src; /* NULL: zero */
    size_t bytes;
} mem_job_t;

static void mem_task(void *vj, size_t t)
{
    const mem_job_t *j = vj;
    size_t off = t * MEM_CHUNK, len = j->bytes - off < MEM_CHUNK ? j->bytes - off : MEM_CHUNK;
    if (j->src)
        memcpy(j->dst + off, j->src + off, len);
    else
        memset(j->dst + off, 0, len);
}

static bool mem_parallel(ts_backend_t *be, const void *dst, const void *src, size_t bytes)
{
    if (bytes < 4 * MEM_CHUNK || ts__pool_threads(pool_of(be)) < 2)
        return false;
    if (!src)
        return true;
    const uint8_t *d = dst, *a = src;
    return d + bytes <= a || a + bytes <= d; /* disjoint */
}

static ts_status_t cpu_copy(ts_backend_t *be, void *dst, const void *src, size_t bytes)
{
    if (!bytes || dst == src)
        return TS_OK;
    if (mem_parallel(be, dst, src, bytes)) {
        mem_job_t j = {dst, src, bytes};
        ts__pool_run(pool_of(be), (bytes + MEM_CHUNK - 1) / MEM_CHUNK, mem_task, &j);
    } else {
        memmove(dst, src, bytes);
    }
    return TS_OK;
}

static ts_status_t cpu_zero(ts_backend_t *be, void *dst, size_t bytes)
{
    if (mem_parallel(be, dst, NULL, bytes)) {
        mem_job_t j = {dst, NULL, bytes};
        ts__pool_run(pool_of(be), (bytes + MEM_CHUNK - 1) / MEM_CHUNK, mem_task, &j);
    } else {
        memset(dst, 0, bytes);
    }
    return TS_OK;
}

static ts_status_t cpu_sync(ts_backend_t *be)
{
    (void)be;
    return TS_OK;
}

/* --------------------------------------------------------------- rings */

static void cpu_ring_free(ts_backend_t *be, ts_bk_ring_t *r)
{
    (void)be;
    if (!r)
        return;
    if (r->ntt)
        for (uint32_t i = 0; i < r->count; i++)
            ts_ntt_table_free(r->ntt[i]);
    for (uint32_t i = 0; i < r->auto_count; i++)
        free(r->auto_idx[i]);
    pthread_mutex_destroy(&r->auto_lock);
    ts_free(r->ntt);
    ts_free(r->mods);
    ts_free(r->bitrev);
    ts_free(r);
}

static ts_status_t cpu_ring_new(ts_backend_t *be, uint32_t n, const uint64_t *moduli,
                                uint32_t count, ts_bk_ring_t **out)
{
    *out = NULL;
    if (!moduli || count == 0)
        return TS_EINVAL;
    ts_bk_ring_t *r = ts_calloc(1, sizeof *r);
    if (!r)
        return TS_ENOMEM;
    r->n = n;
    r->count = count;
    pthread_mutex_init(&r->auto_lock, NULL);
    while ((1u << r->logn) < n)
        r->logn++;
    r->mods = ts_calloc(count, sizeof *r->mods);
    r->ntt = ts_calloc(count, sizeof *r->ntt);
    r->bitrev = ts_malloc((size_t)n * sizeof(uint32_t));
    ts_status_t st = TS_ENOMEM;
    if (!r->mods || !r->ntt || !r->bitrev)
        goto out_free;
    for (uint32_t i = 0; i < n; i++)
        r->bitrev[i] = ts_bitrev(i, r->logn);
    for (uint32_t i = 0; i < count; i++) {
        st = ts_ntt_table_new(n, moduli[i], &r->ntt[i]);
        if (st != TS_OK)
            goto out_free;
        r->mods[i] = r->ntt[i]->mod;
    }
    *out = r;
    return TS_OK;
out_free:
    cpu_ring_free(be, r);
    return st;
}

static ts_status_t cpu_conv_new(ts_backend_t *be, ts_bk_ring_t *r, const uint32_t *from_idx,
                                uint32_t na, const uint32_t *to_idx, uint32_t nb,
                                ts_bk_conv_t **out)
{
    (void)be;
    *out = NULL;
    if (na == 0 || nb == 0 || na > TS_RNS_MAX_MODULI || nb > TS_RNS_MAX_MODULI)
        return TS_EINVAL;
    uint64_t a[TS_RNS_MAX_MODULI], b[TS_RNS_MAX_MODULI];
    for (uint32_t i = 0; i < na; i++) {
        if (from_idx[i] >= r->count)
            return TS_EINVAL;
        a[i] = r->mods[from_idx[i]].q;
    }
    for (uint32_t j = 0; j < nb; j++) {
        if (to_idx[j] >= r->count)
            return TS_EINVAL;
        b[j] = r->mods[to_idx[j]].q;
    }
    ts_bk_conv_t *c = ts_calloc(1, sizeof *c);
    if (!c)
        return TS_ENOMEM;
    ts_status_t st = ts_rns_conv_new(a, na, b, nb, &c->conv);
    if (st != TS_OK) {
        ts_free(c);
        return st;
    }
    *out = c;
    return TS_OK;
}

static void cpu_conv_free(ts_backend_t *be, ts_bk_conv_t *c)
{
    (void)be;
    if (!c)
        return;
    ts_rns_conv_free(c->conv);
    ts_free(c);
}

/* -------------------------------------------------------- task plumbing */

typedef struct job {
    const ts_bk_ring_t *ring;
    const ts_bk_batch_t *out, *a, *b, *c;
    const uint64_t *s;
    uint64_t k;
    const ts_bk_conv_t *conv;
    const uint32_t *key_limb;
    const uint32_t *perm; /* OP_AUTO_NTT: cached source indices, or NULL */
    size_t chunk;
    int op;
} job_t;

static inline uint64_t *limb_ptr(const ts_bk_batch_t *x, uint32_t n, size_t p, size_t l)
{
    return x->data + p * x->poly_stride + l * (size_t)n;
}

static bool same_shape(const ts_bk_batch_t *x, const ts_bk_batch_t *y)
{
    return ts_bk_batch_same_shape(x, y);
}

static bool valid(const ts_bk_ring_t *r, const ts_bk_batch_t *x)
{
    return ts_bk_batch_valid(x, r->n, r->count);
}

enum {
    OP_NTT_FWD,
    OP_NTT_INV,
    OP_NTT_FWD_SPARSE,
    OP_ADD,
    OP_SUB,
    OP_NEG,
    OP_MUL,
    OP_MUL_ADD,
    OP_MUL_SHOUP,
    OP_MUL_SCALAR,
    OP_MUL_SCALAR_ADD,
    OP_SUB_MUL_SCALAR,
    OP_ADD_SCALAR,
    OP_AUTO_NTT,
    OP_AUTO_COEFF,
};

static void limb_task(void *vj, size_t t)
{
    const job_t *j = vj;
    const ts_bk_ring_t *r = j->ring;
    const uint32_t n = r->n;
    const ts_bk_batch_t *shape = j->out ? j->out : j->a;
    const size_t p = t / shape->nlimbs, l = t % shape->nlimbs;
    const uint32_t mi = shape->mod_idx[l];
    const ts_modulus_t *m = &r->mods[mi];
    const uint64_t q = m->q;
    uint64_t *o = j->out ? limb_ptr(j->out, n, p, l) : NULL;
    const uint64_t *a = j->a ? limb_ptr(j->a, n, p, l) : NULL;
    const uint64_t *b = j->b ? limb_ptr(j->b, n, p, l) : NULL;
    switch (j->op) {
    case OP_NTT_FWD:
        ts_ntt_forward(r->ntt[mi], limb_ptr(j->a, n, p, l));
        break;
    case OP_NTT_INV:
        ts_ntt_inverse(r->ntt[mi], limb_ptr(j->a, n, p, l));
        break;
    case OP_NTT_FWD_SPARSE: /* gap checked by the caller: cannot fail */
        (void)ts_ntt_forward_sparse(r->ntt[mi], (uint32_t)j->k, limb_ptr(j->a, n, p, l),
                                    TS_NTT_IMPL_AUTO);
        break;
    case OP_ADD:
        ts_vec_op(TS_VEC_ADD, o, a, b, 0, n, m);
        break;
    case OP_SUB:
        ts_vec_op(TS_VEC_SUB, o, a, b, 0, n, m);
        break;
    case OP_NEG:
        for (uint32_t i = 0; i < n; i++)
            o[i] = ts_mod_neg(a[i], q);
        break;
    case OP_MUL:
        ts_vec_op(TS_VEC_MUL, o, a, b, 0, n, m);
        break;
    case OP_MUL_ADD:
        ts_vec_op(TS_VEC_MUL_ADD, o, a, b, 0, n, m);
        break;
    case OP_MUL_SHOUP: {
        const uint64_t *wp = limb_ptr(j->c, n, p, l);
        for (uint32_t i = 0; i < n; i++)
            o[i] = ts_mod_mul_shoup(a[i], b[i], wp[i], q);
        break;
    }
    case OP_MUL_SCALAR:
        ts_vec_op(TS_VEC_MUL_SCALAR, o, a, NULL, j->s[l], n, m);
        break;
    case OP_MUL_SCALAR_ADD:
        ts_vec_op(TS_VEC_MUL_SCALAR_ADD, o, a, NULL, j->s[l], n, m);
        break;
    case OP_SUB_MUL_SCALAR:
        ts_vec_op(TS_VEC_SUB_MUL_SCALAR, o, a, b, j->s[l], n, m);
        break;
    case OP_ADD_SCALAR: {
        const uint64_t s = j->s[l];
        for (uint32_t i = 0; i < n; i++)
            o[i] = ts_mod_add(a[i], s, q);
        break;
    }
    case OP_AUTO_NTT: {
        if (j->perm) { /* one independent load per slot */
            const uint32_t *perm = j->perm;
            for (uint32_t i = 0; i < n; i++)
                o[i] = a[perm[i]];
            break;
        }
        const uint64_t mask = 2 * (uint64_t)n - 1, k = j->k & mask;
        const uint32_t *br = r->bitrev;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t e = 2 * (uint64_t)br[i] + 1;
            o[i] = a[br[((e * k) & mask) >> 1]];
        }
        break;
    }
    case OP_AUTO_COEFF: {
        const uint64_t mask = 2 * (uint64_t)n - 1, k = j->k & mask;
        uint64_t e = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (e < n)
                o[e] = a[i];
            else
                o[e - n] = ts_mod_neg(a[i], q);
            e = (e + k) & mask;
        }
        break;
    }
    default:
        break;
    }
}

static ts_status_t run_limbs(ts_backend_t *be, const ts_bk_ring_t *r, int op,
                             const ts_bk_batch_t *out, const ts_bk_batch_t *a,
                             const ts_bk_batch_t *b, const ts_bk_batch_t *c, const uint64_t *s,
                             uint64_t k)
{
    if (!be || !r || !a || !valid(r, a))
        return TS_EINVAL;
    if (out && (!valid(r, out) || !same_shape(out, a)))
        return TS_EINVAL;
    if (b && (!valid(r, b) || !same_shape(b, a)))
        return TS_EINVAL;
    if (c && (!valid(r, c) || !same_shape(c, a)))
        return TS_EINVAL;
    job_t j = {.ring = r, .out = out, .a = a, .b = b, .c = c, .s = s, .k = k, .op = op};
    ts__pool_run(pool_of(be), (size_t)a->npolys * a->nlimbs, limb_task, &j);
    return TS_OK;
}

static ts_status_t cpu_ntt_fwd(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *a)
{
    return run_limbs(be, r, OP_NTT_FWD, NULL, a, NULL, NULL, NULL, 0);
}
static ts_status_t cpu_ntt_inv(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *a)
{
    return run_limbs(be, r, OP_NTT_INV, NULL, a, NULL, NULL, NULL, 0);
}
static ts_status_t cpu_ntt_fwd_sparse(ts_backend_t *be, const ts_bk_ring_t *r,
                                      const ts_bk_batch_t *a, uint32_t gap)
{
    if (!r || gap < 2 || (gap & (gap - 1)) || gap > r->n / 2)
        return TS_EINVAL;
    return run_limbs(be, r, OP_NTT_FWD_SPARSE, NULL, a, NULL, NULL, NULL, gap);
}
static ts_status_t cpu_add(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                           const ts_bk_batch_t *a, const ts_bk_batch_t *b)
{
    return b ? run_limbs(be, r, OP_ADD, o, a, b, NULL, NULL, 0) : TS_EINVAL;
}
static ts_status_t cpu_sub(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                           const ts_bk_batch_t *a, const ts_bk_batch_t *b)
{
    return b ? run_limbs(be, r, OP_SUB, o, a, b, NULL, NULL, 0) : TS_EINVAL;
}
static ts_status_t cpu_neg(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                           const ts_bk_batch_t *a)
{
    return o ? run_limbs(be, r, OP_NEG, o, a, NULL, NULL, NULL, 0) : TS_EINVAL;
}
static ts_status_t cpu_mul(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                           const ts_bk_batch_t *a, const ts_bk_batch_t *b)
{
    return b && o ? run_limbs(be, r, OP_MUL, o, a, b, NULL, NULL, 0) : TS_EINVAL;
}
static ts_status_t cpu_mul_add(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                               const ts_bk_batch_t *a, const ts_bk_batch_t *b)
{
    return b && o ? run_limbs(be, r, OP_MUL_ADD, o, a, b, NULL, NULL, 0) : TS_EINVAL;
}
static ts_status_t cpu_mul_shoup(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                 const ts_bk_batch_t *a, const ts_bk_batch_t *w,
                                 const ts_bk_batch_t *wp)
{
    return w && wp && o ? run_limbs(be, r, OP_MUL_SHOUP, o, a, w, wp, NULL, 0) : TS_EINVAL;
}
/* The element-wise ops with one reduced scalar per limb (b: a second operand or NULL). */
static ts_status_t run_scalar(ts_backend_t *be, const ts_bk_ring_t *r, int op,
                              const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                              const ts_bk_batch_t *b, const uint64_t *s)
{
    if (!s || !o || !a)
        return TS_EINVAL;
    for (uint32_t l = 0; r && l < a->nlimbs && a->mod_idx; l++)
        if (a->mod_idx[l] >= r->count || s[l] >= r->mods[a->mod_idx[l]].q)
            return TS_EINVAL;
    return run_limbs(be, r, op, o, a, b, NULL, s, 0);
}
static ts_status_t cpu_mul_scalar(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                  const ts_bk_batch_t *a, const uint64_t *s)
{
    return run_scalar(be, r, OP_MUL_SCALAR, o, a, NULL, s);
}
static ts_status_t cpu_mul_scalar_add(ts_backend_t *be, const ts_bk_ring_t *r,
                                      const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                      const uint64_t *s)
{
    return run_scalar(be, r, OP_MUL_SCALAR_ADD, o, a, NULL, s);
}
static ts_status_t cpu_sub_mul_scalar(ts_backend_t *be, const ts_bk_ring_t *r,
                                      const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                      const ts_bk_batch_t *b, const uint64_t *s)
{
    return b ? run_scalar(be, r, OP_SUB_MUL_SCALAR, o, a, b, s) : TS_EINVAL;
}
static ts_status_t cpu_add_scalar(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                  const ts_bk_batch_t *a, const uint64_t *s)
{
    return run_scalar(be, r, OP_ADD_SCALAR, o, a, NULL, s);
}
/* x and y (limbs of n words) share a word */
static bool overlaps(const ts_bk_batch_t *x, const ts_bk_batch_t *y, uint32_t n)
{
    return ts_bk_batch_overlaps(x, n, y, n);
}
/*
 * The source indices of X -> X^k in NTT form (the same formula as the per-slot
 * loop of limb_task), cached per ring; NULL when the cache is full or memory
 * is short (the caller then computes them per slot: the same words).
 */
static const uint32_t *auto_perm(const ts_bk_ring_t *rc, uint64_t k)
{
    ts_bk_ring_t *r = (ts_bk_ring_t *)rc; /* only the cache behind auto_lock changes */
    const uint64_t mask = 2 * (uint64_t)r->n - 1;
    k &= mask;
    const uint32_t *found = NULL;
    pthread_mutex_lock(&r->auto_lock);
    for (uint32_t i = 0; i < r->auto_count && !found; i++)
        if (r->auto_k[i] == k)
            found = r->auto_idx[i];
    if (!found && r->auto_count < AUTO_CACHE) {
        uint32_t *idx = malloc(sizeof(uint32_t) * r->n);
        if (idx) {
            const uint32_t *br = r->bitrev;
            for (uint32_t i = 0; i < r->n; i++) {
                uint64_t e = 2 * (uint64_t)br[i] + 1;
                idx[i] = br[((e * k) & mask) >> 1];
            }
            r->auto_k[r->auto_count] = k;
            r->auto_idx[r->auto_count++] = idx;
            found = idx;
        }
    }
    pthread_mutex_unlock(&r->auto_lock);
    return found;
}

static ts_status_t cpu_auto_ntt(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                const ts_bk_batch_t *a, uint64_t k)
{
    if (!o || !a || !r || !(k & 1) || overlaps(o, a, r->n))
        return TS_EINVAL;
    if (!be || !valid(r, a) || !valid(r, o) || !same_shape(o, a))
        return TS_EINVAL;
    job_t j = {.ring = r, .out = o, .a = a, .k = k, .op = OP_AUTO_NTT, .perm = auto_perm(r, k)};
    ts__pool_run(pool_of(be), (size_t)a->npolys * a->nlimbs, limb_task, &j);
    return TS_OK;
}
static ts_status_t cpu_auto_coeff(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                  const ts_bk_batch_t *a, uint64_t k)
{
    if (!o || !a || !r || !(k & 1) || overlaps(o, a, r->n))
        return TS_EINVAL;
    return run_limbs(be, r, OP_AUTO_COEFF, o, a, NULL, NULL, NULL, k);
}

/* ------------------------------------------------ basis conversion tasks */

#define CONV_CHUNK 512

static void conv_task(void *vj, size_t t)
{
    const job_t *j = vj;
    const uint32_t n = j->ring->n;
    const size_t chunks = (n + j->chunk - 1) / j->chunk;
    const size_t p = t / chunks, off = (t % chunks) * j->chunk;
    const size_t cnt = n - off < j->chunk ? n - off : j->chunk;
    const ts_rns_conv_t *c = j->conv->conv;
    if (j->op == 0) {
        ts_rns_conv_apply(c, limb_ptr(j->a, n, p, 0) + off, n, limb_ptr(j->out, n, p, 0) + off, n,
                          cnt);
    } else {
        ts_rns_conv_moddown(c, limb_ptr(j->a, n, p, 0) + off, n, limb_ptr(j->b, n, p, 0) + off,
                            limb_ptr(j->out, n, p, 0) + off, n, cnt);
    }
}

static bool conv_matches(const ts_bk_conv_t *c, const ts_bk_ring_t *r, const ts_bk_batch_t *from,
                         const ts_bk_batch_t *to)
{
    if (from->nlimbs != c->conv->na || to->nlimbs != c->conv->nb)
        return false;
    for (uint32_t i = 0; i < from->nlimbs; i++)
        if (r->mods[from->mod_idx[i]].q != c->conv->from[i].q)
            return false;
    for (uint32_t i = 0; i < to->nlimbs; i++)
        if (r->mods[to->mod_idx[i]].q != c->conv->to[i].q)
            return false;
    return true;
}

static ts_status_t cpu_basis_extend(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_conv_t *c,
                                    const ts_bk_batch_t *o, const ts_bk_batch_t *in)
{
    if (!r || !c || !valid(r, o) || !valid(r, in) || o->npolys != in->npolys ||
        !conv_matches(c, r, in, o) || overlaps(o, in, r->n))
        return TS_EINVAL;
    size_t chunk = r->n < CONV_CHUNK ? r->n : CONV_CHUNK;
    job_t j = {.ring = r, .out = o, .a = in, .conv = c, .chunk = chunk, .op = 0};
    ts__pool_run(pool_of(be), (size_t)in->npolys * ((r->n + chunk - 1) / chunk), conv_task, &j);
    return TS_OK;
}

static ts_status_t cpu_basis_reduce(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_conv_t *c,
                                    const ts_bk_batch_t *o, const ts_bk_batch_t *x_a,
                                    const ts_bk_batch_t *x_b)
{
    if (!r || !c || !valid(r, o) || !valid(r, x_a) || !valid(r, x_b) || !same_shape(o, x_b) ||
        x_a->npolys != o->npolys || !conv_matches(c, r, x_a, x_b) || overlaps(o, x_a, r->n))
        return TS_EINVAL;
    size_t chunk = r->n < CONV_CHUNK ? r->n : CONV_CHUNK;
    job_t j = {.ring = r, .out = o, .a = x_a, .b = x_b, .conv = c, .chunk = chunk, .op = 1};
    ts__pool_run(pool_of(be), (size_t)o->npolys * ((r->n + chunk - 1) / chunk), conv_task, &j);
    return TS_OK;
}

/* ------------------------------------------------- key-switch inner product */

#define KS_MAX_DIGITS 64

#define KS_BLOCK 128

/*
 * One output limb l of every output polynomial, in blocks of KS_BLOCK
 * coefficients: core/math's dot product over the digits (128-bit
 * accumulation, AVX-512 IFMA for q < 2^50: the unique reduced sum either
 * way), with a software prefetch of the next block of every stream.
 */
static void ks_task(void *vj, size_t l)
{
    const job_t *j = vj;
    const ts_bk_ring_t *r = j->ring;
    const uint32_t n = r->n;
    const ts_bk_batch_t *out = j->out, *dig = j->a, *key = j->b;
    const ts_modulus_t *m = &r->mods[out->mod_idx[l]];
    const uint32_t nd = dig->npolys, nout = out->npolys;
    /* spread digits (j->k = gap > 1): each block's words written out here */
    const uint32_t gap = j->k > 1 ? (uint32_t)j->k : 1;
    uint64_t spread[KS_MAX_DIGITS * KS_BLOCK]; /* 64 KiB of the worker's stack */
    const uint64_t *dp[KS_MAX_DIGITS], *kp[KS_MAX_DIGITS];
    for (uint32_t b0 = 0; b0 < n; b0 += KS_BLOCK) {
        const uint32_t cnt = n - b0 < KS_BLOCK ? n - b0 : KS_BLOCK;
        const bool more = b0 + KS_BLOCK < n;
        for (uint32_t d = 0; d < nd; d++) {
            if (gap == 1) {
                dp[d] = limb_ptr(dig, n, d, l) + b0;
                if (more)
                    for (uint32_t i = 0; i < KS_BLOCK; i += 8)
                        __builtin_prefetch(dp[d] + KS_BLOCK + i);
                continue;
            }
            const uint64_t *src =
                dig->data + d * dig->poly_stride + l * (size_t)(n / gap) + b0 / gap;
            uint64_t *dst = spread + (size_t)d * KS_BLOCK;
            if (gap >= cnt) { /* the block lies in one run (b0 and gap powers of two) */
                for (uint32_t i = 0; i < cnt; i++)
                    dst[i] = src[0];
            } else {
                for (uint32_t k = 0; k < cnt / gap; k++)
                    for (uint32_t t = 0; t < gap; t++)
                        dst[k * gap + t] = src[k];
            }
            dp[d] = dst;
        }
        for (uint32_t c = 0; c < nout; c++) {
            for (uint32_t d = 0; d < nd; d++) {
                kp[d] = limb_ptr(key, n, (size_t)d * nout + c, j->key_limb[l]) + b0;
                if (more)
                    for (uint32_t i = 0; i < KS_BLOCK; i += 8)
                        __builtin_prefetch(kp[d] + KS_BLOCK + i);
            }
            ts_vec_dot(limb_ptr(out, n, c, l) + b0, dp, kp, nd, cnt, m);
        }
    }
}

/*
 * keyswitch_inner with full (gap 1) or spread (gap > 1: n / gap words per
 * limb) digits: one argument check, every out limb's modulus the digits' and
 * the key's at key_limb.
 */
static ts_status_t ks_inner(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                            const ts_bk_batch_t *digits, const ts_bk_batch_t *key,
                            const uint32_t *key_limb, uint32_t gap)
{
    if (!r ||
        !ts_bk_keyswitch_args_valid(out, digits, key, key_limb, r->n, r->count, gap, KS_MAX_DIGITS))
        return TS_EINVAL;
    job_t j = {.ring = r, .out = out, .a = digits, .b = key, .key_limb = key_limb, .k = gap};
    ts__pool_run(pool_of(be), out->nlimbs, ks_task, &j);
    return TS_OK;
}

static ts_status_t cpu_keyswitch_inner(ts_backend_t *be, const ts_bk_ring_t *r,
                                       const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                       const ts_bk_batch_t *key, const uint32_t *key_limb)
{
    return ks_inner(be, r, out, digits, key, key_limb, 1);
}

static ts_status_t cpu_keyswitch_inner_spread(ts_backend_t *be, const ts_bk_ring_t *r,
                                              const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                              const ts_bk_batch_t *key, const uint32_t *key_limb,
                                              uint32_t gap)
{
    if (gap < 2) /* the full form has its own entry */
        return TS_EINVAL;
    return ks_inner(be, r, out, digits, key, key_limb, gap);
}

/* ntt_forward_compact: one limb of n / gap words per task. */
static void compact_task(void *vj, size_t t)
{
    const job_t *j = vj;
    const ts_bk_ring_t *r = j->ring;
    const ts_bk_batch_t *a = j->a;
    const uint32_t gap = (uint32_t)j->k;
    const size_t p = t / a->nlimbs, l = t % a->nlimbs;
    uint64_t *x = a->data + p * a->poly_stride + l * (size_t)(r->n / gap);
    /* gap checked by the caller: cannot fail */
    (void)ts_ntt_forward_compact(r->ntt[a->mod_idx[l]], gap, x, TS_NTT_IMPL_AUTO);
}

static ts_status_t cpu_ntt_fwd_compact(ts_backend_t *be, const ts_bk_ring_t *r,
                                       const ts_bk_batch_t *a, uint32_t gap)
{
    /* the spread contract checks gap >= 2, a power of two */
    if (!r || gap > r->n / 2 || !ts_bk_batch_valid_spread(a, r->n, r->count, gap))
        return TS_EINVAL;
    job_t j = {.ring = r, .a = a, .k = gap};
    ts__pool_run(pool_of(be), (size_t)a->npolys * a->nlimbs, compact_task, &j);
    return TS_OK;
}

/* spread_expand: one limb per task, word i = the spread limb's word i / gap */
static void expand_task(void *vj, size_t t)
{
    const job_t *j = vj;
    const ts_bk_batch_t *o = j->out, *a = j->a;
    const uint32_t n = j->ring->n, gap = (uint32_t)j->k, w = n / gap;
    const size_t p = t / o->nlimbs, l = t % o->nlimbs;
    uint64_t *d = o->data + p * o->poly_stride + l * (size_t)n;
    const uint64_t *x = a->data + p * a->poly_stride + l * (size_t)w;
    for (uint32_t h = 0; h < w; h++)
        for (uint32_t r = 0; r < gap; r++)
            d[(size_t)h * gap + r] = x[h];
}

static ts_status_t cpu_spread_expand(ts_backend_t *be, const ts_bk_ring_t *r,
                                     const ts_bk_batch_t *out, const ts_bk_batch_t *a, uint32_t gap)
{
    if (!r || !ts_bk_spread_expand_args_valid(out, a, r->n, r->count, gap))
        return TS_EINVAL;
    job_t j = {.ring = r, .out = out, .a = a, .k = gap};
    ts__pool_run(pool_of(be), (size_t)out->npolys * out->nlimbs, expand_task, &j);
    return TS_OK;
}

/* set_i64: one limb per task */
static void set_i64_task(void *vj, size_t l)
{
    const job_t *j = vj;
    const ts_bk_batch_t *o = j->out;
    const uint32_t n = j->ring->n;
    ts_vec_from_i64(o->data + l * (size_t)n, (const int64_t *)j->s, n,
                    &j->ring->mods[o->mod_idx[l]]);
}

static ts_status_t cpu_set_i64(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                               const int64_t *src)
{
    if (!r || !ts_bk_set_i64_args_valid(out, src, r->n, r->count))
        return TS_EINVAL;
    job_t j = {.ring = r, .out = out, .s = (const uint64_t *)src};
    ts__pool_run(pool_of(be), out->nlimbs, set_i64_task, &j);
    return TS_OK;
}

/* ------------------------------------------------------------ lifecycle */

static void cpu_free(ts_backend_t *be)
{
    if (!be)
        return;
    cpu_ctx_t *ctx = be->ctx;
    bool raw = ctx && ctx->raw;
    if (ctx)
        ts__pool_free(ctx->pool);
    if (raw) {
        free(ctx);
        free(be);
    } else {
        ts_free(ctx);
        ts_free(be);
    }
}

static const struct ts_backend_i cpu_iface = {
    .name = "cpu",
    .free = cpu_free,
    .buf_alloc = cpu_alloc,
    .buf_free = cpu_buf_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .synchronize = cpu_sync,
    .ring_new = cpu_ring_new,
    .ring_free = cpu_ring_free,
    .conv_new = cpu_conv_new,
    .conv_free = cpu_conv_free,
    .ntt_forward = cpu_ntt_fwd,
    .ntt_inverse = cpu_ntt_inv,
    .ntt_forward_sparse = cpu_ntt_fwd_sparse,
    .add = cpu_add,
    .sub = cpu_sub,
    .neg = cpu_neg,
    .mul = cpu_mul,
    .mul_add = cpu_mul_add,
    .mul_shoup = cpu_mul_shoup,
    .mul_scalar = cpu_mul_scalar,
    .add_scalar = cpu_add_scalar,
    .mul_scalar_add = cpu_mul_scalar_add,
    .sub_mul_scalar = cpu_sub_mul_scalar,
    .automorphism_ntt = cpu_auto_ntt,
    .automorphism_coeff = cpu_auto_coeff,
    .basis_extend = cpu_basis_extend,
    .basis_reduce = cpu_basis_reduce,
    .keyswitch_inner = cpu_keyswitch_inner,
    .keyswitch_inner_spread = cpu_keyswitch_inner_spread,
    .ntt_forward_compact = cpu_ntt_fwd_compact,
    .spread_expand = cpu_spread_expand,
    .set_i64 = cpu_set_i64,
    .external_product = NULL,
};

static ts_status_t cpu_new(int threads, bool raw, ts_backend_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (threads < 0)
        return TS_EINVAL;
    if (threads == 0)
        threads = ts_cpu_count();
    ts_backend_t *be = raw ? calloc(1, sizeof *be) : ts_calloc(1, sizeof *be);
    cpu_ctx_t *ctx = raw ? calloc(1, sizeof *ctx) : ts_calloc(1, sizeof *ctx);
    ts_status_t st = TS_ENOMEM;
    if (be && ctx)
        st = ts__pool_new(threads, raw, &ctx->pool);
    if (st != TS_OK) {
        if (raw) {
            free(be);
            free(ctx);
        } else {
            ts_free(be);
            ts_free(ctx);
        }
        return st;
    }
    ctx->raw = raw;
    be->iface = &cpu_iface;
    be->ctx = ctx;
    be->host_memory = true;
    be->threads = threads;
    *out = be;
    return TS_OK;
}

ts_status_t ts_backend_cpu_new(int threads, ts_backend_t **out)
{
    return cpu_new(threads, false, out);
}

ts_status_t ts__backend_cpu_new_raw(int threads, ts_backend_t **out)
{
    return cpu_new(threads, true, out);
}

/*
 * The default backend lives for the whole process. Its few bookkeeping blocks
 * come from the C library, not ts_malloc, so that creating it lazily inside a
 * test does not show up in ts_alloc_live() or consume an injected allocation
 * failure; a failed creation is retried on the next call.
 */
static ts_backend_t *default_backend;
static ts_backend_t *(*default_maker)(void);
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;

ts_status_t ts_backend_set_default_maker(ts_backend_t *(*make)(void))
{
    ts_status_t st = TS_OK;
    pthread_mutex_lock(&default_lock);
    if (default_backend)
        st = TS_EBUSY;
    else
        default_maker = make;
    pthread_mutex_unlock(&default_lock);
    return st;
}

ts_backend_t *ts_backend_default(void)
{
    ts_backend_t *be = __atomic_load_n(&default_backend, __ATOMIC_ACQUIRE);
    if (be)
        return be;
    pthread_mutex_lock(&default_lock);
    if (!default_backend && default_maker) {
        be = default_maker();
        if (be)
            __atomic_store_n(&default_backend, be, __ATOMIC_RELEASE);
    }
    if (!default_backend) {
        int threads = 0;
        const char *env = getenv("TS_THREADS");
        if (env) {
            char *end;
            long v = strtol(env, &end, 10);
            if (*end == '\0' && v >= 1 && v <= 1024)
                threads = (int)v;
        }
        if (cpu_new(threads, true, &be) == TS_OK)
            __atomic_store_n(&default_backend, be, __ATOMIC_RELEASE);
    }
    be = default_backend;
    pthread_mutex_unlock(&default_lock);
    return be;
}

void ts_backend_free(ts_backend_t *be)
{
    if (!be || be == default_backend)
        return;
    be->iface->free(be);
}
