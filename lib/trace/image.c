#define _GNU_SOURCE
#include "trace/image.h"
#include "base/infile.h"
#include "objects/elfsyms.h"
#include "objects/kallsyms.h"
#include "base/strtab.h"
#include "trace/x86.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <libelf.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_image_init(struct mt_image *img, const char *name, struct mt_err *err)
{
	memset(img, 0, sizeof *img);
	img->generation = 1;
	mt_secmap_init(&img->map);
	img->image = pt_image_alloc(name);
	if (!img->image) {
		mt_image_fini(img);
		return mt_err_set(err, MT_ENOMEM, "out of memory allocating a PT image");
	}
	return 0;
}

void mt_image_fini(struct mt_image *img)
{
	if (img->image)
		pt_image_free(img->image);
	if (img->iscache)
		pt_iscache_free(img->iscache);
	for (size_t i = 0; i < img->nfiles; i++)
		if (img->files[i].map)
			munmap((void *)img->files[i].map, img->files[i].mapped);
	free(img->files);
	free(img->file_slots);
	mt_strtab_free(&img->names);
	mt_secmap_fini(&img->map);
	free(img->funcs);
	free(img->secs);
	if (img->blocks)
		munmap(img->blocks, img->capblocks * sizeof *img->blocks);
	free(img->block_slots);
	free(img->offs);
	mt_csload_close(&img->cs);
	mt_runcache_fini(&img->runs);
	memset(img, 0, sizeof *img);
}

/* The file's number in the image, added on first sight; -1 when out of memory. */
static ptrdiff_t image_file(struct mt_image *img, const char *path, uint64_t size)
{
	const char *name = mt_strtab_intern(&img->names, path);
	if (!name)
		return -1;
	if (2 * (img->nfiles + 1) > img->capslots) {
		size_t cap = img->capslots ? 2 * img->capslots : 64;
		uint32_t *ns = calloc(cap, sizeof *ns);
		if (!ns)
			return -1;
		for (size_t i = 0; i < img->nfiles; i++) {
			size_t k = mt_hash_str(img->files[i].path) & (cap - 1);
			while (ns[k])
				k = (k + 1) & (cap - 1);
			ns[k] = (uint32_t)i + 1;
		}
		free(img->file_slots);
		img->file_slots = ns;
		img->capslots = cap;
	}
	size_t k = mt_hash_str(name) & (img->capslots - 1);
	for (; img->file_slots[k]; k = (k + 1) & (img->capslots - 1)) {
		struct mt_image_file *f = &img->files[img->file_slots[k] - 1];
		if (f->path == name) {
			if (size < f->size)
				f->size = size; /* it shrank since: read no more than is there now */
			return img->file_slots[k] - 1;
		}
	}
	if (img->nfiles >= UINT32_MAX - 1 ||
	    !mt_grow((void **)&img->files, &img->capfiles, img->nfiles + 1, sizeof *img->files))
		return -1;
	img->files[img->nfiles] = (struct mt_image_file){.path = name, .size = size};
	img->file_slots[k] = (uint32_t)++img->nfiles;
	return (ptrdiff_t)img->nfiles - 1;
}

/* More files than this mapped at once would near the kernel's limit on
 * mappings (vm.max_map_count, 65,530) with a few decode jobs: the rest
 * are read with pread, each read opening the file. */
enum { MAX_MAPPED_FILES = 4096 };

