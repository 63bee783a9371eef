#include "trace/x86.h"

#include <intel-pt.h>

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Each byte's kind as a legacy prefix (a table: the walk measures every
 * instruction of every block it builds, and most have no prefix). */
enum { P_SEG = 1, P_OPSIZE = 2, P_ADSIZE = 4, P_F2 = 8, P_F3 = 16, P_LOCK = 32 };
static const uint8_t prefix_kind[256] = {
	[0x2e] = P_SEG, [0x3e] = P_SEG, [0x26] = P_SEG, [0x36] = P_SEG, [0x64] = P_SEG, [0x65] = P_SEG,
	[0x66] = P_OPSIZE, [0x67] = P_ADSIZE, [0xf2] = P_F2, [0xf3] = P_F3, [0xf0] = P_LOCK,
};

/* The legacy prefixes at b (segment, operand and address size, REP/REPNE;
 * not LOCK): how many; *rep: whether F2 or F3 is among them, *f3: F3. */
static size_t skip_prefixes(const uint8_t *b, size_t n, bool *rep, bool *f3)
{
	size_t i = 0;
	unsigned seen = 0, k;
	while (i < n && (k = prefix_kind[b[i]] & ~P_LOCK)) {
		seen |= k;
		i++;
	}
	*rep = seen & (P_F2 | P_F3);
	*f3 = seen & P_F3;
	return i;
}

int mt_insn_classify(const uint8_t *b, size_t n, bool *direct, int64_t *disp, unsigned *len)
{
	*direct = false;
	*disp = 0;
	*len = 0;
	bool rep, f3;
	size_t i = skip_prefixes(b, n, &rep, &f3);
	if (i < n && (b[i] & 0xf0) == 0x40)
		i++;
	if (i >= n)
		return ptic_error;
	uint8_t op = b[i];
	/* rel8 forms: jcc, loop/jcxz, jmp short */
	if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3) || op == 0xeb) {
		if (i + 2 > n)
			return ptic_error;
		*direct = true;
		*disp = (int8_t)b[i + 1];
		*len = (unsigned)i + 2;
		return op == 0xeb ? ptic_jump : ptic_cond_jump;
	}
	switch (op) {
	case 0xe8: case 0xe9:
		if (i + 5 > n)
			return ptic_error;
		*direct = true;
		*disp = (int32_t)le32(b + i + 1);
		*len = (unsigned)i + 5;
		return op == 0xe8 ? ptic_call : ptic_jump;
	case 0xc2: case 0xc3: return ptic_return;
	case 0xca: case 0xcb: case 0xcf: return ptic_far_return;
	case 0xcc: case 0xcd: case 0xce: return ptic_far_call;
	case 0xff:
		if (i + 1 < n) {
			unsigned reg = (b[i + 1] >> 3) & 7;
			if (reg == 2) return ptic_call;
			if (reg == 3) return ptic_far_call;
			if (reg == 4) return ptic_jump;
			if (reg == 5) return ptic_far_jump;
		}
		return ptic_other;
	case 0x0f:
		if (i + 1 >= n)
			return ptic_error;
		if (b[i + 1] >= 0x80 && b[i + 1] <= 0x8f) {
			if (i + 6 > n)
				return ptic_error;
			*direct = true;
			*disp = (int32_t)le32(b + i + 2);
			*len = (unsigned)i + 6;
			return ptic_cond_jump;
		}
		if (b[i + 1] == 0x05 || b[i + 1] == 0x34)
			return ptic_far_call;
		if (b[i + 1] == 0x07 || b[i + 1] == 0x35)
			return ptic_far_return;
		if (b[i + 1] == 0x01 && i + 2 < n) {
			switch (b[i + 2]) {
			case 0xca: /* FRED's ERETU (F3) and ERETS (F2): far returns
				    * (without the prefix, CLAC, which Capstone 4
				    * also reads them as) */
				return rep ? ptic_far_return : ptic_other;
			case 0xc1: /* VMX: VMCALL into the VMM, VMLAUNCH and VMRESUME
				    * out of it (libipt's classes) */
				return ptic_far_call;
			case 0xc2: case 0xc3:
				return ptic_far_return;
			case 0xec: /* F3: UIRET, a return from a user interrupt */
				return f3 ? ptic_far_return : ptic_other;
			}
		}
		return ptic_other;
	}
	return ptic_other;
}

/* The end of a ModRM operand (and its SIB and displacement) at b[i], or 0
 * past n. */
static size_t modrm_end(const uint8_t *b, size_t i, size_t n)
{
	if (i + 1 > n)
		return 0;
	uint8_t modrm = b[i++];
	unsigned mod = modrm >> 6, rm = modrm & 7;
	if (mod != 3 && rm == 4) {
		if (i + 1 > n)
			return 0;
		if (mod == 0 && (b[i] & 7) == 5)
			i += 4;
		i++;
	}
	if (mod == 1)
		i += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		i += 4;
	return i <= n ? i : 0;
}

