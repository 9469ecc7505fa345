/*
 * Automorphisms X -> X^k (k odd) over npolys x nlimbs limbs, one thread per
 * word. NTT form is a gather (out[i] = a[src(i)], the slot permutation of
 * core/backend/cpu.c); coefficient form is a scatter with a sign (a[i] goes
 * to out[i k mod 2N], negated past N). out must not alias a.
 */
#include "gpu/gpu_cuda.cuh"

#define AUTO_THREADS 256

template <bool NTT>
__global__ void __launch_bounds__(AUTO_THREADS)
    auto_kernel(const tsg_limbs_t lm, uint32_t logn, tsg_arg_t out, tsg_arg_t a, uint64_t k,
                const tsg_mod_t *mods)
{
    const size_t total = tsg_total(&lm, logn);
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x)
        tsg_auto_thread(NTT ? 1 : 0, idx, &lm, logn, out, a, k, mods);
}

extern "C" ts_status_t ts__gpu_automorphism(tsg_dev_t *dev, const ts_bk_ring_t *r, bool ntt_form,
                                            const tsg_limbs_t *lm, tsg_arg_t out, tsg_arg_t a,
                                            uint64_t k)
{
    const size_t total = ((size_t)lm->npolys * lm->nlimbs) << r->logn;
    const unsigned blocks = tsg_blocks(total, AUTO_THREADS);
    if (ntt_form)
        auto_kernel<true>
            <<<blocks, AUTO_THREADS, 0, tsg_stream(dev)>>>(*lm, r->logn, out, a, k, r->d.mods);
    else
        auto_kernel<false>
            <<<blocks, AUTO_THREADS, 0, tsg_stream(dev)>>>(*lm, r->logn, out, a, k, r->d.mods);
    return tsg_check_launch(dev, "automorphism");
}
