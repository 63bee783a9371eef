/* pftrace: Perfetto protobuf output (see pftrace.h). */
#define _GNU_SOURCE
#include "timeline/pftrace.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "stream/pbwire.h"
#include "perfetto_trace.pb-c.h"
#include "base/strtab.h"

/* Track uuids: deterministic, one high bit per kind of track. */
#define UUID_THREAD(pid, tid) ((1ULL << 62) | ((uint64_t)(pid) << 31) | (uint64_t)(tid))
#define UUID_PROCESS(pid) ((1ULL << 61) | (uint64_t)(pid))
#define UUID_COUNTER(pid) ((1ULL << 60) | (uint64_t)(pid))
#define UUID_EXTRA(pid, tid, k) ((1ULL << 59) | ((uint64_t)(k) << 50) | ((uint64_t)(pid) << 25) | (uint64_t)(tid))
#define SEQ_DESCRIPTORS 1
#define SEQ_THREAD0 2 /* small ids: one varint byte for the first 126 threads */
#define CLOCK_INCREMENTAL 64
#define CLOCK_BOOTTIME 6

enum item_kind { IT_SLICE, IT_INSTANT, IT_COUNTER, IT_SAMPLE };

/* A slice, instant, counter value or sample not written yet (64 bytes:
 * the window holds many of them). */
struct item {
	uint64_t begin, end;     /* mapped times; end: UINT64_MAX while the slice is open */
	const char *name;        /* interned */
	const char *file;        /* interned, NULL: no source line */
	uint64_t ip;
	union {
		uint64_t id;     /* IT_SLICE: the frame id (its end repeats it) */
		double value;    /* IT_COUNTER, IT_SAMPLE */
	} u;
	uint32_t seq;            /* arrival order within the thread's held items */
	int32_t line;
	uint32_t extra;          /* IT_SAMPLE: index of its event track */
	uint8_t kind;
	bool inferred;
	bool late;               /* copied to the late items (order_items) */
};

struct open_slice {
	uint64_t id;
	size_t item;
};

/* A slice written (or dropped for depth) whose END is still to come. */
enum { WF_DROPPED, WF_BEGIN, WF_COMPLETE };
struct wframe {
	uint64_t id, end;        /* end: UINT64_MAX until the frame's end arrives */
	uint8_t mode;            /* WF_BEGIN: an END must be written when it pops */
};

/* Per-sequence name interning: name pointer -> iid. */
struct iids {
	const char **k;
	uint64_t *v;
	size_t cap, n;
};

struct seqw {
	struct mt_pftrace *pf;
	size_t k;            /* thread index */
	uint32_t pid, tid;
	uint64_t json_end;   /* JSON/FXT: the end of the slice a BEGIN starts */
	bool end_known;      /* ... when it is known already (a complete event) */
	const char *file;    /* the source line of the slice a BEGIN starts */
	int32_t line;
	uint32_t seq;
	uint64_t base;       /* perf time of mapped time 0; JSON and FXT times count from it */
	uint64_t last;       /* Perfetto: the incremental clock's last value (absolute) */
	uint64_t track;
	struct iids names;
	uint64_t addr_iid;   /* debug annotation names "address", "file", "line" defined */
};

struct pthread {
	uint32_t pid, tid;
	struct item *items;       /* pending: not written yet, in arrival order */
	size_t nitems, capitems;
	struct open_slice *open;  /* pending slices without their end; ends waiting for their begin */
	size_t nopen, capopen;
	size_t nendfirst;         /* ends on open waiting for their begin */
	uint64_t last_begin;      /* of the last item held */
	bool unordered, ties;     /* an item held began before / with the one before it */
	struct wframe *ws;        /* written slices still open, outermost first */
	size_t depth, wdepth, capws; /* wdepth: frames on ws actually written */
	uint64_t wmapped;         /* mapped time of the last packet written */
	uint64_t maxtime;         /* the latest time the thread has seen */
	uint64_t dropped;         /* frames too deep to write */
	struct seqw w;
	bool started;             /* descriptors and the sequence's first packet written */
	uint8_t xdesc[64];        /* sample tracks described (bit per extra index) */
};

struct comm {
	uint32_t pid, tid;
	char name[64];
};

struct mt_pftrace {
	FILE *out;
	enum mt_pftrace_format format;
	gzFile gz;            /* compressing: writes go here */
	bool headed;          /* the JSON or FXT header is written */
	bool json_first;      /* no comma before the first JSON event */
	/* FXT string table: indices 1..FXT_STRINGS, reused round-robin */
	const char **fxt_str;     /* index -> interned name */
	uint16_t fxt_next;
	struct { const char **k; uint16_t *v; size_t cap; } fxt_map;
	uint32_t fxt_thread_slot[256]; /* slot -> thread index + 1 */
	uint16_t fxt_next_thread;
	struct mt_strtab names;
	/* FXT's fixed strings, interned once (per event they cost a hash each) */
	const char *fx_empty, *fx_address, *fx_freq, *fx_file, *fx_line, *fx_cpu;
	struct pthread **threads;
	size_t nthreads, capthreads;
	uint32_t *pids;           /* processes described */
	size_t npids, cappids;
	struct comm *comms;
	size_t ncomms, capcomms;
	const char **extra_names; /* event names of sample tracks */
	size_t nextra, capextra;
	size_t window, pending;   /* items held before every thread is written out */
	struct item *late;        /* flush_thread's items that came out of time order */
	size_t caplate;
	char damage[512];
	bool oom;
	/* writing */
	uint8_t *buf;
	size_t bufcap;
	struct mt_pftrace_stats st;
	uint8_t obuf[1 << 16];
	size_t nobuf;
	bool write_failed;
	int write_errno;
};

static void flush_all(struct mt_pftrace *pf, bool final);

/* Names live as long as the writer; out of memory makes them "". */
static const char *intern(struct mt_pftrace *pf, const char *s)
{
	const char *r = mt_strtab_intern(&pf->names, s);
	if (!r) {
		pf->oom = true;
		return "";
	}
	return r;
}

/* --- collecting (the sink) ---------------------------------------------------- */

