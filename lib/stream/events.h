/* events: the mt event stream (mt-events(5)), version 1.
 *
 * One in-memory event type flows through every tool. The text form is one
 * TAB-separated line per event: time pid tid kind from to [key=value...].
 * The binary form carries the same records as length-delimited protobuf
 * messages (proto/mt-events.proto) with interned strings. Readers detect the
 * form themselves; keys a reader does not know travel on as extra columns,
 * so columns can be added without breaking anyone. */
#ifndef MT_EVENTS_H
#define MT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/mt_err.h"

#define MT_EVENTS_VERSION 1
#define MT_NO_OFFSET UINT64_MAX

enum mt_event_kind {
	MT_EV_CALL, MT_EV_RETURN, MT_EV_JUMP, MT_EV_SYSCALL, MT_EV_SYSRET,
	MT_EV_INTERRUPT, MT_EV_IRET, MT_EV_TRACE_START, MT_EV_TRACE_END,
	MT_EV_ERROR, MT_EV_SAMPLE, MT_EV_POWER, MT_EV_TX_ABORT, MT_EV_SNAPSHOT,
	MT_EV_SWITCH_OUT, MT_EV_SWITCH_IN, /* a thread leaves / comes back on a CPU (sampling) */
	/* Intel PT's notes beside the flow (PTW, MWAIT, PWRE, PWRX, EXSTOP,
	 * VMCS packets; Event Trace's CFE with its EVDs; TRIG): their values are
	 * extra columns (mt-events(5)) */
	MT_EV_PTWRITE, MT_EV_MWAIT, MT_EV_PWRE, MT_EV_PWRX, MT_EV_EXSTOP, MT_EV_VMCS, MT_EV_CFE, MT_EV_TRIG,
	MT_EV_KIND_COUNT
};

struct mt_event {
	uint64_t time;        /* perf-clock ns, valid when has_time */
	bool has_time;
	uint32_t pid, tid;
	int32_t cpu;          /* -1: unknown */
	enum mt_event_kind kind;
	uint64_t from, to;
	uint64_t insn;        /* instructions since the previous event of this stream, 0: not counted */
	uint64_t cyc;         /* core cycles since then (Intel PT CYC packets), 0: none counted */
	uint64_t offset;      /* PT byte offset (errors), MT_NO_OFFSET: none */
	uint32_t cbr;         /* power: core:bus ratio */
	bool cond;            /* jump: conditional branch */
	bool async;           /* trace-end: asynchronous (interrupt, not an instruction) */
	const char *msg;      /* error: message */
	const struct mt_kv *extra; /* further columns, in order */
	unsigned nextra;
	/* Nonzero: msg and extra's strings keep their address and content
	 * while this epoch lasts (a binary reader's string table, until it is
	 * reset), so a consumer (the call-stack rebuild, a binary writer) may
	 * cache what it derived from them by pointer. 0: no such promise (text
	 * streams, events built by hand). A filter that adds strings of its own
	 * keeps the epoch only when they last at least as long. */
	uint64_t strings_epoch;
	/* Nonzero (with strings_epoch): extra[0..nextra) holds these very
	 * pointers whenever the id comes again in the epoch (a binary reader's
	 * columns decoded once), so a consumer may cache what it found in them
	 * by id. A filter that changes extra clears it, as it clears the epoch. */
	uint64_t extra_id;
};

struct mt_kv { const char *key, *val; };

enum mt_events_format { MT_EVENTS_TEXT, MT_EVENTS_BINARY };
#define MT_EVENTS_MAGIC "\x89MTEV\r\n\x1a"
#define MT_EVENTS_MAGIC_LEN 8
#define MT_EVENT_MAX_EXTRA 512 /* a sample: 253 frames, 64 branches (their types, counters, names), event, period, frames_cut */

/* A new strings epoch (or extra_id), never given before in this process:
 * a consumer fed by two readers never mistakes one's strings for the
 * other's. */
uint64_t mt_events_new_epoch(void);

