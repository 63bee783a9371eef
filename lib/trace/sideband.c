#define _GNU_SOURCE
#include "trace/sideband.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"

int mt_vec_push(void **v, size_t *n, size_t *cap, size_t elem, const void *item)
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

void mt_side_free(struct side *s)
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

/* The comms collected so far, by thread (150,000 threads, each a FORK and
 * a COMM, cost no scan each): a hash of tid to its latest comm in file
 * order (what a FORK's child inherits), and each comm's previous one of
 * the same tid, so that a thread's few names are walked to find the same
 * record again (the same name for the thread at the same time: a repeat;
 * a name again later, A then B then A after two execs, is a change). */
struct comm_index {
	uint64_t *latest; /* tid << 32 | comms index + 1 */
	uint32_t *prev;   /* comms index -> the tid's comm before it, index + 1 (0: none) */
	size_t cap, prevcap;
};

static uint64_t mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

/* tid's slot: its entry, or the empty one where it goes (cap > 0) */
static uint64_t *tid_slot(const struct comm_index *ci, uint32_t tid)
{
	size_t j = (size_t)mix64(tid) & (ci->cap - 1);
	while (ci->latest[j] && ci->latest[j] >> 32 != tid)
		j = (j + 1) & (ci->cap - 1);
	return &ci->latest[j];
}

static bool has_comm(const struct comm_index *ci, const struct side *s, const uint64_t *slot, uint32_t pid,
		     const char *name, uint64_t time)
{
	for (uint32_t i = (uint32_t)*slot; i; i = ci->prev[i - 1]) {
		const struct comm *c = &s->comms.v[i - 1];
		if (c->pid == pid && c->time == time && !strcmp(c->name, name))
			return true;
	}
	return false;
}

static const char *latest_name(const struct comm_index *ci, const struct side *s, uint32_t tid)
{
	if (!ci->cap)
		return NULL;
	uint32_t i = (uint32_t)*tid_slot(ci, tid);
	return i ? s->comms.v[i - 1].name : NULL;
}

/* comms.v[i], just pushed, as its tid's latest (slot: tid_slot's) */
static void index_comm(struct comm_index *ci, size_t i, uint32_t tid, uint64_t *slot)
{
	ci->prev[i] = (uint32_t)*slot;
	*slot = ((uint64_t)tid << 32) | (i + 1);
}

/* Room for one more comm (the hash at most half full), every comm placed
 * again in file order when grown; nonzero when out of memory. */
static int comm_room(struct comm_index *ci, const struct side *s)
{
	if (s->comms.n >= UINT32_MAX - 1)
		return -1;
	if (s->comms.n + 1 > ci->prevcap) {
		size_t pc = ci->prevcap ? 2 * ci->prevcap : 256;
		uint32_t *p = realloc(ci->prev, pc * sizeof *p);
		if (!p)
			return -1;
		ci->prev = p;
		ci->prevcap = pc;
	}
	if (2 * (s->comms.n + 1) <= ci->cap)
		return 0;
	size_t cap = ci->cap ? 2 * ci->cap : 256;
	uint64_t *latest = calloc(cap, sizeof *latest);
	if (!latest)
		return -1;
	free(ci->latest);
	ci->latest = latest;
	ci->cap = cap;
	for (size_t i = 0; i < s->comms.n; i++)
		index_comm(ci, i, s->comms.v[i].tid, tid_slot(ci, s->comms.v[i].tid));
	return 0;
}

static int cmp_comm_time(const void *a, const void *b)
{
	const struct comm *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq; /* file order for ties: qsort is not stable */
}

void mt_release_before(const struct mt_perfdata *pd, struct releaser *r, const uint8_t *at)
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

bool mt_side_sample_of(const struct mt_perf_record *r, struct psample *ps)
{
	if (!r->sid.has_tid || (!r->sid.callchain && !r->sid.has_ip))
		return false;
	*ps = (struct psample){r->sid.pid, r->sid.tid, r->sid.cpu, r->sid.has_time, r->sid.has_cpu, r->sid.time,
			       r->sid.has_period ? r->sid.period : 1, r->sid.ip, r->sid.attr_index, r->sid.callchain,
			       r->sid.callchain_nr, r->sid.regs, r->sid.regs_n, r->sid.regs_mask, r->sid.stack,
			       r->sid.stack_size, r->sid.has_stack, r->sid.brstack, r->sid.brstack_nr,
			       r->sid.brstack_hw_idx, r->sid.has_hw_idx, r->sid.brstack_cntr};
	return true;
}

