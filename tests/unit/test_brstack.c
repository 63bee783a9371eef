/* Unit tests of branch stack entries (trace/brstack.c), TAP output.
 * Oracles: the kernel's struct perf_branch_entry (include/uapi/linux/
 * perf_event.h: from, to, then mispred:1 predicted:1 in_tx:1 abort:1
 * cycles:16 type:4 spec:2 new_type:4 priv:3), and the text Debian's perf
 * script -F brstack prints for such entries (../shared/testdata/real/
 * quipper's LBR files: tests/perfforms.bats holds every entry of them). */
#include <stdio.h>
#include <string.h>

#include "trace/brstack.h"

#include "tap.h"

static void entry(uint8_t *p, uint64_t from, uint64_t to, uint64_t flags)
{
	memcpy(p, &from, 8);
	memcpy(p + 8, &to, 8);
	memcpy(p + 16, &flags, 8);
}

static const char *text(uint64_t from, uint64_t to, uint64_t flags)
{
	static char out[128];
	uint8_t e[MT_BRANCH_ENTRY_SIZE];
	struct mt_branch b;
	entry(e, from, to, flags);
	mt_branch_parse(e, &b);
	mt_branch_format(&b, out, sizeof out);
	return out;
}

int main(void)
{
	/* as perf prints the first entry of perf.data.branch-4.14 */
	ok(!strcmp(text(0xffffffffb4208e16, 0xffffffffb42071e3, 2 | (4u << 4)),
		   "0xffffffffb4208e16/0xffffffffb42071e3/P/-/-/4/"), "predicted, 4 cycles, type unknown");
	ok(!strcmp(text(0x401000, 0x402000, 1), "0x401000/0x402000/M/-/-/0/"), "mispredicted");
	ok(!strcmp(text(0, 0, 0), "0x0/0x0/-/-/-/0/"), "neither mispredicted nor predicted: '-'");
	ok(!strcmp(text(1, 2, 4 | 8 | (0xffffu << 4)), "0x1/0x2/-/X/A/65535/"), "in a transaction, aborted, "
	   "cycles at their 16 bits");
	ok(!strcmp(text(1, 2, 2 | (4u << 20)), "0x1/0x2/P/-/-/0/CALL"), "type 4: CALL, perf's name");
	ok(!strcmp(text(1, 2, (15u << 20) | (2u << 26)), "0x1/0x2/-/-/-/0/FAULT_INST"), "type 15 (EXTEND_ABI): "
	   "new_type's name");
	ok(!strcmp(text(1, 2, 2 | (2u << 24)), "0x1/0x2/P/-/-/0//NON_SPEC_CORRECT_PATH"), "AMD's speculation "
	   "(spec 2) after the type");
	ok(!strcmp(text(1, 2, 1 | (1u << 24) | (6u << 20)), "0x1/0x2/M/-/-/0/RET/SPEC_WRONG_PATH"), "a return on "
	   "the wrong path");
		/* types from the code (perf's save_type names): direct and indirect
	 * calls and jumps, a conditional jump, a return, syscall and sysret;
	 * no branch: 0 */
	static const uint8_t call[] = {0xe8, 1, 0, 0, 0}, icall[] = {0xff, 0xd0}, jmp[] = {0xeb, 0x10},
			     ijmp[] = {0x3e, 0xff, 0xe0}, jcc[] = {0x0f, 0x84, 0, 1, 0, 0}, ret[] = {0xc3},
			     sys[] = {0x0f, 0x05}, sysret[] = {0x48, 0x0f, 0x07}, nop[] = {0x90}, cut[] = {0xe8, 1};
	ok(mt_branch_type_of_insn(call, sizeof call) == 4 && !strcmp(mt_branch_type_name(4), "CALL"), "call rel32: CALL");
	ok(mt_branch_type_of_insn(icall, sizeof icall) == 5 && !strcmp(mt_branch_type_name(5), "IND_CALL"),
	   "call *%rax: IND_CALL");
	ok(mt_branch_type_of_insn(jmp, sizeof jmp) == 2 && mt_branch_type_of_insn(ijmp, sizeof ijmp) == 3,
	   "jmp rel8: UNCOND; notrack jmp *%rax: IND");
	ok(mt_branch_type_of_insn(jcc, sizeof jcc) == 1 && mt_branch_type_of_insn(ret, sizeof ret) == 6,
	   "je rel32: COND; ret: RET");
	ok(mt_branch_type_of_insn(sys, sizeof sys) == 7 && mt_branch_type_of_insn(sysret, sizeof sysret) == 8,
	   "syscall: SYSCALL; sysretq: SYSRET");
	ok(mt_branch_type_of_insn(nop, sizeof nop) == 0 && mt_branch_type_of_insn(cut, sizeof cut) == 0 &&
		   !strcmp(mt_branch_type_name(0), ""), "no branch, or cut: 0, named ''");
	return tap_done();
}
