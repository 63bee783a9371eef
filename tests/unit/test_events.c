/* Unit tests of the event stream (stream/events*.c): text and binary
 * codecs, interning, value cleaning; TAP output. Each test names its oracle. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mt-events.pb-c.h"
#include "base/readahead.h"
#include "stream/pbwire.h"

#include "stream/events.h"
#include "stream/linememo.h"
#include "stream/recmemo.h"
#include "stream/textmemo.h"

#include "memstream.h"
#include "tap.h"

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
		 .from = 0x401000, .to = 0x7fffffffe000, .insn = 17, .cyc = 250, .offset = MT_NO_OFFSET},
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
			ev.to == e->to && ev.insn == e->insn && ev.cyc == e->cyc && ev.cond == e->cond && ev.offset == e->offset &&
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
		   a->to == b->to && a->insn == b->insn && a->cyc == b->cyc && a->cond == b->cond && a->async == b->async &&
		   a->offset == b->offset && (a->kind != MT_EV_POWER || a->cbr == b->cbr) &&
		   !a->msg == !b->msg && (!a->msg || !strcmp(a->msg, b->msg)) && a->nextra == b->nextra;
	for (unsigned i = 0; good && i < a->nextra; i++)
		good = !strcmp(a->extra[i].key, b->extra[i].key) && !a->extra[i].val == !b->extra[i].val &&
		       (!a->extra[i].val || !strcmp(a->extra[i].val, b->extra[i].val));
	return good;
}

/* Oracle: the events written are the events read back, in both forms; the
 * binary reader reports damage instead of inventing events. */
