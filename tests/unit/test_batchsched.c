/* batchsched: the kernel's own answer (sched_getscheduler, and
 * pthread_getschedparam for a thread started afterwards) is the oracle for
 * the policy taken: SCHED_BATCH for a pipe, nothing for a regular file or
 * no descriptor, and a policy the user chose (SCHED_IDLE here, as
 * chrt -i would set) left alone. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/batchsched.h"
#include "tap.h"

static void *policy_of_thread(void *arg)
{
	int policy;
	struct sched_param p;
	*(int *)arg = pthread_getschedparam(pthread_self(), &policy, &p) == 0 ? policy : -1;
	return NULL;
}

int main(void)
{
	/* run from a shell under chrt -b or in a pipeline stage: back to the
	 * default first */
	struct sched_param none = {0};
	if (sched_getscheduler(0) != SCHED_OTHER)
		(void)sched_setscheduler(0, SCHED_OTHER, &none);
	ok(sched_getscheduler(0) == SCHED_OTHER, "the test runs under the default policy");
	char path[] = "/tmp/test_batchsched.XXXXXX";
	int fd = mkstemp(path);
	ok(fd >= 0 && !mt_batchsched_for_pipe(fd) && sched_getscheduler(0) == SCHED_OTHER,
	   "a regular file: false, the policy unchanged");
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	ok(!mt_batchsched_for_pipe(-1) && sched_getscheduler(0) == SCHED_OTHER, "no descriptor: false, unchanged");

	int p[2];
	if (pipe(p))
		return 1;
	/* a policy the user chose is kept: in a child, so this process keeps
	 * the default for what follows */
	pid_t child = fork();
	if (child == 0) {
		if (sched_setscheduler(0, SCHED_IDLE, &none))
			_exit(2);
		_exit(!mt_batchsched_for_pipe(p[0]) && sched_getscheduler(0) == SCHED_IDLE ? 0 : 1);
	}
	int st = -1;
	waitpid(child, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "under SCHED_IDLE (the user's choice): false, SCHED_IDLE kept");

	ok(mt_batchsched_for_pipe(p[0]) && sched_getscheduler(0) == SCHED_BATCH,
	   "a pipe's read end: true, SCHED_BATCH");
	int thread_policy = -1;
	pthread_t t;
	if (pthread_create(&t, NULL, policy_of_thread, &thread_policy) == 0)
		pthread_join(t, NULL);
	ok(thread_policy == SCHED_BATCH, "a thread started afterwards (the read-ahead's) inherits SCHED_BATCH");
	ok(!mt_batchsched_for_pipe(p[1]) && sched_getscheduler(0) == SCHED_BATCH,
	   "asked again: false, still SCHED_BATCH");
	close(p[0]);
	close(p[1]);
	return tap_done();
}
