/* Unit tests of code images (trace/image.c): object specs and the code
 * walk's blocks, TAP output. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <intel-pt.h>
#include <unistd.h>

#include "trace/image.h"
#include "trace/ptdecode.h"

#include "tap.h"

static void test_image_specs(void)
{
	struct mt_image img;
	struct mt_err err = {0};
	mt_image_init(&img, "t", &err);
	ok(mt_image_add_spec(&img, "/bin/true", &err) == MT_EUSAGE, "an image spec without @VADDR is refused");
	mt_err_clear(&err);
	ok(mt_image_add_spec(&img, "/bin/true@zz", &err) == MT_EUSAGE, "a bad address is refused");
	mt_err_clear(&err);
	ok(mt_image_add_spec(&img, "/bin/true:0x10-0x8@0x1000", &err) == MT_EUSAGE, "an empty range is refused");
	mt_err_clear(&err);
	ok(mt_image_add_spec(&img, "/bin/true:0x0-0x100@0x400000", &err) == 0 && img.nsections == 1,
	   "FILE:OFF-END@VADDR adds one section");
	uint8_t b[4];
	FILE *f = fopen("/bin/true", "rb");
	uint8_t want[4] = {0};
	if (f) {
		if (fread(want, 1, 4, f) != 4)
			want[0] = 1;
		fclose(f);
	}
	ok(mt_image_read(&img, 0x400000, b, 4) == 4 && !memcmp(b, want, 4), "image bytes equal the file's bytes");
	mt_image_fini(&img);
}

/* The code walk's blocks, on hand-assembled code (bytes and lengths as
 * objdump -d reads them) split over two sections mid-instruction. */
static void test_code_blocks(void)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf8,                   /* 0x1000 mov %rdi,%rax */
		0x62, 0xb2, 0x66, 0x20, 0x26, 0xc3, /* 0x1003 vptestnmb %ymm19,%ymm19,%k0 (EVEX; capstone 4 knows it not) */
		0xc5, 0xf8, 0x77,                   /* 0x1009 vzeroupper (no ModRM) */
		0x90,                               /* 0x100c nop */
		0x0f, 0x84, 0x10, 0x00, 0x00, 0x00, /* 0x100d je 0x1023 -- the first section ends inside it */
		0xe8, 0x00, 0x00, 0x00, 0x00,       /* 0x1013 call 0x1018 (the next instruction) */
		0xff, 0x15, 0x00, 0x00, 0x00, 0x00, /* 0x1018 call *0x0(%rip) */
		0xc3,                               /* 0x101e ret */
	};
	char path[] = "/tmp/mt-unit-code-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	ok(f && fwrite(code, 1, sizeof code, f) == sizeof code && !fclose(f), "code file written");
	struct mt_image img;
	struct mt_err err = {0};
	mt_image_init(&img, "t", &err);
	ok(!mt_image_add_file(&img, path, 0, 16, 0x1000, &err) && !mt_image_add_file(&img, path, 16, 0, 0x1010, &err),
	   "two sections, the second where the first ends");
	uint8_t b[8];
	ok(mt_image_read(&img, 0x100c, b, sizeof b) == 8 && !memcmp(b, code + 12, 8), "a read goes on into the next section");
	ok(mt_image_read(&img, 0x101e, b, sizeof b) == 1, "a read stops where the code ends");
	int e = 0;
	const struct mt_code_block *k = mt_image_block(&img, 0x1000, &e);
	ok(k && k->ninsn == 5 && k->end_ip == 0x100d && k->cls == ptic_cond_jump && k->len == 6 && k->direct &&
	   k->target == 0x1023, "a block runs to its branch, over EVEX/VEX code and across sections");
	ok(k && img.offs[k->offs + 1] == 3 && img.offs[k->offs + 2] == 9 && img.offs[k->offs + 4] == 13,
	   "each instruction's offset is kept");
	k = mt_image_block(&img, 0x1013, &e);
	ok(k && k->ninsn == 1 && k->cls == ptic_call && k->direct && k->target == 0x1018, "a direct call and its target");
	k = mt_image_block(&img, 0x1018, &e);
	ok(k && k->ninsn == 1 && k->cls == ptic_call && !k->direct && k->len == 6, "an indirect call");
	k = mt_image_block(&img, 0x101e, &e);
	ok(k && k->cls == ptic_return, "a return");
	ok(!mt_image_block(&img, 0x2000, &e) && e == -pte_nomap, "no section: -pte_nomap");
	/* a newer section over the old hides it, and blocks decoded before go */
	ok(!mt_image_add_file(&img, path, sizeof code - 1, 1, 0x1000, &err), "a section over the first");
	k = mt_image_block(&img, 0x1000, &e);
	ok(k && k->ninsn == 1 && k->cls == ptic_return && k->end_ip == 0x1000, "the newer section's code is walked");
	mt_image_fini(&img);
	unlink(path);
}

