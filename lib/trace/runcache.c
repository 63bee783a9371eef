#define _GNU_SOURCE
#include "trace/runcache.h"
#include "trace/image.h"

#include <intel-pt.h>
#include <sys/mman.h>

static size_t table_bytes(unsigned bits)
{
	return ((size_t)1 << bits) * sizeof(struct mt_run);
}

void mt_runcache_fini(struct mt_runcache *rc)
{
	if (rc->runs)
		munmap(rc->runs, table_bytes(rc->bits));
	rc->runs = NULL;
}

/* Walks the blocks from ip as the decoder's walk would, taking the TNT
 * bits in turn; the run ends at the last conditional branch that took one
 * and reported nothing. */
static void find_run(struct mt_image *img, struct mt_run *r)
{
	uint64_t ip = r->ip;
	uint32_t insns = 0;
	unsigned used = 0, blocks = 0;
	while (blocks < UINT8_MAX) {
		int err;
		/* a pointer into the image's table, good until the next lookup */
		const struct mt_code_block *b = mt_image_block(img, ip, &err);
		if (!b)
			return;
		insns += b->ninsn;
		blocks++;
		uint64_t next = b->end_ip + b->len;
		if (b->cls == ptic_other) { /* a block cut short: no branch */
			ip = next;
			continue;
		}
		if (b->cls == ptic_jump && b->direct && b->stays) { /* needs no packet, reports nothing */
			ip = b->target;
			continue;
		}
		if (b->cls != ptic_cond_jump || used == r->nbits)
			return;
		bool taken = (r->bits >> (r->nbits - 1 - used)) & 1;
		if (taken && !b->stays)
			return; /* leaves its function: reported */
		used++;
		ip = taken ? b->target : next;
		r->used = (uint8_t)used;
		r->blocks = (uint8_t)blocks;
		r->insns = insns;
		r->last_ip = b->end_ip;
		r->next_ip = ip;
	}
}

const struct mt_run *mt_runcache_find_new(struct mt_runcache *rc, struct mt_image *img, uint64_t ip,
					  unsigned bits, unsigned nbits)
{
	if (!rc->runs || (rc->evicted >= (1u << rc->bits) / 4 && rc->bits < MT_RUNCACHE_MAX_BITS)) {
		/* zero pages, each touched where a run is kept: mapped, as
		 * calloc in a thread's arena would clear it all */
		unsigned nb = rc->runs ? rc->bits + 1 : MT_RUNCACHE_MIN_BITS;
		void *m = mmap(NULL, table_bytes(nb), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED) {
			mt_runcache_fini(rc);
			rc->runs = m;
			rc->bits = nb;
			rc->evicted = 0;
		} else if (!rc->runs) {
			return NULL;
		} /* else: on with the smaller table */
	}
	struct mt_run *r = &rc->runs[mt_runcache_slot(rc, ip, bits, nbits)];
	rc->evicted += r->nbits != 0; /* another run was kept there */
	*r = (struct mt_run){.ip = ip, .bits = (uint8_t)bits, .nbits = (uint8_t)nbits,
			     .generation = img->generation};
	find_run(img, r);
	return r;
}
