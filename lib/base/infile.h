/* infile: opening an input that must be a regular file. A path taken from
 * a trace, a bundle or a world-writable directory may name a FIFO (the
 * open, or the first read, never returns), a device (/dev/zero: reads
 * never end), a directory, or a link planted by another user; such a file
 * is refused with a message naming it, and the open never blocks. */
#ifndef MT_INFILE_H
#define MT_INFILE_H

#include <stdio.h>

#include "base/mt_err.h"

enum mt_infile_how {
	MT_INFILE_NOFOLLOW = 1, /* a symbolic link is refused, not followed */
	MT_INFILE_OWNED = 2,    /* owned by this user or root, as perf requires of
				 * JIT perf maps: anyone can write into /tmp */
};

/* A read-only descriptor (close-on-exec, blocking) on a regular file, or -1
 * with err set: "PATH: not a regular file (a FIFO)", "PATH: owned by uid N,
 * not by this user or root", or the open's own error. */
int mt_infile_open(const char *path, unsigned how, struct mt_err *err);
/* The same as a stdio stream. */
FILE *mt_infile_fopen(const char *path, unsigned how, struct mt_err *err);
/* What kind of file mode is, in words ("a FIFO", "a directory"). */
const char *mt_infile_kind(unsigned mode);

#endif
