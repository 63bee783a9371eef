/* hot.c built without frame pointers, as most distribution binaries are:
 * its stacks are whole only when unwound from the CFI (perf record
 * --call-graph=dwarf; issue 26). */
// cflags: -fomit-frame-pointer -O1
#include "hot.c"
