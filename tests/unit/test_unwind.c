/* unwind: DWARF unwinding of a captured stack (trace/unwind.h).
 * Oracle: the compiler's own return addresses. Three nested functions
 * record __builtin_return_address(0) on the way down; the innermost
 * captures its registers and copies its stack as perf's STACK_USER does,
 * with this process's mappings from /proc/self/maps. The unwound PCs must
 * be the captured IP, then each recorded return address less one, in
 * order. Then a copy cut short, missing registers and an unmapped IP:
 * fewer frames and a reason, never a crash.
 *
 * Then a frame whose CFA is another register (rbx, as ld.so's
 * _dl_runtime_resolve keeps it) under a function whose CFI says nothing
 * of rbx: libdwfl takes rbx there as unknown and stops; perf's unwinder
 * (libunwind) takes it as unchanged and goes on, as the code does. Seen
 * on a real recording: a sample at _dl_fixup's entry, perf script's
 * frames _dl_fixup, _dl_runtime_resolve_xsavec, then the frame it could
 * not read (a copy of 64 bytes); mt's stopped at the second as if whole.
 * Oracle: the stack laid out by hand by that CFI (frame_outer, below). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/unwind.h"
#include "tap.h"

/* Code never run, only unwound through: frame_inner is called from
 * frame_outer, which keeps its CFA in rbx; frame_outer from frame_bottom,
 * the outermost (its return address undefined, as _start's). */
__asm__(".text\n"
	"frame_bottom:\n"
	".cfi_startproc\n"
	".cfi_undefined rip\n"
	"\tnop\n"
	"\tcall frame_outer\n"
	"frame_bottom_ret:\n"
	"\thlt\n"
	".cfi_endproc\n"
	"frame_outer:\n"
	".cfi_startproc\n"
	"\tpush %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset rbx, 0\n"
	"\tmov %rsp, %rbx\n"
	".cfi_def_cfa_register rbx\n"
	"\tand $-64, %rsp\n"
	"\tcall frame_inner\n"
	"frame_outer_ret:\n"
	"\tmov %rbx, %rsp\n"
	"\tpop %rbx\n"
	".cfi_def_cfa rsp, 8\n"
	"\tret\n"
	".cfi_endproc\n"
	"frame_inner:\n"
	".cfi_startproc\n"
	"\tret\n"
	".cfi_endproc\n");
extern const char frame_bottom_ret[], frame_outer_ret[], frame_inner[];

static uint64_t regs[MT_PREG_COUNT];
static uint8_t stack_copy[32768]; /* perf copies 8192 by default, up to 65528 */
static uint64_t stack_len, stack_top;
static uint64_t ret_into[3]; /* return addresses into f2, f1, main's caller frame (call_f1) */

/* Reads the live stack above SP byte by byte, as the kernel copies it (not
 * instrumented: the sanitizer's redzones are part of the real stack). */
__attribute__((no_sanitize_address, noinline)) static void copy_stack(uint64_t sp)
{
	uint64_t n = stack_top - sp < sizeof stack_copy ? stack_top - sp : sizeof stack_copy;
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)sp;
	for (uint64_t i = 0; i < n; i++)
		stack_copy[i] = p[i];
	stack_len = n;
}

__attribute__((noinline)) static int f3(int x)
{
	ret_into[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	uint64_t *r = regs;
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, 64(%0)\n\t"
			 "mov %%rsp, 56(%0)\n\t"
			 "mov %%rbp, 48(%0)\n\t"
			 "mov %%rbx, 8(%0)\n\t"
			 "mov %%r12, 160(%0)\n\t"
			 "mov %%r13, 168(%0)\n\t"
			 "mov %%r14, 176(%0)\n\t"
			 "mov %%r15, 184(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	copy_stack(regs[MT_PREG_SP]);
	return x + 1;
}

__attribute__((noinline)) static int f2(int x)
{
	ret_into[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	volatile int y = f3(x) * 3; /* work after the call: no tail call */
	return y;
}

__attribute__((noinline)) static int f1(int x)
{
	ret_into[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	volatile int y = f2(x) * 5;
	return y;
}

/* This process's file mappings, and the end of its main stack. */
__attribute__((noinline)) static int add_self_maps(struct mt_unwind *u)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[4600];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		uint64_t a, b, off;
		char perms[8], path[4096] = "";
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095[^\n]", &a, &b, perms, &off,
			   path) < 4)
			continue;
		if (!strcmp(path, "[stack]"))
			stack_top = b;
		if (path[0] == '/' && !mt_unwind_add_map(u, (uint32_t)getpid(), a, b - a, off, path))
			n++;
	}
	fclose(f);
	return n;
}

