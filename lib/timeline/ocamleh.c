#define _POSIX_C_SOURCE 200809L
/* ocamleh: OCaml exception-handler notes (see ocamleh.h). */
#include "timeline/ocamleh.h"
#include "base/infile.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "objects/elfsyms.h"
#include "base/strtab.h"

static int cmp_trap(const void *a, const void *b)
{
	const struct mt_ocaml_trap *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void mt_ocaml_traps_sort(struct mt_ocaml_traps *t)
{
	if (t->n > 1)
		qsort(t->v, t->n, sizeof *t->v, cmp_trap);
}

void mt_ocaml_traps_free(struct mt_ocaml_traps *t)
{
	for (size_t i = 0; i < t->npaths; i++)
		free(t->paths[i]);
	free(t->paths);
	free(t->v);
	memset(t, 0, sizeof *t);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* The descriptor: base, then three zero-terminated lists. */
static int parse_desc(struct mt_ocaml_traps *t, const uint8_t *d, size_t n, uint64_t adjust, const char *path,
		      struct mt_err *err)
{
	if (n < 8)
		return mt_err_set(err, MT_EFORMAT, "%s: .note.ocaml_eh: descriptor of %zu bytes", path, n);
	size_t at = 8, added = 0;
	for (int list = 0; list < 3; list++) {
		for (;;) {
			if (at + 8 > n)
				return mt_err_set(err, MT_EFORMAT, "%s: .note.ocaml_eh: list %d not terminated", path,
						  list + 1);
			uint64_t a = rd64(d + at);
			at += 8;
			if (!a)
				break;
			if (!mt_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v))
				return mt_err_set(err, MT_ENOMEM, "out of memory");
			t->v[t->n++] = (struct mt_ocaml_trap){a + adjust, (enum mt_ocaml_trap_kind)list};
			added++;
		}
	}
	return (int)added;
}

int mt_ocaml_traps_add_elf(struct mt_ocaml_traps *t, const char *path, uint64_t start, uint64_t pgoff,
			   struct mt_err *err)
{
	for (size_t i = 0; i < t->npaths; i++)
		if (!strcmp(t->paths[i], path))
			return 0;
	if (!mt_grow((void **)&t->paths, &t->cappaths, t->npaths + 1, sizeof *t->paths) ||
	    !(t->paths[t->npaths] = strdup(path)))
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	t->npaths++;
	elf_version(EV_CURRENT);
	struct mt_err oerr = {0};
	int fd = mt_infile_open(path, 0, &oerr);
	if (fd < 0)
		return 0;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	int rc = 0;
	size_t shstrndx, n0 = t->n;
	uint64_t bias;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) ||
	    !mt_elf_load_bias(elf, start, pgoff, &bias))
		goto out;
	uint64_t stapsdt_base = 0;
	bool have_base = false;
	Elf_Scn *note = NULL, *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (!name)
			continue;
		if (!strcmp(name, ".note.ocaml_eh") && sh.sh_type == SHT_NOTE)
			note = scn;
		else if (!strcmp(name, ".stapsdt.base")) {
			stapsdt_base = sh.sh_addr;
			have_base = true;
		}
	}
	Elf_Data *data = note ? elf_getdata(note, NULL) : NULL;
	size_t off = 0, name_off, desc_off, next;
	GElf_Nhdr nh;
	while (data && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const uint8_t *base = data->d_buf;
		if (nh.n_type == 1 && nh.n_namesz == 6 && !memcmp(base + name_off, "OCaml", 6)) {
			const uint8_t *desc = base + desc_off;
			/* SDT-style relocation (prelinked or moved binaries), then the bias */
			uint64_t adjust = nh.n_descsz >= 8 && have_base ? stapsdt_base - rd64(desc) : 0;
			int k = parse_desc(t, desc, nh.n_descsz, adjust + bias, path, err);
			if (k < 0) {
				rc = k;
				break;
			}
			rc += k;
		}
		off = next;
	}
out:
	if (rc < 0)
		t->n = n0; /* a malformed note adds nothing */
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}
