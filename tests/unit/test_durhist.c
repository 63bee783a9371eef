/* durhist: percentiles against the exact nearest-rank ones of the same
 * values, sorted (the oracle): equal below 2^DURHIST_BITS, within 1/64
 * above, min and max exact; bounded memory (ranges made only as used). */
#include <stdint.h>
#include <stdlib.h>

#include "report/durhist.h"
#include "tap.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t exact(const uint64_t *v, size_t n, double p)
{
	double x = p * (double)n;
	size_t r = (size_t)x;
	if ((double)r < x)
		r++;
	return v[(r ? r : 1) - 1];
}

int main(void)
{
	struct mt_durhist h = {0};
	ok(mt_durhist_quantile(&h, 0.5) == 0, "empty: 0");
	for (uint64_t i = 1; i <= 100; i++)
		mt_durhist_add(&h, i);
	ok(mt_durhist_quantile(&h, 0.5) == 50 && mt_durhist_quantile(&h, 0.99) == 99 &&
		   mt_durhist_quantile(&h, 1.0) == 100 && mt_durhist_quantile(&h, 0.001) == 1,
	   "1..100: p50 50, p99 99, p100 100, p0.1 1 (exact below 128)");
	ok(h.min == 1 && h.max == 100 && h.n == 100, "min, max, count");
	mt_durhist_free(&h);

	/* random durations over 9 orders of magnitude */
	enum { N = 200000 };
	uint64_t *v = malloc(N * sizeof *v);
	srand(7);
	for (size_t i = 0; i < N; i++) {
		uint64_t x = ((uint64_t)rand() << 31) ^ (uint64_t)rand();
		v[i] = x % (1ULL << (rand() % 34));
		mt_durhist_add(&h, v[i]);
	}
	qsort(v, N, sizeof *v, cmp_u64);
	int bad = 0;
	for (double p = 0.01; p <= 1.0; p += 0.01) {
		uint64_t e = exact(v, N, p), g = mt_durhist_quantile(&h, p);
		if (g < e || g > e + e / 64 + (e < 128 ? 0 : 1))
			bad++;
	}
	ok(!bad, "every percentile of 200,000 random values within 1/64 above the exact one");
	ok(h.min == v[0] && h.max == v[N - 1], "min and max exact");
	size_t ranges = 0;
	for (unsigned r = 0; r < DURHIST_RANGES; r++)
		ranges += h.range[r] != NULL;
	ok(ranges <= 34 - DURHIST_BITS + 2, "ranges made only for the powers of two that occur");
	mt_durhist_free(&h);
	mt_durhist_add(&h, UINT64_MAX);
	ok(mt_durhist_quantile(&h, 0.5) == UINT64_MAX, "the largest value counts");
	mt_durhist_free(&h);
	free(v);
	return tap_done();
}
