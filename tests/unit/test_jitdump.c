/* Unit tests of the jitdump reader (names/jitdump.c), TAP output. Oracle:
 * dumps built here as perf's tools/perf/util/jitdump.h lays them out (a
 * 40-byte header, records of u32 id, u32 size, u64 time; a code load's
 * pid, tid, vma, code address, size and index, its name, its code). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names/jitdump.h"

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
	/* not a dump; the other byte order */
	rc = read_dump((const uint8_t *)"this is no jitdump at all, not at all, no", 41, &jd, &err);
	ok(rc == MT_EFORMAT && strstr(err.msg, "not a jitdump"), "no JiTD header: refused by name");
	mt_err_clear(&err);
	n = header(b, 0x4454694A);
	rc = read_dump(b, n, &jd, &err);
	ok(rc == MT_EUNSUP && strstr(err.msg, "other byte order"), "a byte-swapped dump: said");
	return tap_done();
}