const char *mt_event_kind_name(enum mt_event_kind k);
/* Returns the kind for a name, or -1. */
int mt_event_kind_parse(const char *s, size_t n);

struct mt_intern;
struct mt_textmemo;
struct mt_linememo;
struct mt_recmemo;
struct cols_memo;
struct extra_memo;
struct mt_events_raw;
struct mt_readahead;

struct mt_events_writer {
	FILE *out;
	enum mt_events_format format;
	char *buf;            /* output buffer: events are encoded without stdio */
	size_t cap, len;
	bool failed;
	int err_no;
	struct mt_intern *strings; /* binary: strings already defined */
	uint64_t last_time;   /* binary: base of the next time delta */
	/* text: the last event's "PID\tTID\t", reused while they repeat */
	uint32_t thr_pid, thr_tid;
	uint8_t thr_len;      /* 0: none yet */
	char thr[24];
	struct cols_memo *cols_memo; /* column groups already encoded */
	struct out_memo *out_memo;   /* binary: records passed on with groups, by the reader's identity */
	uint64_t out_found;          /* ... found there (for tests) */
	size_t last_at;       /* text: where the last event's line begins in buf */
	bool last_ok;         /* ... and whether it was written there */
};

/* Parses "text" or "binary"; returns -1 for anything else. */
int mt_events_format_parse(const char *s);
int mt_events_writer_init(struct mt_events_writer *w, FILE *out);
int mt_events_writer_init_format(struct mt_events_writer *w, FILE *out, enum mt_events_format format);
/* A text writer into memory for a piece of a stream that another writer's
 * output will carry (mt_events_write_bytes): no version line, no FILE (out
 * NULL); the text stays in buf[0..len), which grows as needed; setting len
 * to 0 empties it, keeping its memory. Out of memory sets failed. */
int mt_events_writer_init_memory(struct mt_events_writer *w);
/* Appends bytes written by a memory writer, as they are. */
void mt_events_write_bytes(struct mt_events_writer *w, const void *p, size_t n);
/* Metadata: the version line is written by init. */
void mt_events_write_comm(struct mt_events_writer *w, uint32_t pid, uint32_t tid, const char *comm);
void mt_events_write_mmap(struct mt_events_writer *w, uint32_t pid, uint64_t start, uint64_t len,
			  uint64_t pgoff, const uint8_t *build_id, unsigned build_id_size, const char *path);
/* An mmap metadata line (the text after "# ") read back; path points into
 * meta, build_id is "" for "-". False when it is not one. */
