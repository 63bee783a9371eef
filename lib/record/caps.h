/* caps: what this machine, its kernel and its perf can do for tracing.
 *
 * Reads sysfs (the intel_pt PMU and its caps/, hardware events), procfs
 * (perf_event_paranoid, perf_event_mlock_kb, kptr_restrict, osrelease,
 * cpuinfo flags, the effective capabilities) and `perf --version`, and
 * derives magic-trace's capabilities with its exact thresholds
 * (shared/docs/magic-trace-behaviour.md section 2). Roots can be moved for
 * tests and for diagnosing another machine from copies of its trees. */
#ifndef MT_CAPS_H
#define MT_CAPS_H

#include <stdbool.h>
#include <stdio.h>

#include "base/mt_err.h"

struct mt_caps_opts {
	const char *sysfs_root;   /* default "/sys" */
	const char *procfs_root;  /* default "/proc" */
	const char *perf;         /* default: $MT_PERF_PATH, $MAGIC_TRACE_PERF_PATH, "perf" */
	bool no_kcore;            /* $MT_PERF_NO_KCORE / $MAGIC_TRACE_PERF_NO_KCORE */
};

#define MT_CAPS_MAX 128

/* The facts, in print order: key and value strings. */
struct mt_caps {
	size_t n;
	char key[MT_CAPS_MAX][64];
	char val[MT_CAPS_MAX][256];
};

/* Fills caps; never fails on a missing file (the fact says so). */
void mt_caps_detect(const struct mt_caps_opts *o, struct mt_caps *caps);
/* The value of key, or NULL. */
const char *mt_caps_get(const struct mt_caps *caps, const char *key);
/* Reads key=value lines (mt-caps output) back; -1 on a malformed line. */
int mt_caps_parse(FILE *in, struct mt_caps *caps);
/* key=value lines, or one JSON object. */
void mt_caps_print(const struct mt_caps *caps, FILE *out, bool json);

#endif