/* Reads n bytes at off of file f (within its size); returns how many. */
static size_t file_read(struct mt_image *img, struct mt_image_file *f, uint64_t off, uint8_t *buf, size_t n)
{
	if (!f->tried) {
		f->tried = true;
		if (img->nmapped < MAX_MAPPED_FILES) {
			struct mt_err e = {0};
			int fd = mt_infile_open(f->path, 0, &e);
			struct stat st;
			if (fd >= 0 && !fstat(fd, &st) && st.st_size > 0) {
				uint64_t len = (uint64_t)st.st_size < f->size ? (uint64_t)st.st_size : f->size;
				void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
				if (m != MAP_FAILED) {
					f->map = m;
					f->mapped = len;
					img->nmapped++;
				}
			}
			if (fd >= 0)
				close(fd);
		}
	}
	if (f->map) {
		if (off >= f->mapped)
			return 0;
		if (n > f->mapped - off)
			n = (size_t)(f->mapped - off);
		memcpy(buf, f->map + off, n);
		return n;
	}
	struct mt_err e = {0};
	int fd = mt_infile_open(f->path, 0, &e);
	if (fd < 0)
		return 0;
	ssize_t r = pread(fd, buf, n, (off_t)off);
	close(fd);
	return r > 0 ? (size_t)r : 0;
}

static void flush_blocks(struct mt_image *img)
{
	/* what was built from the blocks goes with them (a run found 2^32
	 * flushes ago would be taken again: no recording adds so many) */
	if (!++img->generation)
		img->generation = 1;
	if (img->nblocks) {
		memset(img->block_slots, 0, img->capblock_slots * sizeof *img->block_slots);
		img->nblocks = 0;
		img->noffs = 0;
	}
}

/* Adds bytes [offset, offset+size) of a file at vaddr, the file already
 * checked to hold them; blocks decoded before may now read other bytes,
 * so the block cache starts afresh. */
static int add_section(struct mt_image *img, const char *path, uint64_t file_size, uint64_t offset,
		       uint64_t vaddr, uint64_t size)
{
	ptrdiff_t file = image_file(img, path, file_size);
	if (file < 0 || !mt_grow((void **)&img->secs, &img->capsecs, img->nsections + 1, sizeof *img->secs) ||
	    !mt_secmap_add(&img->map, vaddr, size))
		return MT_ENOMEM;
	img->secs[img->nsections++] = (struct mt_image_section){vaddr, size, offset, (uint32_t)file};
	flush_blocks(img);
	return 0;
}

int mt_image_add_file(struct mt_image *img, const char *path, uint64_t offset,
		      uint64_t size, uint64_t vaddr, struct mt_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode)) /* libipt would read a FIFO or a device blindly */
		return mt_err_set(err, MT_EFORMAT, "%s: not a regular file (%s)", path, mt_infile_kind(st.st_mode));
	if ((uint64_t)st.st_size <= offset)
		return mt_err_set(err, MT_EFORMAT, "%s: offset 0x%" PRIx64 " is beyond the end of the file (%lld bytes)",
				  path, offset, (long long)st.st_size);
	if (size == 0 || size > (uint64_t)st.st_size - offset)
		size = (uint64_t)st.st_size - offset;
	if (add_section(img, path, (uint64_t)st.st_size, offset, vaddr, size))
		return mt_err_set(err, MT_ENOMEM, "out of memory adding %s to an image", path);
	return 0;
}

int mt_image_add_spec(struct mt_image *img, const char *spec, struct mt_err *err)
{
	const char *at = strrchr(spec, '@');
	if (!at || at == spec)
		return mt_err_set(err, MT_EUSAGE, "bad image '%s': expected FILE[:OFFSET[-END]]@VADDR", spec);
	char *e;
	errno = 0;
	uint64_t vaddr = strtoull(at + 1, &e, 0);
	if (errno || *e || e == at + 1)
		return mt_err_set(err, MT_EUSAGE, "bad image '%s': bad address '%s'", spec, at + 1);
	char path[4096];
	size_t plen = (size_t)(at - spec);
	if (plen >= sizeof path)
		return mt_err_set(err, MT_EUSAGE, "bad image '%s': path too long", spec);
	memcpy(path, spec, plen);
	path[plen] = '\0';
	uint64_t off = 0, end = 0;
	char *colon = strrchr(path, ':');
	if (colon) {
		errno = 0;
		off = strtoull(colon + 1, &e, 0);
		if (*e == '-') {
			const char *es = e + 1;
			end = strtoull(es, &e, 0);
			if (e == es || end <= off)
				return mt_err_set(err, MT_EUSAGE, "bad image '%s': bad range", spec);
		}
		if (errno || *e || e == colon + 1)
			return mt_err_set(err, MT_EUSAGE, "bad image '%s': bad offset", spec);
		*colon = '\0';
	}
	return mt_image_add_file(img, path, off, end ? end - off : 0, vaddr, err);
}

