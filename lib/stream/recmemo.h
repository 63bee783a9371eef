/* recmemo: a binary stream's Event records, kept decoded by their bytes
 * after the time field. The binary form of linememo (linememo.h): a
 * program's trace repeats the same events (a loop's calls: the same pid,
 * tid, addresses, instruction count and column ids), only the time delta
 * differs, if the stream has one; a record whose other bytes were seen
 * before gets a copy of the event decoded then. Bounded, in sets of two
 * slots; where records rarely repeat it stands aside for a while. */
#ifndef MT_RECMEMO_H
#define MT_RECMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/aside.h"
#include "stream/events.h"
#include "stream/memohash.h"

#define MT_RECMEMO_MAX 64 /* longer records are decoded each time */
#define MT_RECMEMO_KV 12  /* so are events with more extra columns */

struct mt_recmemo_entry {
	uint64_t hash;      /* 0: empty */
	uint64_t epoch;     /* the string table's the event's strings are from */
	uint32_t len;       /* of key */
	bool canon;         /* the bytes are what mt's writer writes (mt_events_raw.ok) */
	uint8_t last;       /* a set's first slot: which of the set was used last */
	struct mt_recmemo_entry *next; /* the entry found after this one last time (maybe since reused) */
	uint64_t stamp;     /* new at each keep: the entry and its stamp name these bytes */
	struct mt_event ev; /* time unset; extra: kv, with an extra_id of its own */
	struct mt_kv kv[MT_RECMEMO_KV];
	uint8_t key[MT_RECMEMO_MAX];
};

struct mt_recmemo {
	struct mt_recmemo_entry *slot; /* made at the first lookup */
	bool failed;                   /* out of memory: stands aside for good */
	struct mt_aside aside;         /* standing aside where it seldom finds */
	uint64_t found;                /* hits in all (for tests) */
	uint64_t followed;             /* of them, hits of the entry that came next last time */
	struct mt_recmemo_entry *prev; /* the entry of the record looked up last */
};

void mt_recmemo_init(struct mt_recmemo *m);
void mt_recmemo_fini(struct mt_recmemo *m);
/* The slots, made at the first lookup (NULL: out of memory, and the memo
 * stands aside for good). */
struct mt_recmemo_entry *mt_recmemo_make(struct mt_recmemo *m);

/* Sets of two slots, the one used last kept, as linememo's; a window of
 * lookups with fewer hits than an eighth skips the next records (each miss
 * costs a hash and a copy). */
#define MT_RECMEMO_SLOT_BITS 13
#define MT_RECMEMO_WAYS 2
#define MT_RECMEMO_WINDOW 4096
#define MT_RECMEMO_MIN_HITS (MT_RECMEMO_WINDOW / 8)
#define MT_RECMEMO_SKIP (1u << 16)

/* Whether records are worth looking up now (false: standing aside or out
 * of memory; each call counts a record). */
static inline bool mt_recmemo_active(struct mt_recmemo *m)
{
	return !m->failed && mt_aside_active(&m->aside);
}

/* A lookup's outcome, counted: a hit in way k of set (used last now), or
 * a miss, which gets the way not used last to keep the record in; either
 * way the entry that came after the last lookup's. */
static inline struct mt_recmemo_entry *mt_recmemo_found(struct mt_recmemo *m, struct mt_recmemo_entry *set,
							 int k)
{
	bool hit = k < MT_RECMEMO_WAYS;
	mt_aside_count(&m->aside, hit, MT_RECMEMO_WINDOW, MT_RECMEMO_MIN_HITS, MT_RECMEMO_SKIP);
	m->found += hit;
	if (!hit)
		k = set->last ^ 1;
	set->last = (uint8_t)k;
	if (m->prev)
		m->prev->next = &set[k];
	return m->prev = &set[k];
}

/* The record bytes key[0..len), len <= MT_RECMEMO_MAX, of string table
 * epoch: the entry holding them, or NULL (a miss: *keep is the entry to
 * keep them in, NULL when out of memory, and *hash what to keep with
 * them). Counts the lookup. Inline: it is most of the reading of a record.
 * A trace's records come in the order they came before (a loop's), so the
 * entry that followed the last record's last time is compared first,
 * without the hash; the bytes decide, whatever that entry holds now. */
static inline const struct mt_recmemo_entry *mt_recmemo_lookup(struct mt_recmemo *m, const uint8_t *key,
								size_t len, uint64_t epoch,
								struct mt_recmemo_entry **keep, uint64_t *hash)
{
	*keep = NULL;
	struct mt_recmemo_entry *slots = m->slot ? m->slot : mt_recmemo_make(m);
	if (!slots)
		return NULL;
	struct mt_recmemo_entry *f = m->prev ? m->prev->next : NULL;
	if (f && f->hash && f->len == len && f->epoch == epoch && mt_memohash_same(f->key, key, len)) {
		size_t i = (size_t)(f - slots);
		m->followed++;
		return mt_recmemo_found(m, slots + (i - i % MT_RECMEMO_WAYS), (int)(i % MT_RECMEMO_WAYS));
	}
	*hash = mt_memohash(key, len) | 1;
	struct mt_recmemo_entry *set = &slots[(*hash >> (64 - MT_RECMEMO_SLOT_BITS + 1)) * MT_RECMEMO_WAYS];
	int k = 0;
	for (; k < MT_RECMEMO_WAYS; k++) {
		const struct mt_recmemo_entry *e = &set[k];
		if (e->hash == *hash && e->len == len && e->epoch == epoch && mt_memohash_same(e->key, key, len))
			break;
	}
	struct mt_recmemo_entry *e = mt_recmemo_found(m, set, k);
	if (k < MT_RECMEMO_WAYS)
		return e;
	e->hash = 0; /* holds nothing until kept */
	*keep = e;
	return NULL;
}

/* Keeps ev, decoded from key[0..len) (time aside), in the entry a lookup
 * gave, with the hash it gave: its columns copied (false, nothing kept,
 * when there are more than MT_RECMEMO_KV). canon: ok to pass its bytes on
 * as they are. */
bool mt_recmemo_keep(struct mt_recmemo_entry *e, uint64_t hash, const uint8_t *key, size_t len,
		     const struct mt_event *ev, bool canon);

#endif
