/* perfexpand: zstd-compressed perf.data records expanded (perfexpand.h). */
#define _GNU_SOURCE
#include "trace/perfexpand.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "trace/perfdata.h"

#define FILE_HEADER_SIZE 104
#define OUT_BUF (1u << 20)
/* a record held back for the next batch is at most a header's u16 size,
 * or an AUXTRACE buffer no larger than this (none is, from perf) */
#define MAX_PENDING ((uint64_t)1 << 30)

/* The record at p (up to end): its whole size, the AUXTRACE payload
 * included; 0 when its header is broken or it runs past end. */
static uint64_t record_span(const uint8_t *p, uint64_t avail)
{
	if (avail < 8)
		return 0;
	uint32_t type = mt_rd32(p);
	uint16_t size = mt_rd16(p + 6);
	if (size < 8 || size > avail)
		return 0;
	uint64_t span = size;
	if (type == MT_REC_AUXTRACE) {
		if (size < 8 + 40)
			return 0;
		uint64_t payload = mt_rd64(p + 8);
		if (payload > avail - span)
			return 0;
		span += payload;
	}
	return span;
}

bool mt_perfexpand_needed(const uint8_t *base, uint64_t data_off, uint64_t data_end)
{
	for (uint64_t pos = data_off; pos < data_end;) {
		uint32_t type = data_end - pos >= 8 ? mt_rd32(base + pos) : 0;
		if (type == MT_REC_COMPRESSED || type == MT_REC_COMPRESSED2)
			return true;
		uint64_t span = record_span(base + pos, data_end - pos);
		if (!span) {
			/* an AUXTRACE cut short still has its header: the rest is
			 * payload, not records */
			return false;
		}
		pos += span;
	}
	return false;
}

struct out {
	int fd;
	uint8_t *buf;
	size_t n;
	uint64_t written;
	int err; /* errno of the first failed write */
};

static void out_flush(struct out *o)
{
	size_t done = 0;
	while (done < o->n && !o->err) {
		ssize_t w = write(o->fd, o->buf + done, o->n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			o->err = w < 0 ? errno : ENOSPC;
		else
			done += (size_t)w;
	}
	o->n = 0;
}

static void out_put(struct out *o, const void *p, uint64_t len)
{
	const uint8_t *s = p;
	o->written += len;
	while (len && !o->err) {
		if (o->n == OUT_BUF)
			out_flush(o);
		size_t k = OUT_BUF - o->n < len ? OUT_BUF - o->n : (size_t)len;
		memcpy(o->buf + o->n, s, k);
		o->n += k;
		s += k;
		len -= k;
	}
}

/* The decompressed bytes not yet written: whole records go out as soon as
 * they are whole, a record cut at a batch's end waits for the next. */
struct pending {
	uint8_t *v;
	size_t n, cap;
};

static int pend_add(struct pending *p, const uint8_t *s, size_t len)
{
	if (!len)
		return 0; /* (an empty batch: nothing, not even a buffer yet) */
	if (p->n + len > p->cap) {
		size_t cap = p->cap ? p->cap : 1u << 18;
		while (cap < p->n + len)
			cap *= 2;
		uint8_t *v = realloc(p->v, cap);
		if (!v)
			return -1;
		p->v = v;
		p->cap = cap;
	}
	memcpy(p->v + p->n, s, len);
	p->n += len;
	return 0;
}

/* Writes the whole records at the front; false when the bytes cannot be
 * records (a size under 8, an absurd AUXTRACE): the stream is broken. */
static bool pend_drain(struct pending *p, struct out *o)
{
	size_t at = 0;
	bool sane = true;
	while (p->n - at >= 8) {
		uint16_t size = mt_rd16(p->v + at + 6);
		if (size < 8) {
			sane = false;
			break;
		}
		uint64_t span = size;
		if (mt_rd32(p->v + at) == MT_REC_AUXTRACE && size >= 8 + 40 && p->n - at >= 16) {
			uint64_t payload = mt_rd64(p->v + at + 8);
			if (payload > MAX_PENDING) {
				sane = false;
				break;
			}
			span += payload;
		}
		if (span > p->n - at)
			break;
		out_put(o, p->v + at, span);
		at += span;
	}
	if (at) /* (nothing yet: maybe no buffer either) */
		memmove(p->v, p->v + at, p->n - at);
	p->n -= at;
	return sane;
}

static int open_tmp(const char *name, struct mt_err *err)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	/* a file system without O_TMPFILE: a name, gone at once */
	char path[4096];
	snprintf(path, sizeof path, "%s/mt-expand.XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return mt_err_set(err, MT_EIO, "%s: cannot make a file in %s for its uncompressed records: %s", name, dir,
				  strerror(errno));
	unlink(path);
	return fd;
}

