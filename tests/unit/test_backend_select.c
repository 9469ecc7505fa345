/*
 * Run-time backend selection (issue 9) in the daemon and the CLI: the
 * `backend` directive is a validated enum (an unknown value fails with
 * file:line), tesserad starts with `backend: auto` and logs what it chose,
 * refuses `backend: gpu` with a clear message where no working GPU exists
 * (skipped where one does), and `tessera --backend` refuses the same way.
 */
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"
#include "server/tesserad.h"
#include "tests/unit/net_test_util.h"

static bool have_gpu(void)
{
    ts_gpu_info_t info;
    char why[256];
    return ts_gpu_probe(&info, why, sizeof why) == TS_OK;
}

static void slurp(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

START_TEST(test_backend_config_enum)
{
    static const char *ok[] = {"auto", "cpu", "gpu", "devemu"};
    for (int i = 0; i < 4; i++) {
        char text[256], err[512] = "";
        snprintf(text, sizeof text, "tls:\n  cert: a.crt\n  key: a.key\nbackend: %s\n", ok[i]);
        ts_srv_config_t cfg;
        ts_srv_config_defaults(&cfg);
        ck_assert_ts_ok(
            ts_srv_config_load_string(text, strlen(text), "t.yaml", &cfg, err, sizeof err));
        ck_assert_str_eq(ts_srv_backend_names[cfg.backend], ok[i]);
    }
    ts_srv_config_t cfg;
    ts_srv_config_defaults(&cfg);
    ck_assert_str_eq(ts_srv_backend_names[cfg.backend], "auto");
    const char *bad = "tls:\n  cert: a.crt\n  key: a.key\nbackend: tpu\n";
    char err[512] = "";
    ck_assert_ts_status(
        ts_srv_config_load_string(bad, strlen(bad), "t.yaml", &cfg, err, sizeof err), TS_ECONFIG);
    ck_assert_msg(strstr(err, "t.yaml:4") != NULL, "error without file:line: %s", err);
    ck_assert_msg(strstr(err, "tpu") || strstr(err, "auto"), "error names neither: %s", err);
}
END_TEST

START_TEST(test_backend_apply_names)
{
    char used[16], why[400];
    ck_assert_ts_status(ts_srv_backend_apply("tpu", used, sizeof used, why, sizeof why), TS_EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "cpu, gpu or auto"));
    if (!have_gpu()) {
        ts_status_t st = ts_srv_backend_apply("gpu", used, sizeof used, why, sizeof why);
        ck_assert_int_ne(st, TS_OK);
        ck_assert_ptr_nonnull(strstr(why, "backend gpu unavailable"));
    }
}
END_TEST

START_TEST(test_backend_daemon)
{
    char certs[512];
    net_tmpdir(certs, sizeof certs, "backend-certs");
    net_make_certs(certs, "alice");
    /* auto: starts, and says which backend and why. */
    net_daemon_t d;
    net_daemon_start(&d, certs, NULL, NULL, "backend: auto\n", false);
    ck_assert_int_eq(net_daemon_stop(&d), 0);
    char path[700], log[16384];
    snprintf(path, sizeof path, "%s/tesserad.log", d.dir);
    slurp(path, log, sizeof log);
    ck_assert_msg(strstr(log, "event=backend requested=auto backend=") != NULL, "log: %s", log);
    if (!have_gpu())
        ck_assert_msg(strstr(log, "backend=cpu") != NULL, "log: %s", log);
    net_daemon_cleanup(&d);
    /* devemu (the testing aid): starts on it and says so */
    net_daemon_start(&d, certs, NULL, NULL, "backend: devemu\n", false);
    ck_assert_int_eq(net_daemon_stop(&d), 0);
    snprintf(path, sizeof path, "%s/tesserad.log", d.dir);
    slurp(path, log, sizeof log);
    ck_assert_msg(strstr(log, "event=backend requested=devemu backend=devemu") != NULL, "log: %s",
                  log);
    net_daemon_cleanup(&d);

    if (have_gpu()) {
        fprintf(stderr, "test_backend_daemon: gpu refusal SKIPPED (a GPU is present)\n");
    } else {
        /* gpu: refuses to start, exit 1, the reason on stderr. */
        char dir[512], cfg[700], cmd[2048], out[4096];
        net_tmpdir(dir, sizeof dir, "backend-gpu");
        snprintf(cfg, sizeof cfg, "%s/tesserad.yaml", dir);
        FILE *f = fopen(cfg, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f,
                "listen: 127.0.0.1\nport: 0\nbackend: gpu\ntls:\n  cert: %s/server.crt\n"
                "  key: %s/server.key\nkeystore:\n  dir: %s/keys\n",
                certs, certs, dir);
        fclose(f);
        snprintf(cmd, sizeof cmd, "%s/tesserad --config %s 2> %s/err.txt", ts_test_build_dir(), cfg,
                 dir);
        int rc = system(cmd);
        ck_assert(WIFEXITED(rc));
        ck_assert_int_eq(WEXITSTATUS(rc), 1);
        snprintf(path, sizeof path, "%s/err.txt", dir);
        slurp(path, out, sizeof out);
        ck_assert_msg(strstr(out, "refusing to start: backend gpu unavailable") != NULL,
                      "stderr: %s", out);

        /* The CLI: --backend gpu is refused before the command runs. */
        snprintf(cmd, sizeof cmd, "%s/tessera --backend gpu params > /dev/null 2> %s/err.txt",
                 ts_test_build_dir(), dir);
        rc = system(cmd);
        ck_assert(WIFEXITED(rc));
        ck_assert_int_eq(WEXITSTATUS(rc), 1);
        slurp(path, out, sizeof out);
        ck_assert_msg(strstr(out, "backend gpu unavailable") != NULL, "stderr: %s", out);
        net_rm_rf(dir);
    }
    /* An unknown name is a usage error. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/tessera --backend tpu params > /dev/null 2>&1",
             ts_test_build_dir());
    int rc = system(cmd);
    ck_assert(WIFEXITED(rc));
    ck_assert_int_eq(WEXITSTATUS(rc), 2);
    net_rm_rf(certs);
}
END_TEST

TS_TEST_SUITE(backend_select)
{
    Suite *s = suite_create("backend_select");
    TCase *tc = ts_tcase("select", 0);
    tcase_add_test(tc, test_backend_config_enum);
    tcase_add_test(tc, test_backend_apply_names);
    tcase_add_test(tc, test_backend_daemon);
    suite_add_tcase(s, tc);
    return s;
}
