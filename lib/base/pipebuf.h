/* pipebuf: wider pipes between the stages of a pipeline. A pipe holds 64
 * KiB by default: a stage that writes a stream of hundreds of MB then wakes
 * the next one for every 64 KiB, and on this kind of machine (virtual CPUs,
 * costly cross-CPU wake-ups) the three processes of mt's pipeline ran one
 * after the other more than beside each other. Either end may widen the
 * pipe; it is one buffer. */
#ifndef MT_PIPEBUF_H
#define MT_PIPEBUF_H

#include <stddef.h>

/* The size a stream's pipe is widened to: Linux's default limit for an
 * unprivileged process (/proc/sys/fs/pipe-max-size). */
#define MT_PIPEBUF_SIZE (1u << 20)

/* Widens fd to MT_PIPEBUF_SIZE (or the most the system allows) if it is a
 * pipe or FIFO and smaller; anything else is left alone. Returns the pipe's
 * size afterwards, 0 when fd is not a pipe. Never fails: a narrow pipe is
 * only slower. */
size_t mt_pipebuf_widen(int fd);

#endif
