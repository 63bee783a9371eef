/* Unit tests of the expansion of perf record -z batches
 * (trace/perfexpand.c), TAP output. Oracle: inputs built here from plain
 * records compressed with libzstd (as perf does), whose expansion must
 * give back those very records, in their places. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "trace/perfdata.h"
#include "trace/perfexpand.h"

#include "tap.h"

/* A record of `type` and `size` bytes whose body is the byte `fill`. */
static size_t put_record(uint8_t *p, uint32_t type, uint16_t size, uint8_t fill)
{
	memcpy(p, &type, 4);
	memset(p + 4, 0, 2);
	memcpy(p + 6, &size, 2);
	memset(p + 8, fill, size - 8u);
	return size;
}

/* A COMPRESSED record holding raw[0, n) as one zstd frame. */
static size_t put_batch(uint8_t *p, const uint8_t *raw, size_t n)
{
	size_t z = ZSTD_compress(p + 8, 4096, raw, n, 3);
	uint32_t type = MT_REC_COMPRESSED;
	uint16_t size = (uint16_t)(8 + z);
	memcpy(p, &type, 4);
	memset(p + 4, 0, 2);
	memcpy(p + 6, &size, 2);
	return size;
}

static uint8_t *expanded(const uint8_t *in, size_t len, bool pipe, uint64_t doff, uint64_t dend, size_t *out_len,
			 struct mt_perfexpand_stats *st)
{
	int fd;
	struct mt_err err = {0};
	if (mt_perfexpand(in, len, pipe, doff, dend, NULL, 0, 0, &fd, out_len, st, "test", &err))
		return NULL;
	uint8_t *b = malloc(*out_len);
	if (pread(fd, b, *out_len, 0) != (ssize_t)*out_len) {
		free(b);
		b = NULL;
	}
	close(fd);
	return b;
}

/* Pipe mode: a COMM (uncompressed), then three records in two batches, the
 * second record cut between them, then a FINISHED_ROUND. */
static void test_pipe_spanning(void)
{
	uint8_t plain[4096], in[8192];
	size_t p = 0, i = 0;
	memcpy(plain, "PERFILE2\x10\0\0\0\0\0\0\0", 16);
	p = 16;
	p += put_record(plain + p, MT_REC_COMM, 40, 0xc0);
	size_t recs = p;
	p += put_record(plain + p, MT_REC_SAMPLE, 48, 0x11);
	p += put_record(plain + p, MT_REC_SAMPLE, 200, 0x22);
	p += put_record(plain + p, MT_REC_MMAP2, 96, 0x33);
	size_t recs_end = p;
	p += put_record(plain + p, MT_REC_FINISHED_ROUND, 8, 0);
	memcpy(in, plain, recs);
	i = recs;
	size_t cut = 48 + 100; /* inside the second sample */
	i += put_batch(in + i, plain + recs, cut);
	i += put_batch(in + i, plain + recs + cut, recs_end - recs - cut);
	memcpy(in + i, plain + recs_end, p - recs_end);
	i += p - recs_end;
	ok(mt_perfexpand_needed(in, 16, i) && !mt_perfexpand_needed(plain, 16, p), "compressed records are found, "
	   "none in the plain input");
	struct mt_perfexpand_stats st;
	size_t n = 0;
	uint8_t *out = expanded(in, i, true, 16, i, &n, &st);
	ok(out && n == p && !memcmp(out, plain, p), "a record continued into the next batch: the plain records back, "
	   "in their places");
	ok(st.batches == 2 && st.batches_lost == 0 && st.bytes_out == recs_end - recs && !st.damage[0],
	   "two batches read, their bytes counted, no damage");
	free(out);

	/* the second batch damaged: the first batch's whole records kept,
	 * the cut one lost, what follows the batches kept */
	uint8_t bad[8192];
	memcpy(bad, in, i);
	uint16_t first_size;
	memcpy(&first_size, in + recs + 6, 2);
	size_t second = recs + first_size;
	bad[second + 8 + 4] ^= 0xff; /* the second frame's header */
	out = expanded(bad, i, true, 16, i, &n, &st);
	ok(out && n == recs + 48 + (p - recs_end) && !memcmp(out, plain, recs + 48) &&
	   !memcmp(out + recs + 48, plain + recs_end, p - recs_end), "a damaged batch: the records before it, and "
	   "the records after the batches");
	ok(st.batches == 2 && st.batches_lost == 1 && st.records_cut == 100 && strstr(st.damage, "zstd: ") &&
	   strstr(st.damage, "offset"), "the damage said: which batch, how much of a record was cut");
	free(out);
}

/* File mode: the data size and the feature table's offsets move with the
 * data; the attr section before the data does not. */
