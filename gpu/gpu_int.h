/*
 * Internals of gpu/ shared between its C and CUDA files (plain C types only).
 *
 * gpu/backend.c holds the ts_backend_i table, argument validation (the same
 * checks as the CPU backend, so both reject the same calls) and the host-side
 * precomputation; gpu/runtime.cu holds the device, its stream and the memory
 * pool; each op family has its launcher in its own .cu file.
 */
#ifndef TS_GPU_INT_H
#define TS_GPU_INT_H

#include "core/backend/backend.h"
#include "gpu/gpu.h"
#include "gpu/gpu_kern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One device: its stream, memory pool and health (gpu/runtime.cu). */
typedef struct tsg_dev tsg_dev_t;

struct ts_bk_ring {
    uint32_t n, logn, count;
    ts_modulus_t *mods; /* host copies, for validation */
    /* device tables, one allocation: mods[count], then fwd, fwd_sh, inv, inv_sh
     * (count x N words each, table of modulus i at i * N) */
    void *d_blob;
    tsg_ring_tables_t d; /* pointers into d_blob (tsg_ring_view) */
};

struct ts_bk_conv {
    uint32_t na, nb;
    uint64_t from_q[TS_RNS_MAX_MODULI], to_q[TS_RNS_MAX_MODULI]; /* for validation */
    void *d_blob;
    tsg_conv_t view; /* pointers into d_blob */
};

/* --- runtime (gpu/runtime.cu) */
ts_status_t ts__gpu_dev_new(int device, tsg_dev_t **out, char *why, size_t why_size);
void ts__gpu_dev_free(tsg_dev_t *dev);
/* Make the device current for this thread; TS_EDEVICE when unhealthy. */
ts_status_t ts__gpu_enter(tsg_dev_t *dev);
bool ts__gpu_healthy(const tsg_dev_t *dev);
ts_status_t ts__gpu_alloc(tsg_dev_t *dev, size_t bytes, void **out);
void ts__gpu_free(tsg_dev_t *dev, void *ptr);
ts_status_t ts__gpu_upload(tsg_dev_t *dev, void *dst, const void *src, size_t bytes);
ts_status_t ts__gpu_download(tsg_dev_t *dev, void *dst, const void *src, size_t bytes);
ts_status_t ts__gpu_copy(tsg_dev_t *dev, void *dst, const void *src, size_t bytes);
ts_status_t ts__gpu_zero(tsg_dev_t *dev, void *dst, size_t bytes);
ts_status_t ts__gpu_sync(tsg_dev_t *dev);
/* Bytes in use and cached by the pool, and its cap. */
void ts__gpu_pool_stats(tsg_dev_t *dev, size_t *in_use, size_t *cached, size_t *cap);

/* --- kernels; every launcher checks the launch and returns TS_EDEVICE on error */
/* ntt.cu: in place over npolys x nlimbs limbs of 2^logm words: logm = the
 * ring's logn, or (forward only) less for the compact transform of
 * ntt_forward_compact */
ts_status_t ts__gpu_ntt(tsg_dev_t *dev, const ts_bk_ring_t *r, tsg_arg_t a, const tsg_limbs_t *lm,
                        bool inverse, uint32_t logm);
/* ntt.cu: out (full limbs) word i = a's (limbs of N / 2^lg words) word i >> lg */
ts_status_t ts__gpu_spread_expand(tsg_dev_t *dev, const ts_bk_ring_t *r, const tsg_limbs_t *lm,
                                  tsg_arg_t out, tsg_arg_t a, uint32_t lg);
/* elementwise.cu: op is TSG_OP_*; b, c unused (NULL data) where the op has none */
ts_status_t ts__gpu_ew(tsg_dev_t *dev, const ts_bk_ring_t *r, int op, const tsg_limbs_t *lm,
                       tsg_arg_t out, tsg_arg_t a, tsg_arg_t b, tsg_arg_t c,
                       const tsg_scalars_t *s);
/* elementwise.cu: out (one poly, lm->nlimbs limbs) word i = src[i] mod q_l */
ts_status_t ts__gpu_set_i64(tsg_dev_t *dev, const ts_bk_ring_t *r, const tsg_limbs_t *lm,
                            tsg_arg_t out, const int64_t *src);
/* automorphism.cu */
ts_status_t ts__gpu_automorphism(tsg_dev_t *dev, const ts_bk_ring_t *r, bool ntt_form,
                                 const tsg_limbs_t *lm, tsg_arg_t out, tsg_arg_t a, uint64_t k);
/* basis.cu: moddown = false: out = conv(in); true: out = (x_b - conv(in)) A^{-1} */
ts_status_t ts__gpu_conv(tsg_dev_t *dev, const ts_bk_ring_t *r, const ts_bk_conv_t *c,
                         uint32_t npolys, tsg_arg_t out, tsg_arg_t in, tsg_arg_t x_b, bool moddown);
/* keyswitch.cu: out has lm->npolys polys (the components), digits nd polys,
 * full (lg = 0) or spread (gap 2^lg, keyswitch_inner_spread) */
ts_status_t ts__gpu_keyswitch(tsg_dev_t *dev, const ts_bk_ring_t *r, const tsg_limbs_t *lm,
                              tsg_arg_t out, tsg_arg_t digits, uint32_t nd, tsg_arg_t key,
                              const tsg_limbs_t *key_limb, uint32_t lg);

#ifdef __cplusplus
}
#endif

#endif
