/* libFuzzer target: the YAML loader on arbitrary bytes never crashes or leaks. */
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"

typedef struct {
    int64_t workers;
    double ratio;
    bool on;
    char host[32];
    int64_t list[8];
    size_t nlist;
    int mode;
    struct {
        int64_t port;
    } inner;
} conf_t;

static const char *const modes[] = {"a", "b", NULL};
static const ts_cfg_directive_t inner[] = {
    {.name = "port", .type = TS_CFG_INT, .offset = 0, .min = 1, .max = 65535, .required = true},
    {0},
};
static const ts_cfg_directive_t table[] = {
    {.name = "workers", .type = TS_CFG_INT, .offset = offsetof(conf_t, workers)},
    {.name = "ratio", .type = TS_CFG_DOUBLE, .offset = offsetof(conf_t, ratio)},
    {.name = "on", .type = TS_CFG_BOOL, .offset = offsetof(conf_t, on)},
    {.name = "host", .type = TS_CFG_STRING, .offset = offsetof(conf_t, host), .cap = 32},
    {.name = "primes",
     .type = TS_CFG_INTLIST,
     .offset = offsetof(conf_t, list),
     .cap = 8,
     .count_offset = offsetof(conf_t, nlist)},
    {.name = "mode", .type = TS_CFG_ENUM, .offset = offsetof(conf_t, mode), .choices = modes},
    {.name = "inner", .type = TS_CFG_SECTION, .offset = offsetof(conf_t, inner), .sub = inner},
    {0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    conf_t c = {0};
    ts_cfg_error_t err;
    ts_config_load_string((const char *)data, size, "fuzz", table, &c, NULL, &err);
    return 0;
}