static struct pthread *pthread_of(struct mt_pftrace *pf, struct mt_cs_thread *th)
{
	if (th->user)
		return th->user;
	struct pthread *t = calloc(1, sizeof *t);
	if (!t || !mt_grow((void **)&pf->threads, &pf->capthreads, pf->nthreads + 1, sizeof *pf->threads)) {
		free(t);
		pf->oom = true;
		return NULL;
	}
	t->pid = th->pid;
	t->tid = th->tid;
	t->w = (struct seqw){.pf = pf, .base = th->base, .seq = SEQ_THREAD0 + (uint32_t)pf->nthreads,
			     .track = UUID_THREAD(t->pid, t->tid), .pid = t->pid, .tid = t->tid, .k = pf->nthreads};
	pf->threads[pf->nthreads++] = t;
	th->user = t;
	return t;
}

static void saw_time(struct pthread *t, uint64_t time)
{
	if (time > t->maxtime)
		t->maxtime = time;
}

static struct item *add_item(struct mt_pftrace *pf, struct pthread *t)
{
	/* Bounded memory: past the window every thread writes out what it holds. */
	if (pf->window && pf->pending >= pf->window)
		flush_all(pf, false);
	if (!mt_grow((void **)&t->items, &t->capitems, t->nitems + 1, sizeof *t->items)) {
		pf->oom = true;
		return NULL;
	}
	struct item *it = &t->items[t->nitems++];
	memset(it, 0, sizeof *it);
	it->seq = (uint32_t)(t->nitems - 1);
	pf->pending++;
	return it;
}

/* A new item of th's thread: kind, times and interned name set. */
static struct item *new_item(struct mt_pftrace *pf, struct mt_cs_thread *th, uint8_t kind, uint64_t begin,
			     uint64_t end, const char *name)
{
	struct pthread *t = pthread_of(pf, th);
	struct item *it = t ? add_item(pf, t) : NULL;
	if (it) {
		/* noted now so that a flush in order skips order_items' pass */
		if (t->nitems > 1) {
			t->unordered |= begin < t->last_begin;
			t->ties |= begin == t->last_begin;
		}
		t->last_begin = begin;
		it->kind = kind;
		it->begin = begin;
		it->end = end;
		it->name = name; /* interned by the callstack (callstack.h) */
		saw_time(t, begin);
		if (end != UINT64_MAX)
			saw_time(t, end);
	}
	return it;
}

static bool push_open(struct mt_pftrace *pf, struct pthread *t, uint64_t id, size_t item)
{
	if (!mt_grow((void **)&t->open, &t->capopen, t->nopen + 1, sizeof *t->open)) {
		pf->oom = true;
		return false;
	}
	t->open[t->nopen++] = (struct open_slice){id, item};
	return true;
}

static void s_begin(void *ctx, struct mt_cs_thread *th, uint64_t time, const struct mt_cs_frame *f)
{
	struct mt_pftrace *pf = ctx;
	struct item *it = new_item(pf, th, IT_SLICE, time, UINT64_MAX, f->name);
	if (!it)
		return;
	struct pthread *t = th->user;
	it->u.id = f->id;
	it->ip = f->ip;
	it->inferred = f->inferred;
	if (f->file) {
		it->file = intern(pf, f->file);
		it->line = f->line;
	}
	push_open(pf, t, f->id, t->nitems - 1);
}

#define END_FIRST (1ULL << 63) /* open_slice id flag: an end waiting for its begin */

static void s_end(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name, uint64_t id)
{
	(void)name;
	struct mt_pftrace *pf = ctx;
	struct pthread *t = pthread_of(pf, th);
	if (!t)
		return;
	saw_time(t, time);
	for (size_t i = t->nopen; i-- > 0;) {
		if (t->open[i].id != id)
			continue;
		t->items[t->open[i].item].end = time;
		t->open[i] = t->open[--t->nopen];
		return;
	}
	for (size_t i = t->depth; i-- > 0;)
		if (t->ws[i].id == id && t->ws[i].end == UINT64_MAX) {
			t->ws[i].end = time;
			return;
		}
	/* magic-trace may end a frame before it writes the frame's inferred
	 * begin: keep the end (in the item field) until the begin arrives */
	if (push_open(pf, t, id | END_FIRST, (size_t)time))
		t->nendfirst++;
}

static void s_begin_checked(void *ctx, struct mt_cs_thread *th, uint64_t time, const struct mt_cs_frame *f)
{
	uint64_t id = f->id;
	struct mt_pftrace *pf = ctx;
	struct pthread *t = pthread_of(pf, th);
	if (!t)
		return;
	for (size_t i = t->nendfirst ? t->nopen : 0; i-- > 0;) {
		if (t->open[i].id != (id | END_FIRST))
			continue;
		uint64_t end = (uint64_t)t->open[i].item;
		t->open[i] = t->open[--t->nopen];
		t->nendfirst--;
		s_begin(ctx, th, time, f);
		if (t->nopen && t->open[t->nopen - 1].id == id) {
			t->items[t->open[t->nopen - 1].item].end = end;
			t->nopen--;
		}
		return;
	}
	s_begin(ctx, th, time, f);
}

static void s_complete(void *ctx, struct mt_cs_thread *th, uint64_t start, uint64_t end, const char *name)
{
	new_item(ctx, th, IT_SLICE, start, end, name);
}

static void s_instant(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name)
{
	new_item(ctx, th, IT_INSTANT, time, time, name);
}

static void s_counter(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name, double value)
{
	struct item *it = new_item(ctx, th, IT_COUNTER, time, time, name);
	if (it)
		it->u.value = value;
}

static void s_sample(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *event, uint64_t ip,
		     const char *symbol, uint64_t count)
{
	struct mt_pftrace *pf = ctx;
	/* breakpoint samples (perf's mem:ADDR:x) are trigger hits: one track
	 * for them all, as magic-trace's "Snapshot symbol hits" */
	bool hit = !strncmp(event, "mem:", 4);
	char hname[512];
	if (hit) {
		snprintf(hname, sizeof hname, "hit %s", symbol);
		symbol = intern(pf, hname);
		event = "Snapshot symbol hits";
	}
	const char *ev = intern(pf, event);
	size_t k = 0;
	while (k < pf->nextra && pf->extra_names[k] != ev)
		k++;
	if (k == pf->nextra) {
		if (k >= 8 * sizeof ((struct pthread *)0)->xdesc ||
		    !mt_grow((void **)&pf->extra_names, &pf->capextra, pf->nextra + 1, sizeof *pf->extra_names))
			return;
		pf->extra_names[pf->nextra++] = ev;
	}
	struct item *it = new_item(pf, th, IT_SAMPLE, time, time, symbol);
	if (!it)
		return;
	it->ip = ip;
	it->u.value = (double)count;
	it->extra = (uint32_t)k;
}

