/* Unit tests of the call-stack reconstruction (timeline/callstack.c), TAP
 * output. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/events.h"
#include "timeline/callstack.h"

#include "memstream.h"
#include "tap.h"

/* Oracle: the names written. mt_cs caches what it derives from a binary
 * stream's strings by pointer (events.h, strings_epoch); past the writer's
 * table limit the reader frees its strings and allocates new ones, often
 * at the addresses of old ones with other contents: every slice must still
 * carry the name its call was written with. */
struct name_check {
	long next, inferred;
	int good;
};

static void check_begin(void *ctx, struct mt_cs_thread *th, uint64_t time, const struct mt_cs_frame *f)
{
	(void)th;
	(void)time;
	struct name_check *nc = ctx;
	if (f->inferred) { /* the caller the first return finds: main */
		nc->inferred++;
		nc->good &= !strcmp(f->name, "main");
		return;
	}
	char want[32];
	snprintf(want, sizeof want, "f%ld", nc->next++);
	nc->good &= !strcmp(f->name, want);
}

static void ignore_end(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name, uint64_t id)
{
	(void)ctx, (void)th, (void)time, (void)name, (void)id;
}

static void ignore_complete(void *ctx, struct mt_cs_thread *th, uint64_t start, uint64_t end, const char *name)
{
	(void)ctx, (void)th, (void)start, (void)end, (void)name;
}

static void ignore_instant(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name)
{
	(void)ctx, (void)th, (void)time, (void)name;
}

static void test_callstack_string_epochs(void)
{
	char *buf;
	size_t len;
	struct mt_events_writer w;
	FILE *f = write_to_memory(&w, MT_EVENTS_BINARY, &buf, &len);
	const long many = 600000; /* past the writer's 2^18 strings twice */
	char name[32];
	for (long i = 0; i < many; i++) {
		snprintf(name, sizeof name, "f%ld", i);
		struct mt_kv kv = {"to_sym", name};
		struct mt_event call = {.time = 1000 + 10 * (uint64_t)i, .has_time = true, .pid = 1, .tid = 1, .cpu = -1,
					.kind = MT_EV_CALL, .from = 0x1000, .to = 0x2000 + (uint64_t)i,
					.offset = MT_NO_OFFSET, .extra = &kv, .nextra = 1};
		mt_events_write(&w, &call);
		struct mt_kv back = {"to_sym", "main"};
		struct mt_event ret = {.time = 1005 + 10 * (uint64_t)i, .has_time = true, .pid = 1, .tid = 1, .cpu = -1,
				       .kind = MT_EV_RETURN, .from = 0x3000, .to = 0x1005, .offset = MT_NO_OFFSET,
				       .extra = &back, .nextra = 1};
		mt_events_write(&w, &ret);
	}
	struct mt_err err = {0};
	struct mt_events_reader r;
	f = read_back(&w, f, &buf, &len, &r, &err);
	struct name_check nc = {.good = 1};
	struct mt_cs_sink sink = {.ctx = &nc, .begin = check_begin, .end = ignore_end, .complete = ignore_complete,
				  .instant = ignore_instant};
	struct mt_cs_opts opts = {.starts_when_known = true};
	struct mt_cs *cs = mt_cs_new(&sink, &opts);
	struct mt_event ev;
	const char *meta;
	int rc, epochs = 0;
	uint64_t epoch = 0;
	while ((rc = mt_events_read(&r, &ev, &meta, &err)) > 0) {
		if (rc != MT_EVENTS_EVENT)
			continue;
		if (ev.strings_epoch != epoch)
			epochs++;
		epoch = ev.strings_epoch;
		mt_cs_event(cs, &ev, &err);
	}
	mt_cs_finish(cs);
	mt_cs_free(cs);
	mt_events_reader_close(&r);
	fclose(f);
	free(buf);
	ok(nc.good && nc.next == many && nc.inferred == 1 && epochs >= 3,
	   "call stacks from a binary stream: every name right across string-table resets (600000 calls)");
}

int main(void)
{
	test_callstack_string_epochs();
	return tap_done();
}