/* File mode: the header's data size and every offset past the old data
 * section, moved by delta, in the copied header [0, data_off) and table. */
static void patch_u64(int fd, uint64_t at, uint64_t v, struct out *o)
{
	if (pwrite(fd, &v, 8, (off_t)at) != 8 && !o->err)
		o->err = errno ? errno : EIO;
}

static void patch_file_header(const uint8_t *base, size_t len, uint64_t data_end, int64_t delta, int fd,
			      struct out *o)
{
	uint64_t declared = mt_rd64(base + 48);
	if (declared)
		patch_u64(fd, 48, declared + (uint64_t)delta, o);
	uint64_t et = mt_rd64(base + 56);
	if (et >= data_end)
		patch_u64(fd, 56, et + (uint64_t)delta, o);
	uint64_t attr_size = mt_rd64(base + 16), attrs_off = mt_rd64(base + 24), attrs_size = mt_rd64(base + 32);
	if (attr_size >= 16 && attrs_off <= len && attrs_size <= len - attrs_off)
		for (uint64_t a = attrs_off; a + attr_size <= attrs_off + attrs_size; a += attr_size) {
			uint64_t ids = mt_rd64(base + a + attr_size - 16);
			if (ids >= data_end && a + attr_size <= data_end)
				patch_u64(fd, a + attr_size - 16, ids + (uint64_t)delta, o);
		}
	/* the feature table right after the data: one {offset, size} per bit */
	if (!declared || declared > len - mt_rd64(base + 40))
		return;
	uint64_t ft = data_end;
	for (int bit = 0; bit < 256; bit++) {
		if (!(base[72 + bit / 8] & (1u << (bit % 8))))
			continue;
		if (len - ft < 16)
			break;
		uint64_t off = mt_rd64(base + ft);
		if (off >= data_end)
			patch_u64(fd, ft + (uint64_t)delta, off + (uint64_t)delta, o);
		ft += 16;
	}
}

/* The state of one rebuild: the output, the records held back, the zstd
 * stream of the file being read (perf keeps one per file). */
struct expander {
	struct out o;
	struct pending pend;
	ZSTD_DStream *z;
	uint8_t *zout;
	size_t zout_cap;
	bool broken; /* this file's stream failed: its later batches are lost */
	struct mt_perfexpand_stats *st;
	/* the most one batch may give: perf decompresses each into a buffer
	 * of the recording's ring-buffer size (HEADER_COMPRESSED's mmap_len),
	 * and fails past it; a crafted batch must not fill TMPDIR */
	uint64_t batch_max;
};

/* Without HEADER_COMPRESSED's mmap_len (a pipe's comes as a record; perf
 * reads no batch without it) */
#define BATCH_MAX_UNSAID ((uint64_t)16 << 20)
/* and in all: perf's batches of dwarf stack copies, mostly zeros, gave
 * 245 times their size; far past that is no recording */
#define RATIO_MAX 4096

