/* mt-bundle: make, list, check and extract trace bundles (mt-bundle(5)). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "record/caps.h"
#include "base/version.h"

#define PROG "mt-bundle"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " create [OPTION]... PERF.DATA\n"
"  or:  " PROG " list BUNDLE\n"
"  or:  " PROG " manifest BUNDLE\n"
"  or:  " PROG " extract [-C DIR] BUNDLE\n"
"A bundle is one archive holding a perf.data and everything needed to decode\n"
"it elsewhere: every object it maps (found by build-id), their separate debug\n"
"info, the vDSO, kallsyms, perf record --kcore's copy, JIT perf maps and a\n"
"manifest (mt-bundle(5)). mt-pt2events and mt-symbolize read bundles directly.\n"
"\n"
"  create     write a bundle of PERF.DATA (a file, '-', or a --kcore directory)\n"
"  list       check every entry and print: type, size, name\n"
"  manifest   print the manifest\n"
"  extract    check and extract into DIR (made if absent; must be empty)\n"
"\n"
"  -o, --output=FILE        (create) the bundle (default PERF.DATA.tar.zst;\n"
"                           '-' = standard output), written atomically\n"
"      --compress=KIND      (create) zstd, gzip or none (default: from the\n"
"                           name: .tar.gz/.tgz gzip, .tar none, else zstd)\n"
"      --perf-archive=TAR   (create) also take objects from this perf archive\n"
"      --kallsyms=FILE      (create) kernel symbols from FILE (default:\n"
"                           /proc/kallsyms when the trace has kernel code)\n"
"      --no-kallsyms        (create) no kernel symbols\n"
"      --perf-map-dir=DIR   (create) where JIT perf-PID.map files are (/tmp)\n"
"      --command=TEXT       (create) the recorded command, for the manifest\n"
"      --no-caps            (create) leave mt-caps' facts out of the manifest\n"
"  -C, --directory=DIR      (extract) where to extract (default .)\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"Environment: MT_BUNDLE_MAX_BYTES (default 64 GiB) and MT_BUNDLE_MAX_ENTRIES\n"
"(default 1000000) bound what a bundle may unpack to.\n"
"\n"
"Exit status: 0 done; 1 unreadable, unsafe or damaged input, or a write\n"
"error (nothing is left under the output name); 2 usage.\n");
}

static void warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": %s\n", msg);
}

static int cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"compress", required_argument, NULL, 'z'},
		{"perf-archive", required_argument, NULL, 'a'},
		{"kallsyms", required_argument, NULL, 'K'},
		{"no-kallsyms", no_argument, NULL, 'N'},
		{"perf-map-dir", required_argument, NULL, 'M'},
		{"command", required_argument, NULL, 'c'},
		{"no-caps", no_argument, NULL, 'n'},
		{0},
	};
	struct mt_bundle_create_opts o = {.warn = warn};
	const char *compress = NULL;
	bool caps = true;
	int c;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o.output = optarg; break;
		case 'z': compress = optarg; break;
		case 'a': o.perf_archive = optarg; break;
		case 'K': o.kallsyms = optarg; break;
		case 'N': o.kallsyms = ""; break;
		case 'M': o.perf_map_dir = optarg; break;
		case 'c': o.command = optarg; break;
		case 'n': caps = false; break;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, PROG ": create takes one PERF.DATA\nTry '" PROG " --help' for more information.\n");
		return EXIT_USAGE;
	}
	o.perf_data = argv[optind];
	char defout[4200];
	if (!o.output) {
		if (!strcmp(o.perf_data, "-")) {
			fprintf(stderr, PROG ": create from standard input needs -o\n");
			return EXIT_USAGE;
		}
		snprintf(defout, sizeof defout, "%s.tar.zst", o.perf_data);
		o.output = defout;
	}
	if (!compress)
		o.compression = mt_bundle_compression_of(o.output);
	else if (!strcmp(compress, "zstd"))
		o.compression = MT_BUNDLE_ZSTD;
	else if (!strcmp(compress, "gzip"))
		o.compression = MT_BUNDLE_GZIP;
	else if (!strcmp(compress, "none"))
		o.compression = MT_BUNDLE_NONE;
	else {
		fprintf(stderr, PROG ": bad --compress '%s': expected zstd, gzip or none\n", compress);
		return EXIT_USAGE;
	}
	if (!strcmp(o.output, "-") && isatty(1)) {
		fprintf(stderr, PROG ": will not write a bundle to a terminal (use -o FILE)\n");
		return EXIT_USAGE;
	}
	static struct mt_caps host_caps;
	if (caps) {
		struct mt_caps_opts co = {0};
		mt_caps_detect(&co, &host_caps);
		o.caps = &host_caps;
	}
	struct mt_err err = {0};
	struct mt_bundle_stats st;
	int rc = mt_bundle_create(&o, &st, &err);
	if (rc) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_DATA;
	}
	fprintf(stderr, PROG ": %s: %zu objects (%zu missing), %zu debug files, %s, %s, %s, %zu perf maps, %.1f MB\n",
		o.output, st.objects, st.missing, st.debug_files, st.vdso ? "vDSO" : "no vDSO",
		st.kallsyms ? "kallsyms" : "no kallsyms", st.kcore ? "kcore" : "no kcore", st.perf_maps,
		st.bytes_in / 1e6);
	return 0;
}

/* A directory (not a link to one) that holds nothing. */
static bool dir_is_empty(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode))
		return false;
	DIR *d = opendir(dir);
	if (!d)
		return false;
	struct dirent *e;
	bool empty = true;
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return empty;
}

