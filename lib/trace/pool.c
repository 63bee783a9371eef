#define _GNU_SOURCE
#include "trace/pool.h"

#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"

/* A group is handed to the workers once it holds this much PT or this
 * many segments. */
#define GROUP_BYTES ((size_t)256 << 10)
#define GROUP_SEGMENTS 256
/* Memory a group keeps for its output between uses. */
#define GROUP_KEEP ((size_t)8 << 20)

static void text_sink(void *ctx, const struct mt_event *ev)
{
	mt_events_write(ctx, ev);
}

struct mt_image *mt_pool_image(struct pool *p, unsigned worker, uint32_t pid, struct mt_err *err)
{
	struct mt_image *img = &p->img[worker];
	if (p->have_img[worker] && p->img_pid[worker] == pid)
		return img;
	if (p->have_img[worker])
		mt_image_fini(img);
	p->have_img[worker] = !mt_image_init(img, "perf.data", err);
	if (!p->have_img[worker])
		return NULL;
	pthread_mutex_lock(&p->mu);
	mt_build_image(img, p->pd, p->s, pid, p->o, p->wd);
	pthread_mutex_unlock(&p->mu);
	p->img_pid[worker] = pid;
	return img;
}

static void pool_free_images(struct pool *p)
{
	for (unsigned k = 0; k <= MAX_JOBS; k++)
		if (p->have_img[k]) {
			mt_image_fini(&p->img[k]);
			p->have_img[k] = false;
		}
}

/* One group, by worker `worker`: its segments one after the other. */
static void pool_item(struct mt_workq_task *t, unsigned worker)
{
	struct pgroup *g = (struct pgroup *)t;
	struct pool *p = g->p;
	if (p->text ? mt_memtext_reset(&g->text, GROUP_KEEP) : (mt_evlog_reset(&g->log, GROUP_KEEP), 0)) {
		g->rc = mt_err_set(&g->err, MT_ENOMEM, "out of memory");
		return;
	}
	for (size_t i = 0; i < g->nseg && !g->rc; i++) {
		struct pseg *s = &g->seg[i];
		struct mt_image *img = mt_pool_image(p, worker, s->wc.pid, &g->err);
		if (!img) {
			g->rc = g->err.code;
			break;
		}
		struct mt_ptdec_stream st = {.data = s->data, .len = s->len, .cpu = s->cpu, .who = mt_who, .who_ctx = &s->wc,
					     .sink = p->text ? text_sink : mt_evlog_sink,
					     .sink_ctx = p->text ? (void *)&g->text : (void *)&g->log};
		g->rc = mt_ptdec_decode(&st, img, p->cfg, &g->st, &g->err);
		if (!g->rc && s->snapshot_after) {
			struct mt_event sev = {.kind = MT_EV_SNAPSHOT, .pid = s->wc.pid, .tid = s->wc.tid, .cpu = s->cpu,
					       .offset = MT_NO_OFFSET};
			st.sink(st.sink_ctx, &sev);
		}
	}
	if (!g->rc && (g->log.oom || g->text.failed))
		g->rc = mt_err_set(&g->err, MT_ENOMEM, "out of memory holding decoded events");
}

void mt_segment_progress(void *ctx, size_t done)
{
	struct progress *pr = ctx;
	pr->o->progress(pr->o->progress_ctx, pr->base + done, pr->total);
}

void mt_progress_add(struct progress *pr, uint64_t bytes)
{
	pr->base += bytes;
	if (pr->o->progress)
		pr->o->progress(pr->o->progress_ctx, pr->base, pr->total);
}

int mt_pool_start(struct pool *p, struct mt_err *err)
{
	p->window = 2 * (size_t)p->jobs + 2;
	/* bytes of PT in flight: their events are held until written */
	p->max_bytes = ((size_t)1 << 20) * (p->jobs + 1);
	p->v = calloc(p->window, sizeof *p->v);
	if (!p->v || pthread_mutex_init(&p->mu, NULL)) {
		free(p->v);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < p->window; i++) {
		p->v[i].p = p;
		p->v[i].task.run = pool_item;
	}
	if (mt_workq_start(&p->q, p->jobs > 1 ? p->jobs : 0)) {
		pthread_mutex_destroy(&p->mu);
		free(p->v);
		return mt_err_set(err, MT_ENOMEM, "cannot start the decode's threads");
	}
	return 0;
}

