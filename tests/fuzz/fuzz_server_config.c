/*
 * libFuzzer target: tesserad's configuration (server/config.c: the directive
 * table over core/base's YAML loader, then the cross-field checks) on
 * arbitrary text. Errors must be reported, never crash; an accepted
 * configuration must satisfy the checks the daemon relies on.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/tesserad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_srv_config_t cfg;
    ts_srv_config_defaults(&cfg);
    char err[600];
    if (ts_srv_config_load_string((const char *)data, size, "fuzz.yaml", &cfg, err, sizeof err) ==
        TS_OK) {
        if (cfg.keystore.chunk_bytes + 4096 > cfg.limits.max_frame_bytes ||
            cfg.limits.max_decompressed_bytes < cfg.limits.max_frame_bytes || !cfg.tls.cert[0] ||
            cfg.port < 0 || cfg.port > 65535 || memchr(cfg.listen, 0, sizeof cfg.listen) == NULL)
            __builtin_trap();
    } else if (!err[0]) {
        __builtin_trap(); /* every refusal says why */
    }
    return 0;
}
