/* mt-record: run a program under perf record the way magic-trace would,
 * with Intel PT where the machine has it, else stack sampling (on the
 * software clock where there is no hardware PMU). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle.h"
#include "caps.h"
#include "perfargs.h"
#include "version.h"

#define PROG "mt-record"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... -- COMMAND [ARG]...\n"
"  or:  " PROG " [OPTION]... --pid=PID[,PID...]\n"
"Run COMMAND under perf record and write the perf.data: to FILE with -o, else\n"
"to standard output in pipe mode when it is not a terminal, else ./perf.data.\n"
"Intel PT where the machine has it (snapshot at exit), else stack sampling\n"
"with frame-pointer call graphs, on cycles or, without a hardware PMU, on the\n"
"cpu-clock software event.\n"
"\n"
"  -o, --output=FILE            the perf.data to write\n"
"      --bundle=FILE            write a bundle instead (mt-bundle(5)): the perf.data\n"
"                               with every object it maps, the vDSO, kallsyms, perf\n"
"                               maps and a manifest; decodes on any machine\n"
"      --sampling               stack sampling even where Intel PT exists\n"
"      --timer-resolution=R     low, normal (default), high, custom:..., sample:FREQ\n"
"                               (as mt-perfargs takes them)\n"
"      --scope=u|k|uk           what to trace (default u)\n"
"      --callgraph=MODE         fp, lbr, lbr-no-stitch, dwarf (default fp: mt-pt2events\n"
"                               reads callchains, it does not unwind dwarf stacks)\n"
"      --pid=PIDS               attach to running processes instead (until they\n"
"                               exit or ^C); one thread each unless --multi-thread\n"
"      --multi-thread           every thread of the processes\n"
"      --perf=PATH              the perf to run (default: $MT_PERF_PATH, perf)\n"
"      --dry-run                print the perf command and exit\n"
"  -h, --help                   show this help and exit\n"
"  -V, --version                show the version and exit\n"
"\n"
"SIGINT, SIGTERM or SIGHUP are passed on to perf, which writes what it has.\n"
"\n"
"Exit status: COMMAND's when perf ran it; 0 after SIGINT, 128+N after signal N;\n"
"1 perf failed (its message above, then a hint); 2 usage.\n");
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
static bool find_program(const char *name)
{
	if (strchr(name, '/'))
		return access(name, X_OK) == 0;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	char dir[4096];
	for (const char *p = path; *p;) {
		size_t l = strcspn(p, ":");
		snprintf(dir, sizeof dir, "%.*s/%s", (int)l, p, name);
		if (access(dir, X_OK) == 0)
			return true;
		p += l + (p[l] == ':');
	}
	return false;
}

static volatile pid_t perf_pid;
static volatile sig_atomic_t forwarded; /* the last signal passed on to perf */

static void forward_signal(int sig)
{
	forwarded = sig;
	if (perf_pid > 0)
		kill(perf_pid, sig);
}

static int perf_status(int status, const struct mt_caps *caps);

static void warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": %s\n", msg);
}

