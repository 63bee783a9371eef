/* mt-report: where the time went, per function, from an event stream:
 * the call stacks rebuilt as mt-toperfetto rebuilds them, the calls
 * counted (report/), written as a table, TSV, JSON or an SQLite database;
 * or two streams' difference. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/strtab.h"
#include "base/version.h"
#include "report/calldb.h"
#include "report/report.h"
#include "report/report_write.h"
#include "stream/filterio.h"
#include "timeline/rebuild.h"

#define PROG "mt-report"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... [FILE]\n"
"  or:  " PROG " --diff [OPTION]... OLD NEW\n"
"  or:  " PROG " --merge -o OUT.db DB...\n"
"Read an mt event stream (mt-events(5), text or binary; FILE '-' or none is\n"
"standard input), rebuild the call stacks as mt-toperfetto does, and say per\n"
"function: calls, total (inclusive) and self time, average, min, max and the\n"
"p50/p90/p99 of its call durations, and instructions and core cycles (IPC)\n"
"where the stream counts them (Intel PT; cycles with CYC packets). From stack\n"
"samples, perf's figures: self and children sample counts (perf report\n"
"--children) and the sums of their periods (perf report -F period).\n"
"\n"
"  -o, --output=FILE        write to FILE (atomically) instead of stdout\n"
"      --format=FORMAT      text (an aligned table; the default on a terminal),\n"
"                           tsv (a header line, then a row per function; the\n"
"                           default otherwise), json, or sqlite (a database of\n"
"                           every call, mt-calls(5); needs -o). Default also\n"
"                           from -o's ending: .tsv, .json, .db, .sqlite\n"
"      --sort=KEY           total, self, calls, max, p99 or samples (children\n"
"                           samples); default samples for a sampled stream,\n"
"                           else total\n"
"      --top=N              only the first N functions\n"
"      --per-thread         a row per function and thread\n"
"      --pid=PID[,PID...]   only these processes\n"
"      --tid=TID[,TID...]   only these threads\n"
"      --min-duration=TIME  leave out calls shorter than TIME (NUMBER with ns,\n"
"                           us, ms or s; default ns): their time stays their\n"
"                           caller's self time\n"
"      --depth=N            leave out calls N or more deep (0: the roots),\n"
"                           likewise\n"
"      --filter=START,STOP  only what runs from each call to START up to the next\n"
"                           call to STOP (as mt-toperfetto --filter)\n"
"      --name=NAME          sqlite: the trace's name in the traces table\n"
"                           (default: FILE)\n"
"      --db-level=LEVEL     sqlite: calls (default: every call a row) or\n"
"                           functions (the functions table only)\n"
"      --diff               two streams, OLD and NEW: per function, calls and\n"
"                           times in each and the change\n"
"      --merge              copy the traces of mt-report databases DB... into\n"
"                           one (-o), each trace a row of its traces table\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"Total time counts a recursive function's nested calls again; self times add\n"
"up to each thread's root calls. Percentiles are within 1/64 of the true value.\n"
"\n"
"Exit status: 0 written; 1 unreadable or damaged input (what came before is\n"
"reported, and the damage said), no calls or samples in it, or a write error;\n"
"2 usage.\n");
}

static int parse_ids(const char *s, uint32_t *v, size_t *n)
{
	const char *p = s;
	while (*p) {
		char *end;
		errno = 0;
		unsigned long x = strtoul(p, &end, 10);
		if (errno || end == p || x > UINT32_MAX || *n >= MT_REPORT_MAX_IDS || (*end && *end != ','))
			return -1;
		v[(*n)++] = (uint32_t)x;
		p = *end ? end + 1 : end;
	}
	return *n ? 0 : -1;
}

static int parse_duration(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0 || s[0] == '-')
		return -1;
	static const struct { const char *unit; double ns; } units[] = {
		{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9},
	};
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (!strcmp(end, units[i].unit)) {
			double ns = v * units[i].ns;
			if (ns > 1.8e19)
				return -1;
			*out = (uint64_t)(ns + 0.5);
			return 0;
		}
	return -1;
}

static bool ends_with(const char *s, const char *e)
{
	size_t n = strlen(s), k = strlen(e);
	return n > k && !strcmp(s + n - k, e);
}

struct run {
	struct mt_report *report;
	struct mt_calldb *db;
	struct mt_rebuild_result res;
	bool damaged;
	char damage[300];
};

/* The traces table's status of a damaged input (msg may lie in run). */
static void note_damage(struct run *run, const char *msg)
{
	char d[sizeof run->damage];
	snprintf(d, sizeof d, "damaged: %s", msg);
	memcpy(run->damage, d, sizeof d);
}

