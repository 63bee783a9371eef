/* Unit tests of perfargs' tables (record/perfargs.c), TAP output. Oracle:
 * shared/docs/magic-trace-behaviour.md section 3: the snapshot and control
 * table of 3.3 (perf version x snapshot_when -> record flags), the
 * primary events of 3.2 by resolution and scope, and its -m rule (whole
 * 4096-byte pages, the next power of two of them, clamped to [4 KiB,
 * 2^48 B], each change warned of), worked through by hand for each size. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/perfargs.h"

#include "tap.h"

static void caps_of(struct mt_caps *c, const char *perf_version, bool pt)
{
	char text[512];
	snprintf(text, sizeof text,
		 "intel_pt=%d\nperf.version=%s\nperf.usable=1\nperf_event_max_sample_rate=25000\n"
		 "configurable_psb_period=1\nkernel_tracing=1\nlast_branch_record=1\nsampling.event=cycles\n",
		 pt, perf_version);
	FILE *f = fmemopen(text, strlen(text), "r");
	memset(c, 0, sizeof *c);
	if (!f || mt_caps_parse(f, c))
		abort();
	fclose(f);
}

/* The record flags after the pid, up to --kcore or -m: joined by spaces. */
static void snapshot_flags(const struct mt_perfargs *a, char *out, size_t n)
{
	out[0] = '\0';
	for (int i = 0; i < a->argc; i++)
		if (!strncmp(a->argv[i], "--snapshot", 10) || !strncmp(a->argv[i], "--control", 9)) {
			strncat(out, out[0] ? " " : "", n - strlen(out) - 1);
			strncat(out, a->argv[i], n - strlen(out) - 1);
		}
}

static void test_snapshot_table(void)
{
	/* section 3.3, row by row */
	static const struct { const char *perf; int when; const char *flags; } rows[] = {
		{"5.3", MT_SNAP_AT_EXIT, "--snapshot"},
		{"5.3", MT_SNAP_FUNCTION_CALL, "--snapshot"},
		{"5.3", MT_SNAP_NEVER, ""},
		{"5.4", MT_SNAP_AT_EXIT, "--snapshot=e"},
		{"5.9", MT_SNAP_FUNCTION_CALL, "--snapshot"},
		{"5.9", MT_SNAP_NEVER, ""},
		{"5.10", MT_SNAP_AT_EXIT, "--snapshot=e --control=fd:3,4"},
		{"6.1", MT_SNAP_FUNCTION_CALL, "--snapshot --control=fd:3,4"},
		{"6.1", MT_SNAP_NEVER, "--control=fd:3,4"},
	};
	int good = 0, n = 0;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct mt_caps c;
		caps_of(&c, rows[i].perf, true);
		struct mt_perfargs_opts o;
		mt_perfargs_opts_init(&o);
		o.ctl_fd = 3;
		o.ack_fd = 4;
		o.pids = "1";
		o.trigger = rows[i].when == MT_SNAP_FUNCTION_CALL;
		o.full_execution = rows[i].when == MT_SNAP_NEVER;
		struct mt_perfargs a;
		struct mt_err err = {0};
		char flags[256];
		n++;
		if (mt_perfargs_snapshot_when(&c, &o) != (enum mt_snapshot_when)rows[i].when ||
		    mt_perfargs_build(&c, &o, &a, &err))
			continue;
		snapshot_flags(&a, flags, sizeof flags);
		if (!strcmp(flags, rows[i].flags))
			good++;
		else
			printf("# perf %s, when %d: %s, want %s\n", rows[i].perf, rows[i].when, flags, rows[i].flags);
	}
	ok(good == n, "snapshot and control flags for each perf version and snapshot_when (3.3)");
	struct mt_caps c;
	caps_of(&c, "6.1", false);
	struct mt_perfargs_opts o;
	mt_perfargs_opts_init(&o);
	ok(mt_perfargs_snapshot_when(&c, &o) == MT_SNAP_NEVER, "sampling (no Intel PT) never takes snapshots");
}

static bool has_arg(const struct mt_perfargs *a, const char *want)
{
	for (int i = 0; i < a->argc; i++)
		if (!strcmp(a->argv[i], want))
			return true;
	return false;
}

static void test_events(void)
{
	static const struct { int res; int scope; const char *event; } rows[] = {
		{MT_RES_LOW, MT_SCOPE_U, "--event=intel_pt//u"},
		{MT_RES_NORMAL, MT_SCOPE_K, "--event=intel_pt/cyc=1,cyc_thresh=1,mtc_period=0/k"},
		{MT_RES_HIGH, MT_SCOPE_UK, "--event=intel_pt/cyc=1,cyc_thresh=1,mtc_period=0,noretcomp=1/uk"},
	};
	int good = 0;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct mt_caps c;
		caps_of(&c, "6.1", true);
		struct mt_perfargs_opts o;
		mt_perfargs_opts_init(&o);
		o.res = (enum mt_resolution)rows[i].res;
		o.scope = (enum mt_scope)rows[i].scope;
		struct mt_perfargs a;
		struct mt_err err = {0};
		good += !mt_perfargs_build(&c, &o, &a, &err) && has_arg(&a, rows[i].event) &&
			has_arg(&a, "--kcore") == (rows[i].scope != MT_SCOPE_U);
	}
	ok(good == 3, "Intel PT primary events by resolution and scope, --kcore with kernel scope (3.2)");
}

