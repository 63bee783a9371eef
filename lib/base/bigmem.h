/* bigmem: growing arrays that may become large, in 2 MiB pages once they
 * are. A process touching fresh memory takes a page fault every 4 KiB, and
 * on a virtual machine a fault costs microseconds (12 us each measured on
 * this project's VM: touching 64 MiB took 200 ms in 4 KiB pages, 5 ms in
 * 2 MiB pages). mt-toperfetto's held-items window (16 MiB, a thread's
 * items in an array each) took 16,000 faults a run, a third of its time.
 * An array stays in malloc's memory below MT_BIGMEM_MIN bytes (a trace may
 * have 100,000 threads, each with a small array); at and above it, it is
 * a mapping of its own, aligned to 2 MiB and marked for transparent huge
 * pages (madvise MADV_HUGEPAGE: a hint; where THP is off, 4 KiB pages, as
 * before). Growing moves the pages, never copies them. */
#ifndef MT_BIGMEM_H
#define MT_BIGMEM_H

#include <stdbool.h>
#include <stddef.h>

#define MT_BIGMEM_MIN ((size_t)2 << 20)

/* As mt_grow (strtab.h): makes *v hold at least need elements of elem
 * bytes (doubling from 4); false when out of memory (*v unchanged). *v is
 * NULL or an array this function made, with *cap its capacity. */
bool mt_bigmem_grow_slow(void **v, size_t *cap, size_t need, size_t elem);
static inline bool mt_bigmem_grow(void **v, size_t *cap, size_t need, size_t elem)
{
	return need <= *cap || mt_bigmem_grow_slow(v, cap, need, elem);
}

/* Frees an array mt_bigmem_grow made (NULL: nothing). */
void mt_bigmem_free(void *v, size_t cap, size_t elem);

/* A zeroed table of bytes bytes that does not grow (a memo's slots):
 * calloc's below MT_BIGMEM_MIN, a mapping of its own in 2 MiB pages at and
 * above it. NULL when out of memory. Its pages are made as they are first
 * touched either way: a hashed table's touches spread over all of it. */
void *mt_bigmem_zalloc(size_t bytes);
/* Frees a table mt_bigmem_zalloc made of bytes bytes (NULL: nothing). */
void mt_bigmem_zfree(void *p, size_t bytes);

/* Whether an array of cap elements of elem bytes is a mapping of its own
 * (for tests). */
bool mt_bigmem_is_mapped(size_t cap, size_t elem);

#endif
