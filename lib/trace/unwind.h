/* unwind: the user-space frames of a stack sample recorded with
 * --call-graph=dwarf (the sampled thread's user registers and a copy of
 * the top of its stack), by elfutils' unwinder (libdwfl) over the CFI of
 * the objects the process has mapped (.eh_frame, .debug_frame, separate
 * debug info), as perf's util/unwind-libdw.c does: one Dwfl a process,
 * each object reported when a frame first lands in it, stack reads from
 * the copy only. x86-64. Debian's perf, the oracle, unwinds with
 * libunwind, which takes a register no CFI rule gives as unchanged where
 * libdwfl takes it as unknown: where that alone ends libdwfl's walk, it
 * goes on from the frame it stopped at, as libunwind does. */
#ifndef MT_UNWIND_H
#define MT_UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct mt_unwind;

/* perf's x86 user register numbers (perf_regs.h) the unwinder needs */
enum { MT_PREG_AX = 0, MT_PREG_BX, MT_PREG_CX, MT_PREG_DX, MT_PREG_SI, MT_PREG_DI, MT_PREG_BP, MT_PREG_SP,
       MT_PREG_IP, MT_PREG_R8 = 16, MT_PREG_COUNT = 24 };

/* symfs: the root objects were found under (a bundle's, --symfs), whose
 * /usr/lib/debug holds their separate debug info; NULL: this host's.
 * NULL with *why where libdw cannot be loaded (dwload.h), or out of
 * memory. */
struct mt_unwind *mt_unwind_new(const char *symfs, const char **why);
void mt_unwind_free(struct mt_unwind *u);

/* Process pid maps [start, start + len) of the object at path (a file on
 * this machine, found already) from file offset pgoff. Later mappings of
 * an address hide earlier ones. Returns 0, or -1 out of memory. */
int mt_unwind_add_map(struct mt_unwind *u, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *path);

/* The same for an object given as its bytes (this kernel's vDSO), kept in
 * an anonymous file the unwinder owns. Returns 0, or -1. */
int mt_unwind_add_image(struct mt_unwind *u, uint32_t pid, uint64_t start, uint64_t len, const void *image,
			size_t size);

/* The sample's registers: regs[i] for each bit i of mask (perf's order,
 * ascending), the stack copy from the sampled SP. */
struct mt_unwind_sample {
	uint32_t pid, tid;
	const uint64_t *regs; /* MT_PREG_COUNT entries, by perf register number */
	uint64_t mask;        /* which of them the sample holds */
	const uint8_t *stack;
	uint64_t stack_size;
};

/* Unwinds: writes up to max PCs, innermost first: the sampled IP, then
 * each caller's return address less one (inside its call instruction, as
 * perf's unwinder reports callers). Returns how many; *why, when the walk
 * was cut short by the sample (its stack copy ended, an address in no
 * mapped object, no IP or SP), says so, else NULL: where libdwfl finds no
 * CFI to go on, the walk ends there, as perf's does. */
size_t mt_unwind_run(struct mt_unwind *u, const struct mt_unwind_sample *s, uint64_t *pcs, size_t max,
		     const char **why);

#endif
