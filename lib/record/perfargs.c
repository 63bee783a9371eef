/* perfargs: see perfargs.h. */
#define _GNU_SOURCE
#include "record/perfargs.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void arg(struct mt_perfargs *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void arg(struct mt_perfargs *a, const char *fmt, ...)
{
	if (a->argc == MT_PERFARGS_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->argv[a->argc++], sizeof a->argv[0], fmt, ap);
	va_end(ap);
}

static void warn(struct mt_perfargs *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct mt_perfargs *a, const char *fmt, ...)
{
	if (a->nwarn == 8)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->warn[a->nwarn++], sizeof a->warn[0], fmt, ap);
	va_end(ap);
}

void mt_perfargs_opts_init(struct mt_perfargs_opts *o)
{
	*o = (struct mt_perfargs_opts){.res = MT_RES_NORMAL, .cyc = -1, .cyc_thresh = -1, .mtc = -1,
				       .mtc_period = -1, .noretcomp = -1, .psb_period = -1};
}

int mt_perfargs_parse_resolution(const char *s, struct mt_perfargs_opts *o)
{
	if (!strcmp(s, "low"))
		o->res = MT_RES_LOW;
	else if (!strcmp(s, "normal"))
		o->res = MT_RES_NORMAL;
	else if (!strcmp(s, "high"))
		o->res = MT_RES_HIGH;
	else if (!strncmp(s, "sample:", 7)) {
		char *e;
		o->res = MT_RES_SAMPLE;
		o->sample_freq = (unsigned)strtoul(s + 7, &e, 10);
		if (*e || !o->sample_freq)
			return -1;
	} else if (!strncmp(s, "custom:", 7) || !strcmp(s, "custom")) {
		o->res = MT_RES_CUSTOM;
		char copy[256];
		snprintf(copy, sizeof copy, "%s", s[6] ? s + 7 : "");
		char *save;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');
			if (!eq)
				return -1;
			*eq = '\0';
			int v = atoi(eq + 1);
			if (!strcmp(tok, "cyc")) o->cyc = v;
			else if (!strcmp(tok, "cyc_thresh")) o->cyc_thresh = v;
			else if (!strcmp(tok, "mtc")) o->mtc = v;
			else if (!strcmp(tok, "mtc_period")) o->mtc_period = v;
			else if (!strcmp(tok, "noretcomp")) o->noretcomp = v;
			else if (!strcmp(tok, "psb_period")) o->psb_period = v;
			else return -1;
		}
	} else {
		return -1;
	}
	return 0;
}

int mt_perfargs_parse_scope(const char *s, enum mt_scope *out)
{
	if (!strcmp(s, "u"))
		*out = MT_SCOPE_U;
	else if (!strcmp(s, "k"))
		*out = MT_SCOPE_K;
	else if (!strcmp(s, "uk"))
		*out = MT_SCOPE_UK;
	else
		return -1;
	return 0;
}

int mt_perfargs_parse_extra_events(const char *s, struct mt_perfargs_opts *o)
{
	char copy[256];
	snprintf(copy, sizeof copy, "%s", s);
	bool branch = false, cache = false;
	char *save;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool *seen = !strcmp(tok, "branch-misses") ? &branch : !strcmp(tok, "cache-misses") ? &cache : NULL;
		if (!seen || *seen)
			return -1;
		*seen = true;
	}
	if (!branch && !cache)
		return -1;
	o->branch_misses = branch;
	o->cache_misses = cache;
	return 0;
}

int mt_perfargs_parse_callgraph(const char *s, enum mt_callgraph *out)
{
	if (!strcmp(s, "lbr"))
		*out = MT_CG_LBR;
	else if (!strcmp(s, "lbr-no-stitch"))
		*out = MT_CG_LBR_NO_STITCH;
	else if (!strcmp(s, "fp"))
		*out = MT_CG_FP;
	else if (!strcmp(s, "dwarf"))
		*out = MT_CG_DWARF;
	else
		return -1;
	return 0;
}

int mt_perfargs_parse_clock(const char *s, const char **out)
{
	static const char *const names[][2] = {
		{"perf", "perf"}, {"mono", "mono"}, {"monotonic", "mono"}, {"raw", "raw"},
		{"monotonic_raw", "raw"}, {"boot", "boot"}, {"boottime", "boot"}, {"realtime", "realtime"},
		{"tai", "tai"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i][0])) {
			*out = names[i][1];
			return 0;
		}
	return -1;
}

