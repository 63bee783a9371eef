/* x86: facts about x86-64 code and Intel PT that both the decoder's code
 * walk (image) and the trace synthesizer (synth) need: the class of a
 * branch instruction from its bytes, instruction lengths (the common
 * encodings, so that the walk seldom needs Capstone; VEX/EVEX, of which
 * Capstone 4 does not know every AVX-512 one glibc uses), and the 64-entry
 * return stack behind PT's return compression. */
#ifndef MT_X86_H
#define MT_X86_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The class of the instruction in b[0..n) (enum pt_insn_class); for direct
 * branches *direct is set and *disp, *len give the displacement and the
 * length of the encoding that holds it (0 when not direct). */
int mt_insn_classify(const uint8_t *b, size_t n, bool *direct, int64_t *disp, unsigned *len);

/* The length of the instruction at b[0..n) (64-bit mode) for the common
 * legacy and 0F-map encodings whose length and validity the opcode, its
 * prefixes and its ModRM settle, and for VEX and EVEX (maps 1-3, EVEX's 5
 * and 6) by their encoding's rules; 0 for any other (the 0F38 and 0F3A
 * maps, LOCK, x87 register forms, system instructions, encodings valid
 * only with some prefixes or operands...), which Capstone decodes.
 * Wherever it answers a legacy encoding, Capstone 4 decodes the same
 * length; a VEX or EVEX one, the same length wherever Capstone knows it
 * (it does not know every valid one, nor refuse every invalid one, as the
 * encoding's rules do not: XED and libipt measure them so too). test_x86
 * holds both over real code and random bytes: the code walk's blocks are
 * the same, built without Capstone's cost for nearly all instructions. */
unsigned mt_insn_length(const uint8_t *b, size_t n);

/* The length of a VEX or EVEX instruction at b (64-bit mode), 0 when b
 * holds none. Neither encoding is ever a branch. */
unsigned mt_vex_length(const uint8_t *b, size_t n);
/* PTWRITE (F3 [REX.W] 0F AE /4, register or memory), which Capstone 4 does
 * not decode: its length, 0 when b does not begin with one. Never a branch. */
unsigned mt_ptwrite_length(const uint8_t *b, size_t n);
/* APX's JMPABS (REX2, map 0, no W, A1 imm64), which Capstone 4 does not
 * decode: its length (11), 0 when b does not begin with one. Intel PT
 * traces it as an indirect jump: its target comes in a TIP. */
unsigned mt_jmpabs_length(const uint8_t *b, size_t n);
/* UIRET (F3 0F 01 EC, a return from a user interrupt), which Capstone 4
 * does not decode: its length (4), 0 when b does not begin with one. A far
 * return: its target comes in a TIP. */
unsigned mt_uiret_length(const uint8_t *b, size_t n);
/* Whether b begins with MOV CR3, reg (0F 22 /3, no REX.R), where a TIP.PGD
 * without an IP may say tracing stopped (libipt's pt_insn_changes_cr3). */
bool mt_is_mov_cr3(const uint8_t *b, size_t n);

/* The calls whose returns a PT encoder may compress: 64, the oldest
 * overwritten when full; a decoder starting at a PSB knows none. */
struct mt_retstack {
	uint64_t v[64];
	unsigned top, n;
};

static inline void mt_retstack_push(struct mt_retstack *r, uint64_t ret)
{
	r->v[r->top] = ret;
	r->top = (r->top + 1) & 63;
	if (r->n < 64)
		r->n++;
}

static inline bool mt_retstack_pop(struct mt_retstack *r, uint64_t *ret)
{
	if (!r->n)
		return false;
	r->top = (r->top - 1) & 63;
	r->n--;
	*ret = r->v[r->top];
	return true;
}

#endif
