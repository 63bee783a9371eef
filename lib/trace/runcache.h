/* runcache: runs of conditional branches that report nothing, looked up by
 * where they start and the TNT bits that steer them (libxdc's idea).
 *
 * Between two reported branches the walk passes block after block whose
 * conditional branch either falls through or jumps within its function:
 * each takes one TNT bit and reports nothing. A run is such a stretch,
 * found once by walking the blocks and then passed in one step: its
 * instructions, its last one, the TNT bits it takes and where it leaves
 * off. A run always ends at a conditional branch (the walk's count of
 * instructions since the last packet starts over there), before a
 * branch of any other kind, one that would be reported, or a block the
 * image does not hold; those are the walk's own to take. */
#ifndef MT_RUNCACHE_H
#define MT_RUNCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_image;

#define MT_RUN_MAX_BITS 8    /* TNT bits a lookup is keyed by */
/* slots: from 2^12 (a small trace touches few pages: each run found
 * touches one where the hash puts it) doubling to 2^16 as runs are found */
#define MT_RUNCACHE_MIN_BITS 10
#define MT_RUNCACHE_MAX_BITS 16

struct mt_run {
	uint64_t ip;          /* the first block's */
	uint64_t next_ip;     /* where the walk goes on after the run */
	uint64_t last_ip;     /* the run's last instruction: its last conditional branch */
	uint32_t insns;       /* instructions in the run */
	uint8_t bits, nbits;  /* the key: nbits TNT bits, the first in bit nbits - 1 */
	uint8_t used;         /* TNT bits the run takes (0: no run starts here) */
	uint8_t blocks;       /* blocks it passes */
	uint32_t generation;  /* of the image's blocks it was found in (0: an empty slot) */
};

/* A direct-mapped table of runs (a run found overwrites another with the
 * same slot), each valid for the generation of the image's blocks it was
 * found in. Kept with the image, across the decodes of its segments.
 * Once runs found have put out others a quarter as often as it has slots,
 * it starts afresh twice as large (the runs are found again, from blocks
 * already decoded), up to 2^MT_RUNCACHE_MAX_BITS slots.
 * Zeroed: empty, its table allocated on first use. */
struct mt_runcache {
	struct mt_run *runs;
	unsigned bits;        /* 2^bits slots */
	uint64_t evicted;     /* runs put out by others since the table was made */
};

void mt_runcache_fini(struct mt_runcache *rc);

/* Finds the run from ip when the next TNT bits are the low nbits of bits
 * (1 to MT_RUN_MAX_BITS, the first in bit nbits - 1). Never NULL: where
 * no run starts (the first block does not end in an unreported
 * conditional branch, or cannot be decoded), one with used 0; NULL only
 * where the table cannot be allocated. */
const struct mt_run *mt_runcache_find_new(struct mt_runcache *rc, struct mt_image *img, uint64_t ip,
					  unsigned bits, unsigned nbits);

static inline size_t mt_runcache_slot(const struct mt_runcache *rc, uint64_t ip, unsigned bits, unsigned nbits)
{
	uint64_t key = ip ^ ((uint64_t)(bits | nbits << MT_RUN_MAX_BITS) << 48);
	return (size_t)((key * 0x9e3779b97f4a7c15u) >> (64 - rc->bits));
}

/* The fast path inline: a run found before, in this generation of the
 * image's blocks (img->generation). */
static inline const struct mt_run *mt_runcache_find(struct mt_runcache *rc, struct mt_image *img,
						    uint32_t generation, uint64_t ip, unsigned bits, unsigned nbits)
{
	if (rc->runs) {
		const struct mt_run *r = &rc->runs[mt_runcache_slot(rc, ip, bits, nbits)];
		if (r->ip == ip && r->bits == bits && r->nbits == nbits && r->generation == generation)
			return r;
	}
	return mt_runcache_find_new(rc, img, ip, bits, nbits);
}

#endif
