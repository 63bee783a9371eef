/* synth_write: the encoded run as a perf.data, file or pipe mode, as
 * perf record writes one (attrs, sideband, AUX and AUXTRACE records, the
 * feature table and AUXTRACE index), and repeated copies of it streamed
 * for traces of any size. */
#define _GNU_SOURCE
#include "synth/synth.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "stream/events.h"
#include "synth/encode.h"
#include "synth/loop.h"
#include "synth/kernel.h"
#include "trace/brstack.h"
#include "trace/perfdata.h"
#include "base/strtab.h"

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
			    uint64_t data_size, bool pmu_caps)
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
	if (pmu_caps)
		feat[MT_FEAT_CPU_PMU_CAPS / 8] |= 1u << (MT_FEAT_CPU_PMU_CAPS % 8);
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

/* The feature table after the data, in bit order (NRCPUS, AUXTRACE, and
 * with pmu_caps CPU_PMU_CAPS), then their payloads, the AUXTRACE index's
 * count and its n entries (file offset and size of each AUXTRACE record)
 * last. perf sizes per-cpu state from NRCPUS, and crashed without it.
 * CPU_PMU_CAPS says the LBR's depth (branches=32, perf's max_branches:
 * its --stitch-lbr needs it), strings as perf writes them (u32 length,
 * NUL-padded to 64). */
static void feature_table(struct out *f, uint64_t data_end, uint64_t n, bool pmu_caps)
{
	static const char *const caps[] = {"branches", "32"};
	uint64_t caps_size = 4 + 2 * (4 + 64), payloads = data_end + (pmu_caps ? 3 : 2) * 16;
	/* the table in bit order; the AUXTRACE index's payload last */
	u64(f, payloads);
	u64(f, 8);
	u64(f, payloads + 8 + (pmu_caps ? caps_size : 0));
	u64(f, 8 + 16 * n);
	if (pmu_caps) {
		u64(f, payloads + 8);
		u64(f, caps_size);
	}
	u32(f, 1); /* nr_cpus_available */
	u32(f, 1); /* nr_cpus_online */
	if (pmu_caps) {
		u32(f, 1); /* one capability */
		for (int i = 0; i < 2; i++) {
			uint8_t pad[64] = {0};
			memcpy(pad, caps[i], strlen(caps[i]));
			u32(f, 64);
			emit_bytes(f, pad, 64);
		}
	}
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
	uint64_t data_off = file_header(&h, attrs, nattrs, ids, data_size, false);
	bool ok = !b.oom && !h.oom && fwrite(h.b, h.n, 1, f) == 1 && fwrite(d->b, split, 1, f) == 1;
	free(h.b);
	for (uint64_t j = 0; ok && j < repeat; j++) {
		copy(&b, ctx, j, &auxtrace_at);
		ok = !b.oom && b.n == block_n && fwrite(b.b, b.n, 1, f) == 1;
	}
	free(b.b);
	struct out t = {0};
	emit_bytes(&t, d->b + split, d->n - split);
	feature_table(&t, data_off + data_size, repeat, false);
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

/* One perf.data being made: the run's shape, its encoding, and the
 * records made so far. */
struct synth_file {
	const struct mt_synth_run *run;
	const struct mt_synth_variant *v;
	const struct mt_synth_opts *opts;
	uint64_t repeat;
	unsigned nthr, ncpu;
	bool repeated;
	/* repeated per-cpu: copies moved in time (their TSC packets; MTC and
	 * TMA stay, the time shift a whole number of CTC wraps; no CYC) */
	bool cpu_copies;
	uint64_t hit_ip;
	/* wrap: the payload from the PSB at `cut` (insn from_insn) on; gap:
	 * the snapshots end and start at gap_off[], missing [gap_from, gap_to) */
	uint64_t cut, from_insn, gap_from, gap_to, gap_off[2];
	struct enc x;
	uint64_t ptlen;
	size_t jl;                  /* torn junk before the payload (wrap) */
	uint64_t payload;
	struct rec_ctx c;
	struct out attrs, d, block;
	uint64_t ids[3];
	int nattrs;
	struct aux_piece { const uint8_t *pre; size_t prelen; uint64_t from, to, aux_off; } piece[2];
	int npieces;
	size_t auxtrace_at[2];
	/* repeated: the records before split, then the copies */
	size_t split, block_auxtrace;
	uint64_t period;
	struct cpu_copies cc;
};

/* The AUX payload of a wrapped trace starts with torn junk. */
static const uint8_t junk[37] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x99,
				 0x4d, 0xde, 0xad, 0xbe, 0xef, 0x02, 0x03, 0x19, 0x77, 0x55, 0x1d,
				 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0x02,
				 0x82, 0x02, 0x82, 0x02};

/* What the variant and the options make of the run, or why not. */
static int check_shape(struct synth_file *f, struct mt_err *err)
{
	const struct mt_synth_run *run = f->run;
	const struct mt_synth_variant *v = f->v;
	const struct mt_synth_opts *opts = f->opts;
	if (run->nips == 0)
		return mt_err_set(err, MT_EUSAGE, "no instructions recorded");
	if (run->nthreads > 1 && v->kernel)
		return mt_err_set(err, MT_EUNSUP, "variant %s: the kernel variants take single-threaded runs", v->name);
	if (run->nthreads > 1 && !v->per_cpu)
		return mt_err_set(err, MT_EUNSUP, "variant %s: %zu threads need a per-cpu variant "
				  "(per-thread buffers are not synthesized)", v->name, run->nthreads);
	f->repeat = opts && opts->repeat > 1 ? opts->repeat : 1;
	f->nthr = opts && opts->threads > 1 ? opts->threads : 1;
	f->ncpu = opts && opts->cpus > 1 ? opts->cpus : 1;
	f->repeated = f->repeat > 1 || f->nthr > 1 || f->ncpu > 1;
	f->cpu_copies = f->repeated && v->per_cpu;
	f->hit_ip = opts ? opts->hit_ip : 0;
	if (f->repeated && (v->snapshot || v->wrap_at_psb || v->kernel || v->pipe || f->hit_ip ||
			    (v->per_cpu ? v->timing == MT_SYNTH_TIMELESS || v->cyc : v->timing != MT_SYNTH_TIMELESS)))
		return mt_err_set(err, MT_EUSAGE, "variant %s: repeated traces take per-thread, timeless variants, or "
				  "per-cpu with TSC or MTC timing, without snapshot, wrap, kernel, pipe or hits", v->name);
	if (f->ncpu > 1 && !v->per_cpu)
		return mt_err_set(err, MT_EUSAGE, "variant %s: --cpus takes a per-cpu variant", v->name);
	if (f->repeated && run->nthreads > 1)
		return mt_err_set(err, MT_EUSAGE, "repeated traces take a single-threaded run");
	if (f->nthr < f->ncpu)
		f->nthr = f->ncpu; /* a thread runs on one CPU at a time */
	return 0;
}