static void test_file_header(void)
{
	uint8_t in[8192] = {0}, raw[1024];
	memcpy(in, "PERFILE2", 8);
	uint64_t v = 104;
	memcpy(in + 8, &v, 8);
	v = 64 + 16;
	memcpy(in + 16, &v, 8); /* attr_size */
	v = 104;
	memcpy(in + 24, &v, 8); /* attrs */
	v = 80;
	memcpy(in + 32, &v, 8);
	uint64_t doff = 184;
	memcpy(in + 40, &doff, 8);
	in[72 + MT_FEAT_COMPRESSED / 8] |= 1u << (MT_FEAT_COMPRESSED % 8);
	size_t r = 0;
	r += put_record(raw + r, MT_REC_SAMPLE, 64, 0x44);
	r += put_record(raw + r, MT_REC_SAMPLE, 64, 0x55);
	size_t dsize = put_batch(in + doff, raw, r);
	memcpy(in + 48, &dsize, 8);
	/* the table: one entry (bit 27) pointing at 8 bytes after it */
	uint64_t ft = doff + dsize, foff = ft + 16, fsz = 8;
	memcpy(in + ft, &foff, 8);
	memcpy(in + ft + 8, &fsz, 8);
	memcpy(in + foff, "FEATURE!", 8);
	size_t len = foff + 8, n = 0;
	struct mt_perfexpand_stats st;
	uint8_t *out = expanded(in, len, false, doff, doff + dsize, &n, &st);
	uint64_t nd = 0, nfoff = 0;
	if (out) {
		memcpy(&nd, out + 48, 8);
		memcpy(&nfoff, out + doff + nd, 8);
	}
	ok(out && nd == r && !memcmp(out + doff, raw, r) && nfoff == doff + r + 16 && nfoff + 8 == n &&
	   !memcmp(out + nfoff, "FEATURE!", 8), "file mode: data size and feature offsets moved by what the data grew");
	/* and the reader takes it: two samples, then the end */
	struct mt_perfdata pd;
	struct mt_err err = {0};
	int rc = mt_perfdata_open_mem(&pd, in, len, "mem", &err);
	struct mt_perf_record rec;
	int a = mt_perfdata_next(&pd, &rec, &err), b = mt_perfdata_next(&pd, &rec, &err);
	bool second = rec.type == MT_REC_SAMPLE && rec.body[0] == 0x55;
	int c = mt_perfdata_next(&pd, &rec, &err);
	ok(rc == 0 && pd.expanded && pd.zstd.batches == 1 && a == 1 && b == 1 && second && c == 0,
	   "mt_perfdata_open_mem expands a file that says it is compressed");
	mt_perfdata_close(&pd);
	free(out);
}

/* perf record --threads: data.N files after the data section, each its
 * own zstd stream; one cut inside its last record. */
static void test_parts(void)
{
	uint8_t base[256], a[4096], b[256], raw[512], want[4096];
	memcpy(base, "PERFILE2\x10\0\0\0\0\0\0\0", 16);
	size_t bl = 16 + put_record(base + 16, MT_REC_COMM, 32, 0x01);
	size_t al = put_record(a, MT_REC_SAMPLE, 40, 0x02);
	size_t rl = put_record(raw, MT_REC_SAMPLE, 56, 0x03);
	al += put_batch(a + al, raw, rl);
	size_t blen = put_record(b, MT_REC_MMAP2, 80, 0x04);
	put_record(b + blen, MT_REC_SAMPLE, 64, 0x05);
	size_t bcut = blen + 30; /* the second record cut */
	size_t wl = 0;
	memcpy(want, base, bl);
	wl = bl;
	memcpy(want + wl, a, 40);
	wl += 40;
	memcpy(want + wl, raw, rl);
	wl += rl;
	memcpy(want + wl, b, blen);
	wl += blen;
	struct mt_perfexpand_part parts[] = {{a, al, "d/data.0"}, {b, bcut, "d/data.1"}};
	int fd;
	size_t n = 0;
	struct mt_perfexpand_stats st;
	struct mt_err err = {0};
	int rc = mt_perfexpand(base, bl, true, 16, bl, parts, 2, 0, &fd, &n, &st, "d/data", &err);
	uint8_t out[4096] = {0};
	bool same = !rc && n == wl && pread(fd, out, n, 0) == (ssize_t)n && !memcmp(out, want, wl);
	if (!rc)
		close(fd);
	ok(same, "data.N after the data section: their whole records, batches expanded, in order");
	ok(st.parts == 2 && st.parts_bytes == al + bcut && st.parts_cut == 30 && st.batches == 1 &&
	   strstr(st.part_damage, "d/data.1 ends inside a record at offset 80 (30 bytes of it)"),
	   "a data.N cut inside a record: its whole records kept, the cut said");
}

/* A batch that gives more than the ring buffer perf compressed it from
 * (HEADER_COMPRESSED's mmap_len; perf fails past it): not expanded. */
static void test_batch_bound(void)
{
	static uint8_t raw[256 << 10], in[64 << 10];
	size_t r = 0;
	while (r + 4096 <= sizeof raw)
		r += put_record(raw + r, MT_REC_SAMPLE, 4096, 0);
	memcpy(in, "PERFILE2\x10\0\0\0\0\0\0\0", 16);
	size_t z = ZSTD_compress(in + 16 + 8, sizeof in - 24, raw, r, 3);
	uint32_t type = MT_REC_COMPRESSED;
	uint16_t size = (uint16_t)(8 + z);
	memcpy(in + 16, &type, 4);
	memcpy(in + 22, &size, 2);
	size_t len = 16 + size;
	int fd;
	size_t n;
	struct mt_perfexpand_stats st;
	struct mt_err err = {0};
	int rc = mt_perfexpand(in, len, true, 16, len, NULL, 0, 4096, &fd, &n, &st, "t", &err);
	if (!rc)
		close(fd);
	ok(!rc && st.batches_lost == 1 && strstr(st.damage, "more than the 69632 bytes of the recording's ring buffer"),
	   "a batch past its ring buffer's size: refused, said");
	rc = mt_perfexpand(in, len, true, 16, len, NULL, 0, 512 << 10, &fd, &n, &st, "t", &err);
	if (!rc)
		close(fd);
	ok(!rc && st.batches_lost == 0 && n == 16 + r, "the same batch within a larger ring buffer: expanded");
}

int main(void)
{
	test_batch_bound();
	test_parts();
	test_pipe_spanning();
	test_file_header();
	return tap_done();
}
