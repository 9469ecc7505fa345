/*
 * Batched negacyclic NTT / inverse NTT over npolys x nlimbs limbs.
 *
 * One kernel launch per pass (one pass for N <= 2^12, two above, see the
 * schedule in gpu/gpu_kern.h): a block loads one tile of up to 4096 words of
 * one limb into shared memory, runs the pass's stages with a barrier between
 * stages (Harvey's lazy butterflies with the Shoup twiddles of core/math, so
 * intermediate values stay in [0, 4q) forward and [0, 2q) inverse), and
 * writes the tile back. blockIdx.x is the tile, blockIdx.y the (poly, limb)
 * pair. The forward transform's last pass reduces to [0, q); the inverse's
 * last pass is the stage with 1/N merged in, which reduces.
 *
 * The compact forward transform (ntt_forward_compact) is the same kernel on
 * M = 2^logm < N words per limb with the first M twiddles of each modulus's
 * N-point table (core/math ts_ntt_forward_compact: the prefix of the
 * bit-reversed table is the M-point table of psi^(N / M)): limbs are M
 * words apart, the tables still N apart (ntt_tables.logn). spread_expand
 * then writes such a limb out in full (word i from word i / gap), which
 * completes the sparse transform: one thread per output word.
 */
#include "gpu/gpu_cuda.cuh"

#define NTT_THREADS 256

struct ntt_tables {
    const tsg_mod_t *mods;
    const uint64_t *tw, *tw_sh; /* fwd or inv tables, modulus i at i << logn */
    uint32_t logn;              /* the ring's (the tables'); the pass's may be less */
};

template <bool INV>
__global__ void __launch_bounds__(NTT_THREADS)
    ntt_pass_kernel(const tsg_ntt_pass_t pass_arg, tsg_arg_t a, tsg_limbs_t lm, uint32_t pl0,
                    ntt_tables tab, int first, int last)
{
    extern __shared__ uint64_t sh[];
    const tsg_ntt_pass_t pass = pass_arg; /* a local copy the inlined helpers can address */
    const uint32_t pl = pl0 + blockIdx.y;
    const uint32_t p = pl / lm.nlimbs, l = pl - p * lm.nlimbs;
    const uint32_t mi = lm.mi[l];
    const uint32_t logn = pass.logn;
    uint64_t *x = a.data + (size_t)p * a.stride + ((size_t)l << logn);
    const tsg_mod_t m = tab.mods[mi];
    const uint64_t q = m.q;
    const uint64_t *w = tab.tw + ((size_t)mi << tab.logn),
                   *wsh = tab.tw_sh + ((size_t)mi << tab.logn);
    const uint32_t b = blockIdx.x;
    const uint32_t tile = 1u << pass.log_tile, half = tile >> 1;

    for (uint32_t e = threadIdx.x; e < tile; e += blockDim.x) {
        uint64_t v = x[tsg_ntt_elem(&pass, b, e)];
        if (INV && first)
            v = tsg_reduce_4q_2q(v, q);
        sh[e] = v;
    }
    __syncthreads();
    if (!INV) {
        for (uint32_t s = pass.s0; s < pass.s1; s++) {
            for (uint32_t t = threadIdx.x; t < half; t += blockDim.x) {
                uint32_t ex, ey;
                const uint32_t wi = tsg_ntt_bfly(&pass, b, s, t, &ex, &ey);
                tsg_ct_bfly(&sh[ex], &sh[ey], __ldg(&w[wi]), __ldg(&wsh[wi]), q);
            }
            __syncthreads();
        }
    } else {
        for (uint32_t s = pass.s1; s-- > pass.s0;) {
            for (uint32_t t = threadIdx.x; t < half; t += blockDim.x) {
                uint32_t ex, ey;
                const uint32_t wi = tsg_ntt_bfly(&pass, b, s, t, &ex, &ey);
                if (s == 0)
                    tsg_gs_last(&sh[ex], &sh[ey], &m);
                else
                    tsg_gs_bfly(&sh[ex], &sh[ey], __ldg(&w[wi]), __ldg(&wsh[wi]), q);
            }
            __syncthreads();
        }
    }
    for (uint32_t e = threadIdx.x; e < tile; e += blockDim.x) {
        uint64_t v = sh[e];
        if (!INV && last)
            v = tsg_reduce_4q(v, q);
        x[tsg_ntt_elem(&pass, b, e)] = v;
    }
}

extern "C" ts_status_t ts__gpu_ntt(tsg_dev_t *dev, const ts_bk_ring_t *r, tsg_arg_t a,
                                   const tsg_limbs_t *lm, bool inverse, uint32_t logm)
{
    if (logm < 1 || logm > r->logn || (inverse && logm != r->logn))
        return TS_EINVAL; /* the inverse's last stage holds N^-1: full size only */
    tsg_ntt_pass_t passes[TSG_NTT_MAX_PASSES];
    const uint32_t np = tsg_ntt_plan(logm, passes);
    ntt_tables tab = {r->d.mods, inverse ? r->d.inv : r->d.fwd, inverse ? r->d.inv_sh : r->d.fwd_sh,
                      r->logn};
    const uint32_t pairs = lm->npolys * lm->nlimbs;
    cudaStream_t st = tsg_stream(dev);
    for (uint32_t k = 0; k < np; k++) {
        /* forward: passes 0, 1; inverse: passes np-1 .. 0 */
        const uint32_t pi = inverse ? np - 1 - k : k;
        const tsg_ntt_pass_t pass = passes[pi];
        const uint32_t tile = 1u << pass.log_tile;
        const unsigned threads = tile / 2 < NTT_THREADS ? (tile / 2 ? tile / 2 : 1) : NTT_THREADS;
        const size_t smem = (size_t)tile * sizeof(uint64_t);
        const int first = k == 0, last = k == np - 1;
        for (uint32_t pl0 = 0; pl0 < pairs; pl0 += 65535) {
            const uint32_t cnt = pairs - pl0 < 65535 ? pairs - pl0 : 65535;
            dim3 grid(pass.ntiles, cnt);
            if (inverse)
                ntt_pass_kernel<true>
                    <<<grid, threads, smem, st>>>(pass, a, *lm, pl0, tab, first, last);
            else
                ntt_pass_kernel<false>
                    <<<grid, threads, smem, st>>>(pass, a, *lm, pl0, tab, first, last);
            ts_status_t s = tsg_check_launch(dev, inverse ? "ntt_inverse" : "ntt_forward");
            if (s != TS_OK)
                return s;
        }
    }
    return TS_OK;
}

#define EXPAND_THREADS 256

__global__ void __launch_bounds__(EXPAND_THREADS)
    expand_kernel(const tsg_limbs_t lm, uint32_t logn, uint32_t lg, tsg_arg_t out, tsg_arg_t a)
{
    const size_t total = tsg_total(&lm, logn);
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x)
        tsg_expand_thread(idx, &lm, logn, lg, out, a);
}

extern "C" ts_status_t ts__gpu_spread_expand(tsg_dev_t *dev, const ts_bk_ring_t *r,
                                             const tsg_limbs_t *lm, tsg_arg_t out, tsg_arg_t a,
                                             uint32_t lg)
{
    const size_t total = ((size_t)lm->npolys * lm->nlimbs) << r->logn;
    const unsigned blocks = tsg_blocks(total, EXPAND_THREADS);
    expand_kernel<<<blocks, EXPAND_THREADS, 0, tsg_stream(dev)>>>(*lm, r->logn, lg, out, a);
    return tsg_check_launch(dev, "spread_expand");
}
