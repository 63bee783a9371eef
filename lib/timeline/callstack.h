/* callstack: per-thread call stacks rebuilt from the event stream, with
 * magic-trace's algorithm (shared/docs/magic-trace-behaviour.md section 5):
 * time batching and spreading of calls, inferred start times, [untraced],
 * [syscall], [returned] and [unknown] frames, decode errors ending every
 * stack (and the +1 ns rule after them), kernel stacks suspending user
 * stacks across syscalls and interrupts, TSX transactions, OCaml exceptions
 * (from the programs' trap notes, else by heuristics), the Go gogo rule,
 * and stack samples diffed frame by frame (a function called from one call
 * site, or magic-trace's IP rule), a thread's frames kept while it is off
 * CPU.
 *
 * Output goes to a sink as slices per thread; times are mapped (ns since
 * the first event). Memory grows with stack depth and thread count only. */
#ifndef MT_CALLSTACK_H
#define MT_CALLSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/events.h"
#include "base/mt_err.h"
#include "timeline/ocamleh.h"

/* What a thread has retired so far: instructions and core cycles (the
 * events' insn and cyc counts, summed). */
struct mt_cs_counts {
	uint64_t insn, cyc;
};

struct mt_cs_thread {
	uint32_t pid, tid;
	size_t index;         /* order of first appearance */
	uint64_t base;        /* perf time of mapped time 0 (the trace's first event) */
	void *user;           /* for the sink */
	/* Set for each sink call: the thread's counts up to what it writes: a
	 * begin's call (an inferred begin: its stack's start), an end's
	 * return; and for an end, whether no return was seen (the stack was
	 * ended: a decode error, a snapshot, the end of the trace). */
	struct mt_cs_counts count;
	bool no_return;
};

/* A frame as it begins: file and line (NULL, 0 when unknown) are those of
 * the function's entry, from to_file/to_line columns (mt-symbolize --lines). */
struct mt_cs_frame {
	const char *name, *file;
	uint64_t ip, id;
	int line;
	bool inferred;
};

/* Names given to the sink are interned: one pointer per text, valid until
 * mt_cs_free. */
struct mt_cs_sink {
	void *ctx;
	/* A frame begins: name, its address, whether its start is inferred, and
	 * an id its end repeats. Begins and ends arrive in magic-trace's write
	 * order, which is not time order: inferred begins come late. */
	void (*begin)(void *ctx, struct mt_cs_thread *th, uint64_t time, const struct mt_cs_frame *f);
	void (*end)(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name, uint64_t id);
	/* A slice known only at its end ([unknown] for a return past the known stack). */
	void (*complete)(void *ctx, struct mt_cs_thread *th, uint64_t start, uint64_t end, const char *name);
	/* A zero-length marker: decode errors. */
	void (*instant)(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name);
	/* Optional: CPU frequency (MHz), branch/cache-miss samples. */
	void (*counter)(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name, double value);
	void (*event_sample)(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *event, uint64_t ip,
			     const char *symbol, uint64_t count);
	/* Optional: a stack sample as sampled, its n frames outermost first
	 * (names and objects, interned: they live as long as cs), before the
	 * slices it changes; period: the sample's (perf's period=: ns for
	 * cpu-clock, events for a counter; 1 when not given). */
	void (*stack_sample)(void *ctx, struct mt_cs_thread *th, uint64_t time, size_t n, const char *const *names,
			     const char *const *dsos, uint64_t period);
};

struct mt_cs;

struct mt_cs_opts {
	bool annotate_inferred;   /* append " [inferred start time]" to inferred frame names */
	/* Deliver inferred begins, [unknown] slices and calls at mapped time 0
	 * when they are known, not at the end of the thread as magic-trace
	 * writes them: for a sink that orders by time itself (and must not
	 * hold everything until then). */
	bool starts_when_known;
	/* Keep the threads' counts for the sink (mt_cs_thread's count and
	 * no_return); without, they stay 0: a sink that does not read them
	 * does not pay for them. */
	bool counts;
	/* PTWRITE payloads as the process's ptwrite counter, not instants */
	bool ptwrite_counter;
	/* Stack samples as magic-trace takes them (its expect tests): diffed
	 * by IP down to the leaf, so the leaf's slice ends and begins again at
	 * every sample that finds it at another instruction, and the calls of
	 * a change spread up to the next change. Without, the leaf is held by
	 * function (one slice while samples keep finding it) and the calls of
	 * a change spread up to the next sample at most. */
	bool magic_trace_samples;
	/* Warnings (decode errors, unusual input), at most once per kind. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

struct mt_cs *mt_cs_new(const struct mt_cs_sink *sink, const struct mt_cs_opts *opts);
/* Range filter (magic-trace's -filter, in one pass): write only what
 * happens from a call to start up to the next call to stop (that call
 * outside). A second start before a stop drops the first; a start never
 * stopped is dropped; a stop with no start is ignored. Frames open at a
 * region's start begin there, inferred. */
void mt_cs_set_filter(struct mt_cs *cs, const char *start, const char *stop);
/* With a filter: the calls to start seen, and the regions a call to stop
 * closed (each written). */
void mt_cs_filter_counts(const struct mt_cs *cs, uint64_t *starts, uint64_t *regions);
/* Events timed before their thread's previous event, each taken at that
 * event's time instead (time never runs backwards on a thread), and the
 * most one was moved: broken input, never a perf recording in order. */
void mt_cs_late_counts(const struct mt_cs *cs, uint64_t *events, uint64_t *max_ns);
/* OCaml mode A (5.11): the programs' exception-handler traps
 * (.note.ocaml_eh, sorted; ocamleh.h). With any, try blocks get their own
 * stacks and raises unwind them, instead of the mode-B heuristics. The
 * table must outlive cs. */
void mt_cs_set_ocaml_traps(struct mt_cs *cs, const struct mt_ocaml_trap *traps, size_t n);
/* Feeds one event (in stream order). */
int mt_cs_event(struct mt_cs *cs, const struct mt_event *ev, struct mt_err *err);
/* A snapshot boundary: every thread's stacks end, the next event starts afresh. */
void mt_cs_end_of_trace(struct mt_cs *cs);
/* Ends the trace (closes every frame) and frees everything. */
void mt_cs_finish(struct mt_cs *cs);
void mt_cs_free(struct mt_cs *cs);
/* The perf time that mapped time 0 stands for (the first event's time). */
uint64_t mt_cs_base_time(const struct mt_cs *cs);
/* The event whose samples' callchains were taken as the stacks (NULL:
 * none yet); the other events' samples are marks. */
const char *mt_cs_stack_event(const struct mt_cs *cs);
/* Threads in order of first appearance. */
size_t mt_cs_nthreads(const struct mt_cs *cs);
struct mt_cs_thread *mt_cs_thread_at(struct mt_cs *cs, size_t i);

#endif
