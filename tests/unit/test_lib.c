/* Unit tests for the library, TAP output. Each test names the oracle it
 * compares against. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "timeline/callstack.h"
#include "stream/events.h"
#include "trace/image.h"
#include "trace/perfdata.h"
#include "trace/ptdecode.h"
#include "base/workq.h"

static int n_test;

static void ok(int cond, const char *name)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, name);
}

/* Oracle: the exact 128-bit value of zero + tsc*mult / 2^shift. perf's
 * quotient/remainder split must equal it (mod 2^64) for every input. */
static void test_tsc_conversion(void)
{
	uint64_t seed = 88172645463325252ULL;
	int good = 1;
	for (int i = 0; i < 100000 && good; i++) {
		seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
		struct mt_tsc_conv c = {.time_shift = (uint16_t)(seed % 32), .time_mult = (uint32_t)(seed >> 32),
					.time_zero = seed * 2654435761u};
		uint64_t tsc = seed >> (seed % 17);
		unsigned __int128 exact = ((unsigned __int128)tsc * c.time_mult) >> c.time_shift;
		uint64_t want = c.time_zero + (uint64_t)exact;
		good = mt_tsc_to_perf_time(&c, tsc) == want;
	}
	ok(good, "tsc->perf time equals the exact 128-bit formula (100000 random cases)");
	/* the README's 4.14 conversion: shift 31, mult 1789569706, zero 0xfffffff86343cb91 */
	struct mt_tsc_conv q = {.time_shift = 31, .time_mult = 1789569706, .time_zero = 0xfffffff86343cb91ULL};
	unsigned __int128 e = ((unsigned __int128)123456789012345ULL * 1789569706u) >> 31;
	ok(mt_tsc_to_perf_time(&q, 123456789012345ULL) == 0xfffffff86343cb91ULL + (uint64_t)e,
	   "tsc->perf time with the 4.14 file's negative time_zero wraps like perf");
}

/* Oracle: the fields written are the fields read back. */
static void test_events_roundtrip(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct mt_events_writer w;
	mt_events_writer_init(&w, f);
	struct mt_event in[4] = {
		{.time = 123456789, .has_time = true, .pid = 1, .tid = 2, .cpu = 3, .kind = MT_EV_CALL,
		 .from = 0x401000, .to = 0x7fffffffe000, .insn = 17, .offset = MT_NO_OFFSET},
		{.pid = 5, .tid = 6, .cpu = -1, .kind = MT_EV_JUMP, .from = 1, .to = 2, .cond = true, .offset = MT_NO_OFFSET},
		{.pid = 5, .tid = 6, .cpu = -1, .kind = MT_EV_ERROR, .offset = 0x1234, .msg = "bad\tpacket"},
		{.time = 1, .has_time = true, .pid = 0, .tid = 0, .cpu = 0, .kind = MT_EV_POWER, .cbr = 42,
		 .offset = MT_NO_OFFSET},
	};
	mt_events_write_fact(&w, "source", "unit");
	for (int i = 0; i < 4; i++)
		mt_events_write(&w, &in[i]);
	struct mt_err err = {0};
	mt_events_writer_finish(&w, &err);
	fclose(f);
	char *save, *line = strtok_r(buf, "\n", &save);
	int idx = 0, good = strcmp(line, "# mt-events 1") == 0;
	while ((line = strtok_r(NULL, "\n", &save))) {
		struct mt_event ev;
		struct mt_kv kv[MT_EVENT_MAX_EXTRA];
		int rc = mt_events_parse_line(line, &ev, kv, &err);
		if (rc == 0)
			continue;
		if (rc < 0 || idx >= 4) {
			good = 0;
			break;
		}
		const struct mt_event *e = &in[idx++];
		good &= ev.has_time == e->has_time && (!e->has_time || ev.time == e->time) && ev.pid == e->pid &&
			ev.tid == e->tid && ev.cpu == e->cpu && ev.kind == e->kind && ev.from == e->from &&
			ev.to == e->to && ev.insn == e->insn && ev.cond == e->cond && ev.offset == e->offset &&
			ev.cbr == e->cbr;
		if (e->msg)
			good &= ev.msg && !strcmp(ev.msg, "bad packet"); /* TAB cannot survive a TAB-separated field */
	}
	ok(good && idx == 4, "event text round trip keeps every field");
	free(buf);

	char bad1[] = "1\t2\t3\tcall\t0x1";
	char bad2[] = "-\t1\t1\tfly\t0x1\t0x2";
	char okl[] = "-\t1\t1\treturn\t0x1\t0x2\tfuture=column\tinsn=9\tflag";
	char bad3[] = "-\t1\t1\treturn\t0x1\t0x2\tcpu=x";
	struct mt_event ev;
	struct mt_kv kv[MT_EVENT_MAX_EXTRA];
	mt_err_clear(&err);
	ok(mt_events_parse_line(bad1, &ev, kv, &err) == MT_EFORMAT, "a line with 5 columns is rejected");
	mt_err_clear(&err);
	ok(mt_events_parse_line(bad2, &ev, kv, &err) == MT_EFORMAT && strstr(err.msg, "unknown event kind"),
	   "an unknown kind is rejected by name");
	mt_err_clear(&err);
	ok(mt_events_parse_line(bad3, &ev, kv, &err) == MT_EFORMAT && strstr(err.msg, "bad cpu value"),
	   "a known key with a bad value is rejected");
	mt_err_clear(&err);
	ok(mt_events_parse_line(okl, &ev, kv, &err) == 1 && ev.insn == 9 && ev.nextra == 2 &&
	   !strcmp(ev.extra[0].key, "future") && !strcmp(ev.extra[0].val, "column") &&
	   !strcmp(ev.extra[1].key, "flag") && !ev.extra[1].val,
	   "unknown columns are kept, in order, as extra key=value pairs");
}

