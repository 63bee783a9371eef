/* trigger: the place in the traced program that takes a snapshot -- a
 * function, an address or a source line, as magic-trace's -trigger names
 * it -- and the perf events that report every time any thread reaches it.
 *
 * magic-trace opens one hardware breakpoint on the first thread only, so a
 * hit in another thread never fires (its #274). Here every thread the
 * processes have is watched, and the threads they start later inherit the
 * watch. Hardware breakpoints where they fire; where they do not (some
 * virtual machines accept them and never fire them), a uprobe, which the
 * kernel implements with a software breakpoint in the program's code. */
#ifndef MT_TRIGGER_H
#define MT_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/mt_err.h"

/* The `.` trigger: an empty function programs call to ask for a snapshot. */
#define MT_STOP_INDICATOR "magic_trace_stop_indicator"

enum mt_trigger_kind { MT_TRIGGER_SYMBOL, MT_TRIGGER_ADDR, MT_TRIGGER_LINE };

struct mt_trigger_spec {
	enum mt_trigger_kind kind;
	char name[256];    /* symbol, or source file */
	uint64_t addr;     /* the ELF virtual address */
	unsigned line;
};

/* Reads magic-trace's forms: `.`, symbol:NAME, addr:ADDR, line:FILE:LINE,
 * or bare NAME, 0xADDR, FILE:LINE. The interactive `?` forms are refused. */
int mt_trigger_parse(const char *s, struct mt_trigger_spec *spec, struct mt_err *err);

/* Where the trigger lies in a running process's executable. */
struct mt_trigger_site {
	char path[4096];   /* the executable, resolved */
	uint64_t vaddr;    /* ELF virtual address */
	uint64_t offset;   /* file offset, for a uprobe */
	uint64_t addr;     /* address in the process */
	char what[320];    /* the trigger as messages name it */
};

/* Resolves spec in the executable of pid (symbol table, DWARF line table),
 * with the process's load address for a position-independent one. */
int mt_trigger_resolve(const struct mt_trigger_spec *spec, pid_t pid, struct mt_trigger_site *site,
		       struct mt_err *err);

enum mt_trigger_via { MT_TRIGGER_AUTO, MT_TRIGGER_BREAKPOINT, MT_TRIGGER_UPROBE };

/* Do hardware execute breakpoints fire on this machine? Tested on a
 * function of this process. */
bool mt_hw_breakpoints_fire(void);

struct mt_trigger_hit {
	uint64_t time;     /* perf clock, as perf.data's samples */
	uint64_t ip;
	uint64_t arg0, arg1; /* the first two integer arguments (rdi, rsi) */
	uint32_t pid, tid;
};

struct mt_trigger;

/* Watches every thread of the npids processes (and what they start) for
 * site. AUTO takes a hardware breakpoint when they fire, else a uprobe. */
int mt_trigger_open(const struct mt_trigger_site *site, const pid_t *pids, size_t npids, enum mt_trigger_via via,
		    struct mt_trigger **out, struct mt_err *err);
enum mt_trigger_via mt_trigger_via_used(const struct mt_trigger *t);
/* A descriptor that polls readable when hits are waiting. */
int mt_trigger_fd(const struct mt_trigger *t);
/* Takes up to max waiting hits, in no particular order across CPUs;
 * *lost counts hits the kernel dropped. */
size_t mt_trigger_read(struct mt_trigger *t, struct mt_trigger_hit *hits, size_t max, uint64_t *lost);
void mt_trigger_close(struct mt_trigger *t);

#endif
