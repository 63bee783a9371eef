/* perfscript: the text of `perf script` read into mt events.
 *
 * Reads magic-trace's two field lists (shared/docs/magic-trace-behaviour.md
 * 5.2): Intel PT branches (`--ns --itrace=bep -F pid,tid,time,flags,ip,addr,
 * sym,symoff,synth,dso,event,period`) and stack samples (`-F pid,tid,time,ip,
 * sym,symoff,dso,event,period` with callchains). Symbols travel as extra
 * columns: from_sym/from_off/from_dso and to_sym/to_off/to_dso; a stack
 * sample carries one frame= column per callchain entry, outermost first.
 * A line that cannot be read is counted and skipped, never fatal. */
#ifndef MT_PERFSCRIPT_H
#define MT_PERFSCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/events.h"
#include "base/mt_err.h"

enum mt_pscript_skip {
	MT_PSKIP_SYNTAX,      /* not a record this reader understands */
	MT_PSKIP_EVENT,       /* an event name it does not know */
	MT_PSKIP_FLAGS,       /* branch flags it does not know */
	MT_PSKIP_FRAMES,      /* callchain entries beyond what one event holds */
	MT_PSKIP_COUNT
};

#define MT_PSCRIPT_STR 512

struct mt_pscript_reader {
	int fd;
	const char *name;
	char *buf;            /* input buffer; lines are cut in place */
	size_t cap, start, end;
	bool eof;
	uint64_t lineno;
	uint64_t records, psbs;
	uint64_t skipped[MT_PSKIP_COUNT];
	/* the strings of the event returned last */
	char str[MT_EVENT_MAX_EXTRA][MT_PSCRIPT_STR];
	struct mt_kv kv[MT_EVENT_MAX_EXTRA];
	char msg[MT_PSCRIPT_STR];
	char *pending;        /* a header line read ahead of its callchain's end */
	char *held;           /* that line while it is parsed */
	/* called once per kind of skipped line */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

/* Does text starting with these bytes look like perf script output? */
bool mt_pscript_detect(const char *head, size_t len);

/* fd is read to its end (not closed); prefix holds bytes already read from it. */
int mt_pscript_init(struct mt_pscript_reader *r, int fd, const char *name, const char *prefix,
		    size_t prefix_len, struct mt_err *err);
/* Returns 1 with the next event, 0 at the end, or a negative MT_E* code.
 * Strings in ev stay valid until the next call. */
int mt_pscript_next(struct mt_pscript_reader *r, struct mt_event *ev, struct mt_err *err);
void mt_pscript_fini(struct mt_pscript_reader *r);

#endif