/* Pass 1: the PSB offsets, for the wrap cut and the snapshot gap. */
static int find_cuts(struct synth_file *f, struct mt_err *err)
{
	const struct mt_synth_variant *v = f->v;
	struct enc x = {0};
	int rc = mt_synth_encode(f->run, v, &x, NULL, 0, 0, 0, f->hit_ip, err);
	if (!rc && v->wrap_at_psb) {
		if (x.npsb <= v->wrap_at_psb) {
			rc = mt_err_set(err, MT_EUSAGE, "variant %s: only %zu PSBs, cannot cut at PSB %u", v->name,
					x.npsb, v->wrap_at_psb);
		} else {
			f->cut = x.psb_offsets[v->wrap_at_psb];
			f->from_insn = x.psb_insn[v->wrap_at_psb];
		}
	}
	if (!rc && v->gap) {
		/* the first snapshot ends at a PSB a third of the way in, the
		 * second starts at the PSB two thirds in */
		if (x.npsb < 4) {
			rc = mt_err_set(err, MT_EUSAGE, "variant %s: only %zu PSBs, cannot leave a gap", v->name, x.npsb);
		} else {
			f->gap_off[0] = x.psb_offsets[x.npsb / 3];
			f->gap_off[1] = x.psb_offsets[2 * x.npsb / 3];
			f->gap_from = x.psb_insn[x.npsb / 3];
			f->gap_to = x.psb_insn[2 * x.npsb / 3];
		}
	}
	mt_synth_enc_free(&x);
	return rc;
}

/* The truth's head: where it comes from, its time, the threads' names and
 * the run's file mappings. */
static void truth_head(struct mt_events_writer *tw, const struct mt_synth_run *run, const char *variant,
		       const char *time)
{
	mt_events_write_fact(tw, "source", "mt-synth ground truth, variant %s", variant);
	mt_events_write_fact(tw, "time", "%s", time);
	for (size_t i = 0; i < run->nthreads; i++)
		mt_events_write_comm(tw, run->pid, run->threads[i], run->comm);
	for (size_t i = 0; i < run->nmaps; i++)
		if (run->maps[i].path[0] == '/')
			mt_events_write_mmap(tw, run->pid, run->maps[i].start, run->maps[i].len, run->maps[i].pgoff, NULL, 0,
					     run->maps[i].path);
}

/* Pass 2: the encoding kept in f->x, and the truth written (truth != NULL). */
static int encode_with_truth(struct synth_file *f, FILE *truth, struct mt_err *err)
{
	const struct mt_synth_run *run = f->run;
	const struct mt_synth_variant *v = f->v;
	struct mt_events_writer tw;
	struct truth t = {.pid = run->pid, .cpu = v->per_cpu ? 0 : -1};
	if (truth) {
		if (mt_events_writer_init(&tw, truth))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		t.w = &tw;
		truth_head(&tw, run, v->name, v->timing == MT_SYNTH_TIMELESS ? "timeless" : "synthetic TSC");
	}
	int rc = mt_synth_encode(run, v, &f->x, truth ? &t : NULL, f->from_insn, f->gap_from, f->gap_to, f->hit_ip,
				 err);
	if (!rc)
		pt_enc_get_offset(f->x.e, &f->ptlen);
	if (truth) {
		struct mt_err we = {0};
		if (mt_events_writer_finish(&tw, &we) && !rc)
			rc = mt_err_set(err, MT_EIO, "truth: %s", we.msg);
	}
	return rc;
}

/* The attrs in perf's order: the PT event, other events, the tracking
 * dummy last (perf script decoded nothing with the dummy before a
 * breakpoint event); ids[] gives each its sample id. */
static void make_attrs(struct synth_file *f)
{
	const struct mt_synth_variant *v = f->v;
	bool timed = v->timing != MT_SYNTH_TIMELESS;
	uint64_t common = MT_SAMPLE_TID | MT_SAMPLE_TIME | MT_SAMPLE_IDENTIFIER | (v->per_cpu ? MT_SAMPLE_CPU : 0);
	f->c = (struct rec_ctx){.pt_st = common | MT_SAMPLE_IP, .dummy_st = common, .pid = f->run->pid,
				.tid = f->run->pid, .cpu = v->per_cpu ? 0 : (uint32_t)-1, .time = MT_SYNTH_TSC0 - 1};
	uint64_t config = CFG_PT | CFG_BRANCH | (timed ? CFG_TSC : 0) |
			  (v->timing == MT_SYNTH_MTC ? CFG_MTC : 0) | (v->noretcomp ? CFG_NORETCOMP : 0) |
			  (v->cyc ? CFG_CYC : 0) | (f->run->nptw ? CFG_PTW : 0) | (v->ptw_fup ? CFG_FUP_ON_PTW : 0) |
			  (v->power ? CFG_PWR_EVT : 0);
	uint64_t pt_flags = MT_ATTR_DISABLED | (v->kernel ? 0 : MT_ATTR_EXCLUDE_KERNEL) | MT_ATTR_EXCLUDE_HV |
			    MT_ATTR_ENABLE_ON_EXEC |
			    MT_ATTR_SAMPLE_ID_ALL | MT_ATTR_EXCLUDE_GUEST | (v->per_cpu ? MT_ATTR_INHERIT : 0);
	uint64_t dummy_flags = MT_ATTR_DISABLED | MT_ATTR_EXCLUDE_KERNEL | MT_ATTR_EXCLUDE_HV | MT_ATTR_MMAP |
			       MT_ATTR_COMM | MT_ATTR_TASK | MT_ATTR_ENABLE_ON_EXEC | MT_ATTR_SAMPLE_ID_ALL |
			       MT_ATTR_EXCLUDE_GUEST | MT_ATTR_MMAP2 | MT_ATTR_COMM_EXEC |
			       (v->per_cpu ? MT_ATTR_INHERIT | MT_ATTR_CONTEXT_SWITCH : 0);
	uint64_t ids[3] = {1, 2, 0};
	memcpy(f->ids, ids, sizeof ids);
	f->nattrs = 2;
	uint64_t bp_st = common | MT_SAMPLE_IP;
	attr_bytes(&f->attrs, MT_SYNTH_PT_TYPE, config, f->c.pt_st, pt_flags, 1);
	if (f->hit_ip) {
		/* -e mem:ADDR:x: PERF_TYPE_BREAKPOINT, bp_type X, bp_addr, bp_len 8 */
		attr_bytes(&f->attrs, 5, 0, bp_st, MT_ATTR_DISABLED | MT_ATTR_EXCLUDE_KERNEL | MT_ATTR_EXCLUDE_HV |
			   MT_ATTR_ENABLE_ON_EXEC | MT_ATTR_SAMPLE_ID_ALL | (v->per_cpu ? MT_ATTR_INHERIT : 0), 1);
		if (!f->attrs.oom) {
			uint8_t *a = f->attrs.b + 128;
			uint32_t bp_type = 4;
			uint64_t bp_len = 8;
			memcpy(a + 52, &bp_type, 4);
			memcpy(a + 56, &f->hit_ip, 8);
			memcpy(a + 64, &bp_len, 8);
		}
		f->ids[1] = 3;
		f->ids[2] = 2;
		f->nattrs = 3;
	}
	attr_bytes(&f->attrs, 1 /* software */, 9 /* dummy */, f->c.dummy_st, dummy_flags, 1);
}