/* One batch's records into the output; false when out of memory. */
static bool expand_batch(struct expander *x, const uint8_t *src, uint64_t src_len, uint64_t at, const char *where)
{
	struct mt_perfexpand_stats *st = x->st;
	st->bytes_in += src_len;
	uint64_t out_before = st->bytes_out;
	ZSTD_inBuffer in = {src, (size_t)src_len, 0};
	/* (a full output buffer may leave more to flush with no input) */
	for (bool full = false; (in.pos < in.size || full) && !x->broken;) {
		ZSTD_outBuffer zo = {x->zout, x->zout_cap, 0};
		size_t before = in.pos;
		size_t r = ZSTD_decompressStream(x->z, &zo, &in);
		if (ZSTD_isError(r)) {
			snprintf(st->damage, sizeof st->damage, "zstd: %s, in the compressed batch at offset %" PRIu64 "%s",
				 ZSTD_getErrorName(r), at, where);
			x->broken = true;
			break;
		}
		st->bytes_out += zo.pos;
		if (st->bytes_out > st->bytes_in * RATIO_MAX + ((uint64_t)64 << 20)) {
			snprintf(st->damage, sizeof st->damage, "the compressed batches up to the one at offset %" PRIu64 "%s "
				 "expand past %d times their size: not read further", at, where, RATIO_MAX);
			x->broken = true;
			break;
		}
		if (st->bytes_out - out_before > x->batch_max) {
			snprintf(st->damage, sizeof st->damage, "the compressed batch at offset %" PRIu64 "%s gives more than "
				 "the %" PRIu64 " bytes of the recording's ring buffer, which perf decompresses it into: not read "
				 "further", at, where, x->batch_max);
			x->broken = true;
			break;
		}
		if (pend_add(&x->pend, x->zout, zo.pos))
			return false;
		if (!pend_drain(&x->pend, &x->o)) {
			snprintf(st->damage, sizeof st->damage, "a record of size under 8 in the records of the compressed "
				 "batch at offset %" PRIu64 "%s", at, where);
			x->broken = true;
		} else if (zo.pos == 0 && in.pos == before) {
			break; /* no progress: nothing more comes of this batch */
		}
		full = zo.pos == zo.size;
	}
	return true;
}

/* The records of [pos, end) into the output, batches expanded; returns
 * where a broken or cut record stopped the walk (end when none did), or
 * UINT64_MAX when out of memory. */
static uint64_t expand_records(struct expander *x, const uint8_t *base, uint64_t pos, uint64_t end, const char *where)
{
	struct mt_perfexpand_stats *st = x->st;
	while (pos < end) {
		uint64_t span = record_span(base + pos, end - pos);
		uint32_t type = end - pos >= 8 ? mt_rd32(base + pos) : 0;
		if (!span)
			break;
		if (type != MT_REC_COMPRESSED && type != MT_REC_COMPRESSED2) {
			/* a pipe's HEADER_COMPRESSED: u64 feature 27, then u32
			 * version, type, level, ratio, mmap_len */
			if (type == MT_REC_HEADER_FEATURE && span >= 8 + 8 + 20 && mt_rd64(base + pos + 8) == MT_FEAT_COMPRESSED &&
			    mt_rd32(base + pos + 16 + 16))
				x->batch_max = mt_rd32(base + pos + 16 + 16) + ((uint64_t)64 << 10);
			out_put(&x->o, base + pos, span);
			pos += span;
			continue;
		}
		st->batches++;
		const uint8_t *src = base + pos + 8;
		uint64_t src_len = span - 8;
		if (type == MT_REC_COMPRESSED2) {
			/* u64 data_size, then the data (the record padded to 8) */
			uint64_t dsz = src_len >= 8 ? mt_rd64(src) : UINT64_MAX;
			src += 8;
			src_len = dsz <= src_len - 8 ? dsz : (uint64_t)-1;
		}
		uint64_t at = pos;
		pos += span;
		if (!x->broken && src_len == (uint64_t)-1) {
			snprintf(st->damage, sizeof st->damage, "a COMPRESSED2 record at offset %" PRIu64 "%s declares more "
				 "data than it holds", at, where);
			x->broken = true;
		}
		if (!x->broken && !expand_batch(x, src, src_len, at, where))
			return UINT64_MAX;
		if (x->broken) {
			st->batches_lost++;
			st->records_cut += x->pend.n;
			x->pend.n = 0;
		}
	}
	return pos;
}

