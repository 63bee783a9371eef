/* Unit tests of the saved run (synth/runfile.c), TAP output. Oracle: a run
 * built here field by field (a jmp to a nop, a ret, a PTWRITE, on one
 * thread), saved and read back equal; and that same file cut at every
 * byte, or with one field made to lie, refused with its reason and never
 * read as a run. tests/synth.bats holds the tool: a real run saved and
 * read back writes the same traces byte for byte. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/runfile.h"

#include "tap.h"

static struct mt_synth_insn insns[] = {
	{.ip = 0x1000, .target = 0x1005, .len = 5, .cls = MT_IC_JMP},
	{.ip = 0x1005, .len = 1, .cls = MT_IC_OTHER},
	{.ip = 0x1006, .len = 1, .cls = MT_IC_RET},
	{.ip = 0x1007, .len = 5, .cls = MT_IC_PTWRITE},
};

static void build(struct mt_synth_run *run)
{
	memset(run, 0, sizeof *run);
	run->pid = 4242;
	strcpy(run->comm, "prog");
	run->threads[0] = 4242;
	run->nthreads = 1;
	run->maps = calloc(1, sizeof *run->maps);
	run->nmaps = 1;
	struct mt_synth_map *m = &run->maps[0];
	m->start = 0x1000;
	m->len = 16;
	m->pgoff = 0x2000;
	m->ino = 77;
	m->maj = 8;
	m->min = 1;
	m->prot = 5;
	strcpy(m->path, "/opt/prog");
	m->build_id_size = 20;
	memset(m->build_id, 0xab, 20);
	m->bytes = malloc(16);
	for (int i = 0; i < 16; i++)
		m->bytes[i] = (uint8_t)(0x90 + i);
	static const uint64_t ips[] = {0x1000, 0x1005, 0x1006, 0x1007};
	run->nips = 4;
	run->ips = malloc(sizeof ips);
	memcpy(run->ips, ips, sizeof ips);
	run->tids = malloc(4 * sizeof *run->tids);
	for (int i = 0; i < 4; i++)
		run->tids[i] = 4242;
	for (size_t i = 0; i < sizeof insns / sizeof *insns; i++)
		mt_synth_insn_add(run, &insns[i]);
	run->ptw = calloc(1, sizeof *run->ptw);
	run->ptw[0] = (struct mt_synth_ptw){.step = 3, .payload = 42, .bytes = 8};
	run->nptw = 1;
	run->end_next = 0x100c;
	run->repaired = 2;
	run->collapsed = 3;
	run->exit_status = 7;
}

static int save(const struct mt_synth_run *run, char **buf, size_t *len)
{
	struct mt_err err = {0};
	FILE *f = open_memstream(buf, len);
	int rc = mt_synth_run_save(run, f, &err);
	fclose(f);
	return rc;
}

static int load(const char *buf, size_t len, struct mt_synth_run *run, struct mt_err *err)
{
	mt_err_clear(err);
	/* fmemopen of 0 bytes fails: a 1-byte buffer, of which 0 are the file */
	FILE *f = fmemopen((void *)(len ? buf : "x"), len ? len : 1, "rb");
	int rc = mt_synth_run_load(f, len, run, err);
	fclose(f);
	return rc;
}

