/* filterio: see filterio.h. */
#define _POSIX_C_SOURCE 200809L
#include "stream/filterio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/batchsched.h"

/* MT_UPSTREAM_REPORTED set: the stream's writer shares our standard error
 * (mt-trace and mt-batch set it for the later stages of their pipelines),
 * so what it said is not said again: an upstream error line, or an empty
 * stream from a writer that failed before writing. The exit status is 1
 * all the same. */
static bool upstream_reported(void)
{
	const char *e = getenv("MT_UPSTREAM_REPORTED");
	return e && *e;
}

/* A recording where a stream belongs: what it is, and the command that
 * makes the stream prog reads from it. */
static void say_recording(const char *prog, const char *in_path, const char *what)
{
	const char *file = strcmp(in_path, "-") ? in_path : "FILE";
	/* mt-toperfetto and mt-report read names: mt-symbolize first */
	bool names = !strcmp(prog, "mt-toperfetto") || !strcmp(prog, "mt-report");
	fprintf(stderr, "%s: %s is %s, not an mt event stream; decode it first: mt-pt2events %s%s | %s%s\n", prog,
		strcmp(in_path, "-") ? in_path : "standard input", what, file, names ? " | mt-symbolize" : "", prog,
		!strcmp(prog, "mt-toperfetto") ? " -o trace.pftrace" : "");
	if (!strcmp(prog, "mt-toperfetto"))
		fprintf(stderr, "%s: (or in one command: mt-trace decode %s)\n", prog, file);
}

int mt_filterio_open(struct mt_filterio *io, const char *prog, const char *in_path, const char *out_path)
{
	memset(io, 0, sizeof *io);
	io->prog = prog;
	io->out_name = out_path;
	if (!strcmp(in_path, "-") && isatty(0)) {
		/* waiting silently for a stream typed in helps nobody */
		fprintf(stderr, "%s: no FILE, and standard input is a terminal: give an event stream (mt-pt2events"
			" FILE | %s)\nTry '%s --help' for more information.\n", prog, prog, prog);
		return 2;
	}
	io->in = strcmp(in_path, "-") ? fopen(in_path, "rb") : stdin;
	if (!io->in) {
		fprintf(stderr, "%s: %s: %s\n", prog, in_path, strerror(errno));
		return 1;
	}
	/* before the reader starts its read-ahead thread, which inherits it */
	mt_batchsched_for_pipe(fileno(io->in));
	struct mt_err err = {0};
	io->have_reader = true;
	io->in_name = strcmp(in_path, "-") ? in_path : "standard input";
	if (mt_events_reader_open(&io->reader, io->in, io->in_name, &err)) {
		if (io->reader.recording)
			say_recording(prog, in_path, io->reader.recording);
		else if (!(upstream_reported() && io->reader.empty))
			fprintf(stderr, "%s: %s\n", prog, err.msg);
		mt_filterio_close(io, 1, true);
		return 1;
	}
	if (mt_outfile_open(&io->out, out_path, &err)) {
		fprintf(stderr, "%s: %s\n", prog, err.msg);
		mt_filterio_close(io, 1, true);
		return 1;
	}
	io->have_out = true;
	return 0;
}

int mt_filterio_close(struct mt_filterio *io, int status, bool failed)
{
	if (io->have_reader && io->reader.upstream_error && !status) {
		if (!upstream_reported())
			fprintf(stderr, "%s: %s: the stream is incomplete: %s\n", io->prog, io->reader.name,
				io->reader.upstream_msg);
		status = 1;
	}
	if (io->have_out) {
		struct mt_err err = {0};
		if (failed || ferror(io->out.f)) {
			mt_outfile_abort(&io->out);
		} else if (mt_outfile_commit(&io->out, &err)) {
			fprintf(stderr, "%s: %s\n", io->prog, err.msg);
			status = 1;
		} else {
			mt_outfile_say_replaced(&io->out, io->prog, io->out_name);
		}
		io->have_out = false;
	}
	if (io->have_reader)
		mt_events_reader_close(&io->reader);
	io->have_reader = false;
	if (io->in && io->in != stdin)
		fclose(io->in);
	io->in = NULL;
	return status;
}