/* How each opcode ends (mt_insn_length): '-' nothing follows; 'm' a ModRM
 * operand; 'b', 'w' an immediate of 1, 2 bytes; 'z' one of 2 or 4 (the
 * operand size); 'B', 'Z' a ModRM operand, then b, z; 'j' a rel32 branch
 * (with 66, CPUs and Capstone differ: not answered); 'v' z, or 8 with
 * REX.W (MOV r, imm); 'o' a moffs (8, 4 with 67); 'e' ENTER's iw, ib;
 * 'n', 'N' as 'm', 'B' but only without F2/F3; 'f' as 'm' but not with
 * F2; '*' decided by the ModRM below; 'x' not answered. */
static const char map1[257] =
	"mmmmbzxxmmmmbzxx" "mmmmbzxxmmmmbzxx" "mmmmbzxxmmmmbzxx" "mmmmbzxxmmmmbzxx" /* 00-3F */
	"xxxxxxxxxxxxxxxx" "----------------" "xxxmxxxxzZbB----" "bbbbbbbbbbbbbbbb" /* 40-7F */
	"BZxBmmmmmmmmx*x*" "----------x-----" "oooo----bz------" "bbbbbbbbvvvvvvvv" /* 80-BF */
	"**w-xx**e-w--bx-" "****xxx-xxxxxxxx" "bbbbbbbbjjxbx---" "xxxx--**------**"; /* C0-FF */
static const char map2[257] =
	"x*xxx-xxxxx-xxxx" "mm**nn**xxxxxx**" "xxxxxxxxnnmxmmnn" "----xxxxxxxxxxxx" /* 00-3F */
	"nnnnnnnnnnnnnnnn" "xmxxnnnnmmmxmmmm" "nnnnnnnnnnnn**nf" "B***nnnxxxxxxxff" /* 40-7F */
	"jjjjjjjjjjjjjjjj" "nnnnnnnnnnnnnnnn" "---mBmxx--xmBm*m" "mmxmxxmmxx*mmmmm" /* 80-BF */
	"mmBxNxN*--------" "xnnnnn**nnnnnnnn" "nnnnnnxxnnnnnnnn" "xnnnnnnxnnnnnnnx"; /* C0-FF */

/* Whether LOCK may come before the instruction whose ModRM is b[i] (opcode
 * op, of the 0F map when two): a read-modify-write of memory (ADD...XOR,
 * XCHG, INC, DEC, NOT, NEG, BTS, BTR, BTC, CMPXCHG, CMPXCHG8B, XADD). */
static bool lockable(const uint8_t *b, size_t i, size_t n, bool two, uint8_t op)
{
	if (i + 1 > n || b[i] >> 6 == 3)
		return false;
	unsigned reg = (b[i] >> 3) & 7;
	if (two)
		return op == 0xb0 || op == 0xb1 || op == 0xc0 || op == 0xc1 || op == 0xab || op == 0xb3 || op == 0xbb ||
		       (op == 0xba && reg >= 5) || (op == 0xc7 && reg == 1);
	if (op < 0x40)
		return (op & 7) <= 1 && (op >> 3) != 7; /* ADD...XOR r/m, r; not CMP */
	if (op >= 0x80 && op <= 0x83)
		return reg != 7;
	if (op == 0x86 || op == 0x87)
		return true;
	if (op == 0xf6 || op == 0xf7)
		return reg == 2 || reg == 3;
	if (op == 0xfe || op == 0xff)
		return reg <= 1;
	return false;
}

