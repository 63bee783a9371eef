/* mt-toperfetto: rebuild call stacks from the event stream and write a
 * timeline (Perfetto protobuf), or the stacks as text. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/events.h"
#include "stream/filterio.h"
#include "timeline/pftrace.h"
#include "timeline/rebuild.h"
#include "report/folded.h"
#include "report/report.h"
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
"                           time order per thread), or folded (collapsed\n"
"                           stacks, 'thread;caller;callee WEIGHT' a line, for\n"
"                           flamegraph.pl, inferno and speedscope), or\n"
"                           speedscope (speedscope's own file format: per thread\n"
"                           an evented profile at integer ns, and a sampled one\n"
"                           of the stack samples; what mt-view shows). Default:\n"
"                           what the output's name ends in (.pftrace,\n"
"                           .perfetto-trace, .pb, .speedscope.json, .json, .fxt,\n"
"                           .stacks, .threads, .folded), else perfetto; a --format\n"
"                           the name contradicts is warned of.\n"
"                           An output name ending in .gz is gzipped.\n"
"      --ptwrite-track=KIND PTWRITE payloads as instants on a ptwrite track\n"
"                           (instant, the default) or as the process's\n"
"                           ptwrite counter track (counter: numeric payloads)\n"
"      --weight=WEIGHT      folded: what a stack weighs: time (each call's self\n"
"                           time in ns), samples (stack samples there),\n"
"                           instructions or cycles (each call's own).\n"
"                           Default: samples for a sampled stream, else time\n"
"      --sample-leaf=HOW    stack samples: function (a leaf's slice lasts while\n"
"                           samples keep finding its function; a change's calls\n"
"                           spread up to the next sample) or ip (magic-trace's\n"
"                           rule: diffed by IP down to the leaf, a change's\n"
"                           calls spread up to the next change). Default: ip\n"
"                           for stacks (magic-trace's test format), else\n"
"                           function\n"
"      --filter=START,STOP  write only what runs from each call to START up to\n"
"                           the next call to STOP (one pass; unpaired calls\n"
"                           write nothing)\n"
"      --no-annotate-inferred  (stacks) do not mark frames whose start is inferred\n"
"      --window=N           hold at most N items (slices, instants, counter\n"
"                           values, all threads together) before writing them\n"
"                           out; 0: no bound. Default 262144 (16 MB).\n"
"                           A slice whose inferred start reaches back past a\n"
"                           write-out starts at the write-out instead.\n"
"      --max-slices=N       (speedscope) write the N longest slices at most:\n"
"                           shorter ones left out (said on stderr and in each\n"
"                           profile's name); stack samples past 20 frames a\n"
"                           slice one per distinct stack; 0, the default: all\n"
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

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'F'},
		{"no-annotate-inferred", no_argument, NULL, 'A'},
		{"filter", required_argument, NULL, 'f'},
		{"window", required_argument, NULL, 'w'},
		{"max-slices", required_argument, NULL, 'M'},
		{"stats", no_argument, NULL, 'S'},
		{"weight", required_argument, NULL, 'W'},
		{"ptwrite-track", required_argument, NULL, 1000},
		{"sample-leaf", required_argument, NULL, 1001},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	const char *out = "-";
	enum { FMT_PERFETTO, FMT_JSON, FMT_FXT, FMT_STACKS, FMT_THREADS, FMT_SPEEDSCOPE, FMT_FOLDED } format = FMT_PERFETTO;
	int weight = -1; /* folded: -1 as the stream says */
	bool format_given = false;
	bool annotate = true, stats = false, ptwrite_counter = false;
	int leaf_by_ip = -1; /* -1: by the format (stacks: magic-trace's ip) */
	char *filter = NULL, *filter_stop = NULL;
	size_t window = MT_PFTRACE_WINDOW;
	uint64_t max_slices = 0;
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
			else if (!strcmp(optarg, "folded"))
				format = FMT_FOLDED;
			else if (!strcmp(optarg, "speedscope"))
				format = FMT_SPEEDSCOPE;
			else {
				fprintf(stderr, PROG ": bad --format '%s': expected perfetto, json, fxt, stacks, threads, folded or speedscope\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'A': annotate = false; break;
		case 1000:
			if (strcmp(optarg, "instant") && strcmp(optarg, "counter")) {
				fprintf(stderr, PROG ": bad --ptwrite-track '%s': expected instant or counter\n", optarg);
				return EXIT_USAGE;
			}
			ptwrite_counter = !strcmp(optarg, "counter");
			break;
		case 1001:
			if (strcmp(optarg, "ip") && strcmp(optarg, "function")) {
				fprintf(stderr, PROG ": bad --sample-leaf '%s': expected ip or function\n", optarg);
				return EXIT_USAGE;
			}
			leaf_by_ip = !strcmp(optarg, "ip");
			break;
		case 'S': stats = true; break;
		case 'W':
			if ((weight = mt_folded_weight_parse(optarg)) < 0) {
				fprintf(stderr, PROG ": bad --weight '%s': expected time, samples, instructions or cycles\n", optarg);
				return EXIT_USAGE;
			}
			break;
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
		case 'M': {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				fprintf(stderr, PROG ": bad --max-slices '%s': expected a number of slices\n", optarg);
				return EXIT_USAGE;
			}
			max_slices = v;
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
		[FMT_SPEEDSCOPE] = MT_PFTRACE_SPEEDSCOPE,
	};
	enum mt_pftrace_format named;
	size_t ol = strlen(out);
	bool folded_name = ol > 7 && !strcmp(out + ol - 7, ".folded");
	if (folded_name && !format_given)
		format = FMT_FOLDED;
	if (folded_name && format != FMT_FOLDED)
		fprintf(stderr, PROG ": warning: writing %s into %s, whose name says folded\n",
			mt_pftrace_format_name(formats[format]), out);
	if (weight >= 0 && format != FMT_FOLDED) {
		fprintf(stderr, PROG ": --weight is for --format=folded\n");
		return EXIT_USAGE;
	}
	if (format == FMT_FOLDED) {
		if (strcmp(out, "-") && !folded_name && mt_pftrace_format_of_name(out, &named))
			fprintf(stderr, PROG ": warning: writing folded into %s, whose name says %s\n", out,
				mt_pftrace_format_name(named));
	} else if (strcmp(out, "-") && mt_pftrace_format_of_name(out, &named)) {
		if (!format_given)
			for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
				if (formats[i] == named)
					format = i;
		if (formats[format] != named)
			fprintf(stderr, PROG ": warning: writing %s into %s, whose name says %s\n",
				mt_pftrace_format_name(formats[format]), out, mt_pftrace_format_name(named));
	}
	if (max_slices && format != FMT_SPEEDSCOPE) {
		fprintf(stderr, PROG ": --max-slices is for --format=speedscope\n");
		return EXIT_USAGE;
	}
	struct mt_filterio io;
	int open_rc = mt_filterio_open(&io, PROG, in, out);
	if (open_rc)
		return open_rc;
	struct mt_pftrace *pf = NULL;
	bool gz = format != FMT_STACKS && format != FMT_FOLDED && ol > 3 && !strcmp(out + ol - 3, ".gz");
	/* folded: the calls counted as mt-report counts them, into stacks */
	struct mt_report *report = NULL;
	struct mt_folded *folded = NULL;
	if (format == FMT_FOLDED) {
		struct mt_report_next next;
		struct mt_tl_calls_sink sink;
		report = mt_report_new(NULL);
		folded = mt_folded_new();
		if (report && folded) {
			mt_folded_sink(folded, &next);
			mt_report_sink(report, &sink, &next);
			pf = mt_pftrace_new_calls(&sink);
		}
	} else {
		pf = mt_pftrace_new(io.out.f, formats[format], gz);
	}
	if (!pf) {
		fprintf(stderr, PROG ": out of memory\n");
		return mt_filterio_close(&io, EXIT_DATA, true);
	}
	mt_pftrace_set_window(pf, window);
	mt_pftrace_set_max_slices(pf, max_slices);
	/* OCaml mode A: the trap notes of every mapped object (magic-trace's
	 * environment switch turns it off, as there) */
	struct mt_rebuild_opts ro = {
		.prog = PROG, .filter_start = filter, .filter_stop = filter_stop,
		.annotate_inferred = annotate && format == FMT_STACKS, .arrival_order = format == FMT_STACKS,
		.ptwrite_counter = ptwrite_counter, .magic_trace_samples = leaf_by_ip < 0 ? format == FMT_STACKS : leaf_by_ip,
		.ocaml_notes = !getenv("MT_NO_OCAML_EXCEPTION_DEBUG_INFO") &&
			       !getenv("MAGIC_TRACE_NO_OCAML_EXCEPTION_DEBUG_INFO"),
	};
	struct mt_rebuild_result res;
	mt_rebuild(&io.reader, pf, &ro, &res);
	int status = 0;
	bool wfail = false;
	if (res.read_rc < 0) {
		fprintf(stderr, PROG ": %s\n", res.read_err.msg);
		status = EXIT_DATA;
	}
	if (res.late)
		fprintf(stderr, PROG ": warning: %s: %" PRIu64 " event%s out of time order on %s thread, moved "
			"forward by up to %" PRIu64 " ns to the time of the event before %s\n", io.in_name, res.late,
			res.late == 1 ? "" : "s", res.late == 1 ? "its" : "their", res.late_max_ns,
			res.late == 1 ? "it" : "them");
	if (filter && !res.filter_regions && res.read_rc >= 0) {
		/* a filter that matched nothing is no trace: said, not written */
		if (!res.filter_starts)
			fprintf(stderr, PROG ": --filter: %s was never called: nothing to write\n", filter);
		else
			fprintf(stderr, PROG ": --filter: %s was called %" PRIu64 " time%s, but %s never after it: nothing to write\n",
				filter, res.filter_starts, res.filter_starts == 1 ? "" : "s", filter_stop);
		status = EXIT_DATA;
		wfail = true;
	}
	struct mt_pftrace_stats st = res.st;
	uint64_t folded_total = 0;
	if (st.left_out)
		fprintf(stderr, PROG ": --max-slices=%" PRIu64 ": %" PRIu64 " of %" PRIu64 " slices left out, all those "
			"under %" PRIu64 ".%03" PRIu64 " us (Perfetto shows every one: --format=perfetto)\n", max_slices,
			st.left_out, st.slices, st.left_out_under_ns / 1000, st.left_out_under_ns % 1000);
	if (st.samples_grouped)
		fprintf(stderr, PROG ": --max-slices=%" PRIu64 ": stack samples written one per distinct stack of a thread, "
			"their weights added (their time order is in the slices)\n", max_slices);
	if (folded) {
		enum mt_folded_weight w = weight >= 0 ? (enum mt_folded_weight)weight : mt_folded_default_weight(folded);
		uint64_t total = mt_folded_write(folded, io.out.f, w);
		if (total == UINT64_MAX || mt_report_oom(report)) {
			fprintf(stderr, PROG ": out of memory making the folded stacks\n");
			status = EXIT_DATA;
			wfail = true;
		} else if (!total) {
			fprintf(stderr, PROG ": no stack weighs anything by %s: nothing to write\n",
				w == MT_WEIGHT_TIME ? "time" : w == MT_WEIGHT_SAMPLES ? "samples"
				: w == MT_WEIGHT_INSTRUCTIONS ? "instructions" : "cycles");
			status = EXIT_DATA;
			wfail = true;
		}
		folded_total = total;
		mt_folded_free(folded);
		mt_report_free(report);
	}
	if (res.write_rc) {
		fprintf(stderr, PROG ": %s\n", res.write_err.msg);
		status = EXIT_DATA;
		wfail = true; /* no output file left looking complete */
	}
	int rc = res.read_rc;
	if (fflush(io.out.f)) {
		fprintf(stderr, PROG ": writing %s: %s\n", out, strerror(errno));
		status = EXIT_DATA;
		wfail = true;
	}
	/* folded stacks have no place to say the input was cut short: such a
	 * file is not left under its name (the timeline formats say so inside) */
	if ((format == FMT_STACKS || format == FMT_THREADS || format == FMT_FOLDED) &&
	    (rc < 0 || io.reader.upstream_error))
		wfail = true;
	/* nor a trace with nothing in it, not even the mark of the damage: a
	 * writer upstream that failed at once (an empty recording) */
	if ((rc < 0 || io.reader.upstream_error) && !st.slices && !st.instants && !st.counters && !folded_total)
		wfail = true;
	status = mt_filterio_close(&io, status, wfail);
	if (stats && !status && format == FMT_FOLDED)
		fprintf(stderr, PROG ": wrote %s: folded, weight %" PRIu64 "\n", strcmp(out, "-") ? out : "standard output",
			folded_total);
	else if (stats && !status)
		fprintf(stderr, PROG ": wrote %s: %s, %" PRIu64 " slices, %" PRIu64 " instants, %" PRIu64
			" counter values, %" PRIu64 " threads\n",
			strcmp(out, "-") ? out : "standard output", mt_pftrace_format_name(formats[format]), st.slices,
			st.instants, st.counters, st.threads);
	return status;
}
