#include "trace/ptdecode.h"
#include "trace/errata.h"
#include "trace/ptnote.h"
#include "trace/ptquery.h"
#include "trace/runcache.h"
#include "trace/x86.h"

#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t mt_tsc_to_perf_time(const struct mt_tsc_conv *c, uint64_t tsc)
{
	if (c->short_fmt)
		tsc = c->time_cycles + ((tsc - c->time_cycles) & c->time_mask);
	/* a corrupt shift (64 or more) must not be undefined behaviour */
	unsigned shift = c->time_shift < 64 ? c->time_shift : 63;
	uint64_t quot = tsc >> shift;
	uint64_t rem = tsc & (((uint64_t)1 << shift) - 1);
	return c->time_zero + quot * c->time_mult + ((rem * c->time_mult) >> shift);
}

#define MT_PTDEC_MAX_WALK (1u << 20)

struct dec {
	const struct mt_ptdec_stream *s;
	const struct mt_ptdec_config *cfg;
	/* the CPU's errata SKD022, SKL014 (with an address filter given: libipt
	 * assumes none applies without one), BDM64 (errata.h) */
	bool skd022, skl014, bdm64;
	/* a TRIG's instruction count starts at its anchor: the last IP the
	 * trace gave (a sync, a branch's packet, an event with its IP; libipt
	 * 2.2's pt_blk_find_trig_anchor), where insns_at_packet was set; and
	 * the instruction count where the last sync or event set it (where
	 * insns_at_packet is further on, the anchor is a branch: BDM64) */
	bool has_anchor;
	uint64_t event_anchor_insns;
	struct mt_image *img;
	struct mt_ptdec_stats *stats;
	struct pt_block_decoder *blk;   /* libipt's walk, or */
	struct mt_ptq q;                /* mt's walk over mt's (or libipt's) packets */
	/* instructions decoded so far (added to the statistics at the end),
	 * and their count at the last emitted event */
	uint64_t insns, insns_at_event;
	uint64_t cycles_at_event;       /* the query decoder's cycles as of the last event */
	uint64_t last_ip;          /* last instruction decoded */
	/* The branch that ended the previous block, waiting for its target. */
	bool pending;
	enum pt_insn_class pend_class;
	uint64_t pend_from;
	/* The time when the branch's block was decoded: the event is emitted
	 * only once the next block is known, and libipt may have read timing
	 * packets past the branch by then. */
	uint64_t pend_time, pend_cycles;
	bool pend_has_time, use_pend_time, pend_has_cycles;
	uint8_t pend_len;          /* its length when known (0: read it) */
	/* mt's walk: the next instruction, whether tracing is on, the
	 * return addresses of calls for compressed returns, instructions
	 * since the last packet */
	uint64_t ip;
	bool enabled;
	bool not64;                /* the last MODE.Exec said 16- or 32-bit code */
	/* as of the last sync: instructions, the count at the last event, the
	 * events delivered (the sum of the kinds' counts) */
	uint64_t sync_insns, sync_insns_at_event, sync_delivered;
	struct mt_retstack rs;
	uint64_t insns_at_packet;  /* insns when the trace last gave an IP: a branch's packet, an event with one */
	/* libipt stamps some events (enable, disable, ...) with the time of
	 * their own packet, which is better than the decoder's current time. */
	uint64_t ev_time;
	bool use_ev_time;
	/* functions of recent jump sources (by address bits): most jumps
	 * stay inside one; not known: a gap no function holds */
	struct { uint64_t start, end; bool known; } fn[1024];
};

static uint64_t trace_offset(struct dec *d)
{
	uint64_t off = 0;
	if (!d->blk)
		off = mt_ptq_offset(&d->q);
	else
		pt_blk_get_offset(d->blk, &off);
	return off;
}

static uint64_t now(struct dec *d, bool *has)
{
	*has = false;
	if (!d->cfg->timed)
		return 0;
	uint64_t tsc;
	uint32_t lost_mtc, lost_cyc;
	int rc = !d->blk ? mt_ptq_time(&d->q, &tsc) : pt_blk_time(d->blk, &tsc, &lost_mtc, &lost_cyc);
	if (rc < 0)
		return 0; /* no timing packet seen yet */
	*has = true;
	return mt_tsc_to_perf_time(&d->cfg->conv, tsc);
}

/* The cycles as of the last packet read (false: not counted: no CYC, or
 * libipt reads). */
static inline bool cycles_now(struct dec *d, uint64_t *cycles)
{
	return d->cfg->cyc && !d->blk && mt_ptq_cycles(&d->q, cycles);
}

/* ev's cycles: since the last event, as of the packet its time is of. */
static __attribute__((noinline)) void count_cycles(struct dec *d, struct mt_event *ev)
{
	uint64_t cycles = d->pend_cycles;
	bool has_cycles = d->use_pend_time ? d->pend_has_cycles : cycles_now(d, &cycles);
	if (has_cycles && cycles >= d->cycles_at_event) {
		ev->cyc = cycles - d->cycles_at_event;
		d->cycles_at_event = cycles;
	}
}

enum { EMIT_COND = 1, EMIT_ASYNC = 2 };

/* Completes ev (time, instruction count, thread) and hands it on: the one
 * place every decoded event passes through. */
static void deliver(struct dec *d, struct mt_event *ev)
{
	ev->cpu = d->s->cpu;
	if (d->use_pend_time) {
		ev->time = d->pend_time;
		ev->has_time = d->pend_has_time;
	} else if (d->use_ev_time) {
		ev->time = d->ev_time;
		ev->has_time = true;
	} else {
		ev->time = now(d, &ev->has_time);
	}
	ev->insn = d->insns - d->insns_at_event;
	d->insns_at_event = d->insns;
	if (__builtin_expect(d->cfg->cyc, 0))
		count_cycles(d, ev);
	if (d->s->who)
		d->s->who(d->s->who_ctx, ev->has_time ? ev->time : 0, &ev->pid, &ev->tid);
	d->stats->by_kind[ev->kind]++;
	d->s->sink(d->s->sink_ctx, ev);
}

