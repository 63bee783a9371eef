/* Unit tests of snapshot overlap (trace/snapshot.c), TAP output. Oracle:
 * snapshots cut by hand from one PT byte stream with PSBs: the second
 * repeats the first's last bytes from a PSB on, so its overlap is exactly
 * the bytes repeated; perf's padding of the first (up to 7 zero bytes)
 * is dropped; snapshots that do not repeat anything overlap by 0. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace/snapshot.h"

#include "tap.h"

static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};

/* A stream of n bytes: packets-like noise (never a PSB) with a PSB every 500 bytes. */
static void make_stream(uint8_t *s, size_t n)
{
	uint64_t x = 7;
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		s[i] = (uint8_t)(x >> 56) | 1; /* odd: no 0x02 */
	}
	for (size_t i = 100; i + 16 < n; i += 500)
		memcpy(s + i, psb, 16);
}

static void test_overlaps(void)
{
	enum { N = 6000 };
	static uint8_t s[N], a[N + 8];
	make_stream(s, N);
	int good = 0, n = 0;
	/* a = s[0, end), b = s[start, N): b repeats s[start, end) */
	for (size_t end = 1200; end < N; end += 733)
		for (size_t start = 100; start + 16 < end; start += 500) {
			size_t alen = end;
			memcpy(a, s, end);
			size_t ov = mt_snapshot_overlap(a, &alen, s + start, N - start);
			n++;
			good += ov == end - start && alen == end;
		}
	ok(good == n, "b starting at a PSB inside a: the overlap is exactly what b repeats of a");
	size_t alen = 3000 + 5;
	memcpy(a, s, 3000);
	memset(a + 3000, 0, 5);
	size_t ov = mt_snapshot_overlap(a, &alen, s + 2600, N - 2600);
	ok(ov == 400 && alen == 3000, "a's AUXTRACE padding (zero bytes at its end) is dropped from it");
	alen = 3000;
	ok(!mt_snapshot_overlap(a, &alen, s + 3100, N - 3100) && alen == 3000,
	   "b after a's end (a gap): no overlap");
	static uint8_t other[N];
	memcpy(other, s, N);
	other[2700] ^= 0x40; /* the same PSB, other bytes after it */
	alen = 3000;
	ok(!mt_snapshot_overlap(a, &alen, other + 2600, N - 2600), "b differing from a after its PSB: no overlap");
}

/* a cut just after one of its PSBs and the first byte of its PSB+ (a MODE,
 * 0x99, as every PSB+ of a timeless trace starts): any b starting at a PSB
 * matches those 17 bytes, and a fixture's second snapshot was stitched on
 * there (found on a clean clone's fixture, libc snapshot). The overlap is
 * the one b really repeats. */
static void test_cut_after_psb(void)
{
	enum { N = 6000 };
	static uint8_t s[N], a[N];
	make_stream(s, N);
	for (size_t i = 100; i + 17 < N; i += 500)
		s[i + 16] = 0x99;
	int good = 0, n = 0;
	for (size_t last = 1100; last + 17 < N; last += 500)
		for (size_t start = 100; start < last; start += 500) {
			size_t alen = last + 17;
			memcpy(a, s, alen);
			size_t ov = mt_snapshot_overlap(a, &alen, s + start, N - start);
			n++;
			good += ov == last + 17 - start;
		}
	ok(n > 10 && good == n, "a cut 17 bytes after a PSB: the overlap is what b repeats, not those 17 bytes");
}

int main(void)
{
	test_overlaps();
	test_cut_after_psb();
	return tap_done();
}