static int same(const struct mt_synth_run *a, const struct mt_synth_run *b)
{
	if (a->pid != b->pid || strcmp(a->comm, b->comm) || a->nthreads != b->nthreads || a->nmaps != b->nmaps ||
	    a->nips != b->nips || a->tabn != b->tabn || a->nptw != b->nptw || a->end_next != b->end_next ||
	    a->repaired != b->repaired || a->collapsed != b->collapsed || a->exit_status != b->exit_status ||
	    a->ptw_base != b->ptw_base)
		return 0;
	const struct mt_synth_map *x = &a->maps[0], *y = &b->maps[0];
	if (x->start != y->start || x->len != y->len || x->pgoff != y->pgoff || x->ino != y->ino || x->maj != y->maj ||
	    x->min != y->min || x->prot != y->prot || strcmp(x->path, y->path) || x->build_id_size != y->build_id_size ||
	    memcmp(x->build_id, y->build_id, 20) || memcmp(x->bytes, y->bytes, x->len))
		return 0;
	if (memcmp(a->ips, b->ips, a->nips * 8) || memcmp(a->tids, b->tids, a->nips * 4))
		return 0;
	for (size_t i = 0; i < a->nips; i++) {
		const struct mt_synth_insn *p = mt_synth_insn_at(a, a->ips[i]), *q = mt_synth_insn_at(b, a->ips[i]);
		if (!q || p->target != q->target || p->len != q->len || p->cls != q->cls || p->rep != q->rep)
			return 0;
	}
	return a->ptw[0].step == b->ptw[0].step && a->ptw[0].payload == b->ptw[0].payload &&
	       a->ptw[0].bytes == b->ptw[0].bytes;
}

/* The saved file with the bytes at off replaced by v (n bytes), read. */
static int load_patched(const char *buf, size_t len, size_t off, const void *v, size_t n, struct mt_err *err)
{
	char *c = malloc(len);
	memcpy(c, buf, len);
	memcpy(c + off, v, n);
	struct mt_synth_run run;
	int rc = load(c, len, &run, err);
	if (!rc)
		mt_synth_run_free(&run);
	free(c);
	return rc;
}

