/* pftrace: the timeline's front (see pftrace.h): the callstack's sink,
 * the held-items window and its write-out in time order, and the writer
 * of the chosen format (writer.h). */
#define _GNU_SOURCE
#include "timeline/pftrace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "base/bigmem.h"
#include "base/strtab.h"
#include "base/utf8.h"
#include "timeline/order.h"
#include "timeline/writer.h"

static void flush_all(struct mt_pftrace *pf, bool final);

const char *mt_tl_intern(struct mt_pftrace *pf, const char *s)
{
	const char *r = mt_strtab_intern(&pf->names, s);
	if (!r) {
		pf->oom = true;
		return "";
	}
	return r;
}

/* --- collecting (the sink) ---------------------------------------------------- */

/* A thread's first item: its writer state (out of line: once a thread). */
static __attribute__((noinline)) struct pthread *new_pthread(struct mt_pftrace *pf, struct mt_cs_thread *th)
{
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

static inline struct pthread *pthread_of(struct mt_pftrace *pf, struct mt_cs_thread *th)
{
	return th->user ? th->user : new_pthread(pf, th);
}

static void saw_time(struct pthread *t, uint64_t time)
{
	if (time > t->maxtime)
		t->maxtime = time;
}

/* The window's items, written as they come and read when it is written
 * out, are memory the caches no longer hold (16 MiB by default): the line
 * 16 items on is asked for ahead of its use (to be written: the store to a
 * new item waited for its line, a tenth of mt-toperfetto's time on a
 * call-dense trace). Past the array's end is fine: a prefetch never faults;
 * the address is made as a number, not a pointer out of bounds. */
static inline void prefetch_ahead(const struct item *it, bool for_write)
{
	const void *ahead = (const void *)((uintptr_t)it + 16 * sizeof *it);
	if (for_write)
		__builtin_prefetch(ahead, 1);
	else
		__builtin_prefetch(ahead, 0);
}

/* A new item of thread t: kind, times and interned name set, the rest
 * zero (one store of the whole item: the window's memory is written once). */
static inline struct item *new_item_of(struct mt_pftrace *pf, struct pthread *t, uint8_t kind, uint64_t begin,
				       uint64_t end, const char *name)
{
	/* Bounded memory: past the window every thread writes out what it holds. */
	if (pf->window && pf->pending >= pf->window)
		flush_all(pf, false);
	if (!mt_bigmem_grow((void **)&t->items, &t->capitems, t->nitems + 1, sizeof *t->items)) {
		pf->oom = true;
		return NULL;
	}
	/* noted now so that a flush in order skips order_items' pass */
	if (t->nitems) {
		t->unordered |= begin < t->last_begin;
		t->ties |= begin == t->last_begin;
	}
	t->last_begin = begin;
	struct item *it = &t->items[t->nitems];
	prefetch_ahead(it, true);
	/* name: interned by the callstack (callstack.h) */
	*it = (struct item){.begin = begin, .end = end, .name = name, .seq = (uint32_t)t->nitems, .kind = kind};
	t->nitems++;
	pf->pending++;
	saw_time(t, begin);
	if (end != UINT64_MAX)
		saw_time(t, end);
	return it;
}

/* The same, of th's thread. */
static struct item *new_item(struct mt_pftrace *pf, struct mt_cs_thread *th, uint8_t kind, uint64_t begin,
			     uint64_t end, const char *name)
{
	struct pthread *t = pthread_of(pf, th);
	return t ? new_item_of(pf, t, kind, begin, end, name) : NULL;
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

/* A slice's source file as every format's reader takes it (UTF-8:
 * base/utf8.h), interned; the last one kept, as slices of one file follow
 * each other. */
static const char *file_name(struct mt_pftrace *pf, const char *file)
{
	if (file == pf->file_in)
		return pf->file_out;
	char *fixed = NULL;
	size_t cap = 0;
	const char *t = mt_utf8_fixed(file, &fixed, &cap);
	pf->file_in = file;
	pf->file_out = mt_tl_intern(pf, t ? t : "");
	free(fixed);
	return pf->file_out;
}

/* Inlined by force, as write_item below: each is most of a begin's path,
 * which the compiler had cut into calls (callstack.c says why not). */
static inline __attribute__((always_inline)) void begin_slice(struct mt_pftrace *pf, struct pthread *t,
								 struct mt_cs_thread *th, uint64_t time,
								 const struct mt_cs_frame *f)
{
	struct item *it = new_item_of(pf, t, IT_SLICE, time, UINT64_MAX, f->name);
	if (!it)
		return;
	it->u.id = f->id;
	it->ip = f->ip;
	it->inferred = f->inferred;
	if (f->file) {
		it->file = file_name(pf, f->file);
		it->line = f->line;
	}
	if (pf->calls)
		mt_tl_callinfo_begin(pf, f->id, th->count);
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
	if (pf->calls)
		mt_tl_callinfo_end(pf, id, th->count, th->no_return);
	for (size_t i = t->nopen; i-- > 0;) {
		if (t->open[i].id != id)
			continue;
		t->items[t->open[i].item].end = time;
		t->open[i] = t->open[--t->nopen];
		return;
	}
	for (size_t i = t->ws_unended; i-- > 0;)
		if (t->ws[i].id == id && t->ws[i].end == UINT64_MAX) {
			t->ws[i].end = time;
			while (t->ws_unended && t->ws[t->ws_unended - 1].end != UINT64_MAX)
				t->ws_unended--;
			return;
		}
	/* magic-trace may end a frame before it writes the frame's inferred
	 * begin: keep the end (in the item field) until the begin arrives */
	if (push_open(pf, t, id | END_FIRST, (size_t)time))
		t->nendfirst++;
}

/* A begin whose end may have come first (magic-trace's inferred begins):
 * out of line, so that the common begin below is one function. */
static __attribute__((noinline)) void begin_after_end(struct mt_pftrace *pf, struct pthread *t,
						       struct mt_cs_thread *th, uint64_t time,
						       const struct mt_cs_frame *f)
{
	uint64_t id = f->id;
	for (size_t i = t->nopen; i-- > 0;) {
		if (t->open[i].id != (id | END_FIRST))
			continue;
		uint64_t end = (uint64_t)t->open[i].item;
		t->open[i] = t->open[--t->nopen];
		t->nendfirst--;
		begin_slice(pf, t, th, time, f);
		if (t->nopen && t->open[t->nopen - 1].id == id) {
			t->items[t->open[t->nopen - 1].item].end = end;
			t->nopen--;
		}
		return;
	}
	begin_slice(pf, t, th, time, f);
}

static void s_begin_checked(void *ctx, struct mt_cs_thread *th, uint64_t time, const struct mt_cs_frame *f)
{
	struct mt_pftrace *pf = ctx;
	struct pthread *t = pthread_of(pf, th);
	if (!t)
		return;
	if (t->nendfirst)
		begin_after_end(pf, t, th, time, f);
	else
		begin_slice(pf, t, th, time, f);
}

static void s_complete(void *ctx, struct mt_cs_thread *th, uint64_t start, uint64_t end, const char *name)
{
	new_item(ctx, th, IT_SLICE, start, end, name);
}

static void s_instant(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name)
{
	new_item(ctx, th, IT_INSTANT, time, time, name);
}

const char *const mt_tl_counter_names[MT_TL_COUNTERS] = {"CPU", "C-state", "ptwrite"};

unsigned mt_tl_counter_of(const char *name)
{
	for (unsigned k = 1; name && k < MT_TL_COUNTERS; k++)
		if (!strcmp(name, mt_tl_counter_names[k]))
			return k;
	return MT_TL_COUNTER_CPU;
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
		symbol = mt_tl_intern(pf, hname);
		event = "Snapshot symbol hits";
	}
	const char *ev = mt_tl_intern(pf, event);
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

/* A stack sample, held as one interned key (the same stack: the same
 * pointer): its frames outermost first, each NAME US DSO, RS between. */
static void s_stack(void *ctx, struct mt_cs_thread *th, uint64_t time, size_t n, const char *const *names,
		    const char *const *dsos, uint64_t period)
{
	struct mt_pftrace *pf = ctx;
	if (!pf->ops->stack_sample)
		return;
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		size_t a = strlen(names[i]), b = strlen(dsos[i]);
		/* this frame, its separators, and the NUL */
		if (!mt_grow((void **)&pf->keybuf, &pf->capkeybuf, len + a + b + 3, 1)) {
			pf->oom = true;
			return;
		}
		char *p = pf->keybuf + len;
		if (i)
			*p++ = MT_TL_FRAME_SEP;
		memcpy(p, names[i], a);
		p[a] = MT_TL_DSO_SEP;
		memcpy(p + a + 1, dsos[i], b);
		len = (size_t)(p + a + 1 + b - pf->keybuf);
	}
	if (!n)
		return;
	pf->keybuf[len] = '\0';
	struct item *it = new_item(pf, th, IT_STACK, time, time, mt_tl_intern(pf, pf->keybuf));
	if (it)
		it->u.value = (double)period;
}

bool mt_tl_stack_split(struct mt_tl_stack *s, const char *key)
{
	size_t len = strlen(key), n = 1;
	for (const char *p = key; *p; p++)
		n += *p == MT_TL_FRAME_SEP;
	if (!mt_grow((void **)&s->copy, &s->capcopy, len + 1, 1))
		return false;
	if (n > s->cap) {
		const char **a = realloc(s->names, 2 * n * sizeof *a);
		if (a)
			s->names = a;
		const char **b = a ? realloc(s->dsos, 2 * n * sizeof *b) : NULL;
		if (!b)
			return false;
		s->dsos = b;
		s->cap = 2 * n;
	}
	memcpy(s->copy, key, len + 1);
	s->n = 0;
	for (char *p = s->copy; p && s->n < n; s->n++) {
		char *next = strchr(p, MT_TL_FRAME_SEP);
		if (next)
			*next++ = '\0';
		char *dso = strchr(p, MT_TL_DSO_SEP);
		if (dso)
			*dso++ = '\0';
		s->names[s->n] = p;
		s->dsos[s->n] = dso ? dso : "";
		p = next;
	}
	return true;
}

void mt_tl_stack_free(struct mt_tl_stack *s)
{
	free(s->copy);
	free(s->names);
	free(s->dsos);
}

/* --- arrival order: the stacks straight to the writer ------------------------ */

static void a_begin(void *ctx, struct mt_cs_thread *th, uint64_t time, const struct mt_cs_frame *f)
{
	struct mt_pftrace *pf = ctx;
	struct pthread *t = pthread_of(pf, th);
	if (t) {
		pf->ops->slice_begin(&t->w, time, f->name, f->ip);
		pf->st.slices++;
	}
}

static void a_end(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name, uint64_t id)
{
	(void)id;
	struct mt_pftrace *pf = ctx;
	struct pthread *t = pthread_of(pf, th);
	if (t)
		pf->ops->slice_end(&t->w, time, name);
}

static void a_complete(void *ctx, struct mt_cs_thread *th, uint64_t start, uint64_t end, const char *name)
{
	struct mt_pftrace *pf = ctx;
	struct pthread *t = pthread_of(pf, th);
	if (!t)
		return;
	pf->ops->slice_begin(&t->w, start, name, 0);
	pf->ops->slice_end(&t->w, end, name);
	pf->st.slices++;
}

static void a_instant(void *ctx, struct mt_cs_thread *th, uint64_t time, const char *name)
{
	struct mt_pftrace *pf = ctx;
	struct pthread *t = pthread_of(pf, th);
	if (t) {
		pf->ops->instant(&t->w, time, name);
		pf->st.instants++;
	}
}

static const struct {
	const char *ending;
	enum mt_pftrace_format format;
} format_endings[] = {
	{".speedscope.json", MT_PFTRACE_SPEEDSCOPE},
	{".pftrace", MT_PFTRACE_PROTO}, {".perfetto-trace", MT_PFTRACE_PROTO}, {".pb", MT_PFTRACE_PROTO},
	{".json", MT_PFTRACE_JSON},     {".fxt", MT_PFTRACE_FXT},              {".stacks", MT_PFTRACE_STACKS},
	{".threads", MT_PFTRACE_THREADS},
};

bool mt_pftrace_format_of_name(const char *name, enum mt_pftrace_format *format)
{
	size_t n = strlen(name);
	if (n > 3 && !strcmp(name + n - 3, ".gz"))
		n -= 3;
	for (size_t i = 0; i < sizeof format_endings / sizeof *format_endings; i++) {
		size_t e = strlen(format_endings[i].ending);
		if (n > e && !strncmp(name + n - e, format_endings[i].ending, e)) {
			*format = format_endings[i].format;
			return true;
		}
	}
	return false;
}

const char *mt_pftrace_format_name(enum mt_pftrace_format format)
{
	switch (format) {
	case MT_PFTRACE_PROTO: return "perfetto";
	case MT_PFTRACE_JSON: return "json";
	case MT_PFTRACE_FXT: return "fxt";
	case MT_PFTRACE_STACKS: return "stacks";
	case MT_PFTRACE_THREADS: return "threads";
	case MT_PFTRACE_SPEEDSCOPE: return "speedscope";
	}
	return "?";
}

struct mt_pftrace *mt_pftrace_new(FILE *out, enum mt_pftrace_format format, bool gzip)
{
	static const struct mt_tl_ops *const ops[] = {
		[MT_PFTRACE_PROTO] = &mt_tl_perfetto, [MT_PFTRACE_JSON] = &mt_tl_json,
		[MT_PFTRACE_FXT] = &mt_tl_fxt, [MT_PFTRACE_STACKS] = &mt_tl_stacks,
		[MT_PFTRACE_THREADS] = &mt_tl_threads, [MT_PFTRACE_SPEEDSCOPE] = &mt_tl_speedscope,
	};
	struct mt_pftrace *pf = calloc(1, sizeof *pf);
	if (!pf)
		return NULL;
	pf->out = out;
	pf->ops = ops[format];
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

struct mt_pftrace *mt_pftrace_new_calls(const struct mt_tl_calls_sink *sink)
{
	struct mt_pftrace *pf = calloc(1, sizeof *pf);
	if (!pf)
		return NULL;
	if (!(pf->calls = mt_tl_calls_new(sink))) {
		free(pf);
		return NULL;
	}
	pf->out = NULL;
	pf->ops = &mt_tl_calls;
	pf->window = MT_PFTRACE_WINDOW;
	return pf;
}

bool mt_pftrace_wants_counts(const struct mt_pftrace *pf)
{
	return pf->calls != NULL;
}

void mt_pftrace_sink(struct mt_pftrace *pf, struct mt_cs_sink *sink)
{
	if (pf->ops->arrival_order) {
		*sink = (struct mt_cs_sink){.ctx = pf, .begin = a_begin, .end = a_end, .complete = a_complete,
					    .instant = a_instant};
		return;
	}
	*sink = (struct mt_cs_sink){.ctx = pf, .begin = s_begin_checked, .end = s_end, .complete = s_complete,
				    .instant = s_instant, .counter = s_counter, .event_sample = s_sample,
				    .stack_sample = s_stack};
}

static size_t comm_slot(uint32_t pid, uint32_t tid, size_t cap)
{
	return (size_t)(((((uint64_t)pid << 32) | tid) * 0x9e3779b97f4a7c15u) >> 32) & (cap - 1);
}

/* The comm of (pid, tid), or NULL: by a hash of the pair (a scan of every
 * comm per comm line and per thread was quadratic in the threads). */
static struct comm *find_comm(const struct mt_pftrace *pf, uint32_t pid, uint32_t tid)
{
	if (!pf->capcomm_slots)
		return NULL;
	for (size_t k = comm_slot(pid, tid, pf->capcomm_slots); pf->comm_slots[k];
	     k = (k + 1) & (pf->capcomm_slots - 1)) {
		struct comm *c = &pf->comms[pf->comm_slots[k] - 1];
		if (c->pid == pid && c->tid == tid)
			return c;
	}
	return NULL;
}

/* Indexes comm i (its pair new to the table), growing the table at half full. */
static bool index_comm(struct mt_pftrace *pf, size_t i)
{
	if (2 * (pf->ncomms + 1) > pf->capcomm_slots) {
		size_t cap = pf->capcomm_slots ? 2 * pf->capcomm_slots : 64;
		uint32_t *ns = calloc(cap, sizeof *ns);
		if (!ns)
			return false;
		for (size_t j = 0; j < pf->ncomms; j++) {
			if (j == i)
				continue;
			size_t k = comm_slot(pf->comms[j].pid, pf->comms[j].tid, cap);
			while (ns[k])
				k = (k + 1) & (cap - 1);
			ns[k] = (uint32_t)j + 1;
		}
		free(pf->comm_slots);
		pf->comm_slots = ns;
		pf->capcomm_slots = cap;
	}
	size_t k = comm_slot(pf->comms[i].pid, pf->comms[i].tid, pf->capcomm_slots);
	while (pf->comm_slots[k])
		k = (k + 1) & (pf->capcomm_slots - 1);
	pf->comm_slots[k] = (uint32_t)i + 1;
	return true;
}

/* Perfetto's builtin clock (common/builtin_clock.proto) of the clock a
 * stream's clock fact names (mt-pt2events: perf record -k); 0 for one it
 * has no id for. */
static uint32_t builtin_clock(const char *fact)
{
	static const struct { const char *name; uint32_t id; } clocks[] = {
		{"realtime", 1}, {"monotonic", 3}, {"monotonic_raw", 5}, {"boottime", 6},
	};
	size_t n = strcspn(fact, " \t\n");
	for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++)
		if (strlen(clocks[i].name) == n && !strncmp(fact, clocks[i].name, n))
			return clocks[i].id;
	return 0;
}

void mt_pftrace_meta(struct mt_pftrace *pf, const char *meta)
{
	unsigned pid, tid;
	char name[64];
	if (!strncmp(meta, "fact\tclock\t", 11)) {
		pf->clock_id = builtin_clock(meta + 11);
		return;
	}
	if (sscanf(meta, "comm\t%u\t%u\t%63[^\n]", &pid, &tid, name) != 3)
		return;
	struct comm *c = find_comm(pf, pid, tid);
	if (c) {
		snprintf(c->name, sizeof c->name, "%s", name); /* the latest name wins */
		return;
	}
	if (pf->ncomms >= UINT32_MAX - 1 ||
	    !mt_grow((void **)&pf->comms, &pf->capcomms, pf->ncomms + 1, sizeof *pf->comms))
		return;
	c = &pf->comms[pf->ncomms++];
	c->pid = pid;
	c->tid = tid;
	snprintf(c->name, sizeof c->name, "%s", name);
	if (!index_comm(pf, pf->ncomms - 1))
		pf->ncomms--; /* out of memory: the thread goes unnamed */
}

void mt_pftrace_note_damage(struct mt_pftrace *pf, const char *msg)
{
	snprintf(pf->damage, sizeof pf->damage, "[input damaged: %s]", msg);
}


const char *mt_tl_comm(const struct mt_pftrace *pf, uint32_t pid, uint32_t tid)
{
	const struct comm *c = find_comm(pf, pid, tid);
	return c ? c->name : NULL;
}

/* The file's header, before anything else. */
static void write_head(struct mt_pftrace *pf)
{
	if (pf->headed)
		return;
	pf->headed = true;
	if (pf->ops->head)
		pf->ops->head(pf);
}

int mt_tl_pidset_add(struct pidset *s, uint32_t pid)
{
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		uint64_t *nv = calloc(cap, sizeof *nv);
		if (!nv)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->v[i])
				continue;
			size_t k = (size_t)((s->v[i] * 0x9e3779b97f4a7c15u) >> 32) & (cap - 1);
			while (nv[k])
				k = (k + 1) & (cap - 1);
			nv[k] = s->v[i];
		}
		free(s->v);
		s->v = nv;
		s->cap = cap;
	}
	uint64_t key = (uint64_t)pid + 1;
	size_t k = (size_t)((key * 0x9e3779b97f4a7c15u) >> 32) & (s->cap - 1);
	for (; s->v[k]; k = (k + 1) & (s->cap - 1))
		if (s->v[k] == key)
			return 0;
	s->v[k] = key;
	s->n++;
	return 1;
}

