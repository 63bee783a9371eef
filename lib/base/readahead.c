/* readahead: one thread reads the pipe into the ring while there is room;
 * the stage takes bytes out under the same lock. head and tail count bytes
 * in and out since the start, so the ring is full when they are cap apart.
 * The ring is mapped twice, back to back (one memfd, two views): bytes that
 * wrap past its end go on in the second view, so whatever is held lies in
 * one piece, for the thread's read(2) and for the stage's peek alike. */
#define _GNU_SOURCE
#include "base/readahead.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bigmem.h"

struct mt_readahead {
	int fd;
	char *ring;
	size_t cap;
	bool mirrored;  /* ring is 2 * cap bytes: the second view the first's */
	size_t populated; /* mirrored: the bytes of each view whose pages are made */
	size_t head, tail;
	bool eof;       /* the thread is done: end of input or err */
	int err;        /* errno of the read that failed, 0: none */
	bool stopping;
	pthread_mutex_t mu;
	pthread_cond_t more, room;
	pthread_t thread;
};

/* A mirrored ring's pages are shared memory's, 4 KiB each, and a page
 * faulted in costs its trap twice over (each view, and the stage writes
 * the NULs of its lines into the second); made a MiB at a time ahead of
 * the bytes read instead, in both views (mt-toperfetto reading the bench's
 * 1 GB text stream: 3,700 page faults, 1,560 this way; its CPU 650 -> 515
 * ms). Only as far as the stream goes: a short one pays for a MiB. */
#define POPULATE_STEP ((size_t)1 << 20)
static void populate(struct mt_readahead *ra, size_t upto)
{
	while (ra->mirrored && ra->populated < ra->cap && ra->populated < upto) {
		size_t n = ra->cap - ra->populated < POPULATE_STEP ? ra->cap - ra->populated : POPULATE_STEP;
		/* a hint: where the kernel lacks it, the pages fault in as used */
		madvise(ra->ring + ra->populated, n, MADV_POPULATE_WRITE);
		madvise(ra->ring + ra->cap + ra->populated, n, MADV_POPULATE_WRITE);
		ra->populated += n;
	}
}

static void *drain(void *arg)
{
	struct mt_readahead *ra = arg;
	/* cancelled only inside read(2), where it holds nothing */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&ra->mu);
	while (!ra->stopping) {
		if (ra->head - ra->tail == ra->cap) {
			pthread_cond_wait(&ra->room, &ra->mu);
			continue;
		}
		size_t at = ra->head % ra->cap, room = ra->cap - (ra->head - ra->tail);
		if (!ra->mirrored && room > ra->cap - at)
			room = ra->cap - at;
		pthread_mutex_unlock(&ra->mu);
		populate(ra, at + POPULATE_STEP);
		ssize_t got;
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		do
			got = read(ra->fd, ra->ring + at, room);
		while (got < 0 && errno == EINTR);
		int e = errno;
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_mutex_lock(&ra->mu);
		if (got > 0) {
			ra->head += (size_t)got;
		} else {
			ra->eof = true;
			ra->err = got < 0 ? e : 0;
		}
		pthread_cond_signal(&ra->more);
		if (got <= 0)
			break;
	}
	pthread_mutex_unlock(&ra->mu);
	return NULL;
}

/* Two views of one memfd of cap bytes (a multiple of the page size), back
 * to back; NULL where that cannot be had (then a plain ring). Its pages are
 * 4 KiB (shared memory: no transparent huge pages by default), each
 * faulted in once, in the first view and again in the second. */
