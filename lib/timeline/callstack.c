/* callstack: magic-trace's call-stack reconstruction (see callstack.h).
 * Section numbers refer to shared/docs/magic-trace-behaviour.md. */
#define _GNU_SOURCE
#include "timeline/callstack.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"

#include "timeline/brwindow.h"
#include "timeline/cs_state.h"

/* Inline in this file: a call's one frame (mt_cs_push_frame for the rest). */
static inline uint64_t push_frame(struct mt_cs *cs, struct stack *s, uint64_t ip, const char *name)
{
	if (!mt_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v)) {
		cs->oom = true;
		return 0;
	}
	s->v[s->n++] = (struct frame){ip, name, ++cs->next_id, NULL, 0};
	return cs->next_id;
}

uint64_t mt_cs_push_frame(struct mt_cs *cs, struct stack *s, uint64_t ip, const char *name)
{
	return push_frame(cs, s, ip, name);
}

/* --- writing (5.6) ------------------------------------------------------------- */

/* Every write goes through here: suppressed outside a filter region, held
 * while the region is not yet known to close. */
static void out(struct mt_cs *cs, const struct logrec *r)
{
	if (cs->filter_start && !cs->in_region)
		return;
	if (cs->tentative) {
		if (!mt_grow((void **)&cs->log, &cs->caplog, cs->nlog + 1, sizeof *cs->log)) {
			cs->oom = true;
			return;
		}
		cs->log[cs->nlog++] = *r;
		return;
	}
	struct mt_cs_thread *th = &r->t->pub;
	if (cs->opts.counts) {
		th->count = r->count;
		th->no_return = r->no_return;
	}
	switch (r->k) {
	case L_BEGIN: {
		struct mt_cs_frame f = {r->name, r->file, r->ip, r->id, r->line, r->inferred};
		cs->sink.begin(cs->sink.ctx, th, r->time, &f);
		break;
	}
	case L_END: cs->sink.end(cs->sink.ctx, th, r->time, r->name, r->id); break;
	case L_COMPLETE: cs->sink.complete(cs->sink.ctx, th, r->time, r->time2, r->name); break;
	case L_INSTANT: cs->sink.instant(cs->sink.ctx, th, r->time, r->name); break;
	case L_COUNTER:
		if (cs->sink.counter)
			cs->sink.counter(cs->sink.ctx, th, r->time, r->name, r->value);
		break;
	case L_SAMPLE:
		if (cs->sink.event_sample)
			cs->sink.event_sample(cs->sink.ctx, th, r->time, r->name2, r->ip, r->name, (uint64_t)r->value);
		break;
	}
}


/* Out of line: its buffer would cost every write_now a stack probe. */
static __attribute__((noinline)) const char *inferred_name(struct mt_cs *cs, const char *name)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s [inferred start time]", name);
	const char *r = mt_strtab_intern(&cs->names, buf);
	if (!r)
		cs->oom = true;
	return r;
}

/* write_now's writes through out(): counts, filter regions, the tentative
 * log, inferred names, [unknown] slices (out of line: most writes are not). */
static __attribute__((noinline)) void write_logged(struct mt_cs *cs, struct thread *t, uint64_t time,
						   const struct pev *ev)
{
	switch (ev->k) {
	case P_CALL: {
		const char *name = ev->f.name;
		if (ev->f.inferred && cs->opts.annotate_inferred && !(name = inferred_name(cs, ev->f.name)))
			return;
		out(cs, &(struct logrec){.k = L_BEGIN, .t = t, .time = time, .name = name, .ip = ev->f.ip,
					.inferred = ev->f.inferred, .id = ev->f.id, .file = ev->f.file,
					.line = ev->f.line, .count = ev->count});
		break;
	}
	case P_RET:
		out(cs, &(struct logrec){.k = L_END, .t = t, .time = time, .name = ev->f.name, .id = ev->f.id,
					.count = ev->count, .no_return = ev->no_return});
		break;
	case P_RET_UNTRACED:
		out(cs, &(struct logrec){.k = L_COMPLETE, .t = t, .time = ev->reset_time, .time2 = time,
					.name = cs->n_unknown});
		break;
	}
}

static inline void write_now(struct mt_cs *cs, struct thread *t, uint64_t time, const struct pev *ev)
{
	/* Most writes, calls and returns written at once without counts:
	 * straight to the sink, as out() would (no record built and read) */
	if ((!cs->filter_start || cs->in_region) && !cs->tentative && !cs->opts.counts) {
		if (ev->k == P_CALL && !(ev->f.inferred && cs->opts.annotate_inferred)) {
			cs->sink.begin(cs->sink.ctx, &t->pub, time, &ev->f);
			return;
		}
		if (ev->k == P_RET) {
			cs->sink.end(cs->sink.ctx, &t->pub, time, ev->f.name, ev->f.id);
			return;
		}
	}
	write_logged(cs, t, time, ev);
}

static void start_push(struct mt_cs *cs, struct thread *t, uint64_t time, const struct pev *ev, bool front)
{
	if (t->start_n == t->start_cap) {
		size_t nc = t->start_cap ? 2 * t->start_cap : 4;
		struct sev *nv = malloc(nc * sizeof *nv);
		if (!nv) {
			cs->oom = true;
			return;
		}
		for (size_t i = 0; i < t->start_n; i++)
			nv[i] = t->start[(t->start_head + i) % t->start_cap];
		free(t->start);
		t->start = nv;
		t->start_head = 0;
		t->start_cap = nc;
	}
	if (front) {
		t->start_head = (t->start_head + t->start_cap - 1) % t->start_cap;
		t->start[t->start_head] = (struct sev){time, *ev};
	} else {
		t->start[(t->start_head + t->start_n) % t->start_cap] = (struct sev){time, *ev};
	}
	t->start_n++;
}

/* write_pending_event: inferred frames and [unknown] slices wait for the
 * end of the thread (outermost first); a call at mapped time 0 too. */
static inline void write_pending(struct mt_cs *cs, struct thread *t, uint64_t time, const struct pev *ev)
{
	if (cs->opts.starts_when_known)
		write_now(cs, t, time, ev);
	else if (ev->k == P_RET_UNTRACED || (ev->k == P_CALL && ev->f.inferred))
		start_push(cs, t, time, ev, true);
	else if (ev->k == P_CALL && time == 0)
		start_push(cs, t, time, ev, false);
	else
		write_now(cs, t, time, ev);
}

/* flush of a batch of none or several events, out of line. */
static __attribute__((noinline)) void flush_batch(struct mt_cs *cs, struct thread *t, uint64_t to_time)
{
	int64_t d = (int64_t)(to_time - t->pending_time), offset = 0;
	int64_t count = 0, k = 0;
	for (size_t i = 0; i < t->npending; i++)
		count += t->pending[i].k == P_CALL;
	for (size_t i = 0; i < t->npending; i++) {
		write_pending(cs, t, t->pending_time + (uint64_t)offset, &t->pending[i]);
		if (t->pending[i].k == P_CALL) {
			k++;
			offset += (d - offset) / (count - k + 1);
		}
	}
	t->pending_time = to_time;
	t->npending = 0;
}

/* Spreads the time up to to_time over the batch's calls. Inline: most
 * batches are one event, with no time to spread, and the call cost more
 * than that work. */
static inline void flush(struct mt_cs *cs, struct thread *t, uint64_t to_time)
{
	if (t->npending != 1) {
		flush_batch(cs, t, to_time);
		return;
	}
	t->npending = 0;
	write_pending(cs, t, t->pending_time, &t->pending[0]);
	t->pending_time = to_time;
}

