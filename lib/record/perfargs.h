/* perfargs: the `perf record` arguments magic-trace would run, from the
 * machine's capabilities (caps.h) and the user's options, in magic-trace's
 * order (shared/docs/magic-trace-behaviour.md section 3), with its warnings
 * and its errors for impossible combinations. One change, where magic-trace
 * fails: sampling on a machine without a cycles event uses cpu-clock. */
#ifndef MT_PERFARGS_H
#define MT_PERFARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "record/caps.h"
#include "base/mt_err.h"

enum mt_resolution { MT_RES_LOW, MT_RES_NORMAL, MT_RES_HIGH, MT_RES_CUSTOM, MT_RES_SAMPLE };
enum mt_scope { MT_SCOPE_U, MT_SCOPE_K, MT_SCOPE_UK };
enum mt_callgraph { MT_CG_DEFAULT, MT_CG_LBR, MT_CG_LBR_NO_STITCH, MT_CG_FP, MT_CG_DWARF };
/* magic-trace's snapshot_when: Never for full execution and sampling,
 * At_exit for the default trigger, Function_call with a trigger. */
enum mt_snapshot_when { MT_SNAP_NEVER, MT_SNAP_AT_EXIT, MT_SNAP_FUNCTION_CALL };

struct mt_perfargs_opts {
	const char *perf;          /* argv[0]; default "perf" */
	const char *dir;           /* working directory for perf.data */
	enum mt_resolution res;
	/* custom: -1 = not given */
	int cyc, cyc_thresh, mtc, mtc_period, noretcomp, psb_period;
	unsigned sample_freq;      /* MT_RES_SAMPLE */
	unsigned max_sample_rate;  /* High sampling: perf_event_max_sample_rate */
	enum mt_scope scope;
	uint64_t snapshot_size;    /* bytes, 0: not given */
	bool multi_thread, full_execution, multi_snapshot, trigger, sampling;
	bool branch_misses, cache_misses;
	enum mt_callgraph callgraph;
	/* perf record -k: the clock of every time (mt_perfargs_parse_clock's
	 * name; "perf": its own, no -k); NULL: CLOCK_MONOTONIC when sampling
	 * (perf's rule for JIT dumps, and the clock other traces use), perf's
	 * own with Intel PT */
	const char *clock;
	const char *pids;          /* "PID[,PID...]" */
	/* Intel PT's optional packets and controls, each only where the
	 * machine can (mt-caps' intel_pt.caps.*, perf and kernel versions) */
	bool ptwrite;              /* ptw=1,fup_on_ptw=1: PTWRITE payloads with their IP */
	bool power_events;         /* pwr_evt=1: C-state entries and exits, MWAIT, EXSTOP */
	bool event_trace;          /* event=1: Event Trace (interrupt vectors; Ice Lake and later) */
	bool start_paused;         /* aux-action=start-paused (perf and kernel 6.13): a trigger resumes */
	const char *filter;        /* perf's --filter: address filters ("filter FUNC @ BINARY", ...) */
	int ctl_fd, ack_fd;        /* for --control=fd:R,W (perf >= 5.10) */
};

#define MT_PERFARGS_MAX 32

struct mt_perfargs {
	int argc;
	char argv[MT_PERFARGS_MAX][512];
	int nwarn;
	char warn[8][512];
};

/* When snapshots are taken for these options on this machine (section 3.3). */
enum mt_snapshot_when mt_perfargs_snapshot_when(const struct mt_caps *caps, const struct mt_perfargs_opts *o);
/* Options as magic-trace starts: normal resolution, no custom field given. */
void mt_perfargs_opts_init(struct mt_perfargs_opts *o);
/* Builds the arguments; MT_EUSAGE with magic-trace's reason for an
 * impossible combination. */
int mt_perfargs_build(const struct mt_caps *caps, const struct mt_perfargs_opts *o, struct mt_perfargs *out,
		      struct mt_err *err);
/* Option values as mt-perfargs and mt-record take them; -1 when malformed.
 * Resolution: low, normal, high, custom:FIELD=N,... (cyc, cyc_thresh, mtc,
 * mtc_period, noretcomp, psb_period), sample:FREQ. */
int mt_perfargs_parse_resolution(const char *s, struct mt_perfargs_opts *o);
int mt_perfargs_parse_scope(const char *s, enum mt_scope *out);
/* branch-misses,cache-misses (either or both, each once) */
int mt_perfargs_parse_extra_events(const char *s, struct mt_perfargs_opts *o);
/* lbr, lbr-no-stitch, fp, dwarf */
int mt_perfargs_parse_callgraph(const char *s, enum mt_callgraph *out);
/* perf (its own clock: no -k), or a clock perf record -k takes: mono,
 * monotonic, raw, monotonic_raw, boot, boottime, realtime, tai; *out is
 * perf's short name for it (static; "perf" for perf). */
int mt_perfargs_parse_clock(const char *s, const char **out);
/* The address ranges of a perf --filter string (its comma-separated
 * clauses, each filter, start, stop or tracestop); -1 when one is none. */
int mt_perfargs_filter_ranges(const char *filter);
/* Parses a byte count: 4096, 8000B, 64K, 4M, 1G (powers of 1024). */
int mt_parse_bytes(const char *s, uint64_t *out);

#endif