/* Bundles the recorded perf.data; the manifest names the command. */
static int make_bundle(const char *bundle, const char *data, const struct mt_caps *caps, int argc, char **argv,
		       const char *pids)
{
	char cmd[8192] = "";
	size_t n = 0;
	if (pids)
		snprintf(cmd, sizeof cmd, "attach --pid=%s", pids);
	for (int i = 0; i < argc && n + 2 < sizeof cmd; i++)
		n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s%s", i ? " " : "", argv[i]);
	struct mt_bundle_create_opts bo = {.perf_data = data, .output = bundle, .command = cmd, .caps = caps,
					   .warn = warn};
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"bundle", required_argument, NULL, 'b'},
		{"sampling", no_argument, NULL, 's'},
		{"timer-resolution", required_argument, NULL, 'r'},
		{"scope", required_argument, NULL, 'S'},
		{"callgraph", required_argument, NULL, 'g'},
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
	const char *out = NULL, *bundle = NULL;
	bool dry = false;
	int c;
	while ((c = getopt_long(argc, argv, "+o:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'b': bundle = optarg; break;
		case 's': o.sampling = true; break;
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
			break;
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
	if (o.pids) {
		/* attach: every pid must exist now (magic-trace would find out later) */
		char copy[256];
		snprintf(copy, sizeof copy, "%s", o.pids);
		for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ","))
			if (kill((pid_t)atoi(tok), 0) < 0 && errno == ESRCH) {
				fprintf(stderr, PROG ": no process %s\n", tok);
				return 1;
			}
	} else if (!find_program(argv[optind])) {
		/* magic-trace: "Can't find executable for %s"; perf would leave a stub file */
		fprintf(stderr, PROG ": %s: no such executable (searched PATH)\n", argv[optind]);
		return 1;
	}
	struct mt_caps_opts co = {.perf = o.perf};
	static struct mt_caps caps;
	mt_caps_detect(&co, &caps);
	if (!o.perf)
		o.perf = mt_caps_get(&caps, "perf.path");
	bool sampling = o.sampling || strcmp(mt_caps_get(&caps, "intel_pt"), "1");
	if (!sampling)
		o.callgraph = MT_CG_DEFAULT;
	const char *rate = mt_caps_get(&caps, "perf_event_max_sample_rate");
	o.max_sample_rate = rate && *rate ? (unsigned)strtoul(rate, NULL, 10) : 100000;
	o.full_execution = sampling; /* run mode: every sample, no ring buffer to overwrite */
	struct mt_perfargs a;
	struct mt_err err = {0};
	if (mt_perfargs_build(&caps, &o, &a, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 2;
	}
	for (int i = 0; i < a.nwarn; i++)
		if (strncmp(a.warn[i], "Warning: [-callgraph-mode]", 26))
			fprintf(stderr, "%s\n", a.warn[i]);
	/* magic-trace attaches to a stopped child; a run needs no pid: drop
	 * the thread selection and the control fds, run COMMAND after -- */
	/* a bundle is made from a perf.data recorded beside it first */
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
	char *args[MT_PERFARGS_MAX + 64];
	int n = 0;
	for (int i = 0; i < a.argc; i++) {
		const char *s = a.argv[i];
		/* no control fds yet (the ctlfd handshake is not written); a run
		 * needs no thread selection, an attach keeps it */
		if (!strncmp(s, "--control=", 10))
			continue;
		if (!o.pids && (!strcmp(s, "--per-thread") || !strcmp(s, "-t") || !strcmp(s, "-p") || !strcmp(s, "PID")))
			continue;
		if (i > 0 && !strcmp(a.argv[i - 1], "-o")) {
			args[n++] = (char *)out;
			continue;
		}
		args[n++] = a.argv[i];
	}
	if (!o.pids) {
		args[n++] = "--";
		for (int i = optind; i < argc && n < MT_PERFARGS_MAX + 62; i++)
			args[n++] = argv[i];
	}
	args[n] = NULL;
	if (dry) {
		for (int i = 0; i < n; i++) {
			if (i)
				putchar(' ');
			shell_quote(stdout, args[i]);
		}
		putchar('\n');
		return 0;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setenv("PAGER", "cat", 1);
		execvp(args[0], args);
		fprintf(stderr, PROG ": %s: %s\n", args[0], strerror(errno));
		_exit(127);
	}
	/* ^C at a terminal reaches perf (same process group), which stops the
	 * command and writes what it has; SIGINT, SIGTERM or SIGHUP sent to
	 * mt-record alone are passed on to perf, to the same end. mt-record
	 * waits for it either way, so the perf.data is whole when it exits. */
	perf_pid = pid;
	struct sigaction sa = {.sa_handler = forward_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int rc = perf_status(status, &caps);
	if (bundle) {
		/* perf wrote a whole perf.data unless it failed to start */
		struct stat st;
		if (stat(tmpdata, &st) == 0 && st.st_size > 0 && make_bundle(bundle, tmpdata, &caps, argc - optind,
									       argv + optind, o.pids) && !rc)
			rc = 1;
		mt_bundle_remove_tree(tmpdir);
	}
	return rc;
}

/* The exit status for how perf ended, with a message where it failed. */
static int perf_status(int status, const struct mt_caps *caps)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) != 127) {
		fprintf(stderr, PROG ": perf record exited with status %d", WEXITSTATUS(status));
		const char *par = mt_caps_get(caps, "perf_event_paranoid");
		fprintf(stderr, "%s%s%s\n", par && atoi(par) > 1 && strcmp(mt_caps_get(caps, "privileged"), "1")
						? " (perf_event_paranoid is " : "",
			par && atoi(par) > 1 && strcmp(mt_caps_get(caps, "privileged"), "1") ? par : "",
			par && atoi(par) > 1 && strcmp(mt_caps_get(caps, "privileged"), "1")
				? ": run as root, or lower it with sysctl kernel.perf_event_paranoid=1)" : "");
		return WEXITSTATUS(status);
	}
	if (WIFSIGNALED(status) && forwarded) {
		/* perf wrote what it had before it went: an interrupt is the
		 * usual way to end a recording (exit 0), a termination is told */
		if (forwarded == SIGINT)
			return 0;
		fprintf(stderr, PROG ": stopped by signal %d; the perf.data is complete\n", (int)forwarded);
		return 128 + forwarded;
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, PROG ": perf record killed by signal %d\n", WTERMSIG(status));
		return 1;
	}
	return 1;
}
