#include "trace/ptquery.h"

#include <stdlib.h>
#include <string.h>

/* Packet layouts (Intel SDM vol. 3, "Intel Processor Trace"): the header
 * byte, then the payload. */
enum {
	OP_PAD = 0x00, OP_EXT = 0x02, OP_TSC = 0x19, OP_MODE = 0x99, OP_MTC = 0x59,
	EXT_PSB = 0x82, EXT_PSBEND = 0x23, EXT_CBR = 0x03, EXT_TNT64 = 0xa3, EXT_PIP = 0x43, EXT_VMCS = 0xc8,
	EXT_TMA = 0x73,
	/* PT notes: PTWRITE (low five bits 0x12; bit 7: a FUP with its IP
	 * follows; bits 6:5: 4 or 8 payload bytes), EXSTOP (bit 7: IP),
	 * MWAIT (hints, extensions: 4 bytes each), PWRE (2 bytes: hw bit 3,
	 * sub-state bits 11:8, state bits 15:12), PWRX (5 bytes: deepest bits
	 * 3:0, last bits 7:4, wake reason bits 11:8) */
	EXT_PTW = 0x12, EXT_PTW_MASK = 0x1f, EXT_IP_BIT = 0x80, EXT_EXSTOP = 0x62, EXT_MWAIT = 0xc2, EXT_PWRE = 0x22,
	EXT_PWRX = 0xa2, MWAIT_SIZE = 10, PWRE_SIZE = 4, PWRX_SIZE = 7, EXSTOP_SIZE = 2,
	PWRX_WAKE_INT = 0x100, PWRX_WAKE_STORE = 0x400, PWRX_WAKE_HW = 0x800, PWRE_HW = 0x8,
	/* the TIP family: the low five bits; the top three say how much IP follows */
	IP_TIP = 0x0d, IP_PGE = 0x11, IP_PGD = 0x01, IP_FUP = 0x1d,
	MODE_EXEC_64 = 0x01, /* MODE.Exec, CS.L set, CS.D clear; 0x02: 32-bit, 0x00: 16-bit */
	MODE_AFTER_TIP = 0x80, /* mt_ptq.mode_after_tip: set, with the payload below */
	MODE_EXEC_IF = 0x04, /* MODE.Exec's RFLAGS.IF (Event Trace); libipt 2.0.5 ignores it */
	MODE_TSX_NONE = 0x20, /* MODE.TSX, no transaction */
	PSB_EVENTS_MAX = MT_PTQ_PSB_EVENTS,
	PSB_SIZE = 16, PSBEND_SIZE = 2, CBR_SIZE = 4, TNT64_SIZE = 8, PIP_SIZE = 8, VMCS_SIZE = 7, TSC_SIZE = 8, MODE_SIZE = 2,
	MTC_SIZE = 2, TMA_SIZE = 7,
	/* TRIG (libipt 2.2, unknown to Debian's 2.0.5): a trigger fired; flags
	 * byte (IP: a FUP with its IP follows, ICNTV: a 2-byte instruction
	 * count follows, MULT), trigger id */
	OP_TRIG = 0xd9, TRIG_SIZE = 3, TRIG_ICNT_SIZE = 2, TRIG_IP = MT_TRIG_IP, TRIG_ICNTV = MT_TRIG_ICNTV,
	/* Event Trace (libipt 2.1): CFE (type bits 4:0, IP bit 7: a FUP with
	 * its IP follows; a vector byte), EVD (type bits 4:0; an 8-byte
	 * payload that describes the next CFE) */
	EXT_CFE = 0x13, CFE_SIZE = 4, CFE_TYPE = 0x1f, CFE_INTR = 1, CFE_RSM = 4, CFE_SIPI = 5, CFE_VMEXIT = 8,
	CFE_VMEXIT_INTR = 9,
	EXT_EVD = 0x53, EVD_SIZE = 11, EVD_TYPE = 0x1f, EVD_TYPES = 3,
	MTC_BITS = 8, TMA_CTC_BITS = 16,
	FCR_SHIFT = 8, /* libipt's fast-counter ratio: fixed point, 8 fraction bits */
};

static const uint8_t psb_pattern[PSB_SIZE] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					      0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};

/* payload bytes of an IP packet by IPBytes; -1: reserved */
static const int8_t ip_bytes[8] = {0, 2, 4, 6, 6, -1, 8, -1};

static uint64_t load_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static bool is_psb(const uint8_t *p, const uint8_t *end)
{
	return end - p >= PSB_SIZE && !memcmp(p, psb_pattern, PSB_SIZE);
}

/* ---- the scan: how far mt reads the packets itself ---- */

/* The size of the IP packet at p when complete and well-formed, else 0;
 * *ipc gets its IPBytes. */
static int ip_packet_size(const uint8_t *p, const uint8_t *end, unsigned *ipc)
{
	*ipc = p[0] >> 5;
	int n = ip_bytes[*ipc];
	return n < 0 || end - p < 1 + n ? 0 : 1 + n;
}

/* The bytes of the TRIG packet at p with the FUP that carries its IP (its
 * IP bit set), 0 when cut short or that FUP is missing; *fup: the FUP's
 * offset in them (0: none), *ipc its IPBytes. Tracing is not changed by it:
 * its FUP is the trigger's, not an asynchronous branch. */
static int trig_packet_size(const uint8_t *p, const uint8_t *end, int *fup, unsigned *ipc)
{
	if (end - p < TRIG_SIZE)
		return 0;
	int n = TRIG_SIZE + (p[1] & TRIG_ICNTV ? TRIG_ICNT_SIZE : 0);
	*fup = 0;
	if (end - p < n)
		return 0;
	if (!(p[1] & TRIG_IP))
		return n;
	int f = p + n < end && (p[n] & 0x1f) == IP_FUP ? ip_packet_size(p + n, end, ipc) : 0;
	if (!f || !*ipc)
		return 0;
	*fup = n;
	return n + f;
}

/* A MODE.Exec payload mt reads: 64-, 32- or 16-bit (CS.L and CS.D both
 * set is reserved), with or without IF */
static bool exec_mode_ok(uint8_t b)
{
	return (b & ~MODE_EXEC_IF) <= 2;
}

