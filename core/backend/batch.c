/* The batch contract shared by every backend, the counts of the wrappers
 * and which kind a backend is (see backend.h). */
#include <string.h>

#include "core/backend/backend.h"

/* The contract for limbs of `words` words each. */
static bool batch_valid(const ts_bk_batch_t *x, size_t words, uint32_t count)
{
    if (!x || !x->data || !x->mod_idx || x->npolys == 0 || x->nlimbs == 0 ||
        x->poly_stride < (size_t)x->nlimbs * words)
        return false;
    for (uint32_t l = 0; l < x->nlimbs; l++)
        if (x->mod_idx[l] >= count)
            return false;
    return true;
}

bool ts_bk_batch_valid(const ts_bk_batch_t *x, uint32_t n, uint32_t count)
{
    return batch_valid(x, n, count);
}

bool ts_bk_batch_valid_spread(const ts_bk_batch_t *x, uint32_t n, uint32_t count, uint32_t gap)
{
    return gap >= 2 && gap <= n && !(gap & (gap - 1)) && batch_valid(x, n / gap, count);
}

bool ts_bk_batch_same_shape(const ts_bk_batch_t *x, const ts_bk_batch_t *y)
{
    if (x->npolys != y->npolys || x->nlimbs != y->nlimbs)
        return false;
    for (uint32_t l = 0; l < x->nlimbs; l++)
        if (x->mod_idx[l] != y->mod_idx[l])
            return false;
    return true;
}

/* The words from x's first to past its last, limbs of `words` words. */
static size_t batch_extent(const ts_bk_batch_t *x, size_t words)
{
    return (x->npolys - 1) * x->poly_stride + (size_t)x->nlimbs * words;
}

bool ts_bk_batch_overlaps(const ts_bk_batch_t *x, size_t xw, const ts_bk_batch_t *y, size_t yw)
{
    return x->data < y->data + batch_extent(y, yw) && y->data < x->data + batch_extent(x, xw);
}

bool ts_bk_keyswitch_args_valid(const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                const ts_bk_batch_t *key, const uint32_t *key_limb, uint32_t n,
                                uint32_t count, uint32_t gap, uint32_t max_digits)
{
    const bool dig_ok =
        gap == 1 ? batch_valid(digits, n, count) : ts_bk_batch_valid_spread(digits, n, count, gap);
    if (!dig_ok || !batch_valid(out, n, count) || !batch_valid(key, n, count) || !key_limb ||
        digits->nlimbs != out->nlimbs || digits->npolys > max_digits ||
        key->npolys < digits->npolys * out->npolys ||
        ts_bk_batch_overlaps(out, n, digits, n / gap) || ts_bk_batch_overlaps(out, n, key, n))
        return false;
    for (uint32_t l = 0; l < out->nlimbs; l++)
        if (digits->mod_idx[l] != out->mod_idx[l] || key_limb[l] >= key->nlimbs ||
            key->mod_idx[key_limb[l]] != out->mod_idx[l])
            return false;
    return true;
}

bool ts_bk_spread_expand_args_valid(const ts_bk_batch_t *out, const ts_bk_batch_t *a, uint32_t n,
                                    uint32_t count, uint32_t gap)
{
    if (gap < 2 || gap > n / 2 || !batch_valid(out, n, count) ||
        !ts_bk_batch_valid_spread(a, n, count, gap) || a->npolys != out->npolys ||
        a->nlimbs != out->nlimbs || ts_bk_batch_overlaps(out, n, a, n / gap))
        return false;
    for (uint32_t l = 0; l < out->nlimbs; l++)
        if (a->mod_idx[l] != out->mod_idx[l])
            return false;
    return true;
}

bool ts_bk_set_i64_args_valid(const ts_bk_batch_t *out, const int64_t *src, uint32_t n,
                              uint32_t count)
{
    if (!src || !batch_valid(out, n, count) || out->npolys != 1)
        return false;
    /* src must not lie inside out */
    const uint64_t *s0 = (const uint64_t *)src, *o0 = out->data;
    return !(s0 < o0 + (size_t)out->nlimbs * n && o0 < s0 + n);
}

void ts_backend_counts(const ts_backend_t *be, ts_backend_counts_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!be)
        return;
    out->calls = __atomic_load_n(&be->counts.calls, __ATOMIC_RELAXED);
    out->uploads = __atomic_load_n(&be->counts.uploads, __ATOMIC_RELAXED);
    out->upload_bytes = __atomic_load_n(&be->counts.upload_bytes, __ATOMIC_RELAXED);
    out->downloads = __atomic_load_n(&be->counts.downloads, __ATOMIC_RELAXED);
    out->download_bytes = __atomic_load_n(&be->counts.download_bytes, __ATOMIC_RELAXED);
}

void ts_backend_counts_since(const ts_backend_t *be, const ts_backend_counts_t *before,
                             ts_backend_counts_t *out)
{
    if (!out || !before)
        return;
    ts_backend_counts(be, out);
    out->calls -= before->calls;
    out->uploads -= before->uploads;
    out->upload_bytes -= before->upload_bytes;
    out->downloads -= before->downloads;
    out->download_bytes -= before->download_bytes;
}

bool ts_backend_is_gpu(const ts_backend_t *be)
{
    return be && be->iface && be->iface->name && strcmp(be->iface->name, "gpu") == 0;
}
