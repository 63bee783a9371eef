/* Unit tests of ptquery, mt's packet reader, TAP output. Oracle: libipt's
 * query decoder on the same bytes. Packet sequences are made with libipt's
 * encoder, timing packets above all (TSC, TMA, MTC, CYC, CBR), and each
 * query's answer, status and time, and each event's type and time, must be
 * libipt's; where the sequence is one mt reads itself, it must not have
 * handed any of it to libipt. */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/ptquery.h"

#include "tap.h"


/* A Skylake-like clock: TSC / CTC = 216 / 2, MTC every 2^3 CTC ticks. */
static struct pt_config base_config(uint8_t nom_freq)
{
	struct pt_config c;
	pt_config_init(&c);
	c.cpuid_0x15_eax = 2;
	c.cpuid_0x15_ebx = 216;
	c.mtc_freq = 3;
	c.nom_freq = nom_freq;
	return c;
}

struct seq {
	uint8_t buf[1 << 14];
	struct pt_config cfg;
	struct pt_encoder *enc;
	int bad;
};

static void seq_init(struct seq *s, uint8_t nom_freq)
{
	s->cfg = base_config(nom_freq);
	s->cfg.begin = s->buf;
	s->cfg.end = s->buf + sizeof s->buf;
	s->enc = pt_alloc_encoder(&s->cfg);
	s->bad = !s->enc;
}

static void put(struct seq *s, struct pt_packet p)
{
	if (!s->bad && pt_enc_next(s->enc, &p) < 0)
		s->bad = 1;
}

static void psb_header(struct seq *s, uint64_t tsc, int tma_ctc, uint16_t tma_fc, uint8_t cbr)
{
	put(s, (struct pt_packet){.type = ppt_psb});
	if (tsc)
		put(s, (struct pt_packet){.type = ppt_tsc, .payload.tsc.tsc = tsc});
	if (tma_ctc >= 0)
		put(s, (struct pt_packet){.type = ppt_tma, .payload.tma = {.ctc = (uint16_t)tma_ctc, .fc = tma_fc}});
	if (cbr)
		put(s, (struct pt_packet){.type = ppt_cbr, .payload.cbr.ratio = cbr});
	put(s, (struct pt_packet){.type = ppt_mode, .payload.mode = {.leaf = pt_mol_exec, .bits.exec.csl = 1}});
	put(s, (struct pt_packet){.type = ppt_fup, .payload.ip = {.ipc = pt_ipc_sext_48, .ip = 0x1000}});
	put(s, (struct pt_packet){.type = ppt_psbend});
}

static void tnt(struct seq *s, int taken)
{
	put(s, (struct pt_packet){.type = ppt_tnt_8, .payload.tnt = {.bit_size = 1, .payload = (uint64_t)taken}});
}

static void mtc(struct seq *s, uint8_t ctc)
{
	put(s, (struct pt_packet){.type = ppt_mtc, .payload.mtc.ctc = ctc});
}

static void cyc(struct seq *s, uint64_t cycles)
{
	put(s, (struct pt_packet){.type = ppt_cyc, .payload.cyc.value = cycles});
}

static void tsc(struct seq *s, uint64_t v)
{
	put(s, (struct pt_packet){.type = ppt_tsc, .payload.tsc.tsc = v});
}

static void cbr(struct seq *s, uint8_t ratio)
{
	put(s, (struct pt_packet){.type = ppt_cbr, .payload.cbr.ratio = ratio});
}

/* n MTC periods, each a CYC of `cycles`, a branch taken and the MTC (*m: its CTC) */
static void periods(struct seq *s, uint8_t *m, unsigned n, uint64_t cycles)
{
	for (unsigned i = 0; i < n; i++) {
		cyc(s, cycles);
		tnt(s, 1);
		mtc(s, ++*m);
	}
}

/* Decodes the sequence with both, query by query (events while one is
 * pending, else a conditional branch), comparing everything; then checks
 * whether mt read all of it itself (want_mt). */
