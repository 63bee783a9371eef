/* lbrstitch: LBR call stacks stitched across samples (lbrstitch.h). */
#include "trace/lbrstitch.h"

#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "base/table.h"
#include "trace/brstack.h"
#include "trace/perfdata.h"

struct mt_lbr_thread {
	uint32_t tid;
	bool used, has_prev;
	uint64_t prev_nr, prev_hw_idx;
	uint8_t prev[MT_LBR_STITCH_MAX_ENTRIES * MT_BRANCH_ENTRY_SIZE];
	uint64_t *frames; /* each a from address, innermost first */
	size_t nframes, capframes;
};

void mt_lbr_stitches_free(struct mt_lbr_stitches *st)
{
	for (size_t i = 0; i < st->cap; i++)
		free(st->v[i].frames);
	free(st->v);
	*st = (struct mt_lbr_stitches){0};
}

static bool thread_used(const void *slot)
{
	return ((const struct mt_lbr_thread *)slot)->used;
}

static size_t thread_home(const void *slot, size_t cap, void *ctx)
{
	(void)ctx;
	return (size_t)(((const struct mt_lbr_thread *)slot)->tid * 2654435761u) & (cap - 1);
}

static const struct mt_table_ops thread_ops = {sizeof(struct mt_lbr_thread), thread_used, thread_home};

static struct mt_lbr_thread *thread_of(struct mt_lbr_stitches *st, uint32_t tid)
{
	if (!mt_table_reserve((void **)&st->v, &st->cap, st->n, &thread_ops, NULL))
		return NULL;
	struct mt_lbr_thread key = {.tid = tid};
	size_t k = thread_home(&key, st->cap, NULL);
	while (st->v[k].used && st->v[k].tid != tid)
		k = (k + 1) & (st->cap - 1);
	if (!st->v[k].used) {
		st->v[k] = (struct mt_lbr_thread){.tid = tid, .used = true};
		st->n++;
	}
	return &st->v[k];
}

bool mt_lbr_stitch(struct mt_lbr_stitches *st, uint32_t tid, const uint8_t *entries, uint64_t nr, uint64_t hw_idx,
		   unsigned max_lbr, const uint64_t **frames, size_t *n)
{
	*frames = NULL;
	*n = 0;
	struct mt_lbr_thread *t = nr <= MT_LBR_STITCH_MAX_ENTRIES ? thread_of(st, tid) : NULL;
	if (!t)
		return false;
	bool stitched = false;
	if (t->has_prev && nr && max_lbr) {
		/* the register of this sample's oldest entry, and where that
		 * register stands among the previous sample's entries */
		uint64_t cur_base = max_lbr - nr + hw_idx + 1;
		uint64_t distance = t->prev_hw_idx > cur_base ? t->prev_hw_idx - cur_base
							       : max_lbr + t->prev_hw_idx - cur_base;
		if (distance + 1 <= t->prev_nr) {
			/* entries equal from there on, register by register:
			 * from, to and flags */
			for (uint64_t i = distance + 1, j = nr; i-- > 0 && j-- > 0;) {
				if (memcmp(t->prev + i * MT_BRANCH_ENTRY_SIZE, entries + j * MT_BRANCH_ENTRY_SIZE,
					   MT_BRANCH_ENTRY_SIZE))
					break;
				stitched = true;
			}
		}
		if (stitched) {
			/* the previous sample's entries older than the shared
			 * ones, innermost first, before those stitched already */
			uint64_t add = t->prev_nr - 1 - distance;
			if (t->nframes + add > MT_LBR_STITCH_MAX_FRAMES)
				t->nframes = MT_LBR_STITCH_MAX_FRAMES - add;
			if (add && !mt_grow((void **)&t->frames, &t->capframes, t->nframes + add, sizeof *t->frames)) {
				stitched = false;
			} else if (add) {
				memmove(t->frames + add, t->frames, t->nframes * sizeof *t->frames);
				for (uint64_t k = 0; k < add; k++)
					t->frames[k] = mt_rd64(t->prev + (distance + 1 + k) * MT_BRANCH_ENTRY_SIZE);
				t->nframes += add;
			}
		}
	}
	if (!stitched)
		t->nframes = 0;
	t->has_prev = true;
	t->prev_nr = nr;
	t->prev_hw_idx = hw_idx;
	memcpy(t->prev, entries, nr * MT_BRANCH_ENTRY_SIZE);
	*frames = t->frames;
	*n = t->nframes;
	return stitched;
}