/* Reads one stream into a report (and the database, when db is set). */
static int read_input(const char *in, const struct mt_report_opts *ro, const struct mt_rebuild_opts *rbo,
		      struct mt_calldb *db, struct run *run)
{
	memset(run, 0, sizeof *run);
	run->db = db;
	struct mt_filterio io;
	int open_rc = mt_filterio_open(&io, PROG, in, "-");
	if (open_rc)
		return open_rc;
	run->report = mt_report_new(ro);
	struct mt_report_next next;
	if (db)
		mt_calldb_sink(db, &next);
	struct mt_tl_calls_sink sink;
	struct mt_pftrace *pf = run->report ? (mt_report_sink(run->report, &sink, db ? &next : NULL),
					       mt_pftrace_new_calls(&sink))
					    : NULL;
	if (!pf) {
		fprintf(stderr, PROG ": out of memory\n");
		mt_filterio_close(&io, EXIT_DATA, true);
		return EXIT_DATA;
	}
	int status = 0;
	mt_rebuild(&io.reader, pf, rbo, &run->res);
	mt_report_set_sample_event(run->report, run->res.stack_event);
	mt_report_set_lost(run->report, run->res.lost);
	if (run->res.read_rc < 0) {
		fprintf(stderr, PROG ": %s\n", run->res.read_err.msg);
		note_damage(run, run->res.read_err.msg);
		run->damaged = true;
		status = EXIT_DATA;
	}
	if (run->res.write_rc || mt_report_oom(run->report)) {
		fprintf(stderr, PROG ": %s\n", run->res.write_rc ? run->res.write_err.msg : "out of memory");
		status = EXIT_DATA;
	}
	if (rbo->filter_start && !run->res.filter_regions && !status) {
		fprintf(stderr, PROG ": --filter: no call to %s was followed by a call to %s: nothing to report\n",
			rbo->filter_start, rbo->filter_stop);
		status = EXIT_DATA;
	}
	if (io.reader.upstream_error && !run->damaged) {
		note_damage(run, io.reader.upstream_msg);
		run->damaged = true;
	}
	int cst = mt_filterio_close(&io, status, false);
	if (!status && cst)
		status = cst;
	return status;
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG;
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'F'},
		{"sort", required_argument, NULL, 's'},
		{"top", required_argument, NULL, 'n'},
		{"per-thread", no_argument, NULL, 'T'},
		{"pid", required_argument, NULL, 'p'},
		{"tid", required_argument, NULL, 't'},
		{"min-duration", required_argument, NULL, 'm'},
		{"depth", required_argument, NULL, 'd'},
		{"filter", required_argument, NULL, 'f'},
		{"db-level", required_argument, NULL, 'L'},
		{"name", required_argument, NULL, 'N'},
		{"diff", no_argument, NULL, 'D'},
		{"merge", no_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	const char *out = "-";
	int format = -1; /* -1: from the output */
	bool sqlite = false, diff = false, merge = false;
	int sort = -1; /* -1: samples for a sampled stream, else total */
	enum mt_calldb_level level = MT_CALLDB_CALLS;
	size_t top = 0;
	struct mt_report_opts ro = {0};
	char *filter = NULL, *filter_stop = NULL;
	const char *trace_name = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "o:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'F':
			if (!strcmp(optarg, "sqlite")) {
				sqlite = true;
			} else if ((format = mt_report_format_parse(optarg)) < 0) {
				fprintf(stderr, PROG ": bad --format '%s': expected text, tsv, json or sqlite\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 's': {
			int k = mt_report_sort_parse(optarg);
			if (k < 0) {
				fprintf(stderr, PROG ": bad --sort '%s': expected total, self, calls, max, p99 or samples\n",
					optarg);
				return EXIT_USAGE;
			}
			sort = k;
			break;
		}
		case 'n': {
			uint64_t v;
			if (mt_parse_count(optarg, false, &v) || !v || v > SIZE_MAX) {
				fprintf(stderr, PROG ": bad --top '%s': expected a number above 0\n", optarg);
				return EXIT_USAGE;
			}
			top = (size_t)v;
			break;
		}
		case 'T': ro.per_thread = true; break;
		case 'p':
		case 't':
			if (parse_ids(optarg, c == 'p' ? ro.pids : ro.tids, c == 'p' ? &ro.npids : &ro.ntids)) {
				fprintf(stderr, PROG ": bad --%s '%s': expected up to %d numbers, comma-separated\n",
					c == 'p' ? "pid" : "tid", optarg, MT_REPORT_MAX_IDS);
				return EXIT_USAGE;
			}
			break;
		case 'm':
			if (parse_duration(optarg, &ro.min_duration)) {
				fprintf(stderr, PROG ": bad --min-duration '%s': expected a number with ns, us, ms or s\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'd': {
			uint64_t v;
			if (mt_parse_count(optarg, false, &v) || v > SIZE_MAX) {
				fprintf(stderr, PROG ": bad --depth '%s': expected a number\n", optarg);
				return EXIT_USAGE;
			}
			ro.max_depth = (size_t)v;
			if (!v) {
				fprintf(stderr, PROG ": bad --depth '0': no call would be counted\n");
				return EXIT_USAGE;
			}
			break;
		}
		case 'f':
			filter = optarg;
			filter_stop = strchr(optarg, ',');
			if (!filter_stop || filter_stop == optarg || !filter_stop[1]) {
				fprintf(stderr, PROG ": bad --filter '%s': expected START,STOP\n", optarg);
				return EXIT_USAGE;
			}
			*filter_stop++ = '\0';
			break;
		case 'L':
			if (!strcmp(optarg, "calls"))
				level = MT_CALLDB_CALLS;
			else if (!strcmp(optarg, "functions"))
				level = MT_CALLDB_FUNCTIONS;
			else {
				fprintf(stderr, PROG ": bad --db-level '%s': expected calls or functions\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'N': trace_name = optarg; break;
		case 'D': diff = true; break;
		case 'M': merge = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " (mt) " MT_VERSION "\n"); return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	int nin = argc - optind;
	if (format < 0 && !sqlite) {
		if (ends_with(out, ".db") || ends_with(out, ".sqlite"))
			sqlite = true;
		else if (ends_with(out, ".json"))
			format = MT_REPORT_JSON;
		else if (ends_with(out, ".tsv"))
			format = MT_REPORT_TSV;
		else if (!strcmp(out, "-") && isatty(STDOUT_FILENO))
			format = MT_REPORT_TEXT;
		else
			format = strcmp(out, "-") ? MT_REPORT_TEXT : MT_REPORT_TSV;
	}
	if (merge) {
		if (!strcmp(out, "-")) {
			fprintf(stderr, PROG ": --merge needs -o OUT.db\n");
			return EXIT_USAGE;
		}
		struct mt_err err = {0};
		if (mt_calldb_merge(out, (const char *const *)argv + optind, (size_t)nin, level, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			return err.code == MT_EUSAGE ? EXIT_USAGE : EXIT_DATA;
		}
		return 0;
	}
	if (diff ? nin != 2 : nin > 1) {
		fprintf(stderr, PROG ": %s\nTry '" PROG " --help' for more information.\n",
			diff ? "--diff needs two streams, OLD and NEW" : "too many arguments");
		return EXIT_USAGE;
	}
	if (sqlite && (diff || !strcmp(out, "-"))) {
		fprintf(stderr, PROG ": --format=sqlite needs -o FILE.db%s\n", diff ? ", and no --diff" : "");
		return EXIT_USAGE;
	}
	struct mt_rebuild_opts rbo = {
		.prog = PROG, .filter_start = filter, .filter_stop = filter_stop,
		.ocaml_notes = !getenv("MT_NO_OCAML_EXCEPTION_DEBUG_INFO") &&
			       !getenv("MAGIC_TRACE_NO_OCAML_EXCEPTION_DEBUG_INFO"),
	};
	struct mt_err err = {0};
	struct mt_calldb *db = NULL;
	if (sqlite) {
		/* the database's functions table is per function, whatever the rows */
		ro.per_thread = false;
		if (!(db = mt_calldb_open(out, level, &err))) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			return err.code == MT_EUSAGE ? EXIT_USAGE : EXIT_DATA;
		}
	}
	struct run runs[2];
	const char *ins[2] = {nin ? argv[optind] : "-", nin > 1 ? argv[optind + 1] : NULL};
	int status = 0;
	for (int i = 0; i < (diff ? 2 : 1); i++) {
		int st = read_input(ins[i], &ro, &rbo, db, &runs[i]);
		if (st && !status)
			status = st;
		if (!runs[i].report) {
			mt_calldb_abort(db);
			if (i)
				mt_report_free(runs[0].report);
			return st == EXIT_USAGE ? EXIT_USAGE : EXIT_DATA;
		}
		if (!mt_report_nfuncs(runs[i].report) && !runs[i].damaged) {
			fprintf(stderr, PROG ": %s: no calls or samples in the stream: nothing to report\n",
				strcmp(ins[i], "-") ? ins[i] : "standard input");
			status = EXIT_DATA;
		}
		mt_report_sort(runs[i].report, sort >= 0 ? (enum mt_report_sort)sort
						  : mt_report_samples(runs[i].report) ? MT_SORT_SAMPLES : MT_SORT_TOTAL);
	}
	if (db) {
		bool empty = !mt_report_nfuncs(runs[0].report);
		if (empty) {
			mt_calldb_abort(db); /* no database that holds nothing */
		} else if (mt_calldb_finish(db, runs[0].report,
					    trace_name ? trace_name : strcmp(ins[0], "-") ? ins[0] : "standard input",
					    runs[0].damaged ? runs[0].damage : "ok", runs[0].res.events,
					    runs[0].res.time_events ? runs[0].res.last_time - runs[0].res.first_time : UINT64_MAX,
					    &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			status = EXIT_DATA;
		}
		mt_report_free(runs[0].report);
		return status;
	}
	struct mt_outfile of;
	bool failed = status && !mt_report_nfuncs(runs[0].report);
	if (!failed && diff && !mt_report_nfuncs(runs[1].report))
		failed = true;
	if (!failed) {
		if (mt_outfile_open(&of, out, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			status = EXIT_DATA;
			failed = true;
		}
	}
	if (!failed) {
		if (diff)
			mt_report_diff_write(runs[0].report, runs[1].report, of.f, (enum mt_report_format)format, top);
		else
			mt_report_write(runs[0].report, of.f, (enum mt_report_format)format, top);
		if (mt_outfile_commit(&of, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			status = EXIT_DATA;
		}
	}
	for (int i = 0; i < (diff ? 2 : 1); i++)
		mt_report_free(runs[i].report);
	return status;
}
