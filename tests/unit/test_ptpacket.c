/* Unit tests of ptpacket, the packet sizes mt's packet reader takes, TAP
 * output. Oracle: libipt's packet decoder (pt_pkt_next) on the same
 * bytes: packets made by libipt's encoder, whole and cut short, and every
 * offset of random bytes weighted towards the headers mt measures; and
 * libipt's pt_pkt_sync_forward for where the next PSB is. TRIG, CFE and
 * EVD are newer than Debian's libipt 2.0.5: their cases are worked by hand
 * from the layouts in the SDM (and libipt 2.1/2.2's pt_pkt_read_*). */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/ptpacket.h"

#include "tap.h"

static struct pt_config config_over(uint8_t *buf, size_t len)
{
	struct pt_config c;
	pt_config_init(&c);
	c.begin = buf;
	c.end = buf + len;
	return c;
}

/* libipt's size of the packet at off (negative: its error) and the packet */
static int ipt_size(struct pt_packet_decoder *d, uint64_t off, struct pt_packet *pkt)
{
	int rc = pt_pkt_sync_set(d, off);
	return rc < 0 ? rc : pt_pkt_next(d, pkt, sizeof *pkt);
}

/* mt's answer for the packet libipt read (or failed to read) at p, where
 * mt measures that kind: its size and what it tells beside; 1 where it
 * agrees, 0 where not, -1 where mt does not measure such packets. */
static int agrees(const uint8_t *p, const uint8_t *end, int rc, const struct pt_packet *pkt)
{
	unsigned ipc;
	uint64_t cyc = 0;
	bool fup;
	uint8_t b = p[0];
	if ((b & 3) == 1 && ((b & 0x1f) == IP_TIP || (b & 0x1f) == IP_PGE || (b & 0x1f) == IP_PGD ||
			      (b & 0x1f) == IP_FUP)) {
		int n = mt_pkt_ip_size(p, end, &ipc);
		return rc > 0 ? n == rc && ipc == pkt->payload.ip.ipc : n == 0;
	}
	if ((b & 3) == 3) {
		int n = mt_pkt_cyc_size(p, end, &cyc);
		return rc > 0 ? pkt->type == ppt_cyc && n == rc && cyc == pkt->payload.cyc.value : n == 0;
	}
	if (b == OP_EXT && end - p < 2) /* which packet is unknown: none */
		return rc < 0 && mt_pkt_note_size(p, end, &fup) == 0;
	if (b == OP_EXT) {
		uint8_t b1 = p[1];
		bool note = (b1 & EXT_PTW_MASK) == EXT_PTW || (b1 & ~EXT_IP_BIT) == EXT_EXSTOP || b1 == EXT_MWAIT ||
			    b1 == EXT_PWRE || b1 == EXT_PWRX;
		if (!note)
			return -1;
		int n = mt_pkt_note_size(p, end, &fup);
		if (rc <= 0)
			return n == 0;
		bool want = pkt->type == ppt_ptw ? pkt->payload.ptw.ip
			    : pkt->type == ppt_exstop ? pkt->payload.exstop.ip : pkt->type == ppt_mwait;
		return n == rc && fup == want;
	}
	return -1;
}

