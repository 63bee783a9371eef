/* brstack: the entries of a sample's branch stack (PERF_SAMPLE_BRANCH_STACK:
 * Intel LBR, AMD's LbrExtV2, Arm BRBE), as the kernel lays them out
 * (struct perf_branch_entry: from, to, a u64 of flags), and their text in
 * the event stream (mt-events(5)'s branch= column). */
#ifndef MT_BRSTACK_H
#define MT_BRSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_BRANCH_ENTRY_SIZE 24

struct mt_branch {
	uint64_t from, to;
	bool mispred, predicted, in_tx, abort;
	unsigned cycles;   /* cycles since the previous entry (0: not counted) */
	unsigned type;     /* PERF_BR_*: 0 unknown */
	unsigned spec;     /* PERF_BR_SPEC_*: 0 not known */
	unsigned new_type; /* with type 15 (EXTEND_ABI) */
};

/* One entry, at p (MT_BRANCH_ENTRY_SIZE bytes, little-endian). */
void mt_branch_parse(const uint8_t *p, struct mt_branch *b);

/* The entry's text: 0xFROM/0xTO/PRED/TX/ABORT/CYCLES/TYPE, the fields of
 * perf script's brstack (PRED: M mispredicted, P predicted, - not known;
 * TX: X in a transaction; ABORT: A an aborted one; TYPE: perf's name, empty
 * when not known), then /SPEC when the hardware said how speculative the
 * branch was (AMD Zen 4). Returns snprintf's count. */
int mt_branch_format(const struct mt_branch *b, char *out, size_t n);

/* perf's name of an entry's type (its TYPE field: "" when not known). */
const char *mt_branch_type_name_of(const struct mt_branch *b);
/* perf's name of a PERF_BR_* type below EXTEND_ABI ("" for 0). */
const char *mt_branch_type_name(unsigned type);

/* The PERF_BR_* type of the branch instruction in b[0..n) as perf's
 * save_type would say it (COND, UNCOND, IND, CALL, IND_CALL, RET, SYSCALL,
 * SYSRET), from its bytes; 0 when it is no branch or does not decode. */
unsigned mt_branch_type_of_insn(const uint8_t *b, size_t n);

#endif
