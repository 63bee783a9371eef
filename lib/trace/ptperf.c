#define _GNU_SOURCE
#include "trace/ptperf.h"
#include "base/strtab.h"

#include <intel-pt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "trace/image.h"
#include "base/workq.h"

/* AUXTRACE_INFO priv indexes (tools/perf/util/intel-pt.h) */
enum {
	PRIV_PMU_TYPE, PRIV_TIME_SHIFT, PRIV_TIME_MULT, PRIV_TIME_ZERO,
	PRIV_CAP_USER_TIME_ZERO, PRIV_TSC_BIT, PRIV_NORETCOMP_BIT,
	PRIV_HAVE_SCHED_SWITCH, PRIV_SNAPSHOT_MODE, PRIV_PER_CPU_MMAPS,
	PRIV_MTC_BIT, PRIV_MTC_FREQ_BITS, PRIV_TSC_CTC_N, PRIV_TSC_CTC_D,
	PRIV_CYC_BIT, PRIV_MAX_NONTURBO_RATIO, PRIV_FILTER_STR_LEN, PRIV_COUNT
};
#define AUXTRACE_INTEL_PT 1

struct comm { uint32_t pid, tid; const char *name; };
/* A stack sample (sampling mode, no Intel PT): its callchain stays in the input. */
struct psample {
	uint32_t pid, tid, cpu;
	bool has_time, has_cpu;
	uint64_t time, period, ip;
	int attr;
	const uint8_t *chain;
	uint64_t nchain;
};
struct map {
	uint32_t pid;
	uint64_t start, len, pgoff;
	const char *path;
	uint8_t bid[20], bidsz;
};
struct auxbuf { const uint8_t *data; uint64_t size, offset; uint32_t tid, cpu; };
struct sw { uint32_t cpu, pid, tid; uint64_t time; };

#define VEC(T) struct { T *v; size_t n, cap; }
/* Appends item to a VEC; returns 0 or MT_ENOMEM. */
#define PUSH(vec, ...) push_item((void **)&(vec).v, &(vec).n, &(vec).cap, sizeof *(vec).v, \
				 &(__typeof__(*(vec).v)){__VA_ARGS__})

static int push_item(void **v, size_t *n, size_t *cap, size_t elem, const void *item)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		void *nv = realloc(*v, nc * elem);
		if (!nv)
			return MT_ENOMEM;
		*v = nv;
		*cap = nc;
	}
	memcpy((char *)*v + *n * elem, item, elem);
	(*n)++;
	return 0;
}

struct side {
	bool have_info;
	uint32_t info_type;
	uint64_t priv[PRIV_COUNT];
	size_t npriv;
	bool have_cap_event_trace;
	const char *filter;
	bool have_tconv;
	struct mt_tsc_conv tconv;
	VEC(struct comm) comms;
	VEC(struct psample) samples;
	VEC(struct map) maps;
	VEC(struct auxbuf) bufs;
	VEC(struct sw) itrace;      /* ITRACE_START per cpu */
	VEC(struct sw) switches;
	uint64_t counts[128];
	uint64_t aux_truncated, aux_collision, aux_overwrite, lost;
	uint64_t tmin, tmax;
	bool have_time;
	char walk_err[512];
	bool walk_damaged;
};

static void side_free(struct side *s)
{
	free(s->comms.v);
	free(s->samples.v);
	free(s->maps.v);
	free(s->bufs.v);
	free(s->itrace.v);
	free(s->switches.v);
}

static const char *cstr(const uint8_t *p, size_t max)
{
	return memchr(p, 0, max) ? (const char *)p : NULL;
}

static void parse_auxtrace_info(struct side *s, const struct mt_perf_record *r)
{
	/* {u32 type; u32 reserved; u64 priv[]}; reader rules of intel_pt_process_auxtrace_info */
	if (r->body_size < 8)
		return;
	s->info_type = mt_rd32(r->body);
	size_t n = (r->body_size - 8) / 8;
	const uint8_t *p = r->body + 8;
	if (n < PRIV_PER_CPU_MMAPS + 1)
		return;
	s->have_info = true;
	size_t take = n < PRIV_COUNT ? n : PRIV_COUNT;
	for (size_t i = 0; i < take; i++)
		s->priv[i] = mt_rd64(p + 8 * i);
	s->npriv = take;
	size_t used = take;
	if (take > PRIV_FILTER_STR_LEN && s->priv[PRIV_FILTER_STR_LEN]) {
		uint64_t len = s->priv[PRIV_FILTER_STR_LEN];
		uint64_t padded = (len + 1 + 7) & ~7ULL;
		if (padded / 8 <= n - used) {
			s->filter = cstr(p + 8 * used, (size_t)padded);
			used += (size_t)(padded / 8);
		}
	}
	if (used < n)
		s->have_cap_event_trace = true;
}

static void note_time(struct side *s, const struct mt_perf_record *r)
{
	if (!r->sid.has_time || !r->sid.time)
		return;
	if (!s->have_time || r->sid.time < s->tmin)
		s->tmin = r->sid.time;
	if (!s->have_time || r->sid.time > s->tmax)
		s->tmax = r->sid.time;
	s->have_time = true;
}

static bool has_comm(const struct side *s, uint32_t pid, uint32_t tid, const char *name)
{
	for (size_t i = 0; i < s->comms.n; i++)
		if (s->comms.v[i].pid == pid && s->comms.v[i].tid == tid && !strcmp(s->comms.v[i].name, name))
			return true;
	return false;
}

#define RELEASE_LAG ((size_t)256 << 10)

/* Letting go of the perf.data's pages behind the decode. A page fault maps
 * its neighbours too, so pages let go right behind the current buffer come
 * back with the next one: release with a lag (RELEASE_LAG before where
 * decoding is), and start again when a new queue goes back in the file. */
struct releaser { const uint8_t *from; };

static void release_before(const struct mt_perfdata *pd, struct releaser *r, const uint8_t *at)
{
	if (!r->from || at < r->from) {
		r->from = at; /* a new pass over the file */
		return;
	}
	if ((size_t)(at - r->from) > 4 * RELEASE_LAG) {
		mt_perfdata_release(pd, r->from, (size_t)(at - r->from) - RELEASE_LAG);
		r->from = at - RELEASE_LAG;
	}
}

static int collect(struct mt_perfdata *pd, struct side *s, struct mt_err *err)
{
	struct mt_perf_record r;
	struct mt_err werr = {0};
	int rc;
	struct releaser walked = {0}; /* the walk lets go of what it passed */
	while ((rc = mt_perfdata_next(pd, &r, &werr)) > 0) {
		release_before(pd, &walked, pd->base + r.offset);
		s->counts[r.type < 128 ? r.type : 127]++;
		note_time(s, &r);
		const uint8_t *b = r.body;
		size_t bs = r.body_size;
		int e = 0;
		switch (r.type) {
		case MT_REC_AUXTRACE_INFO:
			parse_auxtrace_info(s, &r);
			break;
		case MT_REC_SAMPLE:
			if (r.sid.has_tid && (r.sid.callchain || r.sid.has_ip)) {
				struct psample ps = {r.sid.pid, r.sid.tid, r.sid.cpu, r.sid.has_time, r.sid.has_cpu,
						     r.sid.time, r.sid.has_period ? r.sid.period : 1, r.sid.ip,
						     r.sid.attr_index, r.sid.callchain, r.sid.callchain_nr};
				e = push_item((void **)&s->samples.v, &s->samples.n, &s->samples.cap, sizeof ps, &ps);
			}
			break;
		case MT_REC_TIME_CONV:
			if (bs >= 24) {
				s->have_tconv = true;
				s->tconv.time_shift = (uint16_t)mt_rd64(b);
				s->tconv.time_mult = (uint32_t)mt_rd64(b + 8);
				s->tconv.time_zero = mt_rd64(b + 16);
				if (bs >= 48 && b[41]) { /* cap_user_time_short */
					s->tconv.short_fmt = true;
					s->tconv.time_cycles = mt_rd64(b + 24);
					s->tconv.time_mask = mt_rd64(b + 32);
				}
			}
			break;
		case MT_REC_COMM:
			if (bs > 8) {
				const char *name = cstr(b + 8, bs - 8);
				if (name && !has_comm(s, mt_rd32(b), mt_rd32(b + 4), name))
					e = PUSH(s->comms, mt_rd32(b), mt_rd32(b + 4), name);
			}
			break;
		case MT_REC_FORK:
			/* A new thread (or process) inherits its creator's name
			 * until a COMM record says otherwise. */
			if (bs >= 16) {
				uint32_t pid = mt_rd32(b), tid = mt_rd32(b + 8), ptid = mt_rd32(b + 12);
				const char *name = NULL;
				for (size_t i = s->comms.n; i-- > 0 && !name;)
					if (s->comms.v[i].tid == ptid)
						name = s->comms.v[i].name;
				if (name && !has_comm(s, pid, tid, name))
					e = PUSH(s->comms, pid, tid, name);
			}
			break;
		case MT_REC_MMAP:
		case MT_REC_MMAP2: {
			struct mt_perf_mmap pm;
			if (!mt_perf_parse_mmap(&r, &pm) || !pm.exec)
				break; /* no code to decode */
			struct map m = {.pid = pm.pid, .start = pm.start, .len = pm.len, .pgoff = pm.pgoff,
					.path = pm.path, .bidsz = pm.bidsz};
			memcpy(m.bid, pm.bid, sizeof m.bid);
			e = push_item((void **)&s->maps.v, &s->maps.n, &s->maps.cap, sizeof m, &m);
			break;
		}
		case MT_REC_AUXTRACE:
			e = PUSH(s->bufs, r.aux_data, r.aux_size, mt_rd64(b + 8), mt_rd32(b + 28), mt_rd32(b + 32));
			if (r.aux_size < r.aux_declared) {
				s->walk_damaged = true;
				snprintf(s->walk_err, sizeof s->walk_err,
					 "AUXTRACE payload at offset %" PRIu64 " truncated: %" PRIu64 " of %" PRIu64 " bytes",
					 r.offset + 48, r.aux_size, r.aux_declared);
			}
			break;
		case MT_REC_AUX:
			if (bs >= 24) {
				uint64_t fl = mt_rd64(b + 16);
				s->aux_truncated += (fl & 1) != 0;
				s->aux_overwrite += (fl & 2) != 0;
				s->aux_collision += (fl & 8) != 0;
			}
			break;
		case MT_REC_LOST:
			if (bs >= 16)
				s->lost += mt_rd64(b + 8);
			break;
		case MT_REC_ITRACE_START:
			if (bs >= 8 && r.sid.has_cpu)
				e = PUSH(s->itrace, r.sid.cpu, mt_rd32(b), mt_rd32(b + 4), r.sid.time);
			break;
		case MT_REC_SWITCH:
		case MT_REC_SWITCH_CPU_WIDE:
			if (!r.sid.has_cpu || !r.sid.has_tid)
				break;
			if (r.misc & MT_MISC_SWITCH_OUT) {
				/* CPU-wide OUT names the task coming in */
				if (r.type == MT_REC_SWITCH_CPU_WIDE && bs >= 8)
					e = PUSH(s->switches, r.sid.cpu, mt_rd32(b), mt_rd32(b + 4), r.sid.time);
			} else {
				e = PUSH(s->switches, r.sid.cpu, r.sid.pid, r.sid.tid, r.sid.time);
			}
			break;
		}
		if (e)
			return mt_err_set(err, MT_ENOMEM, "out of memory collecting sideband");
	}
	if (rc < 0) {
		s->walk_damaged = true;
		snprintf(s->walk_err, sizeof s->walk_err, "%s", werr.msg);
	} else if (s->counts[MT_REC_COMPRESSED]) {
		/* Their records (PT buffers among them) are lost to us: say so. */
		s->walk_damaged = true;
		snprintf(s->walk_err, sizeof s->walk_err,
			 "%" PRIu64 " zstd-compressed record batches (perf record -z) skipped: not supported, "
			 "record without -z", s->counts[MT_REC_COMPRESSED]);
	}
	return 0;
}

