/* ptquery: Intel PT packets for mt's code walk, read by mt where it can.
 *
 * The same queries as libipt's query decoder (pt_qry_*: a conditional
 * branch's bit, an indirect branch's target, the next event, the time,
 * the offset), with the same answers, status flags and offsets. mt reads
 * the packets of ordinary traces itself (TNT, TIP, TIP.PGE/PGD, FUP before
 * TIP or TIP.PGD, 64-bit MODE.Exec, PSB+ and its status updates, PIP, CBR,
 * PAD; TSC, TMA, MTC and CYC with libipt's time arithmetic and CYC
 * calibration): a TNT bit costs a few instructions instead of a libipt
 * call. Before decoding, one pass over the packets finds the first one mt
 * does not read (OVF, PTWRITE, a corrupt byte, ...); from a PSB before it
 * (where libipt's time would be the same) libipt's query decoder reads the
 * rest, so its errata and error recovery apply there unchanged. Queries in
 * the hot path (a TNT bit already read) are inline. */
#ifndef MT_PTQUERY_H
#define MT_PTQUERY_H

#include <intel-pt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace/ptpacket.h"
#include "trace/pttime.h"

/* status updates a PSB+ may hold: CBR, MODE.Exec, MODE.TSX, PIP, VMCS, one more */
#define MT_PTQ_PSB_EVENTS 6
#define MT_PTQ_FUP_NOTES 4

/* Event Trace (libipt 2.1; Debian's 2.0.5 has neither the packets nor
 * the events): a CFE, with the EVD payloads read before it, is reported
 * as an event of this type beside libipt's; mt_ptq_cfe reads it. */
#define MT_PTEV_CFE ((enum pt_event_type)0x100)
enum { MT_CFE_CR2 = 1, MT_CFE_VMXQ = 2, MT_CFE_VMXR = 4 }; /* EVD types 0, 1, 2 */
struct mt_cfe {
	uint64_t ip;           /* with the IP bit: its FUP's (else ip_suppressed) */
	uint64_t evd[3];       /* CR2, VMXQ, VMXR where has says so */
	uint8_t type, vector;  /* the CFE's: 1 intr ... 15 syscall */
	uint8_t has;           /* MT_CFE_* */
};

/* TRIG (libipt 2.2; not in 2.0.5): a trigger fired, reported as an event
 * of this type; mt_ptq_trig reads it. */
#define MT_PTEV_TRIG ((enum pt_event_type)0x101)
struct mt_trig {
	uint64_t ip;   /* MT_TRIG_IP: its FUP's */
	uint16_t icnt; /* MT_TRIG_ICNTV: instructions from the current IP to the trigger's */
	uint8_t id;    /* the trigger bits (TRBV) */
	uint8_t flags; /* MT_TRIG_* */
};

/* mt's own events keep their fields where libipt's event keeps its
 * reserved words and its variant, which follow one another */
#define MT_PTQ_FIELDS_AT offsetof(struct pt_event, reserved)
_Static_assert(offsetof(struct pt_event, variant) == MT_PTQ_FIELDS_AT + 2 * sizeof(uint64_t) &&
		       sizeof(struct mt_cfe) <= sizeof(struct pt_event) - MT_PTQ_FIELDS_AT &&
		       sizeof(struct mt_trig) <= sizeof(struct pt_event) - MT_PTQ_FIELDS_AT,
	       "mt's events fit libipt's");
static inline void mt_ptq_fields(const struct pt_event *ev, void *fields, size_t size)
{
	memcpy(fields, (const unsigned char *)ev + MT_PTQ_FIELDS_AT, size);
}
static inline void mt_ptq_set_fields(struct pt_event *ev, const void *fields, size_t size)
{
	memcpy((unsigned char *)ev + MT_PTQ_FIELDS_AT, fields, size);
}
static inline void mt_ptq_cfe(const struct pt_event *ev, struct mt_cfe *cfe)
{
	mt_ptq_fields(ev, cfe, sizeof *cfe);
}
static inline void mt_ptq_trig(const struct pt_event *ev, struct mt_trig *trig)
{
	mt_ptq_fields(ev, trig, sizeof *trig);
}

