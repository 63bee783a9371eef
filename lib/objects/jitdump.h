/* jitdump: the code a JIT compiled, from the jitdump file it wrote (perf's
 * format, tools/perf/util/jitdump.h: V8's --perf-prof, Java's perf agent,
 * .NET, and others): each function's address range and name. The process
 * maps the file (jit-PID.dump) so that perf records where it is. */
#ifndef MT_JITDUMP_H
#define MT_JITDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"

struct mt_jit_code {
	uint64_t start, size;
	uint64_t time;       /* the load's (or last move's) timestamp, the recording's -k clock */
	uint64_t index;      /* the JIT's code index (moves name it) */
	const char *name;    /* in mt_jitdump's strings */
	uint64_t code_offset; /* where the load's code bytes lie in the file (0: not there whole) */
	/* its source lines (the DEBUG_INFO record before the load, for its
	 * address): lines[line0, line0 + nlines), by address */
	size_t line0, nlines;
};

/* One debug entry: the code from addr on is the source's line of file
 * (the spec's rule: an address's line is the entry at or below it; a move
 * moves the entries with the code). */
struct mt_jit_line {
	uint64_t addr;
	int32_t line;
	const char *file;    /* in mt_jitdump's strings; NULL: none said yet */
};

/* The header's flags: the times are the CPU's (x86: TSC), not CLOCK_MONOTONIC. */
#define MT_JITDUMP_ARCH_TIMESTAMP 1u

struct mt_jitdump {
	uint32_t pid;
	uint64_t flags;       /* MT_JITDUMP_ARCH_TIMESTAMP */
	struct mt_jit_code *code; /* in load order, moves applied */
	size_t ncode;
	struct mt_jit_line *lines;
	size_t nlines;
	char *strings;
	uint64_t damaged_at;  /* offset where a record broke off (0: whole) */
};

/* Whether path names a jitdump as perf looks for it: jit-PID.dump. */
bool mt_jitdump_named(const char *path);

/* Reads path whole; a record cut short or lying about its size ends the
 * reading there (damaged_at), what came before is kept. A DEBUG_INFO
 * record's entries (each u64 addr, i32 line, i32 discriminator, the file's
 * name, "\xff" for the one before's) go to the next load of its address;
 * a count that lies is bounded by the record, a name not ended in it ends
 * its entries there. Errors: the file
 * cannot be read, or is no jitdump (its magic, its version). */
int mt_jitdump_read(struct mt_jitdump *jd, const char *path, struct mt_err *err);
void mt_jitdump_free(struct mt_jitdump *jd);
/* The debug entry of addr in code c of jd (the entry at or below it);
 * NULL where c has none there (or a line under 1), or addr is outside c. */
const struct mt_jit_line *mt_jitdump_line(const struct mt_jitdump *jd, const struct mt_jit_code *c, uint64_t addr);

#endif
