/*
 * The unit-test runner: every suite registered with TS_TEST_SUITE in the
 * tests/unit/ sources runs in one Check SRunner, which prints one summary line
 * at the end and decides the exit status. CK_RUN_SUITE=name (or CK_RUN_CASE)
 * selects a single suite (or case), as Check documents.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/base/base.h"

typedef Suite *(*ts_suite_fn)(void);
extern const ts_suite_fn ts_all_suites[];

int main(void)
{
    ts_malloc_tune();
    SRunner *sr = NULL;
    for (size_t i = 0; ts_all_suites[i]; i++) {
        Suite *s = ts_all_suites[i]();
        if (!sr)
            sr = srunner_create(s);
        else
            srunner_add_suite(sr, s);
    }
    if (!sr) {
        fprintf(stderr, "unit_tests: no suites registered\n");
        return EXIT_FAILURE;
    }
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
