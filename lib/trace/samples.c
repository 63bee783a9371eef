#define _GNU_SOURCE
#include "trace/samples.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/brstack.h"
#include "trace/lbrstitch.h"

/* The event's name as perf prints it before '/' or ':' (cpu-clock, cycles);
 * a PMU's own event, PMU/EVENT/ (a hybrid CPU's cpu_core/cycles/ and
 * cpu_atom/cycles/), keeps its PMU. */
static void event_name(const struct mt_perfdata *pd, int attr, char *out, size_t n)
{
	const struct mt_perf_evattr *a = attr >= 0 && (size_t)attr < pd->nattrs ? &pd->attrs[attr] : NULL;
	if (a && a->type == 5) { /* PERF_TYPE_BREAKPOINT, named as perf names it */
		static const char *const rw[] = {"", "r", "w", "rw", "x"};
		snprintf(out, n, "mem:0x%" PRIx64 ":%s", a->config1, a->bp_type < 5 ? rw[a->bp_type] : "");
		return;
	}
	if (a && a->name) {
		size_t pmu = strcspn(a->name, "/:");
		if (a->name[pmu] == '/') {
			const char *ev = a->name + pmu + 1;
			size_t k = strcspn(ev, "/:,=");
			if (k && ev[k] != '=' && ev[k] != ',') { /* not freq=N, period=N: an event name */
				snprintf(out, n, "%.*s/%.*s", (int)pmu, a->name, (int)k, ev);
				return;
			}
		}
		snprintf(out, n, "%.*s", (int)pmu, a->name);
		return;
	}
	static const char *const hw[] = {"cycles", "instructions", "cache-references", "cache-misses",
					 "branch-instructions", "branch-misses"};
	static const char *const sw[] = {"cpu-clock", "task-clock"};
	if (a && a->type == 0 && a->config < 6)
		snprintf(out, n, "%s", hw[a->config]);
	else if (a && a->type == 1 && a->config < 2)
		snprintf(out, n, "%s", sw[a->config]);
	else if (a && a->type == 4) /* RAW: perf's name for it */
		snprintf(out, n, "r%" PRIx64, a->config);
	else
		snprintf(out, n, "sample");
}

/* Branch entries' types from the code where the recording saved none
 * (perf record -b without save_type), as perf's save_type gives them: an
 * image of each process's user objects, the latest used 64 kept (a
 * system-wide recording interleaves many processes: each image is built
 * once while its process stays among them). */
#define BRIMG_KEEP 64
struct brtypes {
	const struct mt_perfdata *pd;
	const struct side *s;
	const struct mt_ptperf_opts *o;
	struct warned *wd;
	struct mt_samples_counts *uc;
	struct {
		uint32_t pid;
		bool built;
		uint64_t used;
		struct mt_image img;
	} v[BRIMG_KEEP];
	uint64_t tick;
	size_t last; /* the slot used last */
};

static void brtypes_free(struct brtypes *bt)
{
	for (size_t i = 0; i < BRIMG_KEEP; i++)
		if (bt->v[i].built)
			mt_image_fini(&bt->v[i].img);
}

/* The PERF_BR_* type of the user branch at from in pid, 0 when its code
 * is not found (counted) or it is kernel code (not this image's). */
static unsigned brtype_of(struct brtypes *bt, uint32_t pid, uint64_t from)
{
	if (!from || from >= 0xffff800000000000ull)
		return 0;
	size_t k = BRIMG_KEEP, lru = 0;
	if (bt->v[bt->last].built && bt->v[bt->last].pid == pid) /* most entries: the last one's process */
		k = bt->last;
	for (size_t i = 0; i < BRIMG_KEEP && k == BRIMG_KEEP; i++) {
		if (bt->v[i].built && bt->v[i].pid == pid)
			k = i;
		if (!bt->v[i].built || (bt->v[lru].built && bt->v[i].used < bt->v[lru].used))
			lru = i;
	}
	if (k == BRIMG_KEEP) {
		k = lru;
		if (bt->v[k].built)
			mt_image_fini(&bt->v[k].img);
		struct mt_err e = {0};
		bt->v[k].built = !mt_image_init(&bt->v[k].img, "branch types", &e);
		if (!bt->v[k].built) {
			bt->uc->br_untyped++;
			return 0;
		}
		bt->v[k].pid = pid;
		mt_build_user_image(&bt->v[k].img, bt->pd, bt->s, pid, bt->o, bt->wd);
	}
	bt->v[k].used = ++bt->tick;
	bt->last = k;
	uint8_t code[16];
	size_t n = mt_image_read(&bt->v[k].img, from, code, sizeof code);
	unsigned type = n ? mt_branch_type_of_insn(code, n) : 0;
	if (type)
		bt->uc->br_typed++;
	else
		bt->uc->br_untyped++;
	return type;
}

