/* linememo: a text stream's event lines, kept parsed (linememo.h). */
#include "stream/linememo.h"

#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"
#include "stream/memohash.h"

/* Sets of two slots, the one used last kept: on the bench's 4 MB trace's
 * symbolized stream (3,508 distinct lines), 4096 direct-mapped slots
 * missed 8.7% of the lines, 8192 4.8%, 8192 in sets of two 0.9%. Only the
 * slots in use are touched (calloc's pages). */
#define SLOT_BITS 13
#define WAYS 2
#define SLOTS (1u << SLOT_BITS)
/* Standing aside: a window of lookups with fewer hits than an eighth
 * skips the next lines (each miss costs a copy of the line and a hash) */
#define WINDOW 4096
#define MIN_HITS (WINDOW / 8)
#define SKIP_LINES (1u << 16)
/* Only the first bytes are hashed, not the length: lines that begin alike
 * (pid, tid, kind, addresses) end alike (the addresses' symbols), the bytes
 * decide, and a line still in its buffer is looked up before its end is
 * found (mt_linememo_find). */
#define HASHED MT_MEMOHASH_MAX

void mt_linememo_init(struct mt_linememo *m)
{
	memset(m, 0, sizeof *m);
}

void mt_linememo_fini(struct mt_linememo *m)
{
	mt_bigmem_zfree(m->slot, SLOTS * sizeof *m->slot);
	memset(m, 0, sizeof *m);
}

/* The set of WAYS entries a line's first bytes go to. */
static struct mt_linememo_entry *set_of(struct mt_linememo *m, const char *key, size_t hashed, uint64_t *hash)
{
	if (!m->slot && !(m->slot = mt_bigmem_zalloc(SLOTS * sizeof *m->slot))) {
		m->failed = true;
		return NULL;
	}
	uint64_t h = mt_memohash(key, hashed);
	*hash = h | 1;
	return &m->slot[(h >> (64 - SLOT_BITS + 1)) * WAYS];
}

static inline bool epoch_ok(const struct mt_linememo_entry *e, uint64_t textmemo_epoch)
{
	return e->own || e->epoch == textmemo_epoch;
}

/* A lookup's outcome, counted: a hit in way k of set (used last now), or
 * a miss, which gets the way not used last to keep the line in. */
static inline __attribute__((always_inline)) struct mt_linememo_entry *found(struct mt_linememo *m,
										   struct mt_linememo_entry *set, int k)
{
	bool hit = k < WAYS;
	if (!hit)
		k = set->last ^ 1;
	set->last = (uint8_t)k;
	mt_aside_count(&m->aside, hit, WINDOW, MIN_HITS, SKIP_LINES);
	m->found += hit;
	if (m->prev)
		m->prev->next = &set[k];
	m->prev = &set[k];
	return &set[k];
}

bool mt_linememo_lookup(struct mt_linememo *m, const char *key, size_t len, uint64_t textmemo_epoch,
			struct mt_linememo_entry **slot, uint64_t *hash)
{
	*slot = NULL;
	struct mt_linememo_entry *set = set_of(m, key, len < HASHED ? len : HASHED, hash);
	if (!set)
		return false;
	int k = 0;
	for (; k < WAYS; k++) {
		const struct mt_linememo_entry *e = &set[k];
		if (e->hash == *hash && e->len == len && epoch_ok(e, textmemo_epoch) && !memcmp(e->key, key, len))
			break;
	}
	*slot = found(m, set, k);
	return k < WAYS;
}

/* A line's hashed bytes and set (false: the bytes read so far cannot
 * tell, or out of memory). */
static inline bool probe(struct mt_linememo *m, const char *key, size_t avail, struct mt_linememo_probe *p)
{
	p->key = NULL;
	p->followed = NULL;
	p->nl = memchr(key, '\n', avail < HASHED ? avail : HASHED);
	if (!p->nl && avail < HASHED)
		return false; /* its end not read yet */
	p->set = set_of(m, key, p->nl ? (size_t)(p->nl - key) : HASHED, &p->hash);
	p->key = p->set ? key : NULL;
	return p->key;
}

void mt_linememo_prefetch(struct mt_linememo *m, const char *key, size_t avail)
{
	struct mt_linememo_entry *f = m->prev ? m->prev->next : NULL;
	if (f && f->hash && f->len < avail && key[f->len] == '\n') {
		m->next = (struct mt_linememo_probe){.key = key, .followed = f};
		/* what mt_linememo_find compares and the reader copies, loading
		 * while this event is used; and the slot that came after f last
		 * time, whose first line the next call reads (f's was loaded by
		 * the call before: a miss there stalled a fifth of the lookups'
		 * time, perf's samples on mt-symbolize) */
		for (size_t at = 0; at < f->len; at += 64)
			__builtin_prefetch(f->key + at);
		__builtin_prefetch(&f->ev);
		for (size_t at = 0; m->aux_used && at < sizeof f->aux; at += 64)
			__builtin_prefetch((const char *)&f->aux + at);
		if (f->next)
			__builtin_prefetch(f->next);
		return;
	}
	if (!m->slot || !probe(m, key, avail, &m->next)) {
		m->next.key = NULL;
		return;
	}
	for (int k = 0; k < WAYS; k++) {
		__builtin_prefetch(&m->next.set[k]);
		__builtin_prefetch(m->next.set[k].key);
	}
}

size_t mt_linememo_find(struct mt_linememo *m, const char *key, size_t avail, uint64_t textmemo_epoch,
			struct mt_linememo_entry **slot, uint64_t *hash)
{
	*slot = NULL;
	struct mt_linememo_probe *p = &m->next;
	bool begun = p->key == key;
	if (begun && p->followed) {
		/* the line that came next last time, decided by the bytes now */
		struct mt_linememo_entry *e = p->followed;
		p->key = NULL;
		if (e->hash && e->len < avail && key[e->len] == '\n' && epoch_ok(e, textmemo_epoch) &&
		    !memcmp(e->key, key, e->len)) {
			size_t i = (size_t)(e - m->slot);
			*slot = found(m, m->slot + (i - i % WAYS), (int)(i % WAYS));
			*hash = e->hash;
			m->followed++;
			return e->len;
		}
		begun = false;
	}
	if (!begun && !probe(m, key, avail, p))
		return 0;
	p->key = NULL; /* taken up */
	const char *nl = p->nl;
	size_t hashed = nl ? (size_t)(nl - key) : HASHED;
	struct mt_linememo_entry *set = p->set;
	*hash = p->hash;
	int k = 0;
	for (; k < WAYS; k++) {
		const struct mt_linememo_entry *e = &set[k];
		if (e->hash != *hash)
			continue;
		if (nl) { /* (the newline checked again: a lookup begun on bytes since changed misses) */
			if (e->len == hashed && key[hashed] == '\n' && epoch_ok(e, textmemo_epoch) &&
			    !memcmp(e->key, key, hashed))
				break;
			continue;
		}
		/* longer than the hashed bytes: the kept line, then a newline */
		if (e->len >= avail)
			return 0; /* not all read yet */
		if (e->len >= HASHED && key[e->len] == '\n' && epoch_ok(e, textmemo_epoch) &&
		    !memcmp(e->key, key, e->len))
			break;
	}
	*slot = found(m, set, k);
	return k < WAYS ? (*slot)->len : 0;
}
