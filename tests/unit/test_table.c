/* table: 100,000 keys put into a table grown by mt_table_reserve, each
 * found again by its own probe after every growth (the keys themselves
 * are the oracle); the table never more than half full. */
#include <stdint.h>
#include <stdlib.h>

#include "base/table.h"
#include "tap.h"

struct kslot {
	uint64_t key; /* 0: unused */
};

static bool used(const void *s)
{
	return ((const struct kslot *)s)->key != 0;
}

static size_t home(const void *s, size_t cap, void *ctx)
{
	(void)ctx;
	return (size_t)((((const struct kslot *)s)->key * 0x9e3779b97f4a7c15u) >> 32) & (cap - 1);
}

static const struct mt_table_ops ops = {sizeof(struct kslot), used, home};

static struct kslot *find(struct kslot *v, size_t cap, uint64_t key)
{
	struct kslot probe = {key};
	for (size_t k = home(&probe, cap, NULL); v[k].key; k = (k + 1) & (cap - 1))
		if (v[k].key == key)
			return &v[k];
	return NULL;
}

int main(void)
{
	struct kslot *v = NULL;
	size_t cap = 0, n = 0;
	int good = 1, half = 1;
	for (uint64_t i = 1; i <= 100000 && good; i++) {
		uint64_t key = i * 2654435761u + 7;
		good = mt_table_reserve((void **)&v, &cap, n, &ops, NULL);
		struct kslot probe = {key};
		size_t k = home(&probe, cap, NULL);
		while (v[k].key)
			k = (k + 1) & (cap - 1);
		v[k].key = key;
		n++;
		half &= 2 * n <= cap;
	}
	ok(good && half && cap >= 2 * n, "100,000 keys in: grown by doubling, never past half full");
	size_t found = 0;
	for (uint64_t i = 1; i <= 100000; i++)
		found += find(v, cap, i * 2654435761u + 7) != NULL;
	ok(found == 100000 && !find(v, cap, 3), "every key found at its probe after the growths, no other");
	size_t had = cap;
	ok(mt_table_reserve((void **)&v, &cap, cap / 4, &ops, NULL) && cap == had, "room enough: left as it is");
	free(v);
	return tap_done();
}
