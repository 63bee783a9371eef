/* linememo: a text stream's event lines, kept parsed (linememo.h). */
#include "stream/linememo.h"

#include <stdlib.h>
#include <string.h>

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

static inline uint64_t word(const char *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
	return w;
}

#define MIX(w, i, j) (((w) ^ (j)) * (i))
#define K0 0x9e3779b97f4a7c15ULL
#define K1 0xff51afd7ed558ccdULL
#define K2 0xc4ceb9fe1a85ec53ULL
#define K3 0x87c37b91114253d5ULL
#define K4 0x4cf5ad432745937fULL
#define K5 0xd6e8feb86659fd93ULL
#define K6 0xa0761d6478bd642fULL
#define K7 0xe7037ed1a0b428dbULL

/* The hash of a line's first n <= HASHED bytes: eight words, each through
 * its own multiplication (none waits for another), overlapping where the
 * line is shorter; the bytes decide a hit, the hash only the slot. */
static inline uint64_t slot_hash(const char *p, size_t n)
{
	uint64_t h = n * 0x8ebc6af09c88c6e3ULL;
	if (n >= 32) {
		const char *q = p + n - 32;
		h += MIX(word(p), K0, K4) + MIX(word(p + 8), K1, K5) + MIX(word(p + 16), K2, K6) +
		     MIX(word(p + 24), K3, K7) + MIX(word(q), K4, K0) + MIX(word(q + 8), K5, K1) +
		     MIX(word(q + 16), K6, K2) + MIX(word(q + 24), K7, K3);
	} else if (n >= 16) {
		h += MIX(word(p), K0, K4) + MIX(word(p + 8), K1, K5) + MIX(word(p + n - 16), K2, K6) +
		     MIX(word(p + n - 8), K3, K7);
	} else if (n >= 8) {
		h += MIX(word(p), K0, K4) + MIX(word(p + n - 8), K1, K5);
	} else {
		uint64_t w = 0;
		for (size_t i = 0; i < n; i++)
			w |= (uint64_t)(unsigned char)p[i] << 8 * i;
		h += MIX(w, K0, K4);
	}
	h ^= h >> 31;
	return h * K0;
}

/* The set of WAYS entries a line's first bytes go to. */
static struct mt_linememo_entry *set_of(struct mt_linememo *m, const char *key, size_t hashed, uint64_t *hash)
{
	if (!m->slot && !(m->slot = calloc(SLOTS, sizeof *m->slot))) {
		m->failed = true;
		return NULL;
	}
	uint64_t h = slot_hash(key, hashed);
	*hash = h | 1;
	return &m->slot[(h >> (64 - SLOT_BITS + 1)) * WAYS];
}

static inline bool epoch_ok(const struct mt_linememo_entry *e, uint64_t textmemo_epoch)
{
	return e->own || e->epoch == textmemo_epoch;
}

/* A lookup's outcome, counted: a hit in way k of set (used last now), or
 * a miss, which gets the way not used last to keep the line in. */
static struct mt_linememo_entry *found(struct mt_linememo *m, struct mt_linememo_entry *set, int k)
{
	bool hit = k < WAYS;
	if (!hit)
		k = set->last ^ 1;
	set->last = (uint8_t)k;
	mt_aside_count(&m->aside, hit, WINDOW, MIN_HITS, SKIP_LINES);
	m->found += hit;
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
	p->nl = memchr(key, '\n', avail < HASHED ? avail : HASHED);
	if (!p->nl && avail < HASHED)
		return false; /* its end not read yet */
	p->set = set_of(m, key, p->nl ? (size_t)(p->nl - key) : HASHED, &p->hash);
	p->key = p->set ? key : NULL;
	return p->key;
}

void mt_linememo_prefetch(struct mt_linememo *m, const char *key, size_t avail)
{
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
