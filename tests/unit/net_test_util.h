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

#endif