/* A file's records ended: a record still held back is cut. */
static void end_of_file(struct expander *x, const char *where)
{
	if (x->pend.n) {
		if (!x->st->damage[0])
			snprintf(x->st->damage, sizeof x->st->damage,
				 "the compressed records%s end inside a record (%zu bytes of it)", where, x->pend.n);
		x->st->records_cut += x->pend.n;
		x->pend.n = 0;
	}
}

int mt_perfexpand(const uint8_t *base, size_t len, bool pipe_mode, uint64_t data_off, uint64_t data_end,
		  const struct mt_perfexpand_part *parts, size_t nparts, uint64_t mmap_len, int *fdp, size_t *out_len,
		  struct mt_perfexpand_stats *st, const char *name, struct mt_err *err)
{
	memset(st, 0, sizeof *st);
	st->input_bytes = len;
	int fd = open_tmp(name, err);
	if (fd < 0)
		return fd;
	struct expander x = {.o = {.fd = fd, .buf = malloc(OUT_BUF)}, .z = ZSTD_createDStream(),
			     .zout_cap = ZSTD_DStreamOutSize(), .st = st,
			     /* (a record held back from the batch before comes in too) */
			     .batch_max = mmap_len ? mmap_len + ((uint64_t)64 << 10) : BATCH_MAX_UNSAID};
	x.zout = malloc(x.zout_cap);
	int rc = 0;
	if (!x.o.buf || !x.z || !x.zout)
		goto nomem;
	ZSTD_initDStream(x.z);
	out_put(&x.o, base, data_off);
	uint64_t pos = expand_records(&x, base, data_off, data_end, "");
	if (pos == UINT64_MAX)
		goto nomem;
	end_of_file(&x, "");
	/* perf record --threads: each data.N, whole records, a stream each */
	for (size_t i = 0; i < nparts && pos == data_end; i++) {
		char where[200];
		snprintf(where, sizeof where, " of %.180s", parts[i].name);
		ZSTD_initDStream(x.z);
		x.broken = false;
		st->parts++;
		st->parts_bytes += parts[i].len;
		uint64_t stop = expand_records(&x, parts[i].base, 0, parts[i].len, where);
		if (stop == UINT64_MAX)
			goto nomem;
		end_of_file(&x, where);
		if (stop < parts[i].len) {
			st->parts_cut += parts[i].len - stop;
			if (!st->part_damage[0])
				snprintf(st->part_damage, sizeof st->part_damage, "%.300s ends inside a record at offset %" PRIu64
					 " (%" PRIu64 " bytes of it)", parts[i].name, stop, parts[i].len - stop);
		}
	}
	uint64_t data_out = x.o.written - data_off;
	/* what follows the data (or the rest of a broken walk) as it was */
	out_put(&x.o, base + pos, len - pos);
	out_flush(&x.o);
	int64_t delta = (int64_t)(data_out - (pos - data_off));
	if (!pipe_mode && len >= FILE_HEADER_SIZE)
		patch_file_header(base, len, data_end, delta, fd, &x.o);
	if (x.o.err) {
		rc = mt_err_set(err, MT_EIO, "%s: writing its records, whole and uncompressed, to TMPDIR: %s", name,
				strerror(x.o.err));
		goto done;
	}
	*out_len = (size_t)x.o.written;
	goto done;
nomem:
	rc = mt_err_set(err, MT_ENOMEM, "%s: out of memory expanding its records", name);
done:
	free(x.o.buf);
	free(x.pend.v);
	free(x.zout);
	ZSTD_freeDStream(x.z);
	if (rc) {
		close(fd);
		return rc;
	}
	*fdp = fd;
	return 0;
}