/* One file in many sections is one file of the image; past the files
 * mapped at once, the rest are read with pread (the same bytes). Oracle:
 * the file's own bytes. */
static void test_image_files(void)
{
	char dir[] = "/tmp/mt-unit-files-XXXXXX";
	ok(mkdtemp(dir) != NULL, "a directory for the files");
	char path[4200];
	snprintf(path, sizeof path, "%s/f", dir);
	uint8_t bytes[8192];
	for (size_t i = 0; i < sizeof bytes; i++)
		bytes[i] = (uint8_t)(i * 31 + 7);
	FILE *f = fopen(path, "wb");
	ok(f && fwrite(bytes, 1, sizeof bytes, f) == sizeof bytes && !fclose(f), "a file of known bytes");
	struct mt_image img;
	struct mt_err err = {0};
	mt_image_init(&img, "t", &err);
	int bad = 0;
	for (uint64_t i = 0; i < 5000; i++)
		bad += mt_image_add_file(&img, path, (i % 2) * 4096, 4096, 0x10000000 + 0x10000 * i, &err) != 0;
	uint8_t b[16];
	for (uint64_t i = 0; i < 5000; i += 7)
		bad += mt_image_read(&img, 0x10000000 + 0x10000 * i + 100, b, 16) != 16 ||
		       memcmp(b, bytes + (i % 2) * 4096 + 100, 16);
	ok(!bad && img.nsections == 5000 && img.nfiles == 1, "5,000 sections of one file: one file, each read right");
	mt_image_fini(&img);
	/* 4,200 files by 4,200 names (hard links): the last ones past the mapped */
	mt_image_init(&img, "t", &err);
	bad = 0;
	char name[4300];
	for (int i = 0; i < 4200; i++) {
		snprintf(name, sizeof name, "%s/l%d", dir, i);
		bad += link(path, name) != 0 || mt_image_add_file(&img, name, 0, 0, 0x10000000 + 0x10000 * (uint64_t)i, &err) != 0;
	}
	for (uint64_t i = 0; i < 4200; i++)
		bad += mt_image_read(&img, 0x10000000 + 0x10000 * i + 8000, b, 16) != 16 || memcmp(b, bytes + 8000, 16);
	ok(!bad && img.nfiles == 4200 && img.nmapped < 4200, "4,200 files, some past those mapped: each read right");
	ok(mt_image_read(&img, 0x10000000 + 0x10000 * 4199 + 8190, b, 16) == 2, "a read stops at the end of its file");
	mt_image_fini(&img);
	for (int i = 0; i < 4200; i++) {
		snprintf(name, sizeof name, "%s/l%d", dir, i);
		unlink(name);
	}
	unlink(path);
	rmdir(dir);
}

/* Function ranges from a kallsyms list (each symbol ends where the next
 * begins, the last left out), looked up where there are fewer than four:
 * each address's range worked by hand. */
