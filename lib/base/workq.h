/* workq: a fixed set of threads that run tasks in the order they were
 * submitted, urgent ones first, while the submitting thread goes on (reads
 * the next input, writes finished output in order). With no threads a task
 * runs in the caller when submitted, so one code path serves one job and
 * many. */
#ifndef MT_WORKQ_H
#define MT_WORKQ_H

#include <pthread.h>
#include <stdbool.h>

#define MT_WORKQ_MAX_THREADS 64

struct mt_workq_task {
	/* worker: 1..threads on a thread of the queue, 0 in the caller */
	void (*run)(struct mt_workq_task *t, unsigned worker);
	struct mt_workq_task *next; /* the queue's */
	bool queued, done;          /* the queue's: read with mt_workq_done */
};

struct mt_workq {
	pthread_mutex_t mu;
	pthread_cond_t work, finished;
	struct mt_workq_task *head, *tail;   /* waiting, in submission order */
	struct mt_workq_task *uhead, *utail; /* urgent ones, taken first */
	pthread_t th[MT_WORKQ_MAX_THREADS];
	struct mt_workq_thread { struct mt_workq *q; unsigned worker; } arg[MT_WORKQ_MAX_THREADS];
	unsigned threads;
	bool stopping;
};

/* Starts up to `threads` threads (fewer when the system refuses more; 0:
 * tasks run in the caller). Returns 0, or MT_ENOMEM when even the lock
 * cannot be made. */
int mt_workq_start(struct mt_workq *q, unsigned threads);
/* Queues t (its run set); urgent: before every task not yet started. */
void mt_workq_submit(struct mt_workq *q, struct mt_workq_task *t, bool urgent);
/* Whether t has run: its results may then be read. */
bool mt_workq_done(struct mt_workq *q, struct mt_workq_task *t);
/* Waits until t has run (at once when it was never submitted). */
void mt_workq_wait(struct mt_workq *q, struct mt_workq_task *t);
/* Runs what is queued, then ends the threads. */
void mt_workq_stop(struct mt_workq *q);

#endif
