/* rebuild: an event stream read to its end through the call-stack
 * reconstruction (callstack.h) into a timeline writer (pftrace.h): the
 * loop mt-toperfetto and mt-report share, so that both see the same
 * calls. Metadata goes to the writer (comm names), OCaml trap notes are
 * read from mapped objects, and a timeless stream is laid out on an
 * instruction clock (1 ns per instruction) until a timed event comes. */
#ifndef MT_REBUILD_H
#define MT_REBUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/mt_err.h"
#include "stream/events.h"
#include "timeline/pftrace.h"

struct mt_rebuild_opts {
	const char *prog;         /* warnings' prefix */
	const char *filter_start, *filter_stop; /* callstack's range filter; NULL: none */
	bool annotate_inferred;
	bool arrival_order;       /* the writer takes magic-trace's order (stacks) */
	bool ocaml_notes;         /* OCaml mode A from the objects' trap notes */
	bool ptwrite_counter;     /* mt_cs_opts.ptwrite_counter */
	bool magic_trace_samples;   /* mt_cs_opts.magic_trace_samples */
};

struct mt_rebuild_result {
	uint64_t late, late_max_ns;   /* mt_cs_late_counts */
	uint64_t filter_starts, filter_regions;
	char stack_event[128];        /* mt_cs_stack_event ("": none) */
	char lost[512];               /* the stream's "lost" fact: what the recording lost ("": nothing) */
	/* the stream's events (metadata not counted), and the first and last
	 * time among them (time_events 0: none timed), as mt-events --stats
	 * counts them */
	uint64_t events, time_events, first_time, last_time;
	/* the input stopped short (0: read to its end): what came before is
	 * rebuilt and written, and the damage noted in the output */
	int read_rc;
	struct mt_err read_err;
	/* mt_pftrace_finish's result */
	int write_rc;
	struct mt_err write_err;
	struct mt_pftrace_stats st;
};

/* Reads r to its end into pf and finishes pf (the call stacks' names
 * live until then). Returns 0, or read_rc, else write_rc. */
int mt_rebuild(struct mt_events_reader *r, struct mt_pftrace *pf, const struct mt_rebuild_opts *opts,
	       struct mt_rebuild_result *res);

#endif
