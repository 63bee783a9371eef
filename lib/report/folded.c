/* folded: collapsed stacks (folded.h), kept as a tree of frames: a node
 * per distinct stack (its parent and its function), found from a call's
 * path id in one step, so that a call costs the same at any depth and
 * memory grows with the distinct stacks, not their text. */
#define _GNU_SOURCE
#include "report/folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "base/table.h"

struct node {
	uint32_t parent;     /* 0: a root (a thread) */
	const char *name;    /* interned here */
	uint64_t w[MT_WEIGHT_COUNT];
};

struct fthread {
	uint32_t pid, tid;
	uint32_t root;       /* its node */
};

/* open addressing maps: (parent node, name) -> node; (root, call path) -> node */
struct slot {
	uint64_t a, b;
	uint32_t node;       /* 0: empty */
};
struct map {
	struct slot *v;
	size_t n, cap;
};

struct mt_folded {
	struct mt_strtab names;
	struct node *nodes;  /* node 0 unused */
	size_t nnodes, capnodes;
	struct map children, by_path;
	struct fthread *th;
	size_t nth, capth, last;
	const char *deeper;
	uint64_t samples;
	bool oom;
};

int mt_folded_weight_parse(const char *s)
{
	static const char *const names[MT_WEIGHT_COUNT] = {"time", "samples", "instructions", "cycles"};
	for (int i = 0; i < MT_WEIGHT_COUNT; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

struct mt_folded *mt_folded_new(void)
{
	struct mt_folded *f = calloc(1, sizeof *f);
	if (f && !(f->deeper = mt_strtab_intern(&f->names, "[deeper frames]"))) {
		free(f);
		return NULL;
	}
	return f;
}

static size_t slot_of(uint64_t a, uint64_t b, size_t cap)
{
	uint64_t h = (a * 0x9e3779b97f4a7c15u) ^ (b * 0xc2b2ae3d27d4eb4fu);
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static bool slot_used(const void *s)
{
	return ((const struct slot *)s)->node != 0;
}

static size_t slot_home(const void *s, size_t cap, void *ctx)
{
	(void)ctx;
	const struct slot *x = s;
	return slot_of(x->a, x->b, cap);
}

static const struct mt_table_ops slot_ops = {sizeof(struct slot), slot_used, slot_home};

/* The node stored under (a, b), 0 if none; with at, a new slot for it
 * is returned in *at (NULL: out of memory). */
static uint32_t map_find(struct mt_folded *f, struct map *m, uint64_t a, uint64_t b, struct slot **at)
{
	if (at && !mt_table_reserve((void **)&m->v, &m->cap, m->n, &slot_ops, NULL)) {
		f->oom = true;
		*at = NULL;
		return 0;
	}
	if (!m->cap)
		return 0;
	size_t k = slot_of(a, b, m->cap);
	for (; m->v[k].node; k = (k + 1) & (m->cap - 1))
		if (m->v[k].a == a && m->v[k].b == b)
			return m->v[k].node;
	if (at)
		*at = &m->v[k];
	return 0;
}

static void map_put(struct map *m, struct slot *s, uint64_t a, uint64_t b, uint32_t node)
{
	*s = (struct slot){a, b, node};
	m->n++;
}

/* The child of parent for name (interned here), made when new; 0: out of memory. */
static uint32_t child(struct mt_folded *f, uint32_t parent, const char *name)
{
	const char *in = mt_strtab_intern(&f->names, name);
	struct slot *s = NULL;
	uint32_t n = in ? map_find(f, &f->children, parent, (uint64_t)(uintptr_t)in, &s) : 0;
	if (n || !s)
		return n;
	if (f->nnodes >= UINT32_MAX - 1 ||
	    !mt_grow((void **)&f->nodes, &f->capnodes, (f->nnodes ? f->nnodes : 1) + 1, sizeof *f->nodes)) {
		f->oom = true;
		return 0;
	}
	if (!f->nnodes)
		f->nnodes = 1; /* node 0: none */
	n = (uint32_t)f->nnodes++;
	f->nodes[n] = (struct node){.parent = parent, .name = in};
	map_put(&f->children, s, parent, (uint64_t)(uintptr_t)in, n);
	return n;
}

static struct fthread *thread_of(struct mt_folded *f, uint32_t pid, uint32_t tid)
{
	if (f->last < f->nth && f->th[f->last].pid == pid && f->th[f->last].tid == tid)
		return &f->th[f->last];
	for (size_t i = 0; i < f->nth; i++)
		if (f->th[i].pid == pid && f->th[i].tid == tid)
			return &f->th[f->last = i];
	return NULL;
}

static void fo_thread(void *ctx, uint32_t pid, uint32_t tid, const char *comm, const char *process_comm)
{
	(void)process_comm;
	struct mt_folded *f = ctx;
	char b[64];
	if (!comm || !*comm) {
		snprintf(b, sizeof b, "[tid %" PRIu32 "]", tid);
		comm = b;
	}
	uint32_t root = child(f, 0, comm);
	if (!root || !mt_grow((void **)&f->th, &f->capth, f->nth + 1, sizeof *f->th)) {
		f->oom = true;
		return;
	}
	f->th[f->nth++] = (struct fthread){pid, tid, root};
}

static uint32_t root_of(struct mt_folded *f, uint32_t pid, uint32_t tid)
{
	struct fthread *t = thread_of(f, pid, tid);
	return t ? t->root : child(f, 0, "[unknown thread]");
}

/* The node of a call's stack up to depth d (its paths and names): found
 * by path id, or made from the deepest ancestor already known. */
static uint32_t node_of(struct mt_folded *f, uint32_t root, const struct mt_tl_call *c, size_t d)
{
	size_t k = d + 1;
	uint32_t n = 0;
	while (k > 0 && !(n = map_find(f, &f->by_path, root, c->paths[k - 1], NULL)))
		k--;
	if (!k)
		n = root;
	for (; k <= d; k++) {
		struct slot *s = NULL;
		uint32_t m = child(f, n, c->stack[k]);
		if (!m || (map_find(f, &f->by_path, root, c->paths[k], &s), !s))
			return 0;
		map_put(&f->by_path, s, root, c->paths[k], m);
		n = m;
	}
	return n;
}

static void fo_call(void *ctx, const struct mt_report_call *rc)
{
	struct mt_folded *f = ctx;
	const struct mt_tl_call *c = rc->c;
	uint64_t self_ns = rc->self_ns;
	struct mt_cs_counts self = rc->self;
	if (!self_ns && !self.insn && !self.cyc)
		return;
	uint32_t root = root_of(f, c->pid, c->tid);
	/* Perfetto's depth policy: the frames below it weigh as one */
	bool deep = c->depth >= MT_FOLDED_MAX_DEPTH;
	uint32_t n = root ? node_of(f, root, c, deep ? MT_FOLDED_MAX_DEPTH - 1 : c->depth) : 0;
	if (n && deep)
		n = child(f, n, f->deeper);
	if (!n) {
		f->oom = true;
		return;
	}
	f->nodes[n].w[MT_WEIGHT_TIME] += self_ns;
	f->nodes[n].w[MT_WEIGHT_INSTRUCTIONS] += self.insn;
	f->nodes[n].w[MT_WEIGHT_CYCLES] += self.cyc;
}

static void fo_sample(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, size_t n, const char *const *names,
		      const char *const *dsos, uint64_t period)
{
	(void)time;
	(void)dsos;
	(void)period;
	struct mt_folded *f = ctx;
	uint32_t node = root_of(f, pid, tid);
	for (size_t i = 0; i < n && i < MT_FOLDED_MAX_DEPTH && node; i++)
		node = child(f, node, names[i]);
	if (node && n > MT_FOLDED_MAX_DEPTH)
		node = child(f, node, f->deeper);
	if (!node) {
		f->oom = true;
		return;
	}
	f->samples++;
	f->nodes[node].w[MT_WEIGHT_SAMPLES]++;
}

void mt_folded_sink(struct mt_folded *f, struct mt_report_next *sink)
{
	*sink = (struct mt_report_next){.ctx = f, .thread = fo_thread, .call = fo_call, .sample = fo_sample};
}

enum mt_folded_weight mt_folded_default_weight(const struct mt_folded *f)
{
	return f->samples ? MT_WEIGHT_SAMPLES : MT_WEIGHT_TIME;
}

static const struct node *sort_nodes;

/* children in order of parent, then name */
static int cmp_child(const void *pa, const void *pb)
{
	const struct node *a = &sort_nodes[*(const uint32_t *)pa], *b = &sort_nodes[*(const uint32_t *)pb];
	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* A frame's name in a folded line: ';' separates frames, a newline lines. */
static char *put_name(char *p, const char *s)
{
	for (; *s; s++)
		*p++ = *s == ';' ? ':' : *s == '\n' ? ' ' : *s;
	return p;
}

uint64_t mt_folded_write(struct mt_folded *f, FILE *out, enum mt_folded_weight weight)
{
	if (f->oom)
		return UINT64_MAX;
	size_t n = f->nnodes;
	uint32_t *order = malloc((n ? n : 1) * sizeof *order), *first = calloc(n + 1, sizeof *first);
	size_t *stack = malloc((n ? n : 1) * sizeof *stack), *lens = malloc((n ? n : 1) * sizeof *lens);
	char *line = NULL;
	size_t capline = 0;
	uint64_t total = 0;
	if (!order || !first || !stack || !lens) {
		total = UINT64_MAX;
		goto done;
	}
	/* each node's children, sorted, are a run of order[]: first[p] is
	 * where p's run starts, first[p + 1] where it ends */
	size_t m = 0;
	for (uint32_t i = 1; i < n; i++)
		order[m++] = i;
	sort_nodes = f->nodes;
	qsort(order, m, sizeof *order, cmp_child);
	for (size_t i = 0; i < m; i++)
		first[f->nodes[order[i]].parent + 1]++;
	for (size_t p = 1; p <= n; p++)
		first[p] += first[p - 1];
	/* depth first: the line so far in line[0, len); stack: a child index
	 * into order[] per level */
	size_t depth = 0, len = 0;
	stack[0] = first[0];
	lens[0] = 0;
	while (true) {
		uint32_t parent = depth ? order[stack[depth - 1] - 1] : 0;
		if (stack[depth] == first[parent + 1]) {
			if (!depth)
				break;
			depth--;
			len = lens[depth];
			continue;
		}
		uint32_t node = order[stack[depth]++];
		const struct node *nd = &f->nodes[node];
		size_t k = strlen(nd->name);
		if (!mt_grow((void **)&line, &capline, len + k + 32, 1)) {
			total = UINT64_MAX;
			goto done;
		}
		lens[depth] = len;
		char *p = line + len;
		if (depth)
			*p++ = ';';
		p = put_name(p, nd->name);
		len = (size_t)(p - line);
		if (nd->w[weight]) {
			fwrite(line, 1, len, out);
			fprintf(out, " %" PRIu64 "\n", nd->w[weight]);
			total += nd->w[weight];
		}
		depth++;
		stack[depth] = first[node];
	}
done:
	free(order);
	free(first);
	free(stack);
	free(lens);
	free(line);
	return total;
}

void mt_folded_free(struct mt_folded *f)
{
	if (!f)
		return;
	mt_strtab_free(&f->names);
	free(f->nodes);
	free(f->children.v);
	free(f->by_path.v);
	free(f->th);
	free(f);
}
