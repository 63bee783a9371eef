/* memstream: an event stream written to memory and read back, for the
 * unit tests of the stream and of what reads it. */
#ifndef MT_TEST_MEMSTREAM_H
#define MT_TEST_MEMSTREAM_H

#include <stdio.h>
#include <stdlib.h>

#include "stream/events.h"

/* A writer of the given form into a memory stream of *buf, *len (both set
 * when it closes); returns the stream, for read_back. */
static FILE *write_to_memory(struct mt_events_writer *w, enum mt_events_format fmt, char **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	FILE *f = open_memstream(buf, len);
	mt_events_writer_init_format(w, f, fmt);
	return f;
}

/* Finishes a writer on the memory stream f (open_memstream of *buf, *len:
 * both are set when it closes) and opens a reader on what it wrote;
 * returns the reader's FILE. */
static FILE *read_back(struct mt_events_writer *w, FILE *f, char **buf, size_t *len, struct mt_events_reader *r,
		       struct mt_err *err)
{
	mt_err_clear(err);
	mt_events_writer_finish(w, err);
	fclose(f);
	f = fmemopen(*buf, *len, "r");
	mt_events_reader_open(r, f, "mem", err);
	return f;
}

#endif