struct mt_pftrace *mt_pftrace_new(FILE *out, enum mt_pftrace_format format, bool gzip)
{
	struct mt_pftrace *pf = calloc(1, sizeof *pf);
	if (!pf)
		return NULL;
	pf->out = out;
	pf->format = format;
	pf->window = MT_PFTRACE_WINDOW;
	if (gzip) {
		/* gzip level 6, as magic-trace writes .gz; the outfile keeps the fd */
		fflush(out);
		int fd = dup(fileno(out));
		if (fd < 0 || !(pf->gz = gzdopen(fd, "wb6"))) {
			if (fd >= 0)
				close(fd);
			free(pf);
			return NULL;
		}
	}
	return pf;
}

void mt_pftrace_sink(struct mt_pftrace *pf, struct mt_cs_sink *sink)
{
	*sink = (struct mt_cs_sink){.ctx = pf, .begin = s_begin_checked, .end = s_end, .complete = s_complete,
				    .instant = s_instant, .counter = s_counter, .event_sample = s_sample};
}

void mt_pftrace_meta(struct mt_pftrace *pf, const char *meta)
{
	unsigned pid, tid;
	char name[64];
	if (sscanf(meta, "comm\t%u\t%u\t%63[^\n]", &pid, &tid, name) != 3)
		return;
	for (size_t i = 0; i < pf->ncomms; i++)
		if (pf->comms[i].pid == pid && pf->comms[i].tid == tid) {
			snprintf(pf->comms[i].name, sizeof pf->comms[i].name, "%s", name);
			return;
		}
	if (!mt_grow((void **)&pf->comms, &pf->capcomms, pf->ncomms + 1, sizeof *pf->comms))
		return;
	struct comm *c = &pf->comms[pf->ncomms++];
	c->pid = pid;
	c->tid = tid;
	snprintf(c->name, sizeof c->name, "%s", name);
}

void mt_pftrace_note_damage(struct mt_pftrace *pf, const char *msg)
{
	snprintf(pf->damage, sizeof pf->damage, "[input damaged: %s]", msg);
}

/* --- writing ---------------------------------------------------------------------- */

/* Output goes through a buffer of our own: stdio's per-call locking cost
 * more than the encoding of the small packets. */
static void out_flush(struct mt_pftrace *pf)
{
	size_t n = pf->nobuf;
	pf->nobuf = 0;
	if (pf->write_failed || !n)
		return;
	if (pf->gz ? gzwrite(pf->gz, pf->obuf, (unsigned)n) != (int)n : fwrite(pf->obuf, 1, n, pf->out) != n) {
		pf->write_failed = true;
		pf->write_errno = errno ? errno : EIO;
	}
}

static void out_bytes(struct mt_pftrace *pf, const void *b, size_t n)
{
	pf->st.bytes += n;
	while (n) {
		if (pf->nobuf == sizeof pf->obuf)
			out_flush(pf);
		size_t k = sizeof pf->obuf - pf->nobuf;
		if (k > n)
			k = n;
		memcpy(pf->obuf + pf->nobuf, b, k);
		pf->nobuf += k;
		b = (const uint8_t *)b + k;
		n -= k;
	}
}

static const char *comm_of(const struct mt_pftrace *pf, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < pf->ncomms; i++)
		if (pf->comms[i].pid == pid && pf->comms[i].tid == tid)
			return pf->comms[i].name;
	return NULL;
}

/* --- Chrome JSON (perfetto-output.md section 8) ----------------------------- */

/* s as a JSON string's contents, at most about cap - 8 bytes; returns the
 * end (no NUL). */
static char *j_str(char *out, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (; *s && o + 7 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20) {
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[c >> 4];
			out[o + 5] = hex[c & 15];
			o += 6;
		} else {
			out[o++] = (char)c;
		}
	}
	return out + o;
}

static void json_str(char *out, size_t cap, const char *s)
{
	*j_str(out, cap, s) = '\0';
}

/* What goes before every JSON event: a comma after the first, a newline. */
static char *json_sep(struct mt_pftrace *pf, char *p)
{
	if (!pf->json_first)
		*p++ = ',';
	pf->json_first = false;
	*p++ = '\n';
	return p;
}

