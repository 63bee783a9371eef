/* readahead: a thread that keeps a pipe drained into a ring in memory,
 * for a stage of a pipeline that reads a stream.
 *
 * Why: the stages of mt's pipeline do not go at an even pace (the decoder
 * emits some stretches faster than others, mt-toperfetto works in windows),
 * and a pipe holds at most 1 MiB for an unprivileged process. With nothing
 * more between them, whichever stage is ahead soon blocks on the full or
 * empty pipe, and on two CPUs a core stood idle a quarter of the time
 * (/proc/stat, the 16 MB bench trace). A thread that only reads gives the
 * stage MT_READAHEAD_SIZE bytes of slack, so the stage before it seldom
 * waits. */
#ifndef MT_READAHEAD_H
#define MT_READAHEAD_H

#include <stddef.h>
#include <sys/types.h>

/* The ring's size: 4 MiB already took the idle time away on the bench's
 * traces; its pages are touched only as the stream fills them. */
#define MT_READAHEAD_SIZE (8u << 20)

struct mt_readahead;

/* Starts reading fd ahead into a ring of at least cap bytes when fd is a pipe or
 * FIFO; NULL for anything else, or when no thread or memory can be had
 * (then fd is read as before: only slower). Nothing may have been read
 * from fd through a buffer (a FILE) before. */
struct mt_readahead *mt_readahead_start(int fd, size_t cap);
/* Up to n bytes into dst, waiting for at least one: read(2)'s contract.
 * Returns 0 at the end of the input, -1 with errno for a read error (after
 * every byte read before it). */
ssize_t mt_readahead_read(struct mt_readahead *ra, void *dst, size_t n);
/* Without a copy: where the ring lies in one piece (mapped twice, back to
 * back), its size; 0 where it does not (then only mt_readahead_read). */
size_t mt_readahead_mirrored(const struct mt_readahead *ra);
/* The bytes held, not taken yet, in one piece from *at: waits until there
 * are more than have of them, or the ring is full, or the input ended.
 * They stay the caller's, to read and to write in, until released, and
 * their address until the next call. Returns how many there are (not
 * above have: the end of the input, or the ring full); -1 with errno for
 * a read error, when no more than have are held. Only where mirrored. */
ssize_t mt_readahead_peek(struct mt_readahead *ra, size_t have, const char **at);
/* The first n bytes held are done with: the thread may read over them. */
void mt_readahead_release(struct mt_readahead *ra, size_t n);
/* Stops the thread (even while it waits for the writer) and frees all. */
void mt_readahead_stop(struct mt_readahead *ra);

#endif
