/* loop: main found by its ELF symbol in the mapping that holds it, its
 * call and return found in the run. */
#define _GNU_SOURCE
#include "synth/loop.h"

#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "objects/elfsyms.h"

struct find { uint64_t value; bool found; };

static void is_main(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct find *f = ctx;
	if (!f->found && !strcmp(name, "main")) {
		f->value = sym->st_value;
		f->found = true;
	}
}

/* main's address in the run, 0 when no executable mapping's file has it */
static uint64_t main_address(const struct mt_synth_run *run)
{
	elf_version(EV_CURRENT);
	for (size_t i = 0; i < run->nmaps; i++) {
		const struct mt_synth_map *m = &run->maps[i];
		if (m->path[0] != '/' || !(m->prot & 4 /* PROT_EXEC */))
			continue;
		int fd = open(m->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		struct find f = {0};
		uint64_t bias = 0, addr = 0;
		if (elf) {
			mt_elf_for_each_func(elf, false, is_main, &f);
			if (f.found && mt_elf_load_bias(elf, m->start, m->pgoff, &bias) && f.value + bias >= m->start &&
			    f.value + bias < m->start + m->len)
				addr = f.value + bias;
			elf_end(elf);
		}
		close(fd);
		if (addr)
			return addr;
	}
	return 0;
}

bool mt_synth_main_call(const struct mt_synth_run *run, size_t *from, size_t *to)
{
	uint64_t main_ip = main_address(run);
	if (!main_ip)
		return false;
	size_t i = 0;
	for (; i + 1 < run->nips; i++) {
		const struct mt_synth_insn *in = mt_synth_insn_at(run, run->ips[i]);
		if ((in->cls == MT_IC_CALL || in->cls == MT_IC_CALL_IND) && run->ips[i + 1] == main_ip)
			break;
	}
	if (i + 1 >= run->nips)
		return false;
	/* its return: the first ret to the call's return address (a depth
	 * count would be thrown off by longjmp and signal handlers) */
	uint64_t back = run->ips[i] + mt_synth_insn_at(run, run->ips[i])->len;
	for (size_t j = i + 1; j + 1 < run->nips; j++)
		if (run->ips[j + 1] == back && mt_synth_insn_at(run, run->ips[j])->cls == MT_IC_RET) {
			*from = i;
			*to = j;
			return true;
		}
	return false;
}