static int same_event(const struct mt_event *a, const struct mt_event *b)
{
	int good = a->has_time == b->has_time && (!a->has_time || a->time == b->time) && a->pid == b->pid &&
		   a->tid == b->tid && a->cpu == b->cpu && a->kind == b->kind && a->from == b->from &&
		   a->to == b->to && a->insn == b->insn && a->cond == b->cond && a->async == b->async &&
		   a->offset == b->offset && (a->kind != MT_EV_POWER || a->cbr == b->cbr) &&
		   !a->msg == !b->msg && (!a->msg || !strcmp(a->msg, b->msg)) && a->nextra == b->nextra;
	for (unsigned i = 0; good && i < a->nextra; i++)
		good = !strcmp(a->extra[i].key, b->extra[i].key) && !a->extra[i].val == !b->extra[i].val &&
		       (!a->extra[i].val || !strcmp(a->extra[i].val, b->extra[i].val));
	return good;
}

/* Oracle: the events written are the events read back, in both forms; the
 * binary reader reports damage instead of inventing events. */
/* A writer of the given form into a memory stream of *buf, *len (both set
 * when it closes); returns the stream, for read_back. */
static FILE *write_to_memory(struct mt_events_writer *w, enum mt_events_format fmt, char **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	FILE *f = open_memstream(buf, len);
	mt_events_writer_init_format(w, f, fmt);
	return f;
}

/* Finishes a writer on the memory stream f (open_memstream of *buf, *len:
 * both are set when it closes) and opens a reader on what it wrote;
 * returns the reader's FILE. */
static FILE *read_back(struct mt_events_writer *w, FILE *f, char **buf, size_t *len, struct mt_events_reader *r,
		       struct mt_err *err)
{
	mt_err_clear(err);
	mt_events_writer_finish(w, err);
	fclose(f);
	f = fmemopen(*buf, *len, "r");
	mt_events_reader_open(r, f, "mem", err);
	return f;
}

