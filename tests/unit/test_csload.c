/* Capstone loaded on first use (trace/csload.c). Oracle: the Intel SDM's
 * encodings of two instructions mt_insn_length leaves to Capstone (VEX
 * vzeroupper, 3 bytes; lock cmpxchg [rcx], edx, 4), and a byte that is no
 * instruction in 64-bit mode (06, PUSH ES). */
#include <intel-pt.h>
#include <stdint.h>
#include <stdio.h>

#include "tap.h"
#include "trace/csload.h"
#include "trace/x86.h"

int main(void)
{
	static const uint8_t vzu[] = {0xc5, 0xf8, 0x77, 0x90}, lock[] = {0xf0, 0x0f, 0xb1, 0x11, 0x90}, bad[] = {0x06, 0x90};
	struct mt_csload c = {0};
	ok(!mt_insn_length(vzu, sizeof vzu) && !mt_insn_length(lock, sizeof lock),
	   "both left to Capstone by mt_insn_length");
	ok(mt_csload_length(&c, vzu, sizeof vzu, 0x1000) == 3, "vzeroupper: 3 bytes");
	ok(mt_csload_length(&c, lock, sizeof lock, 0x1000) == 4, "lock cmpxchg [rcx], edx: 4 bytes");
	ok(mt_csload_length(&c, bad, sizeof bad, 0x1000) == 0, "06 in 64-bit mode: none");
	mt_csload_close(&c);
	ok(!c.handle && !c.insn, "closed");
	ok(mt_csload_length(&c, vzu, sizeof vzu, 0x1000) == 3, "opened again after a close");
	mt_csload_close(&c);
	mt_csload_close(&c);
	ok(!c.handle && !c.insn, "closed twice: still closed");
	return tap_done();
}