/* Events of one time wait for the next time, over which their calls are
 * spread (5.6); a stream without times never moves on, so a batch this big
 * is written at its own time instead, keeping memory bounded. Timed traces
 * do not come near it (a timing packet every few thousand branches at most). */
#define MAX_BATCH 65536

/* The batch's next event, of kind k, the rest zero (and the thread's counts
 * when wanted), or NULL out of memory. Filled in place by the caller: an
 * event built on the stack and copied here was read back by wide loads
 * over its narrow stores, which the CPU cannot forward (a stall that took
 * a fifth of mt-toperfetto's time on a call-dense trace). */
static inline struct pev *add_event(struct mt_cs *cs, struct thread *t, uint64_t time, enum pkind k)
{
	if (time != t->pending_time || t->npending == MAX_BATCH)
		flush(cs, t, time);
	if (!mt_grow((void **)&t->pending, &t->cappending, t->npending + 1, sizeof *t->pending)) {
		cs->oom = true;
		return NULL;
	}
	struct pev *ev = &t->pending[t->npending++];
	*ev = (struct pev){.k = k};
	if (cs->opts.counts) {
		ev->count = t->count;
		ev->no_return = cs->ending_stacks;
	}
	return ev;
}

/* A return from frame f (popped: read before the batch may be flushed). */
static void add_ret(struct mt_cs *cs, struct thread *t, uint64_t time, const struct frame *f)
{
	const char *name = f->name;
	uint64_t id = f->id;
	struct pev *ev = add_event(cs, t, time, P_RET);
	if (ev) {
		ev->f.name = name;
		ev->f.id = id;
	}
}

/* --- primitives (5.5) ------------------------------------------------------------ */

static void call(struct mt_cs *cs, struct thread *t, uint64_t time, uint64_t ip, const char *name)
{
	uint64_t id = push_frame(cs, &t->cur, ip, name);
	struct pev *ev = add_event(cs, t, time, P_CALL);
	if (!ev)
		return;
	ev->f.name = name;
	ev->f.ip = ip;
	ev->f.id = id;
	if (ip && ip == cs->src_ip) { /* the event's target, at a function entry */
		ev->f.file = cs->src_file;
		ev->f.line = cs->src_line;
	}
}

static void end_of_thread(struct mt_cs *cs, struct thread *t, uint64_t time, bool is_kernel);

static bool stack_has(const struct stack *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, name))
			return true;
	return false;
}

static void ret(struct mt_cs *cs, struct thread *t, uint64_t time)
{
	const char *popped = NULL;
	if (t->cur.n) {
		const struct frame *f = &t->cur.v[--t->cur.n];
		popped = f->name;
		add_ret(cs, t, time, f);
	} else {
		struct pev *ev = add_event(cs, t, time, P_RET_UNTRACED);
		if (ev)
			ev->reset_time = t->cur.create_time;
	}
	/* The Go rule (5.11): gogo switches goroutine stacks. */
	if (popped && popped[0] == 'g' && !strcmp(popped, "gogo")) {
		const char *anchor = stack_has(&t->cur, "runtime.mcall") ? "runtime.mcall"
				     : stack_has(&t->cur, "runtime.morestack.abi0") ? "runtime.morestack.abi0" : NULL;
		if (!anchor) {
			end_of_thread(cs, t, time, false);
			return;
		}
		while (t->cur.n && strcmp(t->cur.v[t->cur.n - 1].name, anchor))
			add_ret(cs, t, time, &t->cur.v[--t->cur.n]);
		for (int i = 0; i < 2 && t->cur.n; i++)
			add_ret(cs, t, time, &t->cur.v[--t->cur.n]);
	}
}

static inline __attribute__((always_inline)) void check_current_symbol(struct mt_cs *cs, struct thread *t,
								       uint64_t time, uint64_t ip, const char *name)
{
	if (!t->cur.n) {
		/* An inferred frame: it started no later than the stack did. */
		uint64_t id = mt_cs_push_frame(cs, &t->cur, ip, name);
		struct pev ev = {.k = P_CALL, .f = {.name = name, .ip = ip, .inferred = true, .id = id},
				 .count = t->cur.create_count};
		write_pending(cs, t, t->cur.create_time, &ev);
		return;
	}
	const char *top = t->cur.v[t->cur.n - 1].name;
	if (top != name && strcmp(top, name)) { /* interned: equal pointers, equal names */
		ret(cs, t, time);
		call(cs, t, time, ip, name);
	}
}

void mt_cs_clear_stack(struct mt_cs *cs, struct thread *t, uint64_t time)
{
	while (t->cur.n)
		ret(cs, t, time);
}

static void set_callstack(struct thread *t, bool is_kernel, uint64_t time)
{
	t->cur.n = 0;
	t->cur.create_time = is_kernel ? time : t->last_decode_error_time;
	t->cur.create_count = t->count;
}

static bool is_kernel_addr(uint64_t a)
{
	return a >> 63;
}

void mt_cs_push_inactive(struct mt_cs *cs, struct thread *t)
{
	if (!mt_grow((void **)&t->inactive, &t->capinactive, t->ninactive + 1, sizeof *t->inactive)) {
		cs->oom = true;
		return;
	}
	t->inactive[t->ninactive++] = t->cur;
	t->cur = (struct stack){0};
}

void mt_cs_pop_inactive(struct thread *t)
{
	free(t->cur.v);
	t->cur = t->inactive[--t->ninactive];
}

static void clear_all_callstacks(struct mt_cs *cs, struct thread *t, uint64_t time)
{
	mt_cs_clear_stack(cs, t, time);
	while (t->ninactive) {
		mt_cs_pop_inactive(t);
		mt_cs_clear_stack(cs, t, time);
	}
}

/* 5.8 */
static void end_of_thread(struct mt_cs *cs, struct thread *t, uint64_t time, bool is_kernel)
{
	uint64_t saved = t->pending_time;
	while (t->start_n) {
		struct sev *s = &t->start[t->start_head];
		write_now(cs, t, s->time, &s->ev);
		t->start_head = (t->start_head + 1) % t->start_cap;
		t->start_n--;
	}
	bool was = cs->ending_stacks;
	cs->ending_stacks = true;
	clear_all_callstacks(cs, t, time);
	flush(cs, t, saved);
	cs->ending_stacks = was;
	t->last_decode_error_time = time;
	set_callstack(t, is_kernel, time);
}

/* --- threads -------------------------------------------------------------------- */

static uint64_t thread_key_hash(uint32_t pid, uint32_t tid)
{
	return ((uint64_t)pid * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)tid * 0xC2B2AE3D27D4EB4FULL);
}

/* find_thread's lookup in the map. */
static __attribute__((noinline)) struct thread *find_thread_probe(struct mt_cs *cs, uint32_t pid, uint32_t tid)
{
	if (!cs->mapcap)
		return NULL;
	for (size_t j = thread_key_hash(pid, tid) & (cs->mapcap - 1); cs->map[j]; j = (j + 1) & (cs->mapcap - 1))
		if (cs->map[j]->pub.pid == pid && cs->map[j]->pub.tid == tid)
			return cs->last = cs->map[j];
	return NULL;
}

/* The thread's state, or NULL when it has not appeared yet. Consecutive
 * events mostly come from one thread: the last one found is tried first. */
static inline struct thread *find_thread(struct mt_cs *cs, uint32_t pid, uint32_t tid)
{
	if (cs->last && cs->last->pub.pid == pid && cs->last->pub.tid == tid)
		return cs->last;
	return find_thread_probe(cs, pid, tid);
}