/* Events delivered so far (rare: at a sync or a hand-over). */
static uint64_t delivered(const struct dec *d)
{
	uint64_t n = 0;
	for (int k = 0; k < MT_EV_KIND_COUNT; k++)
		n += d->stats->by_kind[k];
	return n;
}

static void emit_ev(struct dec *d, enum mt_event_kind kind, uint64_t from, uint64_t to,
		    unsigned flags, uint32_t cbr)
{
	struct mt_event ev = {.kind = kind, .from = from, .to = to, .cond = flags & EMIT_COND,
			      .async = flags & EMIT_ASYNC, .cbr = cbr, .offset = MT_NO_OFFSET};
	deliver(d, &ev);
}

static void emit(struct dec *d, enum mt_event_kind kind, uint64_t from, uint64_t to)
{
	emit_ev(d, kind, from, to, 0, 0);
}

/* The IP n instructions on from the walk's, where no branch that needs
 * the trace comes first: 0 where one does (or the code is not there). */
static uint64_t ip_after(struct dec *d, uint64_t n)
{
	uint64_t ip = d->ip;
	for (unsigned blocks = 0; blocks < 64; blocks++) {
		int err;
		const struct mt_code_block *b = mt_image_block(d->img, ip, &err);
		if (!b)
			return 0;
		if (n < b->ninsn)
			return b->ip + d->img->offs[b->offs + n];
		n -= b->ninsn;
		if (b->cls == ptic_other)
			ip = b->end_ip + b->len;
		else if (b->direct && b->cls != ptic_cond_jump)
			ip = b->target;
		else
			return 0;
	}
	return 0;
}

/* The notes the packet reader (mt's or libipt's) reports as events;
 * power ones only when asked, as CBR. */
static void handle_note(struct dec *d, const struct pt_event *ev)
{
	struct mt_ptnote n;
	if (!mt_ptnote_of(ev, d->cfg->want_power, &n))
		return;
	struct mt_event e = {.kind = n.kind, .from = n.ip, .offset = MT_NO_OFFSET, .extra = n.kv, .nextra = n.n};
	deliver(d, &e);
}

/* errcode 0: `what` is the whole message; else libipt's text follows it. */
static void emit_error(struct dec *d, int errcode, const char *what)
{
	char msg[160];
	if (!errcode)
		snprintf(msg, sizeof msg, "%s", what);
	else
		snprintf(msg, sizeof msg, "%s%s%s", what ? what : "", what ? ": " : "",
			 pt_errstr(pt_errcode(errcode)));
	struct mt_event ev = {.kind = MT_EV_ERROR, .from = d->last_ip, .msg = msg};
	ev.offset = trace_offset(d) + d->s->offset_base;
	d->stats->errors++;
	deliver(d, &ev);
	d->pending = false;
}

/* The class of the branch at ip and its length, from the image's block
 * cache (the block starting at ip ends at ip when ip is a branch). libipt's
 * block decoder leaves iclass as ptic_error for some blocks, and never
 * gives the length, which a not-taken branch needs. */
static enum pt_insn_class classify_branch(struct dec *d, uint64_t ip, unsigned *len)
{
	int err;
	const struct mt_code_block *b = mt_image_block(d->img, ip, &err);
	*len = 0;
	if (!b)
		return ptic_error;
	if (b->end_ip != ip)
		return ptic_other;
	*len = b->len;
	return (enum pt_insn_class)b->cls;
}

static void resolve_branch(struct dec *d, uint64_t to);

/* The cache slot describing addr's function (or the gap around it). */
static size_t fn_slot(struct dec *d, uint64_t addr)
{
	size_t k = (size_t)(((addr >> 4) * 0x9e3779b97f4a7c15u) >> 54);
	if (addr < d->fn[k].start || addr >= d->fn[k].end)
		d->fn[k].known = mt_image_func_range(d->img, addr, &d->fn[k].start, &d->fn[k].end);
	return k;
}

/* The block starting at `to` follows the pending branch: report it. */
static void resolve_pending(struct dec *d, uint64_t to)
{
	if (!d->pending)
		return;
	d->pending = false;
	d->use_pend_time = true;
	resolve_branch(d, to);
	d->use_pend_time = false;
}

static void resolve_branch(struct dec *d, uint64_t to)
{
	uint64_t from = d->pend_from;
	switch (d->pend_class) {
	case ptic_call:
		emit(d, MT_EV_CALL, from, to);
		break;
	case ptic_return:
		emit(d, MT_EV_RETURN, from, to);
		break;
	case ptic_far_call:
		emit(d, MT_EV_SYSCALL, from, to);
		break;
	case ptic_far_return:
		emit(d, MT_EV_SYSRET, from, to);
		break;
	case ptic_jump:
	case ptic_far_jump:
	case ptic_cond_jump: {
		bool cond = d->pend_class == ptic_cond_jump;
		if (!d->cfg->all_branches) {
			/* inside one known function, or in no known function at all;
			 * asked first because it settles most conditional branches,
			 * taken or not, without reading their bytes */
			size_t k = fn_slot(d, from);
			if (d->fn[k].known ? to >= d->fn[k].start && to < d->fn[k].end : !d->fn[fn_slot(d, to)].known)
				return;
		}
		if (cond) {
			unsigned len = d->pend_len;
			if (!len)
				classify_branch(d, from, &len);
			if (len && to == from + len)
				return; /* not taken */
		}
		emit_ev(d, MT_EV_JUMP, from, to, cond ? EMIT_COND : 0, 0);
		break;
	}
	default:
		break;
	}
}

/* Notes the instructions decoded before the next piece's first PSB: at its
 * status, reported at the instruction the PSB was made at (after a resync
 * there too); or, when it found tracing off, at the enable after it. */
static void note_psb(struct dec *d, const struct pt_event *ev)
{
	if ((ev->status_update || ev->type == ptev_enabled || ev->type == ptev_exec_mode) && d->s->mark_insns &&
	    *d->s->mark_insns == UINT64_MAX && trace_offset(d) > d->s->mark_psb)
		*d->s->mark_insns = d->insns;
}