static void test_events_binary(void)
{
	static const struct mt_kv kv1[] = {{"sym", "main"}, {"flag", NULL}, {"sym_to", ""}};
	struct mt_event in[] = {
		{.time = 5000000000ULL, .has_time = true, .pid = 7, .tid = 8, .cpu = 1, .kind = MT_EV_CALL,
		 .from = 0x401000, .to = 0xffffffff81000000ULL, .insn = 3, .offset = MT_NO_OFFSET,
		 .extra = kv1, .nextra = 3},
		{.time = 4999999990ULL, .has_time = true, .pid = 7, .tid = 8, .cpu = -1, .kind = MT_EV_RETURN,
		 .offset = MT_NO_OFFSET, .extra = kv1, .nextra = 1},
		{.pid = 1, .tid = 1, .cpu = 0, .kind = MT_EV_ERROR, .offset = 0, .msg = "overflow"},
		{.pid = 1, .tid = 1, .cpu = 0, .kind = MT_EV_TRACE_END, .async = true, .cond = true,
		 .offset = MT_NO_OFFSET},
		{.time = 1, .has_time = true, .cpu = 3, .kind = MT_EV_POWER, .cbr = 33, .offset = MT_NO_OFFSET},
	};
	const int n = (int)(sizeof in / sizeof in[0]);
	for (int fmt = 0; fmt < 2; fmt++) {
		char *buf;
		size_t len;
		struct mt_events_writer w;
		FILE *f = write_to_memory(&w, fmt ? MT_EVENTS_BINARY : MT_EVENTS_TEXT, &buf, &len);
		mt_events_write_comm(&w, 7, 8, "app");
		for (int i = 0; i < n; i++)
			mt_events_write(&w, &in[i]);
		struct mt_err err = {0};
		int good = mt_events_writer_finish(&w, &err) == 0;
		fclose(f);
		f = fmemopen(buf, len, "r");
		struct mt_events_reader r;
		good &= mt_events_reader_open(&r, f, "mem", &err) == 0 &&
			r.format == (fmt ? MT_EVENTS_BINARY : MT_EVENTS_TEXT);
		struct mt_event ev;
		const char *meta = NULL;
		good &= mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_META && !strcmp(meta, "comm\t7\t8\tapp");
		for (int i = 0; i < n && good; i++)
			good = mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_EVENT && same_event(&ev, &in[i]);
		good &= mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_EOF;
		mt_events_reader_close(&r);
		fclose(f);
		ok(good, fmt ? "binary stream: every field, extra column and metadata line read back"
			     : "text stream reader: every field, extra column and metadata line read back");
		if (fmt) {
			/* cut the binary stream at every byte: a clean end or a clear error, never garbage */
			int cut_ok = 1;
			for (size_t cut = 8; cut < len && cut_ok; cut++) {
				f = fmemopen(buf, cut, "r");
				mt_err_clear(&err);
				mt_events_reader_open(&r, f, "mem", &err);
				int rc, events = 0;
				while ((rc = mt_events_read(&r, &ev, &meta, &err)) > 0)
					events += rc == MT_EVENTS_EVENT;
				cut_ok = events <= n && (rc == MT_EVENTS_EOF || (rc == MT_EFORMAT && strstr(err.msg, "record")));
				mt_events_reader_close(&r);
				fclose(f);
			}
			ok(cut_ok, "a binary stream cut at any byte ends cleanly or with a record error");
		}
		free(buf);
	}

	/* More distinct strings than the writer keeps: the reset keeps ids right. */
	char *buf;
	size_t len;
	struct mt_events_writer w;
	FILE *f = write_to_memory(&w, MT_EVENTS_BINARY, &buf, &len);
	char msg[32];
	const int many = 300000;
	for (int i = 0; i < many; i++) {
		snprintf(msg, sizeof msg, "m%d", i % 280000);
		struct mt_event e = {.kind = MT_EV_ERROR, .cpu = -1, .offset = MT_NO_OFFSET, .msg = msg};
		mt_events_write(&w, &e);
	}
	struct mt_err err = {0};
	struct mt_events_reader r;
	f = read_back(&w, f, &buf, &len, &r, &err);
	struct mt_event ev;
	const char *meta;
	int good = 1, i = 0;
	for (; good && mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_EVENT; i++) {
		snprintf(msg, sizeof msg, "m%d", i % 280000);
		good = ev.msg && !strcmp(ev.msg, msg);
	}
	ok(good && i == many && r.nstrings < 280000, "string table resets keep every message right (300000 events)");
	mt_events_reader_close(&r);
	fclose(f);
	free(buf);

	/* Several new strings per event: the reset falls before an event's
	 * strings, never between them (ids taken before it would be stale). */
	f = write_to_memory(&w, MT_EVENTS_BINARY, &buf, &len);
	const int events = 200000;
	char v1[32], v2[32], v3[32];
	for (int k = 0; k < events; k++) {
		snprintf(v1, sizeof v1, "a%d", k);
		snprintf(v2, sizeof v2, "b%d", k);
		snprintf(v3, sizeof v3, "c%d", k);
		struct mt_kv kv[4] = {{"sym", v1}, {"off", v2}, {"dso", "/lib/x"}, {"file", v3}};
		struct mt_event e = {.pid = 1, .tid = 1, .cpu = -1, .kind = MT_EV_CALL, .offset = MT_NO_OFFSET,
				     .extra = kv, .nextra = 4};
		mt_events_write(&w, &e);
	}
	f = read_back(&w, f, &buf, &len, &r, &err);
	good = 1;
	int resets = 0;
	uint64_t epoch = 0;
	for (i = 0; good && mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_EVENT; i++) {
		snprintf(v1, sizeof v1, "a%d", i);
		snprintf(v2, sizeof v2, "b%d", i);
		snprintf(v3, sizeof v3, "c%d", i);
		good = ev.nextra == 4 && !strcmp(ev.extra[0].key, "sym") && !strcmp(ev.extra[0].val, v1) &&
		       !strcmp(ev.extra[1].key, "off") && !strcmp(ev.extra[1].val, v2) &&
		       !strcmp(ev.extra[2].key, "dso") && !strcmp(ev.extra[2].val, "/lib/x") &&
		       !strcmp(ev.extra[3].key, "file") && !strcmp(ev.extra[3].val, v3);
		resets += i && ev.strings_epoch != epoch;
		epoch = ev.strings_epoch;
	}
	ok(good && i == events && resets >= 1,
	   "string table resets between events keep every column right (200000 events, 3 new strings each)");
	mt_events_reader_close(&r);
	fclose(f);
	free(buf);
}

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