/* what the packet at the read position is, once read ahead */
enum mt_ptq_next {
	PTQ_EOS, PTQ_TNT, PTQ_TIP, PTQ_EVENT,
	PTQ_STUCK /* libipt could not read the PSB+ at fast_end: stuck_err */
};

struct mt_ptq {
	const uint8_t *begin, *end;
	const uint8_t *pos;      /* the next packet not yet decoded */
	const uint8_t *sync;     /* the PSB last synchronised at */
	const uint8_t *fast_end; /* from this PSB on, libipt reads (end: nowhere) */
	/* the PSBs the scan met (offsets, ascending): packet boundaries */
	uint64_t *psbs, psbs_inline[32];
	size_t npsbs, cappsbs;
	struct pt_query_decoder *ipt;
	bool handed;             /* libipt reads now */
	int ipt_status;          /* libipt's status flags after its last answer */
	int stuck_err;           /* what every query gets while PTQ_STUCK */
	bool ipt_queried;        /* libipt answered a query since the handover */
	enum mt_ptq_next next;
	/* TNT bits not yet asked for: the next is bit tnt_n - 1 */
	uint64_t tnt;
	unsigned tnt_n;
	/* last IP (IP compression) */
	uint64_t ip;
	bool have_ip, ip_suppressed;
	/* the time the timing packets tell (pttime.h); its cycles: the CYC
	 * packets' payloads summed since init */
	struct mt_pttime clock;
	/* the time and the cycles as of the last branch or event packet (what
	 * libipt's pt_qry_time reports; the CYCs before a packet time it) */
	uint64_t last_tsc, last_cycles;
	bool have_last;
	bool mtc_ok;             /* MTC and TMA readable: a CTC ratio, MTC bits within TMA's CTC */
	bool cyc_ok;             /* and CYC: cyc, no erratum SKL168, no calibration overflow */
	bool timed;              /* times matter: hand over only where libipt's time is the same */
	bool cyc;                /* CYC packets may be in the trace */
	/* events: PSB+ status updates waiting for PSBEND, or one bound to the
	 * next TIP, TIP.PGE or TIP.PGD (MODE.Exec, FUP) */
	struct pt_event psb_ev[MT_PTQ_PSB_EVENTS];
	unsigned psb_n, psb_head;
	struct pt_event tip_ev, tip_paging; /* the latter: a PIP between an interrupt's FUP and TIP */
	bool tip_pending, pge_enabled_sent, tip_paging_pending;
	uint8_t mode_after_tip;  /* a MODE.Exec before a TIP, told after the branch: its payload | 0x80 */
	/* PT notes bound to the next FUP (PTW and EXSTOP with their IP bit,
	 * MWAIT until an EXSTOP without one), which gives them its IP; then,
	 * once it came, ready to report, from note_head on */
	struct pt_event note_ev[MT_PTQ_FUP_NOTES];
	unsigned note_n, note_head;
	uint8_t note_fup;        /* the size of the FUP they wait behind */
	bool notes_ready;
	uint64_t ntrig;          /* TRIG packets the scan found for mt's reader */
	uint64_t evd[3];         /* Event Trace: EVD payloads waiting for their CFE */
	uint8_t evd_has;         /* MT_CFE_* */
	/* packets the scan found for mt's reader that it reads as libipt 2.1
	 * does, and 2.0.5 cannot: CFE, EVD; MODE.Exec bound to a FUP or
	 * before a far branch's TIP */
	uint64_t nlibipt21;
	/* Event Trace's packets the scan found damaged (cut short, out of
	 * context), ascending: libipt 2.0.5 cannot read on from them, so mt's
	 * reader fails there and the scan went on at the next PSB */
	struct mt_ptq_bad {
		uint64_t off;
		int err;
	} *bad;
	size_t nbad, capbad;
	const uint8_t *bad_at;   /* the first at or after the last sync (NULL: none) */
	const uint8_t *stop_at;  /* bad_at, or fast_end before it (NULL: the end) */
	int bad_err;
	uint64_t nunbound_mwait; /* MWAITs an EXSTOP without IP left without one */
};

