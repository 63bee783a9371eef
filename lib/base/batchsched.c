/* batchsched: see batchsched.h. */
#define _GNU_SOURCE
#include "base/batchsched.h"

#include <sched.h>
#include <sys/stat.h>

bool mt_batchsched_for_pipe(int fd)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return false;
	if (sched_getscheduler(0) != SCHED_OTHER)
		return false;
	struct sched_param p = {.sched_priority = 0};
	return sched_setscheduler(0, SCHED_BATCH, &p) == 0;
}
