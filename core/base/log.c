/*
 * Logging: one line per call, plain ("2026-11-30T02:40:00.123Z info  module: msg")
 * or JSON lines ({"ts":...,"level":...,"module":...,"msg":...}). Messages are
 * capped at 4 KiB so no call can dump a large buffer (key material included).
 */
#include "core/base/base.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MSG_CAP 4096

static _Atomic int g_level = TS_LOG_INFO;
static _Atomic bool g_json;
static ts_log_sink_fn g_sink;
static void *g_sink_ctx;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void ts_log_set_level(ts_log_level_t level)
{
    atomic_store(&g_level, (int)level);
}
ts_log_level_t ts_log_get_level(void)
{
    return (ts_log_level_t)atomic_load(&g_level);
}
void ts_log_set_json(bool json_lines)
{
    atomic_store(&g_json, json_lines);
}
bool ts_log_enabled(ts_log_level_t level)
{
    return (int)level <= atomic_load(&g_level);
}

void ts_log_set_sink(ts_log_sink_fn sink, void *ctx)
{
    g_sink = sink;
    g_sink_ctx = ctx;
}

ts_status_t ts_log_level_parse(const char *name, ts_log_level_t *out)
{
    for (int i = 0; i <= TS_LOG_TRACE; i++) {
        if (name && strcasecmp(name, level_names[i]) == 0) {
            *out = (ts_log_level_t)i;
            return TS_OK;
        }
    }
    if (name && strcasecmp(name, "warning") == 0) {
        *out = TS_LOG_WARN;
        return TS_OK;
    }
    return TS_EINVAL;
}

/* Append s to out as a JSON string body (without quotes). */
static size_t json_escape(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
    return n;
}

void ts_vlog(ts_log_level_t level, const char *module, const char *fmt, va_list ap)
{
    if (!ts_log_enabled(level) || (int)level < 0 || level > TS_LOG_TRACE)
        return;
    char msg[MSG_CAP];
    vsnprintf(msg, sizeof msg, fmt, ap);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[96];
    snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);

    char line[2 * MSG_CAP + 320];
    if (atomic_load(&g_json)) {
        char emsg[2 * MSG_CAP], emod[128];
        json_escape(emsg, sizeof emsg, msg);
        json_escape(emod, sizeof emod, module ? module : "");
        snprintf(line, sizeof line,
                 "{\"ts\":\"%s\",\"level\":\"%s\",\"module\":\"%s\",\"msg\":\"%s\"}", when,
                 level_names[level], emod, emsg);
    } else {
        snprintf(line, sizeof line, "%s %-5s %s: %s", when, level_names[level],
                 module ? module : "-", msg);
    }
    if (g_sink) {
        g_sink(g_sink_ctx, level, line);
        return;
    }
    flockfile(stderr);
    fputs(line, stderr);
    fputc('\n', stderr);
    funlockfile(stderr);
}

void ts_log(ts_log_level_t level, const char *module, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_vlog(level, module, fmt, ap);
    va_end(ap);
}
