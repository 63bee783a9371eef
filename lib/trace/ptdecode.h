/* ptdecode: Intel PT → mt events: ptquery reads the packets (mt, or libipt's
 * query decoder), mt walks the code; or libipt's block decoder does both.
 *
 * Decodes one PT stream (a "queue": one CPU or one thread) against an image
 * and hands events to a sink. Decode errors never stop the walk: each becomes
 * an `error` event and decoding resynchronises at the next PSB. */
#ifndef MT_PTDECODE_H
#define MT_PTDECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/events.h"
#include "trace/image.h"

/* perf's TSC → perf-time conversion (perf_event_mmap_page fields). */
struct mt_tsc_conv {
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	bool short_fmt;            /* cap_user_time_short */
	uint64_t time_cycles, time_mask;
};

uint64_t mt_tsc_to_perf_time(const struct mt_tsc_conv *c, uint64_t tsc);

struct mt_ptdec_config {
	bool timed;                /* convert TSC to perf time; otherwise times are '-' */
	struct mt_tsc_conv conv;
	uint32_t family, model, stepping; /* 0: unknown; enables errata otherwise */
	uint8_t mtc_freq;          /* config mtc_period */
	uint32_t ctc_n, ctc_d;     /* CPUID 0x15 EBX/EAX */
	uint8_t nom_freq;          /* max non-turbo ratio */
	bool cyc;                  /* CYC packets may be in the trace (cycle-accurate mode, or not known) */
	bool all_branches;         /* every taken branch; else only calls, returns and jumps that leave a function */
	bool want_power;           /* CBR changes as power events */
	/* walk the code with libipt's block decoder instead of mt's own walk
	 * (libipt's query decoder for the packets, the image's block cache
	 * for the code): slower, kept to compare and for 16/32-bit code */
	bool libipt_blocks;
	/* mt's walk: libipt's query decoder reads every packet, instead of
	 * mt reading those of ordinary traces itself (kept to compare) */
	bool libipt_packets;
	/* mt's walk ends where the packets end, as ptxed ends it (a raw --pt
	 * trace: after the branch or interrupt that took the last packet, or
	 * a PSB+ with nothing but status after it); otherwise it walks on through code that needs no packet (a
	 * snapshot's buffer ends while the program runs on: its last direct
	 * calls and jumps are real, the synthesized truth shows) */
	bool stop_at_end;
	/* the recording's address filters (IA32_RTIT_CTL ADDRn_CFG: 1
	 * filter, 2 stop; 0 unused) and their ranges, for libipt and for
	 * erratum SKL014 (a TIP.PGD without IP where a direct branch left the
	 * filtered range) */
	struct { uint8_t cfg; uint64_t from, to; } addr[4];
};

/* Parses N:FROM-TO[:filter|stop] (mt-pt2events --filter-addr) into cfg;
 * false when malformed. */
bool mt_ptdec_parse_filter(const char *s, struct mt_ptdec_config *cfg);

/* Thread attribution: called with the current perf time (0 if timeless)
 * whenever an event is about to be emitted; fills pid/tid. */
typedef void mt_ptdec_who_fn(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid);
typedef void mt_ptdec_sink_fn(void *ctx, const struct mt_event *ev);

struct mt_ptdec_stats {
	uint64_t pt_bytes, insns, errors;
	uint64_t by_kind[MT_EV_KIND_COUNT];
	/* segments cut at PSBs (mt_ptperf): pieces decoded, and pieces
	 * decoded again because their cut did not stitch */
	uint64_t pieces, redone;
	/* why the first cut that did not stitch did not (empty: none), and
	 * where that cut is in its segment */
	char redo_why[192];
	uint64_t redo_at;
	/* bytes of PT mt's packet reader left to libipt's query decoder (from
	 * the PSB before the first packet it does not read) */
	uint64_t handed_over;
	/* TRIG packets mt's packet reader read (libipt 2.2's; Debian's 2.0.5
	 * knows none: the fuzz differential leaves such input out). A piece
	 * decoded again counts its own again. */
	uint64_t trig;
	/* MWAITs mt's packet reader left without an IP at an EXSTOP without
	 * one (libipt HEAD's reading; 2.0.5 binds them to the next FUP) */
	uint64_t unbound_mwait;
	/* packets and bindings mt's packet reader read as libipt 2.1 reads
	 * them, which Debian's 2.0.5 cannot: Event Trace's CFE and EVD, a
	 * MODE.Exec bound to the FUP after it, or told after the far branch
	 * whose TIP follows it */
	uint64_t libipt21;
	/* bytes libipt's block decoder decoded where mt's walk met 16- or
	 * 32-bit code (in handed_over too) */
	uint64_t blocks_handed;
};

struct mt_ptdec_stream {
	const uint8_t *data;
	size_t len;
	int32_t cpu;               /* -1: per-thread */
	mt_ptdec_who_fn *who;
	void *who_ctx;
	mt_ptdec_sink_fn *sink;
	void *sink_ctx;
	/* optional: called now and then with the bytes of data decoded so far */
	void (*progress)(void *ctx, size_t done);
	void *progress_ctx;
	/* A piece of a longer stream (decoded in parallel, then stitched):
	 * start, when nonzero, is the offset of a PSB to begin at (else the
	 * first PSB found); stop_after, when nonzero, ends the decode once it
	 * has read up to that offset. mark_insns, when set and UINT64_MAX,
	 * receives the instructions decoded before the first PSB after offset
	 * mark_psb (where the next piece begins). */
	size_t start, stop_after, mark_psb;
	uint64_t *mark_insns;
	/* head_end, when nonzero: *head_passed is set once the decode has
	 * read up to that offset (checked every 256 blocks, as stop_after) */
	size_t head_end;
	bool *head_passed;
	/* added to the offsets error events report: where data lies in a
	 * longer stream held in memory only in part */
	uint64_t offset_base;
};

/* Returns 0, or a negative code only for failures outside the trace itself
 * (out of memory, bad configuration). */
/* Adds from's counts of what the packet reader did (handed_over, trig,
 * unbound_mwait, libipt21, blocks_handed) to to's. */
void mt_ptdec_stats_add_reader(struct mt_ptdec_stats *to, const struct mt_ptdec_stats *from);

int mt_ptdec_decode(const struct mt_ptdec_stream *s, struct mt_image *img,
		    const struct mt_ptdec_config *cfg, struct mt_ptdec_stats *stats,
		    struct mt_err *err);

#endif
