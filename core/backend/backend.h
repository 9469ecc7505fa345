/*
 * core/backend — the compute backend interface: a table of functions over
 * polynomials resident in the backend's memory, at batch granularity
 * (ggml-backend style). The CPU backend here is the reference; gpu/ implements
 * the same table and must agree bit for bit (every op below has a unique
 * reduced result, so "bit-exact" is well defined).
 *
 * Memory model. A backend owns its memory: buf_alloc returns a pointer that is
 * only dereferenced by the backend (host memory for the CPU backend, device
 * memory for a GPU). upload/download move bytes across. `host_memory` tells
 * callers whether backend pointers are plain host pointers (CPU), which lets
 * the ring layer skip staging copies.
 *
 * Rings. ring_new registers a ring degree N and an ordered list of NTT primes
 * (the ring layer passes Q then P); the backend precomputes whatever it needs
 * (NTT tables, Shoup twiddles) and returns an opaque ts_bk_ring_t. Every op
 * names the moduli of its limbs by index into that list.
 *
 * Batches. ts_bk_batch_t describes npolys polynomials of nlimbs limbs each;
 * limb l of polynomial p is the N words at data + p * poly_stride + l * N, and
 * holds residues modulo the ring modulus mod_idx[l]. Inputs must be reduced
 * ([0, q)) unless an op says otherwise; every output is reduced. Element-wise
 * ops take batches of identical shape (npolys, nlimbs, mod_idx); out may alias
 * any input unless stated. NTT order and conventions are those of
 * core/math/math.h (bit-reversed evaluation order, psi = smallest primitive
 * 2N-th root).
 *
 * Threads. The CPU backend spreads each batch over a pool of worker threads
 * (size chosen at creation, default = cores, 1 = run on the caller) by
 * (polynomial, limb) pairs. Calls on one backend may come from several
 * threads; each call is synchronous for the CPU backend. A GPU backend may
 * queue work; `synchronize` waits for everything queued.
 *
 * Interface rules: plain C types only (no CUDA or SIMD types); optional
 * members are marked and may be NULL (the wrappers return TS_ENOTSUP then).
 */
#ifndef TS_BACKEND_H
#define TS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"
#include "core/math/math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_backend ts_backend_t;
typedef struct ts_bk_ring ts_bk_ring_t; /* backend-side tables of one ring */
typedef struct ts_bk_conv ts_bk_conv_t; /* backend-side basis conversion constants */

/* A batch of polynomials in backend memory (see the overview). */
typedef struct ts_bk_batch {
    uint64_t *data;          /* backend memory */
    uint32_t npolys;         /* >= 1 */
    uint32_t nlimbs;         /* >= 1 */
    size_t poly_stride;      /* words between polynomials, >= nlimbs * N */
    const uint32_t *mod_idx; /* host array of nlimbs ring-modulus indices */
} ts_bk_batch_t;

/*
 * Arguments of one batch of external products (TFHE blind rotation), for the
 * optional member `external_product`. acc (2 polys, coefficient form, one
 * modulus) is replaced by acc (x) ggsw: each of the 2 polys is decomposed in
 * base 2^log_base into `levels` signed digits, the 2*levels digit polys go to
 * NTT form and are multiplied with the 2*levels x 2 rows of ggsw (NTT form)
 * and summed; the result goes back to coefficient form. Filled in by core/tfhe.
 */
typedef struct ts_bk_extprod_args {
    ts_bk_batch_t acc;         /* npolys = 2 * count (count independent products) */
    const ts_bk_batch_t *ggsw; /* npolys = 2 * levels * 2 per product */
    uint32_t count;
    uint32_t log_base;
    uint32_t levels;
} ts_bk_extprod_args_t;

/*
 * The batch contract every backend enforces before touching memory (shared so
 * the CPU and GPU backends refuse exactly the same calls): data and mod_idx
 * set, npolys and nlimbs >= 1, poly_stride >= nlimbs * n, every mod_idx below
 * the ring's modulus count.
 */
bool ts_bk_batch_valid(const ts_bk_batch_t *x, uint32_t n, uint32_t count);
/* The same contract for a spread batch (keyswitch_inner_spread): every limb
 * holds n / gap words (gap a power of two, 2 <= gap <= n), poly_stride >=
 * nlimbs * n / gap. */
