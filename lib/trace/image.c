#define _GNU_SOURCE
#include "trace/image.h"
#include "base/infile.h"
#include "objects/elfsyms.h"
#include "objects/kallsyms.h"
#include "base/strtab.h"
#include "trace/x86.h"

#include <capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_image_init(struct mt_image *img, const char *name, struct mt_err *err)
{
	memset(img, 0, sizeof *img);
	img->iscache = pt_iscache_alloc(name);
	img->image = pt_image_alloc(name);
	if (!img->iscache || !img->image) {
		mt_image_fini(img);
		return mt_err_set(err, MT_ENOMEM, "out of memory allocating a PT image");
	}
	/* keep sections mapped between decoders (one per segment): without
	 * a limit libipt maps them again for each and its memory grows */
	pt_iscache_set_limit(img->iscache, (uint64_t)256 << 20);
	return 0;
}

void mt_image_fini(struct mt_image *img)
{
	if (img->image)
		pt_image_free(img->image);
	if (img->iscache)
		pt_iscache_free(img->iscache);
	free(img->funcs);
	free(img->secs);
	free(img->blocks);
	free(img->offs);
	if (img->csh) {
		csh h = img->csh;
		cs_close(&h);
	}
	memset(img, 0, sizeof *img);
}

static void flush_blocks(struct mt_image *img)
{
	if (img->nblocks) {
		memset(img->blocks, 0, img->capblocks * sizeof *img->blocks);
		img->nblocks = 0;
		img->noffs = 0;
	}
}

/* Notes a section added to the image; blocks decoded before may now read
 * other bytes, so the block cache starts afresh. */
