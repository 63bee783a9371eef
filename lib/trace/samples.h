/* samples: a perf.data's samples as events. Stack samples (sampling
 * mode, no Intel PT) become the stream; event samples recorded beside a
 * trace (branch-misses, breakpoint hits...) are merged into the decoded
 * stream of their queue in time order. */
#ifndef MT_SAMPLES_H
#define MT_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/events.h"
#include "trace/perfimage.h"
#include "trace/ptdecode.h"
#include "trace/ptperf.h"
#include "trace/sideband.h"
#include "trace/unwind.h"


/* Event samples (branch-misses, cache-misses, breakpoint hits...) recorded
 * beside the trace are merged into the decoded stream of their queue (the
 * same thread, or the same CPU) in time order. */
struct sink_ctx {
	struct mt_events_writer *w;
	const struct mt_perfdata *pd;
	const struct side *s;
	size_t *order;          /* samples by time */
	size_t norder;
	bool *done;
	bool per_cpu;           /* the queue being decoded */
	uint32_t q_tid, q_cpu;
	size_t next;            /* its cursor in order[] */
	struct mt_ptdec_stats *stats;
	struct brtypes *bt; /* the stream's: branch entries typed from the code (NULL: not) */
	struct mt_lbr_stitches *stitches; /* the stream's with --stitch-lbr (NULL: not) */
};

/* Orders the samples of other events than the trace's own (pt: its attr,
 * or NULL) by time into c->order; c's other fields are the caller's. */
int mt_samples_order(struct sink_ctx *c, const struct mt_perfdata *pd, const struct side *s,
		     const struct mt_perf_evattr *pt, struct mt_err *err);
void mt_samples_free(struct sink_ctx *c);
/* Writes the current queue's samples up to `time` (UINT64_MAX: all). The
 * scan starts at the queue's cursor: written samples and other queues'
 * before it are never looked at again, so each PT event costs O(1). */
void mt_samples_queue(struct sink_ctx *c, uint64_t time);
/* Writes the samples no queue took (threads or CPUs without trace). */
void mt_samples_rest(struct sink_ctx *c);
/* mt_ptdec_stream.sink: an event, after the samples due before it. */
void mt_samples_sink(void *ctx, const struct mt_event *ev);
/* How the --call-graph=dwarf samples unwound: how many had a stack copy,
 * how many of those stopped short of the outermost frame, and the first
 * reason (a static string). */
/* The frames of a sample's call chain the stream carries (beside its
 * event, period and frames_cut columns), innermost kept. */
#define MT_SAMPLES_MAX_FRAMES 253
/* a sample's branch stack entries kept (Arm BRBE has 64, LBR 32) */
#define MT_SAMPLES_MAX_BRANCHES 64 /* with their types, counters and mt-symbolize's names: four columns each within MT_EVENT_MAX_EXTRA */

/* What the stream of samples says at its end: stacks unwound part way
 * (of those with a stack copy), call chains cut to the stream's limit
 * (MT_SAMPLES_MAX_FRAMES; the longest seen, frames counted before the
 * cut), samples that came after later ones were written (perf's "out of
 * order events"). */
struct mt_samples_counts {
	uint64_t with_stack, partial;
	const char *first_why;
	uint64_t cut, longest, late;
	/* branch entries of user code that the recording gave no type (perf
	 * record -b without save_type): typed from the code (branch_type=),
	 * or not (their code not found) */
	uint64_t br_typed, br_untyped;
};
/* Stack samples as events, walked again from pd (collected with
 * defer_samples): frame= columns outermost first ("0xIP"; a symbolizer
 * names them), the sample's IP as FROM, with the threads' switches and the
 * trigger hits given, in time order over every CPU as perf orders them: a
 * round at a time (FINISHED_ROUND: what precedes the last round's latest
 * time is written), memory for about two rounds, not the file. A sample
 * with a stack copy (--call-graph=dwarf) is unwound by unw (when not
 * NULL): its callchain's kernel frames, then the user frames unwound.
 * o's trigger hits go in among them; branch entries the recording gave
 * no type get one from the instruction at their source, in the objects
 * found as o says (warnings once each, wd). */
int mt_samples_stream(struct mt_perfdata *pd, const struct side *s, struct mt_events_writer *w,
		      struct mt_ptdec_stats *stats, struct mt_unwind *unw, struct mt_samples_counts *uc,
		      const struct mt_ptperf_opts *o, struct warned *wd, struct mt_err *err);

#endif
