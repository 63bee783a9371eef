/* Unit tests of runs of conditional branches (trace/runcache.c), TAP
 * output. The oracle: the runs below are worked by hand from the code's
 * bytes (encodings from the SDM, offsets counted by hand), as the decoder's
 * walk would take them one block at a time. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/image.h"
#include "trace/runcache.h"

#include "tap.h"

/* Two functions: f at 0x1000, g at 0x1010 (kallsyms h at 0x1020 ends g). */
static const unsigned char code[0x20] = {
	0x74, 0x02,       /* 1000: jz 1004     (within f) */
	0x90, 0x90,       /* 1002: nop; nop */
	0x75, 0xfa,       /* 1004: jnz 1000 */
	0x74, 0x08,       /* 1006: jz 1010     (into g: reported when taken) */
	0xeb, 0x02,       /* 1008: jmp 100c    (within f: reports nothing) */
	0x90, 0x90,       /* 100a: nop; nop    (jumped over) */
	0x75, 0xf2,       /* 100c: jnz 1000 */
	0xc3, 0x90,       /* 100e: ret */
	0x90, 0xc3,       /* 1010: g: nop; ret */
};

static int same(const struct mt_run *r, unsigned used, unsigned insns, unsigned long long last,
		unsigned long long next, unsigned blocks)
{
	if (!r)
		return 0;
	if (r->used != used || (used && (r->insns != insns || r->last_ip != last || r->next_ip != next ||
					   r->blocks != blocks))) {
		printf("# used %u insns %u last %#llx next %#llx blocks %u\n", r->used, r->insns,
		       (unsigned long long)r->last_ip, (unsigned long long)r->next_ip, r->blocks);
		return 0;
	}
	return 1;
}

int main(void)
{
	char dir[] = "/tmp/mt-runcache.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char bin[64], syms[64], spec[96];
	snprintf(bin, sizeof bin, "%s/code", dir);
	snprintf(syms, sizeof syms, "%s/kallsyms", dir);
	FILE *f = fopen(bin, "wb");
	fwrite(code, 1, sizeof code, f);
	fclose(f);
	f = fopen(syms, "w");
	fputs("0000000000001000 T f\n0000000000001010 T g\n0000000000001020 T h\n", f);
	fclose(f);
	snprintf(spec, sizeof spec, "%s@0x1000", bin);

	struct mt_image img;
	struct mt_err err = {0};
	ok(mt_image_init(&img, "t", &err) == 0 && mt_image_add_spec(&img, spec, &err) == 0 &&
	   mt_image_add_kallsyms(&img, syms, &err) == 0, "an image of two functions");
	uint32_t gen = img.generation;
	struct mt_runcache *rc = &img.runs;

	/* bits: the first in bit nbits - 1; want: used, insns, last, next, blocks */
	static const struct {
		uint64_t ip;
		unsigned bits, nbits, used, insns;
		uint64_t last, next;
		unsigned blocks;
		const char *name;
	} cases[] = {
		{0x1000, 0x2, 2, 2, 2, 0x1004, 0x1006, 2, "taken, then not taken: two blocks, two bits, on after the second branch"},
		{0x1000, 0x0, 1, 1, 1, 0x1000, 0x1002, 1, "the bits run out at a conditional branch: the run ends before it"},
		{0x1000, 0xff, 8, 8, 8, 0x1004, 0x1000, 8, "a loop taken 8 times: all 8 bits"},
		{0x1006, 0x1, 1, 0, 0, 0, 0, 0, "a branch taken into another function is reported: no run"},
		{0x1006, 0x1, 2, 2, 3, 0x100c, 0x1000, 3, "not taken, a jump within the function, taken: the jump is passed, no bit"},
		{0x1006, 0x0, 2, 2, 3, 0x100c, 0x100e, 3, "the run ends at its last conditional branch, before the return"},
		{0x100e, 0x1, 1, 0, 0, 0, 0, 0, "a return: no run"},
		{0x9000, 0x1, 1, 0, 0, 0, 0, 0, "no code mapped: no run"},
		{0x1002, 0x4, 3, 3, 7, 0x1004, 0x1006, 3, "taken back, not taken, not taken: blocks of one and three instructions"},
		{0x1002, 0x1, 3, 3, 6, 0x100c, 0x1000, 4, "not taken twice, a jump passed, taken"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		ok(same(mt_runcache_find(rc, &img, gen, cases[i].ip, cases[i].bits, cases[i].nbits), cases[i].used,
			cases[i].insns, cases[i].last, cases[i].next, cases[i].blocks),
		   cases[i].name);

	const struct mt_run *a = mt_runcache_find(rc, &img, gen, 0x1000, 0x2, 2);
	const struct mt_run *b = mt_runcache_find(rc, &img, gen, 0x1000, 0x2, 2);
	ok(a && a == b && a->generation == gen, "a run found again is the one kept");
	b = mt_runcache_find(rc, &img, gen, 0x1000, 0x2, 3);
	ok(b && b != a && same(b, 3, 5, 0x1000, 0x1002, 3), "more bits available: another run");

	/* many starts (no code there: runs of nothing, kept all the same)
	 * put runs out of their slots: the table grows, and finds anew */
	unsigned before = rc->bits;
	for (uint64_t k = 0; k < 20000; k++)
		mt_runcache_find(rc, &img, gen, 0x100000 + k, 1, 1);
	ok(before == MT_RUNCACHE_MIN_BITS && rc->bits > before && rc->bits <= MT_RUNCACHE_MAX_BITS,
	   "runs putting out others: the table grows");
	ok(same(mt_runcache_find(rc, &img, gen, 0x1000, 0x2, 2), 2, 2, 0x1004, 0x1006, 2), "and finds the runs again");

	/* adding code flushes the blocks: the runs found before are not taken */
	char spec2[96];
	snprintf(spec2, sizeof spec2, "%s@0x5000", bin);
	ok(mt_image_add_spec(&img, spec2, &err) == 0 && img.generation != gen, "new code: a new generation");
	const struct mt_run *c = mt_runcache_find(rc, &img, img.generation, 0x1000, 0x2, 2);
	ok(c && c->generation == img.generation && same(c, 2, 2, 0x1004, 0x1006, 2),
	   "a run of the old generation is found anew");
	ok(same(mt_runcache_find(rc, &img, img.generation, 0x5000, 0x2, 2), 2, 2, 0x5004, 0x5006, 2),
	   "and runs in the new code");

	mt_image_fini(&img);
	unlink(bin);
	unlink(syms);
	rmdir(dir);
	return tap_done();
}
