#include "trace/pttime.h"

#include <string.h>

enum { MTC_BITS = 8, TMA_CTC_BITS = 16, FCR_SHIFT = MT_PTTIME_FCR_SHIFT };

void mt_pttime_init(struct mt_pttime *t, const struct pt_config *config)
{
	memset(t, 0, sizeof *t);
	t->mtc_freq = config->mtc_freq;
	t->ctc_eax = config->cpuid_0x15_eax;
	t->ctc_ebx = config->cpuid_0x15_ebx;
	t->nom_freq = config->nom_freq;
}

void mt_pttime_restart(struct mt_pttime *t)
{
	memset(&t->time, 0, sizeof t->time);
	memset(&t->cal, 0, sizeof t->cal);
}

bool mt_pttime_mtc_ok(const struct mt_pttime *t)
{
	return t->ctc_eax && t->ctc_ebx && t->mtc_freq + MTC_BITS <= TMA_CTC_BITS;
}

uint32_t mt_pttime_ctc_wrap(const struct mt_pttime *t)
{
	return 1u << (t->mtc_freq + MTC_BITS);
}

void mt_pttime_tsc(struct mt_pttime *t, uint64_t tsc, bool in_psb)
{
	/* calibration: the cycles between two TSCs in PSB+, while there is
	 * no MTC to prefer (a TSC on its own may follow lost time) */
	uint64_t last = t->cal.tsc, cycles = t->cal.cyc_tsc;
	t->cal.tsc = tsc;
	t->cal.cyc_tsc = 0;
	if (in_psb && last && cycles && !t->cal.have_mtc) {
		uint64_t x = tsc < last ? tsc + (1ull << 56) : tsc; /* one wrap-around */
		t->cal.fcr = ((x - last) << FCR_SHIFT) / cycles;
	}
	t->time.tsc = t->time.base = tsc;
	t->time.have_tsc = true;
	t->time.have_tma = t->time.have_mtc = t->time.lost_cyc = false;
	t->time.ctc = 0;
	t->time.fc = 0;
}

void mt_pttime_tma(struct mt_pttime *t, uint16_t ctc, uint16_t fc)
{
	t->time.have_tma = true;
	t->time.base -= fc;
	t->time.fc += fc;
	/* TMA's CTC holds every bit MTC gives (mtc_ok): it counts as an MTC */
	t->time.have_mtc = true;
	t->time.ctc = t->time.ctc_cyc = ctc & (mt_pttime_ctc_wrap(t) - 1u);
}

/* CTC ticks from last to ctc (one wrap-around) in TSC ticks */
static uint64_t ctc_to_tsc(const struct mt_pttime *t, uint32_t ctc, uint32_t last)
{
	if (ctc < last)
		ctc += mt_pttime_ctc_wrap(t);
	return (uint64_t)(ctc - last) * t->ctc_ebx / t->ctc_eax;
}

void mt_pttime_mtc(struct mt_pttime *t, uint8_t payload)
{
	uint32_t ctc = (uint32_t)payload << t->mtc_freq;
	/* calibration: the cycles since the last MTC it used */
	if (!t->cal.have_mtc) {
		t->cal.have_mtc = true;
		t->cal.cyc_mtc = 0;
		t->cal.ctc = ctc;
	} else if (t->cal.cyc_mtc) {
		uint64_t fc = ctc_to_tsc(t, ctc, t->cal.ctc);
		t->cal.fcr = (fc << FCR_SHIFT) / t->cal.cyc_mtc;
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
	t->time.base += ctc_to_tsc(t, ctc, last);
	t->time.tsc = t->time.base;
}

/* A CYC: its cycles in TSC ticks at the calibrated ratio; the first since
 * the fast counter started over, less the cycles of the MTC periods it
 * spans before the current one. */
void mt_pttime_cyc(struct mt_pttime *t, uint64_t cycles)
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
		uint64_t before = (ctc_to_tsc(t, t->time.ctc, t->time.ctc_cyc) << FCR_SHIFT) / fcr;
		cycles = cycles < before ? 0 : cycles - before;
	}
	t->time.fc += (cycles * fcr) >> FCR_SHIFT;
	t->time.tsc = t->time.base + t->time.fc;
}

/* libipt's pt_tcal_header_cbr (in PSB+) and pt_tcal_update_cbr (a new
 * core ratio: the calibration starts over) */
void mt_pttime_cbr(struct mt_pttime *t, uint8_t ratio, bool in_psb)
{
	if (!in_psb)
		memset(&t->cal, 0, sizeof t->cal);
	if (t->nom_freq && ratio)
		t->cal.fcr = ((uint64_t)t->nom_freq << FCR_SHIFT) / ratio;
}