static void test_events_binary(void)
{
	static const struct mt_kv kv1[] = {{"sym", "main"}, {"flag", NULL}, {"sym_to", ""}};
	struct mt_event in[] = {
		{.time = 5000000000ULL, .has_time = true, .pid = 7, .tid = 8, .cpu = 1, .kind = MT_EV_CALL,
		 .from = 0x401000, .to = 0xffffffff81000000ULL, .insn = 3, .cyc = 1ULL << 40, .offset = MT_NO_OFFSET,
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

/* Oracle: mt_events_write of the same event with the groups' columns
 * appended to its own, written by a second writer: the bytes must be the
 * same, for groups seen again (encoded once), groups with TAB in a value,
 * groups too long to keep, events with columns and a message of their own,
 * more columns than an event may carry, and (binary) enough new strings
 * that the string table is reset between groups seen before. */
static void test_write_cols(enum mt_events_format fmt)
{
	char *abuf, *bbuf;
	size_t alen, blen;
	struct mt_events_writer a, b;
	FILE *fa = write_to_memory(&a, fmt, &abuf, &alen), *fb = write_to_memory(&b, fmt, &bbuf, &blen);
	static char longval[3000];
	memset(longval, 'x', sizeof longval - 1);
	static struct mt_kv many[MT_EVENT_MAX_EXTRA];
	for (unsigned i = 0; i < MT_EVENT_MAX_EXTRA; i++)
		many[i] = (struct mt_kv){"m", "v"};
	struct mt_kv g1[] = {{"from_sym", "main"}, {"from_off", "0x4"}, {"from_dso", "/bin/x"}};
	struct mt_kv g2[] = {{"to_sym", "tab\there"}, {"to_dso", NULL}};
	struct mt_kv g3[] = {{"to_sym", longval}};
	char fresh[3][32];
	struct mt_kv own[] = {{"via", fresh[2]}};
	struct mt_kv g4[] = {{"to_sym", fresh[0]}, {"to_off", fresh[1]}};
	unsigned rounds = fmt == MT_EVENTS_BINARY ? 400000 : 2000; /* past INTERN_MAX new strings */
	unsigned texts = 0, long_refused = 0;
	for (unsigned i = 0; i < rounds; i++) {
		snprintf(fresh[0], sizeof fresh[0], "f%u", i);
		snprintf(fresh[1], sizeof fresh[1], "0x%x", i);
		snprintf(fresh[2], sizeof fresh[2], "v%u", i);
		struct mt_events_cols cols[3] = {{.kv = g1, .n = 3, .id = 1}, {.kv = g2, .n = 2, .id = 2}, {.kv = g3, .n = 1, .id = 3}};
		struct mt_event ev = {.time = 1000 + i, .has_time = i % 3 != 0, .pid = 7, .tid = 8 + i % 2,
				      .cpu = (int32_t)(i % 4) - 1, .kind = MT_EV_CALL, .from = 0x1000 + i,
				      .to = 0x2000, .insn = i % 5, .offset = MT_NO_OFFSET, .extra = own,
				      .nextra = i % 4 != 0, .msg = i % 7 == 0 ? "a message" : NULL};
		unsigned ncols = 1 + i % 3;
		if (i % 11 == 0) {
			cols[1] = (struct mt_events_cols){.kv = g4, .n = 2, .id = 100 + i}; /* new strings, a new group */
		}
		if (i % 101 == 0) { /* too many columns: cut short as the plain writer cuts */
			ev.extra = many;
			ev.nextra = MT_EVENT_MAX_EXTRA - 1;
		}
		char text[3][320];
		for (unsigned g = 0; fmt == MT_EVENTS_TEXT && i % 2 && g < ncols; g++) {
			/* every other event, the groups with their text form kept (as
			 * symcols keeps it): the same bytes; the long one does not fit */
			cols[g].text_len = (uint32_t)mt_events_cols_text(&cols[g], text[g], sizeof text[g]);
			cols[g].text = cols[g].text_len ? text[g] : NULL;
			texts += cols[g].text != NULL;
			long_refused += cols[g].kv == g3 && !cols[g].text;
		}
		struct mt_kv all[MT_EVENT_MAX_EXTRA + 8];
		unsigned n = 0;
		for (unsigned k = 0; k < ev.nextra; k++)
			all[n++] = ev.extra[k];
		for (unsigned g = 0; g < ncols; g++)
			for (unsigned k = 0; k < cols[g].n; k++)
				all[n++] = cols[g].kv[k];
		mt_events_write_cols(&a, &ev, NULL, cols, ncols);
		struct mt_event e2 = ev;
		e2.extra = all;
		e2.nextra = n < MT_EVENT_MAX_EXTRA ? n : MT_EVENT_MAX_EXTRA;
		mt_events_write(&b, &e2);
	}
	struct mt_err err = {0};
	mt_events_writer_finish(&a, &err);
	mt_events_writer_finish(&b, &err);
	fclose(fa);
	fclose(fb);
	unsigned resets = 0;
	if (fmt == MT_EVENTS_BINARY) { /* the string table was reset on the way */
		FILE *in = fmemopen(abuf, alen, "r");
		struct mt_events_reader r;
		if (in && !mt_events_reader_open(&r, in, "mem", &err)) {
			struct mt_event ev;
			const char *meta;
			uint64_t epoch = 0;
			bool first = true;
			while (mt_events_read(&r, &ev, &meta, &err) > 0) {
				if (!first && ev.strings_epoch != epoch)
					resets++;
				epoch = ev.strings_epoch;
				first = false;
			}
			mt_events_reader_close(&r);
		}
		if (in)
			fclose(in);
		ok(resets > 0, "binary writer: the groups' test passes a string table reset");
	}
	ok(alen == blen && !memcmp(abuf, bbuf, alen) && alen > 0 &&
	   (fmt == MT_EVENTS_BINARY || (texts > 1000 && long_refused > 100)),
	   fmt == MT_EVENTS_BINARY ? "binary writer: column groups give the bytes of the columns written each time"
				   : "text writer: column groups, by id or with their text form, give the bytes of the "
				     "columns written each time");
	if (fmt == MT_EVENTS_TEXT) { /* and the text form is what is copied */
		char *cbuf;
		size_t clen;
		struct mt_events_writer c;
		FILE *fc = write_to_memory(&c, fmt, &cbuf, &clen);
		struct mt_kv g[] = {{"to_sym", "real"}};
		struct mt_events_cols col = {.kv = g, .n = 1, .id = 7, .text = "\tto_sym=kept", .text_len = 12};
		struct mt_event ev = {.pid = 1, .tid = 1, .cpu = -1, .kind = MT_EV_CALL, .offset = MT_NO_OFFSET};
		mt_events_write_cols(&c, &ev, NULL, &col, 1);
		mt_events_writer_finish(&c, &err);
		fclose(fc);
		ok(strstr(cbuf, "\tto_sym=kept\n") && !strstr(cbuf, "real"),
		   "text writer: a group's text form, where given, is copied as it is");
		free(cbuf);
	}
	free(abuf);
	free(bbuf);
}

/* The line parser's fast path against its general path on lines as mt
 * writes them and on random mutations of them (digits, case, signs, TABs,
 * '=', CR, spaces, known keys' letters): the same result, the same event,
 * the same columns, and the same error where there is one. And with a
 * memo of tails (textmemo), kept over all the lines, each line parsed
 * twice (the second time its tail is the memo's if it was kept): the same
 * again, the memo's columns promised stable unless msg is set. */
static struct mt_textmemo parse_memo;
static unsigned memo_hits;
static bool last_hit; /* the last line's second parse took the memo's columns */
/* The copy (mt_events_parse_line_copy) held to the writer: a line copied
 * must be exactly what mt_events_write writes for its event. The writer's
 * buffer is read after each event and emptied. */
static struct mt_events_writer copy_writer;
static unsigned copied_lines, same_uncopied; /* the latter: lines the copy left to the writer */
static bool last_copied;

static int copy_agrees(const char *line, size_t n, const struct mt_event *ev, bool copied, const char *copy)
{
	copy_writer.len = 0;
	mt_events_write(&copy_writer, ev);
	bool same = copy_writer.len == n + 1 && !memcmp(copy_writer.buf, line, n) && copy_writer.buf[n] == '\n';
	copy_writer.len = 0;
	last_copied = copied;
	if (!copied) {
		same_uncopied += same;
		return 1;
	}
	copied_lines++;
	return same && !memcmp(copy, line, n);
}

static int same_parsed(int ra, const struct mt_event *ea, const struct mt_err *xa, int rb, const struct mt_event *eb,
		       const struct mt_err *xb)
{
	if (ra != rb)
		return 0;
	if (ra < 0)
		return !strcmp(xa->msg, xb->msg);
	if (ra == 0)
		return 1;
	if (ea->time != eb->time || ea->has_time != eb->has_time || ea->pid != eb->pid || ea->tid != eb->tid ||
	    ea->cpu != eb->cpu || ea->kind != eb->kind || ea->from != eb->from || ea->to != eb->to ||
	    ea->insn != eb->insn || ea->cyc != eb->cyc || ea->offset != eb->offset || ea->cbr != eb->cbr ||
	    ea->cond != eb->cond || ea->async != eb->async || ea->nextra != eb->nextra || !ea->msg != !eb->msg ||
	    (ea->msg && strcmp(ea->msg, eb->msg)))
		return 0;
	for (unsigned i = 0; i < ea->nextra; i++)
		if (strcmp(ea->extra[i].key, eb->extra[i].key) || !ea->extra[i].val != !eb->extra[i].val ||
		    (ea->extra[i].val && strcmp(ea->extra[i].val, eb->extra[i].val)))
			return 0;
	return 1;
}

static int same_parse(const char *line)
{
	char a[512], b[512], c[2][512];
	size_t n = strlen(line);
	memcpy(a, line, n + 1);
	memcpy(b, line, n + 1);
	static struct mt_kv ka[MT_EVENT_MAX_EXTRA], kb[MT_EVENT_MAX_EXTRA], kc[MT_EVENT_MAX_EXTRA];
	struct mt_event ea, eb, ec;
	struct mt_err xa = {0}, xb = {0};
	int ra = mt_events_parse_line_n(a, n, &ea, ka, &xa), rb = mt_events_parse_line_general(b, n, &eb, kb, &xb);
	if (!same_parsed(ra, &ea, &xa, rb, &eb, &xb) || (ra == 1 && (ea.strings_epoch || ea.extra_id)))
		return 0;
	last_hit = last_copied = false;
	for (int twice = 0; twice < 2; twice++) {
		memcpy(c[twice], line, n + 1);
		parse_memo.aside.skip = 0; /* never standing aside here (test_textmemo has that) */
		struct mt_err xc = {0};
		static char copy[MT_EVENTS_COPY_MAX];
		bool copied = false;
		int rc = mt_events_parse_line_copy(c[twice], n, &ec, kc, &parse_memo, copy, &copied, &xc);
		if (!same_parsed(rc, &ec, &xc, rb, &eb, &xb) || (rc != 1 && copied))
			return 0;
		if (rc != 1)
			continue;
		if (!copy_agrees(line, n, &ec, copied, copy))
			return 0;
		bool memo_cols = ec.nextra && ec.extra != kc;
		if (ec.strings_epoch && (ec.strings_epoch != parse_memo.epoch || !ec.extra_id || !memo_cols || ec.msg))
			return 0; /* promised: the memo's columns, no msg */
		memo_hits += twice && memo_cols;
		last_hit = twice && memo_cols;
	}
	return 1;
}

/* Event lines for the parsers' tests: mt's own forms and the edges of
 * every column's syntax. */
static const char *const parse_lines[] = {
	"-\t15568\t15568\tcall\t0x7ffff7fe4b73\t0x7ffff7fe5770\tinsn=2",
	"123\t1\t2\treturn\t0x1\t0x0\tcpu=3\tinsn=40\tfrom_sym=main\tfrom_off=0x4\tfrom_dso=/bin/x",
	"9\t1\t2\tjump\t0xa\t0xb\tcond=1\tasync=0\tcbr=7\toff=0x1f\tmsg=a b\tk\tx=y=z",
	"-\t0\t0\terror\t0x0\t0x0\toff=0x10\tmsg=bad packet",
	"18446744073709551615\t4294967295\t4294967295\tpower\t0xffffffffffffffff\t0x0\tcbr=4294967295",
	"-\t1\t1\ttrace-start\t0x0\t0x10\tto_sym=f\tto_off=0x0\tto_dso=[vdso]",
	"-\t1\t1\tcall\t0x0\t0x10\tinsn=18446744073709551615\tcpu=2147483647\toff=0xffffffffffffffff",
	"-\t1\t1\tcall\t0x0\t0x10\tinsn=99999999999999999999\tcpu=2147483648",
	"-\t1\t1\tcall\t0x0\t0x10000000000000000",
	"5\t1\t1\tcall\t0x0\t0x10\tinsn=8\tcyc=325\tto_sym=fib",
	"5\t1\t1\treturn\t0x0\t0x10\tcyc=18446744073709551615\tcyc=99999999999999999999",
	/* numbers of every length from 1 to 20 digits, near the line's start and far from it */
	"1234567890123456\t12345678\t123456789\tcall\t0x123456789abcdef0\t0xfedcba987654321\tinsn=1234567890",
	"12345678901234567\t1\t1234567890\tjump\t0x1234567\t0x12345678\tcpu=12345678\tinsn=123456789012",
	"-\t1\t2\tcall\t0xabcdef012\t0x1\tinsn=12345678901234567\tcyc=1234567890123456\toff=0x123456789",
	"7\t12\t123\treturn\t0x12\t0x123\tinsn=1234\tcyc=12345\tcbr=123456\toff=0x1234567890ab",
	"-\t123456\t1234567\tcall\t0x12345\t0x123456\tinsn=1234567890123\tto_sym=g\tto_off=0x1",
	"100000000\t10000000\t10000000\tpower\t0x100000000\t0x10000000\tcbr=100\toff=0x1000000000000000",
	"1\t1\t1\tcall\t0xaBcDeF\t0xABCDEF0123456\tinsn=12345678901234567890",
	/* a long key: the writer cuts keys at 128 bytes */
	"-\t1\t1\tcall\t0x1\t0x2\tinsn=3\tk0123456789012345678901234567890123456789012345678901234567890123456789"
	"01234567890123456789012345678901234567890123456789012345678901234567890123456789=v",
};
/* digits and letters, and the bytes either side of each range: what the
 * tests change lines with */
static const char parse_alphabet[] = "0123456789aAfFxX-+\t\t\t==\r pcuinsofmgbrdy/:@G`g\x80\xb0\xe1";

static void test_parse_fast_path(void)
{
	const char *const *base = parse_lines;
	const char *alphabet = parse_alphabet;
	unsigned seed = 12345, good = 1, tried = 0;
	char *wbuf;
	size_t wlen;
	FILE *wf = write_to_memory(&copy_writer, MT_EVENTS_TEXT, &wbuf, &wlen);
	copy_writer.len = 0; /* its version line */
	/* a small arena: it fills and starts over many times */
	good &= mt_textmemo_init(&parse_memo, 64 << 10);
	/* copied: the lines as mt_events_write writes them (by hand: no zero
	 * written, fields in the writer's order, lowercase, no leading zero) */
	static const bool as_written[] = {
		[0] = true, [1] = true, [5] = true, [9] = true, [11] = true, [12] = true, [13] = true, [15] = true,
		[16] = true,
	};
	for (size_t b = 0; b < sizeof parse_lines / sizeof parse_lines[0]; b++) {
		good &= same_parse(base[b]);
		/* kept and found: the lines whose extra columns come last and
		 * have no msg (2, 6, 10, 16); the others have none, or msg, or a
		 * field among them, or a key too long to keep */
		good &= last_hit == (b == 1 || b == 5 || b == 9 || b == 15);
		good &= last_copied == (b < sizeof as_written && as_written[b]);
		if (!good)
			fprintf(stderr, "# base line %zu: hit %d, copied %d\n", b, last_hit, last_copied);
		tried++;
		for (int round = 0; round < 20000 && good; round++) {
			char line[512];
			snprintf(line, sizeof line, "%s", base[b]);
			size_t n = strlen(line);
			int edits = 1 + round % 3;
			for (int e = 0; e < edits; e++) {
				seed = seed * 1103515245 + 12345;
				size_t at = (seed >> 8) % (n + 1);
				seed = seed * 1103515245 + 12345;
				char c = alphabet[(seed >> 8) % (sizeof parse_alphabet - 1)];
				seed = seed * 1103515245 + 12345;
				int op = (int)((seed >> 8) % 3);
				if (op == 0 && at < n) { /* replace */
					line[at] = c;
				} else if (op == 1 && n + 1 < sizeof line) { /* insert */
					memmove(line + at + 1, line + at, n - at + 1);
					line[at] = c;
					n++;
				} else if (at < n) { /* delete */
					memmove(line + at, line + at + 1, n - at);
					n--;
				}
			}
			good &= same_parse(line);
			if (!good)
				fprintf(stderr, "# differs: '%s'\n", line);
			tried++;
		}
	}
	mt_textmemo_fini(&parse_memo);
	struct mt_err err = {0};
	mt_events_writer_finish(&copy_writer, &err);
	fclose(wf);
	free(wbuf);
	char msg[256];
	snprintf(msg, sizeof msg, "text parser: the fast path, with a memo of tails and without, agrees with the "
		 "general one on %u lines (%u memo hits); the %u lines it copied are the writer's bytes (%u more "
		 "are, left to the writer)", tried, memo_hits, copied_lines, same_uncopied);
	ok(good && copied_lines > 1000, msg);
}

/* A NUL anywhere in an event line is an error, whichever path the line
 * takes: found by the fast path's scan, and in a tail the memo has (the
 * line is parsed once whole, so its tail is kept, then with a NUL put in
 * at each byte in turn). */
static void test_parse_nul(void)
{
	static const char *const lines[] = {
		"-\t15568\t15568\tcall\t0x7ffff7fe4b73\t0x7ffff7fe5770\tinsn=2",
		"-\t1\t1\tcall\t0x7ffff7fe6722\t0x7ffff7fd0570\tinsn=348\tfrom_sym=dl_main\tfrom_off=0x762\t"
		"from_dso=/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\tto_sym=_dl_process_pt_gnu_property\t"
		"to_off=0x0\tto_dso=/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		"1\t2\t3\tjump\t0x1\t0x2",
	};
	struct mt_textmemo memo;
	bool good = mt_textmemo_init(&memo, 0);
	unsigned tried = 0;
	static struct mt_kv kv[MT_EVENT_MAX_EXTRA];
	for (size_t l = 0; l < sizeof lines / sizeof lines[0] && good; l++) {
		size_t n = strlen(lines[l]);
		char buf[512], copy[MT_EVENTS_COPY_MAX];
		struct mt_event ev;
		struct mt_err err = {0};
		bool copied;
		memcpy(buf, lines[l], n + 1);
		good &= mt_events_parse_line_copy(buf, n, &ev, kv, &memo, copy, &copied, &err) == 1;
		for (size_t i = 0; i < n && good; i++, tried++) {
			memcpy(buf, lines[l], n + 1);
			buf[i] = '\0';
			mt_err_clear(&err);
			memo.aside.skip = 0;
			good &= mt_events_parse_line_copy(buf, n, &ev, kv, &memo, copy, &copied, &err) == MT_EFORMAT &&
				!strcmp(err.msg, "a NUL byte in a text line") && !copied;
			if (!good)
				fprintf(stderr, "# line %zu, NUL at %zu: not an error\n", l, i);
		}
	}
	mt_textmemo_fini(&memo);
	char msg[128];
	snprintf(msg, sizeof msg, "text parser: a NUL at any of %u places in an event line is an error", tried);
	ok(good && tried > 300, msg);
}

/* Oracle: the writer encoding the event itself (raw NULL). An event read
 * with keep_raw and written with its raw bytes must give those same bytes,
 * whatever the record looked like: as mt writes it (copied), or not (fields
 * out of order, a varint longer than it needs, a zero written, a flag of 2,
 * a power event without cbr), where raw must not be used. */
static void test_write_raw(void)
{
	static const uint8_t magic[] = MT_EVENTS_MAGIC;
	/* Record{event}: 0x12 LEN, then the Event's fields */
	static const uint8_t recs[][24] = {
		{12, 0x12, 10, 0x08, 0x04, 0x10, 0x07, 0x18, 0x08, 0x20, 0x00, 0x28, 0x01}, /* no to: the writer writes it */
		{14, 0x12, 12, 0x08, 0x04, 0x10, 0x07, 0x18, 0x08, 0x20, 0x00, 0x28, 0x01, 0x30, 0x02}, /* as written */
		{14, 0x12, 12, 0x08, 0x04, 0x18, 0x08, 0x10, 0x07, 0x20, 0x00, 0x28, 0x01, 0x30, 0x02}, /* tid first */
		{15, 0x12, 13, 0x08, 0x04, 0x10, 0x87, 0x00, 0x18, 0x08, 0x20, 0x00, 0x28, 0x01, 0x30, 0x02}, /* long pid */
		{16, 0x12, 14, 0x08, 0x04, 0x10, 0x07, 0x18, 0x08, 0x20, 0x00, 0x28, 0x01, 0x30, 0x02, 0x40, 0x00}, /* insn 0 */
		{16, 0x12, 14, 0x10, 0x07, 0x18, 0x08, 0x20, 0x00, 0x28, 0x01, 0x30, 0x02, 0x58, 0x02, 0x08, 0x06}, /* cond 2, time last */
		{14, 0x12, 12, 0x10, 0x07, 0x18, 0x08, 0x20, 0x0b, 0x28, 0x01, 0x30, 0x02, 0x40, 0x05}, /* power, no cbr */
		{16, 0x12, 14, 0x08, 0x02, 0x10, 0x07, 0x18, 0x08, 0x20, 0x0b, 0x28, 0x01, 0x30, 0x02, 0x50, 0x09}, /* power, cbr: as written */
		{18, 0x12, 16, 0x08, 0x04, 0x10, 0x07, 0x18, 0x08, 0x20, 0x00, 0x28, 0x01, 0x30, 0x02, 0x40, 0x05, 0x78, 0x03}, /* insn, cyc: as written */
		{18, 0x12, 16, 0x08, 0x04, 0x10, 0x07, 0x18, 0x08, 0x20, 0x00, 0x28, 0x01, 0x30, 0x02, 0x78, 0x03, 0x40, 0x05}, /* cyc before insn */
		{16, 0x12, 14, 0x08, 0x04, 0x10, 0x07, 0x18, 0x08, 0x20, 0x00, 0x28, 0x01, 0x30, 0x02, 0x78, 0x00}, /* cyc 0 */
	};
	char *in = NULL;
	size_t inlen = 0;
	FILE *f = open_memstream(&in, &inlen);
	fwrite(magic, 1, MT_EVENTS_MAGIC_LEN, f);
	for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++)
		fwrite(recs[i], 1, (size_t)recs[i][0] + 1, f);
	fclose(f);
	struct mt_events_writer a, b;
	char *abuf, *bbuf;
	size_t alen, blen;
	FILE *fa = write_to_memory(&a, MT_EVENTS_BINARY, &abuf, &alen), *fb = write_to_memory(&b, MT_EVENTS_BINARY, &bbuf, &blen);
	struct mt_kv kv[] = {{"to_sym", "main"}};
	struct mt_events_cols cols = {.kv = kv, .n = 1, .id = 77};
	FILE *rin = fmemopen(in, inlen, "r");
	struct mt_events_reader r;
	struct mt_err err = {0};
	unsigned n = 0, used = 0;
	if (rin && !mt_events_reader_open(&r, rin, "mem", &err)) {
		r.keep_raw = true;
		struct mt_event ev;
		const char *meta;
		while (mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_EVENT) {
			used += r.raw.ok;
			mt_events_write_cols(&a, &ev, &r.raw, &cols, 1);
			mt_events_write_cols(&b, &ev, NULL, &cols, 1);
			n++;
		}
		mt_events_reader_close(&r);
	}
	if (rin)
		fclose(rin);
	mt_events_writer_finish(&a, &err);
	mt_events_writer_finish(&b, &err);
	fclose(fa);
	fclose(fb);
	ok(n == sizeof recs / sizeof recs[0] && used == 3 && alen == blen && !memcmp(abuf, bbuf, alen),
	   "binary writer: an event's raw bytes are copied only where they are the writer's own, the output the same");
	free(abuf);
	free(bbuf);
	free(in);
}

/* Oracle: the writer encoding every field (no raw bytes). A stream of a
 * few records over and over, with times whose deltas take 1 to 10 bytes
 * (and none), passed on by mt_events_write_cols with the reader's raw
 * bytes, as mt-symbolize does: the record found again, with the same
 * groups, is written from the writer's output memo. Each record gets one
 * of two from-groups (other ids, other columns), which change; 20,000
 * distinct records, each twice, in between make the reader keep other
 * records in its entries (a stale entry's bytes must not be written again); groups of twelve new strings
 * after each record fill the writer's string table, which is reset on
 * the way (three times: the memo's string ids then name other strings).
 * The stream written is the encoding one's, byte for byte, and the memo
 * found most records. */
static void test_write_out_memo(void)
{
	static const struct mt_kv from_a[] = {{"from_sym", "main"}, {"from_dso", "/bin/app"}};
	static const struct mt_kv from_b[] = {{"from_sym", "work"}, {"from_dso", "/lib/libc.so.6"}};
	static const struct mt_kv to_c[] = {{"to_sym", "strlen"}};
	static const uint64_t deltas[] = {0, 1, 0x7f, 0x80, 1u << 20, 1ULL << 35, 1ULL << 62};
	char *in = NULL;
	size_t inlen = 0;
	struct mt_events_writer w;
	struct mt_err err = {0};
	FILE *f = write_to_memory(&w, MT_EVENTS_BINARY, &in, &inlen);
	uint64_t time = 1000;
	const unsigned nloop = 60000, ndistinct = 20000;
	for (unsigned i = 0; i < nloop + ndistinct; i++) {
		/* in the middle, every other record a new one (so many
		 * misses would make the reader's memo stand aside) */
		bool distinct = i % 2 && i >= nloop / 2 && i < nloop / 2 + 2 * ndistinct;
		struct mt_event ev = {.pid = 7, .tid = 7 + i % 2, .cpu = -1, .kind = i % 3 ? MT_EV_CALL : MT_EV_RETURN,
				      .from = 0x401000 + i % 4, .to = 0x402000, .insn = 1 + i % 5,
				      .offset = MT_NO_OFFSET};
		if (distinct) { /* each twice: found again in the entry it took */
			ev.kind = MT_EV_CALL;
			ev.from = 0x401000;
			ev.to = 0x500000 + i / 4;
			ev.insn = 1;
		}
		uint64_t d = deltas[i % (sizeof deltas / sizeof *deltas)];
		ev.has_time = i % 11 != 0; /* untimed events now and then */
		if (ev.has_time) {
			time += d;
			ev.time = i % 13 == 5 ? time - 3 : time; /* and a delta back */
		}
		mt_events_write(&w, &ev);
	}
	mt_events_writer_finish(&w, &err);
	fclose(f);
	char *abuf, *bbuf;
	size_t alen, blen;
	struct mt_events_writer a, b;
	FILE *fa = write_to_memory(&a, MT_EVENTS_BINARY, &abuf, &alen);
	FILE *fb = write_to_memory(&b, MT_EVENTS_BINARY, &bbuf, &blen);
	FILE *rin = fmemopen(in, inlen, "r");
	struct mt_events_reader r;
	unsigned n = 0, fillers = 0, resets = 0;
	char vals[12][32];
	struct mt_kv filler[12];
	if (rin && !mt_events_reader_open(&r, rin, "mem", &err)) {
		r.keep_raw = true;
		struct mt_event ev;
		const char *meta;
		while (mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_EVENT) {
			/* a record's from-group changes every third time round */
			bool ga = n / 180 % 3 < 2;
			struct mt_events_cols cols[2] = {{.kv = ga ? from_a : from_b, .n = 2, .id = ga ? 11 : 12},
							 {.kv = to_c, .n = 1, .id = 13}};
			mt_events_write_cols(&a, &ev, &r.raw, cols, 2);
			mt_events_write_cols(&b, &ev, NULL, cols, 2);
			n++;
			{ /* a group of new strings: the table fills */
				for (unsigned k = 0; k < 12; k++) {
					snprintf(vals[k], sizeof vals[k], "v%u.%u", fillers, k);
					filler[k] = (struct mt_kv){"k", vals[k]};
				}
				struct mt_events_cols fc = {.kv = filler, .n = 12, .id = 100 + fillers++};
				mt_events_write_cols(&a, &ev, &r.raw, &fc, 1);
				mt_events_write_cols(&b, &ev, NULL, &fc, 1);
			}
		}
		mt_events_reader_close(&r);
	}
	if (rin)
		fclose(rin);
	uint64_t found = a.out_found;
	mt_events_writer_finish(&a, &err);
	mt_events_writer_finish(&b, &err);
	fclose(fa);
	fclose(fb);
	/* the resets, as a reader sees them: its string table's epochs */
	FILE *rout = fmemopen(abuf, alen, "r");
	if (rout && !mt_events_reader_open(&r, rout, "mem", &err)) {
		struct mt_event ev;
		const char *meta;
		uint64_t epoch = 0;
		while (mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_EVENT) {
			resets += epoch && ev.strings_epoch != epoch;
			epoch = ev.strings_epoch;
		}
		mt_events_reader_close(&r);
	}
	if (rout)
		fclose(rout);
	char name[160];
	snprintf(name, sizeof name, "binary writer's output memo: %u events, %" PRIu64 " found, %u table resets: "
		 "the stream is the encoding writer's", n, found, resets);
	ok(n == nloop + ndistinct && resets >= 2 && found > n / 2 && alen == blen && !memcmp(abuf, bbuf, alen), name);
	free(abuf);
	free(bbuf);
	free(in);
}

static uint64_t memo_found; /* the binary readers' record memo hits, all told */

/* Reads a whole binary stream: each result (rc, event, error message)
 * into a text summary, so two readings compare as strings. With w and
 * wraw: each event also written by mt_events_write_cols, by its fields
 * into w and with the reader's raw bytes into wraw. */
static size_t read_summary(const char *buf, size_t len, bool general, char *out, size_t cap,
			   struct mt_events_writer *w, struct mt_events_writer *wraw)
{
	FILE *f = fmemopen((void *)buf, len, "r");
	struct mt_events_reader r;
	struct mt_err err = {0};
	size_t used = 0;
	if (!f)
		return 0;
	if (mt_events_reader_open(&r, f, "mem", &err)) {
		fclose(f);
		return (size_t)snprintf(out, cap, "open %s", err.msg);
	}
	r.general_only = general;
	r.keep_raw = wraw != NULL;
	struct mt_kv kv[] = {{"to_sym", "f"}};
	struct mt_events_cols cols = {.kv = kv, .n = 1, .id = 5};
	for (;;) {
		struct mt_event ev;
		const char *meta = NULL;
		int rc = mt_events_read(&r, &ev, &meta, &err);
		int n = 0;
		if (rc == MT_EVENTS_EVENT) {
			n = snprintf(out + used, cap - used, "E %d %" PRIu64 " %u %u %d %d %" PRIx64 " %" PRIx64 " %" PRIu64
				     " %" PRIu64 " %d %d %" PRIx64 " %u %s %u",
				     ev.has_time, ev.has_time ? ev.time : 0, ev.pid, ev.tid, ev.cpu, (int)ev.kind, ev.from,
				     ev.to, ev.insn, ev.cyc, ev.cond, ev.async, ev.offset,
				     ev.kind == MT_EV_POWER ? ev.cbr : 0, ev.msg ? ev.msg : "-", ev.nextra);
			for (unsigned i = 0; i < ev.nextra && n > 0 && (size_t)n < cap - used; i++)
				n += snprintf(out + used + n, cap - used - n, " %s=%s", ev.extra[i].key,
					      ev.extra[i].val ? ev.extra[i].val : "(none)");
			if (w) {
				mt_events_write_cols(w, &ev, NULL, &cols, 1);
				mt_events_write_cols(wraw, &ev, &r.raw, &cols, 1);
			}
		} else if (rc == MT_EVENTS_META) {
			n = snprintf(out + used, cap - used, "M %s", meta);
		} else if (rc == MT_EVENTS_EOF) {
			n = snprintf(out + used, cap - used, "EOF");
		} else {
			n = snprintf(out + used, cap - used, "ERR %d %s", rc, err.msg);
		}
		if (n < 0 || (size_t)n + 2 > cap - used)
			break;
		used += (size_t)n;
		out[used++] = '\n';
		out[used] = 0;
		if (rc <= 0)
			break;
	}
	if (r.recmemo)
		memo_found += r.recmemo->found;
	mt_events_reader_close(&r);
	fclose(f);
	return used;
}

/* One stream read by the fast path (with the record memo) and by
 * protobuf-c into fast and slow; the fast reading's events also written
 * by their fields and with the reader's raw bytes: a differing reading
 * counted in *differ, differing writes in *rawdiff. */
static void same_readings(const char *buf, size_t n, char *fast, char *slow, size_t cap, unsigned *differ,
			  unsigned *rawdiff)
{
	char *ab, *bb;
	size_t al, bl;
	struct mt_events_writer wa, wb;
	struct mt_err err = {0};
	FILE *fa = write_to_memory(&wa, MT_EVENTS_BINARY, &ab, &al);
	FILE *fb = write_to_memory(&wb, MT_EVENTS_BINARY, &bb, &bl);
	read_summary(buf, n, false, fast, cap, &wa, &wb);
	read_summary(buf, n, true, slow, cap, NULL, NULL);
	mt_events_writer_finish(&wa, &err);
	mt_events_writer_finish(&wb, &err);
	fclose(fa);
	fclose(fb);
	*differ += strcmp(fast, slow) != 0;
	*rawdiff += al != bl || memcmp(ab, bb, al);
	free(ab);
	free(bb);
}

/* Oracle: protobuf-c (the reader's general path). A binary stream as mt
 * writes it, then with every byte of every record changed to values that
 * matter to varints and tags (0, 1, 0x7f, 0x80, 0xff, the byte +-1, its
 * top bit flipped), whole and cut right after the changed record (no bytes
 * past it to read ahead into): the fast path reads the same events and
 * errors as protobuf-c, and a filter passing events on with the reader's
 * raw bytes writes the same stream as one encoding every field. */
static void test_binary_fast_path(void)
{
	static const struct mt_kv kv1[] = {{"from_sym", "main"}, {"to_sym", "strcmp"}, {"flag", NULL}};
	struct mt_event in[] = {
		{.pid = 3794, .tid = 3794, .cpu = -1, .kind = MT_EV_CALL, .from = 0x7ffff7fd845c, .to = 0x7ffff7fd3970,
		 .insn = 109, .offset = MT_NO_OFFSET},
		{.pid = 3794, .tid = 3794, .cpu = -1, .kind = MT_EV_RETURN, .from = 0x7ffff7fd3980, .to = 0x7ffff7fd8461,
		 .offset = MT_NO_OFFSET}, /* to last: a varint made longer runs past the record */
		{.pid = 3794, .tid = 70000, .cpu = -1, .kind = MT_EV_RETURN, .from = 0x401000, .to = 0x55555555a123,
		 .insn = 3, .offset = MT_NO_OFFSET, .extra = kv1, .nextra = 3},
		{.time = 5000000000ULL, .has_time = true, .pid = 7, .tid = 8, .cpu = 1, .kind = MT_EV_CALL,
		 .from = 0x401000, .to = 0xffffffff81000000ULL, .insn = 3, .cyc = 1ULL << 40, .offset = MT_NO_OFFSET,
		 .extra = kv1, .nextra = 2},
		{.time = 4999999990ULL, .has_time = true, .pid = 7, .tid = 8, .cpu = -1, .kind = MT_EV_RETURN,
		 .from = 0x7fffffffffff, .to = 0x80, .offset = 12, .extra = kv1, .nextra = 1},
		{.time = 4999999990ULL + 200, .has_time = true, .pid = 1u << 28, .tid = 1, .cpu = 0, .kind = MT_EV_ERROR,
		 .offset = 0, .msg = "overflow"},
		{.pid = 1, .tid = 1, .cpu = 0, .kind = MT_EV_TRACE_END, .async = true, .cond = true,
		 .offset = MT_NO_OFFSET},
		{.time = 1, .has_time = true, .cpu = 3, .kind = MT_EV_POWER, .cbr = 33, .offset = MT_NO_OFFSET},
		{.pid = 3794, .tid = 3795, .cpu = -1, .kind = MT_EV_CALL, .from = 0x7ffff7fd845c, .to = 0x7ffff7fd3970,
		 .offset = MT_NO_OFFSET},
	};
	const size_t nin = sizeof in / sizeof in[0];
	char *buf;
	size_t len;
	struct mt_events_writer w;
	FILE *f = write_to_memory(&w, MT_EVENTS_BINARY, &buf, &len);
	for (size_t i = 0; i < nin; i++)
		mt_events_write(&w, &in[i]);
	struct mt_err err = {0};
	mt_events_writer_finish(&w, &err);
	fclose(f);
	const size_t cap = 1u << 16;
	char *fast = malloc(cap), *slow = malloc(cap), *copy = malloc(len);
	int good = fast && slow && copy;
	unsigned tried = 0, differ = 0, rawdiff = 0, events = 0;
	/* the records: a varint length, then the body */
	for (size_t at = MT_EVENTS_MAGIC_LEN; good && at < len;) {
		size_t rl = 0, hdr = 0;
		for (unsigned s = 0; at + hdr < len; s += 7) {
			uint8_t b = (uint8_t)buf[at + hdr++];
			rl |= (size_t)(b & 0x7f) << s;
			if (!(b & 0x80))
				break;
		}
		static const int vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff, -1, -2, -3};
		for (size_t j = at; j < at + hdr + rl; j++) {
			for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
				memcpy(copy, buf, len);
				uint8_t o = (uint8_t)buf[j];
				copy[j] = (char)(vals[v] == -1 ? o + 1 : vals[v] == -2 ? o - 1 : vals[v] == -3 ? o ^ 0x80 : vals[v]);
				if ((uint8_t)copy[j] == o && vals[v] >= 0)
					continue;
				for (int cut = 0; cut < 2; cut++) {
					size_t n = cut ? at + hdr + rl : len;
					tried++;
					unsigned d = differ, rd = rawdiff;
					same_readings(copy, n, fast, slow, cap, &differ, &rawdiff);
					if (differ > d && differ <= 3)
						fprintf(stderr, "# record at %zu, byte %zu = 0x%02x%s:\nfast:\n%sprotobuf-c:\n%s", at, j,
							(uint8_t)copy[j], cut ? ", cut after" : "", fast, slow);
					if (rawdiff > rd && rawdiff <= 3)
						fprintf(stderr, "# record at %zu, byte %zu = 0x%02x: raw copy differs\n", at, j,
							(uint8_t)copy[j]);
				}
			}
		}
		at += hdr + rl;
	}
	read_summary(buf, len, false, fast, cap, NULL, NULL);
	for (const char *q = fast; (q = strstr(q, "E ")); q++)
		events += q == fast || q[-1] == '\n';
	char msg[160];
	snprintf(msg, sizeof msg,
		 "binary fast path = protobuf-c on %u changed streams (%u differ), raw copies = encoding (%u differ)",
		 tried, differ, rawdiff);
	ok(good && events == nin && tried > 2000 && !differ && !rawdiff, msg);
	free(fast);
	free(slow);
	free(copy);
	free(buf);
}