static bool first_of_pid(struct mt_pftrace *pf, uint32_t pid)
{
	int r = mt_tl_pidset_add(&pf->pids, pid);
	if (r < 0)
		pf->oom = true;
	return r > 0;
}

/* A thread's descriptors (its process's too, the first time), before
 * its first event. */
static void start_thread(struct mt_pftrace *pf, struct pthread *t)
{
	bool first = first_of_pid(pf, t->pid);
	t->started = true;
	t->w.last = t->w.base;
	write_head(pf);
	pf->ops->thread(pf, t, first);
}

/* Writes the END of every written frame on top of the stack that ended at
 * or before `at`. Times never run backwards on a sequence: an END that
 * would is written at the last time written (and counted as clamped). */
static inline void close_until(struct mt_pftrace *pf, struct pthread *t, uint64_t at)
{
	while (t->depth && t->ws[t->depth - 1].end <= at) {
		struct wframe *f = &t->ws[--t->depth];
		if (t->ws_unended > t->depth)
			t->ws_unended = t->depth;
		if (pf->calls) {
			bool forced = false;
			t->w.call_known = mt_tl_callinfo_take(pf, f->id, &t->w.call_count, &forced);
			t->w.no_return = forced;
		}
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
		pf->ops->slice_end(&t->w, t->w.base + end, NULL);
	}
}

