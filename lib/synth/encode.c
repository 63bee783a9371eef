#define _GNU_SOURCE
#include "synth/encode.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/kernel.h"

static void put(struct enc *x, struct pt_packet *p)
{
	if (x->err)
		return;
	int rc = pt_enc_next(x->e, p);
	if (rc < 0)
		x->err = rc;
}

/* Core cycles at a TSC: one a tick, or 1.4 in turbo (no overflow). */
static uint64_t cycles_at(const struct enc *x, uint64_t tsc)
{
	return x->v->turbo ? tsc / 5 * 7 + tsc % 5 * 7 / 5 : tsc;
}

/* Cycle-accurate mode: a CYC packet with the cycles since the last one
 * precedes every branch's TNT bit or IP packet, as on hardware, so TNT
 * packets stay short. */
static void cyc_packet(struct enc *x)
{
	if (!x->v->cyc || x->in_psb || x->tsc == x->last_cyc)
		return;
	struct pt_packet p = {0};
	p.type = ppt_cyc;
	p.payload.cyc.value = cycles_at(x, x->tsc) - cycles_at(x, x->last_cyc);
	put(x, &p);
	x->cyc_written += p.payload.cyc.value;
	x->last_cyc = x->tsc;
}

static void flush_tnt(struct enc *x)
{
	if (!x->ntnt)
		return;
	struct pt_packet p = {0};
	p.type = x->ntnt <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	p.payload.tnt.bit_size = (uint8_t)x->ntnt;
	p.payload.tnt.payload = x->tnt; /* oldest branch in the most significant bit */
	put(x, &p);
	x->tnt = 0;
	x->ntnt = 0;
}

static void tnt_bit(struct enc *x, int taken)
{
	if (x->v->cyc && x->tsc != x->last_cyc) {
		/* The branch's cycle count goes right before its bit: pending
		 * bits leave in their own TNT first. */
		flush_tnt(x);
		cyc_packet(x);
	}
	if (!x->ntnt) /* a new TNT packet: read for this branch */
		x->cyc_marked = x->cyc_written;
	x->tnt = (x->tnt << 1) | (uint64_t)taken;
	x->ntnt++;
	if (x->ntnt == (x->v->long_tnt ? 47 : 6))
		flush_tnt(x);
}

static void ip_packet(struct enc *x, enum pt_packet_type t, uint64_t ip, bool suppressed)
{
	cyc_packet(x);
	x->cyc_marked = x->cyc_written;
	struct pt_packet p = {0};
	p.type = t;
	p.payload.ip.ipc = suppressed ? pt_ipc_suppressed : pt_ipc_sext_48;
	p.payload.ip.ip = ip;
	put(x, &p);
}

static void simple(struct enc *x, enum pt_packet_type t)
{
	struct pt_packet p = {0};
	p.type = t;
	put(x, &p);
}

static void mode_exec(struct enc *x)
{
	struct pt_packet p = {0};
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	put(x, &p);
}

static void tsc_packet(struct enc *x)
{
	struct pt_packet p = {0};
	p.type = ppt_tsc;
	p.payload.tsc.tsc = x->tsc;
	put(x, &p);
	if (x->v->timing == MT_SYNTH_MTC) {
		struct pt_packet t = {0};
		t.type = ppt_tma;
		t.payload.tma.ctc = (uint16_t)(x->tsc / TSC_PER_CTC);
		t.payload.tma.fc = 0; /* PSBs are placed on CTC edges, so no fast-counter offset */
		put(x, &t);
	}
}

/* MTC for every CTC edge passed since the last one. */
static void advance(struct enc *x, uint64_t ticks)
{
	x->tsc += ticks;
	if (x->v->timing != MT_SYNTH_MTC)
		return;
	uint64_t ctc = x->tsc / TSC_PER_CTC;
	if (ctc == x->last_ctc)
		return;
	flush_tnt(x);
	for (uint64_t c = x->last_ctc + 1; c <= ctc; c++) {
		if (x->v->cyc && !x->v->turbo && c * TSC_PER_CTC > x->last_cyc) {
			/* MTC is CYC-eligible too: the cycles up to the CTC edge. */
			struct pt_packet y = {0};
			y.type = ppt_cyc;
			y.payload.cyc.value = c * TSC_PER_CTC - x->last_cyc;
			put(x, &y);
			x->cyc_written += y.payload.cyc.value;
			x->last_cyc = c * TSC_PER_CTC;
		}
		struct pt_packet p = {0};
		p.type = ppt_mtc;
		p.payload.mtc.ctc = (uint8_t)c;
		put(x, &p);
	}
	x->last_ctc = ctc;
}

