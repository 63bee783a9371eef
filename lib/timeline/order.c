#include "timeline/order.h"

#include <stdlib.h>

int mt_tl_cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	if (x->inferred != y->inferred)
		return x->inferred ? -1 : 1;
	if (x->inferred)
		return x->seq > y->seq ? -1 : x->seq < y->seq;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t mt_tl_order_items(struct item *it, size_t *n, struct item *late, bool ties)
{
	size_t nlate = 0;
	uint64_t maxb = 0;
	for (size_t i = 0; i < *n; i++) {
		if (it[i].begin < maxb) {
			late[nlate++] = it[i];
			it[i].late = true;
			continue;
		}
		maxb = it[i].begin;
	}
	if (ties) {
		if (nlate) {
			size_t kept = 0;
			for (size_t i = 0; i < *n; i++)
				if (!it[i].late)
					it[kept++] = it[i];
			*n = kept;
		}
		for (size_t i = 0; i < *n;) {
			size_t j = i + 1;
			while (j < *n && it[j].begin == it[i].begin)
				j++;
			if (j - i > 1)
				qsort(it + i, j - i, sizeof *it, mt_tl_cmp_item);
			i = j;
		}
	}
	if (nlate > 1)
		qsort(late, nlate, sizeof *late, mt_tl_cmp_item);
	return nlate;
}
