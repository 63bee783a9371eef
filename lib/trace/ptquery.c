#include "trace/ptquery.h"
#include "trace/ptpacket.h"
#include "trace/ptscan.h"
#include "trace/pttime.h"

#include <stdlib.h>
#include <string.h>

/* the reader's own constants beside the packets' (ptpacket.h) */
enum {
	MODE_AFTER_TIP = 0x80, /* mt_ptq.mode_after_tip: set, with the payload below */
	PSB_EVENTS_MAX = MT_PTQ_PSB_EVENTS,
};

/* ---- reading packets ---- */

static void update_ip(struct mt_ptq *q, const uint8_t *p, unsigned ipc)
{
	uint64_t v = mt_pkt_load_le(p + 1, mt_pkt_ip_bytes(ipc));
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
	if (q->clock.time.have_tsc) {
		ev->has_tsc = 1;
		ev->tsc = q->clock.time.tsc;
	}
}

/* PIP: CR3 bits 51:5 above the non-root bit */
static void paging_event(const struct mt_ptq *q, struct pt_event *ev, const uint8_t *p)
{
	uint64_t payload = mt_pkt_load_le(p + 2, 6);
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
		ev->variant.ptwrite.payload = mt_pkt_load_le(p + 2, ev->variant.ptwrite.size);
	} else if ((b1 & ~EXT_IP_BIT) == EXT_EXSTOP) {
		new_event(q, ev, ptev_exstop);
	} else if (b1 == EXT_MWAIT) {
		new_event(q, ev, ptev_mwait);
		ev->variant.mwait.hints = (uint32_t)mt_pkt_load_le(p + 2, 4);
		ev->variant.mwait.ext = (uint32_t)mt_pkt_load_le(p + 6, 4);
	} else if (b1 == EXT_PWRE) {
		uint64_t pl = mt_pkt_load_le(p + 2, 2);
		new_event(q, ev, ptev_pwre);
		ev->variant.pwre.state = (uint8_t)((pl >> 12) & 0xf);
		ev->variant.pwre.sub_state = (uint8_t)((pl >> 8) & 0xf);
		ev->variant.pwre.hw = !!(pl & PWRE_HW);
	} else { /* PWRX */
		uint64_t pl = mt_pkt_load_le(p + 2, 5);
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
			mt_pttime_tsc(&q->clock, mt_pkt_load_le(p + 1, 7), true);
			q->pos += TSC_SIZE;
		} else if (b == OP_EXT && p[1] == EXT_TMA) {
			mt_pttime_tma(&q->clock, (uint16_t)mt_pkt_load_le(p + 2, 2), (uint16_t)mt_pkt_load_le(p + 5, 2));
			q->pos += TMA_SIZE;
		} else if (b == OP_EXT && p[1] == EXT_CBR) {
			struct pt_event *ev = &q->psb_ev[q->psb_n++];
			new_event(q, ev, ptev_cbr);
			ev->variant.cbr.ratio = p[2];
			ev->status_update = 1;
			mt_pttime_cbr(&q->clock, p[2], true);
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
			ev->variant.async_vmcs.base = mt_pkt_load_le(p + 2, 5) << 12;
			ev->status_update = 1;
			q->pos += VMCS_SIZE;
		} else if (b == OP_MODE) {
			struct pt_event *ev = &q->psb_ev[q->psb_n++];
			new_event(q, ev, p[1] == MODE_TSX_NONE ? ptev_tsx : ptev_exec_mode);
			if (ev->type == ptev_exec_mode)
				ev->variant.exec_mode.mode = mt_pkt_exec_mode(p[1]);
			ev->status_update = 1;
			q->pos += MODE_SIZE;
		} else if ((b & 0x1f) == IP_FUP) {
			int n = mt_pkt_ip_size(p, q->end, &ipc);
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
		payload = mt_pkt_load_le(p + 2, 6);
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
				int n = mt_pkt_evd_size(p, q->end, &bit);
				if (bit) {
					unsigned i = (unsigned)__builtin_ctz(bit);
					q->evd[i] = mt_pkt_load_le(p + 3, 8);
					q->evd_has |= (uint8_t)bit;
				}
				q->pos += n;
				continue;
			}
			bool fup;
			if (mt_pkt_note_size(p, q->end, &fup)) {
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
			mt_pttime_tsc(&q->clock, mt_pkt_load_le(p + 1, 7), false);
			q->pos += TSC_SIZE;
		} else if (b == OP_MTC) {
			mt_pttime_mtc(&q->clock, p[1]);
			q->pos += MTC_SIZE;
		} else if ((b & 3) == 3) {
			uint64_t cycles = 0;
			q->pos += mt_pkt_cyc_size(p, q->end, &cycles);
			mt_pttime_cyc(&q->clock, cycles);
		} else if (b == OP_MODE) {
			if (mt_pkt_followed_by(p + MODE_SIZE, q->end, IP_TIP, true)) {
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
			int n = mt_pkt_ip_size(p, q->end, &ipc);
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
	q->last_tsc = q->clock.time.tsc;
	q->have_last = q->clock.time.have_tsc;
	q->last_cycles = q->clock.cycles;
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
	int n = mt_pkt_ip_size(p, q->end, &ipc), flags = 0;
	update_ip(q, p, ipc);
	if (q->ip_suppressed)
		flags = pts_ip_suppressed;
	else
		*ip = q->ip;
	q->pos += n;
	if (q->mode_after_tip) { /* told next, at the TIP's IP */
		struct pt_event *m = &q->note_ev[0];
		new_event(q, m, ptev_exec_mode);
		m->variant.exec_mode.mode = mt_pkt_exec_mode(q->mode_after_tip);
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
		int nn = p[0] == OP_EXT ? mt_pkt_note_size(p, q->end, &fup) : 0;
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
			bool to_fup = mt_pkt_followed_by(p + MODE_SIZE, q->end, IP_FUP, true);
			struct pt_event *m = to_fup ? &q->note_ev[q->note_n++] : &q->tip_ev;
			new_event(q, m, ptev_exec_mode);
			m->variant.exec_mode.mode = mt_pkt_exec_mode(p[1]);
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
			int n = mt_pkt_trig_size(p, q->end, &tfup, &ipc);
			struct mt_trig t = {.id = p[2], .flags = p[1] & (MT_TRIG_IP | MT_TRIG_ICNTV | MT_TRIG_MULT)};
			if (p[1] & MT_TRIG_ICNTV)
				t.icnt = (uint16_t)mt_pkt_load_le(p + TRIG_SIZE, TRIG_ICNT_SIZE);
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
			mt_pttime_cbr(&q->clock, p[2], false);
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
		int n = mt_pkt_ip_size(p, q->end, &ipc);
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
	if (p < q->fast_end && !mt_ptq_scanned_psb(q, p))
		q->fast_end = p; /* inside a packet: libipt reads on from here */
	if (p >= q->fast_end) {
		q->handed = true;
		return note_ipt(q, pt_qry_sync_set(q->ipt, ip, (uint64_t)(p - q->begin)));
	}
	mt_pttime_restart(&q->clock);
	q->have_last = false;
	q->psb_n = q->psb_head = 0;
	q->tip_pending = q->pge_enabled_sent = q->notes_ready = q->tip_paging_pending = false;
	q->mode_after_tip = 0;
	q->note_n = q->note_head = q->note_fup = 0;
	q->evd_has = 0;
	q->bad_at = mt_ptq_next_bad(q, p, &q->bad_err);
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


int mt_ptq_sync_forward(struct mt_ptq *q, uint64_t *ip)
{
	q->tnt_n = 0; /* bits left when the walk gave up are void */
	if (q->handed)
		return note_ipt(q, pt_qry_sync_forward(q->ipt, ip));
	const uint8_t *from = q->pos;
	if (q->sync && from < q->sync + PSB_SIZE)
		from = q->sync + PSB_SIZE;
	const uint8_t *p = mt_pkt_find_psb(from, q->end);
	if (!p)
		return -pte_eos;
	if (!q->fast_end)
		q->fast_end = mt_ptq_scan(q, p);
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
	if (!mt_pkt_is_psb(p, q->end))
		return -pte_nosync;
	if (!q->fast_end)
		q->fast_end = mt_ptq_scan(q, p);
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
	mt_pttime_init(&q->clock, config);
	q->mtc_ok = mt_pttime_mtc_ok(&q->clock);
	q->timed = timed;
	q->cyc = cyc;
	/* libipt fails a calibration whose MTC period exceeds 56 bits of TSC */
	q->cyc_ok = cyc && q->mtc_ok && !config->errata.skl168 &&
		    (uint64_t)mt_pttime_ctc_wrap(&q->clock) * q->clock.ctc_ebx / q->clock.ctc_eax < (1ull << 56);
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
