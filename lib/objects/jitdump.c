/* jitdump: a JIT's code loads, from its jitdump file (jitdump.h). */
#include "objects/jitdump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JIT_MAGIC 0x4A695444u
#define JIT_MAGIC_SWAPPED 0x4454694Au
#define PREFIX 16 /* u32 id, u32 total_size, u64 timestamp */
enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1, JIT_CODE_DEBUG_INFO = 2 };
#define DEBUG_ENTRY 16 /* u64 addr, i32 line, i32 discriminator, then the name */

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int read_file(const char *path, uint8_t **buf, size_t *len, struct mt_err *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = malloc(cap);
	for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
		n += got;
		if (n == cap) {
			uint8_t *nb = realloc(b, cap *= 2);
			if (!nb)
				free(b);
			b = nb;
		}
	}
	int bad = ferror(f);
	fclose(f);
	if (!b)
		return mt_err_set(err, MT_ENOMEM, "%s: out of memory reading it", path);
	if (bad) {
		free(b);
		return mt_err_set(err, MT_EIO, "%s: read error", path);
	}
	*buf = b;
	*len = n;
	return 0;
}

static int cmp_line(const void *a, const void *b)
{
	const struct mt_jit_line *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

/* By address (JITs write them so; sorted only where one did not). */
static void sort_lines(struct mt_jit_line *l, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (l[i].addr < l[i - 1].addr) {
			qsort(l, n, sizeof *l, cmp_line);
			return;
		}
}

bool mt_jitdump_named(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(base);
	return !strncmp(base, "jit-", 4) && n > 9 && !strcmp(base + n - 5, ".dump");
}

int mt_jitdump_read(struct mt_jitdump *jd, const char *path, struct mt_err *err)
{
	memset(jd, 0, sizeof *jd);
	uint8_t *b = NULL;
	size_t len = 0;
	int rc = read_file(path, &b, &len, err);
	if (rc)
		return rc;
	if (len < 40 || (rd32(b) != JIT_MAGIC && rd32(b) != JIT_MAGIC_SWAPPED)) {
		free(b);
		return mt_err_set(err, MT_EFORMAT, "%s: not a jitdump (no JiTD header)", path);
	}
	if (rd32(b) == JIT_MAGIC_SWAPPED) {
		free(b);
		return mt_err_set(err, MT_EUNSUP, "%s: a jitdump of the other byte order", path);
	}
	uint32_t hsize = rd32(b + 8);
	if (hsize < 40 || hsize > len) {
		free(b);
		return mt_err_set(err, MT_EFORMAT, "%s: jitdump header size %u", path, hsize);
	}
	jd->pid = rd32(b + 20);
	jd->flags = rd64(b + 32);
	/* two passes: count, then fill (names into one string table) */
	size_t nload = 0, names = 0, nlines = 0;
	size_t pos = hsize;
	while (len - pos >= PREFIX) {
		uint32_t id = rd32(b + pos), size = rd32(b + pos + 4);
		if (size < PREFIX || size > len - pos)
			break;
		if (id == JIT_CODE_LOAD && size > PREFIX + 40) {
			const uint8_t *nm = b + pos + PREFIX + 40, *e = memchr(nm, 0, size - PREFIX - 40);
			if (e) {
				nload++;
				names += (size_t)(e - nm) + 1;
			}
		} else if (id == JIT_CODE_DEBUG_INFO && size >= PREFIX + 16) {
			/* at most one entry per 17 bytes, its name's bytes at most the record's */
			nlines += (size - PREFIX - 16) / (DEBUG_ENTRY + 1);
			names += size - PREFIX - 16;
		}
		pos += size;
	}
	jd->code = nload ? calloc(nload, sizeof *jd->code) : NULL;
	jd->lines = nlines ? malloc(nlines * sizeof *jd->lines) : NULL;
	jd->strings = names ? malloc(names) : NULL;
	if ((nload && !jd->code) || (nlines && !jd->lines) || (names && !jd->strings)) {
		free(b);
		mt_jitdump_free(jd);
		return mt_err_set(err, MT_ENOMEM, "%s: out of memory", path);
	}
	size_t so = 0;
	/* the last DEBUG_INFO's entries, for the next load of its address */
	uint64_t debug_addr = 0;
	size_t debug0 = 0, ndebug = 0;
	for (pos = hsize; len - pos >= PREFIX;) {
		uint32_t id = rd32(b + pos), size = rd32(b + pos + 4);
		if (size < PREFIX || size > len - pos)
			break;
		const uint8_t *r = b + pos + PREFIX;
		uint64_t time = rd64(b + pos + 8);
		if (id == JIT_CODE_LOAD && size > PREFIX + 40) {
			/* u32 pid, u32 tid, u64 vma, u64 code_addr, u64 code_size,
			 * u64 code_index, char name[], then the code */
			const uint8_t *nm = r + 40, *e = memchr(nm, 0, size - PREFIX - 40);
			if (e) {
				size_t n = (size_t)(e - nm) + 1;
				memcpy(jd->strings + so, nm, n);
				struct mt_jit_code *c = &jd->code[jd->ncode++];
				*c = (struct mt_jit_code){.start = rd64(r + 16), .size = rd64(r + 24), .time = time,
							  .index = rd64(r + 32), .name = jd->strings + so};
				/* the code follows the name, to the record's end */
				uint64_t at = pos + PREFIX + 40 + n;
				if (c->size && c->size <= pos + size - at)
					c->code_offset = at;
				so += n;
				if (ndebug && debug_addr == c->start) {
					c->line0 = debug0;
					c->nlines = ndebug;
				}
			}
			ndebug = 0;
		} else if (id == JIT_CODE_MOVE && size >= PREFIX + 48) {
			/* u32 pid, u32 tid, u64 vma, u64 old, u64 new, u64 size, u64 index */
			uint64_t index = rd64(r + 40), to = rd64(r + 24);
			for (size_t i = jd->ncode; i-- > 0;)
				if (jd->code[i].index == index) {
					struct mt_jit_code *c = &jd->code[i];
					for (size_t k = c->line0; k < c->line0 + c->nlines; k++)
						jd->lines[k].addr += to - c->start;
					if (c->nlines) /* (in order again, where an address wrapped) */
						sort_lines(jd->lines + c->line0, c->nlines);
					c->start = to;
					c->size = rd64(r + 32);
					c->time = time;
					break;
				}
		} else if (id == JIT_CODE_DEBUG_INFO && size >= PREFIX + 16) {
			/* u64 code_addr, u64 nr_entry, the entries */
			uint64_t count = rd64(r + 8);
			const uint8_t *p = r + 16, *end = b + pos + size;
			const char *file = NULL;
			debug_addr = rd64(r);
			debug0 = jd->nlines;
			for (uint64_t k = 0; k < count && end - p > DEBUG_ENTRY; k++) {
				const uint8_t *nm = p + DEBUG_ENTRY, *e = memchr(nm, 0, (size_t)(end - nm));
				if (!e)
					break; /* a name not ended: the entries end here */
				size_t n = (size_t)(e - nm) + 1;
				if (n != 2 || nm[0] != 0xff) { /* "\xff": the file before's */
					memcpy(jd->strings + so, nm, n);
					file = jd->strings + so;
					so += n;
				}
				int32_t line;
				memcpy(&line, p + 8, 4);
				jd->lines[jd->nlines++] = (struct mt_jit_line){.addr = rd64(p), .line = line, .file = file};
				p = e + 1;
			}
			ndebug = jd->nlines - debug0;
			if (ndebug)
				sort_lines(jd->lines + debug0, ndebug);
		}
		pos += size;
	}
	if (len - pos > 0)
		jd->damaged_at = pos;
	free(b);
	return 0;
}

const struct mt_jit_line *mt_jitdump_line(const struct mt_jitdump *jd, const struct mt_jit_code *c, uint64_t addr)
{
	if (!c->nlines)
		return NULL;
	const struct mt_jit_line *l = jd->lines + c->line0;
	size_t lo = 0, hi = c->nlines; /* the first entry above addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && l[lo - 1].file && l[lo - 1].line > 0 && addr - c->start < c->size ? &l[lo - 1] : NULL;
}

void mt_jitdump_free(struct mt_jitdump *jd)
{
	free(jd->code);
	free(jd->lines);
	free(jd->strings);
	memset(jd, 0, sizeof *jd);
}
