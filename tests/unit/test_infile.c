/* infile: each kind of file a hostile path can name, made for real here
 * (a FIFO with no writer, /dev/zero, a directory, a link, a file of another
 * owner): refused at once with the kind named, never a blocked open. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/infile.h"
#include "tap.h"

static int opens(const char *path, unsigned how, const char *want_in_msg)
{
	struct mt_err err = {0};
	int fd = mt_infile_open(path, how, &err);
	if (fd >= 0) {
		close(fd);
		return !want_in_msg;
	}
	return want_in_msg && strstr(err.msg, want_in_msg) && strstr(err.msg, path) == err.msg;
}

int main(void)
{
	alarm(60); /* a blocked open would hang here: fail instead */
	char dir[] = "/tmp/test_infile.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char fifo[256], reg[256], link[256], other[256];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(reg, sizeof reg, "%s/reg", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(other, sizeof other, "%s/other", dir);
	int made = !mkfifo(fifo, 0600);
	FILE *f = fopen(reg, "w");
	made &= f && fputs("x\n", f) >= 0 && !fclose(f);
	made &= !symlink(reg, link);
	f = fopen(other, "w");
	made &= f && !fclose(f);
	ok(made, "the files to open are made");

	ok(opens(reg, 0, NULL), "a regular file opens");
	ok(opens(fifo, 0, "not a regular file (a FIFO)"), "a FIFO without a writer: refused, not waited on");
	ok(opens("/dev/zero", 0, "not a regular file (a character device)"), "/dev/zero: refused");
	ok(opens(dir, 0, "not a regular file (a directory)"), "a directory: refused");
	ok(opens(link, 0, NULL), "a link to a regular file is followed by default");
	ok(opens(link, MT_INFILE_NOFOLLOW, "a symbolic link, not followed"), "with NOFOLLOW a link is refused");
	ok(opens(reg, MT_INFILE_OWNED, NULL), "a file of this user passes the owner check");
	/* another owner: only root can give a file away; the check is skipped,
	 * and says so, where the test does not run as root */
	if (geteuid() == 0 && !chown(other, 54321, 54321))
		ok(opens(other, MT_INFILE_OWNED, "owned by uid 54321, not by this user or root"),
		   "a file of another user fails the owner check");
	else
		printf("ok %d - # SKIP not root: cannot give a file to another user\n", ++n_test);
	ok(opens(other, 0, NULL), "without the owner check the same file opens");
	struct mt_err err = {0};
	f = mt_infile_fopen(reg, 0, &err);
	char line[8] = "";
	ok(f && fgets(line, sizeof line, f) && !strcmp(line, "x\n") && (fcntl(fileno(f), F_GETFL) & O_NONBLOCK) == 0,
	   "the stream reads the file, and blocks as any read would");
	if (f)
		fclose(f);
	ok(!mt_infile_fopen(fifo, 0, &err), "the stream form refuses a FIFO too");

	unlink(fifo), unlink(reg), unlink(link), unlink(other), rmdir(dir);
	return tap_done();
}
