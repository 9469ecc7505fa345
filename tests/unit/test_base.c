/* core/base: status table, allocator and fault injection, arenas, logging, randomness. */
#include "tests/unit/ts_test.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

/* ---------------------------------------------------------------- status */

START_TEST(test_status_table)
{
    static const int codes[] = {
#define X(name, value, msg) value,
        TS_STATUS_MAP(X)
#undef X
    };
    size_t n = sizeof codes / sizeof codes[0];
    ck_assert_int_eq(codes[0], 0);
    ck_assert_str_eq(ts_status_name(TS_OK), "TS_OK");
    ck_assert_str_eq(ts_status_name(TS_ELEVEL), "TS_ELEVEL");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            ck_assert_msg(codes[i] < 0, "failure codes are negative (%d)", codes[i]);
        ck_assert_str_ne(ts_strerror(codes[i]), "unknown status");
        for (size_t j = 0; j < i; j++) {
            ck_assert_int_ne(codes[i], codes[j]);
            ck_assert_str_ne(ts_strerror(codes[i]), ts_strerror(codes[j]));
        }
    }
    ck_assert_str_eq(ts_strerror(12345), "unknown status");
    ck_assert_str_eq(ts_status_name(-9999), "TS_UNKNOWN");
}
END_TEST

/* ------------------------------------------------------------- allocator */

START_TEST(test_alloc_basic)
{
    int64_t live = ts_alloc_live();
    uint8_t *p = ts_malloc(100);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    ck_assert_uint_eq(ts_alloc_size(p), 100);
    memset(p, 0xab, 100);
    p = ts_realloc(p, 1000);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(ts_alloc_size(p), 1000);
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(p[i], 0xab);
    ck_assert_int_eq(ts_alloc_live(), live + 1);
    ts_free_secret(p);
    ck_assert_int_eq(ts_alloc_live(), live);
    uint64_t *z = ts_calloc(10, sizeof *z);
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(z[i], 0);
    ts_free(z);
    ts_free(NULL);
    ts_free_secret(NULL);
    ck_assert_ptr_null(ts_calloc(SIZE_MAX / 2, 4)); /* overflow is refused, not wrapped */
    ck_assert_ptr_null(ts_malloc(SIZE_MAX - 8));
    size_t out;
    ck_assert(!ts_size_mul(SIZE_MAX, 2, &out));
    ck_assert(ts_size_mul(3, 5, &out) && out == 15);
    ck_assert(!ts_size_add(SIZE_MAX, 1, &out));
}
END_TEST

START_TEST(test_alloc_fault_injection)
{
    /* The third allocation from now fails, once. */
    ts_alloc_fail_after(3, false);
    void *a = ts_malloc(8), *b = ts_malloc(8), *c = ts_malloc(8), *d = ts_malloc(8);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(d);
    ts_free(a);
    ts_free(b);
    ts_free(d);
    /* Sticky: everything from the second on fails until disarmed. */
    ts_alloc_fail_after(2, true);
    a = ts_malloc(8);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(ts_malloc(8));
    ck_assert_ptr_null(ts_malloc(8));
    ts_alloc_fail_after(0, false);
    b = ts_malloc(8);
    ck_assert_ptr_nonnull(b);
    ts_free(a);
    ts_free(b);
}
END_TEST

static int g_hook_allocs;
static void *counting_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    g_hook_allocs++;
    void *p = NULL;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}
static void counting_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

START_TEST(test_alloc_hook)
{
    ts_allocator_t a = {counting_alloc, counting_free, NULL};
    ts_set_allocator(&a);
    void *p = ts_malloc(32);
    ts_free(p);
    ts_set_allocator(NULL);
    ck_assert_int_eq(g_hook_allocs, 1);
}
END_TEST

#if defined(__GLIBC__)
/* ts_malloc_tune's one arena: a thread's blocks come from the main heap (the
 * brk segment, where the main thread's are) instead of an arena of its own,
 * whose 64 MiB heaps glibc unmaps as they empty (tesserad's decode runs on a
 * libuv worker thread). Skipped when the main thread's block is not in the
 * brk segment either (another allocator: AddressSanitizer, valgrind). */
extern char end; /* the linker's end of the data segment, where brk starts */
static void *thread_block(void *arg)
{
    void **out = arg;
    *out = ts_malloc((size_t)1 << 20);
    return NULL;
}

static bool in_brk_heap(const void *p)
{
    return (const char *)p >= &end && (const char *)p < (const char *)sbrk(0);
}

START_TEST(test_alloc_tune_one_arena)
{
    void *q = ts_malloc((size_t)1 << 20), *p = NULL;
    ck_assert_ptr_nonnull(q);
    if (in_brk_heap(q)) {
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, thread_block, &p), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_ptr_nonnull(p);
        ck_assert_msg(in_brk_heap(p), "a thread's block at %p, outside the main heap", p);
    }
    ts_free(p);
    ts_free(q);
}
END_TEST
#endif