static void test_encoded(void)
{
	static uint8_t buf[64];
	struct pt_config c = config_over(buf, sizeof buf);
	struct pt_packet ps[] = {
		{.type = ppt_tip, .payload.ip = {.ipc = pt_ipc_suppressed}},
		{.type = ppt_tip, .payload.ip = {.ipc = pt_ipc_update_16, .ip = 0x1234}},
		{.type = ppt_tip_pge, .payload.ip = {.ipc = pt_ipc_update_32, .ip = 0x12345678}},
		{.type = ppt_tip_pgd, .payload.ip = {.ipc = pt_ipc_sext_48, .ip = 0x7fff12345678}},
		{.type = ppt_fup, .payload.ip = {.ipc = pt_ipc_update_48, .ip = 0x123456789abc}},
		{.type = ppt_fup, .payload.ip = {.ipc = pt_ipc_full, .ip = 0xffffffff81000000}},
		{.type = ppt_cyc, .payload.cyc.value = 1},
		{.type = ppt_cyc, .payload.cyc.value = 31},
		{.type = ppt_cyc, .payload.cyc.value = 32},
		{.type = ppt_cyc, .payload.cyc.value = 4095},
		{.type = ppt_cyc, .payload.cyc.value = 1ull << 40},
		{.type = ppt_ptw, .payload.ptw = {.plc = 0, .payload = 0xdeadbeef}},
		{.type = ppt_ptw, .payload.ptw = {.plc = 1, .payload = 0x0123456789abcdefull, .ip = 1}},
		{.type = ppt_exstop},
		{.type = ppt_exstop, .payload.exstop.ip = 1},
		{.type = ppt_mwait, .payload.mwait = {.hints = 0x20, .ext = 1}},
		{.type = ppt_pwre, .payload.pwre = {.state = 2, .sub_state = 1, .hw = 1}},
		{.type = ppt_pwrx, .payload.pwrx = {.last = 1, .deepest = 6, .interrupt = 1}},
	};
	struct pt_encoder *enc = pt_alloc_encoder(&c);
	struct pt_packet_decoder *dec = pt_pkt_alloc_decoder(&c);
	int whole = 0, cut = 0, cases = 0;
	for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
		memset(buf, 0, sizeof buf);
		pt_enc_sync_set(enc, 0);
		int len = pt_enc_next(enc, &ps[i]);
		struct pt_packet pkt;
		int rc = ipt_size(dec, 0, &pkt);
		cases++;
		whole += len > 0 && rc == len && agrees(buf, buf + len, rc, &pkt) == 1;
		/* every shorter end: libipt cannot read it, nor does mt */
		int good = 1;
		for (int k = 1; k < len; k++) {
			struct pt_config ck = config_over(buf, (size_t)k);
			struct pt_packet_decoder *dk = pt_pkt_alloc_decoder(&ck);
			int rk = ipt_size(dk, 0, &pkt);
			good &= rk < 0 && agrees(buf, buf + k, rk, &pkt) == 1;
			pt_pkt_free_decoder(dk);
		}
		cut += good;
	}
	ok(whole == cases, "packets libipt encodes (IP packets of every IPBytes, CYC, PT notes): libipt's sizes");
	ok(cut == cases, "the same packets cut short: no size, as libipt reads none");
	pt_free_encoder(enc);
	pt_pkt_free_decoder(dec);
}

static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/* random bytes, a header of a measured kind every few bytes */
static void test_random(void)
{
	enum { LEN = 1 << 18 };
	uint8_t *buf = malloc(LEN);
	uint64_t x = 52;
	static const uint8_t heads[] = {0x0d, 0x2d, 0x4d, 0x6d, 0x8d, 0xad, 0xcd, 0xed, 0x11, 0x71, 0xd1, 0x01,
					0x1d, 0x9d, 0xfd, 0x03, 0x07, 0x0f, 0xff, 0x02};
	for (size_t i = 0; i < LEN; i++) {
		unsigned r = (unsigned)rnd(&x);
		buf[i] = r % 4 ? (uint8_t)(r >> 8) : heads[(r >> 8) % sizeof heads];
		if (buf[i] == 0x02 && r % 3 == 0 && i + 1 < LEN) { /* a note's second byte */
			static const uint8_t ext[] = {0x12, 0x32, 0x52, 0x72, 0x92, 0xb2, 0xd2, 0xf2,
						      0x62, 0xe2, 0xc2, 0x22, 0xa2};
			buf[++i] = ext[(r >> 16) % sizeof ext];
		}
	}
	struct pt_config c = config_over(buf, LEN);
	struct pt_packet_decoder *dec = pt_pkt_alloc_decoder(&c);
	unsigned long checked = 0, bad = 0;
	for (size_t off = 0; off < LEN; off++) {
		struct pt_packet pkt;
		int rc = ipt_size(dec, off, &pkt);
		int a = agrees(buf + off, buf + LEN, rc, &pkt);
		if (a < 0)
			continue;
		checked++;
		if (!a && bad++ < 5)
			printf("# offset %zu: %02x %02x %02x, libipt %d\n", off, buf[off], off + 1 < LEN ? buf[off + 1] : 0,
			       off + 2 < LEN ? buf[off + 2] : 0, rc);
	}
	printf("# %lu packets (or failed reads) of measured kinds\n", checked);
	ok(checked > 100000 && !bad, "every offset of random bytes: mt's sizes are libipt's");

	/* the next PSB: random bytes with PSBs (some in longer runs of 02 82) */
	memset(buf, 0, LEN);
	for (size_t i = 0; i < LEN; i++)
		buf[i] = (uint8_t)rnd(&x);
	for (size_t at = 100; at + 64 < LEN; at += 1000 + rnd(&x) % 3000) {
		size_t pairs = 8 + (rnd(&x) % 4 ? 0 : rnd(&x) % 6);
		for (size_t k = 0; k < pairs; k++) {
			buf[at + 2 * k] = 0x02;
			buf[at + 2 * k + 1] = 0x82;
		}
	}
	unsigned long psbs = 0, wrong = 0;
	const uint8_t *p = buf;
	for (;;) {
		const uint8_t *m = mt_pkt_find_psb(p, buf + LEN);
		int rc = pt_pkt_sync_set(dec, (uint64_t)(p - buf));
		if (rc >= 0)
			rc = pt_pkt_sync_forward(dec);
		uint64_t off = 0;
		if (rc >= 0)
			pt_pkt_get_sync_offset(dec, &off);
		/* libipt syncs forward from past the current position */
		if (!m) {
			wrong += rc >= 0 && off > (uint64_t)(p - buf);
			break;
		}
		if (rc < 0 || off != (uint64_t)(m - buf) || !mt_pkt_is_psb(m, buf + LEN))
			wrong++;
		psbs++;
		p = m + 1;
	}
	printf("# %lu PSBs\n", psbs);
	ok(psbs > 50 && !wrong, "the next PSB is where libipt syncs forward to (the last 16 bytes of a longer run)");
	pt_pkt_free_decoder(dec);
	free(buf);
}

