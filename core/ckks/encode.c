/*
 * Encoding slot vectors to RNS coefficient limbs and back.
 *
 * encode: z (n slots) -> u = special inverse FFT(z) -> m_{k g} = round(Re u_k * scale),
 * m_{(k + n) g} = round(Im u_k * scale), g = N / (2n), every other coefficient 0;
 * each integer coefficient is reduced modulo q_0..q_l exactly (ts__ckks_double_mod).
 * decode: the exact centered CRT lift of each used coefficient over Q_l
 * (core/math ts_rns_compose_ld), divided by the scale, then the special FFT.
 */
#include <math.h>
#include <string.h>

#include "core/ckks/ckks_int.h"

static bool pow2(size_t x)
{
    return x && !(x & (x - 1));
}

/* How encode_limbs lays out a sparse encoding's coefficients. */
enum {
    LAYOUT_FULL,    /* every coefficient of every limb */
    LAYOUT_GRID,    /* only the coefficients k gap (for ts_poly_ntt_sparse, which reads no other) */
    LAYOUT_COMPACT, /* coefficient k gap at word k: limbs of 2 slots words (for
                     * ntt_forward_compact); TS_ENOTSUP unless every coefficient
                     * is below 2^62 (the caller then encodes the full form) */
};

/* The encoding with an optional small error err[0..N) added to every
 * coefficient (the fused encode+encrypt): the residues of m + e, the same
 * words as adding e mod q_l to the residues of m. layout (GRID and COMPACT
 * with err NULL): see above. */
