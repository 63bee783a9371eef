/* Unit tests of pttime, the time timing packets tell, TAP output. Oracle:
 * libipt's query decoder (pt_qry_time after each conditional branch) on
 * the same packets, made with libipt's encoder: random sequences of MTC,
 * CYC, TSC and CBR packets between TNTs, after a PSB+ with TSC, TMA and
 * CBR. pttime is handed each timing packet libipt's packet decoder reads,
 * in order; at each TNT bit its time must be libipt's. */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/pttime.h"

#include "tap.h"

enum { BUF = 1 << 13 };

static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/* One random sequence into cfg's buffer (its length; 0 where the encoder
 * fails): a PSB+ (TSC, TMA, CBR, MODE.Exec, FUP), then TNTs with timing
 * packets between them; cyc: with CYC packets. */
static size_t make_sequence(const struct pt_config *cfg, uint64_t *x, bool cyc)
{
	struct pt_encoder *enc = pt_alloc_encoder(cfg);
	uint64_t tsc = 0x100000 + rnd(x) % 100000;
	uint8_t ctc = (uint8_t)rnd(x);
	struct pt_packet ps[] = {
		{.type = ppt_psb},
		{.type = ppt_tsc, .payload.tsc.tsc = tsc},
		{.type = ppt_tma, .payload.tma = {.ctc = (uint16_t)(ctc << 3 | (rnd(x) & 7)), .fc = (uint16_t)(rnd(x) % 512)}},
		{.type = ppt_cbr, .payload.cbr.ratio = (uint8_t)(20 + rnd(x) % 20)},
		{.type = ppt_mode, .payload.mode = {.leaf = pt_mol_exec, .bits.exec.csl = 1}},
		{.type = ppt_fup, .payload.ip = {.ipc = pt_ipc_sext_48, .ip = 0x1000}},
		{.type = ppt_psbend},
	};
	int bad = !enc;
	for (size_t i = 0; i < sizeof ps / sizeof *ps && !bad; i++)
		bad = pt_enc_next(enc, &ps[i]) < 0;
	for (int n = 0; n < 60 && !bad; n++) {
		unsigned r = (unsigned)rnd(x) % 16;
		struct pt_packet p = {.type = ppt_tnt_8, .payload.tnt = {.bit_size = (uint8_t)(1 + rnd(x) % 6), .payload = rnd(x)}};
		if (r < 5) {
			ctc = (uint8_t)(ctc + 1 + (rnd(x) % 8 == 0)); /* now and then a period without one */
			p = (struct pt_packet){.type = ppt_mtc, .payload.mtc.ctc = ctc};
		} else if (r < 9 && cyc) {
			p = (struct pt_packet){.type = ppt_cyc, .payload.cyc.value = 1 + rnd(x) % (rnd(x) % 4 ? 200 : 5000)};
		} else if (r == 9) {
			tsc += 1000 + rnd(x) % 100000;
			p = (struct pt_packet){.type = ppt_tsc, .payload.tsc.tsc = tsc};
		} else if (r == 10) {
			p = (struct pt_packet){.type = ppt_cbr, .payload.cbr.ratio = (uint8_t)(20 + rnd(x) % 20)};
		}
		bad = pt_enc_next(enc, &p) < 0;
	}
	struct pt_packet end = {.type = ppt_psb};
	uint64_t len = 0;
	bad = bad || pt_enc_next(enc, &end) < 0 || pt_enc_get_offset(enc, &len) < 0;
	pt_free_encoder(enc);
	return bad ? 0 : (size_t)len;
}

/* libipt's time after each conditional branch (events drained), into
 * want; how many, -1 where its decode fails */
static int ipt_times(const struct pt_config *cfg, uint64_t *want, int cap)
{
	struct pt_query_decoder *d = pt_qry_alloc_decoder(cfg);
	uint64_t ip;
	int st = d ? pt_qry_sync_forward(d, &ip) : -1, n = 0;
	while (st >= 0 && n < cap) {
		if (st & pts_event_pending) {
			struct pt_event ev;
			st = pt_qry_event(d, &ev, sizeof ev);
			continue;
		}
		int taken;
		st = pt_qry_cond_branch(d, &taken);
		if (st < 0)
			break;
		uint32_t lost_mtc, lost_cyc;
		uint64_t t = 0;
		if (pt_qry_time(d, &t, &lost_mtc, &lost_cyc) < 0)
			t = UINT64_MAX;
		want[n++] = t;
	}
	pt_qry_free_decoder(d);
	return st == -pte_eos || n == cap ? n : -1;
}

/* pttime's time at each TNT bit, the packets read in order by libipt's
 * packet decoder */
