/* Helpers shared by the tests of server/ and client/ (test_net_*.c). */
#ifndef TS_NET_TEST_UTIL_H
#define TS_NET_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/ts_test.h"

/* A fresh temporary directory (path written into buf). */
static inline void net_tmpdir(char *buf, size_t size, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/tessera-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp %s failed", buf);
}

/* Run deploy/make-certs.sh DIR localhost CLIENTS... */
static inline void net_make_certs(const char *dir, const char *clients)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "deploy/make-certs.sh '%s' localhost %s >/dev/null", dir,
             clients ? clients : "client");
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "%s failed with %d", cmd, rc);
}

static inline void net_rm_rf(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* ------------------------------------------------- a real tesserad for tests */

#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

typedef struct net_daemon {
    char dir[512];
    pid_t pid;
    int port;
} net_daemon_t;

/*
 * Start TS_BUILD_DIR/tesserad on 127.0.0.1, port 0 (read back from port_file),
 * with the certificates of `certs`, a key store in its own temporary directory,
 * and extra YAML: lines inside tls: and keystore:, and whole top-level sections.
 * Logs go to DIR/tesserad.log.
 */
static inline void net_daemon_start(net_daemon_t *d, const char *certs, const char *tls_extra,
                                    const char *keystore_extra, const char *sections, bool insecure)
{
    net_tmpdir(d->dir, sizeof d->dir, "daemon");
    char cfg[700], bin[600], log[700], pf[700];
    snprintf(cfg, sizeof cfg, "%s/tesserad.yaml", d->dir);
    FILE *f = fopen(cfg, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "listen: 127.0.0.1\nport: 0\nport_file: %s/port\nworkers: 2\n"
            "params_dir: configs/params\n"
            "tls:\n  cert: %s/server.crt\n  key: %s/server.key\n%s"
            "keystore:\n  dir: %s/keys\n%s%s"
            "log:\n  level: debug\n",
            d->dir, certs, certs, tls_extra ? tls_extra : "", d->dir,
            keystore_extra ? keystore_extra : "", sections ? sections : "");
    /* the runner's backend (TS_TEST_BACKEND) for the daemon too, unless the
     * test names one: gpu as auto (the GPU where it works; the runner itself
     * falls back to the CPU the same way), devemu as itself */
    const char *tb = getenv("TS_TEST_BACKEND");
    if (tb && *tb && !(sections && strstr(sections, "backend:")))
        fprintf(f, "backend: %s\n", strcmp(tb, "gpu") == 0 ? "auto" : tb);
    fclose(f);
    snprintf(bin, sizeof bin, "%s/tesserad", ts_test_build_dir());
    snprintf(log, sizeof log, "%s/tesserad.log", d->dir);
    d->pid = fork();
    ck_assert_int_ge(d->pid, 0);
    if (d->pid == 0) {
        if (!freopen(log, "w", stderr))
            _exit(126);
        execl(bin, bin, "--config", cfg, insecure ? "--insecure-params" : (char *)NULL,
              (char *)NULL);
        _exit(127);
    }
    snprintf(pf, sizeof pf, "%s/port", d->dir);
    d->port = 0;
    for (int i = 0; i < 200 && d->port == 0; i++) {
        FILE *p = fopen(pf, "r");
        if (p) {
            if (fscanf(p, "%d", &d->port) != 1)
                d->port = 0;
            fclose(p);
        }
        if (!d->port) {
            int st;
            ck_assert_msg(waitpid(d->pid, &st, WNOHANG) == 0, "tesserad exited early (see %s)",
                          log);
            usleep(50000);
        }
    }
    ck_assert_msg(d->port > 0, "tesserad did not write its port (see %s)", log);
}

/* SIGTERM and wait; the exit status (or -1 after 10 s, then SIGKILL). */
static inline int net_daemon_stop(net_daemon_t *d)
{
    if (d->pid <= 0)
        return -1;
    kill(d->pid, SIGTERM);
    int st = 0;
    for (int i = 0; i < 200; i++) {
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            d->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(50000);
    }
    kill(d->pid, SIGKILL);
    waitpid(d->pid, &st, 0);
    d->pid = 0;
    return -1;
}

/* Stop it if running and remove its directory. */
static inline void net_daemon_cleanup(net_daemon_t *d)
{
    if (d->pid > 0)
        net_daemon_stop(d);
    net_rm_rf(d->dir);
}

#endif
