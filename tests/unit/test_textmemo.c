/* textmemo: tails kept and found by their bytes, their columns cut at the
 * places the caller parsed (the tail's own bytes are the oracle); a full
 * arena starts a new epoch with nothing found; tails sharing a hash are
 * all kept; a window of misses makes
 * the memo stand aside for a while, then look again. */
#include <stdio.h>
#include <string.h>

#include "base/strtab.h"
#include "stream/textmemo.h"
#include "tap.h"

/* kv for a tail "k0=v0\tflag\tk2=" parsed in place (pointers into raw) */
static unsigned columns(const char *raw, struct mt_kv *kv)
{
	kv[0] = (struct mt_kv){raw, raw + 3};
	kv[1] = (struct mt_kv){raw + 6, NULL};
	kv[2] = (struct mt_kv){raw + 11, raw + 14};
	return 3;
}

int main(void)
{
	struct mt_textmemo m;
	ok(mt_textmemo_init(&m, 64 << 10) && m.epoch, "a memo starts with an epoch of its own");
	char raw[] = "k0=v0\tflag\tk2=";
	size_t len = strlen(raw);
	uint64_t h = mt_hash_bytes(raw, len);
	ok(!mt_textmemo_find(&m, raw, len, h), "an empty memo finds nothing");
	struct mt_kv kv[3];
	unsigned n = columns(raw, kv);
	const struct mt_textmemo_tail *t = mt_textmemo_keep(&m, raw, len, h, kv, n);
	ok(t && t->n == 3 && !strcmp(t->kv[0].key, "k0") && !strcmp(t->kv[0].val, "v0") &&
	   !strcmp(t->kv[1].key, "flag") && !t->kv[1].val && !strcmp(t->kv[2].key, "k2") && !strcmp(t->kv[2].val, "") &&
	   t->kv[0].key != raw && !strcmp(raw, "k0=v0\tflag\tk2="),
	   "kept: its own copy, cut into the columns as parsed (a key alone, an empty last value); the line untouched");
	char again[sizeof raw];
	memcpy(again, raw, sizeof raw);
	ok(mt_textmemo_find(&m, again, len, h) == t && t->id, "the same bytes elsewhere: the kept tail, with its id");
	again[1] = '1';
	ok(!mt_textmemo_find(&m, again, len, h), "one byte else, the same hash: not found");
	ok(!mt_textmemo_find(&m, raw, len - 1, h), "a shorter tail: not found");
	struct mt_kv okv[3];
	columns(again, okv);
	const struct mt_textmemo_tail *other = mt_textmemo_keep(&m, again, len, h, okv, 3);
	ok(other && mt_textmemo_find(&m, again, len, h) == other && mt_textmemo_find(&m, raw, len, h) == t,
	   "two tails with one hash: both kept, each found");

	/* too big for the arena (an eighth at most): refused, nothing lost */
	static char big[16 << 10];
	memset(big, 'x', sizeof big - 1);
	struct mt_kv bkv = {big, NULL};
	ok(!mt_textmemo_keep(&m, big, sizeof big - 1, 1, &bkv, 1) && mt_textmemo_find(&m, raw, len, h) == t,
	   "a tail over an eighth of the arena is not kept; the others stay");

	/* fill the arena: a new epoch, the old tails gone */
	uint64_t first = m.epoch;
	unsigned kept = 0;
	char tail[64];
	while (m.epoch == first && kept < 100000) {
		int tl = snprintf(tail, sizeof tail, "k0=%05u\tflag\tk2=", kept);
		struct mt_kv tk[3];
		columns(tail, tk);
		tk[1].key = tail + 9;
		tk[2] = (struct mt_kv){tail + 14, tail + 17};
		if (!mt_textmemo_keep(&m, tail, (size_t)tl, mt_hash_bytes(tail, (size_t)tl), tk, 3))
			break;
		kept++;
	}
	ok(m.epoch != first && kept > 100 && !mt_textmemo_find(&m, raw, len, h),
	   "the arena full: a new epoch, the tails kept before it are not found");

	/* standing aside: a window of 4096 lookups under a quarter hits */
	m.aside = (struct mt_aside){0};
	for (int i = 0; i < 4096; i++)
		mt_textmemo_find(&m, "nothing", 7, (uint64_t)i);
	unsigned aside = 0;
	while (!mt_textmemo_active(&m) && aside < 1000000)
		aside++;
	ok(aside == 1u << 16 && mt_textmemo_active(&m), "4096 misses: 65536 lines without looking, then again");
	m.aside = (struct mt_aside){0};
	int tl = snprintf(tail, sizeof tail, "k0=hit\tflag\tk2=");
	struct mt_kv tk[3] = {{tail, tail + 3}, {tail + 7, NULL}, {tail + 12, tail + 15}};
	mt_textmemo_keep(&m, tail, (size_t)tl, 5, tk, 3);
	for (int i = 0; i < 4096; i++)
		mt_textmemo_find(&m, i % 3 ? tail : "nothing", i % 3 ? (size_t)tl : 7, 5);
	ok(mt_textmemo_active(&m), "two hits in three: still looking");
	mt_textmemo_fini(&m);
	return tap_done();
}