static void note_psb(struct enc *x, uint64_t insn_index)
{
	if (x->npsb == x->cappsb) {
		x->cappsb = x->cappsb ? x->cappsb * 2 : 64;
		x->psb_offsets = realloc(x->psb_offsets, x->cappsb * sizeof *x->psb_offsets);
		x->psb_insn = realloc(x->psb_insn, x->cappsb * sizeof *x->psb_insn);
		if (!x->psb_offsets || !x->psb_insn) {
			x->err = -pte_nomem;
			x->npsb = x->cappsb = 0;
			return;
		}
	}
	uint64_t off = 0;
	pt_enc_get_offset(x->e, &off);
	x->psb_offsets[x->npsb] = off;
	x->psb_insn[x->npsb] = insn_index;
	x->npsb++;
}

static void psb(struct enc *x, uint64_t insn_index, bool enabled, uint64_t next_ip)
{
	flush_tnt(x);
	note_psb(x, insn_index);
	x->in_psb = true;
	simple(x, ppt_psb);
	if (x->v->timing != MT_SYNTH_TIMELESS) {
		tsc_packet(x);
		struct pt_packet cbr = {0}; /* real PSB+ carry the core:bus ratio */
		cbr.type = ppt_cbr;
		cbr.payload.cbr.ratio = x->v->turbo ? SYNTH_TURBO_CBR : SYNTH_CBR;
		put(x, &cbr);
	}
	if (enabled) {
		mode_exec(x);
		ip_packet(x, ppt_fup, next_ip, false);
	}
	simple(x, ppt_psbend);
	x->in_psb = false;
	x->rs.n = 0; /* a decoder starting here knows no earlier calls */
}


/* --- truth ---------------------------------------------------------------- */
static void truth_ev_async(struct truth *t, enum mt_event_kind k, uint64_t time, uint64_t from, uint64_t to,
			   bool cond, bool timed, bool async)
{
	if (!t->w || !t->on)
		return;
	struct mt_event ev = {0};
	ev.kind = k;
	ev.time = time;
	ev.has_time = timed;
	ev.pid = t->pid;
	ev.tid = t->tid;
	ev.cpu = t->cpu;
	ev.from = from;
	ev.to = to;
	ev.cond = cond;
	ev.async = async;
	ev.insn = t->since;
	ev.offset = MT_NO_OFFSET;
	t->since = 0;
	if (t->cyc_marked) {
		ev.cyc = *t->cyc_marked - t->cyc_at_event;
		t->cyc_at_event = *t->cyc_marked;
	}
	mt_events_write(t->w, &ev);
}

static void truth_ev(struct truth *t, enum mt_event_kind k, uint64_t time, uint64_t from, uint64_t to, bool cond,
		     bool timed)
{
	truth_ev_async(t, k, time, from, to, cond, timed, false);
}

/* A PTWRITE's note in the truth: after its instruction, at its address
 * (from its FUP, or found by a decoder's walk), with its payload. */
static void truth_ptwrite(struct truth *t, uint64_t time, uint64_t ip, uint64_t payload, bool timed)
{
	if (!t->w || !t->on)
		return;
	char v[24];
	snprintf(v, sizeof v, "0x%" PRIx64, payload);
	struct mt_kv kv = {"payload", v};
	struct mt_event ev = {.kind = MT_EV_PTWRITE, .time = time, .has_time = timed, .pid = t->pid, .tid = t->tid,
			      .cpu = t->cpu, .from = ip, .insn = t->since, .offset = MT_NO_OFFSET, .extra = &kv,
			      .nextra = 1};
	t->since = 0;
	mt_events_write(t->w, &ev);
}

/* The PTW packet of step i's PTWRITE (and its FUP with ptw_fup), after
 * the TNT bits of the branches before it. */
