/* Unit tests of a bundle's entry-name rules (bundle/entryname.c) and of
 * the set of names seen (bundle/nameset.c), TAP output. Oracle: the rules
 * of mt-bundle(5), case by case: names are relative, "." and empty
 * components go, ".." is refused; a link is kept only when it resolves
 * inside the bundle from its own directory (the tar tools' "unsafe link"
 * rule); the set finds each name added, and only those. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/entryname.h"
#include "bundle/nameset.h"

#include "tap.h"

static bool norm(const char *raw, int want_rc, const char *want)
{
	char out[MAX_NAME + 8];
	const char *why = NULL;
	int rc = mt_bundle_normalize_name(raw, out, sizeof out, &why);
	if (want_rc < 0)
		return rc < 0 && why;
	return rc == want_rc && (!want || !strcmp(out, want));
}

static void test_names(void)
{
	ok(norm("perf.data", 1, "perf.data") && norm("./root/usr/bin/app", 1, "root/usr/bin/app") &&
	   norm("a//b/./c/", 1, "a/b/c"), "names: leading ./, empty and . components dropped");
	ok(norm(".", 0, NULL) && norm("./", 0, NULL), "the archive's own . is skipped");
	ok(norm("/etc/passwd", -1, NULL) && norm("a/../../x", -1, NULL) && norm("..", -1, NULL) && norm("", -1, NULL),
	   "absolute names, .. components and empty names are refused, with a reason");
	char long_name[MAX_NAME + 100];
	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	ok(norm(long_name, -1, NULL), "a name past MAX_NAME is refused");
	ok(norm("a..b/c..", 1, "a..b/c.."), "dots inside a component are a name, not ..");
}

static void test_links(void)
{
	ok(mt_bundle_link_inside("root/usr/lib/libc.so", "libc.so.6") &&
	   mt_bundle_link_inside("root/usr/lib/libc.so", "../lib64/libc.so.6") &&
	   mt_bundle_link_inside("root/a/b/l", "../../x"), "links that stay inside are kept");
	ok(!mt_bundle_link_inside("root/l", "/etc/passwd") && !mt_bundle_link_inside("l", "../x") &&
	   !mt_bundle_link_inside("root/a/l", "../../../x") && !mt_bundle_link_inside("root/a/l", "b/../../../x") &&
	   !mt_bundle_link_inside("root/a/l", ""), "absolute targets, targets climbing out, and empty ones are refused");
}

static void test_nameset(void)
{
	struct nameset ns = {0};
	char name[32];
	int added = 0;
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "dir%d/file%d", i % 37, i);
		added += !mt_nameset_add(&ns, name, i % 3 ? NAME_FILE : NAME_DIR);
	}
	int found = 0, kinds = 0, absent = 0;
	for (int i = 0; i < 5000; i++) {
		bool f;
		snprintf(name, sizeof name, "dir%d/file%d", i % 37, i);
		size_t k = mt_nameset_slot(&ns, name, &f);
		found += f;
		kinds += f && ns.kind[k] == (i % 3 ? NAME_FILE : NAME_DIR);
		snprintf(name, sizeof name, "dir%d/file%d", i % 37, i + 5000);
		mt_nameset_slot(&ns, name, &f);
		absent += !f;
	}
	ok(added == 5000 && found == 5000 && kinds == 5000 && absent == 5000 && ns.n == 5000,
	   "the name set finds every name added, with its kind, across growth, and no other");
	mt_nameset_free(&ns);
}

int main(void)
{
	test_names();
	test_links();
	test_nameset();
	return tap_done();
}