static void handle_event(struct dec *d, const struct pt_event *ev)
{
	note_psb(d, ev);
	d->use_ev_time = d->cfg->timed && ev->has_tsc;
	if (d->use_ev_time)
		d->ev_time = mt_tsc_to_perf_time(&d->cfg->conv, ev->tsc);
	switch (ev->type) {
	case ptev_enabled:
		d->pending = false;
		emit(d, MT_EV_TRACE_START, 0, ev->variant.enabled.ip);
		break;
	case ptev_disabled:
		if (d->pending && d->pend_class == ptic_far_call) {
			/* Into untraced (kernel) code: the syscall's target is unknown. */
			d->pending = false;
			emit(d, MT_EV_SYSCALL, d->pend_from, ev->ip_suppressed ? 0 : ev->variant.disabled.ip);
		} else {
			/* A branch out of the traced range: report it, then the end. */
			if (!ev->ip_suppressed)
				resolve_pending(d, ev->variant.disabled.ip);
			d->pending = false;
			emit(d, MT_EV_TRACE_END, d->last_ip, 0);
		}
		break;
	case ptev_async_disabled:
		/* The branch before the interrupt went to where it hit. */
		resolve_pending(d, ev->variant.async_disabled.at);
		emit_ev(d, MT_EV_TRACE_END, ev->variant.async_disabled.at,
			ev->ip_suppressed ? 0 : ev->variant.async_disabled.ip, EMIT_ASYNC, 0);
		break;
	case ptev_async_branch:
		resolve_pending(d, ev->variant.async_branch.from);
		emit(d, MT_EV_INTERRUPT, ev->variant.async_branch.from, ev->variant.async_branch.to);
		break;
	case ptev_overflow:
		d->pending = false;
		emit_error(d, 0, "trace overflow, packets lost");
		/* tracing resumes where the overflow ends, when it says where;
		 * with no IP it resumes disabled, and a TIP.PGE will say when
		 * (no trace-start to 0x0: ptxed's reading) */
		if (!ev->ip_suppressed)
			emit(d, MT_EV_TRACE_START, 0, ev->variant.overflow.ip);
		break;
	case ptev_cbr:
		if (d->cfg->want_power)
			emit_ev(d, MT_EV_POWER, 0, 0, 0, ev->variant.cbr.ratio);
		break;
	default:
		handle_note(d, ev);
		break;
	}
	d->use_ev_time = false;
}

bool mt_ptdec_parse_filter(const char *s, struct mt_ptdec_config *cfg)
{
	char *end;
	unsigned long n = strtoul(s, &end, 10);
	if (end == s || *end != ':' || n > 3)
		return false;
	const char *p = end + 1;
	uint64_t from = strtoull(p, &end, 0);
	if (end == p || *end != '-')
		return false;
	p = end + 1;
	uint64_t to = strtoull(p, &end, 0);
	if (end == p || to < from)
		return false;
	uint8_t mode = 1;
	if (!strcmp(end, ":stop"))
		mode = 2;
	else if (*end && strcmp(end, ":filter"))
		return false;
	cfg->addr[n].cfg = mode;
	cfg->addr[n].from = from;
	cfg->addr[n].to = to;
	return true;
}

/* ---- mt's walk: ptquery reads the packets (taken or not, where to,
 * events, time: mt itself, or libipt's query decoder past what mt reads,
 * with the same answers); the code is walked a block at a time from the
 * image's block cache. It reports what the block-decoder loop below does:
 * every branch with its target, instructions counted up to it, events at
 * the instruction they bind to. ---- */

/* Instructions executed, the last at `last`. */
static void pass(struct dec *d, uint32_t n, uint64_t last)
{
	d->insns += n;
	d->last_ip = last;
}

/* Block b ended at its branch, taken: it is reported once the block it went
 * to is found, as the block-decoder loop does (a branch into unmapped code
 * becomes just the error), with the time it was decoded at. */
static inline void walk_pend(struct dec *d, const struct mt_code_block *b)
{
	d->pending = true;
	d->pend_class = (enum pt_insn_class)b->cls;
	d->pend_from = b->end_ip;
	d->pend_len = b->len;
	d->pend_time = now(d, &d->pend_has_time);
	if (__builtin_expect(d->cfg->cyc, 0)) /* as its time: when it was decoded */
		d->pend_has_cycles = cycles_now(d, &d->pend_cycles);
}

/* A direct call pushes its return address, but not a call to the next
 * instruction (position-independent code reading its own address). */
static void walk_call(struct dec *d, const struct mt_code_block *b, uint64_t to)
{
	uint64_t next = b->end_ip + b->len;
	if (b->cls == ptic_call && (!b->direct || to != next))
		mt_retstack_push(&d->rs, next);
}

/* A piece of a longer stream has read up to off: notes when that passes
 * its head; true when it is past where it stops. */
static bool piece_read_to(const struct mt_ptdec_stream *s, uint64_t off)
{
	if (s->head_end && off >= s->head_end)
		*s->head_passed = true;
	return s->stop_after && off >= s->stop_after;
}

/* walk errors of mt's own, beside libipt's negative pte_ codes */
enum { WALK_TOO_LONG = -1000, WALK_NOT_64BIT = -1001 };

/* inline: the walk's step per block, where a call costs as much as the rest */
static inline __attribute__((always_inline)) const struct mt_code_block *walk_block(struct dec *d, int *err)
{
	const struct mt_code_block *b = mt_image_block(d->img, d->ip, err);
	if (b) {
		resolve_pending(d, b->ip);
		pass(d, b->ninsn, b->end_ip);
		if (d->insns - d->insns_at_packet > MT_PTDEC_MAX_WALK) {
			/* or 16- or 32-bit code (walk_event set that up) */
			*err = d->not64 ? WALK_NOT_64BIT : WALK_TOO_LONG;
			return NULL;
		}
	}
	return b;
}

/* Executes the instructions from d->ip up to x, not x itself. An event is
 * pending, so every branch before x was reported: those met must need no
 * trace (direct jumps and calls). */
