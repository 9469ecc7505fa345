/*
 * Element-wise modular ops over npolys x nlimbs limbs: add, sub, neg, mul,
 * mul_add, mul_shoup, mul_scalar, add_scalar. One thread per word with a
 * grid-stride loop; the op is a template parameter, so each kernel is a
 * straight line of the matching tsg_ew case (gpu/gpu_kern.h). Reads and
 * writes of one word happen in one thread, so out may alias any input.
 */
#include "gpu/gpu_cuda.cuh"

#define EW_THREADS 256

template <int OP>
__global__ void __launch_bounds__(EW_THREADS)
    ew_kernel(tsg_limbs_t lm, uint32_t logn, tsg_arg_t out, tsg_arg_t a, tsg_arg_t b, tsg_arg_t c,
              const tsg_mod_t *mods)
{
    const size_t total = ((size_t)lm.npolys * lm.nlimbs) << logn;
    const size_t nmask = ((size_t)1 << logn) - 1;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t t = idx >> logn, i = idx & nmask;
        const uint32_t p = (uint32_t)(t / lm.nlimbs), l = (uint32_t)(t - (size_t)p * lm.nlimbs);
        const size_t lo = ((size_t)l << logn) + i;
        const tsg_mod_t *m = &mods[lm.mi[l]];
        uint64_t *o = out.data + (size_t)p * out.stride + lo;
        const uint64_t av = a.data[(size_t)p * a.stride + lo];
        const uint64_t ov = OP == TSG_OP_MUL_ADD ? *o : 0;
        const uint64_t bv = b.data ? b.data[(size_t)p * b.stride + lo] : 0;
        const uint64_t cv = c.data ? c.data[(size_t)p * c.stride + lo] : 0;
        *o = tsg_ew(OP, ov, av, bv, cv, m);
    }
}

/* Scalar ops: the limb's scalar (and Shoup constant) from the parameter block. */
template <int OP>
__global__ void __launch_bounds__(EW_THREADS)
    ew_scalar_kernel(tsg_limbs_t lm, uint32_t logn, tsg_arg_t out, tsg_arg_t a, tsg_scalars_t s,
                     const tsg_mod_t *mods)
{
    const size_t total = ((size_t)lm.npolys * lm.nlimbs) << logn;
    const size_t nmask = ((size_t)1 << logn) - 1;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t t = idx >> logn, i = idx & nmask;
        const uint32_t p = (uint32_t)(t / lm.nlimbs), l = (uint32_t)(t - (size_t)p * lm.nlimbs);
        const size_t lo = ((size_t)l << logn) + i;
        const tsg_mod_t *m = &mods[lm.mi[l]];
        const uint64_t av = a.data[(size_t)p * a.stride + lo];
        out.data[(size_t)p * out.stride + lo] = tsg_ew(OP, 0, av, s.v[l], s.vp[l], m);
    }
}

extern "C" ts_status_t ts__gpu_ew(tsg_dev_t *dev, const ts_bk_ring_t *r, int op,
                                  const tsg_limbs_t *lm, tsg_arg_t out, tsg_arg_t a, tsg_arg_t b,
                                  tsg_arg_t c, const tsg_scalars_t *s)
{
    const size_t total = ((size_t)lm->npolys * lm->nlimbs) << r->logn;
    const unsigned blocks = tsg_blocks(total, EW_THREADS);
    cudaStream_t st = tsg_stream(dev);
    const uint32_t logn = r->logn;
    switch (op) {
    case TSG_OP_ADD:
        ew_kernel<TSG_OP_ADD><<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d_mods);
        break;
    case TSG_OP_SUB:
        ew_kernel<TSG_OP_SUB><<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d_mods);
        break;
    case TSG_OP_NEG:
        ew_kernel<TSG_OP_NEG><<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d_mods);
        break;
    case TSG_OP_MUL:
        ew_kernel<TSG_OP_MUL><<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d_mods);
        break;
    case TSG_OP_MUL_ADD:
        ew_kernel<TSG_OP_MUL_ADD>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d_mods);
        break;
    case TSG_OP_MUL_SHOUP:
        ew_kernel<TSG_OP_MUL_SHOUP>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d_mods);
        break;
    case TSG_OP_MUL_SCALAR:
        ew_scalar_kernel<TSG_OP_MUL_SCALAR>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, *s, r->d_mods);
        break;
    case TSG_OP_ADD_SCALAR:
        ew_scalar_kernel<TSG_OP_ADD_SCALAR>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, *s, r->d_mods);
        break;
    default:
        return TS_EINVAL;
    }
    return tsg_check_launch(dev, "elementwise");
}