/* One JSON event through printf (metadata, instants, counters: the rare ones). */
static void json_event(struct mt_pftrace *pf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void json_event(struct mt_pftrace *pf, const char *fmt, ...)
{
	char buf[2600];
	size_t n = (size_t)(json_sep(pf, buf) - buf);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
	va_end(ap);
	if (m > 0)
		n += (size_t)m < sizeof buf - n ? (size_t)m : sizeof buf - n - 1;
	out_bytes(pf, buf, n);
}

/* ns as microseconds, ts and dur: exactly 3 decimals keep the nanoseconds;
 * returns the end (no NUL). */
static char *j_us(char *p, uint64_t ns)
{
	unsigned f = (unsigned)(ns % 1000);
	p = mt_put_dec(p, ns / 1000);
	*p++ = '.';
	*p++ = (char)('0' + f / 100);
	*p++ = (char)('0' + f / 10 % 10);
	*p++ = (char)('0' + f % 10);
	return p;
}

#define J_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)


/* --- FXT (perfetto-output.md section 7) -------------------------------------- */

#define FXT_MAGIC 0x0016547846040010ULL
#define FXT_STRINGS 32767
#define FXT_STRING_MAX 31999

static void fxt_words(struct mt_pftrace *pf, const uint64_t *w, size_t n)
{
	out_bytes(pf, w, n * 8);
}

static void fxt_padded(struct mt_pftrace *pf, const char *s, size_t n)
{
	static const uint8_t zero[8];
	out_bytes(pf, s, n);
	out_bytes(pf, zero, (8 - n % 8) % 8);
}

/* The string-table index of s, defining (or redefining) a slot when new:
 * past 32767 strings the oldest slot is reused, which FXT allows. */
static uint16_t fxt_string(struct mt_pftrace *pf, const char *s)
{
	if (!pf->fxt_str) {
		pf->fxt_str = calloc(FXT_STRINGS + 1, sizeof *pf->fxt_str);
		pf->fxt_map.cap = 1u << 17;
		pf->fxt_map.k = calloc(pf->fxt_map.cap, sizeof *pf->fxt_map.k);
		pf->fxt_map.v = calloc(pf->fxt_map.cap, sizeof *pf->fxt_map.v);
		pf->fxt_next = 1;
		if (!pf->fxt_str || !pf->fxt_map.k || !pf->fxt_map.v) {
			pf->oom = true;
			return 0;
		}
	}
	size_t mask = pf->fxt_map.cap - 1, j = ((uintptr_t)s >> 4) & mask;
	for (; pf->fxt_map.k[j]; j = (j + 1) & mask)
		if (pf->fxt_map.k[j] == s && pf->fxt_str[pf->fxt_map.v[j]] == s)
			return pf->fxt_map.v[j];
	uint16_t idx = pf->fxt_next;
	pf->fxt_next = pf->fxt_next == FXT_STRINGS ? 1 : pf->fxt_next + 1;
	pf->fxt_str[idx] = s; /* a stale map entry for the old string no longer matches */
	pf->fxt_map.k[j] = s;
	pf->fxt_map.v[j] = idx;
	size_t len = strlen(s);
	if (len > FXT_STRING_MAX)
		len = FXT_STRING_MAX;
	uint64_t h = 2 | ((uint64_t)(1 + (len + 7) / 8) << 4) | ((uint64_t)idx << 16) | ((uint64_t)len << 32);
	fxt_words(pf, &h, 1);
	fxt_padded(pf, s, len);
	return idx;
}

static void fxt_begin_file(struct mt_pftrace *pf)
{
	static const char provider[] = "mt";
	uint64_t w[2];
	w[0] = FXT_MAGIC;
	fxt_words(pf, w, 1);
	w[0] = 0 | ((uint64_t)(1 + (sizeof provider - 1 + 7) / 8) << 4) | (1ULL << 16) |
	       ((uint64_t)(sizeof provider - 1) << 52); /* provider info, id 0 */
	fxt_words(pf, w, 1);
	fxt_padded(pf, provider, sizeof provider - 1);
	w[0] = 0 | (1ULL << 4) | (2ULL << 16); /* provider section, id 0 */
	fxt_words(pf, w, 1);
	w[0] = 1 | (2ULL << 4); /* initialization: ticks are nanoseconds */
	w[1] = 1000000000ULL;
	fxt_words(pf, w, 2);
}

/* Process and thread kernel objects: koid = pid for the process, and
 * 1 << 32 | tid for the thread (the reader keeps the low 32 bits). */
static void fxt_thread_objects(struct mt_pftrace *pf, const struct pthread *t, bool first_of_pid)
{
	char name[256];
	if (first_of_pid) {
		const char *c = comm_of(pf, t->pid, t->pid);
		snprintf(name, sizeof name, "%s%s[pid=%u]", c ? c : "", c && *c ? " " : "", t->pid);
		uint64_t w[2] = {7 | (2ULL << 4) | (1ULL << 16) | ((uint64_t)fxt_string(pf, intern(pf, name)) << 24),
				 t->pid};
		fxt_words(pf, w, 2);
	}
	const char *c = comm_of(pf, t->pid, t->tid);
	snprintf(name, sizeof name, "%s", c && *c ? c : "main");
	uint16_t nref = fxt_string(pf, intern(pf, name)), pref = fxt_string(pf, intern(pf, "process"));
	uint64_t w[4] = {7 | (4ULL << 4) | (2ULL << 16) | ((uint64_t)nref << 24) | (1ULL << 40),
			 (1ULL << 32) | t->tid, 8 | (2ULL << 4) | ((uint64_t)pref << 16), t->pid};
	fxt_words(pf, w, 4);
}

static uint8_t fxt_thread_ref(struct mt_pftrace *pf, size_t k)
{
	for (unsigned i = 1; i < 256; i++)
		if (pf->fxt_thread_slot[i] == k + 1)
			return (uint8_t)i;
	unsigned slot = 1 + pf->fxt_next_thread % 255;
	pf->fxt_next_thread++;
	pf->fxt_thread_slot[slot] = (uint32_t)k + 1;
	const struct pthread *t = pf->threads[k];
	uint64_t w[3] = {3 | (3ULL << 4) | ((uint64_t)slot << 16), t->pid, (1ULL << 32) | t->tid};
	fxt_words(pf, w, 3);
	return (uint8_t)slot;
}

/* A complete event (slices, and zero-length ones for instants) or a counter. */
static void fxt_event(struct mt_pftrace *pf, size_t k, int type, uint64_t ticks, uint64_t end, const char *name,
		      uint64_t ip, bool counter, double value, const char *file, int32_t line)
{
	uint16_t nref = fxt_string(pf, name ? name : pf->fx_empty), cref = fxt_string(pf, pf->fx_empty);
	uint16_t aref = 0;
	if (ip)
		aref = fxt_string(pf, pf->fx_address);
	if (counter)
		aref = fxt_string(pf, pf->fx_freq);
	uint16_t fref = 0, fvref = 0, lref = 0;
	if (file) {
		fref = fxt_string(pf, pf->fx_file);
		fvref = fxt_string(pf, file);
		lref = fxt_string(pf, pf->fx_line);
	}
	uint8_t tref = fxt_thread_ref(pf, k);
	uint64_t w[10];
	size_t n = 1, nargs = 0;
	w[n++] = ticks;
	if (ip || counter) {
		w[n++] = (uint64_t)(counter ? 5 : 7) | (2ULL << 4) | ((uint64_t)aref << 16);
		if (counter)
			memcpy(&w[n++], &value, 8);
		else
			w[n++] = ip;
		nargs++;
	}
	if (file) {
		w[n++] = 6 | (1ULL << 4) | ((uint64_t)fref << 16) | ((uint64_t)fvref << 32); /* string arg */
		w[n++] = 1 | (1ULL << 4) | ((uint64_t)lref << 16) | ((uint64_t)(uint32_t)line << 32); /* int32 */
		nargs += 2;
	}
	if (type == 4)
		w[n++] = end;
	if (type == 1)
		w[n++] = 1; /* counter id */
	w[0] = 4 | ((uint64_t)n << 4) | ((uint64_t)type << 16) | ((uint64_t)nargs << 20) | ((uint64_t)tref << 24) |
	       ((uint64_t)cref << 32) | ((uint64_t)nref << 48);
	fxt_words(pf, w, n);
}

static void put_packet(struct mt_pftrace *pf, const Perfetto__Protos__TracePacket *p)
{
	size_t n = perfetto__protos__trace_packet__get_packed_size(p);
	if (!mt_grow((void **)&pf->buf, &pf->bufcap, n + 11, 1)) {
		pf->oom = true;
		return;
	}
	uint8_t *b = pf->buf;
	size_t h = (size_t)(mt_pb_varint(mt_pb_tag(b, 1, MT_PB_LEN), n) - b); /* Trace.packet */
	perfetto__protos__trace_packet__pack(p, b + h);
	out_bytes(pf, b, h + n);
	pf->st.packets++;
}


/* The JSON header or the FXT file header, before anything else. */
static void write_head(struct mt_pftrace *pf)
{
	if (pf->headed)
		return;
	pf->headed = true;
	pf->json_first = true;
	if (pf->format == MT_PFTRACE_JSON) {
		static const char head[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
		out_bytes(pf, head, sizeof head - 1);
	} else if (pf->format == MT_PFTRACE_FXT) {
		pf->fx_empty = intern(pf, "");
		pf->fx_address = intern(pf, "address");
		pf->fx_freq = intern(pf, "freq (MHz)");
		pf->fx_file = intern(pf, "file");
		pf->fx_line = intern(pf, "line");
		pf->fx_cpu = intern(pf, "CPU");
		fxt_begin_file(pf);
	}
}

static bool first_of_pid(struct mt_pftrace *pf, uint32_t pid)
{
	for (size_t i = 0; i < pf->npids; i++)
		if (pf->pids[i] == pid)
			return false;
	if (!mt_grow((void **)&pf->pids, &pf->cappids, pf->npids + 1, sizeof *pf->pids)) {
		pf->oom = true;
		return false;
	}
	pf->pids[pf->npids++] = pid;
	return true;
}

static void track_packet(struct mt_pftrace *pf, uint64_t time, Perfetto__Protos__TrackDescriptor *td)
{
	Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	p.has_timestamp = true;
	p.timestamp = time;
	p.has_trusted_packet_sequence_id = true;
	p.trusted_packet_sequence_id = SEQ_DESCRIPTORS;
	p.track_descriptor = td;
	put_packet(pf, &p);
}

/* A thread's descriptors (its process's too, the first time) at time t0
 * (the trace's base: no event is earlier), then, in Perfetto, the first
 * packet of its sequence: cleared state, defaults, the incremental clock. */
static void start_thread(struct mt_pftrace *pf, struct pthread *t)
{
	uint64_t t0 = t->w.base;
	bool first = first_of_pid(pf, t->pid);
	const char *pname = comm_of(pf, t->pid, t->pid), *tname = comm_of(pf, t->pid, t->tid);
	t->started = true;
	t->w.last = t0;
	write_head(pf);
	if (pf->format == MT_PFTRACE_JSON) {
		char nm[256];
		if (first) {
			json_str(nm, sizeof nm, pname ? pname : "");
			json_event(pf, "{\"ph\":\"M\",\"pid\":%u,\"name\":\"process_name\",\"args\":{\"name\":\"%s\"}}",
				   t->pid, nm);
		}
		json_str(nm, sizeof nm, tname ? tname : "");
		json_event(pf, "{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"%s\"}}",
			   t->pid, t->tid, nm);
		return;
	}
	if (pf->format == MT_PFTRACE_FXT) {
		fxt_thread_objects(pf, t, first);
		return;
	}
	if (first) {
		Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
		td.has_uuid = true;
		td.uuid = UUID_PROCESS(t->pid);
		td.process = &pd;
		pd.has_pid = true;
		pd.pid = (int32_t)t->pid;
		pd.process_name = (char *)(pname ? pname : "");
		track_packet(pf, t0, &td);
		/* the CPU frequency counter of this process */
		Perfetto__Protos__TrackDescriptor cd = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		Perfetto__Protos__CounterDescriptor cnt = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
		cd.has_uuid = true;
		cd.uuid = UUID_COUNTER(t->pid);
		cd.has_parent_uuid = true;
		cd.parent_uuid = UUID_PROCESS(t->pid);
		cd.name = "CPU";
		cnt.unit_name = "MHz";
		cd.counter = &cnt;
		track_packet(pf, t0, &cd);
	}
	Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	td.has_uuid = true;
	td.uuid = t->w.track;
	td.thread = &thd;
	thd.has_pid = thd.has_tid = true;
	thd.pid = (int32_t)t->pid;
	thd.tid = t->tid;
	thd.thread_name = (char *)(tname ? tname : "");
	track_packet(pf, t0, &td);

	Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__TracePacketDefaults d = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	Perfetto__Protos__ClockSnapshot__Clock c0 = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock c1 = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock *clocks[2] = {&c0, &c1};
	p.has_timestamp = true;
	p.timestamp = t0;
	p.has_timestamp_clock_id = true;
	p.timestamp_clock_id = CLOCK_BOOTTIME;
	p.has_trusted_packet_sequence_id = true;
	p.trusted_packet_sequence_id = t->w.seq;
	p.has_sequence_flags = true;
	p.sequence_flags = 1; /* SEQ_INCREMENTAL_STATE_CLEARED */
	p.has_first_packet_on_sequence = true;
	p.first_packet_on_sequence = true;
	p.trace_packet_defaults = &d;
	d.has_timestamp_clock_id = true;
	d.timestamp_clock_id = CLOCK_INCREMENTAL;
	d.track_event_defaults = &ted;
	ted.has_track_uuid = true;
	ted.track_uuid = t->w.track;
	p.clock_snapshot = &cs;
	cs.n_clocks = 2;
	cs.clocks = clocks;
	c0.has_clock_id = c0.has_timestamp = true;
	c0.clock_id = CLOCK_BOOTTIME;
	c0.timestamp = t0;
	c1.has_clock_id = c1.has_timestamp = c1.has_is_incremental = true;
	c1.clock_id = CLOCK_INCREMENTAL;
	c1.timestamp = t0;
	c1.is_incremental = true;
	put_packet(pf, &p);
}

/* A sample track of the thread, described before its first event. */
static uint64_t sample_track(struct mt_pftrace *pf, struct pthread *t, uint32_t k)
{
	uint64_t uuid = UUID_EXTRA(t->pid, t->tid, k);
	if (pf->format != MT_PFTRACE_PROTO || t->xdesc[k / 8] & (1u << (k % 8)))
		return uuid;
	t->xdesc[k / 8] |= (uint8_t)(1u << (k % 8));
	Perfetto__Protos__TrackDescriptor xd = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	xd.has_uuid = true;
	xd.uuid = uuid;
	xd.has_parent_uuid = true;
	xd.parent_uuid = UUID_PROCESS(t->pid);
	xd.name = (char *)pf->extra_names[k];
	track_packet(pf, t->w.base, &xd);
	return uuid;
}

static uint64_t iid_of(struct mt_pftrace *pf, struct iids *m, const char *name, bool *is_new)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 256;
		const char **nk = calloc(nc, sizeof *nk);
		uint64_t *nv = calloc(nc, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			pf->oom = true;
			return 0;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->k[i]) {
				size_t j = ((uintptr_t)m->k[i] >> 4) & (nc - 1);
				while (nk[j])
					j = (j + 1) & (nc - 1);
				nk[j] = m->k[i];
				nv[j] = m->v[i];
			}
		free(m->k);
		free(m->v);
		m->k = nk;
		m->v = nv;
		m->cap = nc;
	}
	size_t j = ((uintptr_t)name >> 4) & (m->cap - 1);
	while (m->k[j]) {
		if (m->k[j] == name) {
			*is_new = false;
			return m->v[j];
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->k[j] = name;
	m->v[j] = ++m->n;
	*is_new = true;
	return m->v[j];
}

/* One TrackEvent packet on a thread's sequence. */
static void emit_json(struct seqw *w, uint64_t time, Perfetto__Protos__TrackEvent__Type type, const char *name,
		      uint64_t track, uint64_t ip, double value)
{
	struct mt_pftrace *pf = w->pf;
	if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN ||
	    type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END) {
		/* most of the file: written by hand, as json_event would */
		char b[2048 + 1024 + 512]; /* name, file and under 300 bytes more */
		char *p = json_sep(pf, b);
		if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END) {
			p = J_LIT(p, "{\"ph\":\"E\"");
		} else if (w->end_known) { /* a complete event when the end is known, else B now and E later */
			p = J_LIT(p, "{\"ph\":\"X\",\"dur\":");
			p = j_us(p, w->json_end - time);
		} else {
			p = J_LIT(p, "{\"ph\":\"B\"");
		}
		p = J_LIT(p, ",\"pid\":");
		p = mt_put_dec(p, w->pid);
		p = J_LIT(p, ",\"tid\":");
		p = mt_put_dec(p, w->tid);
		p = J_LIT(p, ",\"ts\":");
		p = j_us(p, time - w->base);
		if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN) {
			p = J_LIT(p, ",\"name\":\"");
			p = j_str(p, 2048, name ? name : "");
			p = J_LIT(p, "\",\"cat\":\"\",\"args\":{\"address\":\"");
			p = mt_put_hex(p, ip);
			*p++ = '"';
			if (w->file) {
				p = J_LIT(p, ",\"file\":\"");
				p = j_str(p, 1024, w->file);
				p = J_LIT(p, "\",\"line\":");
				if (w->line < 0) {
					*p++ = '-';
					p = mt_put_dec(p, (uint64_t)-(int64_t)w->line);
				} else {
					p = mt_put_dec(p, (uint64_t)w->line);
				}
			}
			*p++ = '}';
		}
		*p++ = '}';
		out_bytes(pf, b, (size_t)(p - b));
		return;
	}
	char ts[32], nm[2048];
	*j_us(ts, time - w->base) = '\0';
	json_str(nm, sizeof nm, name ? name : "");
	switch (type) {
	case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT:
		json_event(pf, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"name\":\"%s\",\"cat\":\"%s\"}",
			   w->pid, w->tid, ts, nm, track == w->track ? "" : "sample");
		break;
	case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER:
		json_event(pf, "{\"ph\":\"C\",\"pid\":%u,\"ts\":%s,\"name\":\"CPU\",\"args\":{\"freq (MHz)\":%.0f}}",
			   w->pid, ts, value);
		break;
	default:
		break;
	}
}