int mt_image_add_pageset(struct mt_image *img, const char *prefix, struct mt_err *err)
{
	char apath[4096], dpath[4096];
	snprintf(apath, sizeof apath, "%s.addr", prefix);
	snprintf(dpath, sizeof dpath, "%s.dump", prefix);
	FILE *f = mt_infile_fopen(apath, 0, err);
	if (!f)
		return err->code;
	struct stat st;
	if (stat(dpath, &st) < 0) {
		fclose(f);
		return mt_err_set(err, MT_EIO, "%s: %s", dpath, strerror(errno));
	}
	if (!S_ISREG(st.st_mode)) {
		fclose(f);
		return mt_err_set(err, MT_EFORMAT, "%s: not a regular file (%s)", dpath, mt_infile_kind(st.st_mode));
	}
	uint64_t addr;
	uint64_t i = 0;
	int rc = 0;
	while (fread(&addr, 8, 1, f) == 1) {
		if ((i + 1) * 4096 > (uint64_t)st.st_size) {
			rc = mt_err_set(err, MT_ETRUNC, "%s: page %" PRIu64 " missing (file has %lld bytes)",
					dpath, i, (long long)st.st_size);
			break;
		}
		if (add_section(img, dpath, (uint64_t)st.st_size, i * 4096, addr, 4096)) {
			rc = mt_err_set(err, MT_ENOMEM, "out of memory adding page %" PRIu64 " of %s", i, dpath);
			break;
		}
		i++;
	}
	fclose(f);
	if (!rc && i == 0)
		rc = mt_err_set(err, MT_EFORMAT, "%s: no pages", apath);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int add_func(struct mt_image *img, uint64_t start, uint64_t end)
{
	if (img->nfuncs == img->capfuncs) {
		size_t cap = img->capfuncs ? img->capfuncs * 2 : 1024;
		void *n = realloc(img->funcs, cap * sizeof *img->funcs);
		if (!n)
			return MT_ENOMEM;
		img->funcs = n;
		img->capfuncs = cap;
	}
	img->funcs[img->nfuncs++] = (struct mt_func_range){start, end};
	img->funcs_sorted = false;
	flush_blocks(img); /* their `stays` may change */
	return 0;
}

/* Loads FUNC symbols of an ELF mapping; a file without symbols adds none. */
struct func_ctx {
	struct mt_image *img;
	uint64_t bias, start, len;
};

static int add_func(struct mt_image *img, uint64_t start, uint64_t end);

/* One FUNC symbol of a mapping, moved by its load bias, if it lies inside. */
static void add_func_symbol(void *ctx, const GElf_Sym *sym, const char *name)
{
	(void)name;
	struct func_ctx *fc = ctx;
	uint64_t a = sym->st_value + fc->bias;
	if (a >= fc->start && a < fc->start + fc->len)
		add_func(fc->img, a, a + (sym->st_size ? sym->st_size : 1));
}

static void load_funcs(struct mt_image *img, const char *file, uint64_t start, uint64_t len, uint64_t pgoff)
{
	struct mt_err err = {0};
	int fd = mt_infile_open(file, 0, &err);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto out;
	uint64_t bias;
	if (!mt_elf_load_bias(elf, start, pgoff, &bias))
		goto out;
	struct func_ctx fc = {img, bias, start, len};
	mt_elf_for_each_func(elf, false, add_func_symbol, &fc);
out:
	if (elf)
		elf_end(elf);
	close(fd);
}

int mt_image_add_mapping(struct mt_image *img, const char *file, uint64_t start,
			 uint64_t len, uint64_t pgoff, struct mt_err *err)
{
	int rc = mt_image_add_file(img, file, pgoff, len, start, err);
	if (rc)
		return rc;
	load_funcs(img, file, start, len, pgoff);
	return 0;
}

int mt_image_add_kernel(struct mt_image *img, const char *elf_path, uint64_t start, uint64_t len,
			struct mt_err *err)
{
	int fd = mt_infile_open(elf_path, 0, err);
	if (fd < 0)
		return err->code;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t nph;
	int rc = 0, added = 0;
	uint64_t sym_pgoff = 0, sym_vaddr = 0;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		rc = mt_err_set(err, MT_EFORMAT, "%s: not an ELF file", elf_path);
		goto out;
	}
	for (size_t i = 0; i < nph && !rc; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		uint64_t lo = ph.p_vaddr > start ? ph.p_vaddr : start;
		uint64_t hi = ph.p_vaddr + ph.p_filesz < start + len ? ph.p_vaddr + ph.p_filesz : start + len;
		if (lo >= hi)
			continue;
		rc = mt_image_add_file(img, elf_path, ph.p_offset + (lo - ph.p_vaddr), hi - lo, lo, err);
		if (!added) {
			sym_pgoff = ph.p_offset + (lo - ph.p_vaddr);
			sym_vaddr = lo;
		}
		added++;
	}
	if (!rc && !added)
		rc = mt_err_set(err, MT_EFORMAT, "%s: no code at 0x%" PRIx64 "-0x%" PRIx64, elf_path, start, start + len);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (!rc)
		load_funcs(img, elf_path, sym_vaddr, len, sym_pgoff); /* absolute addresses: bias 0 */
	return rc;
}

