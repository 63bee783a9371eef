/* linememo: a text stream's event lines, kept parsed (linememo.h). */
#include "stream/linememo.h"

#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"

#define SLOT_BITS 12
#define SLOTS (1u << SLOT_BITS)
/* Standing aside: a window of lookups with fewer hits than an eighth
 * skips the next lines (each miss costs a copy of the line and a hash) */
#define WINDOW 4096
#define MIN_HITS (WINDOW / 8)
#define SKIP_LINES (1u << 16)
/* Only the first bytes are hashed: lines that begin alike (pid, tid, kind,
 * addresses) end alike (the addresses' symbols), and the bytes decide. */
#define HASHED 64

void mt_linememo_init(struct mt_linememo *m)
{
	memset(m, 0, sizeof *m);
}

void mt_linememo_fini(struct mt_linememo *m)
{
	free(m->slot);
	memset(m, 0, sizeof *m);
}

bool mt_linememo_active(struct mt_linememo *m)
{
	if (m->failed)
		return false;
	return mt_aside_active(&m->aside);
}

struct mt_linememo_entry *mt_linememo_slot(struct mt_linememo *m, const char *key, size_t len, uint64_t *hash)
{
	if (!m->slot && !(m->slot = calloc(SLOTS, sizeof *m->slot))) {
		m->failed = true;
		return NULL;
	}
	uint64_t h = (mt_hash_bytes(key, len < HASHED ? len : HASHED) ^ len) * 0x9e3779b97f4a7c15ULL;
	*hash = h | 1;
	return &m->slot[h >> (64 - SLOT_BITS)];
}

bool mt_linememo_holds(struct mt_linememo *m, const struct mt_linememo_entry *e, const char *key, size_t len,
		       uint64_t hash, uint64_t textmemo_epoch)
{
	bool hit = e->hash == hash && e->len == len && (e->own || e->epoch == textmemo_epoch) &&
		   !memcmp(e->key, key, len);
	mt_aside_count(&m->aside, hit, WINDOW, MIN_HITS, SKIP_LINES);
	m->found += hit;
	return hit;
}