static int walk_to(struct dec *d, uint64_t x)
{
	while (d->ip != x) {
		int err;
		if (d->not64)
			return WALK_NOT_64BIT;
		const struct mt_code_block *b = mt_image_block(d->img, d->ip, &err);
		if (!b)
			return err;
		if (x > b->ip && x <= b->end_ip) {
			const uint16_t *o = d->img->offs + b->offs;
			uint32_t k = 1;
			while (k < b->ninsn && b->ip + o[k] < x)
				k++;
			if (k < b->ninsn && b->ip + o[k] == x) {
				resolve_pending(d, b->ip);
				pass(d, k, b->ip + o[k - 1]);
				d->ip = x;
				return 0;
			}
		}
		if (!(b = walk_block(d, &err)))
			return err;
		uint64_t next = b->end_ip + b->len;
		if (b->cls == ptic_other) {
			d->ip = next;
			continue;
		}
		if (!b->direct || b->cls == ptic_cond_jump)
			return -pte_bad_query; /* the trace says nothing happens before x */
		walk_call(d, b, b->target);
		walk_pend(d, b);
		d->ip = b->target;
	}
	return 0;
}

/* Whether ip lies outside every filtered range (there are some). */
static bool filtered_out(const struct mt_ptdec_config *cfg, uint64_t ip)
{
	bool any = false;
	for (unsigned i = 0; i < 4; i++) {
		if (cfg->addr[i].cfg != 1)
			continue;
		any = true;
		if (ip >= cfg->addr[i].from && ip <= cfg->addr[i].to)
			return false;
	}
	return any;
}

static bool filter_given(const struct mt_ptdec_config *cfg)
{
	for (unsigned i = 0; i < 4; i++)
		if (cfg->addr[i].cfg)
			return true;
	return false;
}

/* The first instruction of block b at or after from that is one (its
 * bytes tell), else 0. */
static uint64_t find_in_block(struct dec *d, const struct mt_code_block *b, uint64_t from,
			      bool (*is)(const uint8_t *, size_t))
{
	const uint16_t *o = d->img->offs + b->offs;
	for (uint32_t k = 0; k < b->ninsn; k++) {
		uint8_t insn[15];
		size_t n = mt_image_read(d->img, b->ip + o[k], insn, sizeof insn);
		if (b->ip + o[k] >= from && is(insn, n))
			return b->ip + o[k];
	}
	return 0;
}

static bool is_ptwrite(const uint8_t *b, size_t n)
{
	return mt_ptwrite_length(b, n) != 0;
}

/* A MOV CR3 in the block at d->ip, at or after it: its address, else 0. */
static uint64_t mov_cr3_in_block(struct dec *d)
{
	int err;
	const struct mt_code_block *b = mt_image_block(d->img, d->ip, &err);
	return b && b->mov_cr3 ? find_in_block(d, b, d->ip, mt_is_mov_cr3) : 0;
}

/* Walks to the branch that disabled tracing (the next one that needs trace,
 * or a direct one to the disable's address), which is left pending.
 * Erratum SKL014: a TIP.PGD for a direct branch out of the filtered range
 * may lack its IP: the first direct branch to a target outside it is the
 * one (libipt's workaround, with the filter configuration given). */
static int walk_to_disable(struct dec *d, const struct pt_event *ev)
{
	for (;;) {
		int err;
		/* without SKL014's reading, a TIP.PGD without IP binds to a
		 * MOV CR3 (libipt's): tracing stopped as it changed CR3 */
		uint64_t cr3_at = ev->ip_suppressed && !d->skl014 ? mov_cr3_in_block(d) : 0;
		if (cr3_at) {
			int rc = walk_to(d, cr3_at);
			if (rc < 0)
				return rc;
			resolve_pending(d, cr3_at);
			pass(d, 1, cr3_at);
			return 0;
		}
		const struct mt_code_block *b = walk_block(d, &err);
		if (!b)
			return err;
		uint64_t next = b->end_ip + b->len;
		if (b->cls == ptic_other) {
			d->ip = next;
			continue;
		}
		walk_call(d, b, b->target);
		walk_pend(d, b);
		if (b->direct && b->cls != ptic_cond_jump && ev->ip_suppressed && d->skl014 &&
		    filtered_out(d->cfg, b->target))
			return 0;
		if (b->direct && b->cls != ptic_cond_jump &&
		    (ev->ip_suppressed || b->target != ev->variant.disabled.ip)) {
			d->ip = b->target;
			continue;
		}
		return 0;
	}
}

/* The next PTWRITE from d->ip on, before any branch that needs the trace
 * (the PTW packet came before that branch's): 0 when there is none. */
static uint64_t next_ptwrite(struct dec *d)
{
	uint64_t ip = d->ip, walked = 0;
	for (;;) {
		int err;
		const struct mt_code_block *b = mt_image_block(d->img, ip, &err);
		if (!b)
			return 0;
		uint64_t at = find_in_block(d, b, ip, is_ptwrite);
		if (at)
			return at;
		walked += b->ninsn;
		if (walked > MT_PTDEC_MAX_WALK || b->cls == ptic_cond_jump || (b->cls != ptic_other && !b->direct))
			return 0;
		ip = b->cls == ptic_other ? b->end_ip + b->len : b->target;
	}
}

/* A PTWRITE at *ip (0: the next one, *ip set when found) ran: the walk
 * goes past it, so its note comes after its instruction, as libipt's
 * decoders place it. */
static int walk_ptwrite(struct dec *d, uint64_t *at)
{
	uint64_t ip = *at;
	if (!ip && !(ip = *at = next_ptwrite(d)))
		return 0; /* not found in the code: the note stays where it is */
	int rc = walk_to(d, ip);
	if (rc < 0)
		return rc;
	uint8_t insn[15];
	unsigned len = mt_ptwrite_length(insn, mt_image_read(d->img, ip, insn, sizeof insn));
	if (!len)
		return -pte_bad_insn;
	resolve_pending(d, ip);
	pass(d, 1, ip);
	d->ip = ip + len;
	return 0;
}

/* Erratum SKD022: VMLAUNCH and VMRESUME may disable tracing with a FUP
 * and a TIP.PGD, as if asynchronously, where the VM entry itself (a far
 * branch out of the traced code) disabled it: libipt then reads the
 * disable as synchronous, after the instruction. True for those two. */
