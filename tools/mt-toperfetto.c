/* mt-toperfetto: rebuild call stacks from the event stream and write a
 * timeline (Perfetto protobuf), or the stacks as text. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/callstack.h"
#include "stream/events.h"
#include "stream/filterio.h"
#include "timeline/ocamleh.h"
#include "timeline/pftrace.h"
#include "base/strtab.h"
#include "base/version.h"

#define PROG "mt-toperfetto"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... [FILE]\n"
"Read an mt event stream (mt-events(5), text or binary; FILE '-' or none is\n"
"standard input), rebuild every thread's call stacks the way magic-trace does,\n"
"and write a timeline of every function call.\n"
"\n"
"  -o, --output=FILE        write to FILE (atomically) instead of stdout\n"
"      --format=FORMAT      perfetto (Perfetto protobuf, .pftrace), json (Chrome\n"
"                           JSON, Trace Event Format), fxt (Fuchsia trace format,\n"
"                           for magic-trace's viewer), stacks (text: TIME\n"
"                           BEGIN|END NAME, magic-trace's test format, times\n"
"                           since the first event, no threads), or threads\n"
"                           (text for scripts: PID TID NS KIND NAME, TAB-\n"
"                           separated, KIND begin, end, instant or sample, in\n"
"                           time order per thread). Default: what the output's\n"
"                           name ends in (.pftrace, .perfetto-trace, .pb, .json,\n"
"                           .fxt, .stacks, .threads), else perfetto; a --format\n"
"                           the name contradicts is warned of.\n"
"                           An output name ending in .gz is gzipped.\n"
"      --filter=START,STOP  write only what runs from each call to START up to\n"
"                           the next call to STOP (one pass; unpaired calls\n"
"                           write nothing)\n"
"      --no-annotate-inferred  (stacks) do not mark frames whose start is inferred\n"
"      --window=N           hold at most N items (slices, instants, counter\n"
"                           values, all threads together) before writing them\n"
"                           out; 0: no bound. Default 262144 (16 MB).\n"
"                           A slice whose inferred start reaches back past a\n"
"                           write-out starts at the write-out instead.\n"
"      --stats              say on stderr, at the end, what was written: the\n"
"                           output, its slices, instants, counter values and\n"
"                           threads (one line, fields as mt-toperfetto(1) says)\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"A timeless stream is laid out on an instruction clock: 1 ns per instruction.\n"
"\n"
"OCaml exceptions follow the programs' .note.ocaml_eh traps; set\n"
"MT_NO_OCAML_EXCEPTION_DEBUG_INFO (or MAGIC_TRACE_...) to use heuristics instead.\n"
"\n"
"Exit status: 0 written; 1 unreadable or malformed input (what came before is\n"
"still converted and the output says where it stops) or a write error; 2 usage.\n");
}

static void warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": %s\n", msg);
}

/* From an mmap metadata line: the object's OCaml trap notes, if any. */
static void add_ocaml_traps(struct mt_cs *cs, struct mt_ocaml_traps *traps, const char *meta)
{
	struct mt_mmap_meta mm;
	if (!mt_events_parse_mmap(meta, &mm) || mm.path[0] != '/')
		return;
	struct mt_err err = {0};
	int n = mt_ocaml_traps_add_elf(traps, mm.path, mm.start, mm.pgoff, &err);
	if (n < 0)
		fprintf(stderr, PROG ": warning: %s; OCaml exceptions there are followed by heuristics\n", err.msg);
	if (n > 0) {
		mt_ocaml_traps_sort(traps);
		mt_cs_set_ocaml_traps(cs, traps->v, traps->n);
	}
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'F'},
		{"no-annotate-inferred", no_argument, NULL, 'A'},
		{"filter", required_argument, NULL, 'f'},
		{"window", required_argument, NULL, 'w'},
		{"stats", no_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	const char *out = "-";
	enum { FMT_PERFETTO, FMT_JSON, FMT_FXT, FMT_STACKS, FMT_THREADS } format = FMT_PERFETTO;
	bool format_given = false;
	bool annotate = true, stats = false;
	char *filter = NULL, *filter_stop = NULL;
	size_t window = MT_PFTRACE_WINDOW;
	int c;
	while ((c = getopt_long(argc, argv, "o:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'F':
			format_given = true;
			if (!strcmp(optarg, "perfetto"))
				format = FMT_PERFETTO;
			else if (!strcmp(optarg, "stacks"))
				format = FMT_STACKS;
			else if (!strcmp(optarg, "json"))
				format = FMT_JSON;
			else if (!strcmp(optarg, "fxt"))
				format = FMT_FXT;
			else if (!strcmp(optarg, "threads"))
				format = FMT_THREADS;
			else {
				fprintf(stderr, PROG ": bad --format '%s': expected perfetto, json, fxt, stacks or threads\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'A': annotate = false; break;
		case 'S': stats = true; break;
		case 'f':
			filter = optarg;
			filter_stop = strchr(optarg, ',');
			if (!filter_stop || filter_stop == optarg || !filter_stop[1]) {
				fprintf(stderr, PROG ": bad --filter '%s': expected START,STOP\n", optarg);
				return EXIT_USAGE;
			}
			*filter_stop++ = '\0';
			break;
		case 'w': {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v > SIZE_MAX / 2) {
				fprintf(stderr, PROG ": bad --window '%s': expected a number of items\n", optarg);
				return EXIT_USAGE;
			}
			window = (size_t)v;
			break;
		}
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
	static const enum mt_pftrace_format formats[] = {
		[FMT_PERFETTO] = MT_PFTRACE_PROTO, [FMT_JSON] = MT_PFTRACE_JSON, [FMT_FXT] = MT_PFTRACE_FXT,
		[FMT_STACKS] = MT_PFTRACE_STACKS, [FMT_THREADS] = MT_PFTRACE_THREADS,
	};
	enum mt_pftrace_format named;
	if (strcmp(out, "-") && mt_pftrace_format_of_name(out, &named)) {
		if (!format_given)
			for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
				if (formats[i] == named)
					format = i;
		if (formats[format] != named)
			fprintf(stderr, PROG ": warning: writing %s into %s, whose name says %s\n",
				mt_pftrace_format_name(formats[format]), out, mt_pftrace_format_name(named));
	}
	struct mt_filterio io;
	if (mt_filterio_open(&io, PROG, in, out))
		return EXIT_DATA;
	struct mt_err err = {0};
	struct mt_pftrace *pf = NULL;
	struct mt_cs_sink sink;
	size_t ol = strlen(out);
	bool gz = format != FMT_STACKS && ol > 3 && !strcmp(out + ol - 3, ".gz");
	pf = mt_pftrace_new(io.out.f, formats[format], gz);
	if (!pf) {
		fprintf(stderr, PROG ": out of memory\n");
		return mt_filterio_close(&io, EXIT_DATA, true);
	}
	mt_pftrace_set_window(pf, window);
	mt_pftrace_sink(pf, &sink);
	struct mt_cs_opts co = {.annotate_inferred = annotate && format == FMT_STACKS, .warn = warn,
				.starts_when_known = format != FMT_STACKS};
	struct mt_cs *cs = mt_cs_new(&sink, &co);
	if (!cs) {
		fprintf(stderr, PROG ": out of memory\n");
		return mt_filterio_close(&io, EXIT_DATA, true);
	}
	if (filter)
		mt_cs_set_filter(cs, filter, filter_stop);
	int status = 0, rc;
	struct mt_event ev;
	const char *meta;
	/* A timeless trace is laid out on an instruction clock (1 ns per
	 * instruction) until a timed event shows up. */
	bool seen_time = false;
	uint64_t insn_clock = 0;
	/* OCaml mode A: the trap notes of every mapped object (magic-trace's
	 * environment switch turns it off, as there) */
	bool ocaml_notes = !getenv("MT_NO_OCAML_EXCEPTION_DEBUG_INFO") &&
			   !getenv("MAGIC_TRACE_NO_OCAML_EXCEPTION_DEBUG_INFO");
	struct mt_ocaml_traps traps = {0};
	while ((rc = mt_events_read(&io.reader, &ev, &meta, &err)) > 0) {
		if (rc == MT_EVENTS_META) {
			mt_pftrace_meta(pf, meta);
			if (io.reader.upstream_error && !strncmp(meta, "error", 5))
				mt_pftrace_note_damage(pf, io.reader.upstream_msg);
			if (ocaml_notes)
				add_ocaml_traps(cs, &traps, meta);
			continue;
		}
		seen_time |= ev.has_time;
		if (!seen_time) {
			insn_clock += ev.insn;
			ev.time = insn_clock;
			ev.has_time = true;
		}
		if (mt_cs_event(cs, &ev, &err)) {
			rc = err.code;
			break;
		}
	}
	if (rc < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		status = EXIT_DATA;
		mt_pftrace_note_damage(pf, err.msg);
	}
	mt_cs_finish(cs);
	bool wfail = false;
	uint64_t starts = 0, regions = 0, late = 0, late_max = 0;
	mt_cs_late_counts(cs, &late, &late_max);
	if (late)
		fprintf(stderr, PROG ": warning: %s: %" PRIu64 " event%s out of time order on %s thread, moved "
			"forward by up to %" PRIu64 " ns to the time of the event before %s\n", io.in_name, late,
			late == 1 ? "" : "s", late == 1 ? "its" : "their", late_max, late == 1 ? "it" : "them");
	if (filter)
		mt_cs_filter_counts(cs, &starts, &regions);
	if (filter && !regions && rc >= 0) {
		/* a filter that matched nothing is no trace: said, not written */
		if (!starts)
			fprintf(stderr, PROG ": --filter: %s was never called: nothing to write\n", filter);
		else
			fprintf(stderr, PROG ": --filter: %s was called %" PRIu64 " time%s, but %s never after it: nothing to write\n",
				filter, starts, starts == 1 ? "" : "s", filter_stop);
		status = EXIT_DATA;
		wfail = true;
	}
	struct mt_pftrace_stats st = {0};
	if (mt_pftrace_finish(pf, &st, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		status = EXIT_DATA;
		wfail = true; /* no output file left looking complete */
	}
	mt_cs_free(cs);
	mt_ocaml_traps_free(&traps);
	if (fflush(io.out.f)) {
		fprintf(stderr, PROG ": writing %s: %s\n", out, strerror(errno));
		status = EXIT_DATA;
		wfail = true;
	}
	/* folded stacks have no place to say the input was cut short: such a
	 * file is not left under its name (the timeline formats say so inside) */
	if ((format == FMT_STACKS || format == FMT_THREADS) && (rc < 0 || io.reader.upstream_error))
		wfail = true;
	/* nor a trace with nothing in it, not even the mark of the damage: a
	 * writer upstream that failed at once (an empty recording) */
	if ((rc < 0 || io.reader.upstream_error) && !st.slices && !st.instants && !st.counters)
		wfail = true;
	status = mt_filterio_close(&io, status, wfail);
	if (stats && !status)
		fprintf(stderr, PROG ": wrote %s: %s, %" PRIu64 " slices, %" PRIu64 " instants, %" PRIu64
			" counter values, %" PRIu64 " threads\n",
			strcmp(out, "-") ? out : "standard output", mt_pftrace_format_name(formats[format]), st.slices,
			st.instants, st.counters, st.threads);
	return status;
}
