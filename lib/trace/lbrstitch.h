/* lbrstitch: LBR call stacks stitched across samples, as perf script
 * --stitch-lbr does (util/machine.c, has_stitched_lbr): an LBR in
 * call-stack mode holds a thread's innermost calls only; where a sample's
 * oldest entries are its thread's previous sample's, in the same LBR
 * registers, the previous sample's older entries continue the stack, and
 * so on while samples keep stitching. Per thread: the previous sample's
 * entries and the frames stitched so far. */
#ifndef MT_LBRSTITCH_H
#define MT_LBRSTITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the entries a sample's LBR may hold (Arm BRBE 64, LBR 32) */
#define MT_LBR_STITCH_MAX_ENTRIES 64
/* the stitched frames kept a thread, outermost dropped beyond */
#define MT_LBR_STITCH_MAX_FRAMES 4096

struct mt_lbr_thread;
struct mt_lbr_stitches {
	struct mt_lbr_thread *v; /* open addressing by tid (base/table.h) */
	size_t cap, n;
};

/* Stitches the sample of thread tid whose LBR call stack is entries[nr]
 * (struct perf_branch_entry, newest first), its newest in register hw_idx
 * of an LBR of max_lbr registers. True when it stitches onto the thread's
 * previous sample: *frames[*n] are the stitched frames to put after the
 * sample's own (each an entry's source, innermost first; valid until the
 * next call). False when it does not (the thread starts afresh), nr is
 * past MT_LBR_STITCH_MAX_ENTRIES, or memory ran out. The sample becomes
 * the thread's previous one. */
bool mt_lbr_stitch(struct mt_lbr_stitches *st, uint32_t tid, const uint8_t *entries, uint64_t nr, uint64_t hw_idx,
		   unsigned max_lbr, const uint64_t **frames, size_t *n);
void mt_lbr_stitches_free(struct mt_lbr_stitches *st);

#endif
