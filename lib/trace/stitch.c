#define _GNU_SOURCE
#include "trace/split.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool same_event(const struct logged *x, const char *xa, const struct logged *y, const char *ya)
{
	if (x->time != y->time || x->from != y->from || x->to != y->to || x->insn != y->insn || x->cyc != y->cyc ||
	    x->offset != y->offset || x->pid != y->pid || x->tid != y->tid || x->cbr != y->cbr || x->cpu != y->cpu ||
	    x->kind != y->kind || x->flags != y->flags || x->nextra != y->nextra || !x->strs != !y->strs)
		return false;
	if (!x->strs)
		return true;
	/* the message, then each column's key and value */
	const char *p = xa + x->strs - 1, *q = ya + y->strs - 1;
	for (unsigned n = 2 * x->nextra + !!(x->flags & LOG_MSG); n; n--) {
		size_t k = strlen(p);
		if (strcmp(p, q))
			return false;
		p += k + 1;
		q += k + 1;
	}
	return true;
}

bool mt_stitch(struct piece *a, struct piece *b, char *why)
{
	if (a->mark == UINT64_MAX) {
		snprintf(why, WHY_LEN, "the piece before never reached this one's PSB");
		return false;
	}
	snprintf(why, WHY_LEN, "no event of this piece's head with instructions of its own (%zu held)", b->log.n);
	size_t best = 0; /* events agreed by the best candidate so far, plus 1 */
	/* b's events by instructions since its PSB (B), a's since a's start
	 * (A): the same event when A = mark + B. Candidates: b's events with
	 * instructions of their own (no other has the same count), after its
	 * first (whose count starts at the PSB, not at the event before), in
	 * its head (held from its first event on). a's is among those after
	 * its mark (the instructions up to it are before the mark). */
	uint64_t B = b->log.n ? b->log.v[0].insn : 0;
	size_t i = a->tail;
	int tries = 0;
	for (size_t j = 1; j < b->log.n && b->pos[j].idx == j && tries < STITCH_TRIES; j++) {
		B += b->log.v[j].insn;
		if (!b->log.v[j].insn)
			continue;
		tries++;
		uint64_t want = a->mark + B;
		while (i < a->log.n && a->pos[i].before + a->log.v[i].insn < want)
			i++;
		if (i >= a->log.n) {
			if (!best)
				snprintf(why, WHY_LEN, "the piece before ends before instruction %" PRIu64
					 " after the cut (event %zu here)", B, j);
			return false;
		}
		if (a->pos[i].before + a->log.v[i].insn != want) {
			if (!best)
				snprintf(why, WHY_LEN, "no event of the piece before at instruction %" PRIu64
					 " after the cut (event %zu here)", B, j);
			continue;
		}
		/* every event a decoded from there on, b decoded the same (a holds
		 * all after its mark; b's must be of its head, one after another) */
		size_t k = 0;
		while (i + k < a->log.n && j + k < b->log.n && b->pos[j + k].idx == j + k &&
		       same_event(&a->log.v[i + k], a->log.arena, &b->log.v[j + k], b->log.arena))
			k++;
		if (i + k == a->log.n && k >= STITCH_MIN) {
			a->keep_to = i;
			b->keep_from = j;
			return true;
		}
		if (k + 1 <= best)
			continue;
		best = k + 1;
		if (i + k == a->log.n) {
			snprintf(why, WHY_LEN, "only %zu events agree before the piece before ends", k);
			continue;
		}
		const struct logged *x = &a->log.v[i + k];
		if (j + k >= b->log.n || b->pos[j + k].idx != j + k) {
			snprintf(why, WHY_LEN, "this piece's head ends %zu events on, the piece before goes on (%s)", k,
				 mt_event_kind_name(x->kind));
			continue;
		}
		/* at: the event's PT offset, -1 when it has none */
		const struct logged *y = &b->log.v[j + k];
		snprintf(why, WHY_LEN, "%zu events agree, then %s %#" PRIx64 "->%#" PRIx64 " +%" PRIu64 " at %" PRId64
			 " (piece before) vs %s %#" PRIx64 "->%#" PRIx64 " +%" PRIu64 " at %" PRId64, k,
			 mt_event_kind_name(x->kind), x->from, x->to, x->insn, (int64_t)x->offset,
			 mt_event_kind_name(y->kind), y->from, y->to, y->insn, (int64_t)y->offset);
	}
	return false;
}
