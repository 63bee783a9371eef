/* textmemo: a text stream's extra columns, kept by their bytes. A
 * symbolized stream's lines end in the same columns again and again (an
 * address pair's symbols: some 180 bytes of the 230), so the text reader
 * parses such a tail once; later lines with the same bytes get the same
 * parsed columns, whose strings stay put while the memo's epoch lasts
 * (events.h strings_epoch, extra_id): a consumer then scans and interns
 * them once, as it does for a binary stream's string table.
 * Bounded: the kept bytes fill one arena, then it all starts over under a
 * new epoch. Where tails rarely repeat, the memo stands aside for a while
 * (it would only copy them). */
#ifndef MT_TEXTMEMO_H
#define MT_TEXTMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/aside.h"
#include "stream/events.h"

struct mt_textmemo_tail {
	uint64_t id;      /* the events' extra_id */
	uint64_t hash;
	const char *raw;  /* the tail as read: TABs and '='s in */
	size_t len;
	unsigned n;
	struct mt_kv *kv; /* into a copy of raw with NULs at the column and key ends */
	struct mt_textmemo_tail *next; /* the slot's chain */
};

struct mt_textmemo {
	uint64_t epoch;    /* the strings' (events.h); 0: not yet started */
	struct mt_textmemo_tail **slot; /* chains, by the hash's top bits */
	char *arena;
	size_t arena_cap, arena_used;
	struct mt_aside aside; /* standing aside where it seldom finds */
};

/* The arena's size is a bound on memory, not a requirement (0: the
 * default, 16 MiB). Returns false when out of memory. */
bool mt_textmemo_init(struct mt_textmemo *m, size_t arena_bytes);
void mt_textmemo_fini(struct mt_textmemo *m);

/* Whether tails are worth looking up now (false: standing aside; each
 * call counts a line). */
bool mt_textmemo_active(struct mt_textmemo *m);
/* The kept tail with these bytes, or NULL. hash: any function of the line
 * that is the same for the same tail (its top bits choose the slot); the
 * bytes decide. */
const struct mt_textmemo_tail *mt_textmemo_find(struct mt_textmemo *m, const char *raw, size_t len, uint64_t hash);
/* Keeps a tail that was not found: raw its bytes as read, kv[0..n) its
 * columns as parsed, pointing into raw (not yet cut by NULs), one after
 * another (a TAB between them, no other column among them). Returns the
 * kept tail, or NULL (too big for the arena). Filling the arena starts a
 * new epoch: every tail kept before is gone. */
const struct mt_textmemo_tail *mt_textmemo_keep(struct mt_textmemo *m, const char *raw, size_t len, uint64_t hash,
						const struct mt_kv *kv, unsigned n);
#endif
