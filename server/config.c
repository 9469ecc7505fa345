/*
 * tesserad's configuration: defaults, the directive table for the YAML loader
 * of core/base, and the cross-field checks the table cannot express.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "server/tesserad.h"

#define KiB ((int64_t)1 << 10)
#define MiB ((int64_t)1 << 20)
#define GiB ((int64_t)1 << 30)

void ts_srv_config_defaults(ts_srv_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->listen, sizeof cfg->listen, "127.0.0.1");
    cfg->port = 7878;
    cfg->workers = 4;
    snprintf(cfg->keystore.dir, sizeof cfg->keystore.dir, "/var/lib/tessera/keys");
    cfg->keystore.quota_bytes = 16 * GiB;
    cfg->keystore.chunk_bytes = 4 * MiB;
    cfg->limits.max_frame_bytes = 16 * MiB;
    cfg->limits.max_decompressed_bytes = 64 * MiB;
    cfg->limits.max_messages_per_connection = 0;
    cfg->limits.max_connections = 256;
    cfg->limits.max_connections_per_client = 16;
    cfg->limits.max_sessions_per_connection = 8;
    cfg->limits.session_memory_bytes = 2 * GiB;
    cfg->limits.total_memory_bytes = 16 * GiB;
    cfg->limits.max_queued_jobs = 64;
    cfg->limits.write_buffer_bytes = 64 * MiB;
    cfg->limits.max_ciphertexts_per_job = 4096;
    cfg->timeouts.handshake_ms = 10000;
    cfg->timeouts.idle_ms = 300000;
    cfg->timeouts.request_ms = 60000;
    cfg->timeouts.shutdown_ms = 10000;
    cfg->timeouts.job_ms = 600000;
    snprintf(cfg->log.level, sizeof cfg->log.level, "info");
    cfg->log.json = true;
    snprintf(cfg->params_dir, sizeof cfg->params_dir, "configs/params");
    snprintf(cfg->costs_dir, sizeof cfg->costs_dir, "configs/costs");
}

#define INT(key, st, field, lo, hi)                                                                \
    {                                                                                              \
        .name = key, .type = TS_CFG_INT, .offset = offsetof(st, field), .min = (lo), .max = (hi)   \
    }
#define STR(key, st, field)                                                                        \
    {                                                                                              \
        .name = key, .type = TS_CFG_STRING, .offset = offsetof(st, field),                         \
        .cap = sizeof(((st *)0)->field)                                                            \
    }
#define BOOL(key, st, field)                                                                       \
    {                                                                                              \
        .name = key, .type = TS_CFG_BOOL, .offset = offsetof(st, field)                            \
    }

static const ts_cfg_directive_t tls_table[] = {
    STR("cert", ts_srv_tls_cfg_t, cert),
    STR("key", ts_srv_tls_cfg_t, key),
    STR("client_ca", ts_srv_tls_cfg_t, client_ca),
    BOOL("require_client_cert", ts_srv_tls_cfg_t, require_client_cert),
    {.name = NULL},
};

static const ts_cfg_directive_t keystore_table[] = {
    STR("dir", ts_srv_keystore_cfg_t, dir),
    INT("quota_bytes", ts_srv_keystore_cfg_t, quota_bytes, 0, INT64_MAX),
    INT("chunk_bytes", ts_srv_keystore_cfg_t, chunk_bytes, 4 * KiB, 64 * MiB),
    {.name = NULL},
};

static const ts_cfg_directive_t limits_table[] = {
    INT("max_frame_bytes", ts_srv_limits_cfg_t, max_frame_bytes, 1 * KiB, 1 * GiB),
    INT("max_decompressed_bytes", ts_srv_limits_cfg_t, max_decompressed_bytes, 1 * KiB, 1 * GiB),
    INT("max_messages_per_connection", ts_srv_limits_cfg_t, max_messages_per_connection, 0,
        INT64_MAX),
    INT("max_connections", ts_srv_limits_cfg_t, max_connections, 1, 1000000),
    INT("max_connections_per_client", ts_srv_limits_cfg_t, max_connections_per_client, 1, 1000000),
    INT("max_sessions_per_connection", ts_srv_limits_cfg_t, max_sessions_per_connection, 1, 4096),
    INT("session_memory_bytes", ts_srv_limits_cfg_t, session_memory_bytes, 1 * KiB, INT64_MAX),
    INT("total_memory_bytes", ts_srv_limits_cfg_t, total_memory_bytes, 1 * MiB, INT64_MAX),
    INT("max_queued_jobs", ts_srv_limits_cfg_t, max_queued_jobs, 1, 1000000),
    INT("write_buffer_bytes", ts_srv_limits_cfg_t, write_buffer_bytes, 64 * KiB, INT64_MAX),
    INT("max_ciphertexts_per_job", ts_srv_limits_cfg_t, max_ciphertexts_per_job, 1, 1 << 24),
    {.name = NULL},
};

static const ts_cfg_directive_t timeouts_table[] = {
    INT("handshake_ms", ts_srv_timeouts_cfg_t, handshake_ms, 100, 3600000),
    INT("idle_ms", ts_srv_timeouts_cfg_t, idle_ms, 100, 86400000),
    INT("request_ms", ts_srv_timeouts_cfg_t, request_ms, 100, 86400000),
    INT("shutdown_ms", ts_srv_timeouts_cfg_t, shutdown_ms, 0, 3600000),
    INT("job_ms", ts_srv_timeouts_cfg_t, job_ms, 100, 86400000),
    {.name = NULL},
};

static const ts_cfg_directive_t log_table[] = {
    STR("level", ts_srv_log_cfg_t, level),
    BOOL("json", ts_srv_log_cfg_t, json),
    {.name = NULL},
};

static const ts_cfg_directive_t sanitize_table[] = {
    INT("flood_bits", ts_srv_sanitize_cfg_t, flood_bits, 0, 50),
    {.name = NULL},
};

const char *const ts_srv_backend_names[] = {"auto", "cpu", "gpu", "devemu", NULL};

#define SECTION(key, field, table)                                                                 \
    {                                                                                              \
        .name = key, .type = TS_CFG_SECTION, .offset = offsetof(ts_srv_config_t, field),           \
        .sub = table                                                                               \
    }

static const ts_cfg_directive_t top_table[] = {
    STR("listen", ts_srv_config_t, listen),
    INT("port", ts_srv_config_t, port, 0, 65535),
    STR("port_file", ts_srv_config_t, port_file),
    INT("workers", ts_srv_config_t, workers, 1, 1024),
    STR("params_dir", ts_srv_config_t, params_dir),
    STR("costs_dir", ts_srv_config_t, costs_dir),
    STR("models_dir", ts_srv_config_t, models_dir),
    {.name = "backend",
     .type = TS_CFG_ENUM,
     .offset = offsetof(ts_srv_config_t, backend),
     .choices = ts_srv_backend_names},
    SECTION("tls", tls, tls_table),
    SECTION("keystore", keystore, keystore_table),
    SECTION("limits", limits, limits_table),
    SECTION("timeouts", timeouts, timeouts_table),
    SECTION("log", log, log_table),
    SECTION("sanitize", sanitize, sanitize_table),
    {.name = NULL},
};

static ts_status_t check(const char *path, ts_srv_config_t *cfg, char *err, size_t err_size);

ts_status_t ts_srv_config_load(const char *path, ts_srv_config_t *cfg, char *err, size_t err_size)
{
    ts_cfg_error_t e;
    memset(&e, 0, sizeof e);
    ts_status_t st = ts_config_load_file(path, top_table, cfg, NULL, &e);
    if (st != TS_OK) {
        ts_cfg_error_format(&e, err, err_size);
        return st;
    }
    return check(path, cfg, err, err_size);
}

ts_status_t ts_srv_config_load_string(const char *text, size_t size, const char *name,
                                      ts_srv_config_t *cfg, char *err, size_t err_size)
{
    ts_cfg_error_t e;
    memset(&e, 0, sizeof e);
    ts_status_t st = ts_config_load_string(text, size, name, top_table, cfg, NULL, &e);
    if (st != TS_OK) {
        ts_cfg_error_format(&e, err, err_size);
        return st;
    }
    return check(name, cfg, err, err_size);
}

/* Cross-field checks the directive table cannot express. */
static ts_status_t check(const char *path, ts_srv_config_t *cfg, char *err, size_t err_size)
{
    ts_log_level_t lvl;
    if (ts_log_level_parse(cfg->log.level, &lvl) != TS_OK) {
        snprintf(err, err_size, "%s: log.level \"%s\" is not one of error|warn|info|debug|trace",
                 path, cfg->log.level);
        return TS_ECONFIG;
    }
    if (cfg->keystore.chunk_bytes + 4 * KiB > cfg->limits.max_frame_bytes) {
        snprintf(err, err_size,
                 "%s: keystore.chunk_bytes (%lld) must leave room in limits.max_frame_bytes "
                 "(%lld) for the message around it (4 KiB)",
                 path, (long long)cfg->keystore.chunk_bytes,
                 (long long)cfg->limits.max_frame_bytes);
        return TS_ECONFIG;
    }
    if (cfg->limits.max_decompressed_bytes < cfg->limits.max_frame_bytes) {
        snprintf(err, err_size,
                 "%s: limits.max_decompressed_bytes must be at least limits.max_frame_bytes", path);
        return TS_ECONFIG;
    }
    if (!cfg->tls.cert[0] || !cfg->tls.key[0]) {
        snprintf(err, err_size, "%s: tls.cert and tls.key are required (TLS is not optional)",
                 path);
        return TS_ECONFIG;
    }
    if (cfg->tls.require_client_cert && !cfg->tls.client_ca[0]) {
        snprintf(err, err_size, "%s: tls.require_client_cert needs tls.client_ca", path);
        return TS_ECONFIG;
    }
    return TS_OK;
}
