/* x86: the lengths of the instructions Capstone 4 cannot decode, against
 * their encodings in the Intel SDM (PTWRITE: F3 [REX.W] 0F AE /4; VEX) and
 * against the lengths ptxed (Intel XED) lists for libipt's ptt case
 * tip_pge-ptw-tip_pgd (ptwrite eax: 4 bytes, ptwrite rax: 5), tip-jmpabs
 * (jmpabs: 11), int-eretu (eretu, a far return) and ptet-uint-uiret (uiret:
 * 4 bytes). */
#include <intel-pt.h>
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
	static const uint8_t jabs[] = {0xd5, 0x00, 0xa1, 0x0d, 0x10, 0, 0, 0, 0, 0, 0},
			     jabs_w[] = {0xd5, 0x08, 0xa1, 0x0d, 0x10, 0, 0, 0, 0, 0, 0};
	ok(mt_jmpabs_length(jabs, sizeof jabs) == 11 && !mt_jmpabs_length(jabs, 10) &&
	   !mt_jmpabs_length(jabs_w, sizeof jabs_w), "JMPABS: 11 bytes; cut short or with REX2.W, not one");
	static const uint8_t eretu[] = {0xf3, 0x0f, 0x01, 0xca}, erets[] = {0xf2, 0x0f, 0x01, 0xca},
			     clac[] = {0x0f, 0x01, 0xca};
	bool direct;
	int64_t disp;
	unsigned len;
	ok(mt_insn_classify(eretu, sizeof eretu, &direct, &disp, &len) == ptic_far_return &&
	   mt_insn_classify(erets, sizeof erets, &direct, &disp, &len) == ptic_far_return &&
	   mt_insn_classify(clac, sizeof clac, &direct, &disp, &len) == ptic_other,
	   "ERETU and ERETS are far returns; CLAC, the same bytes without F3/F2, is no branch");
	static const uint8_t uiret[] = {0xf3, 0x0f, 0x01, 0xec}, stui[] = {0xf3, 0x0f, 0x01, 0xef};
	ok(mt_uiret_length(uiret, sizeof uiret) == 4 && !mt_uiret_length(uiret, 3) && !mt_uiret_length(stui, sizeof stui),
	   "UIRET: 4 bytes; cut short, or STUI (F3 0F 01 EF), not one");
	return tap_done();
}
