/* Internals of core/math shared between its files. */
#ifndef TS_MATH_INT_H
#define TS_MATH_INT_H

#include "core/math/math.h"

/* AVX2 NTT kernels (math/ntt_avx2.c, compiled with -mavx2). */
void ts__ntt_forward_avx2(const ts_ntt_table_t *t, uint64_t *a);
void ts__ntt_inverse_avx2(const ts_ntt_table_t *t, uint64_t *a);
/* Pieces reused by the AVX-512 kernels (n >= 16): the forward stages of
 * distance 4, 2, 1 with the final reduction; the inverse stages of distance
 * 1, 2, 4; the last inverse stage with 1/N. */
void ts__ntt_forward_avx2_tail(const ts_ntt_table_t *t, uint64_t *a);
void ts__ntt_inverse_avx2_head(const ts_ntt_table_t *t, uint64_t *a);
void ts__ntt_inverse_avx2_last(const ts_ntt_table_t *t, uint64_t *a);

/* AVX-512 kernels (math/ntt_avx512.c, n >= 16; smaller n go to AVX2). */
void ts__ntt_forward_avx512(const ts_ntt_table_t *t, uint64_t *a);
void ts__ntt_inverse_avx512(const ts_ntt_table_t *t, uint64_t *a);

/* The spread of ts_ntt_forward_sparse: a[h gap + r] = a[h] for h < m, r < gap
 * (top down, in place), gap a power of two >= 8, or 2 or 4 with m a multiple
 * of 8: 64-byte stores (math/ntt_avx512.c; only when ts_cpu_has_avx512()). */
void ts__ntt_spread_avx512(uint64_t *a, uint32_t m, uint32_t gap);

/* AVX-512 HPS conversion (math/rns_avx512.c): n coefficients, 2 <= na <= 15;
 * moddown as in ts_rns_conv_moddown. Only when ts__rns_conv_avx512_built(). */
void ts__rns_conv_avx512(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride,
                         uint64_t *out, size_t out_stride, size_t n, bool moddown,
                         const uint64_t *x_b);
bool ts__rns_conv_avx512_built(void);
/* The same for one source prime (na = 1), n a multiple of 8. */
void ts__rns_conv1_avx512(const ts_rns_conv_t *c, const uint64_t *in, uint64_t *out,
                          size_t out_stride, size_t n, bool moddown, const uint64_t *x_b);

/* AVX-512 element-wise kernels (math/vecmod_avx512.c), n a multiple of 8;
 * products need q < 2^62. Only when ts__vec_avx512_built(). */
void ts__vec_avx512(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b, uint64_t s,
                    size_t n, const ts_modulus_t *m);
bool ts__vec_avx512_built(void);
void ts__vec_dot_avx512(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y,
                        size_t terms, size_t n, const ts_modulus_t *m);
/* The same for 2^50 <= q < 2^62 and at most 1024 terms (vecmod_avx512.c). */
void ts__vec_dot62_avx512(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y,
                          size_t terms, size_t n, const ts_modulus_t *m);
void ts__vec_from_i64_avx512(uint64_t *o, const int64_t *x, size_t n, const ts_modulus_t *m);
void ts__vec_center_lift_avx512(uint64_t *o, const uint64_t *x, size_t n, uint64_t p,
                                const ts_modulus_t *m);
void ts__vec_mul_round_shift_avx512(uint64_t *o, const uint64_t *x, size_t n, uint64_t m,
                                    unsigned s);

/* Portable kernels (math/ntt.c). */
void ts__ntt_forward_portable(const ts_ntt_table_t *t, uint64_t *a);
void ts__ntt_inverse_portable(const ts_ntt_table_t *t, uint64_t *a);

/* Little-endian multi-precision helpers (math/rns.c). */
/* r[0..w) = a[0..w) * b + carry-in 0; returns the carry-out word. */
uint64_t ts__mp_mul_word(uint64_t *r, const uint64_t *a, uint64_t b, uint32_t w);
/* a[0..w) += b[0..w); returns carry. */
uint64_t ts__mp_add(uint64_t *a, const uint64_t *b, uint32_t w);
/* a[0..w) -= b[0..w); returns borrow. */
uint64_t ts__mp_sub(uint64_t *a, const uint64_t *b, uint32_t w);
/* -1, 0, 1 */
int ts__mp_cmp(const uint64_t *a, const uint64_t *b, uint32_t w);

#endif