static bool decode_is_timed(const struct mt_perfdata *pd, const struct side *s)
{
	if (!s->have_info || !s->priv[PRIV_TSC_BIT] || !s->priv[PRIV_CAP_USER_TIME_ZERO])
		return false;
	for (size_t i = 0; i < pd->nattrs; i++) {
		if (!(pd->attrs[i].sample_type & MT_SAMPLE_TIME))
			return false;
		if (pd->attrs[i].type == s->priv[PRIV_PMU_TYPE] && !(pd->attrs[i].config & s->priv[PRIV_TSC_BIT]))
			return false;
	}
	return true;
}

static const struct mt_perf_evattr *pt_attr(const struct mt_perfdata *pd, const struct side *s)
{
	for (size_t i = 0; i < pd->nattrs; i++)
		if (s->have_info && pd->attrs[i].type == s->priv[PRIV_PMU_TYPE])
			return &pd->attrs[i];
	return NULL;
}

static unsigned field(uint64_t config, uint64_t mask)
{
	return mask ? (unsigned)((config & mask) >> __builtin_ctzll(mask)) : 0;
}

/* --- thread attribution ------------------------------------------------- */

struct who_ctx {
	bool per_cpu;
	uint32_t pid, tid;          /* per-thread, or the start of a cpu */
	const struct sw *sw;        /* this cpu's switches, sorted by time */
	size_t nsw;
};

static void who(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid)
{
	struct who_ctx *w = ctx;
	*pid = w->pid;
	*tid = w->tid;
	if (!w->per_cpu || !w->nsw || !time)
		return;
	/* the last switch at or before time */
	size_t lo = mt_count_at_or_below(w->sw, w->nsw, sizeof *w->sw, offsetof(struct sw, time), time);
	if (lo) {
		*pid = w->sw[lo - 1].pid;
		*tid = w->sw[lo - 1].tid;
	}
}