/* An interned name: { iid = 1, name = 2 } */
static uint8_t *pb_iid_name(uint8_t *p, unsigned field, uint64_t iid, const char *name)
{
	size_t n = strlen(name);
	uint8_t head[32], *h = mt_pb_uint(head, 1, iid);
	h = mt_pb_varint(mt_pb_tag(h, 2, MT_PB_LEN), n);
	p = mt_pb_varint(mt_pb_tag(p, field, MT_PB_LEN), (size_t)(h - head) + n);
	memcpy(p, head, (size_t)(h - head));
	p += h - head;
	memcpy(p, name, n);
	return p + n;
}

/* The TrackEvent packets are most of the file: they are encoded here by
 * hand (the wire format of proto/perfetto_trace.proto, fields in number
 * order as protobuf-c writes them) instead of through protobuf-c's
 * reflective packer, which took a third of the time. Descriptors and the
 * first packet of each sequence still go through protobuf-c. */
static void emit_proto(struct seqw *w, uint64_t time, Perfetto__Protos__TrackEvent__Type type, const char *name,
		       uint64_t track, uint64_t ip, bool counter, double value)
{
	struct mt_pftrace *pf = w->pf;
	size_t nlen = name ? strlen(name) : 0, flen = w->file ? strlen(w->file) : 0;
	size_t bound = 2 * (nlen + flen) + 256;
	if (!mt_grow((void **)&pf->buf, &pf->bufcap, 3 * bound, 1)) {
		pf->oom = true;
		return;
	}
	uint8_t *te = pf->buf, *id = pf->buf + bound, *pk = pf->buf + 2 * bound;
	uint8_t *t = te, *d = id;
	uint64_t name_iid = 0;
	if (name) {
		bool is_new = false;
		name_iid = iid_of(pf, &w->names, name, &is_new);
		if (is_new)
			d = pb_iid_name(d, 2, name_iid, name); /* InternedData.event_names */
	}
	if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN && (ip || w->file)) {
		if (!w->addr_iid) {
			/* argument names: 1 address, 2 file, 3 line */
			w->addr_iid = 1;
			d = pb_iid_name(d, 3, 1, "address");
			d = pb_iid_name(d, 3, 2, "file");
			d = pb_iid_name(d, 3, 3, "line");
		}
		uint8_t a[32], *e;
		if (ip) { /* TrackEvent.debug_annotations { name_iid 1, pointer_value 7 } */
			e = mt_pb_uint(mt_pb_uint(a, 1, 1), 7, ip);
			t = mt_pb_bytes(t, 4, a, (size_t)(e - a));
		}
		if (w->file) { /* { name_iid, string_value 6 } and { name_iid, int_value 4 } */
			t = mt_pb_varint(mt_pb_tag(t, 4, MT_PB_LEN), 2 + 1 + (size_t)(mt_pb_varint(a, flen) - a) + flen);
			t = mt_pb_bytes(mt_pb_uint(t, 1, 2), 6, w->file, flen);
			e = mt_pb_uint(mt_pb_uint(a, 1, 3), 4, (uint64_t)(int64_t)w->line);
			t = mt_pb_bytes(t, 4, a, (size_t)(e - a));
		}
	}
	t = mt_pb_uint(t, 9, (uint64_t)type);
	if (name)
		t = mt_pb_uint(t, 10, name_iid);
	if (track != w->track)
		t = mt_pb_uint(t, 11, track);
	if (counter) {
		t = mt_pb_tag(t, 44, MT_PB_I64);
		memcpy(t, &value, 8); /* little-endian hosts only, as x86-64 */
		t += 8;
	}
	/* The packet is sized first and encoded straight into the output
	 * buffer (the staging copy cost a tenth of the time). */
	size_t tlen = (size_t)(t - te), dlen = (size_t)(d - id);
	uint64_t dt = time - w->last;
	w->last = time;
	size_t plen = 1 + mt_pb_varint_len(dt) + 1 + mt_pb_varint_len(w->seq) + 1 + mt_pb_varint_len(tlen) + tlen +
		      (dlen ? 1 + mt_pb_varint_len(dlen) + dlen : 0) + 2;
	size_t total = 1 + mt_pb_varint_len(plen) + plen;
	if (total > sizeof pf->obuf - pf->nobuf)
		out_flush(pf);
	bool direct = total <= sizeof pf->obuf;
	uint8_t *p = direct ? pf->obuf + pf->nobuf : pk; /* pk has room: total < bound */
	uint8_t *start = p;
	p = mt_pb_varint(mt_pb_tag(p, 1, MT_PB_LEN), plen); /* Trace.packet */
	p = mt_pb_uint(p, 8, dt); /* timestamp, incremental */
	p = mt_pb_uint(p, 10, w->seq);
	p = mt_pb_bytes(p, 11, te, tlen);
	if (dlen)
		p = mt_pb_bytes(p, 12, id, dlen);
	p = mt_pb_uint(p, 13, 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
	if (direct) {
		pf->nobuf += total;
		pf->st.bytes += total;
	} else {
		out_bytes(pf, start, total);
	}
	(void)p;
	pf->st.packets++;
}