static int cmd_extract(int argc, char **argv)
{
	static const struct option opts[] = {
		{"directory", required_argument, NULL, 'C'},
		{0},
	};
	const char *dir = ".";
	int c;
	while ((c = getopt_long(argc, argv, "C:", opts, NULL)) != -1) {
		if (c != 'C') {
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
		dir = optarg;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, PROG ": extract takes one BUNDLE\nTry '" PROG " --help' for more information.\n");
		return EXIT_USAGE;
	}
	/* made here, or the user's own and empty: a failure then empties it
	 * again but leaves it (its mode and owner are the user's) */
	bool made = mkdir(dir, 0755) == 0;
	if (!made && errno != EEXIST) {
		fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
		return EXIT_DATA;
	}
	if (!made && !dir_is_empty(dir)) {
		fprintf(stderr, PROG ": %s: not an empty directory\n", dir);
		return EXIT_DATA;
	}
	struct mt_err err = {0};
	if (mt_bundle_extract(argv[optind], dir, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		if (made)
			mt_bundle_remove_tree(dir); /* nothing half-extracted stays */
		else
			mt_bundle_empty_tree(dir);
		return EXIT_DATA;
	}
	return 0;
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	if (argc >= 2 && argv[1][0] == '-' && argv[1][1]) { /* --help or --version before a command, abbreviated or not */
		static const struct option top[] = {{"help", no_argument, NULL, 'h'},
						    {"version", no_argument, NULL, 'V'}, {0}};
		int c = getopt_long(2, argv, "+hV", top, NULL);
		if (c == 'h' || c == 'V') {
			if (c == 'h')
				usage(stdout);
			else
				printf(PROG " (mt) " MT_VERSION "\n");
			return 0;
		}
		fprintf(stderr, "Try '" PROG " --help' for more information.\n");
		return EXIT_USAGE;
	}
	if (argc < 2) {
		fprintf(stderr, PROG ": missing command (create, list, manifest or extract)\n"
				"Try '" PROG " --help' for more information.\n");
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	argc--, argv++;
	argv[0] = (char *)PROG; /* the subcommand's getopt speaks as the tool too */
	if (!strcmp(cmd, "create"))
		return cmd_create(argc, argv);
	if (!strcmp(cmd, "extract"))
		return cmd_extract(argc, argv);
	if (strcmp(cmd, "list") && strcmp(cmd, "manifest")) {
		fprintf(stderr, PROG ": unknown command '%s' (create, list, manifest or extract)\n"
				"Try '" PROG " --help' for more information.\n", cmd);
		return EXIT_USAGE;
	}
	if (argc != 2 || (argv[1][0] == '-' && argv[1][1])) {
		fprintf(stderr, PROG ": %s takes one BUNDLE\nTry '" PROG " --help' for more information.\n", cmd);
		return EXIT_USAGE;
	}
	struct mt_err err = {0};
	int rc;
	if (!strcmp(cmd, "list")) {
		rc = mt_bundle_list(argv[1], stdout, &err);
	} else {
		char *text = NULL;
		rc = mt_bundle_read_manifest(argv[1], &text, &err);
		if (!rc)
			fputs(text, stdout);
		free(text);
	}
	if (rc) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_DATA;
	}
	if (fflush(stdout)) {
		fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
		return EXIT_DATA;
	}
	return 0;
}
