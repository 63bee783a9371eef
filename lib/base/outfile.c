#define _GNU_SOURCE
#include "base/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/onsignal.h"

static void remove_tmp(void *ctx)
{
	const struct mt_outfile *o = ctx;
	if (o->tmp)
		unlink(o->tmp);
}

static void forget_tmp(struct mt_outfile *o)
{
	mt_onsignal_remove(o->sigslot - 1);
	o->sigslot = 0;
}

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

static bool is_dev_null(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

/* A FIFO's write end, opened only when a reader is there already (never
 * a blocking open: with none, the open fails at once, ENXIO); -1 and
 * errno otherwise. For -o >(cmd), whose /dev/fd/N is a pipe. */
static int fifo_with_reader(const char *path)
{
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* The FIFO the last check found a reader on, its write end kept open:
 * closed, it would be the reader's end of file (a reader then gone before
 * the output is opened for real, or before mt-record writes); the output's
 * open takes it over. One at a time: a tool writes one output. */
static struct {
	dev_t dev;
	ino_t ino;
	int fd;
} held_fifo = {.fd = -1};

/* The write end of the FIFO st describes (path), held from the check on:
 * -1 and errno when it has no reader. */
static int hold_fifo(const char *path, const struct stat *st)
{
	if (held_fifo.fd >= 0 && held_fifo.dev == st->st_dev && held_fifo.ino == st->st_ino)
		return held_fifo.fd;
	int fd = fifo_with_reader(path);
	if (fd < 0)
		return -1;
	if (held_fifo.fd >= 0)
		close(held_fifo.fd);
	held_fifo.dev = st->st_dev;
	held_fifo.ino = st->st_ino;
	held_fifo.fd = fd;
	return fd;
}

/* The rule, before anything is opened (a FIFO's open would block): a
 * regular file or none; a symlink is followed to an existing target,
 * never replaced; /dev/null is taken (output thrown away on purpose), and
 * a FIFO or pipe that a reader has open (-o >(cmd)). *st and *exists say
 * what is there (through links). */
static int check_target(const char *path, struct stat *st, bool *exists, struct mt_err *err)
{
	struct stat lst;
	*exists = false;
	if (lstat(path, &lst) != 0)
		return errno == ENOENT ? 0 : mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	if (stat(path, st) != 0) {
		if (S_ISLNK(lst.st_mode))
			return mt_err_set(err, MT_EUSAGE,
					  "%s: a symbolic link to a missing file: not written through, not replaced", path);
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	}
	*exists = true;
	if (S_ISREG(st->st_mode) || is_dev_null(st))
		return 0;
	if (S_ISDIR(st->st_mode))
		return mt_err_set(err, MT_EUSAGE, "%s: is a directory", path);
	if (S_ISFIFO(st->st_mode)) {
		if (hold_fifo(path, st) >= 0)
			return 0;
		return mt_err_set(err, MT_EUSAGE, "%s: is a FIFO with no reader: an output must be a regular file, "
				  "or a FIFO being read (or -, standard output)", path);
	}
	return mt_err_set(err, MT_EUSAGE, "%s: is %s: an output must be a regular file (or -, standard output)", path,
			  kind_of(st->st_mode));
}

int mt_outfile_check(const char *path, struct mt_err *err)
{
	if (!strcmp(path, "-"))
		return 0;
	struct stat st;
	bool exists;
	if (check_target(path, &st, &exists, err))
		return err->code;
	if (exists && is_dev_null(&st))
		return 0;
	/* the directory the file is made in: the link's target's */
	char *real = exists ? realpath(path, NULL) : NULL;
	const char *p = real ? real : path, *slash = strrchr(p, '/');
	char *dir = slash ? strndup(p, slash == p ? 1 : (size_t)(slash - p)) : strdup(".");
	free(real);
	if (!dir)
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	int rc = 0;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		rc = mt_err_set(err, MT_EIO, "%s: no directory %s", path, dir);
	else if (access(dir, W_OK | X_OK) != 0)
		rc = mt_err_set(err, MT_EIO, "%s: cannot write in %s", path, dir);
	free(dir);
	return rc;
}

int mt_outfile_open(struct mt_outfile *o, const char *path, struct mt_err *err)
{
	memset(o, 0, sizeof *o);
	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	struct stat st;
	bool exists;
	if (check_target(path, &st, &exists, err))
		return err->code;
	if (exists && !S_ISREG(st.st_mode)) { /* /dev/null, a FIFO being read: written in place */
		int fd;
		if (S_ISFIFO(st.st_mode)) { /* the write end check_target holds */
			fd = held_fifo.fd;
			held_fifo.fd = -1;
		} else {
			fd = open(path, O_WRONLY | O_CLOEXEC);
		}
		o->f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!o->f && fd >= 0)
			close(fd);
		if (!o->f)
			return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
		o->direct = true;
		return 0;
	}
	o->replaced = exists;
	/* a symlink to a file: the file is replaced, the link stays */
	char *real = exists ? realpath(path, NULL) : NULL;
	o->path = real ? real : strdup(path);
	if (!o->path || asprintf(&o->tmp, "%s.tmp.XXXXXX", o->path) < 0) {
		free(o->path);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		int e = errno;
		free(o->tmp);
		free(o->path);
		o->tmp = o->path = NULL;
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(e));
	}
	o->sigslot = mt_onsignal_add(remove_tmp, o) + 1;
	/* mkstemp makes 0600, kept for a new file; a replaced one keeps its mode */
	if (exists)
		fchmod(fd, st.st_mode & 07777);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = errno;
		close(fd);
		forget_tmp(o);
		unlink(o->tmp);
		free(o->tmp);
		free(o->path);
		o->tmp = o->path = NULL;
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(e));
	}
	return 0;
}