static ts_status_t encode_limbs(const ts_ckks_params_t *p, const double complex *vals,
                                const double *reals, size_t count, size_t slots, double scale,
                                int level, uint32_t np, uint64_t *limbs, size_t limb_stride,
                                double complex *scratch, const int64_t *err, int layout)
{
    const bool grid_only = layout != LAYOUT_FULL;
    /* the moduli of limbs 0..nl-1: q_0..q_level, then np P primes */
    const int nl = level + 1 + (int)np;
    const ts_modulus_t *mods[TS_CKKS_MAX_Q + TS_CKKS_MAX_P];
    size_t n = p->n;
    if (!pow2(slots) || slots > n / 2 || count > slots || level < 0 || (size_t)level >= p->nq)
        return TS_EINVAL;
    if (!(scale >= 1.0) || !isfinite(scale))
        return TS_ESCALE;
    if (np > p->np || (np && err) || (grid_only && err))
        return TS_EINVAL;
    for (int l = 0; l < nl; l++)
        mods[l] = l <= level
                      ? &p->qmod[l]
                      : ts_ring_modulus(p->ring, (uint32_t)(p->nq + (size_t)(l - level - 1)));
    for (size_t i = 0; i < count; i++) {
        double complex v = vals ? vals[i] : reals[i];
        if (!isfinite(creal(v)) || !isfinite(cimag(v)))
            return TS_EINVAL;
        scratch[i] = v;
    }
    for (size_t i = count; i < slots; i++)
        scratch[i] = 0;
    ts__ckks_fft_inv(p, scratch, slots);

    /* |coefficient| must stay below Q_l / 2 to be representable (inf > any limit) */
    double limit_log2 = p->logq_prefix[level] - 1.0;
    double limit = limit_log2 >= 1023 ? INFINITY : exp2(limit_log2);
    bool small = true;
    for (size_t i = 0; i < slots; i++) {
        double re = round(creal(scratch[i]) * scale), im = round(cimag(scratch[i]) * scale);
        if (!(fabs(re) < limit) || !(fabs(im) < limit) || !isfinite(re) || !isfinite(im))
            return TS_ERANGE;
        small = small && fabs(re) < 0x1p62 && fabs(im) < 0x1p62;
        scratch[i] = re + I * im;
    }
    size_t gap = n / (2 * slots);
    if (small && grid_only && gap != 1) {
        /* stage the 2 slots integers compactly at the head of the last limb,
         * reduce them per prime into the head of each limb (the last one in
         * place), then move each limb's head out to the multiples of gap (top
         * down: a destination k gap >= k only holds heads already moved) */
        const size_t m = 2 * slots;
        int64_t *c = (int64_t *)(limbs + (size_t)(nl - 1) * limb_stride);
        for (size_t k = 0; k < slots; k++) {
            c[k] = (int64_t)creal(scratch[k]);
            c[k + slots] = (int64_t)cimag(scratch[k]);
        }
        for (int l = 0; l < nl; l++) {
            uint64_t *d = limbs + (size_t)l * limb_stride;
            ts_vec_from_i64(d, c, m, mods[l]);
            for (size_t k = m; layout == LAYOUT_GRID && k-- > 1;)
                d[k * gap] = d[k];
        }
        return TS_OK;
    }
    if (layout == LAYOUT_COMPACT) /* a coefficient beyond 2^62 */
        return TS_ENOTSUP;
    if (small) {
        /* every coefficient (plus its error, |e| < 2^62) fits in an int64:
         * stage them in the last limb, then one vector reduction per prime
         * (the last limb in place) */
        int64_t *c = (int64_t *)(limbs + (size_t)(nl - 1) * limb_stride);
        if (gap != 1)
            memset(c, 0, n * sizeof(int64_t));
        for (size_t k = 0; k < slots; k++) {
            c[k * gap] = (int64_t)creal(scratch[k]);
            c[(k + slots) * gap] = (int64_t)cimag(scratch[k]);
        }
        if (err)
            for (size_t j = 0; j < n; j++)
                c[j] += err[j];
        for (int l = 0; l < nl; l++)
            ts_vec_from_i64(limbs + (size_t)l * limb_stride, c, n, mods[l]);
        return TS_OK;
    }
    if (gap != 1 && !grid_only)
        for (int l = 0; l < nl; l++)
            memset(limbs + (size_t)l * limb_stride, 0, n * sizeof(uint64_t));
    for (size_t k = 0; k < 2 * slots; k++) {
        double x = k < slots ? creal(scratch[k]) : cimag(scratch[k - slots]);
        size_t j = k * gap;
        if (fabs(x) < 0x1p63) {
            /* one conversion, then a Barrett reduction per prime */
            int64_t v = (int64_t)x;
            uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
            for (int l = 0; l < nl; l++) {
                const ts_modulus_t *m = mods[l];
                uint64_t r = ts_mod_reduce64(u, m);
                limbs[(size_t)l * limb_stride + j] = v < 0 ? ts_mod_neg(r, m->q) : r;
            }
        } else {
            for (int l = 0; l < nl; l++)
                limbs[(size_t)l * limb_stride + j] = ts__ckks_double_mod(x, mods[l]);
        }
    }
    if (err) {
        for (int l = 0; l <= level; l++) {
            uint64_t q = p->q[l], *c = limbs + (size_t)l * limb_stride;
            for (size_t i = 0; i < n; i++) {
                int64_t x = err[i];
                uint64_t e = x < 0 ? q - (uint64_t)(-x) : (uint64_t)x;
                uint64_t v = c[i] + e;
                c[i] = v >= q ? v - q : v;
            }
        }
    }
    return TS_OK;
}

ts_status_t ts__ckks_encode_limbs(const ts_ckks_params_t *p, const double complex *vals,
                                  const double *reals, size_t count, size_t slots, double scale,
                                  int level, uint64_t *limbs, size_t limb_stride,
                                  double complex *scratch)
{
    return encode_limbs(p, vals, reals, count, slots, scale, level, 0, limbs, limb_stride, scratch,
                        NULL, LAYOUT_FULL);
}

/* The centered value of coefficient j over Q_l divided by scale. */
static long double lift(const ts_ckks_params_t *p, const uint64_t *limbs, size_t limb_stride,
                        int level, size_t j, uint64_t *crt_scratch)
{
    if (level == 0) {
        uint64_t q = p->q[0], r = limbs[j];
        return r > q / 2 ? -(long double)(q - r) : (long double)r;
    }
    return ts_rns_compose_ld(ts_ring_basis_q(p->ring, (uint32_t)level + 1), limbs + j, limb_stride,
                             0.0, crt_scratch);
}

