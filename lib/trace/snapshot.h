/* snapshot: where one snapshot's AUXTRACE buffer repeats the end of the
 * one before (perf record -S: each holds the ring buffer as it was). */
#ifndef MT_SNAPSHOT_H
#define MT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>


/* Snapshot mode: each AUXTRACE holds the ring buffer as it was at a
 * snapshot, so the start of a snapshot may repeat the end of the previous
 * one. Returns how many leading bytes of b continue a (b's first PSB and
 * what follows it found in a, and everything before and after it equal),
 * or 0 when they do not overlap. */
size_t mt_snapshot_overlap(const uint8_t *a, size_t *alen, const uint8_t *b, size_t blen);

#endif
