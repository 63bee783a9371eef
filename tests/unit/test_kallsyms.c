/* kallsyms: lines as /proc/kallsyms writes them (with and without a
 * module), and the hostile ones: a line longer than any buffer (its tail
 * once read as a symbol of its own), a NUL inside a line, zero addresses
 * (kptr_restrict), data symbols. Oracle: the lines, by hand. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objects/kallsyms.h"
#include "tap.h"

struct seen {
	char names[8][64];
	uint64_t addrs[8];
	size_t n, longest;
};

static void note(void *ctx, uint64_t addr, const char *name)
{
	struct seen *s = ctx;
	if (strlen(name) > s->longest)
		s->longest = strlen(name);
	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof s->names[s->n], "%s", name);
		s->addrs[s->n] = addr;
	}
	s->n++;
}

int main(void)
{
	char path[] = "/tmp/test_kallsyms.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f)
		return 1;
	fprintf(f, "ffffffff81000000 T _stext\n");
	fprintf(f, "ffffffff81000100 t helper\t[kvm]\n");
	fprintf(f, "ffffffff81000200 D some_data\n");
	fprintf(f, "0000000000000000 T hidden_by_kptr_restrict\n");
	fprintf(f, "ffffffff81000300 T ");
	for (int i = 0; i < 5000; i++)
		fputc('x', f);
	fprintf(f, "\n");
	/* a line of exactly 1,023 bytes, then what a 1,024-byte buffer read as
	 * a line of its own: a crafted name injected a symbol */
	fprintf(f, "ffffffff81000380 T ");
	for (int i = 0; i < 1023 - 19; i++)
		fputc('y', f);
	fprintf(f, "ffffffff81000400 T injected\n");
	fprintf(f, "ffffffff81000500 T good");
	fputc('\0', f);
	fprintf(f, "tail\n");
	fprintf(f, "not a line\n");
	fprintf(f, "ffffffff81000600 W weak_one\n");
	fclose(f);

	struct seen s = {0};
	struct mt_err err = {0};
	size_t bad = 99;
	int rc = mt_kallsyms_read(path, note, &s, &bad, &err);
	ok(rc == 0, "a kallsyms file reads");
	ok(s.n == 5, "five code symbols: T, t with a module, the two long ones, W");
	ok(!strcmp(s.names[0], "_stext") && s.addrs[0] == 0xffffffff81000000ull, "T _stext at its address");
	ok(!strcmp(s.names[1], "helper") && s.addrs[1] == 0xffffffff81000100ull, "t helper, its module column left out");
	ok(s.longest == 5000 && s.addrs[2] == 0xffffffff81000300ull, "a 5,000-byte name is one symbol, whole");
	ok(s.addrs[3] == 0xffffffff81000380ull && !strncmp(s.names[3], "yyy", 3),
	   "the 1,023-byte line is one symbol: its tail is part of the name");
	ok(!strcmp(s.names[4], "weak_one"), "W weak_one; no 'injected', no data symbol, no zero address");
	ok(bad == 2, "the line with a NUL and the malformed line are counted");

	ok(mt_kallsyms_read("/dev/zero", note, &s, &bad, &err) < 0 && strstr(err.msg, "not a regular file"),
	   "/dev/zero is refused, not read forever");
	unlink(path);
	return tap_done();
}
