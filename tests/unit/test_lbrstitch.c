/* Unit tests of LBR call stacks stitched across samples
 * (trace/lbrstitch.c), TAP output. Oracle: perf's rule (util/machine.c,
 * has_stitched_lbr) worked by hand on a 4-register LBR in call-stack mode:
 * the call at depth d sits in register (d - 1) % 4; a sample holds the
 * innermost 4 active calls, newest first, hw_idx its newest's register.
 * tests/perfforms.bats holds the same against perf script --stitch-lbr on
 * a synthesized recording. */
#include <stdio.h>
#include <string.h>

#include "trace/brstack.h"
#include "trace/lbrstitch.h"

#include "tap.h"

/* the LBR of a thread whose calls c1..c<depth> are active: call k from
 * 0x1000 * k to 0x1000 * k + 0x100 */
static uint64_t lbr(uint8_t *e, unsigned depth)
{
	unsigned n = depth < 4 ? depth : 4;
	for (unsigned i = 0; i < n; i++) {
		uint64_t from = 0x1000ull * (depth - i), to = from + 0x100, flags = 0;
		memcpy(e + i * MT_BRANCH_ENTRY_SIZE, &from, 8);
		memcpy(e + i * MT_BRANCH_ENTRY_SIZE + 8, &to, 8);
		memcpy(e + i * MT_BRANCH_ENTRY_SIZE + 16, &flags, 8);
	}
	return n;
}

int main(void)
{
	struct mt_lbr_stitches st = {0};
	uint8_t e[4 * MT_BRANCH_ENTRY_SIZE];
	const uint64_t *f;
	size_t n;
	uint64_t nr = lbr(e, 6); /* c6..c3, hw_idx 5 % 4 */
	ok(!mt_lbr_stitch(&st, 7, e, nr, 1, 4, &f, &n) && n == 0, "a thread's first sample: nothing to stitch");
	nr = lbr(e, 7); /* c7..c4 at hw_idx 2: its oldest, c4, in register 3, which the first held as its third */
	ok(mt_lbr_stitch(&st, 7, e, nr, 2, 4, &f, &n) && n == 1 && f[0] == 0x3000,
	   "one call deeper: the first sample's c3 continues the stack");
	nr = lbr(e, 8); /* c8..c5 at hw_idx 3 */
	ok(mt_lbr_stitch(&st, 7, e, nr, 3, 4, &f, &n) && n == 2 && f[0] == 0x4000 && f[1] == 0x3000,
	   "deeper again: c4 and the c3 stitched before, innermost first");
	ok(!mt_lbr_stitch(&st, 9, e, nr, 3, 4, &f, &n) && n == 0, "another thread: its own first sample");
	nr = lbr(e, 5); /* back to c5..c2 at hw_idx 0: register 1 held c6 */
	ok(!mt_lbr_stitch(&st, 7, e, nr, 0, 4, &f, &n) && n == 0,
	   "returned below: the registers no longer agree, the stitched frames dropped");
	nr = lbr(e, 6);
	ok(mt_lbr_stitch(&st, 7, e, nr, 1, 4, &f, &n) && n == 1 && f[0] == 0x2000, "and stitches afresh from there");
	nr = lbr(e, 2); /* two entries: c2, c1 */
	ok(!mt_lbr_stitch(&st, 7, e, nr, 1, 4, &f, &n), "a shorter stack in other registers: no stitch");
	ok(!mt_lbr_stitch(&st, 7, e, MT_LBR_STITCH_MAX_ENTRIES + 1, 0, 4, &f, &n) && n == 0,
	   "more entries than any LBR has: refused");
	for (uint32_t tid = 100; tid < 300; tid++) /* the table grows, each thread found again */
		mt_lbr_stitch(&st, tid, e, lbr(e, 6), 1, 4, &f, &n);
	nr = lbr(e, 7);
	ok(mt_lbr_stitch(&st, 150, e, nr, 2, 4, &f, &n) && n == 1 && f[0] == 0x3000, "200 threads: each its own");
	mt_lbr_stitches_free(&st);
	return tap_done();
}
