/* brstack: branch stack entries and their text (brstack.h). */
#include "trace/brstack.h"

#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "trace/x86.h"

void mt_branch_parse(const uint8_t *p, struct mt_branch *b)
{
	uint64_t f;
	memcpy(&b->from, p, 8);
	memcpy(&b->to, p + 8, 8);
	memcpy(&f, p + 16, 8);
	/* the kernel's bitfield: mispred:1 predicted:1 in_tx:1 abort:1
	 * cycles:16 type:4 spec:2 new_type:4 priv:3 */
	b->mispred = f & 1;
	b->predicted = (f >> 1) & 1;
	b->in_tx = (f >> 2) & 1;
	b->abort = (f >> 3) & 1;
	b->cycles = (unsigned)((f >> 4) & 0xffff);
	b->type = (unsigned)((f >> 20) & 0xf);
	b->spec = (unsigned)((f >> 24) & 3);
	b->new_type = (unsigned)((f >> 26) & 0xf);
}

const char *mt_branch_type_name(unsigned type)
{
	struct mt_branch b = {.type = type & 0xf};
	return type < 15 ? mt_branch_type_name_of(&b) : "";
}

const char *mt_branch_type_name_of(const struct mt_branch *b)
{
	/* perf's names (util/branch.c) */
	static const char *const types[] = {"", "COND", "UNCOND", "IND", "CALL", "IND_CALL", "RET", "SYSCALL",
					    "SYSRET", "COND_CALL", "COND_RET", "ERET", "IRQ", "SERROR", "NO_TX"};
	static const char *const new_types[] = {"FAULT_ALGN", "FAULT_DATA", "FAULT_INST", "ARCH_1",
						"ARCH_2", "ARCH_3", "ARCH_4", "ARCH_5"};
	if (b->type < sizeof types / sizeof types[0])
		return types[b->type];
	return b->new_type < sizeof new_types / sizeof new_types[0] ? new_types[b->new_type] : "";
}

int mt_branch_format(const struct mt_branch *b, char *out, size_t n)
{
	static const char *const spec[] = {"", "SPEC_WRONG_PATH", "NON_SPEC_CORRECT_PATH", "SPEC_CORRECT_PATH"};
	char pred = b->mispred || b->predicted ? (b->predicted ? 'P' : 'M') : '-';
	return snprintf(out, n, "0x%" PRIx64 "/0x%" PRIx64 "/%c/%c/%c/%u/%s%s%s", b->from, b->to, pred,
			b->in_tx ? 'X' : '-', b->abort ? 'A' : '-', b->cycles, mt_branch_type_name_of(b), b->spec ? "/" : "",
			spec[b->spec]);
}

unsigned mt_branch_type_of_insn(const uint8_t *b, size_t n)
{
	bool direct;
	int64_t disp;
	unsigned len;
	switch (mt_insn_classify(b, n, &direct, &disp, &len)) {
	case ptic_cond_jump: return 1;           /* COND */
	case ptic_jump: return direct ? 2 : 3;   /* UNCOND, IND */
	case ptic_call: return direct ? 4 : 5;   /* CALL, IND_CALL */
	case ptic_return: return 6;              /* RET */
	case ptic_far_call: return 7;            /* SYSCALL (INT n too) */
	case ptic_far_return: return 8;          /* SYSRET (IRET too) */
	default: return 0;
	}
}