/* Oracle: protobuf-c, on records that repeat (the record memo's hits).
 * test_binary_fast_path's stream, then each of its Event records again,
 * every byte of its fields changed as there (the record framed anew), four
 * times: without a time, with a time, with a time as a longer varint than
 * needed (not what the writer writes: the raw bytes not passed on), and
 * without a time again; the four read the same as protobuf-c reads them,
 * the raw copies too, and where all four are events the memo found the
 * last three (unless a byte changed to 0x08 made a time field late:
 * such records are not kept). */
static void test_binary_record_memo(void)
{
	static const struct mt_kv kv1[] = {{"from_sym", "main"}, {"to_sym", "strcmp"}, {"flag", NULL}};
	struct mt_event in[] = {
		{.pid = 3794, .tid = 3794, .cpu = -1, .kind = MT_EV_CALL, .from = 0x7ffff7fd845c, .to = 0x7ffff7fd3970,
		 .insn = 109, .offset = MT_NO_OFFSET, .extra = kv1, .nextra = 3},
		{.time = 5000000000ULL, .has_time = true, .pid = 7, .tid = 8, .cpu = 1, .kind = MT_EV_RETURN,
		 .from = 0x401000, .to = 0xffffffff81000000ULL, .insn = 3, .cyc = 1ULL << 40, .offset = MT_NO_OFFSET,
		 .extra = kv1, .nextra = 2},
		{.time = 5000000200ULL, .has_time = true, .pid = 1u << 28, .tid = 1, .cpu = 0, .kind = MT_EV_ERROR,
		 .offset = 0, .msg = "overflow"},
		{.pid = 1, .tid = 1, .cpu = 0, .kind = MT_EV_TRACE_END, .async = true, .cond = true,
		 .offset = MT_NO_OFFSET},
		{.time = 1, .has_time = true, .cpu = 3, .kind = MT_EV_POWER, .cbr = 33, .offset = MT_NO_OFFSET},
	};
	const size_t nin = sizeof in / sizeof in[0];
	char *buf;
	size_t len;
	struct mt_events_writer w;
	struct mt_err err = {0};
	FILE *f = write_to_memory(&w, MT_EVENTS_BINARY, &buf, &len);
	for (size_t i = 0; i < nin; i++)
		mt_events_write(&w, &in[i]);
	mt_events_writer_finish(&w, &err);
	fclose(f);
	/* the Event records' fields after the time, as the writer wrote them */
	uint8_t keys[8][128];
	size_t klen[8], nkeys = 0;
	for (size_t at = MT_EVENTS_MAGIC_LEN; at + 3 <= len && nkeys < 8;) {
		const uint8_t *r = (const uint8_t *)buf + at;
		size_t rl = r[0]; /* these records are short: one-byte lengths */
		if (rl >= 0x80)
			break;
		if (r[1] == 0x12 && r[2] == rl - 2 && rl - 2 < sizeof keys[0]) {
			const uint8_t *b = r + 3, *e = r + 1 + rl;
			if (*b == 0x08)
				for (b++; b < e && *b++ & 0x80;)
					;
			klen[nkeys] = (size_t)(e - b);
			memcpy(keys[nkeys], b, klen[nkeys]);
			nkeys++;
		}
		at += 1 + rl;
	}
	static const uint8_t times[4][4] = {{0}, {2, 0x08, 0x04}, {3, 0x08, 0x85, 0x00}, {0}};
	const size_t cap = 1u << 16;
	char *fast = malloc(cap), *slow = malloc(cap), *copy = malloc(len + 4 * 200);
	unsigned tried = 0, differ = 0, rawdiff = 0, whole = 0;
	uint64_t found0 = memo_found;
	for (size_t k = 0; copy && fast && slow && k < nkeys; k++) {
		/* -4: unchanged; 0x08: a time field, late */
		static const int vals[] = {-4, 0x00, 0x01, 0x08, 0x7f, 0x80, 0xff, -1, -2, -3};
		for (size_t j = 0; j < klen[k]; j++) {
			for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
				if (vals[v] == -4 && j)
					continue;
				uint8_t key[128];
				memcpy(key, keys[k], klen[k]);
				uint8_t o = key[j];
				if (vals[v] != -4)
					key[j] = (uint8_t)(vals[v] == -1 ? o + 1 : vals[v] == -2 ? o - 1
						      : vals[v] == -3 ? o ^ 0x80 : vals[v]);
				memcpy(copy, buf, len);
				size_t n = len;
				for (int t = 0; t < 4; t++) {
					size_t tl = times[t][0], bl = tl + klen[k];
					copy[n++] = (char)(bl + 2);
					copy[n++] = 0x12;
					copy[n++] = (char)bl;
					memcpy(copy + n, times[t] + 1, tl);
					memcpy(copy + n + tl, key, klen[k]);
					n += bl;
				}
				tried++;
				unsigned d = differ, rd = rawdiff;
				same_readings(copy, n, fast, slow, cap, &differ, &rawdiff);
				unsigned events = 0;
				for (const char *q = slow; (q = strstr(q, "E ")); q++)
					events += q == slow || q[-1] == '\n';
				/* all four read: the last three are the memo's (but
				 * where a time field came late: not kept) */
				whole += events == nin + 4 && vals[v] != 0x08;
				if (differ > d && differ <= 3)
					fprintf(stderr, "# record %zu, byte %zu = 0x%02x:\nfast:\n%sprotobuf-c:\n%s", k, j,
						key[j], fast, slow);
				if (rawdiff > rd && rawdiff <= 3)
					fprintf(stderr, "# record %zu, byte %zu = 0x%02x: raw copy differs\n", k, j, key[j]);
			}
		}
	}
	char msg[200];
	snprintf(msg, sizeof msg,
		 "record memo = protobuf-c on %u streams of repeated records (%u differ), raw copies = encoding "
		 "(%u differ); %u read whole, %" PRIu64 " found",
		 tried, differ, rawdiff, whole, memo_found - found0);
	ok(nkeys == nin && tried > 500 && !differ && !rawdiff && whole > 100 && memo_found - found0 >= 3 * whole,
	   msg);
	free(fast);
	free(slow);
	free(copy);
	free(buf);
}