static bool skd022_vm_entry(struct dec *d, uint64_t at)
{
	uint8_t b[3];
	return d->skd022 && mt_image_read(d->img, at, b, 3) == 3 && b[0] == 0x0f && b[1] == 0x01 &&
	       (b[2] == 0xc2 || b[2] == 0xc3);
}

/* Whether the packet reader's event gave an IP: a TRIG anchor (disabled,
 * -1: no anchor any more). */
static int anchors(const struct pt_event *ev)
{
	switch ((int)ev->type) {
	case ptev_enabled:
	case ptev_async_branch:
		return 1;
	case ptev_disabled:
	case ptev_async_disabled:
		return -1;
	case ptev_overflow:
		return ev->ip_suppressed ? -1 : 1;
	case ptev_exec_mode:
	case ptev_tsx:
	case ptev_async_paging:
	case ptev_async_vmcs:
	case ptev_exstop:
	case ptev_ptwrite:
	case MT_PTEV_CFE:
	case MT_PTEV_TRIG:
		return !ev->ip_suppressed;
	default:
		return 0;
	}
}

/* Whether the walk reaches to from from without a branch, in at most
 * max instructions (libipt's pt_insn_range_is_contiguous). */
static bool reaches_straight(struct dec *d, uint64_t from, uint64_t to, unsigned max)
{
	uint64_t ip = from;
	for (unsigned steps = 0;;) {
		int err;
		const struct mt_code_block *b = mt_image_block(d->img, ip, &err);
		if (!b)
			return false;
		const uint16_t *o = d->img->offs + b->offs;
		for (uint32_t k = 0; k < b->ninsn; k++) {
			if (b->ip + o[k] == to)
				return true;
			if (++steps > max)
				return false;
		}
		if (b->cls != ptic_other)
			return false;
		ip = b->end_ip + b->len;
	}
}

/* Erratum BDM64: a TSX abort right after a branch the trace gave may
 * have corrupted that branch's trace. Where the abort's IP cannot be
 * reached from where the branch went without another branch, that
 * branch went to the abort's IP (libipt's workaround): it is left
 * pending, to be told going there. */
static void bdm64_abort(struct dec *d, const struct pt_event *ev)
{
	uint64_t at = ev->variant.tsx.ip;
	/* the last block's branch took the last packet: the walk is where
	 * the packet took it, no instruction on, no event anchored since */
	if (!d->bdm64 || !d->enabled || !ev->variant.tsx.aborted || ev->ip_suppressed ||
	    d->insns_at_packet != d->insns || d->event_anchor_insns == d->insns ||
	    reaches_straight(d, d->ip, at, 0x100))
		return;
	if (!d->pending) {
		unsigned len = 0;
		enum pt_insn_class cls = classify_branch(d, d->last_ip, &len);
		if (cls == ptic_other || cls == ptic_error)
			return;
		d->pending = true;
		d->pend_class = cls;
		d->pend_from = d->last_ip;
		d->pend_len = (uint8_t)len;
		d->pend_time = now(d, &d->pend_has_time);
		if (__builtin_expect(d->cfg->cyc, 0))
			d->pend_has_cycles = cycles_now(d, &d->pend_cycles);
	}
	d->ip = at;
}

/* One event from the query decoder: walk to where it binds, then report it
 * as handle_event does for the block decoder. */
static __attribute__((noinline)) int walk_event(struct dec *d, const struct pt_event *ev)
{
	int rc = 0;
	struct pt_event vm_entry, ptw, trig;
	const struct pt_event *read = ev; /* as the packet reader gave it */
	if (ev->type == ptev_tsx)
		bdm64_abort(d, ev);
	if (d->enabled && ev->type == ptev_async_disabled && skd022_vm_entry(d, ev->variant.async_disabled.at)) {
		rc = walk_to(d, ev->variant.async_disabled.at);
		if (rc < 0)
			return rc;
		pass(d, 1, ev->variant.async_disabled.at); /* the VM entry ran: it left the traced code */
		vm_entry = *ev;
		vm_entry.type = ptev_disabled;
		vm_entry.variant.disabled.ip = ev->variant.async_disabled.ip;
		vm_entry.ip_suppressed = 1; /* where the guest runs, not a traced address */
		ev = &vm_entry;
	} else if (d->enabled) {
		if (ev->type == ptev_exec_mode && !ev->ip_suppressed)
			rc = walk_to(d, ev->variant.exec_mode.ip);
		else if (ev->type == ptev_async_disabled)
			rc = walk_to(d, ev->variant.async_disabled.at);
		else if (ev->type == ptev_async_branch)
			rc = walk_to(d, ev->variant.async_branch.from);
		else if (ev->type == ptev_disabled)
			rc = walk_to_disable(d, ev);
		else if (ev->type == ptev_ptwrite) {
			/* without a FUP, the walk finds its instruction */
			ptw = *ev;
			if (ptw.ip_suppressed)
				ptw.variant.ptwrite.ip = 0;
			rc = walk_ptwrite(d, &ptw.variant.ptwrite.ip);
			ptw.ip_suppressed = !ptw.variant.ptwrite.ip;
			ev = &ptw;
		}
		/* MWAIT and EXSTOP with an IP: before the instruction there */
		else if (ev->type == ptev_mwait && !ev->ip_suppressed)
			rc = walk_to(d, ev->variant.mwait.ip);
		else if (ev->type == ptev_exstop && !ev->ip_suppressed)
			rc = walk_to(d, ev->variant.exstop.ip);
		/* a CFE with its IP: the instruction there (IRET, VMRESUME,
		 * ...) or the one an interrupt came before */
		else if (ev->type == MT_PTEV_CFE && !ev->ip_suppressed) {
			struct mt_cfe cfe;
			mt_ptq_cfe(ev, &cfe);
			rc = walk_to(d, cfe.ip);
		} else if (ev->type == MT_PTEV_TRIG) {
			/* before the instruction it fired at: its FUP's, or as
			 * many instructions on from its anchor as it counts
			 * (libipt 2.2 walks them), where no branch needs the
			 * trace first */
			struct mt_trig t;
			mt_ptq_trig(ev, &t);
			uint64_t since = d->insns - d->insns_at_packet;
			if (t.flags & MT_TRIG_IP)
				t.ip = ev->ip_suppressed ? 0 : t.ip;
			else
				t.ip = t.flags & MT_TRIG_ICNTV && d->has_anchor && t.icnt >= since ? ip_after(d, t.icnt - since) : 0;
			if (t.ip)
				rc = walk_to(d, t.ip);
			trig = *ev;
			trig.ip_suppressed = !t.ip;
			mt_ptq_set_fields(&trig, &t, sizeof t);
			ev = &trig;
		}
	}
	if (rc < 0)
		return rc;
	handle_event(d, ev);
	int a = anchors(ev->type == MT_PTEV_TRIG ? ev : read); /* a TRIG has the IP the walk found */
	if (a) {
		d->has_anchor = a > 0;
		d->insns_at_packet = d->event_anchor_insns = d->insns;
	}
	switch (ev->type) {
	case ptev_enabled:
		d->enabled = true;
		d->ip = ev->variant.enabled.ip;
		break;
	case ptev_disabled:
	case ptev_async_disabled:
		d->enabled = false;
		break;
	case ptev_async_branch:
		d->ip = ev->variant.async_branch.to;
		break;
	case ptev_overflow:
		d->enabled = !ev->ip_suppressed;
		d->ip = ev->variant.overflow.ip;
		break;
	case ptev_exec_mode:
		/* refused only where the walk must decode code in that mode: an
		 * overflow or a mode change may come first */
		if (d->not64 && (ev->variant.exec_mode.mode == ptem_64bit || ev->variant.exec_mode.mode == ptem_unknown))
			d->insns_at_packet = d->insns; /* undo the set-up below */
		d->not64 = ev->variant.exec_mode.mode != ptem_64bit && ev->variant.exec_mode.mode != ptem_unknown;
		break;
	default:
		break;
	}
	if (d->not64) /* the next block the walk passes fails its length check: no check of its own */
		d->insns_at_packet = d->insns - MT_PTDEC_MAX_WALK - 1;
	return 0;
}

