/* linememo: a text stream's event lines, kept parsed by their bytes after
 * the time column. A program's trace repeats the same events over and
 * over (a loop's calls: the same pid, tid, addresses, instruction count
 * and symbols; 1,208 distinct lines of 8,841 in magic-trace's hello-world
 * trace from real hardware), and only the time differs, if the stream has
 * one. The text reader parses a line's time, and the rest once: a later
 * line with the same bytes gets a copy of the parsed event.
 * Bounded, in sets of two slots; where lines rarely repeat it stands aside
 * for a while (each miss copies the line once more). */
#ifndef MT_LINEMEMO_H
#define MT_LINEMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/aside.h"
#include "stream/events.h"

#define MT_LINEMEMO_MAX 480 /* longer lines are parsed each time */
#define MT_LINEMEMO_KV 16   /* so are lines with more extra columns of their own */

struct mt_linememo_entry {
	uint64_t hash;     /* 0: empty */
	size_t len;        /* of key */
	uint64_t epoch;    /* own false: the textmemo's epoch its columns are from */
	bool own;          /* ev's strings are all in parsed and kv */
	bool copied;       /* the line is what the writer writes, but for the time */
	uint8_t last;      /* a set's first slot: which of the set was used last */
	struct mt_linememo_entry *next; /* the slot looked up after this one last time (maybe since reused) */
	struct mt_event ev; /* time unset */
	struct mt_kv kv[MT_LINEMEMO_KV];
	char key[MT_LINEMEMO_MAX];        /* the line from the TAB after the time, as read */
	char parsed[MT_LINEMEMO_MAX + 2]; /* "-", key and a NUL, parsed in place */
	struct mt_events_aux aux;         /* a filter's, for this key (emptied with a new one) */
};

/* A line's lookup begun (mt_linememo_prefetch): its newline among the
 * hashed bytes (or NULL), their hash, its set. */
struct mt_linememo_probe {
	const char *key; /* NULL: none */
	const char *nl;
	uint64_t hash;
	struct mt_linememo_entry *set;
	/* non-NULL (nl, hash and set not computed): the slot looked up after
	 * the last line's last time, of this line's length, to compare first */
	struct mt_linememo_entry *followed;
};

struct mt_linememo {
	struct mt_linememo_entry *slot; /* made at the first lookup */
	bool failed;                    /* out of memory: stands aside for good */
	struct mt_aside aside; /* standing aside where it seldom finds */
	uint64_t found;                 /* hits in all (for tests and stats) */
	uint64_t followed;              /* of them, hits of the slot that came next last time */
	struct mt_linememo_probe next;  /* the next line's, begun */
	struct mt_linememo_entry *prev; /* the slot of the line looked up last */
	bool aux_used;                  /* a filter keeps bytes in aux: prefetched with the rest */
};

void mt_linememo_init(struct mt_linememo *m);
void mt_linememo_fini(struct mt_linememo *m);
/* Whether lines are worth looking up now (false: standing aside; each call
 * counts a line). Inline: asked once a line. */
static inline bool mt_linememo_active(struct mt_linememo *m)
{
	return !m->failed && mt_aside_active(&m->aside);
}
/* The line key[0..len) (its newline not counted): true when the memo
 * holds it (*slot: where), false when not (*slot: where to keep it, NULL
 * when out of memory); *hash: what to keep with it. Counts the lookup. */
bool mt_linememo_lookup(struct mt_linememo *m, const char *key, size_t len, uint64_t textmemo_epoch,
			struct mt_linememo_entry **slot, uint64_t *hash);
/* The same for a line still in the reader's buffer, from key (avail bytes
 * readable there), before its newline is found: the line's length (to its
 * newline) when the memo holds it; 0 when not (a miss counted, *slot and
 * *hash as above) or when the bytes read so far cannot tell (*slot NULL,
 * nothing counted). */
size_t mt_linememo_find(struct mt_linememo *m, const char *key, size_t avail, uint64_t textmemo_epoch,
			struct mt_linememo_entry **slot, uint64_t *hash);
/* Begins the lookup of the line read next, at key (avail bytes readable),
 * so that its slots load while this line is used; mt_linememo_find of the
 * same key takes it up. A trace's lines come in the order they came before
 * (a loop's): when the slot looked up after the last line's last time
 * holds a line of this one's length, that slot is compared first, without
 * the hash. A reader that moves its buffer forgets it
 * (mt_linememo_forget_next): bytes changed since cost a miss, never a
 * wrong hit (a hit is decided by the bytes there when found). */
void mt_linememo_prefetch(struct mt_linememo *m, const char *key, size_t avail);
static inline void mt_linememo_forget_next(struct mt_linememo *m)
{
	m->next.key = NULL;
}

#endif
