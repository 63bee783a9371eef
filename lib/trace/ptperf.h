/* ptperf: decode the Intel PT in a perf.data into the event stream.
 *
 * Collects the sideband (sideband.c: AUXTRACE_INFO, TIME_CONV, COMM,
 * MMAP/MMAP2, ITRACE_START, SWITCH*, AUXTRACE buffers) in one walk over the
 * records, then decodes each PT queue (one per CPU or per thread) with
 * ptdecode: short segments on the pool's workers (pool.c), long ones in
 * pieces (split.c, stitch.c), event samples merged in time order
 * (samples.c). Also reports what a perf.data contains (--info, ptinfo.c). */
#ifndef MT_PTPERF_H
#define MT_PTPERF_H

#include <stdbool.h>
#include <stdio.h>

#include "stream/events.h"
#include "trace/perfdata.h"
#include "trace/ptdecode.h"

struct mt_ptperf_hit { uint64_t time, ip; uint32_t pid, tid; };

struct mt_ptperf_opts {
	const char *symfs;          /* root to find traced binaries under */
	const char *buildid_dir;    /* perf's build-id cache layout; NULL = ~/.debug */
	const char *vmlinux;        /* kernel image (ELF with absolute addresses) */
	const char *kcore_dir;      /* perf record --kcore's copy: kcore + kallsyms */
	bool all_branches;
	bool power;
	bool stitch_lbr;            /* --call-graph lbr stacks stitched as perf's --stitch-lbr */
	bool libipt_blocks;         /* mt_ptdec_config.libipt_blocks */
	bool libipt_packets;        /* mt_ptdec_config.libipt_packets */
	/* Threads decoding independent segments (queues, or a queue's
	 * buffers with gaps) at once; the output is the same as with 1. */
	unsigned jobs;
	/* jobs is the machine's cores, not asked for: a small trace
	 * (SMALL_TRACE_BYTES of PT) takes one */
	bool jobs_auto;
	/* With jobs > 1, a segment longer than twice this is cut at PSBs into
	 * pieces of about this many bytes, decoded at once and stitched (the
	 * same output); 0: never cut. */
	size_t split_bytes;
	/* optional: bytes of PT decoded so far, of total, now and then */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	/* Trigger hits seen beside the recording (a bundle's manifest): when
	 * sampling, perf.data has no record of them; each becomes a breakpoint
	 * sample event (event=mem:0xIP:x) at its time on its thread. */
	const struct mt_ptperf_hit *hits;
	size_t nhits;
	/* Non-fatal problems (missing binaries, lost data), one call each. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

/* Decodes everything; data damage becomes error events, so only failures to
 * produce output at all are returned as errors. *damaged is set when the
 * input was truncated or corrupt. */
int mt_ptperf_decode(struct mt_perfdata *pd, const struct mt_ptperf_opts *o,
		     struct mt_events_writer *w, struct mt_ptdec_stats *stats,
		     bool *damaged, struct mt_err *err);

/* Prints a human summary: header, events with decoded PT config, record
 * counts, AUXTRACE_INFO, buffers per queue, threads, mappings, time range. */
int mt_ptperf_info(struct mt_perfdata *pd, FILE *out, struct mt_err *err);

#endif
