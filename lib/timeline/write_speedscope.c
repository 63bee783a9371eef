/* write_speedscope: the timeline in speedscope's own file format
 * (https://www.speedscope.app/file-format-schema.json), what mt-view
 * serves. Per thread an evented profile: an O event where a slice begins,
 * a C where it ends, at integer nanoseconds since the trace's first event,
 * so a reader adds nothing up (Chrome JSON's microseconds with decimals
 * made ts + dur land past the next slice's ts in doubles). For a thread
 * with stack samples also a sampled profile: each sample's stack, weighed
 * by its period, for the flame graph views.
 *
 * Frames are functions: one per name (speedscope takes a frame's key as
 * its identity; an address in it made one frame per sampled address),
 * with the file and line its slices give when they all agree. A profile's
 * events are held per thread until the foot (the window writes threads
 * interleaved, a profile is one array): 16 bytes a slice end. */
#define _GNU_SOURCE
#include "timeline/writer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/version.h"

struct ss_frame {
	const char *name, *file; /* interned; file NULL: none known (yet) */
	int32_t line;
	bool file_differs, line_differs;
};

struct ss_event {
	uint64_t at;             /* ns since the trace's base */
	uint32_t frame;          /* UINT32_MAX: a C (close); else an O of this frame */
};

struct ss_sample {
	uint32_t stack;          /* offset of its stack in stack_pool: length, then frames */
	uint64_t weight;
};

struct ss_thread {
	uint32_t pid, tid;
	struct ss_event *ev;
	size_t nev, capev;
	uint64_t *dur;           /* at the foot: each O's slice's length */
	uint64_t marks;          /* instants (decode errors, damage): not drawn, named */
	const char *first_mark;
	struct ss_sample *samples;
	size_t nsamples, capsamples;
	uint64_t weights;        /* the samples' weights added up */
};

/* open addressing, pointer -> index */
struct ss_map {
	const void **k;
	uint32_t *v;
	size_t n, cap;
};

struct mt_tl_ss {
	struct ss_frame *frames;
	size_t nframes, capframes;
	struct ss_map by_name, by_stack;
	uint32_t *stack_pool;
	size_t npool, cappool;
	struct ss_thread *th;    /* by the pthread's index */
	size_t nth, capth;
	struct mt_tl_stack split; /* a stack sample's key split */
	uint32_t *path;          /* its frames */
	size_t cappath;
};

static size_t ptr_hash(const void *p, size_t cap)
{
	return (size_t)(((uintptr_t)p * 0x9e3779b97f4a7c15u) >> 20) & (cap - 1);
}

/* The slot of key: its value's, or the empty one it would take (NULL:
 * out of memory). */
static uint32_t *map_slot(struct ss_map *m, const void *key, bool *found)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 1024;
		const void **k = calloc(cap, sizeof *k);
		uint32_t *v = calloc(cap, sizeof *v);
		if (!k || !v) {
			free(k);
			free(v);
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->k[i])
				continue;
			size_t j = ptr_hash(m->k[i], cap);
			while (k[j])
				j = (j + 1) & (cap - 1);
			k[j] = m->k[i];
			v[j] = m->v[i];
		}
		free(m->k);
		free(m->v);
		m->k = k;
		m->v = v;
		m->cap = cap;
	}
	size_t j = ptr_hash(key, m->cap);
	while (m->k[j] && m->k[j] != key)
		j = (j + 1) & (m->cap - 1);
	*found = m->k[j] != NULL;
	if (!*found) {
		m->k[j] = key;
		m->n++;
	}
	return &m->v[j];
}

/* The frame of the function name, made on first sight. Names come
 * interned by the call stacks or by this writer (stack samples' frames):
 * a pointer seen before is one look-up, a new one is interned here to
 * find its function's frame by content. */
