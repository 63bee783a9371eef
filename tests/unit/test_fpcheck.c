/* fpcheck: prologues written out by hand (the encodings gcc and clang emit,
 * from the Intel SDM: 55 push %rbp; 48 89 e5 / 48 8b ec mov %rsp,%rbp;
 * f3 0f 1e fa endbr64), and two builds of one program told apart: the
 * test programs hot (-fno-omit-frame-pointer) and hot_nofp
 * (-fomit-frame-pointer), given as arguments by the harness when built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects/fpcheck.h"
#include "tap.h"

int main(int argc, char **argv)
{
	static const unsigned char fp[] = {0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x90, 0x90};
	static const unsigned char fp_endbr[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5};
	static const unsigned char fp_8b[] = {0x55, 0x48, 0x8b, 0xec, 0x90, 0x90, 0x90, 0x90};
	static const unsigned char nofp[] = {0x48, 0x83, 0xec, 0x08, 0x90, 0x90, 0x90, 0x90}; /* sub $8,%rsp */
	static const unsigned char push_only[] = {0x55, 0x53, 0x48, 0x89, 0xfb, 0x90, 0x90, 0x90}; /* rbp as a register */
	ok(mt_fpcheck_prologue(fp, 8) && mt_fpcheck_prologue(fp_endbr, 8) && mt_fpcheck_prologue(fp_8b, 8),
	   "push %rbp; mov %rsp,%rbp, after an endbr64 too, either mov encoding");
	ok(!mt_fpcheck_prologue(nofp, 8) && !mt_fpcheck_prologue(push_only, 8) && !mt_fpcheck_prologue(fp, 3),
	   "no frame set up, %rbp saved as any register, too few bytes");
	struct mt_err err = {0};
	size_t with, all;
	ok(mt_fpcheck_file("/nonexistent-mt", &with, &all, &err) && strstr(err.msg, "/nonexistent-mt"), "a missing file: said");
	char path[4096];
	const char *progs = argc > 1 ? argv[1] : getenv("MT_PROGS");
	if (!progs) {
		printf("# MT_PROGS not set: the two builds not read\n");
		return tap_done();
	}
	snprintf(path, sizeof path, "%s/hot", progs);
	mt_err_clear(&err);
	ok(!mt_fpcheck_file(path, &with, &all, &err) && all >= 2 && with == all, "hot: every function that calls sets one up (its leaf, none: not counted)");
	snprintf(path, sizeof path, "%s/hot_nofp", progs);
	ok(!mt_fpcheck_file(path, &with, &all, &err) && all >= 2 && with == 0, "hot_nofp: none does");
	return tap_done();
}
