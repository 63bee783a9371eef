/* report: per-function figures from the calls (report.h). */
#define _GNU_SOURCE
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "base/table.h"

/* Per thread: the children's durations and instructions summed for each
 * open depth (a call's children end before it does). */
struct child_sums {
	uint64_t ns, insn, cyc;
};
struct rthread_state {
	struct child_sums *child;
	size_t cap;
};

#define NAME_CACHE 4096

struct mt_report {
	struct mt_report_opts opts;
	struct mt_report_next next;
	bool oom;
	struct mt_strtab names;
	struct { const char *from, *to; } name_cache[NAME_CACHE]; /* by the writer's pointer */
	struct mt_fstat *f;
	size_t nf, capf;
	uint32_t *slots;      /* open addressing: f index + 1 */
	size_t capslots;
	size_t *order, norder; /* f's indices in the last sort's order */
	struct mt_rthread *th;
	struct rthread_state *ts;
	size_t nth, capth, capts;
	size_t last_th;       /* the thread found last */
	uint32_t *thslots;    /* open addressing by (pid, tid): th index + 1 */
	size_t capthslots;
	uint64_t samples, period;
	char *sample_event, *lost;
	bool period_ns;
	const char **seen;    /* a sample's distinct functions */
	size_t capseen;
};

struct mt_report *mt_report_new(const struct mt_report_opts *opts)
{
	struct mt_report *r = calloc(1, sizeof *r);
	if (r && opts)
		r->opts = *opts;
	return r;
}

bool mt_report_oom(const struct mt_report *r)
{
	return r->oom;
}

static bool selected(const struct mt_report *r, uint32_t pid, uint32_t tid)
{
	bool ok = !r->opts.npids;
	for (size_t i = 0; i < r->opts.npids && !ok; i++)
		ok = r->opts.pids[i] == pid;
	if (!ok)
		return false;
	ok = !r->opts.ntids;
	for (size_t i = 0; i < r->opts.ntids && !ok; i++)
		ok = r->opts.tids[i] == tid;
	return ok;
}

static const char *intern(struct mt_report *r, const char *s)
{
	const char *v = mt_strtab_intern(&r->names, s);
	if (!v)
		r->oom = true;
	return v;
}

/* The writer's names are interned there: the same pointer, the same name. */
static const char *intern_cached(struct mt_report *r, const char *s)
{
	size_t k = ((uintptr_t)s >> 3) & (NAME_CACHE - 1);
	if (r->name_cache[k].from == s)
		return r->name_cache[k].to;
	const char *v = intern(r, s);
	if (v) {
		r->name_cache[k].from = s;
		r->name_cache[k].to = v;
	}
	return v;
}

static size_t thread_home(uint32_t pid, uint32_t tid, size_t cap)
{
	uint64_t h = (((uint64_t)pid << 32) | tid) * 0x9e3779b97f4a7c15u;
	return (size_t)(h >> 17) & (cap - 1);
}

/* The thread's index, by a hash of (pid, tid): a stream of 200,000 threads
 * costs no scan per event */
static size_t thread_index(struct mt_report *r, uint32_t pid, uint32_t tid)
{
	if (r->last_th < r->nth && r->th[r->last_th].pid == pid && r->th[r->last_th].tid == tid)
		return r->last_th;
	size_t mask = r->capthslots - 1, j = r->capthslots ? thread_home(pid, tid, r->capthslots) : 0;
	for (; r->capthslots && r->thslots[j]; j = (j + 1) & mask) {
		const struct mt_rthread *t = &r->th[r->thslots[j] - 1];
		if (t->pid == pid && t->tid == tid)
			return r->last_th = r->thslots[j] - 1;
	}
	if (2 * (r->nth + 1) > r->capthslots) { /* at most half full: grown, every thread placed again */
		size_t cap = r->capthslots ? 2 * r->capthslots : 64;
		uint32_t *ns = calloc(cap, sizeof *ns);
		if (!ns) {
			r->oom = true;
			return SIZE_MAX;
		}
		for (size_t i = 0; i < r->nth; i++) {
			size_t k = thread_home(r->th[i].pid, r->th[i].tid, cap);
			while (ns[k])
				k = (k + 1) & (cap - 1);
			ns[k] = (uint32_t)i + 1;
		}
		free(r->thslots);
		r->thslots = ns;
		r->capthslots = cap;
		for (j = thread_home(pid, tid, cap); ns[j]; j = (j + 1) & (cap - 1))
			;
	}
	size_t capts = r->capts;
	if (!mt_grow((void **)&r->th, &r->capth, r->nth + 1, sizeof *r->th) ||
	    !mt_grow((void **)&r->ts, &capts, r->nth + 1, sizeof *r->ts)) {
		r->oom = true;
		return SIZE_MAX;
	}
	r->capts = capts;
	r->th[r->nth] = (struct mt_rthread){.id = (uint32_t)r->nth + 1, .pid = pid, .tid = tid, .first = UINT64_MAX};
	r->ts[r->nth] = (struct rthread_state){0};
	r->thslots[j] = (uint32_t)r->nth + 1;
	return r->last_th = r->nth++;
}