struct kallsyms_addrs {
	uint64_t *addrs;
	size_t n, cap;
	bool oom;
};

static void add_kallsyms_addr(void *ctx, uint64_t addr, const char *name)
{
	struct kallsyms_addrs *k = ctx;
	(void)name;
	if (!k->oom && !mt_grow((void **)&k->addrs, &k->cap, k->n + 1, sizeof *k->addrs))
		k->oom = true;
	if (!k->oom)
		k->addrs[k->n++] = addr;
}

int mt_image_add_kallsyms(struct mt_image *img, const char *path, struct mt_err *err)
{
	struct kallsyms_addrs k = {0};
	size_t bad;
	int rc = mt_kallsyms_read(path, add_kallsyms_addr, &k, &bad, err);
	if (!rc && k.oom)
		rc = mt_err_set(err, MT_ENOMEM, "out of memory reading %s", path);
	if (!rc && k.n) {
		qsort(k.addrs, k.n, sizeof *k.addrs, cmp_u64);
		for (size_t i = 0; i + 1 < k.n && !rc; i++)
			if (k.addrs[i + 1] > k.addrs[i])
				rc = add_func(img, k.addrs[i], k.addrs[i + 1]);
		/* the last symbol's size is unknown: leave it out */
	}
	free(k.addrs);
	return rc;
}

/* By start, the larger symbol first: aliases of one function collapse
 * onto it */
static inline bool func_before(const struct mt_func_range *x, const struct mt_func_range *y)
{
	return x->start < y->start || (x->start == y->start && x->end > y->end);
}

static int cmp_func(const void *a, const void *b)
{
	return func_before(a, b) ? -1 : func_before(b, a);
}

/* func_before's order by a merge sort with the comparison inline: a small
 * trace's decode sorts libc's thousands of symbols once, and qsort's call
 * a comparison was an eighth of its instructions. Runs of 16 by
 * insertion, then merges between a and a scratch copy. */