/* Lets go of the oldest group in flight, decoded: its segments' data. */
static void pool_retire(struct pool *p)
{
	struct pgroup *g = &p->v[p->head];
	for (size_t i = 0; i < g->nseg; i++) {
		if (g->seg[i].owned)
			free(g->seg[i].owned);
		else
			mt_release_before(p->pd, &p->rel, g->seg[i].data);
	}
	p->head = (p->head + 1) % p->window;
	p->n--;
	p->bytes -= g->bytes;
	mt_progress_add(p->progress, g->bytes);
	g->nseg = g->bytes = 0;
}

/* Waits for the oldest group in flight and writes it (only retires it
 * once rc is set). */
static int pool_write_oldest(struct pool *p, struct mt_events_writer *w, struct mt_ptdec_stats *stats, int rc,
			     struct mt_err *err)
{
	struct pgroup *g = &p->v[p->head];
	mt_workq_wait(&p->q, &g->task);
	if (!rc && g->rc)
		rc = mt_err_set(err, g->rc, "%s", g->err.msg);
	if (!rc) {
		if (p->text)
			mt_events_write_bytes(w, g->text.buf, g->text.len);
		for (size_t k = 0; !p->text && k < g->log.n; k++) {
			struct mt_event ev;
			struct mt_kv kv[MT_EVLOG_MAX_EXTRA];
			mt_events_write(w, mt_evlog_event(&g->log, k, &ev, kv));
		}
		stats->pt_bytes += g->st.pt_bytes;
		stats->insns += g->st.insns;
		stats->errors += g->st.errors;
		mt_ptdec_stats_add_reader(stats, &g->st);
		for (int k = 0; k < MT_EV_KIND_COUNT; k++)
			stats->by_kind[k] += g->st.by_kind[k];
	}
	pool_retire(p);
	return rc;
}

/* Hands the group being filled to the workers; then, while too much is in
 * flight, writes the oldest. */
static int pool_submit(struct pool *p, struct mt_events_writer *w, struct mt_ptdec_stats *stats, struct mt_err *err)
{
	struct pgroup *g = &p->v[(p->head + p->n) % p->window];
	if (!g->nseg)
		return 0;
	memset(&g->st, 0, sizeof g->st);
	g->rc = 0;
	g->err = (struct mt_err){0};
	p->n++;
	p->bytes += g->bytes;
	mt_workq_submit(&p->q, &g->task, false);
	int rc = 0;
	while (!rc && (p->n == p->window || (p->n > 1 && p->bytes > p->max_bytes)))
		rc = pool_write_oldest(p, w, stats, rc, err);
	return rc;
}

/* Writes every segment queued, in order. */
int mt_pool_flush(struct pool *p, struct mt_events_writer *w, struct mt_ptdec_stats *stats, struct mt_err *err)
{
	int rc = pool_submit(p, w, stats, err);
	while (p->n)
		rc = pool_write_oldest(p, w, stats, rc, err);
	return rc;
}

/* Whether segments wait to be written. */
bool mt_pool_busy(const struct pool *p)
{
	return p->n || p->v[(p->head + p->n) % p->window].nseg;
}

/* Waits for what is in flight without writing it (after an error), ends
 * the workers and frees the groups' memory. */
void mt_pool_end(struct pool *p)
{
	while (p->n) {
		mt_workq_wait(&p->q, &p->v[p->head].task);
		pool_retire(p);
	}
	mt_workq_stop(&p->q);
	for (size_t i = 0; i < p->window; i++) {
		struct pgroup *g = &p->v[i];
		for (size_t k = 0; k < g->nseg; k++) /* the one being filled */
			free(g->seg[k].owned);
		free(g->seg);
		free(g->log.v);
		free(g->log.arena);
		free(g->text.buf);
	}
	free(p->v);
	pool_free_images(p);
	pthread_mutex_destroy(&p->mu);
}


int mt_pool_add(struct pool *p, const uint8_t *data, size_t len, uint8_t *owned, const struct who_ctx *wc,
		    int32_t cpu, bool snapshot_after, struct mt_events_writer *w, struct mt_ptdec_stats *stats,
		    struct mt_err *err)
{
	struct pgroup *g = &p->v[(p->head + p->n) % p->window];
	if (!mt_grow((void **)&g->seg, &g->cap, g->nseg + 1, sizeof *g->seg)) {
		free(owned);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	g->seg[g->nseg++] = (struct pseg){.data = data, .len = len, .owned = owned, .wc = *wc, .cpu = cpu,
					  .snapshot_after = snapshot_after};
	g->bytes += len;
	if (g->bytes >= GROUP_BYTES || g->nseg >= GROUP_SEGMENTS)
		return pool_submit(p, w, stats, err);
	return 0;
}
