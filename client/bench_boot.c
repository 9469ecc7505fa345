/*
 * CKKS bootstrapping benchmark (JSON): for each case (preset, slot count)
 * the latency of ts_boot_bootstrap on one thread and on all threads, the
 * levels left, and the precision in bits (-log2 |error| of every slot of
 * every run: mean, median, minimum) for inputs uniform in [-1, 1] + i [-1, 1].
 *
 * Cases: boot-n16-h192 at 2^15 and 2^7 slots, boot-n15-h192 at 2^7 slots
 * (--quick: test-boot-n10 at 2^9 and 2^3 slots). Each (case, threads) runs
 * in a forked child process (the CPU backend takes its thread count once per
 * process, from TS_THREADS; the parent never touches the backend), which
 * writes its JSON object to a temporary file. --backend NAME is applied in
 * the child, so that a GPU's CUDA context is made after the fork (tessera's
 * global --backend probes the GPU in the parent, and a CUDA context does not
 * survive fork); the backend that ran is reported.
 *
 * `tessera bench boot` (client/cmd_bench.c) and build/bench/bench_boot
 * (tests/bench/bench_boot.c) both run ts_bench_boot below; see usage().
 */
#include <complex.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client.h"

#include "core/circuits/circuits.h"
#include "core/ckks/ckks.h"
#include "gpu/gpu.h"

/* --backend: the compute backend each child makes its default (NULL: the CPU) */
static const char *bench_backend;

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        ts_status_t st__ = (expr);                                                                 \
        if (st__ != TS_OK) {                                                                       \
            fprintf(stderr, "bench_boot: %s failed: %s\n", #expr, ts_status_name(st__));           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    return (double)ts_now_ns() / 1e9;
}

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    char preset[64];
    int log_slots, cts, stc;
    int encap_h; /* sparse-secret encapsulation weight (0: off), from --encap */
} case_t;

static bool parse_case(const char *s, case_t *c)
{
    memset(c, 0, sizeof(*c));
    const char *colon = strchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof(c->preset))
        return false;
    memcpy(c->preset, s, (size_t)(colon - s));
    int n = sscanf(colon + 1, "%d:%d:%d", &c->log_slots, &c->cts, &c->stc);
    return n == 1 || n == 3;
}

void ts_bench_cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "model name", 10)) {
            char *v = strchr(line, ':');
            if (v) {
                v += 2;
                v[strcspn(v, "\n")] = 0;
                for (char *q = v; *q; q++)
                    if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
                        *q = ' ';
                snprintf(out, cap, "%s", v);
            }
            break;
        }
    }
    fclose(f);
}