bool ts_bk_batch_valid_spread(const ts_bk_batch_t *x, uint32_t n, uint32_t count, uint32_t gap);
/* Same npolys, nlimbs and mod_idx: the shape element-wise ops require. */
bool ts_bk_batch_same_shape(const ts_bk_batch_t *x, const ts_bk_batch_t *y);
/* x (limbs of xw words) and y (limbs of yw words) share a word. */
bool ts_bk_batch_overlaps(const ts_bk_batch_t *x, size_t xw, const ts_bk_batch_t *y, size_t yw);
/*
 * The argument contracts of the ops below that take spread batches or host
 * arrays, shared like the batch contract (ring of n words per limb and
 * `count` moduli): keyswitch_inner (gap 1) and keyswitch_inner_spread (gap
 * >= 2; at most max_digits digits), spread_expand, set_i64.
 */
bool ts_bk_keyswitch_args_valid(const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                const ts_bk_batch_t *key, const uint32_t *key_limb, uint32_t n,
                                uint32_t count, uint32_t gap, uint32_t max_digits);
bool ts_bk_spread_expand_args_valid(const ts_bk_batch_t *out, const ts_bk_batch_t *a, uint32_t n,
                                    uint32_t count, uint32_t gap);
bool ts_bk_set_i64_args_valid(const ts_bk_batch_t *out, const int64_t *src, uint32_t n,
                              uint32_t count);

struct ts_backend_i {
    const char *name;
    /* Release everything; the backend pointer is invalid afterwards. */
    void (*free)(ts_backend_t *be);

    /* --- memory (bytes) */
    ts_status_t (*buf_alloc)(ts_backend_t *be, size_t bytes, void **out);
    void (*buf_free)(ts_backend_t *be, void *ptr); /* accepts NULL */
    ts_status_t (*upload)(ts_backend_t *be, void *dst, const void *src_host, size_t bytes);
    ts_status_t (*download)(ts_backend_t *be, void *dst_host, const void *src, size_t bytes);
    ts_status_t (*copy)(ts_backend_t *be, void *dst, const void *src, size_t bytes);
    ts_status_t (*zero)(ts_backend_t *be, void *dst, size_t bytes);
    ts_status_t (*synchronize)(ts_backend_t *be);

    /* --- rings and conversions */
    ts_status_t (*ring_new)(ts_backend_t *be, uint32_t n, const uint64_t *moduli, uint32_t count,
                            ts_bk_ring_t **out);
    void (*ring_free)(ts_backend_t *be, ts_bk_ring_t *ring);
    /* Conversion from the moduli from_idx[0..na) to to_idx[0..nb) (disjoint sets),
     * semantics of ts_rns_conv_t in core/math (centered HPS fast conversion). */
    ts_status_t (*conv_new)(ts_backend_t *be, ts_bk_ring_t *ring, const uint32_t *from_idx,
                            uint32_t na, const uint32_t *to_idx, uint32_t nb, ts_bk_conv_t **out);
    void (*conv_free)(ts_backend_t *be, ts_bk_conv_t *conv);

