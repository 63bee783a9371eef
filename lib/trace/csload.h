/* csload: Capstone, loaded on first use (dlopen). mt_insn_length measures
 * nearly every instruction the decoder meets; linking Capstone would cost
 * every start of mt-pt2events its ~77,000 relocations (some 400 page
 * faults, most of a small trace's run) for the few it leaves. */
#ifndef MT_CSLOAD_H
#define MT_CSLOAD_H

#include <stddef.h>
#include <stdint.h>

/* One thread's decoder (Capstone's handle and instruction), opened on
 * first use; zeroed: not yet. */
struct mt_csload {
	size_t handle;
	void *insn;
};

/* The length of the x86-64 instruction at code[0..n) (at addr) as
 * Capstone decodes it; 0 when it decodes none; -pte_not_supported when
 * Capstone cannot be loaded (libcapstone.so.4 or .5), -pte_nomem when it
 * cannot open. */
int mt_csload_length(struct mt_csload *c, const uint8_t *code, size_t n, uint64_t addr);
void mt_csload_close(struct mt_csload *c);

#endif
