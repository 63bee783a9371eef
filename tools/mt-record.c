/* mt-record: run a program under perf record the way magic-trace would,
 * with Intel PT where the machine has it, else stack sampling (on the
 * software clock where there is no hardware PMU). This file is options,
 * perf's arguments (perfargs), messages and exit status; the session --
 * COMMAND held until perf is ready, snapshots, triggers, the end -- is
 * lib/record (over perfctl and trigger). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/outfile.h"
#include "bundle/bundle.h"
#include "objects/fpcheck.h"
#include "record/caps.h"
#include "record/perfargs.h"
#include "record/perfctl.h"
#include "record/record.h"
#include "record/trigger.h"
#include "base/version.h"

#define PROG "mt-record"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... -- COMMAND [ARG]...\n"
"  or:  " PROG " [OPTION]... --pid=PID[,PID...]\n"
"Run COMMAND (or watch running processes) under perf record and write the\n"
"perf.data: to FILE with -o, else to standard output in pipe mode when it is\n"
"not a terminal (COMMAND's own output then goes to standard error), else\n"
"./perf.data. Intel PT where the machine has it, in snapshot mode: the last\n"
"snapshot-size bytes of control flow when COMMAND exits, at ^C, or when a\n"
"thread reaches the trigger. Else stack sampling with frame-pointer call\n"
"graphs, on cycles or, without a hardware PMU, on the cpu-clock software\n"
"event, with context switches (a thread's time off CPU). COMMAND is held at its first instruction until perf acknowledges\n"
"that it records (perf's control fd, perf >= 5.10).\n"
"\n"
"  -o, --output=FILE            the perf.data to write\n"
"      --bundle=FILE            write a bundle instead (mt-bundle(5)): the perf.data\n"
"                               with every object it maps, the vDSO, kallsyms, perf\n"
"                               maps and a manifest; decodes on any machine\n"
"      --trigger=WHERE          snapshot when any thread reaches WHERE: a function\n"
"                               (symbol:NAME or NAME), an address (addr:0xADDR),\n"
"                               a source line (line:FILE:LINE or FILE:LINE), or .\n"
"                               for " MT_STOP_INDICATOR "; in COMMAND's\n"
"                               executable. Recording ends at the first hit unless\n"
"                               --multi-snapshot; when sampling, the hit ends it\n"
"      --trigger-via=HOW        auto (default: hardware breakpoint where they fire,\n"
"                               else uprobe), breakpoint, uprobe\n"
"      --multi-snapshot         a snapshot at every trigger hit, recording goes on;\n"
"                               perf writes FILE.<time> per snapshot (needs -o)\n"
"      --full-execution         trace everything, no snapshot ring buffer\n"
"      --duration=SECONDS       end the recording after SECONDS (a snapshot then,\n"
"                               where one is due); COMMAND runs on\n"
"      --snapshot-size=BYTES    the Intel PT buffer (4M, 512K, ...; a power of two\n"
"                               number of pages)\n"
"      --extra-events=LIST      branch-misses,cache-misses with Intel PT\n"
"      --ptwrite                PTWRITE payloads, each with its IP (ptw=1,fup_on_ptw=1)\n"
"      --power-events           C-state entries and exits, MWAIT, EXSTOP (pwr_evt=1)\n"
"      --event-trace            Event Trace: interrupts with their vectors (event=1)\n"
"      --filter=FILTER          perf's address filters: 'filter FUNC @ FILE', ...\n"
"                               (each only where mt-caps says the CPU, perf and\n"
"                               kernel can; else refused with the reason)\n"
"      --sampling               stack sampling even where Intel PT exists\n"
"      --timer-resolution=R     low, normal (default), high, custom:..., sample:FREQ\n"
"                               (as mt-perfargs takes them)\n"
"      --scope=u|k|uk           what to trace (default u)\n"
"      --callgraph=MODE         fp, lbr, lbr-no-stitch, dwarf (default fp, cheap; dwarf\n"
"                               for code built without frame pointers: perf copies\n"
"                               each sample's stack, mt-pt2events unwinds it)\n"
"      --clock=CLOCK            the clock of a sampled recording's times (perf\n"
"                               record -k): mono (default: perf's rule for JIT\n"
"                               dumps, and other traces' clock), boot, realtime,\n"
"                               raw, tai, or perf (its own); Intel PT: perf only\n"
"      --pid=PIDS               attach to running processes instead (until they\n"
"                               all exit, the trigger, or ^C); with Intel PT one\n"
"                               thread each unless --multi-thread\n"
"      --multi-thread           every thread of the processes (sampling a COMMAND\n"
"                               always follows every thread)\n"
"      --caps=FILE              the machine's capabilities from mt-caps output\n"
"                               instead of detecting them\n"
"      --perf=PATH              the perf to run (default: $MT_PERF_PATH, perf)\n"
"      --dry-run                print the perf command and exit\n"
"  -h, --help                   show this help and exit\n"
"  -V, --version                show the version and exit\n"
"\n"
"The pid recorded is printed on standard error, as is every trigger hit.\n"
"SIGINT, SIGTERM or SIGHUP end the recording (a snapshot first where one is\n"
"due); perf writes what it has, then COMMAND gets the signal.\n"
"\n"
"Exit status: COMMAND's (128+N when signal N killed it); with --pid 0; 0 after\n"
"SIGINT, 128+N after signal N; perf's own when perf failed (its message\n"
"above, then a hint), 1 other failures; 2 usage.\n");
}

static void shell_quote(FILE *f, const char *s)
{
	if (*s && !s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-=,./:")]) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

/* Can exec find it (a path, or a name on PATH)? */
/* The program a command runs, as execvp finds it, into found (size n). */
static bool find_program(const char *name, char *found, size_t n)
{
	if (strchr(name, '/')) {
		snprintf(found, n, "%s", name);
		return access(name, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t l = strcspn(p, ":");
		snprintf(found, n, "%.*s/%s", (int)l, p, name);
		if (access(found, X_OK) == 0)
			return true;
		p += l + (p[l] == ':');
	}
	return false;
}

/* Sampling with no --callgraph given: frame pointers where the program
 * was built with them (cheap), else DWARF unwinding (perf copies each
 * sample's stack: stacks whole where frame pointers would stop after a
 * frame or two); which, and why, said. */
static enum mt_callgraph choose_callgraph(const char *program)
{
	size_t with, all;
	struct mt_err err = {0};
	if (mt_fpcheck_file(program, &with, &all, &err) || !all) {
		fprintf(stderr, PROG ": %s: %s: --callgraph=fp (give --callgraph=dwarf if stacks stop short)\n", program,
			err.code ? "not an x86-64 program to read" : "no function symbols to tell its build by");
		return MT_CG_FP;
	}
	if (with * 2 >= all) {
		fprintf(stderr, PROG ": %s: built with frame pointers (%zu of %zu functions set one up): --callgraph=fp\n",
			program, with, all);
		return MT_CG_FP;
	}
	fprintf(stderr, PROG ": %s: built without frame pointers (%zu of %zu functions set one up): "
		"--callgraph=dwarf (perf copies each sample's stack to unwind; --callgraph=fp to choose otherwise)\n",
		program, with, all);
	return MT_CG_DWARF;
}

static void warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": %s\n", msg);
}