/* One (case, threads) measurement, written as one JSON object to path. */
static int child(const char *params_dir, const case_t *c, int threads, int runs, const char *path)
{
    char file[1024];
    snprintf(file, sizeof(file), "%.900s/%.63s.yaml", params_dir, c->preset);
    ts_log_set_level(TS_LOG_ERROR);
    const char *be_name = "cpu";
    if (bench_backend) {
        CHECK(ts_backend_use_default(bench_backend));
        ts_backend_t *be = ts_backend_default();
        be_name = be && be->iface && be->iface->name ? be->iface->name : "none";
        if (strcmp(bench_backend, "auto") != 0 && strcmp(be_name, bench_backend) != 0) {
            fprintf(stderr, "bench_boot: backend %s requested, %s made (see the log above)\n",
                    bench_backend, be_name);
            return 1;
        }
    }
    ts_ckks_params_t *p;
    ts_cfg_error_t err;
    CHECK(ts_ckks_params_load_file(file, true, &p, &err));
    ts_boot_config_t cfg;
    CHECK(ts_boot_config_slots(p, c->log_slots, &cfg));
    if (c->cts) {
        cfg.cts_levels = c->cts;
        cfg.stc_levels = c->stc;
    }
    size_t n = (size_t)1 << cfg.log_slots;
    ts_prng_t *prng;
    CHECK(ts_prng_new_os(&prng));
    double t0 = now_s();
    ts_ckks_secret_key_t *sk;
    ts_ckks_evalkeys_t *ek;
    CHECK(ts_ckks_keygen_secret(p, prng, &sk));
    CHECK(ts_ckks_evalkeys_new(p, &ek));
    if (c->encap_h > 0)
        CHECK(ts_boot_config_encapsulate(p, c->encap_h, &cfg));
    CHECK(ts_boot_keygen(p, &cfg, ek, sk, prng));
    ts_boot_encap_keys_t *ekeys = NULL;
    if (c->encap_h > 0)
        CHECK(ts_boot_encap_keygen(p, &cfg, sk, prng, &ekeys));
    size_t nkeys = 0;
    CHECK(ts_boot_rotation_steps(p, &cfg, NULL, NULL, &nkeys, NULL));
    double t_keys = now_s() - t0;
    t0 = now_s();
    ts_boot_t *bt;
    CHECK(ts_boot_new(p, &cfg, &bt));
    if (ekeys)
        CHECK(ts_boot_set_encap_keys(bt, ekeys));
    double t_setup = now_s() - t0;
    ts_ckks_encoder_t *enc;
    ts_ckks_evaluator_t *ev;
    CHECK(ts_ckks_encoder_new(p, &enc));
    CHECK(ts_ckks_evaluator_new(p, ek, &ev));

    double complex *v = malloc(sizeof(double complex) * n);
    double complex *got = malloc(sizeof(double complex) * n);
    double *bits = malloc(sizeof(double) * n * (size_t)runs);
    double *lat = malloc(sizeof(double) * (size_t)runs);
    double *cpu = malloc(sizeof(double) * (size_t)runs);
    ts_ckks_plaintext_t *pt;
    ts_ckks_ciphertext_t *ct;
    int L = ts_ckks_params_max_level(p);
    CHECK(ts_ckks_plaintext_new(p, L, &pt));
    CHECK(ts_ckks_ciphertext_new(p, 0, &ct));
    uint64_t x = 0x243f6a8885a308d3ULL;
    int left = -1;
    ts_backend_counts_t bk = {0}; /* one bootstrap's backend calls and transfers */
    /* where the time goes: the phases summed over the runs, then their mean */
    double phase_s[TS_BOOT_PHASE_COUNT] = {0};
    CHECK(ts_boot_profile(bt, true));
    for (int r = 0; r < runs; r++) {
        for (size_t i = 0; i < n; i++) {
            double a[2];
            for (int k = 0; k < 2; k++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                a[k] = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
            }
            v[i] = a[0] + I * a[1];
        }
        CHECK(ts_ckks_encode(enc, v, n, n, 0, ts_ckks_params_scale(p), pt));
        CHECK(ts_ckks_encrypt_sk(sk, pt, prng, NULL, ct));
        ts_backend_counts_t k0;
        ts_backend_counts(ts_ring_backend(ts_ckks_params_ring(p)), &k0);
        ts_boot_phases_t ph0, ph1;
        CHECK(ts_boot_phases(bt, &ph0));
        double s = now_s(), c0 = cpu_s();
        CHECK(ts_boot_bootstrap(bt, ev, ct, ct));
        lat[r] = now_s() - s;
        CHECK(ts_boot_phases(bt, &ph1));
        for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++)
            phase_s[i] += (double)(ph1.ns[i] - ph0.ns[i]) * 1e-9 / runs;
        /* one bootstrap's: the same every run */
        ts_backend_counts_since(ts_ring_backend(ts_ckks_params_ring(p)), &k0, &bk);
        cpu[r] = cpu_s() - c0;
        left = ts_ckks_ciphertext_level(ct);
        CHECK(ts_ckks_decrypt(sk, ct, pt));
        CHECK(ts_ckks_decode(enc, pt, got, n));
        for (size_t i = 0; i < n; i++) {
            double e = cabs(got[i] - v[i]);
            bits[(size_t)r * n + i] = e > 0 ? -log2(e) : 60;
        }
    }
    size_t m = n * (size_t)runs;
    qsort(bits, m, sizeof(double), cmp_double);
    double mean = 0;
    for (size_t i = 0; i < m; i++)
        mean += bits[i];
    mean /= (double)m;
    qsort(lat, (size_t)runs, sizeof(double), cmp_double);
    qsort(cpu, (size_t)runs, sizeof(double), cmp_double);
    int cd, em, sd;
    CHECK(ts_boot_depth(p, &cfg, &cd, &em, &sd, NULL));
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f,
            "{\"preset\": \"%s\", \"log_n\": %d, \"slots\": %zu, \"threads\": %d, \"runs\": %d,\n"
            "     \"log_qp\": %.1f, \"hamming_weight\": %lld, \"max_level\": %d,\n"
            "     \"cts_levels\": %d, \"evalmod_levels\": %d, \"stc_levels\": %d, \"k\": %.0f, "
            "\"cheb_degree\": %d, \"double_angle\": %d, \"log_message_ratio\": %g, "
            "\"rotation_keys\": %zu,\n"
            "     \"levels_left\": %d, \"latency_s_median\": %.3f, \"latency_s_min\": %.3f, "
            "\"cpu_s_median\": %.3f,\n"
            "     \"precision_bits_mean\": %.2f, \"precision_bits_median\": %.2f, "
            "\"precision_bits_min\": %.2f,\n"
            "     \"keygen_s\": %.2f, \"setup_s\": %.2f, \"secret\": \"%s\", \"encap_h\": %d, "
            "\"encap_log_qp\": %.1f, \"backend\": \"%s\",\n"
            "     \"backend_calls\": %llu, \"upload_mib\": %.2f, \"download_mib\": %.2f,\n"
            "     \"phases_s_mean\": {",
            c->preset, ts_ckks_params_log_n(p), n, threads, runs, ts_ckks_params_logqp(p),
            (long long)ts_ckks_params_hamming_weight(p), L, cd, em, sd, cfg.k, cfg.cheb_degree,
            cfg.double_angle, cfg.log_message_ratio, nkeys, left, lat[runs / 2], lat[0],
            cpu[runs / 2], mean, bits[m / 2], bits[0], t_keys, t_setup,
            ts_ckks_params_secret(p) == TS_CKKS_SECRET_TERNARY ? "ternary" : "sparse_ternary",
            cfg.encap_h, ts_boot_encap_keys_logqp(ekeys), be_name, (unsigned long long)bk.calls,
            (double)bk.upload_bytes / 1048576.0, (double)bk.download_bytes / 1048576.0);
    for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++)
        fprintf(f, "%s\"%s\": %.4f", i ? ", " : "", ts_boot_phase_name(i), phase_s[i]);
    fprintf(f, "}}");
    fclose(f);
    printf("%-16s N=2^%d slots=%-6zu threads=%-2d latency %8.3f s (cpu %.3f s)  levels left %d  "
           "precision mean %.2f median %.2f min %.2f bits  (keys %zu, keygen %.1f s)%s%s\n",
           c->preset, ts_ckks_params_log_n(p), n, threads, lat[runs / 2], cpu[runs / 2], left, mean,
           bits[m / 2], bits[0], nkeys, t_keys, bench_backend ? "  backend " : "",
           bench_backend ? be_name : "");
    printf("%-16s   phases (mean s):", "");
    for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++)
        printf(" %s %.3f", ts_boot_phase_name(i), phase_s[i]);
    printf("\n");
    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(ct);
    free(v);
    free(got);
    free(bits);
    free(lat);
    free(cpu);
    ts_ckks_evaluator_free(ev);
    ts_ckks_encoder_free(enc);
    ts_boot_free(bt);
    ts_boot_encap_keys_free(ekeys);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tessera bench boot [--json PATH] [--quick] [--runs R] [--threads N]\n"
               "                          [--case PRESET:LOG_SLOTS[:CTS:STC]]... [--params-dir D]\n"
               "                          [--encap H] [--backend cpu|gpu|auto|devemu]\n"
               "       (build/bench/bench_boot takes the same options)\n\n"
               "CKKS bootstrapping: latency (wall and process CPU time) on 1 thread and on N\n"
               "threads (default: all cores), levels left, precision (mean, median, min bits\n"
               "over every slot of every run) for random slots in [-1, 1] + i [-1, 1], and\n"
               "where the time goes: the mean seconds of each phase (ts_boot_profile:\n"
               "mod_raise, subsum = the trace to sparse slots, cts, eval_mod, stc; JSON:\n"
               "phases_s_mean).\n"
               "Default cases: boot-n16-h192:15, boot-n16-h192:7, boot-n15-h192:7:1:1 (minutes,\n"
               "GBs of keys); --quick: test-boot-n10:9 and test-boot-n10:3 (insecure, seconds).\n"
               "A case is a preset of --params-dir (default configs/params), log2 of the slot\n"
               "count and optionally the CoeffToSlot / SlotToCoeff level budgets. A table on\n"
               "stdout; with --json the report (machine, threads, parameters, results).\n"
               "--encap H: sparse-secret encapsulation, ModRaise under an ephemeral secret of\n"
               "Hamming weight H (for dense-secret presets such as boot-n16-dense, H = 32).\n"
               "--backend NAME: the compute backend of the measurement, made in each case's\n"
               "child process (use this rather than tessera's global --backend, which starts\n"
               "CUDA before the fork); a case fails when another backend was made (gpu without\n"
               "a working GPU). JSON: backend.\n");
}