    /* --- NTT, in place over every limb of every poly */
    ts_status_t (*ntt_forward)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *a);
    ts_status_t (*ntt_inverse)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *a);

    /* --- element-wise: out = a op b */
    ts_status_t (*add)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                       const ts_bk_batch_t *a, const ts_bk_batch_t *b);
    ts_status_t (*sub)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                       const ts_bk_batch_t *a, const ts_bk_batch_t *b);
    ts_status_t (*neg)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                       const ts_bk_batch_t *a);
    /* out = a * b (pointwise; the NTT-form product) */
    ts_status_t (*mul)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                       const ts_bk_batch_t *a, const ts_bk_batch_t *b);
    /* out += a * b */
    ts_status_t (*mul_add)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                           const ts_bk_batch_t *a, const ts_bk_batch_t *b);
    /* out = a * w with w's Shoup constants wp (same shape as w: the precomputed
     * operand, e.g. a plaintext used many times) */
    ts_status_t (*mul_shoup)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                             const ts_bk_batch_t *a, const ts_bk_batch_t *w,
                             const ts_bk_batch_t *wp);
    /* out = a * s[l] in limb l (host array of nlimbs reduced scalars) */
    ts_status_t (*mul_scalar)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                              const ts_bk_batch_t *a, const uint64_t *s);
    /* out = a + s[l] on every word of limb l (a constant in NTT form) */
    ts_status_t (*add_scalar)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                              const ts_bk_batch_t *a, const uint64_t *s);

    /* --- automorphisms X -> X^k (k odd); out must not alias a */
    ts_status_t (*automorphism_ntt)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                    const ts_bk_batch_t *out, const ts_bk_batch_t *a, uint64_t k);
    ts_status_t (*automorphism_coeff)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                      const ts_bk_batch_t *out, const ts_bk_batch_t *a, uint64_t k);

    /* --- RNS basis extension and reduction (coefficient form)
     * extend: out (nlimbs = nb, moduli to_idx) = conv(in) (nlimbs = na), per poly.
     * reduce (ModDown): out_j = (x_b_j - conv(x_a)_j) * A^{-1} mod b_j; out may alias x_b. */
    ts_status_t (*basis_extend)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                const ts_bk_conv_t *conv, const ts_bk_batch_t *out,
                                const ts_bk_batch_t *in);
    ts_status_t (*basis_reduce)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                const ts_bk_conv_t *conv, const ts_bk_batch_t *out,
                                const ts_bk_batch_t *x_a, const ts_bk_batch_t *x_b);

    /*
     * --- key-switch inner product (NTT form):
     * out poly c (c < out->npolys, usually 2) = sum_{d < digits->npolys} digits_d * key_{d, c},
     * where key poly (d, c) is polynomial d * out->npolys + c of `key`, and the limb
     * of `key` matching out limb l is key_limb[l] (host array; lets a key made at the
     * top level serve lower levels). digits and out share nlimbs and mod_idx.
     */
    ts_status_t (*keyswitch_inner)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                   const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                   const ts_bk_batch_t *key, const uint32_t *key_limb);

    /*
     * --- optional (may be NULL): the forward NTT, in place, of limbs holding a
     * sparse polynomial a(X) = b(X^gap) (gap a power of two, 2 <= gap <= N/2):
     * the words at multiples of gap hold b, the others are not read (taken as
     * 0); the result is ntt_forward's for that a (core/math
     * ts_ntt_forward_sparse: an (N/gap)-point NTT and a spread). The ring layer
     * falls back to zeroing + ntt_forward when absent.
     */
    ts_status_t (*ntt_forward_sparse)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                      const ts_bk_batch_t *a, uint32_t gap);

    /*
     * --- optional (may be NULL): keyswitch_inner with spread digits: each limb
     * of `digits` holds n / gap words, word k standing for the gap equal words
     * k gap .. k gap + gap - 1 of the full limb (the NTT form of a sparse
     * polynomial b(X^gap'), as ntt_forward_sparse leaves it, stored once per
     * run of equal words: a plaintext of few slots in 1 / gap of the memory).
     * Same result as keyswitch_inner on the spread-out digits. Callers keep
     * full digits when the backend lacks it.
     */
    ts_status_t (*keyswitch_inner_spread)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                          const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                          const ts_bk_batch_t *key, const uint32_t *key_limb,
                                          uint32_t gap);

    /*
     * --- optional (may be NULL): ntt_forward_sparse kept compact: a is a
     * spread batch (each limb n / gap words, as keyswitch_inner_spread's
     * digits) holding b_k at word k on entry (coefficient form, the sparse
     * polynomial's nonzero coefficients in order) and, on exit, the one word
     * per run of the NTT form (core/math ts_ntt_forward_compact): a plaintext
     * of few slots made in 1 / gap of the memory and work.
     */
    ts_status_t (*ntt_forward_compact)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                       const ts_bk_batch_t *a, uint32_t gap);

    /*
     * --- optional (may be NULL): a spread batch written out in full: word i
     * of out's limb l (n words) = word i / gap of a's limb l (n / gap words,
     * as keyswitch_inner_spread's digits). After ntt_forward_compact it gives
     * ntt_forward_sparse's full NTT form, so a device encodes a plaintext of
     * few slots from 1 / gap of its words (core/ckks encode). out and a share
     * nlimbs and mod_idx and do not overlap.
     */
    ts_status_t (*spread_expand)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                 const ts_bk_batch_t *out, const ts_bk_batch_t *a, uint32_t gap);

    /*
     * --- optional (may be NULL): word i of out's limb l = src[i] mod q_l, src
     * n signed 64-bit words in backend memory (a small or centered-lifted
     * polynomial); out one polynomial. A device reduces them itself, so n
     * words cross instead of n per limb (core/ring ts_poly_set_i64 and the
     * samplers where memory is not the host's: ModRaise's lift, the floods).
     */
    ts_status_t (*set_i64)(ts_backend_t *be, const ts_bk_ring_t *ring, const ts_bk_batch_t *out,
                           const int64_t *src);

    /*
     * --- optional (may be NULL): out += a * s[l] in limb l (s as mul_scalar's):
     * mul_scalar into scratch and add, fused into one pass over out (the
     * leaves of a polynomial evaluation, sum c_i T_i). Callers fall back to
     * the two ops when the backend lacks it.
     */
    ts_status_t (*mul_scalar_add)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                  const ts_bk_batch_t *out, const ts_bk_batch_t *a,
                                  const uint64_t *s);
    /* --- optional (may be NULL): out = (a - b) * s[l] in limb l, one pass
     * (rescaling's and ModDown's last step; callers fall back to sub and
     * mul_scalar) */
    ts_status_t (*sub_mul_scalar)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                  const ts_bk_batch_t *out, const ts_bk_batch_t *a,
                                  const ts_bk_batch_t *b, const uint64_t *s);

    /* --- optional (may be NULL): TFHE external products, filled in later */
    ts_status_t (*external_product)(ts_backend_t *be, const ts_bk_ring_t *ring,
                                    const ts_bk_extprod_args_t *args);
};