unsigned mt_insn_length(const uint8_t *b, size_t n)
{
	size_t i = 0;
	unsigned seen = 0, pk;
	while (i < n && (pk = prefix_kind[b[i]])) {
		seen |= pk;
		i++;
	}
	bool opsize = seen & P_OPSIZE, adsize = seen & P_ADSIZE, f2 = seen & P_F2, f3 = seen & P_F3,
	     seg = seen & P_SEG, lock = seen & P_LOCK;
	bool rexw = false, rex = false;
	if (i < n && (b[i] & 0xf0) == 0x40) {
		rex = true;
		rexw = b[i++] & 0x08;
	}
	if (i + 1 > n)
		return 0;
	uint8_t op = b[i++];
	if ((op == 0xc4 || op == 0xc5 || op == 0x62) && i < n) {
		/* VEX, EVEX (64-bit mode): measured by their encoding's rules, as
		 * XED and libipt measure them, in the maps whose immediates
		 * those rules settle (not after 66, F2, F3 or REX: #UD) */
		unsigned map = op == 0xc5 ? 1 : op == 0xc4 ? b[i] & 0x1f : b[i] & 0x7;
		if (opsize || f2 || f3 || rex || lock || map == 0 || map == 4 || map > (op == 0x62 ? 6u : 3u))
			return 0;
		return mt_vex_length(b, n);
	}
	char k;
	bool two = op == 0x0f;
	if (two) {
		if (i + 1 > n)
			return 0;
		op = b[i++];
		k = map2[op];
		if ((k == 'n' || k == 'N') && (f2 || f3))
			return 0;
		if (k == 'f' && f2)
			return 0;
		k = k == 'n' || k == 'f' ? 'm' : k == 'N' ? 'B' : k;
		if (k == '*') {
			if (i + 1 > n)
				return 0;
			unsigned modrm = b[i], reg = (modrm >> 3) & 7;
			if (op == 0x1e) /* F3 0F 1E FA, FB: ENDBR64, ENDBR32 */
				return i == 3 && b[0] == 0xf3 && (modrm == 0xfa || modrm == 0xfb) ? 4 : 0;
			if (op == 0x1f) /* NOP r/m: Capstone knows the memory forms */
				k = modrm >> 6 != 3 && !f2 && !f3 ? 'm' : 'x';
			unsigned mod = modrm >> 6;
			bool none = !opsize && !f2 && !f3, sse = opsize && !f2 && !f3;
			switch (op) {
			case 0xba: /* BT, BTS, BTR, BTC r/m, imm8 */
				k = reg >= 4 ? 'B' : 'x';
				break;
			case 0x12: case 0x16: /* MOVLPS/MOVHPS m or MOVHLPS/MOVLHPS r; MOVLPD/MOVHPD m;
					       * MOVSLDUP/MOVSHDUP; MOVDDUP (F2 0F 12) */
				k = (none || f3 || (f2 && !opsize && op == 0x12) || (sse && mod != 3)) && !(f2 && f3) ? 'm'
													   : 'x';
				break;
			case 0x13: case 0x17: /* their stores: memory only */
				k = (none || sse) && mod != 3 ? 'm' : 'x';
				break;
			case 0x71: case 0x72: case 0x73: /* shifts by imm8: registers only (PSRLDQ
							  * and PSLLDQ after a 67 or segment prefix:
							  * Capstone refuses them) */
				k = (none || sse) && mod == 3 &&
					    (reg == 2 || reg == 6 || (reg == 4 && op != 0x73) || (sse && !seg && !adsize && op == 0x73 && (reg == 3 || reg == 7)))
					    ? 'B'
					    : 'x';
				break;
			case 0xd7: /* PMOVMSKB r, mm/xmm */
				k = (none || sse) && mod == 3 ? 'm' : 'x';
				break;
			case 0x6c: case 0x6d: /* PUNPCKLQDQ, PUNPCKHQDQ: xmm only */
			case 0xd6:            /* MOVQ xmm/m64, xmm (Capstone refuses these after
					       * a 67 or segment prefix) */
				k = sse && !seg && !adsize ? 'm' : 'x';
				break;
			case 0x01: /* XGETBV, XTEST, RDTSCP (ld.so, clocks); the rest not here */
				return none && !lock && i + 1 <= n && (modrm == 0xd0 || modrm == 0xd6 || modrm == 0xf9) ? (unsigned)i + 1
														       : 0;
			case 0xae: /* FXSAVE...CLFLUSH m (not F3's PTWRITE); LFENCE, MFENCE, SFENCE */
				k = none && (mod != 3 || modrm == 0xe8 || modrm == 0xf0 || modrm == 0xf8) ? 'm' : 'x';
				break;
			case 0xc7: /* CMPXCHG8B/16B, XRSTORS, XSAVEC, XSAVES m; RDRAND, RDSEED r */
				k = none && (mod != 3 ? reg == 1 || (reg >= 3 && reg <= 5) : reg >= 6) ? 'm' : 'x';
				break;
			}
		}
		if (k == 'j' && (opsize || adsize))
			return 0;
	} else {
		k = map1[op];
		if (k == '*') {
			if (i + 1 > n)
				return 0;
			unsigned modrm = b[i], reg = (modrm >> 3) & 7, mod = modrm >> 6;
			switch (op) {
			case 0x8d: k = mod != 3 ? 'm' : 'x'; break;               /* LEA */
			case 0x8f: k = reg == 0 ? 'm' : 'x'; break;               /* POP r/m (else XOP) */
			case 0xc0: case 0xc1: k = reg != 6 ? 'B' : 'x'; break;    /* shifts, imm8 */
			case 0xd0: case 0xd1: case 0xd2: case 0xd3: k = reg != 6 ? 'm' : 'x'; break;
			case 0xc6: k = reg == 0 ? 'B' : 'x'; break;               /* MOV r/m8, imm8 */
			case 0xc7: k = reg == 0 ? 'Z' : 'x'; break;               /* MOV r/m, imm */
			case 0xf6: k = reg == 0 ? 'B' : reg >= 2 ? 'm' : 'x'; break; /* TEST imm8; NOT...IDIV */
			case 0xf7: k = reg == 0 ? 'Z' : reg >= 2 ? 'm' : 'x'; break;
			case 0xfe: k = reg <= 1 ? 'm' : 'x'; break;               /* INC, DEC r/m8 */
			case 0xff:                                                /* INC...PUSH r/m */
				k = reg == 7 || ((reg == 3 || reg == 5) && mod == 3) ? 'x' : 'm';
				break;
			default: k = 'x'; break;
			}
		}
		if ((k == 'j' && (opsize || adsize)) || ((op == 0xc2 || op == 0xca) && (opsize || rexw)) || (op == 0x68 && opsize) ||
		    (k == 'o' && (opsize || f2 || f3)))
			return 0; /* sizes CPUs (or Capstone) read otherwise */
	}
	if (lock && !lockable(b, i, n, two, op))
		return 0;
	size_t imm = 0;
	switch (k) {
	case '-': break;
	case 'b': imm = 1; break;
	case 'w': imm = 2; break;
	case 'e': imm = 3; break;
	case 'j': imm = 4; break;
	case 'z': imm = opsize && !rexw ? 2 : 4; break; /* REX.W over 66 */
	case 'v': imm = rexw ? 8 : opsize ? 2 : 4; break;
	case 'o': imm = adsize ? 4 : 8; break;
	case 'm': case 'B': case 'Z':
		if (!(i = modrm_end(b, i, n)))
			return 0;
		imm = k == 'B' ? 1 : k == 'Z' ? (opsize && !rexw ? 2 : 4) : 0;
		break;
	default:
		return 0;
	}
	i += imm;
	return i <= n && i <= 15 ? (unsigned)i : 0;
}