/* TRIG, CFE and EVD: by hand (libipt 2.0.5 knows none) */
static void test_newer(void)
{
	unsigned ipc = 9, bit = 9;
	int fup = -1;
	bool f = false;
	const uint8_t trig[] = {OP_TRIG, 0x00, 0x05}, trig_icnt[] = {OP_TRIG, MT_TRIG_ICNTV, 0x05, 0x10, 0x00},
		      trig_ip[] = {OP_TRIG, MT_TRIG_IP | MT_TRIG_ICNTV, 0x01, 0x00, 0x00, 0x5d, 0x34, 0x12, 0x78, 0x56},
		      trig_ip_nofup[] = {OP_TRIG, MT_TRIG_IP, 0x01, 0x0d, 0x34, 0x12};
	ok(mt_pkt_trig_size(trig, trig + 3, &fup, &ipc) == 3 && fup == 0, "TRIG: 3 bytes");
	ok(mt_pkt_trig_size(trig_icnt, trig_icnt + 5, &fup, &ipc) == 5 && mt_pkt_trig_size(trig_icnt, trig_icnt + 4, &fup, &ipc) == 0,
	   "TRIG with an instruction count: 5 bytes, none when cut");
	ok(mt_pkt_trig_size(trig_ip, trig_ip + 10, &fup, &ipc) == 10 && fup == 5 && ipc == 2,
	   "TRIG with its IP: its FUP (IPBytes 2) counted with it");
	ok(mt_pkt_trig_size(trig_ip_nofup, trig_ip_nofup + 6, &fup, &ipc) == 0, "TRIG with its IP but a TIP after it: none");
	const uint8_t cfe[] = {OP_EXT, EXT_CFE, 0x81, 0x0e}, cfe_rsm_ip[] = {OP_EXT, EXT_CFE, 0x84, 0x00},
		      evd[] = {OP_EXT, EXT_EVD, 0x01, 1, 2, 3, 4, 5, 6, 7, 8};
	ok(mt_pkt_note_size(cfe, cfe + 4, &f) == 4 && f && mt_pkt_note_size(cfe, cfe + 3, &f) == 0,
	   "CFE (an interrupt with its IP): 4 bytes bound to a FUP, none when cut");
	ok(mt_pkt_note_size(cfe_rsm_ip, cfe_rsm_ip + 4, &f) == 0, "CFE RSM with the IP bit: a bad packet");
	ok(mt_pkt_evd_size(evd, evd + 11, &bit) == 11 && bit == 2 && mt_pkt_evd_size(evd, evd + 10, &bit) == 0,
	   "EVD type 1 (VMXQ): 11 bytes, none when cut");
	const uint8_t mode_after[] = {OP_PAD, 0x3d, 0x01, 0x02}, tip_after_pip[] = {OP_EXT, EXT_PIP, 0, 0, 0, 0, 0, 0, 0x2d, 1, 2};
	ok(mt_pkt_followed_by(mode_after, mode_after + 4, IP_FUP, true) && !mt_pkt_followed_by(mode_after, mode_after + 3, IP_FUP, true) &&
	   mt_pkt_followed_by_tip(tip_after_pip, tip_after_pip + 11) && !mt_pkt_followed_by_tip(mode_after, mode_after + 4),
	   "what follows: a FUP after a PAD, a TIP after a PIP");
	ok(mt_pkt_exec_mode_ok(0x01) && mt_pkt_exec_mode_ok(0x05) && !mt_pkt_exec_mode_ok(0x03) &&
	   mt_pkt_exec_mode(0x01) == ptem_64bit && mt_pkt_exec_mode(0x02) == ptem_32bit && mt_pkt_exec_mode(0x04) == ptem_16bit,
	   "MODE.Exec payloads: CS.L and CS.D both set is reserved; IF ignored for the mode");
}

int main(void)
{
	test_encoded();
	test_random();
	test_newer();
	return tap_done();
}
