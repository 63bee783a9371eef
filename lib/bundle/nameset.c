#define _GNU_SOURCE
#include "bundle/nameset.h"

#include <stdlib.h>
#include <string.h>

#include "base/mt_err.h"
#include "base/strtab.h"

/* Finds name: its slot index, and *found. */
size_t mt_nameset_slot(const struct nameset *ns, const char *name, bool *found)
{
	*found = false;
	if (!ns->cap)
		return 0;
	size_t i = mt_hash_str(name) & (ns->cap - 1);
	while (ns->v[i] && strcmp(ns->v[i], name))
		i = (i + 1) & (ns->cap - 1);
	*found = ns->v[i] != NULL;
	return i;
}

int mt_nameset_add(struct nameset *ns, const char *name, enum name_kind kind)
{
	if (2 * (ns->n + 1) > ns->cap) {
		struct nameset bigger = {.cap = ns->cap ? ns->cap * 2 : 256};
		bigger.v = calloc(bigger.cap, sizeof *bigger.v);
		bigger.kind = calloc(bigger.cap, 1);
		if (!bigger.v || !bigger.kind) {
			free(bigger.v);
			free(bigger.kind);
			return MT_ENOMEM;
		}
		for (size_t i = 0; i < ns->cap; i++)
			if (ns->v[i]) {
				bool f;
				size_t k = mt_nameset_slot(&bigger, ns->v[i], &f);
				bigger.v[k] = ns->v[i];
				bigger.kind[k] = ns->kind[i];
			}
		bigger.n = ns->n;
		free(ns->v);
		free(ns->kind);
		*ns = bigger;
	}
	bool found;
	size_t i = mt_nameset_slot(ns, name, &found);
	if (!(ns->v[i] = strdup(name)))
		return MT_ENOMEM;
	ns->kind[i] = (uint8_t)kind;
	ns->n++;
	return 0;
}

void mt_nameset_free(struct nameset *ns)
{
	for (size_t i = 0; i < ns->cap; i++)
		free(ns->v[i]);
	free(ns->v);
	free(ns->kind);
}
