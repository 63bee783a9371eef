/* mt-perfargs: the perf record arguments magic-trace would use here. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/caps.h"
#include "record/perfargs.h"
#include "base/version.h"

#define PROG "mt-perfargs"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]...\n"
"Read mt-caps output (standard input, or --caps FILE) and print the perf\n"
"record arguments magic-trace would run, one per line, in its order, with its\n"
"warnings on standard error.\n"
"\n"
"      --caps=FILE              mt-caps output (default: standard input)\n"
"      --timer-resolution=R     low, normal (default), high,\n"
"                               custom:cyc=0|1,cyc_thresh=N,mtc=0|1,mtc_period=N,\n"
"                               noretcomp=0|1,psb_period=N (any subset), sample:FREQ\n"
"      --scope=u|k|uk           what to trace (default u)\n"
"      --snapshot-size=BYTES    AUX buffer (4096, 8000B, 64K, 4M, 1G): whole pages,\n"
"                               a power of two of them\n"
"      --multi-thread           every thread (-p) instead of one (--per-thread -t)\n"
"      --full-execution         no ring buffer\n"
"      --multi-snapshot         --switch-output=signal\n"
"      --trigger                snapshots come from a trigger, not the exit\n"
"      --extra-events=LIST      branch-misses,cache-misses\n"
"      --ptwrite                PTWRITE payloads, each with its IP (ptw=1,fup_on_ptw=1)\n"
"      --power-events           C-state entries and exits, MWAIT, EXSTOP (pwr_evt=1)\n"
"      --event-trace            Event Trace: interrupts with their vectors (event=1)\n"
"      --filter=FILTER          perf's address filters: 'filter FUNC @ FILE', ...\n"
"      --start-paused           tracing starts paused (aux-action=start-paused)\n"
"                               (each only where mt-caps says the CPU, perf\n"
"                               and kernel can; else refused with the reason)\n"
"      --sampling               stack sampling instead of Intel PT\n"
"      --callgraph=MODE         lbr, lbr-no-stitch, fp or dwarf (sampling)\n"
"      --clock=CLOCK            -k CLOCK (sampling): mono (default), boot,\n"
"                               realtime, raw, tai, or perf (its own: no -k)\n"
"      --pid=PIDS               PID[,PID...] (default: the word PID)\n"
"  -C, --working-directory=DIR  where perf.data goes (default .)\n"
"      --perf=PATH              argv[0] (default perf)\n"
"      --control-fds=R,W        the --control=fd:R,W pair (default 3,4)\n"
"      --shell                  one shell-quoted line instead\n"
"  -h, --help                   show this help and exit\n"
"  -V, --version                show the version and exit\n"
"\n"
"Exit status: 0; 1 unreadable caps; 2 usage, or a combination magic-trace\n"
"refuses (the reason on standard error).\n");
}

static void shell_quote(const char *s)
{
	if (s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-=,./:")] == '\0' && *s) {
		fputs(s, stdout);
		return;
	}
	putchar('\'');
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	putchar('\'');
}

static int bad(const char *what, const char *val)
{
	fprintf(stderr, PROG ": bad %s '%s'\nTry '" PROG " --help' for more information.\n", what, val);
	return 2;
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	static const struct option opts[] = {
		{"caps", required_argument, NULL, 'c'},
		{"timer-resolution", required_argument, NULL, 'r'},
		{"scope", required_argument, NULL, 's'},
		{"snapshot-size", required_argument, NULL, 'z'},
		{"multi-thread", no_argument, NULL, 'M'},
		{"full-execution", no_argument, NULL, 'F'},
		{"multi-snapshot", no_argument, NULL, 'S'},
		{"trigger", no_argument, NULL, 'T'},
		{"extra-events", required_argument, NULL, 'e'},
		{"sampling", no_argument, NULL, 'P'},
		{"ptwrite", no_argument, NULL, 1000},
		{"power-events", no_argument, NULL, 1001},
		{"event-trace", no_argument, NULL, 1002},
		{"filter", required_argument, NULL, 1003},
		{"start-paused", no_argument, NULL, 1004},
		{"callgraph", required_argument, NULL, 'g'},
		{"clock", required_argument, NULL, 1005},
		{"pid", required_argument, NULL, 'p'},
		{"working-directory", required_argument, NULL, 'W'},
		{"perf", required_argument, NULL, 'x'},
		{"control-fds", required_argument, NULL, 'K'},
		{"shell", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	struct mt_perfargs_opts o;
	mt_perfargs_opts_init(&o);
	o.ctl_fd = 3;
	o.ack_fd = 4;
	const char *caps_path = NULL;
	bool shell = false;
	int c;
	while ((c = getopt_long(argc, argv, "C:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': caps_path = optarg; break;
		case 'r':
			if (mt_perfargs_parse_resolution(optarg, &o))
				return bad("--timer-resolution", optarg);
			break;
		case 's':
			if (mt_perfargs_parse_scope(optarg, &o.scope))
				return bad("--scope", optarg);
			break;
		case 'z':
			if (mt_parse_bytes(optarg, &o.snapshot_size) || !o.snapshot_size)
				return bad("--snapshot-size", optarg);
			break;
		case 'M': o.multi_thread = true; break;
		case 'F': o.full_execution = true; break;
		case 'S': o.multi_snapshot = true; break;
		case 'T': o.trigger = true; break;
		case 'e':
			if (mt_perfargs_parse_extra_events(optarg, &o))
				return bad("--extra-events", optarg);
			break;
		case 'P': o.sampling = true; break;
		case 'g':
			if (mt_perfargs_parse_callgraph(optarg, &o.callgraph))
				return bad("--callgraph", optarg);
			break;
		case 1005:
			if (mt_perfargs_parse_clock(optarg, &o.clock))
				return bad("--clock", optarg);
			break;
		case 'p': o.pids = optarg; break;
		case 1000: o.ptwrite = true; break;
		case 1001: o.power_events = true; break;
		case 1002: o.event_trace = true; break;
		case 1003: o.filter = optarg; break;
		case 1004: o.start_paused = true; break;
		case 'C':
		case 'W': o.dir = optarg; break;
		case 'x': o.perf = optarg; break;
		case 'K':
			if (sscanf(optarg, "%d,%d", &o.ctl_fd, &o.ack_fd) != 2)
				return bad("--control-fds", optarg);
			break;
		case 'q': shell = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " (mt) " MT_VERSION "\n"); return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return 2;
		}
	}
	if (optind < argc)
		return bad("argument", argv[optind]);
	FILE *in = caps_path ? fopen(caps_path, "r") : stdin;
	if (!in) {
		fprintf(stderr, PROG ": %s: %s\n", caps_path, strerror(errno));
		return 1;
	}
	static struct mt_caps caps;
	int prc = mt_caps_parse(in, &caps);
	if (in != stdin)
		fclose(in);
	if (prc) {
		fprintf(stderr, PROG ": %s: not mt-caps output (key=value lines)\n", caps_path ? caps_path : "standard input");
		return 1;
	}
	if (!caps.n) {
		fprintf(stderr, PROG ": %s: empty: no mt-caps output (try: mt-caps | " PROG ")\n",
			caps_path ? caps_path : "standard input");
		return 1;
	}
	const char *rate = mt_caps_get(&caps, "perf_event_max_sample_rate");
	o.max_sample_rate = rate && *rate ? (unsigned)strtoul(rate, NULL, 10) : 100000;
	struct mt_perfargs a;
	struct mt_err err = {0};
	if (mt_perfargs_build(&caps, &o, &a, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 2;
	}
	for (int i = 0; i < a.nwarn; i++)
		fprintf(stderr, PROG ": %s\n", a.warn[i]);
	for (int i = 0; i < a.argc; i++) {
		if (shell) {
			if (i)
				putchar(' ');
			shell_quote(a.argv[i]);
		} else {
			puts(a.argv[i]);
		}
	}
	if (shell)
		putchar('\n');
	if (fflush(stdout)) {
		fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