static void test_func_ranges(void)
{
	char path[] = "/tmp/mt-kallsyms.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	fputs("0000000000001000 T f\n0000000000001010 T g\n0000000000001030 T h\n", f);
	fclose(f);
	struct mt_image img;
	struct mt_err err = {0};
	mt_image_init(&img, "t", &err);
	ok(mt_image_add_kallsyms(&img, path, &err) == 0 && img.nfuncs == 2, "two ranges from three symbols");
	uint64_t s = 0, e = 0;
	ok(mt_image_func_range(&img, 0x1006, &s, &e) && s == 0x1000 && e == 0x1010, "in the first range");
	ok(mt_image_func_range(&img, 0x102f, &s, &e) && s == 0x1010 && e == 0x1030, "at the last address of the second");
	ok(!mt_image_func_range(&img, 0x1030, &s, &e) && s == 0x1030 && e == UINT64_MAX, "after them: a gap to the end");
	ok(!mt_image_func_range(&img, 0xfff, &s, &e) && s == 0xfff && e == 0x1000, "before them: a gap to the first");
	mt_image_fini(&img);
	unlink(path);
}

static int cmp_range(const void *a, const void *b)
{
	const struct mt_func_range *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

/* The function ranges of a real object (libc's thousands of symbols, in
 * its symbol table's order) sorted as qsort sorts them by start, the
 * larger first where two start together (the image's own merge sort:
 * runs, merges, an odd tail); then the same ranges added again in order,
 * which the sort takes as they are. */
static void test_func_sort(void)
{
	const char *libc = NULL;
	char line[4600], path[4096] = "";
	FILE *maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof line, maps))
		if (sscanf(line, "%*s %*s %*s %*s %*s %4095s", path) == 1 && strstr(path, "/libc.so")) {
			libc = path;
			break;
		}
	if (maps)
		fclose(maps);
	struct mt_image img;
	struct mt_err err = {0};
	mt_image_init(&img, "t", &err);
	ok(libc && mt_image_add_mapping(&img, libc, 0x7f0000000000, 0x200000, 0, &err) == 0 && img.nfuncs > 1000,
	   "libc's function ranges read");
	size_t n = img.nfuncs;
	struct mt_func_range *want = malloc(n * sizeof *want);
	memcpy(want, img.funcs, n * sizeof *want);
	size_t unsorted = 0;
	for (size_t i = 1; i < n; i++)
		unsorted += cmp_range(&want[i - 1], &want[i]) > 0;
	qsort(want, n, sizeof *want, cmp_range);
	uint64_t s, e;
	mt_image_func_range(&img, 0, &s, &e);
	printf("# %zu ranges, %zu out of order as read\n", n, unsorted);
	ok(unsorted > 0 && !memcmp(img.funcs, want, n * sizeof *want), "sorted as qsort sorts them");
	mt_image_fini(&img);
	mt_image_init(&img, "t", &err);
	char ks[] = "/tmp/mt-kallsyms.XXXXXX";
	FILE *f = fdopen(mkstemp(ks), "w");
	for (size_t i = 0; i < n; i++)
		if (!i || want[i].start != want[i - 1].start)
			fprintf(f, "%016" PRIx64 " T f%zu\n", want[i].start, i);
	fclose(f);
	ok(mt_image_add_kallsyms(&img, ks, &err) == 0 && img.nfuncs > 1000, "the same starts as a kallsyms list");
	bool in_order = true;
	mt_image_func_range(&img, 0, &s, &e);
	for (size_t i = 1; i < img.nfuncs; i++)
		in_order &= img.funcs[i - 1].start < img.funcs[i].start;
	ok(in_order, "... in order, kept so");
	mt_image_fini(&img);
	unlink(ks);
	free(want);
}

int main(void)
{
	test_image_specs();
	test_func_ranges();
	test_func_sort();
	test_code_blocks();
	test_image_files();
	return tap_done();
}
