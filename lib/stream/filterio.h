/* filterio: the input and output ends of a stream filter (mt-events,
 * mt-symbolize, mt-toperfetto): an event stream read from a path or
 * standard input, and an output written atomically to a path or stdout.
 * Problems are printed as "PROG: message" on stderr. */
#ifndef MT_FILTERIO_H
#define MT_FILTERIO_H

#include <stdbool.h>
#include <stdio.h>

#include "stream/events.h"
#include "base/outfile.h"

struct mt_filterio {
	const char *prog;
	const char *in_name;  /* the input, for messages: its path or "standard input" */
	const char *out_name; /* as the user named the output */
	FILE *in;
	struct mt_events_reader reader;
	struct mt_outfile out;
	bool have_reader, have_out;
};

/* Opens both ends. Returns 0, or 1 (the data exit status) after printing
 * why, or 2 (usage) when there is no input file and stdin is a terminal; given a recording (perf.data, a bundle), the command that decodes
 * it into what prog reads, e.g. "mt-pt2events FILE | mt-symbolize |
 * mt-report". */
int mt_filterio_open(struct mt_filterio *io, const char *prog, const char *in_path, const char *out_path);
/* Commits the output (or removes it when failed is set), closes the input.
 * Returns status, or 1 if committing failed or the input said it is
 * incomplete (an "# error" line, said on stderr; the output, which carries
 * the line on, is kept). */
int mt_filterio_close(struct mt_filterio *io, int status, bool failed);

#endif
