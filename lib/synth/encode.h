/* encode: the recorded flow as Intel PT (libipt's encoder), with the
 * ground truth written beside it, the synthetic kernel's path through
 * syscalls, thread switches and breakpoint hits noted for the perf.data's
 * sideband. Internal to synth/. */
#ifndef MT_SYNTH_ENCODE_H
#define MT_SYNTH_ENCODE_H

#include <intel-pt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"
#include "stream/events.h"
#include "synth/synth.h"
#include "trace/x86.h"

/* The PT event's config bits, and the time the trace keeps */
#define TSC_PER_CTC 100
#define CFG_PT 0x1ULL
#define CFG_CYC 0x2ULL
#define SYNTH_CBR 20 /* core:bus ratio; also the max non-turbo ratio, so 1 cycle = 1 TSC tick */
#define SYNTH_TURBO_CBR 28 /* turbo: 1.4 cycles per TSC tick */
#define CFG_MTC 0x200ULL
#define CFG_TSC 0x400ULL
#define CFG_NORETCOMP 0x800ULL
#define CFG_BRANCH 0x2000ULL
#define CFG_FUP_ON_PTW 0x20ULL
#define CFG_PTW 0x1000ULL
#define CFG_PWR_EVT 0x10ULL

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
	/* the CYC payloads written, and as of the last packet a decoder reads
	 * for a branch or an event (a TNT's first bit, an IP packet): the
	 * cycles it has by then (the CYCs before a packet time it) */
	uint64_t cyc_written, cyc_marked;
	bool in_psb;         /* no CYC inside PSB+ */
	uint64_t *psb_offsets, *psb_insn;
	size_t npsb, cappsb;
	uint64_t *nxt;       /* per step: the next IP of the same thread, 0: none */
	struct synth_switch *sw; /* thread switches, for the perf.data sideband */
	size_t nsw, capsw;
	size_t ptw_at;       /* the next of the run's PTWRITEs */
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

/* The ground truth being written (pass 2 of mt_synth_write). */
struct truth {
	struct mt_events_writer *w;
	uint32_t pid, tid;
	int32_t cpu;
	uint64_t since;
	bool on;             /* instructions are in the trace (wrap: after the cut) */
	const uint64_t *cyc_marked; /* the encoder's (enc.cyc_marked) */
	uint64_t cyc_at_event;      /* ... as of the last truth event */
};


/* Encodes the run; in pass 2 (truth != NULL) also writes the truth, turning
 * it on at insn index `from_insn`, and off over [gap_from, gap_to) when
 * gap_to is not 0 (a snapshot event marks where it resumes). */
int mt_synth_encode(const struct mt_synth_run *run, const struct mt_synth_variant *v, struct enc *x,
		    struct truth *t, uint64_t from_insn, uint64_t gap_from, uint64_t gap_to, uint64_t hit_ip,
		    struct mt_err *err);
void mt_synth_enc_free(struct enc *x);

#endif