static char *map_mirrored(size_t cap)
{
	int fd = memfd_create("mt-readahead", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *ring = NULL;
	void *both = mmap(NULL, 2 * cap, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!ftruncate(fd, (off_t)cap) && both != MAP_FAILED &&
	    mmap(both, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == both &&
	    mmap((char *)both + cap, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
		    (char *)both + cap)
		ring = both;
	else if (both != MAP_FAILED)
		munmap(both, 2 * cap);
	close(fd); /* the mappings keep it */
	return ring;
}

static void free_ring(struct mt_readahead *ra)
{
	if (ra->mirrored)
		munmap(ra->ring, 2 * ra->cap);
	else
		mt_bigmem_zfree(ra->ring, ra->cap);
}

struct mt_readahead *mt_readahead_start(int fd, size_t cap)
{
	struct stat st;
	if (fd < 0 || !cap || fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return NULL;
	struct mt_readahead *ra = calloc(1, sizeof *ra);
	if (!ra)
		return NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t whole = (cap + page - 1) / page * page;
	if ((ra->ring = map_mirrored(whole))) {
		ra->mirrored = true;
		cap = whole;
	} else {
		ra->ring = mt_bigmem_zalloc(cap); /* in huge pages: its 8 MiB are all touched */
	}
	ra->cap = cap;
	if (!ra->ring || pthread_mutex_init(&ra->mu, NULL)) {
		if (ra->ring)
			free_ring(ra);
		free(ra);
		return NULL;
	}
	pthread_cond_init(&ra->more, NULL);
	pthread_cond_init(&ra->room, NULL);
	ra->fd = fd;
	/* signals are the stage's own thread's to take (SIGINT's cleanups) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&ra->thread, NULL, drain, ra);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&ra->more);
		pthread_cond_destroy(&ra->room);
		pthread_mutex_destroy(&ra->mu);
		free_ring(ra);
		free(ra);
		return NULL;
	}
	return ra;
}

size_t mt_readahead_mirrored(const struct mt_readahead *ra)
{
	return ra->mirrored ? ra->cap : 0;
}

ssize_t mt_readahead_peek(struct mt_readahead *ra, size_t have, const char **at)
{
	pthread_mutex_lock(&ra->mu);
	while (ra->head - ra->tail <= have && ra->head - ra->tail < ra->cap && !ra->eof)
		pthread_cond_wait(&ra->more, &ra->mu);
	size_t held = ra->head - ra->tail;
	int e = ra->err;
	*at = ra->ring + ra->tail % ra->cap;
	pthread_mutex_unlock(&ra->mu);
	if (held <= have && held < ra->cap && e) {
		errno = e;
		return -1;
	}
	return (ssize_t)held;
}

void mt_readahead_release(struct mt_readahead *ra, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&ra->mu);
	bool was_full = ra->head - ra->tail == ra->cap;
	ra->tail += n;
	if (was_full)
		pthread_cond_signal(&ra->room);
	pthread_mutex_unlock(&ra->mu);
}

ssize_t mt_readahead_read(struct mt_readahead *ra, void *dst, size_t n)
{
	pthread_mutex_lock(&ra->mu);
	while (ra->head == ra->tail && !ra->eof)
		pthread_cond_wait(&ra->more, &ra->mu);
	size_t have = ra->head - ra->tail;
	if (!have) {
		int e = ra->err;
		pthread_mutex_unlock(&ra->mu);
		if (e) {
			errno = e;
			return -1;
		}
		return 0;
	}
	size_t at = ra->tail % ra->cap;
	pthread_mutex_unlock(&ra->mu);
	/* the bytes up to head are the stage's until tail moves: copied
	 * without the lock, the ring's end first, then its start */
	if (have > n)
		have = n;
	size_t first = have < ra->cap - at ? have : ra->cap - at;
	memcpy(dst, ra->ring + at, first);
	memcpy((char *)dst + first, ra->ring, have - first);
	mt_readahead_release(ra, have);
	return (ssize_t)have;
}

void mt_readahead_stop(struct mt_readahead *ra)
{
	if (!ra)
		return;
	pthread_mutex_lock(&ra->mu);
	ra->stopping = true;
	pthread_cond_signal(&ra->room);
	pthread_mutex_unlock(&ra->mu);
	/* a thread waiting in read(2) for a writer that writes nothing more */
	pthread_cancel(ra->thread);
	pthread_join(ra->thread, NULL);
	pthread_cond_destroy(&ra->more);
	pthread_cond_destroy(&ra->room);
	pthread_mutex_destroy(&ra->mu);
	free_ring(ra);
	free(ra);
}
