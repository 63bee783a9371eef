/* Unit tests of the timeline's writers behind their ops table
 * (timeline/write_*.c through pftrace.c), TAP output. One thread's slices,
 * an instant and a counter value are given to each format; oracles: the
 * Perfetto trace decoded with protobuf-c from proto/perfetto_trace.proto
 * (every event's type, name and absolute time, slices nested as given);
 * the JSON parsed by python3's json module and its B/E/i/C events compared
 * with the times given (perfetto-output.md section 8: microseconds with
 * 3 decimals); speedscope's file parsed by python3 and its profiles,
 * events, samples and frames compared with what was given, by hand; FXT's records walked by their size fields to the end of the
 * file (section 7), its string and event records counted; the stacks text
 * line for line as magic-trace's test format writes it (times as Core's
 * Time_ns.Span.to_string_hum: ns, us, ms, s, at most 3 decimals). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfetto_trace.pb-c.h"
#include "timeline/pftrace.h"

#include "tap.h"

#define BASE ((uint64_t)1000000)

/* A trace of one format written to memory, and the sink that feeds it. */
struct memtrace {
	char *buf;
	size_t len;
	FILE *f;
	struct mt_pftrace *pf;
	struct mt_cs_sink s;
};

static void memtrace_open(struct memtrace *m, enum mt_pftrace_format format)
{
	m->buf = NULL;
	m->f = open_memstream(&m->buf, &m->len);
	m->pf = mt_pftrace_new(m->f, format, false);
	mt_pftrace_sink(m->pf, &m->s);
}

/* Ends the trace (st: its statistics, may be NULL); 0 or the writer's error. */
static int memtrace_close(struct memtrace *m, struct mt_pftrace_stats *st)
{
	struct mt_err err = {0};
	int rc = mt_pftrace_finish(m->pf, st, &err);
	fclose(m->f);
	return rc;
}

/* The scenario: main [0, 50), work [10, 30), an instant at 35, a counter at 5. */
static char *write_format(enum mt_pftrace_format format, size_t *len)
{
	struct memtrace m;
	memtrace_open(&m, format);
	mt_pftrace_meta(m.pf, "comm\t1\t1\tapp");
	mt_pftrace_meta(m.pf, "comm\t1\t2\tworker");
	struct mt_cs_sink s = m.s;
	struct mt_cs_thread th = {.pid = 1, .tid = 2, .base = BASE};
	struct mt_cs_frame fmain = {.name = "main", .ip = 0x401000, .id = 1};
	struct mt_cs_frame fwork = {.name = "work", .ip = 0x401100, .id = 2};
	s.begin(s.ctx, &th, 0, &fmain);
	if (s.counter)
		s.counter(s.ctx, &th, 5, "CPU", 2000);
	s.begin(s.ctx, &th, 10, &fwork);
	s.end(s.ctx, &th, 30, "work", 2);
	s.instant(s.ctx, &th, 35, "err");
	s.end(s.ctx, &th, 50, "main", 1);
	int rc = memtrace_close(&m, NULL);
	*len = m.len;
	if (rc) {
		free(m.buf);
		return NULL;
	}
	return m.buf;
}

