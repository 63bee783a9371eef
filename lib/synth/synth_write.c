/* synth: encoding the recorded flow as Intel PT and writing perf.data. */
#define _GNU_SOURCE
#include "synth/synth.h"
#include "trace/x86.h"

#include <intel-pt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "stream/events.h"
#include "trace/perfdata.h"
#include "base/strtab.h"

const struct mt_synth_variant mt_synth_variants[] = {
	{.name = "plain"},
	{.name = "long-tnt", .long_tnt = true},
	{.name = "noretcomp", .noretcomp = true},
	{.name = "tsc", .timing = MT_SYNTH_TSC},
	{.name = "mtc", .timing = MT_SYNTH_MTC, .long_tnt = true},
	{.name = "psb", .timing = MT_SYNTH_TSC, .psb_every = 3000},
	{.name = "psb-timeless", .psb_every = 1000}, /* repeatable: long traces to cut at PSBs */
	{.name = "wrap", .psb_every = 1000, .wrap_at_psb = 2},
	{.name = "pipe", .pipe = true},
	{.name = "per-cpu", .timing = MT_SYNTH_TSC, .per_cpu = true},
	{.name = "buildid", .build_ids = true},
	{.name = "cyc", .timing = MT_SYNTH_MTC, .cyc = true},
	{.name = "cyc-turbo", .timing = MT_SYNTH_MTC, .cyc = true, .turbo = true},
	{.name = "per-cpu-mtc", .timing = MT_SYNTH_MTC, .per_cpu = true, .psb_every = 5000},
	{.name = "snapshot", .psb_every = 1000, .snapshot = true},
	{.name = "snapshot-gap", .psb_every = 1000, .snapshot = true, .gap = true},
	{.name = "kernel", .kernel = true},
	{.name = "kcore", .kernel = true, .kcore = true, .noretcomp = true},
	{.name = NULL},
};

const struct mt_synth_variant *mt_synth_variant_find(const char *name)
{
	for (const struct mt_synth_variant *v = mt_synth_variants; v->name; v++)
		if (!strcmp(v->name, name))
			return v;
	return NULL;
}

#define TSC_PER_CTC 100
#define CFG_PT 0x1ULL
#define CFG_CYC 0x2ULL
#define SYNTH_CBR 20 /* core:bus ratio; also the max non-turbo ratio, so 1 cycle = 1 TSC tick */
#define SYNTH_TURBO_CBR 28 /* turbo: 1.4 cycles per TSC tick */
#define CFG_MTC 0x200ULL
#define CFG_TSC 0x400ULL
#define CFG_NORETCOMP 0x800ULL
#define CFG_BRANCH 0x2000ULL

/* --- PT encoding ---------------------------------------------------------- */

struct enc {
	const struct mt_synth_variant *v;
	struct pt_encoder *e;
	uint8_t *buf;
	size_t cap;
	uint64_t tnt;
	int ntnt;
	struct mt_retstack rs;
	int err;
	uint64_t tsc, last_ctc;
	uint64_t last_cyc;   /* TSC at the last CYC packet (cycles = ticks) */
	bool in_psb;         /* no CYC inside PSB+ */
	uint64_t *psb_offsets, *psb_insn;
	size_t npsb, cappsb;
	uint64_t *nxt;       /* per step: the next IP of the same thread, 0: none */
	struct synth_switch *sw; /* thread switches, for the perf.data sideband */
	size_t nsw, capsw;
	struct synth_hit *hits;  /* breakpoint hits (mt_synth_opts.hit_ip) */
	size_t nhits, caphits;
};

struct synth_hit {
	uint64_t time;
	uint32_t tid;
};

struct synth_switch {
	uint64_t time;
	uint32_t prev, next; /* tids */
};

#define SYNTH_SWITCH_TICKS 500 /* in the kernel between two threads */

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
	x->tnt = (x->tnt << 1) | (uint64_t)taken;
	x->ntnt++;
	if (x->ntnt == (x->v->long_tnt ? 47 : 6))
		flush_tnt(x);
}

static void ip_packet(struct enc *x, enum pt_packet_type t, uint64_t ip, bool suppressed)
{
	cyc_packet(x);
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

struct truth {
	struct mt_events_writer *w;
	uint32_t pid, tid;
	int32_t cpu;
	uint64_t since;
	bool on;             /* instructions are in the trace (wrap: after the cut) */
};

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
	mt_events_write(t->w, &ev);
}

static void truth_ev(struct truth *t, enum mt_event_kind k, uint64_t time, uint64_t from, uint64_t to, bool cond,
		     bool timed)
{
	truth_ev_async(t, k, time, from, to, cond, timed, false);
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
	for (size_t i = run->nips; i-- > 0;) {
		size_t th = 0;
		while (th + 1 < run->nthreads && run->threads[th] != run->tids[i])
			th++;
		x->nxt[i] = after[th];
		after[th] = run->ips[i];
	}
	return 0;
}

/* --- the synthetic kernel ------------------------------------------------- */

#define KB MT_SYNTH_KERNEL_BASE
enum {
	K_ENTRY = 0x00,   /* entry_SYSCALL_64: nop; call do_syscall; jmp syscall_exit */
	K_CALL = 0x01,
	K_JMP = 0x06,
	K_HANDLER = 0x20, /* do_syscall: mov ecx,3; 1: dec ecx; jnz 1b; ret */
	K_DEC = 0x25,
	K_JNZ = 0x27,
	K_RET = 0x29,
	K_EXIT = 0x40,    /* syscall_exit: sysretq */
	K_SIZE = 0x43,
};

static const uint8_t kernel_code[K_SIZE] = {
	[K_ENTRY] = 0x90,
	[K_CALL] = 0xe8, 0x1a, 0x00, 0x00, 0x00,  /* call K_HANDLER */
	[K_JMP] = 0xeb, 0x38,                     /* jmp K_EXIT */
	[K_HANDLER] = 0xb9, 0x03, 0x00, 0x00, 0x00,
	[K_DEC] = 0xff, 0xc9,
	[K_JNZ] = 0x75, 0xfc,                     /* jnz K_DEC */
	[K_RET] = 0xc3,
	[K_EXIT] = 0x48, 0x0f, 0x07,              /* sysretq */
};

