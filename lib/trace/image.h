/* image: the memory a PT decoder reads code from.
 *
 * Sections come from ELF files named by perf.data mappings (found under a
 * --symfs root or in perf's build-id cache), from raw files at an address,
 * or from page-image sets (.addr + .dump). Also keeps the function ranges of
 * the ELF files, so the decoder can tell a jump that leaves its function. */
#ifndef MT_IMAGE_H
#define MT_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"
#include "base/strtab.h"
#include "trace/csload.h"
#include "trace/runcache.h"
#include "trace/secmap.h"

struct pt_image;
struct pt_image_section_cache;

struct mt_func_range {
	uint64_t start, end;
};

/* A section of the image: bytes of one of its files at an address. */
struct mt_image_section {
	uint64_t vaddr, size;
	uint64_t offset; /* in the file */
	uint32_t file;
};

/* A file sections read from, mapped on first read (most are never read:
 * only code that ran is). */
struct mt_image_file {
	const char *path; /* interned in the image's names */
	uint64_t size;    /* as it was when added: no section reads past it */
	const uint8_t *map;
	uint64_t mapped;  /* bytes of map */
	bool tried;       /* mapping tried (map NULL: read by pread) */
};

/* A block of code: the instructions from ip up to and including the next
 * branch, in one straight line -- what a trace walk passes in one step. */
struct mt_code_block {
	uint64_t ip;               /* the first instruction */
	uint64_t end_ip;           /* the last: the branch (or where the block was cut) */
	uint64_t target;           /* a direct branch's target */
	uint32_t ninsn;            /* 0: an empty slot of the cache */
	uint32_t offs;             /* where its instructions' offsets from ip lie (mt_image.offs) */
	uint8_t cls;               /* enum pt_insn_class of the last instruction; ptic_other: no branch, cut */
	uint8_t len;               /* the last instruction's length */
	bool direct;               /* a branch with its target in the instruction */
	/* a direct jump (conditional or not) to its own function, or from
	 * no known function to none: never reported but with every branch */
	bool stays;
	bool mov_cr3;              /* a MOV CR3 among its instructions (kernel code) */
};

struct mt_image {
	struct pt_image *image; /* libipt's, made from mt's sections (mt_image_libipt) */
	struct pt_image_section_cache *iscache; /* libipt's sections, kept mapped */
	bool libipt_built;
	size_t libipt_nsections;
	struct mt_func_range *funcs; /* sorted by start once finalized */
	size_t nfuncs, capfuncs;
	bool funcs_sorted;
	size_t nsections;
	/* the sections in the order added: a later one hides an earlier one
	 * where they overlap, as in libipt's image (secmap finds which) */
	struct mt_image_section *secs;
	size_t capsecs;
	struct mt_secmap map;
	/* each file once, however many sections read it (a recording may map
	 * one object thousands of times); file_slots: open addressing by
	 * path, file index + 1 */
	struct mt_image_file *files;
	size_t nfiles, capfiles, nmapped;
	uint32_t *file_slots;
	size_t capslots;
	struct mt_strtab names;
	/* blocks decoded so far, in the order decoded, emptied whenever a
	 * section is added; block_slots: each one's index + 1 by ip (open
	 * addressing; 0 an empty slot); offs: each block's instruction
	 * offsets. Dense, not a table of blocks a quarter full: a small
	 * trace's decode touched 226 pages of table, 11 us each here. */
	struct mt_code_block *blocks;
	size_t capblocks, nblocks;
	uint32_t *block_slots;
	size_t capblock_slots;
	uint16_t *offs;
	size_t noffs, capoffs;
	/* counts the flushes of the block cache from 1 (0 never: an empty
	 * slot of runs): what is built from blocks holds while it stays */
	uint32_t generation;
	struct mt_runcache runs;   /* runs of blocks, for the decoder's walk */
	struct mt_csload cs;       /* Capstone, for what mt_insn_length leaves */
};

