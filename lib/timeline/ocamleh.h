/* ocamleh: OCaml's exception-handler notes (magic-trace's mode A,
 * shared/docs/magic-trace-behaviour.md section 5.11).
 *
 * An OCaml program built for magic-trace carries a .note.ocaml_eh note
 * (owner "OCaml", type 1): a recorded base address, then three
 * zero-terminated lists of u64 code addresses: where exception handlers
 * begin (entertraps), where try blocks push their trap (pushtraps) and pop
 * it (poptraps). Addresses are relocated as SDT notes are, by the
 * difference between the .stapsdt.base section's address and the recorded
 * base, and then by the mapping's load bias. */
#ifndef MT_OCAMLEH_H
#define MT_OCAMLEH_H
#include <stddef.h>
#include <stdint.h>
#include "base/mt_err.h"

enum mt_ocaml_trap_kind { MT_TRAP_ENTER, MT_TRAP_PUSH, MT_TRAP_POP };

struct mt_ocaml_trap {
	uint64_t addr;
	enum mt_ocaml_trap_kind kind;
};

struct mt_ocaml_traps {
	struct mt_ocaml_trap *v; /* sorted by address after mt_ocaml_traps_sort */
	size_t n, cap;
	char **paths;            /* objects read (each is read once) */
	size_t npaths, cappaths;
};

/* Adds the traps of the ELF at path mapped at start with file offset
 * pgoff (the bias comes from the PT_LOAD holding pgoff). Returns the number
 * added (0: no note, not an ELF, or an object read before), or a negative
 * MT_E* code for a note that is there but malformed (err says where). */
int mt_ocaml_traps_add_elf(struct mt_ocaml_traps *t, const char *path, uint64_t start, uint64_t pgoff,
			   struct mt_err *err);
void mt_ocaml_traps_sort(struct mt_ocaml_traps *t);
void mt_ocaml_traps_free(struct mt_ocaml_traps *t);

#endif
