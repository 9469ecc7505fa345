/* The batch contract shared by every backend, and the counts of the
 * wrappers (see backend.h). */
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