/* The kernel's map and the run's objects as MMAP/MMAP2 records. */
static void map_records(struct synth_file *f)
{
	const struct mt_synth_run *run = f->run;
	const struct mt_synth_variant *v = f->v;
	struct out *d = &f->d;
	size_t at;
	if (v->kernel) {
		/* perf's kernel map: pid -1, pgoff = the address of _text */
		at = rec_begin(d, MT_REC_MMAP, 1 /* KERNEL */);
		u32(d, (uint32_t)-1);
		u32(d, 0);
		u64(d, KB);
		u64(d, 0x1000);
		u64(d, KB);
		padded_str(d, "[kernel.kallsyms]_text");
		struct rec_ctx ck = f->c;
		ck.pid = (uint32_t)-1;
		ck.tid = 0;
		trailer(d, &ck, f->c.dummy_st, 2);
		rec_end(d, at);
	}
	for (size_t i = 0; i < run->nmaps; i++) {
		const struct mt_synth_map *m = &run->maps[i];
		if (m->path[0] != '/')
			continue;
		bool bid = v->build_ids && m->build_id_size;
		at = rec_begin(d, MT_REC_MMAP2, 2 /* USER */ | (bid ? MT_MISC_MMAP_BUILD_ID : 0));
		u32(d, run->pid);
		u32(d, run->pid);
		u64(d, m->start);
		u64(d, m->len);
		u64(d, m->pgoff);
		if (bid) { /* {u8 size; u8 pad; u16 pad; u8 build_id[20]} replaces maj..ino_generation */
			uint8_t b[24] = {m->build_id_size};
			memcpy(b + 4, m->build_id, m->build_id_size);
			emit_bytes(d, b, sizeof b);
		} else {
			u32(d, m->maj);
			u32(d, m->min);
			u64(d, m->ino);
			u64(d, 0);
		}
		u32(d, m->prot);
		u32(d, 2 /* MAP_PRIVATE */);
		padded_str(d, m->path);
		trailer(d, &f->c, f->c.dummy_st, 2);
		rec_end(d, at);
	}
#undef d
}

/* The threads' sideband: FORK and COMM of the repeat's threads,
 * ITRACE_START, per cpu the context switches, and the breakpoint's samples. */
static void thread_records(struct synth_file *f)
{
	const struct mt_synth_run *run = f->run;
	const struct mt_synth_variant *v = f->v;
	const struct enc *x = &f->x;
	unsigned nthr = f->nthr, ncpu = f->ncpu;
	bool cpu_copies = f->cpu_copies;
	uint64_t hit_ip = f->hit_ip;
	struct out *d = &f->d;
	size_t at;
	for (unsigned th = 1; th < nthr; th++) {
		/* the repeat's other threads: made by the process, named as it is */
		struct rec_ctx ct = f->c;
		ct.tid = run->pid + th;
		at = rec_begin(d, MT_REC_FORK, 0);
		u32(d, run->pid); u32(d, run->pid); u32(d, run->pid + th); u32(d, run->pid);
		u64(d, 0);
		trailer(d, &ct, f->c.dummy_st, 2);
		rec_end(d, at);
		comm_record(d, &ct, 0, run->comm);
	}
	/* tracing starts for each thread; per cpu, with the first on each */
	for (unsigned th = 0; th < (cpu_copies ? ncpu : nthr); th++) {
		struct rec_ctx ct = f->c;
		ct.tid = run->pid + th;
		if (cpu_copies)
			ct.cpu = th;
		at = rec_begin(d, MT_REC_ITRACE_START, 0);
		u32(d, run->pid);
		u32(d, run->pid + th);
		trailer(d, &ct, f->c.pt_st, 1);
		rec_end(d, at);
	}
	if (v->per_cpu && !cpu_copies) {
		at = rec_begin(d, MT_REC_SWITCH, 0); /* switch IN of our task on cpu 0 */
		trailer(d, &f->c, f->c.dummy_st, 2);
		rec_end(d, at);
		/* Threads: FORK when each first runs (a thread keeps its
		 * creator's name: perf writes no COMM for it), and a CPU-wide
		 * switch OUT/IN pair at every switch, as perf -a writes them. */
		bool seen[MT_SYNTH_MAX_THREADS] = {true};
		for (size_t k = 0; k < x->nsw; k++) {
			const struct synth_switch *w = &x->sw[k];
			size_t th = 0;
			while (th + 1 < run->nthreads && run->threads[th] != w->next)
				th++;
			struct rec_ctx cs = f->c;
			cs.time = w->time;
			if (!seen[th]) {
				seen[th] = true;
				at = rec_begin(d, MT_REC_FORK, 0);
				u32(d, run->pid); u32(d, run->pid); u32(d, w->next); u32(d, run->pid);
				u64(d, w->time);
				cs.tid = w->next;
				trailer(d, &cs, f->c.dummy_st, 2);
				rec_end(d, at);
			}
			at = rec_begin(d, MT_REC_SWITCH_CPU_WIDE, MT_MISC_SWITCH_OUT);
			u32(d, run->pid); u32(d, w->next);
			cs.tid = w->prev;
			trailer(d, &cs, f->c.dummy_st, 2);
			rec_end(d, at);
			at = rec_begin(d, MT_REC_SWITCH_CPU_WIDE, 0);
			u32(d, run->pid); u32(d, w->prev);
			cs.tid = w->next;
			trailer(d, &cs, f->c.dummy_st, 2);
			rec_end(d, at);
		}
	}
	/* The breakpoint's samples: id, ip, pid/tid, time, cpu (sample_type order) */
	for (size_t k = 0; k < x->nhits; k++) {
		at = rec_begin(d, MT_REC_SAMPLE, 2 /* USER */);
		u64(d, 3);
		u64(d, hit_ip);
		u32(d, run->pid);
		u32(d, x->hits[k].tid);
		u64(d, x->hits[k].time);
		if (v->per_cpu) {
			u32(d, 0);
			u32(d, 0);
		}
		rec_end(d, at);
	}
#undef d
}

