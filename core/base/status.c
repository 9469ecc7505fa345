/* Status codes: ts_strerror() and ts_status_name() from the one X-macro table. */
#include "core/base/base.h"

#include <stdio.h>
#include <stdlib.h>

const char *ts_strerror(int status)
{
    switch (status) {
#define TS_STATUS_MSG(name, value, msg)                                                            \
    case value:                                                                                    \
        return msg;
        TS_STATUS_MAP(TS_STATUS_MSG)
#undef TS_STATUS_MSG
    default:
        return "unknown status";
    }
}

const char *ts_status_name(int status)
{
    switch (status) {
#define TS_STATUS_NAME(name, value, msg)                                                           \
    case value:                                                                                    \
        return "TS_" #name;
        TS_STATUS_MAP(TS_STATUS_NAME)
#undef TS_STATUS_NAME
    default:
        return "TS_UNKNOWN";
    }
}

void ts__assert_fail(const char *expr, const char *file, int line)
{
    /* Internal invariants only; reaching this is a bug in tessera itself. */
    fprintf(stderr, "tessera: internal invariant failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
