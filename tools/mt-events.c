/* mt-events: read an mt event stream in either form and write it again,
 * converting between text and binary (or checking a stream end to end). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/events.h"
#include "stream/filterio.h"
#include "base/version.h"

#define PROG "mt-events"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... [FILE]\n"
"Read an mt event stream (mt-events(5)), text or binary, detected from its\n"
"first bytes, and write it again. FILE '-' or none reads standard input.\n"
"\n"
"  -o, --output=FILE              write to FILE (atomically) instead of stdout\n"
"      --output-format=text|binary  encoding to write (default: text)\n"
"      --stats                    print on standard error the counts of events,\n"
"                                 metadata lines and error events, and the first\n"
"                                 and last event time (0: none, or timeless)\n"
"  -h, --help                     show this help and exit\n"
"  -V, --version                  show the version and exit\n"
"\n"
"Exit status: 0 the whole stream was read and written; 1 unreadable or\n"
"malformed input, or a write error (what came before the damage is still\n"
"written); 2 usage.\n");
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"output-format", required_argument, NULL, 'F'},
		{"stats", no_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	const char *out = "-";
	int format = MT_EVENTS_TEXT, c;
	int stats = 0;
	while ((c = getopt_long(argc, argv, "o:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'F':
			if ((format = mt_events_format_parse(optarg)) < 0) {
				fprintf(stderr, PROG ": bad --output-format '%s': expected text or binary\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'S': stats = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " (mt) " MT_VERSION "\n"); return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	if (optind + 1 < argc) {
		fprintf(stderr, PROG ": too many arguments\nTry '" PROG " --help' for more information.\n");
		return EXIT_USAGE;
	}
	const char *in = optind < argc ? argv[optind] : "-";
	struct mt_filterio io;
	int open_rc = mt_filterio_open(&io, PROG, in, out);
	if (open_rc)
		return open_rc;
	struct mt_events_writer w;
	if (mt_events_writer_init_format(&w, io.out.f, (enum mt_events_format)format)) {
		fprintf(stderr, PROG ": out of memory\n");
		return mt_filterio_close(&io, EXIT_DATA, true);
	}
	struct mt_err err = {0};
	uint64_t nevents = 0, nmeta = 0, nerrors = 0, tmin = UINT64_MAX, tmax = 0;
	struct mt_event ev;
	const char *meta;
	int rc;
	while ((rc = mt_events_read(&io.reader, &ev, &meta, &err)) > 0) {
		if (rc == MT_EVENTS_META) {
			mt_events_write_meta(&w, meta);
			nmeta++;
		} else {
			mt_events_write(&w, &ev);
			nevents++;
			nerrors += ev.kind == MT_EV_ERROR;
			if (ev.has_time && ev.time < tmin)
				tmin = ev.time;
			if (ev.has_time && ev.time > tmax)
				tmax = ev.time;
		}
	}
	int status = 0;
	if (rc < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		status = EXIT_DATA;
		mt_events_write_error(&w, err.msg); /* the output says it stops short */
	}
	struct mt_err werr = {0};
	bool wfail = mt_events_writer_finish(&w, &werr) != 0;
	if (wfail) {
		fprintf(stderr, PROG ": %s\n", werr.msg);
		status = EXIT_DATA;
	}
	if (stats)
		fprintf(stderr, PROG ": stats: format=%s events=%" PRIu64 " meta=%" PRIu64 " errors=%" PRIu64
			" first_time=%" PRIu64 " last_time=%" PRIu64 "\n",
			io.reader.format == MT_EVENTS_BINARY ? "binary" : "text", nevents, nmeta, nerrors,
			tmin == UINT64_MAX ? 0 : tmin, tmax);
	return mt_filterio_close(&io, status, wfail);
}