/* Writes one held item at its place in time. */
static inline __attribute__((always_inline)) void write_item(struct mt_pftrace *pf, struct pthread *t,
								const struct item *it)
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
		if (end == UINT64_MAX)
			t->ws_unended = t->depth;
		if (t->wdepth >= MT_PFTRACE_MAX_DEPTH && !pf->calls) {
			t->dropped++;
			pf->st.depth_dropped++;
			break;
		}
		t->wdepth++;
		/* FXT writes a complete event when the end is known; a slice
		 * 0 ns long as a begin and an end: complete ones at one time nest
		 * by their order only that way (Perfetto nested a 0 ns slice in
		 * the one before it) */
		t->w.end_known = end != UINT64_MAX && end > begin && pf->ops->complete_slices;
		f->mode = t->w.end_known ? WF_COMPLETE : WF_BEGIN;
		t->w.json_end = t->w.base + end;
		t->w.file = it->file;
		t->w.line = it->line;
		t->w.no_call = it->inferred || !it->u.id; /* no id: known only at its end ([unknown]) */
		pf->ops->slice_begin(&t->w, abs, it->name, it->ip);
		t->w.file = NULL;
		pf->st.slices++;
		break;
	}
	case IT_INSTANT:
		pf->ops->instant(&t->w, abs, it->name);
		pf->st.instants++;
		break;
	case IT_COUNTER:
		pf->ops->counter(&t->w, abs, mt_tl_counter_of(it->name), it->u.value);
		pf->st.counters++;
		break;
	case IT_SAMPLE:
		pf->ops->sample(&t->w, abs, it->name, it->extra, it->ip);
		break;
	case IT_STACK:
		pf->ops->stack_sample(&t->w, abs, it->name, (uint64_t)it->u.value);
		pf->st.stack_samples++;
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
		nlate = mt_tl_order_items(t->items, &kept, pf->late, t->ties);
	t->unordered = t->ties = false;
	/* a slice written before its end arrives gets it on the written stack */
	for (size_t i = 0, j = 0; i < kept || j < nlate;) {
		prefetch_ahead(&t->items[i], false);
		if (i < kept && t->items[i].late) {
			i++;
			continue;
		}
		/* one call, inlined: the item written is the next in time of the two */
		bool held = j == nlate || (i < kept && mt_tl_cmp_item(&t->items[i], &pf->late[j]) <= 0);
		write_item(pf, t, held ? &t->items[i++] : &pf->late[j++]);
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
	t->ws_unended = 0;
	close_until(pf, t, UINT64_MAX);
	if (t->dropped) {
		char msg[128];
		snprintf(msg, sizeof msg, "[%" PRIu64 " frames deeper than %d not shown]", t->dropped,
			 MT_PFTRACE_MAX_DEPTH);
		pf->ops->instant(&t->w, t->w.base + t->wmapped, mt_tl_intern(pf, msg));
	}
	if (pf->damage[0])
		pf->ops->instant(&t->w, t->w.base + t->wmapped, mt_tl_intern(pf, pf->damage));
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

void mt_pftrace_set_max_slices(struct mt_pftrace *pf, uint64_t slices)
{
	pf->max_slices = slices;
}

int mt_pftrace_finish(struct mt_pftrace *pf, struct mt_pftrace_stats *st, struct mt_err *err)
{
	write_head(pf);
	if (!pf->ops->arrival_order)
		flush_all(pf, true);
	if (pf->ops->foot)
		pf->ops->foot(pf);
	if (pf->out)
		mt_tl_flush(pf);
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
	else if (pf->write_failed || (pf->out && fflush(pf->out)))
		rc = mt_err_set(err, MT_EIO, "writing the trace: %s",
				strerror(pf->write_failed ? pf->write_errno : errno));
	if (st) {
		*st = pf->st;
		st->threads = pf->nthreads;
	}
	for (size_t i = 0; i < pf->nthreads; i++) {
		struct pthread *t = pf->threads[i];
		mt_bigmem_free(t->items, t->capitems, sizeof *t->items);
		free(t->open);
		free(t->ws);
		free(t->w.names.k);
		free(t->w.names.v);
		free(t->w.open_names);
		struct iids *sm[] = {&t->w.fnames, &t->w.mappings, &t->w.frames, &t->w.stacks};
		for (size_t k = 0; k < sizeof sm / sizeof *sm; k++) {
			free(sm[k]->k);
			free(sm[k]->v);
		}
		free(t);
	}
	free(pf->threads);
	free(pf->pids.v);
	for (unsigned k = 0; k < MT_TL_COUNTERS; k++)
		free(pf->counter_pids[k].v);
	free(pf->late);
	free(pf->comms);
	free(pf->comm_slots);
	free(pf->extra_names);
	free(pf->keybuf);
	mt_strtab_free(&pf->names);
	free(pf->buf);
	free(pf->fxt_str);
	free(pf->fxt_map.k);
	free(pf->fxt_map.v);
	mt_tl_calls_free(pf->calls);
	free(pf);
	return rc;
}
