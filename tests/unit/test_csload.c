/* Capstone loaded on first use (trace/csload.c). Oracle: the Intel SDM's
 * encodings of two instructions mt_insn_length leaves to Capstone (pshufb
 * xmm0, xmm1 of the 0F38 map, 5 bytes; popcnt eax, ecx, 4), and a byte
 * that is no instruction in 64-bit mode (06, PUSH ES). */
#include <intel-pt.h>
#include <stdint.h>
#include <stdio.h>

#include "tap.h"
#include "trace/csload.h"
#include "trace/x86.h"

int main(void)
{
	static const uint8_t shuf[] = {0x66, 0x0f, 0x38, 0x00, 0xc1, 0x90}, pop[] = {0xf3, 0x0f, 0xb8, 0xc1, 0x90},
			     bad[] = {0x06, 0x90};
	struct mt_csload c = {0};
	ok(!mt_insn_length(shuf, sizeof shuf) && !mt_insn_length(pop, sizeof pop), "both left to Capstone by mt_insn_length");
	ok(mt_csload_length(&c, shuf, sizeof shuf, 0x1000) == 5, "pshufb xmm0, xmm1: 5 bytes");
	ok(mt_csload_length(&c, pop, sizeof pop, 0x1000) == 4, "popcnt eax, ecx: 4 bytes");
	ok(mt_csload_length(&c, bad, sizeof bad, 0x1000) == 0, "06 in 64-bit mode: none");
	mt_csload_close(&c);
	ok(!c.handle && !c.insn, "closed");
	ok(mt_csload_length(&c, shuf, sizeof shuf, 0x1000) == 5, "opened again after a close");
	mt_csload_close(&c);
	mt_csload_close(&c);
	ok(!c.handle && !c.insn, "closed twice: still closed");
	return tap_done();
}
