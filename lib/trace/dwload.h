/* dwload: elfutils' libdw (libdwfl's unwinder and the CFI it reads) loaded
 * when a recording needs it (--call-graph=dwarf stacks), not at every
 * start: linked, it cost each mt-pt2events process about 1 ms on this VM
 * (libdw, liblzma and libbz2 mapped and relocated), which an Intel PT
 * decode never uses. The functions keep their libdw names and types. */
#ifndef MT_DWLOAD_H
#define MT_DWLOAD_H

#include <elfutils/libdwfl.h>

struct mt_dw {
	__typeof__(dwfl_begin) *dwfl_begin;
	__typeof__(dwfl_end) *dwfl_end;
	__typeof__(dwfl_errmsg) *dwfl_errmsg;
	__typeof__(dwfl_report_begin_add) *dwfl_report_begin_add;
	__typeof__(dwfl_report_elf) *dwfl_report_elf;
	__typeof__(dwfl_report_end) *dwfl_report_end;
	__typeof__(dwfl_addrmodule) *dwfl_addrmodule;
	__typeof__(dwfl_attach_state) *dwfl_attach_state;
	__typeof__(dwfl_getthread_frames) *dwfl_getthread_frames;
	__typeof__(dwfl_thread_state_registers) *dwfl_thread_state_registers;
	__typeof__(dwfl_thread_state_register_pc) *dwfl_thread_state_register_pc;
	__typeof__(dwfl_frame_pc) *dwfl_frame_pc;
	__typeof__(dwfl_frame_reg) *dwfl_frame_reg;
	__typeof__(dwfl_linux_proc_find_elf) *dwfl_linux_proc_find_elf;
	__typeof__(dwfl_standard_find_debuginfo) *dwfl_standard_find_debuginfo;
	__typeof__(dwfl_module_eh_cfi) *dwfl_module_eh_cfi;
	__typeof__(dwfl_module_dwarf_cfi) *dwfl_module_dwarf_cfi;
	__typeof__(dwarf_cfi_addrframe) *dwarf_cfi_addrframe;
	__typeof__(dwarf_frame_info) *dwarf_frame_info;
	__typeof__(dwarf_frame_register) *dwarf_frame_register;
};

/* libdw's functions, loaded on the first call (once a process, from any
 * thread): libdw.so.1, or the file MT_LIBDW names in the environment. NULL
 * where it cannot be loaded or lacks one of them, *why saying which
 * (dlerror's words), for as long as the process runs. */
const struct mt_dw *mt_dw_load(const char **why);

#endif
