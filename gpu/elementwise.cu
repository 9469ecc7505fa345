/*
 * Element-wise modular ops over npolys x nlimbs limbs: add, sub, neg, mul,
 * mul_add, mul_shoup, mul_scalar, add_scalar and the fused mul_scalar_add
 * and sub_mul_scalar, and set_i64 (signed words reduced into every limb).
 * One thread per word with a
 * grid-stride loop; the op is a template parameter, so each kernel is a
 * straight line of the matching tsg_ew case (gpu/gpu_kern.h). Reads and
 * writes of one word happen in one thread, so out may alias any input.
 */
#include "gpu/gpu_cuda.cuh"

#define EW_THREADS 256

template <int OP>
__global__ void __launch_bounds__(EW_THREADS)
    ew_kernel(const tsg_limbs_t lm, uint32_t logn, tsg_arg_t out, tsg_arg_t a, tsg_arg_t b,
              tsg_arg_t c, const tsg_mod_t *mods)
{
    const size_t total = tsg_total(&lm, logn);
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x)
        tsg_ew_thread(OP, idx, &lm, logn, out, a, b, c, mods);
}

/* Scalar ops: the limb's scalar (and Shoup constant) from the parameter block. */
template <int OP>
__global__ void __launch_bounds__(EW_THREADS)
    ew_scalar_kernel(const tsg_limbs_t lm, uint32_t logn, tsg_arg_t out, tsg_arg_t a,
                     const tsg_scalars_t s, const tsg_mod_t *mods)
{
    const size_t total = tsg_total(&lm, logn);
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x)
        tsg_ew_scalar_thread(OP, idx, &lm, logn, out, a, &s, mods);
}

/* The fused scalar ops (out += a s, out = (a - b) s): a second operand. */
template <int OP>
__global__ void __launch_bounds__(EW_THREADS)
    ew_scalar2_kernel(const tsg_limbs_t lm, uint32_t logn, tsg_arg_t out, tsg_arg_t a, tsg_arg_t b,
                      const tsg_scalars_t s, const tsg_mod_t *mods)
{
    const size_t total = tsg_total(&lm, logn);
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x)
        tsg_ew_scalar2_thread(OP, idx, &lm, logn, out, a, b, &s, mods);
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
        ew_kernel<TSG_OP_ADD><<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d.mods);
        break;
    case TSG_OP_SUB:
        ew_kernel<TSG_OP_SUB><<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d.mods);
        break;
    case TSG_OP_NEG:
        ew_kernel<TSG_OP_NEG><<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d.mods);
        break;
    case TSG_OP_MUL:
        ew_kernel<TSG_OP_MUL><<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d.mods);
        break;
    case TSG_OP_MUL_ADD:
        ew_kernel<TSG_OP_MUL_ADD>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d.mods);
        break;
    case TSG_OP_MUL_SHOUP:
        ew_kernel<TSG_OP_MUL_SHOUP>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, c, r->d.mods);
        break;
    case TSG_OP_MUL_SCALAR:
        ew_scalar_kernel<TSG_OP_MUL_SCALAR>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, *s, r->d.mods);
        break;
    case TSG_OP_ADD_SCALAR:
        ew_scalar_kernel<TSG_OP_ADD_SCALAR>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, *s, r->d.mods);
        break;
    case TSG_OP_MUL_SCALAR_ADD:
        ew_scalar2_kernel<TSG_OP_MUL_SCALAR_ADD>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, *s, r->d.mods);
        break;
    case TSG_OP_SUB_MUL_SCALAR:
        ew_scalar2_kernel<TSG_OP_SUB_MUL_SCALAR>
            <<<blocks, EW_THREADS, 0, st>>>(*lm, logn, out, a, b, *s, r->d.mods);
        break;
    default:
        return TS_EINVAL;
    }
    return tsg_check_launch(dev, "elementwise");
}

__global__ void __launch_bounds__(EW_THREADS)
    set_i64_kernel(const tsg_limbs_t lm, uint32_t logn, tsg_arg_t out, const int64_t *src,
                   const tsg_mod_t *mods)
{
    const size_t total = tsg_total(&lm, logn);
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x)
        tsg_set_i64_thread(idx, &lm, logn, out, src, mods);
}

extern "C" ts_status_t ts__gpu_set_i64(tsg_dev_t *dev, const ts_bk_ring_t *r, const tsg_limbs_t *lm,
                                       tsg_arg_t out, const int64_t *src)
{
    const size_t total = (size_t)lm->nlimbs << r->logn;
    const unsigned blocks = tsg_blocks(total, EW_THREADS);
    set_i64_kernel<<<blocks, EW_THREADS, 0, tsg_stream(dev)>>>(*lm, r->logn, out, src, r->d.mods);
    return tsg_check_launch(dev, "set_i64");
}
