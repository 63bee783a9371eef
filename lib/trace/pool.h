/* pool: parallel decode of independent segments (a queue's buffers
 * between gaps). Workers decode groups of segments at once, each into
 * memory, and the groups are written in segment order: the output is the
 * sequential decode's. The pool also holds each worker's code image, which
 * the splitter's pieces use too. */
#ifndef MT_POOL_H
#define MT_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/workq.h"
#include "stream/events.h"
#include "trace/evlog.h"
#include "trace/image.h"
#include "trace/perfimage.h"
#include "trace/ptdecode.h"
#include "trace/ptperf.h"
#include "trace/sideband.h"

#define MAX_JOBS MT_WORKQ_MAX_THREADS /* mt_ptperf_opts.jobs at most */

struct pseg {
	const uint8_t *data;
	size_t len;
	uint8_t *owned;             /* a joined copy, freed after */
	struct who_ctx wc;
	int32_t cpu;
	bool snapshot_after;        /* a snapshot event follows it */
};

/* Segments decoded by one worker in one go (a task per segment of a few
 * KB cost more in thread wake-ups than decoding them), written in order by
 * the main thread. */
struct pgroup {
	struct mt_workq_task task;  /* first: the task is the group */
	struct pool *p;
	struct pseg *seg;
	size_t nseg, cap, bytes;
	struct evlog log;           /* binary output: events, written by the main thread */
	struct mt_events_writer text; /* text output: formatted by the worker, into memory */
	struct mt_ptdec_stats st;
	int rc;
	struct mt_err err;
};

/* A group is handed to the workers once it holds this much PT or this
 * many segments. */
#define GROUP_BYTES ((size_t)256 << 10)
#define GROUP_SEGMENTS 256
/* Memory a group keeps for its output between uses. */
#define GROUP_KEEP ((size_t)8 << 20)

/* The decode's workers and the groups in flight: a ring of `window`,
 * v[head] the oldest of the n handed to the workers, v[head + n] the one
 * being filled. The main thread reads the trace and writes the oldest
 * group when it is decoded, while the workers decode the next ones. */
struct pool {
	struct pgroup *v;
	size_t window, head, n, bytes, max_bytes;
	unsigned jobs;
	bool text;                  /* the output is text: workers format it */
	struct mt_workq q;          /* no threads with one job: tasks run in the main thread */
	pthread_mutex_t mu;         /* building images (warnings) */
	/* each worker's image, and the process it is of (mt_pool_image);
	 * worker 0 is the main thread */
	struct mt_image img[MAX_JOBS + 1];
	bool have_img[MAX_JOBS + 1];
	uint32_t img_pid[MAX_JOBS + 1];
	struct mt_perfdata *pd;
	const struct side *s;
	const struct mt_ptperf_opts *o;
	const struct mt_ptdec_config *cfg;
	struct warned *wd;
	struct progress *progress;
	struct releaser rel;
};

/* Larger segments are decoded in order by the main thread: their events
 * would cost too much memory to hold. */
#define MAX_POOLED_SEGMENT ((size_t)4 << 20)

/* A trace of less PT than this is decoded by the main thread alone: two
 * jobs would gain less than starting them costs (bench/startup measures
 * both sides). */
#define SMALL_TRACE_BYTES ((size_t)256 << 10)

/* A segment of contiguous buffers is joined into a copy (libipt decodes
 * from one buffer); past this many pieces' worth it is decoded in pieces
 * as it comes, so memory stays bounded whatever the trace's length. */
#define STREAM_PIECES 16

/* Progress of the whole decode: bytes of the segments done before, plus
 * how far into the current one. */
struct progress { const struct mt_ptperf_opts *o; uint64_t base, total; };
/* mt_ptdec_stream.progress, ctx a struct progress */
void mt_segment_progress(void *ctx, size_t done);
void mt_progress_add(struct progress *pr, uint64_t bytes);

/* Starts the workers (p's inputs set by the caller). */
int mt_pool_start(struct pool *p, struct mt_err *err);
/* Queues a segment for the workers. owned: a copy of the data, freed once
 * written; snapshot_after: a snapshot event follows it. */
int mt_pool_add(struct pool *p, const uint8_t *data, size_t len, uint8_t *owned, const struct who_ctx *wc,
		int32_t cpu, bool snapshot_after, struct mt_events_writer *w, struct mt_ptdec_stats *stats,
		struct mt_err *err);
/* Writes every segment queued, in order. */
int mt_pool_flush(struct pool *p, struct mt_events_writer *w, struct mt_ptdec_stats *stats, struct mt_err *err);
/* Whether segments wait to be written. */
bool mt_pool_busy(const struct pool *p);
/* Waits for what is in flight without writing it (after an error), ends
 * the workers and frees the groups' memory. */
void mt_pool_end(struct pool *p);
/* Worker `worker`'s image of process pid: kept from one segment or piece
 * to the next (its block cache with it), built again only for another
 * process. NULL with err set when out of memory. */
struct mt_image *mt_pool_image(struct pool *p, unsigned worker, uint32_t pid, struct mt_err *err);

#endif
