#include "trace/secmap.h"
#include "base/strtab.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void mt_secmap_init(struct mt_secmap *m)
{
	memset(m, 0, sizeof *m);
}

void mt_secmap_fini(struct mt_secmap *m)
{
	free(m->secs);
	free(m->pieces);
	memset(m, 0, sizeof *m);
}

bool mt_secmap_add(struct mt_secmap *m, uint64_t start, uint64_t size)
{
	if (!mt_grow((void **)&m->secs, &m->capsecs, m->nsecs + 1, sizeof *m->secs))
		return false;
	uint64_t end = start + size < start ? UINT64_MAX : start + size;
	m->secs[m->nsecs][0] = start;
	m->secs[m->nsecs][1] = end;
	m->nsecs++;
	m->dirty = true;
	return true;
}

/* A section's start or end, at an address: the sweep's events. */
struct edge {
	uint64_t at;
	size_t sec;
	bool starts;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* A max-heap of section numbers: the newest open section on top. */
static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;
	while (i && h[(i - 1) / 2] < v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t v = h[--*n], i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

static bool add_piece(struct mt_secmap *m, uint64_t start, uint64_t end, size_t sec)
{
	struct mt_secmap_piece *p = m->npieces ? &m->pieces[m->npieces - 1] : NULL;
	if (p && p->sec == sec && p->end == start) {
		p->end = end;
		return true;
	}
	if (!mt_grow((void **)&m->pieces, &m->cappieces, m->npieces + 1, sizeof *m->pieces))
		return false;
	m->pieces[m->npieces++] = (struct mt_secmap_piece){start, end, sec};
	return true;
}

/* Sweeps the sections' edges in address order, the newest open section
 * owning each stretch up to the next edge; an ended section leaves the
 * heap when it comes to the top. */
static bool build(struct mt_secmap *m)
{
	size_t n = m->nsecs;
	struct edge *e = malloc(2 * n * sizeof *e + 1);
	size_t *heap = malloc(n * sizeof *heap + 1);
	bool *ended = calloc(n + 1, sizeof *ended);
	bool ok = e && heap && ended;
	size_t ne = 0, nh = 0;
	m->npieces = 0;
	for (size_t i = 0; ok && i < n; i++) {
		if (m->secs[i][0] >= m->secs[i][1])
			continue;
		e[ne++] = (struct edge){m->secs[i][0], i, true};
		e[ne++] = (struct edge){m->secs[i][1], i, false};
	}
	if (ok)
		qsort(e, ne, sizeof *e, cmp_edge);
	for (size_t k = 0; ok && k < ne;) {
		uint64_t at = e[k].at;
		for (; k < ne && e[k].at == at; k++) {
			if (e[k].starts)
				heap_push(heap, &nh, e[k].sec);
			else
				ended[e[k].sec] = true;
		}
		while (nh && ended[heap[0]])
			heap_pop(heap, &nh);
		if (nh && k < ne)
			ok = add_piece(m, at, e[k].at, heap[0]);
	}
	free(e);
	free(heap);
	free(ended);
	m->last = 0;
	m->dirty = !ok;
	if (!ok)
		m->npieces = 0;
	return ok;
}

bool mt_secmap_ready(struct mt_secmap *m)
{
	return !m->dirty || build(m);
}

const struct mt_secmap_piece *mt_secmap_find(struct mt_secmap *m, uint64_t addr, bool *oom)
{
	if (!mt_secmap_ready(m)) {
		*oom = true;
		return NULL;
	}
	if (!m->npieces)
		return NULL;
	const struct mt_secmap_piece *p = &m->pieces[m->last];
	if (addr - p->start < p->end - p->start)
		return p;
	size_t k = mt_count_at_or_below(m->pieces, m->npieces, sizeof *m->pieces,
					offsetof(struct mt_secmap_piece, start), addr);
	if (!k || addr >= m->pieces[k - 1].end)
		return NULL;
	m->last = k - 1;
	return &m->pieces[k - 1];
}