ts_status_t ts__ckks_decode_limbs(const ts_ckks_params_t *p, const uint64_t *limbs,
                                  size_t limb_stride, int level, double scale, size_t slots,
                                  double complex *out, double *out_real, size_t count,
                                  double complex *scratch, uint64_t *crt_scratch)
{
    size_t n = p->n;
    if (!pow2(slots) || slots > n / 2 || level < 0 || (size_t)level >= p->nq)
        return TS_EINVAL;
    if (!(scale > 0) || !isfinite(scale))
        return TS_ESCALE;
    size_t gap = n / (2 * slots);
    long double inv = 1.0L / (long double)scale;
    for (size_t i = 0; i < slots; i++) {
        long double re = lift(p, limbs, limb_stride, level, i * gap, crt_scratch) * inv;
        long double im = lift(p, limbs, limb_stride, level, (i + slots) * gap, crt_scratch) * inv;
        scratch[i] = (double)re + I * (double)im;
    }
    ts__ckks_fft_fwd(p, scratch, slots);
    if (count > slots)
        count = slots;
    for (size_t i = 0; i < count; i++) {
        if (out)
            out[i] = scratch[i];
        if (out_real)
            out_real[i] = creal(scratch[i]);
    }
    return TS_OK;
}

/* ------------------------------------------------------- the encoder */

struct ts_ckks_encoder {
    ts_ckks_params_t *params;
    int64_t *err;         /* N: the error of the fused encode+encrypt */
    double complex *vals; /* N/2 */
    uint64_t *host;       /* nq * N words: staging when the backend is not host memory */
    uint64_t *dev;        /* (nq + np) * N / 2 words of backend memory (not host memory:
                           * a sparse encoding's compact words, made on first use) */
    uint64_t *crt;        /* 2 * words of Q */
    ts_poly_t *tmp;       /* decode: a coefficient-form copy */
};

