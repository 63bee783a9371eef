#define _GNU_SOURCE
#include "trace/ptperf.h"

#include <intel-pt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "trace/dwload.h"
#include "trace/image.h"
#include "trace/perfimage.h"
#include "trace/pool.h"
#include "trace/samples.h"
#include "trace/sideband.h"
#include "trace/snapshot.h"
#include "trace/split.h"

static int cmp_sw(const void *a, const void *b)
{
	const struct sw *x = a, *y = b;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static void write_meta(const struct mt_perfdata *pd, const struct side *s, struct mt_events_writer *w, bool timed,
		       const struct mt_ptperf_opts *o)
{
	mt_events_write_fact(w, "source", "%s", pd->name);
	mt_events_write_fact(w, "format", "perf.data %s mode", pd->pipe_mode ? "pipe" : "file");
	if (s->have_info)
		mt_events_write_fact(w, "decoder", "%slibipt %d.%d.%d %s", o->libipt_blocks || o->libipt_packets ? "" : "mt packets, ",
				     pt_library_version().major, pt_library_version().minor, pt_library_version().patch,
				     o->libipt_blocks ? "block" : "query, mt code walk");
	else
		mt_events_write_fact(w, "decoder", "stack samples (no Intel PT in this perf.data)");
	bool sample_times = !s->have_info && s->seen.any_time; /* a sampling recording: perf timed each sample */
	if (timed)
		mt_events_write_fact(w, "time", "perf-clock ns from TSC: shift=%" PRIu64 " mult=%" PRIu64 " zero=%" PRIu64,
				     s->priv[PRIV_TIME_SHIFT], s->priv[PRIV_TIME_MULT], s->priv[PRIV_TIME_ZERO]);
	else if (sample_times)
		mt_events_write_fact(w, "time", "perf-clock ns, each sample's time as perf recorded it");
	else
		mt_events_write_fact(w, "time", "timeless");
	/* perf record -k: the clock of every time, said so that the timeline
	 * lines up with other traces of that clock (mt-toperfetto) */
	if (pd->nattrs && (pd->attrs[0].flags & MT_ATTR_USE_CLOCKID)) {
		static const char *const clocks[] = {[0] = "realtime", [1] = "monotonic", [4] = "monotonic_raw",
						     [7] = "boottime", [11] = "tai"};
		int32_t c = pd->attrs[0].clockid;
		const char *name = c >= 0 && c < (int32_t)(sizeof clocks / sizeof clocks[0]) ? clocks[c] : NULL;
		if (name)
			mt_events_write_fact(w, "clock", "%s (perf record -k)", name);
		else
			mt_events_write_fact(w, "clock", "clockid %d (perf record -k)", (int)c);
	}
	if (s->have_info)
		mt_events_write_fact(w, "buffers", "%s", s->priv[PRIV_PER_CPU_MMAPS] ? "per-cpu" : "per-thread");
	else if (s->seen.n)
		mt_events_write_fact(w, "off-cpu", "%s", s->switch_events
				     ? "switch-out and switch-in events: a thread's time off CPU is known"
				     : "unknown: recorded without context-switch events (perf record --switch-events)");
	char lost[400];
	mt_side_losses(s, lost, sizeof lost);
	if (lost[0])
		mt_events_write_fact(w, "lost", "%s", lost);
	if (!s->have_info && s->seen.n) {
		/* how the samples' stacks were taken: what can cut them short */
		uint64_t st = 0, bst = 0;
		for (size_t i = 0; i < pd->nattrs; i++) {
			st |= pd->attrs[i].sample_type;
			bst |= pd->attrs[i].branch_sample_type;
		}
		if (st & MT_SAMPLE_STACK_USER)
			mt_events_write_fact(w, "callchains", "dwarf: each sample's stack copy unwound from the CFI");
		else if ((st & MT_SAMPLE_BRANCH_STACK) && (bst & MT_BRANCH_CALL_STACK))
			mt_events_write_fact(w, "callchains", "lbr: the user stack from the LBR's call stack (perf record "
					     "--call-graph lbr), the kernel's from its frame-pointer walk");
		else if (st & MT_SAMPLE_CALLCHAIN)
			mt_events_write_fact(w, "callchains", "fp: perf's frame-pointer walk");
	}
	for (size_t i = 0; i < s->comms.n; i++)
		mt_events_write_comm(w, s->comms.v[i].pid, s->comms.v[i].tid, s->comms.v[i].name);
	for (size_t i = 0; i < s->maps.n; i++) {
		const struct map *m = &s->maps.v[i];
		const uint8_t *bid;
		unsigned bidsz;
		mt_side_buildid(pd, m, &bid, &bidsz);
		mt_events_write_mmap(w, m->pid, m->start, m->len, m->pgoff, bid, bidsz, m->path);
	}
}

static void cpu_of(const struct mt_perfdata *pd, struct mt_ptdec_config *c)
{
	/* CPUID feature: "GenuineIntel,FAMILY,MODEL,STEPPING" */
	unsigned f, m, st;
	if (pd->cpuid && sscanf(pd->cpuid, "GenuineIntel,%u,%u,%u", &f, &m, &st) == 3) {
		c->family = f;
		c->model = m;
		c->stepping = st;
	}
}

/* One decode of a perf.data: the sideband, the decoder's configuration,
 * and what every queue's segments go through (the pool for short ones, the
 * splitter for long ones, the main thread for the rest). */
struct decode {
	struct mt_perfdata *pd;
	const struct mt_ptperf_opts *o;
	struct mt_events_writer *w;
	struct mt_ptdec_stats *stats;
	struct side s;
	struct mt_ptdec_config cfg;
	bool per_cpu;
	bool parallel;              /* segments on the pool's workers */
	bool streamable;            /* long segments decoded in pieces as they come */
	struct warned wd;
	struct sink_ctx sc;         /* event samples merged into the queues */
	bool *done;                 /* buffers already part of a segment */
	struct progress prog;
	struct releaser rel;
	struct pool pool;
};

/* A queue's segment being gathered: contiguous buffers of the queue (same
 * cpu in per-cpu mode, same tid otherwise). A segment of one buffer is
 * decoded where it lies; contiguous ones are joined into a copy. */
struct segment {
	struct who_ctx wc;
	int32_t cpu;                /* -1: per-thread */
	uint32_t idx_cpu, idx_tid;
	struct mt_image img;        /* the main thread's, for segments it decodes */
	bool img_built;             /* in parallel, workers build their own */
	uint8_t *joined;
	size_t jcap;
	const uint8_t *seg;
	size_t seglen;
	uint64_t next_off;          /* where the next contiguous buffer starts */
	struct splitter sp;
	bool splitting;
};

/* The decoder's configuration from the sideband: time conversion, MTC and
 * CYC calibration, the CPU for errata, the options. */
static void decoder_config(struct decode *d, const struct mt_perf_evattr *pa)
{
	const struct side *s = &d->s;
	struct mt_ptdec_config *cfg = &d->cfg;
	const struct mt_ptperf_opts *o = d->o;
	cfg->timed = mt_side_timed(d->pd, s);
	cfg->conv.time_shift = (uint16_t)s->priv[PRIV_TIME_SHIFT];
	cfg->conv.time_mult = (uint32_t)s->priv[PRIV_TIME_MULT];
	cfg->conv.time_zero = s->priv[PRIV_TIME_ZERO];
	if (s->have_tconv && s->tconv.short_fmt) {
		cfg->conv.short_fmt = true;
		cfg->conv.time_cycles = s->tconv.time_cycles;
		cfg->conv.time_mask = s->tconv.time_mask;
	}
	if (pa && s->npriv > PRIV_TSC_CTC_D) {
		cfg->mtc_freq = (uint8_t)mt_config_field(pa->config, s->priv[PRIV_MTC_FREQ_BITS]);
		cfg->ctc_n = (uint32_t)s->priv[PRIV_TSC_CTC_N];
		cfg->ctc_d = (uint32_t)s->priv[PRIV_TSC_CTC_D];
	}
	if (s->npriv > PRIV_MAX_NONTURBO_RATIO)
		cfg->nom_freq = (uint8_t)s->priv[PRIV_MAX_NONTURBO_RATIO];
	/* cycle-accurate mode by the event's cyc bit; not known: perhaps */
	cfg->cyc = !pa || s->npriv <= PRIV_CYC_BIT || (pa->config & s->priv[PRIV_CYC_BIT]);
	cfg->all_branches = o->all_branches;
	cfg->want_power = o->power;
	cfg->libipt_blocks = o->libipt_blocks;
	cfg->libipt_packets = o->libipt_packets;
	cpu_of(d->pd, cfg);
}

/* Who a queue's trace belongs to: its thread, or (per cpu) the thread
 * ITRACE_START names on its cpu and the cpu's context switches. */
static void queue_who(const struct decode *d, const struct auxbuf *first, struct who_ctx *wc)
{
	const struct side *s = &d->s;
	*wc = (struct who_ctx){.per_cpu = d->per_cpu};
	if (!d->per_cpu) {
		wc->tid = first->tid;
		wc->pid = mt_side_pid_of_tid(s, first->tid);
		return;
	}
	wc->tid = wc->pid = (uint32_t)-1;
	for (size_t i = 0; i < s->itrace.n; i++)
		if (s->itrace.v[i].cpu == first->cpu) {
			wc->pid = s->itrace.v[i].pid;
			wc->tid = s->itrace.v[i].tid;
			break;
		}
	if (wc->tid == (uint32_t)-1) {
		wc->tid = first->tid;
		wc->pid = mt_side_pid_of_tid(s, first->tid);
	}
	size_t a = 0;
	while (a < s->switches.n && s->switches.v[a].cpu < first->cpu)
		a++;
	size_t b = a;
	while (b < s->switches.n && s->switches.v[b].cpu == first->cpu)
		b++;
	wc->sw = s->switches.n ? s->switches.v + a : NULL;
	wc->nsw = b - a;
}

/* Makes room for the pool's segments to go out before the splitter or the
 * main thread writes (0 or an error). */
static int pool_drained(struct decode *d, struct mt_err *err)
{
	return mt_pool_busy(&d->pool) ? mt_pool_flush(&d->pool, d->w, d->stats, err) : 0;
}

/* The segment gathered so far is complete (b: the buffer after the gap,
 * NULL at the queue's end): decoded by the pool, in pieces, or by the main
 * thread, by its length. */
static int end_segment(struct decode *d, struct segment *q, const struct auxbuf *b, bool *pooled,
		       struct mt_err *err)
{
	const struct mt_ptperf_opts *o = d->o;
	int rc = 0;
	bool snapshot = d->s.priv[PRIV_SNAPSHOT_MODE] != 0;
	bool cut = q->splitting || (d->parallel && o->split_bytes && q->seglen > 2 * o->split_bytes);
	*pooled = d->parallel && !cut && q->seglen <= MAX_POOLED_SEGMENT;
	if (*pooled) {
		/* queued; a joined copy goes with it */
		uint8_t *own = q->seg == q->joined ? q->joined : NULL;
		if (own)
			q->joined = NULL, q->jcap = 0;
		return mt_pool_add(&d->pool, q->seg, q->seglen, own, &q->wc, q->cpu, snapshot && b, d->w, d->stats,
				   err);
	}
	if (cut) {
		/* a long one: in pieces */
		if (!q->splitting && ((rc = pool_drained(d, err)) || (rc = mt_split_begin(&q->sp, &d->pool, &q->wc, q->cpu, err))))
			return rc;
		size_t keep;
		rc = mt_split_feed(&q->sp, q->seg, q->seglen, true, d->w, d->stats, &keep, err);
		mt_split_end(&q->sp);
		q->splitting = false;
		if (q->seg != q->joined)
			mt_release_before(d->pd, &d->rel, q->seg);
		return rc;
	}
	if (d->parallel && (rc = pool_drained(d, err)))
		return rc;
	/* a large segment: its events go straight out */
	if (!q->img_built)
		mt_build_image(&q->img, d->pd, &d->s, q->wc.pid, o, &d->wd);
	q->img_built = true;
	struct mt_ptdec_stream st = {.data = q->seg, .len = q->seglen, .cpu = q->cpu, .who = mt_who, .who_ctx = &q->wc,
				     .sink = mt_samples_sink, .sink_ctx = &d->sc,
				     .progress = o->progress ? mt_segment_progress : NULL, .progress_ctx = &d->prog};
	rc = mt_ptdec_decode(&st, &q->img, &d->cfg, d->stats, err);
	mt_progress_add(&d->prog, q->seglen);
	if (q->seg != q->joined)
		mt_release_before(d->pd, &d->rel, q->seg);
	return rc;
}

/* Buffer b continues the segment (its first skip bytes already in it): the
 * segment becomes a copy, and one too long to hold is decoded in pieces as
 * it comes, what they no longer need dropped. */
static int extend_segment(struct decode *d, struct segment *q, const struct auxbuf *b, size_t skip,
			  struct mt_err *err)
{
	const struct mt_ptperf_opts *o = d->o;
	int rc = 0;
	size_t need = q->seglen + (b->size > skip ? b->size - skip : 0);
	if (need > q->jcap) {
		size_t nc = q->jcap ? q->jcap : 1 << 16;
		while (nc < need)
			nc *= 2;
		bool in_joined = q->seg == q->joined && q->joined; /* the segment moves with it */
		uint8_t *n = realloc(q->joined, nc);
		if (!n)
			return mt_err_set(err, MT_ENOMEM, "out of memory joining PT buffers");
		if (in_joined)
			q->seg = n;
		q->joined = n;
		q->jcap = nc;
	}
	if (q->seg != q->joined) {
		memcpy(q->joined, q->seg, q->seglen);
		q->seg = q->joined;
	}
	if (b->size > skip)
		memcpy(q->joined + q->seglen, b->data + skip, b->size - skip);
	mt_release_before(d->pd, &d->rel, b->data);
	q->seglen = need;
	q->next_off = b->offset + b->size;
	if (!d->streamable || q->seglen < STREAM_PIECES * o->split_bytes)
		return 0;
	if (!q->splitting && !(rc = pool_drained(d, err)) &&
	    !(rc = mt_split_begin(&q->sp, &d->pool, &q->wc, q->cpu, err)))
		q->splitting = true;
	size_t keep = 0;
	if (!rc)
		rc = mt_split_feed(&q->sp, q->joined, q->seglen, false, d->w, d->stats, &keep, err);
	if (!rc && keep) {
		memmove(q->joined, q->joined + keep, q->seglen - keep);
		q->seglen -= keep;
		mt_split_drop(&q->sp, keep);
	}
	return rc;
}

/* The queue of buffer qi (and of every later buffer of the same cpu or
 * thread): its segments, split at gaps, each decoded, then the rest of the
 * queue's event samples. */
static int decode_queue(struct decode *d, size_t qi, struct mt_err *err)
{
	const struct side *s = &d->s;
	const struct auxbuf *first = &s->bufs.v[qi];
	bool snapshot = s->priv[PRIV_SNAPSHOT_MODE] != 0;
	struct segment q = {.idx_cpu = first->cpu, .idx_tid = first->tid, .cpu = d->per_cpu ? (int32_t)first->cpu : -1,
			    .next_off = first->offset};
	d->sc.q_cpu = q.idx_cpu;
	d->sc.q_tid = q.idx_tid;
	d->sc.next = 0;
	queue_who(d, first, &q.wc);
	int rc = mt_image_init(&q.img, "perf.data", err);
	if (rc)
		return rc;
	for (size_t bi = qi; bi <= s->bufs.n && !rc; bi++) {
		const struct auxbuf *b = bi < s->bufs.n ? &s->bufs.v[bi] : NULL;
		if (b && (d->done[bi] || (d->per_cpu ? b->cpu != q.idx_cpu : b->tid != q.idx_tid)))
			continue;
		size_t skip = 0; /* bytes of b already in the segment (snapshot overlap) */
		if (b && q.seglen && b->offset != q.next_off && snapshot)
			skip = mt_snapshot_overlap(q.seg, &q.seglen, b->data, b->size);
		if (!b || (q.seglen && b->offset != q.next_off && !skip)) {
			bool pooled;
			rc = end_segment(d, &q, b, &pooled, err);
			q.seglen = 0;
			q.seg = NULL;
			if (!b || rc)
				break;
			if (snapshot && !pooled) {
				/* the next snapshot does not continue this one */
				struct mt_event sev = {.kind = MT_EV_SNAPSHOT, .pid = q.wc.pid, .tid = q.wc.tid, .cpu = q.cpu,
						       .offset = MT_NO_OFFSET};
				mt_events_write(d->w, &sev);
			}
		}
		d->done[bi] = true;
		if (!q.seglen) {
			q.seg = b->data;
			q.seglen = b->size;
			q.next_off = b->offset + b->size;
			continue;
		}
		rc = extend_segment(d, &q, b, skip, err);
	}
	if (q.splitting) /* left by an error */
		mt_split_end(&q.sp);
	free(q.joined);
	mt_image_fini(&q.img);
	if (!rc)
		mt_samples_queue(&d->sc, UINT64_MAX); /* the rest of this queue's samples */
	return rc;
}

/* Every queue in order of first appearance of its buffers; contiguous
 * buffers of a queue are joined, a gap starts a new segment. */
static int decode_queues(struct decode *d, struct mt_err *err)
{
	const struct side *s = &d->s;
	const struct mt_ptperf_opts *o = d->o;
	const struct mt_perf_evattr *pa = mt_side_pt_attr(d->pd, s);
	decoder_config(d, pa);
	d->per_cpu = s->priv[PRIV_PER_CPU_MMAPS] != 0;
	if (s->switches.n)
		qsort(s->switches.v, s->switches.n, sizeof *s->switches.v, cmp_sw);
	d->sc = (struct sink_ctx){.w = d->w, .pd = d->pd, .s = s, .per_cpu = d->per_cpu, .stats = d->stats};
	/* event samples of other events than the trace's own */
	int rc = s->samples.n ? mt_samples_order(&d->sc, d->pd, s, pa, err) : 0;
	if (rc)
		return rc;
	d->done = calloc(s->bufs.n + 1, 1);
	if (!d->done)
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	d->prog.o = o;
	for (size_t i = 0; i < s->bufs.n; i++)
		d->prog.total += s->bufs.v[i].size;
	/* a trace this small is decoded by the main thread before threads
	 * would have started and found their heaps: the pool's segments run
	 * in the caller, its images kept by process as a worker keeps them
	 * (bench/startup) */
	unsigned jobs = o->jobs_auto && d->prog.total < SMALL_TRACE_BYTES ? 1 : o->jobs;
	d->pool = (struct pool){.jobs = jobs > MAX_JOBS ? MAX_JOBS : jobs, .text = d->w->format == MT_EVENTS_TEXT,
				.pd = d->pd, .s = s, .o = o, .cfg = &d->cfg, .wd = &d->wd, .progress = &d->prog};
	d->parallel = o->jobs > 1 && !d->sc.norder;
	/* long segments can be decoded in pieces (one job or more) */
	d->streamable = !d->sc.norder && o->split_bytes && !s->priv[PRIV_SNAPSHOT_MODE];
	if (d->pool.jobs < 1)
		d->pool.jobs = 1;
	bool pool_started = !(rc = mt_pool_start(&d->pool, err));
	for (size_t qi = 0; qi < s->bufs.n && !rc; qi++)
		if (!d->done[qi])
			rc = decode_queue(d, qi, err);
	if (!rc && mt_pool_busy(&d->pool))
		rc = mt_pool_flush(&d->pool, d->w, d->stats, err);
	if (pool_started)
		mt_pool_end(&d->pool); /* what an error left in flight, too */
	/* samples of threads or CPUs without trace */
	if (!rc)
		mt_samples_rest(&d->sc);
	return rc;
}

/* Damage in the container itself, in the stream too; AUX records that
 * say trace data was lost. */
static void report_damage(const struct decode *d)
{
	const struct side *s = &d->s;
	const struct mt_ptperf_opts *o = d->o;
	if (s->walk_damaged) {
		struct mt_event ev = {.kind = MT_EV_ERROR, .cpu = -1, .offset = MT_NO_OFFSET, .msg = s->walk_err};
		d->stats->by_kind[MT_EV_ERROR]++;
		d->stats->errors++;
		mt_events_write(d->w, &ev);
		if (o->warn) {
			char msg[600];
			snprintf(msg, sizeof msg, "warning: %s", s->walk_err);
			o->warn(o->warn_ctx, msg);
		}
	}
	char lost[400];
	mt_side_losses(s, lost, sizeof lost);
	if (lost[0] && o->warn) {
		char msg[1000];
		snprintf(msg, sizeof msg, "warning: %s: lost while recording: %s; each loss is an error event at its "
			 "time", d->pd->name, lost);
		o->warn(o->warn_ctx, msg);
	}
}

int mt_ptperf_decode(struct mt_perfdata *pd, const struct mt_ptperf_opts *o,
		     struct mt_events_writer *w, struct mt_ptdec_stats *stats,
		     bool *damaged, struct mt_err *err)
{
	struct decode d = {.pd = pd, .o = o, .w = w, .stats = stats};
	struct side *s = &d.s;
	s->defer_samples = true; /* sampling: walked again, in order, a round at a time */
	int rc = mt_side_collect(pd, s, err);
	if (!rc && s->have_info && s->seen.n)
		rc = mt_side_collect_samples(pd, s, err); /* a trace's event samples: kept */
	if (rc)
		goto out;
	*damaged = s->walk_damaged;
	if (s->bufs.n && !s->have_info) {
		rc = mt_err_set(err, MT_EFORMAT, "%s: AUXTRACE data without an AUXTRACE_INFO record", pd->name);
		goto out;
	}
	if (s->have_info && s->info_type != AUXTRACE_INTEL_PT) {
		rc = mt_err_set(err, MT_EUNSUP, "%s: AUX trace type %u is not Intel PT", pd->name, s->info_type);
		goto out;
	}
	if (!s->have_info) {
		/* no Intel PT: a sampling recording, its stack samples are the events */
		write_meta(pd, s, w, false, o);
		if (s->seen.n && !s->seen.any_time && o->warn) {
			char msg[600];
			snprintf(msg, sizeof msg, "warning: %s: the samples carry no time (recorded with --no-timestamp): "
				 "they come in file order, and a timeline of them has no durations", pd->name);
			o->warn(o->warn_ctx, msg);
		}
		if (s->seen.n && !s->switch_events && o->warn) {
			char msg[600];
			snprintf(msg, sizeof msg, "warning: %s: recorded without context-switch events (perf record "
				 "--switch-events): time a thread spent off CPU cannot be told from the function that ran "
				 "before it", pd->name);
			o->warn(o->warn_ctx, msg);
		}
		struct mt_unwind *unw = NULL;
		struct mt_samples_counts uc = {0};
		const char *why = NULL;
		if (s->seen.any_stack && !mt_dw_load(&why)) {
			rc = mt_err_set(err, MT_EUNSUP, "%s: its --call-graph=dwarf stacks cannot be unwound: %s",
					pd->name, why);
			goto out;
		}
		if (s->seen.any_stack && !(unw = mt_build_unwind(pd, s, o, &d.wd, &why))) {
			rc = mt_err_set(err, MT_ENOMEM, "out of memory");
			goto out;
		}
		rc = mt_samples_stream(pd, s, w, stats, unw, &uc, o, &d.wd, err);
		mt_unwind_free(unw);
		if (rc)
			goto out;
		if (uc.partial && o->warn) {
			char msg[800];
			snprintf(msg, sizeof msg, "warning: %s: %" PRIu64 " of %" PRIu64 " stacks (--call-graph=dwarf) "
				 "unwound only part way; the first: %s", pd->name, uc.partial, uc.with_stack,
				 uc.first_why);
			o->warn(o->warn_ctx, msg);
		}
		if (uc.cut && o->warn) {
			char msg[800];
			snprintf(msg, sizeof msg, "warning: %s: %" PRIu64 " sample%s call chains were longer than %d frames "
				 "(the longest %" PRIu64 "%s): cut to their innermost %d, the frames left out counted in "
				 "each (frames_cut=N)", pd->name, uc.cut, uc.cut == 1 ? "'s" : "s'", MT_SAMPLES_MAX_FRAMES,
				 uc.longest, uc.longest > 4096 ? " or more" : "", MT_SAMPLES_MAX_FRAMES);
			o->warn(o->warn_ctx, msg);
		}
		if (uc.br_untyped && o->warn) {
			char msg[600];
			snprintf(msg, sizeof msg, "warning: %s: %" PRIu64 " of %" PRIu64 " branch entries in user code have "
				 "no type (recorded without -j save_type) and none from the code (not found): their "
				 "calls and returns are not drawn", pd->name, uc.br_untyped, uc.br_untyped + uc.br_typed);
			o->warn(o->warn_ctx, msg);
		}
		if (uc.late && o->warn) {
			char msg[600];
			snprintf(msg, sizeof msg, "warning: %s: %" PRIu64 " sample%s out of time order: written after later "
				 "ones (perf: out of order events)", pd->name, uc.late, uc.late == 1 ? "" : "s");
			o->warn(o->warn_ctx, msg);
		}
	} else {
		write_meta(pd, s, w, mt_side_timed(pd, s), o);
		rc = decode_queues(&d, err);
	}
	if (!rc)
		report_damage(&d);
out:
	free(d.done);
	mt_samples_free(&d.sc);
	mt_warned_free(&d.wd);
	mt_side_free(s);
	return rc;
}
