/* table: the growth of an open-addressing hash table (linear probing,
 * kept at most half full), for the tables whose slots hold their keys:
 * a table of twice the slots, every used slot moved to its home there. */
#ifndef MT_TABLE_H
#define MT_TABLE_H

#include <stdbool.h>
#include <stddef.h>

struct mt_table_ops {
	size_t size;                                           /* of a slot */
	bool (*used)(const void *slot);
	size_t (*home)(const void *slot, size_t cap, void *ctx); /* its first probe, < cap */
};

/* Makes *slots (cap slots, a power of two, all zero bytes when unused)
 * room for n + 1 used slots at half full, growing it (1024 slots at
 * first). false: out of memory, the table as it was. */
bool mt_table_reserve(void **slots, size_t *cap, size_t n, const struct mt_table_ops *ops, void *ctx);

#endif