ts_status_t ts_ckks_encoder_new(ts_ckks_params_t *params, ts_ckks_encoder_t **out)
{
    if (!params || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_ckks_encoder_t *e = ts_calloc(1, sizeof(*e));
    if (!e)
        return TS_ENOMEM;
    e->params = ts_ckks_params_ref(params);
    const ts_rns_basis_t *top = ts_ring_basis_q(params->ring, (uint32_t)params->nq);
    size_t words = top ? top->words : params->nq + 1;
    e->vals = ts_malloc(sizeof(double complex) * (params->n / 2));
    e->err = ts_malloc(sizeof(int64_t) * params->n);
    e->host = ts_malloc(sizeof(uint64_t) * params->n * (params->nq + params->np));
    e->crt = ts_malloc(sizeof(uint64_t) * 2 * (words + 1));
    ts_status_t st = (e->vals && e->err && e->host && e->crt) ? TS_OK : TS_ENOMEM;
    if (st == TS_OK)
        st = ts_poly_new(params->ring, (uint32_t)params->nq, 0, false, &e->tmp);
    if (st != TS_OK) {
        ts_ckks_encoder_free(e);
        return st;
    }
    *out = e;
    return TS_OK;
}

/* The words of the encoder's backend scratch: every limb of Q P at N / 2. */
static size_t dev_words(const ts_ckks_params_t *p)
{
    return (p->nq + p->np) * (p->n / 2);
}

void ts_ckks_encoder_free(ts_ckks_encoder_t *e)
{
    if (!e)
        return;
    if (e->tmp)
        ts_poly_reshape(e->tmp, e->tmp->cap_limbs, 0, false);
    ts_poly_free(e->tmp);
    if (e->dev) {
        /* a model's weights pass through it: wiped like the host staging */
        ts_backend_t *be = ts_ring_backend(e->params->ring);
        (void)ts_backend_zero(be, e->dev, dev_words(e->params) * sizeof(uint64_t));
        ts_backend_buf_free(be, e->dev);
    }
    if (e->vals)
        ts_memzero(e->vals, sizeof(double complex) * (e->params->n / 2));
    ts_free(e->vals);
    ts_free_secret(e->err);
    ts_free_secret(e->host);
    ts_free_secret(e->crt);
    ts_ckks_params_free(e->params);
    ts_free(e);
}

static int log2_slots(size_t slots)
{
    int l = 0;
    while (((size_t)1 << l) < slots)
        l++;
    return l;
}

/*
 * A sparse encoding (gap = N / (2 slots) > 1) on a backend whose memory is
 * not the host's: the 2 slots coefficients per limb cross to the device
 * (1 / gap of the plaintext's words), which runs the (N / gap)-point NTT
 * (ntt_forward_compact) and writes each word out gap times (spread_expand):
 * ts_poly_ntt_sparse's words. out is reshaped. TS_ENOTSUP when the backend
 * lacks the ops or a coefficient is beyond 2^62 (the caller then encodes the
 * full polynomial).
 */
static ts_status_t encode_ntt_device(ts_ckks_encoder_t *e, const double complex *cv,
                                     const double *rv, size_t count, size_t slots, int level,
                                     double scale, uint32_t np, ts_poly_t *out)
{
    const ts_ckks_params_t *p = e->params;
    ts_backend_t *be = ts_ring_backend(p->ring);
    if (!be->iface->ntt_forward_compact || !be->iface->spread_expand)
        return TS_ENOTSUP;
    const uint32_t nl = (uint32_t)level + 1 + np, m = (uint32_t)(2 * slots);
    ts_status_t st = encode_limbs(p, cv, rv, count, slots, scale, level, np, e->host, m, e->vals,
                                  NULL, LAYOUT_COMPACT);
    if (st == TS_OK && !e->dev)
        st = ts_backend_alloc(be, dev_words(p) * sizeof(uint64_t), (void **)&e->dev);
    if (st == TS_OK)
        st = ts_backend_upload(be, e->dev, e->host, (size_t)nl * m * sizeof(uint64_t));
    ts_bk_batch_t c = {.data = e->dev,
                       .npolys = 1,
                       .nlimbs = nl,
                       .poly_stride = (size_t)nl * m,
                       .mod_idx = ts_ring_limb_index(p->ring, (uint32_t)level + 1, np)};
    if (st == TS_OK)
        st = ts_backend_ntt_forward_compact(be, ts_ring_bk(p->ring), &c, (uint32_t)(p->n / m));
    ts_bk_batch_t o = ts_poly_batch(out);
    if (st == TS_OK)
        st = ts_backend_spread_expand(be, ts_ring_bk(p->ring), &o, &c, (uint32_t)(p->n / m));
    if (st == TS_OK)
        out->is_ntt = true;
    return st;
}

/*
 * Encode into `out` (reshaped to level + 1 Q limbs and np P limbs without
 * zeroing: every word gets written) and bring it to NTT form. Host-memory backends with
 * sparse slots (gap = N / (2 slots) > 1) write only the multiples of gap and
 * take ts_poly_ntt_sparse: an (N/gap)-point NTT per limb and a spread, the
 * same words as the full NTT; a device takes encode_ntt_device. Otherwise
 * the full polynomial and ts_poly_ntt.
 */
static ts_status_t encode_ntt(ts_ckks_encoder_t *e, const double complex *cv, const double *rv,
                              size_t count, size_t slots, int level, double scale, uint32_t np,
                              ts_poly_t *out)
{
    const ts_ckks_params_t *p = e->params;
    ts_backend_t *be = ts_ring_backend(p->ring);
    const bool sparse = pow2(slots) && slots < p->n / 2;
    /* every word is written below (the grid by the encoding, the rest by the
     * sparse NTT's spread): no zeroing first */
    ts_status_t st = ts_poly_reshape_uninit(out, (uint32_t)level + 1, np, false);
    if (st != TS_OK)
        return st;
    if (sparse && !be->host_memory) {
        st = encode_ntt_device(e, cv, rv, count, slots, level, scale, np, out);
        if (st != TS_ENOTSUP) {
            if (st != TS_OK)
                ts_poly_reshape(out, (uint32_t)level + 1, np, true);
            return st;
        }
    }
    const bool grid = sparse && be->host_memory;
    uint64_t *dst = be->host_memory ? out->data : e->host;
    st = encode_limbs(p, cv, rv, count, slots, scale, level, np, dst, p->n, e->vals, NULL,
                      grid ? LAYOUT_GRID : LAYOUT_FULL);
    if (st == TS_OK && !be->host_memory)
        st = ts_poly_upload(out, e->host);
    if (st == TS_OK)
        st = grid ? ts_poly_ntt_sparse(out, (uint32_t)(p->n / (2 * slots))) : ts_poly_ntt(out);
    if (st != TS_OK) /* a well-formed zero rather than a half-written polynomial */
        ts_poly_reshape(out, (uint32_t)level + 1, np, true);
    return st;
}

static ts_status_t encode_any(ts_ckks_encoder_t *e, const double complex *cv, const double *rv,
                              size_t count, size_t slots, int level, double scale,
                              ts_ckks_plaintext_t *pt)
{
    if (!e || !pt || (!cv && !rv && count))
        return TS_EINVAL;
    const ts_ckks_params_t *p = e->params;
    if (!ts_ckks_params_equal(p, pt->params))
        return TS_EMISMATCH;
    if (level < 0 || (size_t)level >= p->nq)
        return TS_ELEVEL;
    if (slots == 0)
        slots = (size_t)1 << p->log_slots;
    ts_status_t st = encode_ntt(e, cv, rv, count, slots, level, scale, 0, pt->poly);
    if (st != TS_OK)
        return st;
    pt->scale = scale;
    pt->log_slots = log2_slots(slots);
    return TS_OK;
}

ts_status_t ts_ckks_encode(ts_ckks_encoder_t *enc, const double complex *values, size_t count,
                           size_t slots, int level, double scale, ts_ckks_plaintext_t *pt)
{
    return encode_any(enc, values, NULL, count, slots, level, scale, pt);
}

ts_status_t ts_ckks_encode_real(ts_ckks_encoder_t *enc, const double *values, size_t count,
                                size_t slots, int level, double scale, ts_ckks_plaintext_t *pt)
{
    return encode_any(enc, NULL, values, count, slots, level, scale, pt);
}

static ts_status_t decode_any(ts_ckks_encoder_t *e, const ts_ckks_plaintext_t *pt,
                              double complex *cv, double *rv, size_t count)
{
    if (!e || !pt || (!cv && !rv && count))
        return TS_EINVAL;
    const ts_ckks_params_t *p = e->params;
    if (!ts_ckks_params_equal(p, pt->params))
        return TS_EMISMATCH;
    size_t slots = (size_t)1 << pt->log_slots;
    if (count > slots)
        return TS_EINVAL;
    ts_status_t st = ts_poly_copy(e->tmp, pt->poly);
    if (st == TS_OK)
        st = ts_poly_intt(e->tmp);
    if (st != TS_OK)
        return st;
    ts_backend_t *be = ts_ring_backend(p->ring);
    const uint64_t *src = e->tmp->data;
    if (!be->host_memory) {
        st = ts_poly_download(e->tmp, e->host);
        if (st != TS_OK)
            return st;
        src = e->host;
    }
    return ts__ckks_decode_limbs(p, src, p->n, ts__ckks_level(pt->poly), pt->scale, slots, cv, rv,
                                 count, e->vals, e->crt);
}

ts_status_t ts_ckks_decode(ts_ckks_encoder_t *enc, const ts_ckks_plaintext_t *pt,
                           double complex *values, size_t count)
{
    return decode_any(enc, pt, values, NULL, count);
}

ts_status_t ts_ckks_decode_real(ts_ckks_encoder_t *enc, const ts_ckks_plaintext_t *pt,
                                double *values, size_t count)
{
    return decode_any(enc, pt, NULL, values, count);
}

ts_ckks_params_t *ts__ckks_encoder_params(const ts_ckks_encoder_t *enc)
{
    return enc->params;
}

ts_status_t ts__ckks_encode_coeff(ts_ckks_encoder_t *e, const double complex *cv, const double *rv,
                                  size_t count, size_t slots, int level, double scale,
                                  ts_poly_t *out, const int64_t *err)
{
    const ts_ckks_params_t *p = e->params;
    if (level < 0 || (size_t)level >= p->nq)
        return TS_ELEVEL;
    if (slots == 0)
        slots = (size_t)1 << p->log_slots;
    ts_status_t st = ts_poly_reshape(out, (uint32_t)level + 1, 0, false);
    if (st != TS_OK)
        return st;
    ts_backend_t *be = ts_ring_backend(p->ring);
    uint64_t *dst = be->host_memory ? out->data : e->host;
    st = encode_limbs(p, cv, rv, count, slots, scale, level, 0, dst, p->n, e->vals, err,
                      LAYOUT_FULL);
    if (st == TS_OK && !be->host_memory)
        st = ts_poly_upload(out, e->host);
    return st;
}

ts_status_t ts__ckks_encode_qp_compact(ts_ckks_encoder_t *e, const double *reals, size_t count,
                                       size_t slots, int level, double scale, uint64_t *dst)
{
    if (!e || !dst || (!reals && count))
        return TS_EINVAL;
    const ts_ckks_params_t *p = e->params;
    ts_backend_t *be = ts_ring_backend(p->ring);
    if (level < 0 || (size_t)level >= p->nq)
        return TS_ELEVEL;
    if (!pow2(slots) || slots >= p->n / 2)
        return TS_EINVAL;
    if (!be->iface->ntt_forward_compact)
        return TS_ENOTSUP;
    const uint32_t nl = (uint32_t)level + 1 + (uint32_t)p->np, m = (uint32_t)(2 * slots);
    /* on a device: the compact coefficients (nl x 2 slots words, 1 / gap of
     * a full plaintext) cross to it, and it runs the transform */
    ts_status_t st =
        encode_limbs(p, NULL, reals, count, slots, scale, level, (uint32_t)p->np,
                     be->host_memory ? dst : e->host, m, e->vals, NULL, LAYOUT_COMPACT);
    if (st == TS_OK && !be->host_memory)
        st = ts_backend_upload(be, dst, e->host, (size_t)nl * m * sizeof(uint64_t));
    if (st != TS_OK)
        return st;
    ts_bk_batch_t b = {.data = dst,
                       .npolys = 1,
                       .nlimbs = nl,
                       .poly_stride = (size_t)nl * m,
                       .mod_idx =
                           ts_ring_limb_index(p->ring, (uint32_t)level + 1, (uint32_t)p->np)};
    return ts_backend_ntt_forward_compact(be, ts_ring_bk(p->ring), &b, (uint32_t)(p->n / m));
}

ts_status_t ts__ckks_encode_qp(ts_ckks_encoder_t *e, const double complex *values,
                               const double *reals, size_t count, size_t slots, int level,
                               double scale, ts_poly_t *out)
{
    if (!e || !out || (!values && !reals && count))
        return TS_EINVAL;
    const ts_ckks_params_t *p = e->params;
    if (level < 0 || (size_t)level >= p->nq)
        return TS_ELEVEL;
    if (slots == 0)
        slots = (size_t)1 << p->log_slots;
    return encode_ntt(e, values, reals, count, slots, level, scale, (uint32_t)p->np, out);
}

int64_t *ts__ckks_encoder_err(ts_ckks_encoder_t *e)
{
    return e->err;
}