static struct thread *thread_of(struct mt_cs *cs, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct thread *found = find_thread(cs, pid, tid);
	if (found)
		return found;
	if ((cs->nthreads + 1) * 2 > cs->mapcap) {
		size_t nc = cs->mapcap ? 2 * cs->mapcap : 64;
		struct thread **nm = calloc(nc, sizeof *nm);
		if (!nm)
			return NULL;
		for (size_t i = 0; i < cs->nthreads; i++) {
			size_t j = thread_key_hash(cs->threads[i]->pub.pid, cs->threads[i]->pub.tid) & (nc - 1);
			while (nm[j])
				j = (j + 1) & (nc - 1);
			nm[j] = cs->threads[i];
		}
		free(cs->map);
		cs->map = nm;
		cs->mapcap = nc;
	}
	if (!mt_grow((void **)&cs->threads, &cs->capthreads, cs->nthreads + 1, sizeof *cs->threads))
		return NULL;
	struct thread *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->pub = (struct mt_cs_thread){.pid = pid, .tid = tid, .index = cs->nthreads, .base = cs->base};
	t->last_known_ip = UINT64_MAX;
	t->cur.create_time = time;
	t->last_decode_error_time = time;
	t->last_event_time = time;
	cs->threads[cs->nthreads++] = t;
	size_t j = thread_key_hash(pid, tid) & (cs->mapcap - 1);
	while (cs->map[j])
		j = (j + 1) & (cs->mapcap - 1);
	cs->map[j] = t;
	return t;
}

/* --- events (5.9) ------------------------------------------------------------------ */

/* The column a key names, or -1. */
static int col_of_key(const char *k)
{
	int c = -1;
	switch (k[0]) {
	case 't':
		c = k[1] == 'x' ? C_TX : k[1] == 'o' && k[2] == '_' ?
		    (k[3] == 's' ? C_TO_SYM : k[3] == 'f' ? C_TO_FILE : k[3] == 'l' ? C_TO_LINE :
					    k[3] == 'd' ? C_TO_DSO : C_TO_OFF) : -1;
		break;
	case 'f': c = k[1] == 'r' && k[2] == 'o' ? C_FROM_SYM : C_FRAME; break;
	case 'v': c = C_VIA; break;
	case 'm': c = C_MHZ; break;
	case 'e': c = C_EVENT; break;
	case 'p': c = k[1] == 'r' ? C_PREEMPT : C_PERIOD; break;
	default: break;
	}
	return c >= 0 && !strcmp(k, col_names[c]) ? c : -1;
}

static int cached_col_of_key(struct ptr_cache *pc, const char *k)
{
	size_t slot = ((uintptr_t)k >> 4 ^ (uintptr_t)k >> 12) & (KEY_CACHE - 1);
	if (pc->key[slot] == k)
		return pc->col[slot];
	int c = col_of_key(k);
	pc->key[slot] = k;
	pc->col[slot] = (signed char)c;
	return c;
}

/* scan_cols's scan of the event's columns, its result kept in m if any. */
static __attribute__((noinline)) void scan_cols_each(struct mt_cs *cs, const struct mt_event *ev,
						     struct scan_memo *m)
{
	for (unsigned i = 0; i < ev->nextra; i++) {
		const char *k = ev->extra[i].key;
		int c = cs->stable ? cached_col_of_key(cs->pc, k) : col_of_key(k);
		if (c < 0 || cs->colset & 1u << c)
			continue;
		cs->colset |= 1u << c;
		cs->col[c] = ev->extra[i].val ? ev->extra[i].val : "";
	}
	if (m) {
		m->id = ev->extra_id;
		m->colset = cs->colset;
		memcpy(m->col, cs->col, sizeof m->col);
		m->to_name = NULL;
	}
	cs->scan = m;
}

static inline void scan_cols(struct mt_cs *cs, const struct mt_event *ev)
{
	cs->colset = 0;
	cs->cols = cs->col;
	cs->stable = ev->strings_epoch && cs->pc;
	if (cs->stable && cs->pc->epoch != ev->strings_epoch) {
		memset(cs->pc, 0, sizeof *cs->pc);
		cs->pc->epoch = ev->strings_epoch;
	}
	/* columns the reader decoded once are scanned once */
	struct scan_memo *m = NULL;
	if (cs->stable && ev->extra_id) {
		m = &cs->pc->scan[ev->extra_id * 0x9e3779b97f4a7c15ULL >> (64 - SCAN_MEMO_BITS)];
		if (m->id == ev->extra_id) {
			cs->colset = m->colset;
			cs->cols = m->col; /* not copied: the memo changes only in a later scan */
			cs->scan = m;
			return;
		}
	}
	scan_cols_each(cs, ev, m);
}

static const char *extra(const struct mt_cs *cs, enum col c)
{
	return cs->colset & 1u << c ? cs->cols[c] : NULL;
}

/* sym_name's interning of s, kept in the cache's slot when stable. */
static __attribute__((noinline)) const char *sym_intern(struct mt_cs *cs, const char *s, size_t slot)
{
	const char *n = mt_strtab_intern(&cs->names, s);
	if (!n) {
		cs->oom = true;
		return cs->n_unknown;
	}
	if (cs->stable) {
		cs->pc->sym[slot].s = s;
		cs->pc->sym[slot].name = n;
	}
	return n;
}

static inline const char *sym_name_of(struct mt_cs *cs, enum col key)
{
	const char *s = extra(cs, key);
	if (!s || !*s)
		return cs->n_unknown;
	size_t slot = 0;
	if (cs->stable) {
		slot = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 15) & (SYM_CACHE - 1);
		if (cs->pc->sym[slot].s == s)
			return cs->pc->sym[slot].name;
	}
	return sym_intern(cs, s, slot);
}

/* An address no symbol covers in a known object: magic-trace's name
 * "[unknown @ 0xIP (DSO)]" (its perf_decode.ml), one per address. */
static __attribute__((noinline)) const char *unknown_at(struct mt_cs *cs, uint64_t ip, const char *dso)
{
	char buf[512], *name = buf; /* no allocation but for a path longer than a few hundred bytes */
	int len = snprintf(buf, sizeof buf, "[unknown @ 0x%" PRIx64 " (%s)]", ip, dso);
	if (len >= (int)sizeof buf && asprintf(&name, "[unknown @ 0x%" PRIx64 " (%s)]", ip, dso) < 0)
		name = NULL;
	const char *n = len >= 0 && name ? mt_strtab_intern(&cs->names, name) : NULL;
	if (name != buf)
		free(name);
	if (!n)
		cs->oom = true;
	return n ? n : cs->n_unknown;
}

/* The interned name in column key; to_sym's is kept with the event's
 * scanned columns (most events are calls and returns: asked for it). */
static inline const char *sym_name(struct mt_cs *cs, enum col key)
{
	if (key != C_TO_SYM || !cs->scan)
		return sym_name_of(cs, key);
	if (!cs->scan->to_name)
		cs->scan->to_name = sym_name_of(cs, key);
	return cs->scan->to_name;
}

/* The name of an event's destination: its symbol, else where it is. */
static inline const char *to_name(struct mt_cs *cs, const struct mt_event *ev)
{
	const char *n = sym_name(cs, C_TO_SYM);
	if (n == cs->n_unknown && extra(cs, C_TO_DSO) && *extra(cs, C_TO_DSO))
		return unknown_at(cs, ev->to, extra(cs, C_TO_DSO));
	return n;
}

