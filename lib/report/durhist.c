/* durhist: log-linear duration buckets (durhist.h). */
#include "report/durhist.h"

#include <stdlib.h>

/* The range and sub-bucket of v. */
static void locate(uint64_t v, unsigned *r, unsigned *sub)
{
	if (v < DURHIST_SUB) {
		*r = 0;
		*sub = (unsigned)v;
		return;
	}
	unsigned top = 63 - (unsigned)__builtin_clzll(v); /* v in [2^top, 2^(top+1)) */
	unsigned shift = top - (DURHIST_BITS - 1);
	*r = shift;
	*sub = (unsigned)(v >> shift); /* in [SUB/2, SUB) */
}

/* The highest value that falls in (r, sub). */
static uint64_t highest(unsigned r, unsigned sub)
{
	if (!r)
		return sub;
	return ((((uint64_t)sub + 1) << r) - 1);
}

bool mt_durhist_add(struct mt_durhist *h, uint64_t v)
{
	unsigned r, sub;
	locate(v, &r, &sub);
	if (!h->range[r] && !(h->range[r] = calloc(DURHIST_SUB, sizeof *h->range[r])))
		return false;
	h->range[r][sub]++;
	if (!h->n || v < h->min)
		h->min = v;
	if (!h->n || v > h->max)
		h->max = v;
	h->n++;
	return true;
}

uint64_t mt_durhist_quantile(const struct mt_durhist *h, double p)
{
	if (!h->n)
		return 0;
	double x = p * (double)h->n;
	uint64_t rank = (uint64_t)x;
	if ((double)rank < x)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > h->n)
		rank = h->n;
	uint64_t seen = 0;
	for (unsigned r = 0; r < DURHIST_RANGES; r++) {
		if (!h->range[r])
			continue;
		for (unsigned s = r ? DURHIST_SUB / 2 : 0; s < DURHIST_SUB; s++) {
			seen += h->range[r][s];
			if (seen >= rank) {
				uint64_t v = highest(r, s);
				return v < h->min ? h->min : v > h->max ? h->max : v;
			}
		}
	}
	return h->max;
}

void mt_durhist_free(struct mt_durhist *h)
{
	for (unsigned r = 0; r < DURHIST_RANGES; r++)
		free(h->range[r]);
	*h = (struct mt_durhist){0};
}