static void sort_funcs(struct mt_func_range *a, size_t n)
{
	enum { RUN = 16 };
	size_t i = 1;
	while (i < n && !func_before(&a[i], &a[i - 1]))
		i++;
	if (i == n)
		return; /* sorted already (kallsyms, a sorted symbol table) */
	struct mt_func_range *tmp = malloc(n * sizeof *tmp);
	if (!tmp) {
		qsort(a, n, sizeof *a, cmp_func);
		return;
	}
	for (size_t lo = 0; lo < n; lo += RUN) {
		size_t hi = lo + RUN < n ? lo + RUN : n;
		for (size_t j = lo + 1; j < hi; j++) {
			struct mt_func_range v = a[j];
			size_t k = j;
			for (; k > lo && func_before(&v, &a[k - 1]); k--)
				a[k] = a[k - 1];
			a[k] = v;
		}
	}
	struct mt_func_range *src = a, *dst = tmp;
	for (size_t w = RUN; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t x = lo, y = mid, o = lo;
			while (x < mid && y < hi)
				dst[o++] = func_before(&src[y], &src[x]) ? src[y++] : src[x++];
			while (x < mid)
				dst[o++] = src[x++];
			while (y < hi)
				dst[o++] = src[y++];
		}
		struct mt_func_range *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof *a);
	free(tmp);
}

bool mt_image_func_range(struct mt_image *img, uint64_t addr, uint64_t *start, uint64_t *end)
{
	if (!img->funcs_sorted) {
		sort_funcs(img->funcs, img->nfuncs);
		img->funcs_sorted = true;
	}
	size_t lo = mt_count_at_or_below(img->funcs, img->nfuncs, sizeof *img->funcs,
					 offsetof(struct mt_func_range, start), addr);
	/* lo-1 is the last range starting at or below addr */
	for (size_t i = lo; i > 0 && i + 4 > lo; i--) { /* the last 4 (lo - 4 would wrap below 4) */
		const struct mt_func_range *f = &img->funcs[i - 1];
		if (addr < f->end) {
			*start = f->start;
			*end = f->end;
			return true;
		}
	}
	/* the gap: no range starting between addr and the next start holds
	 * any address there, and those before do not reach addr */
	*start = addr;
	*end = lo < img->nfuncs ? img->funcs[lo].start : UINT64_MAX;
	return false;
}

uint64_t mt_image_func_of(struct mt_image *img, uint64_t addr)
{
	uint64_t start, end;
	return mt_image_func_range(img, addr, &start, &end) ? start : 0;
}

size_t mt_image_read(struct mt_image *img, uint64_t vaddr, uint8_t *buf, size_t size)
{
	size_t got = 0;
	bool oom = false;
	while (got < size) {
		uint64_t va = vaddr + got;
		const struct mt_secmap_piece *p = mt_secmap_find(&img->map, va, &oom);
		if (!p)
			break;
		const struct mt_image_section *s = &img->secs[p->sec];
		size_t n = size - got;
		if (n > p->end - va)
			n = (size_t)(p->end - va);
		size_t r = file_read(img, &img->files[s->file], s->offset + (va - s->vaddr), buf + got, n);
		got += r;
		if (r < n)
			break;
	}
	return got;
}

static int read_for_libipt(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip, void *ctx)
{
	(void)asid;
	size_t n = mt_image_read(ctx, ip, buf, size < 4096 ? size : 4096);
	return n ? (int)n : -pte_nomap;
}

/* libipt's image searches all the sections it holds on each add, and its
 * block cache is kept per section: past this many, libipt reads every byte
 * through mt (no block cache, about 4x slower, never quadratic). */
enum { MAX_LIBIPT_SECTIONS = 4096 };

/* Gives libipt's image mt's pieces as its sections (neighbours in one file,
 * one after the other, as one); false when there are too many, or libipt
 * refuses one. */