/* ocaml_mode_b's frames named caml_* (out of line: rare). */
static __attribute__((noinline)) void ocaml_mode_b_caml(struct mt_cs *cs, struct thread *t, uint64_t time,
							 const char *top)
{
	if (!strcmp(top, "caml_next_frame_descriptor") || !strcmp(top, "caml_stash_backtrace")) {
		t->ocaml_frames++;
	} else if (!strcmp(top, "caml_raise_exn")) {
		for (int i = 0; i < t->ocaml_frames - 1; i++)
			ret(cs, t, time);
		t->ocaml_frames = 0;
	} else if (!strcmp(top, "caml_raise_exception")) {
		for (int i = 0; i < t->ocaml_frames + 2; i++)
			ret(cs, t, time);
		t->ocaml_frames = 0;
	}
}

/* OCaml heuristic exception mode (5.11, mode B), by the top frame's name. */
static inline __attribute__((always_inline)) void ocaml_mode_b(struct mt_cs *cs, struct thread *t, uint64_t time)
{
	if (!t->cur.n)
		return;
	const char *top = t->cur.v[t->cur.n - 1].name;
	if (top[0] == 'c' && !strncmp(top, "caml_", 5)) /* not the common case */
		ocaml_mode_b_caml(cs, t, time, top);
}

void mt_cs_warn_once(struct mt_cs *cs, unsigned bit, const char *msg)
{
	if (cs->warned & (1u << bit))
		return;
	cs->warned |= 1u << bit;
	if (cs->opts.warn)
		cs->opts.warn(cs->opts.warn_ctx, msg);
}

/* A sample frame "0xIP NAME+0xOFF (DSO)": its name without +0xOFF and (DSO),
 * or magic-trace's "[unknown @ 0xIP (DSO)]" when no symbol covers it. Any
 * length: a C++ name cut would merge functions. */
static const char *frame_name(struct mt_cs *cs, const char *v, uint64_t *ip, const char **dso_out)
{
	char *e;
	*ip = strtoull(v, &e, 16);
	while (*e == ' ')
		e++;
	char *name = strdup(e);
	if (!name)
		return NULL;
	/* the object: inside the last " (...)" ("NAME (inlined) (DSO)"),
	 * "[unknown]" when there is none */
	char *dso = NULL;
	for (char *q = strstr(name, " ("); q; q = strstr(q + 1, " ("))
		dso = q;
	*dso_out = cs->n_unknown_dso;
	if (dso) {
		*dso = '\0';
		char *d = dso + 2;
		size_t dl = strlen(d);
		if (dl && d[dl - 1] == ')')
			d[--dl] = '\0';
		if (dl)
			*dso_out = mt_strtab_intern(&cs->names, d);
	}
	const char *r = NULL;
	if (!*dso_out) {
		/* out of memory */
	} else if (!*name || !strcmp(name, "[unknown]")) {
		r = unknown_at(cs, *ip, *dso_out);
	} else {
		char *off = strstr(name, "+0x");
		for (char *q = off; q; q = strstr(q + 1, "+0x"))
			off = q;
		if (off)
			*off = '\0';
		r = mt_strtab_intern(&cs->names, name);
	}
	free(name);
	return r;
}

/* How many frames of s a sample (ips, names, outermost first) continues.
 * A frame is one call of a function from one call site: it goes on while
 * the sample has the same function there, called from the same site (its
 * caller's IP); its own IP may move (the leaf runs on, a caller calls
 * something else). leaf_by_ip, magic-trace's rule: every frame by its own
 * IP, so a function found at another instruction ends and begins again.
 * The ones kept take the sample's IPs, the next sample is held against
 * them. */
static size_t common_frames(struct stack *s, const uint64_t *ips, const char *const *names, size_t nf,
			    bool leaf_by_ip)
{
	size_t m = 0;
	uint64_t caller_ip = 0;
	while (m < nf && m < s->n) {
		struct frame *f = &s->v[m];
		if (leaf_by_ip ? f->ip != ips[m] : f->name != names[m] || (m && caller_ip != ips[m - 1]))
			break;
		caller_ip = f->ip;
		f->ip = ips[m];
		m++;
	}
	return m;
}

/* A thread switched out (sampling with perf's --switch-events): an
 * [off-CPU] slice ([preempted] when it was still runnable) begins on top
 * of its stack, where it stopped, and ends when it comes back: the thread
 * resumes with its frames, one main for the whole run. */
static void switch_out(struct mt_cs *cs, struct thread *t, uint64_t time, bool preempt)
{
	if (t->off_cpu)
		return; /* out twice: the first counts */
	call(cs, t, time, 0, preempt ? cs->n_preempted : cs->n_off_cpu);
	t->off_cpu = true;
}

/* Back on CPU (or a sample says so: the switch in was lost). */
static void switch_in(struct mt_cs *cs, struct thread *t, uint64_t time)
{
	if (!t->off_cpu)
		return; /* in with no out before it: the recording began with it off CPU */
	t->off_cpu = false;
	const char *top = t->cur.n ? t->cur.v[t->cur.n - 1].name : NULL;
	if (top == cs->n_off_cpu || top == cs->n_preempted)
		ret(cs, t, time); /* else a decode error or snapshot ended it already */
}

/* The most branch entries a sample's window plays (mt-events(5): 64). */
#define MAX_BRANCHES 64

/* A stack sample's branch stack played forward before the sample itself
 * (brwindow.h): the calls and returns it proves, each at its estimated
 * time after the thread's previous event (lower: NULL when it had none
 * timed); the steps played forward from the previous sample first, then
 * the thread's stack made the one the undone steps start from, as a sample
 * would make it, then those. */
static void replay_branches(struct mt_cs *cs, struct thread *t, uint64_t time, const uint64_t *lower,
			    bool after_stack_sample, const char *const *names, const uint64_t *ips, size_t nf,
			    const struct mt_brentry *b, size_t nb, const char *event, uint64_t period)
{
	struct mt_brstep steps[MAX_BRANCHES];
	const char *snames[MT_EVENT_MAX_EXTRA + MAX_BRANCHES], *pnames[MT_EVENT_MAX_EXTRA + MAX_BRANCHES];
	uint64_t sips[MT_EVENT_MAX_EXTRA + MAX_BRANCHES], pips[MT_EVENT_MAX_EXTRA + MAX_BRANCHES];
	size_t sn, pn = 0;
	enum mt_brclock clock = mt_brclock_of(event);
	/* the previous sample's stack, where the window's oldest entries go on
	 * (only a taken-branch window holding its period can use it) */
	if (after_stack_sample && clock == MT_BRCLOCK_TAKEN && period <= nb && t->cur.n <= sizeof pnames / sizeof *pnames)
		for (; pn < t->cur.n; pn++) {
			pnames[pn] = t->cur.v[pn].name;
			pips[pn] = t->cur.v[pn].ip;
		}
	struct mt_brwindow w = {.names = names, .ips = ips, .nf = nf, .b = b, .nb = nb, .time = time,
				.lower = lower ? *lower : 0, .has_lower = lower != NULL,
				.clock = clock, .period = period,
				.prev_names = pnames, .prev_ips = pips, .prev_n = pn};
	size_t forward;
	size_t k = mt_brwindow_steps(&w, steps, snames, sips, sizeof snames / sizeof *snames, &sn, &forward);
	for (size_t i = 0; i < k; i++) {
		const struct mt_brstep *st = &steps[i];
		if (i == forward) {
			/* the stack the undone steps start from, made at the
			 * first's time (after the steps played forward: the
			 * frames a signal's delivery adds) */
			size_t m = common_frames(&t->cur, sips, snames, sn, false);
			for (size_t j = t->cur.n; j > m; j--)
				ret(cs, t, st->time);
			for (size_t j = m; j < sn; j++)
				call(cs, t, st->time, sips[j], snames[j]);
		}
		switch (st->op) {
		case MT_BROP_CALL:
			if (t->cur.n)
				t->cur.v[t->cur.n - 1].ip = st->ret_ip;
			call(cs, t, st->time, st->ip, st->name);
			break;
		case MT_BROP_RET:
			ret(cs, t, st->time);
			if (t->cur.n)
				t->cur.v[t->cur.n - 1].ip = st->ret_ip;
			break;
		case MT_BROP_TAIL:
			ret(cs, t, st->time);
			call(cs, t, st->time, st->ip, st->name);
			break;
		case MT_BROP_NONE:
			break;
		}
	}
}

