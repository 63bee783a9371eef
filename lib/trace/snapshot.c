#define _GNU_SOURCE
#include "trace/snapshot.h"

#include <string.h>

static size_t overlap_at(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* perf pads each AUXTRACE payload with up to 7 zero bytes: a may end with
 * padding that b does not have. On a match, *alen drops that padding. */
size_t mt_snapshot_overlap(const uint8_t *a, size_t *alen, const uint8_t *b, size_t blen)
{
	for (size_t pad = 0; pad < 8 && pad < *alen; pad++) {
		if (pad && a[*alen - pad])
			break;
		size_t ov = overlap_at(a, *alen - pad, b, blen);
		if (ov) {
			*alen -= pad;
			return ov;
		}
	}
	return 0;
}

/* A match must hold this many bytes after b's first PSB to be believed
 * over a longer one: a snapshot cut just after a PSB (a PSB and a MODE
 * byte, as one fixture ended) matches any b that starts at a PSB of the
 * same kind, and was stitched on there. More than a PSB+ (its packets
 * repeat from PSB to PSB in a timeless trace). */
#define OVERLAP_CONFIRM 64

static size_t overlap_at(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};
	const uint8_t *p = memmem(b, blen, psb, sizeof psb);
	if (!p)
		return 0;
	size_t pb = (size_t)(p - b), unconfirmed = 0;
	/* latest occurrence in a first: the overlap is as short as possible,
	 * once it is long enough to be believed */
	for (size_t qa = alen >= sizeof psb ? alen - sizeof psb + 1 : 0; qa-- > 0;) {
		if (memcmp(a + qa, psb, sizeof psb))
			continue;
		if (qa < pb)
			break;
		size_t start = qa - pb, ov = alen - start; /* b[0] sits at a[start] */
		if (ov > blen || memcmp(a + start, b, ov))
			continue;
		if (alen - qa >= OVERLAP_CONFIRM || ov == blen)
			return ov;
		if (!unconfirmed)
			unconfirmed = ov;
	}
	return unconfirmed; /* only a short match: the best there is */
}
