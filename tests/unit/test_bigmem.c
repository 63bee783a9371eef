/* bigmem: an array grown from nothing past MT_BIGMEM_MIN keeps every
 * element written before each growth (a pattern of the index, checked
 * whole after every doubling); the kernel's own account of the process's
 * mappings (/proc/self/smaps: start address, VmFlags "hg" where
 * MADV_HUGEPAGE took) is the oracle for where a large array lives and how
 * it is marked. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/bigmem.h"
#include "tap.h"

struct elem {
	uint64_t a, b;
	uint32_t c[12];
};

static bool elem_is(const struct elem *e, size_t i)
{
	return e->a == i && e->b == ~(uint64_t)i && e->c[0] == (uint32_t)(i * 7) && e->c[11] == (uint32_t)(i ^ 0x5555);
}

/* The VmFlags line of the mapping that starts at p; "" when smaps has none
 * (its flags are then unknown), NULL when no mapping starts there. */
static const char *flags_at(const void *p, char *out, size_t n)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return "";
	char line[512];
	bool in = false, found = false;
	out[0] = '\0';
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = lo == (unsigned long)(uintptr_t)p;
			found |= in;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(out, n, "%s", line + 8);
		}
	}
	fclose(f);
	return found ? out : NULL;
}

static bool thp_built_in(void)
{
	return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
}

int main(void)
{
	struct elem *v = NULL;
	size_t cap = 0, n = 0;
	bool kept = true, doubled = true, aligned = true, mapped_when_big = true, marked = true;
	bool thp = thp_built_in();
	char fl[512];
	size_t target = 4 * MT_BIGMEM_MIN / sizeof *v + 3; /* past three mappings' growths */
	while (n < target) {
		size_t before = cap;
		if (!mt_bigmem_grow((void **)&v, &cap, n + 1, sizeof *v))
			break;
		if (cap != before) {
			doubled &= before ? cap == 2 * before : cap == 4;
			for (size_t i = 0; i < n; i++)
				kept &= elem_is(&v[i], i);
			bool big = cap * sizeof *v >= MT_BIGMEM_MIN;
			mapped_when_big &= mt_bigmem_is_mapped(cap, sizeof *v) == big;
			if (big) {
				aligned &= ((uintptr_t)v & (((size_t)2 << 20) - 1)) == 0;
				const char *f = flags_at(v, fl, sizeof fl);
				marked &= f && (!thp || strstr(f, " hg"));
			}
		}
		v[n] = (struct elem){.a = n, .b = ~(uint64_t)n};
		v[n].c[0] = (uint32_t)(n * 7);
		v[n].c[11] = (uint32_t)(n ^ 0x5555);
		n++;
	}
	ok(n == target, "grown one element at a time past four times MT_BIGMEM_MIN");
	ok(doubled, "the capacity starts at 4 and doubles, as mt_grow's");
	ok(kept, "every element written is still there after each growth (malloc to mapping, mapping to mapping)");
	ok(mapped_when_big, "a mapping of its own exactly when the capacity's bytes reach MT_BIGMEM_MIN");
	ok(aligned, "each mapping starts on a 2 MiB boundary");
	ok(marked, thp ? "after each growth smaps has a mapping that starts at the array, its VmFlags with hg "
			 "(MADV_HUGEPAGE, kept by mremap)"
		       : "after each growth smaps has a mapping that starts at the array (no THP in this kernel)");
	ok(!mt_bigmem_grow((void **)&v, &cap, SIZE_MAX / 2, sizeof *v) && cap >= target &&
		   elem_is(&v[target - 1], target - 1),
	   "a size that cannot be: false, the array and its capacity unchanged");
	void *old = v;
	mt_bigmem_free(v, cap, sizeof *v);
	ok(flags_at(old, fl, sizeof fl) == NULL, "freed: no mapping starts there any more");
	mt_bigmem_free(NULL, 0, sizeof *v);

	/* small arrays stay malloc's: no mapping of their own */
	struct elem *s = NULL;
	size_t scap = 0;
	ok(mt_bigmem_grow((void **)&s, &scap, 100, sizeof *s) && scap == 128 && !mt_bigmem_is_mapped(scap, sizeof *s) &&
		   flags_at(s, fl, sizeof fl) == NULL,
	   "a small array: capacity 128, in malloc's memory");
	mt_bigmem_free(s, scap, sizeof *s);

	/* tables: zeroed, below and above the threshold */
	size_t sizes[] = {1000, MT_BIGMEM_MIN - 1, MT_BIGMEM_MIN, 3 * MT_BIGMEM_MIN + 5};
	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		unsigned char *t = mt_bigmem_zalloc(sizes[k]);
		bool zero = t != NULL;
		for (size_t i = 0; t && i < sizes[k]; i += 997)
			zero &= t[i] == 0;
		if (t) {
			zero &= t[sizes[k] - 1] == 0;
			memset(t, 0xa5, sizes[k]); /* all of it is writable */
		}
		bool own = t && flags_at(t, fl, sizeof fl) != NULL;
		char name[128];
		snprintf(name, sizeof name, "a table of %zu bytes: zeroed, writable, %s", sizes[k],
			 sizes[k] >= MT_BIGMEM_MIN ? "a mapping of its own" : "in malloc's memory");
		ok(zero && own == (sizes[k] >= MT_BIGMEM_MIN), name);
		mt_bigmem_zfree(t, sizes[k]);
	}
	mt_bigmem_zfree(NULL, MT_BIGMEM_MIN);
	return tap_done();
}