static void ptw_packet(struct enc *x, const struct mt_synth_run *run, size_t i, const struct mt_synth_insn *in,
		       struct truth *t, uint64_t now, bool timed)
{
	size_t step = i + run->ptw_base;
	while (x->ptw_at < run->nptw && run->ptw[x->ptw_at].step < step)
		x->ptw_at++;
	if (x->ptw_at == run->nptw || run->ptw[x->ptw_at].step != step) {
		x->err = -pte_internal; /* a PTWRITE the recording did not see run */
		return;
	}
	const struct mt_synth_ptw *w = &run->ptw[x->ptw_at];
	flush_tnt(x);
	struct pt_packet p = {0};
	p.type = ppt_ptw;
	p.payload.ptw.plc = w->bytes == 8 ? 1 : 0;
	p.payload.ptw.ip = x->v->ptw_fup;
	p.payload.ptw.payload = w->payload;
	put(x, &p);
	if (x->v->ptw_fup)
		ip_packet(x, ppt_fup, in->ip, false);
	if (t)
		truth_ptwrite(t, now, in->ip, w->payload, timed);
}

/* A power note in the truth (mt-events(5)'s columns). */
static void truth_power(struct truth *t, enum mt_event_kind k, const struct mt_kv *kv, unsigned n, uint64_t time,
			bool timed)
{
	if (!t->w || !t->on)
		return;
	struct mt_event ev = {.kind = k, .time = time, .has_time = timed, .pid = t->pid, .tid = t->tid,
			      .cpu = t->cpu, .offset = MT_NO_OFFSET, .extra = kv, .nextra = n};
	mt_events_write(t->w, &ev);
}

/* The power variant: while a syscall waits in the kernel the core sleeps,
 * as an idle CPU's MWAIT puts it in C3: MWAIT (hints 0x20, extensions 1),
 * PWRE (C3, its hint 2), EXSTOP (no IP: tracing is off), PWRX (woken by an
 * interrupt, C3 last and deepest). The MWAIT waits for the FUP of an
 * EXSTOP with an IP; one without leaves it without an IP, so a decoder
 * reports the PWRE first (libipt 2.1's reading). C-states in the truth as
 * mt-events(5) numbers them (hint + 1). */
static void power_packets(struct enc *x, struct truth *t, bool timed)
{
	struct pt_packet p = {0};
	p.type = ppt_mwait;
	p.payload.mwait.hints = 0x20;
	p.payload.mwait.ext = 1;
	put(x, &p);
	p = (struct pt_packet){.type = ppt_pwre};
	p.payload.pwre.state = 2;
	p.payload.pwre.sub_state = 0;
	put(x, &p);
	p = (struct pt_packet){.type = ppt_exstop};
	put(x, &p);
	p = (struct pt_packet){.type = ppt_pwrx};
	p.payload.pwrx.last = 2;
	p.payload.pwrx.deepest = 2;
	p.payload.pwrx.interrupt = 1;
	put(x, &p);
	if (!t)
		return;
	truth_power(t, MT_EV_PWRE, (const struct mt_kv[]){{"cstate", "3"}, {"substate", "1"}}, 2, x->tsc, timed);
	truth_power(t, MT_EV_MWAIT, (const struct mt_kv[]){{"hints", "0x20"}, {"ext", "0x1"}}, 2, x->tsc, timed);
	truth_power(t, MT_EV_EXSTOP, NULL, 0, x->tsc, timed);
	truth_power(t, MT_EV_PWRX, (const struct mt_kv[]){{"cstate", "3"}, {"deepest", "3"}, {"wake", "int"}}, 3,
		    x->tsc, timed);
}

static int note_switch(struct enc *x, uint32_t prev, uint32_t next)
{
	if (x->nsw == x->capsw) {
		size_t nc = x->capsw ? 2 * x->capsw : 64;
		struct synth_switch *ns = realloc(x->sw, nc * sizeof *ns);
		if (!ns)
			return -pte_nomem;
		x->sw = ns;
		x->capsw = nc;
	}
	x->sw[x->nsw++] = (struct synth_switch){x->tsc, prev, next};
	return 0;
}

/* nxt[i]: the instruction its thread runs after step i (threads interleave). */
static int next_of_thread(const struct mt_synth_run *run, struct enc *x)
{
	x->nxt = malloc(run->nips * sizeof *x->nxt);
	if (!x->nxt)
		return -pte_nomem;
	uint64_t after[MT_SYNTH_MAX_THREADS] = {0};
	after[0] = run->end_next; /* a part of a single-threaded run goes on there */
	for (size_t i = run->nips; i-- > 0;) {
		size_t th = 0;
		while (th + 1 < run->nthreads && run->threads[th] != run->tids[i])
			th++;
		x->nxt[i] = after[th];
		after[th] = run->ips[i];
	}
	return 0;
}