/* One text stream read by a reader with its line memo and one without:
 * the same results (rc, event, error), the same copies passed on. */
static int same_reading(const char *text, size_t len, unsigned *events, unsigned *copies, uint64_t *found)
{
	FILE *fa = fmemopen((void *)text, len, "r"), *fb = fmemopen((void *)text, len, "r");
	struct mt_events_reader ra, rb;
	struct mt_err xa = {0}, xb = {0};
	int good = fa && fb && !mt_events_reader_open(&ra, fa, "mem", &xa) && !mt_events_reader_open(&rb, fb, "mem", &xb);
	if (!good) {
		if (fa)
			fclose(fa);
		if (fb)
			fclose(fb);
		return 0;
	}
	good = ra.linememo != NULL && ra.textmemo && rb.textmemo;
	/* a small tail memo: it fills and starts over (a new epoch) often,
	 * and the line memo must not keep what pointed into it */
	if (good) {
		mt_textmemo_fini(ra.textmemo);
		mt_textmemo_fini(rb.textmemo);
		good = mt_textmemo_init(ra.textmemo, 16 << 10) && mt_textmemo_init(rb.textmemo, 16 << 10);
	}
	mt_linememo_fini(rb.linememo);
	free(rb.linememo);
	rb.linememo = NULL;
	ra.keep_raw = rb.keep_raw = true;
	for (;;) {
		struct mt_event ea, eb;
		const char *ma = NULL, *mb = NULL;
		int a = mt_events_read(&ra, &ea, &ma, &xa), b = mt_events_read(&rb, &eb, &mb, &xb);
		if (a != b || (a < 0 && strcmp(xa.msg, xb.msg)) || (a == MT_EVENTS_META && strcmp(ma, mb))) {
			fprintf(stderr, "# after %u events: %d '%s' / %d '%s'\n", *events, a, a < 0 ? xa.msg : "",
				b, b < 0 ? xb.msg : "");
			good = 0;
			break;
		}
		if (a != MT_EVENTS_EVENT)
			break;
		(*events)++;
		if (!same_parsed(1, &ea, &xa, 1, &eb, &xb) || ra.raw.line_ok != rb.raw.line_ok ||
		    (ra.raw.line_ok && (ra.raw.line_len != rb.raw.line_len ||
					memcmp(ra.raw.line, rb.raw.line, ra.raw.line_len)))) {
			fprintf(stderr, "# event %u differs: copied %d/%d, line %" PRIu64 "\n", *events, ra.raw.line_ok,
				rb.raw.line_ok, ra.line);
			good = 0;
			break;
		}
		*copies += ra.raw.line_ok;
	}
	if (ra.linememo)
		*found += ra.linememo->found;
	mt_events_reader_close(&ra);
	mt_events_reader_close(&rb);
	fclose(fa);
	fclose(fb);
	return good;
}

