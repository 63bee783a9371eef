/* Unit tests of the section map (trace/secmap.c), TAP output. Oracle: the
 * definition itself, a scan from the newest section back for the first
 * that holds the address, on random overlapping sections. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace/secmap.h"

#include "tap.h"

static uint64_t next(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/* The newest of n sections holding addr, or -1. */
static long newest(const uint64_t (*s)[2], size_t n, uint64_t addr)
{
	for (size_t i = n; i-- > 0;)
		if (addr >= s[i][0] && addr - s[i][0] < s[i][1])
			return (long)i;
	return -1;
}

static void test_random(void)
{
	uint64_t x = 7;
	int bad_owner = 0, bad_piece = 0, rounds = 0;
	for (int round = 0; round < 200; round++) {
		struct mt_secmap m;
		mt_secmap_init(&m);
		size_t n = 1 + next(&x) % 40;
		uint64_t s[40][2];
		for (size_t i = 0; i < n; i++) {
			s[i][0] = next(&x) % 1000;
			s[i][1] = next(&x) % 200; /* size; some empty */
			mt_secmap_add(&m, s[i][0], s[i][1]);
		}
		for (uint64_t a = 0; a < 1300; a++) {
			bool oom = false;
			const struct mt_secmap_piece *p = mt_secmap_find(&m, a, &oom);
			long want = newest(s, n, a);
			if ((p ? (long)p->sec : -1) != want || oom)
				bad_owner++;
			/* the whole piece has the owner, and it ends where that changes */
			else if (p && (a < p->start || a >= p->end || newest(s, n, p->start) != want ||
				       newest(s, n, p->end - 1) != want || newest(s, n, p->end) == want))
				bad_piece++;
		}
		rounds++;
		mt_secmap_fini(&m);
	}
	ok(rounds == 200 && !bad_owner, "every address: the newest section holding it, as a scan finds it");
	ok(!bad_piece, "each piece is owned by one section throughout, and ends where its owner changes");
}

static void test_edges(void)
{
	struct mt_secmap m;
	mt_secmap_init(&m);
	bool oom = false;
	ok(!mt_secmap_find(&m, 0, &oom) && !oom, "no sections: nothing found");
	mt_secmap_add(&m, UINT64_MAX - 0xfff, 0x2000); /* past the top: cut there */
	const struct mt_secmap_piece *p = mt_secmap_find(&m, UINT64_MAX - 1, &oom);
	ok(p && p->sec == 0 && p->end == UINT64_MAX, "a section past the top of the address space is cut there");
	ok(!mt_secmap_find(&m, 0, &oom), "and does not wrap to address 0");
	/* added after a lookup: the pieces are made again */
	mt_secmap_add(&m, 0x1000, 0x1000);
	mt_secmap_add(&m, 0x1800, 0x100);
	p = mt_secmap_find(&m, 0x1880, &oom);
	ok(p && p->sec == 2 && p->start == 0x1800 && p->end == 0x1900, "a newer section inside an older one hides it");
	p = mt_secmap_find(&m, 0x1900, &oom);
	ok(p && p->sec == 1 && p->start == 0x1900 && p->end == 0x2000, "and the older one shows again after it");
	mt_secmap_fini(&m);
	/* many sections in one: each lookup finds its own */
	mt_secmap_init(&m);
	int bad = 0;
	for (uint64_t i = 0; i < 100000; i++)
		mt_secmap_add(&m, 0x100000 + 0x2000 * ((i * 7919) % 100000), 0x1000);
	for (uint64_t i = 0; i < 100000; i++) {
		p = mt_secmap_find(&m, 0x100000 + 0x2000 * ((i * 7919) % 100000) + 0x800, &oom);
		bad += !p || p->sec != i;
	}
	ok(!bad && m.npieces == 100000, "100,000 sections added out of order: each found");
	mt_secmap_fini(&m);
}

int main(void)
{
	test_random();
	test_edges();
	return tap_done();
}
