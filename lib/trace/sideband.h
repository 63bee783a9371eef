/* sideband: what a perf.data says besides its PT, collected in one walk
 * over its records (AUXTRACE_INFO, TIME_CONV, COMM, FORK, MMAP/MMAP2,
 * ITRACE_START, SWITCH*, AUXTRACE buffers, stack samples, AUX flags, LOST),
 * and the thread attribution it allows (who ran on a CPU at a time).
 * Internal to trace/: ptperf and its pool, splitter and --info read it. */
#ifndef MT_SIDEBAND_H
#define MT_SIDEBAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"
#include "trace/perfdata.h"
#include "trace/ptdecode.h"

/* AUXTRACE_INFO priv indexes (tools/perf/util/intel-pt.h) */
enum {
	PRIV_PMU_TYPE, PRIV_TIME_SHIFT, PRIV_TIME_MULT, PRIV_TIME_ZERO,
	PRIV_CAP_USER_TIME_ZERO, PRIV_TSC_BIT, PRIV_NORETCOMP_BIT,
	PRIV_HAVE_SCHED_SWITCH, PRIV_SNAPSHOT_MODE, PRIV_PER_CPU_MMAPS,
	PRIV_MTC_BIT, PRIV_MTC_FREQ_BITS, PRIV_TSC_CTC_N, PRIV_TSC_CTC_D,
	PRIV_CYC_BIT, PRIV_MAX_NONTURBO_RATIO, PRIV_FILTER_STR_LEN, PRIV_COUNT
};
#define AUXTRACE_INTEL_PT 1
/* A thread's name from a time on (COMM, or FORK: its creator's); in time
 * order once collected, so the last one of a thread is its latest name. */
struct comm { uint32_t pid, tid; const char *name; uint64_t time; size_t seq; /* file order */ };
/* A stack sample (sampling mode, no Intel PT): its callchain stays in the input. */
struct psample {
	uint32_t pid, tid, cpu;
	bool has_time, has_cpu;
	uint64_t time, period, ip;
	int attr;
	const uint8_t *chain;
	uint64_t nchain;
	/* --call-graph=dwarf: the user registers and stack copy (perfdata.h) */
	const uint8_t *regs;
	unsigned regs_n;
	uint64_t regs_mask;
	const uint8_t *stack;
	uint64_t stack_size;
	bool has_stack;
	const uint8_t *brstack; /* the branch stack (brstack.h), newest first */
	uint64_t nbranch;
	uint64_t hw_idx;        /* its newest entry's LBR register (has_hw_idx) */
	bool has_hw_idx;
	const uint8_t *brcntr;  /* BRANCH_COUNTERS: a u64 an entry (NULL: none) */
};
struct map {
	uint32_t pid;
	uint64_t start, len, pgoff;
	const char *path;
	uint8_t bid[20], bidsz;
};
struct auxbuf { const uint8_t *data; uint64_t size, offset; uint32_t tid, cpu; };
struct sw { uint32_t cpu, pid, tid; uint64_t time; };
/* A thread switched out or in (PERF_RECORD_SWITCH*, perf record
 * --switch-events): when sampling, the time it spent off CPU. */
struct tsw { uint32_t pid, tid, cpu; uint64_t time; bool has_cpu, out, preempt; };

#define VEC(T) struct { T *v; size_t n, cap; }
/* Appends item to a VEC; returns 0 or MT_ENOMEM. */
#define PUSH(vec, ...) mt_vec_push((void **)&(vec).v, &(vec).n, &(vec).cap, sizeof *(vec).v, \
				   &(__typeof__(*(vec).v)){__VA_ARGS__})
int mt_vec_push(void **v, size_t *n, size_t *cap, size_t elem, const void *item);

