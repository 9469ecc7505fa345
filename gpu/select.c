/* Backend selection (cpu / gpu / auto) for builds with CUDA; see gpu/select_impl.h. */
#include "gpu/select_impl.h"

ts_status_t ts_backend_select(const char *name, ts_backend_t **out)
{
    return select_backend(name, out, NULL, 0);
}

ts_status_t ts_backend_select_why(const char *name, ts_backend_t **out, char *why, size_t why_size)
{
    return select_backend(name, out, why, why_size);
}

ts_status_t ts_backend_use_default(const char *name)
{
    return use_default(name);
}
