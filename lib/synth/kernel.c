/* kernel: the synthetic kernel's code and symbols, and the files that
 * hold them for a decoder: kallsyms, a vmlinux-like ELF or a kcore-like
 * core file. */
#define _GNU_SOURCE
#include "synth/kernel.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const uint8_t mt_synth_kernel_code[K_SIZE] = {
	[K_ENTRY] = 0x90,
	[K_CALL] = 0xe8, 0x1a, 0x00, 0x00, 0x00,  /* call K_HANDLER */
	[K_JMP] = 0xeb, 0x38,                     /* jmp K_EXIT */
	[K_HANDLER] = 0xb9, 0x03, 0x00, 0x00, 0x00,
	[K_DEC] = 0xff, 0xc9,
	[K_JNZ] = 0x75, 0xfc,                     /* jnz K_DEC */
	[K_RET] = 0xc3,
	[K_EXIT] = 0x48, 0x0f, 0x07,              /* sysretq */
};

const struct mt_synth_kernel_sym mt_synth_kernel_syms[3] = {
	{"entry_SYSCALL_64", K_ENTRY, K_HANDLER - K_ENTRY},
	{"do_syscall", K_HANDLER, K_EXIT - K_HANDLER},
	{"syscall_exit", K_EXIT, K_SIZE - K_EXIT},
};


static int put_bytes(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -1;
}

int mt_synth_write_kallsyms(FILE *f, struct mt_err *err)
{
	for (size_t i = 0; i < sizeof mt_synth_kernel_syms / sizeof mt_synth_kernel_syms[0]; i++)
		if (fprintf(f, "%016" PRIx64 " T %s\n", (uint64_t)(KB + mt_synth_kernel_syms[i].start), mt_synth_kernel_syms[i].name) < 0)
			return mt_err_set(err, MT_EIO, "writing kallsyms");
	return 0;
}

/* A minimal ELF64: header, one PT_LOAD for the code, and for vmlinux the
 * sections .text, .symtab, .strtab, .shstrtab. */
int mt_synth_write_kernel_elf(FILE *f, bool core, struct mt_err *err)
{
	enum { EH = 64, PH = 56, SH = 64, CODE_OFF = 0x1000 };
	const size_t nsyms = sizeof mt_synth_kernel_syms / sizeof mt_synth_kernel_syms[0];
	char strtab[256] = "";
	size_t strsz = 1, name_off[8];
	for (size_t i = 0; i < nsyms; i++) {
		name_off[i] = strsz;
		strsz += (size_t)sprintf(strtab + strsz, "%s", mt_synth_kernel_syms[i].name) + 1;
	}
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	const size_t sym_off = CODE_OFF + K_SIZE + 5, nsymtab = nsyms + 1;
	const size_t str_off = sym_off + nsymtab * 24, shstr_off = str_off + strsz;
	const size_t sh_off = (shstr_off + sizeof shstr + 7) & ~(size_t)7;
	uint8_t eh[EH] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	uint16_t u16v;
	uint32_t u32v;
	uint64_t u64v;
#define SET(buf, off, v) (memcpy((buf) + (off), &(v), sizeof(v)))
	u16v = core ? 4 : 2; SET(eh, 16, u16v);            /* e_type */
	u16v = 62; SET(eh, 18, u16v);                       /* EM_X86_64 */
	u32v = 1; SET(eh, 20, u32v);
	u64v = KB; SET(eh, 24, u64v);                       /* e_entry */
	u64v = EH; SET(eh, 32, u64v);                       /* e_phoff */
	u64v = core ? 0 : sh_off; SET(eh, 40, u64v);        /* e_shoff */
	u16v = EH; SET(eh, 52, u16v);
	u16v = PH; SET(eh, 54, u16v);
	u16v = 1; SET(eh, 56, u16v);                        /* e_phnum */
	u16v = SH; SET(eh, 58, u16v);
	u16v = core ? 0 : 5; SET(eh, 60, u16v);             /* e_shnum */
	u16v = core ? 0 : 4; SET(eh, 62, u16v);             /* e_shstrndx */
	uint8_t ph[PH] = {0};
	u32v = 1; SET(ph, 0, u32v);                         /* PT_LOAD */
	u32v = 5; SET(ph, 4, u32v);                         /* R+X */
	u64v = CODE_OFF; SET(ph, 8, u64v);
	u64v = KB; SET(ph, 16, u64v);
	SET(ph, 24, u64v);
	u64v = K_SIZE; SET(ph, 32, u64v);
	SET(ph, 40, u64v);
	u64v = 0x1000; SET(ph, 48, u64v);
	uint8_t pad[CODE_OFF] = {0};
	int bad = put_bytes(f, eh, EH) || put_bytes(f, ph, PH) || put_bytes(f, pad, CODE_OFF - EH - PH) ||
		  put_bytes(f, mt_synth_kernel_code, K_SIZE);
	if (!core && !bad) {
		bad = put_bytes(f, pad, 5);
		uint8_t sym[24] = {0};
		bad |= put_bytes(f, sym, 24); /* the null symbol */
		for (size_t i = 0; i < nsyms && !bad; i++) {
			memset(sym, 0, sizeof sym);
			u32v = (uint32_t)name_off[i]; SET(sym, 0, u32v);
			sym[4] = 0x12;                       /* GLOBAL FUNC */
			u16v = 1; SET(sym, 6, u16v);         /* .text */
			u64v = KB + mt_synth_kernel_syms[i].start; SET(sym, 8, u64v);
			u64v = mt_synth_kernel_syms[i].size; SET(sym, 16, u64v);
			bad |= put_bytes(f, sym, 24);
		}
		bad |= put_bytes(f, strtab, strsz) || put_bytes(f, shstr, sizeof shstr) ||
		       put_bytes(f, pad, sh_off - shstr_off - sizeof shstr);
		/* section headers: null, .text, .symtab, .strtab, .shstrtab */
		struct { uint32_t name, type; uint64_t flags, addr, off, size; uint32_t link, info;
			 uint64_t align, entsize; } sh[5] = {
			{0},
			{1, 1 /* PROGBITS */, 6 /* AX */, KB, CODE_OFF, K_SIZE, 0, 0, 16, 0},
			{7, 2 /* SYMTAB */, 0, 0, sym_off, nsymtab * 24, 3, 1, 8, 24},
			{15, 3 /* STRTAB */, 0, 0, str_off, strsz, 0, 0, 1, 0},
			{23, 3, 0, 0, shstr_off, sizeof shstr, 0, 0, 1, 0},
		};
		for (int i = 0; i < 5 && !bad; i++) {
			uint8_t b[SH];
			SET(b, 0, sh[i].name); SET(b, 4, sh[i].type); SET(b, 8, sh[i].flags);
			SET(b, 16, sh[i].addr); SET(b, 24, sh[i].off); SET(b, 32, sh[i].size);
			SET(b, 40, sh[i].link); SET(b, 44, sh[i].info); SET(b, 48, sh[i].align);
			SET(b, 56, sh[i].entsize);
			bad |= put_bytes(f, b, SH);
		}
	}
#undef SET
	return bad ? mt_err_set(err, MT_EIO, "writing the kernel image") : 0;
}