static uint64_t fkey_hash(const char *name, uint32_t pid, uint32_t tid)
{
	uint64_t h = (uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15u;
	h ^= (((uint64_t)pid << 32) | tid) * 0xc2b2ae3d27d4eb4fu;
	return h ^ (h >> 29);
}

static bool row_used(const void *s)
{
	return *(const uint32_t *)s != 0;
}

static size_t row_home(const void *s, size_t cap, void *ctx)
{
	const struct mt_fstat *f = &((const struct mt_report *)ctx)->f[*(const uint32_t *)s - 1];
	return fkey_hash(f->name, f->pid, f->tid) & (cap - 1);
}

static const struct mt_table_ops row_ops = {sizeof(uint32_t), row_used, row_home};

/* The row of (name, pid, tid) (pid and tid 0 unless per thread), made when new. */
static struct mt_fstat *fstat_of(struct mt_report *r, const char *name, uint32_t pid, uint32_t tid)
{
	if (!r->opts.per_thread)
		pid = tid = 0;
	if (!mt_table_reserve((void **)&r->slots, &r->capslots, r->nf, &row_ops, r)) {
		r->oom = true;
		return NULL;
	}
	size_t k = fkey_hash(name, pid, tid) & (r->capslots - 1);
	for (; r->slots[k]; k = (k + 1) & (r->capslots - 1)) {
		struct mt_fstat *f = &r->f[r->slots[k] - 1];
		if (f->name == name && f->pid == pid && f->tid == tid)
			return f;
	}
	if (r->nf >= UINT32_MAX - 1 || !mt_grow((void **)&r->f, &r->capf, r->nf + 1, sizeof *r->f)) {
		r->oom = true;
		return NULL;
	}
	r->slots[k] = (uint32_t)r->nf + 1;
	struct mt_fstat *f = &r->f[r->nf++];
	*f = (struct mt_fstat){.id = (uint32_t)r->nf, .name = name, .pid = pid, .tid = tid};
	return f;
}

static void rp_thread(void *ctx, uint32_t pid, uint32_t tid, const char *comm, const char *process_comm)
{
	struct mt_report *r = ctx;
	size_t i = thread_index(r, pid, tid);
	if (i != SIZE_MAX) {
		r->th[i].comm = comm ? intern(r, comm) : NULL;
		r->th[i].process_comm = process_comm ? intern(r, process_comm) : NULL;
	}
	if (r->next.thread)
		r->next.thread(r->next.ctx, pid, tid, comm, process_comm);
}

/* Counts rc->c into rc (its self figures, row and thread); false when it
 * is not counted (not selected, too short, too deep). */
static bool count_call(struct mt_report *r, struct mt_report_call *rc)
{
	const struct mt_tl_call *c = rc->c;
	uint64_t *self_ns = &rc->self_ns;
	struct mt_cs_counts *self = &rc->self;
	size_t ti = thread_index(r, c->pid, c->tid);
	if (ti == SIZE_MAX)
		return false;
	struct rthread_state *s = &r->ts[ti];
	size_t had = s->cap;
	if (!mt_grow((void **)&s->child, &s->cap, c->depth + 1, sizeof *s->child)) {
		r->oom = true;
		return false;
	}
	memset(s->child + had, 0, (s->cap - had) * sizeof *s->child);
	/* this depth's sums are its children's; reset for the next call there */
	uint64_t dur = c->end > c->start ? c->end - c->start : 0;
	struct child_sums ch = s->child[c->depth];
	s->child[c->depth] = (struct child_sums){0};
	uint64_t children = ch.ns;
	if ((r->opts.max_depth && c->depth >= r->opts.max_depth) || dur < r->opts.min_duration ||
	    !selected(r, c->pid, c->tid))
		return false; /* its time stays its parent's own */
	if (c->depth) {
		s->child[c->depth - 1].ns += dur;
		s->child[c->depth - 1].insn += c->insn;
		s->child[c->depth - 1].cyc += c->cyc;
	}
	struct mt_rthread *t = &r->th[ti];
	t->calls++;
	if (c->start < t->first)
		t->first = c->start;
	if (c->end > t->last)
		t->last = c->end;
	if (!c->depth)
		t->root_total += dur;
	*self_ns = children < dur ? dur - children : 0;
	self->insn = ch.insn < c->insn ? c->insn - ch.insn : 0;
	self->cyc = ch.cyc < c->cyc ? c->cyc - ch.cyc : 0;
	const char *name = intern_cached(r, c->name);
	struct mt_fstat *f = name ? fstat_of(r, name, c->pid, c->tid) : NULL;
	rc->function = f;
	rc->thread = &r->th[ti];
	if (!f)
		return true;
	f->calls++;
	f->total += dur;
	f->self += *self_ns;
	if (c->has_insn) {
		f->insn_calls++;
		f->insn += c->insn;
		f->self_insn += self->insn;
	}
	if (c->has_cyc) {
		f->cyc_calls++;
		f->cyc += c->cyc;
		f->self_cyc += self->cyc;
	}
	f->no_call += c->no_call;
	f->no_return += c->no_return;
	if (!mt_durhist_add(&f->hist, dur))
		r->oom = true;
	return true;
}

/* Counts of children without them are zero: the child sums use c->insn
 * and c->cyc, which are 0 then. */
static void rp_call(void *ctx, const struct mt_tl_call *c)
{
	struct mt_report *r = ctx;
	struct mt_report_call rc = {.c = c};
	if (count_call(r, &rc) && r->next.call)
		r->next.call(r->next.ctx, &rc);
}

static void rp_sample(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, size_t n, const char *const *names,
		      const char *const *dsos, uint64_t period)
{
	struct mt_report *r = ctx;
	if (!n || !selected(r, pid, tid))
		return;
	size_t ti = thread_index(r, pid, tid);
	if (ti != SIZE_MAX) {
		r->th[ti].samples++;
		r->th[ti].period += period;
	}
	r->samples++;
	r->period += period;
	if (!mt_grow((void **)&r->seen, &r->capseen, n, sizeof *r->seen)) {
		r->oom = true;
		return;
	}
	size_t nseen = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = intern(r, names[i]);
		struct mt_fstat *f = name ? fstat_of(r, name, pid, tid) : NULL;
		if (!f)
			continue;
		if (i == n - 1) {
			f->samples_self++;
			f->period_self += period;
		}
		/* once per sample however often it recurs (perf report --children) */
		bool again = false;
		for (size_t k = 0; k < nseen && !again; k++)
			again = r->seen[k] == name;
		if (!again) {
			r->seen[nseen++] = name;
			f->samples_children++;
			f->period_children += period;
		}
	}
	if (r->next.sample)
		r->next.sample(r->next.ctx, pid, tid, time, n, names, dsos, period);
}

