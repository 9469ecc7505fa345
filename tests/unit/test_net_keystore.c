/*
 * The daemon's key store (server/keystore.c): chunked upload, resume after the
 * store is reopened (a daemon restart), hash verification on completion and on
 * load, quota, file modes, and crash leftovers (stray temporary files, a map
 * that claims chunks the data file lacks) never producing a wrong key.
 */
#include <sys/stat.h>

#include "server/tesserad.h"
#include "tests/unit/net_test_util.h"

enum { CHUNK = 4096 };

static void fill(uint8_t *buf, size_t n, uint8_t salt)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(i * 131 + salt + (i >> 9));
}

static void put_all(ts_keystore_t *ks, const char *ns, const uint8_t sha[32], const uint8_t *key,
                    size_t n, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        size_t off = (size_t)i * CHUNK, m = n - off < CHUNK ? n - off : CHUNK;
        bool all = false;
        ck_assert_ts_ok(ts_keystore_put_chunk(ks, ns, sha, i, key + off, m, &all));
    }
}

START_TEST(test_upload_resume_verify)
{
    char dir[512];
    net_tmpdir(dir, sizeof dir, "ks");
    size_t n = 5 * CHUNK + 100;
    uint8_t *key = malloc(n), sha[32];
    fill(key, n, 1);
    ts_sha256(key, n, sha);
    ts_keystore_t *ks;
    ck_assert_ts_ok(ts_keystore_open(dir, 1 << 20, CHUNK, &ks));
    ts_key_status_t st;
    ck_assert_ts_ok(ts_keystore_query(ks, "alice", sha, &st));
    ck_assert(!st.known);
    ck_assert_ts_ok(ts_keystore_begin(ks, "alice", sha, n, &st));
    ck_assert_uint_eq(st.chunk_count, 6);
    ck_assert_uint_eq(st.received, 0);
    put_all(ks, "alice", sha, key, n, 0, 3);
    /* A wrong chunk length and an index out of range are refused. */
    bool all;
    ck_assert_ts_status(ts_keystore_put_chunk(ks, "alice", sha, 3, key, 10, &all), TS_EINVAL);
    ck_assert_ts_status(ts_keystore_put_chunk(ks, "alice", sha, 6, key, 100, &all), TS_ERANGE);
    ts_keystore_free(ks); /* "restart" */

    ck_assert_ts_ok(ts_keystore_open(dir, 1 << 20, CHUNK, &ks));
    ck_assert_ts_ok(ts_keystore_begin(ks, "alice", sha, n, &st));
    ck_assert_uint_eq(st.received, 3);
    ck_assert_int_eq(st.have[0], 0x07);
    ck_assert(!ts_keystore_has(ks, "alice", sha, NULL)); /* not visible before completion */
    put_all(ks, "alice", sha, key, n, 3, 6);
    ck_assert_ts_ok(ts_keystore_finish_begin(ks, "alice", sha));
    ck_assert_ts_ok(ts_keystore_finish(ks, "alice", sha));
    ts_keystore_finish_end(ks, "alice", sha, TS_OK);
    uint64_t size = 0;
    ck_assert(ts_keystore_has(ks, "alice", sha, &size));
    ck_assert_uint_eq(size, n);
    ck_assert(!ts_keystore_has(ks, "bob", sha, NULL)); /* namespaces are separate */
    uint8_t *back;
    size_t bn;
    ck_assert_ts_ok(ts_keystore_load(ks, "alice", sha, &back, &bn));
    ck_assert_uint_eq(bn, n);
    ck_assert(memcmp(back, key, n) == 0);
    ts_free(back);
    char path[900], hex[65];
    ts_sha256_hex(sha, hex);
    snprintf(path, sizeof path, "%s/alice/%s.key", dir, hex);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0600);
    /* A key corrupted on disk is refused on load. */
    FILE *f = fopen(path, "r+b");
    fseek(f, 100, SEEK_SET);
    fputc(key[100] ^ 0xff, f);
    fclose(f);
    ck_assert_ts_status(ts_keystore_load(ks, "alice", sha, &back, &bn), TS_EFORMAT);
    ts_keystore_free(ks);
    free(key);
    net_rm_rf(dir);
}
END_TEST

