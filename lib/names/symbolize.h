/* symbolize: names for the addresses of the event stream.
 *
 * Mappings come from the stream's own metadata (# mmap: pid, range, file
 * offset, build-id, path); each object is read once: its ELF FUNC symbols
 * (.symtab, else .dynsym; zero-sized ones end where the next begins, as in
 * perf), PLT entries as name@plt, and the load bias from the PT_LOAD segment
 * holding the mapping's file offset. Objects are found under --symfs, in
 * perf's build-id cache, or at their path. */
#ifndef MT_SYMBOLIZE_H
#define MT_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/mt_err.h"

struct mt_sym;

struct mt_sym_result {
	const char *name;     /* NULL: no symbol covers the address */
	uint64_t off;         /* address - symbol start */
	const char *dso;      /* NULL: no mapping covers the address */
	const char *file;     /* with lines on: source file, NULL if unknown */
	int line;
	/* with inlines on: the inlined functions at the address, innermost
	 * first, ';'-separated ("" when none) */
	char inlines[1024];
};

struct mt_sym *mt_sym_new(const char *symfs, void (*warn)(void *ctx, const char *msg), void *warn_ctx);
void mt_sym_free(struct mt_sym *s);
/* JIT code: addresses no ELF names are looked up in DIR/perf-PID.map
 * (perf's convention, DIR usually /tmp), or in one explicit FILE. */
void mt_sym_set_perf_maps(struct mt_sym *s, const char *dir, const char *file);
/* Changes the root objects are looked up under (before the first lookup). */
void mt_sym_set_symfs(struct mt_sym *s, const char *symfs);
/* Objects by build-id from dir (perf's build-id cache layout: .build-id/,
 * [vdso]/) instead of ~/.debug, and nothing from this host: no host path,
 * no vDSO of this kernel (a bundle's objects). */
void mt_sym_set_buildid_dir(struct mt_sym *s, const char *dir);
/* Demangle C++, Rust and OCaml names (on by default). */
void mt_sym_set_demangle(struct mt_sym *s, bool on);
/* Also list the chain of inlined functions at each address (DWARF scopes). */
void mt_sym_set_inlines(struct mt_sym *s, bool on);
/* Also look up source file and line (DWARF line tables via libdw). */
void mt_sym_set_lines(struct mt_sym *s, bool on);
/* Whether a kallsyms file shows addresses (kptr_restrict shows zeros to
 * those it bars): /proc/kallsyms is only worth reading then. */
bool mt_kallsyms_usable(const char *path);
/* Kernel mappings ([kernel.kallsyms]...) take their symbols from a
 * vmlinux (ELF, absolute addresses) or a kallsyms copy. */
void mt_sym_set_kernel(struct mt_sym *s, const char *vmlinux, const char *kallsyms);
/* Adds a mapping, from the text after "# " of a "mmap" metadata line (any
 * metadata line may be given: a "fact clock" line says whether jitdump
 * times are the stream's, mt_sym_advance). Returns false when the line is
 * not a mapping. */
bool mt_sym_add_mmap_meta(struct mt_sym *s, const char *meta);
/* The stream has reached time t (perf's, as its events are ordered): JIT
 * code loaded by then names its addresses from now on, where the jitdump's
 * times are the recording's clock (perf record -k mono). Returns true when
 * what an address names may have changed (results kept must go). */
bool mt_sym_advance(struct mt_sym *s, uint64_t t);
/* Resolves addr as seen by process pid (kernel mappings, pid -1, serve all). */
void mt_sym_lookup(struct mt_sym *s, uint32_t pid, uint64_t addr, struct mt_sym_result *r);

#endif
