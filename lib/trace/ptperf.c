#define _GNU_SOURCE
#include "trace/ptperf.h"

#include <intel-pt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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
	if (timed)
		mt_events_write_fact(w, "time", "perf-clock ns from TSC: shift=%" PRIu64 " mult=%" PRIu64 " zero=%" PRIu64,
				     s->priv[PRIV_TIME_SHIFT], s->priv[PRIV_TIME_MULT], s->priv[PRIV_TIME_ZERO]);
	else
		mt_events_write_fact(w, "time", "timeless");
	if (s->have_info)
		mt_events_write_fact(w, "buffers", "%s", s->priv[PRIV_PER_CPU_MMAPS] ? "per-cpu" : "per-thread");
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

int mt_ptperf_decode(struct mt_perfdata *pd, const struct mt_ptperf_opts *o,
		     struct mt_events_writer *w, struct mt_ptdec_stats *stats,
		     bool *damaged, struct mt_err *err)
{
	struct side s = {0};
	int rc = mt_side_collect(pd, &s, err);
	if (rc)
		goto out;
	*damaged = s.walk_damaged;
	if (s.bufs.n && !s.have_info) {
		rc = mt_err_set(err, MT_EFORMAT, "%s: AUXTRACE data without an AUXTRACE_INFO record", pd->name);
		goto out;
	}
	if (s.have_info && s.info_type != AUXTRACE_INTEL_PT) {
		rc = mt_err_set(err, MT_EUNSUP, "%s: AUX trace type %u is not Intel PT", pd->name, s.info_type);
		goto out;
	}
	bool timed = mt_side_timed(pd, &s);
	if (!s.have_info) {
		/* no Intel PT: a sampling recording, its stack samples are the events */
		write_meta(pd, &s, w, false, o);
		mt_samples_emit_stacks(pd, &s, w, stats);
		goto damage;
	}
	write_meta(pd, &s, w, timed, o);

	struct mt_ptdec_config cfg = {0};
	cfg.timed = timed;
	cfg.conv.time_shift = (uint16_t)s.priv[PRIV_TIME_SHIFT];
	cfg.conv.time_mult = (uint32_t)s.priv[PRIV_TIME_MULT];
	cfg.conv.time_zero = s.priv[PRIV_TIME_ZERO];
	if (s.have_tconv && s.tconv.short_fmt) {
		cfg.conv.short_fmt = true;
		cfg.conv.time_cycles = s.tconv.time_cycles;
		cfg.conv.time_mask = s.tconv.time_mask;
	}
	const struct mt_perf_evattr *pa = mt_side_pt_attr(pd, &s);
	if (pa && s.npriv > PRIV_TSC_CTC_D) {
		cfg.mtc_freq = (uint8_t)mt_config_field(pa->config, s.priv[PRIV_MTC_FREQ_BITS]);
		cfg.ctc_n = (uint32_t)s.priv[PRIV_TSC_CTC_N];
		cfg.ctc_d = (uint32_t)s.priv[PRIV_TSC_CTC_D];
	}
	if (s.npriv > PRIV_MAX_NONTURBO_RATIO)
		cfg.nom_freq = (uint8_t)s.priv[PRIV_MAX_NONTURBO_RATIO];
	/* cycle-accurate mode by the event's cyc bit; not known: perhaps */
	cfg.cyc = !pa || s.npriv <= PRIV_CYC_BIT || (pa->config & s.priv[PRIV_CYC_BIT]);
	cfg.all_branches = o->all_branches;
	cfg.want_power = o->power;
	cfg.libipt_blocks = o->libipt_blocks;
	cfg.libipt_packets = o->libipt_packets;
	cpu_of(pd, &cfg);
	bool per_cpu = s.priv[PRIV_PER_CPU_MMAPS] != 0;
	if (s.switches.n)
		qsort(s.switches.v, s.switches.n, sizeof *s.switches.v, cmp_sw);

	struct warned wd = {0};
	struct sink_ctx sc = {.w = w, .pd = pd, .s = &s, .per_cpu = per_cpu, .stats = stats};
	/* event samples of other events than the trace's own */
	if (s.samples.n && (rc = mt_samples_order(&sc, pd, &s, pa, err)))
		goto out;
	/* Queues in order of first appearance of their idx; contiguous
	 * buffers of a queue are joined, a gap starts a new segment. */
	bool *done = calloc(s.bufs.n + 1, 1);
	if (!done) {
		rc = mt_err_set(err, MT_ENOMEM, "out of memory");
		goto out;
	}
	struct progress prog = {.o = o};
	struct releaser rel = {0};
	for (size_t i = 0; i < s.bufs.n; i++)
		prog.total += s.bufs.v[i].size;
	struct pool pool = {.jobs = o->jobs > MAX_JOBS ? MAX_JOBS : o->jobs, .text = w->format == MT_EVENTS_TEXT, .pd = pd, .s = &s,
			    .o = o, .cfg = &cfg, .wd = &wd, .progress = &prog};
	bool parallel = o->jobs > 1 && !sc.norder;
	/* long segments can be decoded in pieces (one job or more) */
	bool streamable = !sc.norder && o->split_bytes && !s.priv[PRIV_SNAPSHOT_MODE];
	if (pool.jobs < 1)
		pool.jobs = 1;
	bool pool_started = !(rc = mt_pool_start(&pool, err));
	for (size_t qi = 0; qi < s.bufs.n && !rc; qi++) {
		if (done[qi])
			continue;
		const struct auxbuf *first = &s.bufs.v[qi];
		uint32_t idx_cpu = first->cpu, idx_tid = first->tid;
		sc.q_cpu = idx_cpu;
		sc.q_tid = idx_tid;
		sc.next = 0;
		struct who_ctx wc = {.per_cpu = per_cpu};
		if (per_cpu) {
			wc.tid = wc.pid = (uint32_t)-1;
			for (size_t i = 0; i < s.itrace.n; i++)
				if (s.itrace.v[i].cpu == idx_cpu) {
					wc.pid = s.itrace.v[i].pid;
					wc.tid = s.itrace.v[i].tid;
					break;
				}
			if (wc.tid == (uint32_t)-1) {
				wc.tid = first->tid;
				wc.pid = mt_side_pid_of_tid(&s, first->tid);
			}
			size_t a = 0;
			while (a < s.switches.n && s.switches.v[a].cpu < idx_cpu)
				a++;
			size_t b = a;
			while (b < s.switches.n && s.switches.v[b].cpu == idx_cpu)
				b++;
			wc.sw = s.switches.n ? s.switches.v + a : NULL;
			wc.nsw = b - a;
		} else {
			wc.tid = idx_tid;
			wc.pid = mt_side_pid_of_tid(&s, idx_tid);
		}
		struct mt_image img;
		if ((rc = mt_image_init(&img, "perf.data", err)))
			break;
		bool img_built = false; /* in parallel, workers build their own */

		/* Gather this queue's buffers (same cpu in per-cpu mode, same tid
		 * otherwise). A segment of one buffer is decoded where it lies;
		 * contiguous ones are joined into a copy. */
		uint8_t *joined = NULL;
		size_t jcap = 0;
		const uint8_t *seg = NULL;
		size_t seglen = 0;
		struct splitter sp;
		bool splitting = false;
		uint64_t next_off = first->offset;
		for (size_t bi = qi; bi <= s.bufs.n && !rc; bi++) {
			const struct auxbuf *b = bi < s.bufs.n ? &s.bufs.v[bi] : NULL;
			if (b && (done[bi] || (per_cpu ? b->cpu != idx_cpu : b->tid != idx_tid)))
				continue;
			size_t skip = 0; /* bytes of b already in the segment (snapshot overlap) */
			if (b && seglen && b->offset != next_off && s.priv[PRIV_SNAPSHOT_MODE])
				skip = mt_snapshot_overlap(seg, &seglen, b->data, b->size);
			if (!b || (seglen && b->offset != next_off && !skip)) {
				bool cut = splitting || (parallel && o->split_bytes && seglen > 2 * o->split_bytes);
				bool pooled = parallel && !cut && seglen <= MAX_POOLED_SEGMENT;
				if (pooled) {
					/* queued; a joined copy goes with it */
					uint8_t *own = seg == joined ? joined : NULL;
					if (own)
						joined = NULL, jcap = 0;
					rc = mt_pool_add(&pool, seg, seglen, own, &wc, per_cpu ? (int32_t)idx_cpu : -1,
						      s.priv[PRIV_SNAPSHOT_MODE] && b, w, stats, err);
				} else if (cut && (splitting || ((!mt_pool_busy(&pool) || !(rc = mt_pool_flush(&pool, w, stats, err))) &&
								 !(rc = mt_split_begin(&sp, &pool, &wc,
										    per_cpu ? (int32_t)idx_cpu : -1, err))))) {
					/* a long one: in pieces */
					size_t keep;
					rc = mt_split_feed(&sp, seg, seglen, true, w, stats, &keep, err);
					mt_split_end(&sp);
					splitting = false;
					if (seg != joined)
						mt_release_before(pd, &rel, seg);
				} else if (!rc && (!parallel || !mt_pool_busy(&pool) || !(rc = mt_pool_flush(&pool, w, stats, err)))) {
					/* a large segment: its events go straight out */
					if (!img_built)
						mt_build_image(&img, pd, &s, wc.pid, o, &wd);
					img_built = true;
					struct mt_ptdec_stream st = {.data = seg, .len = seglen,
								     .cpu = per_cpu ? (int32_t)idx_cpu : -1, .who = mt_who,
								     .who_ctx = &wc, .sink = mt_samples_sink, .sink_ctx = &sc,
								     .progress = o->progress ? mt_segment_progress : NULL,
								     .progress_ctx = &prog};
					rc = mt_ptdec_decode(&st, &img, &cfg, stats, err);
					mt_progress_add(&prog, seglen);
					if (seg != joined)
						mt_release_before(pd, &rel, seg);
				}
				seglen = 0;
				seg = NULL;
				if (!b || rc)
					break;
				if (s.priv[PRIV_SNAPSHOT_MODE] && !pooled) {
					/* the next snapshot does not continue this one */
					struct mt_event sev = {.kind = MT_EV_SNAPSHOT, .pid = wc.pid, .tid = wc.tid,
							       .cpu = per_cpu ? (int32_t)idx_cpu : -1,
							       .offset = MT_NO_OFFSET};
					mt_events_write(w, &sev);
				}
			}
			done[bi] = true;
			if (!seglen) {
				seg = b->data;
				seglen = b->size;
				next_off = b->offset + b->size;
				continue;
			}
			/* a second piece: the segment becomes a copy */
			size_t need = seglen + (b->size > skip ? b->size - skip : 0);
			if (need > jcap) {
				size_t nc = jcap ? jcap : 1 << 16;
				while (nc < need)
					nc *= 2;
				bool in_joined = seg == joined && joined; /* the segment moves with it */
				uint8_t *n = realloc(joined, nc);
				if (!n) {
					rc = mt_err_set(err, MT_ENOMEM, "out of memory joining PT buffers");
					break;
				}
				if (in_joined)
					seg = n;
				joined = n;
				jcap = nc;
			}
			if (seg != joined) {
				memcpy(joined, seg, seglen);
				seg = joined;
			}
			if (b->size > skip)
				memcpy(joined + seglen, b->data + skip, b->size - skip);
			mt_release_before(pd, &rel, b->data);
			seglen = need;
			next_off = b->offset + b->size;
			if (streamable && seglen >= STREAM_PIECES * o->split_bytes) {
				/* a segment too long to hold: decoded in pieces as it comes,
				 * what they no longer need dropped */
				if (!splitting && (!mt_pool_busy(&pool) || !(rc = mt_pool_flush(&pool, w, stats, err))) &&
				    !(rc = mt_split_begin(&sp, &pool, &wc, per_cpu ? (int32_t)idx_cpu : -1, err)))
					splitting = true;
				size_t keep = 0;
				if (!rc)
					rc = mt_split_feed(&sp, joined, seglen, false, w, stats, &keep, err);
				if (!rc && keep) {
					memmove(joined, joined + keep, seglen - keep);
					seglen -= keep;
					mt_split_drop(&sp, keep);
				}
			}
		}
		if (splitting) /* left by an error */
			mt_split_end(&sp);
		free(joined);
		mt_image_fini(&img);
		if (!rc)
			mt_samples_queue(&sc, UINT64_MAX); /* the rest of this queue's samples */
	}
	if (!rc && mt_pool_busy(&pool))
		rc = mt_pool_flush(&pool, w, stats, err);
	if (pool_started)
		mt_pool_end(&pool); /* what an error left in flight, too */
	free(done);
	/* samples of threads or CPUs without trace */
	if (!rc)
		mt_samples_rest(&sc);
	mt_samples_free(&sc);
	mt_warned_free(&wd);
damage:
	if (!rc && s.walk_damaged) {
		/* Damage in the container itself: report it in the stream, too. */
		struct mt_event ev = {.kind = MT_EV_ERROR, .cpu = -1, .offset = MT_NO_OFFSET, .msg = s.walk_err};
		stats->by_kind[MT_EV_ERROR]++;
		stats->errors++;
		mt_events_write(w, &ev);
		if (o->warn) {
			char msg[600];
			snprintf(msg, sizeof msg, "warning: %s", s.walk_err);
			o->warn(o->warn_ctx, msg);
		}
	}
	if (!rc && s.aux_truncated && o->warn) {
		char msg[128];
		snprintf(msg, sizeof msg, "warning: %" PRIu64 " AUX records flagged TRUNCATED: trace data was lost while recording",
			 s.aux_truncated);
		o->warn(o->warn_ctx, msg);
	}
out:
	mt_side_free(&s);
	return rc;
}