static void compare(struct seq *s, int want_mt, const char *name)
{
	uint64_t len = 0;
	put(s, (struct pt_packet){.type = ppt_psb}); /* the last stretch ends at a PSB */
	if (s->bad || pt_enc_get_offset(s->enc, &len) < 0) {
		ok(0, name);
		return;
	}
	pt_free_encoder(s->enc);
	struct pt_config cfg = s->cfg;
	cfg.end = s->buf + len;
	struct mt_ptq q;
	struct pt_query_decoder *d = pt_qry_alloc_decoder(&cfg);
	if (!d || mt_ptq_init(&q, &cfg, true, true, true) < 0) {
		ok(0, name);
		return;
	}
	uint64_t ip_mt = 0, ip_ipt = 0;
	int st_mt = mt_ptq_sync_forward(&q, &ip_mt), st_ipt = pt_qry_sync_forward(d, &ip_ipt);
	int same = st_mt == st_ipt && ip_mt == ip_ipt, steps = 0, branches = 0;
	while (same && st_mt >= 0 && steps++ < 10000) {
		if (st_mt & pts_event_pending) {
			struct pt_event a, b;
			st_mt = mt_ptq_event(&q, &a);
			st_ipt = pt_qry_event(d, &b, sizeof b);
			same = st_mt == st_ipt &&
			       (st_mt < 0 || (a.type == b.type && a.has_tsc == b.has_tsc && (!a.has_tsc || a.tsc == b.tsc)));
		} else {
			int ta = 0, tb = 0;
			st_mt = mt_ptq_cond_branch(&q, &ta);
			st_ipt = pt_qry_cond_branch(d, &tb);
			same = st_mt == st_ipt && ta == tb;
			branches++;
		}
		uint64_t t_mt = 0, t_ipt = 0;
		uint32_t lost_mtc, lost_cyc;
		int r_mt = mt_ptq_time(&q, &t_mt), r_ipt = pt_qry_time(d, &t_ipt, &lost_mtc, &lost_cyc);
		if (same && (r_mt != r_ipt || (r_mt >= 0 && t_mt != t_ipt))) {
			printf("# %s: step %d: time %llu (mt) vs %llu (libipt)\n", name, steps,
			       (unsigned long long)t_mt, (unsigned long long)t_ipt);
			same = 0;
		}
	}
	int handed = mt_ptq_handed_at(&q) != NULL;
	int good = same && branches >= 3 && st_mt == -pte_eos && (!want_mt || !handed);
	if (!good)
		printf("# %s: same %d, %d branches, status %d (mt) %d (libipt), %d steps, handed over %d\n", name,
		       same, branches, st_mt, st_ipt, steps, handed);
	ok(good, name);
	mt_ptq_fini(&q);
	pt_qry_free_decoder(d);
}

static void test_mtc(void)
{
	struct seq s;
	seq_init(&s, 24);
	psb_header(&s, 1000000, 0x12f0, 5, 28); /* MTC payload 0x5e next: near the 8-bit wrap */
	for (unsigned i = 0; i < 300; i++) {
		tnt(&s, 1);
		mtc(&s, (uint8_t)(0x5f + i)); /* wraps at 256 */
	}
	compare(&s, 1, "MTC after TSC and TMA (fast counter 5), wrapping: times as libipt's");

	seq_init(&s, 24);
	psb_header(&s, 1000000, 0x1000, 0, 28);
	mtc(&s, 0x01);
	tnt(&s, 1);
	mtc(&s, 0x05); /* MTCs lost: a jump of four periods */
	tnt(&s, 0);
	tsc(&s, 2000000); /* on its own: MTCs ignored until the next TMA */
	mtc(&s, 0x06);
	tnt(&s, 1);
	mtc(&s, 0x07);
	tnt(&s, 1);
	compare(&s, 1, "MTC: lost periods, then ignored after a TSC of its own");
}