START_TEST(test_memzero_and_ct_compare)
{
    uint8_t buf[64];
    memset(buf, 0x5a, sizeof buf);
    ts_memzero(buf, sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        ck_assert_uint_eq(buf[i], 0);
    uint8_t x[4] = {1, 2, 3, 4}, y[4] = {1, 2, 3, 4};
    ck_assert(ts_memeq_ct(x, y, 4));
    y[3] = 5;
    ck_assert(!ts_memeq_ct(x, y, 4));
}
END_TEST

START_TEST(test_arena)
{
    ts_arena_t ar;
    ck_assert_ts_ok(ts_arena_init(&ar, 256));
    uint8_t *a = ts_arena_alloc(&ar, 10), *b = ts_arena_alloc(&ar, 100);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq((uintptr_t)b % 64, 0);
    ck_assert(b >= a + 10);
    ck_assert_ptr_null(ts_arena_alloc(&ar, 200)); /* exhausted */
    ck_assert_ptr_null(ts_arena_alloc(&ar, SIZE_MAX));
    ts_arena_reset(&ar);
    ck_assert_ptr_eq(ts_arena_alloc(&ar, 10), a);
    ts_arena_clear(&ar);
    ts_arena_clear(&ar); /* idempotent */
}
END_TEST

/* --------------------------------------------------------------- logging */

typedef struct {
    char last[10000];
    int lines;
} sink_t;

static void capture(void *ctx, ts_log_level_t level, const char *line)
{
    (void)level;
    sink_t *s = ctx;
    snprintf(s->last, sizeof s->last, "%s", line);
    s->lines++;
}

START_TEST(test_log_levels_and_json)
{
    sink_t s = {0};
    ts_log_set_sink(capture, &s);
    ts_log_set_level(TS_LOG_WARN);
    ts_log(TS_LOG_INFO, "test", "hidden");
    ck_assert_int_eq(s.lines, 0);
    ts_log(TS_LOG_ERROR, "test", "shown %d", 42);
    ck_assert_int_eq(s.lines, 1);
    ck_assert_ptr_nonnull(strstr(s.last, "error test: shown 42"));

    ts_log_set_json(true);
    ts_log(TS_LOG_WARN, "mod\"x", "quote \" backslash \\ newline \n tab \t end");
    ck_assert_ptr_nonnull(strstr(s.last, "\"level\":\"warn\""));
    ck_assert_ptr_nonnull(strstr(s.last, "\"module\":\"mod\\\"x\""));
    ck_assert_ptr_nonnull(
        strstr(s.last, "\"msg\":\"quote \\\" backslash \\\\ newline \\n tab \\u0009 end\"}"));
    ck_assert(s.last[0] == '{');
    ck_assert(strchr(s.last, '\n') == NULL);

    /* Long messages are truncated at 4 KiB: no call can dump a big buffer. */
    char big[9000];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ts_log_set_json(false);
    ts_log(TS_LOG_ERROR, "t", "%s", big);
    ck_assert_uint_lt(strlen(s.last), 4096 + 100);

    ts_log_level_t lv;
    ck_assert_ts_ok(ts_log_level_parse("debug", &lv));
    ck_assert_int_eq(lv, TS_LOG_DEBUG);
    ck_assert_ts_status(ts_log_level_parse("loud", &lv), TS_EINVAL);
    ts_log_set_sink(NULL, NULL);
    ts_log_set_level(TS_LOG_INFO);
}
END_TEST

/* ------------------------------------------------------------ randomness */

START_TEST(test_prng_known_answer)
{
    /* AES-256 of the zero block under the zero key (FIPS-197 style KAT): the
     * first keystream block of seed 0, stream 0. */
    static const uint8_t want[16] = {0xdc, 0x95, 0xc0, 0x78, 0xa2, 0x40, 0x89, 0x89,
                                     0xad, 0x48, 0xa2, 0x14, 0x92, 0x84, 0x20, 0x87};
    uint8_t seed[TS_SEED_BYTES] = {0}, got[16];
    ts_prng_t *g;
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 0, &g));
    ck_assert_ts_ok(ts_prng_bytes(g, got, sizeof got));
    ck_assert_mem_eq(got, want, 16);
    ts_prng_free(g);
}
END_TEST

START_TEST(test_prng_seeded_determinism)
{
    uint8_t seed[TS_SEED_BYTES];
    for (int i = 0; i < TS_SEED_BYTES; i++)
        seed[i] = (uint8_t)i;
    ts_prng_t *a, *b, *c;
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 7, &a));
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 7, &b));
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 8, &c));
    /* Same stream regardless of how the reads are split. */
    uint8_t x[10000], y[10000], z[10000];
    ck_assert_ts_ok(ts_prng_bytes(a, x, sizeof x));
    size_t off = 0;
    for (size_t step = 1; off < sizeof y; step = step * 3 + 1) {
        size_t n = step < sizeof y - off ? step : sizeof y - off;
        ck_assert_ts_ok(ts_prng_bytes(b, y + off, n));
        off += n;
    }
    ck_assert_mem_eq(x, y, sizeof x);
    ck_assert_ts_ok(ts_prng_bytes(c, z, sizeof z));
    ck_assert(memcmp(x, z, sizeof x) != 0);
    ts_prng_free(a);
    ts_prng_free(b);
    ts_prng_free(c);
    ts_prng_free(NULL);
}
END_TEST

