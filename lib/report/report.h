/* report: per-function figures from the calls of a rebuilt timeline
 * (timeline/pftrace.h's calls writer), as uftrace's report and perf's
 * report give them: calls, total (inclusive) and self time, average, min,
 * max and percentiles of the call durations, instructions; from stack
 * samples, self and children sample counts (perf report --children).
 *
 * Total time is the sum of a function's call durations: a recursive
 * function's nested calls count again. Self time is a call's duration less
 * its children's, so the self times of a thread add up to its root calls'
 * durations. From stack samples, the figures are perf report's (periods,
 * mt_report_samples). Memory grows with the functions and threads and the
 * stack depth, not with the calls. */
#ifndef MT_REPORT_H
#define MT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/durhist.h"
#include "timeline/pftrace.h"

#define MT_REPORT_MAX_IDS 64

struct mt_report_opts {
	bool per_thread;          /* a row per function and thread */
	size_t npids, ntids;      /* only these processes / threads (0: all) */
	uint32_t pids[MT_REPORT_MAX_IDS], tids[MT_REPORT_MAX_IDS];
	uint64_t min_duration;    /* shorter calls are not counted (their time is their parent's self time) */
	size_t max_depth;         /* calls this deep or deeper likewise (0: no limit) */
};

struct mt_fstat {
	uint32_t id;              /* 1, 2, ... in order of first appearance, whatever the sort */
	const char *name;         /* interned in the report */
	uint32_t pid, tid;        /* per_thread only */
	uint64_t calls, total, self;
	uint64_t insn, self_insn; /* over the calls with counts (insn_calls of them) */
	uint64_t insn_calls;
	uint64_t cyc, self_cyc;   /* core cycles likewise (cyc_calls) */
	uint64_t cyc_calls;
	uint64_t samples_self, samples_children; /* stack samples with it on top / anywhere */
	uint64_t period_self, period_children;   /* those samples' periods summed (perf report -F period) */
	uint64_t no_call, no_return;             /* calls with an inferred start / a forced end */
	struct mt_durhist hist;
};

struct mt_rthread {
	uint32_t id;              /* 1, 2, ... in order of first appearance: mt_report_thread(r, id - 1) */
	uint32_t pid, tid;
	const char *comm, *process_comm; /* interned; NULL: none */
	uint64_t calls, samples, period;
	uint64_t first, last;     /* the earliest call start and latest end (perf-clock ns) */
	uint64_t root_total;      /* its root calls' durations */
};

struct mt_report;

struct mt_report *mt_report_new(const struct mt_report_opts *opts);
/* A call the report counted, as it passes it on: its self time and
 * counts as counted (selection, --min-duration and --depth applied), the
 * row it was counted in (NULL: out of memory) and its thread. The rows
 * and threads are the report's; pointers last until the next call. */
struct mt_report_call {
	const struct mt_tl_call *c;
	uint64_t self_ns;
	struct mt_cs_counts self;
	const struct mt_fstat *function;
	const struct mt_rthread *thread;
};
/* What the report passes on (the calls table, folded stacks): each call
 * it counted, and every sample selected. */
struct mt_report_next {
	void *ctx;
	void (*thread)(void *ctx, uint32_t pid, uint32_t tid, const char *comm, const char *process_comm);
	void (*call)(void *ctx, const struct mt_report_call *rc);
	void (*sample)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, size_t n, const char *const *names,
		       const char *const *dsos, uint64_t period);
};
/* The sink to give mt_pftrace_new_calls; next may be NULL. */
void mt_report_sink(struct mt_report *r, struct mt_tl_calls_sink *sink, const struct mt_report_next *next);
/* Out of memory happened: the figures are incomplete. */
bool mt_report_oom(const struct mt_report *r);

enum mt_report_sort { MT_SORT_TOTAL, MT_SORT_SELF, MT_SORT_CALLS, MT_SORT_MAX, MT_SORT_P99, MT_SORT_SAMPLES };
/* Parses total, self, calls, max, p99 or samples; -1 otherwise. */
int mt_report_sort_parse(const char *s);
/* Orders the functions: by the key, descending, then by name (and pid, tid). */
void mt_report_sort(struct mt_report *r, enum mt_report_sort key);

size_t mt_report_nfuncs(const struct mt_report *r);
const struct mt_fstat *mt_report_func(const struct mt_report *r, size_t i);
size_t mt_report_nthreads(const struct mt_report *r);
const struct mt_rthread *mt_report_thread(const struct mt_report *r, size_t i);
/* The thread (pid, tid), by a hash; NULL when the report has none. */
const struct mt_rthread *mt_report_find_thread(const struct mt_report *r, uint32_t pid, uint32_t tid);
/* The stack samples seen (0: not a sampling stream). A sampled report's
 * figures are perf's: a function's total is the sum of the periods of
 * the samples that found it, its self those where it is the leaf; its
 * rows' calls and durations count the timeline's slices, which are
 * estimates, and are not shown as calls. */
uint64_t mt_report_samples(const struct mt_report *r);
/* Their periods summed. */
uint64_t mt_report_period(const struct mt_report *r);
/* The sampled event (the stream's, e.g. cpu-clock; NULL: not known), and
 * whether its period is time in ns (cpu-clock, task-clock): only then are
 * the periods times. */
void mt_report_set_sample_event(struct mt_report *r, const char *event);
const char *mt_report_sample_event(const struct mt_report *r);
/* What the recording lost, as the stream says it (NULL: nothing): said
 * with the figures, which are short of it. */
void mt_report_set_lost(struct mt_report *r, const char *lost);
const char *mt_report_lost(const struct mt_report *r);
bool mt_report_period_is_ns(const struct mt_report *r);
/* Time the threads spent off CPU by the switch events ([off-CPU] and
 * [preempted] rows' totals), exact, not sampled. */
void mt_report_off_cpu(const struct mt_report *r, uint64_t *off_cpu_ns, uint64_t *preempted_ns);
const struct mt_report_opts *mt_report_options(const struct mt_report *r);
void mt_report_free(struct mt_report *r);

#endif
