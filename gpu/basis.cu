/*
 * RNS basis extension and reduction (HPS fast conversion, the semantics of
 * ts_rns_conv_apply / ts_rns_conv_moddown in core/math/rns.c). One thread per
 * coefficient, a block of BASIS_THREADS coefficients of one polynomial: the
 * thread computes y_i for every source limb into shared memory (y[i][thread],
 * conflict-free) together with the double-precision sum that gives v, then
 * one output limb after the other (tsg_conv_out). The floating-point steps
 * use the rounded intrinsics of tsg_f64_mul_add so v equals the CPU's v.
 */
#include "gpu/gpu_cuda.cuh"

#define BASIS_THREADS 128

__global__ void __launch_bounds__(BASIS_THREADS)
    basis_kernel(const tsg_conv_t c, uint32_t logn, tsg_arg_t out, tsg_arg_t in, tsg_arg_t xb,
                 int moddown)
{
    extern __shared__ uint64_t ys[]; /* na x blockDim.x */
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (1u << logn))
        return; /* no barrier in this kernel: a thread reads only its own column */
    tsg_conv_thread(&c, logn, blockIdx.y, i, out, in, xb, moddown, ys + threadIdx.x, blockDim.x);
}

extern "C" ts_status_t ts__gpu_conv(tsg_dev_t *dev, const ts_bk_ring_t *r, const ts_bk_conv_t *c,
                                    uint32_t npolys, tsg_arg_t out, tsg_arg_t in, tsg_arg_t x_b,
                                    bool moddown)
{
    const size_t smem = (size_t)c->na * BASIS_THREADS * sizeof(uint64_t);
    if (smem > 48 * 1024) { /* opt in to more than 48 KiB of dynamic shared memory */
        ts_status_t s =
            tsg_check(dev,
                      cudaFuncSetAttribute(basis_kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      "basis shared memory");
        if (s != TS_OK)
            return s;
    }
    const uint32_t n = r->n;
    for (uint32_t p0 = 0; p0 < npolys; p0 += 65535) {
        const uint32_t cnt = npolys - p0 < 65535 ? npolys - p0 : 65535;
        tsg_arg_t o = {out.data + (size_t)p0 * out.stride, out.stride};
        tsg_arg_t a = {in.data + (size_t)p0 * in.stride, in.stride};
        tsg_arg_t b = {x_b.data ? x_b.data + (size_t)p0 * x_b.stride : NULL, x_b.stride};
        dim3 grid((n + BASIS_THREADS - 1) / BASIS_THREADS, cnt);
        basis_kernel<<<grid, BASIS_THREADS, smem, tsg_stream(dev)>>>(c->view, r->logn, o, a, b,
                                                                     moddown ? 1 : 0);
        ts_status_t s = tsg_check_launch(dev, moddown ? "basis_reduce" : "basis_extend");
        if (s != TS_OK)
            return s;
    }
    return TS_OK;
}
