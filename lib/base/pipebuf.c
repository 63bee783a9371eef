/* pipebuf: F_SETPIPE_SZ on a stream's pipe, falling back to what the
 * system's limit allows. */
#define _GNU_SOURCE
#include "base/pipebuf.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

/* /proc/sys/fs/pipe-max-size, or 0 when it cannot be read */
static size_t pipe_max(void)
{
	FILE *f = fopen("/proc/sys/fs/pipe-max-size", "r");
	unsigned long v = 0;
	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

size_t mt_pipebuf_widen(int fd)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return 0;
	int now = fcntl(fd, F_GETPIPE_SZ);
	if (now < 0)
		return 0;
	if ((size_t)now >= MT_PIPEBUF_SIZE)
		return (size_t)now;
	if (fcntl(fd, F_SETPIPE_SZ, (int)MT_PIPEBUF_SIZE) < 0) {
		/* EPERM: a lower limit (root is not bound by it); EBUSY: the
		 * user's pipe memory is used up. The limit, then nothing more. */
		size_t max = pipe_max();
		if (max > (size_t)now && max < MT_PIPEBUF_SIZE)
			(void)fcntl(fd, F_SETPIPE_SZ, (int)max);
	}
	now = fcntl(fd, F_GETPIPE_SZ);
	return now < 0 ? 0 : (size_t)now;
}
