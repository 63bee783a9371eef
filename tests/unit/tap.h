/* tap: the unit tests' TAP output: one "ok N - name" or "not ok N - name"
 * line per check, the plan last. Each test file names its oracles. */
#ifndef MT_TEST_TAP_H
#define MT_TEST_TAP_H

#include <stdio.h>

static int n_test;

static void ok(int cond, const char *name)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, name);
}

/* A check that cannot run here, with the reason (TAP's SKIP directive). */
static inline void skip(const char *name, const char *why)
{
	printf("ok %d - %s # SKIP %s\n", ++n_test, name, why);
}

static int tap_done(void)
{
	printf("1..%d\n", n_test);
	return 0;
}

#endif
