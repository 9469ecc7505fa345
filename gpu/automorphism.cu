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
    auto_kernel(tsg_limbs_t lm, uint32_t logn, tsg_arg_t out, tsg_arg_t a, uint64_t k,
                const tsg_mod_t *mods)
{
    const size_t total = ((size_t)lm.npolys * lm.nlimbs) << logn;
    const size_t nmask = ((size_t)1 << logn) - 1;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t t = idx >> logn;
        const uint32_t i = (uint32_t)(idx & nmask);
        const uint32_t p = (uint32_t)(t / lm.nlimbs), l = (uint32_t)(t - (size_t)p * lm.nlimbs);
        uint64_t *o = out.data + (size_t)p * out.stride + ((size_t)l << logn);
        const uint64_t *x = a.data + (size_t)p * a.stride + ((size_t)l << logn);
        if (NTT) {
            o[i] = x[tsg_auto_ntt_src(i, logn, k)];
        } else {
            int neg;
            const uint32_t d = tsg_auto_coeff_dst(i, logn, k, &neg);
            const uint64_t v = x[i];
            o[d] = neg ? tsg_neg(v, mods[lm.mi[l]].q) : v;
        }
    }
}

extern "C" ts_status_t ts__gpu_automorphism(tsg_dev_t *dev, const ts_bk_ring_t *r, bool ntt_form,
                                            const tsg_limbs_t *lm, tsg_arg_t out, tsg_arg_t a,
                                            uint64_t k)
{
    const size_t total = ((size_t)lm->npolys * lm->nlimbs) << r->logn;
    const unsigned blocks = tsg_blocks(total, AUTO_THREADS);
    if (ntt_form)
        auto_kernel<true>
            <<<blocks, AUTO_THREADS, 0, tsg_stream(dev)>>>(*lm, r->logn, out, a, k, r->d_mods);
    else
        auto_kernel<false>
            <<<blocks, AUTO_THREADS, 0, tsg_stream(dev)>>>(*lm, r->logn, out, a, k, r->d_mods);
    return tsg_check_launch(dev, "automorphism");
}
