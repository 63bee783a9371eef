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
	return tap_done();
}
