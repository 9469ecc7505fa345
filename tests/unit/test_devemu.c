/*
 * The suites whose code a GPU runs, on the device-memory emulation backend
 * (core/backend/devemu.c: host dereferences of backend memory fault, fresh
 * buffers hold a poison pattern, only the GPU backend's optional ops): each
 * suite runs in a child unit_tests with TS_TEST_BACKEND=devemu and must
 * pass. This keeps the paths a GPU takes (staged (de)serialization of keys
 * and ciphertexts, the sanitizer's upload, the full-diagonal matrix
 * products, ...) honest on machines without one; tests/gpu/run_all.sh runs
 * the same suites on a GPU. A first check that the emulation does fault on
 * a host dereference (else the suites would prove nothing).
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/backend/backend.h"
#include "tests/unit/ts_test.h"

/* The suites, cheapest first (together ~2 minutes on 2 cores; net_decode's
 * tesserad runs on devemu too, tests/unit/net_test_util.h). */
static const char *const suites[] = {
    "ring",        "rlwe",           "ckks_encoder",    "ckks_eval",    "ckks_lintrans",
    "ckks_serial", "serial",         "encode_sparse",   "boot",         "boot_encap",
    "convert",     "convert_secure", "nonlinear_slots", "nonlinear_he", "net_aggregate",
    "llm_serve",   "llm_enc",        "net_decode",
};
#define NSUITES (sizeof suites / sizeof suites[0])

/* A devemu buffer is backend memory the host cannot read: a child that
 * dereferences one dies of a signal; its words round-trip through
 * upload / download; a fresh buffer is not zeroed. */
START_TEST(test_devemu_faults)
{
    ts_backend_t *be;
    ck_assert_ts_ok(ts_backend_devemu_new(1, &be));
    ck_assert(!be->host_memory);
    ck_assert(ts_backend_is_devemu(be));
    ck_assert(!ts_backend_is_gpu(be)); /* its costs are the CPU's */
    uint64_t *d = NULL, h[4] = {1, 2, 3, 4}, back[4] = {0};
    ck_assert_ts_ok(ts_backend_alloc(be, sizeof h, (void **)&d));
    ck_assert_ts_ok(ts_backend_download(be, back, d, sizeof back));
    ck_assert_msg(back[0] != 0, "a fresh buffer came zeroed: code relying on that would pass");
    ck_assert_ts_ok(ts_backend_upload(be, d, h, sizeof h));
    ck_assert_ts_ok(ts_backend_download(be, back, d, sizeof back));
    ck_assert(!memcmp(h, back, sizeof h));
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *null = freopen("/dev/null", "w", stderr); /* quiet a sanitizer's report */
        (void)null;
        volatile uint64_t v = d[1]; /* must fault */
        (void)v;
        _exit(0);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    /* killed by the signal, or (ASan's handler) exited with an error */
    ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) == 0),
                  "a host read of devemu memory did not fault");
    ts_backend_buf_free(be, d);
    ts_backend_free(be);
}
END_TEST

START_TEST(test_devemu_suite)
{
    const char *suite = suites[_i];
    char exe[4096], log[256];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_msg(n > 0, "cannot find the test binary");
    exe[n] = '\0';
    snprintf(log, sizeof log, "/tmp/tessera-devemu-%d-%s.log", (int)getpid(), suite);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *f = freopen(log, "w", stdout);
        if (!f || dup2(fileno(stdout), 2) < 0)
            _exit(97);
        setenv("TS_TEST_BACKEND", "devemu", 1);
        setenv("CK_RUN_SUITE", suite, 1);
        setenv("CK_VERBOSITY", "normal", 1);
        unsetenv("CK_RUN_CASE");
        execl(exe, exe, (char *)NULL);
        _exit(98);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        char buf[4096] = "";
        FILE *f = fopen(log, "r");
        if (f) {
            fseek(f, 0, SEEK_END);
            long sz = ftell(f);
            fseek(f, sz > (long)sizeof buf - 1 ? sz - (long)sizeof buf + 1 : 0, SEEK_SET);
            size_t got = fread(buf, 1, sizeof buf - 1, f);
            buf[got] = '\0';
            fclose(f);
        }
        ck_abort_msg("suite %s on devemu: %s %d; its log's end:\n%s", suite,
                     WIFEXITED(st) ? "exit" : "signal",
                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), buf);
    }
    unlink(log);
}
END_TEST

TS_TEST_SUITE(devemu)
{
    Suite *s = suite_create("devemu");
    TCase *tc = ts_tcase("devemu", 900);
    tcase_add_test(tc, test_devemu_faults);
    tcase_add_loop_test(tc, test_devemu_suite, 0, (int)NSUITES);
    suite_add_tcase(s, tc);
    return s;
}
