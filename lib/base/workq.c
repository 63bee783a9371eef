#include "base/workq.h"

#include "base/mt_err.h"

/* The next task, urgent ones first; NULL when none waits. Under q->mu. */
static struct mt_workq_task *take(struct mt_workq *q)
{
	bool urgent = q->uhead != NULL;
	struct mt_workq_task **head = urgent ? &q->uhead : &q->head;
	struct mt_workq_task *t = *head;
	if (t) {
		*head = t->next;
		if (!*head)
			*(urgent ? &q->utail : &q->tail) = NULL;
	}
	return t;
}

static void *worker_main(void *arg)
{
	const struct mt_workq_thread *a = arg;
	struct mt_workq *q = a->q;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		struct mt_workq_task *t = take(q);
		if (!t) {
			if (q->stopping)
				break;
			pthread_cond_wait(&q->work, &q->mu);
			continue;
		}
		pthread_mutex_unlock(&q->mu);
		t->run(t, a->worker);
		pthread_mutex_lock(&q->mu);
		t->done = true;
		pthread_cond_broadcast(&q->finished);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

int mt_workq_start(struct mt_workq *q, unsigned threads)
{
	*q = (struct mt_workq){0};
	if (pthread_mutex_init(&q->mu, NULL))
		return MT_ENOMEM;
	if (pthread_cond_init(&q->work, NULL)) {
		pthread_mutex_destroy(&q->mu);
		return MT_ENOMEM;
	}
	if (pthread_cond_init(&q->finished, NULL)) {
		pthread_cond_destroy(&q->work);
		pthread_mutex_destroy(&q->mu);
		return MT_ENOMEM;
	}
	if (threads > MT_WORKQ_MAX_THREADS)
		threads = MT_WORKQ_MAX_THREADS;
	for (unsigned k = 0; k < threads; k++) {
		q->arg[k] = (struct mt_workq_thread){q, k + 1};
		if (pthread_create(&q->th[k], NULL, worker_main, &q->arg[k]))
			break; /* fewer threads: slower, not wrong */
		q->threads++;
	}
	return 0;
}

void mt_workq_submit(struct mt_workq *q, struct mt_workq_task *t, bool urgent)
{
	t->next = NULL;
	t->queued = true;
	t->done = false;
	if (!q->threads) {
		t->run(t, 0);
		t->done = true;
		return;
	}
	pthread_mutex_lock(&q->mu);
	struct mt_workq_task **tail = urgent ? &q->utail : &q->tail;
	if (*tail)
		(*tail)->next = t;
	else
		*(urgent ? &q->uhead : &q->head) = t;
	*tail = t;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->mu);
}

bool mt_workq_done(struct mt_workq *q, struct mt_workq_task *t)
{
	if (!q->threads)
		return t->done;
	pthread_mutex_lock(&q->mu);
	bool done = t->done;
	pthread_mutex_unlock(&q->mu);
	return done;
}

void mt_workq_wait(struct mt_workq *q, struct mt_workq_task *t)
{
	if (!q->threads || !t->queued)
		return;
	pthread_mutex_lock(&q->mu);
	while (!t->done)
		pthread_cond_wait(&q->finished, &q->mu);
	pthread_mutex_unlock(&q->mu);
}

void mt_workq_stop(struct mt_workq *q)
{
	pthread_mutex_lock(&q->mu);
	q->stopping = true;
	pthread_cond_broadcast(&q->work);
	pthread_mutex_unlock(&q->mu);
	for (unsigned k = 0; k < q->threads; k++)
		pthread_join(q->th[k], NULL);
	pthread_cond_destroy(&q->finished);
	pthread_cond_destroy(&q->work);
	pthread_mutex_destroy(&q->mu);
	q->threads = 0;
}