/* One block: its instructions, then its branch, asking the trace where
 * a conditional or indirect one went. Returns the query status. */
static int walk_step(struct dec *d, int status)
{
	/* runs of conditional branches that report nothing, in one step, with
	 * TNT bits already read (not with --all-branches: it reports every
	 * taken one) */
	unsigned bits, nbits;
	if ((nbits = mt_ptq_tnt_ahead(&d->q, MT_RUN_MAX_BITS, &bits)) && !d->cfg->all_branches && !d->not64) {
		const struct mt_run *r = mt_image_run(d->img, d->ip, bits, nbits);
		/* where the count since the last packet might pass the limit
		 * inside the run, the walk finds where */
		if (r && r->used && d->insns - d->insns_at_packet + r->insns <= MT_PTDEC_MAX_WALK) {
			resolve_pending(d, d->ip);
			pass(d, r->insns, r->last_ip);
			d->insns_at_packet = d->insns;
			d->ip = r->next_ip;
			return mt_ptq_take_tnt(&d->q, r->used);
		}
	}
	int err;
	const struct mt_code_block *b = walk_block(d, &err);
	if (!b)
		return err;
	uint64_t next = b->end_ip + b->len, to;
	int taken;
	switch (b->cls) {
	case ptic_other:
		d->ip = next;
		return status;
	case ptic_cond_jump:
		status = mt_ptq_cond_branch(&d->q, &taken);
		if (status < 0)
			return status;
		d->insns_at_packet = d->insns;
		if (!taken) {
			d->ip = next;
			return status;
		}
		to = b->target;
		if (b->stays && !d->cfg->all_branches) {
			d->ip = to; /* nothing to report: not even pending */
			return status;
		}
		break;
	case ptic_return:
		/* a compressed return is a taken bit; otherwise a TIP */
		status = mt_ptq_cond_branch(&d->q, &taken);
		if (status >= 0) {
			d->insns_at_packet = d->insns;
			if (!taken)
				return -pte_bad_retcomp;
			if (!mt_retstack_pop(&d->rs, &to))
				return -pte_retstack_empty;
			break;
		}
		if (status != -pte_bad_query)
			return status;
		/* fall through */
	case ptic_call:
	case ptic_jump:
		if (b->direct) {
			to = b->target;
			if (b->stays && !d->cfg->all_branches) {
				d->ip = to;
				return status;
			}
			break;
		}
		/* fall through */
	default:
		status = mt_ptq_indirect_branch(&d->q, &to);
		if (status < 0)
			return status;
		d->insns_at_packet = d->insns;
		if (status & pts_ip_suppressed)
			return -pte_noip;
		break;
	}
	walk_call(d, b, to);
	walk_pend(d, b);
	d->ip = to;
	return status;
}

static void walk_synced(struct dec *d, int status, uint64_t ip)
{
	d->pending = false;
	d->enabled = !(status & pts_ip_suppressed);
	d->ip = ip;
	d->rs.n = 0;
	d->insns_at_packet = d->insns;
	d->event_anchor_insns = d->insns; /* no branch the trace gave since the sync */
	d->has_anchor = d->enabled;
	d->sync_insns = d->insns;
	d->sync_insns_at_event = d->insns_at_event;
	d->sync_delivered = delivered(d);
	d->not64 = false;   /* until the PSB+'s MODE.Exec says (libipt's mode: unknown) */
}

/* libipt's query decoder, failing to read a PSB+ while synchronising,
 * keeps that PSB as its sync point: the next sync looks past it. So a
 * failed sync is reported and tried again, as long as each failure is
 * further on, and one bad PSB+ costs only its stretch of the trace (perf
 * decodes on past it too). first: the sync on the segment's start. */
