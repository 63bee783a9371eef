#include "trace/ptnote.h"
#include "trace/ptquery.h"

#include <stdio.h>

static void note_col(struct mt_ptnote *n, const char *key, const char *fmt, uint64_t x)
{
	snprintf(n->v[n->n], sizeof n->v[n->n], fmt, (unsigned long long)x);
	n->kv[n->n] = (struct mt_kv){key, n->v[n->n]};
	n->n++;
}

static void note_str(struct mt_ptnote *n, const char *key, const char *val)
{
	n->kv[n->n++] = (struct mt_kv){key, val};
}

/* The note's kind and IP (0: not known): a note to report. */
static bool note_at(struct mt_ptnote *n, enum mt_event_kind kind, uint64_t ip)
{
	n->kind = kind;
	n->ip = ip;
	return true;
}

/* The C-state of an MWAIT hint's nibble, numbered as libipt's ptxed
 * numbers them (0: C1 ... 0xf: C0). */
static unsigned cstate_of(unsigned hint)
{
	return (hint + 1) & 0xf;
}

/* Event Trace's CFE types by number (libipt's pt_cfe_type; 11 is none),
 * and whether the type has a vector */
static const struct {
	const char *name;
	bool vector;
} cfe_types[16] = {
	[1] = {"intr", true}, [2] = {"iret", false}, [3] = {"smi", false}, [4] = {"rsm", false},
	[5] = {"sipi", true}, [6] = {"init", false}, [7] = {"vmentry", false}, [8] = {"vmexit", false},
	[9] = {"vmexit_intr", true}, [10] = {"shutdown", false}, [12] = {"uintr", true}, [13] = {"uiret", false},
	[14] = {"swintr", true}, [15] = {"syscall", false},
};

/* A CFE as a note: its type, the vector of those that have one, the EVD
 * payloads before it. */
static bool cfe_note(const struct pt_event *ev, struct mt_ptnote *n)
{
	struct mt_cfe cfe;
	mt_ptq_cfe(ev, &cfe);
	if (cfe.type >= 16 || !cfe_types[cfe.type].name)
		return false; /* a type libipt 2.1 does not know: it tells nothing either */
	note_str(n, "type", cfe_types[cfe.type].name);
	if (cfe_types[cfe.type].vector)
		note_col(n, "vector", "%llu", cfe.vector);
	static const char *const evd_keys[3] = {"cr2", "vmxq", "vmxr"};
	for (unsigned i = 0; i < 3; i++)
		if (cfe.has & (1u << i) && n->n < MT_PTNOTE_MAX_COLS)
			note_col(n, evd_keys[i], "0x%llx", cfe.evd[i]);
	return note_at(n, MT_EV_CFE, ev->ip_suppressed ? 0 : cfe.ip);
}

/* A TRIG as a note: its trigger bits, MULT, the instruction count; at the
 * IP the walk found for it (walk_event), 0x0 when none. */
static bool trig_note(const struct pt_event *ev, struct mt_ptnote *n)
{
	struct mt_trig t;
	mt_ptq_trig(ev, &t);
	note_col(n, "id", "0x%02llx", t.id);
	if (t.flags & MT_TRIG_MULT)
		note_col(n, "mult", "%llu", 1);
	if (t.flags & MT_TRIG_ICNTV)
		note_col(n, "icnt", "%llu", t.icnt);
	return note_at(n, MT_EV_TRIG, ev->ip_suppressed ? 0 : t.ip);
}

bool mt_ptnote_of(const struct pt_event *ev, bool power, struct mt_ptnote *n)
{
	n->n = 0;
	if (ev->type == MT_PTEV_CFE)
		return cfe_note(ev, n);
	if (ev->type == MT_PTEV_TRIG)
		return trig_note(ev, n);
	switch (ev->type) {
	case ptev_ptwrite:
		note_col(n, "payload", "0x%llx", ev->variant.ptwrite.payload);
		return note_at(n, MT_EV_PTWRITE, ev->ip_suppressed ? 0 : ev->variant.ptwrite.ip);
	case ptev_mwait:
		if (!power)
			break;
		note_col(n, "hints", "0x%llx", ev->variant.mwait.hints);
		note_col(n, "ext", "0x%llx", ev->variant.mwait.ext);
		return note_at(n, MT_EV_MWAIT, ev->ip_suppressed ? 0 : ev->variant.mwait.ip);
	case ptev_pwre:
		if (!power)
			break;
		note_col(n, "cstate", "%llu", cstate_of(ev->variant.pwre.state));
		note_col(n, "substate", "%llu", cstate_of(ev->variant.pwre.sub_state));
		if (ev->variant.pwre.hw)
			note_col(n, "hw", "%llu", 1);
		return note_at(n, MT_EV_PWRE, 0);
	case ptev_pwrx:
		if (!power)
			break;
		note_col(n, "cstate", "%llu", cstate_of(ev->variant.pwrx.last));
		note_col(n, "deepest", "%llu", cstate_of(ev->variant.pwrx.deepest));
		note_str(n, "wake", ev->variant.pwrx.interrupt ? "int" : ev->variant.pwrx.store ? "store"
				     : ev->variant.pwrx.autonomous ? "hw" : "other");
		return note_at(n, MT_EV_PWRX, 0);
	case ptev_exstop:
		if (!power)
			break;
		return note_at(n, MT_EV_EXSTOP, ev->ip_suppressed ? 0 : ev->variant.exstop.ip);
	case ptev_vmcs:
		if (ev->status_update)
			break;
		note_col(n, "base", "0x%llx", ev->variant.vmcs.base);
		return note_at(n, MT_EV_VMCS, 0);
	case ptev_async_vmcs:
		/* a PSB+'s restates the VMCS of a guest's trace at every PSB:
		 * no change, and no note */
		if (ev->status_update)
			break;
		note_col(n, "base", "0x%llx", ev->variant.async_vmcs.base);
		return note_at(n, MT_EV_VMCS, ev->variant.async_vmcs.ip);
	default:
		break;
	}
	return false;
}

