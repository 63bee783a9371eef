/* outfile: atomic output files. Data goes to a temporary file beside the
 * target and is renamed over it only when complete, so a failed run never
 * leaves a partial file under the final name. "-" means stdout. An output
 * must be a regular file or none: a directory, device or socket is
 * refused before anything is opened, and a FIFO with no reader (its open
 * would block; one being read, as -o >(cmd) gives, is written in place,
 * as /dev/null is); a symlink to a file is written through (the
 * file replaced, the link kept), one to a missing file refused (never
 * replaced by a regular file). The same rule holds in mt's scripts. A file replaced keeps
 * its mode; a new one is 0600, as perf makes perf.data (a trace shows what
 * a program did). A signal that ends the process (SIGINT, SIGTERM, SIGHUP,
 * SIGPIPE) removes the temporary file. A file that was there is replaced,
 * and the tool says so ("PROG: replaced FILE", mt_outfile_say_replaced):
 * mt's one convention, as perf says it keeps perf.data.old. */
#ifndef MT_OUTFILE_H
#define MT_OUTFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/mt_err.h"

struct mt_outfile {
	FILE *f;
	char *path, *tmp;
	bool direct;          /* not a regular file (device, fifo): written in place */
	bool replaced;        /* a regular file was there: the tool says it replaced it */
	int sigslot;          /* its onsignal slot + 1, 0 when none */
};

int mt_outfile_open(struct mt_outfile *o, const char *path, struct mt_err *err);
/* Whether path could be written, before anything is run to make it (a
 * program traced for minutes is not lost to a typo): the rule above, and
 * its directory exists and can be written. The error names the path as
 * given: "PATH: no directory DIR", "PATH: is a directory: ...", "PATH:
 * cannot write in DIR". "-" passes. */
int mt_outfile_check(const char *path, struct mt_err *err);
/* Flushes, syncs and renames; on failure removes the temporary file. */
int mt_outfile_commit(struct mt_outfile *o, struct mt_err *err);
void mt_outfile_abort(struct mt_outfile *o);
/* Asks the kernel to start writing fd's bytes from *from up to to out to
 * disk, without waiting, once that is at least MT_OUTFILE_WRITEBACK bytes
 * (sync_file_range): the commit's fsync then waits for the last few MiB,
 * not the whole file (a 104 MB trace: fsync 110-126 -> 70 ms). Bytes still
 * in stdio's buffer are not dirty yet; the fsync takes them. Sets *from to
 * to when asked, and to UINT64_MAX where fd cannot be (a pipe, a device),
 * so that it is not asked again. */
#define MT_OUTFILE_WRITEBACK ((uint64_t)8 << 20)
void mt_outfile_writeback(int fd, uint64_t *from, uint64_t to);
/* After a commit: "PROG: replaced PATH" on stderr when a file was there. */
void mt_outfile_say_replaced(const struct mt_outfile *o, const char *prog, const char *path);

#endif