static int add_section(struct mt_image *img, int isid, uint64_t vaddr, uint64_t size)
{
	if (img->nsections == img->capsecs) {
		size_t cap = img->capsecs ? 2 * img->capsecs : 16;
		void *n = realloc(img->secs, cap * sizeof *img->secs);
		if (!n)
			return MT_ENOMEM;
		img->secs = n;
		img->capsecs = cap;
	}
	img->secs[img->nsections++] = (struct mt_image_section){vaddr, size, isid};
	img->last_sec = img->nsections - 1;
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
	int isid = pt_iscache_add_file(img->iscache, path, offset, size, vaddr);
	if (isid < 0)
		return mt_err_set(err, MT_EIO, "%s: cannot add to image: %s", path, pt_errstr(pt_errcode(isid)));
	int rc = pt_image_add_cached(img->image, img->iscache, isid, NULL);
	if (rc < 0)
		return mt_err_set(err, MT_EIO, "%s: cannot add to image: %s", path, pt_errstr(pt_errcode(rc)));
	if (add_section(img, isid, vaddr, size))
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
		int isid = pt_iscache_add_file(img->iscache, dpath, i * 4096, 4096, addr);
		if (isid < 0 || pt_image_add_cached(img->image, img->iscache, isid, NULL) < 0 ||
		    add_section(img, isid, addr, 4096)) {
			rc = mt_err_set(err, MT_EIO, "%s: cannot add page %" PRIu64 " at 0x%" PRIx64, dpath, i, addr);
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

static int cmp_func(const void *a, const void *b)
{
	const struct mt_func_range *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* the larger symbol first: aliases of one function collapse onto it */
	return x->end > y->end ? -1 : x->end < y->end;
}

bool mt_image_func_range(struct mt_image *img, uint64_t addr, uint64_t *start, uint64_t *end)
{
	if (!img->funcs_sorted) {
		if (img->nfuncs)
			qsort(img->funcs, img->nfuncs, sizeof *img->funcs, cmp_func);
		img->funcs_sorted = true;
	}
	size_t lo = mt_count_at_or_below(img->funcs, img->nfuncs, sizeof *img->funcs,
					 offsetof(struct mt_func_range, start), addr);
	/* lo-1 is the last range starting at or below addr */
	for (size_t i = lo; i > 0 && i > lo - 4; i--) {
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

/* The newest section holding vaddr, or -1. */
static ptrdiff_t section_at(struct mt_image *img, uint64_t vaddr)
{
	if (!img->nsections)
		return -1; /* an image with no code (secs NULL) */
	const struct mt_image_section *s = &img->secs[img->last_sec];
	if (vaddr - s->vaddr < s->size && img->last_sec == img->nsections - 1)
		return (ptrdiff_t)img->last_sec;
	for (size_t i = img->nsections; i-- > 0;) {
		s = &img->secs[i];
		if (vaddr - s->vaddr < s->size) {
			img->last_sec = i;
			return (ptrdiff_t)i;
		}
	}
	return -1;
}

size_t mt_image_read(struct mt_image *img, uint64_t vaddr, uint8_t *buf, size_t size)
{
	size_t got = 0;
	while (got < size) {
		ptrdiff_t k = section_at(img, vaddr + got);
		if (k < 0)
			break;
		int n = pt_iscache_read(img->iscache, buf + got, size - got, img->secs[k].isid, vaddr + got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

enum { BLOCK_BYTES = 512, BLOCK_MAX_INSNS = 256 };

/* Capstone 4 sorts some of its x86 tables on first use, unlocked: two
 * threads disassembling their first instruction at once race on them
 * (helgrind saw it with two decode jobs). One instruction disassembled
 * under a lock before any other sorts them (helgrind does not see
 * pthread_once's ordering, a mutex it does). */
static void capstone_first_use(void)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static bool done;
	static const uint8_t mov[] = {0x48, 0x89, 0xd8}; /* mov rax, rbx */
	pthread_mutex_lock(&mu);
	csh h;
	if (!done && cs_open(CS_ARCH_X86, CS_MODE_64, &h) == CS_ERR_OK) {
		cs_insn *insn = NULL;
		size_t n = cs_disasm(h, mov, sizeof mov, 0, 1, &insn);
		if (n)
			cs_free(insn, n);
		cs_close(&h);
		done = true;
	}
	pthread_mutex_unlock(&mu);
}

static int build_block(struct mt_image *img, uint64_t ip, struct mt_code_block *b, uint16_t *offs)
{
	if (!img->csh) {
		capstone_first_use();
		csh h;
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
			return -pte_nomem;
		img->csh = h;
	}
	uint8_t buf[BLOCK_BYTES];
	size_t have = mt_image_read(img, ip, buf, sizeof buf);
	if (!have)
		return -pte_nomap;
	cs_insn *insn = cs_malloc((csh)img->csh);
	if (!insn)
		return -pte_nomem;
	*b = (struct mt_code_block){.ip = ip, .cls = ptic_other};
	size_t off = 0;
	int rc = 0;
	for (;;) {
		const uint8_t *code = buf + off;
		size_t left = have - off;
		uint64_t addr = ip + off;
		if (have == sizeof buf && left < 16)
			break; /* an instruction may go on past what was read: the next block */
		if (!cs_disasm_iter((csh)img->csh, &code, &left, &addr, insn)) {
			unsigned vlen = mt_vex_length(buf + off, have - off);
			if (vlen) {
				/* newer AVX-512 than capstone knows: never a branch */
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
		int cls = mt_insn_classify(buf + off, insn->size, &direct, &disp, &dlen);
		offs[b->ninsn++] = (uint16_t)off;
		b->end_ip = ip + off;
		b->len = (uint8_t)insn->size;
		off += insn->size;
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
	cs_free(insn, 1);
	return rc;
}

const struct mt_code_block *mt_image_block_new(struct mt_image *img, uint64_t ip, int *err)
{
	size_t mask = img->capblocks - 1;
	if (img->capblocks) {
		for (size_t k = mt_image_block_slot(ip) & mask;; k = (k + 1) & mask) {
			const struct mt_code_block *b = &img->blocks[k];
			if (b->ip == ip && b->ninsn)
				return b;
			if (!b->ninsn)
				break;
		}
	}
	if (4 * (img->nblocks + 1) > img->capblocks) {
		/* grow (or start) the table at a quarter full: most blocks at
		 * their first slot, which the inline lookup reads */
		size_t cap = img->capblocks ? 2 * img->capblocks : 4096;
		struct mt_code_block *nb = calloc(cap, sizeof *nb);
		if (!nb) {
			*err = -pte_nomem;
			return NULL;
		}
		for (size_t i = 0; i < img->capblocks; i++) {
			if (!img->blocks[i].ninsn)
				continue;
			size_t k = mt_image_block_slot(img->blocks[i].ip) & (cap - 1);
			while (nb[k].ninsn)
				k = (k + 1) & (cap - 1);
			nb[k] = img->blocks[i];
		}
		free(img->blocks);
		img->blocks = nb;
		img->capblocks = cap;
		mask = cap - 1;
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
	while (img->blocks[k].ninsn)
		k = (k + 1) & mask;
	img->blocks[k] = b;
	img->nblocks++;
	return &img->blocks[k];
}
