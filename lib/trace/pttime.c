#include "trace/pttime.h"

#include <string.h>

enum { MTC_BITS = MT_PTTIME_MTC_BITS, TMA_CTC_BITS = 16, FCR_SHIFT = MT_PTTIME_FCR_SHIFT };

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

/* libipt's pt_tcal_header_cbr (in PSB+) and pt_tcal_update_cbr (a new
 * core ratio: the calibration starts over) */
void mt_pttime_cbr(struct mt_pttime *t, uint8_t ratio, bool in_psb)
{
	if (!in_psb)
		memset(&t->cal, 0, sizeof t->cal);
	if (t->nom_freq && ratio)
		t->cal.fcr = ((uint64_t)t->nom_freq << FCR_SHIFT) / ratio;
}
