/* write_calls: the calls writer (pftrace.h's mt_pftrace_new_calls): the
 * window's slices, in time order per thread, turned back into calls (a
 * stack of open slices per thread) and handed to a sink at their ends;
 * stack samples split into their frames. */
#include <stdlib.h>
#include <string.h>

#include "base/table.h"
#include "timeline/writer.h"

struct cframe {
	const char *name, *file;
	int line;
	bool no_call;
	uint64_t ip, start, id;
};

struct cthread {
	struct cframe *v;
	const char **names;  /* v's names, for mt_tl_call's stack */
	uint64_t *paths;     /* v's call paths, for mt_tl_call's paths */
	size_t n, cap, capnames, cappaths;
};

/* A call path: the path of its caller and its function (perf's
 * call_paths), by both (open addressing); ids 1, 2, ... in order of first
 * call. */
struct cpath {
	uint64_t parent;
	const char *name;
	uint64_t id;         /* 0: empty slot */
};

/* An entry of the instruction counts by frame id (open addressing,
 * linear probing, deletion by shifting back: no tombstones). */
struct callinfo {
	uint64_t id;         /* 0: empty */
	struct mt_cs_counts at0, at1;
	bool has0, has1, no_return;
};

struct mt_tl_calls {
	struct mt_tl_calls_sink sink;
	bool any_insn, any_cyc; /* the stream has counted some: it counts them */
	struct cthread *th;  /* by thread index */
	size_t nth;
	uint64_t next_id;
	struct callinfo *ci;
	size_t nci, capci;
	struct cpath *cp;
	size_t ncp, capcp;
	struct mt_tl_stack sample; /* a stack sample's frames */
};

struct mt_tl_calls *mt_tl_calls_new(const struct mt_tl_calls_sink *sink)
{
	struct mt_tl_calls *c = calloc(1, sizeof *c);
	if (c)
		c->sink = *sink;
	return c;
}

void mt_tl_calls_free(struct mt_tl_calls *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nth; i++) {
		free(c->th[i].v);
		free(c->th[i].names);
		free(c->th[i].paths);
	}
	free(c->cp);
	free(c->th);
	free(c->ci);
	mt_tl_stack_free(&c->sample);
	free(c);
}

static size_t ci_slot(uint64_t id, size_t cap)
{
	return (size_t)((id * 0x9e3779b97f4a7c15u) >> 32) & (cap - 1);
}

static bool ci_used(const void *s)
{
	return ((const struct callinfo *)s)->id != 0;
}

static size_t ci_home(const void *s, size_t cap, void *ctx)
{
	(void)ctx;
	return ci_slot(((const struct callinfo *)s)->id, cap);
}

static const struct mt_table_ops ci_ops = {sizeof(struct callinfo), ci_used, ci_home};

/* The entry of id, made when absent (NULL: out of memory). */
static struct callinfo *ci_get(struct mt_pftrace *pf, uint64_t id)
{
	struct mt_tl_calls *c = pf->calls;
	if (!mt_table_reserve((void **)&c->ci, &c->capci, c->nci, &ci_ops, NULL)) {
		pf->oom = true;
		return NULL;
	}
	size_t k = ci_slot(id, c->capci);
	for (; c->ci[k].id; k = (k + 1) & (c->capci - 1))
		if (c->ci[k].id == id)
			return &c->ci[k];
	c->ci[k] = (struct callinfo){.id = id};
	c->nci++;
	return &c->ci[k];
}

void mt_tl_callinfo_begin(struct mt_pftrace *pf, uint64_t id, struct mt_cs_counts at)
{
	struct callinfo *e = id ? ci_get(pf, id) : NULL;
	if (e) {
		e->at0 = at;
		e->has0 = true;
	}
}

void mt_tl_callinfo_end(struct mt_pftrace *pf, uint64_t id, struct mt_cs_counts at, bool no_return)
{
	struct callinfo *e = id ? ci_get(pf, id) : NULL;
	if (e) {
		pf->calls->any_insn |= at.insn != 0;
		pf->calls->any_cyc |= at.cyc != 0;
		e->at1 = at;
		e->has1 = true;
		e->no_return = no_return;
	}
}

bool mt_tl_callinfo_take(struct mt_pftrace *pf, uint64_t id, struct mt_cs_counts *in, bool *no_return)
{
	struct mt_tl_calls *c = pf->calls;
	if (!id || !c->capci)
		return false;
	size_t k = ci_slot(id, c->capci);
	while (c->ci[k].id && c->ci[k].id != id)
		k = (k + 1) & (c->capci - 1);
	if (!c->ci[k].id)
		return false;
	struct callinfo e = c->ci[k];
	/* shift back the entries after it that probed past its slot */
	size_t hole = k;
	for (size_t j = (k + 1) & (c->capci - 1); c->ci[j].id; j = (j + 1) & (c->capci - 1)) {
		size_t home = ci_slot(c->ci[j].id, c->capci);
		if (((j - home) & (c->capci - 1)) >= ((j - hole) & (c->capci - 1))) {
			c->ci[hole] = c->ci[j];
			hole = j;
		}
	}
	c->ci[hole].id = 0;
	c->nci--;
	*no_return = e.no_return;
	if (!e.has0 || !e.has1 || e.at1.insn < e.at0.insn || e.at1.cyc < e.at0.cyc)
		return false;
	*in = (struct mt_cs_counts){e.at1.insn - e.at0.insn, e.at1.cyc - e.at0.cyc};
	/* a stream without counts has none to give */
	return true;
}

