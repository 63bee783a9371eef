/* fpcheck: see fpcheck.h. */
#define _GNU_SOURCE
#include "objects/fpcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <capstone.h>
#include <gelf.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "objects/elfsyms.h"

int mt_fpcheck_prologue(const unsigned char *code, size_t n)
{
	static const unsigned char endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
	if (n >= 4 && !memcmp(code, endbr64, 4)) {
		code += 4;
		n -= 4;
	}
	/* push %rbp; mov %rsp,%rbp (either encoding of the mov) */
	return n >= 4 && code[0] == 0x55 && code[1] == 0x48 && ((code[2] == 0x89 && code[3] == 0xe5) ||
								 (code[2] == 0x8b && code[3] == 0xec));
}

struct count {
	Elf *elf;
	csh cs;
	size_t with, all;
};

/* Whether a function's code (up to 4 KiB of it) calls anything: a leaf
 * needs no frame of its own, and gcc's -fno-omit-frame-pointer makes
 * none for it (-momit-leaf-frame-pointer), so leaves tell nothing. */
static bool calls(csh cs, const uint8_t *code, size_t n, uint64_t addr)
{
	if (n > 4096)
		n = 4096;
	cs_insn *insn = cs_malloc(cs);
	bool found = false;
	while (insn && !found && cs_disasm_iter(cs, &code, &n, &addr, insn))
		found = insn->id == X86_INS_CALL;
	cs_free(insn, 1);
	return found;
}

/* The C runtime's start-up code, linked into every program and built as
 * the C library was, not as the program */
static bool crt(const char *name)
{
	static const char *const names[] = {"_start", "_init", "_fini", "deregister_tm_clones", "register_tm_clones",
					    "__do_global_dtors_aux", "frame_dummy", "__libc_csu_init",
					    "__libc_csu_fini", "_dl_relocate_static_pie"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

static void count_func(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct count *c = ctx;
	if (sym->st_size < 8 || crt(name))
		return; /* stubs and thunks set up no frame in any build */
	Elf_Scn *scn = elf_getscn(c->elf, sym->st_shndx);
	GElf_Shdr sh;
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
	    sym->st_value < sh.sh_addr || sym->st_value - sh.sh_addr + 8 > sh.sh_size)
		return;
	Elf_Data *d = elf_getdata(scn, NULL);
	uint64_t at = sym->st_value - sh.sh_addr;
	if (!d || !d->d_buf || at + 8 > d->d_size || c->all >= 4000)
		return; /* 4000 functions tell a build */
	const uint8_t *code = (const uint8_t *)d->d_buf + at;
	if (mt_fpcheck_prologue(code, 8)) {
		c->with++;
		c->all++;
	} else if (calls(c->cs, code, sym->st_size < d->d_size - at ? sym->st_size : d->d_size - at, sym->st_value)) {
		c->all++;
	}
}

int mt_fpcheck_file(const char *path, size_t *with_fp, size_t *functions, struct mt_err *err)
{
	*with_fp = *functions = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64) {
		if (elf)
			elf_end(elf);
		close(fd);
		return mt_err_set(err, MT_EFORMAT, "%s: not an x86-64 ELF file", path);
	}
	struct count c = {.elf = elf};
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &c.cs) != CS_ERR_OK) {
		elf_end(elf);
		close(fd);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	mt_elf_for_each_func(elf, false, count_func, &c);
	cs_close(&c.cs);
	*with_fp = c.with;
	*functions = c.all;
	elf_end(elf);
	close(fd);
	return 0;
}