/* Oracle: the reader without its line memo (each line parsed whole). The
 * fast-path test's lines, changed at random, each with its time column
 * replaced by times the memo takes and times it leaves ("-", digits with
 * and without leading zeros, 20 and 21 digits, none, a letter): lines that
 * parse go into one stream (repeats: the memo's hits, with other times),
 * lines that are errors into a stream each. */
static void test_line_memo(void)
{
	/* the fast-path test's lines, and two more: a symbolized line, and more
	 * extra columns than the memo keeps */
	static const char *const more[] = {
		"-\t1\t1\tcall\t0x7ffff7fe6722\t0x7ffff7fd0570\tinsn=348\tfrom_sym=dl_main\tfrom_off=0x762\t"
		"from_dso=/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\tto_sym=_dl_process_pt_gnu_property\t"
		"to_off=0x0\tto_dso=/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		"1\t1\t1\tcall\t0x1\t0x2\tinsn=3\ta=1\tb=2\tc=3\td=4\te=5\tf=6\tg=7\th=8\ti=9\tj=10\tk=11\tl=12\tm=13"
		"\tn=14\to=15\tp=16\tq=17\tr=18",
	};
	const size_t nparse = sizeof parse_lines / sizeof parse_lines[0];
	static const char *const times[] = {"-", "5", "0", "007", "18446744073709551615", "123456789012345678901",
					    "", "12a", "99999999999999999999"};
	const char head[] = "# mt-events 1\n";
	size_t cap = 64u << 20, used = 0;
	char *big = malloc(cap), one[4096];
	unsigned seed = 777, events = 0, copies = 0, errors = 0, lines = 0;
	uint64_t found = 0;
	if (!big) {
		ok(0, "text reader: line memo (out of memory)");
		return;
	}
	int good = 1;
	memcpy(big, head, sizeof head - 1);
	used = sizeof head - 1;
	static struct mt_kv kv[MT_EVENT_MAX_EXTRA];
	for (size_t b = 0; b < nparse + sizeof more / sizeof more[0] && good; b++) {
		for (int round = 0; round < 3000 && good; round++) {
			char line[1024];
			snprintf(line, sizeof line, "%s", b < nparse ? parse_lines[b] : more[b - nparse]);
			size_t n = strlen(line);
			for (int e = 0; round && e < 1 + round % 3; e++) {
				seed = seed * 1103515245 + 12345;
				size_t at = (seed >> 8) % (n + 1);
				seed = seed * 1103515245 + 12345;
				char c = parse_alphabet[(seed >> 8) % (sizeof parse_alphabet - 1)];
				if (at < n && round % 2)
					line[at] = c;
				else if (n + 1 < sizeof line) {
					memmove(line + at + 1, line + at, n - at + 1);
					line[at] = c;
					n++;
				}
			}
			const char *rest = strchr(line, '\t');
			for (size_t t = 0; t < sizeof times / sizeof times[0] && good; t++) {
				char v[1200];
				int vn = rest ? snprintf(v, sizeof v, "%s%s", times[t], rest) : snprintf(v, sizeof v, "%s", line);
				if (vn <= 0 || (size_t)vn >= sizeof v || v[0] == '#')
					continue;
				char probe[1200];
				memcpy(probe, v, (size_t)vn + 1);
				struct mt_event ev;
				struct mt_err err = {0};
				int rc = mt_events_parse_line_general(probe, (size_t)vn, &ev, kv, &err);
				lines++;
				if (rc < 0 && errors < 4000) {
					errors++;
					int on = snprintf(one, sizeof one, "%s%s\n", head, v);
					good &= same_reading(one, (size_t)on, &events, &copies, &found);
					if (!good)
						fprintf(stderr, "# differs (alone): '%s'\n", v);
				} else if (rc >= 0 && used + (size_t)vn + 1 < cap) {
					memcpy(big + used, v, (size_t)vn);
					big[used + (size_t)vn] = '\n';
					used += (size_t)vn + 1;
				}
				if (!rest)
					break;
			}
		}
	}
	/* the good lines twice over (the memo holds only the latest of many) */
	if (good && 2 * used < cap) {
		memcpy(big + used, big + sizeof head - 1, used - (sizeof head - 1));
		used += used - (sizeof head - 1);
	}
	good &= same_reading(big, used, &events, &copies, &found);
	/* lines whose columns are the tail memo's, then enough other tails
	 * to fill it (it starts over), then the first lines again: the line
	 * memo must not hand out the columns the tail memo let go (it did,
	 * with its check of the tail memo's epoch taken out) */
	used = 0;
	memcpy(big, head, sizeof head - 1);
	used = sizeof head - 1;
	for (int k = 0; k < 20; k++)
		used += (size_t)snprintf(big + used, cap - used,
					 "%d\t1\t1\tcall\t0x%x\t0x20\tinsn=3\tto_sym=first_%d\tto_off=0x0\tto_dso=/lib/a.so\n",
					 k, 0x1000 + k, k);
	for (int j = 0; j < 400; j++)
		used += (size_t)snprintf(big + used, cap - used,
					 "-\t2\t2\treturn\t0x%x\t0x30\tinsn=4\tfrom_sym=other_%d_%0100d\tfrom_off=0x1\n",
					 0x9000 + j, j, j);
	for (int k = 0; k < 20; k++)
		used += (size_t)snprintf(big + used, cap - used,
					 "%d\t1\t1\tcall\t0x%x\t0x20\tinsn=3\tto_sym=first_%d\tto_off=0x0\tto_dso=/lib/a.so\n",
					 100 + k, 0x1000 + k, k);
	good &= same_reading(big, used, &events, &copies, &found);
	free(big);
	char msg[200];
	snprintf(msg, sizeof msg,
		 "text reader: with its line memo, the same events, errors and copies as without (%u lines, %u events, "
		 "%" PRIu64 " from the memo, %u copied, %u errors)", lines, events, found, copies, errors);
	ok(good && events > 100000 && found > 10000 && copies > 10000 && errors > 1000, msg);
}