static uint32_t frame_of(struct mt_pftrace *pf, const char *name)
{
	struct mt_tl_ss *ss = pf->ss;
	bool found;
	uint32_t *slot = map_slot(&ss->by_name, name, &found);
	if (!slot) {
		pf->oom = true;
		return 0;
	}
	if (found)
		return *slot;
	const char *canon = mt_tl_intern(pf, name);
	uint32_t k;
	uint32_t *cslot = canon == name ? slot : map_slot(&ss->by_name, canon, &found);
	if (!cslot) {
		pf->oom = true;
		return 0;
	}
	if (canon != name && found) {
		k = *cslot;
	} else {
		if (!mt_grow((void **)&ss->frames, &ss->capframes, ss->nframes + 1, sizeof *ss->frames)) {
			pf->oom = true;
			return 0;
		}
		k = *cslot = (uint32_t)ss->nframes;
		ss->frames[ss->nframes++] = (struct ss_frame){.name = canon};
	}
	/* the map may have grown since slot was found: found again */
	if (!(slot = map_slot(&ss->by_name, name, &found)))
		pf->oom = true;
	else
		*slot = k;
	return k;
}

static struct ss_thread *thread_of(struct seqw *w)
{
	struct mt_tl_ss *ss = w->pf->ss;
	if (w->k >= ss->nth) {
		if (!mt_grow((void **)&ss->th, &ss->capth, w->k + 1, sizeof *ss->th)) {
			w->pf->oom = true;
			return NULL;
		}
		memset(ss->th + ss->nth, 0, (w->k + 1 - ss->nth) * sizeof *ss->th);
		ss->nth = w->k + 1;
	}
	struct ss_thread *t = &ss->th[w->k];
	t->pid = w->pid;
	t->tid = w->tid;
	return t;
}

static void add_event(struct seqw *w, uint64_t time, uint32_t frame)
{
	struct ss_thread *t = thread_of(w);
	if (!t)
		return;
	if (!mt_grow((void **)&t->ev, &t->capev, t->nev + 1, sizeof *t->ev)) {
		w->pf->oom = true;
		return;
	}
	t->ev[t->nev++] = (struct ss_event){.at = time - w->base, .frame = frame};
}

static void ss_head(struct mt_pftrace *pf)
{
	if (!(pf->ss = calloc(1, sizeof *pf->ss)))
		pf->oom = true;
}

static void ss_thread(struct mt_pftrace *pf, struct pthread *t, bool first)
{
	(void)first;
	if (pf->ss)
		thread_of(&t->w);
}

static void ss_slice_begin(struct seqw *w, uint64_t time, const char *name, uint64_t ip)
{
	(void)ip;
	struct mt_pftrace *pf = w->pf;
	if (!pf->ss)
		return;
	uint32_t k = frame_of(pf, name ? name : mt_tl_intern(pf, ""));
	if (pf->oom)
		return;
	struct ss_frame *f = &pf->ss->frames[k];
	if (w->file) { /* the file and line where its slices agree */
		if (!f->file) {
			f->file = w->file;
			f->line = w->line;
		} else {
			f->file_differs |= f->file != w->file;
			f->line_differs |= f->line != w->line;
		}
	}
	add_event(w, time, k);
}

static void ss_slice_end(struct seqw *w, uint64_t time, const char *name)
{
	(void)name;
	if (w->pf->ss)
		add_event(w, time, UINT32_MAX);
}

/* Instants (decode errors, damage, frames too deep) have no place in a
 * speedscope profile: counted, and the profile's name says so. Event
 * samples neither; mt-toperfetto's count of them stands. */
static void ss_instant(struct seqw *w, uint64_t time, const char *name)
{
	(void)time;
	struct ss_thread *t = w->pf->ss ? thread_of(w) : NULL;
	if (t && !t->marks++)
		t->first_mark = name;
}

static void ss_sample(struct seqw *w, uint64_t time, const char *name, uint32_t k, uint64_t ip)
{
	(void)w, (void)time, (void)name, (void)k, (void)ip;
}

static void ss_counter(struct seqw *w, uint64_t time, unsigned k, double value)
{
	(void)w, (void)time, (void)k, (void)value;
}

/* A stack sample: its key split once into frames, the sample kept with
 * its period. */
