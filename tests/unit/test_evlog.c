/* Unit tests of the event log (trace/evlog.c), TAP output. Oracle: the
 * events logged are the events read back, field by field (messages by
 * text), and a reset log is empty but keeps its memory up to the bound. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/evlog.h"

#include "tap.h"

static bool same_extra(const struct mt_event *x, const struct mt_event *y)
{
	if (x->nextra != y->nextra)
		return false;
	for (unsigned i = 0; i < x->nextra; i++)
		if (strcmp(x->extra[i].key, y->extra[i].key) || strcmp(x->extra[i].val, y->extra[i].val))
			return false;
	return true;
}

static bool same(const struct mt_event *x, const struct mt_event *y)
{
	return x->time == y->time && x->has_time == y->has_time && x->pid == y->pid && x->tid == y->tid &&
	       x->cpu == y->cpu && x->kind == y->kind && x->from == y->from && x->to == y->to && x->insn == y->insn && x->cyc == y->cyc &&
	       x->offset == y->offset && x->cbr == y->cbr && x->cond == y->cond && x->async == y->async &&
	       !x->msg == !y->msg && (!x->msg || !strcmp(x->msg, y->msg)) && same_extra(x, y);
}

static void test_roundtrip(void)
{
	enum { N = 20000 };
	static struct mt_event evs[N];
	static char msgs[N][32], vals[N][2][24];
	static struct mt_kv kvs[N][2];
	struct evlog l = {0};
	uint64_t x = 3;
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		snprintf(msgs[i], sizeof msgs[i], "decode error %d", i);
		evs[i] = (struct mt_event){.time = x >> 8, .has_time = i % 3, .pid = (uint32_t)(x >> 40), .tid = (uint32_t)x,
					   .cpu = (int32_t)(x % 5) - 1, .kind = (enum mt_event_kind)(i % MT_EV_KIND_COUNT),
					   .from = x, .to = ~x, .insn = x >> 50, .cyc = x >> 44, .offset = i % 7 ? x >> 30 : MT_NO_OFFSET,
					   .cbr = (uint32_t)(x >> 58), .cond = i % 2, .async = i % 5 == 0,
					   .msg = i % 11 == 0 ? msgs[i] : NULL};
		if (i % 4 == 1) { /* a PT note's columns, with or without a message */
			snprintf(vals[i][0], sizeof vals[i][0], "0x%llx", (unsigned long long)x);
			snprintf(vals[i][1], sizeof vals[i][1], "%d", i);
			kvs[i][0] = (struct mt_kv){"payload", vals[i][0]};
			kvs[i][1] = (struct mt_kv){i % 8 == 1 ? "" : "n", vals[i][1]};
			evs[i].extra = kvs[i];
			evs[i].nextra = 1 + (i % 3 != 0);
		}
		mt_evlog_sink(&l, &evs[i]);
	}
	int good = 0;
	for (int i = 0; i < N; i++) {
		struct mt_event ev;
		struct mt_kv kv[MT_EVLOG_MAX_EXTRA];
		good += same(mt_evlog_event(&l, (size_t)i, &ev, kv), &evs[i]);
	}
	ok(!l.oom && l.n == N && good == N, "20000 events logged and unpacked: every field, every message, every extra column");
	size_t cap = l.cap;
	mt_evlog_reset(&l, (size_t)-1);
	ok(l.n == 0 && l.alen == 0 && l.cap == cap && l.v, "a reset keeps the log's memory under the bound");
	mt_evlog_sink(&l, &evs[0]);
	mt_evlog_reset(&l, 16);
	ok(l.n == 0 && !l.v && !l.cap, "a log grown past the bound gives its memory back on reset");
	mt_evlog_free(&l);
}

int main(void)
{
	test_roundtrip();
	return tap_done();
}
