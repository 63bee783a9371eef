/* pbwire: the protobuf wire format by hand, for the hot records that do
 * not go through protobuf-c (the binary event stream's Events, Perfetto's
 * TrackEvent packets): varints, tags, length-delimited fields. */
#ifndef MT_PBWIRE_H
#define MT_PBWIRE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { MT_PB_VARINT = 0, MT_PB_I64 = 1, MT_PB_LEN = 2 };

static inline uint8_t *mt_pb_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* The bytes mt_pb_varint writes for v. */
static inline size_t mt_pb_varint_len(uint64_t v)
{
	/* 7 bits a byte: the highest bit set's index over 7, without a loop */
	return v < 0x80 ? 1 : (size_t)(63 - __builtin_clzll(v)) / 7 + 1;
}

/* sint64's zigzag form (the stream's time deltas): small magnitudes of
 * either sign as small varints. */
static inline uint64_t mt_pb_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline uint64_t mt_pb_unzigzag(uint64_t v)
{
	return (v >> 1) ^ -(v & 1);
}

static inline uint8_t *mt_pb_tag(uint8_t *p, unsigned field, unsigned wire_type)
{
	return mt_pb_varint(p, (uint64_t)field << 3 | wire_type);
}

/* A varint field. */
static inline uint8_t *mt_pb_uint(uint8_t *p, unsigned field, uint64_t v)
{
	return mt_pb_varint(mt_pb_tag(p, field, MT_PB_VARINT), v);
}

/* n bytes: the few-byte copies of the hot records inline (fixed-size
 * overlapping moves), not a call into libc's memcpy each. */
static inline void mt_pb_copy(uint8_t *d, const void *src, size_t n)
{
	const uint8_t *s = src;
	if (n >= 8 && n <= 16) {
		memcpy(d, s, 8);
		memcpy(d + n - 8, s + n - 8, 8);
	} else if (n > 16 && n <= 32) { /* an Event's fields: 20 to 30 bytes */
		memcpy(d, s, 16);
		memcpy(d + n - 16, s + n - 16, 16);
	} else if (n >= 4 && n < 8) {
		memcpy(d, s, 4);
		memcpy(d + n - 4, s + n - 4, 4);
	} else if (n < 4) {
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
	} else {
		memcpy(d, s, n);
	}
}

/* A length-delimited field. */
static inline uint8_t *mt_pb_bytes(uint8_t *p, unsigned field, const void *b, size_t n)
{
	p = mt_pb_varint(mt_pb_tag(p, field, MT_PB_LEN), n);
	mt_pb_copy(p, b, n);
	return p + n;
}

/* Reads a varint of at most 10 bytes before end; false if cut or longer. */
static inline bool mt_pb_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	if (p < end && *p < 0x80) { /* most tags and many values: one byte */
		*v = *p;
		*pp = p + 1;
		return true;
	}
	if (end - p >= 8) { /* up to 8 bytes without a loop: addresses are 6 or 7 */
		uint64_t w;
		memcpy(&w, p, 8);
		uint64_t stop = ~w & 0x8080808080808080ULL;
		if (stop) {
			unsigned len = ((unsigned)__builtin_ctzll(stop) >> 3) + 1;
			if (len < 8)
				w &= (1ULL << (8 * len)) - 1;
			/* the 7-bit groups closed up: in pairs, fours, then the eight */
			w = ((w & 0x7f007f007f007f00ULL) >> 1) | (w & 0x007f007f007f007fULL);
			w = ((w & 0x3fff00003fff0000ULL) >> 2) | (w & 0x00003fff00003fffULL);
			w = ((w & 0x0fffffff00000000ULL) >> 4) | (w & 0x000000000fffffffULL);
			*v = w;
			*pp = p + len;
			return true;
		}
	}
	uint64_t x = 0;
	for (unsigned s = 0; p < end && s < 64; s += 7) {
		uint8_t b = *p++;
		x |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80)) {
			*pp = p;
			*v = x;
			return true;
		}
	}
	return false;
}

/* A varint of at most 8 bytes at p, where 8 bytes can be read whatever it
 * holds: its length, or 0 when it is longer (then *v is not set). One and
 * two bytes (tags, kinds, pids) without the general folding. */
static inline unsigned mt_pb_varint8(const uint8_t *p, uint64_t *v)
{
	uint64_t w;
	memcpy(&w, p, 8);
	if (!(w & 0x80)) {
		*v = w & 0x7f;
		return 1;
	}
	if (!(w & 0x8000)) {
		*v = (w & 0x7f) | (w >> 1 & 0x3f80);
		return 2;
	}
	uint64_t stop = ~w & 0x8080808080808080ULL;
	if (!stop)
		return 0;
	w &= stop ^ (stop - 1); /* the varint's bytes, the stop bit's byte last */
	w = ((w & 0x7f007f007f007f00ULL) >> 1) | (w & 0x007f007f007f007fULL);
	w = ((w & 0x3fff00003fff0000ULL) >> 2) | (w & 0x00003fff00003fffULL);
	w = ((w & 0x0fffffff00000000ULL) >> 4) | (w & 0x000000000fffffffULL);
	*v = w;
	return ((unsigned)__builtin_ctzll(stop) >> 3) + 1;
}

#endif
