/* kernel: the synthetic kernel (a syscall entry, a handler, an exit) the
 * kernel variants trace through: its code and symbols. Internal to synth/. */
#ifndef MT_SYNTH_KERNEL_H
#define MT_SYNTH_KERNEL_H

#include "synth/synth.h"

#define KB MT_SYNTH_KERNEL_BASE
enum {
	K_ENTRY = 0x00,   /* entry_SYSCALL_64: nop; call do_syscall; jmp syscall_exit */
	K_CALL = 0x01,
	K_JMP = 0x06,
	K_HANDLER = 0x20, /* do_syscall: mov ecx,3; 1: dec ecx; jnz 1b; ret */
	K_DEC = 0x25,
	K_JNZ = 0x27,
	K_RET = 0x29,
	K_EXIT = 0x40,    /* syscall_exit: sysretq */
	K_SIZE = 0x43,
};

extern const uint8_t mt_synth_kernel_code[K_SIZE];
struct mt_synth_kernel_sym { const char *name; unsigned start, size; };
extern const struct mt_synth_kernel_sym mt_synth_kernel_syms[3];

#endif