/* A branch_sym= column's names, interned, into the newest entry: an end
 * no symbol covers is [unknown] (perf's brstacksym names no object). */
static void branch_names(struct mt_cs *cs, struct mt_brentry *e, const char *v)
{
	char from[1024], to[1024];
	if (!mt_brsym_split(v, from, to, sizeof from))
		return;
	e->from_name = *from ? mt_strtab_intern(&cs->names, from) : cs->n_unknown;
	e->to_name = *to ? mt_strtab_intern(&cs->names, to) : cs->n_unknown;
}

/* Stack sample (outermost first): keep the common prefix, callers compared
 * by IP (a caller's IP is its call site: another site, another call, as
 * magic-trace compares), the leaf of either sample by function (the leaf's
 * IP moves within the function from sample to sample: still one slice). A
 * frame's frame_src (mt-symbolize --lines) follows it. */
static void stack_sample(struct mt_cs *cs, struct thread *t, uint64_t time, const struct mt_event *ev,
			 const char *event, uint64_t period, const uint64_t *lower, bool after_stack_sample)
{
	size_t nf = 0, m = 0, nb = 0;
	uint64_t ips[MT_EVENT_MAX_EXTRA];
	const char *names[MT_EVENT_MAX_EXTRA], *files[MT_EVENT_MAX_EXTRA], *dsos[MT_EVENT_MAX_EXTRA];
	int lines[MT_EVENT_MAX_EXTRA];
	struct mt_brentry br[MAX_BRANCHES];
	for (unsigned i = 0; i < ev->nextra; i++) {
		const char *k = ev->extra[i].key, *v = ev->extra[i].val;
		if (k[0] == 'b' && v && !cs->opts.magic_trace_samples) {
			if (!strcmp(k, "branch") && nb < MAX_BRANCHES && mt_brentry_parse(v, &br[nb]))
				nb++;
			else if (!strcmp(k, "branch_sym") && nb)
				branch_names(cs, &br[nb - 1], v);
			else if (!strcmp(k, "branch_type") && nb) /* from the code: none recorded */
				br[nb - 1].kind = mt_brkind_of_type(v, strlen(v));
			continue;
		}
		if (k[0] != 'f' || !v)
			continue;
		if (!strcmp(k, "frame_src") && nf && !files[nf - 1]) {
			const char *colon = strrchr(v, ':');
			if (colon && colon > v && colon[1]) {
				char file[4096];
				snprintf(file, sizeof file, "%.*s", (int)(colon - v), v);
				files[nf - 1] = mt_strtab_intern(&cs->names, file);
				lines[nf - 1] = atoi(colon + 1);
			}
			continue;
		}
		if (strcmp(k, "frame"))
			continue;
		names[nf] = frame_name(cs, v, &ips[nf], &dsos[nf]);
		if (!names[nf]) {
			cs->oom = true;
			return;
		}
		files[nf] = NULL;
		lines[nf] = 0;
		nf++;
	}
	/* the sample itself, for a writer's profiler view (Perfetto's
	 * PerfSample: its flame graph); not with --filter (its regions are
	 * known only at their end) */
	if (cs->sink.stack_sample && nf && !cs->filter_start)
		cs->sink.stack_sample(cs->sink.ctx, &t->pub, time, nf, names, dsos, period);
	/* the branches before it, on a thread that ran until it */
	if (nb && nf && !t->off_cpu)
		replay_branches(cs, t, time, lower, after_stack_sample, names, ips, nf, br, nb, event, period);
	switch_in(cs, t, time);
	/* the calls of the last change are spread up to this sample at most,
	 * changed or not (5.6: over the time to the next event) */
	if (t->npending && t->pending_time != time && !cs->opts.magic_trace_samples)
		flush(cs, t, time);
	m = common_frames(&t->cur, ips, names, nf, cs->opts.magic_trace_samples);
	for (size_t i = t->cur.n; i > m; i--)
		ret(cs, t, time);
	for (size_t i = m; i < nf; i++) {
		cs->src_ip = files[i] ? ips[i] : 0;
		cs->src_file = files[i];
		cs->src_line = lines[i];
		call(cs, t, time, ips[i], names[i]);
	}
	cs->src_ip = 0;
	t->after_stack_sample = true;
}

/* Whether a sample's callchain is the thread's stack: the samples of the
 * first event that brings one (magic-trace's cycles), never those of
 * branch-misses or cache-misses (magic-trace's extra events, marks where
 * they hit); another event's are marks too, so that stacks sampled on two
 * clocks do not fight over one timeline. */
static bool is_stack_event(struct mt_cs *cs, const char *event)
{
	if (!event)
		return true;
	if (!strncmp(event, "branch-misses", 13) || !strncmp(event, "cache-misses", 12))
		return false;
	if (!cs->stack_event) {
		cs->stack_event = mt_strtab_intern(&cs->names, event);
		return true;
	}
	return !strcmp(cs->stack_event, event);
}

/* A mark's place, when it came with a callchain: its innermost frame
 * (magic-trace: the first callchain line). */
static const char *leaf_frame_name(struct mt_cs *cs, const struct mt_event *ev, uint64_t *ip)
{
	const char *leaf = NULL, *dso;
	for (unsigned i = 0; i < ev->nextra; i++)
		if (ev->extra[i].val && !strcmp(ev->extra[i].key, "frame"))
			leaf = ev->extra[i].val;
	return leaf ? frame_name(cs, leaf, ip, &dso) : cs->n_unknown; /* "frame" with no value */
}

/* A return, jump or int to an exception handler: the raise left the try
 * block; otherwise the usual symbol check. */
static inline __attribute__((always_inline)) void check_symbol_or_entertrap(struct mt_cs *cs, struct thread *t,
									    uint64_t time, const struct mt_event *ev)
{
	if (cs->ntraps && mt_cs_is_entertrap(cs, ev->to)) {
		if (t->cur.n) { /* drop the bottom (copied) frame */
			memmove(t->cur.v, t->cur.v + 1, (t->cur.n - 1) * sizeof *t->cur.v);
			t->cur.n--;
		}
		mt_cs_clear_trap_stack(cs, t, time);
		return;
	}
	check_current_symbol(cs, t, time, ev->to, to_name(cs, ev));
}