/* A sample's branch stack as branch= columns from kv[n] on (at most
 * MT_SAMPLES_MAX_BRANCHES), each followed by branch_type= where the
 * recording saved no type and bt found it in the code; returns the new n. */
static unsigned branch_columns(const struct psample *ps, struct mt_kv *kv, unsigned n, struct brtypes *bt,
			       const struct mt_perfdata *pd)
{
	static char text[MT_SAMPLES_MAX_BRANCHES][96], cntr[MT_SAMPLES_MAX_BRANCHES][24];
	/* an LBR call stack's entries are calls: no type to find */
	const struct mt_perf_evattr *a =
		ps->attr >= 0 && (size_t)ps->attr < pd->nattrs ? &pd->attrs[ps->attr] : NULL;
	if (a && a->branch_sample_type & (MT_BRANCH_CALL_STACK | MT_BRANCH_TYPE_SAVE))
		bt = NULL;
	for (uint64_t i = 0; i < ps->nbranch && i < MT_SAMPLES_MAX_BRANCHES; i++) {
		struct mt_branch b;
		mt_branch_parse(ps->brstack + i * MT_BRANCH_ENTRY_SIZE, &b);
		mt_branch_format(&b, text[i], sizeof text[i]);
		kv[n++] = (struct mt_kv){"branch", text[i]};
		unsigned type = bt && !b.type ? brtype_of(bt, ps->pid, b.from) : 0;
		if (type)
			kv[n++] = (struct mt_kv){"branch_type", mt_branch_type_name(type)};
		if (ps->brcntr) {
			snprintf(cntr[i], sizeof cntr[i], "0x%" PRIx64, mt_rd64(ps->brcntr + 8 * i));
			kv[n++] = (struct mt_kv){"branch_cntr", cntr[i]};
		}
	}
	return n;
}

/* A sample of an event at an IP, no frames: event= and period= columns,
 * and ps's branch stack (ps NULL: none). */
static void write_ip_sample(struct mt_events_writer *w, struct mt_ptdec_stats *stats, struct mt_event ev,
			    const char *ename, uint64_t period, const struct psample *ps, const struct sink_ctx *c)
{
	char p[24];
	snprintf(p, sizeof p, "%" PRIu64, period);
	static struct mt_kv kv[2 + 3 * MT_SAMPLES_MAX_BRANCHES];
	kv[0] = (struct mt_kv){"event", ename};
	kv[1] = (struct mt_kv){"period", p};
	ev.kind = MT_EV_SAMPLE;
	ev.offset = MT_NO_OFFSET;
	ev.extra = kv;
	ev.nextra = ps ? branch_columns(ps, kv, 2, c->bt, c->pd) : 2;
	mt_events_write(w, &ev);
	stats->by_kind[MT_EV_SAMPLE]++;
}

static void write_event_sample(struct sink_ctx *c, const struct psample *ps)
{
	char ename[64];
	event_name(c->pd, ps->attr, ename, sizeof ename);
	write_ip_sample(c->w, c->stats, (struct mt_event){.time = ps->time, .has_time = ps->has_time, .pid = ps->pid,
							 .tid = ps->tid, .cpu = ps->has_cpu ? (int32_t)ps->cpu : -1,
							 .from = ps->ip},
			ename, ps->period, ps, c);
}

static bool of_queue(const struct sink_ctx *c, const struct psample *ps)
{
	return c->per_cpu ? ps->has_cpu && ps->cpu == c->q_cpu : ps->tid == c->q_tid;
}