START_TEST(test_wrong_bytes_and_leftovers)
{
    char dir[512];
    net_tmpdir(dir, sizeof dir, "ks2");
    size_t n = 3 * CHUNK;
    uint8_t *key = malloc(n), *other = malloc(n), sha[32];
    fill(key, n, 7);
    fill(other, n, 9);
    ts_sha256(key, n, sha);
    ts_keystore_t *ks;
    ck_assert_ts_ok(ts_keystore_open(dir, 1 << 20, CHUNK, &ks));
    ts_key_status_t st;
    /* Bytes that do not hash to the announced name: discarded, nothing stored. */
    ck_assert_ts_ok(ts_keystore_begin(ks, "ns", sha, n, &st));
    put_all(ks, "ns", sha, other, n, 0, 3);
    ck_assert_ts_ok(ts_keystore_finish_begin(ks, "ns", sha));
    ck_assert_ts_status(ts_keystore_finish(ks, "ns", sha), TS_EFORMAT);
    ts_keystore_finish_end(ks, "ns", sha, TS_EFORMAT);
    ck_assert(!ts_keystore_has(ks, "ns", sha, NULL));
    ck_assert_uint_eq(ts_keystore_usage(ks, "ns"), 0);
    ck_assert_ts_ok(ts_keystore_query(ks, "ns", sha, &st));
    ck_assert(!st.known);
    /* Crash leftovers: a stray temporary file and a map claiming every chunk. */
    ck_assert_ts_ok(ts_keystore_begin(ks, "ns", sha, n, &st));
    put_all(ks, "ns", sha, key, n, 0, 1);
    ts_keystore_free(ks);
    char hex[65], path[900];
    ts_sha256_hex(sha, hex);
    snprintf(path, sizeof path, "%s/ns/%s.key.tmp123", dir, hex);
    FILE *f = fopen(path, "wb");
    fputs("half a key", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/ns/%s.map", dir, hex);
    f = fopen(path, "r+b");
    fseek(f, 24, SEEK_SET);
    fputc(0x07, f); /* "all three chunks present" — only chunk 0 was written */
    fclose(f);
    ck_assert_ts_ok(ts_keystore_open(dir, 1 << 20, CHUNK, &ks));
    ck_assert(!ts_keystore_has(ks, "ns", sha, NULL)); /* the stray file is not a key */
    ck_assert_ts_ok(ts_keystore_begin(ks, "ns", sha, n, &st));
    ck_assert_uint_eq(st.received, 3);
    ck_assert_ts_ok(ts_keystore_finish_begin(ks, "ns", sha));
    /* The hash check catches the lie; no wrong key ever becomes visible. */
    ck_assert_ts_status(ts_keystore_finish(ks, "ns", sha), TS_EFORMAT);
    ts_keystore_finish_end(ks, "ns", sha, TS_EFORMAT);
    ck_assert(!ts_keystore_has(ks, "ns", sha, NULL));
    /* Starting over works. */
    ck_assert_ts_ok(ts_keystore_begin(ks, "ns", sha, n, &st));
    ck_assert_uint_eq(st.received, 0);
    put_all(ks, "ns", sha, key, n, 0, 3);
    ck_assert_ts_ok(ts_keystore_finish_begin(ks, "ns", sha));
    ck_assert_ts_ok(ts_keystore_finish(ks, "ns", sha));
    ts_keystore_finish_end(ks, "ns", sha, TS_OK);
    ck_assert(ts_keystore_has(ks, "ns", sha, NULL));
    ts_keystore_free(ks);
    free(key);
    free(other);
    net_rm_rf(dir);
}
END_TEST

START_TEST(test_quota_and_names)
{
    char dir[512];
    net_tmpdir(dir, sizeof dir, "ks3");
    ts_keystore_t *ks;
    ck_assert_ts_ok(ts_keystore_open(dir, 10000, CHUNK, &ks));
    uint8_t a[32] = {1}, b[32] = {2};
    ts_key_status_t st;
    ck_assert_ts_ok(ts_keystore_begin(ks, "q", a, 6000, &st));
    /* The reservation counts: 6000 + 6000 > 10000. */
    ck_assert_ts_status(ts_keystore_begin(ks, "q", b, 6000, &st), TS_ELIMIT);
    ck_assert_ts_ok(ts_keystore_begin(ks, "other", b, 6000, &st)); /* per namespace */
    /* Same hash, other size: refused. */
    ck_assert_ts_status(ts_keystore_begin(ks, "q", a, 6001, &st), TS_EMISMATCH);
    /* After a restart the reservation of the unfinished upload still counts. */
    ts_keystore_free(ks);
    ck_assert_ts_ok(ts_keystore_open(dir, 10000, CHUNK, &ks));
    ck_assert_uint_eq(ts_keystore_usage(ks, "q"), 6000);
    ck_assert_ts_status(ts_keystore_begin(ks, "q", b, 6000, &st), TS_ELIMIT);
    /* Namespaces are plain names: no paths. */
    ck_assert_ts_status(ts_keystore_begin(ks, "../x", b, 10, &st), TS_EINVAL);
    ck_assert_ts_status(ts_keystore_begin(ks, "", b, 10, &st), TS_EINVAL);
    ck_assert_ts_status(ts_keystore_begin(ks, "q", b, 0, &st), TS_EINVAL);
    ts_keystore_free(ks);
    net_rm_rf(dir);
}
END_TEST

TS_TEST_SUITE(net_keystore)
{
    Suite *s = suite_create("net_keystore");
    TCase *tc = ts_tcase("keystore", 0);
    tcase_add_test(tc, test_upload_resume_verify);
    tcase_add_test(tc, test_wrong_bytes_and_leftovers);
    tcase_add_test(tc, test_quota_and_names);
    suite_add_tcase(s, tc);
    return s;
}