static void emit(struct seqw *w, uint64_t time, Perfetto__Protos__TrackEvent__Type type, const char *name,
		 uint64_t track, uint64_t ip, bool counter, double value)
{
	if (w->pf->format == MT_PFTRACE_JSON) {
		emit_json(w, time, type, name, track, ip, value);
		return;
	}
	if (w->pf->format == MT_PFTRACE_FXT) {
		uint64_t ticks = time - w->base;
		/* duration complete when the end is known, else begin now and end later */
		if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN)
			fxt_event(w->pf, w->k, w->end_known ? 4 : 2, ticks, w->json_end - w->base, name, ip, false, 0,
				  w->file, w->line);
		else if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END)
			fxt_event(w->pf, w->k, 3, ticks, 0, w->pf->fx_empty, 0, false, 0, NULL, 0);
		else if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT)
			fxt_event(w->pf, w->k, 4, ticks, ticks, name, track == w->track ? 0 : ip, false, 0, NULL, 0);
		else if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER)
			fxt_event(w->pf, w->k, 1, ticks, 0, w->pf->fx_cpu, 0, true, value, NULL, 0);
		return;
	}
	emit_proto(w, time, type, name, track, ip, counter, value);
}

/* Time order, outer slices first: at the same begin the later end; at the
 * same begin and end an inferred frame (a caller found by a return)
 * before the frames it encloses, later-inferred frames being outer, and
 * otherwise arrival order (calls arrive outermost first). */
