/* Unit tests of the line memo (stream/linememo.c); TAP output. Oracle:
 * the memo's contract (linememo.h), case by case: what was kept is found
 * by its bytes alone, anything else is not, and the memo stands aside
 * where lines do not repeat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/linememo.h"

#include "tap.h"

/* Keeps key in its slot as the reader does: bytes, length, hash. */
static struct mt_linememo_entry *keep(struct mt_linememo *m, const char *key, bool own, uint64_t epoch)
{
	uint64_t h;
	struct mt_linememo_entry *e;
	mt_linememo_lookup(m, key, strlen(key), epoch, &e, &h); /* found or not: kept as said */
	if (!e)
		return NULL;
	memcpy(e->key, key, strlen(key));
	e->len = strlen(key);
	e->own = own;
	e->epoch = epoch;
	e->hash = h;
	return e;
}

static bool finds(struct mt_linememo *m, const char *key, uint64_t epoch)
{
	uint64_t h;
	struct mt_linememo_entry *e;
	return mt_linememo_lookup(m, key, strlen(key), epoch, &e, &h);
}

/* Looks key up as the reader does, in a buffer where it is followed by
 * after (its newline, the next line, or nothing yet read). */
static size_t finds_in_buffer(struct mt_linememo *m, const char *key, const char *after, uint64_t epoch,
			      bool *told)
{
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "%s%s", key, after);
	struct mt_linememo_entry *e;
	uint64_t h;
	size_t len = mt_linememo_find(m, buf, (size_t)n, epoch, &e, &h);
	*told = len || e;
	return len;
}

/* mt_linememo_find: lines still in their buffer, their end not yet
 * found, short (the newline among the hashed bytes) and long. */
static void test_find(void)
{
	struct mt_linememo m;
	mt_linememo_init(&m);
	const char *shortl = "\t1\t1\tcall\t0x1000\t0x2000\tinsn=3";
	const char *longl = "\t1\t1\tcall\t0x1000\t0x2000\tinsn=3\tfrom_sym=main\tfrom_off=0x10\tto_sym=helper\tto_off=0x0";
	bool told;
	keep(&m, shortl, true, 0);
	keep(&m, longl, false, 5);
	ok(finds_in_buffer(&m, shortl, "\n-\t1\t1\treturn\t0x2000\t0x1005\n", 0, &told) == strlen(shortl) &&
	       finds_in_buffer(&m, shortl, "\n", 0, &told) == strlen(shortl),
	   "a kept short line is found before its newline is looked for: its length");
	ok(finds_in_buffer(&m, longl, "\n7\t1\t1\tcall\n", 5, &told) == strlen(longl) &&
	       finds_in_buffer(&m, longl, "\n", 5, &told) == strlen(longl),
	   "a kept long line too, in its tail memo's epoch");
	ok(!finds_in_buffer(&m, longl, "\n", 6, &told) && told, "a long line's columns of another epoch: a miss");
	ok(!finds_in_buffer(&m, longl, "", 5, &told) && !told, "a long line not yet read to its newline: cannot tell");
	ok(!finds_in_buffer(&m, shortl, "", 0, &told) && !told, "nor a short one");
	ok(!finds_in_buffer(&m, longl, "X\n", 5, &told) && told && !finds_in_buffer(&m, shortl, "X\n", 0, &told) && told,
	   "a line that goes on past a kept line is a miss");
	char prefix[200];
	snprintf(prefix, sizeof prefix, "%.*s", (int)strlen(longl) - 1, longl);
	ok(!finds_in_buffer(&m, prefix, "\n-\t2\t2\treturn\t0x1\t0x2\n", 5, &told) && told,
	   "a line that stops short of a kept one is a miss");
	/* a lookup begun for the next line is taken up by its find; begun
	 * on bytes that then changed (forgotten, as the reader does), not */
	char buf[256];
	int n = snprintf(buf, sizeof buf, "%s\n", longl);
	struct mt_linememo_entry *e;
	uint64_t h;
	mt_linememo_prefetch(&m, buf, (size_t)n);
	ok(m.next.key == buf && mt_linememo_find(&m, buf, (size_t)n, 5, &e, &h) == strlen(longl) && !m.next.key,
	   "a lookup begun is taken up by the line's find");
	mt_linememo_prefetch(&m, buf, (size_t)n);
	mt_linememo_forget_next(&m);
	buf[10] ^= 1;
	ok(!mt_linememo_find(&m, buf, (size_t)n, 5, &e, &h) && e, "one forgotten is not: the changed line is a miss");
	/* a short kept line, begun, then the bytes changed to it and more:
	 * even not forgotten, never a hit of the old line's length */
	n = snprintf(buf, sizeof buf, "%s\n-\t1\t1\treturn\t0x2\t0x3\n", shortl);
	mt_linememo_prefetch(&m, buf, (size_t)n);
	n = snprintf(buf, sizeof buf, "%sX\n-\t1\t1\treturn\t0x2\t0x3\n", shortl);
	ok(mt_linememo_find(&m, buf, (size_t)n, 0, &e, &h) != strlen(shortl), "a lookup begun on bytes since changed never finds the old line");
	uint64_t found = m.found;
	uint32_t window = m.aside.window;
	finds_in_buffer(&m, longl, "\n", 5, &told);
	finds_in_buffer(&m, longl, "", 5, &told);
	ok(m.found == found + 1 && m.aside.window == window + 1, "a hit is counted, a line that cannot tell is not");
	mt_linememo_fini(&m);
}

