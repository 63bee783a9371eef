/* strtab: string interning (one stable copy per distinct string, compared by
 * pointer afterwards), and the small array and number-formatting helpers the
 * modules share. */
#ifndef MT_STRTAB_H
#define MT_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct mt_strtab {
	char **v;             /* open addressing */
	size_t cap, n;
};

/* The interned copy of s, or NULL when out of memory. */
const char *mt_strtab_intern(struct mt_strtab *t, const char *s);
void mt_strtab_free(struct mt_strtab *t);
/* FNV-1a, for tables keyed by strings. */
uint64_t mt_hash_str(const char *s);
/* n bytes a word at a time, for the hot tables keyed by byte runs (the
 * binary stream's strings and packed ids). Inline, and the tail's word
 * assembled from overlapping loads: a call to memcpy for the last few
 * bytes had cost more than the hash itself (a symbolized event's ids). */
static inline uint64_t mt_hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	for (; n >= 8; s += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	/* the last n < 8 bytes, little-endian, zero above: overlapping loads
	 * put the same byte where they overlap */
	uint64_t w = 0;
	if (n >= 4) {
		uint32_t lo, hi;
		memcpy(&lo, s, 4);
		memcpy(&hi, s + n - 4, 4);
		w = lo | (uint64_t)hi << (8 * (n - 4));
	} else if (n) {
		w = s[0] | (uint64_t)s[n / 2] << (8 * (n / 2)) | (uint64_t)s[n - 1] << (8 * (n - 1));
	}
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}
/* v as "0x" and lowercase hex digits (at most 18 bytes, no NUL); returns
 * the end. For the hot paths that printf's parsing made slow. */
char *mt_put_hex(char *p, uint64_t v);
/* v in decimal (at most 20 bytes, no NUL); returns the end. */
char *mt_put_dec(char *p, uint64_t v);
/* Numbers below MT_NUMSTR_MAX as strings that stay at one address for the
 * table's life (each formatted on first use): for callers that promise
 * their strings unchanged by address (events.h, strings_epoch). */
#define MT_NUMSTR_MAX 65536
struct mt_numstr { char (*hex)[8], (*dec)[8]; };
/* "0x..." as mt_put_hex writes it; NULL when v is too large or out of memory. */
const char *mt_numstr_hex(struct mt_numstr *t, uint64_t v);
/* Decimal; NULL when v is too large or out of memory. */
const char *mt_numstr_dec(struct mt_numstr *t, uint64_t v);
void mt_numstr_free(struct mt_numstr *t);
/* A decimal count for an option, with K, M or G (powers of 1024) after it
 * where suffixed; -1 when it is not one or overflows. */
int mt_parse_count(const char *s, bool suffixed, uint64_t *out);
/* n bytes (at most 32) as lowercase hex into out (2n+1 bytes): build-ids. */
void mt_hex(const uint8_t *p, size_t n, char *out);
/* Makes *v hold at least need elements of elem bytes (doubling); false when
 * out of memory (*v unchanged). Inline: the hot paths call it per event and
 * almost always have room. */
bool mt_grow_slow(void **v, size_t *cap, size_t need, size_t elem);
static inline bool mt_grow(void **v, size_t *cap, size_t need, size_t elem)
{
	return need <= *cap || mt_grow_slow(v, cap, need, elem);
}

/* In an array sorted by a uint64_t key at byte offset key_off of each
 * stride-byte element: how many elements have key <= k (so the last of
 * them, if any, is at the result minus one). */
size_t mt_count_at_or_below(const void *base, size_t n, size_t stride, size_t key_off, uint64_t k);

#endif
