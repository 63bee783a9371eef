/* Unit tests of the jitdump reader (objects/jitdump.c), TAP output. Oracle:
 * dumps built here as perf's tools/perf/util/jitdump.h lays them out (a
 * 40-byte header, records of u32 id, u32 size, u64 time; a code load's
 * pid, tid, vma, code address, size and index, its name, its code). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "objects/jitdump.h"

#include "tap.h"

static size_t put(uint8_t *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return n;
}

static size_t header(uint8_t *p, uint32_t magic)
{
	uint32_t h[6] = {magic, 1, 40, 62, 0, 4242};
	uint64_t t[2] = {0, 0};
	size_t n = put(p, h, sizeof h);
	return n + put(p + n, t, sizeof t);
}

static size_t load(uint8_t *p, uint64_t time, uint64_t addr, uint64_t size, uint64_t index, const char *name)
{
	size_t nl = strlen(name) + 1;
	uint32_t pre[2] = {0, (uint32_t)(16 + 40 + nl + size)};
	uint32_t ids[2] = {4242, 4243};
	uint64_t f[4] = {addr, addr, size, index};
	size_t n = put(p, pre, 8);
	n += put(p + n, &time, 8);
	n += put(p + n, ids, 8);
	n += put(p + n, f, sizeof f);
	n += put(p + n, name, nl);
	memset(p + n, 0xcc, size); /* the code */
	return n + size;
}

static size_t move(uint8_t *p, uint64_t time, uint64_t from, uint64_t to, uint64_t size, uint64_t index)
{
	uint32_t pre[2] = {1, 16 + 48};
	uint32_t ids[2] = {4242, 4243};
	uint64_t f[5] = {to, from, to, size, index};
	size_t n = put(p, pre, 8);
	n += put(p + n, &time, 8);
	n += put(p + n, ids, 8);
	return n + put(p + n, f, sizeof f);
}

/* DEBUG_INFO: code_addr, then each entry's address, line and file (NULL:
 * "\xff", the one before's); count: what the record says it holds. */
static size_t debug(uint8_t *p, uint64_t code_addr, uint64_t count, size_t n_entries, const uint64_t *addr,
		    const int32_t *line, const char *const *file)
{
	size_t size = 16 + 16;
	for (size_t i = 0; i < n_entries; i++)
		size += 16 + (file[i] ? strlen(file[i]) + 1 : 2);
	uint32_t pre[2] = {2, (uint32_t)size};
	uint64_t time = 50;
	size_t n = put(p, pre, 8);
	n += put(p + n, &time, 8);
	n += put(p + n, &code_addr, 8);
	n += put(p + n, &count, 8);
	for (size_t i = 0; i < n_entries; i++) {
		int32_t discrim = 0;
		n += put(p + n, &addr[i], 8);
		n += put(p + n, &line[i], 4);
		n += put(p + n, &discrim, 4);
		n += file[i] ? put(p + n, file[i], strlen(file[i]) + 1) : put(p + n, "\xff", 2);
	}
	return n;
}

/* The line at addr of jd's code k: "FILE:LINE", or "-" for none. */
static const char *line_at(const struct mt_jitdump *jd, size_t k, uint64_t addr)
{
	static char buf[256];
	const struct mt_jit_line *l = mt_jitdump_line(jd, &jd->code[k], addr);
	if (!l)
		return "-";
	snprintf(buf, sizeof buf, "%s:%d", l->file, (int)l->line);
	return buf;
}

static int read_dump(const uint8_t *b, size_t n, struct mt_jitdump *jd, struct mt_err *err)
{
	char path[] = "/tmp/mt-jitdump-test.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, b, n) != (ssize_t)n)
		return -1;
	close(fd);
	int rc = mt_jitdump_read(jd, path, err);
	unlink(path);
	return rc;
}

