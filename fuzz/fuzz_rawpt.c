/* fuzz_rawpt: raw Intel PT bytes (mt-pt2events --pt) decoded against a
 * fixed code image: the libxdc "foo" pages when MT_FUZZ_PAGES names them
 * (the make target does), else no code (packets are still parsed).
 * Differential: every input is decoded twice, once with mt's packet reader
 * (libipt's query decoder taking over where it must) and once with libipt's
 * query decoder reading everything; the two must give the same events (each
 * field, times and error offsets and messages included) and statistics,
 * else the harness aborts (except where mt's reader read a TRIG packet, or
 * packets it reads as libipt 2.1 does and 2.0.5 cannot; left an MWAIT
 * without an IP, which 2.0.5 binds to the next FUP; or handed 16- or
 * 32-bit code to libipt's block decoder, as both arms do: libipt 2.0.5's
 * block cache, kept across decodes and blind to the mode an entry was made
 * in, can make the second differ). The events are also written as text.
 * The decode is timed, with MTC's configuration set, so that time packets are
 * read by both and their times compared. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/events.h"
#include "trace/image.h"
#include "trace/ptdecode.h"

struct digest {
	struct mt_events_writer *w;
	uint64_t hash, n;
};

static void mix(struct digest *d, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		d->hash = (d->hash ^ b[i]) * 0x100000001b3ull; /* FNV-1a */
}

static void sink(void *ctx, const struct mt_event *ev)
{
	struct digest *d = ctx;
	/* cyc aside: libipt does not say cycles, mt's reader does */
	uint64_t f[] = {ev->time, ev->has_time, ev->pid, ev->tid, (uint64_t)ev->cpu, ev->kind, ev->from,
			ev->to, ev->insn, ev->offset, ev->cbr, ev->cond, ev->async};
	mix(d, f, sizeof f);
	if (ev->msg)
		mix(d, ev->msg, strlen(ev->msg) + 1);
	for (unsigned i = 0; i < ev->nextra; i++) { /* a PT note's values */
		mix(d, ev->extra[i].key, strlen(ev->extra[i].key) + 1);
		mix(d, ev->extra[i].val, strlen(ev->extra[i].val) + 1);
	}
	d->n++;
	if (d->w)
		mt_events_write(d->w, ev);
}

static void decode(const uint8_t *data, size_t size, struct mt_image *img, bool libipt_packets,
		   struct mt_events_writer *w, struct digest *d, struct mt_ptdec_stats *st)
{
	/* timed (perf time = TSC), MTC as perf records it by default
	 * (mtc_period=3) with a Skylake-like TSC/CTC ratio, CYC possible and
	 * a nominal ratio for its calibration: times compared too */
	struct mt_ptdec_config cfg = {.all_branches = true, .want_power = true, .libipt_packets = libipt_packets,
				      .timed = true, .conv = {.time_mult = 1}, .mtc_freq = 3, .ctc_n = 216, .ctc_d = 2,
				      .nom_freq = 24, .cyc = true};
	*d = (struct digest){.w = w, .hash = 0xcbf29ce484222325ull};
	struct mt_ptdec_stream s = {.data = data, .len = size, .cpu = -1, .sink = sink, .sink_ctx = d};
	struct mt_err err = {0};
	mt_ptdec_decode(&s, img, &cfg, st, &err);
}

/* a differing input's events and statistics, one decoder's, on stderr */
static void dump(const uint8_t *data, size_t size, struct mt_image *img, bool libipt_packets)
{
	struct mt_events_writer w;
	if (mt_events_writer_init(&w, stderr))
		return;
	fprintf(stderr, "fuzz_rawpt: %s:\n", libipt_packets ? "libipt's query decoder" : "mt's packet reader");
	struct digest d;
	struct mt_ptdec_stats st = {0};
	decode(data, size, img, libipt_packets, &w, &d, &st);
	struct mt_err err = {0};
	mt_events_writer_finish(&w, &err);
	fflush(stderr);
	fprintf(stderr, "fuzz_rawpt: stats: insns=%llu errors=%llu handed_over=%llu trig=%llu unbound_mwait=%llu "
		"libipt21=%llu\n",
		(unsigned long long)st.insns, (unsigned long long)st.errors, (unsigned long long)st.handed_over,
		(unsigned long long)st.trig, (unsigned long long)st.unbound_mwait,
		(unsigned long long)st.libipt21);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_image img;
	struct mt_err err = {0};
	if (mt_image_init(&img, "fuzz", &err))
		return 0;
	const char *pages = getenv("MT_FUZZ_PAGES");
	if (pages)
		mt_image_add_pageset(&img, pages, &err);
	struct mt_events_writer w;
	if (!mt_events_writer_init(&w, fuzz_devnull())) {
		struct digest mine, theirs;
		struct mt_ptdec_stats st_mine = {0}, st_theirs = {0};
		decode(data, size, &img, false, &w, &mine, &st_mine);
		decode(data, size, &img, true, NULL, &theirs, &st_theirs);
		st_mine.handed_over = 0;
		/* libipt 2.0.5 knows no TRIG packet (libipt 2.2's) nor Event
		 * Trace (2.1's): where mt's reader read one, libipt's answer is
		 * an error, not the oracle;
		 * nor where an MWAIT was left without an IP (2.0.5's binding,
		 * fixed in libipt 2.1, is not mt's) */
		uint64_t unbound = st_mine.unbound_mwait;
		st_mine.unbound_mwait = 0;
		if (!st_mine.trig && !st_mine.libipt21 && !st_mine.blocks_handed && !unbound &&
		    (mine.hash != theirs.hash || mine.n != theirs.n || memcmp(&st_mine, &st_theirs, sizeof st_mine))) {
			fprintf(stderr, "fuzz_rawpt: mt's packet reader and libipt's query decoder differ "
				"(%llu vs %llu events)\n", (unsigned long long)mine.n, (unsigned long long)theirs.n);
			dump(data, size, &img, false);
			dump(data, size, &img, true);
			abort();
		}
		struct mt_err we = {0};
		mt_events_writer_finish(&w, &we);
	}
	mt_image_fini(&img);
	return 0;
}