/* One (case, threads) measurement in a forked child; its JSON object is appended to out. */
static int run_case(const char *params_dir, const case_t *c, int threads, int runs, FILE *out,
                    bool *first)
{
    char tmp[] = "/tmp/bench_boot_XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0)
        return 1;
    close(fd);
    fflush(stdout);
    fflush(stderr);
    if (out)
        fflush(out);
    pid_t pid = fork();
    if (pid < 0) {
        unlink(tmp);
        return 1;
    }
    if (pid == 0) {
        char tbuf[16];
        snprintf(tbuf, sizeof(tbuf), "%d", threads);
        setenv("TS_THREADS", tbuf, 1);
        /* keep freed ciphertext buffers in the heap instead of returning them
         * to the kernel after every operation (page faults were ~10% of the
         * time); a server process would do the same */
        mallopt(M_MMAP_THRESHOLD, 32 << 20); /* the largest glibc allows */
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
        int rc = child(params_dir, c, threads, runs, tmp);
        fflush(stdout);
        _exit(rc);
    }
    int wst = 0;
    while (waitpid(pid, &wst, 0) < 0)
        ;
    int status = 0;
    FILE *f = fopen(tmp, "r");
    if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0 || !f) {
        fprintf(stderr, "bench boot: case %s:%d threads %d failed\n", c->preset, c->log_slots,
                threads);
        status = 1;
    } else if (out) {
        char buf[4096];
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        buf[len] = 0;
        fprintf(out, "%s    %s", *first ? "" : ",\n", buf);
        *first = false;
    }
    if (f)
        fclose(f);
    unlink(tmp);
    return status;
}

