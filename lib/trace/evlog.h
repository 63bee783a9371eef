/* evlog: decoded events held in memory, packed (for the pool and the
 * splitter, which decode ahead of writing), and a memory text writer's reset. */
#ifndef MT_EVLOG_H
#define MT_EVLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/events.h"

/* An event held in memory, packed: the fields a decoder sets, in 72 bytes
 * (struct mt_event takes 120; a round of pieces holds millions). */
struct logged {
	uint64_t time, from, to, insn, cyc, offset;
	uint32_t pid, tid, cbr;
	uint32_t strs;              /* arena offset + 1 of its strings, 0: none */
	int32_t cpu;
	uint8_t kind, flags, nextra;
};
/* LOG_MSG: strs begins with the message; the nextra columns' keys and
 * values follow (NUL-terminated, key then value). */
enum { LOG_HAS_TIME = 1, LOG_COND = 2, LOG_ASYNC = 4, LOG_MSG = 8 };
/* The most extra columns a decoder gives an event (the PT notes'). */
#define MT_EVLOG_MAX_EXTRA 4
struct evlog {
	struct logged *v;
	size_t n, cap;
	char *arena;
	size_t alen, acap;
	bool oom;
};

/* A decoder mt_samples_sink (ctx: the evlog): appends ev; on running out of memory
 * sets oom and keeps nothing more. */
void mt_evlog_sink(void *ctx, const struct mt_event *ev);
/* Event k of the log, unpacked into *ev (its msg and extra columns point
 * into the log, the columns' pairs into kv). */
const struct mt_event *mt_evlog_event(const struct evlog *l, size_t k, struct mt_event *ev,
				      struct mt_kv kv[MT_EVLOG_MAX_EXTRA]);
/* Empty, keeping its memory up to `keep` bytes. */
void mt_evlog_reset(struct evlog *l, size_t keep);
void mt_evlog_free(struct evlog *l);
/* An empty memory writer for the next group or piece, keeping its memory
 * up to `keep` bytes (one that grew past it is given back). */
int mt_memtext_reset(struct mt_events_writer *t, size_t keep);

#endif
