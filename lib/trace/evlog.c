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
	if (ev->msg) {
		size_t k = strlen(ev->msg) + 1;
		if (l->alen + k >= UINT32_MAX || !mt_grow((void **)&l->arena, &l->acap, l->alen + k, 1)) {
			l->oom = true;
			return;
		}
		memcpy(l->arena + l->alen, ev->msg, k);
		e->msg = (uint32_t)l->alen + 1;
		l->alen += k;
	}
}


const struct mt_event *mt_evlog_event(const struct evlog *l, size_t k, struct mt_event *ev)
{
	const struct logged *e = &l->v[k];
	*ev = (struct mt_event){.time = e->time, .has_time = e->flags & LOG_HAS_TIME, .pid = e->pid, .tid = e->tid,
				.cpu = e->cpu, .kind = (enum mt_event_kind)e->kind, .from = e->from, .to = e->to,
				.insn = e->insn, .cyc = e->cyc, .offset = e->offset, .cbr = e->cbr, .cond = e->flags & LOG_COND,
				.async = e->flags & LOG_ASYNC, .msg = e->msg ? l->arena + e->msg - 1 : NULL};
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
