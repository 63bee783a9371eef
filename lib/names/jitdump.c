/* jitdump: a JIT's code loads, from its jitdump file (jitdump.h). */
#include "names/jitdump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JIT_MAGIC 0x4A695444u
#define JIT_MAGIC_SWAPPED 0x4454694Au
#define PREFIX 16 /* u32 id, u32 total_size, u64 timestamp */
enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1 };

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
	/* two passes: count, then fill (names into one string table) */
	size_t nload = 0, names = 0;
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
		}
		pos += size;
	}
	jd->code = nload ? calloc(nload, sizeof *jd->code) : NULL;
	jd->strings = names ? malloc(names) : NULL;
	if ((nload && !jd->code) || (names && !jd->strings)) {
		free(b);
		mt_jitdump_free(jd);
		return mt_err_set(err, MT_ENOMEM, "%s: out of memory", path);
	}
	size_t so = 0;
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
				jd->code[jd->ncode++] = (struct mt_jit_code){.start = rd64(r + 16), .size = rd64(r + 24),
									     .time = time, .index = rd64(r + 32),
									     .name = jd->strings + so};
				so += n;
			}
		} else if (id == JIT_CODE_MOVE && size >= PREFIX + 48) {
			/* u32 pid, u32 tid, u64 vma, u64 old, u64 new, u64 size, u64 index */
			uint64_t index = rd64(r + 40), to = rd64(r + 24);
			for (size_t i = jd->ncode; i-- > 0;)
				if (jd->code[i].index == index) {
					jd->code[i].start = to;
					jd->code[i].size = rd64(r + 32);
					jd->code[i].time = time;
					break;
				}
		}
		pos += size;
	}
	if (len - pos > 0)
		jd->damaged_at = pos;
	free(b);
	return 0;
}

void mt_jitdump_free(struct mt_jitdump *jd)
{
	free(jd->code);
	free(jd->strings);
	memset(jd, 0, sizeof *jd);
}
