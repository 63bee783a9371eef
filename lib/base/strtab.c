/* strtab: see strtab.h. */
#define _POSIX_C_SOURCE 200809L
#include "base/strtab.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t mt_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

bool mt_grow_slow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : 4; /* small: per-thread arrays, 100,000 threads */
	while (nc < need)
		nc *= 2;
	void *nv = realloc(*v, nc * elem);
	if (!nv)
		return false;
	*v = nv;
	*cap = nc;
	return true;
}

/* Two characters a byte (hex) and two digits a step (decimal): half the
 * loop trips of one at a time, on the text writer's hottest path. */
static const char hex_pairs[513] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
static const char dec_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

char *mt_put_hex(char *p, uint64_t v)
{
	int n = (64 - __builtin_clzll(v | 1) + 3) / 4;
	*p++ = '0';
	*p++ = 'x';
	char *e = p + n, *q = e;
	for (; n >= 2; n -= 2, v >>= 8) {
		q -= 2;
		memcpy(q, hex_pairs + 2 * (v & 0xff), 2);
	}
	if (n)
		q[-1] = hex_pairs[2 * (v & 15) + 1];
	return e;
}

char *mt_put_dec(char *p, uint64_t v)
{
	int n = 1;
	for (uint64_t t = v; t >= 10; t /= 10)
		n++;
	char *e = p + n, *q = e;
	while (v >= 100) {
		q -= 2;
		memcpy(q, dec_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, dec_pairs + 2 * v, 2);
	} else {
		q[-1] = (char)('0' + v);
	}
	return e;
}

const char *mt_strtab_intern(struct mt_strtab *t, const char *s)
{
	if ((t->n + 1) * 2 > t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 1024;
		char **nv = calloc(nc, sizeof *nv);
		if (!nv)
			return NULL;
		for (size_t i = 0; i < t->cap; i++)
			if (t->v[i]) {
				size_t j = mt_hash_str(t->v[i]) & (nc - 1);
				while (nv[j])
					j = (j + 1) & (nc - 1);
				nv[j] = t->v[i];
			}
		free(t->v);
		t->v = nv;
		t->cap = nc;
	}
	size_t j = mt_hash_str(s) & (t->cap - 1);
	while (t->v[j]) {
		if (!strcmp(t->v[j], s))
			return t->v[j];
		j = (j + 1) & (t->cap - 1);
	}
	if (!(t->v[j] = strdup(s)))
		return NULL;
	t->n++;
	return t->v[j];
}

void mt_strtab_free(struct mt_strtab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->v[i]);
	free(t->v);
	t->v = NULL;
	t->cap = t->n = 0;
}

size_t mt_count_at_or_below(const void *base, size_t n, size_t stride, size_t key_off, uint64_t k)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t v;
		memcpy(&v, (const char *)base + mid * stride + key_off, sizeof v);
		if (v <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void mt_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	if (n > 32)
		n = 32;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Both tables are allocated whole on first use (512 KiB each, calloc's
 * zero pages: only the numbers used are ever touched). */
static const char *numstr(char (**tab)[8], uint64_t v, bool hex)
{
	if (v >= MT_NUMSTR_MAX || (!*tab && !(*tab = calloc(MT_NUMSTR_MAX, sizeof **tab))))
		return NULL;
	char *p = (*tab)[v];
	if (!p[0])
		*(hex ? mt_put_hex(p, v) : mt_put_dec(p, v)) = '\0';
	return p;
}

const char *mt_numstr_hex(struct mt_numstr *t, uint64_t v)
{
	return numstr(&t->hex, v, true);
}

const char *mt_numstr_dec(struct mt_numstr *t, uint64_t v)
{
	return numstr(&t->dec, v, false);
}

void mt_numstr_free(struct mt_numstr *t)
{
	free(t->hex);
	free(t->dec);
	t->hex = t->dec = NULL;
}

int mt_parse_count(const char *s, bool suffixed, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	if (suffixed && *end) {
		const char *units = "KMG";
		const char *u = strchr(units, *end);
		if (!u || end[1])
			return -1;
		shift = 10 * (unsigned)(u - units + 1);
		end++;
	}
	if (errno || *end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}