static void test_debug_info(void)
{
	static uint8_t b[4096];
	struct mt_jitdump jd;
	struct mt_err err = {0};
	const uint64_t A = 0x7f0000001000, B = 0x7f0000002000;
	/* A's entries out of order, the file said once then "\xff"; another
	 * file; B's entries, then a load at another address: not B's */
	const uint64_t aa[] = {A + 0x10, A, A + 0x4, A + 0x20};
	const int32_t al[] = {12, 10, 11, 30};
	const char *const af[] = {"/s/a.js", NULL, NULL, "/s/b.js"};
	const uint64_t ba[] = {B, B + 8};
	const int32_t bl[] = {5, 6};
	const char *const bf[] = {"/s/c.js", NULL};
	size_t n = header(b, 0x4A695444);
	n += debug(b + n, A, 4, 4, aa, al, af);
	n += load(b + n, 100, A, 64, 1, "first");
	n += debug(b + n, B, 2, 2, ba, bl, bf);
	n += load(b + n, 200, B + 0x100, 32, 2, "elsewhere");
	n += load(b + n, 300, B, 32, 3, "second");
	int rc = read_dump(b, n, &jd, &err);
	bool good = rc == 0 && jd.ncode == 3;
	ok(good && !strcmp(line_at(&jd, 0, A), "/s/a.js:10") && !strcmp(line_at(&jd, 0, A + 3), "/s/a.js:10") &&
	   !strcmp(line_at(&jd, 0, A + 4), "/s/a.js:11") && !strcmp(line_at(&jd, 0, A + 0x1f), "/s/a.js:12") &&
	   !strcmp(line_at(&jd, 0, A + 0x20), "/s/b.js:30") && !strcmp(line_at(&jd, 0, A + 63), "/s/b.js:30"),
	   "debug entries: an address's line is the entry at or below it, \\xff the file before's, in any order");
	ok(good && !strcmp(line_at(&jd, 0, A + 64), "-") && !strcmp(line_at(&jd, 0, A - 1), "-"),
	   "outside the code: no line");
	ok(good && !strcmp(line_at(&jd, 1, B + 0x100), "-") && !strcmp(line_at(&jd, 2, B + 8), "-"),
	   "entries go to the next load only where it is their code's: not to another, nor past it");
	mt_jitdump_free(&jd);
	/* a move: the entries with the code */
	n = header(b, 0x4A695444);
	n += debug(b + n, A, 4, 4, aa, al, af);
	n += load(b + n, 100, A, 64, 1, "first");
	n += move(b + n, 200, A, B, 64, 1);
	rc = read_dump(b, n, &jd, &err);
	ok(rc == 0 && jd.ncode == 1 && !strcmp(line_at(&jd, 0, B + 4), "/s/a.js:11") &&
	   !strcmp(line_at(&jd, 0, A + 4), "-"), "a moved load: its lines at its new address");
	mt_jitdump_free(&jd);
	/* a count that lies (a billion entries in a record of four), a name
	 * that is not ended: the entries before it kept, the loads too */
	n = header(b, 0x4A695444);
	n += debug(b + n, A, 1000000000, 4, aa, al, af);
	n += load(b + n, 100, A, 64, 1, "first");
	rc = read_dump(b, n, &jd, &err);
	ok(rc == 0 && jd.ncode == 1 && jd.nlines == 4 && !strcmp(line_at(&jd, 0, A + 0x20), "/s/b.js:30"),
	   "an entry count that lies: the record's entries, no more");
	mt_jitdump_free(&jd);
	n = header(b, 0x4A695444);
	size_t d = n;
	n += debug(b + n, A, 4, 4, aa, al, af);
	/* the last name's NUL and the record end: "/s/b.js" unended */
	uint32_t size;
	memcpy(&size, b + d + 4, 4);
	size -= 1;
	memcpy(b + d + 4, &size, 4);
	n -= 1;
	n += load(b + n, 100, A, 64, 1, "first");
	rc = read_dump(b, n, &jd, &err);
	ok(rc == 0 && jd.ncode == 1 && jd.nlines == 3 && !strcmp(line_at(&jd, 0, A + 0x20), "/s/a.js:12") &&
	   !jd.damaged_at, "a file name not ended in its record: the entries before it");
	mt_jitdump_free(&jd);
}

int main(void)
{
	static uint8_t b[4096];
	size_t n = header(b, 0x4A695444);
	n += load(b + n, 100, 0x7f0000001000, 64, 1, "JS:*hot x.js:1");
	n += load(b + n, 200, 0x7f0000002000, 32, 2, "JS:^cold x.js:5");
	n += move(b + n, 300, 0x7f0000002000, 0x7f0000003000, 32, 2);
	struct mt_jitdump jd;
	struct mt_err err = {0};
	int rc = read_dump(b, n, &jd, &err);
	ok(rc == 0 && jd.pid == 4242 && jd.ncode == 2 && jd.code[0].start == 0x7f0000001000 && jd.code[0].size == 64 &&
	   !strcmp(jd.code[0].name, "JS:*hot x.js:1") && jd.code[0].time == 100 && !jd.damaged_at,
	   "a code load: its address, size, time and name");
	ok(rc == 0 && jd.code[0].code_offset && jd.code[0].code_offset + 64 <= n &&
	   b[jd.code[0].code_offset] == 0xcc && b[jd.code[0].code_offset + 63] == 0xcc &&
	   !strcmp((const char *)b + jd.code[0].code_offset - 15, "JS:*hot x.js:1"),
	   "a code load: where its code bytes lie in the file, right after its name");
	ok(rc == 0 && jd.ncode == 2 && jd.code[1].start == 0x7f0000003000 && jd.code[1].time == 300 &&
	   !strcmp(jd.code[1].name, "JS:^cold x.js:5"), "a code move: the load of its index at its new address");
	mt_jitdump_free(&jd);
	/* a last record that claims more than the file holds */
	size_t whole = n;
	uint32_t lie[2] = {0, 1u << 30};
	n += put(b + n, lie, 8);
	n += put(b + n, "12345678", 8);
	rc = read_dump(b, n, &jd, &err);
	ok(rc == 0 && jd.ncode == 2 && jd.damaged_at == whole, "a record lying about its size: the loads before it, "
	   "where it broke off");
	mt_jitdump_free(&jd);
	/* a load that claims more code than its record holds: named, no bytes */
	n = header(b, 0x4A695444);
	size_t at = n;
	n += load(b + n, 100, 0x7f0000001000, 64, 1, "short");
	uint64_t big = 1000;
	memcpy(b + at + 16 + 24, &big, 8);
	rc = read_dump(b, n, &jd, &err);
	ok(rc == 0 && jd.ncode == 1 && jd.code[0].size == 1000 && !jd.code[0].code_offset,
	   "a load claiming more code than its record holds: no code bytes taken");
	mt_jitdump_free(&jd);
	/* not a dump; the other byte order */
	rc = read_dump((const uint8_t *)"this is no jitdump at all, not at all, no", 41, &jd, &err);
	ok(rc == MT_EFORMAT && strstr(err.msg, "not a jitdump"), "no JiTD header: refused by name");
	mt_err_clear(&err);
	n = header(b, 0x4454694A);
	rc = read_dump(b, n, &jd, &err);
	ok(rc == MT_EUNSUP && strstr(err.msg, "other byte order"), "a byte-swapped dump: said");
	test_debug_info();
	return tap_done();
}
