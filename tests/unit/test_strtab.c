/* Unit tests of the string table and number helpers (base/strtab.c), TAP
 * output. Oracles: printf's %#llx and %llu for the number writers, strcmp
 * for interning (one pointer per text), strtoull's value with the suffix
 * multiplied out for counts, a linear scan for the sorted-array count. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"

#include "tap.h"

static uint64_t next(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> (*x & 63);
}

static void test_numbers(void)
{
	uint64_t x = 1;
	int good = 0;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = i < 70 ? (i < 64 ? 1ULL << i : (uint64_t)i - 64) : next(&x);
		char a[32], b[32];
		*mt_put_hex(a, v) = '\0';
		snprintf(b, sizeof b, "0x%" PRIx64, v);
		bool h = !strcmp(a, b);
		*mt_put_dec(a, v) = '\0';
		snprintf(b, sizeof b, "%" PRIu64, v);
		good += h && !strcmp(a, b);
	}
	ok(good == 100000, "put_hex and put_dec write what printf writes (powers of two, 0..5, random)");
	struct mt_numstr ns = {0};
	const char *h1 = mt_numstr_hex(&ns, 4095), *h2 = mt_numstr_hex(&ns, 4095), *d = mt_numstr_dec(&ns, 77);
	ok(h1 && h1 == h2 && !strcmp(h1, "0xfff") && d && !strcmp(d, "77") && !mt_numstr_hex(&ns, MT_NUMSTR_MAX),
	   "number strings stay at one address, NULL past the table");
	mt_numstr_free(&ns);
}

static void test_intern(void)
{
	struct mt_strtab t = {0};
	const char *first[3000];
	char s[32];
	int good = 0;
	for (int i = 0; i < 3000; i++) {
		snprintf(s, sizeof s, "sym_%d", i);
		first[i] = mt_strtab_intern(&t, s);
	}
	for (int i = 0; i < 3000; i++) {
		snprintf(s, sizeof s, "sym_%d", i);
		const char *again = mt_strtab_intern(&t, s);
		good += again == first[i] && !strcmp(again, s) && again != s;
	}
	ok(good == 3000 && t.n == 3000, "one copy per text: the same pointer again, across growth");
	mt_strtab_free(&t);
}

static void test_counts(void)
{
	uint64_t v;
	ok(!mt_parse_count("64K", true, &v) && v == 65536 && !mt_parse_count("3G", true, &v) && v == 3ULL << 30 &&
	   !mt_parse_count("12", false, &v) && v == 12, "counts with K, M, G suffixes (powers of 1024)");
	ok(mt_parse_count("12K", false, &v) < 0 && mt_parse_count("", true, &v) < 0 &&
	   mt_parse_count("-1", true, &v) < 0 && mt_parse_count("99999999999999999999", true, &v) < 0 &&
	   mt_parse_count("17179869184G", true, &v) < 0, "a suffix where none is taken, empty, negative, overflow: refused");
	struct { uint64_t pad, key; } arr[500];
	uint64_t x = 5, k = 0;
	for (int i = 0; i < 500; i++)
		arr[i].key = k += next(&x) % 4;
	int good = 0;
	for (uint64_t q = 0; q < k + 3; q++) {
		size_t lin = 0;
		while (lin < 500 && arr[lin].key <= q)
			lin++;
		good += mt_count_at_or_below(arr, 500, sizeof arr[0], 8, q) == lin;
	}
	ok(good == (int)(k + 3), "count at or below equals a linear scan, with runs of equal keys");
}

/* mt_hash_bytes' definition as its comment gives it, a byte at a time: the
 * words little-endian, the tail's zero above its bytes. */
static uint64_t hash_by_bytes(const unsigned char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	size_t i = 0;
	for (; n - i >= 8; i += 8) {
		uint64_t w = 0;
		for (unsigned k = 0; k < 8; k++)
			w |= (uint64_t)s[i + k] << (8 * k);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	uint64_t w = 0;
	for (unsigned k = 0; i + k < n; k++)
		w |= (uint64_t)s[i + k] << (8 * k);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

static void test_hash_bytes(void)
{
	unsigned char buf[64];
	uint32_t x = 12345;
	bool same = true;
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof buf; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (unsigned char)(x >> 16);
		}
		/* every length and alignment up to 40 bytes: the tail's 0-7 */
		for (size_t off = 0; off < 8; off++)
			for (size_t n = 0; n <= 40; n++)
				same &= mt_hash_bytes(buf + off, n) == hash_by_bytes(buf + off, n);
	}
	ok(same, "mt_hash_bytes: the word-at-a-time hash of its definition, every tail length and alignment");
	ok(mt_hash_bytes("ab", 2) != mt_hash_bytes("ba", 2) && mt_hash_bytes("a", 1) != mt_hash_bytes("a\0", 2),
	   "order and length count");
}

int main(void)
{
	test_hash_bytes();
	test_numbers();
	test_intern();
	test_counts();
	return tap_done();
}