int main(void)
{
	struct mt_synth_run run, back;
	struct mt_err err = {0};
	build(&run);
	char *buf = NULL;
	size_t len = 0;
	ok(save(&run, &buf, &len) == 0 && len > 0, "a run is saved");
	ok(!memcmp(buf, "MTSYNRUN", 8), "the file starts with its magic");
	ok(load(buf, len, &back, &err) == 0, "and read back");
	ok(same(&run, &back), "every field read back as it was saved");
	mt_synth_run_free(&back);

	/* cut at every byte: never a run; a count then holds more than is
	 * left, or the cut is said as one */
	int refused = 0, said = 0;
	for (size_t n = 0; n < len; n++) {
		if (load(buf, n, &back, &err)) {
			refused++;
			said += (err.code == MT_ETRUNC && strstr(err.msg, "cut short")) ||
				(err.code == MT_EFORMAT && strstr(err.msg, "more than the file holds")) ||
				(err.code == MT_EFORMAT && strstr(err.msg, "past the file"));
		} else {
			mt_synth_run_free(&back);
		}
	}
	ok(refused == (int)len, "the file cut at any byte is refused");
	ok(said == (int)len, "each cut is said as one, or as a count past the end");
	ok(load(buf, len - 2, &back, &err) == MT_ETRUNC && strstr(err.msg, "cut short in the end mark"),
	   "a cut in the end mark names it");

	/* offsets of the fields, as the writer lays them out */
	size_t o_version = 8, o_nthreads = 8 + 4 + 4 + 16, o_tid0 = o_nthreads + 4, o_nmaps = o_tid0 + 4;
	size_t o_map = o_nmaps + 8, o_plen = o_map + 32 + 12, o_mlen = o_map + 8;
	size_t o_nips = o_plen + 4 + strlen("/opt/prog") + 1 + 20 + 16;
	size_t o_tids = o_nips + 8 + 4 * 8, o_ninsn = o_tids + 4 * 4, o_insn0 = o_ninsn + 8;
	size_t o_ptw = o_insn0 + 4 * 19 + 8 + 8; /* the first PTWRITE's step */
	/* the instructions are in the table's order: the jmp's */
	size_t o_jmp = o_insn0;
	while (o_jmp < o_insn0 + 4 * 19 && memcmp(buf + o_jmp, &insns[0].ip, 8))
		o_jmp += 19;
	ok(o_jmp < o_insn0 + 4 * 19, "the jmp is among the instructions saved");
	uint64_t n0 = 0;
	ok(load_patched(buf, len, 0, "MTSYNRUX", 8, &err) == MT_EFORMAT && strstr(err.msg, "not a run saved"),
	   "another magic: not a saved run");
	uint32_t v2 = 2;
	ok(load_patched(buf, len, o_version, &v2, 4, &err) == MT_EFORMAT && strstr(err.msg, "version 2"),
	   "another version: said with both versions");
	uint32_t t65 = 65, t0 = 0;
	ok(load_patched(buf, len, o_nthreads, &t65, 4, &err) == MT_EFORMAT &&
	   load_patched(buf, len, o_nthreads, &t0, 4, &err) == MT_EFORMAT, "0 or 65 threads: refused");
	uint32_t other = 99;
	ok(load_patched(buf, len, o_tid0, &other, 4, &err) == MT_EFORMAT && strstr(err.msg, "not the pid"),
	   "a first thread that is not the pid: refused");
	uint64_t huge = UINT64_MAX / 2;
	ok(load_patched(buf, len, o_nmaps, &huge, 8, &err) == MT_EFORMAT &&
	   strstr(err.msg, "more than the file holds"), "a mapping count past the file: refused before allocating");
	ok(load_patched(buf, len, o_mlen, &huge, 8, &err) == MT_EFORMAT, "a mapping's length past the file: refused");
	uint32_t plen = 5000;
	ok(load_patched(buf, len, o_plen, &plen, 4, &err) == MT_EFORMAT && strstr(err.msg, "a path of 5000"),
	   "a path longer than a path: refused");
	ok(load_patched(buf, len, o_nips, &huge, 8, &err) == MT_EFORMAT, "a step count past the file: refused");
	ok(load_patched(buf, len, o_tids + 4, &other, 4, &err) == MT_EFORMAT && strstr(err.msg, "not one of the run's"),
	   "a step on a thread the run does not have: refused");
	uint64_t elsewhere = 0x1001;
	ok(load_patched(buf, len, o_nips + 8 + 8, &elsewhere, 8, &err) == MT_EFORMAT &&
	   strstr(err.msg, "no instruction at 0x1001"), "a step where no instruction is: refused");
	uint64_t target = 0x1006;
	ok(load_patched(buf, len, o_jmp + 8, &target, 8, &err) == MT_EFORMAT && strstr(err.msg, "cannot follow"),
	   "a jmp whose target is not the next step: refused (the writer would encode a lie)");
	uint64_t outside = 0x5000;
	ok(load_patched(buf, len, o_insn0, &outside, 8, &err) == MT_EFORMAT, "an instruction outside the mappings: refused");
	uint8_t unsup = MT_IC_UNSUPPORTED;
	ok(load_patched(buf, len, o_insn0 + 17, &unsup, 1, &err) == MT_EFORMAT && strstr(err.msg, "cannot be synthesized"),
	   "an instruction of a class that cannot be synthesized: refused");
	uint64_t past = 9;
	ok(load_patched(buf, len, o_ptw, &past, 8, &err) == MT_EFORMAT && strstr(err.msg, "PTWRITE 0"),
	   "a PTWRITE past the steps: refused");
	uint64_t notptw = 2;
	ok(load_patched(buf, len, o_ptw, &notptw, 8, &err) == MT_EFORMAT && strstr(err.msg, "not a PTWRITE"),
	   "a PTWRITE at a step that is none: refused");
	ok(load_patched(buf, len, len - 4, "END!", 4, &err) == MT_EFORMAT && strstr(err.msg, "no end mark"),
	   "no end mark: refused");
	char *longer = malloc(len + 3);
	memcpy(longer, buf, len);
	memcpy(longer + len, "xyz", 3);
	ok(load(longer, len + 3, &back, &err) == MT_EFORMAT && strstr(err.msg, "3 bytes after the end mark"),
	   "bytes after the end mark: refused");
	free(longer);
	ok(load_patched(buf, len, o_nips, &n0, 8, &err) != 0, "no steps: refused");

	mt_synth_run_free(&run);
	free(buf);
	return tap_done();
}
