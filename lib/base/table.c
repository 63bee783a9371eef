/* table: open-addressing growth (table.h). */
#include "base/table.h"

#include <stdlib.h>
#include <string.h>

bool mt_table_reserve(void **slots, size_t *cap, size_t n, const struct mt_table_ops *ops, void *ctx)
{
	if (2 * (n + 1) <= *cap)
		return true;
	size_t ncap = *cap ? 2 * *cap : 1024;
	char *nv = calloc(ncap, ops->size), *ov = *slots;
	if (!nv)
		return false;
	for (size_t i = 0; i < *cap; i++) {
		const char *s = ov + i * ops->size;
		if (!ops->used(s))
			continue;
		size_t k = ops->home(s, ncap, ctx);
		while (ops->used(nv + k * ops->size))
			k = (k + 1) & (ncap - 1);
		memcpy(nv + k * ops->size, s, ops->size);
	}
	free(ov);
	*slots = nv;
	*cap = ncap;
	return true;
}
