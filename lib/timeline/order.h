/* order: the held items of a thread in time order, outer slices first. */
#ifndef MT_TL_ORDER_H
#define MT_TL_ORDER_H

#include <stdbool.h>
#include <stddef.h>

#include "timeline/writer.h"

/* Time order, outer slices first: at the same begin the later end; at the
 * same begin and end an inferred frame (a caller found by a return)
 * before the frames it encloses, later-inferred frames being outer, and
 * otherwise arrival order (calls arrive outermost first). */
int mt_tl_cmp_item(const void *a, const void *b);
/* Puts items in cmp_item order. Almost all arrive in time order; the few
 * that come late (inferred starts, [unknown] slices) are copied to `late`,
 * sorted there and marked where they were (closing up the rest moved every
 * item of the window once), runs with one begin time are ordered in place
 * (ties: with late items among them, the others are first closed up, which
 * is rare), and the two are merged while writing (see flush_thread).
 * Returns how many items are late; *n: how many the array holds now. */
size_t mt_tl_order_items(struct item *it, size_t *n, struct item *late, bool ties);

#endif