int ts_bench_boot(int argc, char **argv)
{
    const char *json = NULL;
    bool quick = false;
    int runs = 0, threads = 0, encap = 0;
    case_t cases[16];
    int ncases = 0;
    static char root_dir[512];
    const char *params_dir = "configs/params", *root = getenv("TS_SOURCE_DIR");
    if (root) {
        snprintf(root_dir, sizeof(root_dir), "%s/configs/params", root);
        params_dir = root_dir;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--params-dir") && i + 1 < argc)
            params_dir = argv[++i];
        else if (!strcmp(argv[i], "--encap") && i + 1 < argc)
            encap = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            bench_backend = argv[++i];
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
            if (ncases == 16 || !parse_case(argv[++i], &cases[ncases++])) {
                fprintf(stderr,
                        "bench boot: bad case %s (PRESET:LOG_SLOTS[:CTS:STC], 16 at most)\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (threads < 0 || threads > 1024 || runs < 0 || runs > 1000) {
        fprintf(stderr, "bench boot: --threads 0..1024, --runs 1..1000\n");
        return 2;
    }
    if (ncases == 0) {
        const char *def[] = {"boot-n16-h192:15", "boot-n16-h192:7", "boot-n15-h192:7:1:1"};
        const char *qdef[] = {"test-boot-n10:9", "test-boot-n10:3"};
        const char **list = quick ? qdef : def;
        int cnt = quick ? 2 : 3;
        for (int i = 0; i < cnt; i++)
            parse_case(list[i], &cases[ncases++]);
    }
    if (encap < 0) {
        fprintf(stderr, "bench boot: --encap H needs H >= 1\n");
        return 2;
    }
    for (int ci = 0; ci < ncases; ci++)
        cases[ci].encap_h = encap;
    if (runs <= 0)
        runs =
            quick ? 2 : 3; /* per (case, threads): the precision is over every slot of every run */
    int ncpu = ts_cpu_count();
    int tlist[2] = {1, threads > 0 ? threads : ncpu};
    int nt = tlist[1] == 1 ? 1 : 2;
    char model[256];
    ts_bench_cpu_model(model, sizeof(model));
    FILE *out = json ? fopen(json, "w") : NULL;
    if (json && !out) {
        fprintf(stderr, "bench boot: cannot write %s\n", json);
        return 1;
    }
    if (out) {
        fprintf(out,
                "{\n  \"benchmark\": \"boot\",\n  \"machine\": {\"cpu\": \"%s\", \"cores\": %d},\n"
                "  \"threads\": [%d%s",
                model, ncpu, tlist[0], nt == 2 ? ", " : "");
        if (nt == 2)
            fprintf(out, "%d", tlist[1]);
        fprintf(out, "],\n  \"quick\": %s,\n  \"runs\": %d,\n  \"parameters\": [",
                quick ? "true" : "false", runs);
        for (int ci = 0; ci < ncases; ci++)
            fprintf(out,
                    "%s\n    {\"preset\": \"%s\", \"log_slots\": %d, \"cts_levels\": %d, "
                    "\"stc_levels\": %d, \"encap_h\": %d}",
                    ci ? "," : "", cases[ci].preset, cases[ci].log_slots, cases[ci].cts,
                    cases[ci].stc, cases[ci].encap_h);
        fprintf(out, "\n  ],\n  \"results\": [\n");
    }
    int status = 0;
    bool first = true;
    for (int ci = 0; ci < ncases; ci++)
        for (int ti = 0; ti < nt; ti++)
            status |= run_case(params_dir, &cases[ci], tlist[ti], runs, out, &first);
    if (out) {
        fprintf(out, "\n  ],\n  \"failures\": %d\n}\n", status);
        fclose(out);
    }
    return status;
}
