/* Unit tests of the held items' order (timeline/order.c), TAP output.
 * Oracle: qsort of all the items by the same comparison, which
 * mt_tl_order_items must give with its cheaper passes (late items copied
 * out and sorted, runs of one begin time ordered in place, the two merged
 * as flush_thread merges them). And the comparison itself against its
 * rules, case by case. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/order.h"

#include "tap.h"

/* flush_thread's merge: kept items in order, skipping those marked late,
 * merged with the sorted late ones */
static size_t merged(struct item *it, size_t kept, const struct item *late, size_t nlate, struct item *out)
{
	size_t n = 0;
	for (size_t i = 0, j = 0; i < kept || j < nlate;) {
		if (i < kept && it[i].late) {
			i++;
			continue;
		}
		if (j == nlate || (i < kept && mt_tl_cmp_item(&it[i], &late[j]) <= 0))
			out[n++] = it[i++];
		else
			out[n++] = late[j++];
	}
	return n;
}

static bool same_items(const struct item *x, const struct item *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (x[i].begin != y[i].begin || x[i].end != y[i].end || x[i].seq != y[i].seq ||
		    x[i].inferred != y[i].inferred)
			return false;
	return true;
}

static void test_against_qsort(void)
{
	enum { N = 3000 };
	static struct item it[N], want[N], late[N + 1], got[N];
	uint64_t x = 99;
	int good = 0, rounds = 0, with_ties = 0, untied_late = 0;
	for (int r = 0; r < 60; r++) {
		/* mostly in time order, some late (inferred starts, [unknown]
		 * slices), runs of ties at one begin time */
		uint64_t t = 0;
		bool ties = false, unordered = false;
		for (size_t i = 0; i < N; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			unsigned roll = (unsigned)(x >> 57);
			uint64_t b = t;
			if (roll < (unsigned)(r % 4) * 4 && t > 100)
				b = t - (x >> 40) % 100; /* late */
			else if (roll > 100 || r % 2)
				t += 1 + (x >> 50) % 20; /* odd rounds: no ties */
			/* else a tie with the one before */
			it[i] = (struct item){.begin = b, .end = b + (x >> 33) % 300, .seq = (uint32_t)i,
					      .inferred = (x >> 20) % 7 == 0};
			if (i) {
				unordered |= b < it[i - 1].begin;
				ties |= b == it[i - 1].begin;
			}
		}
		memcpy(want, it, sizeof it);
		qsort(want, N, sizeof *want, mt_tl_cmp_item);
		size_t kept = N, nlate = 0;
		if (unordered || ties)
			nlate = mt_tl_order_items(it, &kept, late, ties);
		size_t n = merged(it, kept, late, nlate, got);
		rounds++;
		with_ties += ties;
		untied_late += !ties && unordered;
		good += n == N && same_items(got, want, N);
	}
	ok(good == rounds && with_ties && untied_late,
	   "order_items then the merge equals a full sort, over 60 windows of 3000 items (with and without ties)");
}

static void test_rules(void)
{
	struct item a = {.begin = 5, .end = 10, .seq = 1}, b = {.begin = 6, .end = 7, .seq = 0};
	ok(mt_tl_cmp_item(&a, &b) < 0, "an earlier begin comes first");
	b = (struct item){.begin = 5, .end = 20, .seq = 2};
	ok(mt_tl_cmp_item(&b, &a) < 0, "at one begin, the later end (the outer slice) comes first");
	b = (struct item){.begin = 5, .end = 10, .seq = 2, .inferred = true};
	ok(mt_tl_cmp_item(&b, &a) < 0, "at one begin and end, an inferred frame encloses the others");
	struct item c = {.begin = 5, .end = 10, .seq = 3, .inferred = true};
	ok(mt_tl_cmp_item(&c, &b) < 0, "of two inferred frames, the later-inferred is outer");
	struct item d = {.begin = 5, .end = 10, .seq = 0};
	ok(mt_tl_cmp_item(&d, &a) < 0, "otherwise arrival order (calls arrive outermost first)");
}

int main(void)
{
	test_against_qsort();
	test_rules();
	return tap_done();
}