static void test_perfetto(void)
{
	size_t len;
	char *buf = write_format(MT_PFTRACE_PROTO, &len);
	Perfetto__Protos__Trace *t = buf ? perfetto__protos__trace__unpack(NULL, len, (uint8_t *)buf) : NULL;
	char got[512] = "";
	const char *names[8] = {0};
	uint64_t now = 0;
	bool thread_named = false;
	for (size_t i = 0; t && i < t->n_packet; i++) {
		const Perfetto__Protos__TracePacket *p = t->packet[i];
		if (p->track_descriptor && p->track_descriptor->thread)
			thread_named = !strcmp(p->track_descriptor->thread->thread_name, "worker");
		if (p->has_timestamp_clock_id && p->timestamp_clock_id == 6 && p->has_trusted_packet_sequence_id &&
		    p->trusted_packet_sequence_id != 1)
			now = p->timestamp; /* the sequence's first packet: absolute */
		if (p->interned_data)
			for (size_t k = 0; k < p->interned_data->n_event_names; k++)
				if (p->interned_data->event_names[k]->iid < 8)
					names[p->interned_data->event_names[k]->iid] = p->interned_data->event_names[k]->name;
		if (!p->track_event)
			continue;
		now += p->timestamp; /* incremental clock */
		const Perfetto__Protos__TrackEvent *e = p->track_event;
		char one[64];
		snprintf(one, sizeof one, "%d:%s@%" PRIu64 " ", (int)e->type,
			 e->has_name_iid && e->name_iid < 8 && names[e->name_iid] ? names[e->name_iid] : "-", now - BASE);
		strncat(got, one, sizeof got - strlen(got) - 1);
	}
	/* types: 1 begin, 2 end, 3 instant, 4 counter */
	const char *want = "1:main@0 4:-@5 1:work@10 2:-@30 3:err@35 2:-@50 ";
	ok(t && !strcmp(got, want) && thread_named, "Perfetto: every event's type, name and time, nested as given");
	if (strcmp(got, want))
		printf("# got %s\n", got);
	if (t)
		perfetto__protos__trace__free_unpacked(t, NULL);
	free(buf);
}

/* What python3 prints running script (a python3 -c program, the file as
 * its argv[1]) on buf written to a temporary file; its exit status. */
static int python_reads(const char *buf, size_t len, const char *script, char *got, size_t cap)
{
	char path[] = "/tmp/mt-test-writer.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f) {
		fwrite(buf ? buf : "", 1, buf ? len : 0, f);
		fclose(f);
	}
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "python3 -c '%s' %s", script, path);
	FILE *p = popen(cmd, "r");
	char line[512];
	got[0] = '\0';
	while (p && fgets(line, sizeof line, p))
		strncat(got, line, cap - strlen(got) - 1);
	int rc = p ? pclose(p) : -1;
	unlink(path);
	return rc;
}

static void test_json(void)
{
	size_t len;
	char *buf = write_format(MT_PFTRACE_JSON, &len), got[1024];
	int rc = python_reads(buf, len,
			      "import json,sys\n"
			      "t=json.load(open(sys.argv[1]))\n"
			      "for e in t[\"traceEvents\"]:\n"
			      " print(e[\"ph\"], e.get(\"ts\",\"-\"), e.get(\"dur\",\"-\"), e.get(\"name\",\"-\"), "
			      "e.get(\"args\",{}).get(\"name\", e.get(\"args\",{}).get(\"freq (MHz)\",\"-\")))",
			      got, sizeof got);
	const char *want = "M - - process_name app\n"
			   "M - - thread_name worker\n"
			   "B 0.0 - main -\n"
			   "C 0.005 - CPU 2000\n"
			   "B 0.01 - work -\n"
			   "E 0.03 - work -\n"
			   "i 0.035 - err -\n"
			   "E 0.05 - main -\n";
	ok(rc == 0 && !strcmp(got, want),
	   "Chrome JSON: valid, B and E events (each E named as its B), i and C, in microseconds");
	if (strcmp(got, want))
		printf("# got:\n%s", got);
	ok(buf && strstr(buf, "\"ts\":0.010,") && strstr(buf, "\"ts\":0.030,\"name\":\"work\"}"),
	   "JSON times keep the nanoseconds: 3 decimals");
	ok(buf && !strstr(buf, "\"X\""), "JSON: no X event (ts + dur is added in doubles by its readers)");
	free(buf);
}

/* python3's reading of a speedscope file: the profile shown first, each
 * profile's type, name, unit and values, then its events (O/C FRAME-NAME
 * AT) or samples (FRAME-NAMES WEIGHT), then each frame as "name file line". */