static enum pt_exec_mode exec_mode_of(uint8_t b)
{
	b &= 3;
	return b == MODE_EXEC_64 ? ptem_64bit : b ? ptem_32bit : ptem_16bit;
}

/* Whether the next packet after p but PADs is a complete IP packet of
 * kind op (with an IP, if need_ip). */
static bool followed_by(const uint8_t *p, const uint8_t *end, unsigned op, bool need_ip)
{
	unsigned ipc;
	while (p < end && *p == OP_PAD)
		p++;
	return p < end && (*p & 0x1f) == op && ip_packet_size(p, end, &ipc) && (ipc || !need_ip);
}

/* Whether the next packets after p but PADs are an optional PIP (a CR3
 * change the interrupt makes: libipt binds it to the TIP) and a complete
 * TIP with an IP. */
static bool followed_by_tip(const uint8_t *p, const uint8_t *end)
{
	while (p < end && *p == OP_PAD)
		p++;
	if (end - p >= PIP_SIZE && p[0] == OP_EXT && p[1] == EXT_PIP)
		p += PIP_SIZE;
	return followed_by(p, end, IP_TIP, false);
}

/* The size of the PT note at p (an OP_EXT packet), 0 when it is none or
 * cut short; *fup: it is bound to the FUP after it. An MWAIT is bound to
 * the FUP of the EXSTOP with an IP that follows it; an EXSTOP without one
 * leaves it without an IP (libipt HEAD's reading: 2.0.5 bound it to any
 * next FUP, one that ended tracing included). */
static int note_packet_size(const uint8_t *p, const uint8_t *end, bool *fup)
{
	if (end - p < 2)
		return 0;
	uint8_t b1 = p[1];
	int n = 0;
	*fup = false;
	if ((b1 & EXT_PTW_MASK) == EXT_PTW) {
		unsigned pb = (b1 >> 5) & 3;
		n = pb == 0 ? 6 : pb == 1 ? 10 : 0; /* other payload sizes are reserved */
		*fup = b1 & EXT_IP_BIT;
	} else if ((b1 & ~EXT_IP_BIT) == EXT_EXSTOP) {
		n = EXSTOP_SIZE;
		*fup = b1 & EXT_IP_BIT;
	} else if (b1 == EXT_MWAIT) {
		n = MWAIT_SIZE;
		*fup = true;
	} else if (b1 == EXT_PWRE) {
		n = PWRE_SIZE;
	} else if (b1 == EXT_PWRX) {
		n = PWRX_SIZE;
	} else if (b1 == EXT_CFE && end - p >= CFE_SIZE) {
		/* RSM and SIPI have no IP: the bit set is a bad packet to libipt */
		unsigned type = p[2] & CFE_TYPE;
		*fup = p[2] & EXT_IP_BIT;
		n = *fup && (type == CFE_RSM || type == CFE_SIPI) ? 0 : CFE_SIZE;
	}
	return end - p >= n ? n : 0;
}

/* The EVD at p when complete, else 0; *bit: its type's MT_CFE_* (0: a
 * type libipt ignores). */
static int evd_packet_size(const uint8_t *p, const uint8_t *end, unsigned *bit)
{
	if (end - p < EVD_SIZE)
		return 0;
	unsigned type = p[2] & EVD_TYPE;
	*bit = type < EVD_TYPES ? 1u << type : 0;
	return EVD_SIZE;
}

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

static const uint8_t *find_psb(const uint8_t *p, const uint8_t *end);

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

/* The first damaged packet at or after p, NULL when none. */
static const uint8_t *next_bad(const struct mt_ptq *q, const uint8_t *p, int *err)
{
	uint64_t off = (uint64_t)(p - q->begin);
	for (size_t i = 0; i < q->nbad; i++)
		if (q->bad[i].off >= off) {
			*err = q->bad[i].err;
			return q->begin + q->bad[i].off;
		}
	return NULL;
}

/* Whether the scan met a PSB at p: a pattern found by searching may also
 * begin inside a packet's payload, where mt's reader would misread. */
static bool scanned_psb(const struct mt_ptq *q, const uint8_t *p)
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

/* The size of the CYC packet at p when complete and within libipt's
 * limits (its payload fits 64 bits), else 0; *value gets its cycles. */