static int cmp_sw(const void *a, const void *b)
{
	const struct sw *x = a, *y = b;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static uint32_t pid_of_tid(const struct side *s, uint32_t tid)
{
	for (size_t i = 0; i < s->comms.n; i++)
		if (s->comms.v[i].tid == tid)
			return s->comms.v[i].pid;
	for (size_t i = 0; i < s->itrace.n; i++)
		if (s->itrace.v[i].tid == tid)
			return s->itrace.v[i].pid;
	return tid;
}

/* --- images ------------------------------------------------------------- */

struct warned { char **v; size_t n, cap; };

static void warn_once(const struct mt_ptperf_opts *o, struct warned *wd, const char *key, const char *msg)
{
	for (size_t i = 0; i < wd->n; i++)
		if (!strcmp(wd->v[i], key))
			return;
	char *k = strdup(key);
	if (!k || PUSH(*wd, k)) {
		free(k);
		return;
	}
	if (o->warn)
		o->warn(o->warn_ctx, msg);
}

static void find_buildid(const struct mt_perfdata *pd, const struct map *m, const uint8_t **bid, unsigned *bidsz)
{
	*bid = m->bidsz ? m->bid : NULL;
	*bidsz = m->bidsz;
	if (*bidsz)
		return;
	for (size_t i = 0; i < pd->nbuildids; i++)
		if (!strcmp(pd->buildids[i].path, m->path)) {
			*bid = pd->buildids[i].id;
			*bidsz = pd->buildids[i].id_size;
			return;
		}
}

/* Kernel maps (pid -1): code from --vmlinux or the kcore copy. */
static void add_kernel_map(struct mt_image *img, const struct map *m, const struct mt_ptperf_opts *o,
			   struct warned *wd)
{
	char path[4096], msg[4400];
	struct mt_err e = {0};
	if (o->kcore_dir) {
		snprintf(path, sizeof path, "%s/kcore", o->kcore_dir);
		if (mt_image_add_kernel(img, path, m->start, m->len, &e)) {
			snprintf(msg, sizeof msg, "warning: kernel code %s: %s", m->path, e.msg);
			warn_once(o, wd, m->path, msg);
			return;
		}
		return;
	}
	if (!o->vmlinux) {
		snprintf(msg, sizeof msg, "warning: %s: kernel code cannot be decoded without --vmlinux or --kcore",
			 m->path);
		warn_once(o, wd, "kernel", msg);
		return;
	}
	if (mt_image_add_kernel(img, o->vmlinux, m->start, m->len, &e)) {
		snprintf(msg, sizeof msg, "warning: kernel code %s: %s", m->path, e.msg);
		warn_once(o, wd, m->path, msg);
	}
}

static void build_image(struct mt_image *img, const struct mt_perfdata *pd, const struct side *s, uint32_t pid,
			const struct mt_ptperf_opts *o, struct warned *wd)
{
	bool kernel = false;
	for (size_t i = 0; i < s->maps.n; i++) {
		const struct map *m = &s->maps.v[i];
		if (m->pid == (uint32_t)-1 && (m->path[0] == '[' || o->kcore_dir)) {
			add_kernel_map(img, m, o, wd);
			kernel = true;
			continue;
		}
		if (m->pid != pid || m->path[0] != '/')
			continue; /* [vdso] and anon maps have no file to read here */
		const uint8_t *bid;
		unsigned bidsz;
		find_buildid(pd, m, &bid, &bidsz);
		char path[4096], msg[4400];
		if (mt_image_find_object(m->path, bid, bidsz, o->symfs, o->buildid_dir, path, sizeof path)) {
			snprintf(msg, sizeof msg, "warning: %s not found%s%s: code there cannot be decoded",
				 m->path, o->symfs ? " under --symfs " : "", o->symfs ? o->symfs : "");
			warn_once(o, wd, m->path, msg);
			continue;
		}
		struct mt_err e = {0};
		if (mt_image_add_mapping(img, path, m->start, m->len, m->pgoff, &e)) {
			snprintf(msg, sizeof msg, "warning: %s", e.msg);
			warn_once(o, wd, m->path, msg);
		}
	}
	if (kernel && o->kcore_dir) {
		/* function boundaries of every kernel map: one kallsyms, read once */
		char path[4096], msg[4400];
		struct mt_err e = {0};
		snprintf(path, sizeof path, "%s/kallsyms", o->kcore_dir);
		if (mt_image_add_kallsyms(img, path, &e)) {
			snprintf(msg, sizeof msg, "warning: %s: kernel jumps between functions are not told apart", e.msg);
			warn_once(o, wd, path, msg);
		}
	}
}

/* --- decode ------------------------------------------------------------- */

/* Snapshot mode: each AUXTRACE holds the ring buffer as it was at a
 * snapshot, so the start of a snapshot may repeat the end of the previous
 * one. Returns how many leading bytes of b continue a (b's first PSB and
 * what follows it found in a, and everything before and after it equal),
 * or 0 when they do not overlap. */
static size_t overlap_at(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* perf pads each AUXTRACE payload with up to 7 zero bytes: a may end with
 * padding that b does not have. On a match, *alen drops that padding. */
static size_t snapshot_overlap(const uint8_t *a, size_t *alen, const uint8_t *b, size_t blen)
{
	for (size_t pad = 0; pad < 8 && pad < *alen; pad++) {
		if (pad && a[*alen - pad])
			break;
		size_t ov = overlap_at(a, *alen - pad, b, blen);
		if (ov) {
			*alen -= pad;
			return ov;
		}
	}
	return 0;
}

static size_t overlap_at(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};
	const uint8_t *p = memmem(b, blen, psb, sizeof psb);
	if (!p)
		return 0;
	size_t pb = (size_t)(p - b);
	/* latest occurrence in a first: the overlap is as short as possible */
	for (size_t qa = alen >= sizeof psb ? alen - sizeof psb + 1 : 0; qa-- > 0;) {
		if (memcmp(a + qa, psb, sizeof psb))
			continue;
		if (qa < pb)
			break;
		size_t start = qa - pb, ov = alen - start; /* b[0] sits at a[start] */
		if (ov <= blen && !memcmp(a + start, b, ov))
			return ov;
	}
	return 0;
}

/* Event samples (branch-misses, cache-misses, breakpoint hits...) recorded
 * beside the trace are merged into the decoded stream of their queue (the
 * same thread, or the same CPU) in time order. */
struct sink_ctx {
	struct mt_events_writer *w;
	const struct mt_perfdata *pd;
	const struct side *s;
	size_t *order;          /* samples by time */
	size_t norder;
	bool *done;
	bool per_cpu;           /* the queue being decoded */
	uint32_t q_tid, q_cpu;
	size_t next;            /* its cursor in order[] */
	struct mt_ptdec_stats *stats;
};

static void event_name(const struct mt_perfdata *pd, int attr, char *out, size_t n);

static void write_event_sample(struct sink_ctx *c, const struct psample *ps)
{
	char ename[64], period[24];
	event_name(c->pd, ps->attr, ename, sizeof ename);
	snprintf(period, sizeof period, "%" PRIu64, ps->period);
	struct mt_kv kv[2] = {{"event", ename}, {"period", period}};
	struct mt_event ev = {.time = ps->time, .has_time = ps->has_time, .pid = ps->pid, .tid = ps->tid,
			      .cpu = ps->has_cpu ? (int32_t)ps->cpu : -1, .kind = MT_EV_SAMPLE, .from = ps->ip,
			      .offset = MT_NO_OFFSET, .extra = kv, .nextra = 2};
	mt_events_write(c->w, &ev);
	c->stats->by_kind[MT_EV_SAMPLE]++;
}

static bool of_queue(const struct sink_ctx *c, const struct psample *ps)
{
	return c->per_cpu ? ps->has_cpu && ps->cpu == c->q_cpu : ps->tid == c->q_tid;
}

/* Writes the current queue's samples up to `time` (UINT64_MAX: all). The
 * scan starts at the queue's cursor: written samples and other queues'
 * before it are never looked at again, so each PT event costs O(1). */
static void queue_samples(struct sink_ctx *c, uint64_t time)
{
	while (c->next < c->norder &&
	       (c->done[c->order[c->next]] || !of_queue(c, &c->s->samples.v[c->order[c->next]])))
		c->next++;
	for (size_t k = c->next; k < c->norder; k++) {
		size_t i = c->order[k];
		const struct psample *ps = &c->s->samples.v[i];
		if (ps->has_time && ps->time > time)
			break; /* in time order: nothing later is due */
		if (c->done[i] || !of_queue(c, ps))
			continue;
		c->done[i] = true;
		write_event_sample(c, ps);
	}
}

static void sink(void *ctx, const struct mt_event *ev)
{
	struct sink_ctx *c = ctx;
	if (c->norder && ev->has_time)
		queue_samples(c, ev->time);
	mt_events_write(c->w, ev);
}

static const struct side *sort_side; /* qsort has no context argument in C11 */

static int cmp_sample_time(const void *a, const void *b)
{
	const struct psample *x = &sort_side->samples.v[*(const size_t *)a], *y = &sort_side->samples.v[*(const size_t *)b];
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static void write_meta(const struct mt_perfdata *pd, const struct side *s, struct mt_events_writer *w, bool timed,
		       const struct mt_ptperf_opts *o)
{
	mt_events_write_fact(w, "source", "%s", pd->name);
	mt_events_write_fact(w, "format", "perf.data %s mode", pd->pipe_mode ? "pipe" : "file");
	if (s->have_info)
		mt_events_write_fact(w, "decoder", "%slibipt %d.%d.%d %s", o->libipt_blocks || o->libipt_packets ? "" : "mt packets, ",
				     pt_library_version().major, pt_library_version().minor, pt_library_version().patch,
				     o->libipt_blocks ? "block" : "query, mt code walk");
	else
		mt_events_write_fact(w, "decoder", "stack samples (no Intel PT in this perf.data)");
	if (timed)
		mt_events_write_fact(w, "time", "perf-clock ns from TSC: shift=%" PRIu64 " mult=%" PRIu64 " zero=%" PRIu64,
				     s->priv[PRIV_TIME_SHIFT], s->priv[PRIV_TIME_MULT], s->priv[PRIV_TIME_ZERO]);
	else
		mt_events_write_fact(w, "time", "timeless");
	if (s->have_info)
		mt_events_write_fact(w, "buffers", "%s", s->priv[PRIV_PER_CPU_MMAPS] ? "per-cpu" : "per-thread");
	for (size_t i = 0; i < s->comms.n; i++)
		mt_events_write_comm(w, s->comms.v[i].pid, s->comms.v[i].tid, s->comms.v[i].name);
	for (size_t i = 0; i < s->maps.n; i++) {
		const struct map *m = &s->maps.v[i];
		const uint8_t *bid;
		unsigned bidsz;
		find_buildid(pd, m, &bid, &bidsz);
		mt_events_write_mmap(w, m->pid, m->start, m->len, m->pgoff, bid, bidsz, m->path);
	}
}

static void cpu_of(const struct mt_perfdata *pd, struct mt_ptdec_config *c)
{
	/* CPUID feature: "GenuineIntel,FAMILY,MODEL,STEPPING" */
	unsigned f, m, st;
	if (pd->cpuid && sscanf(pd->cpuid, "GenuineIntel,%u,%u,%u", &f, &m, &st) == 3) {
		c->family = f;
		c->model = m;
		c->stepping = st;
	}
}

/* The event's name as perf prints it before '/' or ':' (cpu-clock, cycles). */
static void event_name(const struct mt_perfdata *pd, int attr, char *out, size_t n)
{
	const struct mt_perf_evattr *a = attr >= 0 && (size_t)attr < pd->nattrs ? &pd->attrs[attr] : NULL;
	if (a && a->type == 5) { /* PERF_TYPE_BREAKPOINT, named as perf names it */
		static const char *const rw[] = {"", "r", "w", "rw", "x"};
		snprintf(out, n, "mem:0x%" PRIx64 ":%s", a->config1, a->bp_type < 5 ? rw[a->bp_type] : "");
		return;
	}
	if (a && a->name) {
		snprintf(out, n, "%.*s", (int)strcspn(a->name, "/:"), a->name);
		return;
	}
	static const char *const hw[] = {"cycles", "instructions", "cache-references", "cache-misses",
					 "branch-instructions", "branch-misses"};
	static const char *const sw[] = {"cpu-clock", "task-clock"};
	if (a && a->type == 0 && a->config < 6)
		snprintf(out, n, "%s", hw[a->config]);
	else if (a && a->type == 1 && a->config < 2)
		snprintf(out, n, "%s", sw[a->config]);
	else
		snprintf(out, n, "sample");
}

/* Stack samples as events: frame= columns outermost first ("0xIP"; a
 * symbolizer names them), the sample's IP as FROM. */
static void emit_samples(const struct mt_perfdata *pd, const struct side *s, struct mt_events_writer *w,
			 struct mt_ptdec_stats *stats)
{
	static struct mt_kv kv[MT_EVENT_MAX_EXTRA];
	static char vals[MT_EVENT_MAX_EXTRA][24];
	char ename[64], period[24];
	for (size_t i = 0; i < s->samples.n; i++) {
		const struct psample *ps = &s->samples.v[i];
		event_name(pd, ps->attr, ename, sizeof ename);
		snprintf(period, sizeof period, "%" PRIu64, ps->period);
		unsigned n = 0;
		kv[n++] = (struct mt_kv){"event", ename};
		kv[n++] = (struct mt_kv){"period", period};
		/* perf's context markers (PERF_CONTEXT_USER...) sit above -4096 */
		uint64_t ips[MT_EVENT_MAX_EXTRA];
		unsigned nips = 0;
		for (uint64_t k = 0; k < ps->nchain && nips < MT_EVENT_MAX_EXTRA - 2; k++) {
			uint64_t ip = mt_rd64(ps->chain + 8 * k);
			if (ip < (uint64_t)-4096)
				ips[nips++] = ip;
		}
		if (!nips && ps->ip)
			ips[nips++] = ps->ip;
		for (unsigned k = nips; k-- > 0;) {
			snprintf(vals[n], sizeof vals[n], "0x%" PRIx64, ips[k]);
			kv[n] = (struct mt_kv){"frame", vals[n]};
			n++;
		}
		struct mt_event ev = {.time = ps->time, .has_time = ps->has_time, .pid = ps->pid, .tid = ps->tid,
				      .cpu = ps->has_cpu ? (int32_t)ps->cpu : -1, .kind = MT_EV_SAMPLE,
				      .from = nips ? ips[0] : ps->ip, .offset = MT_NO_OFFSET, .extra = kv, .nextra = n};
		mt_events_write(w, &ev);
		stats->by_kind[MT_EV_SAMPLE]++;
	}
}




/* ---- parallel decode of independent segments ----
 * Each segment (a queue's buffers between gaps) decodes alone: workers
 * decode a batch of them at once, each into an event log in memory, and
 * the logs are written in segment order, so the output is the sequential
 * one. Used when no other event's samples interleave with the trace. */

#define MAX_JOBS MT_WORKQ_MAX_THREADS /* mt_ptperf_opts.jobs at most */

/* An event held in memory, packed: the fields a decoder sets, in 64 bytes
 * (struct mt_event takes 104; a round of pieces holds millions). */
struct logged {
	uint64_t time, from, to, insn, offset;
	uint32_t pid, tid, cbr;
	uint32_t msg;               /* arena offset + 1, 0: none */
	int32_t cpu;
	uint8_t kind, flags;
};
enum { LOG_HAS_TIME = 1, LOG_COND = 2, LOG_ASYNC = 4 };
struct evlog {
	struct logged *v;
	size_t n, cap;
	char *arena;
	size_t alen, acap;
	bool oom;
};

static void evlog_sink(void *ctx, const struct mt_event *ev)
{
	struct evlog *l = ctx;
	if (l->oom)
		return;
	if (!mt_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
		l->oom = true;
		return;
	}
	struct logged *e = &l->v[l->n++];
	*e = (struct logged){.time = ev->time, .from = ev->from, .to = ev->to, .insn = ev->insn, .offset = ev->offset,
			     .pid = ev->pid, .tid = ev->tid, .cbr = ev->cbr, .cpu = ev->cpu, .kind = (uint8_t)ev->kind,
			     .flags = (uint8_t)((ev->has_time ? LOG_HAS_TIME : 0) | (ev->cond ? LOG_COND : 0) |
						(ev->async ? LOG_ASYNC : 0))};
	if (ev->msg) {
		size_t k = strlen(ev->msg) + 1;
		if (l->alen + k >= UINT32_MAX || !mt_grow((void **)&l->arena, &l->acap, l->alen + k, 1)) {
			l->oom = true;
			return;
		}
		memcpy(l->arena + l->alen, ev->msg, k);
		e->msg = (uint32_t)l->alen + 1;
		l->alen += k;
	}
}

/* Event k of the log, unpacked into *ev. */
static const struct mt_event *logged_event(const struct evlog *l, size_t k, struct mt_event *ev)
{
	const struct logged *e = &l->v[k];
	*ev = (struct mt_event){.time = e->time, .has_time = e->flags & LOG_HAS_TIME, .pid = e->pid, .tid = e->tid,
				.cpu = e->cpu, .kind = (enum mt_event_kind)e->kind, .from = e->from, .to = e->to,
				.insn = e->insn, .offset = e->offset, .cbr = e->cbr, .cond = e->flags & LOG_COND,
				.async = e->flags & LOG_ASYNC, .msg = e->msg ? l->arena + e->msg - 1 : NULL};
	return ev;
}

/* An empty memory writer for the next group or piece, keeping its memory
 * up to `keep` bytes (one that grew past it is given back). */
static int text_reset(struct mt_events_writer *t, size_t keep)
{
	if (t->buf && t->cap > keep) {
		free(t->buf);
		t->buf = NULL;
	}
	if (!t->buf)
		return mt_events_writer_init_memory(t);
	t->len = 0; /* (one that failed is never used again: the decode ends) */
	return 0;
}

static void evlog_reset(struct evlog *l, size_t keep)
{
	if (l->cap * sizeof *l->v > keep) {
		free(l->v);
		l->v = NULL;
		l->cap = 0;
	}
	l->n = l->alen = 0;
	l->oom = false;
}

struct pseg {
	const uint8_t *data;
	size_t len;
	uint8_t *owned;             /* a joined copy, freed after */
	struct who_ctx wc;
	int32_t cpu;
	bool snapshot_after;        /* a snapshot event follows it */
};

/* Segments decoded by one worker in one go (a task per segment of a few
 * KB cost more in thread wake-ups than decoding them), written in order by
 * the main thread. */
struct pgroup {
	struct mt_workq_task task;  /* first: the task is the group */
	struct pool *p;
	struct pseg *seg;
	size_t nseg, cap, bytes;
	struct evlog log;           /* binary output: events, written by the main thread */
	struct mt_events_writer text; /* text output: formatted by the worker, into memory */
	struct mt_ptdec_stats st;
	int rc;
	struct mt_err err;
};

/* A group is handed to the workers once it holds this much PT or this
 * many segments. */
#define GROUP_BYTES ((size_t)256 << 10)
#define GROUP_SEGMENTS 256
/* Memory a group keeps for its output between uses. */
#define GROUP_KEEP ((size_t)8 << 20)

/* The decode's workers and the groups in flight: a ring of `window`,
 * v[head] the oldest of the n handed to the workers, v[head + n] the one
 * being filled. The main thread reads the trace and writes the oldest
 * group when it is decoded, while the workers decode the next ones. */
struct pool {
	struct pgroup *v;
	size_t window, head, n, bytes, max_bytes;
	unsigned jobs;
	bool text;                  /* the output is text: workers format it */
	struct mt_workq q;          /* no threads with one job: tasks run in the main thread */
	pthread_mutex_t mu;         /* building images (warnings) */
	/* each worker's image, and the process it is of (worker_image);
	 * worker 0 is the main thread */
	struct mt_image img[MAX_JOBS + 1];
	bool have_img[MAX_JOBS + 1];
	uint32_t img_pid[MAX_JOBS + 1];
	struct mt_perfdata *pd;
	const struct side *s;
	const struct mt_ptperf_opts *o;
	const struct mt_ptdec_config *cfg;
	struct warned *wd;
	struct progress *progress;
	struct releaser rel;
};

static void build_image(struct mt_image *img, const struct mt_perfdata *pd, const struct side *s, uint32_t pid,
			const struct mt_ptperf_opts *o, struct warned *wd);

static void text_sink(void *ctx, const struct mt_event *ev)
{
	mt_events_write(ctx, ev);
}

/* Worker `worker`'s image of process pid: kept from one segment or piece
 * to the next (its block cache with it), built again only for another
 * process. NULL with err set when out of memory. */
static struct mt_image *worker_image(struct pool *p, unsigned worker, uint32_t pid, struct mt_err *err)
{
	struct mt_image *img = &p->img[worker];
	if (p->have_img[worker] && p->img_pid[worker] == pid)
		return img;
	if (p->have_img[worker])
		mt_image_fini(img);
	p->have_img[worker] = !mt_image_init(img, "perf.data", err);
	if (!p->have_img[worker])
		return NULL;
	pthread_mutex_lock(&p->mu);
	build_image(img, p->pd, p->s, pid, p->o, p->wd);
	pthread_mutex_unlock(&p->mu);
	p->img_pid[worker] = pid;
	return img;
}

static void pool_free_images(struct pool *p)
{
	for (unsigned k = 0; k <= MAX_JOBS; k++)
		if (p->have_img[k]) {
			mt_image_fini(&p->img[k]);
			p->have_img[k] = false;
		}
}

/* One group, by worker `worker`: its segments one after the other. */
static void pool_item(struct mt_workq_task *t, unsigned worker)
{
	struct pgroup *g = (struct pgroup *)t;
	struct pool *p = g->p;
	if (p->text ? text_reset(&g->text, GROUP_KEEP) : (evlog_reset(&g->log, GROUP_KEEP), 0)) {
		g->rc = mt_err_set(&g->err, MT_ENOMEM, "out of memory");
		return;
	}
	for (size_t i = 0; i < g->nseg && !g->rc; i++) {
		struct pseg *s = &g->seg[i];
		struct mt_image *img = worker_image(p, worker, s->wc.pid, &g->err);
		if (!img) {
			g->rc = g->err.code;
			break;
		}
		struct mt_ptdec_stream st = {.data = s->data, .len = s->len, .cpu = s->cpu, .who = who, .who_ctx = &s->wc,
					     .sink = p->text ? text_sink : evlog_sink,
					     .sink_ctx = p->text ? (void *)&g->text : (void *)&g->log};
		g->rc = mt_ptdec_decode(&st, img, p->cfg, &g->st, &g->err);
		if (!g->rc && s->snapshot_after) {
			struct mt_event sev = {.kind = MT_EV_SNAPSHOT, .pid = s->wc.pid, .tid = s->wc.tid, .cpu = s->cpu,
					       .offset = MT_NO_OFFSET};
			st.sink(st.sink_ctx, &sev);
		}
	}
	if (!g->rc && (g->log.oom || g->text.failed))
		g->rc = mt_err_set(&g->err, MT_ENOMEM, "out of memory holding decoded events");
}

/* Progress of the whole decode: bytes of the segments done before, plus
 * how far into the current one. */
struct progress { const struct mt_ptperf_opts *o; uint64_t base, total; };

static void segment_progress(void *ctx, size_t done)
{
	struct progress *pr = ctx;
	pr->o->progress(pr->o->progress_ctx, pr->base + done, pr->total);
}

static void progress_add(struct progress *pr, uint64_t bytes)
{
	pr->base += bytes;
	if (pr->o->progress)
		pr->o->progress(pr->o->progress_ctx, pr->base, pr->total);
}

static int pool_start(struct pool *p, struct mt_err *err)
{
	p->window = 2 * (size_t)p->jobs + 2;
	/* bytes of PT in flight: their events are held until written */
	p->max_bytes = ((size_t)1 << 20) * (p->jobs + 1);
	p->v = calloc(p->window, sizeof *p->v);
	if (!p->v || pthread_mutex_init(&p->mu, NULL)) {
		free(p->v);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < p->window; i++) {
		p->v[i].p = p;
		p->v[i].task.run = pool_item;
	}
	if (mt_workq_start(&p->q, p->jobs > 1 ? p->jobs : 0)) {
		pthread_mutex_destroy(&p->mu);
		free(p->v);
		return mt_err_set(err, MT_ENOMEM, "cannot start the decode's threads");
	}
	return 0;
}

/* Lets go of the oldest group in flight, decoded: its segments' data. */
static void pool_retire(struct pool *p)
{
	struct pgroup *g = &p->v[p->head];
	for (size_t i = 0; i < g->nseg; i++) {
		if (g->seg[i].owned)
			free(g->seg[i].owned);
		else
			release_before(p->pd, &p->rel, g->seg[i].data);
	}
	p->head = (p->head + 1) % p->window;
	p->n--;
	p->bytes -= g->bytes;
	progress_add(p->progress, g->bytes);
	g->nseg = g->bytes = 0;
}

/* Waits for the oldest group in flight and writes it (only retires it
 * once rc is set). */
static int pool_write_oldest(struct pool *p, struct mt_events_writer *w, struct mt_ptdec_stats *stats, int rc,
			     struct mt_err *err)
{
	struct pgroup *g = &p->v[p->head];
	mt_workq_wait(&p->q, &g->task);
	if (!rc && g->rc)
		rc = mt_err_set(err, g->rc, "%s", g->err.msg);
	if (!rc) {
		if (p->text)
			mt_events_write_bytes(w, g->text.buf, g->text.len);
		for (size_t k = 0; !p->text && k < g->log.n; k++) {
			struct mt_event ev;
			mt_events_write(w, logged_event(&g->log, k, &ev));
		}
		stats->pt_bytes += g->st.pt_bytes;
		stats->insns += g->st.insns;
		stats->errors += g->st.errors;
		stats->handed_over += g->st.handed_over;
		for (int k = 0; k < MT_EV_KIND_COUNT; k++)
			stats->by_kind[k] += g->st.by_kind[k];
	}
	pool_retire(p);
	return rc;
}

/* Hands the group being filled to the workers; then, while too much is in
 * flight, writes the oldest. */
static int pool_submit(struct pool *p, struct mt_events_writer *w, struct mt_ptdec_stats *stats, struct mt_err *err)
{
	struct pgroup *g = &p->v[(p->head + p->n) % p->window];
	if (!g->nseg)
		return 0;
	memset(&g->st, 0, sizeof g->st);
	g->rc = 0;
	g->err = (struct mt_err){0};
	p->n++;
	p->bytes += g->bytes;
	mt_workq_submit(&p->q, &g->task, false);
	int rc = 0;
	while (!rc && (p->n == p->window || (p->n > 1 && p->bytes > p->max_bytes)))
		rc = pool_write_oldest(p, w, stats, rc, err);
	return rc;
}

/* Writes every segment queued, in order. */
static int pool_flush(struct pool *p, struct mt_events_writer *w, struct mt_ptdec_stats *stats, struct mt_err *err)
{
	int rc = pool_submit(p, w, stats, err);
	while (p->n)
		rc = pool_write_oldest(p, w, stats, rc, err);
	return rc;
}

/* Whether segments wait to be written. */
static bool pool_busy(const struct pool *p)
{
	return p->n || p->v[(p->head + p->n) % p->window].nseg;
}

/* Waits for what is in flight without writing it (after an error), ends
 * the workers and frees the groups' memory. */
static void pool_end(struct pool *p)
{
	while (p->n) {
		mt_workq_wait(&p->q, &p->v[p->head].task);
		pool_retire(p);
	}
	mt_workq_stop(&p->q);
	for (size_t i = 0; i < p->window; i++) {
		struct pgroup *g = &p->v[i];
		for (size_t k = 0; k < g->nseg; k++) /* the one being filled */
			free(g->seg[k].owned);
		free(g->seg);
		free(g->log.v);
		free(g->log.arena);
		free(g->text.buf);
	}
	free(p->v);
	pool_free_images(p);
	pthread_mutex_destroy(&p->mu);
}

/* Larger segments are decoded in order by the main thread: their events
 * would cost too much memory to hold. */
#define MAX_POOLED_SEGMENT ((size_t)4 << 20)

/* A segment of contiguous buffers is joined into a copy (libipt decodes
 * from one buffer); past this many pieces' worth it is decoded in pieces
 * as it comes, so memory stays bounded whatever the trace's length. */
#define STREAM_PIECES 16

/* Queues a segment for the workers. owned: a copy of the data, freed once
 * written; snapshot_after: a snapshot event follows it. */
static int pool_add(struct pool *p, const uint8_t *data, size_t len, uint8_t *owned, const struct who_ctx *wc,
		    int32_t cpu, bool snapshot_after, struct mt_events_writer *w, struct mt_ptdec_stats *stats,
		    struct mt_err *err)
{
	struct pgroup *g = &p->v[(p->head + p->n) % p->window];
	if (!mt_grow((void **)&g->seg, &g->cap, g->nseg + 1, sizeof *g->seg)) {
		free(owned);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	g->seg[g->nseg++] = (struct pseg){.data = data, .len = len, .owned = owned, .wc = *wc, .cpu = cpu,
					  .snapshot_after = snapshot_after};
	g->bytes += len;
	if (g->bytes >= GROUP_BYTES || g->nseg >= GROUP_SEGMENTS)
		return pool_submit(p, w, stats, err);
	return 0;
}

/* ---- one long segment split at PSBs ----
 * A PSB starts the packet stream anew (no IP compression, an empty RET
 * compression stack, the full time in its TSC), so a decoder can start at
 * any. A long segment is cut at PSBs into pieces decoded at once, each
 * going on a little past the next cut (OVERLAP). Stitching: the decoder
 * reports each PSB's status at the instruction it was made at, so the
 * piece before knows how many instructions it decoded before the next
 * piece's start. Instruction counts then pair the two pieces' events
 * exactly (PT offsets cannot: how far the decoder has read ahead differs).
 * Past the next piece's first events both decoders are in the same state:
 * the cut goes at the first event where every event both decoded is the
 * same (STITCH_MIN at least), and the piece before keeps its events before
 * it. Where that never holds (a decode error at the cut, cycle-accurate
 * timing still calibrating), the piece before is decoded again through the
 * next one's range instead: the output is always the sequential decode's.
 *
 * Pieces are in flight at once: decoded by the workers in order, each
 * from its own copy of its bytes (the caller may move or drop the
 * segment's data meanwhile), stitched by the main thread as soon as a piece
 * and the next are decoded, and written in order while later ones decode.
 * A piece's text is formatted as it decodes; only the events stitching
 * compares are held as events: those of its head (the first HEAD_BYTES of
 * PT, where the piece before overlaps it) and those after its mark (where
 * it overlaps the next). Binary output holds them all (the main thread
 * writes them). */

#define OVERLAP ((size_t)16 << 10)
/* A piece's head: longer than the piece before reads past its cut (the
 * overlap, and at most 256 blocks before it checks where it is). */
#define HEAD_BYTES (2 * OVERLAP)
/* Memory a piece keeps for its events and text between uses: a piece of
 * split_bytes of PT needs about 16 times as much. */
#define PIECE_KEEP ((size_t)64 << 20)
#define STITCH_MIN 32
#define STITCH_TRIES 8

/* A held event's place among all its piece decoded. */
struct logpos {
	uint64_t idx;               /* the piece's event number */
	uint64_t before;            /* instructions the piece decoded before it */
	size_t text;                /* where its text starts in the piece's */
};

struct piece {
	struct mt_workq_task task;  /* first: the task is the piece */
	struct splitter *sp;
	/* positions in the segment: the PSB it starts at (0: the first PSB),
	 * the next piece's PSB and where to stop decoding (0: to the end) */
	uint64_t start, next, stop;
	uint8_t *buf;               /* the segment's bytes from start on */
	size_t blen, bcap;
	uint64_t mark;              /* instructions decoded before next (UINT64_MAX: not reached) */
	bool head_passed;           /* the decode has read HEAD_BYTES */
	struct evlog log;           /* the events held (see above) */
	struct logpos *pos;         /* and where each lies (pcap >= log.cap) */
	size_t pcap;
	size_t tail;                /* the first held after the mark (SIZE_MAX: none yet) */
	/* every event decoded: how many, their instructions (by kind: st) */
	uint64_t nev, ev_insns;
	size_t keep_from, keep_to;  /* after stitching: the held events the output starts and ends at */
	bool stitched;              /* keep_to is known */
	struct mt_ptdec_stats st;
	int rc;
	struct mt_err err;
	struct mt_events_writer text; /* text output, formatted as it decodes */
};

/* A segment decoded in pieces, fed as it arrives. */
struct splitter {
	struct pool *p;
	int32_t cpu;
	struct who_ctx wc;
	uint64_t base;              /* the position of split_feed's data[0] */
	uint64_t pos;               /* where the next new piece starts */
	bool cut_end;               /* the last piece (to the end) is made */
	struct piece *v;            /* `ring` pieces: */
	struct piece **order;       /* those in flight, oldest first (n) */
	struct piece **spare;       /* and the others (nspare) */
	size_t ring, n, nspare;
};

static void piece_event(void *ctx, const struct mt_event *ev)
{
	struct piece *pc = ctx;
	bool text = pc->sp->p->text;
	bool marked = pc->mark != UINT64_MAX;
	if (!text || !pc->head_passed || marked) {
		size_t k = pc->log.n;
		if (marked && pc->tail == SIZE_MAX)
			pc->tail = k;
		evlog_sink(&pc->log, ev);
		if (pc->log.n == k + 1 && pc->pcap < pc->log.cap &&
		    !mt_grow((void **)&pc->pos, &pc->pcap, pc->log.cap, sizeof *pc->pos))
			pc->log.oom = true;
		if (!pc->log.oom)
			pc->pos[k] = (struct logpos){.idx = pc->nev, .before = pc->ev_insns, .text = pc->text.len};
	}
	pc->nev++;
	pc->ev_insns += ev->insn;
	if (text)
		mt_events_write(&pc->text, ev);
}

static void piece_decode(struct piece *pc, struct mt_image *img)
{
	struct splitter *sp = pc->sp;
	bool text = sp->p->text;
	struct mt_ptdec_stream st = {.data = pc->buf, .len = pc->blen, .cpu = sp->cpu, .who = who, .who_ctx = &sp->wc,
				     .sink = piece_event, .sink_ctx = pc,
				     .stop_after = pc->stop ? (size_t)(pc->stop - pc->start) : 0,
				     .mark_psb = pc->next ? (size_t)(pc->next - pc->start) : 0,
				     .mark_insns = pc->stop ? &pc->mark : NULL, .offset_base = pc->start,
				     .head_end = text ? HEAD_BYTES : 0, .head_passed = &pc->head_passed};
	pc->mark = UINT64_MAX;
	pc->head_passed = false;
	pc->tail = SIZE_MAX;
	pc->nev = pc->ev_insns = 0;
	evlog_reset(&pc->log, PIECE_KEEP);
	if (text && text_reset(&pc->text, PIECE_KEEP)) {
		pc->rc = mt_err_set(&pc->err, MT_ENOMEM, "out of memory");
		return;
	}
	/* binary: room for an event every 4 bytes of PT at once (pages are
	 * touched only as used): growing by doubling copied the log several times */
	size_t bytes = pc->stop ? (size_t)(pc->stop - pc->start) : pc->blen;
	if (!text && pc->log.cap < bytes / 4 &&
	    !mt_grow((void **)&pc->log.v, &pc->log.cap, bytes / 4, sizeof *pc->log.v))
		pc->log.oom = true;
	memset(&pc->st, 0, sizeof pc->st);
	pc->rc = mt_ptdec_decode(&st, img, sp->p->cfg, &pc->st, &pc->err);
	if (pc->tail == SIZE_MAX)
		pc->tail = pc->log.n;
	if (!pc->rc && (pc->log.oom || pc->text.failed))
		pc->rc = mt_err_set(&pc->err, MT_ENOMEM, "out of memory holding decoded events");
}

/* A piece's task, by worker `worker`. */
static void piece_run(struct mt_workq_task *t, unsigned worker)
{
	struct piece *pc = (struct piece *)t;
	struct mt_image *img = worker_image(pc->sp->p, worker, pc->sp->wc.pid, &pc->err);
	if (!img) {
		pc->rc = pc->err.code;
		return;
	}
	piece_decode(pc, img);
}

static bool same_event(const struct logged *x, const char *xa, const struct logged *y, const char *ya)
{
	if (x->time != y->time || x->from != y->from || x->to != y->to || x->insn != y->insn ||
	    x->offset != y->offset || x->pid != y->pid || x->tid != y->tid || x->cbr != y->cbr || x->cpu != y->cpu ||
	    x->kind != y->kind || x->flags != y->flags || !x->msg != !y->msg)
		return false;
	return !x->msg || !strcmp(xa + x->msg - 1, ya + y->msg - 1);
}

/* Cuts between a and b, the piece after it: sets a->keep_to and
 * b->keep_from, or returns false when they do not agree, saying why in
 * why[WHY_LEN] (the furthest any candidate got). */
#define WHY_LEN sizeof(((struct mt_ptdec_stats *)0)->redo_why)
static bool stitch(struct piece *a, struct piece *b, char *why)
{
	if (a->mark == UINT64_MAX) {
		snprintf(why, WHY_LEN, "the piece before never reached this one's PSB");
		return false;
	}
	snprintf(why, WHY_LEN, "no event of this piece's head with instructions of its own (%zu held)", b->log.n);
	size_t best = 0; /* events agreed by the best candidate so far, plus 1 */
	/* b's events by instructions since its PSB (B), a's since a's start
	 * (A): the same event when A = mark + B. Candidates: b's events with
	 * instructions of their own (no other has the same count), after its
	 * first (whose count starts at the PSB, not at the event before), in
	 * its head (held from its first event on). a's is among those after
	 * its mark (the instructions up to it are before the mark). */
	uint64_t B = b->log.n ? b->log.v[0].insn : 0;
	size_t i = a->tail;
	int tries = 0;
	for (size_t j = 1; j < b->log.n && b->pos[j].idx == j && tries < STITCH_TRIES; j++) {
		B += b->log.v[j].insn;
		if (!b->log.v[j].insn)
			continue;
		tries++;
		uint64_t want = a->mark + B;
		while (i < a->log.n && a->pos[i].before + a->log.v[i].insn < want)
			i++;
		if (i >= a->log.n) {
			if (!best)
				snprintf(why, WHY_LEN, "the piece before ends before instruction %" PRIu64
					 " after the cut (event %zu here)", B, j);
			return false;
		}
		if (a->pos[i].before + a->log.v[i].insn != want) {
			if (!best)
				snprintf(why, WHY_LEN, "no event of the piece before at instruction %" PRIu64
					 " after the cut (event %zu here)", B, j);
			continue;
		}
		/* every event a decoded from there on, b decoded the same (a holds
		 * all after its mark; b's must be of its head, one after another) */
		size_t k = 0;
		while (i + k < a->log.n && j + k < b->log.n && b->pos[j + k].idx == j + k &&
		       same_event(&a->log.v[i + k], a->log.arena, &b->log.v[j + k], b->log.arena))
			k++;
		if (i + k == a->log.n && k >= STITCH_MIN) {
			a->keep_to = i;
			b->keep_from = j;
			return true;
		}
		if (k + 1 <= best)
			continue;
		best = k + 1;
		if (i + k == a->log.n) {
			snprintf(why, WHY_LEN, "only %zu events agree before the piece before ends", k);
			continue;
		}
		const struct logged *x = &a->log.v[i + k];
		if (j + k >= b->log.n || b->pos[j + k].idx != j + k) {
			snprintf(why, WHY_LEN, "this piece's head ends %zu events on, the piece before goes on (%s)", k,
				 mt_event_kind_name(x->kind));
			continue;
		}
		/* at: the event's PT offset, -1 when it has none */
		const struct logged *y = &b->log.v[j + k];
		snprintf(why, WHY_LEN, "%zu events agree, then %s %#" PRIx64 "->%#" PRIx64 " +%" PRIu64 " at %" PRId64
			 " (piece before) vs %s %#" PRIx64 "->%#" PRIx64 " +%" PRIu64 " at %" PRId64, k,
			 mt_event_kind_name(x->kind), x->from, x->to, x->insn, (int64_t)x->offset,
			 mt_event_kind_name(y->kind), y->from, y->to, y->insn, (int64_t)y->offset);
	}
	return false;
}

static void piece_free(struct piece *pc)
{
	free(pc->buf);
	free(pc->pos);
	free(pc->log.v);
	free(pc->log.arena);
	free(pc->text.buf);
	memset(pc, 0, sizeof *pc);
}

/* Empty for the next piece, keeping its memory: growing the logs and the
 * text anew for each cost more than decoding (page faults, copies). */
static void piece_reset(struct piece *pc)
{
	struct piece keep = *pc;
	memset(pc, 0, sizeof *pc);
	pc->sp = keep.sp;
	pc->task.run = piece_run;
	pc->buf = keep.buf;
	pc->bcap = keep.bcap;
	pc->pos = keep.pos;
	pc->pcap = keep.pcap;
	pc->log = keep.log;
	pc->text = keep.text;
}

/* The next cut: the first PSB at least `chunk` bytes after `from`, with
 * room after it for the overlap and more; SIZE_MAX when there is none in
 * data[0..len). */
static size_t next_cut(const uint8_t *d, size_t len, size_t from, size_t chunk)
{
	static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};
	if (from + chunk + 2 * OVERLAP >= len)
		return SIZE_MAX;
	const uint8_t *q = memmem(d + from + chunk, len - from - chunk, psb, sizeof psb);
	return q && (size_t)(q - d) + 2 * OVERLAP < len ? (size_t)(q - d) : SIZE_MAX;
}

static void unlog(const struct piece *pc, size_t k, uint64_t *insns, uint64_t *kinds)
{
	*insns -= pc->log.v[k].insn;
	kinds[pc->log.v[k].kind]--;
}

/* The statistics of what a piece writes: all it decoded, less its events
 * before keep_from and from keep_to on (held: of its head, after its
 * mark); with the trailing instructions (after its last event) when it
 * decoded to the end. */
static void piece_stats(const struct piece *pc, struct mt_ptdec_stats *stats)
{
	uint64_t insns = pc->ev_insns, kinds[MT_EV_KIND_COUNT];
	memcpy(kinds, pc->st.by_kind, sizeof kinds);
	for (size_t k = 0; k < pc->keep_from; k++)
		unlog(pc, k, &insns, kinds);
	for (size_t k = pc->keep_to; pc->stop && k < pc->log.n; k++)
		unlog(pc, k, &insns, kinds);
	if (!pc->stop)
		insns += pc->st.insns - pc->ev_insns;
	stats->insns += insns;
	for (int k = 0; k < MT_EV_KIND_COUNT; k++)
		stats->by_kind[k] += kinds[k];
	stats->errors += kinds[MT_EV_ERROR];
	stats->handed_over += pc->st.handed_over;
}

static int split_begin(struct splitter *sp, struct pool *p, const struct who_ctx *wc, int32_t cpu,
		       struct mt_err *err)
{
	memset(sp, 0, sizeof *sp);
	sp->p = p;
	sp->wc = *wc;
	sp->cpu = cpu;
	/* a piece being written, one waiting for the next to stitch, and two
	 * a job decoding */
	sp->ring = 2 * (size_t)p->jobs + 1;
	sp->v = calloc(sp->ring, sizeof *sp->v);
	sp->order = calloc(sp->ring, sizeof *sp->order);
	sp->spare = calloc(sp->ring, sizeof *sp->spare);
	if (!sp->v || !sp->order || !sp->spare) {
		free(sp->v);
		free(sp->order);
		free(sp->spare);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < sp->ring; i++) {
		sp->v[i].sp = sp;
		sp->v[i].task.run = piece_run;
		sp->spare[sp->nspare++] = &sp->v[i];
	}
	return 0;
}

/* Waits for the pieces in flight (after an error) and frees them. */
static void split_end(struct splitter *sp)
{
	for (size_t i = 0; i < sp->ring; i++) {
		mt_workq_wait(&sp->p->q, &sp->v[i].task);
		piece_free(&sp->v[i]);
	}
	free(sp->v);
	free(sp->order);
	free(sp->spare);
}

/* Piece k of those in flight leaves them (written, or decoded again as
 * part of the one before), its memory kept for a next one. */
static void piece_done(struct splitter *sp, size_t k)
{
	struct piece *pc = sp->order[k];
	piece_reset(pc);
	memmove(sp->order + k, sp->order + k + 1, (sp->n - k - 1) * sizeof *sp->order);
	sp->n--;
	sp->spare[sp->nspare++] = pc;
}

/* The first piece not yet stitched, at k or after; NULL when none. */
static struct piece *unstitched(struct splitter *sp, size_t *k)
{
	for (; *k < sp->n; ++*k)
		if (!sp->order[*k]->stitched)
			return sp->order[*k];
	return NULL;
}

/* Stitches the pieces decoded so far, each to the next; *moved when any. */
static int split_stitch(struct splitter *sp, struct mt_ptdec_stats *stats, bool *moved, struct mt_err *err)
{
	struct pool *p = sp->p;
	size_t k = 0;
	struct piece *a;
	while ((a = unstitched(sp, &k))) {
		if (!mt_workq_done(&p->q, &a->task))
			return 0;
		if (a->rc)
			return mt_err_set(err, a->rc, "%s", a->err.msg);
		if (!a->stop) { /* the last: all it decoded */
			a->keep_to = a->log.n;
			a->stitched = true;
			*moved = true;
			continue;
		}
		if (k + 1 == sp->n)
			return 0;
		struct piece *b = sp->order[k + 1];
		if (!mt_workq_done(&p->q, &b->task))
			return 0;
		if (b->rc)
			return mt_err_set(err, b->rc, "%s", b->err.msg);
		*moved = true;
		char why[WHY_LEN];
		if (stitch(a, b, why)) {
			a->stitched = true;
			continue;
		}
		if (!stats->redone) {
			memcpy(stats->redo_why, why, sizeof why);
			stats->redo_at = b->start;
		}
		/* a again, through b's range (keep_from stays: the same events
		 * from the same start), by the main thread */
		struct mt_image *img = worker_image(p, 0, sp->wc.pid, err);
		if (!img)
			return err->code;
		size_t head = (size_t)(b->start - a->start);
		if (!mt_grow((void **)&a->buf, &a->bcap, head + b->blen, 1))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		memcpy(a->buf + head, b->buf, b->blen);
		a->blen = head + b->blen;
		a->stop = b->stop;
		a->next = b->next;
		piece_decode(a, img);
		if (a->rc)
			return mt_err_set(err, a->rc, "%s", a->err.msg);
		piece_done(sp, k + 1);
		stats->redone++;
	}
	return 0;
}

/* What the output waits for: the decode of the first piece not stitched
 * or of the one after it. */
static struct mt_workq_task *split_blocker(struct splitter *sp)
{
	size_t k = 0;
	struct piece *a = unstitched(sp, &k);
	if (!a)
		return NULL;
	if (!mt_workq_done(&sp->p->q, &a->task))
		return &a->task;
	return k + 1 < sp->n ? &sp->order[k + 1]->task : NULL;
}

/* Decodes the pieces data[0..len) holds and writes their events in order;
 * final: data ends the segment, so everything. Pieces not yet written stay
 * in flight for the next call. *keep: the bytes from which on the next
 * call needs the data again (before them it may be dropped, see
 * split_drop). */
static int split_feed(struct splitter *sp, const uint8_t *data, size_t len, bool final, struct mt_events_writer *w,
		      struct mt_ptdec_stats *stats, size_t *keep, struct mt_err *err)
{
	struct pool *p = sp->p;
	int rc = 0;
	while (!rc) {
		bool moved = false;
		/* new pieces, cut to cut, the last to the end, while there is room */
		while (!sp->cut_end && sp->n < sp->ring) {
			size_t from = (size_t)(sp->pos - sp->base);
			size_t c = next_cut(data, len, from, p->o->split_bytes);
			if (c == SIZE_MAX && !final)
				break;
			size_t to = c == SIZE_MAX ? len : c + 2 * OVERLAP;
			struct piece *pc = sp->spare[sp->nspare - 1];
			if (!mt_grow((void **)&pc->buf, &pc->bcap, to - from, 1)) {
				rc = mt_err_set(err, MT_ENOMEM, "out of memory");
				break;
			}
			memcpy(pc->buf, data + from, to - from);
			pc->blen = to - from;
			pc->start = sp->pos;
			pc->next = c == SIZE_MAX ? 0 : sp->base + c;
			pc->stop = c == SIZE_MAX ? 0 : pc->next + OVERLAP;
			sp->cut_end = c == SIZE_MAX;
			if (!sp->cut_end)
				sp->pos = pc->next;
			sp->nspare--;
			sp->order[sp->n++] = pc;
			stats->pieces++;
			mt_workq_submit(&p->q, &pc->task, false);
			moved = true;
		}
		if (!rc)
			rc = split_stitch(sp, stats, &moved, err);
		/* the oldest pieces, written once stitched */
		while (!rc && sp->n) {
			struct piece *pc = sp->order[0];
			if (!pc->stitched)
				break;
			if (p->text) {
				size_t from = pc->keep_from ? pc->pos[pc->keep_from].text : 0;
				size_t to = pc->stop ? pc->pos[pc->keep_to].text : pc->text.len;
				mt_events_write_bytes(w, pc->text.buf + from, to - from);
			} else
				for (size_t k = pc->keep_from; k < pc->keep_to; k++) {
					struct mt_event ev;
					mt_events_write(w, logged_event(&pc->log, k, &ev));
				}
			piece_stats(pc, stats);
			progress_add(p->progress, (pc->next ? pc->next : pc->start + pc->blen) - pc->start);
			piece_done(sp, 0);
			moved = true;
		}
		if (rc || moved)
			continue;
		if (!sp->n || (!final && !sp->cut_end && sp->n < sp->ring))
			break; /* done, or more data first */
		struct mt_workq_task *t = split_blocker(sp);
		if (!t) /* cannot happen: never leave pieces unwritten silently */
			rc = mt_err_set(err, MT_EFORMAT, "pieces of a split segment left unwritten (a bug in mt)");
		else
			mt_workq_wait(&p->q, t);
	}
	*keep = (size_t)(sp->pos - sp->base);
	if (final && !rc)
		stats->pt_bytes += sp->base + len;
	return rc;
}

/* The caller dropped the first n bytes of the data (n <= split_feed's
 * *keep): the data's base moves forward. */
static void split_drop(struct splitter *sp, size_t n)
{
	sp->base += n;
}

int mt_ptperf_decode(struct mt_perfdata *pd, const struct mt_ptperf_opts *o,
		     struct mt_events_writer *w, struct mt_ptdec_stats *stats,
		     bool *damaged, struct mt_err *err)
{
	struct side s = {0};
	int rc = collect(pd, &s, err);
	if (rc)
		goto out;
	*damaged = s.walk_damaged;
	if (s.bufs.n && !s.have_info) {
		rc = mt_err_set(err, MT_EFORMAT, "%s: AUXTRACE data without an AUXTRACE_INFO record", pd->name);
		goto out;
	}
	if (s.have_info && s.info_type != AUXTRACE_INTEL_PT) {
		rc = mt_err_set(err, MT_EUNSUP, "%s: AUX trace type %u is not Intel PT", pd->name, s.info_type);
		goto out;
	}
	bool timed = decode_is_timed(pd, &s);
	if (!s.have_info) {
		/* no Intel PT: a sampling recording, its stack samples are the events */
		write_meta(pd, &s, w, false, o);
		emit_samples(pd, &s, w, stats);
		goto damage;
	}
	write_meta(pd, &s, w, timed, o);

	struct mt_ptdec_config cfg = {0};
	cfg.timed = timed;
	cfg.conv.time_shift = (uint16_t)s.priv[PRIV_TIME_SHIFT];
	cfg.conv.time_mult = (uint32_t)s.priv[PRIV_TIME_MULT];
	cfg.conv.time_zero = s.priv[PRIV_TIME_ZERO];
	if (s.have_tconv && s.tconv.short_fmt) {
		cfg.conv.short_fmt = true;
		cfg.conv.time_cycles = s.tconv.time_cycles;
		cfg.conv.time_mask = s.tconv.time_mask;
	}
	const struct mt_perf_evattr *pa = pt_attr(pd, &s);
	if (pa && s.npriv > PRIV_TSC_CTC_D) {
		cfg.mtc_freq = (uint8_t)field(pa->config, s.priv[PRIV_MTC_FREQ_BITS]);
		cfg.ctc_n = (uint32_t)s.priv[PRIV_TSC_CTC_N];
		cfg.ctc_d = (uint32_t)s.priv[PRIV_TSC_CTC_D];
	}
	if (s.npriv > PRIV_MAX_NONTURBO_RATIO)
		cfg.nom_freq = (uint8_t)s.priv[PRIV_MAX_NONTURBO_RATIO];
	/* cycle-accurate mode by the event's cyc bit; not known: perhaps */
	cfg.cyc = !pa || s.npriv <= PRIV_CYC_BIT || (pa->config & s.priv[PRIV_CYC_BIT]);
	cfg.all_branches = o->all_branches;
	cfg.want_power = o->power;
	cfg.libipt_blocks = o->libipt_blocks;
	cfg.libipt_packets = o->libipt_packets;
	cpu_of(pd, &cfg);
	bool per_cpu = s.priv[PRIV_PER_CPU_MMAPS] != 0;
	if (s.switches.n)
		qsort(s.switches.v, s.switches.n, sizeof *s.switches.v, cmp_sw);

	struct warned wd = {0};
	struct sink_ctx sc = {.w = w, .pd = pd, .s = &s, .per_cpu = per_cpu, .stats = stats};
	/* event samples of other events than the trace's own */
	if (s.samples.n) {
		sc.order = malloc(s.samples.n * sizeof *sc.order);
		sc.done = calloc(s.samples.n, 1);
		if (!sc.order || !sc.done) {
			free(sc.order);
			free(sc.done);
			rc = mt_err_set(err, MT_ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < s.samples.n; i++)
			if (!pa || s.samples.v[i].attr < 0 || &pd->attrs[s.samples.v[i].attr] != pa)
				sc.order[sc.norder++] = i;
		sort_side = &s;
		qsort(sc.order, sc.norder, sizeof *sc.order, cmp_sample_time);
	}
	/* Queues in order of first appearance of their idx; contiguous
	 * buffers of a queue are joined, a gap starts a new segment. */
	bool *done = calloc(s.bufs.n + 1, 1);
	if (!done) {
		rc = mt_err_set(err, MT_ENOMEM, "out of memory");
		goto out;
	}
	struct progress prog = {.o = o};
	struct releaser rel = {0};
	for (size_t i = 0; i < s.bufs.n; i++)
		prog.total += s.bufs.v[i].size;
	struct pool pool = {.jobs = o->jobs > MAX_JOBS ? MAX_JOBS : o->jobs, .text = w->format == MT_EVENTS_TEXT, .pd = pd, .s = &s,
			    .o = o, .cfg = &cfg, .wd = &wd, .progress = &prog};
	bool parallel = o->jobs > 1 && !sc.norder;
	/* long segments can be decoded in pieces (one job or more) */
	bool streamable = !sc.norder && o->split_bytes && !s.priv[PRIV_SNAPSHOT_MODE];
	if (pool.jobs < 1)
		pool.jobs = 1;
	bool pool_started = !(rc = pool_start(&pool, err));
	for (size_t qi = 0; qi < s.bufs.n && !rc; qi++) {
		if (done[qi])
			continue;
		const struct auxbuf *first = &s.bufs.v[qi];
		uint32_t idx_cpu = first->cpu, idx_tid = first->tid;
		sc.q_cpu = idx_cpu;
		sc.q_tid = idx_tid;
		sc.next = 0;
		struct who_ctx wc = {.per_cpu = per_cpu};
		if (per_cpu) {
			wc.tid = wc.pid = (uint32_t)-1;
			for (size_t i = 0; i < s.itrace.n; i++)
				if (s.itrace.v[i].cpu == idx_cpu) {
					wc.pid = s.itrace.v[i].pid;
					wc.tid = s.itrace.v[i].tid;
					break;
				}
			if (wc.tid == (uint32_t)-1) {
				wc.tid = first->tid;
				wc.pid = pid_of_tid(&s, first->tid);
			}
			size_t a = 0;
			while (a < s.switches.n && s.switches.v[a].cpu < idx_cpu)
				a++;
			size_t b = a;
			while (b < s.switches.n && s.switches.v[b].cpu == idx_cpu)
				b++;
			wc.sw = s.switches.n ? s.switches.v + a : NULL;
			wc.nsw = b - a;
		} else {
			wc.tid = idx_tid;
			wc.pid = pid_of_tid(&s, idx_tid);
		}
		struct mt_image img;
		if ((rc = mt_image_init(&img, "perf.data", err)))
			break;
		bool img_built = false; /* in parallel, workers build their own */

		/* Gather this queue's buffers (same cpu in per-cpu mode, same tid
		 * otherwise). A segment of one buffer is decoded where it lies;
		 * contiguous ones are joined into a copy. */
		uint8_t *joined = NULL;
		size_t jcap = 0;
		const uint8_t *seg = NULL;
		size_t seglen = 0;
		struct splitter sp;
		bool splitting = false;
		uint64_t next_off = first->offset;
		for (size_t bi = qi; bi <= s.bufs.n && !rc; bi++) {
			const struct auxbuf *b = bi < s.bufs.n ? &s.bufs.v[bi] : NULL;
			if (b && (done[bi] || (per_cpu ? b->cpu != idx_cpu : b->tid != idx_tid)))
				continue;
			size_t skip = 0; /* bytes of b already in the segment (snapshot overlap) */
			if (b && seglen && b->offset != next_off && s.priv[PRIV_SNAPSHOT_MODE])
				skip = snapshot_overlap(seg, &seglen, b->data, b->size);
			if (!b || (seglen && b->offset != next_off && !skip)) {
				bool cut = splitting || (parallel && o->split_bytes && seglen > 2 * o->split_bytes);
				bool pooled = parallel && !cut && seglen <= MAX_POOLED_SEGMENT;
				if (pooled) {
					/* queued; a joined copy goes with it */
					uint8_t *own = seg == joined ? joined : NULL;
					if (own)
						joined = NULL, jcap = 0;
					rc = pool_add(&pool, seg, seglen, own, &wc, per_cpu ? (int32_t)idx_cpu : -1,
						      s.priv[PRIV_SNAPSHOT_MODE] && b, w, stats, err);
				} else if (cut && (splitting || ((!pool_busy(&pool) || !(rc = pool_flush(&pool, w, stats, err))) &&
								 !(rc = split_begin(&sp, &pool, &wc,
										    per_cpu ? (int32_t)idx_cpu : -1, err))))) {
					/* a long one: in pieces */
					size_t keep;
					rc = split_feed(&sp, seg, seglen, true, w, stats, &keep, err);
					split_end(&sp);
					splitting = false;
					if (seg != joined)
						release_before(pd, &rel, seg);
				} else if (!rc && (!parallel || !pool_busy(&pool) || !(rc = pool_flush(&pool, w, stats, err)))) {
					/* a large segment: its events go straight out */
					if (!img_built)
						build_image(&img, pd, &s, wc.pid, o, &wd);
					img_built = true;
					struct mt_ptdec_stream st = {.data = seg, .len = seglen,
								     .cpu = per_cpu ? (int32_t)idx_cpu : -1, .who = who,
								     .who_ctx = &wc, .sink = sink, .sink_ctx = &sc,
								     .progress = o->progress ? segment_progress : NULL,
								     .progress_ctx = &prog};
					rc = mt_ptdec_decode(&st, &img, &cfg, stats, err);
					progress_add(&prog, seglen);
					if (seg != joined)
						release_before(pd, &rel, seg);
				}
				seglen = 0;
				seg = NULL;
				if (!b || rc)
					break;
				if (s.priv[PRIV_SNAPSHOT_MODE] && !pooled) {
					/* the next snapshot does not continue this one */
					struct mt_event sev = {.kind = MT_EV_SNAPSHOT, .pid = wc.pid, .tid = wc.tid,
							       .cpu = per_cpu ? (int32_t)idx_cpu : -1,
							       .offset = MT_NO_OFFSET};
					mt_events_write(w, &sev);
				}
			}
			done[bi] = true;
			if (!seglen) {
				seg = b->data;
				seglen = b->size;
				next_off = b->offset + b->size;
				continue;
			}
			/* a second piece: the segment becomes a copy */
			size_t need = seglen + (b->size > skip ? b->size - skip : 0);
			if (need > jcap) {
				size_t nc = jcap ? jcap : 1 << 16;
				while (nc < need)
					nc *= 2;
				bool in_joined = seg == joined && joined; /* the segment moves with it */
				uint8_t *n = realloc(joined, nc);
				if (!n) {
					rc = mt_err_set(err, MT_ENOMEM, "out of memory joining PT buffers");
					break;
				}
				if (in_joined)
					seg = n;
				joined = n;
				jcap = nc;
			}
			if (seg != joined) {
				memcpy(joined, seg, seglen);
				seg = joined;
			}
			if (b->size > skip)
				memcpy(joined + seglen, b->data + skip, b->size - skip);
			release_before(pd, &rel, b->data);
			seglen = need;
			next_off = b->offset + b->size;
			if (streamable && seglen >= STREAM_PIECES * o->split_bytes) {
				/* a segment too long to hold: decoded in pieces as it comes,
				 * what they no longer need dropped */
				if (!splitting && (!pool_busy(&pool) || !(rc = pool_flush(&pool, w, stats, err))) &&
				    !(rc = split_begin(&sp, &pool, &wc, per_cpu ? (int32_t)idx_cpu : -1, err)))
					splitting = true;
				size_t keep = 0;
				if (!rc)
					rc = split_feed(&sp, joined, seglen, false, w, stats, &keep, err);
				if (!rc && keep) {
					memmove(joined, joined + keep, seglen - keep);
					seglen -= keep;
					split_drop(&sp, keep);
				}
			}
		}
		if (splitting) /* left by an error */
			split_end(&sp);
		free(joined);
		mt_image_fini(&img);
		if (!rc)
			queue_samples(&sc, UINT64_MAX); /* the rest of this queue's samples */
	}
	if (!rc && pool_busy(&pool))
		rc = pool_flush(&pool, w, stats, err);
	if (pool_started)
		pool_end(&pool); /* what an error left in flight, too */
	free(done);
	/* samples of threads or CPUs without trace */
	for (size_t k = 0; k < sc.norder && !rc; k++)
		if (!sc.done[sc.order[k]]) {
			sc.done[sc.order[k]] = true;
			write_event_sample(&sc, &s.samples.v[sc.order[k]]);
		}
	free(sc.order);
	free(sc.done);
	for (size_t i = 0; i < wd.n; i++)
		free(wd.v[i]);
	free(wd.v);
damage:
	if (!rc && s.walk_damaged) {
		/* Damage in the container itself: report it in the stream, too. */
		struct mt_event ev = {.kind = MT_EV_ERROR, .cpu = -1, .offset = MT_NO_OFFSET, .msg = s.walk_err};
		stats->by_kind[MT_EV_ERROR]++;
		stats->errors++;
		mt_events_write(w, &ev);
		if (o->warn) {
			char msg[600];
			snprintf(msg, sizeof msg, "warning: %s", s.walk_err);
			o->warn(o->warn_ctx, msg);
		}
	}
	if (!rc && s.aux_truncated && o->warn) {
		char msg[128];
		snprintf(msg, sizeof msg, "warning: %" PRIu64 " AUX records flagged TRUNCATED: trace data was lost while recording",
			 s.aux_truncated);
		o->warn(o->warn_ctx, msg);
	}
out:
	side_free(&s);
	return rc;
}

/* --- info --------------------------------------------------------------- */

static void print_config(FILE *out, uint64_t c)
{
	static const struct { int bit; const char *name; } bits[] = {
		{0, "pt"}, {1, "cyc"}, {4, "pwr_evt"}, {5, "fup_on_ptw"}, {9, "mtc"},
		{10, "tsc"}, {11, "noretcomp"}, {12, "ptw"}, {13, "branch"}, {31, "event"}, {55, "notnt"},
	};
	fprintf(out, "0x%" PRIx64 " (", c);
	const char *sep = "";
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		if (c & (1ULL << bits[i].bit)) {
			fprintf(out, "%s%s", sep, bits[i].name);
			sep = ",";
		}
	fprintf(out, "%smtc_period=%u,cyc_thresh=%u,psb_period=%u)", sep, (unsigned)((c >> 14) & 15),
		(unsigned)((c >> 19) & 15), (unsigned)((c >> 24) & 15));
}

int mt_ptperf_info(struct mt_perfdata *pd, FILE *out, struct mt_err *err)
{
	struct side s = {0};
	int rc = collect(pd, &s, err);
	if (rc)
		goto out;
	fprintf(out, "file\t%s\nmode\t%s\nsize\t%zu\n", pd->name, pd->pipe_mode ? "pipe" : "file", pd->len);
	if (pd->hostname) fprintf(out, "hostname\t%s\n", pd->hostname);
	if (pd->osrelease) fprintf(out, "os-release\t%s\n", pd->osrelease);
	if (pd->version) fprintf(out, "perf-version\t%s\n", pd->version);
	if (pd->arch) fprintf(out, "arch\t%s\n", pd->arch);
	if (pd->cpudesc) fprintf(out, "cpu-desc\t%s\n", pd->cpudesc);
	if (pd->cpuid) fprintf(out, "cpuid\t%s\n", pd->cpuid);
	if (pd->nrcpus_avail) fprintf(out, "nr-cpus\t%u online, %u available\n", pd->nrcpus_online, pd->nrcpus_avail);
	fprintf(out, "features\t");
	const char *sep = "";
	for (int b = 0; b < 256; b++)
		if (pd->features[b / 8] & (1u << (b % 8))) {
			fprintf(out, "%s%d", sep, b);
			sep = ",";
		}
	fprintf(out, "\n");
	for (size_t i = 0; i < pd->nattrs; i++) {
		const struct mt_perf_evattr *a = &pd->attrs[i];
		fprintf(out, "event\t%zu\tname=%s\ttype=%u\tsize=%u\tconfig=", i, a->name ? a->name : "?", a->type, a->size);
		if (s.have_info && a->type == s.priv[PRIV_PMU_TYPE])
			print_config(out, a->config);
		else
			fprintf(out, "0x%" PRIx64, a->config);
		fprintf(out, "\tsample_type=0x%" PRIx64 "\tflags=0x%" PRIx64 "\tids=%zu%s\n", a->sample_type, a->flags,
			a->nids, (a->flags & MT_ATTR_CONTEXT_SWITCH) ? "\tcontext_switch" : "");
	}
	for (int t = 0; t < 128; t++)
		if (s.counts[t])
			fprintf(out, "records\t%s\t%" PRIu64 "\n", mt_perf_record_name((uint32_t)t), s.counts[t]);
	if (s.have_info) {
		static const char *const names[PRIV_COUNT] = {
			"pmu_type", "time_shift", "time_mult", "time_zero", "cap_user_time_zero", "tsc_bit",
			"noretcomp_bit", "have_sched_switch", "snapshot_mode", "per_cpu_mmaps", "mtc_bit",
			"mtc_freq_bits", "tsc_ctc_n", "tsc_ctc_d", "cyc_bit", "max_nonturbo_ratio", "filter_str_len",
		};
		fprintf(out, "auxtrace-info\ttype=%u\tfields=%zu%s\n", s.info_type, s.npriv,
			s.have_cap_event_trace ? "+cap_event_trace" : "");
		for (size_t i = 0; i < s.npriv; i++)
			fprintf(out, "auxtrace-info\t%s\t0x%" PRIx64 "\n", names[i], s.priv[i]);
		if (s.filter)
			fprintf(out, "auxtrace-info\tfilter\t%s\n", s.filter);
		fprintf(out, "decode\t%s\n", decode_is_timed(pd, &s) ? "timed" : "timeless");
	}
	for (size_t i = 0; i < s.bufs.n; i++)
		fprintf(out, "buffer\tcpu=%d\ttid=%d\toffset=0x%" PRIx64 "\tbytes=%" PRIu64 "\n", (int32_t)s.bufs.v[i].cpu,
			(int32_t)s.bufs.v[i].tid, s.bufs.v[i].offset, s.bufs.v[i].size);
	if (s.aux_truncated || s.aux_overwrite || s.aux_collision)
		fprintf(out, "aux-flags\ttruncated=%" PRIu64 "\toverwrite=%" PRIu64 "\tcollision=%" PRIu64 "\n",
			s.aux_truncated, s.aux_overwrite, s.aux_collision);
	for (size_t i = 0; i < s.comms.n; i++)
		fprintf(out, "thread\tpid=%u\ttid=%u\tcomm=%s\n", s.comms.v[i].pid, s.comms.v[i].tid, s.comms.v[i].name);
	for (size_t i = 0; i < s.maps.n; i++)
		fprintf(out, "mmap\tpid=%d\tstart=0x%" PRIx64 "\tlen=0x%" PRIx64 "\tpgoff=0x%" PRIx64 "\t%s\n",
			(int32_t)s.maps.v[i].pid, s.maps.v[i].start, s.maps.v[i].len, s.maps.v[i].pgoff, s.maps.v[i].path);
	if (s.have_time)
		fprintf(out, "time-range\t%" PRIu64 "\t%" PRIu64 "\n", s.tmin, s.tmax);
	if (s.walk_damaged)
		fprintf(out, "damage\t%s\n", s.walk_err);
out:
	side_free(&s);
	return rc;
}