struct mt_mmap_meta {
	uint32_t pid;
	uint64_t start, len, pgoff;
	char build_id[64];
	const char *path;
};
bool mt_events_parse_mmap(const char *meta, struct mt_mmap_meta *m);
void mt_events_write_fact(struct mt_events_writer *w, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Any other metadata line, the text after "# " (passed through by filters). */
void mt_events_write_meta(struct mt_events_writer *w, const char *line);
void mt_events_write(struct mt_events_writer *w, const struct mt_event *ev);
/* A group of columns a filter adds to many events (the symbols of one
 * address): id, nonzero, names these columns and no others for as long as
 * the group lives, so a writer encodes a group once (its text, or its
 * strings' ids) and copies it after; id 0: encoded each time. */
struct mt_events_cols {
	const struct mt_kv *kv;
	unsigned n;
	/* text: NULL, or the columns as the text form writes them (text_len
	 * bytes, mt_events_cols_text), kept beside them by the filter: a text
	 * writer copies these instead of looking the group up by its id. (32
	 * bytes in all: a filter copies a group an event.) */
	uint32_t text_len;
	uint64_t id;
	const char *text;
};
/* The group's columns as the text form writes them ("\tKEY=VAL"...), into
 * out; their length, or 0 when they do not fit in cap bytes. */
size_t mt_events_cols_text(const struct mt_events_cols *g, char *out, size_t cap);
/* Writes what mt_events_write writes for ev with cols' columns after its
 * own, in order: the same bytes. raw (may be NULL): the bytes ev was read
 * from, unchanged (a reader's r->raw), copied instead of encoding
 * the fields again where they can be. */
void mt_events_write_cols(struct mt_events_writer *w, const struct mt_event *ev, const struct mt_events_raw *raw,
			  const struct mt_events_cols *cols, unsigned ncols);
/* The same, and a text writer keeps what it wrote after the time column
 * in raw->aux (when there is one and it fits), tagged with tag (nonzero):
 * a filter whose added columns are a function of the line's bytes after
 * the time and of the state tag names. */
void mt_events_write_cols_kept(struct mt_events_writer *w, const struct mt_event *ev, const struct mt_events_raw *raw,
			       const struct mt_events_cols *cols, unsigned ncols, uint64_t tag);
/* A text writer writes ev's time and the bytes kept for its line with tag
 * (what mt_events_write_cols_kept wrote for the same bytes in that state)
 * and returns true; false, writing nothing, where none are kept. */
bool mt_events_write_kept(struct mt_events_writer *w, const struct mt_event *ev, const struct mt_events_raw *raw,
			  uint64_t tag);
/* Flushes; returns 0 or MT_EIO with the message in err (EPIPE included). */
int mt_events_writer_finish(struct mt_events_writer *w, struct mt_err *err);

/* Text reader: parses one event line in place (the line is modified: msg
 * and extra strings point into it; extra into kv[MT_EVENT_MAX_EXTRA]).
 * Returns 1 for an event, 0 for a metadata/blank line, or MT_EFORMAT. */
int mt_events_parse_line(char *line, struct mt_event *ev, struct mt_kv *kv, struct mt_err *err);
/* The same for a line of n bytes (line[n] is its NUL). */
int mt_events_parse_line_n(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_err *err);
/* The same with a memo of extra-column tails (textmemo.h; NULL: none):
 * where it has the line's, extra points at the memo's columns, which
 * last the memo's epoch (strings_epoch, extra_id set unless msg is). */
int mt_events_parse_line_memo(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_textmemo *memo,
			      struct mt_err *err);
/* The same; copy (MT_EVENTS_COPY_MAX bytes, or NULL) gets the line's bytes
 * before the NULs where they are exactly what mt_events_write writes for
 * the event (*copied says whether they are; a filter passes them on). */
#define MT_EVENTS_COPY_MAX 4096
int mt_events_parse_line_copy(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_textmemo *memo,
			      char *copy, bool *copied, struct mt_err *err);
/* The fast path alone: 1 when it took the line (as parse_line_copy), 0
 * when it left the line, unchanged, to the general parser. */
int mt_events_parse_fast(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_textmemo *memo,
			 char *copy, bool *copied);
/* A line's time column, [s, s + len), as the fast parser takes it: up to
 * 19 digits; *canon: whether mt's writer writes it so. False for anything
 * else ("-" included). */
bool mt_events_parse_time(const char *s, size_t len, uint64_t *time, bool *canon);
/* The general parser alone, without the fast path for lines as mt writes
 * them: the two must agree on every line (the unit test and the fuzz
 * harness hold them against each other). */
int mt_events_parse_line_general(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_err *err);

/* The bytes a reader read the last event from, for a filter that passes
 * the event on with columns added (mt_events_write_cols; the reader's
 * keep_raw set after opening); valid until the next read. Binary: ok when
 * they are exactly what mt's writer writes for it (its fields, its order,
 * no string ids of the input's table). Text: line_ok when the line is
 * exactly what the writer writes for it, extra columns and all. */
/* Text: what a filter derived from a line's bytes after its time column,
 * kept in the reader's line memo slot for that line (mt_events_raw.aux),
 * so that the next line with those bytes finds it where the reader found
 * the line (mt_events_write_kept). Emptied when the slot takes another
 * line; tag (0: empty) is the filter's, naming the state the bytes were
 * made in. */
#define MT_EVENTS_AUX_MAX 360
struct mt_events_aux {
	uint64_t tag;
	uint16_t len;
	char bytes[MT_EVENTS_AUX_MAX];
};

struct mt_events_raw {
	const uint8_t *body;  /* the Event message's fields */
	size_t len;
	uint64_t prev_time;   /* the time its delta is from */
	/* Binary, ok: the record's identity beside its bytes: each record the
	 * reader found with the same (kept, stamp) has the same bytes after
	 * its time field (NULL: not known), so what a writer derives from them
	 * can be kept by it (the writer's output memo). */
	const void *kept;
	uint64_t kept_stamp;
	bool ok;
	bool line_ok;
	const char *line;     /* the line, without its newline */
	size_t line_len;
	struct mt_events_aux *aux; /* text: the line memo's slot for the line's bytes after the time; NULL: none */
};

/* Stream reader, either form. Strings in what it returns stay valid until
 * the next call. Memory is bounded by the longest record and the number of
 * distinct strings, not by the length of the stream. */
struct mt_events_reader {
	FILE *in;
	struct mt_readahead *ra; /* a pipe: read ahead by a thread (base/readahead.h), in left unread */
	const char *name;     /* for messages */
	enum mt_events_format format;
	char *buf;            /* own, or the read-ahead's ring itself (direct) */
	size_t start, end;
	char *own;            /* the reader's own buffer, of cap bytes and a NUL */
	size_t cap;
	bool direct;          /* buf is the ring's bytes held (mt_readahead_peek) */
	bool eof;
	uint64_t line;        /* text: line number; binary: record number */
	uint64_t last_time;
	char **strings;       /* binary: string table, id 1 at index 0 */
	size_t nstrings, strings_cap;
	uint64_t strings_epoch; /* binary: changes when the table is reset */
	struct mt_kv kv[MT_EVENT_MAX_EXTRA];
	void *arena;          /* binary: unpack memory, reused for every record */
	struct extra_memo *extra_memo; /* binary: extra columns by their ids */
	struct mt_textmemo *textmemo; /* text: extra columns by their bytes (none: out of memory) */
	struct mt_linememo *linememo; /* text: event lines by their bytes after the time (none: off) */
	struct mt_recmemo *recmemo;   /* binary: event records by their bytes after the time (none: off) */
	bool late_time;       /* binary: the record just decoded has a time field not first */
	bool keep_raw;        /* set by a filter that passes events on: raw is kept */
	bool general_only;    /* binary: every record through protobuf-c, none by the
			       * fast path (the unit test holds the two against each other) */
	struct mt_events_raw raw; /* with keep_raw: the last event's bytes */
	char *line_copy;      /* text, with keep_raw: raw.line's bytes (MT_EVENTS_COPY_MAX) */
	size_t arena_cap, arena_used;
	/* an "# error" line seen: the writer's own input stopped short there */
	bool upstream_error;
	bool empty; /* opening failed: not one byte (a writer that failed first) */
	/* opening failed: the input is a recording, not a stream (what
	 * decodes it: mt-pt2events): "a perf.data recording", "an mt bundle
	 * or another compressed archive"; NULL otherwise */
	const char *recording;
	char upstream_msg[256];
};

enum { MT_EVENTS_EOF = 0, MT_EVENTS_EVENT = 1, MT_EVENTS_META = 2 };

/* Reads the header and detects the form: MT_EFORMAT when it is neither. */
int mt_events_reader_open(struct mt_events_reader *r, FILE *in, const char *name, struct mt_err *err);
/* Returns MT_EVENTS_EVENT (ev filled), MT_EVENTS_META (*meta: the text after
 * "# "), MT_EVENTS_EOF, or a negative MT_E* code with err set. An "error"
 * metadata line is returned like any other and also noted in
 * upstream_error: the stream is sound but incomplete (mt-events(5)). */
int mt_events_read(struct mt_events_reader *r, struct mt_event *ev, const char **meta, struct mt_err *err);
void mt_events_reader_close(struct mt_events_reader *r);
/* The metadata line a writer ends a stream with when its input stopped
 * short: "error\tMESSAGE" (tabs and newlines in msg become spaces). */
void mt_events_write_error(struct mt_events_writer *w, const char *msg);

#endif