/* A backend instance: its table and private state. */
/*
 * What went through a backend's wrappers (the ts_backend_* functions below):
 * calls of the compute ops (one kernel launch or more each on a GPU; the
 * memory ops not counted), uploads and downloads and their bytes. Updated
 * with relaxed atomics: totals for a benchmark, not a synchronization.
 */
typedef struct ts_backend_counts {
    uint64_t calls, uploads, upload_bytes, downloads, download_bytes;
} ts_backend_counts_t;

struct ts_backend {
    const struct ts_backend_i *iface;
    void *ctx;
    bool host_memory; /* backend pointers are host pointers */
    int threads;      /* worker threads (CPU), informational elsewhere */
    ts_backend_counts_t counts;
};

/* A snapshot of be's counts (zeros for NULL). */
void ts_backend_counts(const ts_backend_t *be, ts_backend_counts_t *out);
/* out = be's counts now minus `before` (a snapshot of the same backend). */
void ts_backend_counts_since(const ts_backend_t *be, const ts_backend_counts_t *before,
                             ts_backend_counts_t *out);

/*
 * The CPU backend (reference). threads = 0 means one per core (ts_cpu_count()),
 * 1 runs everything on the calling thread. [out] *out, freed with ts_backend_free.
 * TS_EINVAL for threads < 0, TS_ENOMEM.
 */
ts_status_t ts_backend_cpu_new(int threads, ts_backend_t **out);

/*
 * The device-memory emulation backend (core/backend/devemu.c): the CPU
 * backend's arithmetic (bit for bit) behind a GPU's memory model -
 * host_memory false, buffer addresses that fault when the host dereferences
 * them, fresh buffers poisoned, the GPU backend's optional ops only - so the
 * paths a GPU takes run, and host accesses to backend memory are caught, on
 * machines without one. A testing aid (TS_TEST_BACKEND=devemu); its
 * bookkeeping comes from the C library. threads as ts_backend_cpu_new.
 */
ts_status_t ts_backend_devemu_new(int threads, ts_backend_t **out);
bool ts_backend_is_devemu(const ts_backend_t *be);
/* True for the CUDA backend (gpu/): a real device, whose costs are a GPU's
 * (the device-memory emulation computes on the CPU: false). */
bool ts_backend_is_gpu(const ts_backend_t *be);

/*
 * The process-wide default CPU backend (threads from env TS_THREADS, else
 * one per core), created on first use, never freed by callers. Its
 * bookkeeping comes from the C library, not ts_malloc, so it never appears in
 * ts_alloc_live() nor consumes an injected allocation failure. NULL only when
 * creation failed (retried on the next call).
 */
ts_backend_t *ts_backend_default(void);

/*
 * Install a maker for the default backend: the first ts_backend_default() call
 * then uses make() instead of creating the CPU backend (and still creates the
 * CPU backend when make() returns NULL). This lets an outer layer (gpu/, the
 * daemon, a test runner) put every ring made with backend NULL (CKKS, RLWE,
 * ...) on another backend without core/ knowing it; the made backend lives
 * for the process. NULL removes the maker. TS_EBUSY once the default exists.
 */
ts_status_t ts_backend_set_default_maker(ts_backend_t *(*make)(void));

/* Release a backend made by *_new (not the default one). Accepts NULL. */
void ts_backend_free(ts_backend_t *be);