static bool libipt_sections(struct mt_image *img)
{
	if (!mt_secmap_ready(&img->map))
		return false;
	const struct mt_secmap_piece *p = img->map.pieces;
	size_t n = img->map.npieces, nsec = 0;
	for (size_t i = 0; i < n;) {
		const struct mt_image_section *s = &img->secs[p[i].sec];
		uint64_t off = s->offset + (p[i].start - s->vaddr), end = p[i].end;
		size_t j = i + 1;
		for (; j < n; j++) {
			const struct mt_image_section *t = &img->secs[p[j].sec];
			if (p[j].start != end || t->file != s->file || t->offset + (p[j].start - t->vaddr) != off + (end - p[i].start))
				break;
			end = p[j].end;
		}
		if (++nsec > MAX_LIBIPT_SECTIONS)
			return false;
		int isid = pt_iscache_add_file(img->iscache, img->files[s->file].path, off, end - p[i].start, p[i].start);
		if (isid < 0 || pt_image_add_cached(img->image, img->iscache, isid, NULL) < 0)
			return false;
		i = j;
	}
	return true;
}

struct pt_image *mt_image_libipt(struct mt_image *img)
{
	if (!img->libipt_built || img->libipt_nsections != img->nsections) {
		img->libipt_built = true;
		img->libipt_nsections = img->nsections;
		if (!img->iscache) {
			/* keeps sections mapped between decoders (one per segment):
			 * without it libipt maps each again (and builds its block
			 * cache again) whenever the decoder moves to another */
			img->iscache = pt_iscache_alloc(NULL);
			if (img->iscache)
				pt_iscache_set_limit(img->iscache, (uint64_t)256 << 20);
		}
		struct pt_image *fresh = pt_image_alloc(NULL);
		if (fresh) {
			pt_image_free(img->image);
			img->image = fresh;
			if (!img->iscache || !libipt_sections(img)) {
				/* all or none: every byte through mt */
				pt_image_free(img->image);
				img->image = pt_image_alloc(NULL);
			}
		}
	}
	pt_image_set_callback(img->image, read_for_libipt, img);
	return img->image;
}

enum { BLOCK_BYTES = 512, BLOCK_MAX_INSNS = 256 };

static int build_block(struct mt_image *img, uint64_t ip, struct mt_code_block *b, uint16_t *offs)
{
	uint8_t buf[BLOCK_BYTES];
	size_t have = mt_image_read(img, ip, buf, sizeof buf);
	if (!have)
		return -pte_nomap;
	*b = (struct mt_code_block){.ip = ip, .cls = ptic_other};
	size_t off = 0;
	int rc = 0;
	for (;;) {
		size_t left = have - off;
		if (have == sizeof buf && left < 16)
			break; /* an instruction may go on past what was read: the next block */
		/* the common encodings measured here, the rest by Capstone */
		unsigned size = mt_insn_length(buf + off, left);
		if (!size) {
			int r = mt_csload_length(&img->cs, buf + off, left, ip + off);
			if (r < 0) { /* the block ends before it; the next one says so */
				if (!b->ninsn)
					rc = r;
				break;
			}
			size = (unsigned)r;
		}
		if (!size) {
			unsigned jlen = mt_jmpabs_length(buf + off, have - off), rlen = 0;
			if (!jlen)
				rlen = mt_uiret_length(buf + off, have - off);
			if (jlen || rlen) { /* an indirect branch to PT: the block ends there */
				offs[b->ninsn++] = (uint16_t)off;
				b->end_ip = ip + off;
				b->len = (uint8_t)(jlen ? jlen : rlen);
				b->cls = jlen ? ptic_jump : ptic_far_return;
				break;
			}
			unsigned vlen = mt_vex_length(buf + off, have - off);
			if (!vlen)
				vlen = mt_ptwrite_length(buf + off, have - off);
			if (vlen) {
				/* newer AVX-512 than capstone knows, or PTWRITE: never a branch */
				offs[b->ninsn++] = (uint16_t)off;
				b->end_ip = ip + off;
				b->len = (uint8_t)vlen;
				off += vlen;
				if (b->ninsn == BLOCK_MAX_INSNS || off >= have)
					break;
				continue;
			}
			/* bytes that end early at the end of the code are no code */
			if (!b->ninsn)
				rc = have - off < 15 ? -pte_nomap : -pte_bad_insn;
			break;
		}
		bool direct;
		int64_t disp;
		unsigned dlen;
		int cls = mt_insn_classify(buf + off, size, &direct, &disp, &dlen);
		b->mov_cr3 |= mt_is_mov_cr3(buf + off, size);
		offs[b->ninsn++] = (uint16_t)off;
		b->end_ip = ip + off;
		b->len = (uint8_t)size;
		off += size;
		if (cls != ptic_other && cls != ptic_error) {
			b->cls = (uint8_t)cls;
			b->direct = direct;
			b->target = direct ? ip + off + (uint64_t)disp : 0;
			if (direct && (cls == ptic_jump || cls == ptic_cond_jump)) {
				uint64_t fs, fe, ts, te;
				b->stays = mt_image_func_range(img, b->end_ip, &fs, &fe)
						   ? b->target >= fs && b->target < fe
						   : !mt_image_func_range(img, b->target, &ts, &te);
			}
			break;
		}
		if (b->ninsn == BLOCK_MAX_INSNS || off >= have)
			break;
	}
	return rc;
}