static void speedscope_read(const char *buf, size_t len, char *got, size_t cap)
{
	if (python_reads(buf, len,
			 "import json,sys\n"
			 "t=json.load(open(sys.argv[1]))\n"
			 "fr=t[\"shared\"][\"frames\"]\n"
			 "print(t[\"activeProfileIndex\"])\n"
			 "for p in t[\"profiles\"]:\n"
			 " print(p[\"type\"], p[\"name\"], p[\"unit\"], p[\"startValue\"], p[\"endValue\"])\n"
			 " for e in p.get(\"events\", []): print(e[\"type\"], fr[e[\"frame\"]][\"name\"], e[\"at\"])\n"
			 " for s, w in zip(p.get(\"samples\", []), p.get(\"weights\", [])): "
			 "print(\";\".join(fr[i][\"name\"] for i in s), w)\n"
			 "for x in fr: print(x[\"name\"], x.get(\"file\", \"-\"), x.get(\"line\", \"-\"))",
			 got, cap))
		snprintf(got, cap, "python3 could not read it\n");
}

/* A speedscope trace of thread 7 ("app") with --max-slices=max; its sink. */
static struct mt_cs_sink speedscope_open(struct memtrace *m, uint64_t max)
{
	memtrace_open(m, MT_PFTRACE_SPEEDSCOPE);
	mt_pftrace_set_max_slices(m->pf, max);
	mt_pftrace_meta(m->pf, "comm\t7\t7\tapp");
	return m->s;
}

