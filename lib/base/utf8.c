/* utf8: names as each reader takes them (utf8.h). */
#define _POSIX_C_SOURCE 200809L
#include "base/utf8.h"

#include <stdlib.h>
#include <string.h>

/* The lead byte's sequence length and its second byte's range (RFC
 * 3629's table); 0 for a byte that begins no sequence. */
static size_t lead(unsigned c, unsigned *lo, unsigned *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0)
			*lo = 0xa0; /* no overlong form */
		else if (c == 0xed)
			*hi = 0x9f; /* no surrogate */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0)
			*lo = 0x90;
		else if (c == 0xf4)
			*hi = 0x8f; /* nothing beyond U+10FFFF */
		return 4;
	}
	return 0;
}

/* How many bytes at s begin a well-formed sequence: its whole length when
 * complete, else its maximal subpart (at least 1). */
static size_t prefix(const unsigned char *s, size_t n, size_t *k)
{
	unsigned lo, hi;
	*k = s[0] < 0x80 ? 1 : lead(s[0], &lo, &hi);
	if (*k <= 1)
		return 1;
	size_t i = 1;
	if (i < n && s[1] >= lo && s[1] <= hi)
		for (i = 2; i < *k && i < n && (s[i] & 0xc0) == 0x80; i++)
			;
	return i;
}

size_t mt_utf8_seq(const unsigned char *s, size_t n)
{
	if (!n)
		return 0;
	size_t k, i = prefix(s, n, &k);
	return i == k ? k : 0;
}

size_t mt_utf8_bad(const unsigned char *s, size_t n)
{
	size_t k;
	return n ? prefix(s, n, &k) : 0;
}

bool mt_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	for (;;) {
		while (*p && *p < 0x80)
			p++;
		if (!*p)
			return true;
		size_t k = mt_utf8_seq(p, strnlen((const char *)p, 4));
		if (!k)
			return false;
		p += k;
	}
}

const char *mt_utf8_fixed(const char *s, char **buf, size_t *cap)
{
	if (mt_utf8_valid(s))
		return s;
	size_t n = strlen(s), need = 3 * n + 1;
	if (*cap < need) {
		char *b = realloc(*buf, need);
		if (!b)
			return NULL;
		*buf = b;
		*cap = need;
	}
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	char *o = *buf;
	while (p < end) {
		size_t k = mt_utf8_seq(p, (size_t)(end - p));
		if (k) {
			memcpy(o, p, k);
			o += k;
			p += k;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p += mt_utf8_bad(p, (size_t)(end - p));
		}
	}
	*o = '\0';
	return *buf;
}

bool mt_utf8_is_control(const unsigned char *s, size_t k)
{
	return (k == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (k == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

size_t mt_utf8_put_escaped(FILE *f, const char *s)
{
	size_t w = 0;
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	while (n) {
		size_t k = mt_utf8_seq(p, n);
		if (k && !mt_utf8_is_control(p, k) && *p != '\\') {
			fwrite(p, 1, k, f);
			w += k;
		} else if (*p == '\t' || *p == '\n' || *p == '\r' || *p == '\\') {
			fputc('\\', f);
			fputc(*p == '\t' ? 't' : *p == '\n' ? 'n' : *p == '\r' ? 'r' : '\\', f);
			k = 1;
			w += 2;
		} else { /* a control character (each of its bytes) or a bad byte */
			if (!k)
				k = 1;
			for (size_t i = 0; i < k; i++) {
				char e[4] = {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15]};
				fwrite(e, 1, 4, f);
			}
			w += 4 * k;
		}
		p += k;
		n -= k;
	}
	return w;
}

char *mt_utf8_json(char *out, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	while (*p && o + 7 < cap) {
		unsigned c = *p;
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
			p++;
		} else if (c < 0x20) {
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[c >> 4];
			out[o + 5] = hex[c & 15];
			o += 6;
			p++;
		} else if (c < 0x80) {
			out[o++] = (char)c;
			p++;
		} else {
			size_t k = mt_utf8_seq(p, strnlen((const char *)p, 4));
			if (k) {
				memcpy(out + o, p, k);
				o += k;
				p += k;
			} else {
				memcpy(out + o, "\\ufffd", 6);
				o += 6;
				p += mt_utf8_bad(p, strnlen((const char *)p, 4));
			}
		}
	}
	return out + o;
}

void mt_utf8_put_json(FILE *f, const char *s)
{
	char b[6 * 512 + 8];
	fputc('"', f);
	while (*s) { /* in pieces of 512 bytes, each whole sequences */
		size_t n = strnlen(s, 512);
		while (n == 512 && n > 509 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--; /* a sequence is not cut */
		char piece[520];
		memcpy(piece, s, n);
		piece[n] = '\0';
		fwrite(b, 1, (size_t)(mt_utf8_json(b, sizeof b, piece) - b), f);
		s += n;
	}
	fputc('"', f);
}