void mt_report_sink(struct mt_report *r, struct mt_tl_calls_sink *sink, const struct mt_report_next *next)
{
	if (next)
		r->next = *next;
	*sink = (struct mt_tl_calls_sink){.ctx = r, .thread = rp_thread, .call = rp_call, .sample = rp_sample};
}

int mt_report_sort_parse(const char *s)
{
	static const char *const keys[] = {"total", "self", "calls", "max", "p99", "samples"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (!strcmp(s, keys[i]))
			return (int)i;
	return -1;
}

static bool sort_sampled;

static uint64_t sort_value(const struct mt_fstat *f, enum mt_report_sort key)
{
	switch (key) {
	case MT_SORT_TOTAL: return sort_sampled ? f->period_children : f->total;
	case MT_SORT_SELF: return sort_sampled ? f->period_self : f->self;
	case MT_SORT_CALLS: return f->calls;
	case MT_SORT_MAX: return f->hist.max;
	case MT_SORT_P99: return mt_durhist_quantile(&f->hist, 0.99);
	case MT_SORT_SAMPLES: return f->samples_children;
	}
	return 0;
}

static enum mt_report_sort sort_key;
static const struct mt_fstat *sort_rows;

static int cmp_fstat(const void *pa, const void *pb)
{
	const struct mt_fstat *a = &sort_rows[*(const size_t *)pa], *b = &sort_rows[*(const size_t *)pb];
	uint64_t va = sort_value(a, sort_key), vb = sort_value(b, sort_key);
	if (va != vb)
		return va > vb ? -1 : 1;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

void mt_report_sort(struct mt_report *r, enum mt_report_sort key)
{
	/* an order of the rows, which stay where the lookup table finds them */
	size_t *order = realloc(r->order, (r->nf ? r->nf : 1) * sizeof *order);
	if (!order) {
		r->oom = true;
		return;
	}
	r->order = order;
	r->norder = r->nf;
	for (size_t i = 0; i < r->nf; i++)
		order[i] = i;
	sort_key = key;
	sort_rows = r->f;
	sort_sampled = r->samples > 0;
	qsort(order, r->nf, sizeof *order, cmp_fstat);
}

size_t mt_report_nfuncs(const struct mt_report *r)
{
	return r->nf;
}

const struct mt_fstat *mt_report_func(const struct mt_report *r, size_t i)
{
	/* rows made after the last sort follow it in the order they came */
	return &r->f[i < r->norder ? r->order[i] : i];
}

size_t mt_report_nthreads(const struct mt_report *r)
{
	return r->nth;
}

const struct mt_rthread *mt_report_thread(const struct mt_report *r, size_t i)
{
	return &r->th[i];
}

const struct mt_rthread *mt_report_find_thread(const struct mt_report *r, uint32_t pid, uint32_t tid)
{
	if (!r->capthslots)
		return NULL;
	for (size_t j = thread_home(pid, tid, r->capthslots); r->thslots[j]; j = (j + 1) & (r->capthslots - 1)) {
		const struct mt_rthread *t = &r->th[r->thslots[j] - 1];
		if (t->pid == pid && t->tid == tid)
			return t;
	}
	return NULL;
}

uint64_t mt_report_samples(const struct mt_report *r)
{
	return r->samples;
}

uint64_t mt_report_period(const struct mt_report *r)
{
	return r->period;
}

void mt_report_set_sample_event(struct mt_report *r, const char *event)
{
	free(r->sample_event);
	r->sample_event = event && *event ? strdup(event) : NULL;
	if (event && *event && !r->sample_event)
		r->oom = true;
	/* perf's software clocks count ns: "cpu-clock", "task-clock:u", ... */
	r->period_ns = r->sample_event && (!strncmp(event, "cpu-clock", 9) || !strncmp(event, "task-clock", 10));
}

void mt_report_set_lost(struct mt_report *r, const char *lost)
{
	free(r->lost);
	r->lost = lost && *lost ? strdup(lost) : NULL;
	if (lost && *lost && !r->lost)
		r->oom = true;
}

const char *mt_report_lost(const struct mt_report *r)
{
	return r->lost;
}

const char *mt_report_sample_event(const struct mt_report *r)
{
	return r->sample_event;
}

bool mt_report_period_is_ns(const struct mt_report *r)
{
	return r->period_ns;
}

void mt_report_off_cpu(const struct mt_report *r, uint64_t *off_cpu_ns, uint64_t *preempted_ns)
{
	/* their rows' totals: always leaves (a thread calls nothing while off
	 * CPU), so never counted twice */
	*off_cpu_ns = *preempted_ns = 0;
	for (size_t i = 0; i < r->nf; i++) {
		if (!strcmp(r->f[i].name, "[off-CPU]"))
			*off_cpu_ns += r->f[i].total;
		else if (!strcmp(r->f[i].name, "[preempted]"))
			*preempted_ns += r->f[i].total;
	}
}

const struct mt_report_opts *mt_report_options(const struct mt_report *r)
{
	return &r->opts;
}

void mt_report_free(struct mt_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nf; i++)
		mt_durhist_free(&r->f[i].hist);
	for (size_t i = 0; i < r->nth; i++) {
		free(r->ts[i].child);
	}
	free(r->f);
	free(r->order);
	free(r->slots);
	free(r->thslots);
	free(r->th);
	free(r->ts);
	free(r->seen);
	free(r->sample_event);
	free(r->lost);
	mt_strtab_free(&r->names);
	free(r);
}
