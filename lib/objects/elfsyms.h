/* elfsyms: the function symbols of an ELF file and the load bias of its
 * mappings, as image (function ranges)
 * and symbolize (names) both read them. */
#ifndef MT_ELFSYMS_H
#define MT_ELFSYMS_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

/* How many entries of entsize bytes a section's data really holds: its
 * header's size bounded by the data read from the file, and none for
 * data not in the file (SHT_NOBITS: a header may claim 2^62 bytes). */
size_t mt_elf_entries(const Elf_Data *data, const GElf_Shdr *sh, size_t entsize);

/* The table functions come from: .symtab, else .dynsym; NULL when neither. */
Elf_Scn *mt_elf_symtab(Elf *elf, GElf_Shdr *sh);
/* Calls fn for each defined, non-zero function symbol (FUNC, IFUNC and, with
 * labels, NOTYPE symbols in executable sections, as perf counts them) whose
 * name can be read. Returns how many such symbols had a name that cannot
 * (a damaged table: its string table missing, or names past its end). */
size_t mt_elf_for_each_func(Elf *elf, bool labels, void (*fn)(void *ctx, const GElf_Sym *sym, const char *name),
			    void *ctx);

/* The load bias of a mapping of elf at start with file offset pgoff:
 * start - (vaddr + (pgoff - offset)) of the PT_LOAD segment that holds
 * pgoff. False when no segment does. */
bool mt_elf_load_bias(Elf *elf, uint64_t start, uint64_t pgoff, uint64_t *bias);

/* The GNU build-id of the ELF file at path, up to 20 bytes into id: its
 * size, 0 when the file has none, -1 when it is not a readable ELF file. */
int mt_elf_file_build_id(const char *path, uint8_t id[20]);
/* The same for an ELF image in memory (the vDSO). */
int mt_elf_mem_build_id(const void *image, size_t size, uint8_t id[20]);

/* This process's vDSO (the kernel's, the same in every process): its bytes
 * at *base, and its length; 0 when it cannot be found. */
size_t mt_own_vdso(const void **base);

#endif
