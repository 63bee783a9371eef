/* report: hand-made calls (a tree whose figures are worked out below by
 * hand) through the report's sink: calls, total, self, instructions,
 * selection, --min-duration and --depth, samples (perf report --children's
 * counting: once per sample), sort order and what it passes on. */
#include <string.h>

#include "report/report.h"
#include "tap.h"

struct seen {
	int calls;
	uint64_t self_sum, self_cyc;
};

static void next_call(void *ctx, const struct mt_report_call *rc)
{
	struct seen *s = ctx;
	s->calls++;
	s->self_sum += rc->self_ns;
	s->self_cyc += rc->self.cyc;
}

static const char *names[] = {"main", "a", "b", "a"};

/* main [0,100) with a [10,40) (b [20,30) inside) and a [50,60); tid 1.
 * Instructions: main 1000, a 300 (b 100), a 50. Ends arrive children first. */
static void feed(struct mt_tl_calls_sink *k, uint32_t tid)
{
	const char *stk[3];
	struct mt_tl_call c = {.pid = 1, .tid = tid, .has_insn = true};
	k->thread(k->ctx, 1, tid, "t", "p");
	stk[0] = "main", stk[1] = "a", stk[2] = "b";
	c.stack = stk;
	c = (struct mt_tl_call){.pid = 1, .tid = tid, .name = "b", .start = 20, .end = 30, .depth = 2, .stack = stk,
				.insn = 100, .has_insn = true, .cyc = 40, .has_cyc = true};
	k->call(k->ctx, &c);
	c = (struct mt_tl_call){.pid = 1, .tid = tid, .name = "a", .start = 10, .end = 40, .depth = 1, .stack = stk,
				.insn = 300, .has_insn = true, .cyc = 120, .has_cyc = true};
	k->call(k->ctx, &c);
	c = (struct mt_tl_call){.pid = 1, .tid = tid, .name = "a", .start = 50, .end = 60, .depth = 1, .stack = stk,
				.insn = 50, .has_insn = true};
	k->call(k->ctx, &c);
	c = (struct mt_tl_call){.pid = 1, .tid = tid, .name = "main", .start = 0, .end = 100, .depth = 0,
				.stack = stk, .insn = 1000, .has_insn = true, .no_call = true};
	k->call(k->ctx, &c);
}

static const struct mt_fstat *find(const struct mt_report *r, const char *name)
{
	for (size_t i = 0; i < mt_report_nfuncs(r); i++)
		if (!strcmp(mt_report_func(r, i)->name, name))
			return mt_report_func(r, i);
	return NULL;
}

int main(void)
{
	(void)names;
	struct mt_report *r = mt_report_new(NULL);
	struct mt_tl_calls_sink k;
	struct seen seen = {0};
	struct mt_report_next nx = {.ctx = &seen, .call = next_call};
	mt_report_sink(r, &k, &nx);
	feed(&k, 1);
	const struct mt_fstat *m = find(r, "main"), *a = find(r, "a"), *b = find(r, "b");
	ok(m && a && b && mt_report_nfuncs(r) == 3, "three functions");
	ok(a->calls == 2 && a->total == 40 && a->self == 30, "a: 2 calls, total 30+10, self 20+10");
	ok(b->calls == 1 && b->total == 10 && b->self == 10, "b: a leaf, self = total");
	ok(m->total == 100 && m->self == 60 && m->no_call == 1, "main: self 100 - 30 - 10, its start inferred");
	ok(a->insn == 350 && a->self_insn == 250 && m->self_insn == 650, "instructions: total and self");
	ok(a->hist.min == 10 && a->hist.max == 30, "durations' min and max");
	ok(a->cyc == 120 && a->self_cyc == 80 && a->cyc_calls == 1 && b->self_cyc == 40 && m->cyc_calls == 0,
	   "cycles: total and self, only where counted");
	ok(seen.calls == 4 && seen.self_sum == 100 && seen.self_cyc == 120,
	   "each call passed on with its self time and cycles; self time adds up to the root");
	mt_report_sort(r, MT_SORT_SELF);
	ok(!strcmp(mt_report_func(r, 0)->name, "main") && !strcmp(mt_report_func(r, 1)->name, "a"),
	   "sorted by self time, most first");
	mt_report_sort(r, MT_SORT_CALLS);
	ok(!strcmp(mt_report_func(r, 0)->name, "a"), "sorted by calls");
	feed(&k, 2); /* after sorting, a second thread: rows found again */
	ok(find(r, "a")->calls == 4 && mt_report_nthreads(r) == 2, "a second thread adds to the same rows");
	mt_report_free(r);

	struct mt_report_opts o = {.max_depth = 2};
	r = mt_report_new(&o);
	mt_report_sink(r, &k, NULL);
	feed(&k, 1);
	ok(!find(r, "b") && find(r, "a")->self == 40, "--depth=2: b not counted, its time a's own");
	mt_report_free(r);
	o = (struct mt_report_opts){.min_duration = 20};
	r = mt_report_new(&o);
	mt_report_sink(r, &k, NULL);
	feed(&k, 1);
	ok(!find(r, "b") && find(r, "a")->calls == 1 && find(r, "a")->self == 30 && find(r, "main")->self == 70,
	   "--min-duration=20: the 10 ns calls not counted, their time their callers'");
	mt_report_free(r);
	o = (struct mt_report_opts){.ntids = 1, .tids = {2}, .per_thread = true};
	r = mt_report_new(&o);
	mt_report_sink(r, &k, NULL);
	feed(&k, 1);
	feed(&k, 2);
	ok(mt_report_nfuncs(r) == 3 && find(r, "a")->tid == 2 && find(r, "a")->calls == 2, "--tid: only thread 2");
	mt_report_free(r);

	r = mt_report_new(NULL);
	mt_report_sink(r, &k, NULL);
	const char *s1[] = {"main", "f", "f"}, *s2[] = {"main", "g"}, *d[] = {"x", "x", "x"};
	k.sample(k.ctx, 1, 1, 0, 3, s1, d, 100);
	k.sample(k.ctx, 1, 1, 1, 2, s2, d, 250);
	ok(mt_report_samples(r) == 2 && find(r, "f")->samples_children == 1 && find(r, "f")->samples_self == 1 &&
		   find(r, "main")->samples_children == 2 && find(r, "main")->samples_self == 0,
	   "samples: self on top, children once per sample however often it recurs");
	ok(mt_report_period(r) == 350 && find(r, "f")->period_children == 100 && find(r, "f")->period_self == 100 &&
		   find(r, "main")->period_children == 350 && find(r, "main")->period_self == 0 &&
		   find(r, "g")->period_self == 250,
	   "periods: a sample's period to its leaf's self, once to each function's total");
	mt_report_set_sample_event(r, "cpu-clock:u");
	ok(mt_report_period_is_ns(r) && !strcmp(mt_report_sample_event(r), "cpu-clock:u"), "cpu-clock periods are ns");
	mt_report_set_sample_event(r, "cycles");
	ok(!mt_report_period_is_ns(r), "cycles periods are not time");
	mt_report_sort(r, MT_SORT_SELF);
	ok(!strcmp(mt_report_func(r, 0)->name, "g") && !strcmp(mt_report_func(r, 1)->name, "f"),
	   "a sampled report sorts by the periods");
	mt_report_free(r);
	ok(mt_report_sort_parse("p99") == MT_SORT_P99 && mt_report_sort_parse("x") < 0, "sort keys parsed");
	return tap_done();
}
