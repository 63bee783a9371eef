/* folded: stacks from hand-made calls and samples, each weight worked out
 * by hand: the thread's name first, a line per stack, sorted, ';' in a
 * name made ':', the weights' sum returned. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "report/folded.h"
#include "tap.h"

static char *written(struct mt_folded *f, enum mt_folded_weight w, uint64_t *total)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	*total = mt_folded_write(f, m, w);
	fclose(m);
	return buf;
}

int main(void)
{
	struct mt_folded *f = mt_folded_new();
	struct mt_report_next k;
	mt_folded_sink(f, &k);
	k.thread(k.ctx, 1, 1, "app", "app");
	const char *stk[] = {"main", "a;b", "leaf"};
	const uint64_t paths[] = {1, 2, 3}; /* the calls writer's ids for these stacks */
	struct mt_tl_call c = {.pid = 1, .tid = 1, .name = "leaf", .depth = 2, .stack = stk, .paths = paths};
	k.call(k.ctx, &(struct mt_report_call){.c = &c, .self_ns = 10, .self = {4, 40}});
	c.name = "a;b";
	c.depth = 1;
	k.call(k.ctx, &(struct mt_report_call){.c = &c, .self_ns = 20, .self = {6, 60}});
	k.call(k.ctx, &(struct mt_report_call){.c = &c, .self_ns = 5, .self = {0, 0}});
	c.name = "main";
	c.depth = 0;
	k.call(k.ctx, &(struct mt_report_call){.c = &c, .self_ns = 7, .self = {1, 10}});
	const char *ss[] = {"main", "a;b"}, *ds[] = {"x", "x"};
	k.sample(k.ctx, 1, 1, 0, 2, ss, ds, 1);
	k.sample(k.ctx, 1, 1, 1, 2, ss, ds, 1);
	k.sample(k.ctx, 1, 2, 2, 1, ss, ds, 1); /* a thread never named */
	uint64_t total;
	char *t = written(f, MT_WEIGHT_TIME, &total);
	ok(!strcmp(t, "app;main 7\napp;main;a:b 25\napp;main;a:b;leaf 10\n") && total == 42,
	   "time: self ns summed per stack, sorted, ';' in a name made ':'");
	free(t);
	t = written(f, MT_WEIGHT_INSTRUCTIONS, &total);
	ok(!strcmp(t, "app;main 1\napp;main;a:b 6\napp;main;a:b;leaf 4\n") && total == 11, "instructions");
	free(t);
	t = written(f, MT_WEIGHT_CYCLES, &total);
	ok(!strcmp(t, "app;main 10\napp;main;a:b 60\napp;main;a:b;leaf 40\n") && total == 110, "cycles");
	free(t);
	t = written(f, MT_WEIGHT_SAMPLES, &total);
	ok(!strcmp(t, "[unknown thread];main 1\napp;main;a:b 2\n") && total == 3, "samples: one a sample, stacks with none left out");
	free(t);
	ok(mt_folded_default_weight(f) == MT_WEIGHT_SAMPLES, "a sampled stream weighs samples by default");
	ok(mt_folded_weight_parse("instructions") == MT_WEIGHT_INSTRUCTIONS && mt_folded_weight_parse("x") < 0,
	   "weights parsed");
	mt_folded_free(f);

	/* 100,000 deep: each call found by its path in one step, the frames
	 * below 500 weighing as "[deeper frames]" */
	enum { DEEP = 100000 };
	const char **dn = malloc(DEEP * sizeof *dn);
	uint64_t *dp = malloc(DEEP * sizeof *dp);
	f = mt_folded_new();
	mt_folded_sink(f, &k);
	k.thread(k.ctx, 1, 1, "deep", "deep");
	for (size_t i = 0; i < DEEP; i++) {
		dn[i] = i % 2 ? "odd" : "even";
		dp[i] = i + 1;
	}
	for (size_t i = DEEP; i-- > 0;) {
		struct mt_tl_call d = {.pid = 1, .tid = 1, .name = dn[i], .depth = i, .stack = dn, .paths = dp};
		k.call(k.ctx, &(struct mt_report_call){.c = &d, .self_ns = 1});
	}
	t = written(f, MT_WEIGHT_TIME, &total);
	size_t lines = 0;
	for (const char *p = t; *p; p++)
		lines += *p == '\n';
	ok(total == DEEP && lines == MT_FOLDED_MAX_DEPTH + 1 && strstr(t, ";[deeper frames] 99500\n"),
	   "100,000 frames deep: 500 stacks and one for the deeper frames, the weight all there");
	free(t);
	mt_folded_free(f);
	free(dn);
	free(dp);
	return tap_done();
}