static void ss_stack_sample(struct seqw *w, uint64_t time, const char *key, uint64_t period)
{
	(void)time;
	struct mt_pftrace *pf = w->pf;
	struct mt_tl_ss *ss = pf->ss;
	struct ss_thread *t = ss ? thread_of(w) : NULL;
	if (!t)
		return;
	bool found;
	uint32_t *slot = map_slot(&ss->by_stack, key, &found);
	if (!slot) {
		pf->oom = true;
		return;
	}
	if (!found) {
		/* once per distinct stack: its frames, whole names interned */
		if (!mt_tl_stack_split(&ss->split, key) ||
		    !mt_grow((void **)&ss->path, &ss->cappath, ss->split.n + 1, sizeof *ss->path)) {
			pf->oom = true;
			return;
		}
		size_t n = ss->split.n;
		for (size_t i = 0; i < n && !pf->oom; i++)
			ss->path[i] = frame_of(pf, mt_tl_intern(pf, ss->split.names[i]));
		if (pf->oom || !mt_grow((void **)&ss->stack_pool, &ss->cappool, ss->npool + n + 1, sizeof *ss->stack_pool)) {
			pf->oom = true;
			return;
		}
		*slot = (uint32_t)ss->npool;
		ss->stack_pool[ss->npool++] = (uint32_t)n;
		memcpy(ss->stack_pool + ss->npool, ss->path, n * sizeof *ss->path);
		ss->npool += n;
	}
	if (!mt_grow((void **)&t->samples, &t->capsamples, t->nsamples + 1, sizeof *t->samples)) {
		pf->oom = true;
		return;
	}
	t->samples[t->nsamples++] = (struct ss_sample){.stack = *slot, .weight = period};
	t->weights += period;
}

#define LIT(pf, s) mt_tl_out((pf), (s), sizeof(s) - 1)

static void out_dec(struct mt_pftrace *pf, uint64_t v)
{
	char b[24];
	mt_tl_out(pf, b, (size_t)(mt_put_dec(b, v) - b));
}

/* "s" as a JSON string, quotes included. */
static void out_str(struct mt_pftrace *pf, const char *s)
{
	size_t cap = 6 * strlen(s) + 8;
	char small[512], *b = cap <= sizeof small ? small : malloc(cap);
	if (!b) {
		pf->oom = true;
		return;
	}
	b[0] = '"';
	char *e = mt_utf8_json(b + 1, cap - 1, s);
	*e++ = '"';
	mt_tl_out(pf, b, (size_t)(e - b));
	if (b != small)
		free(b);
}

/* "COMM (pid P, tid T)WHAT", and what is not drawn: marks, short slices */
static void profile_name(struct mt_pftrace *pf, const struct ss_thread *t, const char *what, uint64_t under_ns)
{
	const char *comm = mt_tl_comm(pf, t->pid, t->tid);
	char b[160], m[320] = "", u[96] = "";
	snprintf(b, sizeof b, " (pid %u, tid %u)%s", t->pid, t->tid, what);
	if (t->marks)
		snprintf(m, sizeof m, "; %" PRIu64 " mark%s not drawn (%.200s%s)", t->marks, t->marks == 1 ? "" : "s",
			 t->first_mark ? t->first_mark : "", t->marks > 1 ? ", ..." : "");
	if (under_ns)
		snprintf(u, sizeof u, "; slices under %" PRIu64 ".%03" PRIu64 " us not drawn", under_ns / 1000,
			 under_ns % 1000);
	char *s = NULL;
	if (asprintf(&s, "%s%s%s%s", comm ? comm : "?", b, m, u) < 0) {
		pf->oom = true;
		return;
	}
	out_str(pf, s);
	free(s);
}

/* Each O's slice's length into t->dur (the ends of the window's begins:
 * balanced); false: out of memory. */
static bool slice_lengths(struct ss_thread *t)
{
	size_t *stack = malloc((t->nev + 1) * sizeof *stack), depth = 0;
	if (!stack || !(t->dur = calloc(t->nev + 1, sizeof *t->dur))) {
		free(stack);
		return false;
	}
	for (size_t i = 0; i < t->nev; i++) {
		if (t->ev[i].frame != UINT32_MAX)
			stack[depth++] = i;
		else if (depth)
			t->dur[stack[depth - 1]] = t->ev[i].at - t->ev[stack[depth - 1]].at, depth--;
	}
	free(stack);
	return true;
}

/* The slices written: those at least min_ns long (a child is no longer
 * than its parent: what is written still nests). */
