/* selfmap: a unit test's own code, mapped for a symbolizer as the kernel
 * maps it (/proc/self/maps), as process pid: the symbols its lookups must
 * find are the test's own. Header-only (unit tests link no test library). */
#ifndef MT_TEST_SELFMAP_H
#define MT_TEST_SELFMAP_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "names/symbolize.h"

/* Adds every executable mapping of a file whose path holds name; returns
 * the start of the last one, 0 when none. */
static inline uint64_t selfmap_add(struct mt_sym *sym, const char *name, int pid)
{
	char line[4096], meta[4096];
	uint64_t text_lo = 0;
	FILE *maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof line, maps)) {
		uint64_t lo, hi, pgoff;
		char perm[8], path[2048] = "";
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %2047s", &lo, &hi, perm, &pgoff, path) < 4)
			continue;
		if (perm[2] != 'x' || !strstr(path, name))
			continue;
		snprintf(meta, sizeof meta, "mmap\t%d\t0x%" PRIx64 "\t0x%" PRIx64 "\t0x%" PRIx64 "\t-\t%s", pid, lo,
			 hi - lo, pgoff, path);
		mt_sym_add_mmap_meta(sym, meta);
		text_lo = lo;
	}
	if (maps)
		fclose(maps);
	return text_lo;
}

#endif
