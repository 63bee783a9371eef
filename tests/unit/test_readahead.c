/* readahead: what comes out is exactly what a writer put into a real pipe
 * (the bytes are a pattern the test computes, so each one is checked),
 * through a ring far smaller than the stream (it wraps and fills), with
 * the writer ahead and behind; the end and a read error are read(2)'s; a
 * thread waiting for a silent writer stops; what is not a pipe is left to
 * the caller. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/readahead.h"
#include "tap.h"

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

static void nap(unsigned us)
{
	struct timespec ts = {0, (long)us * 1000};
	nanosleep(&ts, NULL);
}

/* A child writes total bytes of the pattern in uneven pieces, pausing
 * every so often when slow_writer (the stage then waits for it). */
static pid_t writer(int fd, size_t total, bool slow_writer)
{
	fflush(stdout); /* the child must not print the TAP lines again */
	pid_t pid = fork();
	if (pid)
		return pid;
	static uint8_t buf[70000];
	size_t done = 0;
	for (unsigned k = 0; done < total; k++) {
		size_t n = 1 + (k * 7919u) % sizeof buf;
		if (n > total - done)
			n = total - done;
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(done + i);
		for (size_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, n - off);
			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		done += n;
		if (slow_writer && k % 16 == 0)
			nap(2000);
	}
	_exit(0);
}

/* Reads the stream to its end in uneven requests; true when every byte is
 * the pattern's and there are total of them. */
static bool read_all(struct mt_readahead *ra, size_t total, bool slow_reader, ssize_t *last)
{
	static uint8_t buf[50000];
	size_t seen = 0;
	bool same = true;
	for (unsigned k = 0;; k++) {
		size_t want = 1 + (k * 104729u) % sizeof buf;
		ssize_t n = mt_readahead_read(ra, buf, want);
		if (n <= 0) {
			*last = n;
			break;
		}
		if ((size_t)n > want)
			same = false;
		for (ssize_t i = 0; i < n; i++)
			same &= buf[i] == pattern(seen + (size_t)i);
		seen += (size_t)n;
		if (slow_reader && k % 64 == 0)
			nap(2000);
	}
	return same && seen == total;
}

/* The same without a copy: the bytes held looked at where they lie (in
 * one piece, across the ring's end), taken in uneven amounts; now and then
 * more than those held asked for, which must wait for them (or the ring
 * full, or the end). */
static bool peek_all(struct mt_readahead *ra, size_t total, ssize_t *last)
{
	size_t seen = 0, ring = mt_readahead_mirrored(ra);
	bool same = ring > 0;
	for (unsigned k = 0; same; k++) {
		const char *at;
		ssize_t n = mt_readahead_peek(ra, 0, &at);
		if (n > 0 && k % 3 == 0) {
			ssize_t more = mt_readahead_peek(ra, (size_t)n, &at);
			same &= more > n || (size_t)more == ring || seen + (size_t)more == total;
			n = more;
		}
		if (n <= 0) {
			*last = n;
			break;
		}
		same &= (size_t)n <= ring;
		for (ssize_t i = 0; i < n; i++)
			same &= (uint8_t)at[i] == pattern(seen + (size_t)i);
		size_t take = 1 + (k * 104729u) % 50000;
		if (take > (size_t)n)
			take = (size_t)n;
		mt_readahead_release(ra, take);
		seen += take;
	}
	return same && seen == total;
}

static void one_stream(size_t total, size_t cap, bool slow_writer, bool slow_reader, const char *name)
{
	int p[2];
	if (pipe(p))
		exit(1);
	pid_t pid = writer(p[1], total, slow_writer);
	close(p[1]);
	struct mt_readahead *ra = mt_readahead_start(p[0], cap);
	ssize_t last = 1;
	bool same = ra && read_all(ra, total, slow_reader, &last);
	ok(same && last == 0, name);
	int status;
	waitpid(pid, &status, 0);
	mt_readahead_stop(ra);
	close(p[0]);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	one_stream(3u << 20, 4096, false, false, "3 MiB through a 4 KiB ring: every byte, in order, then 0");
	one_stream(3u << 20, 65536, true, false, "a writer that pauses: the stage waits for it, nothing lost");
	one_stream(3u << 20, 65536, false, true, "a stage that pauses: the ring fills, the writer waits, nothing lost");
	one_stream(1u << 20, 3 * 65536 + 11, true, true, "both pausing, a ring of no round size");
	one_stream(0, 4096, false, false, "an empty stream: 0 at once");
	for (int slow = 0; slow < 2; slow++) {
		int p[2];
		if (pipe(p))
			return 1;
		pid_t pid = writer(p[1], 3u << 20, slow);
		close(p[1]);
		struct mt_readahead *ra = mt_readahead_start(p[0], 4096 + 100);
		ssize_t last = 1;
		bool same = ra && mt_readahead_mirrored(ra) == 8192 && peek_all(ra, 3u << 20, &last);
		ok(same && last == 0, slow ? "peek and release, a writer that pauses: every byte in place, nothing lost"
					   : "peek and release through a ring of two pages (asked for 4196 bytes): every "
					     "byte in one piece across its end, in order, then 0");
		int status;
		waitpid(pid, &status, 0);
		mt_readahead_stop(ra);
		close(p[0]);
	}

	/* the writer says nothing and keeps the pipe open: stop must not hang */
	int p[2];
	if (pipe(p))
		return 1;
	struct mt_readahead *ra = mt_readahead_start(p[0], 4096);
	if (write(p[1], "abc", 3) != 3)
		return 1;
	char got[8] = "";
	ssize_t n = ra ? mt_readahead_read(ra, got, sizeof got) : -1;
	ok(n == 3 && !memcmp(got, "abc", 3), "what a writer wrote is read without waiting for more");
	alarm(20); /* a stop that hangs ends the test, failed, here */
	mt_readahead_stop(ra); /* the thread waits in read(2) for more */
	ok(alarm(0) > 0, "stopping while the thread waits for a silent writer returns");
	close(p[0]);
	close(p[1]);

	/* a read error after the bytes before it: a FIFO opened for writing
	 * only is a pipe whose reads fail with EBADF */
	char path[] = "/tmp/test_readahead.XXXXXX";
	if (!mkdtemp(path))
		return 1;
	char fifo[64];
	snprintf(fifo, sizeof fifo, "%s/fifo", path);
	int wfd = -1;
	if (!mkfifo(fifo, 0600)) {
		int rfd = open(fifo, O_RDWR); /* opened both ways: no wait for a peer */
		wfd = open(fifo, O_WRONLY);
		ra = mt_readahead_start(wfd, 4096);
		errno = 0;
		n = ra ? mt_readahead_read(ra, got, sizeof got) : 0;
		ok(n == -1 && errno == EBADF, "a read that fails: -1 with its errno");
		ok(ra && mt_readahead_read(ra, got, sizeof got) == -1, "and again after");
		mt_readahead_stop(ra);
		close(rfd);
	} else {
		ok(0, "mkfifo");
	}
	if (wfd >= 0)
		close(wfd);
	unlink(fifo);
	rmdir(path);

	char file[] = "/tmp/test_readahead_file.XXXXXX";
	int fd = mkstemp(file);
	ok(fd >= 0 && !mt_readahead_start(fd, 4096), "a regular file: NULL, read as before");
	if (fd >= 0) {
		close(fd);
		unlink(file);
	}
	ok(!mt_readahead_start(-1, 4096), "no descriptor: NULL");
	mt_readahead_stop(NULL); /* harmless, as free(NULL) */
	return tap_done();
}
