#include "trace/ptscan.h"
#include "trace/ptpacket.h"

#include <stdlib.h>
#include <string.h>

enum { PSB_EVENTS_MAX = MT_PTQ_PSB_EVENTS };

/* Notes a PSB the scan met (a packet boundary); false when out of memory. */
static bool note_psb(struct mt_ptq *q, const uint8_t *p)
{
	if (q->npsbs == q->cappsbs) {
		size_t cap = q->cappsbs * 2;
		uint64_t *v = q->psbs == q->psbs_inline ? malloc(cap * sizeof *v) : realloc(q->psbs, cap * sizeof *v);
		if (!v)
			return false;
		if (q->psbs == q->psbs_inline)
			memcpy(v, q->psbs_inline, sizeof q->psbs_inline);
		q->psbs = v;
		q->cappsbs = cap;
	}
	q->psbs[q->npsbs++] = (uint64_t)(p - q->begin);
	return true;
}

/* Notes a packet the scan found damaged where libipt cannot take over
 * (Event Trace's): mt's reader fails there with err. False when out of
 * memory. */
static bool note_bad(struct mt_ptq *q, const uint8_t *p, int err)
{
	if (q->nbad == q->capbad) {
		size_t cap = q->capbad ? q->capbad * 2 : 8;
		struct mt_ptq_bad *v = realloc(q->bad, cap * sizeof *v);
		if (!v)
			return false;
		q->bad = v;
		q->capbad = cap;
	}
	q->bad[q->nbad++] = (struct mt_ptq_bad){(uint64_t)(p - q->begin), err};
	return true;
}

const uint8_t *mt_ptq_next_bad(const struct mt_ptq *q, const uint8_t *p, int *err)
{
	uint64_t off = (uint64_t)(p - q->begin);
	for (size_t i = 0; i < q->nbad; i++)
		if (q->bad[i].off >= off) {
			*err = q->bad[i].err;
			return q->begin + q->bad[i].off;
		}
	return NULL;
}