static void test_speedscope(void)
{
	size_t len;
	char *buf = write_format(MT_PFTRACE_SPEEDSCOPE, &len), got[2048];
	speedscope_read(buf ? buf : "", buf ? len : 0, got, sizeof got);
	const char *want = "0\n"
			   "evented worker (pid 1, tid 2); 1 mark not drawn (err) nanoseconds 0 50\n"
			   "O main 0\nO work 10\nC work 30\nC main 50\n"
			   "main - -\nwork - -\n";
	ok(buf && !strcmp(got, want), "speedscope: an evented profile per thread at integer ns, the instant named");
	if (strcmp(got, want))
		printf("# got:\n%s", got);
	free(buf);

	/* a[0,100) holds b[10,20) and c[20,60), c holds d[30,31); b again
	 * [60,70) (one frame for both calls), e [100,100); two stack samples;
	 * then the same with --max-slices=2 */
	for (int max = 0; max <= 2; max += 2) {
		struct memtrace m;
		struct mt_cs_sink s = speedscope_open(&m, (uint64_t)max);
		struct mt_cs_thread th = {.pid = 7, .tid = 7, .base = BASE};
		struct mt_cs_frame fa = {.name = "a", .id = 1, .file = "a.c", .line = 3}, fb = {.name = "b", .id = 2},
				   fc = {.name = "c", .id = 3}, fd = {.name = "d", .id = 4}, fb2 = {.name = "b", .id = 5},
				   fe = {.name = "e", .id = 6};
		const char *names[] = {"a", "c"}, *dsos[] = {"/bin/app", "/bin/app"};
		s.begin(s.ctx, &th, 0, &fa);
		s.begin(s.ctx, &th, 10, &fb);
		s.end(s.ctx, &th, 20, "b", 2);
		s.begin(s.ctx, &th, 20, &fc);
		s.stack_sample(s.ctx, &th, 25, 2, names, dsos, 100000);
		s.begin(s.ctx, &th, 30, &fd);
		s.end(s.ctx, &th, 31, "d", 4);
		s.end(s.ctx, &th, 60, "c", 3);
		s.begin(s.ctx, &th, 60, &fb2);
		s.end(s.ctx, &th, 70, "b", 5);
		s.stack_sample(s.ctx, &th, 80, 1, names, dsos, 250000);
		s.end(s.ctx, &th, 100, "a", 1);
		s.begin(s.ctx, &th, 100, &fe);
		s.end(s.ctx, &th, 100, "e", 6);
		struct mt_pftrace_stats st;
		int rc = memtrace_close(&m, &st);
		speedscope_read(m.buf ? m.buf : "", m.len, got, sizeof got);
		const char *all = "0\n"
				  "evented app (pid 7, tid 7) nanoseconds 0 100\n"
				  "O a 0\nO b 10\nC b 20\nO c 20\nO d 30\nC d 31\nC c 60\nO b 60\nC b 70\nC a 100\n"
				  "O e 100\nC e 100\n"
				  "sampled app (pid 7, tid 7): stack samples none 0 350000\n"
				  "a;c 100000\na 250000\n"
				  "a a.c 3\nb - -\nc - -\nd - -\ne - -\n";
		const char *cut = "0\n"
				  "evented app (pid 7, tid 7); slices under 0.040 us not drawn nanoseconds 0 100\n"
				  "O a 0\nO c 20\nC c 60\nC a 100\n"
				  "sampled app (pid 7, tid 7): stack samples none 0 350000\n"
				  "a;c 100000\na 250000\n"
				  "a a.c 3\nb - -\nc - -\nd - -\ne - -\n";
		const char *w = max ? cut : all;
		ok(!rc && !strcmp(got, w) && st.left_out == (max ? 4u : 0u) && st.left_out_under_ns == (max ? 40u : 0u),
		   max ? "speedscope --max-slices=2: the 2 longest slices, nested; the cut in the name and the stats"
		       : "speedscope: one frame per function (two calls of b), a file and line where known, 0 ns "
			 "slices, stack samples weighed by their periods");
		if (strcmp(got, w) || st.left_out != (max ? 4u : 0u))
			printf("# got (left out %" PRIu64 " under %" PRIu64 "):\n%s", st.left_out, st.left_out_under_ns, got);
		free(m.buf);
	}

	/* 30 samples taking turns between two stacks (45 frame entries): with
	 * --max-slices=2 (40 entries at most) one sample per stack; with 3, as
	 * they came, but runs of one stack made one */
	for (int max = 2; max <= 3; max++) {
		struct memtrace m;
		struct mt_cs_sink s = speedscope_open(&m, (uint64_t)max);
		struct mt_cs_thread th = {.pid = 7, .tid = 7, .base = BASE};
		const char *names[] = {"a", "c"}, *dsos[] = {"/bin/app", "/bin/app"};
		for (int i = 0; i < 30; i++)
			s.stack_sample(s.ctx, &th, (uint64_t)i, i % 2 ? 1 : 2, names, dsos, 100);
		s.stack_sample(s.ctx, &th, 30, 1, names, dsos, 100);
		struct mt_pftrace_stats st;
		int rc = memtrace_close(&m, &st);
		speedscope_read(m.buf ? m.buf : "", m.len, got, sizeof got);
		bool grouped = !strcmp(got, "0\nsampled app (pid 7, tid 7): stack samples, one per stack (time order not kept) "
					    "none 0 3100\na;c 1500\na 1600\na - -\nc - -\n");
		const char *head = "0\nsampled app (pid 7, tid 7): stack samples none 0 3100\na;c 100\na 100\n";
		bool kept = !strncmp(got, head, strlen(head)) &&
			    strstr(got, "\na;c 100\na 200\na - -\nc - -\n") && !strstr(got, "grouped");
		ok(!rc && (max == 2 ? grouped && st.samples_grouped : kept && !st.samples_grouped),
		   max == 2 ? "speedscope --max-slices=2: 45 frame entries of samples past 40: one sample per stack, said"
			    : "speedscope --max-slices=3: samples in time order, a run of one stack made one");
		if (max == 2 ? !grouped : !kept)
			printf("# got:\n%s", got);
		free(m.buf);
	}
}

/* Walks an FXT file's records after the magic number: rec(ctx, header,
 * record) for each; false unless the magic is there and the records' size
 * fields tile the file exactly. */
static bool fxt_walk(const uint8_t *buf, size_t len, void (*rec)(void *ctx, uint64_t h, const uint8_t *r), void *ctx)
{
	uint64_t w0;
	if (!buf || len % 8 || len < 8)
		return false;
	memcpy(&w0, buf, 8);
	if (w0 != 0x0016547846040010ULL) /* the magic number record */
		return false;
	for (size_t off = 8; off < len;) {
		uint64_t h;
		memcpy(&h, buf + off, 8);
		size_t words = (size_t)((h >> 4) & 0xfff);
		if (!words || off + words * 8 > len)
			return false;
		rec(ctx, h, buf + off);
		off += words * 8;
	}
	return true;
}