static const struct { const char *name; unsigned start, size; } kernel_syms[] = {
	{"entry_SYSCALL_64", K_ENTRY, K_HANDLER - K_ENTRY},
	{"do_syscall", K_HANDLER, K_EXIT - K_HANDLER},
	{"syscall_exit", K_EXIT, K_SIZE - K_EXIT},
};

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

/* --- kernel image files ---------------------------------------------------- */

static int put_bytes(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -1;
}

int mt_synth_write_kallsyms(FILE *f, struct mt_err *err)
{
	for (size_t i = 0; i < sizeof kernel_syms / sizeof kernel_syms[0]; i++)
		if (fprintf(f, "%016" PRIx64 " T %s\n", (uint64_t)(KB + kernel_syms[i].start), kernel_syms[i].name) < 0)
			return mt_err_set(err, MT_EIO, "writing kallsyms");
	return 0;
}

/* A minimal ELF64: header, one PT_LOAD for the code, and for vmlinux the
 * sections .text, .symtab, .strtab, .shstrtab. */
int mt_synth_write_kernel_elf(FILE *f, bool core, struct mt_err *err)
{
	enum { EH = 64, PH = 56, SH = 64, CODE_OFF = 0x1000 };
	const size_t nsyms = sizeof kernel_syms / sizeof kernel_syms[0];
	char strtab[256] = "";
	size_t strsz = 1, name_off[8];
	for (size_t i = 0; i < nsyms; i++) {
		name_off[i] = strsz;
		strsz += (size_t)sprintf(strtab + strsz, "%s", kernel_syms[i].name) + 1;
	}
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	const size_t sym_off = CODE_OFF + K_SIZE + 5, nsymtab = nsyms + 1;
	const size_t str_off = sym_off + nsymtab * 24, shstr_off = str_off + strsz;
	const size_t sh_off = (shstr_off + sizeof shstr + 7) & ~(size_t)7;
	uint8_t eh[EH] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	uint16_t u16v;
	uint32_t u32v;
	uint64_t u64v;
#define SET(buf, off, v) (memcpy((buf) + (off), &(v), sizeof(v)))
	u16v = core ? 4 : 2; SET(eh, 16, u16v);            /* e_type */
	u16v = 62; SET(eh, 18, u16v);                       /* EM_X86_64 */
	u32v = 1; SET(eh, 20, u32v);
	u64v = KB; SET(eh, 24, u64v);                       /* e_entry */
	u64v = EH; SET(eh, 32, u64v);                       /* e_phoff */
	u64v = core ? 0 : sh_off; SET(eh, 40, u64v);        /* e_shoff */
	u16v = EH; SET(eh, 52, u16v);
	u16v = PH; SET(eh, 54, u16v);
	u16v = 1; SET(eh, 56, u16v);                        /* e_phnum */
	u16v = SH; SET(eh, 58, u16v);
	u16v = core ? 0 : 5; SET(eh, 60, u16v);             /* e_shnum */
	u16v = core ? 0 : 4; SET(eh, 62, u16v);             /* e_shstrndx */
	uint8_t ph[PH] = {0};
	u32v = 1; SET(ph, 0, u32v);                         /* PT_LOAD */
	u32v = 5; SET(ph, 4, u32v);                         /* R+X */
	u64v = CODE_OFF; SET(ph, 8, u64v);
	u64v = KB; SET(ph, 16, u64v);
	SET(ph, 24, u64v);
	u64v = K_SIZE; SET(ph, 32, u64v);
	SET(ph, 40, u64v);
	u64v = 0x1000; SET(ph, 48, u64v);
	uint8_t pad[CODE_OFF] = {0};
	int bad = put_bytes(f, eh, EH) || put_bytes(f, ph, PH) || put_bytes(f, pad, CODE_OFF - EH - PH) ||
		  put_bytes(f, kernel_code, K_SIZE);
	if (!core && !bad) {
		bad = put_bytes(f, pad, 5);
		uint8_t sym[24] = {0};
		bad |= put_bytes(f, sym, 24); /* the null symbol */
		for (size_t i = 0; i < nsyms && !bad; i++) {
			memset(sym, 0, sizeof sym);
			u32v = (uint32_t)name_off[i]; SET(sym, 0, u32v);
			sym[4] = 0x12;                       /* GLOBAL FUNC */
			u16v = 1; SET(sym, 6, u16v);         /* .text */
			u64v = KB + kernel_syms[i].start; SET(sym, 8, u64v);
			u64v = kernel_syms[i].size; SET(sym, 16, u64v);
			bad |= put_bytes(f, sym, 24);
		}
		bad |= put_bytes(f, strtab, strsz) || put_bytes(f, shstr, sizeof shstr) ||
		       put_bytes(f, pad, sh_off - shstr_off - sizeof shstr);
		/* section headers: null, .text, .symtab, .strtab, .shstrtab */
		struct { uint32_t name, type; uint64_t flags, addr, off, size; uint32_t link, info;
			 uint64_t align, entsize; } sh[5] = {
			{0},
			{1, 1 /* PROGBITS */, 6 /* AX */, KB, CODE_OFF, K_SIZE, 0, 0, 16, 0},
			{7, 2 /* SYMTAB */, 0, 0, sym_off, nsymtab * 24, 3, 1, 8, 24},
			{15, 3 /* STRTAB */, 0, 0, str_off, strsz, 0, 0, 1, 0},
			{23, 3, 0, 0, shstr_off, sizeof shstr, 0, 0, 1, 0},
		};
		for (int i = 0; i < 5 && !bad; i++) {
			uint8_t b[SH];
			SET(b, 0, sh[i].name); SET(b, 4, sh[i].type); SET(b, 8, sh[i].flags);
			SET(b, 16, sh[i].addr); SET(b, 24, sh[i].off); SET(b, 32, sh[i].size);
			SET(b, 40, sh[i].link); SET(b, 44, sh[i].info); SET(b, 48, sh[i].align);
			SET(b, 56, sh[i].entsize);
			bad |= put_bytes(f, b, SH);
		}
	}
#undef SET
	return bad ? mt_err_set(err, MT_EIO, "writing the kernel image") : 0;
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
static int encode(const struct mt_synth_run *run, const struct mt_synth_variant *v, struct enc *x,
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
		if (in->cls != MT_IC_SYSCALL) {
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

static void enc_free(struct enc *x)
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

/* --- perf.data ------------------------------------------------------------ */

struct out {
	uint8_t *b;
	size_t n, cap;
	bool oom;
};

static void emit_bytes(struct out *o, const void *p, size_t n)
{
	if (o->oom || !n)
		return;
	if (o->n + n > o->cap) {
		size_t nc = o->cap ? o->cap : 4096;
		while (nc < o->n + n)
			nc *= 2;
		uint8_t *nb = realloc(o->b, nc);
		if (!nb) {
			o->oom = true;
			return;
		}
		o->b = nb;
		o->cap = nc;
	}
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void u64(struct out *o, uint64_t v) { emit_bytes(o, &v, 8); }
static void u32(struct out *o, uint32_t v) { emit_bytes(o, &v, 4); }

struct rec_ctx {
	uint64_t pt_st, dummy_st;
	uint32_t pid, tid, cpu;
	uint64_t time;
};

static size_t rec_begin(struct out *o, uint32_t type, uint16_t misc)
{
	size_t at = o->n;
	u32(o, type);
	uint16_t m[2] = {misc, 0};
	emit_bytes(o, m, 4);
	return at;
}

static void rec_end(struct out *o, size_t at)
{
	if (!o->oom) {
		uint16_t size = (uint16_t)(o->n - at);
		memcpy(o->b + at + 6, &size, 2);
	}
}

static void trailer(struct out *o, const struct rec_ctx *c, uint64_t st, uint64_t id)
{
	if (st & MT_SAMPLE_TID) { u32(o, c->pid); u32(o, c->tid); }
	if (st & MT_SAMPLE_TIME) u64(o, c->time);
	if (st & MT_SAMPLE_CPU) { u32(o, c->cpu); u32(o, 0); }
	if (st & MT_SAMPLE_IDENTIFIER) u64(o, id);
}

static void padded_str(struct out *o, const char *s)
{
	size_t n = strlen(s) + 1, pad = (8 - n % 8) % 8;
	emit_bytes(o, s, n);
	static const uint8_t zero[8];
	emit_bytes(o, zero, pad);
}

static void attr_bytes(struct out *o, uint32_t type, uint64_t config, uint64_t st, uint64_t flags, uint64_t period)
{
	uint8_t a[128] = {0};
	uint32_t size = 128;
	memcpy(a, &type, 4);
	memcpy(a + 4, &size, 4);
	memcpy(a + 8, &config, 8);
	memcpy(a + 16, &period, 8);
	memcpy(a + 24, &st, 8);
	uint64_t rf = 4; /* PERF_FORMAT_ID */
	memcpy(a + 32, &rf, 8);
	memcpy(a + 40, &flags, 8);
	emit_bytes(o, a, sizeof a);
}

/* A COMM record for c's thread (the tracking event's). */
static void comm_record(struct out *d, const struct rec_ctx *c, uint16_t misc, const char *comm)
{
	size_t at = rec_begin(d, MT_REC_COMM, misc);
	u32(d, c->pid);
	u32(d, c->tid);
	padded_str(d, comm);
	trailer(d, c, c->dummy_st, 2);
	rec_end(d, at);
}

/* File mode: the header, attrs (with their ids section refs) and ids,
 * for data_size bytes of records to follow; returns the data offset. */
static uint64_t file_header(struct out *f, const struct out *attrs, int nattrs, const uint64_t *ids,
			    uint64_t data_size)
{
	const uint64_t attrs_off = 104, ids_off = attrs_off + (uint64_t)nattrs * 144,
		       data_off = ids_off + 8 * (uint64_t)nattrs;
	emit_bytes(f, "PERFILE2", 8);
	u64(f, 104);
	u64(f, 144);
	u64(f, attrs_off); u64(f, (uint64_t)nattrs * 144);
	u64(f, data_off); u64(f, data_size);
	u64(f, 0); u64(f, 0);
	uint8_t feat[32] = {0};
	feat[MT_FEAT_NRCPUS / 8] |= 1u << (MT_FEAT_NRCPUS % 8);
	feat[MT_FEAT_AUXTRACE / 8] |= 1u << (MT_FEAT_AUXTRACE % 8);
	emit_bytes(f, feat, 32);
	for (int i = 0; i < nattrs; i++) {
		emit_bytes(f, attrs->b + i * 128, 128);
		u64(f, ids_off + 8 * (uint64_t)i);
		u64(f, 8);
	}
	for (int i = 0; i < nattrs; i++)
		u64(f, ids[i]);
	return data_off;
}

/* The feature table after the data, in bit order (NRCPUS, AUXTRACE), then
 * their payloads up to the AUXTRACE index's count; its n entries (file
 * offset and size of each AUXTRACE record) follow. perf sizes per-cpu
 * state from NRCPUS, and crashed without it. */
static void feature_table(struct out *f, uint64_t data_end, uint64_t n)
{
	uint64_t payloads = data_end + 2 * 16;
	u64(f, payloads);
	u64(f, 8);
	u64(f, payloads + 8);
	u64(f, 8 + 16 * n);
	u32(f, 1); /* nr_cpus_available */
	u32(f, 1); /* nr_cpus_online */
	u64(f, n);
}

/* Makes copy j's records in o (emptied first): every copy's are as long;
 * *auxtrace_at: where its AUXTRACE record starts in o. */
typedef void copy_records_fn(struct out *o, const void *ctx, uint64_t j, size_t *auxtrace_at);

/* The file-mode perf.data of a repeated trace, streamed: header, attrs,
 * ids, the records before split, `repeat` copies' records, the rest, the
 * feature table and the AUXTRACE index. */
static bool write_repeated(FILE *f, const struct out *attrs, int nattrs, const uint64_t *ids, const struct out *d,
			   size_t split, uint64_t repeat, copy_records_fn *copy, const void *ctx)
{
	struct out b = {0};
	size_t auxtrace_at = 0;
	copy(&b, ctx, 0, &auxtrace_at);
	uint64_t block_n = b.n;
	uint64_t data_size = d->n + repeat * block_n;
	struct out h = {0};
	uint64_t data_off = file_header(&h, attrs, nattrs, ids, data_size);
	bool ok = !b.oom && !h.oom && fwrite(h.b, h.n, 1, f) == 1 && fwrite(d->b, split, 1, f) == 1;
	free(h.b);
	for (uint64_t j = 0; ok && j < repeat; j++) {
		copy(&b, ctx, j, &auxtrace_at);
		ok = !b.oom && b.n == block_n && fwrite(b.b, b.n, 1, f) == 1;
	}
	free(b.b);
	struct out t = {0};
	emit_bytes(&t, d->b + split, d->n - split);
	feature_table(&t, data_off + data_size, repeat);
	ok = ok && !t.oom && fwrite(t.b, t.n, 1, f) == 1;
	free(t.b);
	for (uint64_t j = 0; ok && j < repeat; j++) {
		uint64_t idx[2] = {data_off + split + j * block_n + auxtrace_at, 48};
		ok = fwrite(idx, sizeof idx, 1, f) == 1;
	}
	return ok;
}

/* Repeated per-thread: one block of records (AUX, FINISHED_ROUND,
 * AUXTRACE + payload) patched per copy with its AUX offset, reference,
 * queue and thread. Copy j goes to thread j % threads; a thread's copies
 * sit one page apart in its AUX area, so each decodes alone, or
 * (contiguous) one after the other, one long segment. */
struct thread_copies {
	const struct out *block;
	size_t auxtrace_at;
	unsigned threads;
	bool contiguous;
	uint32_t pid;
};

static void thread_copy(struct out *o, const void *ctx, uint64_t j, size_t *auxtrace_at)
{
	const struct thread_copies *tc = ctx;
	o->n = 0;
	emit_bytes(o, tc->block->b, tc->block->n);
	*auxtrace_at = tc->auxtrace_at;
	if (o->oom)
		return;
	uint8_t *a = o->b + tc->auxtrace_at + 8;
	uint64_t psize = mt_rd64(a);
	uint64_t aux_off = (j / tc->threads) * (psize + (tc->contiguous ? 0 : 4096));
	uint32_t th = (uint32_t)(j % tc->threads), tid = tc->pid + th;
	memcpy(o->b + 8, &aux_off, 8); /* AUX aux_offset */
	memcpy(a + 8, &aux_off, 8);
	memcpy(a + 16, &j, 8);
	memcpy(a + 24, &th, 4);        /* idx */
	memcpy(a + 28, &tid, 4);
}

uint64_t mt_synth_cpu_period(uint64_t ticks, bool mtc)
{
	if (mtc) {
		const uint64_t wrap = (uint64_t)TSC_PER_CTC << 16; /* TMA's CTC wraps */
		return (ticks + 1000 + wrap - 1) / wrap * wrap;
	}
	uint64_t p = 1000;
	while (p < ticks + 1000)
		p *= 10;
	return p;
}

/* The offsets of the TSC packets in pt[0..n): per-cpu copies move them in
 * time. Returns 0, or -1 when out of memory. */
static int tsc_offsets(const uint8_t *pt, size_t n, uint64_t **at, size_t *nat)
{
	*at = NULL;
	*nat = 0;
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)pt;
	cfg.end = (uint8_t *)pt + n;
	struct pt_packet_decoder *pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return -1;
	size_t cap = 0;
	int rc = 0;
	if (pt_pkt_sync_forward(pd) >= 0) {
		for (;;) {
			uint64_t off;
			struct pt_packet p;
			if (pt_pkt_get_offset(pd, &off) < 0 || pt_pkt_next(pd, &p, sizeof p) < 0)
				break; /* the end (the encoder wrote it: no damage) */
			if (p.type != ppt_tsc)
				continue;
			if (!mt_grow((void **)at, &cap, *nat + 1, sizeof **at)) {
				rc = -1;
				break;
			}
			(*at)[(*nat)++] = off;
		}
	}
	pt_pkt_free_decoder(pd);
	return rc;
}

/* Repeated per-cpu: what every copy's records and PT are made from. */
struct cpu_copies {
	struct rec_ctx ctx;         /* pid, sample types */
	unsigned cpus, threads;
	uint64_t period;            /* TSC between a CPU's copies */
	uint64_t start, end;        /* the run's first and last TSC */
	bool contiguous;
	uint8_t *pt;                /* the run's PT */
	size_t ptlen;
	uint64_t *tsc_at;           /* its TSC packets */
	size_t ntsc;
};

/* Copy j's records into o (emptied first): the CPU switching from idle to
 * its thread, its AUX and AUXTRACE records with the PT (TSC packets moved
 * by its time shift), the switch back to idle. *auxtrace_at: where the
 * AUXTRACE record starts in o. */
static void cpu_copy(struct out *o, const void *ctx, uint64_t j, size_t *auxtrace_at)
{
	const struct cpu_copies *cc = ctx;
	uint32_t cpu = (uint32_t)(j % cc->cpus);
	uint64_t slot = j / cc->cpus, shift = slot * cc->period;
	uint64_t psize = (cc->ptlen + 7) & ~7ULL;
	uint64_t aux_off = slot * (psize + (cc->contiguous ? 0 : 4096));
	struct rec_ctx c = cc->ctx;
	c.cpu = cpu;
	c.tid = c.pid + (uint32_t)(j % cc->threads);
	c.time = cc->start + shift;
	o->n = 0;
	size_t at = rec_begin(o, MT_REC_SWITCH_CPU_WIDE, 0); /* IN: from idle (pid/tid 0) */
	u32(o, 0);
	u32(o, 0);
	trailer(o, &c, c.dummy_st, 2);
	rec_end(o, at);
	at = rec_begin(o, MT_REC_AUX, 0);
	u64(o, aux_off);
	u64(o, psize);
	u64(o, 0);
	trailer(o, &c, c.pt_st, 1);
	rec_end(o, at);
	at = rec_begin(o, MT_REC_FINISHED_ROUND, 0);
	rec_end(o, at);
	*auxtrace_at = o->n;
	at = rec_begin(o, MT_REC_AUXTRACE, 0);
	u64(o, psize);
	u64(o, aux_off);
	u64(o, j);   /* reference */
	u32(o, cpu); /* idx: a queue per CPU */
	u32(o, c.tid);
	u32(o, cpu);
	u32(o, 0);
	rec_end(o, at);
	size_t pt_at = o->n;
	emit_bytes(o, cc->pt, cc->ptlen);
	static const uint8_t zero[8];
	emit_bytes(o, zero, psize - cc->ptlen);
	if (!o->oom)
		for (size_t k = 0; k < cc->ntsc; k++) {
			uint8_t *q = o->b + pt_at + cc->tsc_at[k] + 1; /* 0x19, then 7 bytes */
			uint64_t tsc = 0;
			memcpy(&tsc, q, 7);
			tsc += shift;
			memcpy(q, &tsc, 7);
		}
	c.time = cc->end + shift;
	at = rec_begin(o, MT_REC_SWITCH_CPU_WIDE, MT_MISC_SWITCH_OUT); /* OUT: to idle */
	u32(o, 0);
	u32(o, 0);
	trailer(o, &c, c.dummy_st, 2);
	rec_end(o, at);
}

int mt_synth_write(const struct mt_synth_run *run, const struct mt_synth_variant *v,
		   const struct mt_synth_opts *opts, FILE *data, FILE *truth, struct mt_synth_result *res,
		   struct mt_err *err)
{
	memset(res, 0, sizeof *res);
	if (run->nips == 0)
		return mt_err_set(err, MT_EUSAGE, "no instructions recorded");
	if (run->nthreads > 1 && v->kernel)
		return mt_err_set(err, MT_EUNSUP, "variant %s: the kernel variants take single-threaded runs", v->name);
	if (run->nthreads > 1 && !v->per_cpu)
		return mt_err_set(err, MT_EUNSUP, "variant %s: %zu threads need a per-cpu variant "
				  "(per-thread buffers are not synthesized)", v->name, run->nthreads);
	uint64_t repeat = opts && opts->repeat > 1 ? opts->repeat : 1;
	unsigned nthr = opts && opts->threads > 1 ? opts->threads : 1;
	unsigned ncpu = opts && opts->cpus > 1 ? opts->cpus : 1;
	bool repeated = repeat > 1 || nthr > 1 || ncpu > 1;
	/* repeated per-cpu: copies moved in time (their TSC packets; MTC and
	 * TMA stay, the time shift a whole number of CTC wraps; no CYC) */
	bool cpu_copies = repeated && v->per_cpu;
	if (repeated && (v->snapshot || v->wrap_at_psb || v->kernel || v->pipe || (opts && opts->hit_ip) ||
			 (v->per_cpu ? v->timing == MT_SYNTH_TIMELESS || v->cyc : v->timing != MT_SYNTH_TIMELESS)))
		return mt_err_set(err, MT_EUSAGE, "variant %s: repeated traces take per-thread, timeless variants, or "
				  "per-cpu with TSC or MTC timing, without snapshot, wrap, kernel, pipe or hits", v->name);
	if (ncpu > 1 && !v->per_cpu)
		return mt_err_set(err, MT_EUSAGE, "variant %s: --cpus takes a per-cpu variant", v->name);
	if (repeated && run->nthreads > 1)
		return mt_err_set(err, MT_EUSAGE, "repeated traces take a single-threaded run");
	if (nthr < ncpu)
		nthr = ncpu; /* a thread runs on one CPU at a time */
	/* Pass 1 finds the PSB offsets (for the wrap cut); pass 2 writes truth. */
	struct enc x = {0};
	uint64_t hit_ip = opts ? opts->hit_ip : 0;
	int rc = encode(run, v, &x, NULL, 0, 0, 0, hit_ip, err);
	uint64_t cut = 0, from_insn = 0, gap_from = 0, gap_to = 0, gap_off[2] = {0, 0};
	if (!rc && v->wrap_at_psb) {
		if (x.npsb <= v->wrap_at_psb) {
			rc = mt_err_set(err, MT_EUSAGE, "variant %s: only %zu PSBs, cannot cut at PSB %u", v->name,
					x.npsb, v->wrap_at_psb);
		} else {
			cut = x.psb_offsets[v->wrap_at_psb];
			from_insn = x.psb_insn[v->wrap_at_psb];
		}
	}
	if (!rc && v->gap) {
		/* the first snapshot ends at a PSB a third of the way in, the
		 * second starts at the PSB two thirds in */
		if (x.npsb < 4) {
			rc = mt_err_set(err, MT_EUSAGE, "variant %s: only %zu PSBs, cannot leave a gap", v->name, x.npsb);
		} else {
			gap_off[0] = x.psb_offsets[x.npsb / 3];
			gap_off[1] = x.psb_offsets[2 * x.npsb / 3];
			gap_from = x.psb_insn[x.npsb / 3];
			gap_to = x.psb_insn[2 * x.npsb / 3];
		}
	}
	enc_free(&x);
	if (rc)
		return rc;
	struct mt_events_writer tw;
	struct truth t = {.pid = run->pid, .cpu = v->per_cpu ? 0 : -1};
	if (truth) {
		if (mt_events_writer_init(&tw, truth))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		t.w = &tw;
		mt_events_write_fact(&tw, "source", "mt-synth ground truth, variant %s", v->name);
		mt_events_write_fact(&tw, "time", "%s", v->timing == MT_SYNTH_TIMELESS ? "timeless" : "synthetic TSC");
		for (size_t i = 0; i < run->nthreads; i++)
			mt_events_write_comm(&tw, run->pid, run->threads[i], run->comm);
		for (size_t i = 0; i < run->nmaps; i++)
			if (run->maps[i].path[0] == '/')
				mt_events_write_mmap(&tw, run->pid, run->maps[i].start, run->maps[i].len, run->maps[i].pgoff,
						     NULL, 0, run->maps[i].path);
	}
	rc = encode(run, v, &x, truth ? &t : NULL, from_insn, gap_from, gap_to, hit_ip, err);
	uint64_t ptlen = 0;
	if (!rc)
		pt_enc_get_offset(x.e, &ptlen);
	if (truth) {
		struct mt_err we = {0};
		if (mt_events_writer_finish(&tw, &we) && !rc)
			rc = mt_err_set(err, MT_EIO, "truth: %s", we.msg);
	}
	if (rc || !data) {
		res->pt_bytes = ptlen;
		enc_free(&x);
		return rc;
	}
	/* The AUX payload: optional torn junk, then the stream from the cut. */
	static const uint8_t junk[37] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x99,
					 0x4d, 0xde, 0xad, 0xbe, 0xef, 0x02, 0x03, 0x19, 0x77, 0x55, 0x1d,
					 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0x02,
					 0x82, 0x02, 0x82, 0x02};
	size_t jl = v->wrap_at_psb ? sizeof junk : 0;
	uint64_t payload = jl + (ptlen - cut);
	uint64_t padded = (payload + 7) & ~7ULL;
	res->pt_bytes = payload;
	res->psbs = x.npsb;
	res->first_insn = from_insn;
	res->insns_traced = run->nips - from_insn - (gap_to - gap_from);

	bool timed = v->timing != MT_SYNTH_TIMELESS;
	uint64_t common = MT_SAMPLE_TID | MT_SAMPLE_TIME | MT_SAMPLE_IDENTIFIER | (v->per_cpu ? MT_SAMPLE_CPU : 0);
	struct rec_ctx c = {.pt_st = common | MT_SAMPLE_IP, .dummy_st = common, .pid = run->pid, .tid = run->pid,
			    .cpu = v->per_cpu ? 0 : (uint32_t)-1, .time = MT_SYNTH_TSC0 - 1};
	uint64_t config = CFG_PT | CFG_BRANCH | (timed ? CFG_TSC : 0) |
			  (v->timing == MT_SYNTH_MTC ? CFG_MTC : 0) | (v->noretcomp ? CFG_NORETCOMP : 0) |
			  (v->cyc ? CFG_CYC : 0);
	uint64_t pt_flags = MT_ATTR_DISABLED | (v->kernel ? 0 : MT_ATTR_EXCLUDE_KERNEL) | MT_ATTR_EXCLUDE_HV |
			    MT_ATTR_ENABLE_ON_EXEC |
			    MT_ATTR_SAMPLE_ID_ALL | MT_ATTR_EXCLUDE_GUEST | (v->per_cpu ? MT_ATTR_INHERIT : 0);
	uint64_t dummy_flags = MT_ATTR_DISABLED | MT_ATTR_EXCLUDE_KERNEL | MT_ATTR_EXCLUDE_HV | MT_ATTR_MMAP |
			       MT_ATTR_COMM | MT_ATTR_TASK | MT_ATTR_ENABLE_ON_EXEC | MT_ATTR_SAMPLE_ID_ALL |
			       MT_ATTR_EXCLUDE_GUEST | MT_ATTR_MMAP2 | MT_ATTR_COMM_EXEC |
			       (v->per_cpu ? MT_ATTR_INHERIT | MT_ATTR_CONTEXT_SWITCH : 0);

	/* attrs in perf's order: the PT event, other events, the tracking
	 * dummy last (perf script decoded nothing with the dummy before a
	 * breakpoint event); ids[] gives each its sample id */
	struct out attrs = {0}, d = {0};
	uint64_t ids[3] = {1, 2, 0};
	int nattrs = 2;
	uint64_t bp_st = common | MT_SAMPLE_IP;
	attr_bytes(&attrs, MT_SYNTH_PT_TYPE, config, c.pt_st, pt_flags, 1);
	if (hit_ip) {
		/* -e mem:ADDR:x: PERF_TYPE_BREAKPOINT, bp_type X, bp_addr, bp_len 8 */
		attr_bytes(&attrs, 5, 0, bp_st, MT_ATTR_DISABLED | MT_ATTR_EXCLUDE_KERNEL | MT_ATTR_EXCLUDE_HV |
			   MT_ATTR_ENABLE_ON_EXEC | MT_ATTR_SAMPLE_ID_ALL | (v->per_cpu ? MT_ATTR_INHERIT : 0), 1);
		if (!attrs.oom) {
			uint8_t *a = attrs.b + 128;
			uint32_t bp_type = 4;
			uint64_t bp_len = 8;
			memcpy(a + 52, &bp_type, 4);
			memcpy(a + 56, &hit_ip, 8);
			memcpy(a + 64, &bp_len, 8);
		}
		ids[1] = 3;
		ids[2] = 2;
		nattrs = 3;
	}
	attr_bytes(&attrs, 1 /* software */, 9 /* dummy */, c.dummy_st, dummy_flags, 1);
	res->hits = x.nhits;

	if (v->pipe) {
		for (int i = 0; i < nattrs; i++) {
			size_t at = rec_begin(&d, MT_REC_HEADER_ATTR, 0);
			emit_bytes(&d, attrs.b + i * 128, 128);
			u64(&d, ids[i]);
			rec_end(&d, at);
		}
	}
	size_t at = rec_begin(&d, MT_REC_AUXTRACE_INFO, 0);
	u32(&d, 1); /* PERF_AUXTRACE_INTEL_PT */
	u32(&d, 0);
	uint64_t priv[18] = {MT_SYNTH_PT_TYPE, 0, 1, 0, 1, CFG_TSC, CFG_NORETCOMP, v->per_cpu ? 2 : 0, v->snapshot,
			     v->per_cpu, CFG_MTC, 0x3c000, TSC_PER_CTC, 1, CFG_CYC, SYNTH_CBR, 0, 0};
	emit_bytes(&d, priv, sizeof priv);
	rec_end(&d, at);
	if (timed) {
		at = rec_begin(&d, MT_REC_TIME_CONV, 0);
		u64(&d, 0); u64(&d, 1); u64(&d, 0); u64(&d, 0); u64(&d, 0);
		uint8_t flags8[8] = {1, 0};
		emit_bytes(&d, flags8, 8);
		rec_end(&d, at);
	}
	comm_record(&d, &c, MT_MISC_COMM_EXEC, run->comm);
	if (v->kernel) {
		/* perf's kernel map: pid -1, pgoff = the address of _text */
		at = rec_begin(&d, MT_REC_MMAP, 1 /* KERNEL */);
		u32(&d, (uint32_t)-1);
		u32(&d, 0);
		u64(&d, KB);
		u64(&d, 0x1000);
		u64(&d, KB);
		padded_str(&d, "[kernel.kallsyms]_text");
		struct rec_ctx ck = c;
		ck.pid = (uint32_t)-1;
		ck.tid = 0;
		trailer(&d, &ck, c.dummy_st, 2);
		rec_end(&d, at);
	}
	for (size_t i = 0; i < run->nmaps; i++) {
		const struct mt_synth_map *m = &run->maps[i];
		if (m->path[0] != '/')
			continue;
		bool bid = v->build_ids && m->build_id_size;
		at = rec_begin(&d, MT_REC_MMAP2, 2 /* USER */ | (bid ? MT_MISC_MMAP_BUILD_ID : 0));
		u32(&d, run->pid);
		u32(&d, run->pid);
		u64(&d, m->start);
		u64(&d, m->len);
		u64(&d, m->pgoff);
		if (bid) { /* {u8 size; u8 pad; u16 pad; u8 build_id[20]} replaces maj..ino_generation */
			uint8_t b[24] = {m->build_id_size};
			memcpy(b + 4, m->build_id, m->build_id_size);
			emit_bytes(&d, b, sizeof b);
		} else {
			u32(&d, m->maj);
			u32(&d, m->min);
			u64(&d, m->ino);
			u64(&d, 0);
		}
		u32(&d, m->prot);
		u32(&d, 2 /* MAP_PRIVATE */);
		padded_str(&d, m->path);
		trailer(&d, &c, c.dummy_st, 2);
		rec_end(&d, at);
	}
	for (unsigned th = 1; th < nthr; th++) {
		/* the repeat's other threads: made by the process, named as it is */
		struct rec_ctx ct = c;
		ct.tid = run->pid + th;
		at = rec_begin(&d, MT_REC_FORK, 0);
		u32(&d, run->pid); u32(&d, run->pid); u32(&d, run->pid + th); u32(&d, run->pid);
		u64(&d, 0);
		trailer(&d, &ct, c.dummy_st, 2);
		rec_end(&d, at);
		comm_record(&d, &ct, 0, run->comm);
	}
	/* tracing starts for each thread; per cpu, with the first on each */
	for (unsigned th = 0; th < (cpu_copies ? ncpu : nthr); th++) {
		struct rec_ctx ct = c;
		ct.tid = run->pid + th;
		if (cpu_copies)
			ct.cpu = th;
		at = rec_begin(&d, MT_REC_ITRACE_START, 0);
		u32(&d, run->pid);
		u32(&d, run->pid + th);
		trailer(&d, &ct, c.pt_st, 1);
		rec_end(&d, at);
	}
	if (v->per_cpu && !cpu_copies) {
		at = rec_begin(&d, MT_REC_SWITCH, 0); /* switch IN of our task on cpu 0 */
		trailer(&d, &c, c.dummy_st, 2);
		rec_end(&d, at);
		/* Threads: FORK when each first runs (a thread keeps its
		 * creator's name: perf writes no COMM for it), and a CPU-wide
		 * switch OUT/IN pair at every switch, as perf -a writes them. */
		bool seen[MT_SYNTH_MAX_THREADS] = {true};
		for (size_t k = 0; k < x.nsw; k++) {
			const struct synth_switch *w = &x.sw[k];
			size_t th = 0;
			while (th + 1 < run->nthreads && run->threads[th] != w->next)
				th++;
			struct rec_ctx cs = c;
			cs.time = w->time;
			if (!seen[th]) {
				seen[th] = true;
				at = rec_begin(&d, MT_REC_FORK, 0);
				u32(&d, run->pid); u32(&d, run->pid); u32(&d, w->next); u32(&d, run->pid);
				u64(&d, w->time);
				cs.tid = w->next;
				trailer(&d, &cs, c.dummy_st, 2);
				rec_end(&d, at);
			}
			at = rec_begin(&d, MT_REC_SWITCH_CPU_WIDE, MT_MISC_SWITCH_OUT);
			u32(&d, run->pid); u32(&d, w->next);
			cs.tid = w->prev;
			trailer(&d, &cs, c.dummy_st, 2);
			rec_end(&d, at);
			at = rec_begin(&d, MT_REC_SWITCH_CPU_WIDE, 0);
			u32(&d, run->pid); u32(&d, w->prev);
			cs.tid = w->next;
			trailer(&d, &cs, c.dummy_st, 2);
			rec_end(&d, at);
		}
	}
	/* The breakpoint's samples: id, ip, pid/tid, time, cpu (sample_type order) */
	for (size_t k = 0; k < x.nhits; k++) {
		at = rec_begin(&d, MT_REC_SAMPLE, 2 /* USER */);
		u64(&d, 3);
		u64(&d, hit_ip);
		u32(&d, run->pid);
		u32(&d, x.hits[k].tid);
		u64(&d, x.hits[k].time);
		if (v->per_cpu) {
			u32(&d, 0);
			u32(&d, 0);
		}
		rec_end(&d, at);
	}
		/* The AUX data: one buffer; or, for snapshot, two snapshots of a ring
	 * where the second repeats the last 20% of the first. */
	struct aux_piece { const uint8_t *pre; size_t prelen; uint64_t from, to, aux_off; } piece[2] = {
		{junk, jl, cut, ptlen, 0},
	};
	int npieces = 1;
	if (v->snapshot) {
		/* lengths in multiples of 8, as real snapshots (whole pages)
		 * need no AUXTRACE padding */
		uint64_t c1 = (ptlen * 6 / 10) & ~7ULL, c2 = ptlen - ((ptlen - ptlen * 4 / 10) & ~7ULL);
		piece[0] = (struct aux_piece){NULL, 0, 0, c1, 0};
		piece[1] = (struct aux_piece){NULL, 0, c2, ptlen, c2};
		if (v->gap) {
			piece[0] = (struct aux_piece){NULL, 0, 0, gap_off[0], 0};
			piece[1] = (struct aux_piece){NULL, 0, gap_off[1], ptlen, (gap_off[1] + 7) & ~7ULL};
		}
		npieces = 2;
	}
	size_t auxtrace_at[2];
	/* Repeated: one block (AUX, FINISHED_ROUND, AUXTRACE + payload) made
	 * here, written repeat times between the records before and after. */
	size_t split = 0;
	struct out block = {0};
	size_t block_auxtrace = 0;
	uint64_t period = cpu_copies ? mt_synth_cpu_period(x.tsc - MT_SYNTH_TSC0, v->timing == MT_SYNTH_MTC) : 0;
	if (cpu_copies) {
		split = d.n; /* each copy's records are made as it is written */
		npieces = 0;
	} else if (repeated) {
		uint64_t psize = (payload + 7) & ~7ULL;
		split = d.n;
		at = rec_begin(&block, MT_REC_AUX, 0);
		u64(&block, 0);
		u64(&block, psize);
		u64(&block, 0);
		trailer(&block, &c, c.pt_st, 1);
		rec_end(&block, at);
		at = rec_begin(&block, MT_REC_FINISHED_ROUND, 0);
		rec_end(&block, at);
		block_auxtrace = block.n;
		at = rec_begin(&block, MT_REC_AUXTRACE, 0);
		u64(&block, psize);
		u64(&block, 0); /* offset, reference, idx, tid: per copy */
		u64(&block, 0);
		u32(&block, 0);
		u32(&block, run->pid);
		u32(&block, (uint32_t)-1);
		u32(&block, 0);
		rec_end(&block, at);
		emit_bytes(&block, x.buf, ptlen);
		static const uint8_t zero[8];
		emit_bytes(&block, zero, psize - ptlen);
		npieces = 0;
	}
	for (int k = 0; k < npieces; k++) {
		uint64_t plen = piece[k].prelen + (piece[k].to - piece[k].from);
		uint64_t psize = (plen + 7) & ~7ULL;
		at = rec_begin(&d, MT_REC_AUX, 0);
		u64(&d, piece[k].aux_off);
		u64(&d, psize);
		u64(&d, v->snapshot ? 2 /* OVERWRITE */ : 0);
		trailer(&d, &c, c.pt_st, 1);
		rec_end(&d, at);
		at = rec_begin(&d, MT_REC_FINISHED_ROUND, 0);
		rec_end(&d, at);
		auxtrace_at[k] = d.n;
		at = rec_begin(&d, MT_REC_AUXTRACE, 0);
		u64(&d, psize);
		u64(&d, piece[k].aux_off); /* offset in the AUX area */
		u64(&d, (uint64_t)k);      /* reference */
		u32(&d, 0);                /* idx */
		u32(&d, run->pid);         /* tid */
		u32(&d, v->per_cpu ? 0 : (uint32_t)-1);
		u32(&d, 0);
		rec_end(&d, at);
		emit_bytes(&d, piece[k].pre, piece[k].prelen);
		emit_bytes(&d, x.buf + piece[k].from, piece[k].to - piece[k].from);
		static const uint8_t zero[8];
		emit_bytes(&d, zero, psize - plen);
	}
	(void)padded;
	c.time = x.tsc + 1 + (cpu_copies ? (repeat - 1) / ncpu * period : 0);
	at = rec_begin(&d, MT_REC_EXIT, 0);
	u32(&d, run->pid); u32(&d, run->pid); u32(&d, run->pid); u32(&d, run->pid);
	u64(&d, c.time);
	trailer(&d, &c, c.dummy_st, 2);
	rec_end(&d, at);
	at = rec_begin(&d, MT_REC_FINISHED_ROUND, 0);
	rec_end(&d, at);
	struct cpu_copies cc = {.ctx = c, .cpus = ncpu, .threads = nthr, .period = period,
				.start = MT_SYNTH_TSC0 - 1, .end = x.tsc + 1, .contiguous = opts && opts->contiguous};
	if (cpu_copies && tsc_offsets(x.buf, ptlen, &cc.tsc_at, &cc.ntsc)) {
		enc_free(&x);
		free(d.b);
		free(attrs.b);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	if (cpu_copies) {
		cc.pt = x.buf; /* freed after the copies are written */
		cc.ptlen = ptlen;
		x.buf = NULL;
	}
	enc_free(&x);

	if (d.oom || attrs.oom || block.oom) {
		free(d.b);
		free(attrs.b);
		free(block.b);
		free(cc.pt);
		free(cc.tsc_at);
		return mt_err_set(err, MT_ENOMEM, "out of memory writing perf.data");
	}
	bool ok;
	if (repeated) {
		struct thread_copies tc = {.block = &block, .auxtrace_at = block_auxtrace, .threads = nthr,
					   .contiguous = opts && opts->contiguous, .pid = run->pid};
		ok = write_repeated(data, &attrs, nattrs, ids, &d, split, repeat, cpu_copies ? cpu_copy : thread_copy,
				    cpu_copies ? (const void *)&cc : &tc);
		free(block.b);
		free(cc.pt);
		free(cc.tsc_at);
		res->pt_bytes = payload * repeat;
		res->insns_traced *= repeat;
		res->psbs *= repeat;
		res->cpu_period = period;
	} else if (v->pipe) {
		uint64_t h[2];
		memcpy(h, "PERFILE2", 8);
		h[1] = 16;
		ok = fwrite(h, 16, 1, data) == 1 && fwrite(d.b, d.n, 1, data) == 1;
	} else {
		/* header | attrs (+ids section refs) | ids | data | feature table | AUXTRACE index */
		struct out f = {0};
		uint64_t data_off = file_header(&f, &attrs, nattrs, ids, d.n);
		emit_bytes(&f, d.b, d.n);
		feature_table(&f, data_off + d.n, (uint64_t)npieces);
		for (int k = 0; k < npieces; k++) {
			u64(&f, data_off + auxtrace_at[k]);
			u64(&f, 48);
		}
		ok = !f.oom && fwrite(f.b, f.n, 1, data) == 1;
		free(f.b);
	}
	free(d.b);
	free(attrs.b);
	if (!ok || fflush(data) != 0)
		return mt_err_set(err, MT_EIO, "writing perf.data failed");
	return 0;
}
