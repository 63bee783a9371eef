/* elfnotes: build-ids and debuglinks read with libelf alone.
 * Oracle: libdw's dwelf_elf_gnu_build_id and dwelf_elf_gnu_debuglink on
 * the same files: every ELF file of this system's library and program
 * directories (objects with and without a build-id, stripped ones with a
 * debuglink, separate debug files), this process's vDSO from memory,
 * and an object whose section headers are cut off (the PT_NOTE
 * segments then). Bytes, lengths, names and CRCs must all agree. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "objects/elfnotes.h"
#include "objects/elfsyms.h"
#include "tap.h"

static size_t files, with_id, with_link, differ;

static void compare(Elf *elf, const char *what)
{
	const void *a = NULL, *b = NULL;
	ssize_t na = mt_elf_gnu_build_id(elf, &a), nb = dwelf_elf_gnu_build_id(elf, &b);
	GElf_Word crc_b = 0;
	uint32_t crc_a = 0;
	const char *la = mt_elf_gnu_debuglink(elf, &crc_a), *lb = dwelf_elf_gnu_debuglink(elf, &crc_b);
	bool same = na == nb && (na <= 0 || !memcmp(a, b, (size_t)na)) && !la == !lb &&
		    (!la || (!strcmp(la, lb) && crc_a == crc_b));
	if (!same && differ++ < 5)
		printf("# %s: build-id %zd/%zd, debuglink %s/%s\n", what, na, nb, la ? la : "-", lb ? lb : "-");
	files++;
	with_id += nb > 0;
	with_link += lb != NULL;
}

static void walk(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) && files < 4000) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR && depth > 0) {
			walk(path, depth - 1);
			continue;
		}
		if (e->d_type != DT_REG)
			continue;
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (elf && elf_kind(elf) == ELF_K_ELF)
			compare(elf, path);
		if (elf)
			elf_end(elf);
		close(fd);
	}
	if (d)
		closedir(d);
}

int main(void)
{
	elf_version(EV_CURRENT);
	walk("/usr/lib/x86_64-linux-gnu", 0);
	walk("/usr/bin", 0);
	walk("/usr/lib/debug/.build-id", 1);
	printf("# %zu ELF files, %zu with a build-id, %zu with a debuglink\n", files, with_id, with_link);
	ok(files > 200 && with_id > 100 && with_link > 10 && !differ,
	   "every file's build-id and debuglink as libdw's dwelf reads them");

	const void *vdso;
	size_t len = mt_own_vdso(&vdso);
	Elf *elf = len ? elf_memory((char *)(uintptr_t)vdso, len) : NULL;
	size_t before = differ;
	const void *id;
	ok(elf && mt_elf_gnu_build_id(elf, &id) > 0 && (compare(elf, "vdso"), differ == before),
	   "the vDSO from memory: its build-id as dwelf's");
	if (elf)
		elf_end(elf);

	/* no section headers: the build-id from the PT_NOTE segments */
	int fd = open("/usr/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	off_t size = lseek(fd, 0, SEEK_END);
	char *copy = malloc((size_t)size);
	ok(fd >= 0 && pread(fd, copy, (size_t)size, 0) == size, "libc read");
	close(fd);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)copy;
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	elf = elf_memory(copy, (size_t)size);
	size_t n_elf_sh = 1;
	before = differ;
	ok(elf && elf_getshdrnum(elf, &n_elf_sh) == 0 && n_elf_sh == 0 && mt_elf_gnu_build_id(elf, &id) == 20 &&
		   (compare(elf, "libc without section headers"), differ == before),
	   "without section headers: the build-id from PT_NOTE, as dwelf's");
	if (elf)
		elf_end(elf);
	free(copy);
	return tap_done();
}
