/* Unit tests of the work queue (base/workq.c), TAP output. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/workq.h"

#include "tap.h"

/* Oracle: the order tasks are taken in, made certain by holding the only
 * thread in a first task until the others are queued. */
struct order_task {
	struct mt_workq_task t;
	int id;
	unsigned worker;
	sem_t *started, *gate;      /* the first task: says it runs, waits for the gate */
};
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int order_seen[16], n_order;

static void order_run(struct mt_workq_task *t, unsigned worker)
{
	struct order_task *o = (struct order_task *)t;
	if (o->started) {
		sem_post(o->started);
		sem_wait(o->gate);
	}
	o->worker = worker;
	pthread_mutex_lock(&order_mu);
	order_seen[n_order++] = o->id;
	pthread_mutex_unlock(&order_mu);
}

static void test_workq(void)
{
	struct mt_workq q;
	struct order_task v[8];
	for (int i = 0; i < 8; i++)
		v[i] = (struct order_task){.t.run = order_run, .id = i};
	/* no threads: each task runs in the caller, at once */
	ok(!mt_workq_start(&q, 0) && q.threads == 0, "a queue without threads");
	n_order = 0;
	mt_workq_submit(&q, &v[0].t, false);
	ok(n_order == 1 && mt_workq_done(&q, &v[0].t) && v[0].worker == 0, "without threads a task runs when submitted");
	mt_workq_stop(&q);
	/* one thread held by task 0 while 1, 2 (normal) and 3 (urgent) queue */
	sem_t started, gate;
	sem_init(&started, 0, 0);
	sem_init(&gate, 0, 0);
	ok(!mt_workq_start(&q, 1) && q.threads == 1, "a queue with one thread");
	n_order = 0;
	v[0].started = &started;
	v[0].gate = &gate;
	mt_workq_submit(&q, &v[0].t, false);
	sem_wait(&started);
	mt_workq_submit(&q, &v[1].t, false);
	mt_workq_submit(&q, &v[2].t, false);
	mt_workq_submit(&q, &v[3].t, true);
	ok(!mt_workq_done(&q, &v[1].t) && !mt_workq_done(&q, &v[3].t), "queued tasks wait for the thread");
	sem_post(&gate);
	mt_workq_wait(&q, &v[2].t);
	ok(n_order == 4 && order_seen[0] == 0 && order_seen[1] == 3 && order_seen[2] == 1 && order_seen[3] == 2,
	   "the urgent task goes first, the others in the order submitted");
	ok(v[1].worker == 1 && v[3].worker == 1, "tasks run on the queue's thread (worker 1)");
	struct order_task never = {.t.run = order_run};
	mt_workq_wait(&q, &never.t);
	ok(1, "waiting for a task never submitted returns");
	mt_workq_stop(&q);
	/* several threads: every task runs once */
	ok(!mt_workq_start(&q, 3) && q.threads == 3, "a queue with three threads");
	n_order = 0;
	for (int i = 0; i < 8; i++) {
		v[i].started = NULL;
		mt_workq_submit(&q, &v[i].t, false);
	}
	for (int i = 0; i < 8; i++)
		mt_workq_wait(&q, &v[i].t);
	int seen = 0;
	for (int i = 0; i < n_order; i++)
		seen |= 1 << order_seen[i];
	bool workers_ok = true;
	for (int i = 0; i < 8; i++)
		workers_ok = workers_ok && v[i].worker >= 1 && v[i].worker <= 3;
	ok(n_order == 8 && seen == 0xff && workers_ok, "every task run once, by a worker of the queue");
	mt_workq_stop(&q);
	sem_destroy(&started);
	sem_destroy(&gate);
}

int main(void)
{
	test_workq();
	return tap_done();
}