/* Oracle: the strings each event was given, read back. The binary writer
 * knows a string by its address alone only while the event's strings_epoch
 * promises it unchanged: one buffer is rewritten between events under no
 * promise (0), under one epoch after another, and kept under one epoch. */
static void test_writer_string_epochs(void)
{
	char *buf;
	size_t len;
	struct mt_events_writer w;
	FILE *f = write_to_memory(&w, MT_EVENTS_BINARY, &buf, &len);
	static const struct { uint64_t epoch; const char *val; } step[] = {
		{7, "aaa"}, {7, "aaa"}, {0, "bbb"}, {0, "ccc"}, {7, "ccc"}, {8, "ddd"}, {8, "ddd"}, {0, "ddd"},
		{9, "aaa"}, {0, "eee\tf"}, {10, "eee\tf"}, {10, "eee\tf"}, {11, "ggg"},
	};
	const size_t nstep = sizeof step / sizeof step[0];
	char val[16];
	for (size_t i = 0; i < nstep; i++) {
		strcpy(val, step[i].val);
		struct mt_kv kv = {"v", val};
		struct mt_event ev = {.pid = 1, .tid = 1, .cpu = -1, .kind = MT_EV_CALL, .offset = MT_NO_OFFSET,
				      .extra = &kv, .nextra = 1, .strings_epoch = step[i].epoch};
		mt_events_write(&w, &ev);
	}
	struct mt_err err = {0};
	struct mt_events_reader r;
	f = read_back(&w, f, &buf, &len, &r, &err);
	struct mt_event ev;
	const char *meta;
	size_t n = 0;
	int rc, good = 1;
	while ((rc = mt_events_read(&r, &ev, &meta, &err)) > 0) {
		if (rc != MT_EVENTS_EVENT)
			continue;
		char want[16];
		strcpy(want, n < nstep ? step[n].val : "");
		for (char *c = want; *c; c++)
			*c = *c == '\t' ? ' ' : *c; /* as the text form carries it */
		good &= n < nstep && ev.nextra == 1 && !strcmp(ev.extra[0].val, want);
		n++;
	}
	mt_events_reader_close(&r);
	fclose(f);
	free(buf);
	ok(good && rc == 0 && n == nstep, "binary writer: a rewritten buffer is read again unless its epoch promises it unchanged");
}

/* Oracle: the value with each TAB and newline replaced by a space, byte by
 * byte. The text writer finds them a word at a time: every length and
 * position, around word boundaries and in the overlapping last word. */
