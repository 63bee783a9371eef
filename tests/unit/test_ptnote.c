/* Unit tests of ptnote, PT notes as mt's note events, TAP output. The
 * oracle: libipt's ptxed, which prints these events (its print_event):
 * C-states as the hint plus one, wrapped at 16 (pwre: c<state+1>.<sub+1>),
 * the CFE types by libipt 2.1's names, payloads and bases in hex; each
 * case below is worked by hand from it. */
#include <intel-pt.h>
#include <stdio.h>
#include <string.h>

#include "trace/ptnote.h"
#include "trace/ptquery.h"

#include "tap.h"

/* the note's columns as "k=v k=v" */
static const char *cols(const struct mt_ptnote *n)
{
	static char s[256];
	size_t len = 0;
	s[0] = '\0';
	for (unsigned i = 0; i < n->n; i++)
		len += (size_t)snprintf(s + len, sizeof s - len, "%s%s=%s", i ? " " : "", n->kv[i].key,
					n->kv[i].val ? n->kv[i].val : "");
	return s;
}

static int is(const struct pt_event *ev, bool power, enum mt_event_kind kind, uint64_t ip, const char *want)
{
	struct mt_ptnote n;
	if (!mt_ptnote_of(ev, power, &n))
		return 0;
	if (n.kind != kind || n.ip != ip || strcmp(cols(&n), want)) {
		printf("# kind %d ip %#llx: %s\n", n.kind, (unsigned long long)n.ip, cols(&n));
		return 0;
	}
	return 1;
}

static int none(const struct pt_event *ev, bool power)
{
	struct mt_ptnote n;
	return !mt_ptnote_of(ev, power, &n);
}

int main(void)
{
	struct pt_event ev = {.type = ptev_ptwrite, .variant.ptwrite = {.ip = 0x401000, .payload = 0xdeadbeef}};
	ok(is(&ev, false, MT_EV_PTWRITE, 0x401000, "payload=0xdeadbeef"), "PTWRITE: its payload at its IP, power or not");
	ev.ip_suppressed = 1;
	ok(is(&ev, false, MT_EV_PTWRITE, 0, "payload=0xdeadbeef"), "PTWRITE without its IP: at 0");

	ev = (struct pt_event){.type = ptev_mwait, .variant.mwait = {.ip = 0x402000, .hints = 0x20, .ext = 1}};
	ok(none(&ev, false) && is(&ev, true, MT_EV_MWAIT, 0x402000, "hints=0x20 ext=0x1"),
	   "MWAIT: only with power; hints and extensions");
	ev = (struct pt_event){.type = ptev_pwre, .variant.pwre = {.state = 2, .sub_state = 1, .hw = 1}};
	ok(none(&ev, false) && is(&ev, true, MT_EV_PWRE, 0, "cstate=3 substate=2 hw=1"),
	   "PWRE: state 2, sub-state 1 are ptxed's c3.2, hardware-initiated");
	ev = (struct pt_event){.type = ptev_pwre, .variant.pwre = {.state = 15, .sub_state = 15}};
	ok(is(&ev, true, MT_EV_PWRE, 0, "cstate=0 substate=0"), "PWRE state 15: C0 (wraps at 16)");
	ev = (struct pt_event){.type = ptev_pwrx, .variant.pwrx = {.last = 1, .deepest = 6, .interrupt = 1}};
	ok(is(&ev, true, MT_EV_PWRX, 0, "cstate=2 deepest=7 wake=int"), "PWRX woken by an interrupt");
	ev.variant.pwrx.interrupt = 0;
	ev.variant.pwrx.store = 1;
	bool store = is(&ev, true, MT_EV_PWRX, 0, "cstate=2 deepest=7 wake=store");
	ev.variant.pwrx.store = 0;
	ev.variant.pwrx.autonomous = 1;
	bool hw = is(&ev, true, MT_EV_PWRX, 0, "cstate=2 deepest=7 wake=hw");
	ev.variant.pwrx.autonomous = 0;
	ok(store && hw && is(&ev, true, MT_EV_PWRX, 0, "cstate=2 deepest=7 wake=other") && none(&ev, false),
	   "PWRX woken by a store, by hardware, by nothing said");
	ev = (struct pt_event){.type = ptev_exstop, .variant.exstop.ip = 0x403000};
	ok(none(&ev, false) && is(&ev, true, MT_EV_EXSTOP, 0x403000, ""), "EXSTOP: only with power, no columns");

	ev = (struct pt_event){.type = ptev_vmcs, .variant.vmcs.base = 0x12345000};
	ok(is(&ev, false, MT_EV_VMCS, 0, "base=0x12345000"), "VMCS: its base");
	ev.status_update = 1;
	ok(none(&ev, false), "a PSB+'s VMCS (a status update): no note");
	ev = (struct pt_event){.type = ptev_async_vmcs, .variant.async_vmcs = {.base = 0x1000, .ip = 0x404000}};
	ok(is(&ev, false, MT_EV_VMCS, 0x404000, "base=0x1000"), "an asynchronous VMCS: at its IP");

	ev = (struct pt_event){.type = MT_PTEV_CFE};
	struct mt_cfe cfe = {.ip = 0x405000, .type = 1, .vector = 14, .has = MT_CFE_CR2, .evd = {0x7f0000001000}};
	mt_ptq_set_fields(&ev, &cfe, sizeof cfe);
	ok(is(&ev, false, MT_EV_CFE, 0x405000, "type=intr vector=14 cr2=0x7f0000001000"),
	   "CFE: an interrupt, its vector and the CR2 its EVD gave");
	cfe = (struct mt_cfe){.type = 8, .has = MT_CFE_VMXQ | MT_CFE_VMXR, .evd = {0, 0x30, 0x1}};
	mt_ptq_set_fields(&ev, &cfe, sizeof cfe);
	ev.ip_suppressed = 1;
	ok(is(&ev, false, MT_EV_CFE, 0, "type=vmexit vmxq=0x30 vmxr=0x1"), "CFE: a VM exit (no vector), its EVDs");
	cfe.type = 11;
	mt_ptq_set_fields(&ev, &cfe, sizeof cfe);
	ok(none(&ev, false), "CFE of type 11 (none in libipt 2.1): no note");

	ev = (struct pt_event){.type = MT_PTEV_TRIG};
	struct mt_trig t = {.ip = 0x406000, .icnt = 3, .id = 5, .flags = MT_TRIG_IP | MT_TRIG_ICNTV | MT_TRIG_MULT};
	mt_ptq_set_fields(&ev, &t, sizeof t);
	ok(is(&ev, false, MT_EV_TRIG, 0x406000, "id=0x05 mult=1 icnt=3"), "TRIG: its id, MULT and count");

	ev = (struct pt_event){.type = ptev_enabled};
	ok(none(&ev, true), "not a note: none");
	return tap_done();
}
