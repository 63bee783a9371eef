#define _GNU_SOURCE
#include "trace/split.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"

static void piece_event(void *ctx, const struct mt_event *ev)
{
	struct piece *pc = ctx;
	bool text = pc->sp->p->text;
	bool marked = pc->mark != UINT64_MAX;
	if (!text || !pc->head_passed || marked) {
		size_t k = pc->log.n;
		if (marked && pc->tail == SIZE_MAX)
			pc->tail = k;
		mt_evlog_sink(&pc->log, ev);
		if (pc->log.n == k + 1 && pc->pcap < pc->log.cap &&
		    !mt_grow((void **)&pc->pos, &pc->pcap, pc->log.cap, sizeof *pc->pos))
			pc->log.oom = true;
		if (!pc->log.oom)
			pc->pos[k] = (struct logpos){.idx = pc->nev, .before = pc->ev_insns, .text = pc->text.len};
	}
	pc->nev++;
	pc->ev_insns += ev->insn;
	if (text)
		mt_events_write(&pc->text, ev);
}

static void piece_decode(struct piece *pc, struct mt_image *img)
{
	struct splitter *sp = pc->sp;
	bool text = sp->p->text;
	struct mt_ptdec_stream st = {.data = pc->buf, .len = pc->blen, .cpu = sp->cpu, .who = mt_who, .who_ctx = &sp->wc,
				     .sink = piece_event, .sink_ctx = pc,
				     .stop_after = pc->stop ? (size_t)(pc->stop - pc->start) : 0,
				     .mark_psb = pc->next ? (size_t)(pc->next - pc->start) : 0,
				     .mark_insns = pc->stop ? &pc->mark : NULL, .offset_base = pc->start,
				     .head_end = text ? HEAD_BYTES : 0, .head_passed = &pc->head_passed};
	pc->mark = UINT64_MAX;
	pc->head_passed = false;
	pc->tail = SIZE_MAX;
	pc->nev = pc->ev_insns = 0;
	mt_evlog_reset(&pc->log, PIECE_KEEP);
	if (text && mt_memtext_reset(&pc->text, PIECE_KEEP)) {
		pc->rc = mt_err_set(&pc->err, MT_ENOMEM, "out of memory");
		return;
	}
	/* binary: room for an event every 4 bytes of PT at once (pages are
	 * touched only as used): growing by doubling copied the log several times */
	size_t bytes = pc->stop ? (size_t)(pc->stop - pc->start) : pc->blen;
	if (!text && pc->log.cap < bytes / 4 &&
	    !mt_grow((void **)&pc->log.v, &pc->log.cap, bytes / 4, sizeof *pc->log.v))
		pc->log.oom = true;
	memset(&pc->st, 0, sizeof pc->st);
	pc->rc = mt_ptdec_decode(&st, img, sp->p->cfg, &pc->st, &pc->err);
	if (pc->tail == SIZE_MAX)
		pc->tail = pc->log.n;
	if (!pc->rc && (pc->log.oom || pc->text.failed))
		pc->rc = mt_err_set(&pc->err, MT_ENOMEM, "out of memory holding decoded events");
}

/* A piece's task, by worker `worker`. */
static void piece_run(struct mt_workq_task *t, unsigned worker)
{
	struct piece *pc = (struct piece *)t;
	struct mt_image *img = mt_pool_image(pc->sp->p, worker, pc->sp->wc.pid, &pc->err);
	if (!img) {
		pc->rc = pc->err.code;
		return;
	}
	piece_decode(pc, img);
}

static void piece_free(struct piece *pc)
{
	free(pc->buf);
	free(pc->pos);
	free(pc->log.v);
	free(pc->log.arena);
	free(pc->text.buf);
	memset(pc, 0, sizeof *pc);
}

/* Empty for the next piece, keeping its memory: growing the logs and the
 * text anew for each cost more than decoding (page faults, copies). */
static void piece_reset(struct piece *pc)
{
	struct piece keep = *pc;
	memset(pc, 0, sizeof *pc);
	pc->sp = keep.sp;
	pc->task.run = piece_run;
	pc->buf = keep.buf;
	pc->bcap = keep.bcap;
	pc->pos = keep.pos;
	pc->pcap = keep.pcap;
	pc->log = keep.log;
	pc->text = keep.text;
}

/* The next cut: the first PSB at least `chunk` bytes after `from`, with
 * room after it for the overlap and more; SIZE_MAX when there is none in
 * data[0..len). */
