/* pttime: the time Intel PT's timing packets tell, as libipt's pt_time and
 * pt_tcal keep it: a TSC is the full time; TMA (in PSB+, after its TSC)
 * gives the CTC and fast counter at that TSC; each MTC then adds the CTC
 * ticks since the last, in TSC ticks (MTCs between a TSC and its TMA are
 * ignored); each CYC adds its cycles at the calibrated ratio (fast counter
 * ticks per cycle: from the cycles between two MTCs, or two TSCs in PSB+,
 * or the nominal ratio over a core:bus ratio) until the next MTC or TSC.
 * mt's packet reader (ptquery.c) hands each timing packet here. */
#ifndef MT_PTTIME_H
#define MT_PTTIME_H

#include <intel-pt.h>
#include <stdbool.h>
#include <stdint.h>

struct mt_pttime {
	/* the clock (the recording's configuration) */
	unsigned mtc_freq, nom_freq;
	uint32_t ctc_eax, ctc_ebx; /* CPUID 0x15: TSC / CTC = ebx / eax */
	/* the time, all of it starting over at a sync: */
	struct {
		uint64_t tsc;        /* now */
		uint64_t base;       /* the last TSC or MTC (less TMA's fast counter) */
		uint32_t ctc;        /* the CTC as of base */
		uint64_t fc;         /* CYC: the fast counter (TSC ticks) since base */
		uint32_t ctc_cyc;    /* the CTC when fc last started over */
		bool have_tsc, have_tma, have_mtc;
		bool lost_cyc;       /* a CYC lost for want of a calibration since */
	} time;
	/* the calibration: fast counter per cycle (<< MT_PTTIME_FCR_SHIFT)
	 * from the cycles between two MTCs (or TSCs), or the nominal ratio
	 * over a CBR */
	struct {
		uint64_t fcr, cyc_mtc, cyc_tsc, tsc;
		uint32_t ctc;
		bool have_mtc;
	} cal;
	/* core cycles: the CYC packets' payloads summed since init */
	uint64_t cycles;
};

#define MT_PTTIME_FCR_SHIFT 8 /* libipt's fast-counter ratio: fixed point, 8 fraction bits */
#define MT_PTTIME_MTC_BITS 8  /* an MTC's payload: CTC bits mtc_freq and up */

/* Readies t for a trace recorded with config's clock (mtc_freq,
 * cpuid_0x15_eax/ebx, nom_freq): no time yet. */
void mt_pttime_init(struct mt_pttime *t, const struct pt_config *config);
/* The time and its calibration start over (a sync: libipt's decoder resets
 * both); the cycles counted so far stay. */
void mt_pttime_restart(struct mt_pttime *t);
/* Whether MTC and TMA packets can be read on this clock: a CTC ratio, and
 * MTC's 8 bits above mtc_freq within TMA's 16 bits of CTC. */
bool mt_pttime_mtc_ok(const struct mt_pttime *t);
/* The CTC span of MTC packets (their 8 bits above mtc_freq), after which
 * the CTC they carry wraps. */
static inline uint32_t mt_pttime_ctc_wrap(const struct mt_pttime *t)
{
	return 1u << (t->mtc_freq + MT_PTTIME_MTC_BITS);
}

/* The timing packets, in the trace's order: TSC (in_psb: in a PSB+), TMA
 * (its CTC and FC fields), MTC (its payload byte), CYC (its cycles), CBR
 * (its ratio: the calibration starts over from the nominal ratio where
 * it is known; in a PSB+ the calibration is kept, as libipt keeps it). */
void mt_pttime_tsc(struct mt_pttime *t, uint64_t tsc, bool in_psb);
void mt_pttime_tma(struct mt_pttime *t, uint16_t ctc, uint16_t fc);
void mt_pttime_cbr(struct mt_pttime *t, uint8_t ratio, bool in_psb);

/* MTC and CYC (one every few packets of a timed trace: inline) */

/* CTC ticks from last to ctc (one wrap-around) in TSC ticks */
static inline uint64_t mt_pttime_ctc_to_tsc(const struct mt_pttime *t, uint32_t ctc, uint32_t last)
{
	if (ctc < last)
		ctc += mt_pttime_ctc_wrap(t);
	return (uint64_t)(ctc - last) * t->ctc_ebx / t->ctc_eax;
}

static inline void mt_pttime_mtc(struct mt_pttime *t, uint8_t payload)
{
	uint32_t ctc = (uint32_t)payload << t->mtc_freq;
	/* calibration: the cycles since the last MTC it used */
	if (!t->cal.have_mtc) {
		t->cal.have_mtc = true;
		t->cal.cyc_mtc = 0;
		t->cal.ctc = ctc;
	} else if (t->cal.cyc_mtc) {
		uint64_t fc = mt_pttime_ctc_to_tsc(t, ctc, t->cal.ctc);
		t->cal.fcr = (fc << MT_PTTIME_FCR_SHIFT) / t->cal.cyc_mtc;
		t->cal.cyc_mtc = 0;
		t->cal.ctc = ctc;
	}
	if (t->time.have_tsc && !t->time.have_tma)
		return;
	uint32_t last = t->time.ctc;
	bool had_mtc = t->time.have_mtc;
	if (t->time.fc || t->time.lost_cyc || !had_mtc)
		t->time.ctc_cyc = ctc; /* the fast counter starts over here */
	t->time.have_mtc = true;
	t->time.ctc = ctc;
	t->time.fc = 0;
	t->time.lost_cyc = false;
	if (!had_mtc)
		return; /* the first, with no TMA: where in its period tracing began is unknown */
	t->time.base += mt_pttime_ctc_to_tsc(t, ctc, last);
	t->time.tsc = t->time.base;
}

/* A CYC: its cycles in TSC ticks at the calibrated ratio; the first since
 * the fast counter started over, less the cycles of the MTC periods it
 * spans before the current one. */
static inline void mt_pttime_cyc(struct mt_pttime *t, uint64_t cycles)
{
	t->cycles += cycles;
	t->cal.cyc_mtc += cycles;
	t->cal.cyc_tsc += cycles;
	uint64_t fcr = t->cal.fcr;
	if (!fcr) {
		t->time.lost_cyc = true;
		return;
	}
	if (!t->time.fc && t->time.ctc != t->time.ctc_cyc) {
		uint64_t before = (mt_pttime_ctc_to_tsc(t, t->time.ctc, t->time.ctc_cyc) << MT_PTTIME_FCR_SHIFT) / fcr;
		cycles = cycles < before ? 0 : cycles - before;
	}
	t->time.fc += (cycles * fcr) >> MT_PTTIME_FCR_SHIFT;
	t->time.tsc = t->time.base + t->time.fc;
}

#endif
