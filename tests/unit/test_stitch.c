/* Unit tests of the stitcher (trace/stitch.c), TAP output. Oracle: one
 * sequential list of events, as one decoder would write it; piece a holds
 * it from the start to past the cut (as a decoder that went on through the
 * overlap), piece b from the cut's PSB on (its first event counting its
 * instructions from the PSB). The stitched output, a's events before
 * keep_to and b's from keep_from on, must be the list itself. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "trace/split.h"

#include "tap.h"

#define N 400

static struct mt_event seq[N];
static uint64_t before[N + 1]; /* instructions before event i */
static char payloads[N][24];
static struct mt_kv notes[N][1];

static void make_sequence(void)
{
	uint64_t x = 12345;
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		seq[i] = (struct mt_event){.time = 1000 + (uint64_t)i * 7, .has_time = true, .pid = 5, .tid = 6, .cpu = 1,
					   .kind = i % 3 ? MT_EV_CALL : MT_EV_RETURN, .from = 0x400000 + (x >> 40),
					   .to = 0x400000 + ((x >> 20) & 0xfffff), .insn = 1 + (x >> 59) + (i % 5 == 0 ? 0 : 3),
					   .offset = (uint64_t)i * 4};
		if (i % 4 == 2) { /* a ptwrite note's column */
			seq[i].kind = MT_EV_PTWRITE;
			snprintf(payloads[i], sizeof payloads[i], "0x%llx", (unsigned long long)x);
			notes[i][0] = (struct mt_kv){"payload", payloads[i]};
			seq[i].extra = notes[i];
			seq[i].nextra = 1;
		}
		before[i + 1] = before[i] + seq[i].insn;
	}
}

static void log_event(struct piece *p, const struct mt_event *ev, uint64_t idx, uint64_t insns_before)
{
	size_t k = p->log.n;
	mt_evlog_sink(&p->log, ev);
	if (!mt_grow((void **)&p->pos, &p->pcap, k + 1, sizeof *p->pos))
		abort();
	p->pos[k] = (struct logpos){.idx = idx, .before = insns_before};
}

/* a: events [0, a_end); the cut's PSB at instruction `mark`, inside event
 * k's instructions (before[k] < mark <= before[k + 1]). b: from event k
 * on, to b_end. */
static void make_pieces(struct piece *a, struct piece *b, size_t k, uint64_t mark, size_t a_end, size_t b_end)
{
	memset(a, 0, sizeof *a);
	memset(b, 0, sizeof *b);
	for (size_t i = 0; i < a_end; i++)
		log_event(a, &seq[i], i, before[i]);
	a->mark = mark;
	a->tail = k; /* event k's branch comes after the mark */
	a->stop = 1;
	for (size_t i = k; i < b_end; i++) {
		struct mt_event ev = seq[i];
		if (i == k)
			ev.insn = before[k + 1] - mark;
		log_event(b, &ev, i - k, i == k ? 0 : before[i] - mark);
	}
}

static void free_piece(struct piece *p)
{
	mt_evlog_free(&p->log);
	free(p->pos);
}

static bool same(const struct mt_event *x, const struct mt_event *y)
{
	return x->time == y->time && x->from == y->from && x->to == y->to && x->insn == y->insn &&
	       x->offset == y->offset && x->kind == y->kind && x->pid == y->pid && x->tid == y->tid &&
	       x->nextra == y->nextra && (!x->nextra || !strcmp(x->extra[0].val, y->extra[0].val));
}

/* The stitched output equals the sequence. */
static bool output_is_sequence(const struct piece *a, const struct piece *b)
{
	size_t n = 0;
	struct mt_event ev;
	struct mt_kv kv[MT_EVLOG_MAX_EXTRA];
	for (size_t i = 0; i < a->keep_to; i++, n++)
		if (n >= N || !same(mt_evlog_event(&a->log, i, &ev, kv), &seq[n]))
			return false;
	for (size_t j = b->keep_from; j < b->log.n; j++, n++)
		if (n >= N || !same(mt_evlog_event(&b->log, j, &ev, kv), &seq[n]))
			return false;
	return n == N;
}

static void test_every_cut(void)
{
	int good = 0, tried = 0;
	for (size_t k = 10; k < 300; k += 7) {
		uint64_t mark = before[k] + 1 + (before[k + 1] - before[k] - 1) / 2;
		struct piece a, b;
		make_pieces(&a, &b, k, mark, k + 60, N);
		char why[WHY_LEN];
		tried++;
		good += mt_stitch(&a, &b, why) && output_is_sequence(&a, &b);
		free_piece(&a);
		free_piece(&b);
	}
	ok(good == tried, "every cut of the sequence stitches, and the output is the sequence");
}

/* The pieces cut at event 100 (a going overlap events past it), changed
 * by change (when not NULL): no stitch, and the reason names the problem. */
static bool no_stitch(size_t overlap, void (*change)(struct piece *a, struct piece *b), const char *reason)
{
	struct piece a, b;
	make_pieces(&a, &b, 100, before[100] + 1, 100 + overlap, N);
	if (change)
		change(&a, &b);
	char why[WHY_LEN] = "";
	bool r = !mt_stitch(&a, &b, why) && strstr(why, reason);
	free_piece(&a);
	free_piece(&b);
	return r;
}

/* b decodes the overlap differently (the decoders are not in the same
 * state there) */
static void other_targets(struct piece *a, struct piece *b)
{
	(void)a;
	for (size_t j = 0; j < b->log.n; j++)
		b->log.v[j].to ^= 0x10;
}

/* b's notes say other values after the cut (same kinds, IPs, counts) */
static void other_payloads(struct piece *a, struct piece *b)
{
	(void)a;
	for (size_t j = 0; j < b->log.n; j++)
		if (b->log.v[j].nextra) {
			char *v = b->log.arena + b->log.v[j].strs - 1 + strlen("payload") + 1;
			v[2] = v[2] == '1' ? '2' : '1';
		}
}

static void mark_not_reached(struct piece *a, struct piece *b)
{
	(void)b;
	a->mark = UINT64_MAX;
}

static void test_failures(void)
{
	ok(no_stitch(20, NULL, "agree before the piece before ends"),
	   "under STITCH_MIN events of overlap: no stitch, and the reason says so");
	ok(no_stitch(60, other_targets, "events agree, then"),
	   "events that differ after the cut: no stitch, the first difference named");
	ok(no_stitch(60, other_payloads, "events agree, then"),
	   "notes whose columns differ after the cut: no stitch");
	ok(no_stitch(60, mark_not_reached, "never reached"),
	   "a piece that never reached the next one's PSB does not stitch");
}

int main(void)
{
	make_sequence();
	test_every_cut();
	test_failures();
	return tap_done();
}