struct fxt_counts { int strings, complete, counters, names; };

static void count_record(void *ctx, uint64_t h, const uint8_t *r)
{
	struct fxt_counts *c = ctx;
	unsigned type = (unsigned)(h & 15);
	if (type == 2) {
		c->strings++;
		size_t slen = (size_t)((h >> 32) & 0x7fff);
		const char *s = (const char *)r + 8;
		c->names += (slen == 4 && (!memcmp(s, "main", 4) || !memcmp(s, "work", 4))) ||
			    (slen == 3 && !memcmp(s, "err", 3));
	}
	if (type == 4) {
		unsigned etype = (unsigned)((h >> 16) & 15);
		c->complete += etype == 4;
		c->counters += etype == 1;
	}
}

static void test_fxt(void)
{
	size_t len;
	uint8_t *buf = (uint8_t *)write_format(MT_PFTRACE_FXT, &len);
	struct fxt_counts c = {0};
	bool tiled = fxt_walk(buf, len, count_record, &c);
	ok(tiled && c.names == 3 && c.complete == 3 && c.counters == 1 && c.strings >= 3,
	   "FXT: records tile the file, names in string records, 2 slices + 1 instant complete, 1 counter");
	free(buf);
}

static void test_stacks(void)
{
	size_t len;
	char *buf = write_format(MT_PFTRACE_STACKS, &len);
	const char *want = "0ns BEGIN main\n10ns BEGIN work\n30ns END   work\n35ns BEGIN err\nEND   err\n50ns END   main\n";
	ok(buf && !strcmp(buf, want), "stacks: begins and ends as they arrive, an instant as BEGIN and a timeless END");
	free(buf);
	/* the time format */
	struct memtrace m;
	memtrace_open(&m, MT_PFTRACE_STACKS);
	struct mt_cs_sink s = m.s;
	struct mt_cs_thread th = {.pid = 1, .tid = 1};
	static const uint64_t times[] = {999, 1000, 1500, 1234, 1234567, 2000000000, 2500000001ULL, 59999};
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		struct mt_cs_frame fr = {.name = "f", .id = i + 1};
		s.begin(s.ctx, &th, times[i], &fr);
	}
	memtrace_close(&m, NULL);
	char *tb = m.buf;
	const char *want_t = "999ns BEGIN f\n1us BEGIN f\n1.5us BEGIN f\n1.234us BEGIN f\n1.235ms BEGIN f\n"
			     "2s BEGIN f\n2.5s BEGIN f\n59.999us BEGIN f\n";
	ok(tb && !strcmp(tb, want_t), "stacks times: ns, us, ms, s with at most 3 decimals, rounded, zeros dropped");
	if (tb && strcmp(tb, want_t))
		printf("# got:\n%s", tb);
	free(tb);
}

/* The window (pftrace.h's streaming policy): past N held items every
 * thread writes out what it holds; a slice arriving later with an earlier
 * start begins at the last time written, and is counted as clamped. With
 * room for everything, nothing is clamped. */
static void test_window(void)
{
	uint64_t clamped[2], slices[2];
	for (int k = 0; k < 2; k++) {
		struct memtrace m;
		memtrace_open(&m, MT_PFTRACE_JSON);
		mt_pftrace_set_window(m.pf, k ? 4 : 0);
		struct mt_cs_sink s = m.s;
		struct mt_cs_thread th = {.pid = 1, .tid = 1, .base = BASE};
		for (uint64_t i = 0; i < 10; i++) {
			struct mt_cs_frame fr = {.name = "f", .id = i + 1};
			s.begin(s.ctx, &th, 100 + 10 * i, &fr);
			s.end(s.ctx, &th, 105 + 10 * i, "f", i + 1);
		}
		/* an inferred caller found late, reaching back to time 0 */
		struct mt_cs_frame caller = {.name = "caller", .id = 99, .inferred = true};
		s.begin(s.ctx, &th, 0, &caller);
		s.end(s.ctx, &th, 300, "caller", 99);
		struct mt_pftrace_stats st;
		memtrace_close(&m, &st);
		free(m.buf);
		clamped[k] = st.clamped;
		slices[k] = st.slices;
	}
	ok(slices[0] == 11 && clamped[0] == 0, "a window holding everything writes every slice exactly");
	ok(slices[1] == 11 && clamped[1] >= 1, "a window of 4 items: the late caller is clamped, and counted");
}

