/* fuzz_unwind: the untrusted part of a --call-graph=dwarf sample, its
 * registers and its stack copy, unwound over this process's own mappings
 * (real objects with real CFI, so the walk goes somewhere): the input's
 * first 8 bytes are the register mask, the next 24 x 8 the registers (IP
 * and SP taken near this process's code and stack when the input says so),
 * the rest the stack copy. */
#define _GNU_SOURCE
#include "fuzz.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trace/unwind.h"

static struct mt_unwind *u;
static uint64_t code_lo, code_hi;

static void setup(void)
{
	const char *why_new;
	u = mt_unwind_new(NULL, &why_new);
	FILE *f = fopen("/proc/self/maps", "r");
	if (!u || !f)
		return;
	char line[4600];
	while (fgets(line, sizeof line, f)) {
		uint64_t a, b, off;
		char perms[8], path[4096] = "";
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095[^\n]", &a, &b, perms, &off,
			   path) < 4 || path[0] != '/' || perms[2] != 'x')
			continue;
		mt_unwind_add_map(u, (uint32_t)getpid(), a, b - a, off, path);
		if (!code_lo) {
			code_lo = a;
			code_hi = b;
		}
	}
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!u)
		setup();
	if (!u || size < 8 + 8 * MT_PREG_COUNT)
		return 0;
	uint64_t regs[MT_PREG_COUNT], mask;
	memcpy(&mask, data, 8);
	memcpy(regs, data + 8, sizeof regs);
	/* low bits of the mask steer IP into this process's code */
	if (mask & 1ull << 63 && code_hi > code_lo)
		regs[MT_PREG_IP] = code_lo + regs[MT_PREG_IP] % (code_hi - code_lo);
	const uint8_t *stack = data + 8 + sizeof regs;
	uint64_t n = size - 8 - sizeof regs;
	struct mt_unwind_sample s = {(uint32_t)getpid(), (uint32_t)getpid(), regs, mask, stack, n};
	uint64_t pcs[256];
	const char *why;
	mt_unwind_run(u, &s, pcs, 256, &why);
	return 0;
}
