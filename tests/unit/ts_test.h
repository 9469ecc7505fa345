/*
 * Shared helpers for tessera's unit tests (Check framework).
 *
 * Each tests/unit/test_*.c defines one or more suites with
 *     TS_TEST_SUITE(name) { Suite *s = suite_create("name"); ...; return s; }
 * The build finds every TS_TEST_SUITE by grep and links them into one runner,
 * build/tests/unit_tests; `CK_RUN_SUITE=name build/tests/unit_tests` runs one.
 * Use ts_tcase() so a case gets a generous timeout (tests never assert times).
 */
#ifndef TS_TEST_H
#define TS_TEST_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/base.h"
#include "core/backend/backend.h"
#include "core/ring/ring.h"

#define TS_TEST_SUITE(name) Suite *ts_suite_##name(void)

/* A test case with a timeout of `seconds` (0 = the default of 300 s). */
static inline TCase *ts_tcase(const char *name, double seconds)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, seconds > 0 ? seconds : 300.0);
    return tc;
}

/* Assert a status is TS_OK, printing its name and message otherwise. */
#define ck_assert_ts_ok(expr)                                                                      \
    do {                                                                                           \
        int ts__st = (expr);                                                                       \
        ck_assert_msg(ts__st == TS_OK, "%s returned %s (%s)", #expr, ts_status_name(ts__st),       \
                      ts_strerror(ts__st));                                                        \
    } while (0)

#define ck_assert_ts_status(expr, want)                                                            \
    do {                                                                                           \
        int ts__st = (expr);                                                                       \
        ck_assert_msg(ts__st == (want), "%s returned %s, expected %s", #expr,                      \
                      ts_status_name(ts__st), ts_status_name(want));                               \
    } while (0)

/* Folder of the bundled model (models/ in the repository, or env TS_MODEL_DIR). */
static inline const char *ts_test_model_dir(void)
{
    const char *d = getenv("TS_MODEL_DIR");
    return d ? d : "models";
}

/* Folder of the built binaries (env TS_BUILD_DIR, default build). */
static inline const char *ts_test_build_dir(void)
{
    const char *d = getenv("TS_BUILD_DIR");
    return d ? d : "build";
}

/* True when TS_TEST_QUICK is set (sanitizer builds): shrink the heaviest cases. */
static inline int ts_test_quick(void)
{
    return getenv("TS_TEST_QUICK") != NULL;
}

/* The text of the file at path in buf (at most size - 1 bytes, NUL-terminated);
 * the test fails when it cannot be opened. Returns buf. */
static inline char *ts_test_read_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A host copy of `bytes` of ring r's backend memory at ptr (ts_free it). */
static inline void *ts_test_backend_host(ts_ring_t *r, const void *ptr, size_t bytes)
{
    void *h = ts_malloc(bytes ? bytes : 1);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(ts_backend_download(ts_ring_backend(r), h, ptr, bytes), TS_OK);
    return h;
}

/* A host copy of p's words (its shape: nq + np limbs of N; ts_free it):
 * tests read polynomials through this, never p->data, so that they run on
 * backends whose memory the host cannot read (a GPU, devemu). */
static inline uint64_t *ts_test_poly_host(const ts_poly_t *p)
{
    size_t words = (size_t)(p->nq + p->np) * ts_ring_n(p->ring);
    return ts_test_backend_host(p->ring, p->data, words * sizeof(uint64_t));
}

#endif
