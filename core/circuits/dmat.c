/*
 * Sparse matrices by diagonals, for the factors of the homomorphic DFT
 * (Chen-Chillotti-Song, Eurocrypt 2019, section 4: the special FFT as a
 * product of log2 n butterfly matrices with three diagonals each, merged
 * into fewer, denser factors to trade rotations for levels).
 */
#include <math.h>
#include <string.h>

#include "core/circuits/circuits_int.h"

ts_status_t ts__dmat_init(ts__dmat_t *m, size_t dim)
{
    memset(m, 0, sizeof(*m));
    m->dim = dim;
    m->pos = ts_malloc(sizeof(int32_t) * dim);
    if (!m->pos)
        return TS_ENOMEM;
    for (size_t i = 0; i < dim; i++)
        m->pos[i] = -1;
    return TS_OK;
}

void ts__dmat_clear(ts__dmat_t *m)
{
    if (!m)
        return;
    ts_free(m->off);
    ts_free(m->v);
    ts_free(m->pos);
    memset(m, 0, sizeof(*m));
}

/* The diagonal of offset o, created (zero) when absent; NULL on ENOMEM. */
static double complex *diag(ts__dmat_t *m, size_t o)
{
    if (m->pos[o] >= 0)
        return m->v + (size_t)m->pos[o] * m->dim;
    if (m->count == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 4;
        int64_t *off = ts_realloc(m->off, sizeof(int64_t) * cap);
        if (!off)
            return NULL;
        m->off = off;
        double complex *v = ts_realloc(m->v, sizeof(double complex) * cap * m->dim);
        if (!v)
            return NULL;
        m->v = v;
        m->cap = cap;
    }
    size_t k = m->count++;
    m->off[k] = (int64_t)o;
    m->pos[o] = (int32_t)k;
    double complex *d = m->v + k * m->dim;
    for (size_t r = 0; r < m->dim; r++)
        d[r] = 0;
    return d;
}

ts_status_t ts__dmat_add(ts__dmat_t *m, size_t row, size_t col, double complex val)
{
    size_t o = (col + m->dim - row) % m->dim;
    double complex *d = diag(m, o);
    if (!d)
        return TS_ENOMEM;
    d[row] += val;
    return TS_OK;
}

/* (A B)[r][r + a + b] += A[r][r + a] B[r + a][r + a + b] */
ts_status_t ts__dmat_mul(const ts__dmat_t *a, const ts__dmat_t *b, ts__dmat_t *out)
{
    if (a->dim != b->dim)
        return TS_EINVAL;
    size_t n = a->dim;
    ts_status_t st = ts__dmat_init(out, n);
    for (size_t i = 0; i < a->count && st == TS_OK; i++)
        for (size_t j = 0; j < b->count && st == TS_OK; j++) {
            size_t oa = (size_t)a->off[i], ob = (size_t)b->off[j];
            double complex *d = diag(out, (oa + ob) % n);
            if (!d) {
                st = TS_ENOMEM;
                break;
            }
            const double complex *da = a->v + i * n, *db = b->v + j * n;
            for (size_t r = 0; r < n; r++)
                d[r] += da[r] * db[(r + oa) % n];
        }
    return st;
}

void ts__dmat_prune(ts__dmat_t *m, double eps)
{
    size_t w = 0;
    for (size_t k = 0; k < m->count; k++) {
        const double complex *d = m->v + k * m->dim;
        bool keep = false;
        for (size_t r = 0; r < m->dim && !keep; r++)
            keep = cabs(d[r]) > eps;
        m->pos[m->off[k]] = -1;
        if (!keep)
            continue;
        if (w != k) {
            m->off[w] = m->off[k];
            memmove(m->v + w * m->dim, d, sizeof(double complex) * m->dim);
        }
        w++;
    }
    m->count = w;
    for (size_t k = 0; k < w; k++)
        m->pos[m->off[k]] = (int32_t)k;
}

void ts__dmat_scale(ts__dmat_t *m, double complex c)
{
    for (size_t i = 0; i < m->count * m->dim; i++)
        m->v[i] *= c;
}

size_t ts__dmat_n1(const ts__dmat_t *m)
{
    size_t stride = m->dim;
    for (size_t k = 0; k < m->count; k++) {
        size_t o = (size_t)m->off[k];
        if (o && (o & (0 - o)) < stride)
            stride = o & (0 - o);
    }
    size_t b = 1;
    while (b * b < m->count)
        b *= 2;
    size_t n1 = stride * b;
    return n1 > m->dim ? m->dim : n1;
}

/*
 * The butterfly of length len (half = len / 2) on blocks of len slots, with
 * w_j = exp(2 pi i (5^j mod 4 len) / 4 len):
 *   forward: (a, b) -> (a + w_j b, a - w_j b),
 *   inverse: (a, b) -> (a + b, conj(w_j) (a - b)).
 */
ts_status_t ts__dft_stage(int log_n, size_t n, size_t len, bool inverse, ts__dmat_t *out)
{
    (void)log_n;
    ts_status_t st = ts__dmat_init(out, n);
    size_t half = len / 2, four_len = 4 * len;
    const double pi = 3.14159265358979323846264338327950288;
    uint64_t pw = 1; /* 5^j mod 4 len */
    for (size_t j = 0; j < half && st == TS_OK; j++) {
        double ang = 2.0 * pi * (double)pw / (double)four_len;
        double complex w = cos(ang) + I * sin(ang);
        for (size_t i = 0; i < n && st == TS_OK; i += len) {
            size_t a = i + j, b = i + j + half;
            if (!inverse) {
                st = ts__dmat_add(out, a, a, 1.0);
                if (st == TS_OK)
                    st = ts__dmat_add(out, a, b, w);
                if (st == TS_OK)
                    st = ts__dmat_add(out, b, a, 1.0);
                if (st == TS_OK)
                    st = ts__dmat_add(out, b, b, -w);
            } else {
                st = ts__dmat_add(out, a, a, 1.0);
                if (st == TS_OK)
                    st = ts__dmat_add(out, a, b, 1.0);
                if (st == TS_OK)
                    st = ts__dmat_add(out, b, a, conj(w));
                if (st == TS_OK)
                    st = ts__dmat_add(out, b, b, -conj(w));
            }
        }
        pw = pw * 5 % four_len;
    }
    return st;
}