/* The records before the trace: attrs (pipe mode), AUXTRACE_INFO,
 * TIME_CONV, the COMM of the exec, maps and threads. */
static void sideband_records(struct synth_file *f)
{
	const struct mt_synth_variant *v = f->v;
	bool timed = v->timing != MT_SYNTH_TIMELESS;
	struct out *d = &f->d;
	if (v->pipe) {
		for (int i = 0; i < f->nattrs; i++) {
			size_t at = rec_begin(d, MT_REC_HEADER_ATTR, 0);
			emit_bytes(d, f->attrs.b + i * 128, 128);
			u64(d, f->ids[i]);
			rec_end(d, at);
		}
	}
	size_t at = rec_begin(d, MT_REC_AUXTRACE_INFO, 0);
	u32(d, 1); /* PERF_AUXTRACE_INTEL_PT */
	u32(d, 0);
	uint64_t priv[18] = {MT_SYNTH_PT_TYPE, 0, 1, 0, 1, CFG_TSC, CFG_NORETCOMP, v->per_cpu ? 2 : 0, v->snapshot,
			     v->per_cpu, CFG_MTC, 0x3c000, TSC_PER_CTC, 1, CFG_CYC, SYNTH_CBR, 0, 0};
	emit_bytes(d, priv, sizeof priv);
	rec_end(d, at);
	if (timed) {
		at = rec_begin(d, MT_REC_TIME_CONV, 0);
		u64(d, 0); u64(d, 1); u64(d, 0); u64(d, 0); u64(d, 0);
		uint8_t flags8[8] = {1, 0};
		emit_bytes(d, flags8, 8);
		rec_end(d, at);
	}
	comm_record(d, &f->c, MT_MISC_COMM_EXEC, f->run->comm);
	map_records(f);
	thread_records(f);
}

/* The AUX data: one buffer; or, for snapshot, two snapshots of a ring
 * where the second repeats the last 20% of the first; repeated, one block
 * (AUX, FINISHED_ROUND, AUXTRACE + payload) written repeat times between
 * the records before and after, or per cpu each copy's records made as it
 * is written. */
static void aux_records(struct synth_file *f)
{
	const struct mt_synth_run *run = f->run;
	const struct mt_synth_variant *v = f->v;
	uint64_t ptlen = f->ptlen, payload = f->payload;
	const struct enc *x = &f->x;
	struct out *d = &f->d, *block = &f->block;
	size_t at;
	struct aux_piece *piece = f->piece;
	piece[0] = (struct aux_piece){junk, f->jl, f->cut, ptlen, 0};
	f->npieces = 1;
	if (v->snapshot) {
		/* lengths in multiples of 8, as real snapshots (whole pages)
		 * need no AUXTRACE padding */
		uint64_t c1 = (ptlen * 6 / 10) & ~7ULL, c2 = ptlen - ((ptlen - ptlen * 4 / 10) & ~7ULL);
		piece[0] = (struct aux_piece){NULL, 0, 0, c1, 0};
		piece[1] = (struct aux_piece){NULL, 0, c2, ptlen, c2};
		if (v->gap) {
			piece[0] = (struct aux_piece){NULL, 0, 0, f->gap_off[0], 0};
			piece[1] = (struct aux_piece){NULL, 0, f->gap_off[1], ptlen, (f->gap_off[1] + 7) & ~7ULL};
		}
		f->npieces = 2;
	}
	f->period = f->cpu_copies ? mt_synth_cpu_period(x->tsc - MT_SYNTH_TSC0, v->timing == MT_SYNTH_MTC) : 0;
	if (f->cpu_copies) {
		f->split = d->n; /* each copy's records are made as it is written */
		f->npieces = 0;
	} else if (f->repeated) {
		uint64_t psize = (payload + 7) & ~7ULL;
		f->split = d->n;
		at = rec_begin(block, MT_REC_AUX, 0);
		u64(block, 0);
		u64(block, psize);
		u64(block, 0);
		trailer(block, &f->c, f->c.pt_st, 1);
		rec_end(block, at);
		at = rec_begin(block, MT_REC_FINISHED_ROUND, 0);
		rec_end(block, at);
		f->block_auxtrace = block->n;
		at = rec_begin(block, MT_REC_AUXTRACE, 0);
		u64(block, psize);
		u64(block, 0); /* offset, reference, idx, tid: per copy */
		u64(block, 0);
		u32(block, 0);
		u32(block, run->pid);
		u32(block, (uint32_t)-1);
		u32(block, 0);
		rec_end(block, at);
		emit_bytes(block, x->buf, ptlen);
		static const uint8_t zero[8];
		emit_bytes(block, zero, psize - ptlen);
		f->npieces = 0;
	}
	for (int k = 0; k < f->npieces; k++) {
		uint64_t plen = piece[k].prelen + (piece[k].to - piece[k].from);
		uint64_t psize = (plen + 7) & ~7ULL;
		at = rec_begin(d, MT_REC_AUX, 0);
		u64(d, piece[k].aux_off);
		u64(d, psize);
		u64(d, v->snapshot ? 2 /* OVERWRITE */ : 0);
		trailer(d, &f->c, f->c.pt_st, 1);
		rec_end(d, at);
		at = rec_begin(d, MT_REC_FINISHED_ROUND, 0);
		rec_end(d, at);
		f->auxtrace_at[k] = d->n;
		at = rec_begin(d, MT_REC_AUXTRACE, 0);
		u64(d, psize);
		u64(d, piece[k].aux_off); /* offset in the AUX area */
		u64(d, (uint64_t)k);      /* reference */
		u32(d, 0);                /* idx */
		u32(d, run->pid);         /* tid */
		u32(d, v->per_cpu ? 0 : (uint32_t)-1);
		u32(d, 0);
		rec_end(d, at);
		emit_bytes(d, piece[k].pre, piece[k].prelen);
		emit_bytes(d, x->buf + piece[k].from, piece[k].to - piece[k].from);
		static const uint8_t zero[8];
		emit_bytes(d, zero, psize - plen);
	}
#undef d
}