static size_t next_cut(const uint8_t *d, size_t len, size_t from, size_t chunk)
{
	static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};
	if (from + chunk + 2 * OVERLAP >= len)
		return SIZE_MAX;
	const uint8_t *q = memmem(d + from + chunk, len - from - chunk, psb, sizeof psb);
	return q && (size_t)(q - d) + 2 * OVERLAP < len ? (size_t)(q - d) : SIZE_MAX;
}

static void unlog(const struct piece *pc, size_t k, uint64_t *insns, uint64_t *kinds)
{
	*insns -= pc->log.v[k].insn;
	kinds[pc->log.v[k].kind]--;
}

/* The statistics of what a piece writes: all it decoded, less its events
 * before keep_from and from keep_to on (held: of its head, after its
 * mark); with the trailing instructions (after its last event) when it
 * decoded to the end. */
static void piece_stats(const struct piece *pc, struct mt_ptdec_stats *stats)
{
	uint64_t insns = pc->ev_insns, kinds[MT_EV_KIND_COUNT];
	memcpy(kinds, pc->st.by_kind, sizeof kinds);
	for (size_t k = 0; k < pc->keep_from; k++)
		unlog(pc, k, &insns, kinds);
	for (size_t k = pc->keep_to; pc->stop && k < pc->log.n; k++)
		unlog(pc, k, &insns, kinds);
	if (!pc->stop)
		insns += pc->st.insns - pc->ev_insns;
	stats->insns += insns;
	for (int k = 0; k < MT_EV_KIND_COUNT; k++)
		stats->by_kind[k] += kinds[k];
	stats->errors += kinds[MT_EV_ERROR];
	mt_ptdec_stats_add_reader(stats, &pc->st);
}

int mt_split_begin(struct splitter *sp, struct pool *p, const struct who_ctx *wc, int32_t cpu,
		       struct mt_err *err)
{
	memset(sp, 0, sizeof *sp);
	sp->p = p;
	sp->wc = *wc;
	sp->cpu = cpu;
	/* a piece being written, one waiting for the next to mt_stitch, and two
	 * a job decoding */
	sp->ring = 2 * (size_t)p->jobs + 1;
	sp->v = calloc(sp->ring, sizeof *sp->v);
	sp->order = calloc(sp->ring, sizeof *sp->order);
	sp->spare = calloc(sp->ring, sizeof *sp->spare);
	if (!sp->v || !sp->order || !sp->spare) {
		free(sp->v);
		free(sp->order);
		free(sp->spare);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < sp->ring; i++) {
		sp->v[i].sp = sp;
		sp->v[i].task.run = piece_run;
		sp->spare[sp->nspare++] = &sp->v[i];
	}
	return 0;
}

/* Waits for the pieces in flight (after an error) and frees them. */
void mt_split_end(struct splitter *sp)
{
	for (size_t i = 0; i < sp->ring; i++) {
		mt_workq_wait(&sp->p->q, &sp->v[i].task);
		piece_free(&sp->v[i]);
	}
	free(sp->v);
	free(sp->order);
	free(sp->spare);
}

/* Piece k of those in flight leaves them (written, or decoded again as
 * part of the one before), its memory kept for a next one. */
static void piece_done(struct splitter *sp, size_t k)
{
	struct piece *pc = sp->order[k];
	piece_reset(pc);
	memmove(sp->order + k, sp->order + k + 1, (sp->n - k - 1) * sizeof *sp->order);
	sp->n--;
	sp->spare[sp->nspare++] = pc;
}

/* The first piece not yet stitched, at k or after; NULL when none. */
static struct piece *unstitched(struct splitter *sp, size_t *k)
{
	for (; *k < sp->n; ++*k)
		if (!sp->order[*k]->stitched)
			return sp->order[*k];
	return NULL;
}

/* Stitches the pieces decoded so far, each to the next; *moved when any. */
static int split_stitch(struct splitter *sp, struct mt_ptdec_stats *stats, bool *moved, struct mt_err *err)
{
	struct pool *p = sp->p;
	size_t k = 0;
	struct piece *a;
	while ((a = unstitched(sp, &k))) {
		if (!mt_workq_done(&p->q, &a->task))
			return 0;
		if (a->rc)
			return mt_err_set(err, a->rc, "%s", a->err.msg);
		if (!a->stop) { /* the last: all it decoded */
			a->keep_to = a->log.n;
			a->stitched = true;
			*moved = true;
			continue;
		}
		if (k + 1 == sp->n)
			return 0;
		struct piece *b = sp->order[k + 1];
		if (!mt_workq_done(&p->q, &b->task))
			return 0;
		if (b->rc)
			return mt_err_set(err, b->rc, "%s", b->err.msg);
		*moved = true;
		char why[WHY_LEN];
		if (mt_stitch(a, b, why)) {
			a->stitched = true;
			continue;
		}
		if (!stats->redone) {
			memcpy(stats->redo_why, why, sizeof why);
			stats->redo_at = b->start;
		}
		/* a again, through b's range (keep_from stays: the same events
		 * from the same start), by the main thread */
		struct mt_image *img = mt_pool_image(p, 0, sp->wc.pid, err);
		if (!img)
			return err->code;
		size_t head = (size_t)(b->start - a->start);
		if (!mt_grow((void **)&a->buf, &a->bcap, head + b->blen, 1))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		memcpy(a->buf + head, b->buf, b->blen);
		a->blen = head + b->blen;
		a->stop = b->stop;
		a->next = b->next;
		piece_decode(a, img);
		if (a->rc)
			return mt_err_set(err, a->rc, "%s", a->err.msg);
		piece_done(sp, k + 1);
		stats->redone++;
	}
	return 0;
}

