/* x86: the lengths of the instructions Capstone 4 cannot decode, against
 * their encodings in the Intel SDM (PTWRITE: F3 [REX.W] 0F AE /4; VEX) and
 * against the lengths ptxed (Intel XED) lists for libipt's ptt case
 * tip_pge-ptw-tip_pgd (ptwrite eax: 4 bytes, ptwrite rax: 5). */
#include <stdint.h>
#include <stdio.h>

#include "tap.h"
#include "trace/x86.h"

int main(void)
{
	static const struct { uint8_t b[16]; unsigned n, want; const char *what; } pt[] = {
		{{0xf3, 0x0f, 0xae, 0xe0}, 4, 4, "ptwrite eax"},
		{{0xf3, 0x48, 0x0f, 0xae, 0xe0}, 5, 5, "ptwrite rax"},
		{{0xf3, 0x0f, 0xae, 0x20}, 4, 4, "ptwrite dword [rax]"},
		{{0xf3, 0x0f, 0xae, 0x60, 0x08}, 5, 5, "ptwrite [rax+8]: disp8"},
		{{0xf3, 0x0f, 0xae, 0x24, 0x24}, 5, 5, "ptwrite [rsp]: SIB"},
		{{0xf3, 0x0f, 0xae, 0x25, 1, 2, 3, 4}, 8, 8, "ptwrite [rip+disp32]"},
		{{0xf3, 0x48, 0x0f, 0xae, 0xa0, 1, 2, 3, 4}, 9, 9, "ptwrite qword [rax+disp32]"},
		{{0x66, 0xf3, 0x0f, 0xae, 0xe1}, 5, 5, "a 66 prefix before it"},
		{{0x0f, 0xae, 0xe0}, 3, 0, "0F AE /4 without F3: not PTWRITE"},
		{{0xf3, 0x0f, 0xae, 0xe8}, 4, 0, "F3 0F AE /5: not PTWRITE"},
		{{0xf3, 0x0f, 0xae, 0x60}, 4, 0, "cut short before its displacement"},
		{{0xf3, 0x0f, 0xae}, 3, 0, "cut short before its ModRM"},
	};
	int good = 1;
	for (size_t i = 0; i < sizeof pt / sizeof pt[0]; i++) {
		unsigned got = mt_ptwrite_length(pt[i].b, pt[i].n);
		if (got != pt[i].want) {
			printf("# %s: %u, want %u\n", pt[i].what, got, pt[i].want);
			good = 0;
		}
	}
	ok(good, "PTWRITE: register and memory forms, prefixes, and what is not one");
	static const uint8_t vzu[] = {0xc5, 0xf8, 0x77}, vmov[] = {0xc5, 0xfd, 0x6f, 0x44, 0x24, 0x10};
	ok(mt_vex_length(vzu, sizeof vzu) == 3 && mt_vex_length(vmov, sizeof vmov) == 6,
	   "VEX: vzeroupper (no ModRM), vmovdqa ymm0, [rsp+16] (SIB, disp8)");
	return tap_done();
}