/* The slot looked up after the last line's last time, compared first (a
 * loop's lines): lines read as the reader reads them, each found, then
 * the next one's lookup begun. */
static void test_followed(void)
{
	struct mt_linememo m;
	mt_linememo_init(&m);
	const char *lines[3] = {"\t1\t1\tcall\t0x1000\t0x2000\tinsn=3\tfrom_sym=main\tto_sym=work",
				"\t1\t1\treturn\t0x2010\t0x1005\tinsn=9\tfrom_sym=work\tto_sym=main",
				"\t1\t1\tjump\t0x1010\t0x1000\tinsn=2"};
	char buf[512];
	struct mt_linememo_entry *e;
	uint64_t h;
	for (int k = 0; k < 3; k++)
		keep(&m, lines[k], true, 0);
	unsigned hits = 0;
	size_t n = 0;
	for (int k = 0; k < 10; k++) /* three rounds, and the first line again */
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n", lines[k % 3]);
	const char *at = buf;
	for (int k = 0; k < 9; k++) { /* as the reader: each found, the next begun */
		size_t len = strlen(lines[k % 3]), avail = n - (size_t)(at - buf);
		hits += mt_linememo_find(&m, at, avail, 0, &e, &h) == len;
		at += len + 1;
		mt_linememo_prefetch(&m, at, avail - len - 1);
	}
	ok(hits == 9 && m.followed == 8, "a loop's lines are found, each by the slot that came next last time");
	/* begun on the slot that came next, then a byte of the line changed
	 * (its length kept): decided by the bytes at the find, a miss */
	n = (size_t)snprintf(buf, sizeof buf, "%s\n", lines[0]);
	mt_linememo_find(&m, buf, (size_t)n, 0, &e, &h);
	n = (size_t)snprintf(buf, sizeof buf, "%s\n", lines[1]);
	mt_linememo_prefetch(&m, buf, n);
	bool begun = m.next.followed != NULL;
	buf[12] ^= 1;
	ok(begun && !mt_linememo_find(&m, buf, n, 0, &e, &h), "one begun on bytes since changed is a miss");
	/* the slot that came next holds a line of another length: the usual
	 * lookup finds this one */
	n = (size_t)snprintf(buf, sizeof buf, "%s\n", lines[0]);
	mt_linememo_find(&m, buf, n, 0, &e, &h);
	n = (size_t)snprintf(buf, sizeof buf, "%s\n", lines[2]);
	mt_linememo_prefetch(&m, buf, n);
	uint64_t followed = m.followed;
	ok(mt_linememo_find(&m, buf, n, 0, &e, &h) == strlen(lines[2]) && m.followed == followed,
	   "a line after another than last time is found by its hash");
	mt_linememo_fini(&m);
}

