/* pipebuf: a real pipe is widened (F_GETPIPE_SZ, the kernel's own answer, is
 * the oracle), both of its ends see one buffer, and what is not a pipe is
 * left alone. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/pipebuf.h"
#include "tap.h"

int main(void)
{
	int p[2];
	if (pipe(p))
		return 1;
	int before = fcntl(p[1], F_GETPIPE_SZ);
	size_t got = mt_pipebuf_widen(p[1]);
	int after = fcntl(p[0], F_GETPIPE_SZ);
	ok(before > 0 && after > 0 && got == (size_t)after, "the size returned is the kernel's, seen from the read end");
	/* the system's limit, as the kernel documents it (proc(5)) */
	char text[32] = "";
	int lim = open("/proc/sys/fs/pipe-max-size", O_RDONLY);
	if (lim >= 0) {
		if (read(lim, text, sizeof text - 1) < 0)
			text[0] = '\0';
		close(lim);
	}
	unsigned long max = strtoul(text, NULL, 10);
	/* the kernel rounds to a power of two pages: at least what was asked
	 * for, or the system's limit when that is lower (root may exceed it) */
	size_t want = max && max < MT_PIPEBUF_SIZE && geteuid() != 0 ? max : MT_PIPEBUF_SIZE;
	ok(got >= want || (size_t)before >= want, "the pipe holds at least MT_PIPEBUF_SIZE (or the system's limit)");
	ok(mt_pipebuf_widen(p[0]) == got, "widening again, from the other end, changes nothing");
	close(p[0]);
	close(p[1]);
	char path[] = "/tmp/test_pipebuf.XXXXXX";
	int fd = mkstemp(path);
	ok(fd >= 0 && mt_pipebuf_widen(fd) == 0, "a regular file: 0, left alone");
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	ok(mt_pipebuf_widen(-1) == 0, "no descriptor: 0");
	return tap_done();
}