/* The pipe test's event i (pad: the bytes of its pad column). */
static struct mt_event pipe_event(unsigned i, struct mt_kv *kv, char *pad)
{
	size_t n = (i * 37u) % 301;
	memset(pad, 'a' + (char)(i % 26), n);
	pad[n] = '\0';
	kv[0] = (struct mt_kv){"pad", pad};
	/* lines repeat (the line memo finds them) and differ in length */
	return (struct mt_event){.pid = 1, .tid = 2, .cpu = -1, .kind = MT_EV_CALL, .from = 0x1000 + i % 1000,
				 .to = 0x2000 + i % 777, .insn = i % 977, .offset = MT_NO_OFFSET, .extra = kv,
				 .nextra = 1};
}

/* A child writes len bytes to fd in uneven pieces (a pipe's reader sees
 * them arrive at any point of a line or record). */
static pid_t write_pieces(int fd, const char *bytes, size_t len)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid)
		return pid;
	for (size_t at = 0, k = 0; at < len; k++) {
		size_t n = 1 + (k * 7919u) % 70000;
		if (n > len - at)
			n = len - at;
		ssize_t w = write(fd, bytes + at, n);
		if (w <= 0)
			_exit(1);
		at += (size_t)w;
	}
	_exit(0);
}

/* Oracle: the events and lines the test wrote. A stream read from a pipe
 * is read in the read-ahead's ring itself (no copy): tens of MiB, so the
 * ring wraps with lines and records across its end; a line or record
 * longer than the ring (9 MiB) goes through the reader's own buffer, and
 * the ring is read in place again once that is drained; a text stream's
 * last line without a newline. */