/* the thread that switches is the sample id's, in both kinds */
bool mt_side_switch_of(const struct mt_perf_record *r, struct tsw *sw)
{
	if ((r->type != MT_REC_SWITCH && r->type != MT_REC_SWITCH_CPU_WIDE) || !r->sid.has_tid || !r->sid.has_time)
		return false;
	*sw = (struct tsw){r->sid.pid, r->sid.tid, r->sid.cpu, r->sid.time, r->sid.has_cpu,
			   (r->misc & MT_MISC_SWITCH_OUT) != 0, (r->misc & MT_MISC_SWITCH_OUT_PREEMPT) != 0};
	return true;
}

int mt_side_primary_of(const struct mt_perfdata *pd, int primary, int attr)
{
	bool hit = attr >= 0 && (size_t)attr < pd->nattrs && pd->attrs[attr].type == 5; /* a breakpoint: a trigger's */
	return !hit && (primary < 0 || (attr >= 0 && attr < primary)) ? attr : primary;
}

int mt_side_collect_samples(struct mt_perfdata *pd, struct side *s, struct mt_err *err)
{
	struct mt_perf_record r;
	struct mt_err werr = {0};
	mt_perfdata_rewind(pd);
	while (mt_perfdata_next(pd, &r, &werr) > 0) {
		struct psample ps;
		if (r.type == MT_REC_SAMPLE && mt_side_sample_of(&r, &ps) &&
		    mt_vec_push((void **)&s->samples.v, &s->samples.n, &s->samples.cap, sizeof ps, &ps))
			return mt_err_set(err, MT_ENOMEM, "out of memory collecting samples");
	}
	return 0; /* damage was said by the first walk */
}

