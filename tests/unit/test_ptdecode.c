/* Unit tests of ptdecode's time conversion, TAP output. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/ptdecode.h"

#include "tap.h"

/* Oracle: the exact 128-bit value of zero + tsc*mult / 2^shift. perf's
 * quotient/remainder split must equal it (mod 2^64) for every input. */
static void test_tsc_conversion(void)
{
	uint64_t seed = 88172645463325252ULL;
	int good = 1;
	for (int i = 0; i < 100000 && good; i++) {
		seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
		struct mt_tsc_conv c = {.time_shift = (uint16_t)(seed % 32), .time_mult = (uint32_t)(seed >> 32),
					.time_zero = seed * 2654435761u};
		uint64_t tsc = seed >> (seed % 17);
		unsigned __int128 exact = ((unsigned __int128)tsc * c.time_mult) >> c.time_shift;
		uint64_t want = c.time_zero + (uint64_t)exact;
		good = mt_tsc_to_perf_time(&c, tsc) == want;
	}
	ok(good, "tsc->perf time equals the exact 128-bit formula (100000 random cases)");
	/* the README's 4.14 conversion: shift 31, mult 1789569706, zero 0xfffffff86343cb91 */
	struct mt_tsc_conv q = {.time_shift = 31, .time_mult = 1789569706, .time_zero = 0xfffffff86343cb91ULL};
	unsigned __int128 e = ((unsigned __int128)123456789012345ULL * 1789569706u) >> 31;
	ok(mt_tsc_to_perf_time(&q, 123456789012345ULL) == 0xfffffff86343cb91ULL + (uint64_t)e,
	   "tsc->perf time with the 4.14 file's negative time_zero wraps like perf");
}


int main(void)
{
	test_tsc_conversion();
	return tap_done();
}