int mt_parse_bytes(const char *s, uint64_t *out)
{
	char *e;
	unsigned long long v = strtoull(s, &e, 10);
	if (e == s)
		return -1;
	uint64_t mul = 1;
	switch (*e) {
	case 'G': case 'g': mul = 1ULL << 30; e++; break;
	case 'M': case 'm': mul = 1ULL << 20; e++; break;
	case 'K': case 'k': mul = 1ULL << 10; e++; break;
	case 'B': case 'b': e++; break;
	default: break;
	}
	if (*e || v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/* Bytes in the largest unit that holds them exactly: 4M, 64K, 8000B. */
static void fmt_bytes(char *b, size_t n, uint64_t v)
{
	if (v && !(v % (1ULL << 30)))
		snprintf(b, n, "%" PRIu64 "G", v >> 30);
	else if (v && !(v % (1ULL << 20)))
		snprintf(b, n, "%" PRIu64 "M", v >> 20);
	else if (v && !(v % (1ULL << 10)))
		snprintf(b, n, "%" PRIu64 "K", v >> 10);
	else
		snprintf(b, n, "%" PRIu64 "B", v);
}

static bool cap(const struct mt_caps *c, const char *key)
{
	const char *v = mt_caps_get(c, key);
	return v && !strcmp(v, "1");
}

static int perf_version(const struct mt_caps *c, int *major, int *minor)
{
	const char *v = mt_caps_get(c, "perf.version");
	return v && sscanf(v, "%d.%d", major, minor) == 2 ? 0 : -1;
}

int mt_perfargs_filter_ranges(const char *filter)
{
	static const char *const kinds[] = {"filter", "start", "stop", "tracestop"};
	int n = 0;
	for (const char *p = filter; p; n++) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		while (len && (*p == ' ' || *p == '\t'))
			p++, len--;
		size_t word = strcspn(p, " \t");
		bool known = false;
		for (size_t k = 0; k < 4; k++)
			known |= word == strlen(kinds[k]) && !strncmp(p, kinds[k], word);
		/* KIND WHAT @ FILE: the @ in this clause, after the kind */
		const char *at = memchr(p, '@', len);
		if (!known || word >= len || !at || at < p + word)
			return -1;
		p = end ? end + 1 : NULL;
	}
	return n;
}

/* The Intel PT terms the options add, each where the machine can: its
 * reason as a usage error where it cannot. */
static int pt_terms(const struct mt_caps *caps, const struct mt_perfargs_opts *o, int major, int minor, char *t,
		    size_t n, struct mt_err *err)
{
	size_t l = 0;
	t[0] = '\0';
	if (o->ptwrite) {
		if (!cap(caps, "intel_pt.caps.ptwrite"))
			return mt_err_set(err, MT_EUSAGE, "--ptwrite: this CPU's Intel PT has no PTWRITE "
					  "(intel_pt/caps/ptwrite is not 1)");
		l += (size_t)snprintf(t + l, n - l, ",ptw=1,fup_on_ptw=1");
	}
	if (o->power_events) {
		if (!cap(caps, "intel_pt.caps.power_event_trace"))
			return mt_err_set(err, MT_EUSAGE, "--power-events: this CPU's Intel PT has no power events "
					  "(intel_pt/caps/power_event_trace is not 1)");
		l += (size_t)snprintf(t + l, n - l, ",pwr_evt=1");
	}
	if (o->event_trace) {
		if (!cap(caps, "intel_pt.caps.event_trace"))
			return mt_err_set(err, MT_EUSAGE, "--event-trace: this CPU's Intel PT has no Event Trace "
					  "(intel_pt/caps/event_trace is not 1: Ice Lake and later, kernel 5.18 and later)");
		if (major < 5 || (major == 5 && minor < 18))
			return mt_err_set(err, MT_EUSAGE, "--event-trace: perf %d.%d cannot ask for it (5.18 and later)",
					  major, minor);
		l += (size_t)snprintf(t + l, n - l, ",event=1");
	}
	if (o->start_paused) {
		const char *rel = mt_caps_get(caps, "kernel.release");
		int kmaj = 0, kmin = 0;
		if (major < 6 || (major == 6 && minor < 13))
			return mt_err_set(err, MT_EUSAGE, "--start-paused: perf %d.%d has no aux-action (6.13 and later)",
					  major, minor);
		if (!rel || sscanf(rel, "%d.%d", &kmaj, &kmin) != 2 || kmaj < 6 || (kmaj == 6 && kmin < 13))
			return mt_err_set(err, MT_EUSAGE, "--start-paused: kernel %s cannot pause the AUX area (6.13 and later)",
					  rel && *rel ? rel : "(unknown)");
		l += (size_t)snprintf(t + l, n - l, ",aux-action=start-paused");
	}
	if (o->filter) {
		int ranges = mt_perfargs_filter_ranges(o->filter);
		const char *have = mt_caps_get(caps, "intel_pt.caps.num_address_ranges");
		if (ranges < 0)
			return mt_err_set(err, MT_EUSAGE, "--filter '%s': expected perf's address filters, "
					  "'filter|start|stop|tracestop WHAT @ FILE' joined by commas", o->filter);
		if (!cap(caps, "intel_pt.caps.ip_filtering"))
			return mt_err_set(err, MT_EUSAGE, "--filter: this CPU's Intel PT cannot filter by address "
					  "(intel_pt/caps/ip_filtering is not 1)");
		if (!have || atoi(have) < ranges)
			return mt_err_set(err, MT_EUSAGE, "--filter: %d address ranges, and this CPU has %s", ranges,
					  have && *have ? have : "none");
	}
	return 0;
}

enum mt_snapshot_when mt_perfargs_snapshot_when(const struct mt_caps *caps, const struct mt_perfargs_opts *o)
{
	bool sampling = o->sampling || !cap(caps, "intel_pt");
	return o->full_execution || sampling ? MT_SNAP_NEVER : o->trigger ? MT_SNAP_FUNCTION_CALL : MT_SNAP_AT_EXIT;
}

int mt_perfargs_build(const struct mt_caps *caps, const struct mt_perfargs_opts *o, struct mt_perfargs *a,
		      struct mt_err *err)
{
	memset(a, 0, sizeof *a);
	int major, minor;
	if (perf_version(caps, &major, &minor))
		return mt_err_set(err, MT_EUSAGE, "no perf version in the capabilities read (is the input mt-caps output? try: mt-caps | mt-perfargs)");
	bool old54 = major < 5 || (major == 5 && minor < 4), ge510 = major > 5 || (major == 5 && minor >= 10);
	bool ge55 = major > 5 || (major == 5 && minor >= 5);
	/* sampling when asked, or forced when there is no Intel PT */
	bool sampling = o->sampling || !cap(caps, "intel_pt");
	if (!o->sampling && sampling)
		warn(a, "no Intel PT on this machine: stack sampling instead");
	if (sampling && o->res == MT_RES_CUSTOM)
		return mt_err_set(err, MT_EUSAGE, "--timer-resolution=custom:... is for Intel PT, not sampling");
	if (!sampling && o->res == MT_RES_SAMPLE)
		return mt_err_set(err, MT_EUSAGE, "--timer-resolution=sample:... is for sampling, not Intel PT");
	if (!sampling && o->callgraph != MT_CG_DEFAULT)
		return mt_err_set(err, MT_EUSAGE, "--callgraph is for sampling, not Intel PT");
	/* the kernel relates Intel PT's TSC only to perf's own clock: with
	 * -k, perf_event_mmap_page has no time_zero, and no time can be had */
	if (!sampling && o->clock && strcmp(o->clock, "perf"))
		return mt_err_set(err, MT_EUSAGE, "--clock=%s is for sampling: Intel PT's times come from the TSC, "
				  "which the kernel relates only to perf's own clock", o->clock);
	bool lbr = cap(caps, "last_branch_record");
	if (sampling && (o->callgraph == MT_CG_LBR || o->callgraph == MT_CG_LBR_NO_STITCH) && !lbr)
		return mt_err_set(err, MT_EUSAGE, "--callgraph=lbr needs last branch record support (the CPU's pdcm flag)");
	if ((o->scope == MT_SCOPE_K || o->scope == MT_SCOPE_UK) && !cap(caps, "kernel_tracing") &&
	    !getenv("MAGIC_TRACE_PERF_IS_PRIVILEGED") && !getenv("MT_PERF_IS_PRIVILEGED"))
		return mt_err_set(err, MT_EUSAGE, "tracing the kernel (--scope=k or uk) needs root, CAP_PERFMON or perf_event_paranoid <= 1 (MT_PERF_IS_PRIVILEGED=1: perf is privileged another way)");
	const char *sel = o->scope == MT_SCOPE_U ? "u" : o->scope == MT_SCOPE_K ? "k" : "uk";
	bool pt_only = o->ptwrite || o->power_events || o->event_trace || o->start_paused || o->filter;
	if (sampling && pt_only)
		return mt_err_set(err, MT_EUSAGE, "--ptwrite, --power-events, --event-trace, --start-paused and "
				  "--filter are for Intel PT, not sampling%s", o->sampling ? "" : " (this machine has none)");
	char terms[160];
	if (!sampling && pt_terms(caps, o, major, minor, terms, sizeof terms, err))
		return MT_EUSAGE;

	char primary[256];
	enum mt_resolution res = o->res;
	if (!sampling && (res == MT_RES_NORMAL || res == MT_RES_HIGH) && !cap(caps, "configurable_psb_period")) {
		warn(a, "warning: this CPU cannot set the PSB period: times are good to ~1 us, not ~10 ns "
			"(--timer-resolution=low)");
		res = MT_RES_LOW;
	}
	if (!sampling) {
		switch (res) {
		case MT_RES_LOW: snprintf(primary, sizeof primary, "intel_pt//%s", sel); break;
		case MT_RES_NORMAL: snprintf(primary, sizeof primary, "intel_pt/cyc=1,cyc_thresh=1,mtc_period=0/%s", sel); break;
		case MT_RES_HIGH:
			snprintf(primary, sizeof primary, "intel_pt/cyc=1,cyc_thresh=1,mtc_period=0,noretcomp=1/%s", sel);
			break;
		case MT_RES_CUSTOM: {
			/* only the fields given, in the fixed order */
			char f[200] = "";
			size_t l = 0;
			const struct { const char *name; int v; } fields[] = {
				{"cyc", o->cyc}, {"cyc_thresh", o->cyc_thresh}, {"mtc", o->mtc},
				{"mtc_period", o->mtc_period}, {"noretcomp", o->noretcomp}, {"psb_period", o->psb_period},
			};
			for (size_t i = 0; i < 6; i++)
				if (fields[i].v >= 0)
					l += (size_t)snprintf(f + l, sizeof f - l, "%s%s=%d", l ? "," : "", fields[i].name,
							      fields[i].v);
			snprintf(primary, sizeof primary, "intel_pt/%s/%s", f, sel);
			break;
		}
		default: break;
		}
	} else {
		/* cycles where the PMU has it; a software clock where it has none */
		const char *ev = mt_caps_get(caps, "sampling.event");
		ev = ev && *ev ? ev : "cycles";
		unsigned freq = res == MT_RES_LOW ? 1000 : res == MT_RES_NORMAL ? 10000
				: res == MT_RES_HIGH ? o->max_sample_rate : o->sample_freq;
		snprintf(primary, sizeof primary, "%s/freq=%u/%s", ev, freq, sel);
	}
	if (!sampling && terms[0]) {
		/* intel_pt/TERMS/SEL: the added terms after the resolution's
		 * (without their leading comma when there are none) */
		char *slash = strrchr(primary, '/');
		const char *add = terms + (slash[-1] == '/');
		size_t alen = strlen(add);
		if (strlen(primary) + alen < sizeof primary) {
			memmove(slash + alen, slash, strlen(slash) + 1);
			memcpy(slash, add, alen);
		}
	}
	char event[512];
	size_t el = (size_t)snprintf(event, sizeof event, "--event=%s", primary);
	/* extra events, precision P (Maximum_possible) as magic-trace sets it */
	if (o->branch_misses)
		el += (size_t)snprintf(event + el, sizeof event - el, ",branch-misses/period=50/%sP", sel);
	if (o->cache_misses)
		el += (size_t)snprintf(event + el, sizeof event - el, ",cache-misses/period=1/%sP", sel);
	bool extra = o->branch_misses || o->cache_misses;

	arg(a, "%s", o->perf ? o->perf : "perf");
	arg(a, "record");
	arg(a, "-o");
	arg(a, "%s/perf.data", o->dir ? o->dir : ".");
	arg(a, "--timestamp");
	arg(a, "%s", event);
	if (!sampling && o->filter) {
		arg(a, "--filter"); /* applies to the event before it */
		arg(a, "%s", o->filter);
	}
	if (sampling && !o->full_execution)
		arg(a, "--overwrite");
	if (o->multi_snapshot)
		arg(a, "--switch-output=signal");
	if (o->multi_thread) {
		arg(a, "-p");
	} else if (extra) {
		arg(a, "-t"); /* perf cannot mmap extra events --per-thread */
	} else {
		arg(a, "--per-thread");
		arg(a, "-t");
	}
	arg(a, "%s", o->pids ? o->pids : "PID");
	/* snapshots (3.3): Never for -full-execution and sampling, At_exit by
	 * default, Function_call with a trigger */
	enum mt_snapshot_when when = mt_perfargs_snapshot_when(caps, o);
	if (old54) {
		if (when != MT_SNAP_NEVER)
			arg(a, "--snapshot");
	} else {
		if (when == MT_SNAP_AT_EXIT)
			arg(a, "--snapshot=e");
		else if (when == MT_SNAP_FUNCTION_CALL)
			arg(a, "--snapshot");
		if (ge510)
			arg(a, "--control=fd:%d,%d", o->ctl_fd, o->ack_fd);
	}
	if (!sampling && o->scope != MT_SCOPE_U && !getenv("MAGIC_TRACE_PERF_NO_KCORE") && !getenv("MT_PERF_NO_KCORE")) {
		if (ge55)
			arg(a, "--kcore");
		else
			warn(a, "warning: perf %d.%d has no --kcore (5.5 and later): kernel code that changes while "
				"traced (the kernel patches itself) may decode wrong; install perf 5.5 or later",
			     major, minor);
	}
	if (o->snapshot_size) {
		if (sampling) {
			warn(a, "warning: --snapshot-size is for Intel PT: ignored when sampling");
		} else {
			/* whole pages, a power of two of them, clamped to [4 KiB, 2^48 B] */
			char was[32], now[32];
			uint64_t pages = (o->snapshot_size + 4095) / 4096, p2 = 1;
			if (o->snapshot_size < 4096) {
				fmt_bytes(was, sizeof was, o->snapshot_size);
				warn(a, "warning: --snapshot-size=%s rounded up to the minimum, 4K", was);
				pages = 1;
			} else if (o->snapshot_size > (1ULL << 48)) {
				fmt_bytes(was, sizeof was, o->snapshot_size);
				warn(a, "warning: --snapshot-size=%s rounded down to the maximum, 256T", was);
				pages = (1ULL << 48) / 4096;
			}
			while (p2 < pages)
				p2 <<= 1;
			if (p2 * 4096 != o->snapshot_size && o->snapshot_size >= 4096 && o->snapshot_size <= (1ULL << 48)) {
				fmt_bytes(was, sizeof was, o->snapshot_size);
				fmt_bytes(now, sizeof now, p2 * 4096);
				warn(a, "warning: --snapshot-size=%s rounded up to a power of two of pages, %s", was, now);
			}
			arg(a, "-m,%" PRIu64, p2);
		}
	}
	if (sampling) {
		enum mt_callgraph cg = o->callgraph;
		if (cg == MT_CG_DEFAULT) {
			cg = lbr ? MT_CG_LBR : MT_CG_DWARF;
			warn(a, lbr ? "warning: --callgraph defaults to lbr, which may lose data and keeps shallow stacks"
				    : "warning: --callgraph defaults to dwarf, which costs time and space recording and decoding");
		}
		arg(a, "--call-graph");
		arg(a, "%s", cg == MT_CG_FP ? "fp" : cg == MT_CG_DWARF ? "dwarf" : "lbr");
		/* a thread's time off CPU (where magic-trace draws the function
		 * before it): cheap, and allowed for one's own processes */
		arg(a, "--switch-events");
		if (!o->clock || strcmp(o->clock, "perf")) {
			arg(a, "-k");
			arg(a, "%s", o->clock ? o->clock : "mono");
		}
	}
	return 0;
}