static void write_evented(struct mt_pftrace *pf, const struct ss_thread *t, uint64_t min_ns)
{
	LIT(pf, "{\"type\":\"evented\",\"name\":");
	profile_name(pf, t, "", min_ns);
	LIT(pf, ",\"unit\":\"nanoseconds\",\"startValue\":");
	out_dec(pf, t->ev[0].at);
	LIT(pf, ",\"endValue\":");
	out_dec(pf, t->ev[t->nev - 1].at);
	LIT(pf, ",\"events\":[");
	/* a close names the frame it closes: the one its open pushed (with
	 * UINT32_MAX: not written) */
	uint32_t *stack = malloc((t->nev + 1) * sizeof *stack);
	if (!stack) {
		pf->oom = true;
		return;
	}
	size_t depth = 0;
	bool first = true;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ss_event *e = &t->ev[i];
		uint32_t frame;
		if (e->frame == UINT32_MAX) {
			if (!depth)
				continue; /* cannot happen: the window writes ends of its begins only */
			frame = stack[--depth];
		} else {
			frame = stack[depth++] = t->dur[i] >= min_ns ? e->frame : UINT32_MAX;
		}
		if (frame == UINT32_MAX)
			continue;
		char b[96], *p = b;
		if (!first)
			*p++ = ',';
		first = false;
		p = e->frame == UINT32_MAX ? memcpy(p, "{\"type\":\"C\",\"frame\":", 20) : memcpy(p, "{\"type\":\"O\",\"frame\":", 20);
		p = mt_put_dec(p + 20, frame);
		memcpy(p, ",\"at\":", 6);
		p = mt_put_dec(p + 6, e->at);
		*p++ = '}';
		mt_tl_out(pf, b, (size_t)(p - b));
	}
	free(stack);
	LIT(pf, "]}");
}

static void write_sampled(struct mt_pftrace *pf, const struct ss_thread *t, bool grouped)
{
	const struct mt_tl_ss *ss = pf->ss;
	LIT(pf, "{\"type\":\"sampled\",\"name\":");
	profile_name(pf, t, grouped ? ": stack samples, one per stack (time order not kept)" : ": stack samples", 0);
	LIT(pf, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":");
	out_dec(pf, t->weights);
	LIT(pf, ",\"samples\":[");
	for (size_t i = 0; i < t->nsamples; i++) {
		const uint32_t *s = ss->stack_pool + t->samples[i].stack;
		mt_tl_out(pf, i ? ",[" : "[", i ? 2 : 1);
		for (uint32_t j = 0; j < s[0]; j++) {
			char b[16], *p = b;
			if (j)
				*p++ = ',';
			p = mt_put_dec(p, s[1 + j]);
			mt_tl_out(pf, b, (size_t)(p - b));
		}
		LIT(pf, "]");
	}
	LIT(pf, "],\"weights\":[");
	for (size_t i = 0; i < t->nsamples; i++) {
		if (i)
			LIT(pf, ",");
		out_dec(pf, t->samples[i].weight);
	}
	LIT(pf, "]}");
}

static void ss_free(struct mt_tl_ss *ss)
{
	for (size_t i = 0; i < ss->nth; i++) {
		free(ss->th[i].ev);
		free(ss->th[i].dur);
		free(ss->th[i].samples);
	}
	free(ss->th);
	free(ss->frames);
	free(ss->by_name.k);
	free(ss->by_name.v);
	free(ss->by_stack.k);
	free(ss->by_stack.v);
	free(ss->stack_pool);
	free(ss->path);
	mt_tl_stack_free(&ss->split);
	free(ss);
}

static int cmp_stack(const void *a, const void *b)
{
	uint32_t x = ((const struct ss_sample *)a)->stack, y = ((const struct ss_sample *)b)->stack;
	return x < y ? -1 : x > y;
}

/* Samples in a row with one stack made one, their weights added (what
 * speedscope does as it reads them); then, past MT_SS_SAMPLE_FRAMES frame
 * entries a max_slice (all threads together: the file a browser must
 * read), one sample per distinct stack of each thread. Returns whether it
 * came to that. */