int mt_side_collect(struct mt_perfdata *pd, struct side *s, struct mt_err *err)
{
	s->seen.primary = -1;
	struct mt_perf_record r;
	struct mt_err werr = {0};
	int rc;
	struct releaser walked = {0}; /* the walk lets go of what it passed */
	struct comm_index ci = {0};
	while ((rc = mt_perfdata_next(pd, &r, &werr)) > 0) {
		mt_release_before(pd, &walked, pd->base + r.offset);
		s->counts[r.type < 128 ? r.type : 127]++;
		note_time(s, &r);
		const uint8_t *b = r.body;
		size_t bs = r.body_size;
		int e = 0;
		switch (r.type) {
		case MT_REC_AUXTRACE_INFO:
			parse_auxtrace_info(s, &r);
			break;
		case MT_REC_SAMPLE: {
			struct psample ps;
			if (!mt_side_sample_of(&r, &ps))
				break;
			s->seen.n++;
			s->seen.any_time |= ps.has_time;
			s->seen.any_stack |= ps.has_stack && ps.regs;
			s->seen.primary = mt_side_primary_of(pd, s->seen.primary, ps.attr);
			if (!s->defer_samples)
				e = mt_vec_push((void **)&s->samples.v, &s->samples.n, &s->samples.cap, sizeof ps, &ps);
			break;
		}
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
				uint64_t t = r.sid.has_time ? r.sid.time : 0;
				uint32_t pid = mt_rd32(b), tid = mt_rd32(b + 4);
				uint64_t *slot = name && !(e = comm_room(&ci, s)) ? tid_slot(&ci, tid) : NULL;
				if (slot && !has_comm(&ci, s, slot, pid, name, t) && !(e = PUSH(s->comms, pid, tid, name, t, 0)))
					index_comm(&ci, s->comms.n - 1, tid, slot);
			}
			break;
		case MT_REC_FORK:
			/* A new thread (or process) inherits its creator's name
			 * until a COMM record says otherwise. */
			if (bs >= 16) {
				uint32_t pid = mt_rd32(b), tid = mt_rd32(b + 8), ptid = mt_rd32(b + 12);
				const char *name = latest_name(&ci, s, ptid);
				uint64_t t = r.sid.has_time ? r.sid.time : 0;
				uint64_t *slot = name && !(e = comm_room(&ci, s)) ? tid_slot(&ci, tid) : NULL;
				if (slot && !has_comm(&ci, s, slot, pid, name, t) && !(e = PUSH(s->comms, pid, tid, name, t, 0)))
					index_comm(&ci, s->comms.n - 1, tid, slot);
				/* a new process (fork without exec) has its parent's
				 * code mapped where the parent had it, and perf writes
				 * no MMAP for it: the parent's mappings so far are its
				 * own (an exec's MMAPs come later and replace them) */
				uint32_t ppid = mt_rd32(b + 4);
				/* (bounded: a crafted file of many forks of a process of
				 * many maps asks for their product) */
				for (size_t i = 0, n = s->maps.n; !e && pid != ppid && i < n && s->maps.n < (1u << 22); i++)
					if (s->maps.v[i].pid == ppid) {
						struct map m = s->maps.v[i];
						m.pid = pid;
						e = mt_vec_push((void **)&s->maps.v, &s->maps.n, &s->maps.cap, sizeof m, &m);
					}
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
			e = mt_vec_push((void **)&s->maps.v, &s->maps.n, &s->maps.cap, sizeof m, &m);
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
				s->aux_partial += (fl & 4) != 0;
				s->aux_collision += (fl & 8) != 0;
			}
			break;
		case MT_REC_LOST:
			if (bs >= 16) {
				s->lost += mt_rd64(b + 8);
				s->lost_records++;
			}
			break;
		case MT_REC_LOST_SAMPLES:
			if (bs >= 8)
				s->lost_samples += mt_rd64(b);
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
		if (e) {
			free(ci.prev);
			free(ci.latest);
			return mt_err_set(err, MT_ENOMEM, "out of memory collecting sideband");
		}
	}
	free(ci.prev);
	free(ci.latest);
	/* perf writes its per-CPU buffers one after another: a FORK on one CPU
	 * may come after the COMM its child made on another. In time order, a
	 * thread's last name is its latest (an exec's, not its creator's) */
	for (size_t i = 0; i < pd->nattrs; i++)
		s->switch_events |= (pd->attrs[i].flags & MT_ATTR_CONTEXT_SWITCH) != 0;
	for (size_t i = 0; i < s->comms.n; i++)
		s->comms.v[i].seq = i;
	if (s->comms.n)
		qsort(s->comms.v, s->comms.n, sizeof *s->comms.v, cmp_comm_time);
	if (rc < 0) {
		s->walk_damaged = true;
		snprintf(s->walk_err, sizeof s->walk_err, "%s", werr.msg);
	} else if (!s->walk_damaged && pd->truncated && pd->data_declared > pd->data_end - pd->data_off) {
		/* cut at a record's end: every record read whole, and yet the
		 * rest of the data section is missing */
		s->walk_damaged = true;
		snprintf(s->walk_err, sizeof s->walk_err,
			 "%s: the file is truncated: its data section ends at %" PRIu64 " of the %" PRIu64 " bytes its "
			 "header declares; what was recorded after that is lost", pd->name, pd->data_end - pd->data_off,
			 pd->data_declared);
	} else if (pd->zstd.batches_lost || pd->zstd.records_cut) {
		s->walk_damaged = true;
		snprintf(s->walk_err, sizeof s->walk_err,
			 "%s: %" PRIu64 " of its %" PRIu64 " zstd-compressed record batches (perf record -z) could not be "
			 "read (%.300s): the records they held are lost", pd->name, pd->zstd.batches_lost, pd->zstd.batches,
			 pd->zstd.damage);
	} else if (pd->zstd.part_damage[0]) {
		/* perf record --threads: a data.N missing, cut or unread */
		s->walk_damaged = true;
		snprintf(s->walk_err, sizeof s->walk_err, "%s: %.400s", pd->name, pd->zstd.part_damage);
	} else if (s->counts[MT_REC_COMPRESSED] + s->counts[MT_REC_COMPRESSED2]) {
		/* compressed records in a file whose header does not say so
		 * (perf record -z always does): not expanded, and said */
		s->walk_damaged = true;
		snprintf(s->walk_err, sizeof s->walk_err,
			 "%" PRIu64 " zstd-compressed record batches skipped: the file's header does not say it is "
			 "compressed (perf record -z does)", s->counts[MT_REC_COMPRESSED] + s->counts[MT_REC_COMPRESSED2]);
	}
	return 0;
}