/* The session's messages: hits, snapshots, its end. */
static void say(void *ctx, const char *msg)
{
	warn(ctx, msg);
}

/* Bundles the recorded perf.data; the manifest names the command. */
static int make_bundle(const char *bundle, const char *data, const struct mt_caps *caps, int argc, char **argv,
		       const char *pids, const struct mt_recording *r)
{
	char cmd[8192] = "";
	size_t n = 0;
	if (pids)
		n = (size_t)snprintf(cmd, sizeof cmd, "attach --pid=%s", pids);
	for (int i = 0; i < argc && n + 2 < sizeof cmd; i++)
		n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s%s", i ? " " : "", argv[i]);
	struct mt_bundle_hit hits[MT_RECORD_MAX_HITS];
	for (size_t i = 0; i < r->nlogged; i++)
		hits[i] = (struct mt_bundle_hit){r->hit_log[i].time, r->hit_log[i].ip, r->hit_log[i].pid,
						 r->hit_log[i].tid};
	struct mt_bundle_create_opts bo = {.perf_data = data, .output = bundle, .command = cmd, .caps = caps,
					   .warn = warn, .hits = hits, .nhits = r->nlogged};
	bo.compression = mt_bundle_compression_of(bundle);
	struct mt_err err = {0};
	struct mt_bundle_stats st;
	if (mt_bundle_create(&bo, &st, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return -1;
	}
	fprintf(stderr, PROG ": wrote %s: %zu objects (%zu missing)\n", bundle, st.objects, st.missing);
	return 0;
}

static int perf_status(int status, const struct mt_caps *caps, const char *when);

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"bundle", required_argument, NULL, 'b'},
		{"trigger", required_argument, NULL, 't'},
		{"trigger-via", required_argument, NULL, 'v'},
		{"multi-snapshot", no_argument, NULL, 'm'},
		{"full-execution", no_argument, NULL, 'F'},
		{"duration", required_argument, NULL, 'd'},
		{"snapshot-size", required_argument, NULL, 'z'},
		{"extra-events", required_argument, NULL, 'e'},
		{"sampling", no_argument, NULL, 's'},
		{"ptwrite", no_argument, NULL, 1000},
		{"power-events", no_argument, NULL, 1001},
		{"event-trace", no_argument, NULL, 1002},
		{"filter", required_argument, NULL, 1003},
		{"timer-resolution", required_argument, NULL, 'r'},
		{"scope", required_argument, NULL, 'S'},
		{"callgraph", required_argument, NULL, 'g'},
		{"clock", required_argument, NULL, 1004},
		{"caps", required_argument, NULL, 'c'},
		{"perf", required_argument, NULL, 'p'},
		{"dry-run", no_argument, NULL, 'n'},
		{"pid", required_argument, NULL, 'P'},
		{"multi-thread", no_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	struct mt_perfargs_opts o;
	mt_perfargs_opts_init(&o);
	o.callgraph = MT_CG_FP;
	const char *out = NULL, *bundle = NULL, *trigger = NULL, *caps_path = NULL;
	enum mt_trigger_via via = MT_TRIGGER_AUTO;
	bool dry = false, callgraph_given = false;
	long duration_ms = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+o:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'b': bundle = optarg; break;
		case 't': trigger = optarg; break;
		case 'v':
			if (!strcmp(optarg, "auto"))
				via = MT_TRIGGER_AUTO;
			else if (!strcmp(optarg, "breakpoint"))
				via = MT_TRIGGER_BREAKPOINT;
			else if (!strcmp(optarg, "uprobe"))
				via = MT_TRIGGER_UPROBE;
			else {
				fprintf(stderr, PROG ": bad --trigger-via '%s': auto, breakpoint or uprobe\n", optarg);
				return 2;
			}
			break;
		case 'm': o.multi_snapshot = true; break;
		case 'F': o.full_execution = true; break;
		case 'd': {
			char *end;
			errno = 0;
			double secs = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(secs > 0) || secs > 1e7) {
				fprintf(stderr, PROG ": bad --duration '%s': seconds, more than 0\n", optarg);
				return 2;
			}
			duration_ms = (long)(secs * 1000 + 0.5);
			if (!duration_ms)
				duration_ms = 1;
			break;
		}
		case 'z':
			if (mt_parse_bytes(optarg, &o.snapshot_size) || !o.snapshot_size) {
				fprintf(stderr, PROG ": bad --snapshot-size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'e':
			if (mt_perfargs_parse_extra_events(optarg, &o)) {
				fprintf(stderr, PROG ": bad --extra-events '%s': branch-misses, cache-misses\n", optarg);
				return 2;
			}
			break;
		case 's': o.sampling = true; break;
		case 1000: o.ptwrite = true; break;
		case 1001: o.power_events = true; break;
		case 1002: o.event_trace = true; break;
		case 1003: o.filter = optarg; break;
		case 'r':
			if (mt_perfargs_parse_resolution(optarg, &o)) {
				fprintf(stderr, PROG ": bad --timer-resolution '%s'\n", optarg);
				return 2;
			}
			break;
		case 'S':
			if (mt_perfargs_parse_scope(optarg, &o.scope)) {
				fprintf(stderr, PROG ": bad --scope '%s'\n", optarg);
				return 2;
			}
			break;
		case 'g':
			if (mt_perfargs_parse_callgraph(optarg, &o.callgraph)) {
				fprintf(stderr, PROG ": bad --callgraph '%s'\n", optarg);
				return 2;
			}
			callgraph_given = true;
			break;
		case 1004:
			if (mt_perfargs_parse_clock(optarg, &o.clock)) {
				fprintf(stderr, PROG ": bad --clock '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c': caps_path = optarg; break;
		case 'p': o.perf = optarg; break;
		case 'n': dry = true; break;
		case 'P':
			if (!optarg[0] || optarg[strspn(optarg, "0123456789,")]) {
				fprintf(stderr, PROG ": bad --pid '%s': expected PID[,PID...]\n", optarg);
				return 2;
			}
			o.pids = optarg;
			break;
		case 'M': o.multi_thread = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " (mt) " MT_VERSION "\n"); return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return 2;
		}
	}
	if (out && bundle) {
		fprintf(stderr, PROG ": --output and --bundle exclude each other\n");
		return 2;
	}
	if (o.pids && optind < argc) {
		fprintf(stderr, PROG ": --pid and a command exclude each other\n");
		return 2;
	}
	if (!o.pids && optind >= argc) {
		fprintf(stderr, PROG ": no command given\nTry '" PROG " --help' for more information.\n");
		return 2;
	}
	if (o.multi_snapshot && (!out || !strcmp(out, "-") || bundle)) {
		fprintf(stderr, PROG ": --multi-snapshot writes one file per snapshot: it needs -o FILE\n");
		return 2;
	}
	if (o.multi_snapshot && !trigger) {
		fprintf(stderr, PROG ": --multi-snapshot takes a snapshot per trigger hit: it needs --trigger\n");
		return 2;
	}
	struct mt_trigger_spec tspec;
	struct mt_err err = {0};
	if (trigger && mt_trigger_parse(trigger, &tspec, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 2;
	}
	char program[4096] = ""; /* the program COMMAND runs */
	pid_t pids[MT_RECORD_MAX_PIDS];
	size_t npids = 0;
	if (o.pids) {
		/* attach: every pid must exist now (magic-trace would find out later) */
		char copy[512];
		snprintf(copy, sizeof copy, "%s", o.pids);
		char *save;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (npids == MT_RECORD_MAX_PIDS) {
				fprintf(stderr, PROG ": more than %d pids\n", MT_RECORD_MAX_PIDS);
				return 2;
			}
			pids[npids] = (pid_t)atoi(tok);
			if (pids[npids] <= 0 || (kill(pids[npids], 0) < 0 && errno == ESRCH)) {
				fprintf(stderr, PROG ": no process %s\n", tok);
				return 1;
			}
			npids++;
		}
		if (!npids) {
			fprintf(stderr, PROG ": bad --pid '%s': expected PID[,PID...]\n", o.pids);
			return 2;
		}
	} else if (!find_program(argv[optind], program, sizeof program)) {
		/* magic-trace: "Can't find executable for %s"; perf would leave a stub file */
		fprintf(stderr, PROG ": %s: no such executable (searched PATH)\n", argv[optind]);
		return 1;
	}
	static struct mt_caps caps;
	if (caps_path) {
		FILE *in = fopen(caps_path, "r");
		int prc = in ? mt_caps_parse(in, &caps) : -1;
		if (in)
			fclose(in);
		if (prc) {
			fprintf(stderr, PROG ": %s: %s\n", caps_path, in ? "not mt-caps output (key=value lines)"
									  : strerror(errno));
			return 1;
		}
	} else {
		struct mt_caps_opts co = {.perf = o.perf};
		mt_caps_detect(&co, &caps);
	}
	if (!o.perf)
		o.perf = mt_caps_get(&caps, "perf.path") ? mt_caps_get(&caps, "perf.path") : "perf";
	const char *has_pt = mt_caps_get(&caps, "intel_pt");
	bool sampling = o.sampling || !has_pt || strcmp(has_pt, "1");
	if (!sampling && !callgraph_given)
		o.callgraph = MT_CG_DEFAULT;
	const char *rate = mt_caps_get(&caps, "perf_event_max_sample_rate");
	o.max_sample_rate = rate && *rate ? (unsigned)strtoul(rate, NULL, 10) : 100000;
	if (sampling) {
		/* a run or an attach samples every sample (no ring to
		 * overwrite) of every thread, as `perf record -- COMMAND` and
		 * `perf record -p PID` do: one thread of a server whose workers
		 * do the work gave an empty trace */
		o.full_execution = true;
		o.multi_thread = true;
	}
	o.trigger = trigger != NULL;
	enum mt_snapshot_when when = mt_perfargs_snapshot_when(&caps, &o);
	if (o.multi_snapshot && when != MT_SNAP_FUNCTION_CALL) {
		fprintf(stderr, PROG ": --multi-snapshot is for Intel PT snapshots, not %s\n",
			sampling ? "sampling" : "--full-execution");
		return 2;
	}
	/* what can be refused is refused before COMMAND starts: no perf, or
	 * options perf cannot take together */
	const char *usable = mt_caps_get(&caps, "perf.usable");
	if (!dry && (!usable || strcmp(usable, "1"))) {
		fprintf(stderr, PROG ": %s: not found, or 'perf --version' failed (install linux-perf, or name it with "
				"--perf or $MT_PERF_PATH)\n", o.perf);
		return 1;
	}
	{
		struct mt_perfargs_opts check = o;
		struct mt_perfargs a;
		check.pids = o.pids ? o.pids : "PID";
		if (mt_perfargs_build(&caps, &check, &a, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			return 2;
		}
	}
	/* where the recording goes can be written, said with the path given
	 * (not perf's message, nor a temporary name of ours) */
	const char *target = bundle ? bundle : out;
	if (!dry && target && mt_outfile_check(target, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	/* a link to a file: perf writes the file, and the link stays (perf
	 * moves an old perf.data to .old: given the link, it moved the link) */
	struct stat lst;
	static char real_out[PATH_MAX];
	if (!dry && out && !bundle && !lstat(out, &lst) && S_ISLNK(lst.st_mode) && realpath(out, real_out))
		out = real_out;
	if (sampling && !callgraph_given && !dry) {
		if (o.pids) { /* the first process's program */
			char exe[64];
			snprintf(exe, sizeof exe, "/proc/%d/exe", atoi(o.pids));
			ssize_t l = readlink(exe, program, sizeof program - 1);
			snprintf(program + (l > 0 ? l : 0), sizeof program - (size_t)(l > 0 ? l : 0), "%s", l > 0 ? "" : exe);
		}
		o.callgraph = choose_callgraph(program);
	}
	/* bundle: a perf.data recorded beside it first */
	char tmpdir[4200] = "", tmpdata[4300];
	if (bundle && !dry) {
		const char *slash = strrchr(bundle, '/');
		snprintf(tmpdir, sizeof tmpdir, "%.*s.mt-record.XXXXXX", slash ? (int)(slash - bundle + 1) : 0, bundle);
		if (!mkdtemp(tmpdir)) {
			fprintf(stderr, PROG ": %s: %s\n", tmpdir, strerror(errno));
			return 1;
		}
		snprintf(tmpdata, sizeof tmpdata, "%s/perf.data", tmpdir);
		out = tmpdata;
	} else if (bundle) {
		out = "perf.data";
	}
	if (!out)
		out = isatty(1) ? "perf.data" : "-";
	bool pipe_mode = !strcmp(out, "-");

	if (!dry && mt_record_catch_signals(&err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	int rc = 0;
	static struct mt_recording r;
	mt_recording_init(&r);
	r.multi_snapshot = o.multi_snapshot;
	r.say = say;
	char pidlist[64 * 12] = "";
	if (o.pids) {
		snprintf(pidlist, sizeof pidlist, "%s", o.pids);
	} else if (!dry) {
		r.command = mt_record_spawn_stopped(argv + optind, pipe_mode, &err);
		if (r.command < 0) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			rc = 1;
			goto fail;
		}
		snprintf(pidlist, sizeof pidlist, "%d", (int)r.command);
	}
	struct mt_trigger_site site;
	if (trigger && !dry && mt_trigger_resolve(&tspec, npids ? pids[0] : r.command, &site, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		rc = err.code == MT_EUSAGE ? 2 : 1;
		goto fail;
	}
	r.trigger_what = trigger ? site.what : NULL;
	if (trigger && dry)
		snprintf(site.what, sizeof site.what, "%s", tspec.name);

	int perf_ctl = -1, perf_ack = -1;
	if (mt_perfctl_init(&r.perf, mt_caps_get(&caps, "perf.version"), when, &perf_ctl, &perf_ack, &err)) {
		fprintf(stderr, PROG ": %s (perf %s)\n", err.msg, o.perf);
		rc = 1;
		goto fail;
	}
	const char *ack_timeout = getenv("MT_PERF_ACK_TIMEOUT");
	if (ack_timeout && *ack_timeout) {
		double secs = strtod(ack_timeout, NULL);
		if (secs > 0 && secs < 3600)
			r.perf.ack_timeout_ms = (unsigned)(secs * 1000);
	}
	o.ctl_fd = perf_ctl;
	o.ack_fd = perf_ack;
	o.pids = dry && !o.pids ? "PID" : pidlist;
	struct mt_perfargs a;
	if (mt_perfargs_build(&caps, &o, &a, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		rc = 2;
		goto fail;
	}
	/* magic-trace's warnings, less the two that do not apply: the
	 * callgraph default is fp here, and the sampling fallback is said in
	 * mt-record's words */
	for (int i = 0; i < a.nwarn; i++)
		if (strncmp(a.warn[i], "warning: --callgraph defaults to", 32) &&
		    strncmp(a.warn[i], "no Intel PT on this machine", 27))
			fprintf(stderr, PROG ": %s\n", a.warn[i]);
	if (sampling && !o.sampling)
		fprintf(stderr, PROG ": no Intel PT on this machine: stack sampling on %s instead\n",
			mt_caps_get(&caps, "sampling.event") ? mt_caps_get(&caps, "sampling.event") : "cycles");
	char *args[MT_PERFARGS_MAX + 1];
	int n = 0;
	for (int i = 0; i < a.argc; i++) {
		if (i > 0 && !strcmp(a.argv[i - 1], "-o"))
			args[n++] = (char *)out;
		else if (dry && !strncmp(a.argv[i], "--control=", 10))
			args[n++] = "--control=fd:CTL,ACK";
		else
			args[n++] = a.argv[i];
	}
	args[n] = NULL;
	if (dry) {
		for (int i = 0; i < n; i++) {
			if (i)
				putchar(' ');
			shell_quote(stdout, args[i]);
		}
		putchar('\n');
		if (!npids) {
			printf("# PID: the pid of");
			for (int i = optind; i < argc; i++) {
				putchar(' ');
				shell_quote(stdout, argv[i]);
			}
			printf(", held at its first instruction until perf is ready\n");
		}
		return 0;
	}

	if (tmpdir[0]) {
		/* perf names the perf.data it wrote, which is gone once the
		 * bundle holds it */
		r.perf.hide_path = tmpdata;
		r.perf.hide_as = "for the bundle";
	}
	if (mt_perfctl_start(&r.perf, args, &err) || mt_perfctl_ready(&r.perf, &err)) {
		/* perf's end is told once, with the hint */
		if (r.perf.exited)
			mt_perfctl_relay_join(&r.perf);
		/* a process to attach to that ended meanwhile: that is why */
		size_t gone = 0;
		while (gone < npids && !(kill(pids[gone], 0) < 0 && errno == ESRCH))
			gone++;
		if (r.perf.exited && gone < npids) {
			fprintf(stderr, PROG ": pid %d ended before perf was ready to record it: nothing recorded\n",
				(int)pids[gone]);
			rc = 1;
		} else {
			rc = r.perf.exited ? perf_status(r.perf.status, &caps, " before it was ready") : 0;
		}
		if (!rc) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			rc = 1;
		}
		mt_perfctl_kill(&r.perf);
		goto fail;
	}
	if (trigger) {
		if (mt_trigger_open(&site, npids ? pids : &r.command, npids ? npids : 1, via, &r.trigger, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			mt_perfctl_stop(&r.perf, &err);
			rc = 1;
			goto fail;
		}
		fprintf(stderr, PROG ": trigger %s at 0x%" PRIx64 " in %s, every thread, by %s\n", site.what, site.addr,
			site.path,
			mt_trigger_via_used(r.trigger) == MT_TRIGGER_BREAKPOINT
				? "hardware breakpoint"
				: via == MT_TRIGGER_UPROBE ? "uprobe"
							   : "uprobe (hardware breakpoints do not fire on this machine)");
	}
	/* where the recording goes, and (with a COMMAND) its own output: said
	 * once, as a perf user would not guess that stdout carries perf.data */
	char where[4400];
	if (bundle)
		snprintf(where, sizeof where, "the bundle %s", bundle);
	else if (pipe_mode)
		snprintf(where, sizeof where, "standard output (perf's pipe format)");
	else
		snprintf(where, sizeof where, "%s", out);
	if (r.command) {
		fprintf(stderr, PROG ": recording pid %d:", (int)r.command);
		for (int i = optind; i < argc; i++)
			fprintf(stderr, " %s", argv[i]);
		fputc('\n', stderr);
		fprintf(stderr, PROG ": the recording goes to %s; the program's standard output %s\n", where,
			pipe_mode ? "goes to standard error" : "is its own");
		if (mt_recording_release(&r, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			mt_perfctl_stop(&r.perf, &err);
			rc = 1;
			goto fail;
		}
	} else {
		mt_recording_watch(&r, pids, npids);
		fprintf(stderr, PROG ": recording pid %s until %s or ^C, to %s\n", pidlist,
			npids > 1 ? "they all exit" : "it exits", where);
	}

	mt_recording_set_duration(&r, duration_ms);
	enum mt_record_end why = mt_recording_run(&r);
	mt_recording_stop(&r, why);
	mt_perfctl_relay_join(&r.perf); /* perf's last words before ours */
	int perf_rc = perf_status(r.perf.status, &caps, "");
	if (pipe_mode) {
		/* perf's stream is complete: let the reader finish now, not when
		 * COMMAND does */
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			close(null);
		}
	}
	if (why == MT_END_PERF_EXIT && !perf_rc)
		fprintf(stderr, PROG ": perf record ended before the recording did\n");
	mt_recording_wait_command(&r, why);
	mt_recording_close(&r);
	if (o.multi_snapshot)
		fprintf(stderr, PROG ": %u snapshots; perf writes one file per snapshot: %s.<time>\n", r.snapshots, out);

	int sig = r.signal; /* the end's, or one passed on while COMMAND was waited for */
	if (perf_rc)
		rc = perf_rc;
	else if (sig == SIGINT)
		rc = 0;
	else if (sig) {
		fprintf(stderr, PROG ": stopped by signal %d; the perf.data is complete\n", sig);
		rc = 128 + sig;
	} else if (r.command && r.command_done)
		rc = WIFEXITED(r.command_status) ? WEXITSTATUS(r.command_status) : 128 + WTERMSIG(r.command_status);
	if (bundle) {
		/* perf wrote a whole perf.data unless it failed to start */
		struct stat st;
		if (stat(tmpdata, &st) == 0 && st.st_size > 0 && make_bundle(bundle, tmpdata, &caps, argc - optind,
									       argv + optind, npids ? pidlist : NULL, &r) && !rc)
			rc = 1;
		mt_bundle_remove_tree(tmpdir);
	}
	return rc;

fail:
	if (r.command > 0)
		mt_record_kill(r.command);
	mt_recording_close(&r);
	/* a perf that ran and was stopped for a failure leaves a file that
	 * recorded nothing the user asked for: not passed off as a recording */
	if (r.perf.pid && !pipe_mode && !*tmpdir)
		unlink(out);
	if (*tmpdir)
		mt_bundle_remove_tree(tmpdir);
	return rc ? rc : 1;
}

/* The exit status for how perf ended, with a message where it failed. A
 * perf ended by a signal mt-record sent it wrote its file first. */
static int perf_status(int status, const struct mt_caps *caps, const char *when)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status)) {
		fprintf(stderr, PROG ": perf record exited with status %d%s", WEXITSTATUS(status), when);
		const char *par = mt_caps_get(caps, "perf_event_paranoid");
		const char *priv = mt_caps_get(caps, "privileged");
		const char *mlock = mt_caps_get(caps, "perf_event_mlock_kb");
		bool unprivileged = !priv || strcmp(priv, "1");
		if (par && atoi(par) > 1 && unprivileged)
			fprintf(stderr, " (perf_event_paranoid is %s: run as root, or lower it with sysctl "
					"kernel.perf_event_paranoid=1)", par);
		else if (unprivileged && mlock && *mlock)
			/* the other limit an unprivileged perf meets: its buffers */
			fprintf(stderr, " (if perf could not mmap its buffers: perf_event_mlock_kb is %s KiB; ask for "
					"less with --snapshot-size, run as root, or raise it with sysctl "
					"kernel.perf_event_mlock_kb)", mlock);
		else if (WEXITSTATUS(status) == 127)
			fprintf(stderr, " (perf could not be run)");
		fputc('\n', stderr);
		return WEXITSTATUS(status);
	}
	int sig = WTERMSIG(status);
	if (sig == SIGINT || sig == SIGTERM || sig == SIGUSR2)
		return 0; /* perf re-raises the signal that ended it, after writing */
	fprintf(stderr, PROG ": perf record killed by signal %d%s\n", sig, when);
	return 1;
}