static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	if (x->inferred != y->inferred)
		return x->inferred ? -1 : 1;
	if (x->inferred)
		return x->seq > y->seq ? -1 : x->seq < y->seq;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Puts items in cmp_item order. Almost all arrive in time order; the few
 * that come late (inferred starts, [unknown] slices) are copied to `late`,
 * sorted there and marked where they were (closing up the rest moved every
 * item of the window once), runs with one begin time are ordered in place
 * (ties: with late items among them, the others are first closed up, which
 * is rare), and the two are merged while writing (see flush_thread).
 * Returns how many items are late; *n: how many the array holds now. */
static size_t order_items(struct item *it, size_t *n, struct item *late, bool ties)
{
	size_t nlate = 0;
	uint64_t maxb = 0;
	for (size_t i = 0; i < *n; i++) {
		if (it[i].begin < maxb) {
			late[nlate++] = it[i];
			it[i].late = true;
			continue;
		}
		maxb = it[i].begin;
	}
	if (ties) {
		if (nlate) {
			size_t kept = 0;
			for (size_t i = 0; i < *n; i++)
				if (!it[i].late)
					it[kept++] = it[i];
			*n = kept;
		}
		for (size_t i = 0; i < *n;) {
			size_t j = i + 1;
			while (j < *n && it[j].begin == it[i].begin)
				j++;
			if (j - i > 1)
				qsort(it + i, j - i, sizeof *it, cmp_item);
			i = j;
		}
	}
	if (nlate > 1)
		qsort(late, nlate, sizeof *late, cmp_item);
	return nlate;
}

/* Writes the END of every written frame on top of the stack that ended at
 * or before `at`. Times never run backwards on a sequence: an END that
 * would is written at the last time written (and counted as clamped). */
static void close_until(struct mt_pftrace *pf, struct pthread *t, uint64_t at)
{
	while (t->depth && t->ws[t->depth - 1].end <= at) {
		struct wframe *f = &t->ws[--t->depth];
		if (f->mode == WF_DROPPED)
			continue;
		t->wdepth--;
		if (f->mode != WF_BEGIN)
			continue;
		uint64_t end = f->end;
		if (end < t->wmapped) {
			end = t->wmapped;
			pf->st.clamped++;
		}
		t->wmapped = end;
		emit(&t->w, t->w.base + end, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL, t->w.track, 0,
		     false, 0);
	}
}