bool mt_side_loss_of(const struct mt_perf_record *r, struct tloss *l)
{
	const uint8_t *b = r->body;
	size_t bs = r->body_size;
	*l = (struct tloss){.pid = r->sid.pid, .tid = r->sid.tid, .cpu = r->sid.cpu, .time = r->sid.time,
			    .has_time = r->sid.has_time, .has_cpu = r->sid.has_cpu};
	if (r->type == MT_REC_LOST && bs >= 16) {
		uint64_t n = mt_rd64(b + 8);
		snprintf(l->msg, sizeof l->msg, "perf lost %" PRIu64 " event%s: its ring buffer was full", n,
			 n == 1 ? "" : "s");
	} else if (r->type == MT_REC_LOST_SAMPLES && bs >= 8) {
		uint64_t n = mt_rd64(b);
		snprintf(l->msg, sizeof l->msg, "the kernel lost %" PRIu64 " sample%s", n, n == 1 ? "" : "s");
	} else if (r->type == MT_REC_AUX && bs >= 24 && (mt_rd64(b + 16) & 5)) {
		uint64_t fl = mt_rd64(b + 16), size = mt_rd64(b + 8);
		snprintf(l->msg, sizeof l->msg, "trace data lost: an AUX buffer of %" PRIu64 " bytes %s", size,
			 fl & 1 ? "truncated (it was full)" : "partial");
	} else {
		return false;
	}
	return true;
}

void mt_side_losses(const struct side *s, char *out, size_t n)
{
	size_t k = 0;
	out[0] = '\0';
	if (s->lost_records && k < n)
		k += (size_t)snprintf(out + k, n - k, "%" PRIu64 " events (%" PRIu64 " LOST records: perf's ring buffer "
				      "was full; a larger -m or a lower rate keeps them)", s->lost, s->lost_records);
	if (s->lost_samples && k < n)
		k += (size_t)snprintf(out + k, n - k, "%s%" PRIu64 " samples (LOST_SAMPLES)", k ? ", " : "",
				      s->lost_samples);
	if (s->aux_truncated && k < n)
		k += (size_t)snprintf(out + k, n - k, "%s%" PRIu64 " AUX buffers truncated (trace data lost)",
				      k ? ", " : "", s->aux_truncated);
	if (s->aux_partial && k < n)
		k += (size_t)snprintf(out + k, n - k, "%s%" PRIu64 " AUX buffers partial", k ? ", " : "",
				      s->aux_partial);
}

bool mt_side_timed(const struct mt_perfdata *pd, const struct side *s)
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

const struct mt_perf_evattr *mt_side_pt_attr(const struct mt_perfdata *pd, const struct side *s)
{
	for (size_t i = 0; i < pd->nattrs; i++)
		if (s->have_info && pd->attrs[i].type == s->priv[PRIV_PMU_TYPE])
			return &pd->attrs[i];
	return NULL;
}

unsigned mt_config_field(uint64_t config, uint64_t mask)
{
	return mask ? (unsigned)((config & mask) >> __builtin_ctzll(mask)) : 0;
}

void mt_who(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid)
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

uint32_t mt_side_pid_of_tid(const struct side *s, uint32_t tid)
{
	for (size_t i = 0; i < s->comms.n; i++)
		if (s->comms.v[i].tid == tid)
			return s->comms.v[i].pid;
	for (size_t i = 0; i < s->itrace.n; i++)
		if (s->itrace.v[i].tid == tid)
			return s->itrace.v[i].pid;
	return tid;
}

void mt_side_buildid(const struct mt_perfdata *pd, const struct map *m, const uint8_t **bid, unsigned *bidsz)
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

