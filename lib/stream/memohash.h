/* memohash: the hash the stream readers' memos place a record's bytes by
 * (linememo's text lines, recmemo's binary records). */
#ifndef MT_MEMOHASH_H
#define MT_MEMOHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MT_MEMOHASH_MAX 64 /* bytes a hash covers at most */

static inline uint64_t mt_memohash_word(const unsigned char *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
	return w;
}

#define MT_MEMOHASH_MIX(w, i, j) (((w) ^ (j)) * (i))

/* The hash of n <= MT_MEMOHASH_MAX bytes: eight words, each through its
 * own multiplication (none waits for another), overlapping where there
 * are fewer bytes; a memo's bytes decide a hit, the hash only the slot. */
static inline uint64_t mt_memohash(const void *bytes, size_t n)
{
	enum { K0 = 0, K1, K2, K3, K4, K5, K6, K7 };
	static const uint64_t k[8] = {0x9e3779b97f4a7c15ULL, 0xff51afd7ed558ccdULL, 0xc4ceb9fe1a85ec53ULL,
				      0x87c37b91114253d5ULL, 0x4cf5ad432745937fULL, 0xd6e8feb86659fd93ULL,
				      0xa0761d6478bd642fULL, 0xe7037ed1a0b428dbULL};
	const unsigned char *p = bytes;
	uint64_t h = n * 0x8ebc6af09c88c6e3ULL;
#define W(at, i, j) MT_MEMOHASH_MIX(mt_memohash_word(at), k[i], k[j])
	if (n >= 32) {
		const unsigned char *q = p + n - 32;
		h += W(p, K0, K4) + W(p + 8, K1, K5) + W(p + 16, K2, K6) + W(p + 24, K3, K7) + W(q, K4, K0) +
		     W(q + 8, K5, K1) + W(q + 16, K6, K2) + W(q + 24, K7, K3);
	} else if (n >= 16) {
		h += W(p, K0, K4) + W(p + 8, K1, K5) + W(p + n - 16, K2, K6) + W(p + n - 8, K3, K7);
	} else if (n >= 8) {
		h += W(p, K0, K4) + W(p + n - 8, K1, K5);
	} else {
		uint64_t w = 0;
		for (size_t i = 0; i < n; i++)
			w |= (uint64_t)p[i] << 8 * i;
		h += MT_MEMOHASH_MIX(w, k[K0], k[K4]);
	}
#undef W
	h ^= h >> 31;
	return h * k[K0];
}

/* Whether n <= MT_MEMOHASH_MAX bytes at a and b are the same: words
 * compared as the hash reads them, without a call (8 bytes readable past
 * neither is needed: the words overlap inside the n bytes). */
static inline bool mt_memohash_same(const void *a, const void *b, size_t n)
{
	const unsigned char *p = a, *q = b;
	uint64_t d;
#define D(i) (mt_memohash_word(p + (i)) ^ mt_memohash_word(q + (i)))
	if (n >= 32) {
		d = D(0) | D(8) | D(16) | D(24);
		for (size_t i = 32; i + 8 <= n; i += 8)
			d |= D(i);
		d |= D(n - 8);
	} else if (n >= 16) {
		d = D(0) | D(8) | D(n - 16) | D(n - 8);
	} else if (n >= 8) {
		d = D(0) | D(n - 8);
	} else {
		return !memcmp(p, q, n);
	}
#undef D
	return !d;
}

#endif