/* Writes one held item at its place in time. */
static void write_item(struct mt_pftrace *pf, struct pthread *t, const struct item *it)
{
	uint64_t begin = it->begin;
	if (begin < t->wmapped) {
		/* late: its time was written out already (the window policy) */
		begin = t->wmapped;
		pf->st.clamped++;
	}
	close_until(pf, t, begin);
	t->wmapped = begin;
	uint64_t abs = t->w.base + begin;
	switch (it->kind) {
	case IT_SLICE: {
		uint64_t end = it->end;
		if (end != UINT64_MAX && end < begin)
			end = begin;
		if (t->depth && end > t->ws[t->depth - 1].end) {
			end = t->ws[t->depth - 1].end; /* a child cannot outlive its parent */
			pf->st.clamped++;
		}
		if (!mt_grow((void **)&t->ws, &t->capws, t->depth + 1, sizeof *t->ws)) {
			pf->oom = true;
			return;
		}
		struct wframe *f = &t->ws[t->depth++];
		*f = (struct wframe){.id = it->u.id, .end = end, .mode = WF_DROPPED};
		if (t->wdepth >= MT_PFTRACE_MAX_DEPTH) {
			t->dropped++;
			pf->st.depth_dropped++;
			break;
		}
		t->wdepth++;
		/* JSON and FXT write a complete event when the end is known */
		t->w.end_known = end != UINT64_MAX && pf->format != MT_PFTRACE_PROTO;
		f->mode = t->w.end_known ? WF_COMPLETE : WF_BEGIN;
		t->w.json_end = t->w.base + end;
		t->w.file = it->file;
		t->w.line = it->line;
		emit(&t->w, abs, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, it->name, t->w.track, it->ip,
		     false, 0);
		t->w.file = NULL;
		pf->st.slices++;
		break;
	}
	case IT_INSTANT:
		emit(&t->w, abs, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, it->name, t->w.track, 0, false, 0);
		pf->st.instants++;
		break;
	case IT_COUNTER:
		emit(&t->w, abs, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER, NULL, UUID_COUNTER(t->pid), 0, true,
		     it->u.value);
		pf->st.counters++;
		break;
	case IT_SAMPLE:
		emit(&t->w, abs, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, it->name,
		     sample_track(pf, t, it->extra), it->ip, false, 0);
		break;
	}
}

/* Writes out what the thread holds, in time order (magic-trace's write
 * order is not: inferred starts come last). A final flush also ends every
 * frame still open, at the last time the thread saw. */
static void flush_thread(struct mt_pftrace *pf, struct pthread *t, bool final)
{
	if (!t->started)
		start_thread(pf, t);
	if (!mt_grow((void **)&pf->late, &pf->caplate, t->nitems + 1, sizeof *pf->late)) {
		pf->oom = true;
		return;
	}
	size_t kept = t->nitems, nlate = 0;
	if (t->unordered || t->ties)
		nlate = order_items(t->items, &kept, pf->late, t->ties);
	t->unordered = t->ties = false;
	/* a slice written before its end arrives gets it on the written stack */
	for (size_t i = 0, j = 0; i < kept || j < nlate;) {
		if (i < kept && t->items[i].late) {
			i++;
			continue;
		}
		if (j == nlate || (i < kept && cmp_item(&t->items[i], &pf->late[j]) <= 0))
			write_item(pf, t, &t->items[i++]);
		else
			write_item(pf, t, &pf->late[j++]);
	}
	pf->pending -= t->nitems;
	t->nitems = 0;
	/* pending slices are written now: only ends waiting for a begin stay */
	size_t n = 0;
	for (size_t i = 0; i < t->nopen; i++)
		if (t->open[i].id & END_FIRST)
			t->open[n++] = t->open[i];
	t->nopen = t->nendfirst = n;
	if (!final)
		return;
	/* frames still open at the end (there should be none): end them last */
	uint64_t last = t->maxtime > t->wmapped ? t->maxtime : t->wmapped;
	for (size_t i = 0; i < t->depth; i++)
		if (t->ws[i].end == UINT64_MAX)
			t->ws[i].end = last;
	close_until(pf, t, UINT64_MAX);
	if (t->dropped) {
		char msg[128];
		snprintf(msg, sizeof msg, "[%" PRIu64 " frames deeper than %d not shown]", t->dropped,
			 MT_PFTRACE_MAX_DEPTH);
		emit(&t->w, t->w.base + t->wmapped, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, intern(pf, msg),
		     t->w.track, 0, false, 0);
	}
	if (pf->damage[0])
		emit(&t->w, t->w.base + t->wmapped, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT,
		     intern(pf, pf->damage), t->w.track, 0, false, 0);
}

static void flush_all(struct mt_pftrace *pf, bool final)
{
	for (size_t i = 0; i < pf->nthreads; i++)
		flush_thread(pf, pf->threads[i], final);
}

void mt_pftrace_set_window(struct mt_pftrace *pf, size_t items)
{
	pf->window = items;
}

int mt_pftrace_finish(struct mt_pftrace *pf, struct mt_pftrace_stats *st, struct mt_err *err)
{
	write_head(pf);
	flush_all(pf, true);
	if (pf->format == MT_PFTRACE_JSON)
		out_bytes(pf, "\n]}\n", 4);
	out_flush(pf);
	int rc = 0;
	if (pf->gz) {
		int zrc = gzclose(pf->gz);
		pf->gz = NULL;
		if (zrc != Z_OK && !pf->write_failed) {
			pf->write_failed = true;
			pf->write_errno = EIO;
		}
	}
	if (pf->oom)
		rc = mt_err_set(err, MT_ENOMEM, "out of memory writing the trace");
	else if (pf->write_failed || fflush(pf->out))
		rc = mt_err_set(err, MT_EIO, "writing the trace: %s",
				strerror(pf->write_failed ? pf->write_errno : errno));
	if (st)
		*st = pf->st;
	for (size_t i = 0; i < pf->nthreads; i++) {
		struct pthread *t = pf->threads[i];
		free(t->items);
		free(t->open);
		free(t->ws);
		free(t->w.names.k);
		free(t->w.names.v);
		free(t);
	}
	free(pf->threads);
	free(pf->pids);
	free(pf->late);
	free(pf->comms);
	free(pf->extra_names);
	mt_strtab_free(&pf->names);
	free(pf->buf);
	free(pf->fxt_str);
	free(pf->fxt_map.k);
	free(pf->fxt_map.v);
	free(pf);
	return rc;
}
