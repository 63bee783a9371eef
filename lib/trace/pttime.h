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
uint32_t mt_pttime_ctc_wrap(const struct mt_pttime *t);

/* The timing packets, in the trace's order: TSC (in_psb: in a PSB+), TMA
 * (its CTC and FC fields), MTC (its payload byte), CYC (its cycles), CBR
 * (its ratio: the calibration starts over from the nominal ratio where
 * it is known; in a PSB+ the calibration is kept, as libipt keeps it). */
void mt_pttime_tsc(struct mt_pttime *t, uint64_t tsc, bool in_psb);
void mt_pttime_tma(struct mt_pttime *t, uint16_t ctc, uint16_t fc);
void mt_pttime_mtc(struct mt_pttime *t, uint8_t payload);
void mt_pttime_cyc(struct mt_pttime *t, uint64_t cycles);
void mt_pttime_cbr(struct mt_pttime *t, uint8_t ratio, bool in_psb);

#endif