static void test_pipe_reader(enum mt_events_format fmt)
{
	enum { N = 120000, TAIL_METAS = 2000000 };
	static char pad[400];
	struct mt_kv kv[1];
	char *buf;
	size_t len;
	struct mt_events_writer w;
	FILE *f = write_to_memory(&w, fmt, &buf, &len);
	for (unsigned i = 0; i < N; i++) {
		struct mt_event ev = pipe_event(i, kv, pad);
		mt_events_write(&w, &ev);
	}
	struct mt_err err = {0};
	mt_events_writer_finish(&w, &err);
	fclose(f);
	/* then the long meta line or record; after it the events again (text:
	 * a stream of its own, with its own first line) or many short meta
	 * records (binary), and (text) an event without its newline */
	size_t big = 9u << 20;
	char *meta = malloc(big + 1);
	memset(meta, 'm', big);
	meta[big] = '\0';
	char *all = malloc(2 * len + big + 16 * (size_t)TAIL_METAS);
	memcpy(all, buf, len);
	size_t n = len;
	unsigned want_metas;
	if (fmt == MT_EVENTS_TEXT) {
		n += (size_t)sprintf(all + n, "# ");
		memcpy(all + n, meta, big);
		n += big;
		all[n++] = '\n';
		memcpy(all + n, buf, len);
		n += len;
		n += (size_t)sprintf(all + n, "-\t1\t2\tcall\t0x5\t0x6");
		want_metas = 1;
	} else {
		for (unsigned k = 0; k <= TAIL_METAS; k++) {
			char small[16];
			snprintf(small, sizeof small, "m%u", k);
			Mt__Record rec = MT__RECORD__INIT;
			rec.record_case = MT__RECORD__RECORD_META;
			rec.meta = k ? small : meta;
			size_t rl = protobuf_c_message_get_packed_size(&rec.base);
			n = (size_t)(mt_pb_varint((uint8_t *)all + n, rl) - (uint8_t *)all);
			n += protobuf_c_message_pack(&rec.base, (uint8_t *)all + n);
		}
		want_metas = 1 + TAIL_METAS;
	}
	int p[2];
	if (pipe(p))
		exit(1);
	pid_t pid = write_pieces(p[1], all, n);
	close(p[1]);
	FILE *in = fdopen(p[0], "r");
	struct mt_events_reader r;
	mt_err_clear(&err);
	bool good = !mt_events_reader_open(&r, in, "pipe", &err);
	bool in_ring = good && r.direct && mt_readahead_mirrored(r.ra) >= MT_READAHEAD_SIZE, own_at_big = false,
	     in_ring_after = false, last = fmt != MT_EVENTS_TEXT;
	unsigned i = 0, metas = 0;
	struct mt_event ev;
	const char *m;
	int rc;
	while (good && (rc = mt_events_read(&r, &ev, &m, &err)) > 0) {
		if (rc == MT_EVENTS_META) {
			if (!strncmp(m, "mt-events", 9))
				continue;
			if (metas == 0) {
				good = i == N && strlen(m) == big && strspn(m, "m") == big;
				own_at_big = !r.direct;
			} else {
				char small[16];
				snprintf(small, sizeof small, "m%u", metas);
				good = !strcmp(m, small);
				in_ring_after = r.direct;
			}
			metas++;
			continue;
		}
		if (i == 2 * N) {
			last = ev.from == 5 && ev.to == 6 && ev.nextra == 0;
			i++;
			continue;
		}
		if (metas)
			in_ring_after = r.direct;
		else
			in_ring &= r.direct;
		struct mt_event want = pipe_event(i % N, kv, pad);
		good = i < 2 * N && same_event(&ev, &want);
		i++;
	}
	good &= !err.code && i == (fmt == MT_EVENTS_TEXT ? 2 * N + 1 : N) && metas == want_metas && last;
	mt_events_reader_close(&r);
	fclose(in);
	int status;
	waitpid(pid, &status, 0);
	const char *name = fmt == MT_EVENTS_TEXT ? "text" : "binary";
	char msg[200];
	snprintf(msg, sizeof msg, "%s from a pipe (%zu bytes): every event and line as written", name, n);
	ok(good, msg);
	snprintf(msg, sizeof msg,
		 "%s from a pipe: read in the ring itself, the 9 MiB one in the reader's buffer, the ring again after",
		 name);
	ok(in_ring && own_at_big && in_ring_after, msg);
	free(all);
	free(meta);
	free(buf);
}