void mt_samples_queue(struct sink_ctx *c, uint64_t time)
{
	while (c->next < c->norder &&
	       (c->done[c->order[c->next]] || !of_queue(c, &c->s->samples.v[c->order[c->next]])))
		c->next++;
	for (size_t k = c->next; k < c->norder; k++) {
		size_t i = c->order[k];
		const struct psample *ps = &c->s->samples.v[i];
		if (ps->has_time && ps->time > time)
			break; /* in time order: nothing later is due */
		if (c->done[i] || !of_queue(c, ps))
			continue;
		c->done[i] = true;
		write_event_sample(c, ps);
	}
}

void mt_samples_sink(void *ctx, const struct mt_event *ev)
{
	struct sink_ctx *c = ctx;
	if (c->norder && ev->has_time)
		mt_samples_queue(c, ev->time);
	mt_events_write(c->w, ev);
}

static const struct side *sort_side; /* qsort has no context argument in C11 */

static int cmp_sample_time(const void *a, const void *b)
{
	const struct psample *x = &sort_side->samples.v[*(const size_t *)a], *y = &sort_side->samples.v[*(const size_t *)b];
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

int mt_samples_order(struct sink_ctx *c, const struct mt_perfdata *pd, const struct side *s,
		     const struct mt_perf_evattr *pt, struct mt_err *err)
{
	c->order = malloc(s->samples.n * sizeof *c->order);
	c->done = calloc(s->samples.n, 1);
	if (!c->order || !c->done) {
		mt_samples_free(c);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->samples.n; i++)
		if (!pt || s->samples.v[i].attr < 0 || &pd->attrs[s->samples.v[i].attr] != pt)
			c->order[c->norder++] = i;
	sort_side = s;
	qsort(c->order, c->norder, sizeof *c->order, cmp_sample_time);
	return 0;
}

void mt_samples_free(struct sink_ctx *c)
{
	free(c->order);
	free(c->done);
	c->order = NULL;
	c->done = NULL;
}

void mt_samples_rest(struct sink_ctx *c)
{
	for (size_t k = 0; k < c->norder; k++)
		if (!c->done[c->order[k]]) {
			c->done[c->order[k]] = true;
			write_event_sample(c, &c->s->samples.v[c->order[k]]);
		}
}

static void write_switch(struct mt_events_writer *w, const struct tsw *sw, struct mt_ptdec_stats *stats)
{
	static struct mt_kv preempt = {"preempt", "1"};
	enum mt_event_kind k = sw->out ? MT_EV_SWITCH_OUT : MT_EV_SWITCH_IN;
	struct mt_event ev = {.time = sw->time, .has_time = true, .pid = sw->pid, .tid = sw->tid,
			      .cpu = sw->has_cpu ? (int32_t)sw->cpu : -1, .kind = k, .offset = MT_NO_OFFSET,
			      .extra = &preempt, .nextra = sw->out && sw->preempt};
	mt_events_write(w, &ev);
	stats->by_kind[k]++;
}

/* A dwarf sample's user frames, innermost first, after its kernel ones in
 * ips[0..n); returns the new count. */
static unsigned unwind_user(const struct psample *ps, struct mt_unwind *unw, uint64_t *ips, unsigned n,
			    unsigned max, struct mt_samples_counts *uc)
{
	uint64_t regs[MT_PREG_COUNT] = {0}, mask = 0;
	unsigned k = 0;
	for (unsigned bit = 0; bit < 64 && k < ps->regs_n; bit++) {
		if (!(ps->regs_mask >> bit & 1))
			continue;
		if (bit < MT_PREG_COUNT) {
			regs[bit] = mt_rd64(ps->regs + 8 * k);
			mask |= 1ull << bit;
		}
		k++;
	}
	struct mt_unwind_sample us = {ps->pid, ps->tid, regs, mask, ps->stack, ps->stack_size};
	const char *why;
	size_t got = mt_unwind_run(unw, &us, ips + n, max - n, &why);
	uc->with_stack++;
	if (why) {
		uc->partial++;
		if (!uc->first_why)
			uc->first_why = why;
	}
	return n + (unsigned)got;
}

/* A trigger hit as perf writes a breakpoint's sample (mt-toperfetto: a
 * "hit SYMBOL" instant on the thread's Snapshot symbol hits track). */
static void write_hit(struct mt_events_writer *w, const struct mt_ptperf_hit *h, struct mt_ptdec_stats *stats)
{
	char ename[40];
	snprintf(ename, sizeof ename, "mem:0x%" PRIx64 ":x", h->ip);
	write_ip_sample(w, stats, (struct mt_event){.time = h->time, .has_time = true, .pid = h->pid, .tid = h->tid,
						    .cpu = -1, .from = h->ip},
			ename, 1, NULL, NULL);
}

/* One stack sample as an event: frame= columns outermost first, the
 * primary event's only (magic-trace's rule: the extra events' samples are
 * events at their IP, on their own tracks downstream, cutting no frames). */
static void emit_stack(struct sink_ctx *ec, const struct psample *ps, int primary, struct mt_unwind *unw,
		       struct mt_samples_counts *uc)
{
	static struct mt_kv kv[MT_EVENT_MAX_EXTRA];
	static char vals[MT_EVENT_MAX_EXTRA][24];
	char ename[64], period[24];
	if (ps->attr != primary) {
		write_event_sample(ec, ps);
		return;
	}
	event_name(ec->pd, ps->attr, ename, sizeof ename);
	snprintf(period, sizeof period, "%" PRIu64, ps->period);
	unsigned n = 0;
	kv[n++] = (struct mt_kv){"event", ename};
	kv[n++] = (struct mt_kv){"period", period};
	/* perf's context markers (PERF_CONTEXT_USER...) sit above -4096; the
	 * unwinder goes as deep as UNWIND_MAX, so that a cut is counted */
	enum { UNWIND_MAX = 4096 };
	static uint64_t ips[UNWIND_MAX];
	unsigned nips = 0;
	uint64_t total = 0; /* the chain's frames, those past the cut too */
	bool dwarf = unw && ps->has_stack && ps->regs;
	/* --call-graph lbr: the user part is the LBR call stack (perf's
	 * resolve_lbr_callchain_sample): the innermost call's target, then
	 * each call's site; the chain's user part is not used */
	bool lbr = !dwarf && ps->nbranch && ps->brstack && ps->attr >= 0 && (size_t)ps->attr < ec->pd->nattrs &&
		   (ec->pd->attrs[ps->attr].branch_sample_type & MT_BRANCH_CALL_STACK);
	bool user_seen = false;
	for (uint64_t k = 0; k < ps->nchain; k++) {
		uint64_t ip = mt_rd64(ps->chain + 8 * k);
		if (ip == (uint64_t)-512 && (dwarf || lbr)) { /* PERF_CONTEXT_USER: the unwinder's or the LBR's part */
			user_seen = true;
			break;
		}
		if (ip >= (uint64_t)-4096)
			continue;
		if (nips < MT_SAMPLES_MAX_FRAMES)
			ips[nips++] = ip;
		total++;
	}
	/* (a chain with no user part was taken whole above, as perf reads it) */
	for (uint64_t k = 0; lbr && user_seen && k < ps->nbranch; k++) {
		struct mt_branch b;
		mt_branch_parse(ps->brstack + k * MT_BRANCH_ENTRY_SIZE, &b);
		if (!k && nips < MT_SAMPLES_MAX_FRAMES)
			ips[nips++] = b.to;
		if (nips < MT_SAMPLES_MAX_FRAMES)
			ips[nips++] = b.from;
		total += 1 + !k;
	}
	/* --stitch-lbr: the thread's earlier frames beyond the LBR, where
	 * perf stitches them (hw_idx, and the LBR's depth, known) */
	if (lbr && user_seen && ec->stitches && ps->has_hw_idx && ec->pd->max_branches) {
		const uint64_t *more;
		size_t nmore;
		if (mt_lbr_stitch(ec->stitches, ps->tid, ps->brstack, ps->nbranch, ps->hw_idx, ec->pd->max_branches,
				  &more, &nmore)) {
			for (size_t k = 0; k < nmore; k++)
				if (nips < MT_SAMPLES_MAX_FRAMES)
					ips[nips++] = more[k];
			total += nmore;
		}
	}
	if (dwarf) {
		unsigned before = nips;
		unsigned got = unwind_user(ps, unw, ips, nips, UNWIND_MAX, uc) - before;
		total += got + (before + got == UNWIND_MAX); /* at UNWIND_MAX: more may lie beyond */
		nips = before + got < MT_SAMPLES_MAX_FRAMES ? before + got : MT_SAMPLES_MAX_FRAMES;
	}
	if (!nips && ps->ip)
		ips[nips++] = ps->ip;
	char cut[24];
	if (total > nips) { /* said: in the sample (frames_cut=N) and at the end */
		uc->cut++;
		if (total > uc->longest)
			uc->longest = total;
		snprintf(cut, sizeof cut, "%" PRIu64, total - nips);
		kv[n++] = (struct mt_kv){"frames_cut", cut};
	}
	for (unsigned k = nips; k-- > 0;) {
		snprintf(vals[n], sizeof vals[n], "0x%" PRIx64, ips[k]);
		kv[n] = (struct mt_kv){"frame", vals[n]};
		n++;
	}
	n = branch_columns(ps, kv, n, ec->bt, ec->pd);
	struct mt_event ev = {.time = ps->time, .has_time = ps->has_time, .pid = ps->pid, .tid = ps->tid,
			      .cpu = ps->has_cpu ? (int32_t)ps->cpu : -1, .kind = MT_EV_SAMPLE,
			      .from = nips && !lbr ? ips[0] : ps->ip, .offset = MT_NO_OFFSET, .extra = kv, .nextra = n};
	mt_events_write(ec->w, &ev);
	ec->stats->by_kind[MT_EV_SAMPLE]++;
}

/* What waits for its turn: a sample, a thread's switch or a trigger hit.
 * At one time a switch in comes first (it ran to be sampled), then a hit,
 * then samples, a switch out last; then file order. */
enum { OI_SWITCH_IN, OI_HIT, OI_SAMPLE, OI_SWITCH_OUT, OI_LOSS };
struct oitem {
	uint64_t time, seq;
	uint8_t rank;
	union {
		struct psample ps;
		struct tsw sw;
		struct mt_ptperf_hit hit;
		struct tloss loss;
	} u;
};

/* A loss, as an error event at its time on its thread. */
static void write_loss(struct mt_events_writer *w, const struct tloss *l, struct mt_ptdec_stats *stats)
{
	struct mt_event ev = {.time = l->time, .has_time = l->has_time, .pid = l->pid, .tid = l->tid,
			      .cpu = l->has_cpu ? (int32_t)l->cpu : -1, .kind = MT_EV_ERROR, .offset = MT_NO_OFFSET,
			      .msg = l->msg};
	mt_events_write(w, &ev);
	stats->by_kind[MT_EV_ERROR]++;
	stats->errors++;
}

struct oheap {
	struct oitem *v;
	size_t n, cap;
};

static bool oi_before(const struct oitem *a, const struct oitem *b)
{
	if (a->time != b->time)
		return a->time < b->time;
	if (a->rank != b->rank)
		return a->rank < b->rank;
	return a->seq < b->seq;
}

static int oh_push(struct oheap *h, const struct oitem *it)
{
	if (mt_vec_push((void **)&h->v, &h->n, &h->cap, sizeof *it, it))
		return MT_ENOMEM;
	for (size_t i = h->n - 1; i > 0;) {
		size_t p = (i - 1) / 2;
		if (!oi_before(&h->v[i], &h->v[p]))
			break;
		struct oitem t = h->v[i];
		h->v[i] = h->v[p];
		h->v[p] = t;
		i = p;
	}
	return 0;
}

static void oh_pop(struct oheap *h, struct oitem *out)
{
	*out = h->v[0];
	h->v[0] = h->v[--h->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && oi_before(&h->v[l], &h->v[m]))
			m = l;
		if (r < h->n && oi_before(&h->v[r], &h->v[m]))
			m = r;
		if (m == i)
			break;
		struct oitem t = h->v[i];
		h->v[i] = h->v[m];
		h->v[m] = t;
		i = m;
	}
}