static inline __attribute__((always_inline)) void trace_event(struct mt_cs *cs, struct thread *t, uint64_t time,
								 const struct mt_event *ev)
{
	if (cs->ntraps)
		mt_cs_trap_walk(cs, t, time, ev);
	switch (ev->kind) {
	case MT_EV_CALL:
		call(cs, t, time, ev->to, to_name(cs, ev));
		break;
	case MT_EV_RETURN:
		if (!cs->ntraps)
			ocaml_mode_b(cs, t, time);
		ret(cs, t, time);
		check_symbol_or_entertrap(cs, t, time, ev);
		break;
	case MT_EV_JUMP:
		check_symbol_or_entertrap(cs, t, time, ev);
		break;
	case MT_EV_TX_ABORT:
		check_current_symbol(cs, t, time, ev->to, to_name(cs, ev));
		break;
	case MT_EV_SYSCALL:
	case MT_EV_INTERRUPT:
		if (!ev->to) {
			/* into untraced kernel code (user-only tracing) */
			call(cs, t, time, 0, cs->n_syscall);
			break;
		}
		mt_cs_push_inactive(cs, t);
		set_callstack(t, is_kernel_addr(ev->to), time);
		call(cs, t, time, ev->to, to_name(cs, ev));
		break;
	case MT_EV_SYSRET:
	case MT_EV_IRET:
		mt_cs_clear_stack(cs, t, time);
		if (t->ninactive) {
			mt_cs_pop_inactive(t);
		} else {
			set_callstack(t, is_kernel_addr(ev->to), time);
			check_current_symbol(cs, t, time, ev->to, to_name(cs, ev));
		}
		break;
	case MT_EV_TRACE_END: {
		const char *via = extra(cs, C_VIA);
		if (!via) {
			call(cs, t, time, 0, cs->n_untraced);
		} else if (!strcmp(via, "call")) {
			call(cs, t, time, ev->to, to_name(cs, ev));
		} else if (!strcmp(via, "return")) {
			call(cs, t, time, 0, cs->n_returned);
		} else if (!strcmp(via, "syscall")) {
			call(cs, t, time, 0, cs->n_syscall);
		} else { /* sysret, iret: leaving the kernel under kernel-only tracing */
			mt_cs_clear_stack(cs, t, time);
			call(cs, t, time, 0, cs->n_untraced);
		}
		break;
	}
	case MT_EV_TRACE_START:
		if (!t->cur.n) {
			call(cs, t, time, ev->to, to_name(cs, ev));
		} else {
			if (!cs->ntraps)
				ocaml_mode_b(cs, t, time);
			ret(cs, t, time);
		}
		break;
	default:
		break;
	}
}

/* An event's path, from mt_cs_event to the sink, is one function: cs_event
 * and the helpers a call or return takes are inlined by force (left to
 * the compiler, the calls and their register saves were a tenth of
 * mt-toperfetto's instructions on a call-dense trace, callgrind). */
static int cs_event(struct mt_cs *cs, struct thread *t, const struct mt_event *ev, struct mt_err *err);
static inline __attribute__((always_inline)) int cs_event_inline(struct mt_cs *cs, struct thread *t,
								     const struct mt_event *ev, struct mt_err *err);

/* Entering a filter region at time: what was pending stays unwritten, and
 * every open frame begins again, inferred, at the region's start. */
static void enter_region(struct mt_cs *cs, uint64_t time)
{
	for (size_t i = 0; i < cs->nthreads; i++) {
		struct thread *t = cs->threads[i];
		flush(cs, t, t->pending_time); /* still outside: suppressed */
		t->start_n = 0;
	}
	cs->in_region = true;
	cs->tentative = true;
	cs->nlog = 0;
	for (size_t i = 0; i < cs->nthreads; i++) {
		struct thread *t = cs->threads[i];
		for (size_t k = 0; k <= t->ninactive; k++) {
			struct stack *st = k < t->ninactive ? &t->inactive[k] : &t->cur;
			for (size_t f = 0; f < st->n; f++) {
				struct pev ev = {.k = P_CALL, .count = t->count,
						 .f = {.name = st->v[f].name, .ip = st->v[f].ip, .inferred = true,
						       .id = st->v[f].id}};
				write_now(cs, t, time, &ev);
			}
			st->create_time = time ? time - 1 : 0;
			st->create_count = t->count;
		}
	}
}

/* A call to the stop symbol: the region ends (its frames close now) and,
 * being complete, is written. */
static void leave_region(struct mt_cs *cs)
{
	cs->filter_regions++;
	mt_cs_end_of_trace(cs);
	cs->tentative = false;
	for (size_t i = 0; i < cs->nlog; i++)
		out(cs, &cs->log[i]);
	cs->nlog = 0;
	cs->in_region = false;
}

void mt_cs_late_counts(const struct mt_cs *cs, uint64_t *events, uint64_t *max_ns)
{
	*events = cs->late_events;
	*max_ns = cs->late_max_ns;
}

void mt_cs_filter_counts(const struct mt_cs *cs, uint64_t *starts, uint64_t *regions)
{
	*starts = cs->filter_starts;
	*regions = cs->filter_regions;
}

void mt_cs_set_filter(struct mt_cs *cs, const char *start, const char *stop)
{
	cs->filter_start = mt_strtab_intern(&cs->names, start);
	cs->filter_stop = mt_strtab_intern(&cs->names, stop);
	if (!cs->filter_start || !cs->filter_stop)
		cs->oom = true;
}

/* Replays a queued transaction event. */
static int replay(struct mt_cs *cs, const struct txev *q, struct mt_err *err)
{
	struct mt_kv kv[2];
	struct mt_event ev = q->ev;
	ev.nextra = 0;
	if (q->to_sym)
		kv[ev.nextra++] = (struct mt_kv){"to_sym", q->to_sym};
	if (q->via)
		kv[ev.nextra++] = (struct mt_kv){"via", q->via};
	ev.extra = kv;
	ev.strings_epoch = 0;
	ev.extra_id = 0;
	scan_cols(cs, &ev);
	return cs_event(cs, find_thread(cs, ev.pid, ev.tid), &ev, err);
}

int mt_cs_event(struct mt_cs *cs, const struct mt_event *ev, struct mt_err *err)
{
	if (ev->kind == MT_EV_SNAPSHOT) {
		cs->snapshot_pending = true;
		return 0;
	}
	struct thread *t = find_thread(cs, ev->pid, ev->tid);
	scan_cols(cs, ev);
	if (!t || (!t->ntx && !extra(cs, C_TX) && ev->kind != MT_EV_TX_ABORT))
		return cs_event_inline(cs, t, ev, err); /* most events: one call, not two */
	if (extra(cs, C_TX) && ev->kind != MT_EV_TX_ABORT && ev->kind != MT_EV_ERROR) {
		if (!mt_grow((void **)&t->tx, &t->captx, t->ntx + 1, sizeof *t->tx))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		struct txev *q = &t->tx[t->ntx++];
		q->ev = *ev;
		q->ev.msg = NULL;
		q->ev.extra = NULL;
		q->ev.nextra = 0;
		const char *ts = extra(cs, C_TO_SYM), *via = extra(cs, C_VIA);
		q->to_sym = ts ? mt_strtab_intern(&cs->names, ts) : NULL;
		q->via = via ? mt_strtab_intern(&cs->names, via) : NULL;
		return 0;
	}
	if (ev->kind == MT_EV_TX_ABORT) {
		t->ntx = 0; /* the transaction's work is undone */
	} else if (ev->kind == MT_EV_ERROR) {
		if (t->ntx)
			mt_cs_warn_once(cs, 1, "warning: error received during a transaction, dropping its events");
		t->ntx = 0;
	} else {
		/* committed: its events happened */
		size_t n = t->ntx;
		t->ntx = 0;
		for (size_t i = 0; i < n; i++) {
			int rc = replay(cs, &t->tx[i], err);
			if (rc)
				return rc;
		}
		scan_cols(cs, ev);
	}
	return cs_event(cs, t, ev, err);
}

static void new_snapshot(struct mt_cs *cs, uint64_t to_time);