/* What the output waits for: the decode of the first piece not stitched
 * or of the one after it. */
static struct mt_workq_task *split_blocker(struct splitter *sp)
{
	size_t k = 0;
	struct piece *a = unstitched(sp, &k);
	if (!a)
		return NULL;
	if (!mt_workq_done(&sp->p->q, &a->task))
		return &a->task;
	return k + 1 < sp->n ? &sp->order[k + 1]->task : NULL;
}
int mt_split_feed(struct splitter *sp, const uint8_t *data, size_t len, bool final, struct mt_events_writer *w,
		      struct mt_ptdec_stats *stats, size_t *keep, struct mt_err *err)
{
	struct pool *p = sp->p;
	int rc = 0;
	while (!rc) {
		bool moved = false;
		/* new pieces, cut to cut, the last to the end, while there is room */
		while (!sp->cut_end && sp->n < sp->ring) {
			size_t from = (size_t)(sp->pos - sp->base);
			size_t c = next_cut(data, len, from, p->o->split_bytes);
			if (c == SIZE_MAX && !final)
				break;
			size_t to = c == SIZE_MAX ? len : c + 2 * OVERLAP;
			struct piece *pc = sp->spare[sp->nspare - 1];
			if (!mt_grow((void **)&pc->buf, &pc->bcap, to - from, 1)) {
				rc = mt_err_set(err, MT_ENOMEM, "out of memory");
				break;
			}
			memcpy(pc->buf, data + from, to - from);
			pc->blen = to - from;
			pc->start = sp->pos;
			pc->next = c == SIZE_MAX ? 0 : sp->base + c;
			pc->stop = c == SIZE_MAX ? 0 : pc->next + OVERLAP;
			sp->cut_end = c == SIZE_MAX;
			if (!sp->cut_end)
				sp->pos = pc->next;
			sp->nspare--;
			sp->order[sp->n++] = pc;
			stats->pieces++;
			mt_workq_submit(&p->q, &pc->task, false);
			moved = true;
		}
		if (!rc)
			rc = split_stitch(sp, stats, &moved, err);
		/* the oldest pieces, written once stitched */
		while (!rc && sp->n) {
			struct piece *pc = sp->order[0];
			if (!pc->stitched)
				break;
			if (p->text) {
				size_t from = pc->keep_from ? pc->pos[pc->keep_from].text : 0;
				size_t to = pc->stop ? pc->pos[pc->keep_to].text : pc->text.len;
				mt_events_write_bytes(w, pc->text.buf + from, to - from);
			} else
				for (size_t k = pc->keep_from; k < pc->keep_to; k++) {
					struct mt_event ev;
					struct mt_kv kv[MT_EVLOG_MAX_EXTRA];
					mt_events_write(w, mt_evlog_event(&pc->log, k, &ev, kv));
				}
			piece_stats(pc, stats);
			mt_progress_add(p->progress, (pc->next ? pc->next : pc->start + pc->blen) - pc->start);
			piece_done(sp, 0);
			moved = true;
		}
		if (rc || moved)
			continue;
		if (!sp->n || (!final && !sp->cut_end && sp->n < sp->ring))
			break; /* done, or more data first */
		struct mt_workq_task *t = split_blocker(sp);
		if (!t) /* cannot happen: never leave pieces unwritten silently */
			rc = mt_err_set(err, MT_EFORMAT, "pieces of a split segment left unwritten (a bug in mt)");
		else
			mt_workq_wait(&p->q, t);
	}
	*keep = (size_t)(sp->pos - sp->base);
	if (final && !rc)
		stats->pt_bytes += sp->base + len;
	return rc;
}

void mt_split_drop(struct splitter *sp, size_t n)
{
	sp->base += n;
}
