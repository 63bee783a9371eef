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
};

struct mt_jitdump {
	uint32_t pid;
	struct mt_jit_code *code; /* in load order, moves applied */
	size_t ncode;
	char *strings;
	uint64_t damaged_at;  /* offset where a record broke off (0: whole) */
};

/* Whether path names a jitdump as perf looks for it: jit-PID.dump. */
bool mt_jitdump_named(const char *path);

/* Reads path whole; a record cut short or lying about its size ends the
 * reading there (damaged_at), what came before is kept. Errors: the file
 * cannot be read, or is no jitdump (its magic, its version). */
int mt_jitdump_read(struct mt_jitdump *jd, const char *path, struct mt_err *err);
void mt_jitdump_free(struct mt_jitdump *jd);

#endif
