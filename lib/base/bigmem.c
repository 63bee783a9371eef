/* bigmem: small arrays in malloc's memory, large ones in mappings aligned
 * to 2 MiB, moved with mremap as they grow. */
#define _GNU_SOURCE
#include "base/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static size_t round_huge(size_t n)
{
	return (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

bool mt_bigmem_is_mapped(size_t cap, size_t elem)
{
	return cap && cap * elem >= MT_BIGMEM_MIN;
}

/* A 2 MiB-aligned range of len bytes (a multiple of 2 MiB), reserved with
 * no access: the kernel places mappings where it likes, so one 2 MiB more
 * is asked for and the ends cut off. */
static void *reserve_aligned(size_t len)
{
	void *p = mmap(NULL, len + HUGE_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t start = (uintptr_t)p, aligned = (start + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	if (aligned > start)
		munmap(p, aligned - start);
	size_t tail = start + len + HUGE_PAGE - (aligned + len);
	if (tail)
		munmap((void *)(aligned + len), tail);
	return (void *)aligned;
}

/* An array's first mapping: the malloc'd one's elements copied in. */
static void *map_new(const void *old, size_t old_bytes, size_t len)
{
	void *p = reserve_aligned(len);
	if (!p)
		return NULL;
	if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		munmap(p, len);
		return NULL;
	}
	(void)madvise(p, len, MADV_HUGEPAGE); /* a hint: EINVAL where THP is not built in */
	if (old_bytes)
		memcpy(p, old, old_bytes);
	return p;
}

/* A mapped array moved into a larger aligned range: its pages (and page
 * tables) move, pages never touched stay untouched, and the mapping keeps
 * its flags (MADV_HUGEPAGE's among them). */
static void *map_grow(void *old, size_t old_len, size_t len)
{
	void *p = reserve_aligned(len);
	if (!p)
		return NULL;
	void *q = mremap(old, old_len, len, MREMAP_MAYMOVE | MREMAP_FIXED, p);
	if (q == MAP_FAILED) {
		munmap(p, len);
		return NULL;
	}
	return q;
}

bool mt_bigmem_grow_slow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : 4;
	while (nc < need) {
		if (nc > SIZE_MAX / 2 / elem)
			return false;
		nc *= 2;
	}
	size_t bytes = nc * elem;
	void *nv;
	if (bytes < MT_BIGMEM_MIN) {
		nv = realloc(*v, bytes);
	} else {
		/* a mapping's length is its capacity's bytes rounded up to
		 * 2 MiB: the same rounding at free */
		size_t len = round_huge(bytes);
		if (mt_bigmem_is_mapped(*cap, elem))
			nv = map_grow(*v, round_huge(*cap * elem), len);
		else
			nv = map_new(*v, *cap * elem, len);
		if (nv && !mt_bigmem_is_mapped(*cap, elem))
			free(*v);
	}
	if (!nv)
		return false;
	*v = nv;
	*cap = nc;
	return true;
}

void mt_bigmem_free(void *v, size_t cap, size_t elem)
{
	if (!v)
		return;
	if (mt_bigmem_is_mapped(cap, elem))
		munmap(v, round_huge(cap * elem));
	else
		free(v);
}

void *mt_bigmem_zalloc(size_t bytes)
{
	if (bytes < MT_BIGMEM_MIN)
		return calloc(1, bytes ? bytes : 1);
	return map_new(NULL, 0, round_huge(bytes));
}

void mt_bigmem_zfree(void *p, size_t bytes)
{
	if (!p)
		return;
	if (bytes < MT_BIGMEM_MIN)
		free(p);
	else
		munmap(p, round_huge(bytes));
}