/* The kinds that say something beside the flow: no stack changes there. */
static bool is_note(enum mt_event_kind k)
{
	return k == MT_EV_ERROR || k == MT_EV_POWER || k == MT_EV_SWITCH_OUT || k == MT_EV_SWITCH_IN ||
	       (k >= MT_EV_PTWRITE && k <= MT_EV_TRIG);
}

/* A column of a PT note (rare events: a scan of its few columns), "?" if
 * it has none. */
static const char *note_col(const struct mt_event *ev, const char *key)
{
	for (unsigned i = 0; i < ev->nextra; i++)
		if (!strcmp(ev->extra[i].key, key))
			return ev->extra[i].val;
	return "?";
}

/* An Event Trace event's name: its type, then the vector and the EVD
 * payloads it has. */
static void cfe_name(char *name, size_t size, const struct mt_event *ev)
{
	size_t n = (size_t)snprintf(name, size, "%s", note_col(ev, "type"));
	static const char *const keys[] = {"vector", "cr2", "vmxq", "vmxr"};
	for (unsigned i = 0; i < sizeof keys / sizeof *keys && n < size; i++) {
		const char *v = note_col(ev, keys[i]);
		if (!strcmp(v, "?"))
			continue;
		if (i == 0) /* the vector, by itself: "intr 14" */
			n += (size_t)snprintf(name + n, size - n, " %s", v);
		else
			n += (size_t)snprintf(name + n, size - n, " %s %s", keys[i], v);
	}
}

/* Distinct payloads named on ptwrite instants, at most: past it they are
 * all "ptwrite" (names are kept for the whole trace). */
#define MAX_PTWRITE_NAMES 65536

/* A PT note as an instant on a track of the thread's own, as an event
 * sample: "ptwrite" (the payload), "power" (MWAIT, C-state entry and exit,
 * EXSTOP), "vmcs" (the VMCS base); named by its values, at its IP. */
static int pt_note(struct mt_cs *cs, struct thread *t, uint64_t time, const struct mt_event *ev, struct mt_err *err)
{
	char name[192];
	const char *track = "power";
	switch (ev->kind) {
	case MT_EV_PTWRITE:
		if (cs->opts.ptwrite_counter) { /* the payload as a number (exact up to 2^53) */
			out(cs, &(struct logrec){.k = L_COUNTER, .t = t, .time = time, .name = "ptwrite",
						.value = (double)strtoull(note_col(ev, "payload"), NULL, 16)});
			return 0;
		}
		track = "ptwrite";
		if (cs->ptwrite_names < MAX_PTWRITE_NAMES) {
			snprintf(name, sizeof name, "ptwrite %s", note_col(ev, "payload"));
		} else {
			snprintf(name, sizeof name, "ptwrite");
			mt_cs_warn_once(cs, 5, "warning: over 65536 distinct PTWRITE payloads: the rest are drawn "
					       "as 'ptwrite' (the stream has their payloads)");
		}
		break;
	case MT_EV_MWAIT:
		snprintf(name, sizeof name, "mwait hints %s ext %s", note_col(ev, "hints"), note_col(ev, "ext"));
		break;
	case MT_EV_PWRE:
		/* and the process's C-state counter: asleep in C-n, then 0 (C0) */
		out(cs, &(struct logrec){.k = L_COUNTER, .t = t, .time = time, .name = "C-state",
					.value = atof(note_col(ev, "cstate"))});
		snprintf(name, sizeof name, "C%s.%s entered%s", note_col(ev, "cstate"), note_col(ev, "substate"),
			 strcmp(note_col(ev, "hw"), "1") ? "" : " (hardware)");
		break;
	case MT_EV_PWRX:
		out(cs, &(struct logrec){.k = L_COUNTER, .t = t, .time = time, .name = "C-state", .value = 0});
		snprintf(name, sizeof name, "C%s left (deepest C%s, wake: %s)", note_col(ev, "cstate"),
			 note_col(ev, "deepest"), note_col(ev, "wake"));
		break;
	case MT_EV_EXSTOP:
		snprintf(name, sizeof name, "exstop");
		break;
	case MT_EV_VMCS:
		track = "vmcs";
		snprintf(name, sizeof name, "vmcs %s", note_col(ev, "base"));
		break;
	case MT_EV_CFE: /* "intr 14 cr2 0xf00baa", "vmexit vmxr 0xa", "iret" */
		track = "events";
		cfe_name(name, sizeof name, ev);
		break;
	default: /* MT_EV_TRIG: "trig 0xa1" */
		track = "triggers";
		snprintf(name, sizeof name, "trig %s%s", note_col(ev, "id"), strcmp(note_col(ev, "mult"), "1") ? "" : " (mult)");
		break;
	}
	size_t before = cs->names.n;
	const char *iname = mt_strtab_intern(&cs->names, name);
	if (!iname)
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	if (ev->kind == MT_EV_PTWRITE && cs->names.n != before)
		cs->ptwrite_names++;
	out(cs, &(struct logrec){.k = L_SAMPLE, .t = t, .time = time, .name = iname, .name2 = track, .ip = ev->from,
				.value = 1});
	return 0;
}