static void test_pages(void)
{
	/* bytes -> pages after -m, and the warning's start ("" = none) */
	static const struct { uint64_t bytes; const char *m; const char *warn; } rows[] = {
		{4096, "-m,1", ""},
		{8192, "-m,2", ""},
		{12288, "-m,4", "warning: --snapshot-size=12K rounded up to a power of two of pages, 16K"},
		{5000, "-m,2", "warning: --snapshot-size="},
		{100, "-m,1", "warning: --snapshot-size=100B rounded up to the minimum, 4K"},
		{1ULL << 30, "-m,262144", ""},
		{(1ULL << 48) + 1, "-m,68719476736", "warning: --snapshot-size=281474976710657B rounded down to the maximum, 256T"},
	};
	int good = 0, n = 0;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct mt_caps c;
		caps_of(&c, "6.1", true);
		struct mt_perfargs_opts o;
		mt_perfargs_opts_init(&o);
		o.snapshot_size = rows[i].bytes;
		struct mt_perfargs a;
		struct mt_err err = {0};
		n++;
		if (mt_perfargs_build(&c, &o, &a, &err) || !has_arg(&a, rows[i].m))
			continue;
		bool warned = false;
		for (int k = 0; k < a.nwarn; k++)
			warned |= !strncmp(a.warn[k], "warning: --snapshot-size=", 25) &&
				  !strncmp(a.warn[k], rows[i].warn, strlen(rows[i].warn));
		good += rows[i].warn[0] ? warned : !a.nwarn;
	}
	ok(good == n, "-m: whole pages, the next power of two, clamped to [4K, 256T], each change warned of (3.2)");
}

/* --clock: perf record -k's names (tools/perf/builtin-record.c's
 * clockids: the short and the long name of each), -k NAME after the
 * sampling flags, mono by default; with Intel PT only perf's own. */
static void test_clock(void)
{
	static const struct { const char *in, *k; } names[] = {
		{"mono", "mono"}, {"monotonic", "mono"}, {"raw", "raw"}, {"monotonic_raw", "raw"},
		{"boot", "boot"}, {"boottime", "boot"}, {"realtime", "realtime"}, {"tai", "tai"},
		{"perf", "perf"},
	};
	int good = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const char *k = NULL;
		good += !mt_perfargs_parse_clock(names[i].in, &k) && k && !strcmp(k, names[i].k);
	}
	const char *k = NULL;
	ok(good == (int)(sizeof names / sizeof names[0]) && mt_perfargs_parse_clock("MONO", &k) &&
		   mt_perfargs_parse_clock("", &k) && mt_perfargs_parse_clock("utc", &k),
	   "--clock: perf's names, short and long; nothing else");
	struct mt_caps c;
	struct mt_perfargs a;
	struct mt_err err = {0};
	struct mt_perfargs_opts o;
	caps_of(&c, "6.1", true);
	mt_perfargs_opts_init(&o);
	o.sampling = true;
	bool dflt = !mt_perfargs_build(&c, &o, &a, &err) && a.argc >= 2 && !strcmp(a.argv[a.argc - 2], "-k") &&
		    !strcmp(a.argv[a.argc - 1], "mono");
	o.clock = "boot";
	bool boot = !mt_perfargs_build(&c, &o, &a, &err) && !strcmp(a.argv[a.argc - 1], "boot");
	o.clock = "perf";
	bool own = !mt_perfargs_build(&c, &o, &a, &err) && !has_arg(&a, "-k");
	ok(dflt && boot && own, "--clock when sampling: -k mono by default, -k NAME, none for perf");
	o.sampling = false;
	o.clock = NULL;
	bool pt = !mt_perfargs_build(&c, &o, &a, &err) && !has_arg(&a, "-k");
	o.clock = "perf";
	pt &= !mt_perfargs_build(&c, &o, &a, &err) && !has_arg(&a, "-k");
	o.clock = "mono";
	pt &= mt_perfargs_build(&c, &o, &a, &err) == MT_EUSAGE && strstr(err.msg, "relates only to perf's own clock");
	ok(pt, "--clock with Intel PT: no -k; another than perf refused with the reason");
}

int main(void)
{
	test_snapshot_table();
	test_events();
	test_pages();
	test_clock();
	return tap_done();
}