/* The file: a pipe-mode stream, a file-mode perf.data (header, attrs, ids,
 * data, feature table, AUXTRACE index), or the repeated copies streamed. */
static bool write_file(struct synth_file *f, FILE *data, struct mt_synth_result *res)
{
	bool ok;
	if (f->repeated) {
		struct thread_copies tc = {.block = &f->block, .auxtrace_at = f->block_auxtrace, .threads = f->nthr,
					   .contiguous = f->opts && f->opts->contiguous, .pid = f->run->pid};
		ok = write_repeated(data, &f->attrs, f->nattrs, f->ids, &f->d, f->split, f->repeat,
				    f->cpu_copies ? cpu_copy : thread_copy, f->cpu_copies ? (const void *)&f->cc : &tc);
		res->pt_bytes = f->payload * f->repeat;
		res->insns_traced *= f->repeat;
		res->psbs *= f->repeat;
		res->cpu_period = f->period;
	} else if (f->v->pipe) {
		uint64_t h[2];
		memcpy(h, "PERFILE2", 8);
		h[1] = 16;
		ok = fwrite(h, 16, 1, data) == 1 && fwrite(f->d.b, f->d.n, 1, data) == 1;
	} else {
		/* header | attrs (+ids section refs) | ids | data | feature table | AUXTRACE index */
		struct out o = {0};
		uint64_t data_off = file_header(&o, &f->attrs, f->nattrs, f->ids, f->d.n, false);
		emit_bytes(&o, f->d.b, f->d.n);
		feature_table(&o, data_off + f->d.n, (uint64_t)f->npieces, false);
		for (int k = 0; k < f->npieces; k++) {
			u64(&o, data_off + f->auxtrace_at[k]);
			u64(&o, 48);
		}
		ok = !o.oom && fwrite(o.b, o.n, 1, data) == 1;
		free(o.b);
	}
	return ok;
}

/* --- sampled LBR call stacks (the lbr variant) ---------------------------- */

/* perf's branch_sample_type for --call-graph lbr: USER, CALL_STACK,
 * NO_FLAGS, NO_CYCLES, HW_INDEX */
#define LBR_BRANCH_TYPE ((1u << 0) | (1u << 11) | (1u << 14) | (1u << 15) | (1u << 17))
#define PERF_CONTEXT_USER ((uint64_t)-512)

/* perf record -b -j any,u,save_type: USER, ANY, TYPE_SAVE, HW_INDEX */
#define BRSTACK_BRANCH_TYPE ((1u << 0) | (1u << 3) | (1u << 16) | (1u << 17))

/* ret: the return address when it is not the next instruction's (a
 * signal's handler returns to its restorer); 0: from's next */
struct lbr_call { uint64_t from, to, ret; };
/* a taken branch as the LBR holds it: its type perf's PERF_BR_* */
struct lbr_branch { uint64_t from, to; unsigned cycles, type; };
struct lbr_thread {
	struct lbr_call *v;
	size_t n, cap;
	bool to_pending; /* the last call's target is this thread's next step */
	/* brstack: the last taken branches (a ring), the branch met at the
	 * last step (taken or not: the next step says), instructions since
	 * the last taken branch, taken branches so far */
	struct lbr_branch ring[MT_SYNTH_LBR_DEPTH];
	struct lbr_branch cand;
	bool has_cand, has_sys; /* has_sys: the last step was a syscall at sys_ip */
	uint64_t sys_ip, sys_next;
	unsigned since;
	uint64_t taken;
	/* brstack's callchains (frame pointers') across signals: each handler
	 * running, where its sigreturn resumes and the calls active there */
	uint64_t sig_resume[16];
	size_t sig_depth[16];
	unsigned nsig;
};

/* Where the handler that begins at step i returns: the step after its
 * thread's first return at the handler's own depth (0: none). */
static uint64_t handler_return(const struct mt_synth_run *run, size_t i)
{
	size_t depth = 0;
	for (size_t j = i; j < run->nips; j++) {
		if (run->tids[j] != run->tids[i])
			continue;
		const struct mt_synth_insn *in = mt_synth_insn_at(run, run->ips[j]);
		if (!in)
			continue;
		if (in->cls == MT_IC_CALL || in->cls == MT_IC_CALL_IND) {
			depth++;
		} else if (in->cls == MT_IC_RET) {
			if (!depth) {
				for (size_t r = j + 1; r < run->nips; r++)
					if (run->tids[r] == run->tids[i])
						return run->ips[r];
				return 0;
			}
			depth--;
		}
	}
	return 0;
}

/* PERF_BR_* of an instruction class; 0 for one that is no branch. */
static unsigned perf_br_type(unsigned cls)
{
	switch (cls) {
	case MT_IC_JCC: return 1;      /* COND */
	case MT_IC_JMP: return 2;      /* UNCOND */
	case MT_IC_JMP_IND: return 3;  /* IND */
	case MT_IC_CALL: return 4;     /* CALL */
	case MT_IC_CALL_IND: return 5; /* IND_CALL */
	case MT_IC_RET: return 6;      /* RET */
	default: return 0;
	}
}

/* One sample: its record, and its truth (at its IP; frames outermost
 * first: each active call's site, oldest first, then the innermost call's
 * target, as perf lays out an LBR call stack; the IP itself with no call). */