/* FXT's string table as its records define it, and each complete
 * event's name checked against the name its slice was given. */
struct name_check {
	char (*names)[16];
	size_t distinct, n;
	bool good;
	char table[32768][16];
};

static void check_names(void *ctx, uint64_t h, const uint8_t *r)
{
	struct name_check *c = ctx;
	if ((h & 15) == 2) { /* string record: index, length, text */
		size_t idx = (size_t)((h >> 16) & 0x7fff), slen = (size_t)((h >> 32) & 0x7fff);
		snprintf(c->table[idx], sizeof c->table[idx], "%.*s", (int)slen, (const char *)r + 8);
	}
	if ((h & 15) == 4 && ((h >> 16) & 15) == 4) /* a complete event */
		c->good &= !strcmp(c->table[(h >> 48) & 0x7fff], c->names[c->n++ % c->distinct]);
}

/* FXT past its 32,767-slot string table (and past the 131,072 entries its
 * slot map had, where it used to loop forever): 150,000 distinct names,
 * each event's name reference must name, by the string records before it,
 * the name its slice was given (FXT's string table semantics). */
static void test_fxt_many_names(void)
{
	enum { N = 200000, DISTINCT = 150000 };
	static char names[DISTINCT][16];
	struct memtrace m;
	memtrace_open(&m, MT_PFTRACE_FXT);
	struct mt_cs_sink s = m.s;
	struct mt_cs_thread th = {.pid = 1, .tid = 1, .base = BASE};
	for (uint64_t i = 0; i < N; i++) {
		/* 150,000 names, the first 50,000 again at the end: evicted
		 * long ago, they are defined again */
		const char *name = names[i % DISTINCT];
		if (i < DISTINCT)
			snprintf(names[i], sizeof names[i], "fn_%" PRIu64, i);
		struct mt_cs_frame fr = {.name = name, .id = i + 1};
		s.begin(s.ctx, &th, 10 * i, &fr);
		s.end(s.ctx, &th, 10 * i + 5, name, i + 1);
	}
	int rc = memtrace_close(&m, NULL);
	char *buf = m.buf;
	size_t len = m.len;
	static struct name_check c; /* its table is 512 KB */
	c.names = names;
	c.distinct = DISTINCT;
	c.good = true;
	bool good = !rc && fxt_walk((const uint8_t *)buf, len, check_names, &c) && c.good;
	size_t n = c.n;
	ok(good && n == N, "FXT with 150,000 names, 50,000 of them again: every event's name reference names its slice's name");
	free(buf);
}

/* An address other than ip whose annotation takes ip's slot in the
 * Perfetto writer's table of encoded addresses (write_perfetto.c). */
static uint64_t slot_mate(uint64_t ip)
{
	uint64_t x = ip + 1;
	while ((x * 0x9e3779b97f4a7c15ULL) >> 56 != (ip * 0x9e3779b97f4a7c15ULL) >> 56)
		x++;
	return x;
}

/* Oracle: protobuf-c. Slices with names, addresses and time steps whose
 * varints take every length from 1 byte to 10 (most written by the
 * writer's direct path for slices, the rest, each name's first, by its
 * general one), then the same addresses again, then each after another
 * that takes its slot in the writer's table of encoded addresses: every
 * packet of the trace is what protobuf-c packs for the packet it unpacks
 * to (fields in number order, varints minimal), and unpacks to the type,
 * name, address and time given. */