/* One event of thread t (NULL: not seen yet), its columns scanned. */
static inline __attribute__((always_inline)) int cs_event_inline(struct mt_cs *cs, struct thread *t,
								     const struct mt_event *ev, struct mt_err *err)
{
	if (!cs->have_base && ev->has_time) {
		cs->base = ev->time;
		cs->have_base = true;
	}
	uint64_t mapped = ev->has_time && cs->have_base && ev->time > cs->base ? ev->time - cs->base : 0;
	if (cs->snapshot_pending && !is_note(ev->kind) && (ev->kind != MT_EV_SAMPLE || extra(cs, C_FRAME))) {
		cs->snapshot_pending = false;
		new_snapshot(cs, mapped);
	}
	if (!t && !(t = thread_of(cs, ev->pid, ev->tid, mapped)))
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	if (cs->opts.counts) {
		t->count.insn += ev->insn;
		t->count.cyc += ev->cyc;
	}
	if (ev->has_time && (ev->time < cs->base || mapped < t->last_event_time)) {
		/* Policy: time never runs backwards on a thread; how many and how
		 * far are said once, at the end (mt_cs_late_counts). */
		uint64_t moved = cs->base + t->last_event_time - ev->time;
		mapped = t->last_event_time;
		cs->late_events++;
		if (moved > cs->late_max_ns)
			cs->late_max_ns = moved;
	}
	/* 5.7: untimed events take the last time; nothing lands on a decode
	 * error's time except the error itself. */
	uint64_t time = ev->has_time ? mapped : t->last_event_time;
	if (time == t->last_decode_error_time && time != 0)
		time++;
	/* the thread's previous event: a branch stack's steps come after it */
	uint64_t prev_time = t->last_event_time;
	bool had_time = t->timed, after_stack_sample = t->after_stack_sample;
	t->after_stack_sample = false;
	if (ev->has_time) {
		t->last_event_time = mapped;
		t->timed = true;
	}
	cs->src_ip = 0;
	const char *tf = extra(cs, C_TO_FILE), *tl = extra(cs, C_TO_LINE), *toff = extra(cs, C_TO_OFF);
	if (tf && tl && toff && !strcmp(toff, "0x0")) {
		cs->src_file = mt_strtab_intern(&cs->names, tf);
		cs->src_line = atoi(tl);
		cs->src_ip = cs->src_file ? ev->to : 0;
	}
	if (cs->filter_start && ev->kind == MT_EV_CALL) {
		const char *to = extra(cs, C_TO_SYM);
		if (to && !strcmp(to, cs->filter_start)) {
			cs->filter_starts++;
			enter_region(cs, time); /* a second start drops the first region's output */
		}
		else if (to && !strcmp(to, cs->filter_stop) && cs->in_region)
			leave_region(cs); /* the stop call itself is outside */
	}
	switch (ev->kind) {
	case MT_EV_ERROR: {
		char name[1200];
		snprintf(name, sizeof name, "[decode error: %s]", ev->msg ? ev->msg : "");
		char msg[1300];
		snprintf(msg, sizeof msg, "warning: decode errors in the trace, e.g. '%s' @ IP 0x%llx",
			 ev->msg ? ev->msg : "", (unsigned long long)ev->from);
		mt_cs_warn_once(cs, 0, msg);
		const char *iname = mt_strtab_intern(&cs->names, name);
		if (!iname)
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		out(cs, &(struct logrec){.k = L_INSTANT, .t = t, .time = time, .name = iname});
		end_of_thread(cs, t, time, is_kernel_addr(ev->from));
		break;
	}
	case MT_EV_POWER: {
		const char *mhz = extra(cs, C_MHZ);
		out(cs, &(struct logrec){.k = L_COUNTER, .t = t, .time = time, .name = "CPU",
					.value = mhz ? strtod(mhz, NULL) : ev->cbr});
		break;
	}
	case MT_EV_SWITCH_OUT: {
		const char *preempt = extra(cs, C_PREEMPT);
		switch_out(cs, t, time, preempt && !strcmp(preempt, "1"));
		break;
	}
	case MT_EV_SWITCH_IN:
		switch_in(cs, t, time);
		break;
	case MT_EV_PTWRITE:
	case MT_EV_MWAIT:
	case MT_EV_PWRE:
	case MT_EV_PWRX:
	case MT_EV_EXSTOP:
	case MT_EV_VMCS:
	case MT_EV_CFE:
	case MT_EV_TRIG: {
		int rc = pt_note(cs, t, time, ev, err);
		if (rc)
			return rc;
		break;
	}
	case MT_EV_SAMPLE: {
		const char *event = extra(cs, C_EVENT), *period = extra(cs, C_PERIOD);
		if (extra(cs, C_FRAME) && is_stack_event(cs, event)) {
			stack_sample(cs, t, time, ev, event, period ? strtoull(period, NULL, 10) : 1,
				     had_time ? &prev_time : NULL, after_stack_sample);
		} else {
			const char *ename = mt_strtab_intern(&cs->names, event ? event : "sample");
			if (!ename)
				return mt_err_set(err, MT_ENOMEM, "out of memory");
			uint64_t ip = ev->from;
			const char *where = extra(cs, C_FRAME) ? leaf_frame_name(cs, ev, &ip) : sym_name(cs, C_FROM_SYM);
			if (!where)
				return mt_err_set(err, MT_ENOMEM, "out of memory");
			out(cs, &(struct logrec){.k = L_SAMPLE, .t = t, .time = time, .name = where,
						.name2 = ename, .ip = ip,
						.value = period ? (double)strtoull(period, NULL, 10) : 1});
		}
		break;
	}
	default:
		trace_event(cs, t, time, ev);
		break;
	}
	if (cs->oom)
		return mt_err_set(err, MT_ENOMEM, "out of memory rebuilding call stacks");
	return 0;
}

/* The same, for the rarer callers (transactions, replays). */
static int cs_event(struct mt_cs *cs, struct thread *t, const struct mt_event *ev, struct mt_err *err)
{
	return cs_event_inline(cs, t, ev, err);
}

/* A new snapshot begins (5.3: magic-trace's file change): every thread's
 * stacks end, the next ones start at to_time, and each thread shows the
 * cut as an instant. */
static void new_snapshot(struct mt_cs *cs, uint64_t to_time)
{
	for (size_t i = 0; i < cs->nthreads; i++) {
		struct thread *t = cs->threads[i];
		end_of_thread(cs, t, t->last_event_time, false);
		uint64_t at = to_time > t->last_event_time ? to_time : t->last_event_time;
		t->pending_time = t->last_event_time = t->cur.create_time = at;
		t->cur.create_count = t->count;
		out(cs, &(struct logrec){.k = L_INSTANT, .t = t, .time = at, .name = cs->n_snapshot});
	}
}

void mt_cs_end_of_trace(struct mt_cs *cs)
{
	for (size_t i = 0; i < cs->nthreads; i++)
		end_of_thread(cs, cs->threads[i], cs->threads[i]->last_event_time, false);
}

struct mt_cs *mt_cs_new(const struct mt_cs_sink *sink, const struct mt_cs_opts *opts)
{
	struct mt_cs *cs = calloc(1, sizeof *cs);
	if (!cs)
		return NULL;
	cs->sink = *sink;
	if (opts)
		cs->opts = *opts;
	cs->pc = calloc(1, sizeof *cs->pc); /* without it: no caching */
	cs->n_untraced = mt_strtab_intern(&cs->names, "[untraced]");
	cs->n_syscall = mt_strtab_intern(&cs->names, "[syscall]");
	cs->n_returned = mt_strtab_intern(&cs->names, "[returned]");
	cs->n_unknown = mt_strtab_intern(&cs->names, "[unknown]");
	cs->n_snapshot = mt_strtab_intern(&cs->names, "[new snapshot]");
	cs->n_off_cpu = mt_strtab_intern(&cs->names, "[off-CPU]");
	cs->n_preempted = mt_strtab_intern(&cs->names, "[preempted]");
	cs->n_unknown_dso = mt_strtab_intern(&cs->names, "[unknown]");
	if (!cs->n_untraced || !cs->n_syscall || !cs->n_returned || !cs->n_unknown || !cs->n_snapshot ||
	    !cs->n_off_cpu || !cs->n_preempted || !cs->n_unknown_dso) {
		mt_cs_free(cs);
		return NULL;
	}
	return cs;
}

void mt_cs_finish(struct mt_cs *cs)
{
	if (cs->filter_start) {
		/* a start with no stop after it is no region */
		cs->tentative = false;
		cs->nlog = 0;
		cs->in_region = false;
	}
	mt_cs_end_of_trace(cs);
	/* Fixed, not copied: magic-trace loses what the final end_of_trace
	 * itself defers ([unknown] slices of its last returns, a call at mapped
	 * time 0 made after the last snapshot of start events). Write it. */
	for (size_t i = 0; i < cs->nthreads; i++) {
		struct thread *t = cs->threads[i];
		while (t->start_n) {
			struct sev *sv = &t->start[t->start_head];
			write_now(cs, t, sv->time, &sv->ev);
			t->start_head = (t->start_head + 1) % t->start_cap;
			t->start_n--;
		}
	}
}

void mt_cs_free(struct mt_cs *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->nthreads; i++) {
		struct thread *t = cs->threads[i];
		free(t->cur.v);
		for (size_t k = 0; k < t->ninactive; k++)
			free(t->inactive[k].v);
		free(t->inactive);
		free(t->pending);
		free(t->start);
		free(t->tx);
		free(t);
	}
	free(cs->log);
	free(cs->threads);
	free(cs->map);
	mt_strtab_free(&cs->names);
	free(cs->pc);
	free(cs);
}

uint64_t mt_cs_base_time(const struct mt_cs *cs)
{
	return cs->base;
}

const char *mt_cs_stack_event(const struct mt_cs *cs)
{
	return cs->stack_event;
}

size_t mt_cs_nthreads(const struct mt_cs *cs)
{
	return cs->nthreads;
}

struct mt_cs_thread *mt_cs_thread_at(struct mt_cs *cs, size_t i)
{
	return i < cs->nthreads ? &cs->threads[i]->pub : NULL;
}
