#define _GNU_SOURCE
#include "base/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *mt_infile_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFSOCK: return "a socket";
	case S_IFLNK: return "a symbolic link";
	default: return "of unknown type";
	}
}

int mt_infile_open(const char *path, unsigned how, struct mt_err *err)
{
	/* O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise */
	int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	if (how & MT_INFILE_NOFOLLOW)
		flags |= O_NOFOLLOW;
	int fd = open(path, flags);
	if (fd < 0) {
		if (errno == ELOOP && (how & MT_INFILE_NOFOLLOW))
			mt_err_set(err, MT_EIO, "%s: a symbolic link, not followed here", path);
		else
			mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		mt_err_set(err, MT_EFORMAT, "%s: not a regular file (%s)", path, mt_infile_kind(st.st_mode));
		close(fd);
		return -1;
	}
	if ((how & MT_INFILE_OWNED) && st.st_uid != geteuid() && st.st_uid != 0) {
		mt_err_set(err, MT_EFORMAT, "%s: owned by uid %u, not by this user or root", path,
			   (unsigned)st.st_uid);
		close(fd);
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

FILE *mt_infile_fopen(const char *path, unsigned how, struct mt_err *err)
{
	int fd = mt_infile_open(path, how, err);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (fd >= 0 && !f) {
		mt_err_set(err, MT_ENOMEM, "%s: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}