unsigned mt_ptwrite_length(const uint8_t *b, size_t n)
{
	bool rep, f3;
	size_t i = skip_prefixes(b, n, &rep, &f3);
	if (i < n && (b[i] & 0xf0) == 0x40)
		i++; /* REX: W for the 64-bit form */
	if (!f3 || i + 3 > n || b[i] != 0x0f || b[i + 1] != 0xae || ((b[i + 2] >> 3) & 7) != 4)
		return 0;
	size_t end = modrm_end(b, i + 2, n);
	return end && end <= 15 ? (unsigned)end : 0;
}

unsigned mt_jmpabs_length(const uint8_t *b, size_t n)
{
	/* REX2 (D5) with map 0 (M0 clear) and no W, A1, a 64-bit address */
	return n >= 11 && b[0] == 0xd5 && !(b[1] & 0x88) && b[2] == 0xa1 ? 11 : 0;
}

bool mt_is_mov_cr3(const uint8_t *b, size_t n)
{
	bool rep, f3;
	size_t i = skip_prefixes(b, n, &rep, &f3);
	if (i < n && (b[i] & 0xf0) == 0x40) {
		if (b[i] & 0x04)
			return false; /* REX.R: CR11, not CR3 */
		i++;
	}
	return i + 3 <= n && b[i] == 0x0f && b[i + 1] == 0x22 && ((b[i + 2] >> 3) & 7) == 3;
}

unsigned mt_uiret_length(const uint8_t *b, size_t n)
{
	return n >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x01 && b[3] == 0xec ? 4 : 0;
}

unsigned mt_vex_length(const uint8_t *b, size_t n)
{
	bool rep, f3;
	size_t i = skip_prefixes(b, n, &rep, &f3);
	if (i + 2 > n)
		return 0;
	unsigned map;
	if (b[i] == 0xc5) {
		map = 1;
		i += 2;
	} else if (b[i] == 0xc4) {
		map = b[i + 1] & 0x1f;
		i += 3;
	} else if (b[i] == 0x62) {
		map = b[i + 1] & 0x7;
		i += 4;
	} else {
		return 0;
	}
	if (i + 1 > n || map == 0 || map > 7)
		return 0;
	uint8_t op = b[i++];
	if (map == 1 && op == 0x77)
		return (unsigned)i; /* vzeroupper, vzeroall: no ModRM */
	if (!(i = modrm_end(b, i, n)))
		return 0;
	if (map == 3 || (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 || (op >= 0xc4 && op <= 0xc6))))
		i += 1;
	return i <= n && i <= 15 ? (unsigned)i : 0;
}

