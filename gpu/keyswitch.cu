/*
 * Key-switch inner product in NTT form: out poly c, limb l, word i =
 * sum_d digits[d][l][i] * key[d * nout + c][key_limb[l]][i] mod q_l, one thread
 * per output word, a 128-bit accumulator reduced every 15 terms
 * (tsg_ks_elem). Reads of digit d are coalesced across the warp. Spread
 * digits (lg > 0, keyswitch_inner_spread) hold one word per run of 2^lg:
 * thread i reads word i >> lg, so a warp reads 32 >> lg words (one for
 * lg >= 5) of each digit, 1 / 2^lg of the full form's traffic.
 */
#include "gpu/gpu_cuda.cuh"

#define KS_THREADS 256

__global__ void __launch_bounds__(KS_THREADS)
    ks_kernel(const tsg_limbs_t lm, uint32_t logn, uint32_t lg, tsg_arg_t out, tsg_arg_t dig,
              uint32_t nd, tsg_arg_t key, const tsg_limbs_t klm, const tsg_mod_t *mods)
{
    const size_t total = tsg_total(&lm, logn);
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x)
        tsg_ks_thread(idx, &lm, logn, lg, out, dig, nd, key, &klm, mods);
}

extern "C" ts_status_t ts__gpu_keyswitch(tsg_dev_t *dev, const ts_bk_ring_t *r,
                                         const tsg_limbs_t *lm, tsg_arg_t out, tsg_arg_t digits,
                                         uint32_t nd, tsg_arg_t key, const tsg_limbs_t *key_limb,
                                         uint32_t lg)
{
    const size_t total = ((size_t)lm->npolys * lm->nlimbs) << r->logn;
    const unsigned blocks = tsg_blocks(total, KS_THREADS);
    ks_kernel<<<blocks, KS_THREADS, 0, tsg_stream(dev)>>>(*lm, r->logn, lg, out, digits, nd, key,
                                                          *key_limb, r->d.mods);
    return tsg_check_launch(dev, lg ? "keyswitch_inner_spread" : "keyswitch_inner");
}
