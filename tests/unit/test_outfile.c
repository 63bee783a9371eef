/* outfile: the writeback request's contract (where it asks, where it
 * stops asking) with the kernel's answers as the oracle: sync_file_range
 * itself on the same descriptors (a regular file takes it, a pipe and
 * /dev/null refuse it); and a file written, asked for and committed reads
 * back whole under its name. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "tap.h"

static int kernel_takes(int fd)
{
	return sync_file_range(fd, 0, 4096, SYNC_FILE_RANGE_WRITE) == 0;
}

int main(void)
{
	char dir[] = "/tmp/test_outfile.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char path[64];
	snprintf(path, sizeof path, "%s/out", dir);
	struct mt_outfile o;
	struct mt_err err = {0};
	ok(mt_outfile_open(&o, path, &err) == 0, "a new file is opened (a temporary one beside it)");
	int fd = fileno(o.f);
	ok(kernel_takes(fd), "the kernel takes sync_file_range on the temporary file");
	/* 20 MiB in 64 KiB writes, asked after each as the trace writer does */
	static unsigned char block[1 << 16];
	uint64_t from = 0, written = 0, asks = 0;
	int ok_from = 1;
	for (int i = 0; i < 320; i++) {
		memset(block, i, sizeof block);
		if (fwrite(block, 1, sizeof block, o.f) != sizeof block)
			break;
		written += sizeof block;
		uint64_t before = from;
		mt_outfile_writeback(fd, &from, written);
		if (from != before) {
			asks++;
			/* asked only once MT_OUTFILE_WRITEBACK bytes were new, and
			 * then up to what was written */
			ok_from &= written - before >= MT_OUTFILE_WRITEBACK && from == written;
		} else {
			ok_from &= written - before < MT_OUTFILE_WRITEBACK;
		}
	}
	ok(written == 320u << 16, "20 MiB written");
	ok(ok_from && asks == written / MT_OUTFILE_WRITEBACK,
	   "asked every MT_OUTFILE_WRITEBACK bytes, from where it last asked");
	ok(mt_outfile_commit(&o, &err) == 0, "committed");
	FILE *f = fopen(path, "r");
	int whole = f != NULL;
	for (int i = 0; f && i < 320; i++) {
		whole &= fread(block, 1, sizeof block, f) == sizeof block;
		whole &= block[0] == (unsigned char)i && block[sizeof block - 1] == (unsigned char)i;
	}
	whole &= f && fgetc(f) == EOF;
	if (f)
		fclose(f);
	ok(whole, "the file reads back whole, every block where it was written");

	int p[2];
	if (pipe(p))
		return 1;
	from = 0;
	mt_outfile_writeback(p[1], &from, MT_OUTFILE_WRITEBACK);
	ok(!kernel_takes(p[1]) && from == UINT64_MAX, "a pipe: the kernel refuses, and it is not asked again");
	uint64_t never = UINT64_MAX;
	mt_outfile_writeback(p[1], &never, 3 * MT_OUTFILE_WRITEBACK);
	ok(never == UINT64_MAX, "once refused, stays refused");
	close(p[0]);
	close(p[1]);
	int null = open("/dev/null", O_WRONLY);
	from = 0;
	mt_outfile_writeback(null, &from, 2 * MT_OUTFILE_WRITEBACK);
	ok(null >= 0 && !kernel_takes(null) && from == UINT64_MAX,
	   "/dev/null: the kernel refuses, and it is not asked again");
	if (null >= 0)
		close(null);
	from = 5;
	mt_outfile_writeback(-1, &from, 4);
	ok(from == 5, "a position before where it last asked: nothing asked");

	struct mt_err ce = {0};
	ok(!mt_outfile_check("-", &ce) && !mt_outfile_check(path, &ce), "a path in a directory there passes");
	ok(mt_outfile_check("/nonexistent-mt/d/x.data", &ce) &&
		   !strcmp(ce.msg, "/nonexistent-mt/d/x.data: no directory /nonexistent-mt/d"),
	   "a missing directory, named as given");
	mt_err_clear(&ce);
	ok(mt_outfile_check(dir, &ce) && strstr(ce.msg, ": is a directory"), "a directory is no output file");
	/* a FIFO with no reader is refused, never waited on (an open for
	 * writing would block: this test would hang) */
	char fifo[PATH_MAX + 16], link[PATH_MAX + 16], target[PATH_MAX + 16];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	mkfifo(fifo, 0600);
	struct mt_outfile fo;
	mt_err_clear(&ce);
	bool refused = mt_outfile_check(fifo, &ce) && strstr(ce.msg, ": is a FIFO with no reader");
	mt_err_clear(&ce);
	refused = refused && mt_outfile_open(&fo, fifo, &ce) && strstr(ce.msg, ": is a FIFO");
	mt_err_clear(&ce);
	refused = refused && mt_outfile_check("/dev/zero", &ce) && strstr(ce.msg, "is a character device");
	ok(refused, "a FIFO with no reader and a device are refused, at once");
	/* a FIFO being read: from the check on, its write end stays open, so
	 * the reader never sees an end of file before the output (closed
	 * after the check, a reader between the two opens read nothing and
	 * left: the output then went nowhere). Oracle: read(2) on a FIFO with
	 * no data gives EAGAIN while a writer has it open, 0 once none has. */
	int rd = open(fifo, O_RDONLY | O_NONBLOCK);
	char buf[8];
	mt_err_clear(&ce);
	bool held = rd >= 0 && !mt_outfile_check(fifo, &ce) && read(rd, buf, sizeof buf) < 0 && errno == EAGAIN;
	held = held && !mt_outfile_open(&fo, fifo, &ce) && read(rd, buf, sizeof buf) < 0 && errno == EAGAIN;
	if (held) {
		fputs("fifo", fo.f);
		held = !mt_outfile_commit(&fo, &ce) && read(rd, buf, sizeof buf) == 4 && !memcmp(buf, "fifo", 4) &&
		       read(rd, buf, sizeof buf) == 0;
	}
	ok(held, "a FIFO being read: no end of file between the check and the output, then the output, then the end");
	if (rd >= 0)
		close(rd);
	mt_err_clear(&ce);
	ok(!mt_outfile_check("/dev/null", &ce), "/dev/null is taken");
	/* a link to a missing file: refused, and left a link */
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(target, sizeof target, "%s/target", dir);
	if (symlink(target, link))
		return 1;
	struct stat lst;
	mt_err_clear(&ce);
	ok(mt_outfile_open(&fo, link, &ce) && strstr(ce.msg, "a symbolic link to a missing file") && !lstat(link, &lst) &&
		   S_ISLNK(lst.st_mode),
	   "a link to a missing file: refused, still a link");
	/* a link to a file: written through, the link kept */
	FILE *t = fopen(target, "w");
	if (t)
		fclose(t);
	mt_err_clear(&ce);
	bool through = !mt_outfile_open(&fo, link, &ce);
	if (through) {
		fputs("through", fo.f);
		through = !mt_outfile_commit(&fo, &ce);
	}
	char got[16] = "";
	t = fopen(target, "r");
	if (t) {
		if (!fgets(got, sizeof got, t))
			got[0] = '\0';
		fclose(t);
	}
	ok(through && !strcmp(got, "through") && !lstat(link, &lst) && S_ISLNK(lst.st_mode),
	   "a link to a file: the file written, the link kept");
	unlink(link);
	unlink(target);
	unlink(fifo);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