/* Oracle: the same events written by mt_events_write_cols each time. A
 * filter's bytes kept in the line memo's slots (mt_events_write_cols_kept,
 * mt_events_write_kept) give the same stream: lines repeated with other
 * times ("-" too), a tag changed midway with the columns it stands for
 * (what was kept before must not be used), more distinct lines than the
 * memo holds (slots taken by other lines must not give the old bytes). */
static void test_write_kept(void)
{
	char *ibuf;
	size_t ilen;
	struct mt_events_writer in;
	FILE *fi = write_to_memory(&in, MT_EVENTS_TEXT, &ibuf, &ilen);
	enum { N = 200000 };
	for (unsigned i = 0; i < N; i++) {
		/* the first half from 300 lines, the second from 40,000 */
		unsigned k = i < N / 2 ? (i * 7u) % 300 : (i * 7919u) % 40000;
		struct mt_event ev = {.time = 1000 + i, .has_time = i % 5 != 0, .pid = 1, .tid = 1 + k % 3,
				      .cpu = -1, .kind = MT_EV_CALL, .from = 0x1000 + k, .to = 0x5000 + k % 97,
				      .insn = k % 13, .offset = MT_NO_OFFSET};
		mt_events_write(&in, &ev);
	}
	struct mt_events_reader r;
	struct mt_err err = {0};
	FILE *f = read_back(&in, fi, &ibuf, &ilen, &r, &err);
	r.keep_raw = true;
	char *abuf, *bbuf;
	size_t alen, blen;
	struct mt_events_writer a, b;
	FILE *fa = write_to_memory(&a, MT_EVENTS_TEXT, &abuf, &alen), *fb = write_to_memory(&b, MT_EVENTS_TEXT, &bbuf, &blen);
	struct mt_event ev;
	const char *meta;
	unsigned events = 0, kept = 0;
	while (mt_events_read(&r, &ev, &meta, &err) == MT_EVENTS_EVENT) {
		uint64_t tag = events < N / 4 ? 1 : 2; /* the "mapping" changes a quarter through */
		char name[32], off[32];
		snprintf(name, sizeof name, "f%" PRIx64 "_%" PRIu64, ev.to, tag);
		snprintf(off, sizeof off, "0x%" PRIx64, ev.from & 0xff);
		struct mt_kv kv[2] = {{"to_sym", name}, {"from_off", off}};
		struct mt_events_cols cols = {.kv = kv, .n = 2};
		events++;
		mt_events_write_cols(&b, &ev, &r.raw, &cols, 1);
		if (mt_events_write_kept(&a, &ev, &r.raw, tag)) {
			kept++;
			continue;
		}
		mt_events_write_cols_kept(&a, &ev, &r.raw, &cols, 1, tag);
	}
	mt_events_reader_close(&r);
	fclose(f);
	mt_events_writer_finish(&a, &err);
	mt_events_writer_finish(&b, &err);
	fclose(fa);
	fclose(fb);
	char msg[200];
	snprintf(msg, sizeof msg, "text writer: bytes kept in the line memo's slots give the same stream (%u events, "
		 "%u from the slots)", events, kept);
	ok(!err.code && events == N && kept > N / 3 && alen == blen && !memcmp(abuf, bbuf, alen), msg);
	free(ibuf);
	free(abuf);
	free(bbuf);
}

int main(void)
{
	test_write_kept();
	signal(SIGPIPE, SIG_IGN);
	test_pipe_reader(MT_EVENTS_TEXT);
	test_pipe_reader(MT_EVENTS_BINARY);
	test_line_memo();
	test_binary_fast_path();
	test_binary_record_memo();
	test_write_raw();
	test_write_out_memo();
	test_parse_fast_path();
	test_parse_nul();
	test_write_cols(MT_EVENTS_TEXT);
	test_write_cols(MT_EVENTS_BINARY);
	test_events_roundtrip();
	test_events_binary();
	test_writer_string_epochs();
	test_text_value_cleaning();
	return tap_done();
}