static size_t cp_slot(uint64_t parent, const char *name, size_t cap)
{
	uint64_t h = (parent * 0x9e3779b97f4a7c15u) ^ ((uint64_t)(uintptr_t)name * 0xc2b2ae3d27d4eb4fu);
	return (size_t)(h ^ (h >> 31)) & (cap - 1);
}

static bool cp_used(const void *s)
{
	return ((const struct cpath *)s)->id != 0;
}

static size_t cp_home(const void *s, size_t cap, void *ctx)
{
	(void)ctx;
	const struct cpath *p = s;
	return cp_slot(p->parent, p->name, cap);
}

static const struct mt_table_ops cp_ops = {sizeof(struct cpath), cp_used, cp_home};

/* The id of the path (parent, name), a new one the first time; 0: out of memory. */
static uint64_t call_path(struct mt_pftrace *pf, uint64_t parent, const char *name)
{
	struct mt_tl_calls *c = pf->calls;
	if (!mt_table_reserve((void **)&c->cp, &c->capcp, c->ncp, &cp_ops, NULL)) {
		pf->oom = true;
		return 0;
	}
	size_t k = cp_slot(parent, name, c->capcp);
	for (; c->cp[k].id; k = (k + 1) & (c->capcp - 1))
		if (c->cp[k].parent == parent && c->cp[k].name == name)
			return c->cp[k].id;
	c->cp[k] = (struct cpath){parent, name, ++c->ncp};
	return c->ncp;
}

static struct cthread *cthread_of(struct seqw *w)
{
	struct mt_tl_calls *c = w->pf->calls;
	if (w->k >= c->nth) {
		size_t n = w->k + 1, cap = c->nth;
		if (!mt_grow((void **)&c->th, &cap, n, sizeof *c->th)) {
			w->pf->oom = true;
			return NULL;
		}
		memset(c->th + c->nth, 0, (n - c->nth) * sizeof *c->th);
		c->nth = n;
	}
	return &c->th[w->k];
}

static void calls_thread(struct mt_pftrace *pf, struct pthread *t, bool first_of_pid)
{
	(void)first_of_pid;
	struct mt_tl_calls *c = pf->calls;
	if (c->sink.thread)
		c->sink.thread(c->sink.ctx, t->pid, t->tid, mt_tl_comm(pf, t->pid, t->tid),
			       mt_tl_comm(pf, t->pid, t->pid));
}

static void calls_begin(struct seqw *w, uint64_t time, const char *name, uint64_t ip)
{
	struct cthread *t = cthread_of(w);
	if (!t)
		return;
	if (!mt_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v) ||
	    !mt_grow((void **)&t->names, &t->capnames, t->n + 1, sizeof *t->names) ||
	    !mt_grow((void **)&t->paths, &t->cappaths, t->n + 1, sizeof *t->paths)) {
		w->pf->oom = true;
		return;
	}
	t->v[t->n] = (struct cframe){.name = name, .file = w->file, .line = w->line, .no_call = w->no_call,
				     .ip = ip, .start = time, .id = ++w->pf->calls->next_id};
	/* names are interned: a pointer names a function */
	t->paths[t->n] = call_path(w->pf, t->n ? t->paths[t->n - 1] : 0, name);
	t->names[t->n++] = name;
}

static void calls_end(struct seqw *w, uint64_t time, const char *name)
{
	(void)name;
	struct mt_tl_calls *c = w->pf->calls;
	struct cthread *t = cthread_of(w);
	if (!t || !t->n)
		return;
	const struct cframe *f = &t->v[--t->n];
	struct mt_tl_call call = {
		.pid = w->pid, .tid = w->tid, .name = f->name, .file = f->file, .line = f->line, .ip = f->ip,
		.start = f->start, .end = time, .id = f->id, .parent = t->n ? t->v[t->n - 1].id : 0,
		.depth = t->n, .stack = t->names, .paths = t->paths, .insn = w->call_count.insn, .cyc = w->call_count.cyc,
		.has_insn = w->call_known && c->any_insn, .has_cyc = w->call_known && c->any_cyc,
		.no_call = f->no_call, .no_return = w->no_return,
	};
	if (call.no_call)
		call.has_insn = call.has_cyc = false; /* counted from its stack's start, not its call */
	if (!call.has_insn)
		call.insn = 0;
	if (!call.has_cyc)
		call.cyc = 0;
	c->sink.call(c->sink.ctx, &call);
}

static void calls_instant(struct seqw *w, uint64_t time, const char *name)
{
	(void)w;
	(void)time;
	(void)name;
}

static void calls_sample(struct seqw *w, uint64_t time, const char *name, uint32_t k, uint64_t ip)
{
	(void)w;
	(void)time;
	(void)name;
	(void)k;
	(void)ip;
}

static void calls_counter(struct seqw *w, uint64_t time, unsigned k, double value)
{
	(void)k;
	(void)w;
	(void)time;
	(void)value;
}

/* A stack sample, its key split back into its frames. */
static void calls_stack_sample(struct seqw *w, uint64_t time, const char *key, uint64_t period)
{
	(void)period;
	struct mt_tl_calls *c = w->pf->calls;
	if (!c->sink.sample)
		return;
	if (!mt_tl_stack_split(&c->sample, key)) {
		w->pf->oom = true;
		return;
	}
	c->sink.sample(c->sink.ctx, w->pid, w->tid, time, c->sample.n, c->sample.names, c->sample.dsos, period);
}

const struct mt_tl_ops mt_tl_calls = {
	.name = "calls", .thread = calls_thread, .slice_begin = calls_begin, .slice_end = calls_end,
	.instant = calls_instant, .sample = calls_sample, .counter = calls_counter,
	.stack_sample = calls_stack_sample,
};