/* One kernel instruction: counted before its own event (as a branch's
 * event counts the branch), the clock moved after it. */
static void kcount(struct truth *t)
{
	if (t)
		t->since++;
}

static void kstep(struct enc *x, struct truth *t, enum mt_event_kind k, unsigned at, uint64_t to, bool cond,
		  bool timed)
{
	kcount(t);
	if (t && k != MT_EV_KIND_COUNT)
		truth_ev(t, k, x->tsc, KB + at, to, cond, timed);
	advance(x, MT_SYNTH_TICKS_PER_INSN);
}

#define K_PLAIN MT_EV_KIND_COUNT /* kstep: an instruction without an event */

/* The kernel's part of one syscall, entered by the syscall's TIP. Returns
 * with SYSRETQ to `user_next`, or, when the process is exiting
 * (user_next 0), ends the trace asynchronously at the exit stub. */
static void kernel_path(struct enc *x, struct truth *t, uint64_t user_next, bool timed)
{
	kstep(x, t, K_PLAIN, K_ENTRY, 0, false, timed);                 /* nop */
	mt_retstack_push(&x->rs, KB + K_JMP);
	kstep(x, t, MT_EV_CALL, K_CALL, KB + K_HANDLER, false, timed);  /* call */
	kstep(x, t, K_PLAIN, K_HANDLER, 0, false, timed);               /* mov */
	for (int i = 3; i > 0; i--) {
		kstep(x, t, K_PLAIN, K_DEC, 0, false, timed);           /* dec */
		tnt_bit(x, i > 1);
		kstep(x, t, i > 1 ? MT_EV_JUMP : K_PLAIN, K_JNZ, KB + K_DEC, true, timed);
	}
	uint64_t top;
	if (mt_retstack_pop(&x->rs, &top) && top == KB + K_JMP && !x->v->noretcomp) {
		tnt_bit(x, 1);
	} else {
		flush_tnt(x);
		ip_packet(x, ppt_tip, KB + K_JMP, false);
	}
	kstep(x, t, MT_EV_RETURN, K_RET, KB + K_JMP, false, timed);     /* ret */
	kstep(x, t, MT_EV_JUMP, K_JMP, KB + K_EXIT, false, timed);      /* jmp */
	flush_tnt(x);
	if (!user_next) {
		ip_packet(x, ppt_fup, KB + K_EXIT, false);
		ip_packet(x, ppt_tip_pgd, 0, true);
		if (t)
			truth_ev_async(t, MT_EV_TRACE_END, x->tsc, KB + K_EXIT, 0, false, timed, true);
		return;
	}
	ip_packet(x, ppt_tip, user_next, false);
	kstep(x, t, MT_EV_SYSRET, K_EXIT, user_next, false, timed);     /* sysretq */
}

/* A breakpoint hit at the instruction about to execute: a sample for the
 * perf.data, and a sample event in the truth (not counting instructions). */
static void note_hit(struct enc *x, struct truth *t, uint32_t tid, uint64_t ip, bool timed)
{
	if (x->nhits == x->caphits) {
		size_t nc = x->caphits ? 2 * x->caphits : 64;
		struct synth_hit *nh = realloc(x->hits, nc * sizeof *nh);
		if (!nh) {
			x->err = -pte_nomem;
			return;
		}
		x->hits = nh;
		x->caphits = nc;
	}
	x->hits[x->nhits++] = (struct synth_hit){x->tsc, tid};
	if (!t || !t->w || !t->on)
		return;
	char name[40];
	snprintf(name, sizeof name, "mem:0x%" PRIx64 ":x", ip);
	struct mt_kv kv[2] = {{"event", name}, {"period", "1"}};
	struct mt_event ev = {.kind = MT_EV_SAMPLE, .time = x->tsc, .has_time = timed, .pid = t->pid, .tid = tid,
			      .cpu = t->cpu, .from = ip, .offset = MT_NO_OFFSET, .extra = kv, .nextra = 2};
	mt_events_write(t->w, &ev);
}

/* Encodes the run; in pass 2 (truth != NULL) also writes the truth, turning
 * it on at insn index `from_insn`, and off over [gap_from, gap_to) when
 * gap_to is not 0 (a snapshot event marks where it resumes). */
