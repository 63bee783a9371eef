/* fpcheck: whether an x86-64 program was built with frame pointers, read
 * from its code: how many of its functions begin by setting one up (push
 * %rbp; mov %rsp,%rbp, after an endbr64). perf's default call graphs
 * follow frame pointers; code built without them (most distributions'
 * -O2) gives stacks cut after a frame or two, and needs the stack copied
 * and unwound from its CFI (perf record --call-graph=dwarf). */
#ifndef MT_FPCHECK_H
#define MT_FPCHECK_H

#include <stddef.h>

#include "base/mt_err.h"

/* Counts the functions of the ELF file at path that tell its build (its
 * symbol table's, of 8 bytes or more, the C runtime's start-up code left
 * out, and leaves that set up no frame: gcc's -fno-omit-frame-pointer
 * makes none for them; at most 4000) and those that set up a frame
 * pointer: at least half, a build with them. Returns 0, or an
 * error (not a readable ELF file); *functions 0: it names none (stripped). */
int mt_fpcheck_file(const char *path, size_t *with_fp, size_t *functions, struct mt_err *err);
/* The same over code bytes: whether one function's first bytes set up a
 * frame pointer. */
int mt_fpcheck_prologue(const unsigned char *code, size_t n);

#endif
