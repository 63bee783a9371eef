/* mt-caps: what this machine, kernel and perf can do for tracing. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "record/caps.h"
#include "base/version.h"

#define PROG "mt-caps"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]...\n"
"Print what this machine can do for tracing, one key=value line per fact:\n"
"Intel PT and every file of its caps/, perf's path and version, kernel\n"
"release, perf_event_paranoid, perf_event_mlock_kb, kptr_restrict,\n"
"privileges (euid, CAP_PERFMON, CAP_SYS_ADMIN), a hypervisor, events for\n"
"the sampling fallback, and magic-trace's derived capabilities with its\n"
"thresholds (configurable_psb_period, kernel_tracing, kcore,\n"
"snapshot_on_exit, last_branch_record, dlfilter, ctlfd).\n"
"\n"
"      --json               one JSON object instead\n"
"      --sysfs-root=DIR     read sysfs from DIR (default /sys)\n"
"      --procfs-root=DIR    read procfs from DIR (default /proc)\n"
"      --perf=PATH          the perf to ask (default: $MT_PERF_PATH,\n"
"                           $MAGIC_TRACE_PERF_PATH, or perf on PATH)\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"$MT_PERF_NO_KCORE or $MAGIC_TRACE_PERF_NO_KCORE set: kcore=0.\n"
"Exit status: 0 (missing facts are printed empty or 0); 1 write error; 2 usage.\n");
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"sysfs-root", required_argument, NULL, 's'},
		{"procfs-root", required_argument, NULL, 'p'},
		{"perf", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	struct mt_caps_opts o = {0};
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 's': o.sysfs_root = optarg; break;
		case 'p': o.procfs_root = optarg; break;
		case 'P': o.perf = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " (mt) " MT_VERSION "\n"); return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\nTry '" PROG " --help' for more information.\n",
			argv[optind]);
		return 2;
	}
	static struct mt_caps caps;
	mt_caps_detect(&o, &caps);
	mt_caps_print(&caps, stdout, json);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