struct stream_ctx {
	struct sink_ctx ec;
	int primary;
	struct mt_unwind *unw;
	struct mt_samples_counts *uc;
	uint64_t written; /* the latest time written */
};

/* Writes what is due: everything at or before limit (UINT64_MAX: all). */
static void oh_flush(struct oheap *h, uint64_t limit, struct stream_ctx *c)
{
	struct oitem it;
	while (h->n && h->v[0].time <= limit) {
		oh_pop(h, &it);
		c->written = it.time > c->written ? it.time : c->written;
		if (it.rank == OI_SAMPLE)
			emit_stack(&c->ec, &it.u.ps, c->primary, c->unw, c->uc);
		else if (it.rank == OI_HIT)
			write_hit(c->ec.w, &it.u.hit, c->ec.stats);
		else if (it.rank == OI_LOSS)
			write_loss(c->ec.w, &it.u.loss, c->ec.stats);
		else
			write_switch(c->ec.w, &it.u.sw, c->ec.stats);
	}
}

int mt_samples_stream(struct mt_perfdata *pd, const struct side *s, struct mt_events_writer *w,
		      struct mt_ptdec_stats *stats, struct mt_unwind *unw, struct mt_samples_counts *uc,
		      const struct mt_ptperf_opts *o, struct warned *wd, struct mt_err *err)
{
	static struct brtypes bt; /* (images: large) */
	bt = (struct brtypes){.pd = pd, .s = s, .o = o, .wd = wd, .uc = uc};
	struct mt_lbr_stitches stitches = {0};
	struct stream_ctx c = {.ec = {.w = w, .pd = pd, .s = s, .stats = stats, .bt = &bt,
				      .stitches = o->stitch_lbr ? &stitches : NULL},
			       .primary = s->seen.primary, .unw = unw, .uc = uc};
	const struct mt_ptperf_hit *hits = o->hits;
	size_t nhits = o->nhits;
	struct oheap h = {0};
	uint64_t seq = 0, max_seen = 0, limit = 0;
	int rc = 0;
	for (size_t i = 0; i < nhits && !rc; i++) {
		struct oitem it = {.time = hits[i].time, .seq = seq++, .rank = OI_HIT, .u.hit = hits[i]};
		rc = oh_push(&h, &it);
	}
	struct mt_perf_record r;
	struct mt_err werr = {0};
	struct releaser walked = {0};
	mt_perfdata_rewind(pd);
	while (!rc && mt_perfdata_next(pd, &r, &werr) > 0) {
		struct oitem it = {.seq = seq++};
		if (r.type == MT_REC_FINISHED_ROUND) {
			/* perf's ordered events: a round's end writes what came
			 * before the previous round's latest time (no later record
			 * can be earlier than that), then the mark moves up */
			oh_flush(&h, limit, &c);
			limit = max_seen;
			mt_release_before(pd, &walked, pd->base + r.offset);
			continue;
		}
		if (r.type == MT_REC_SAMPLE && mt_side_sample_of(&r, &it.u.ps)) {
			it.rank = OI_SAMPLE;
			/* untimed samples keep file order: at time 0, in turn */
			it.time = it.u.ps.has_time ? it.u.ps.time : 0;
		} else if (mt_side_switch_of(&r, &it.u.sw)) {
			it.rank = it.u.sw.out ? OI_SWITCH_OUT : OI_SWITCH_IN;
			it.time = it.u.sw.time;
		} else if (mt_side_loss_of(&r, &it.u.loss) && (r.type != MT_REC_LOST_SAMPLES || it.u.loss.time)) {
			/* (perf record writes the kernel's count of lost samples
			 * at its end, untimed: that total is said, not placed) */
			it.rank = OI_LOSS;
			it.time = it.u.loss.has_time ? it.u.loss.time : 0;
		} else {
			continue;
		}
		if (it.time > max_seen)
			max_seen = it.time;
		/* earlier than what a round already wrote: it goes out late,
		 * and is counted (perf: "N out of order events recorded") */
		if (it.rank == OI_SAMPLE && it.time < c.written)
			uc->late++;
		rc = oh_push(&h, &it);
	}
	if (rc) {
		free(h.v);
		brtypes_free(&bt);
		mt_lbr_stitches_free(&stitches);
		return mt_err_set(err, MT_ENOMEM, "out of memory ordering samples");
	}
	oh_flush(&h, UINT64_MAX, &c);
	free(h.v);
	brtypes_free(&bt);
	mt_lbr_stitches_free(&stitches);
	return 0;
}
