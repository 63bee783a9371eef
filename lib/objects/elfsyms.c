/* elfsyms: see elfsyms.h. */
#define _GNU_SOURCE
#include "objects/elfsyms.h"
#include "objects/elfnotes.h"
#include "base/infile.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <string.h>
#include <unistd.h>

Elf_Scn *mt_elf_symtab(Elf *elf, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL, *chosen = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			chosen = scn;
		else if (sh.sh_type == SHT_DYNSYM && !chosen)
			chosen = scn;
	}
	if (chosen && !gelf_getshdr(chosen, out))
		chosen = NULL;
	return chosen;
}

size_t mt_elf_entries(const Elf_Data *data, const GElf_Shdr *sh, size_t entsize)
{
	if (!data || !data->d_buf || !entsize || sh->sh_type == SHT_NOBITS)
		return 0;
	uint64_t size = sh->sh_size < data->d_size ? sh->sh_size : data->d_size;
	return (size_t)(size / entsize);
}

size_t mt_elf_for_each_func(Elf *elf, bool labels, void (*fn)(void *ctx, const GElf_Sym *sym, const char *name),
			    void *ctx)
{
	size_t unnamed = 0;
	GElf_Shdr sh;
	Elf_Scn *tab = mt_elf_symtab(elf, &sh);
	Elf_Data *data = tab ? elf_getdata(tab, NULL) : NULL;
	size_t count = mt_elf_entries(data, &sh, sh.sh_entsize);
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		int type = GELF_ST_TYPE(sym.st_info);
		if (type == STT_NOTYPE && labels && sym.st_shndx < SHN_LORESERVE) {
			GElf_Shdr tsh;
			Elf_Scn *ts = elf_getscn(elf, sym.st_shndx);
			if (!ts || !gelf_getshdr(ts, &tsh) || !(tsh.sh_flags & SHF_EXECINSTR))
				continue;
		} else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			continue;
		}
		const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name)
			unnamed++;
		else
			fn(ctx, &sym, name);
	}
	return unnamed;
}

bool mt_elf_load_bias(Elf *elf, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	size_t nph;
	if (elf_getphdrnum(elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (pgoff >= (ph.p_offset & ~0xfffULL) && pgoff < ph.p_offset + ph.p_filesz) {
			*bias = start - (ph.p_vaddr + (pgoff - ph.p_offset));
			return true;
		}
	}
	return false;
}

/* elf's build-id into id (see mt_elf_file_build_id), and ends elf. */
static int build_id_of(Elf *elf, uint8_t id[20])
{
	int n = -1;
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		const void *p;
		ssize_t len = mt_elf_gnu_build_id(elf, &p);
		n = len > 0 ? (int)(len > 20 ? 20 : len) : 0;
		if (n > 0)
			memcpy(id, p, (size_t)n);
	}
	if (elf)
		elf_end(elf);
	return n;
}

int mt_elf_file_build_id(const char *path, uint8_t id[20])
{
	struct mt_err err = {0};
	int fd = mt_infile_open(path, 0, &err);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	int n = build_id_of(elf_begin(fd, ELF_C_READ_MMAP, NULL), id);
	close(fd);
	return n;
}

int mt_elf_mem_build_id(const void *image, size_t size, uint8_t id[20])
{
	elf_version(EV_CURRENT);
	/* elf_memory takes a writable pointer but only reads with ELF_C_READ */
	return size ? build_id_of(elf_memory((char *)(uintptr_t)image, size), id) : -1;
}

size_t mt_own_vdso(const void **base)
{
	uintptr_t at = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	FILE *maps = at ? fopen("/proc/self/maps", "r") : NULL;
	char line[512];
	size_t len = 0;
	while (maps && fgets(line, sizeof line, maps)) {
		unsigned long a, b;
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &a, &b) == 2 && a == at)
			len = b - a;
	}
	if (maps)
		fclose(maps);
	*base = (const void *)at;
	return len;
}
