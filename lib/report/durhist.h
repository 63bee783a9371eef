/* durhist: a histogram of durations for percentiles in bounded memory
 * (HdrHistogram's layout): values below 2^DURHIST_BITS are counted
 * exactly; above, in buckets 1/2^DURHIST_BITS of their power of two wide,
 * so a percentile is within 1/64 of the true value (the bucket's
 * width against its lowest value). Buckets are made
 * only for the powers of two that occur. */
#ifndef MT_DURHIST_H
#define MT_DURHIST_H

#include <stdbool.h>
#include <stdint.h>

#define DURHIST_BITS 7
#define DURHIST_SUB (1u << DURHIST_BITS)
#define DURHIST_RANGES (64 - DURHIST_BITS + 1)

struct mt_durhist {
	uint64_t *range[DURHIST_RANGES]; /* range r: values [2^(r+BITS-1), 2^(r+BITS)) (r 0: [0, 2^BITS)) */
	uint64_t n, min, max;
};

/* false: out of memory (the value is not counted). */
bool mt_durhist_add(struct mt_durhist *h, uint64_t v);
/* The value at or below which p (0..1] of the values lie, the nearest-rank
 * way (the ceil(p n)-th smallest), as the highest value of its bucket,
 * clamped to [min, max]; 0 when empty. */
uint64_t mt_durhist_quantile(const struct mt_durhist *h, double p);
void mt_durhist_free(struct mt_durhist *h);

#endif
