/* Unit tests of ptscan, how far mt's packet reader reads a trace itself,
 * TAP output. Packets made with libipt's encoder (Event Trace's by hand,
 * from the SDM's layouts); where the scan must stop and hand over is
 * worked by hand from the rules in ptscan.h: the PSB before the first
 * packet mt does not read, the last timed one for a timed decode, the
 * first with CYC. */
#include <intel-pt.h>
#include <stdio.h>
#include <string.h>

#include "trace/ptscan.h"

#include "tap.h"

static uint8_t buf[4096];
static size_t len;
static size_t psb_at[8];
static unsigned npsb;

static void put(struct pt_encoder *e, struct pt_packet p)
{
	uint64_t off;
	if (p.type == ppt_psb && pt_enc_get_offset(e, &off) >= 0)
		psb_at[npsb++] = (size_t)off;
	if (pt_enc_next(e, &p) < 0)
		printf("# cannot encode packet type %d\n", p.type);
}

/* PSB+ (with a TSC or not), a branch or two, repeated n times; between
 * the second and third, extra bytes (raw) after the second's branches */
static void sequence(unsigned n, const bool *tsc, const uint8_t *raw, size_t nraw)
{
	struct pt_config c;
	pt_config_init(&c);
	c.begin = buf;
	c.end = buf + sizeof buf;
	memset(buf, 0, sizeof buf);
	npsb = 0;
	struct pt_encoder *e = pt_alloc_encoder(&c);
	for (unsigned i = 0; i < n; i++) {
		put(e, (struct pt_packet){.type = ppt_psb});
		if (tsc[i])
			put(e, (struct pt_packet){.type = ppt_tsc, .payload.tsc.tsc = 1000 * (i + 1)});
		put(e, (struct pt_packet){.type = ppt_mode, .payload.mode = {.leaf = pt_mol_exec, .bits.exec.csl = 1}});
		put(e, (struct pt_packet){.type = ppt_fup, .payload.ip = {.ipc = pt_ipc_sext_48, .ip = 0x1000}});
		put(e, (struct pt_packet){.type = ppt_psbend});
		put(e, (struct pt_packet){.type = ppt_tnt_8, .payload.tnt = {.bit_size = 3, .payload = 5}});
		put(e, (struct pt_packet){.type = ppt_tip, .payload.ip = {.ipc = pt_ipc_update_16, .ip = 0x2000}});
		if (i == 1 && nraw) {
			uint64_t off;
			pt_enc_get_offset(e, &off);
			memcpy(buf + off, raw, nraw);
			pt_enc_sync_set(e, off + nraw);
		}
	}
	uint64_t off = 0;
	pt_enc_get_offset(e, &off);
	len = (size_t)off;
	pt_free_encoder(e);
}

/* The scan from the first PSB: the offset it hands over at (len: none) */
static size_t scan(bool timed, bool cyc, struct mt_ptq *q)
{
	struct pt_config c;
	pt_config_init(&c);
	c.begin = buf;
	c.end = buf + len;
	if (mt_ptq_init(q, &c, true, timed, cyc) < 0)
		return (size_t)-1;
	return (size_t)(mt_ptq_scan(q, buf) - buf);
}

int main(void)
{
	const bool all[4] = {true, true, true, true}, first[4] = {true, false, true, true};
	struct mt_ptq q;

	sequence(3, all, NULL, 0);
	size_t at = scan(false, false, &q);
	bool psbs = q.npsbs == 3;
	for (unsigned i = 0; i < 3 && psbs; i++)
		psbs = q.psbs[i] == psb_at[i] && mt_ptq_scanned_psb(&q, buf + psb_at[i]) &&
		       !mt_ptq_scanned_psb(&q, buf + psb_at[i] + 2);
	ok(at == len, "PSB+, TNT, TIP three times: mt reads it all");
	ok(psbs, "every PSB noted where it was encoded; 2 bytes in is none");
	mt_ptq_fini(&q);

	/* a VMCS outside PSB+ (mt reads it only there), after the second */
	const uint8_t vmcs[] = {0x02, 0xc8, 0x01, 0x02, 0x03, 0x04, 0x05};
	sequence(3, all, vmcs, sizeof vmcs);
	ok(scan(false, false, &q) == psb_at[1], "an untimed decode: libipt reads from the PSB before the VMCS");
	mt_ptq_fini(&q);
	sequence(3, first, vmcs, sizeof vmcs);
	ok(scan(true, false, &q) == psb_at[0], "a timed one: from the last PSB+ with a TSC (the second has none)");
	mt_ptq_fini(&q);
	sequence(3, all, vmcs, sizeof vmcs);
	ok(scan(true, true, &q) == psb_at[0], "with CYC: from the first (the calibration carries on)");
	mt_ptq_fini(&q);

	/* Event Trace: two EVDs of one type before a CFE is bad context to
	 * libipt: noted, and the scan goes on at the next PSB */
	const uint8_t evd2[] = {0x02, 0x53, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 0x02, 0x53, 0x00, 1, 2, 3, 4, 5, 6, 7, 8};
	sequence(3, all, evd2, sizeof evd2);
	at = scan(false, false, &q);
	int err = 0;
	const uint8_t *bad = mt_ptq_next_bad(&q, buf, &err);
	ok(at == len && bad && (size_t)(bad - buf) == psb_at[2] - sizeof evd2 + 11 &&
	   err == -pte_bad_context && q.nlibipt21 == 2,
	   "a second EVD of one type: a bad packet at its offset, the scan read on from the next PSB");
	ok(!mt_ptq_next_bad(&q, bad + 1, &err), "no other");
	mt_ptq_fini(&q);

	/* a trace ending inside a PSB+: libipt reads that PSB+ */
	sequence(2, all, NULL, 0);
	len = psb_at[1] + 16 + 8;
	ok(scan(false, false, &q) == psb_at[1], "the end inside a PSB+: from that PSB");
	mt_ptq_fini(&q);
	return tap_done();
}