static void test_text_value_cleaning(void)
{
	int good = 1;
	for (size_t len = 1; len <= 24 && good; len++)
		for (size_t pos = 0; pos < len && good; pos++)
			for (int c = 0; c < 3 && good; c++) {
				char val[32], want[32];
				for (size_t i = 0; i < len; i++)
					val[i] = (char)('a' + i);
				val[len] = '\0';
				val[pos] = c == 0 ? '\t' : c == 1 ? '\n' : '\x01';
				memcpy(want, val, len + 1);
				if (c < 2)
					want[pos] = ' ';
				struct mt_kv kv = {"k", val};
				struct mt_event e = {.pid = 1, .tid = 1, .cpu = -1, .kind = MT_EV_CALL,
						     .offset = MT_NO_OFFSET, .extra = &kv, .nextra = 1};
				char *buf = NULL;
				size_t blen = 0;
				FILE *f = open_memstream(&buf, &blen);
				struct mt_events_writer w;
				mt_events_writer_init(&w, f);
				mt_events_write(&w, &e);
				struct mt_err err = {0};
				mt_events_writer_finish(&w, &err);
				fclose(f);
				char line[96];
				snprintf(line, sizeof line, "# mt-events 1\n-\t1\t1\tcall\t0x0\t0x0\tk=%s\n", want);
				good = !strcmp(buf, line);
				free(buf);
			}
	ok(good, "text writer: every TAB and newline in a value becomes a space, nothing else changes");
}

/* Oracle: hand-built headers from the format description. */
static void test_perfdata_headers(void)
{
	struct mt_perfdata pd;
	struct mt_err err = {0};
	ok(mt_perfdata_open_mem(&pd, (const uint8_t *)"", 0, "x", &err) == MT_ETRUNC, "empty input is truncated");
	mt_err_clear(&err);
	ok(mt_perfdata_open_mem(&pd, (const uint8_t *)"PERFILE2\x68\0\0\0\0\0\0\0", 16, "x", &err) == MT_ETRUNC,
	   "a file header cut at 16 bytes is truncated");
	mt_err_clear(&err);
	ok(mt_perfdata_open_mem(&pd, (const uint8_t *)"2ELIFREP\x10\0\0\0\0\0\0\0", 16, "x", &err) == MT_EUNSUP,
	   "byte-swapped files are refused by name");
	/* pipe mode: header, one HEADER_ATTR (64-byte attr + 1 id), one FINISHED_ROUND */
	uint8_t buf[16 + 8 + 64 + 8 + 8] = {0};
	memcpy(buf, "PERFILE2", 8);
	buf[8] = 16;
	uint8_t *r = buf + 16;
	r[0] = 64;                 /* HEADER_ATTR */
	r[6] = 8 + 64 + 8;         /* size */
	r[8] = 8;                  /* attr.type */
	r[12] = 64;                /* attr.size */
	r[8 + 24] = 0x87;          /* sample_type IP|TID|TIME|CPU */
	r[8 + 64] = 7;             /* id */
	uint8_t *fr = r + 8 + 64 + 8;
	fr[0] = 68;
	fr[6] = 8;
	mt_err_clear(&err);
	int rc = mt_perfdata_open_mem(&pd, buf, sizeof buf, "pipe", &err);
	struct mt_perf_record rec;
	int n1 = mt_perfdata_next(&pd, &rec, &err), t1 = (int)rec.type;
	int n2 = mt_perfdata_next(&pd, &rec, &err), t2 = (int)rec.type;
	int n3 = mt_perfdata_next(&pd, &rec, &err);
	ok(rc == 0 && pd.pipe_mode && n1 == 1 && t1 == 64 && n2 == 1 && t2 == 68 && n3 == 0 && pd.nattrs == 1 &&
	   pd.attrs[0].type == 8 && pd.attrs[0].sample_type == 0x87 && pd.attrs[0].nids == 1,
	   "pipe mode: HEADER_ATTR parsed into an attr with its id");
	/* a record whose size runs past the end */
	fr[6] = 16;
	mt_err_clear(&err);
	mt_perfdata_open_mem(&pd, buf, sizeof buf, "pipe", &err);
	mt_perfdata_next(&pd, &rec, &err);
	rc = mt_perfdata_next(&pd, &rec, &err);
	ok(rc == MT_ETRUNC && pd.truncated && strstr(err.msg, "FINISHED_ROUND record truncated at offset 96"),
	   "a record running past the end is reported with its offset");
}