int main(void)
{
	test_find();
	test_followed();
	struct mt_linememo m;
	mt_linememo_init(&m);
	const char *a = "\t1\t1\tcall\t0x1000\t0x2000\tinsn=3\tto_sym=f";
	/* the same first 64 bytes, another end: the same slot, not the same line */
	char b[200], c[200];
	snprintf(b, sizeof b, "%s%s", "\t1\t1\tcall\t0x1000\t0x2000\tinsn=3\tto_sym=f012345678901234567890123456789", "X");
	snprintf(c, sizeof c, "%s%s", "\t1\t1\tcall\t0x1000\t0x2000\tinsn=3\tto_sym=f012345678901234567890123456789", "Y");
	ok(!finds(&m, a, 0), "an empty memo finds nothing");
	ok(keep(&m, a, true, 0) && finds(&m, a, 0) && finds(&m, a, 99), "a line kept with its own strings is found, whatever the tail memo's epoch");
	keep(&m, b, true, 0);
	ok(finds(&m, b, 0) && !finds(&m, c, 0), "a line that differs only past the hashed bytes is not found");
	/* b and c share their set (the same hashed bytes); d makes three. A
	 * miss gives the slot used longest ago, as the reader keeps the line
	 * there: here, the line used last was b */
	char d[200];
	snprintf(d, sizeof d, "%s%s", "\t1\t1\tcall\t0x1000\t0x2000\tinsn=3\tto_sym=f012345678901234567890123456789", "Z");
	finds(&m, b, 0);
	keep(&m, c, true, 0);
	ok(finds(&m, b, 0) && finds(&m, c, 0), "two lines of one set are both kept");
	finds(&m, b, 0);
	keep(&m, d, true, 0);
	ok(finds(&m, b, 0) && finds(&m, d, 0) && !finds(&m, c, 0), "a third takes the place of the one not used last");
	keep(&m, a, false, 7);
	ok(finds(&m, a, 7) && !finds(&m, a, 8), "a line whose columns are the tail memo's is found only in that memo's epoch");
	char shorter[64];
	snprintf(shorter, sizeof shorter, "%.*s", (int)strlen(a) - 1, a);
	ok(!finds(&m, shorter, 7), "a prefix of a kept line is not found");
	/* standing aside: a window of lines that never repeat */
	mt_linememo_fini(&m);
	mt_linememo_init(&m);
	unsigned active = 0, n = 0;
	for (n = 0; n < 8192; n++) {
		char k[32];
		snprintf(k, sizeof k, "\t%u\tnever again", n);
		if (mt_linememo_active(&m)) {
			active++;
			finds(&m, k, 0);
		}
	}
	ok(active == 4096, "after a window of misses the memo stands aside");
	unsigned skipped = 0;
	while (!mt_linememo_active(&m))
		skipped++;
	ok(skipped == (1u << 16) - 4096, "and takes lines again after a while");
	/* a window with enough hits keeps it looking */
	mt_linememo_fini(&m);
	mt_linememo_init(&m);
	keep(&m, a, true, 0);
	active = 0;
	for (n = 0; n < 3 * 4096; n++) {
		if (!mt_linememo_active(&m))
			continue;
		active++;
		if (n % 4) {
			char k[32];
			snprintf(k, sizeof k, "\t%u\tonce", n);
			finds(&m, k, 0);
		} else {
			finds(&m, a, 0);
		}
	}
	ok(active == 3 * 4096 && m.found == 3 * 1024, "a quarter of lines found: it never stands aside");
	mt_linememo_fini(&m);
	return tap_done();
}