int mt_image_init(struct mt_image *img, const char *name, struct mt_err *err);
void mt_image_fini(struct mt_image *img);

/* Adds bytes [offset, offset+size) of `path` at `vaddr` (size 0 = to end of file). */
int mt_image_add_file(struct mt_image *img, const char *path, uint64_t offset,
		      uint64_t size, uint64_t vaddr, struct mt_err *err);
/* Parses "FILE[:OFFSET[-END]]@VADDR" and adds it. */
int mt_image_add_spec(struct mt_image *img, const char *spec, struct mt_err *err);
/* Adds a page-image set: `prefix`.addr (u64 page addresses) + `prefix`.dump. */
int mt_image_add_pageset(struct mt_image *img, const char *prefix, struct mt_err *err);

/* Adds a perf.data mapping of an ELF file: its code and its function
 * symbols (load bias computed from the PT_LOAD segment holding pgoff). */
int mt_image_add_mapping(struct mt_image *img, const char *file, uint64_t start,
			 uint64_t len, uint64_t pgoff, struct mt_err *err);

/* Adds kernel code from an ELF with absolute addresses (a vmlinux, or the
 * kcore that perf record --kcore saves): every PT_LOAD segment part inside
 * [start, start+len), plus the ELF's FUNC symbols if it has any. */
int mt_image_add_kernel(struct mt_image *img, const char *elf, uint64_t start, uint64_t len,
			struct mt_err *err);
/* Adds function ranges from a /proc/kallsyms copy (text symbols; each ends
 * where the next begins), for a kcore, which has no symbols. */
int mt_image_add_kallsyms(struct mt_image *img, const char *path, struct mt_err *err);

/* Start address of the function containing addr, or 0 when unknown. */
uint64_t mt_image_func_of(struct mt_image *img, uint64_t addr);
/* The same, with the function's end: [*start, *end) holds addr; false when
 * no known function does, and then [*start, *end) is the gap around addr
 * that no function starts in. */
bool mt_image_func_range(struct mt_image *img, uint64_t addr, uint64_t *start, uint64_t *end);
/* The block of code starting at ip (decoded on first use and kept, so the
 * pointer holds until the next lookup); mt_image_block_new looks further
 * than the first slot, and decodes the block if it must. NULL with *err -pte_nomap where no
 * section holds ip, -pte_bad_insn where its bytes are no instruction. */
const struct mt_code_block *mt_image_block_new(struct mt_image *img, uint64_t ip, int *err);

static inline size_t mt_image_block_slot(uint64_t ip)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15u) >> 40);
}

/* The fast path inline: a block seen before, at its first slot. */
static inline const struct mt_code_block *mt_image_block(struct mt_image *img, uint64_t ip, int *err)
{
	if (img->capblock_slots) {
		uint32_t v = img->block_slots[mt_image_block_slot(ip) & (img->capblock_slots - 1)];
		if (v && img->blocks[v - 1].ip == ip)
			return &img->blocks[v - 1];
	}
	return mt_image_block_new(img, ip, err);
}
/* The run of blocks from ip steered by the next TNT bits (runcache.h),
 * in this generation of the image's blocks. */
static inline const struct mt_run *mt_image_run(struct mt_image *img, uint64_t ip, unsigned bits, unsigned nbits)
{
	return mt_runcache_find(&img->runs, img, img->generation, ip, bits, nbits);
}

/* libipt's image for its own decoders, made on first use (again when
 * sections were added since): mt's sections where they are few, else none
 * and every byte read from img through a callback (img must not move
 * while it is used). */
struct pt_image *mt_image_libipt(struct mt_image *img);
/* Reads up to size bytes of code at vaddr, across adjacent sections (an
 * instruction may straddle two pages of a page-image set); returns how
 * many it read, 0 where nothing is mapped. */
size_t mt_image_read(struct mt_image *img, uint64_t vaddr, uint8_t *buf, size_t size);

#endif