int mt_synth_encode(const struct mt_synth_run *run, const struct mt_synth_variant *v, struct enc *x,
		    struct truth *t, uint64_t from_insn, uint64_t gap_from, uint64_t gap_to, uint64_t hit_ip,
		    struct mt_err *err)
{
	struct pt_config cfg;
	pt_config_init(&cfg);
	x->cap = run->nips * 4 + (1 << 20);
	x->buf = malloc(x->cap);
	if (!x->buf)
		return mt_err_set(err, MT_ENOMEM, "out of memory for the PT buffer");
	cfg.begin = x->buf;
	cfg.end = x->buf + x->cap;
	cfg.cpuid_0x15_eax = 1;
	cfg.cpuid_0x15_ebx = TSC_PER_CTC;
	x->v = v;
	x->e = pt_alloc_encoder(&cfg);
	if (!x->e)
		return mt_err_set(err, MT_ENOMEM, "cannot allocate a PT encoder");
	bool timed = v->timing != MT_SYNTH_TIMELESS;
	x->tsc = MT_SYNTH_TSC0;
	x->ptw_at = 0;
	x->last_ctc = x->tsc / TSC_PER_CTC;
	x->last_cyc = x->tsc;
	if ((x->err = next_of_thread(run, x)))
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	psb(x, 0, false, 0);
	mode_exec(x);
	ip_packet(x, ppt_tip_pge, run->ips[0], false);
	if (t) {
		t->tid = run->tids[0];
		t->on = from_insn == 0;
		if (v->cyc) /* the truth's cycles: a cycle-accurate variant's */
			t->cyc_marked = &x->cyc_marked;
		t->cyc_at_event = x->cyc_marked;
		truth_ev(t, MT_EV_TRACE_START, x->tsc, 0, run->ips[0], false, timed);
	}
	uint64_t since_psb = 0;
	bool walking = false;
	for (size_t i = 0; i < run->nips && !x->err; i++) {
		const struct mt_synth_insn *in = mt_synth_insn_at(run, run->ips[i]);
		bool last = i + 1 == run->nips;
		uint64_t next = x->nxt[i];
		uint64_t ft = in->ip + in->len, now = x->tsc;
		if (t && i == from_insn && from_insn) {
			t->on = true;
			t->cyc_at_event = x->cyc_marked;
			t->since = 0;
		}
		/* The first snapshot ends at gap_from, but a decoder walks on
		 * from its last packet through whatever needs no packet
		 * (direct calls and jumps, other instructions): so does the
		 * truth, up to the first instruction that needs one. */
		if (t && gap_to && i == gap_from)
			walking = true;
		if (walking && in->cls != MT_IC_OTHER && in->cls != MT_IC_CALL && in->cls != MT_IC_JMP) {
			walking = false;
			t->on = false;
		}
		if (t && gap_to && i == gap_to) {
			t->on = true;
			t->cyc_at_event = x->cyc_marked;
			t->since = 0;
			struct mt_event sev = {.kind = MT_EV_SNAPSHOT, .pid = t->pid, .tid = t->tid, .cpu = t->cpu,
					       .offset = MT_NO_OFFSET};
			mt_events_write(t->w, &sev);
		}
		if (hit_ip && run->ips[i] == hit_ip)
			note_hit(x, t, run->tids[i], hit_ip, timed);
		if (t)
			t->since++;
		switch (in->cls) {
		case MT_IC_JCC:
			tnt_bit(x, next != ft);
			if (next != ft && t)
				truth_ev(t, MT_EV_JUMP, now, in->ip, next, true, timed);
			break;
		case MT_IC_JMP:
			if (t)
				truth_ev(t, MT_EV_JUMP, now, in->ip, next, false, timed);
			break;
		case MT_IC_JMP_IND:
			flush_tnt(x);
			ip_packet(x, ppt_tip, next, false);
			if (t)
				truth_ev(t, MT_EV_JUMP, now, in->ip, next, false, timed);
			break;
		case MT_IC_CALL:
		case MT_IC_CALL_IND:
			mt_retstack_push(&x->rs, ft);
			if (in->cls == MT_IC_CALL_IND) {
				flush_tnt(x);
				ip_packet(x, ppt_tip, next, false);
			}
			if (t)
				truth_ev(t, MT_EV_CALL, now, in->ip, next, false, timed);
			break;
		case MT_IC_RET: {
			uint64_t top;
			bool had = mt_retstack_pop(&x->rs, &top);
			if (!v->noretcomp && had && top == next) {
				tnt_bit(x, 1);
			} else {
				flush_tnt(x);
				ip_packet(x, ppt_tip, next, false);
			}
			if (t)
				truth_ev(t, MT_EV_RETURN, now, in->ip, next, false, timed);
			break;
		}
		case MT_IC_SYSCALL:
			flush_tnt(x);
			if (v->kernel) {
				/* traced kernel: a far branch into the entry point */
				ip_packet(x, ppt_tip, KB + K_ENTRY, false);
				if (t)
					truth_ev(t, MT_EV_SYSCALL, now, in->ip, KB + K_ENTRY, false, timed);
				break;
			}
			ip_packet(x, ppt_tip_pgd, 0, true);
			if (t)
				truth_ev(t, MT_EV_SYSCALL, now, in->ip, 0, false, timed);
			break;
		case MT_IC_PTWRITE:
			ptw_packet(x, run, i, in, t, now, timed);
			break;
		default:
			break;
		}
		advance(x, MT_SYNTH_TICKS_PER_INSN);
		since_psb++;
		if (v->kernel && in->cls == MT_IC_SYSCALL) {
			kernel_path(x, t, last ? 0 : next, timed);
			if (last)
				break;
			continue;
		}
		if (last)
			break;
		bool sw = run->tids[i + 1] != run->tids[i];
		if (in->cls == MT_IC_SYSCALL) {
			if (v->power)
				power_packets(x, t, timed);
			advance(x, MT_SYNTH_SYSCALL_TICKS); /* time in the kernel */
			if (!sw) {
				if (v->timing == MT_SYNTH_TSC)
					tsc_packet(x);
				ip_packet(x, ppt_tip_pge, next, false);
				if (t)
					truth_ev(t, MT_EV_TRACE_START, x->tsc, 0, next, false, timed);
			}
		} else if (sw) {
			/* Preempted: an interrupt takes the CPU to the kernel
			 * (FUP + TIP.PGD) before `next` runs. */
			flush_tnt(x);
			ip_packet(x, ppt_fup, next, false);
			ip_packet(x, ppt_tip_pgd, 0, true);
			if (t)
				truth_ev_async(t, MT_EV_TRACE_END, now + MT_SYNTH_TICKS_PER_INSN, next, 0, false, timed, true);
		}
		if (sw) {
			/* The kernel switches threads: a PSB+ (which also resets
			 * return compression) and the new thread resumes. */
			advance(x, SYNTH_SWITCH_TICKS);
			if (note_switch(x, run->tids[i], run->tids[i + 1]) < 0)
				x->err = -pte_nomem;
			psb(x, i + 1, false, 0);
			mode_exec(x);
			ip_packet(x, ppt_tip_pge, run->ips[i + 1], false);
			since_psb = 0;
			if (t) {
				t->tid = run->tids[i + 1];
				truth_ev(t, MT_EV_TRACE_START, x->tsc, 0, run->ips[i + 1], false, timed);
			}
		} else if (v->psb_every && since_psb >= v->psb_every &&
			   (v->timing != MT_SYNTH_MTC || x->tsc % TSC_PER_CTC == 0)) {
			psb(x, i + 1, true, next);
			since_psb = 0;
		}
	}
	if (!x->err) {
		const struct mt_synth_insn *in = mt_synth_insn_at(run, run->ips[run->nips - 1]);
		if (run->end_next) {
			/* a part of a run: interrupted before end_next runs */
			flush_tnt(x);
			ip_packet(x, ppt_fup, run->end_next, false);
			ip_packet(x, ppt_tip_pgd, 0, true);
			if (t)
				truth_ev_async(t, MT_EV_TRACE_END, x->tsc, run->end_next, 0, false, timed, true);
		} else if (in->cls != MT_IC_SYSCALL) {
			flush_tnt(x);
			ip_packet(x, ppt_tip_pgd, 0, true);
			if (t)
				truth_ev(t, MT_EV_TRACE_END, x->tsc, in->ip, 0, false, timed);
		}
	}
	if (x->err)
		return mt_err_set(err, MT_EFORMAT, "PT encoder: %s", pt_errstr(pt_errcode(x->err)));
	return 0;
}

void mt_synth_enc_free(struct enc *x)
{
	if (x->e)
		pt_free_encoder(x->e);
	free(x->buf);
	free(x->psb_offsets);
	free(x->psb_insn);
	free(x->nxt);
	free(x->sw);
	free(x->hits);
	memset(x, 0, sizeof *x);
}