/* ---------------------------------------------------- inline wrappers */

static inline void ts__bk_count(uint64_t *c, uint64_t v)
{
    __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

#define TS__BK_CALL(be, member, ...)                                                               \
    (ts__bk_count(&(be)->counts.calls, 1),                                                         \
     (be)->iface->member ? (be)->iface->member((be), __VA_ARGS__) : TS_ENOTSUP)

static inline ts_status_t ts_backend_alloc(ts_backend_t *be, size_t bytes, void **out)
{
    return be->iface->buf_alloc(be, bytes, out);
}
static inline void ts_backend_buf_free(ts_backend_t *be, void *p)
{
    be->iface->buf_free(be, p);
}
static inline ts_status_t ts_backend_upload(ts_backend_t *be, void *dst, const void *src, size_t n)
{
    ts__bk_count(&be->counts.uploads, 1);
    ts__bk_count(&be->counts.upload_bytes, n);
    return be->iface->upload(be, dst, src, n);
}
static inline ts_status_t ts_backend_download(ts_backend_t *be, void *dst, const void *src,
                                              size_t n)
{
    ts__bk_count(&be->counts.downloads, 1);
    ts__bk_count(&be->counts.download_bytes, n);
    return be->iface->download(be, dst, src, n);
}
static inline ts_status_t ts_backend_copy(ts_backend_t *be, void *dst, const void *src, size_t n)
{
    return be->iface->copy(be, dst, src, n);
}
static inline ts_status_t ts_backend_zero(ts_backend_t *be, void *dst, size_t n)
{
    return be->iface->zero(be, dst, n);
}
static inline ts_status_t ts_backend_sync(ts_backend_t *be)
{
    return be->iface->synchronize(be);
}
static inline ts_status_t ts_backend_ntt_forward(ts_backend_t *be, const ts_bk_ring_t *r,
                                                 const ts_bk_batch_t *a)
{
    return TS__BK_CALL(be, ntt_forward, r, a);
}
static inline ts_status_t ts_backend_ntt_forward_sparse(ts_backend_t *be, const ts_bk_ring_t *r,
                                                        const ts_bk_batch_t *a, uint32_t gap)
{
    return TS__BK_CALL(be, ntt_forward_sparse, r, a, gap);
}
static inline ts_status_t ts_backend_ntt_inverse(ts_backend_t *be, const ts_bk_ring_t *r,
                                                 const ts_bk_batch_t *a)
{
    return TS__BK_CALL(be, ntt_inverse, r, a);
}
static inline ts_status_t ts_backend_add(ts_backend_t *be, const ts_bk_ring_t *r,
                                         const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                         const ts_bk_batch_t *b)
{
    return TS__BK_CALL(be, add, r, o, a, b);
}
static inline ts_status_t ts_backend_sub(ts_backend_t *be, const ts_bk_ring_t *r,
                                         const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                         const ts_bk_batch_t *b)
{
    return TS__BK_CALL(be, sub, r, o, a, b);
}
static inline ts_status_t ts_backend_neg(ts_backend_t *be, const ts_bk_ring_t *r,
                                         const ts_bk_batch_t *o, const ts_bk_batch_t *a)
{
    return TS__BK_CALL(be, neg, r, o, a);
}
static inline ts_status_t ts_backend_mul(ts_backend_t *be, const ts_bk_ring_t *r,
                                         const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                         const ts_bk_batch_t *b)
{
    return TS__BK_CALL(be, mul, r, o, a, b);
}
static inline ts_status_t ts_backend_mul_add(ts_backend_t *be, const ts_bk_ring_t *r,
                                             const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                             const ts_bk_batch_t *b)
{
    return TS__BK_CALL(be, mul_add, r, o, a, b);
}
static inline ts_status_t ts_backend_mul_shoup(ts_backend_t *be, const ts_bk_ring_t *r,
                                               const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                               const ts_bk_batch_t *w, const ts_bk_batch_t *wp)
{
    return TS__BK_CALL(be, mul_shoup, r, o, a, w, wp);
}
static inline ts_status_t ts_backend_mul_scalar(ts_backend_t *be, const ts_bk_ring_t *r,
                                                const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                                const uint64_t *s)
{
    return TS__BK_CALL(be, mul_scalar, r, o, a, s);
}
static inline ts_status_t ts_backend_ntt_forward_compact(ts_backend_t *be, const ts_bk_ring_t *r,
                                                         const ts_bk_batch_t *a, uint32_t gap)
{
    return TS__BK_CALL(be, ntt_forward_compact, r, a, gap);
}
static inline ts_status_t ts_backend_spread_expand(ts_backend_t *be, const ts_bk_ring_t *r,
                                                   const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                                   uint32_t gap)
{
    return TS__BK_CALL(be, spread_expand, r, o, a, gap);
}
static inline ts_status_t ts_backend_set_i64(ts_backend_t *be, const ts_bk_ring_t *r,
                                             const ts_bk_batch_t *o, const int64_t *src)
{
    return TS__BK_CALL(be, set_i64, r, o, src);
}
/* out = (a - b) * s, fused where the backend has it, else sub then mul_scalar. */
static inline ts_status_t ts_backend_sub_mul_scalar(ts_backend_t *be, const ts_bk_ring_t *r,
                                                    const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                                    const ts_bk_batch_t *b, const uint64_t *s)
{
    if (be->iface->sub_mul_scalar)
        return TS__BK_CALL(be, sub_mul_scalar, r, o, a, b, s);
    ts_status_t st = TS__BK_CALL(be, sub, r, o, a, b);
    return st == TS_OK ? TS__BK_CALL(be, mul_scalar, r, o, o, s) : st;
}
static inline ts_status_t ts_backend_mul_scalar_add(ts_backend_t *be, const ts_bk_ring_t *r,
                                                    const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                                    const uint64_t *s)
{
    return TS__BK_CALL(be, mul_scalar_add, r, o, a, s);
}
static inline ts_status_t ts_backend_add_scalar(ts_backend_t *be, const ts_bk_ring_t *r,
                                                const ts_bk_batch_t *o, const ts_bk_batch_t *a,
                                                const uint64_t *s)
{
    return TS__BK_CALL(be, add_scalar, r, o, a, s);
}
static inline ts_status_t ts_backend_automorphism_ntt(ts_backend_t *be, const ts_bk_ring_t *r,
                                                      const ts_bk_batch_t *o,
                                                      const ts_bk_batch_t *a, uint64_t k)
{
    return TS__BK_CALL(be, automorphism_ntt, r, o, a, k);
}
static inline ts_status_t ts_backend_automorphism_coeff(ts_backend_t *be, const ts_bk_ring_t *r,
                                                        const ts_bk_batch_t *o,
                                                        const ts_bk_batch_t *a, uint64_t k)
{
    return TS__BK_CALL(be, automorphism_coeff, r, o, a, k);
}
static inline ts_status_t ts_backend_basis_extend(ts_backend_t *be, const ts_bk_ring_t *r,
                                                  const ts_bk_conv_t *c, const ts_bk_batch_t *o,
                                                  const ts_bk_batch_t *in)
{
    return TS__BK_CALL(be, basis_extend, r, c, o, in);
}
static inline ts_status_t ts_backend_basis_reduce(ts_backend_t *be, const ts_bk_ring_t *r,
                                                  const ts_bk_conv_t *c, const ts_bk_batch_t *o,
                                                  const ts_bk_batch_t *x_a,
                                                  const ts_bk_batch_t *x_b)
{
    return TS__BK_CALL(be, basis_reduce, r, c, o, x_a, x_b);
}
static inline ts_status_t ts_backend_keyswitch_inner(ts_backend_t *be, const ts_bk_ring_t *r,
                                                     const ts_bk_batch_t *o,
                                                     const ts_bk_batch_t *digits,
                                                     const ts_bk_batch_t *key,
                                                     const uint32_t *key_limb)
{
    return TS__BK_CALL(be, keyswitch_inner, r, o, digits, key, key_limb);
}
static inline ts_status_t ts_backend_keyswitch_inner_spread(ts_backend_t *be, const ts_bk_ring_t *r,
                                                            const ts_bk_batch_t *o,
                                                            const ts_bk_batch_t *digits,
                                                            const ts_bk_batch_t *key,
                                                            const uint32_t *key_limb, uint32_t gap)
{
    return TS__BK_CALL(be, keyswitch_inner_spread, r, o, digits, key, key_limb, gap);
}
static inline ts_status_t ts_backend_external_product(ts_backend_t *be, const ts_bk_ring_t *r,
                                                      const ts_bk_extprod_args_t *args)
{
    return TS__BK_CALL(be, external_product, r, args);
}

#ifdef __cplusplus
}
#endif

#endif /* TS_BACKEND_H */
