/* kallsyms: the kernel's symbol list as /proc/kallsyms and perf's
 * kcore_dir copy write it, one "ADDR TYPE NAME [MODULE]" a line. Lines have
 * no length limit (a line cut in pieces would read its tail as a symbol of
 * its own), and the file must be a regular file. */
#ifndef MT_KALLSYMS_H
#define MT_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"

typedef void (*mt_kallsyms_fn)(void *ctx, uint64_t addr, const char *name);

/* Calls fn for each code symbol (type t, T, w or W) with a nonzero address
 * (kptr_restrict shows zeros), in file order; *bad counts the lines that
 * are not "ADDR TYPE NAME" (a NUL inside one included). Returns 0, or a
 * negative MT_E* code with err set (the file cannot be opened or read). */
int mt_kallsyms_read(const char *path, mt_kallsyms_fn fn, void *ctx, size_t *bad, struct mt_err *err);

#endif
