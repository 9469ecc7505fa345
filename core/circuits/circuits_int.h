/*
 * core/circuits internals shared by the files of this module only.
 */
#ifndef TS_CIRCUITS_INT_H
#define TS_CIRCUITS_INT_H

#include <complex.h>

#include "core/circuits/circuits.h"

/*
 * A square matrix of dimension dim by its diagonals: diagonal k has offset
 * off[k] in [0, dim) and values v[k * dim + r] = M[r][(r + off[k]) mod dim].
 */
typedef struct ts__dmat {
    size_t dim, count, cap;
    int64_t *off;
    double complex *v;
    int32_t *pos; /* pos[offset] = k, or -1 */
} ts__dmat_t;

ts_status_t ts__dmat_init(ts__dmat_t *m, size_t dim);
void ts__dmat_clear(ts__dmat_t *m);
/* M[row][col] += val */
ts_status_t ts__dmat_add(ts__dmat_t *m, size_t row, size_t col, double complex val);
/* out = a * b (out is initialised here; it must not be a or b). */
ts_status_t ts__dmat_mul(const ts__dmat_t *a, const ts__dmat_t *b, ts__dmat_t *out);
/* Drop diagonals whose entries are all below eps in magnitude. */
void ts__dmat_prune(ts__dmat_t *m, double eps);
/* M *= c */
void ts__dmat_scale(ts__dmat_t *m, double complex c);

/*
 * One radix-2 stage of the special FFT on n slots of a ring of degree 2^log_n:
 * forward (ts__ckks_fft_fwd's butterfly of length len) or inverse
 * (ts__ckks_fft_inv's, without the final 1/n). out is initialised here.
 */
ts_status_t ts__dft_stage(int log_n, size_t n, size_t len, bool inverse, ts__dmat_t *out);

/* BSGS baby-step count for the diagonals of m (a power of two times their stride). */
size_t ts__dmat_n1(const ts__dmat_t *m);

#endif /* TS_CIRCUITS_INT_H */