static void test_image_specs(void)
{
	struct mt_image img;
	struct mt_err err = {0};
	mt_image_init(&img, "t", &err);
	ok(mt_image_add_spec(&img, "/bin/true", &err) == MT_EUSAGE, "an image spec without @VADDR is refused");
	mt_err_clear(&err);
	ok(mt_image_add_spec(&img, "/bin/true@zz", &err) == MT_EUSAGE, "a bad address is refused");
	mt_err_clear(&err);
	ok(mt_image_add_spec(&img, "/bin/true:0x10-0x8@0x1000", &err) == MT_EUSAGE, "an empty range is refused");
	mt_err_clear(&err);
	ok(mt_image_add_spec(&img, "/bin/true:0x0-0x100@0x400000", &err) == 0 && img.nsections == 1,
	   "FILE:OFF-END@VADDR adds one section");
	uint8_t b[4];
	FILE *f = fopen("/bin/true", "rb");
	uint8_t want[4] = {0};
	if (f) {
		if (fread(want, 1, 4, f) != 4)
			want[0] = 1;
		fclose(f);
	}
	ok(mt_image_read(&img, 0x400000, b, 4) == 4 && !memcmp(b, want, 4), "image bytes equal the file's bytes");
	mt_image_fini(&img);
}

/* The code walk's blocks, on hand-assembled code (bytes and lengths as
 * objdump -d reads them) split over two sections mid-instruction. */
static void test_code_blocks(void)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf8,                   /* 0x1000 mov %rdi,%rax */
		0x62, 0xb2, 0x66, 0x20, 0x26, 0xc3, /* 0x1003 vptestnmb %ymm19,%ymm19,%k0 (EVEX; capstone 4 knows it not) */
		0xc5, 0xf8, 0x77,                   /* 0x1009 vzeroupper (no ModRM) */
		0x90,                               /* 0x100c nop */
		0x0f, 0x84, 0x10, 0x00, 0x00, 0x00, /* 0x100d je 0x1023 -- the first section ends inside it */
		0xe8, 0x00, 0x00, 0x00, 0x00,       /* 0x1013 call 0x1018 (the next instruction) */
		0xff, 0x15, 0x00, 0x00, 0x00, 0x00, /* 0x1018 call *0x0(%rip) */
		0xc3,                               /* 0x101e ret */
	};
	char path[] = "/tmp/mt-unit-code-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	ok(f && fwrite(code, 1, sizeof code, f) == sizeof code && !fclose(f), "code file written");
	struct mt_image img;
	struct mt_err err = {0};
	mt_image_init(&img, "t", &err);
	ok(!mt_image_add_file(&img, path, 0, 16, 0x1000, &err) && !mt_image_add_file(&img, path, 16, 0, 0x1010, &err),
	   "two sections, the second where the first ends");
	uint8_t b[8];
	ok(mt_image_read(&img, 0x100c, b, sizeof b) == 8 && !memcmp(b, code + 12, 8), "a read goes on into the next section");
	ok(mt_image_read(&img, 0x101e, b, sizeof b) == 1, "a read stops where the code ends");
	int e = 0;
	const struct mt_code_block *k = mt_image_block(&img, 0x1000, &e);
	ok(k && k->ninsn == 5 && k->end_ip == 0x100d && k->cls == ptic_cond_jump && k->len == 6 && k->direct &&
	   k->target == 0x1023, "a block runs to its branch, over EVEX/VEX code and across sections");
	ok(k && img.offs[k->offs + 1] == 3 && img.offs[k->offs + 2] == 9 && img.offs[k->offs + 4] == 13,
	   "each instruction's offset is kept");
	k = mt_image_block(&img, 0x1013, &e);
	ok(k && k->ninsn == 1 && k->cls == ptic_call && k->direct && k->target == 0x1018, "a direct call and its target");
	k = mt_image_block(&img, 0x1018, &e);
	ok(k && k->ninsn == 1 && k->cls == ptic_call && !k->direct && k->len == 6, "an indirect call");
	k = mt_image_block(&img, 0x101e, &e);
	ok(k && k->cls == ptic_return, "a return");
	ok(!mt_image_block(&img, 0x2000, &e) && e == -pte_nomap, "no section: -pte_nomap");
	/* a newer section over the old hides it, and blocks decoded before go */
	ok(!mt_image_add_file(&img, path, sizeof code - 1, 1, 0x1000, &err), "a section over the first");
	k = mt_image_block(&img, 0x1000, &e);
	ok(k && k->ninsn == 1 && k->cls == ptic_return && k->end_ip == 0x1000, "the newer section's code is walked");
	mt_image_fini(&img);
	unlink(path);
}

