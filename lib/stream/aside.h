/* aside: when a memo stands aside. A memo that seldom finds what it is
 * asked for only costs (each miss keeps a copy); so each counts its
 * lookups in windows, and a window with too few hits makes it skip the
 * next lines, then try again. Shared by the text reader's memos
 * (textmemo, linememo), each with its own window and threshold. */
#ifndef MT_ASIDE_H
#define MT_ASIDE_H

#include <stdbool.h>
#include <stdint.h>

struct mt_aside {
	uint32_t window, hits; /* lookups and hits in this window */
	uint32_t skip;         /* lines still to skip */
};

/* Whether to look up now (false: standing aside); each call counts a line. */
static inline bool mt_aside_active(struct mt_aside *a)
{
	if (!a->skip)
		return true;
	a->skip--;
	return false;
}

/* One lookup's outcome; a window of `window` lookups with fewer than
 * min_hits hits skips the next skip_lines lines. */
static inline void mt_aside_count(struct mt_aside *a, bool hit, uint32_t window, uint32_t min_hits,
				  uint32_t skip_lines)
{
	a->hits += hit;
	if (++a->window == window) {
		if (a->hits < min_hits)
			a->skip = skip_lines;
		a->window = a->hits = 0;
	}
}

#endif