static void test_perfetto_packets(void)
{
	struct memtrace m;
	memtrace_open(&m, MT_PFTRACE_PROTO);
	struct mt_cs_sink s = m.s;
	struct mt_cs_thread th = {.pid = 1, .tid = 1, .base = BASE};
	static const char *const names[] = {"a", "b", "main"};
	uint64_t t = 0, ips[200], times[400];
	size_t n = 0;
	for (unsigned i = 0; i < 192; i++) {
		/* each address: written, written again, after its slot mate */
		unsigned bits = i < 128 ? i % 64 : (i - 128) / 2 * 2 + 1;
		uint64_t ip = bits ? (1ULL << bits) - 1 + (bits & 1) : 0; /* all ones, and just past them */
		if (i >= 128 && i % 2 == 0)
			ip = slot_mate(ip);
		uint64_t step = bits < 40 ? (1ULL << bits) : 3; /* times stay below 2^63 */
		ips[n] = ip;
		struct mt_cs_frame f = {.name = names[n % 3], .ip = ip, .id = n + 1};
		times[2 * n] = t;
		s.begin(s.ctx, &th, t, &f);
		t += step;
		times[2 * n + 1] = t;
		s.end(s.ctx, &th, t, names[n % 3], n + 1);
		n++;
	}
	int rc = memtrace_close(&m, NULL);
	const uint8_t *b = (const uint8_t *)m.buf, *e = b + m.len;
	unsigned packets = 0, repacked = 0, slices = 0, right = 0;
	char iname[8][16] = {{0}}; /* the interned event names, copied: the packets are freed */
	uint64_t now = 0;
	while (!rc && b < e && *b == 0x0a) { /* Trace.packet */
		uint64_t len = 0;
		unsigned sh = 0;
		for (b++; b < e && sh < 64; sh += 7) {
			len |= (uint64_t)(*b & 0x7f) << sh;
			if (!(*b++ & 0x80))
				break;
		}
		if (len > (uint64_t)(e - b))
			break;
		Perfetto__Protos__TracePacket *p = perfetto__protos__trace_packet__unpack(NULL, len, b);
		packets++;
		if (p) {
			uint8_t again[256];
			size_t n2 = perfetto__protos__trace_packet__get_packed_size(p);
			if (n2 == len && n2 <= sizeof again) {
				perfetto__protos__trace_packet__pack(p, again);
				repacked += !memcmp(again, b, len);
			}
			if (p->has_timestamp_clock_id && p->timestamp_clock_id == 6 && p->trusted_packet_sequence_id != 1)
				now = p->timestamp;
			for (size_t k = 0; p->interned_data && k < p->interned_data->n_event_names; k++)
				if (p->interned_data->event_names[k]->iid < 8)
					snprintf(iname[p->interned_data->event_names[k]->iid], sizeof iname[0], "%s",
						 p->interned_data->event_names[k]->name);
			const Perfetto__Protos__TrackEvent *te = p->track_event;
			if (te) {
				now += p->timestamp;
				size_t i = slices / 2;
				bool begin = slices % 2 == 0;
				uint64_t ip = te->n_debug_annotations && te->debug_annotations[0]->has_pointer_value
						      ? te->debug_annotations[0]->pointer_value : 0;
				bool named = begin ? te->has_name_iid && te->name_iid < 8 &&
							     !strcmp(iname[te->name_iid], names[i % 3])
						   : !te->has_name_iid;
				right += i < n && (int)te->type == (begin ? 1 : 2) && named && now - BASE == times[slices] &&
					 ip == (begin ? ips[i] : 0);
				slices++;
			}
			perfetto__protos__trace_packet__free_unpacked(p, NULL);
		}
		b += len;
	}
	char msg[200];
	snprintf(msg, sizeof msg,
		 "Perfetto: %u packets, each as protobuf-c packs it (%u); %zu slices' begins and ends with the "
		 "type, name, address and time given (%u of %u)", packets, repacked, n, right, slices);
	ok(!rc && b == e && packets > 2 * n && repacked == packets && slices == 2 * n && right == slices, msg);
	free(m.buf);
}

int main(void)
{
	alarm(120); /* a writer that loops forever fails here, not CI */
	test_fxt_many_names();
	test_window();
	test_perfetto();
	test_perfetto_packets();
	test_json();
	test_speedscope();
	test_fxt();
	test_stacks();
	return tap_done();
}
