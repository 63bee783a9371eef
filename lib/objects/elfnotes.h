/* elfnotes: an ELF file's GNU build-id and .gnu_debuglink, read with
 * libelf alone, as libdw's dwelf_elf_gnu_build_id and
 * dwelf_elf_gnu_debuglink read them: the tools that need no libdw
 * otherwise (mt-pt2events) start without mapping it, liblzma and libbz2. */
#ifndef MT_ELFNOTES_H
#define MT_ELFNOTES_H

#include <gelf.h>
#include <stdint.h>
#include <sys/types.h>

/* The build-id's bytes at *id (inside elf's data): its length, 0 when elf
 * has none, -1 when elf cannot be read. The note sections are searched,
 * else (no section headers) the PT_NOTE segments. */
ssize_t mt_elf_gnu_build_id(Elf *elf, const void **id);

/* The file name .gnu_debuglink gives, its CRC32 at *crc; NULL when elf has
 * no such section or it is malformed (no NUL, no room for the CRC). */
const char *mt_elf_gnu_debuglink(Elf *elf, uint32_t *crc);

#endif
