/* pftrace: the Perfetto protobuf writer behind mt-toperfetto.
 *
 * Takes the call-stack slices of callstack.h and writes a Perfetto trace
 * (proto/perfetto_trace.proto, shared/docs/perfetto-output.md section 3):
 * track descriptors for every process and thread on sequence 1, then one
 * sequence per thread with interned names and an incremental clock, its
 * slices strictly nested and in time order (magic-trace's write order is
 * not: inferred starts come last, so each thread's slices are ordered here
 * before they are written), decode errors as instants, the CPU frequency as
 * a counter track, and branch/cache-miss samples on their own tracks.
 *
 * The same ordered slices can be written as Chrome JSON instead (complete
 * "X" events, microseconds with 3 decimals), and either can be gzipped.
 *
 * Depth policy: Perfetto drops slices 512 deep; frames deeper than
 * MT_PFTRACE_MAX_DEPTH are not written, and each thread that lost some gets
 * one instant saying how many. */
#ifndef MT_PFTRACE_H
#define MT_PFTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "callstack.h"
#include "mt_err.h"

#define MT_PFTRACE_MAX_DEPTH 500

struct mt_pftrace;

enum mt_pftrace_format {
	MT_PFTRACE_PROTO,     /* Perfetto protobuf */
	MT_PFTRACE_JSON,      /* Chrome JSON (Trace Event Format): X, i, C and M events */
	MT_PFTRACE_FXT,       /* Fuchsia trace format, as magic-trace's viewer reads it */
};

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
};

/* Writes the trace (times: base + mapped), fills st (may be NULL) and frees pf. */
int mt_pftrace_finish(struct mt_pftrace *pf, uint64_t base, struct mt_pftrace_stats *st, struct mt_err *err);

#endif