bool mt_ptq_scanned_psb(const struct mt_ptq *q, const uint8_t *p)
{
	uint64_t off = (uint64_t)(p - q->begin);
	size_t lo = 0, hi = q->npsbs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (q->psbs[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < q->npsbs && q->psbs[lo] == off;
}

/* Where libipt takes over when the scan stops: the PSB before (last);
 * for a timed decode, the last whose PSB+ starts with a TSC, which sets
 * libipt's time as reading on would (timed); with CYC, the first, as
 * libipt's CYC calibration carries on over PSBs. A CYC in a trace recorded
 * without (damage) is timed by that calibration too: libipt has it from
 * the core:bus ratios of earlier PSB+s, so it reads from the first. */
static const uint8_t *hand_over_psb(const struct mt_ptq *q, const uint8_t *first, const uint8_t *timed,
				    const uint8_t *last, bool at_cyc)
{
	if (!q->timed)
		return last;
	return q->cyc || at_cyc ? first : timed;
}

const uint8_t *mt_ptq_scan(struct mt_ptq *q, const uint8_t *p)
{
	const uint8_t *end = q->end;
	const uint8_t *first_psb = p, *last_psb = p, *timed_psb = p;
	bool in_psb = false, psb_first = false, psb_tsc = false, psb_tma = false;
	unsigned psb_events = 0, ipc, fup_notes = 0, fup_mwaits = 0, evd_has = 0, evd_bit = 0;
	uint64_t cycles;
	while (p < end) {
		uint8_t b = p[0];
		int n = 0, et_err = 0;
		bool newer = false; /* a packet libipt 2.0.5 cannot read as 2.1/2.2 do */
		if (in_psb && psb_first && b != OP_PAD) {
			psb_first = false;
			if (b == OP_TSC)
				timed_psb = last_psb;
		}
		if (b == OP_PAD) {
			n = 1;
		} else if (b == OP_EXT) {
			uint8_t b1 = end - p >= 2 ? p[1] : 0;
			if (b1 == EXT_PSB && mt_pkt_is_psb(p, end) && !in_psb && fup_notes) {
				n = 0; /* notes still waiting for their FUP: libipt's to read */
			} else if (b1 == EXT_PSB && mt_pkt_is_psb(p, end) && !in_psb && note_psb(q, p)) {
				last_psb = p;
				in_psb = psb_first = true;
				psb_tsc = psb_tma = false;
				psb_events = fup_notes = fup_mwaits = evd_has = 0;
				n = PSB_SIZE;
			} else if (b1 == EXT_PSBEND && in_psb) {
				in_psb = false;
				n = PSBEND_SIZE;
			} else if (b1 == EXT_CBR && end - p >= CBR_SIZE && p[2] && /* libipt refuses ratio 0 */
				   (!in_psb || psb_events++ < PSB_EVENTS_MAX)) {
				n = CBR_SIZE;
			} else if (b1 == EXT_PIP && end - p >= PIP_SIZE && (!in_psb || psb_events++ < PSB_EVENTS_MAX)) {
				n = PIP_SIZE; /* a new CR3: in PSB+, or on its own */
			} else if (b1 == EXT_VMCS && end - p >= VMCS_SIZE && in_psb && psb_events++ < PSB_EVENTS_MAX) {
				n = VMCS_SIZE; /* the VMCS base, in PSB+ */
			} else if (b1 == EXT_TNT64 && !in_psb && end - p >= TNT64_SIZE && mt_pkt_load_le(p + 2, 6)) {
				n = TNT64_SIZE;
			} else if (b1 == EXT_EVD && !in_psb) {
				newer = true;
				/* one of each type before its CFE (a second is
				 * bad context to libipt; a CR2 comes first) */
				n = mt_pkt_evd_size(p, end, &evd_bit);
				if (!n)
					et_err = -pte_eos;
				else if ((evd_has & evd_bit) || (evd_has && (evd_bit | evd_has) & MT_CFE_CR2))
					et_err = -pte_bad_context;
				evd_has |= evd_bit;
			} else if (!in_psb) {
				bool fup;
				n = mt_pkt_note_size(p, end, &fup);
				if (b1 == EXT_CFE) {
					newer = true;
					/* the EVDs before describe an interrupt (CR2) or
					 * a VM exit (VMXQ, VMXR): another CFE is bad
					 * context to libipt */
					unsigned type = end - p > 2 ? p[2] & CFE_TYPE : 0;
					if (end - p < CFE_SIZE)
						et_err = -pte_eos;
					else if (!n)
						et_err = -pte_bad_packet; /* RSM, SIPI with an IP */
					else if (evd_has && !(evd_has == MT_CFE_CR2 ? type == CFE_INTR
										: type == CFE_VMEXIT || type == CFE_VMEXIT_INTR))
						et_err = -pte_bad_context;
					evd_has = 0;
				}
				if (n && b1 == EXT_EXSTOP && fup_mwaits) {
					/* it releases the MWAITs before it: mt's reader
					 * does that only when they are all that waits */
					if (fup_notes != fup_mwaits)
						n = 0;
					fup_notes = fup_mwaits = 0;
				}
				if (n && fup) {
					fup_mwaits += b1 == EXT_MWAIT;
					if (fup_notes++ == MT_PTQ_FUP_NOTES)
						n = 0; /* more than mt keeps: libipt reads them */
				}
			} else if (b1 == EXT_TMA && q->mtc_ok && in_psb && psb_tsc && !psb_tma && end - p >= TMA_SIZE &&
				   !(p[6] & 0xfe) && !p[4]) {
				/* one TMA after the PSB+'s TSC (anything else is
				 * an error to libipt); FC has 9 bits, and the byte
				 * after the CTC is reserved: libipt refuses a TMA
				 * where it is not zero */
				psb_tma = true;
				n = TMA_SIZE;
			}
		} else if (!(b & 1)) {
			n = in_psb ? 0 : 1; /* TNT-8 */
		} else if (b == OP_TSC) {
			n = end - p >= TSC_SIZE ? TSC_SIZE : 0;
			if (in_psb) { /* the time starts over: a TMA may follow */
				psb_tsc = true;
				psb_tma = false;
			}
		} else if (b == OP_MTC) {
			n = q->mtc_ok && !in_psb && end - p >= MTC_SIZE ? MTC_SIZE : 0;
		} else if ((b & 3) == 3) {
			n = q->cyc_ok && !in_psb ? mt_pkt_cyc_size(p, end, &cycles) : 0; /* CYC */
		} else if (b == OP_TRIG) {
			int fup;
			newer = true;
			n = in_psb ? 0 : mt_pkt_trig_size(p, end, &fup, &ipc);
			/* with its IP, an instruction count of 0 must come too
			 * (libipt 2.2: a bad packet else) */
			if (!in_psb && end - p >= TRIG_SIZE && (p[1] & MT_TRIG_IP) &&
			    (!(p[1] & MT_TRIG_ICNTV) ||
			     (end - p >= TRIG_SIZE + TRIG_ICNT_SIZE && mt_pkt_load_le(p + TRIG_SIZE, TRIG_ICNT_SIZE))))
				et_err = -pte_bad_packet;
		} else if (b == OP_MODE) {
			/* MODE.TSX out of a transaction in PSB+; MODE.Exec in PSB+,
			 * right before a TIP.PGE, before a FUP (Event Trace: an
			 * IF change there, bound to it as a note) or before a far
			 * branch's TIP (told after it, as libipt 2.1 does) */
			const uint8_t *next = p + MODE_SIZE;
			if (end - p < MODE_SIZE + 1)
				n = 0; /* a byte after it: what it binds to */
			else if (p[1] == MODE_TSX_NONE)
				n = in_psb && psb_events++ < PSB_EVENTS_MAX ? MODE_SIZE : 0;
			else if (!mt_pkt_exec_mode_ok(p[1]))
				n = 0;
			else if (in_psb)
				n = psb_events++ < PSB_EVENTS_MAX ? MODE_SIZE : 0;
			else if (mt_pkt_followed_by(next, end, IP_PGE, true))
				n = MODE_SIZE;
			else if (mt_pkt_followed_by(next, end, IP_FUP, true) ? fup_notes++ < MT_PTQ_FUP_NOTES
								    : !fup_notes && mt_pkt_followed_by(next, end, IP_TIP, true))
				n = MODE_SIZE, newer = true;
		} else {
			int size = mt_pkt_ip_size(p, end, &ipc);
			switch (b & 0x1f) {
			case IP_TIP:
			case IP_PGD:
				n = in_psb ? 0 : size;
				break;
			case IP_PGE:
				n = in_psb || !ipc ? 0 : size;
				break;
			case IP_FUP:
				/* in PSB+ (the IP there), the IP of the notes before
				 * it, or right before a TIP.PGD or TIP (an interrupt:
				 * tracing stops, or goes on where it took the CPU) */
				if (size && ipc && (in_psb || fup_notes || mt_pkt_followed_by(p + size, end, IP_PGD, false) ||
						    mt_pkt_followed_by_tip(p + size, end)))
					n = size;
				fup_notes = fup_mwaits = 0;
				break;
			default:
				break;
			}
		}
		if (newer && (n || et_err)) {
			if (b == OP_TRIG)
				q->ntrig++;
			else
				q->nlibipt21++;
		}
		if (et_err) {
			/* damage in packets libipt 2.0.5 cannot read (Event
			 * Trace's, TRIG): mt's reader reports it here, and the scan
			 * goes on at the next PSB, where a sync after it goes */
			if (!note_bad(q, p, et_err))
				return hand_over_psb(q, first_psb, timed_psb, last_psb, false);
			if (!(p = mt_pkt_find_psb(p + 1, end)))
				return end;
			in_psb = false;
			fup_notes = fup_mwaits = evd_has = 0;
			continue;
		}
		if (!n)
			return hand_over_psb(q, first_psb, timed_psb, last_psb, (b & 3) == 3);
		p += n;
	}
	/* the end inside a PSB+: libipt reads what there is of it (nothing
	 * after it to time) */
	return in_psb ? last_psb : end;
}