static int sync_on(struct dec *d, uint64_t *ip, bool first)
{
	const struct mt_ptdec_stream *s = d->s;
	uint64_t failed_at = 0;
	for (bool again = false;; again = true) {
		bool at_start = first && !again && s->start;
		int status;
		if (d->blk)
			status = at_start ? pt_blk_sync_set(d->blk, s->start) : pt_blk_sync_forward(d->blk);
		else
			status = at_start ? mt_ptq_sync_set(&d->q, ip, s->start) : mt_ptq_sync_forward(&d->q, ip);
		if (status >= 0 || status == -pte_eos)
			return status;
		emit_error(d, status, first ? "no PSB to synchronise on" : "resync failed");
		uint64_t at = 0;
		if (d->blk)
			pt_blk_get_sync_offset(d->blk, &at);
		else
			at = mt_ptq_sync_offset(&d->q);
		if (again && at <= failed_at)
			return status; /* no further on: give up on the segment */
		failed_at = at;
	}
}

static int blk_decode(struct dec *dp, const struct pt_config *config, const uint64_t *from, uint64_t skip,
		      struct mt_err *err);

static int walk_decode(struct dec *d, const struct pt_config *config, struct mt_err *err)
{
	const struct mt_ptdec_stream *s = d->s;
	if (mt_ptq_init(&d->q, config, !d->cfg->libipt_packets, d->cfg->timed, d->cfg->cyc) < 0)
		return mt_err_set(err, MT_ENOMEM, "cannot allocate a PT query decoder");
	uint64_t ip = 0, nsteps = 0, handed_blk = UINT64_MAX, replay_skip = 0;
	bool watch = s->progress || s->stop_after || s->head_end, branch_eos = false;
	int status = sync_on(d, &ip, true);
	if (status >= 0)
		walk_synced(d, status, ip);
	/* nothing but PSB+ and its status updates since the sync, then the
	 * end: libipt's insn decoder decodes no instruction there (ptxed
	 * says [end of trace]); after any other event, or an instruction, it
	 * walks on to the next query */
	uint64_t sync_insns = d->insns;
	bool only_status = true;
	while (status >= 0) {
		if (status & pts_event_pending) {
			struct pt_event ev;
			status = mt_ptq_event(&d->q, &ev);
			if (status >= 0) {
				int rc = walk_event(d, &ev);
				if (rc < 0)
					status = rc;
				/* an interrupt (FUP and TIP) that took the last packet ends
				 * the flow where it went, as a branch's does */
				else if (ev.type == ptev_async_branch)
					branch_eos = d->cfg->stop_at_end && (status & pts_eos);
				/* a maintenance packet says nothing of the flow either */
				only_status &= ev.status_update || ev.type == ptev_mnt;
			}
		} else if (!d->enabled) {
			status = status & pts_eos ? -pte_eos : -pte_no_enable;
		} else if (d->cfg->stop_at_end &&
			   (branch_eos || ((status & pts_eos) && only_status && d->insns == sync_insns))) {
			/* the branch just walked took the last packet: the flow ends
			 * there, as libipt's insn decoder ends it (after an event
			 * it walks on, to the instruction the next query needs) */
			status = -pte_eos;
		} else {
			if (watch && !(++nsteps & 0xff)) {
				uint64_t off = trace_offset(d);
				if (piece_read_to(s, off))
					break; /* the next piece decodes from here on */
				if (s->progress && !(nsteps & 0xffff))
					s->progress(s->progress_ctx, (size_t)off);
			}
			uint64_t before = d->cfg->stop_at_end ? mt_ptq_offset(&d->q) : 0;
			status = walk_step(d, status);
			branch_eos = d->cfg->stop_at_end && status >= 0 && (status & pts_eos) &&
				     mt_ptq_offset(&d->q) != before; /* a packet taken, and the last */
		}
		if (status < 0) {
			if (status == -pte_eos)
				break;
			if (status == WALK_TOO_LONG) {
				char what[112];
				snprintf(what, sizeof what, "no packet for over %u instructions (a loop of direct "
					 "branches in the code image?)", MT_PTDEC_MAX_WALK);
				emit_error(d, 0, what);
			} else if (status == WALK_NOT_64BIT) {
				/* libipt's block decoder decodes 16- and 32-bit code:
				 * it reads on from this segment's PSB, its first
				 * events (those mt's walk told) left out */
				handed_blk = mt_ptq_sync_offset(&d->q);
				d->insns = d->sync_insns;
				d->insns_at_event = d->sync_insns_at_event;
				replay_skip = delivered(d) - d->sync_delivered;
				d->pending = false;
				break;
			} else {
				emit_error(d, status, NULL);
			}
			status = sync_on(d, &ip, false);
			if (status < 0)
				break;
			walk_synced(d, status, ip);
			sync_insns = d->insns;
			only_status = true;
		}
	}
	/* a piece counts only its own bytes, up to where the next begins */
	size_t to = s->stop_after && s->stop_after < s->len ? s->stop_after : s->len;
	const uint8_t *handed = mt_ptq_handed_at(&d->q);
	if (handed_blk != UINT64_MAX) {
		if (to > handed_blk)
			d->stats->blocks_handed += to - handed_blk;
		if (!handed || handed > s->data + handed_blk)
			handed = s->data + handed_blk;
	}
	if (handed && !d->cfg->libipt_packets && to > (size_t)(handed - s->data))
		d->stats->handed_over += to - (size_t)(handed - s->data);
	if (handed_blk == UINT64_MAX) /* else blk_decode counts them */
		d->stats->insns += d->insns;
	d->stats->trig += d->q.ntrig;
	d->stats->unbound_mwait += d->q.nunbound_mwait;
	d->stats->libipt21 += d->q.nlibipt21;
	mt_ptq_fini(&d->q);
	return handed_blk != UINT64_MAX ? blk_decode(d, config, &handed_blk, replay_skip, err) : 0;
}

void mt_ptdec_stats_add_reader(struct mt_ptdec_stats *to, const struct mt_ptdec_stats *from)
{
	to->handed_over += from->handed_over;
	to->trig += from->trig;
	to->unbound_mwait += from->unbound_mwait;
	to->libipt21 += from->libipt21;
	to->blocks_handed += from->blocks_handed;
}

