/* textmemo: a text stream's extra columns, kept by their bytes (textmemo.h). */
#include "stream/textmemo.h"

#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"

#define SLOT_BITS 13
#define SLOTS (1u << SLOT_BITS)
#define DEFAULT_ARENA (8u << 20)
#define CHAIN_WALK 8
/* Standing aside: a window of lookups with fewer hits than a quarter
 * skips the next lines (a stream whose tails do not repeat: every line
 * would be copied for nothing) */
#define WINDOW 4096
#define MIN_HITS (WINDOW / 4)
#define SKIP_LINES (1u << 16)

bool mt_textmemo_init(struct mt_textmemo *m, size_t arena_bytes)
{
	memset(m, 0, sizeof *m);
	m->arena_cap = arena_bytes ? arena_bytes : DEFAULT_ARENA;
	m->slot = mt_bigmem_zalloc(SLOTS * sizeof *m->slot);
	m->arena = malloc(m->arena_cap);
	if (!m->slot || !m->arena) {
		mt_textmemo_fini(m);
		return false;
	}
	m->epoch = mt_events_new_epoch();
	return true;
}

void mt_textmemo_fini(struct mt_textmemo *m)
{
	mt_bigmem_zfree(m->slot, SLOTS * sizeof *m->slot);
	free(m->arena);
	memset(m, 0, sizeof *m);
}

bool mt_textmemo_active(struct mt_textmemo *m)
{
	return mt_aside_active(&m->aside);
}

const struct mt_textmemo_tail *mt_textmemo_find(struct mt_textmemo *m, const char *raw, size_t len, uint64_t hash)
{
	/* the newest few of a chain: a hash many tails share (a caller's
	 * poor choice) costs a bounded walk, then misses */
	const struct mt_textmemo_tail *t = m->slot[hash >> (64 - SLOT_BITS)];
	for (unsigned walk = 0; t && !(t->hash == hash && t->len == len && !memcmp(t->raw, raw, len)); t = t->next)
		if (++walk == CHAIN_WALK) {
			t = NULL;
			break;
		}
	bool hit = t != NULL;
	mt_aside_count(&m->aside, hit, WINDOW, MIN_HITS, SKIP_LINES);
	return hit ? t : NULL;
}

static void *arena_take(struct mt_textmemo *m, size_t n)
{
	size_t at = (m->arena_used + 15) & ~(size_t)15;
	if (at + n > m->arena_cap)
		return NULL;
	m->arena_used = at + n;
	return m->arena + at;
}

const struct mt_textmemo_tail *mt_textmemo_keep(struct mt_textmemo *m, const char *raw, size_t len, uint64_t hash,
						const struct mt_kv *kv, unsigned n)
{
	size_t need = sizeof(struct mt_textmemo_tail) + 16 + n * sizeof *kv + 16 + 2 * len + 1;
	if (need > m->arena_cap / 8)
		return NULL;
	if (((m->arena_used + 15) & ~(size_t)15) + need > m->arena_cap) {
		/* full: start over, the strings handed out so far void */
		memset(m->slot, 0, SLOTS * sizeof *m->slot);
		m->arena_used = 0;
		m->epoch = mt_events_new_epoch();
	}
	struct mt_textmemo_tail *t = arena_take(m, sizeof *t);
	struct mt_kv *tkv = arena_take(m, n * sizeof *kv);
	char *tr = arena_take(m, 2 * len + 1);
	char *tc = tr + len;
	memcpy(tr, raw, len);
	memcpy(tc, raw, len);
	tc[len] = '\0'; /* the last column's end (an empty value ends there) */
	for (unsigned i = 0; i < n; i++) { /* the same places in the copy, cut */
		char *key = tc + (kv[i].key - raw), *val = kv[i].val ? tc + (kv[i].val - raw) : NULL;
		if (val)
			val[-1] = '\0'; /* the key's '=' */
		if (i + 1 < n)
			tc[kv[i + 1].key - raw - 1] = '\0'; /* the TAB after the column */
		tkv[i] = (struct mt_kv){key, val};
	}
	*t = (struct mt_textmemo_tail){.id = mt_events_new_epoch(), .hash = hash, .raw = tr, .len = len, .n = n,
				       .kv = tkv};
	/* chained: nothing kept is pushed out before the arena is full */
	struct mt_textmemo_tail **head = &m->slot[hash >> (64 - SLOT_BITS)];
	t->next = *head;
	*head = t;
	return t;
}
