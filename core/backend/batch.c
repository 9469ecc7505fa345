/* The batch contract shared by every backend (see backend.h). */
#include "core/backend/backend.h"

bool ts_bk_batch_valid(const ts_bk_batch_t *x, uint32_t n, uint32_t count)
{
    if (!x || !x->data || !x->mod_idx || x->npolys == 0 || x->nlimbs == 0 ||
        x->poly_stride < (size_t)x->nlimbs * n)
        return false;
    for (uint32_t l = 0; l < x->nlimbs; l++)
        if (x->mod_idx[l] >= count)
            return false;
    return true;
}

bool ts_bk_batch_valid_spread(const ts_bk_batch_t *x, uint32_t n, uint32_t count, uint32_t gap)
{
    if (!x || gap < 2 || gap > n || (gap & (gap - 1)) || !x->data || !x->mod_idx ||
        x->npolys == 0 || x->nlimbs == 0 || x->poly_stride < (size_t)x->nlimbs * (n / gap))
        return false;
    for (uint32_t l = 0; l < x->nlimbs; l++)
        if (x->mod_idx[l] >= count)
            return false;
    return true;
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