START_TEST(test_prng_os_and_uniform)
{
    ts_prng_t *a, *b;
    ck_assert_ts_ok(ts_prng_new_os(&a));
    ck_assert_ts_ok(ts_prng_new_os(&b));
    uint8_t x[64], y[64];
    ck_assert_ts_ok(ts_prng_bytes(a, x, sizeof x));
    ck_assert_ts_ok(ts_prng_bytes(b, y, sizeof y));
    ck_assert(memcmp(x, y, sizeof x) != 0);

    /* Chi-square test of ts_prng_uniform over 7 buckets (df = 6): the 1e-6
     * quantile is ~ 36.2, so a correct generator fails about once in 10^6 runs. */
    enum { K = 7, DRAWS = 70000 };
    long counts[K] = {0};
    for (int i = 0; i < DRAWS; i++) {
        uint64_t v;
        ck_assert_ts_ok(ts_prng_uniform(a, K, &v));
        ck_assert_uint_lt(v, K);
        counts[v]++;
    }
    double chi2 = 0, expect = (double)DRAWS / K;
    for (int k = 0; k < K; k++)
        chi2 += (counts[k] - expect) * (counts[k] - expect) / expect;
    ck_assert_msg(chi2 < 36.2, "chi-square %.2f over 7 buckets", chi2);

    uint64_t v;
    ck_assert_ts_ok(ts_prng_uniform(a, 1, &v));
    ck_assert_uint_eq(v, 0);
    ck_assert_ts_status(ts_prng_uniform(a, 0, &v), TS_EINVAL);
    ck_assert_ts_ok(ts_prng_uniform(a, UINT64_MAX, &v));
    double d, sum = 0;
    for (int i = 0; i < 10000; i++) {
        ck_assert_ts_ok(ts_prng_double(a, &d));
        ck_assert(d >= 0.0 && d < 1.0);
        sum += d;
    }
    ck_assert_msg(fabs(sum / 10000 - 0.5) < 0.02, "mean %.4f", sum / 10000);
    ts_prng_free(a);
    ts_prng_free(b);
}
END_TEST

START_TEST(test_prng_alloc_failure)
{
    ts_prng_t *g = (ts_prng_t *)&g;
    ts_alloc_fail_after(1, false);
    ck_assert_ts_status(ts_prng_new_os(&g), TS_ENOMEM);
    ck_assert_ptr_null(g);
}
END_TEST

START_TEST(test_misc)
{
    uint64_t t0 = ts_now_ns(), t1 = ts_now_ns();
    ck_assert_uint_ge(t1, t0);
    ck_assert_int_ge(ts_cpu_count(), 1);
}
END_TEST

START_TEST(test_log2_exact)
{
    ck_assert_int_eq(ts_log2_exact(1), 0);
    ck_assert_int_eq(ts_log2_exact(2), 1);
    ck_assert_int_eq(ts_log2_exact(1024), 10);
    ck_assert_int_eq(ts_log2_exact(1ull << 63), 63);
    ck_assert_int_eq(ts_log2_exact(0), -1);
    ck_assert_int_eq(ts_log2_exact(3), -1);
    ck_assert_int_eq(ts_log2_exact(1536), -1);
}
END_TEST

TS_TEST_SUITE(base)
{
    Suite *s = suite_create("base");
    TCase *tc = ts_tcase("status", 0);
    tcase_add_test(tc, test_status_table);
    suite_add_tcase(s, tc);
    tc = ts_tcase("alloc", 0);
    tcase_add_test(tc, test_alloc_basic);
    tcase_add_test(tc, test_log2_exact);
    tcase_add_test(tc, test_alloc_fault_injection);
    tcase_add_test(tc, test_alloc_hook);
#if defined(__GLIBC__)
    tcase_add_test(tc, test_alloc_tune_one_arena);
#endif
    tcase_add_test(tc, test_memzero_and_ct_compare);
    tcase_add_test(tc, test_arena);
    suite_add_tcase(s, tc);
    tc = ts_tcase("log", 0);
    tcase_add_test(tc, test_log_levels_and_json);
    suite_add_tcase(s, tc);
    tc = ts_tcase("random", 0);
    tcase_add_test(tc, test_prng_known_answer);
    tcase_add_test(tc, test_prng_seeded_determinism);
    tcase_add_test(tc, test_prng_os_and_uniform);
    tcase_add_test(tc, test_prng_alloc_failure);
    tcase_add_test(tc, test_misc);
    suite_add_tcase(s, tc);
    return s;
}