static void lbr_sample(struct out *d, struct mt_events_writer *tw, const struct mt_synth_run *run, uint32_t tid,
		       uint64_t ip, uint64_t time, const struct lbr_thread *st)
{
	size_t n = st->n < MT_SYNTH_LBR_DEPTH ? st->n : MT_SYNTH_LBR_DEPTH;
	size_t at = rec_begin(d, MT_REC_SAMPLE, 2 /* USER */);
	u64(d, 2); /* IDENTIFIER: the id map_records' and comm_record's trailers give */
	u64(d, ip);
	u32(d, run->pid);
	u32(d, tid);
	u64(d, time);
	u64(d, MT_SYNTH_LBR_PERIOD);
	u64(d, 2); /* CALLCHAIN: the user context and the IP (no frame pointers walked) */
	u64(d, PERF_CONTEXT_USER);
	u64(d, ip);
	u64(d, n); /* BRANCH_STACK: the innermost calls, newest first */
	/* hw_idx: the newest entry's register, a call-stack LBR's top: each
	 * call pushes, each return pops (perf's --stitch-lbr reads it) */
	u64(d, st->n ? (st->n - 1) % MT_SYNTH_LBR_DEPTH : 0);
	for (size_t k = 0; k < n; k++) {
		const struct lbr_call *c = &st->v[st->n - 1 - k];
		u64(d, c->from);
		u64(d, c->to);
		u64(d, 0);
	}
	rec_end(d, at);
	if (!tw)
		return;
	static struct mt_kv kv[3 + MT_SYNTH_LBR_DEPTH + 1];
	static char vals[MT_SYNTH_LBR_DEPTH + 1][24];
	char period[24];
	snprintf(period, sizeof period, "%d", MT_SYNTH_LBR_PERIOD);
	unsigned m = 0;
	kv[m++] = (struct mt_kv){"event", "cycles"};
	kv[m++] = (struct mt_kv){"period", period};
	for (size_t k = n; k-- > 0;) {
		snprintf(vals[k + 1], sizeof vals[k + 1], "0x%" PRIx64, st->v[st->n - 1 - k].from);
		kv[m++] = (struct mt_kv){"frame", vals[k + 1]};
	}
	snprintf(vals[0], sizeof vals[0], "0x%" PRIx64, n ? st->v[st->n - 1].to : ip);
	kv[m++] = (struct mt_kv){"frame", vals[0]};
	struct mt_event ev = {.kind = MT_EV_SAMPLE, .time = time, .has_time = true, .pid = run->pid, .tid = tid,
			      .cpu = -1, .from = ip, .offset = MT_NO_OFFSET, .extra = kv,
			      .nextra = m};
	mt_events_write(tw, &ev);
}

/* A brstack sample at ip, the target of the thread's newest taken branch:
 * its record (the callchain as frame pointers give it: the IP, then each
 * active call's return address, innermost first; the branch stack newest
 * first) and its truth, the sample as mt-pt2events should write it. */
static void brstack_sample(struct out *d, struct mt_events_writer *tw, const struct mt_synth_run *run, uint32_t tid,
			   uint64_t ip, uint64_t time, const struct lbr_thread *st, bool notype)
{
	size_t nb = st->taken < MT_SYNTH_LBR_DEPTH ? (size_t)st->taken : MT_SYNTH_LBR_DEPTH;
	size_t nc = st->n < 200 ? st->n : 200;
	uint64_t rets[200];
	for (size_t k = 0; k < nc; k++) {
		const struct lbr_call *c = &st->v[st->n - 1 - k];
		const struct mt_synth_insn *in = mt_synth_insn_at(run, c->from);
		rets[k] = c->ret ? c->ret : c->from + (in ? in->len : 0);
	}
	size_t at = rec_begin(d, MT_REC_SAMPLE, 2 /* USER */);
	u64(d, 2); /* IDENTIFIER */
	u64(d, ip);
	u32(d, run->pid);
	u32(d, tid);
	u64(d, time);
	u64(d, MT_SYNTH_BRSTACK_PERIOD);
	u64(d, 2 + nc); /* CALLCHAIN */
	u64(d, PERF_CONTEXT_USER);
	u64(d, ip);
	for (size_t k = 0; k < nc; k++)
		u64(d, rets[k]);
	u64(d, nb); /* BRANCH_STACK, newest first */
	u64(d, (st->taken - 1) % MT_SYNTH_LBR_DEPTH); /* hw_idx: the newest entry's */
	struct mt_branch b[MT_SYNTH_LBR_DEPTH];
	for (size_t k = 0; k < nb; k++) {
		const struct lbr_branch *e = &st->ring[(st->taken - 1 - k) % MT_SYNTH_LBR_DEPTH];
		unsigned cyc = e->cycles < 0xffff ? e->cycles : 0xffff;
		u64(d, e->from);
		u64(d, e->to);
		unsigned type = notype ? 0 : e->type;
		u64(d, (1u << 1) /* predicted */ | (uint64_t)cyc << 4 | (uint64_t)type << 20);
		b[k] = (struct mt_branch){.from = e->from, .to = e->to, .predicted = true, .cycles = cyc, .type = type};
	}
	rec_end(d, at);
	if (!tw)
		return;
	static struct mt_kv kv[2 + 201 + 2 * MT_SYNTH_LBR_DEPTH];
	static char vals[201][24], btext[MT_SYNTH_LBR_DEPTH][96];
	char period[24];
	snprintf(period, sizeof period, "%d", MT_SYNTH_BRSTACK_PERIOD);
	unsigned m = 0;
	kv[m++] = (struct mt_kv){"event", "r20c4"};
	kv[m++] = (struct mt_kv){"period", period};
	for (size_t k = nc; k-- > 0;) {
		snprintf(vals[k + 1], sizeof vals[k + 1], "0x%" PRIx64, rets[k]);
		kv[m++] = (struct mt_kv){"frame", vals[k + 1]};
	}
	snprintf(vals[0], sizeof vals[0], "0x%" PRIx64, ip);
	kv[m++] = (struct mt_kv){"frame", vals[0]};
	for (size_t k = 0; k < nb; k++) {
		mt_branch_format(&b[k], btext[k], sizeof btext[k]);
		kv[m++] = (struct mt_kv){"branch", btext[k]};
		if (notype) {
			/* the type of the instruction at its source, as
			 * mt-pt2events reads it from the code: a SYSRET entry's
			 * source is the syscall */
			unsigned type = st->ring[(st->taken - 1 - k) % MT_SYNTH_LBR_DEPTH].type;
			kv[m++] = (struct mt_kv){"branch_type", mt_branch_type_name(type == 8 ? 7 : type)};
		}
	}
	struct mt_event ev = {.kind = MT_EV_SAMPLE, .time = time, .has_time = true, .pid = run->pid, .tid = tid,
			      .cpu = -1, .from = ip, .offset = MT_NO_OFFSET, .extra = kv,
			      .nextra = m};
	mt_events_write(tw, &ev);
}

/* The lbr variant: the run's user instructions, one every period sampled
 * as perf record -e cycles/period=P/ --call-graph lbr records them, each
 * thread's call stack followed through its calls and returns. Time: the
 * synthetic TSC of each instruction. */
