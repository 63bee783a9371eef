/* secmap: which section holds an address, where sections may overlap and a
 * later one hides an earlier one (as in libipt's image, and as a process's
 * later mmap hides what it maps over).
 *
 * Sections are added in order; the first lookup after an addition sorts
 * them into pieces that do not overlap, each owned by the newest section
 * there (a sweep over the sections' ends: O(n log n)), and lookups search
 * the pieces (O(log n), the last piece found tried first). Adding n
 * sections and looking up between each costs n rebuilds: add them all
 * first, as an image built from a recording's mappings does. */
#ifndef MT_SECMAP_H
#define MT_SECMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_secmap_piece {
	uint64_t start, end; /* [start, end) */
	size_t sec;          /* the newest section holding it */
};

struct mt_secmap {
	uint64_t (*secs)[2]; /* start, end of each section, in the order added */
	size_t nsecs, capsecs;
	struct mt_secmap_piece *pieces; /* sorted, disjoint; valid unless dirty */
	size_t npieces, cappieces, last;
	bool dirty;
};

void mt_secmap_init(struct mt_secmap *m);
void mt_secmap_fini(struct mt_secmap *m);
/* Adds [start, start+size) (cut at the top of the address space); its
 * number is the count of sections added before. false when out of memory. */
bool mt_secmap_add(struct mt_secmap *m, uint64_t start, uint64_t size);
/* Makes the pieces if sections were added since; false when out of memory. */
bool mt_secmap_ready(struct mt_secmap *m);
/* The piece holding addr (its section the newest holding addr), or NULL
 * where none does -- or when out of memory building the pieces (*oom). */
const struct mt_secmap_piece *mt_secmap_find(struct mt_secmap *m, uint64_t addr, bool *oom);

#endif