/* Oracle: the order tasks are taken in, made certain by holding the only
 * thread in a first task until the others are queued. */
struct order_task {
	struct mt_workq_task t;
	int id;
	unsigned worker;
	sem_t *started, *gate;      /* the first task: says it runs, waits for the gate */
};
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int order_seen[16], n_order;

static void order_run(struct mt_workq_task *t, unsigned worker)
{
	struct order_task *o = (struct order_task *)t;
	if (o->started) {
		sem_post(o->started);
		sem_wait(o->gate);
	}
	o->worker = worker;
	pthread_mutex_lock(&order_mu);
	order_seen[n_order++] = o->id;
	pthread_mutex_unlock(&order_mu);
}

static void test_workq(void)
{
	struct mt_workq q;
	struct order_task v[8];
	for (int i = 0; i < 8; i++)
		v[i] = (struct order_task){.t.run = order_run, .id = i};
	/* no threads: each task runs in the caller, at once */
	ok(!mt_workq_start(&q, 0) && q.threads == 0, "a queue without threads");
	n_order = 0;
	mt_workq_submit(&q, &v[0].t, false);
	ok(n_order == 1 && mt_workq_done(&q, &v[0].t) && v[0].worker == 0, "without threads a task runs when submitted");
	mt_workq_stop(&q);
	/* one thread held by task 0 while 1, 2 (normal) and 3 (urgent) queue */
	sem_t started, gate;
	sem_init(&started, 0, 0);
	sem_init(&gate, 0, 0);
	ok(!mt_workq_start(&q, 1) && q.threads == 1, "a queue with one thread");
	n_order = 0;
	v[0].started = &started;
	v[0].gate = &gate;
	mt_workq_submit(&q, &v[0].t, false);
	sem_wait(&started);
	mt_workq_submit(&q, &v[1].t, false);
	mt_workq_submit(&q, &v[2].t, false);
	mt_workq_submit(&q, &v[3].t, true);
	ok(!mt_workq_done(&q, &v[1].t) && !mt_workq_done(&q, &v[3].t), "queued tasks wait for the thread");
	sem_post(&gate);
	mt_workq_wait(&q, &v[2].t);
	ok(n_order == 4 && order_seen[0] == 0 && order_seen[1] == 3 && order_seen[2] == 1 && order_seen[3] == 2,
	   "the urgent task goes first, the others in the order submitted");
	ok(v[1].worker == 1 && v[3].worker == 1, "tasks run on the queue's thread (worker 1)");
	struct order_task never = {.t.run = order_run};
	mt_workq_wait(&q, &never.t);
	ok(1, "waiting for a task never submitted returns");
	mt_workq_stop(&q);
	/* several threads: every task runs once */
	ok(!mt_workq_start(&q, 3) && q.threads == 3, "a queue with three threads");
	n_order = 0;
	for (int i = 0; i < 8; i++) {
		v[i].started = NULL;
		mt_workq_submit(&q, &v[i].t, false);
	}
	for (int i = 0; i < 8; i++)
		mt_workq_wait(&q, &v[i].t);
	int seen = 0;
	for (int i = 0; i < n_order; i++)
		seen |= 1 << order_seen[i];
	bool workers_ok = true;
	for (int i = 0; i < 8; i++)
		workers_ok = workers_ok && v[i].worker >= 1 && v[i].worker <= 3;
	ok(n_order == 8 && seen == 0xff && workers_ok, "every task run once, by a worker of the queue");
	mt_workq_stop(&q);
	sem_destroy(&started);
	sem_destroy(&gate);
}

int main(void)
{
	test_tsc_conversion();
	test_events_roundtrip();
	test_events_binary();
	test_callstack_string_epochs();
	test_writer_string_epochs();
	test_text_value_cleaning();
	test_perfdata_headers();
	test_image_specs();
	test_code_blocks();
	test_workq();
	printf("1..%d\n", n_test);
	return 0;
}