int mt_outfile_commit(struct mt_outfile *o, struct mt_err *err)
{
	if (o->direct) {
		int rc = fclose(o->f) != 0 ? mt_err_set(err, MT_EIO, "writing: %s", strerror(errno)) : 0;
		memset(o, 0, sizeof *o);
		return rc;
	}
	if (!o->tmp) {
		if (fflush(stdout) != 0)
			return mt_err_set(err, MT_EIO, "writing standard output: %s", strerror(errno));
		return 0;
	}
	int rc = 0;
	if (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0)
		rc = mt_err_set(err, MT_EIO, "%s: %s", o->path, strerror(errno));
	if (fclose(o->f) != 0 && !rc)
		rc = mt_err_set(err, MT_EIO, "%s: %s", o->path, strerror(errno));
	o->f = NULL;
	if (!rc && rename(o->tmp, o->path) != 0)
		rc = mt_err_set(err, MT_EIO, "%s: %s", o->path, strerror(errno));
	if (rc)
		unlink(o->tmp);
	forget_tmp(o);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return rc;
}

void mt_outfile_abort(struct mt_outfile *o)
{
	if (o->direct)
		fclose(o->f);
	if (o->tmp) {
		if (o->f)
			fclose(o->f);
		unlink(o->tmp);
		forget_tmp(o);
	}
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof *o);
}

void mt_outfile_writeback(int fd, uint64_t *from, uint64_t to)
{
	if (*from == UINT64_MAX || to < *from || to - *from < MT_OUTFILE_WRITEBACK)
		return;
	if (fd < 0 || sync_file_range(fd, (off_t)*from, (off_t)(to - *from), SYNC_FILE_RANGE_WRITE) != 0)
		*from = UINT64_MAX; /* ESPIPE (a pipe), EINVAL (a device): the file is written, never synced here */
	else
		*from = to;
}

void mt_outfile_say_replaced(const struct mt_outfile *o, const char *prog, const char *path)
{
	if (o->replaced)
		fprintf(stderr, "%s: replaced %s\n", prog, path);
}
