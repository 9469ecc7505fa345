/*
 * gpu/: the build links either the CUDA backend or the stub, and both run on a
 * machine without a GPU. Backend-op comparisons (CPU vs GPU, bit for bit) are
 * added beside the ops they check; they skip with a message when no GPU is present.
 */
#include "tests/unit/ts_test.h"

#include "gpu/gpu.h"

START_TEST(test_gpu_probe)
{
    ts_gpu_info_t info;
    char why[256] = "";
    ts_status_t st = ts_gpu_probe(&info, why, sizeof why);
    if (!ts_gpu_built()) {
        ck_assert_ts_status(st, TS_ENOGPU);
        ck_assert_msg(strstr(why, "no GPU support built"), "stub says: %s", why);
        ck_assert_int_eq(info.device_count, 0);
        return;
    }
    if (st == TS_ENOGPU) {
        ck_assert_msg(why[0] != '\0', "a missing GPU must come with a reason");
        fprintf(stderr, "test_gpu: CUDA built, GPU tests skipped: %s\n", why);
        return;
    }
    ck_assert_ts_ok(st);
    ck_assert_int_ge(info.device_count, 1);
    ck_assert_msg(info.name[0] != '\0', "device name");
    ck_assert_uint_gt(info.total_mem_bytes, 0);
    fprintf(stderr, "test_gpu: %d device(s), device 0: %s (sm_%d%d)\n", info.device_count,
            info.name, info.cc_major, info.cc_minor);
}
END_TEST

TS_TEST_SUITE(gpu)
{
    Suite *s = suite_create("gpu");
    TCase *tc = ts_tcase("probe", 0);
    tcase_add_test(tc, test_gpu_probe);
    suite_add_tcase(s, tc);
    return s;
}
