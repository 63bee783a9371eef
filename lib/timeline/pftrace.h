/* pftrace: the timeline writer behind mt-toperfetto: the call-stack
 * slices of callstack.h, held and ordered (pftrace.c, order.c), written by
 * the chosen format's writer (writer.h's ops table).
 *
 * Perfetto (write_perfetto.c) is a Perfetto trace
 * (proto/perfetto_trace.proto, shared/docs/perfetto-output.md section 3):
 * track descriptors for every process and thread on sequence 1, then one
 * sequence per thread with interned names and an incremental clock, its
 * slices strictly nested and in time order, decode errors as instants, the
 * CPU frequency as a counter track, and branch/cache-miss samples on their
 * own tracks.
 *
 * Streaming policy: magic-trace's write order is not time order (inferred
 * starts and [unknown] slices come late), so items are held and sorted
 * before they are written; memory is bounded by a window of held items
 * (shared by all threads) plus the open frames of each thread. When the
 * window fills, every thread writes out what it holds; a slice that arrives
 * later with an earlier start (an inferred start reaching back past the
 * cut) starts at the last time written instead, and a slice that would
 * outlive its parent ends with it. Both are counted as clamped. Traces
 * whose held items fit in the window are written exactly.
 *
 * The same slices can be written as Chrome JSON (B and E events,
 * microseconds with 3 decimals: exact in doubles) or FXT (duration
 * complete when the end is known and later than the begin, else begin and
 * end), and any of
 * them gzipped; or as magic-trace's stacks text (write_stacks.c), in the
 * order the stacks arrive, without the window.
 *
 * Depth policy: Perfetto drops slices 512 deep; frames deeper than
 * MT_PFTRACE_MAX_DEPTH are not written, and each thread that lost some gets
 * one instant saying how many. */
#ifndef MT_PFTRACE_H
#define MT_PFTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "timeline/callstack.h"
#include "base/mt_err.h"

#define MT_PFTRACE_MAX_DEPTH 500
#define MT_PFTRACE_WINDOW (1u << 18)

struct mt_pftrace;

enum mt_pftrace_format {
	MT_PFTRACE_PROTO,     /* Perfetto protobuf */
	MT_PFTRACE_JSON,      /* Chrome JSON (Trace Event Format): X, i, C and M events */
	MT_PFTRACE_FXT,       /* Fuchsia trace format, as magic-trace's viewer reads it */
	MT_PFTRACE_STACKS,    /* text, magic-trace's test format, in the order the stacks arrive */
	MT_PFTRACE_THREADS,   /* text, PID TID TIME KIND NAME a line, in time order per thread */
	MT_PFTRACE_SPEEDSCOPE, /* speedscope's file format: evented profiles (integer ns), sampled ones */
};

/* The format an output's name asks for by its ending, a .gz after it
 * aside: .pftrace, .perfetto-trace, .pb (Perfetto); .json; .fxt; .stacks
 * (magic-trace's stacks text, not folded stacks: .folded names none).
 * false when the name asks for none. */
bool mt_pftrace_format_of_name(const char *name, enum mt_pftrace_format *format);
/* The format's name, as --format spells it. */
const char *mt_pftrace_format_name(enum mt_pftrace_format format);

/* gzip: compress what is written (level 6). */
struct mt_pftrace *mt_pftrace_new(FILE *out, enum mt_pftrace_format format, bool gzip);
/* The sink to give callstack. */
void mt_pftrace_sink(struct mt_pftrace *pf, struct mt_cs_sink *sink);
/* Event-stream metadata (comm lines name processes and threads). */
void mt_pftrace_meta(struct mt_pftrace *pf, const char *meta);
/* The input ended in damage: recorded as an instant on every thread. */
void mt_pftrace_note_damage(struct mt_pftrace *pf, const char *msg);
struct mt_pftrace_stats {
	uint64_t packets, bytes, slices, instants, counters, depth_dropped, clamped;
	uint64_t stack_samples; /* written as the format's own samples (Perfetto: PerfSample) */
	uint64_t left_out;      /* speedscope: slices shorter than left_out_under_ns not written (max_slices) */
	uint64_t left_out_under_ns;
	bool samples_grouped;   /* speedscope: stack samples one per distinct stack (max_slices) */
	uint64_t threads; /* filled by mt_pftrace_finish */
};

/* The calls writer: the same slices, in the same order, handed over one
 * call at a time instead of written out (mt-report, folded stacks). A
 * slice's call is delivered at its end, children before their parent;
 * frames deeper than MT_PFTRACE_MAX_DEPTH are delivered too (the depth
 * limit is Perfetto's, not the call stacks'). */
struct mt_tl_call {
	uint32_t pid, tid;
	const char *name;          /* interned: lives as long as the writer */
	const char *file;          /* the function's entry line, NULL: none */
	int line;
	uint64_t ip;               /* the function's entry, 0: not known */
	uint64_t start, end;       /* perf-clock ns (a timeless stream: its instruction clock) */
	uint64_t id, parent;       /* 1, 2, ... in order of start over the trace; parent 0: a root */
	size_t depth;              /* 0: a root */
	const char *const *stack;  /* the names from the root to this one: stack[depth] = name */
	/* their call paths (perf's call_paths): one id per distinct stack of
	 * functions from the root, 1, 2, ... in order of first call */
	const uint64_t *paths;
	uint64_t insn;             /* instructions retired in it, callees included */
	bool has_insn;             /* insn known: the stream counts instructions and the call was seen */
	uint64_t cyc;              /* core cycles in it, callees included (at the CYC packets' granularity) */
	bool has_cyc;              /* cyc known: the stream counts cycles and the call was seen */
	bool no_call, no_return;   /* its start inferred / its end forced: perf's calls flags */
};
struct mt_tl_calls_sink {
	void *ctx;
	/* a thread's first call or sample is coming; comm: its name, NULL: none */
	void (*thread)(void *ctx, uint32_t pid, uint32_t tid, const char *comm, const char *process_comm);
	void (*call)(void *ctx, const struct mt_tl_call *c);
	/* optional: a stack sample, its n frames outermost first (names and
	 * objects, valid during the call), and its period (perf's period=) */
	void (*sample)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, size_t n, const char *const *names,
		       const char *const *dsos, uint64_t period);
};
struct mt_pftrace *mt_pftrace_new_calls(const struct mt_tl_calls_sink *sink);
/* Whether the writer reads the call stacks' counts (mt_cs_opts.counts):
 * the calls writer does. */
bool mt_pftrace_wants_counts(const struct mt_pftrace *pf);

/* speedscope: at most this many slices written, the longest (0: all; see
 * write_speedscope.c); the rest counted in the stats' left_out. */
void mt_pftrace_set_max_slices(struct mt_pftrace *pf, uint64_t slices);
/* Items held before every thread writes out what it holds (0: no bound;
 * default MT_PFTRACE_WINDOW). See the streaming policy above. */
void mt_pftrace_set_window(struct mt_pftrace *pf, size_t items);
/* Writes what is still held, ends the trace, fills st (may be NULL) and
 * frees pf. */
int mt_pftrace_finish(struct mt_pftrace *pf, struct mt_pftrace_stats *st, struct mt_err *err);

#endif