int mt_ptdec_decode(const struct mt_ptdec_stream *s, struct mt_image *img,
		    const struct mt_ptdec_config *cfg, struct mt_ptdec_stats *stats,
		    struct mt_err *err)
{
	if (!s->data || !s->len)
		return 0; /* nothing to decode (a queue of empty buffers) */
	struct pt_config config;
	pt_config_init(&config);
	config.begin = (uint8_t *)s->data;
	config.end = (uint8_t *)s->data + s->len;
	config.flags.variant.block.end_on_call = 1;
	config.flags.variant.block.end_on_jump = 1;
	config.cpuid_0x15_eax = cfg->ctc_d;
	config.cpuid_0x15_ebx = cfg->ctc_n;
	config.mtc_freq = cfg->mtc_freq;
	config.nom_freq = cfg->nom_freq;
	if (cfg->family) {
		config.cpu.vendor = pcv_intel;
		config.cpu.family = (uint16_t)cfg->family;
		config.cpu.model = (uint8_t)cfg->model;
		config.cpu.stepping = (uint8_t)cfg->stepping;
		mt_cpu_errata(&config.errata, &config.cpu);
	}
	stats->pt_bytes += s->len;
	struct pt_conf_addr_filter *af = &config.addr_filter;
	uint64_t *ends[4][2] = {{&af->addr0_a, &af->addr0_b}, {&af->addr1_a, &af->addr1_b},
				{&af->addr2_a, &af->addr2_b}, {&af->addr3_a, &af->addr3_b}};
	for (unsigned i = 0; i < 4; i++) { /* ADDRn_CFG, n = 0..3: 4 bits each */
		af->config.addr_cfg |= (uint64_t)(cfg->addr[i].cfg & 0xf) << (4 * i);
		*ends[i][0] = cfg->addr[i].from;
		*ends[i][1] = cfg->addr[i].to;
	}
	struct dec d = {.s = s, .cfg = cfg, .img = img, .stats = stats, .skd022 = config.errata.skd022,
			.skl014 = config.errata.skl014 && filter_given(cfg), .bdm64 = config.errata.bdm64};
	if (!cfg->libipt_blocks)
		return walk_decode(&d, &config, err);
	return blk_decode(&d, &config, NULL, 0, err);
}

/* What a hand-over to libipt's block decoder hands on: its first skip
 * events (mt's walk told them) are not. */
struct replay {
	const struct mt_ptdec_stream *s;
	struct mt_ptdec_stats *stats;
	uint64_t skip;
};

static void replay_sink(void *ctx, const struct mt_event *ev)
{
	struct replay *r = ctx;
	if (r->skip) {
		r->skip--;
		r->stats->by_kind[ev->kind]--; /* counted as delivered */
		return;
	}
	r->s->sink(r->s->sink_ctx, ev);
}

/* libipt's block decoder over the stream, from its first PSB (from NULL)
 * or from the PSB at *from on, its first skip events left out. */
static int blk_decode(struct dec *dp, const struct pt_config *config, const uint64_t *from, uint64_t skip,
		      struct mt_err *err)
{
	struct dec d = *dp;
	const struct mt_ptdec_stream *s = d.s;
	struct replay replay = {.s = s, .stats = d.stats, .skip = skip};
	struct mt_ptdec_stream replayed = *s;
	if (skip) {
		replayed.sink = replay_sink;
		replayed.sink_ctx = &replay;
		d.s = &replayed;
	}
	struct mt_ptdec_stats *stats = d.stats;
	uint64_t nblocks = 0;
	d.blk = pt_blk_alloc_decoder(config);
	if (!d.blk)
		return mt_err_set(err, MT_ENOMEM, "cannot allocate a PT block decoder");
	pt_blk_set_image(d.blk, mt_image_libipt(d.img));

	uint64_t ip;
	int status = from ? pt_blk_sync_set(d.blk, *from) : sync_on(&d, &ip, true);
	/* A code loop made only of direct branches needs no packets: libipt
	 * would walk it forever. Past MT_PTDEC_MAX_WALK instructions with no
	 * packet read, that is reported as an error and decoding resyncs at
	 * the next PSB (perf gives up on such loops too). */
	uint64_t walk_off = 0, walked = 0;
	while (status >= 0) {
		while (status & pts_event_pending) {
			struct pt_event ev;
			status = pt_blk_event(d.blk, &ev, sizeof ev);
			if (status < 0)
				break;
			handle_event(&d, &ev);
		}
		if (status >= 0) {
			struct pt_block block;
			if (s->progress && !(++nblocks & 0xffff)) {
				uint64_t off = 0;
				pt_blk_get_offset(d.blk, &off);
				s->progress(s->progress_ctx, (size_t)off);
			}
			status = pt_blk_next(d.blk, &block, sizeof block);
			if (status >= 0 || block.ninsn) {
				/* A block can carry instructions even when the call
				 * reports an error: account for them first. */
				uint64_t off = 0;
				pt_blk_get_offset(d.blk, &off);
				walked = off == walk_off ? walked + block.ninsn : 0;
				walk_off = off;
				if (walked > MT_PTDEC_MAX_WALK && status >= 0)
					status = -pte_bad_context; /* below: an error event, then a resync */
				if (piece_read_to(s, off))
					break; /* the next piece decodes from here on */
				if (block.ninsn) {
					resolve_pending(&d, block.ip);
					d.insns += block.ninsn;
					d.last_ip = block.end_ip;
					d.pending = true;
					d.pend_class = block.iclass;
					if (block.iclass == ptic_error) {
						unsigned len;
						d.pend_class = classify_branch(&d, block.end_ip, &len);
					}
					d.pend_from = block.end_ip;
					d.pend_time = now(&d, &d.pend_has_time);
				}
			}
		}
		if (status < 0) {
			if (status == -pte_eos)
				break;
			if (walked > MT_PTDEC_MAX_WALK) {
				char what[112];
				snprintf(what, sizeof what, "no packet for over %u instructions (a loop of direct "
					 "branches in the code image?)", MT_PTDEC_MAX_WALK);
				emit_error(&d, 0, what);
			} else {
				emit_error(&d, status, NULL);
			}
			walked = 0;
			status = sync_on(&d, &ip, false);
		}
	}
	pt_blk_free_decoder(d.blk);
	stats->insns += d.insns;
	return 0;
}