const struct mt_code_block *mt_image_block_new(struct mt_image *img, uint64_t ip, int *err)
{
	size_t mask = img->capblock_slots - 1;
	if (img->capblock_slots) {
		for (size_t k = mt_image_block_slot(ip) & mask; img->block_slots[k]; k = (k + 1) & mask)
			if (img->blocks[img->block_slots[k] - 1].ip == ip)
				return &img->blocks[img->block_slots[k] - 1];
	}
	if (4 * (img->nblocks + 1) > img->capblock_slots) {
		/* grow (or start) the slots at a quarter full: most blocks at
		 * their first slot, which the inline lookup reads */
		size_t cap = img->capblock_slots ? 2 * img->capblock_slots : 4096;
		uint32_t *ns = calloc(cap, sizeof *ns);
		if (!ns || cap > UINT32_MAX) {
			free(ns);
			*err = -pte_nomem;
			return NULL;
		}
		for (size_t i = 0; i < img->nblocks; i++) {
			size_t k = mt_image_block_slot(img->blocks[i].ip) & (cap - 1);
			while (ns[k])
				k = (k + 1) & (cap - 1);
			ns[k] = (uint32_t)i + 1;
		}
		free(img->block_slots);
		img->block_slots = ns;
		img->capblock_slots = cap;
		mask = cap - 1;
	}
	if (img->nblocks == img->capblocks) {
		/* mapped and grown by mremap: pages touched only as blocks
		 * fill them, never copied (realloc's copies were a third of
		 * the page faults left in a small trace's decode) */
		size_t cap = img->capblocks ? 2 * img->capblocks : 1024;
		void *nb = img->blocks ? mremap(img->blocks, img->capblocks * sizeof *img->blocks, cap * sizeof *img->blocks,
						MREMAP_MAYMOVE)
				       : mmap(NULL, cap * sizeof *img->blocks, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (nb == MAP_FAILED) {
			*err = -pte_nomem;
			return NULL;
		}
		img->blocks = nb;
		img->capblocks = cap;
	}
	if (img->capoffs - img->noffs < BLOCK_MAX_INSNS) {
		size_t cap = img->capoffs ? 2 * img->capoffs : 65536;
		uint16_t *no = realloc(img->offs, cap * sizeof *no);
		if (!no) {
			*err = -pte_nomem;
			return NULL;
		}
		img->offs = no;
		img->capoffs = cap;
	}
	struct mt_code_block b;
	int rc = build_block(img, ip, &b, img->offs + img->noffs);
	if (rc < 0) {
		*err = rc;
		return NULL;
	}
	b.offs = (uint32_t)img->noffs;
	img->noffs += b.ninsn;
	size_t k = mt_image_block_slot(ip) & mask;
	while (img->block_slots[k])
		k = (k + 1) & mask;
	img->blocks[img->nblocks] = b;
	img->block_slots[k] = (uint32_t)++img->nblocks;
	return &img->blocks[img->nblocks - 1];
}
