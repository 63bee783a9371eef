#define _GNU_SOURCE
#include "trace/evlog.h"

#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"

void mt_evlog_sink(void *ctx, const struct mt_event *ev)
{
	struct evlog *l = ctx;
	if (l->oom)
		return;
	if (!mt_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
		l->oom = true;
		return;
	}
	struct logged *e = &l->v[l->n++];
	*e = (struct logged){.time = ev->time, .from = ev->from, .to = ev->to, .insn = ev->insn, .cyc = ev->cyc, .offset = ev->offset,
			     .pid = ev->pid, .tid = ev->tid, .cbr = ev->cbr, .cpu = ev->cpu, .kind = (uint8_t)ev->kind,
			     .flags = (uint8_t)((ev->has_time ? LOG_HAS_TIME : 0) | (ev->cond ? LOG_COND : 0) |
						(ev->async ? LOG_ASYNC : 0))};
	unsigned nextra = ev->nextra < MT_EVLOG_MAX_EXTRA ? ev->nextra : MT_EVLOG_MAX_EXTRA;
	if (!ev->msg && !nextra)
		return;
	size_t k = ev->msg ? strlen(ev->msg) + 1 : 0;
	for (unsigned i = 0; i < nextra; i++)
		k += strlen(ev->extra[i].key) + strlen(ev->extra[i].val) + 2;
	if (l->alen + k >= UINT32_MAX || !mt_grow((void **)&l->arena, &l->acap, l->alen + k, 1)) {
		l->oom = true;
		return;
	}
	e->strs = (uint32_t)l->alen + 1;
	char *p = l->arena + l->alen;
	if (ev->msg) {
		p = stpcpy(p, ev->msg) + 1;
		e->flags |= LOG_MSG;
	}
	for (unsigned i = 0; i < nextra; i++) {
		p = stpcpy(p, ev->extra[i].key) + 1;
		p = stpcpy(p, ev->extra[i].val) + 1;
	}
	e->nextra = (uint8_t)nextra;
	l->alen += k;
}


const struct mt_event *mt_evlog_event(const struct evlog *l, size_t k, struct mt_event *ev,
				      struct mt_kv kv[MT_EVLOG_MAX_EXTRA])
{
	const struct logged *e = &l->v[k];
	*ev = (struct mt_event){.time = e->time, .has_time = e->flags & LOG_HAS_TIME, .pid = e->pid, .tid = e->tid,
				.cpu = e->cpu, .kind = (enum mt_event_kind)e->kind, .from = e->from, .to = e->to,
				.insn = e->insn, .cyc = e->cyc, .offset = e->offset, .cbr = e->cbr, .cond = e->flags & LOG_COND,
				.async = e->flags & LOG_ASYNC};
	if (!e->strs)
		return ev;
	const char *p = l->arena + e->strs - 1;
	if (e->flags & LOG_MSG) {
		ev->msg = p;
		p += strlen(p) + 1;
	}
	for (unsigned i = 0; i < e->nextra; i++) {
		kv[i].key = p;
		p += strlen(p) + 1;
		kv[i].val = p;
		p += strlen(p) + 1;
	}
	ev->extra = kv;
	ev->nextra = e->nextra;
	return ev;
}

int mt_memtext_reset(struct mt_events_writer *t, size_t keep)
{
	if (t->buf && t->cap > keep) {
		free(t->buf);
		t->buf = NULL;
	}
	if (!t->buf)
		return mt_events_writer_init_memory(t);
	t->len = 0; /* (one that failed is never used again: the decode ends) */
	return 0;
}

void mt_evlog_reset(struct evlog *l, size_t keep)
{
	if (l->cap * sizeof *l->v > keep) {
		free(l->v);
		l->v = NULL;
		l->cap = 0;
	}
	l->n = l->alen = 0;
	l->oom = false;
}

void mt_evlog_free(struct evlog *l)
{
	free(l->v);
	free(l->arena);
	*l = (struct evlog){0};
}