static int pttime_times(const struct pt_config *cfg, uint64_t *got, int cap)
{
	struct pt_packet_decoder *d = pt_pkt_alloc_decoder(cfg);
	struct mt_pttime t;
	mt_pttime_init(&t, cfg);
	bool in_psb = false;
	int n = 0, rc = d ? pt_pkt_sync_forward(d) : -1;
	struct pt_packet p;
	while (rc >= 0 && (rc = pt_pkt_next(d, &p, sizeof p)) >= 0) {
		switch (p.type) {
		case ppt_psb:
			if (n) /* the next sync: done */
				goto done;
			mt_pttime_restart(&t);
			in_psb = true;
			break;
		case ppt_psbend:
			in_psb = false;
			break;
		case ppt_tsc:
			mt_pttime_tsc(&t, p.payload.tsc.tsc, in_psb);
			break;
		case ppt_tma:
			mt_pttime_tma(&t, p.payload.tma.ctc, p.payload.tma.fc);
			break;
		case ppt_mtc:
			mt_pttime_mtc(&t, p.payload.mtc.ctc);
			break;
		case ppt_cyc:
			mt_pttime_cyc(&t, p.payload.cyc.value);
			break;
		case ppt_cbr:
			mt_pttime_cbr(&t, p.payload.cbr.ratio, in_psb);
			break;
		case ppt_tnt_8:
		case ppt_tnt_64:
			for (unsigned i = 0; i < p.payload.tnt.bit_size && n < cap; i++)
				got[n++] = t.time.have_tsc ? t.time.tsc : UINT64_MAX;
			break;
		default:
			break;
		}
	}
done:
	pt_pkt_free_decoder(d);
	return n;
}

static void test_random(bool cyc, uint8_t nom_freq, const char *name)
{
	static uint8_t buf[BUF];
	uint64_t x = 7 + cyc + nom_freq, want[512], got[512];
	int sequences = 0, same = 0, branches = 0;
	for (int i = 0; i < 300; i++) {
		struct pt_config cfg;
		pt_config_init(&cfg);
		cfg.begin = buf;
		cfg.end = buf + BUF;
		cfg.cpuid_0x15_eax = 2;
		cfg.cpuid_0x15_ebx = 216;
		cfg.mtc_freq = 3;
		cfg.nom_freq = nom_freq;
		size_t len = make_sequence(&cfg, &x, cyc);
		if (!len)
			continue;
		cfg.end = buf + len;
		int nw = ipt_times(&cfg, want, 512), ng = pttime_times(&cfg, got, 512);
		sequences++;
		if (nw > 0 && nw == ng && !memcmp(want, got, (size_t)nw * sizeof *want)) {
			same++;
			branches += nw;
		} else if (sequences - same <= 3) {
			int k = 0;
			while (k < nw && k < ng && want[k] == got[k])
				k++;
			printf("# sequence %d: %d and %d branches, first differing %d: libipt %llu, mt %llu\n", i, nw, ng, k,
			       k < nw ? (unsigned long long)want[k] : 0, k < ng ? (unsigned long long)got[k] : 0);
		}
	}
	printf("# %s: %d of %d sequences the same, %d branches\n", name, same, sequences, branches);
	ok(sequences == 300 && same == sequences && branches > 3000, name);
}

int main(void)
{
	test_random(false, 0, "MTC and TSC: libipt's time at every branch");
	test_random(true, 0, "with CYC, calibrated by MTCs only: libipt's time");
	test_random(true, 36, "with CYC and the nominal ratio (CBR calibrates): libipt's time");

	/* by hand: TSC 1000, TMA CTC 0x10 FC 4, then MTC 0x03 (CTC 0x18 at
	 * mtc_freq 3): 8 CTC ticks of 216/2 TSC ticks each, from the TSC
	 * less FC: 1000 - 4 + 864 */
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.cpuid_0x15_eax = 2;
	cfg.cpuid_0x15_ebx = 216;
	cfg.mtc_freq = 3;
	struct mt_pttime t;
	mt_pttime_init(&t, &cfg);
	mt_pttime_tsc(&t, 1000, true);
	mt_pttime_tma(&t, 0x10, 4);
	mt_pttime_mtc(&t, 0x03);
	ok(t.time.have_tsc && t.time.tsc == 1000 - 4 + 864, "an MTC after TMA: the CTC ticks since, in TSC ticks");
	ok(mt_pttime_mtc_ok(&t) && mt_pttime_ctc_wrap(&t) == 1u << 11, "MTC readable; its CTC wraps at 2^(3+8)");
	cfg.mtc_freq = 9;
	mt_pttime_init(&t, &cfg);
	ok(!mt_pttime_mtc_ok(&t), "MTC bits beyond TMA's 16 bits of CTC: not readable");
	return tap_done();
}