/* Readies q over [begin, end) (config as for libipt's query decoder; its
 * begin/end are the same buffer). use_mt false, or a CPU with erratum
 * BDM70 (config->errata, from the recording's CPU): libipt reads
 * everything. timed: the caller asks for times, so libipt takes over only
 * at a PSB where its time is what reading on would give; cyc: the trace
 * may hold CYC packets, whose calibration libipt cannot be handed, so it
 * takes over the whole trace or nothing. Returns 0 or -pte_nomem. */
int mt_ptq_init(struct mt_ptq *q, const struct pt_config *config, bool use_mt, bool timed, bool cyc);
void mt_ptq_fini(struct mt_ptq *q);

int mt_ptq_sync_forward(struct mt_ptq *q, uint64_t *ip);
int mt_ptq_sync_set(struct mt_ptq *q, uint64_t *ip, uint64_t offset);
int mt_ptq_cond_branch_slow(struct mt_ptq *q, int *taken);
int mt_ptq_indirect_branch(struct mt_ptq *q, uint64_t *ip);
int mt_ptq_event(struct mt_ptq *q, struct pt_event *ev);
int mt_ptq_time(struct mt_ptq *q, uint64_t *tsc);
/* The cycles as of the last branch or event packet (the CYC payloads
 * summed); false once libipt reads (it does not say them). */
static inline bool mt_ptq_cycles(const struct mt_ptq *q, uint64_t *cycles)
{
	*cycles = q->last_cycles;
	return !q->handed;
}
uint64_t mt_ptq_offset(const struct mt_ptq *q);
uint64_t mt_ptq_sync_offset(const struct mt_ptq *q); /* of the last PSB synced on */
/* where libipt took over reading (NULL: it did not) */
const uint8_t *mt_ptq_handed_at(const struct mt_ptq *q);

/* the status flags libipt reports after a query */
static inline int mt_ptq_status(const struct mt_ptq *q)
{
	if (q->tnt_n)
		return 0;
	if (q->handed)
		return q->ipt_status;
	if (q->next == PTQ_EVENT)
		return pts_event_pending;
	/* the end, or a PSB+ cut short by it where libipt was to take over */
	return q->next == PTQ_EOS || (q->next == PTQ_STUCK && q->stuck_err == -pte_eos) ? pts_eos : 0;
}

/* The next TNT bits already read, up to max of them: how many (0 where
 * a packet must be read first), the bits in *bits (the next in the
 * highest of them). */
static inline unsigned mt_ptq_tnt_ahead(const struct mt_ptq *q, unsigned max, unsigned *bits)
{
	unsigned n = q->tnt_n < max ? q->tnt_n : max;
	*bits = n ? (unsigned)(q->tnt >> (q->tnt_n - n)) & ((1u << n) - 1) : 0;
	return n;
}

/* Takes n of the bits mt_ptq_tnt_ahead gave, as n conditional-branch
 * queries would; the status the last of them would return. */
static inline int mt_ptq_take_tnt(struct mt_ptq *q, unsigned n)
{
	q->tnt_n -= n;
	return mt_ptq_status(q);
}

static inline int mt_ptq_cond_branch(struct mt_ptq *q, int *taken)
{
	if (q->tnt_n) {
		q->tnt_n--;
		*taken = (int)((q->tnt >> q->tnt_n) & 1);
		return mt_ptq_status(q);
	}
	return mt_ptq_cond_branch_slow(q, taken);
}

#endif
