/* folded: collapsed stacks (folded.h). */
#define _GNU_SOURCE
#include "report/folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"

struct fthread {
	uint32_t pid, tid;
	const char *name; /* interned */
};

struct mt_folded {
	struct mt_strtab paths;
	struct { const char *path; uint64_t w[MT_WEIGHT_COUNT]; } *slot; /* by interned path */
	size_t n, cap;
	struct fthread *th;
	size_t nth, capth;
	char *buf;
	size_t capbuf;
	uint64_t samples;
	bool oom;
};

int mt_folded_weight_parse(const char *s)
{
	if (!strcmp(s, "time"))
		return MT_WEIGHT_TIME;
	if (!strcmp(s, "samples"))
		return MT_WEIGHT_SAMPLES;
	if (!strcmp(s, "instructions"))
		return MT_WEIGHT_INSTRUCTIONS;
	if (!strcmp(s, "cycles"))
		return MT_WEIGHT_CYCLES;
	return -1;
}

struct mt_folded *mt_folded_new(void)
{
	return calloc(1, sizeof(struct mt_folded));
}

static const char *thread_name(struct mt_folded *f, uint32_t pid, uint32_t tid)
{
	for (size_t i = f->nth; i-- > 0;)
		if (f->th[i].pid == pid && f->th[i].tid == tid)
			return f->th[i].name;
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
	const char *name = mt_strtab_intern(&f->paths, comm);
	if (!name || !mt_grow((void **)&f->th, &f->capth, f->nth + 1, sizeof *f->th)) {
		f->oom = true;
		return;
	}
	f->th[f->nth++] = (struct fthread){pid, tid, name};
}

/* Appends name to buf at *len, ';' first unless at the start, ';' and
 * newlines in the name made harmless. */
static bool put_frame(struct mt_folded *f, size_t *len, const char *name)
{
	size_t n = strlen(name);
	if (!mt_grow((void **)&f->buf, &f->capbuf, *len + n + 2, 1))
		return false;
	char *p = f->buf + *len;
	if (*len)
		*p++ = ';';
	for (size_t i = 0; i < n; i++)
		p[i] = name[i] == ';' ? ':' : name[i] == '\n' ? ' ' : name[i];
	*len = (size_t)(p + n - f->buf);
	f->buf[*len] = '\0';
	return true;
}

static void add(struct mt_folded *f, const uint64_t w[MT_WEIGHT_COUNT])
{
	const char *path = mt_strtab_intern(&f->paths, f->buf);
	if (!path) {
		f->oom = true;
		return;
	}
	if (2 * (f->n + 1) > f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 1024;
		__typeof__(f->slot) nv = calloc(cap, sizeof *nv);
		if (!nv) {
			f->oom = true;
			return;
		}
		for (size_t i = 0; i < f->cap; i++) {
			if (!f->slot[i].path)
				continue;
			size_t k = (size_t)(((uintptr_t)f->slot[i].path * 0x9e3779b97f4a7c15u) >> 32) & (cap - 1);
			while (nv[k].path)
				k = (k + 1) & (cap - 1);
			nv[k] = f->slot[i];
		}
		free(f->slot);
		f->slot = nv;
		f->cap = cap;
	}
	size_t k = (size_t)(((uintptr_t)path * 0x9e3779b97f4a7c15u) >> 32) & (f->cap - 1);
	for (; f->slot[k].path; k = (k + 1) & (f->cap - 1))
		if (f->slot[k].path == path)
			break;
	if (!f->slot[k].path) {
		f->slot[k].path = path;
		f->n++;
	}
	for (int i = 0; i < MT_WEIGHT_COUNT; i++)
		f->slot[k].w[i] += w[i];
}

static bool start_path(struct mt_folded *f, size_t *len, uint32_t pid, uint32_t tid)
{
	const char *tn = thread_name(f, pid, tid);
	*len = 0;
	if (!put_frame(f, len, tn ? tn : "[unknown thread]")) {
		f->oom = true;
		return false;
	}
	return true;
}

static void fo_call(void *ctx, const struct mt_tl_call *c, uint64_t self_ns, struct mt_cs_counts self)
{
	struct mt_folded *f = ctx;
	uint64_t w[MT_WEIGHT_COUNT] = {[MT_WEIGHT_TIME] = self_ns, [MT_WEIGHT_INSTRUCTIONS] = self.insn,
				       [MT_WEIGHT_CYCLES] = self.cyc};
	size_t len;
	if ((!self_ns && !self.insn && !self.cyc) || !start_path(f, &len, c->pid, c->tid))
		return;
	for (size_t i = 0; i <= c->depth; i++)
		if (!put_frame(f, &len, c->stack[i])) {
			f->oom = true;
			return;
		}
	add(f, w);
}

static void fo_sample(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, size_t n, const char *const *names,
		      const char *const *dsos)
{
	(void)time;
	(void)dsos;
	struct mt_folded *f = ctx;
	size_t len;
	if (!start_path(f, &len, pid, tid))
		return;
	for (size_t i = 0; i < n; i++)
		if (!put_frame(f, &len, names[i])) {
			f->oom = true;
			return;
		}
	f->samples++;
	add(f, (const uint64_t[MT_WEIGHT_COUNT]){[MT_WEIGHT_SAMPLES] = 1});
}

void mt_folded_sink(struct mt_folded *f, struct mt_report_next *sink)
{
	*sink = (struct mt_report_next){.ctx = f, .thread = fo_thread, .call = fo_call, .sample = fo_sample};
}

static int cmp_path(const void *pa, const void *pb)
{
	const char *const *a = pa, *const *b = pb;
	return strcmp(*a, *b);
}

enum mt_folded_weight mt_folded_default_weight(const struct mt_folded *f)
{
	return f->samples ? MT_WEIGHT_SAMPLES : MT_WEIGHT_TIME;
}

uint64_t mt_folded_write(struct mt_folded *f, FILE *out, enum mt_folded_weight weight)
{
	if (f->oom)
		return UINT64_MAX;
	const char **v = malloc((f->n ? f->n : 1) * 2 * sizeof *v);
	if (!v)
		return UINT64_MAX;
	size_t m = 0;
	for (size_t i = 0; i < f->cap; i++)
		if (f->slot[i].path) {
			v[2 * m] = f->slot[i].path;
			v[2 * m + 1] = (const char *)&f->slot[i].w[weight];
			m++;
		}
	qsort(v, m, 2 * sizeof *v, cmp_path);
	uint64_t total = 0;
	for (size_t i = 0; i < m; i++) {
		uint64_t w = *(const uint64_t *)v[2 * i + 1];
		if (!w)
			continue;
		fprintf(out, "%s %" PRIu64 "\n", v[2 * i], w);
		total += w;
	}
	free(v);
	return total;
}

void mt_folded_free(struct mt_folded *f)
{
	if (!f)
		return;
	mt_strtab_free(&f->paths);
	free(f->slot);
	free(f->th);
	free(f->buf);
	free(f);
}