static int cyc_packet_size(const uint8_t *p, const uint8_t *end, uint64_t *value)
{
	uint64_t v = p[0] >> 3;
	unsigned shl = 5;
	int n = 1;
	bool ext = p[0] & 4;
	while (ext) {
		if (end - p <= n || shl + 7 > 64)
			return 0;
		uint8_t b = p[n++];
		ext = b & 1;
		v |= (uint64_t)(b >> 1) << shl;
		shl += 7;
	}
	*value = v;
	return n;
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

/* Walks the packets from the PSB at p; returns the PSB from which libipt
 * must read (one before the first packet mt does not read, see
 * hand_over_psb; or the one whose PSB+ the trace ends in), or end when mt
 * reads them all. Notes every PSB on the way. */
static const uint8_t *scan_fast_end(struct mt_ptq *q, const uint8_t *p)
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
			if (b1 == EXT_PSB && is_psb(p, end) && !in_psb && fup_notes) {
				n = 0; /* notes still waiting for their FUP: libipt's to read */
			} else if (b1 == EXT_PSB && is_psb(p, end) && !in_psb && note_psb(q, p)) {
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
			} else if (b1 == EXT_TNT64 && !in_psb && end - p >= TNT64_SIZE && load_le(p + 2, 6)) {
				n = TNT64_SIZE;
			} else if (b1 == EXT_EVD && !in_psb) {
				newer = true;
				/* one of each type before its CFE (a second is
				 * bad context to libipt; a CR2 comes first) */
				n = evd_packet_size(p, end, &evd_bit);
				if (!n)
					et_err = -pte_eos;
				else if ((evd_has & evd_bit) || (evd_has && (evd_bit | evd_has) & MT_CFE_CR2))
					et_err = -pte_bad_context;
				evd_has |= evd_bit;
			} else if (!in_psb) {
				bool fup;
				n = note_packet_size(p, end, &fup);
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
			n = q->cyc_ok && !in_psb ? cyc_packet_size(p, end, &cycles) : 0; /* CYC */
		} else if (b == OP_TRIG) {
			int fup;
			newer = true;
			n = in_psb ? 0 : trig_packet_size(p, end, &fup, &ipc);
			/* with its IP, an instruction count of 0 must come too
			 * (libipt 2.2: a bad packet else) */
			if (!in_psb && end - p >= TRIG_SIZE && (p[1] & TRIG_IP) &&
			    (!(p[1] & TRIG_ICNTV) ||
			     (end - p >= TRIG_SIZE + TRIG_ICNT_SIZE && load_le(p + TRIG_SIZE, TRIG_ICNT_SIZE))))
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
			else if (!exec_mode_ok(p[1]))
				n = 0;
			else if (in_psb)
				n = psb_events++ < PSB_EVENTS_MAX ? MODE_SIZE : 0;
			else if (followed_by(next, end, IP_PGE, true))
				n = MODE_SIZE;
			else if (followed_by(next, end, IP_FUP, true) ? fup_notes++ < MT_PTQ_FUP_NOTES
								    : !fup_notes && followed_by(next, end, IP_TIP, true))
				n = MODE_SIZE, newer = true;
		} else {
			int size = ip_packet_size(p, end, &ipc);
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
				if (size && ipc && (in_psb || fup_notes || followed_by(p + size, end, IP_PGD, false) ||
						    followed_by_tip(p + size, end)))
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
			if (!(p = find_psb(p + 1, end)))
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

/* ---- reading packets ---- */

static void update_ip(struct mt_ptq *q, const uint8_t *p, unsigned ipc)
{
	uint64_t v = load_le(p + 1, ip_bytes[ipc]);
	switch (ipc) {
	case 0:
		q->ip_suppressed = true;
		return;
	case 1:
		q->ip = (q->ip & ~0xffffull) | v;
		break;
	case 2:
		q->ip = (q->ip & ~0xffffffffull) | v;
		break;
	case 3:
		q->ip = (uint64_t)((int64_t)(v << 16) >> 16);
		break;
	case 4:
		q->ip = (q->ip & ~0xffffffffffffull) | v;
		break;
	default:
		q->ip = v;
		break;
	}
	q->have_ip = true;
	q->ip_suppressed = false;
}

/* An event's IP from the last IP, or suppressed. */
static void event_ip(const struct mt_ptq *q, struct pt_event *ev, uint64_t *ip)
{
	if (q->have_ip && !q->ip_suppressed)
		*ip = q->ip;
	else
		ev->ip_suppressed = 1;
}

/* A fresh event of this type, stamped with the time now (libipt stamps an
 * event when the packet that makes it is read). */
static void new_event(const struct mt_ptq *q, struct pt_event *ev, enum pt_event_type type)
{
	memset(ev, 0, sizeof *ev);
	ev->type = type;
	if (q->time.have_tsc) {
		ev->has_tsc = 1;
		ev->tsc = q->time.tsc;
	}
}

/* PIP: CR3 bits 51:5 above the non-root bit */
static void paging_event(const struct mt_ptq *q, struct pt_event *ev, const uint8_t *p)
{
	uint64_t payload = load_le(p + 2, 6);
	new_event(q, ev, ptev_paging);
	ev->variant.paging.cr3 = (payload & ~1ull) << 4;
	ev->variant.paging.non_root = payload & 1;
}

/* The event of the PT note at p, stamped now. */
static void read_note(struct mt_ptq *q, struct pt_event *ev, const uint8_t *p)
{
	uint8_t b1 = p[1];
	if (b1 == EXT_CFE) {
		new_event(q, ev, MT_PTEV_CFE);
		struct mt_cfe cfe = {.type = p[2] & CFE_TYPE, .vector = p[3], .has = q->evd_has};
		memcpy(cfe.evd, q->evd, sizeof cfe.evd);
		mt_ptq_set_fields(ev, &cfe, sizeof cfe);
		q->evd_has = 0;
	} else if ((b1 & EXT_PTW_MASK) == EXT_PTW) {
		new_event(q, ev, ptev_ptwrite);
		ev->variant.ptwrite.size = ((b1 >> 5) & 3) ? 8 : 4;
		ev->variant.ptwrite.payload = load_le(p + 2, ev->variant.ptwrite.size);
	} else if ((b1 & ~EXT_IP_BIT) == EXT_EXSTOP) {
		new_event(q, ev, ptev_exstop);
	} else if (b1 == EXT_MWAIT) {
		new_event(q, ev, ptev_mwait);
		ev->variant.mwait.hints = (uint32_t)load_le(p + 2, 4);
		ev->variant.mwait.ext = (uint32_t)load_le(p + 6, 4);
	} else if (b1 == EXT_PWRE) {
		uint64_t pl = load_le(p + 2, 2);
		new_event(q, ev, ptev_pwre);
		ev->variant.pwre.state = (uint8_t)((pl >> 12) & 0xf);
		ev->variant.pwre.sub_state = (uint8_t)((pl >> 8) & 0xf);
		ev->variant.pwre.hw = !!(pl & PWRE_HW);
	} else { /* PWRX */
		uint64_t pl = load_le(p + 2, 5);
		new_event(q, ev, ptev_pwrx);
		ev->variant.pwrx.deepest = (uint8_t)(pl & 0xf);
		ev->variant.pwrx.last = (uint8_t)((pl >> 4) & 0xf);
		ev->variant.pwrx.interrupt = !!(pl & PWRX_WAKE_INT);
		ev->variant.pwrx.store = !!(pl & PWRX_WAKE_STORE);
		ev->variant.pwrx.autonomous = !!(pl & PWRX_WAKE_HW);
	}
}

/* A note bound to a FUP: its IP, the FUP's. */
static void note_ip(const struct mt_ptq *q, struct pt_event *ev)
{
	if (ev->type == ptev_exec_mode) {
		event_ip(q, ev, &ev->variant.exec_mode.ip);
		return;
	}
	if (ev->type == MT_PTEV_CFE) {
		struct mt_cfe cfe;
		mt_ptq_cfe(ev, &cfe);
		event_ip(q, ev, &cfe.ip);
		mt_ptq_set_fields(ev, &cfe, sizeof cfe);
		return;
	}
	uint64_t *ip = ev->type == ptev_ptwrite ? &ev->variant.ptwrite.ip
		     : ev->type == ptev_exstop ? &ev->variant.exstop.ip : &ev->variant.mwait.ip;
	event_ip(q, ev, ip);
}

/* The time packets, as libipt's pt_time and pt_tcal take them: a TSC is
 * the full time; TMA (in PSB+, after its TSC) gives the CTC and fast
 * counter at that TSC; each MTC then adds the CTC ticks since the last,
 * in TSC ticks (MTCs between a TSC and its TMA are ignored); each CYC adds
 * its cycles at the calibrated ratio until the next MTC or TSC. */
static void read_tsc(struct mt_ptq *q, const uint8_t *p, bool in_psb)
{
	uint64_t tsc = load_le(p + 1, 7);
	/* calibration: the cycles between two TSCs in PSB+, while there is
	 * no MTC to prefer (a TSC on its own may follow lost time) */
	uint64_t last = q->cal.tsc, cycles = q->cal.cyc_tsc;
	q->cal.tsc = tsc;
	q->cal.cyc_tsc = 0;
	if (in_psb && last && cycles && !q->cal.have_mtc) {
		uint64_t t = tsc < last ? tsc + (1ull << 56) : tsc; /* one wrap-around */
		q->cal.fcr = ((t - last) << FCR_SHIFT) / cycles;
	}
	q->time.tsc = q->time.base = tsc;
	q->time.have_tsc = true;
	q->time.have_tma = q->time.have_mtc = q->time.lost_cyc = false;
	q->time.ctc = 0;
	q->time.fc = 0;
}

/* The CTC span of MTC packets: their 8 bits above mtc_freq (with mtc_ok,
 * within TMA's 16), after which the CTC they carry wraps. */
static uint32_t ctc_wrap(const struct mt_ptq *q)
{
	return 1u << (q->mtc_freq + MTC_BITS);
}

static void read_tma(struct mt_ptq *q, const uint8_t *p)
{
	uint32_t ctc = (uint32_t)load_le(p + 2, 2), fc = (uint32_t)load_le(p + 5, 2);
	q->time.have_tma = true;
	q->time.base -= fc;
	q->time.fc += fc;
	/* TMA's CTC holds every bit MTC gives (mtc_ok): it counts as an MTC */
	q->time.have_mtc = true;
	q->time.ctc = q->time.ctc_cyc = ctc & (ctc_wrap(q) - 1u);
}

/* CTC ticks from last to ctc (one wrap-around) in TSC ticks */
static uint64_t ctc_to_tsc(const struct mt_ptq *q, uint32_t ctc, uint32_t last)
{
	if (ctc < last)
		ctc += ctc_wrap(q);
	return (uint64_t)(ctc - last) * q->ctc_ebx / q->ctc_eax;
}

static void read_mtc(struct mt_ptq *q, const uint8_t *p)
{
	uint32_t ctc = (uint32_t)p[1] << q->mtc_freq;
	/* calibration: the cycles since the last MTC it used */
	if (!q->cal.have_mtc) {
		q->cal.have_mtc = true;
		q->cal.cyc_mtc = 0;
		q->cal.ctc = ctc;
	} else if (q->cal.cyc_mtc) {
		uint64_t fc = ctc_to_tsc(q, ctc, q->cal.ctc);
		q->cal.fcr = (fc << FCR_SHIFT) / q->cal.cyc_mtc;
		q->cal.cyc_mtc = 0;
		q->cal.ctc = ctc;
	}
	if (q->time.have_tsc && !q->time.have_tma)
		return;
	uint32_t last = q->time.ctc;
	bool had_mtc = q->time.have_mtc;
	if (q->time.fc || q->time.lost_cyc || !had_mtc)
		q->time.ctc_cyc = ctc; /* the fast counter starts over here */
	q->time.have_mtc = true;
	q->time.ctc = ctc;
	q->time.fc = 0;
	q->time.lost_cyc = false;
	if (!had_mtc)
		return; /* the first, with no TMA: where in its period tracing began is unknown */
	q->time.base += ctc_to_tsc(q, ctc, last);
	q->time.tsc = q->time.base;
}

/* A CYC: its cycles in TSC ticks at the calibrated ratio; the first since
 * the fast counter started over, less the cycles of the MTC periods it
 * spans before the current one. */
static void read_cyc(struct mt_ptq *q, uint64_t cycles)
{
	q->cycles += cycles;
	q->cal.cyc_mtc += cycles;
	q->cal.cyc_tsc += cycles;
	uint64_t fcr = q->cal.fcr;
	if (!fcr) {
		q->time.lost_cyc = true;
		return;
	}
	if (!q->time.fc && q->time.ctc != q->time.ctc_cyc) {
		uint64_t before = (ctc_to_tsc(q, q->time.ctc, q->time.ctc_cyc) << FCR_SHIFT) / fcr;
		cycles = cycles < before ? 0 : cycles - before;
	}
	q->time.fc += (cycles * fcr) >> FCR_SHIFT;
	q->time.tsc = q->time.base + q->time.fc;
}

/* A core:bus ratio calibrates CYC at the nominal ratio over it, where the
 * nominal ratio is known (libipt's pt_tcal_header_cbr). */
static void calibrate_cbr(struct mt_ptq *q, uint8_t ratio)
{
	if (q->nom_freq)
		q->cal.fcr = ((uint64_t)q->nom_freq << FCR_SHIFT) / ratio;
}

/* The PSB at pos and its header up to PSBEND (the scan vouched for it):
 * the IP, time and status updates it holds. */
static void read_psb(struct mt_ptq *q)
{
	q->pos += PSB_SIZE;
	q->ip = 0;
	q->have_ip = q->ip_suppressed = false;
	for (;;) {
		const uint8_t *p = q->pos;
		uint8_t b = p[0];
		unsigned ipc;
		if (b == OP_PAD) {
			q->pos++;
		} else if (b == OP_TSC) {
			read_tsc(q, p, true);
			q->pos += TSC_SIZE;
		} else if (b == OP_EXT && p[1] == EXT_TMA) {
			read_tma(q, p);
			q->pos += TMA_SIZE;
		} else if (b == OP_EXT && p[1] == EXT_CBR) {
			struct pt_event *ev = &q->psb_ev[q->psb_n++];
			new_event(q, ev, ptev_cbr);
			ev->variant.cbr.ratio = p[2];
			ev->status_update = 1;
			calibrate_cbr(q, p[2]);
			q->pos += CBR_SIZE;
		} else if (b == OP_EXT && p[1] == EXT_PIP) {
			struct pt_event *ev = &q->psb_ev[q->psb_n++];
			paging_event(q, ev, p);
			ev->status_update = 1;
			q->pos += PIP_SIZE;
		} else if (b == OP_EXT && p[1] == EXT_VMCS) {
			struct pt_event *ev = &q->psb_ev[q->psb_n++];
			/* in PSB+: bound to its IP, as libipt reports it */
			new_event(q, ev, ptev_async_vmcs);
			ev->variant.async_vmcs.base = load_le(p + 2, 5) << 12;
			ev->status_update = 1;
			q->pos += VMCS_SIZE;
		} else if (b == OP_MODE) {
			struct pt_event *ev = &q->psb_ev[q->psb_n++];
			new_event(q, ev, p[1] == MODE_TSX_NONE ? ptev_tsx : ptev_exec_mode);
			if (ev->type == ptev_exec_mode)
				ev->variant.exec_mode.mode = exec_mode_of(p[1]);
			ev->status_update = 1;
			q->pos += MODE_SIZE;
		} else if ((b & 0x1f) == IP_FUP) {
			int n = ip_packet_size(p, q->end, &ipc);
			update_ip(q, p, ipc);
			q->pos += n;
		} else {
			return; /* PSBEND */
		}
	}
}

static void read_tnt(struct mt_ptq *q)
{
	const uint8_t *p = q->pos;
	uint64_t payload;
	if (p[0] == OP_EXT) {
		payload = load_le(p + 2, 6);
		q->pos += TNT64_SIZE;
	} else {
		payload = p[0] >> 1;
		q->pos++;
	}
	/* the highest set bit stops the bits; the oldest is just below it */
	unsigned n = 63u - (unsigned)__builtin_clzll(payload);
	q->tnt = payload;
	q->tnt_n = n;
}

/* From here on libipt reads, starting at the PSB at fast_end: what its
 * query decoder would have done reading on from the packets before. When
 * it cannot read that PSB+, the query decoder would stay there: every
 * query fails as it would (the end of the trace ends the decode quietly;
 * other errors are reported; resynchronising meets the same PSB once, and
 * libipt's next sync looks past it). */
static int hand_over(struct mt_ptq *q)
{
	uint64_t ip;
	int st = pt_qry_sync_set(q->ipt, &ip, (uint64_t)(q->fast_end - q->begin));
	if (st < 0) {
		q->next = PTQ_STUCK;
		q->stuck_err = st;
		if (st == -pte_eos) /* a PSB+ cut by the end: read ahead, libipt */
			q->pos = q->end; /* moves past it to the end */
		return st == -pte_eos ? 0 : st;
	}
	q->handed = true;
	q->ipt_queried = false;
	q->ipt_status = st & (pts_event_pending | pts_eos);
	return 0;
}

/* Reads ahead to the next packet a query is about (a branch or an event),
 * taking in time and PSB+ on the way, as libipt's query decoder does. */
static int read_ahead(struct mt_ptq *q)
{
	if (q->notes_ready) {
		q->next = PTQ_EVENT;
		return 0;
	}
	for (;;) {
		const uint8_t *p = q->pos;
		if (p == q->stop_at) {
			if (p != q->bad_at)
				return hand_over(q);
			/* a damaged packet: every query fails here until a sync,
			 * as libipt's would (one cut by the end ends the trace
			 * quietly) */
			q->next = PTQ_STUCK;
			q->stuck_err = q->bad_err;
			return q->bad_err == -pte_eos ? 0 : q->bad_err;
		}
		if (p >= q->end) {
			q->next = PTQ_EOS;
			return 0;
		}
		uint8_t b = p[0];
		if (b == OP_PAD) {
			q->pos++;
		} else if (b == OP_EXT) {
			if (p[1] == EXT_TNT64) {
				q->next = PTQ_TNT;
				return 0;
			}
			if (p[1] == EXT_PSB) {
				read_psb(q);
				continue;
			}
			if (p[1] == EXT_PIP || p[1] == EXT_CBR) {
				q->next = PTQ_EVENT;
				return 0;
			}
			unsigned bit = 0;
			if (p[1] == EXT_EVD) { /* kept for the CFE it describes */
				int n = evd_packet_size(p, q->end, &bit);
				if (bit) {
					unsigned i = (unsigned)__builtin_ctz(bit);
					q->evd[i] = load_le(p + 3, 8);
					q->evd_has |= (uint8_t)bit;
				}
				q->pos += n;
				continue;
			}
			bool fup;
			if (note_packet_size(p, q->end, &fup)) {
				/* read by the next event query, as libipt reads them */
				q->next = PTQ_EVENT;
				return 0;
			}
			/* PSBEND: it publishes the PSB+ status updates */
			if (q->psb_n) {
				q->next = PTQ_EVENT;
				return 0;
			}
			q->pos += PSBEND_SIZE;
		} else if (!(b & 1)) {
			q->next = PTQ_TNT;
			return 0;
		} else if (b == OP_TSC) {
			read_tsc(q, p, false);
			q->pos += TSC_SIZE;
		} else if (b == OP_MTC) {
			read_mtc(q, p);
			q->pos += MTC_SIZE;
		} else if ((b & 3) == 3) {
			uint64_t cycles = 0;
			q->pos += cyc_packet_size(p, q->end, &cycles);
			read_cyc(q, cycles);
		} else if (b == OP_MODE) {
			if (followed_by(p + MODE_SIZE, q->end, IP_TIP, true)) {
				/* the branch's TIP first, then the mode at its IP, as
				 * libipt 2.1 tells them (2.0.5 tells the mode first,
				 * where no walk can take it) */
				q->mode_after_tip = p[1] | MODE_AFTER_TIP;
				q->pos += MODE_SIZE;
				continue;
			}
			q->next = PTQ_EVENT;
			return 0;
		} else if (b == OP_TRIG) {
			q->next = PTQ_EVENT; /* read by the next event query */
			return 0;
		} else {
			unsigned ipc;
			int n = ip_packet_size(p, q->end, &ipc);
			switch (b & 0x1f) {
			case IP_TIP:
				q->next = q->tip_pending || q->tip_paging_pending ? PTQ_EVENT : PTQ_TIP;
				return 0;
			case IP_FUP: {
				update_ip(q, p, ipc);
				if (q->note_n) {
					/* the IP of the notes before it */
					for (unsigned i = 0; i < q->note_n; i++)
						note_ip(q, &q->note_ev[i]);
					q->notes_ready = true;
					q->note_head = 0;
					q->note_fup = (uint8_t)n; /* passed once they are told, as libipt does */
					q->next = PTQ_EVENT;
					return 0;
				}
				/* an asynchronous branch from here, bound to the
				 * TIP or TIP.PGD after it */
				struct pt_event *ev = &q->tip_ev;
				new_event(q, ev, ptev_async_branch);
				ev->variant.async_branch.from = q->ip;
				q->tip_pending = true;
				q->pos += n;
				break;
			}
			default: /* TIP.PGE, TIP.PGD */
				q->next = PTQ_EVENT;
				return 0;
			}
		}
	}
}

/* Passes the n bytes at pos, then reads ahead. */
static int pass_ahead(struct mt_ptq *q, int n)
{
	q->pos += n;
	return read_ahead(q);
}

/* ---- queries ---- */

/* libipt's answer, its status kept for mt_ptq_status */
static int note_ipt(struct mt_ptq *q, int st)
{
	if (st >= 0) {
		q->ipt_status = st & (pts_event_pending | pts_eos);
		q->ipt_queried = true;
	}
	return st;
}

/* What a query meets at the end of the trace, or where libipt is stuck on
 * the hand-over PSB; 0 elsewhere. */
static int dead_end(const struct mt_ptq *q)
{
	return q->next == PTQ_EOS ? -pte_eos : q->next == PTQ_STUCK ? q->stuck_err : 0;
}

/* the time pt_qry_time reports: as of this branch or event packet */
static void mark_time(struct mt_ptq *q)
{
	q->last_tsc = q->time.tsc;
	q->have_last = q->time.have_tsc;
	q->last_cycles = q->cycles;
}

int mt_ptq_cond_branch_slow(struct mt_ptq *q, int *taken)
{
	if (q->handed)
		return note_ipt(q, pt_qry_cond_branch(q->ipt, taken));
	if (dead_end(q))
		return dead_end(q);
	if (q->next != PTQ_TNT)
		return -pte_bad_query;
	read_tnt(q);
	mark_time(q);
	int rc = read_ahead(q);
	if (rc < 0)
		return rc;
	q->tnt_n--;
	*taken = (int)((q->tnt >> q->tnt_n) & 1);
	return mt_ptq_status(q);
}

int mt_ptq_indirect_branch(struct mt_ptq *q, uint64_t *ip)
{
	for (;;) {
		if (q->handed)
			return note_ipt(q, pt_qry_indirect_branch(q->ipt, ip));
		if (dead_end(q))
			return dead_end(q);
		if (q->next == PTQ_EVENT)
			return -pte_bad_query;
		if (q->next == PTQ_TIP)
			break;
		/* a TNT before the TIP: its bits wait for the branches after */
		if (q->tnt_n)
			return -pte_bad_query;
		read_tnt(q);
		int rc = read_ahead(q);
		if (rc < 0)
			return rc;
	}
	const uint8_t *p = q->pos;
	unsigned ipc;
	int n = ip_packet_size(p, q->end, &ipc), flags = 0;
	update_ip(q, p, ipc);
	if (q->ip_suppressed)
		flags = pts_ip_suppressed;
	else
		*ip = q->ip;
	q->pos += n;
	if (q->mode_after_tip) { /* told next, at the TIP's IP */
		struct pt_event *m = &q->note_ev[0];
		new_event(q, m, ptev_exec_mode);
		m->variant.exec_mode.mode = exec_mode_of(q->mode_after_tip);
		event_ip(q, m, &m->variant.exec_mode.ip);
		q->note_n = 1;
		q->note_head = q->note_fup = 0;
		q->notes_ready = true;
		q->mode_after_tip = 0;
	}
	mark_time(q);
	int rc = read_ahead(q);
	if (rc < 0)
		return rc;
	return flags | mt_ptq_status(q);
}

int mt_ptq_event(struct mt_ptq *q, struct pt_event *ev)
{
	if (q->tnt_n)
		return -pte_bad_query;
	for (;;) {
		if (q->handed)
			return note_ipt(q, pt_qry_event(q->ipt, ev, sizeof *ev));
		if (dead_end(q))
			return dead_end(q);
		if (q->next != PTQ_EVENT)
			return -pte_bad_query;
		if (q->notes_ready) {
			*ev = q->note_ev[q->note_head++];
			if (q->note_head == q->note_n) {
				q->notes_ready = false;
				q->note_n = q->note_head = 0;
				q->pos += q->note_fup;
				q->note_fup = 0;
			}
			break;
		}
		const uint8_t *p = q->pos;
		bool fup;
		int nn = p[0] == OP_EXT ? note_packet_size(p, q->end, &fup) : 0;
		if (nn && fup) { /* its IP comes in the next FUP */
			read_note(q, &q->note_ev[q->note_n++], p);
			int rc = pass_ahead(q, nn);
			if (rc < 0)
				return rc;
			continue;
		}
		if (nn && p[1] == EXT_EXSTOP && q->note_n) {
			/* an EXSTOP without IP: the MWAITs waiting (all that
			 * waits, as the scan saw to) get none, and come first */
			for (unsigned i = 0; i < q->note_n; i++)
				q->note_ev[i].ip_suppressed = 1;
			q->nunbound_mwait += q->note_n;
			q->notes_ready = true;
			q->note_head = 0;
			continue;
		}
		if (nn) { /* a note on its own: no IP */
			read_note(q, ev, p);
			ev->ip_suppressed = 1;
			q->pos += nn;
			break;
		}
		if (p[0] == OP_MODE) {
			/* binds to the TIP.PGE after it, or to a FUP (Event
			 * Trace: where IF changed), which gives it its IP */
			bool to_fup = followed_by(p + MODE_SIZE, q->end, IP_FUP, true);
			struct pt_event *m = to_fup ? &q->note_ev[q->note_n++] : &q->tip_ev;
			new_event(q, m, ptev_exec_mode);
			m->variant.exec_mode.mode = exec_mode_of(p[1]);
			if (!to_fup)
				q->tip_pending = true;
			int rc = pass_ahead(q, MODE_SIZE);
			if (rc < 0)
				return rc;
			continue;
		}
		if (p[0] == OP_TRIG) {
			/* the flow goes on; its FUP's IP is the trigger's and the
			 * last IP the next compressed IP builds on */
			int tfup;
			unsigned ipc;
			int n = trig_packet_size(p, q->end, &tfup, &ipc);
			struct mt_trig t = {.id = p[2], .flags = p[1] & (MT_TRIG_IP | MT_TRIG_ICNTV | MT_TRIG_MULT)};
			if (p[1] & TRIG_ICNTV)
				t.icnt = (uint16_t)load_le(p + TRIG_SIZE, TRIG_ICNT_SIZE);
			new_event(q, ev, MT_PTEV_TRIG);
			if (tfup) {
				update_ip(q, p + tfup, ipc);
				event_ip(q, ev, &t.ip);
			} else {
				ev->ip_suppressed = 1;
			}
			mt_ptq_set_fields(ev, &t, sizeof t);
			q->pos += n;
			break;
		}
		if (p[0] == OP_EXT && p[1] == EXT_CBR) {
			new_event(q, ev, ptev_cbr);
			ev->variant.cbr.ratio = p[2];
			/* a new core ratio: the calibration starts over */
			memset(&q->cal, 0, sizeof q->cal);
			calibrate_cbr(q, p[2]);
			q->pos += CBR_SIZE;
			break;
		}
		if (p[0] == OP_EXT && p[1] == EXT_PIP) {
			if (q->tip_pending && q->tip_ev.type == ptev_async_branch) {
				/* after an interrupt's FUP: libipt tells it after
				 * the interrupt, at the TIP's IP */
				paging_event(q, &q->tip_paging, p);
				q->tip_paging.type = ptev_async_paging;
				q->tip_paging_pending = true;
				int rc = pass_ahead(q, PIP_SIZE);
				if (rc < 0)
					return rc;
				continue;
			}
			paging_event(q, ev, p);
			q->pos += PIP_SIZE;
			break;
		}
		if (p[0] == OP_EXT) { /* PSBEND: the next status update */
			*ev = q->psb_ev[q->psb_head++];
			if (ev->type == ptev_exec_mode)
				event_ip(q, ev, &ev->variant.exec_mode.ip);
			else if (ev->type == ptev_tsx)
				event_ip(q, ev, &ev->variant.tsx.ip);
			else if (ev->type == ptev_async_vmcs)
				event_ip(q, ev, &ev->variant.async_vmcs.ip);
			if (q->psb_head == q->psb_n) {
				q->psb_n = q->psb_head = 0;
				q->pos += PSBEND_SIZE;
			}
			break;
		}
		unsigned ipc;
		int n = ip_packet_size(p, q->end, &ipc);
		update_ip(q, p, ipc);
		if ((p[0] & 0x1f) == IP_PGE) {
			if (!q->pge_enabled_sent) {
				new_event(q, ev, ptev_enabled);
				ev->variant.enabled.ip = q->ip;
				q->tnt_n = 0;
				if (q->tip_pending)
					q->pge_enabled_sent = true; /* the MODE.Exec next, then the packet is done */
				else
					q->pos += n;
			} else {
				*ev = q->tip_ev;
				event_ip(q, ev, &ev->variant.exec_mode.ip);
				q->tip_pending = q->pge_enabled_sent = false;
				q->pos += n;
			}
			break;
		}
		if ((p[0] & 0x1f) == IP_TIP) { /* after a FUP: where the interrupt went */
			if (q->tip_pending) {
				*ev = q->tip_ev;
				event_ip(q, ev, &ev->variant.async_branch.to);
				q->tip_pending = false;
				if (q->tip_paging_pending)
					break; /* its CR3 next, then the packet is done */
			} else { /* the CR3 bound to it */
				*ev = q->tip_paging;
				event_ip(q, ev, &ev->variant.async_paging.ip);
				q->tip_paging_pending = false;
			}
			q->pos += n;
			break;
		}
		/* TIP.PGD: tracing stops, at the FUP's IP when one came first */
		if (q->tip_pending) {
			*ev = q->tip_ev;
			uint64_t at = ev->variant.async_branch.from;
			ev->type = ptev_async_disabled;
			ev->variant.async_disabled.at = at;
			event_ip(q, ev, &ev->variant.async_disabled.ip);
			q->tip_pending = false;
		} else {
			new_event(q, ev, ptev_disabled);
			event_ip(q, ev, &ev->variant.disabled.ip);
		}
		q->pos += n;
		break;
	}
	mark_time(q);
	int rc = read_ahead(q);
	if (rc < 0)
		return rc;
	return mt_ptq_status(q);
}

int mt_ptq_time(struct mt_ptq *q, uint64_t *tsc)
{
	if (q->handed && q->ipt_queried) {
		uint32_t lost_mtc, lost_cyc;
		return pt_qry_time(q->ipt, tsc, &lost_mtc, &lost_cyc);
	}
	if (!q->have_last)
		return -pte_no_time;
	*tsc = q->last_tsc;
	return 0;
}

uint64_t mt_ptq_offset(const struct mt_ptq *q)
{
	if (q->handed) {
		uint64_t off = 0;
		pt_qry_get_offset(q->ipt, &off);
		return off;
	}
	return (uint64_t)(q->pos - q->begin);
}

uint64_t mt_ptq_sync_offset(const struct mt_ptq *q)
{
	if (q->handed) {
		uint64_t off = 0;
		pt_qry_get_sync_offset(q->ipt, &off);
		return off;
	}
	return q->sync ? (uint64_t)(q->sync - q->begin) : 0;
}

const uint8_t *mt_ptq_handed_at(const struct mt_ptq *q)
{
	return q->handed && q->fast_end ? q->fast_end : NULL;
}

/* ---- synchronising ---- */

/* Starts over at the PSB at p, as libipt's query decoder does: state reset,
 * PSB+ read, the IP it gives, then on to the first packet of interest. */
static int start_at(struct mt_ptq *q, const uint8_t *p, uint64_t *ip)
{
	if (p < q->fast_end && !scanned_psb(q, p))
		q->fast_end = p; /* inside a packet: libipt reads on from here */
	if (p >= q->fast_end) {
		q->handed = true;
		return note_ipt(q, pt_qry_sync_set(q->ipt, ip, (uint64_t)(p - q->begin)));
	}
	memset(&q->time, 0, sizeof q->time);
	memset(&q->cal, 0, sizeof q->cal);
	q->have_last = false;
	q->psb_n = q->psb_head = 0;
	q->tip_pending = q->pge_enabled_sent = q->notes_ready = q->tip_paging_pending = false;
	q->mode_after_tip = 0;
	q->note_n = q->note_head = q->note_fup = 0;
	q->evd_has = 0;
	q->bad_at = next_bad(q, p, &q->bad_err);
	/* where reading ahead stops: the first damaged packet, or where
	 * libipt takes over */
	q->stop_at = q->bad_at && q->bad_at < q->fast_end ? q->bad_at : q->fast_end != q->end ? q->fast_end : NULL;
	q->sync = q->pos = p;
	read_psb(q);
	/* the PSB+'s IP, as libipt's sync reports it; only where the PSB+
	 * had none, the last IP once read ahead: a FUP after it (an
	 * interrupt's) counts then */
	bool have_ip = q->have_ip && !q->ip_suppressed;
	if (have_ip)
		*ip = q->ip;
	int rc = read_ahead(q);
	if (rc < 0)
		return rc;
	if (!q->handed && (q->next == PTQ_EOS || q->next == PTQ_STUCK))
		return -pte_eos;
	int st = mt_ptq_status(q);
	if (!have_ip) {
		if (q->have_ip && !q->ip_suppressed)
			*ip = q->ip;
		else
			st |= pts_ip_suppressed;
	}
	return st;
}

/* The first PSB at or after p, found as libipt finds it: in a longer run
 * of its 02 82 pairs, the PSB is the run's last 16 bytes. */
static const uint8_t *find_psb(const uint8_t *p, const uint8_t *end)
{
	while (end - p >= PSB_SIZE) {
		const uint8_t *x = memchr(p, OP_EXT, (size_t)(end - p - PSB_SIZE + 1));
		if (!x)
			return NULL;
		if (is_psb(x, end)) {
			while (end - x >= PSB_SIZE + 2 && x[PSB_SIZE] == 0x02 && x[PSB_SIZE + 1] == EXT_PSB)
				x += 2;
			return x;
		}
		p = x + 1;
	}
	return NULL;
}

int mt_ptq_sync_forward(struct mt_ptq *q, uint64_t *ip)
{
	q->tnt_n = 0; /* bits left when the walk gave up are void */
	if (q->handed)
		return note_ipt(q, pt_qry_sync_forward(q->ipt, ip));
	const uint8_t *from = q->pos;
	if (q->sync && from < q->sync + PSB_SIZE)
		from = q->sync + PSB_SIZE;
	const uint8_t *p = find_psb(from, q->end);
	if (!p)
		return -pte_eos;
	if (!q->fast_end)
		q->fast_end = scan_fast_end(q, p);
	return start_at(q, p, ip);
}

int mt_ptq_sync_set(struct mt_ptq *q, uint64_t *ip, uint64_t offset)
{
	q->tnt_n = 0;
	if (q->handed)
		return note_ipt(q, pt_qry_sync_set(q->ipt, ip, offset));
	if (offset > (uint64_t)(q->end - q->begin))
		return -pte_eos;
	const uint8_t *p = q->begin + offset;
	if (q->end - p < PSB_SIZE)
		return -pte_eos;
	if (!is_psb(p, q->end))
		return -pte_nosync;
	if (!q->fast_end)
		q->fast_end = scan_fast_end(q, p);
	return start_at(q, p, ip);
}

int mt_ptq_init(struct mt_ptq *q, const struct pt_config *config, bool use_mt, bool timed, bool cyc)
{
	memset(q, 0, sizeof *q);
	q->ipt = pt_qry_alloc_decoder(config);
	if (!q->ipt)
		return -pte_nomem;
	q->psbs = q->psbs_inline;
	q->cappsbs = sizeof q->psbs_inline / sizeof *q->psbs_inline;
	q->begin = q->pos = config->begin;
	q->end = config->end;
	q->handed = !use_mt;
	q->mtc_freq = config->mtc_freq;
	q->ctc_eax = config->cpuid_0x15_eax;
	q->ctc_ebx = config->cpuid_0x15_ebx;
	q->mtc_ok = q->ctc_eax && q->ctc_ebx && q->mtc_freq + MTC_BITS <= TMA_CTC_BITS;
	q->nom_freq = config->nom_freq;
	q->timed = timed;
	q->cyc = cyc;
	/* libipt fails a calibration whose MTC period exceeds 56 bits of TSC */
	q->cyc_ok = cyc && q->mtc_ok && !config->errata.skl168 &&
		    (uint64_t)ctc_wrap(q) * q->ctc_ebx / q->ctc_eax < (1ull << 56);
	if (use_mt && config->errata.bdm70) {
		/* BDM70 (Broadwell to Kaby Lake): a PSB+ before TIP.PGE may
		 * hold a FUP and MODE.Exec it should not; libipt's workaround
		 * reads past them, so libipt reads all of it */
		q->handed = true;
		q->fast_end = q->begin;
	}
	q->ipt_queried = true;
	return 0;
}

void mt_ptq_fini(struct mt_ptq *q)
{
	pt_qry_free_decoder(q->ipt);
	q->ipt = NULL;
	if (q->psbs != q->psbs_inline)
		free(q->psbs);
	q->psbs = NULL;
	free(q->bad);
	q->bad = NULL;
}