static int write_lbr(const struct mt_synth_run *run, const struct mt_synth_variant *v,
		     const struct mt_synth_opts *opts, FILE *data, FILE *truth, struct mt_synth_result *res,
		     struct mt_err *err)
{
	if (run->nips == 0)
		return mt_err_set(err, MT_EUSAGE, "no instructions recorded");
	if (opts && (opts->repeat > 1 || opts->threads > 1 || opts->cpus > 1 || opts->hit_ip))
		return mt_err_set(err, MT_EUSAGE, "variant %s: a sampling recording, without --repeat, --threads, --cpus "
				  "or --hit", v->name);
	struct synth_file f = {.run = run, .v = v};
	uint64_t st = MT_SAMPLE_IDENTIFIER | MT_SAMPLE_IP | MT_SAMPLE_TID | MT_SAMPLE_TIME | MT_SAMPLE_PERIOD |
		      MT_SAMPLE_CALLCHAIN | MT_SAMPLE_BRANCH_STACK;
	f.c = (struct rec_ctx){.pt_st = st, .dummy_st = st & (MT_SAMPLE_IDENTIFIER | MT_SAMPLE_TID | MT_SAMPLE_TIME),
			       .pid = run->pid, .tid = run->pid, .cpu = (uint32_t)-1, .time = MT_SYNTH_TSC0 - 1};
	/* brstack: raw 0x20c4, Intel's BR_INST_RETIRED.NEAR_TAKEN */
	attr_bytes(&f.attrs, v->brstack ? 4 /* RAW */ : 0 /* HARDWARE */, v->brstack ? 0x20c4 : 0 /* cycles */, st,
		   MT_ATTR_DISABLED | MT_ATTR_INHERIT | MT_ATTR_EXCLUDE_KERNEL | MT_ATTR_EXCLUDE_HV | MT_ATTR_MMAP |
			   MT_ATTR_COMM | MT_ATTR_ENABLE_ON_EXEC | MT_ATTR_TASK | MT_ATTR_SAMPLE_ID_ALL |
			   MT_ATTR_EXCLUDE_GUEST | MT_ATTR_MMAP2 | MT_ATTR_COMM_EXEC,
		   v->brstack ? MT_SYNTH_BRSTACK_PERIOD : MT_SYNTH_LBR_PERIOD);
	if (!f.attrs.oom) {
		uint64_t bst = v->brstack_notype ? BRSTACK_BRANCH_TYPE & ~(1u << 16) /* no TYPE_SAVE */
			       : v->brstack ? BRSTACK_BRANCH_TYPE : LBR_BRANCH_TYPE;
		memcpy(f.attrs.b + 72, &bst, 8);
	}
	f.ids[0] = 2;
	f.nattrs = 1;
	struct mt_events_writer tw;
	if (truth) {
		if (mt_events_writer_init(&tw, truth))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		truth_head(&tw, run, v->name, "synthetic TSC");
	}
	comm_record(&f.d, &f.c, MT_MISC_COMM_EXEC, run->comm);
	map_records(&f);
	for (size_t th = 1; th < run->nthreads; th++) {
		struct rec_ctx ct = f.c;
		ct.tid = run->threads[th];
		size_t at = rec_begin(&f.d, MT_REC_FORK, 0);
		u32(&f.d, run->pid); u32(&f.d, run->pid); u32(&f.d, ct.tid); u32(&f.d, run->pid);
		u64(&f.d, f.c.time);
		trailer(&f.d, &ct, f.c.dummy_st, 2);
		rec_end(&f.d, at);
	}
	struct lbr_thread stacks[MT_SYNTH_MAX_THREADS] = {{0}};
	bool oom = false;
	uint64_t kernel_ticks = 0; /* brstack: the syscalls' so far */
	for (size_t i = 0; i < run->nips && !oom; i++) {
		size_t th = 0;
		while (th + 1 < run->nthreads && run->threads[th] != run->tids[i])
			th++;
		struct lbr_thread *t = &stacks[th];
		uint64_t ip = run->ips[i], time = MT_SYNTH_TSC0 + i * MT_SYNTH_TICKS_PER_INSN + kernel_ticks;
		if (t->to_pending) {
			t->v[t->n - 1].to = ip;
			t->to_pending = false;
		}
		const struct mt_synth_insn *in = mt_synth_insn_at(run, ip);
		if (v->brstack) {
			/* the last step's branch, taken when this step is not
			 * the next instruction (every branch but a Jcc always) */
			if (t->has_cand && (t->cand.type != 1 || ip != t->cand.to)) {
				t->cand.to = ip;
				t->ring[t->taken++ % MT_SYNTH_LBR_DEPTH] = t->cand;
				t->since = 0;
				if (t->taken % MT_SYNTH_BRSTACK_PERIOD == 0)
					brstack_sample(&f.d, truth ? &tw : NULL, run, run->tids[i], ip, time, t, v->brstack_notype);
			}
			if (t->has_sys && ip != t->sys_next) {
				/* the kernel returned elsewhere (a signal's handler,
				 * sigreturn): a branch into user space the LBR keeps,
				 * as SYSRET (a user-only LBR records branches by
				 * where they land) */
				t->ring[t->taken++ % MT_SYNTH_LBR_DEPTH] =
					(struct lbr_branch){.from = t->sys_ip, .to = ip, .cycles = t->since, .type = 8};
				t->since = 0;
				/* the callchain as frame pointers give it: a handler
				 * runs on top of the interrupted code (its frame at
				 * the resume point) as called from its restorer
				 * (where its return goes), and its sigreturn finds
				 * the interrupted calls again; not the LBR's call
				 * stack, which a handler's return pops as any return
				 * (the lbr variant) */
				if (t->nsig && ip == t->sig_resume[t->nsig - 1]) {
					t->n = t->sig_depth[--t->nsig];
				} else if (t->nsig < sizeof t->sig_resume / sizeof *t->sig_resume) {
					if (!mt_grow((void **)&t->v, &t->cap, t->n + 2, sizeof *t->v)) {
						oom = true;
						break;
					}
					t->sig_resume[t->nsig] = t->sys_next;
					t->sig_depth[t->nsig++] = t->n;
					t->v[t->n++] = (struct lbr_call){t->sys_ip, ip, 0};
					uint64_t restorer = handler_return(run, i);
					if (restorer)
						t->v[t->n++] = (struct lbr_call){t->sys_ip, ip, restorer};
				}
				if (t->taken % MT_SYNTH_BRSTACK_PERIOD == 0)
					brstack_sample(&f.d, truth ? &tw : NULL, run, run->tids[i], ip, time, t, v->brstack_notype);
			}
			t->has_cand = t->has_sys = false;
			t->since++;
			if (in && in->cls == MT_IC_SYSCALL) {
				t->has_sys = true;
				t->sys_ip = ip;
				t->sys_next = ip + in->len;
				/* its time in the kernel, as the PT variants' clock
				 * has it; the core's cycles count on meanwhile */
				kernel_ticks += MT_SYNTH_SYSCALL_TICKS;
				t->since += MT_SYNTH_SYSCALL_TICKS / MT_SYNTH_TICKS_PER_INSN;
			}
			unsigned type = in ? perf_br_type(in->cls) : 0;
			if (type) {
				/* a Jcc's fall-through kept in .to until the next step */
				t->cand = (struct lbr_branch){.from = ip, .to = ip + in->len, .cycles = t->since, .type = type};
				t->has_cand = true;
			}
		} else if (i % MT_SYNTH_LBR_PERIOD == MT_SYNTH_LBR_PERIOD - 1) {
			lbr_sample(&f.d, truth ? &tw : NULL, run, run->tids[i], ip, time, t);
		}
		if (in && (in->cls == MT_IC_CALL || in->cls == MT_IC_CALL_IND)) {
			if (!mt_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v)) {
				oom = true;
				break;
			}
			t->v[t->n++] = (struct lbr_call){ip, 0, 0};
			t->to_pending = true;
		} else if (in && in->cls == MT_IC_RET && t->n) {
			t->n--;
		}
	}
	for (size_t th = 0; th < MT_SYNTH_MAX_THREADS; th++)
		free(stacks[th].v);
	f.c.time = MT_SYNTH_TSC0 + run->nips * MT_SYNTH_TICKS_PER_INSN + kernel_ticks;
	size_t at = rec_begin(&f.d, MT_REC_EXIT, 0);
	u32(&f.d, run->pid); u32(&f.d, run->pid); u32(&f.d, run->pid); u32(&f.d, run->pid);
	u64(&f.d, f.c.time);
	trailer(&f.d, &f.c, f.c.dummy_st, 2);
	rec_end(&f.d, at);
	int rc = 0;
	if (truth) {
		struct mt_err we = {0};
		if (mt_events_writer_finish(&tw, &we))
			rc = mt_err_set(err, MT_EIO, "truth: %s", we.msg);
	}
	res->insns_traced = run->nips;
	if (!rc && (oom || f.d.oom || f.attrs.oom))
		rc = mt_err_set(err, MT_ENOMEM, "out of memory writing perf.data");
	if (!rc && data) {
		struct out o = {0};
		uint64_t data_off = file_header(&o, &f.attrs, f.nattrs, f.ids, f.d.n, true);
		emit_bytes(&o, f.d.b, f.d.n);
		feature_table(&o, data_off + f.d.n, 0, true);
		if (o.oom || fwrite(o.b, o.n, 1, data) != 1 || fflush(data) != 0)
			rc = mt_err_set(err, MT_EIO, "writing perf.data failed");
		free(o.b);
	}
	free(f.d.b);
	free(f.attrs.b);
	return rc;
}