struct side {
	bool have_info;
	uint32_t info_type;
	uint64_t priv[PRIV_COUNT];
	size_t npriv;
	bool have_cap_event_trace;
	const char *filter;
	bool have_tconv;
	struct mt_tsc_conv tconv;
	VEC(struct comm) comms;
	VEC(struct psample) samples;
	VEC(struct map) maps;
	VEC(struct auxbuf) bufs;
	VEC(struct sw) itrace;      /* ITRACE_START per cpu */
	VEC(struct sw) switches;
	/* Set before collecting: stack samples are not kept but described
	 * (seen); mt_samples_stream walks them and the threads' switches again
	 * in time order, a round at a time, and mt_side_collect_samples keeps
	 * the samples. */
	bool defer_samples;
	struct { uint64_t n; bool any_time, any_stack; int primary; } seen;
	bool switch_events;         /* an event was recorded with context_switch */
	uint64_t counts[128];
	uint64_t aux_truncated, aux_collision, aux_overwrite, aux_partial;
	uint64_t lost, lost_records;  /* LOST records: the events perf dropped (its ring buffer full) */
	uint64_t lost_samples;        /* LOST_SAMPLES records: the samples the kernel dropped */
	uint64_t tmin, tmax;
	bool have_time;
	char walk_err[512];
	bool walk_damaged;
};

/* Collects the sideband of pd into *s (zeroed by the caller; freed with
 * mt_side_free even on failure). Damage in the container is noted in
 * s->walk_damaged / walk_err, not returned: only running out of memory is. */
int mt_side_collect(struct mt_perfdata *pd, struct side *s, struct mt_err *err);
void mt_side_free(struct side *s);

/* The samples of pd kept in s->samples after all (another walk): the event
 * samples recorded beside a trace. Returns 0 or MT_ENOMEM. */
int mt_side_collect_samples(struct mt_perfdata *pd, struct side *s, struct mt_err *err);
/* A SAMPLE record as a stack sample; false when it names no thread or IP. */
bool mt_side_sample_of(const struct mt_perf_record *r, struct psample *ps);
/* A SWITCH record as a thread's switch; false without thread or time. */
bool mt_side_switch_of(const struct mt_perf_record *r, struct tsw *sw);
/* A record that says data was lost (LOST, LOST_SAMPLES, an AUX record
 * flagged truncated or partial): where and when, and what it says, as an
 * error event's message ("perf lost 5 events: its ring buffer was full").
 * False for any other record. */
struct tloss { uint32_t pid, tid, cpu; uint64_t time; bool has_time, has_cpu; char msg[120]; };
bool mt_side_loss_of(const struct mt_perf_record *r, struct tloss *l);
/* One line of what the recording lost, or "" (nothing lost). */
void mt_side_losses(const struct side *s, char *out, size_t n);
/* magic-trace's primary sampling event: the first one (lowest attr index)
 * with samples that is not a breakpoint (a trigger's); -1 none yet. */
int mt_side_primary_of(const struct mt_perfdata *pd, int primary, int attr);

/* Whether the trace's times can be had (TSC packets and perf's clock conversion). */
bool mt_side_timed(const struct mt_perfdata *pd, const struct side *s);
/* The Intel PT event's attr; NULL when the recording has none. */
const struct mt_perf_evattr *mt_side_pt_attr(const struct mt_perfdata *pd, const struct side *s);
/* The value of a config bit field given by its mask. */
unsigned mt_config_field(uint64_t config, uint64_t mask);
/* The process of a thread, from COMM or ITRACE_START records (else the tid). */
uint32_t mt_side_pid_of_tid(const struct side *s, uint32_t tid);
/* A map's build-id: its MMAP2's, else the perf.data's build-id table's. */
void mt_side_buildid(const struct mt_perfdata *pd, const struct map *m, const uint8_t **bid, unsigned *bidsz);

#define RELEASE_LAG ((size_t)256 << 10)

/* Letting go of the perf.data's pages behind the decode. A page fault maps
 * its neighbours too, so pages let go right behind the current buffer come
 * back with the next one: release with a lag (RELEASE_LAG before where
 * decoding is), and start again when a new queue goes back in the file. */
struct releaser { const uint8_t *from; };
void mt_release_before(const struct mt_perfdata *pd, struct releaser *r, const uint8_t *at);

/* Thread attribution of a queue: the thread of a per-thread buffer, or a
 * CPU's context switches. */
struct who_ctx {
	bool per_cpu;
	uint32_t pid, tid;          /* per-thread, or the start of a cpu */
	const struct sw *sw;        /* this cpu's switches, sorted by time */
	size_t nsw;
};
/* mt_ptdec_stream.who: the pid and tid running at time. */
void mt_who(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid);

#endif