static void test_cyc(void)
{
	struct seq s;
	seq_init(&s, 24);
	psb_header(&s, 1000000, 0x1234, 5, 28);
	uint8_t m = (0x1234 >> 3) & 0xff;
	for (unsigned i = 0; i < 50; i++) {
		cyc(&s, 100 + i * 37);
		tnt(&s, 1);
		if (i % 3 == 0)
			mtc(&s, ++m);
		if (i % 7 == 0) /* periods with no CYC: the next CYC spans them */
			mtc(&s, ++m);
	}
	compare(&s, 1, "CYC at the nominal ratio, then calibrated over MTC periods, spanning several");

	seq_init(&s, 24);
	psb_header(&s, 1000000, 0x1234, 0, 28);
	m = (0x1234 >> 3) & 0xff;
	mtc(&s, ++m);
	mtc(&s, ++m);
	mtc(&s, ++m);
	cyc(&s, 10); /* far less than three periods' worth: clamped to none */
	tnt(&s, 1);
	cyc(&s, 5000);
	tnt(&s, 1);
	mtc(&s, ++m);
	mtc(&s, ++m);
	cyc(&s, 100000); /* more than the periods it spans */
	tnt(&s, 1);
	compare(&s, 1, "CYC spanning MTC periods: its cycles for the earlier periods taken off, or all of them");

	seq_init(&s, 0); /* no nominal ratio: CYCs lost until two MTCs calibrate */
	psb_header(&s, 1000000, 0x1234, 7, 28);
	m = (0x1234 >> 3) & 0xff;
	for (unsigned i = 0; i < 20; i++) {
		cyc(&s, 300);
		tnt(&s, i & 1);
		if (i % 4 == 3)
			mtc(&s, ++m);
	}
	compare(&s, 1, "CYC without a nominal ratio: lost until MTC periods calibrate");

	seq_init(&s, 0); /* no MTC: calibrated by the cycles between two PSB+ TSCs */
	psb_header(&s, 1000000, 0x1234, 0, 28);
	for (unsigned i = 0; i < 5; i++) {
		cyc(&s, 400);
		tnt(&s, 1);
	}
	psb_header(&s, 1003000, 0x1300, 0, 28);
	for (unsigned i = 0; i < 5; i++) {
		cyc(&s, 400);
		tnt(&s, 1);
	}
	compare(&s, 1, "CYC calibrated by TSCs in PSB+ where there is no MTC");

	seq_init(&s, 0); /* no MTC, so no TMA either (as hardware without MTCEn) */
	psb_header(&s, 1000000, -1, 0, 28);
	for (unsigned i = 0; i < 5; i++) {
		cyc(&s, 400);
		tnt(&s, 1);
	}
	psb_header(&s, 1003000, -1, 0, 28);
	for (unsigned i = 0; i < 5; i++) {
		cyc(&s, 400 + i);
		tnt(&s, 1);
	}
	psb_header(&s, 1006000, -1, 0, 24);
	for (unsigned i = 0; i < 5; i++) {
		cyc(&s, 100);
		tnt(&s, 1);
	}
	compare(&s, 1, "CYC with TSC only (no TMA): calibrated by TSC pairs");

	seq_init(&s, 24); /* CYC before any time at all: a PSB+ without TSC */
	psb_header(&s, 0, -1, 0, 28);
	cyc(&s, 400);
	tnt(&s, 1);
	mtc(&s, 3);
	cyc(&s, 400);
	tnt(&s, 1);
	mtc(&s, 4);
	cyc(&s, 400);
	tnt(&s, 1);
	psb_header(&s, 1000000, 0x1234, 0, 28);
	cyc(&s, 400);
	tnt(&s, 1);
	compare(&s, 1, "CYC and MTC before any TSC: no time, then the TSC's");

	seq_init(&s, 0);
	psb_header(&s, 1000000, 0x1234, 0, 28);
	cyc(&s, 300); /* lost: no ratio yet */
	tnt(&s, 1);
	psb_header(&s, 1100000, 0x1400, 0, 28); /* a fast counter of 0 */
	m = (0x1400 >> 3) & 0xff;
	mtc(&s, ++m);
	cyc(&s, 300);
	tnt(&s, 1);
	mtc(&s, ++m);
	cyc(&s, 300);
	tnt(&s, 1);
	cyc(&s, 300);
	tnt(&s, 1);
	compare(&s, 1, "CYC lost before a PSB+ whose TMA has no fast counter");
}

/* A TSC or a CBR of their own in a cycle-accurate trace: libipt's CTC
 * starts over at the TSC, its calibration at the CBR. */
static void test_cyc_own_tsc_cbr(void)
{
	struct seq s;
	seq_init(&s, 24);
	psb_header(&s, 1000000, 0x1234, 5, 28);
	uint8_t m = (0x1234 >> 3) & 0xff;
	periods(&s, &m, 6, 300);
	tsc(&s, 2000000); /* on its own, then CYCs */
	for (unsigned i = 0; i < 4; i++) {
		cyc(&s, 500);
		tnt(&s, 1);
	}
	compare(&s, 1, "CYC after a TSC of its own (which resets the CTC: the CYCs add nothing)");

	seq_init(&s, 24);
	psb_header(&s, 1000000, 0x1234, 5, 28);
	m = (0x1234 >> 3) & 0xff;
	periods(&s, &m, 6, 300);
	cbr(&s, 32); /* on its own: a new ratio */
	periods(&s, &m, 6, 300);
	compare(&s, 1, "CYC after a CBR of its own (the calibration starts over at the nominal ratio)");
}

int main(void)
{
	test_mtc();
	test_cyc();
	test_cyc_own_tsc_cbr();
	return tap_done();
}
