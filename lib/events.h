/* events: the mt event stream (mt-events(5)), version 1.
 *
 * One in-memory event type flows through every tool. The text codec writes
 * one TAB-separated line per event: time pid tid kind from to [key=value...].
 * Readers skip keys they do not know, so columns can be added freely. */
#ifndef MT_EVENTS_H
#define MT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mt_err.h"

#define MT_EVENTS_VERSION 1
#define MT_NO_OFFSET UINT64_MAX

enum mt_event_kind {
	MT_EV_CALL, MT_EV_RETURN, MT_EV_JUMP, MT_EV_SYSCALL, MT_EV_SYSRET,
	MT_EV_INTERRUPT, MT_EV_IRET, MT_EV_TRACE_START, MT_EV_TRACE_END,
	MT_EV_ERROR, MT_EV_SAMPLE, MT_EV_POWER, MT_EV_KIND_COUNT
};

struct mt_event {
	uint64_t time;        /* perf-clock ns, valid when has_time */
	bool has_time;
	uint32_t pid, tid;
	int32_t cpu;          /* -1: unknown */
	enum mt_event_kind kind;
	uint64_t from, to;
	uint64_t insn;        /* instructions since the previous event of this stream, 0: not counted */
	uint64_t offset;      /* PT byte offset (errors), MT_NO_OFFSET: none */
	uint32_t cbr;         /* power: core:bus ratio */
	bool cond;            /* jump: conditional branch */
	bool async;           /* trace-end: asynchronous (interrupt, not an instruction) */
	const char *msg;      /* error: message */
};

const char *mt_event_kind_name(enum mt_event_kind k);
/* Returns the kind for a name, or -1. */
int mt_event_kind_parse(const char *s, size_t n);

struct mt_events_writer {
	FILE *out;
	char *buf;            /* line buffer: events are formatted without stdio */
	size_t cap, len;
	bool failed;
	int err_no;
};

int mt_events_writer_init(struct mt_events_writer *w, FILE *out);
/* Metadata: the version line is written by init. */
void mt_events_write_comm(struct mt_events_writer *w, uint32_t pid, uint32_t tid, const char *comm);
void mt_events_write_mmap(struct mt_events_writer *w, uint32_t pid, uint64_t start, uint64_t len,
			  uint64_t pgoff, const uint8_t *build_id, unsigned build_id_size, const char *path);
void mt_events_write_fact(struct mt_events_writer *w, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void mt_events_write(struct mt_events_writer *w, const struct mt_event *ev);
/* Flushes; returns 0 or MT_EIO with the message in err (EPIPE included). */
int mt_events_writer_finish(struct mt_events_writer *w, struct mt_err *err);

/* Text reader: parses one event line in place (the line is modified: msg
 * points into it). Returns 1 for an event, 0 for a metadata/blank line, or
 * MT_EFORMAT with a message. */
int mt_events_parse_line(char *line, struct mt_event *ev, struct mt_err *err);

#endif
