#include "objects/elfnotes.h"

#include <elf.h>
#include <string.h>

/* A GNU build-id note in the notes of data: its length, 0 none. */
static ssize_t note_build_id(Elf_Data *data, const void **id)
{
	size_t off = 0, next;
	GElf_Nhdr nh;
	size_t name_off, desc_off;
	while (data && off < data->d_size && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof ELF_NOTE_GNU &&
		    !memcmp((const char *)data->d_buf + name_off, ELF_NOTE_GNU, sizeof ELF_NOTE_GNU)) {
			*id = (const char *)data->d_buf + desc_off;
			return (ssize_t)nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

ssize_t mt_elf_gnu_build_id(Elf *elf, const void **id)
{
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return -1;
	size_t nscn;
	if (elf_getshdrnum(elf, &nscn) == 0 && nscn > 1) {
		for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
				continue;
			ssize_t n = note_build_id(elf_getdata(scn, NULL), id);
			if (n)
				return n;
		}
		return 0;
	}
	size_t nph;
	if (elf_getphdrnum(elf, &nph))
		return -1;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		ssize_t n = note_build_id(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
							       ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR),
					  id);
		if (n)
			return n;
	}
	return 0;
}

const char *mt_elf_gnu_debuglink(Elf *elf, uint32_t *crc)
{
	size_t shstrndx;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".gnu_debuglink"))
			continue;
		Elf_Data *raw = elf_getdata(scn, NULL);
		if (!raw || !raw->d_buf)
			return NULL;
		const char *file = raw->d_buf;
		const char *nul = memchr(file, '\0', raw->d_size);
		if (!nul)
			return NULL;
		size_t crc_off = ((size_t)(nul - file) + 4) & ~(size_t)3;
		if (crc_off + 4 > raw->d_size)
			return NULL;
		/* the CRC in the file's byte order */
		Elf_Data from = {.d_type = ELF_T_WORD, .d_buf = (char *)raw->d_buf + crc_off, .d_size = 4,
				 .d_version = EV_CURRENT};
		Elf_Data to = {.d_type = ELF_T_WORD, .d_buf = crc, .d_size = 4, .d_version = EV_CURRENT};
		GElf_Ehdr eh;
		if (!gelf_getehdr(elf, &eh) || !gelf_xlatetom(elf, &to, &from, eh.e_ident[EI_DATA]))
			return NULL;
		return file;
	}
	return NULL;
}