#define MT_SS_SAMPLE_FRAMES 20
static bool merge_samples(struct mt_pftrace *pf)
{
	struct mt_tl_ss *ss = pf->ss;
	uint64_t entries = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ss->nth; i++) {
			struct ss_thread *t = &ss->th[i];
			if (pass)
				qsort(t->samples, t->nsamples, sizeof *t->samples, cmp_stack);
			size_t n = 0;
			for (size_t j = 0; j < t->nsamples; j++) {
				if (n && t->samples[n - 1].stack == t->samples[j].stack)
					t->samples[n - 1].weight += t->samples[j].weight;
				else
					t->samples[n++] = t->samples[j];
			}
			t->nsamples = n;
			for (size_t j = 0; j < n; j++)
				entries += ss->stack_pool[t->samples[j].stack];
		}
		if (pass || !pf->max_slices || entries <= MT_SS_SAMPLE_FRAMES * pf->max_slices)
			return pass;
		entries = 0;
	}
	return true;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* With more slices than max_slices: the length a slice needs to be written,
 * so that the longest max_slices at most are (ties at the cut left out
 * together); 0: all written. */
static uint64_t min_length(struct mt_pftrace *pf)
{
	struct mt_tl_ss *ss = pf->ss;
	uint64_t n = 0;
	for (size_t i = 0; i < ss->nth; i++)
		n += ss->th[i].nev / 2;
	if (!pf->max_slices || n <= pf->max_slices)
		return 0;
	uint64_t *all = malloc(n * sizeof *all), k = 0;
	if (!all) {
		pf->oom = true;
		return 0;
	}
	for (size_t i = 0; i < ss->nth; i++)
		for (size_t j = 0; j < ss->th[i].nev; j++)
			if (ss->th[i].ev[j].frame != UINT32_MAX && k < n)
				all[k++] = ss->th[i].dur[j];
	qsort(all, k, sizeof *all, cmp_desc);
	uint64_t cut = all[pf->max_slices - 1] + (all[pf->max_slices] == all[pf->max_slices - 1]);
	uint64_t kept = 0;
	while (kept < k && all[kept] >= cut)
		kept++;
	pf->st.left_out = k - kept;
	pf->st.left_out_under_ns = cut;
	free(all);
	return cut;
}

/* The whole file: the profiles (a thread's evented one, then its sampled
 * one), the one with the most slices shown first, then the frames. */
static void ss_foot(struct mt_pftrace *pf)
{
	struct mt_tl_ss *ss = pf->ss;
	if (!ss)
		return;
	for (size_t i = 0; i < ss->nth; i++)
		if (ss->th[i].nev && !slice_lengths(&ss->th[i])) {
			pf->oom = true;
			ss_free(ss);
			pf->ss = NULL;
			return;
		}
	uint64_t min_ns = min_length(pf);
	bool grouped = merge_samples(pf);
	pf->st.samples_grouped = grouped;
	LIT(pf, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"mt-toperfetto (mt) "
		MT_VERSION "\",\"profiles\":[");
	size_t nprofiles = 0, active = 0, most = 0;
	for (size_t i = 0; i < ss->nth; i++) {
		const struct ss_thread *t = &ss->th[i];
		if (t->nev) {
			if (t->nev > most) {
				most = t->nev;
				active = nprofiles;
			}
			if (nprofiles++)
				LIT(pf, ",\n");
			write_evented(pf, t, min_ns);
		}
		if (t->nsamples && t->weights) {
			if (nprofiles++)
				LIT(pf, ",\n");
			write_sampled(pf, t, grouped);
		}
	}
	LIT(pf, "],\n\"activeProfileIndex\":");
	out_dec(pf, active);
	LIT(pf, ",\"shared\":{\"frames\":[");
	for (size_t i = 0; i < ss->nframes; i++) {
		const struct ss_frame *f = &ss->frames[i];
		if (i)
			LIT(pf, ",");
		LIT(pf, "\n{\"name\":");
		out_str(pf, f->name);
		if (f->file && !f->file_differs) {
			LIT(pf, ",\"file\":");
			out_str(pf, f->file);
			if (!f->line_differs && f->line > 0) {
				LIT(pf, ",\"line\":");
				out_dec(pf, (uint64_t)f->line);
			}
		}
		LIT(pf, "}");
	}
	LIT(pf, "]}}\n");
	ss_free(ss);
	pf->ss = NULL;
}

const struct mt_tl_ops mt_tl_speedscope = {
	.name = "speedscope", .head = ss_head, .thread = ss_thread, .slice_begin = ss_slice_begin,
	.slice_end = ss_slice_end, .instant = ss_instant, .sample = ss_sample, .stack_sample = ss_stack_sample,
	.counter = ss_counter, .foot = ss_foot,
};