int main(void)
{
	const char *why_new = NULL;
	struct mt_unwind *u = mt_unwind_new(NULL, &why_new);
	ok(u && add_self_maps(u) > 0 && stack_top, "this process's mappings and stack read");
	volatile int r = f1(1);
	(void)r;
	uint64_t mask = 1ull << MT_PREG_IP | 1ull << MT_PREG_SP | 1ull << MT_PREG_BP | 1ull << MT_PREG_BX |
			0xfull << (MT_PREG_R8 + 4);
	struct mt_unwind_sample s = {(uint32_t)getpid(), (uint32_t)gettid(), regs, mask, stack_copy, stack_len};
	uint64_t pcs[64];
	const char *why;
	size_t n = mt_unwind_run(u, &s, pcs, 64, &why);
	printf("# %zu frames:", n);
	for (size_t i = 0; i < n && i < 8; i++)
		printf(" %#" PRIx64, pcs[i]);
	printf("; ip %#" PRIx64 ", returns %#" PRIx64 " %#" PRIx64 " %#" PRIx64 "; %s\n", regs[MT_PREG_IP],
	       ret_into[0], ret_into[1], ret_into[2], why ? why : "to the outermost frame");
	ok(n >= 4 && pcs[0] == regs[MT_PREG_IP], "the first frame is the sampled IP");
	ok(n >= 4 && pcs[1] == ret_into[0] - 1 && pcs[2] == ret_into[1] - 1 && pcs[3] == ret_into[2] - 1,
	   "then f2, f1 and main: each return address less one, in order");
	ok(n > 4 && n < 64, "and on past main to the outermost frame");

	/* the same sample again: one Dwfl for the process, the same answer */
	uint64_t again[64];
	size_t n2 = mt_unwind_run(u, &s, again, 64, &why);
	ok(n2 == n && !memcmp(again, pcs, n * sizeof *pcs), "unwinding again gives the same frames");
	ok(mt_unwind_run(u, &s, again, 2, &why) == 2 && !why, "max frames: cut there, no failure reported");

	/* the copy cut short: the walk stops where the copy ends, saying so */
	uint64_t sp_to_f1 = 0;
	for (uint64_t off = 0; off + 8 <= stack_len; off += 8) {
		uint64_t w;
		memcpy(&w, stack_copy + off, 8);
		if (w == ret_into[1]) { /* f2's return address into f1 lies here */
			sp_to_f1 = off;
			break;
		}
	}
	struct mt_unwind_sample cut = s;
	cut.stack_size = sp_to_f1; /* f2's return address is just past the copy */
	n2 = mt_unwind_run(u, &cut, again, 64, &why);
	ok(sp_to_f1 && n2 >= 1 && n2 <= 2 && again[0] == pcs[0], "a copy cut short: the frames before the cut");
	ok(why != NULL, "... and why it stopped");

	struct mt_unwind_sample nosp = s;
	nosp.mask &= ~(1ull << MT_PREG_SP);
	ok(mt_unwind_run(u, &nosp, again, 64, &why) == 0 && why && strstr(why, "SP"), "no SP register: said, no frames");
	uint64_t bad_regs[MT_PREG_COUNT];
	memcpy(bad_regs, regs, sizeof regs);
	bad_regs[MT_PREG_IP] = 0x10; /* no object there */
	struct mt_unwind_sample unmapped = s;
	unmapped.regs = bad_regs;
	ok(mt_unwind_run(u, &unmapped, again, 64, &why) == 1 && again[0] == 0x10 && why,
	   "an IP in no mapped object: that IP alone, and why");
	/* garbage stack and registers: a bounded walk */
	static uint8_t junk[8192];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	struct mt_unwind_sample garbage = s;
	garbage.stack = junk;
	garbage.stack_size = sizeof junk;
	n2 = mt_unwind_run(u, &garbage, again, 64, &why);
	ok(n2 >= 1 && n2 <= 64, "a garbage stack: a bounded walk");

	/* a CFA in rbx, rbx unknown to libdwfl past frame_inner: on as perf
	 * goes. The copy from SP: frame_inner's return, 24 bytes frame_outer
	 * aligned away, then where rbx points: rbx pushed, frame_outer's
	 * return into frame_bottom. */
	uint64_t lay[6] = {(uint64_t)(uintptr_t)frame_outer_ret, 0, 0, 0, 0x1234,
			   (uint64_t)(uintptr_t)frame_bottom_ret};
	uint64_t sp = regs[MT_PREG_SP] & ~63ull, by_hand[MT_PREG_COUNT] = {0};
	by_hand[MT_PREG_IP] = (uint64_t)(uintptr_t)frame_inner;
	by_hand[MT_PREG_SP] = sp;
	by_hand[MT_PREG_BX] = sp + 32;
	struct mt_unwind_sample in_rbx = {s.pid, s.tid, by_hand, mask, (const uint8_t *)lay, sizeof lay};
	n2 = mt_unwind_run(u, &in_rbx, again, 64, &why);
	printf("# CFA in rbx: %zu frames:", n2);
	for (size_t i = 0; i < n2 && i < 8; i++)
		printf(" %#" PRIx64, again[i]);
	printf("; %s\n", why ? why : "to the outermost frame");
	ok(n2 == 3 && again[0] == by_hand[MT_PREG_IP] && again[1] == lay[0] - 1 && again[2] == lay[5] - 1 && !why,
	   "a CFA in a register its callee's CFI leaves unknown: on to the outermost frame, as perf goes");
	in_rbx.stack_size = 40; /* frame_outer's saved rbx and return past the copy */
	n2 = mt_unwind_run(u, &in_rbx, again, 64, &why);
	ok(n2 == 2 && again[1] == lay[0] - 1 && why && strstr(why, "stack copy"),
	   "... and where the copy ends before frame_outer's return: two frames, and why");
	mt_unwind_free(u);
	return tap_done();
}