static void synth_file_free(struct synth_file *f)
{
	mt_synth_enc_free(&f->x);
	free(f->d.b);
	free(f->attrs.b);
	free(f->block.b);
	free(f->cc.pt);
	free(f->cc.tsc_at);
}

int mt_synth_write(const struct mt_synth_run *run, const struct mt_synth_variant *v,
		   const struct mt_synth_opts *opts, FILE *data, FILE *truth, struct mt_synth_result *res,
		   struct mt_err *err)
{
	memset(res, 0, sizeof *res);
	if (v->lbr)
		return write_lbr(run, v, opts, data, truth, res, err);
	struct synth_file f = {.run = run, .v = v, .opts = opts};
	int rc = check_shape(&f, err);
	/* repeated: one call of main, a loop around the program's work */
	struct mt_synth_run part;
	size_t from, to;
	if (!rc && f.repeated && opts->loop && mt_synth_main_call(run, &from, &to)) {
		part = *run;
		part.ips = run->ips + from;
		part.tids = run->tids + from;
		part.nips = to - from + 1;
		part.end_next = run->ips[to + 1];
		part.ptw_base = run->ptw_base + from;
		f.run = run = &part;
	}
	if (!rc)
		rc = find_cuts(&f, err);
	if (!rc)
		rc = encode_with_truth(&f, truth, err);
	if (rc || !data) {
		res->pt_bytes = f.ptlen;
		synth_file_free(&f);
		return rc;
	}
	f.jl = v->wrap_at_psb ? sizeof junk : 0;
	f.payload = f.jl + (f.ptlen - f.cut);
	res->pt_bytes = f.payload;
	res->psbs = f.x.npsb;
	res->first_insn = f.from_insn;
	res->insns_traced = run->nips - f.from_insn - (f.gap_to - f.gap_from);
	res->hits = f.x.nhits;
	make_attrs(&f);
	sideband_records(&f);
	aux_records(&f);
	/* the end: EXIT, and a FINISHED_ROUND */
	f.c.time = f.x.tsc + 1 + (f.cpu_copies ? (f.repeat - 1) / f.ncpu * f.period : 0);
	size_t at = rec_begin(&f.d, MT_REC_EXIT, 0);
	u32(&f.d, run->pid); u32(&f.d, run->pid); u32(&f.d, run->pid); u32(&f.d, run->pid);
	u64(&f.d, f.c.time);
	trailer(&f.d, &f.c, f.c.dummy_st, 2);
	rec_end(&f.d, at);
	at = rec_begin(&f.d, MT_REC_FINISHED_ROUND, 0);
	rec_end(&f.d, at);
	f.cc = (struct cpu_copies){.ctx = f.c, .cpus = f.ncpu, .threads = f.nthr, .period = f.period,
				   .start = MT_SYNTH_TSC0 - 1, .end = f.x.tsc + 1, .contiguous = opts && opts->contiguous};
	if (f.cpu_copies && tsc_offsets(f.x.buf, f.ptlen, &f.cc.tsc_at, &f.cc.ntsc)) {
		synth_file_free(&f);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	if (f.cpu_copies) {
		f.cc.pt = f.x.buf; /* freed after the copies are written */
		f.cc.ptlen = f.ptlen;
		f.x.buf = NULL;
	}
	mt_synth_enc_free(&f.x);
	if (f.d.oom || f.attrs.oom || f.block.oom) {
		synth_file_free(&f);
		return mt_err_set(err, MT_ENOMEM, "out of memory writing perf.data");
	}
	bool ok = write_file(&f, data, res);
	synth_file_free(&f);
	if (!ok || fflush(data) != 0)
		return mt_err_set(err, MT_EIO, "writing perf.data failed");
	return 0;
}
