/* mt-view: a trace viewed on this machine: speedscope (or a local
 * Perfetto UI build) and the one trace, served on 127.0.0.1 (serve/). A
 * perf.data, bundle or event stream is turned into what the viewer reads
 * on the way, by mt's own filters. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/version.h"
#include "serve/httpd.h"
#include "stream/events.h"

#define PROG "mt-view"
#define SPEEDSCOPE_VERSION "1.25.0"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... FILE\n"
"View a trace in a browser on this machine: serve a viewer and FILE on\n"
"127.0.0.1 (a free port), print the URL, open it, and serve until ^C.\n"
"Nothing leaves the host; nothing but the viewer's files and the trace is served,\n"
"and only under the URL's secret (a random path of 32 hex digits) and to a\n"
"Host header of 127.0.0.1, localhost or [::1] with the port.\n"
"\n"
"FILE is a perf.data or bundle (decoded on the way: mt-pt2events | mt-symbolize),\n"
"an mt event stream (text or binary), Chrome JSON, folded stacks, or (with a\n"
"Perfetto UI build) a Perfetto trace.\n"
"\n"
"The viewer is speedscope " SPEEDSCOPE_VERSION " (installed with mt), reading its own format\n"
"made from FILE by mt-toperfetto (a profile per thread, every slice to the ns;\n"
"stack samples weighed by their periods), or folded stacks with --folded;\n"
"with MT_PERFETTO_DIR set to a Perfetto UI build, that UI and a Perfetto\n"
"trace. A line at the foot of the page says what it shows.\n"
"\n"
"      --port=N             listen on port N (default: a free one)\n"
"      --no-open            print the URL only; do not start a browser\n"
"      --folded             speedscope: folded stacks (a flame graph by\n"
"                           time, or by samples for a sampled trace), not the\n"
"                           time-ordered profiles\n"
"      --max-slices=N       draw the N longest slices at most (what is left\n"
"                           out is said); 0: all. Default 1000000 (speedscope\n"
"                           took 10 s for them here; see mt-view(1), LIMITS)\n"
"      --timeout=SECONDS    a request's whole head must come within SECONDS,\n"
"                           and a client that reads nothing for SECONDS is\n"
"                           dropped (default 10)\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"Environment: MT_SPEEDSCOPE_DIR (speedscope's dist/release), MT_PERFETTO_DIR,\n"
"BROWSER (the browser to start).\n"
"\n"
"Exit status: 0 stopped by ^C; 1 FILE unreadable, not decodable or with\n"
"nothing to draw, no viewer installed, or the port taken; 2 usage.\n");
}

static volatile sig_atomic_t stop, stop_sig;
static volatile pid_t converting; /* the conversion's process group, while it runs */
static void on_stop(int sig)
{
	stop = 1;
	stop_sig = sig;
	if (converting > 0)
		kill(-converting, SIGTERM);
}

static char tmpdir[PATH_MAX], made[PATH_MAX], made_page[PATH_MAX];

/* What mt-view made, gone: the directory and whatever a filter stopped
 * by a signal may have left in it. */
static void cleanup(void)
{
	if (!tmpdir[0])
		return;
	DIR *d = opendir(tmpdir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(tmpdir);
	tmpdir[0] = '\0';
}

enum kind { K_DECODE, K_STREAM, K_JSON, K_FOLDED, K_PERFETTO };

static bool ends_with(const char *s, const char *e)
{
	size_t n = strlen(s), k = strlen(e);
	return n >= k && !strcmp(s + n - k, e);
}

/* What FILE is, by its first bytes (and, for the formats without a magic
 * number, its name). */
static int kind_of(const char *path, enum kind *k)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char b[512];
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	if (n < 0)
		return -1;
	b[n] = '\0';
	const char *p = b;
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	if (n >= 8 && !memcmp(b, "PERFILE2", 8))
		*k = K_DECODE;
	else if (!strncmp(b, "# mt-events", 11) || (n >= MT_EVENTS_MAGIC_LEN && !memcmp(b, MT_EVENTS_MAGIC, MT_EVENTS_MAGIC_LEN)))
		*k = K_STREAM;
	else if (*p == '{' || *p == '[')
		*k = K_JSON;
	else if (ends_with(path, ".pftrace") || ends_with(path, ".perfetto-trace") || ends_with(path, ".pb"))
		*k = K_PERFETTO;
	else if (ends_with(path, ".folded"))
		*k = K_FOLDED;
	else
		*k = K_DECODE; /* a bundle, or perf's pipe format: mt-pt2events says if not */
	return 0;
}

/* Runs the filters from mt's own directory: FILE into OUT (max_slices:
 * speedscope's --max-slices, "" none). */
static int convert(const char *bin, const char *in, const char *out, enum kind k, const char *format,
		   const char *max_slices)
{
	const char *script =
		k == K_DECODE
			? "set -o pipefail; \"$0/mt-pt2events\" --output-format=binary \"$1\" | "
			  "MT_UPSTREAM_REPORTED=1 \"$0/mt-symbolize\" | "
			  "MT_UPSTREAM_REPORTED=1 \"$0/mt-toperfetto\" --format=\"$3\" ${4:+--max-slices=$4} -o \"$2\""
			: "\"$0/mt-toperfetto\" --format=\"$3\" ${4:+--max-slices=$4} -o \"$2\" \"$1\"";
	/* its own process group, which a signal to mt-view ends (^C reaches
	 * only mt-view, the foreground group); mt-view its subreaper, so that
	 * every filter is waited for before what they wrote is removed */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		setpgid(0, 0);
		execl("/bin/bash", "bash", "-c", script, bin, in, out, format, max_slices, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	converting = pid;
	if (stop) /* a signal before the group was known */
		kill(-pid, SIGTERM);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	converting = 0;
	if (stop)
		kill(-pid, SIGTERM);
	while (wait(NULL) > 0 || errno == EINTR) /* the group's last filters */
		;
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	return !stop && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

/* What a speedscope file mt-toperfetto made holds, from its bytes: any
 * profile, stack samples, slices left out (the cut, "X.XXX us"). */
struct shown {
	bool empty, sampled;
	char under[32];
};

static int describe(const char *path, struct shown *s)
{
	*s = (struct shown){0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || !st.st_size) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char *b = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (b == MAP_FAILED)
		return -1;
	size_t n = (size_t)st.st_size;
	s->empty = memmem(b, n, "\"profiles\":[]", 13) != NULL;
	s->sampled = memmem(b, n, "\"type\":\"sampled\"", 16) != NULL;
	static const char cut[] = "; slices under ";
	const char *u = memmem(b, n, cut, sizeof cut - 1);
	if (u) {
		u += sizeof cut - 1;
		size_t k = 0;
		while (k + 1 < sizeof s->under && u + k < b + n && ((u[k] >= '0' && u[k] <= '9') || u[k] == '.'))
			k++;
		memcpy(s->under, u, k);
		s->under[k] = '\0';
	}
	munmap(b, n);
	return 0;
}

/* s for HTML text */
static void html_put(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* The viewer's page with a line at its foot saying what it shows: the
 * file, the kind of recording, what was left out, the other views. */
static int make_page(const char *viewer, const char *out, const char *in, const char *kind, const char *left_out)
{
	char src[PATH_MAX + 16];
	snprintf(src, sizeof src, "%s/index.html", viewer);
	FILE *f = fopen(src, "re");
	if (!f)
		return -1;
	char *page = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&page, &n);
	if (!m) {
		fclose(f);
		return -1;
	}
	char buf[8192];
	size_t k;
	while ((k = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, k, m);
	fclose(f);
	fclose(m);
	char *body = page ? strstr(page, "</body>") : NULL;
	size_t head = body ? (size_t)(body - page) : n;
	FILE *o = fopen(out, "we");
	if (!o) {
		free(page);
		return -1;
	}
	fwrite(page, 1, head, o);
	char base[PATH_MAX];
	snprintf(base, sizeof base, "%s", in);
	fputs("<div id=\"mt-view\" style=\"position:fixed;left:0;right:0;bottom:0;z-index:10;padding:2px 8px;"
	      "font:12px monospace;background:#fffbe6;color:#222;border-top:1px solid #bbb\">"
	      "<span style=\"float:right;cursor:pointer\" title=\"close\" "
	      "onclick=\"this.parentNode.remove()\">&#x2715;</span>mt-view: <b>", o);
	html_put(o, basename(base));
	fputs("</b>: ", o);
	html_put(o, kind);
	if (left_out && *left_out) {
		fputs(" <b>Not drawn: slices under ", o);
		html_put(o, left_out);
		fputs(" us</b> (mt-view --max-slices=0 draws all).", o);
	}
	fputs(" Threads: the (i/n) menu above. Other views: mt-view --folded (a flame graph); Perfetto: "
	      "mt-toperfetto -o t.pftrace, then ui.perfetto.dev (or MT_PERFETTO_DIR).</div>\n", o);
	fwrite(page + head, 1, n - head, o);
	free(page);
	return fclose(o) ? -1 : 0;
}

static bool is_file(const char *p)
{
	struct stat st;
	return !stat(p, &st) && S_ISREG(st.st_mode);
}

/* speedscope's files: MT_SPEEDSCOPE_DIR, else beside mt's tools in the
 * build tree or where make install put them. */
static bool find_speedscope(const char *bin, char *dir, size_t cap)
{
	const char *env = getenv("MT_SPEEDSCOPE_DIR");
	char p[PATH_MAX + 64];
	if (env && *env) {
		snprintf(dir, cap, "%s", env);
		snprintf(p, sizeof p, "%s/index.html", env);
		return is_file(p);
	}
	static const char *const rel[] = {"../viewer/node_modules/speedscope/dist/release", "../share/mt/speedscope"};
	for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
		if (snprintf(dir, cap, "%s/%s", bin, rel[i]) >= (int)cap)
			continue;
		snprintf(p, sizeof p, "%s/index.html", dir);
		if (is_file(p))
			return true;
	}
	return false;
}

/* s with every byte but unreserved ones %-encoded, for a URL's fragment. */
static void url_encode(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	for (; *s && n + 4 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c))
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, cap - n, "%%%02X", c);
	}
	out[n] = '\0';
}

static void start_browser(const char *url)
{
	const char *b = getenv("BROWSER");
	bool gui = getenv("DISPLAY") || getenv("WAYLAND_DISPLAY");
	if (!(b && *b) && !gui) {
		fprintf(stderr, PROG ": no browser to start (no BROWSER, no display): open the URL above in one\n");
		return;
	}
	pid_t pid = fork();
	if (!pid) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		if (b && *b)
			execlp(b, b, url, (char *)NULL);
		execlp("xdg-open", "xdg-open", url, (char *)NULL);
		_exit(127);
	}
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG;
	static const struct option opts[] = {
		{"port", required_argument, NULL, 'p'},
		{"no-open", no_argument, NULL, 'n'},
		{"folded", no_argument, NULL, 'f'},
		{"max-slices", required_argument, NULL, 'M'},
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	long port = 0;
	unsigned long long max_slices = 1000000;
	unsigned timeout_ms = 10000;
	bool open_browser = true, folded = false;
	int c;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			char *end;
			errno = 0;
			port = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || port < 0 || port > 65535) {
				fprintf(stderr, PROG ": bad --port '%s': expected 0 to 65535\n", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 'M': {
			char *end;
			errno = 0;
			max_slices = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				fprintf(stderr, PROG ": bad --max-slices '%s': expected a number of slices (0: all)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 't': {
			char *end;
			errno = 0;
			double t = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(t >= 0.001 && t <= 3600)) {
				fprintf(stderr, PROG ": bad --timeout '%s': expected seconds, 0.001 to 3600\n", optarg);
				return EXIT_USAGE;
			}
			timeout_ms = (unsigned)(t * 1000 + 0.5);
			break;
		}
		case 'n': open_browser = false; break;
		case 'f': folded = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " (mt) " MT_VERSION "\n"); return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, PROG ": %s\nTry '" PROG " --help' for more information.\n",
			optind == argc ? "expected a FILE to view" : "too many arguments");
		return EXIT_USAGE;
	}
	const char *in = argv[optind];
	enum kind k;
	if (kind_of(in, &k)) {
		fprintf(stderr, PROG ": %s: %s\n", in, strerror(errno));
		return EXIT_DATA;
	}
	char exe[PATH_MAX], bin[PATH_MAX];
	ssize_t en = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (en <= 0) {
		fprintf(stderr, PROG ": cannot find mt's tools: %s\n", strerror(errno));
		return EXIT_DATA;
	}
	exe[en] = '\0';
	snprintf(bin, sizeof bin, "%s", dirname(exe));
	const char *perfetto = getenv("MT_PERFETTO_DIR");
	bool use_perfetto = perfetto && *perfetto;
	char viewer[PATH_MAX];
	if (use_perfetto) {
		snprintf(viewer, sizeof viewer, "%s", perfetto);
		char p[PATH_MAX + 16];
		snprintf(p, sizeof p, "%s/index.html", viewer);
		if (!is_file(p)) {
			fprintf(stderr, PROG ": MT_PERFETTO_DIR=%s: no index.html there (a Perfetto UI build, ui/out/dist)\n",
				perfetto);
			return EXIT_DATA;
		}
	} else if (!find_speedscope(bin, viewer, sizeof viewer)) {
		fprintf(stderr, PROG ": speedscope is not installed (%s/index.html): 'make' installs it with npm, or set "
			"MT_SPEEDSCOPE_DIR, or MT_PERFETTO_DIR to a Perfetto UI build\n", viewer);
		return EXIT_DATA;
	}
	if (!use_perfetto && k == K_PERFETTO) {
		fprintf(stderr, PROG ": %s: speedscope does not read Perfetto traces: view the perf.data, bundle or event "
			"stream it came from, or set MT_PERFETTO_DIR to a Perfetto UI build\n", in);
		return EXIT_DATA;
	}
	/* what the viewer reads: the file itself, or made from it */
	const char *served = in, *name = k == K_JSON ? "trace.json" : "trace.speedscope.json";
	bool as_is = use_perfetto ? k == K_PERFETTO : (k == K_JSON || k == K_FOLDED);
	if (use_perfetto)
		name = "trace.pftrace";
	else if (k == K_FOLDED || (folded && !as_is))
		name = "trace.folded";
	/* from here a signal ends mt-view by the same signal once what it
	 * made is gone (a conversion under way is stopped first) */
	struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART: waits return */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!as_is || !use_perfetto) { /* what is made: the trace, the page */
		const char *t = getenv("TMPDIR");
		snprintf(tmpdir, sizeof tmpdir, "%s/mt-view.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(tmpdir)) {
			fprintf(stderr, PROG ": %s: %s\n", tmpdir, strerror(errno));
			tmpdir[0] = '\0';
			return EXIT_DATA;
		}
		atexit(cleanup);
	}
	const char *kind = k == K_JSON ? "as given (Chrome JSON or a speedscope file)."
			 : k == K_FOLDED ? "folded stacks, as given: a flame graph." : "";
	struct shown shown = {0};
	if (!as_is) {
		if (snprintf(made, sizeof made, "%s/%s", tmpdir, name) >= (int)sizeof made) {
			fprintf(stderr, PROG ": %s: path too long\n", tmpdir);
			return EXIT_DATA;
		}
		fprintf(stderr, PROG ": converting %s for the viewer\n", in);
		bool speedscope = !use_perfetto && !folded;
		char max[32] = "";
		if (speedscope && max_slices)
			snprintf(max, sizeof max, "%llu", max_slices);
		if (convert(bin, in, made, k, use_perfetto ? "perfetto" : folded ? "folded" : "speedscope", max)) {
			if (stop) {
				cleanup();
				signal(stop_sig, SIG_DFL);
				raise(stop_sig);
			}
			fprintf(stderr, PROG ": %s: could not be converted (see above)\n", in);
			return EXIT_DATA;
		}
		served = made;
		if (speedscope) {
			if (describe(made, &shown) || shown.empty) {
				fprintf(stderr, PROG ": %s: nothing to view: no call and no stack sample in it ('mt-report %s' "
					"says what it holds; 'mt-toperfetto --format=threads' lists its events)\n", in, in);
				return EXIT_DATA;
			}
			kind = shown.sampled
				? "stack samples. A function's slice spans the samples that found it on the stack (times "
				  "are estimates at the sampling period; calls shorter than it are not seen); the \"stack "
				  "samples\" profiles weigh each sample by its period (flame graph: Left Heavy)."
				: "an exact trace: every call, to the nanosecond.";
			if (shown.under[0])
				fprintf(stderr, PROG ": slices under %s us are not drawn (--max-slices=%llu; 0 draws all)\n",
					shown.under, max_slices);
		} else if (folded) {
			kind = "folded stacks made from it: a flame graph (by time for an exact trace, by samples for a "
			       "sampled one).";
		}
	}
	if (!use_perfetto) {
		if (snprintf(made_page, sizeof made_page, "%s/index.html", tmpdir) >= (int)sizeof made_page ||
		    make_page(viewer, made_page, in, kind, shown.under)) {
			fprintf(stderr, PROG ": %s/index.html: cannot make the viewer's page: %s\n", tmpdir, strerror(errno));
			return EXIT_DATA;
		}
	}
	static struct mt_httpd h; /* static: still reachable at exit while a stalled client's thread holds its files */
	struct mt_err err = {0};
	if (mt_httpd_open(&h, (uint16_t)port, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_DATA;
	}
	h.timeout_ms = timeout_ms;
	char url_path[64];
	snprintf(url_path, sizeof url_path, "/%s", name);
	if (mt_httpd_add_dir(&h, viewer, &err) ||
	    mt_httpd_add_file(&h, url_path, served, k == K_FOLDED || !strcmp(name, "trace.folded")
						       ? "text/plain; charset=utf-8" : NULL, &err) ||
	    (made_page[0] && (mt_httpd_add_file(&h, "/", made_page, "text/html; charset=utf-8", &err) ||
			      mt_httpd_add_file(&h, "/index.html", made_page, "text/html; charset=utf-8", &err)))) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_DATA;
	}
	/* every file is open: what was made can go now (nothing is left
	 * behind however mt-view ends, SIGKILL included) */
	cleanup();
	char base[PATH_MAX], title[3 * PATH_MAX], trace_url[256], enc[768], url[4 * PATH_MAX];
	snprintf(base, sizeof base, "%s", in);
	url_encode(basename(base), title, sizeof title);
	snprintf(trace_url, sizeof trace_url, "http://127.0.0.1:%u/%s%s", h.port, h.token, url_path);
	url_encode(trace_url, enc, sizeof enc);
	if (use_perfetto)
		snprintf(url, sizeof url, "http://127.0.0.1:%u/%s/#!/?url=%s", h.port, h.token, enc);
	else if (!strcmp(name, "trace.folded")) /* one profile: named after the file */
		snprintf(url, sizeof url, "http://127.0.0.1:%u/%s/#profileURL=%s&title=%s", h.port, h.token, enc, title);
	else /* no title: speedscope would give it to every profile, whose names say which thread */
		snprintf(url, sizeof url, "http://127.0.0.1:%u/%s/#profileURL=%s", h.port, h.token, enc);
	printf("%s\n", url);
	fflush(stdout);
	fprintf(stderr, PROG ": serving %s with %s on 127.0.0.1:%u only; ^C to stop\n", in,
		use_perfetto ? "the Perfetto UI" : "speedscope", h.port);
	if (open_browser)
		start_browser(url);
	int rc = mt_httpd_serve(&h, &stop, &err);
	mt_httpd_close(&h);
	if (rc) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_DATA;
	}
	fprintf(stderr, PROG ": stopped (%llu files served, %llu requests refused)\n", (unsigned long long)h.served,
		(unsigned long long)h.refused);
	return 0;
}
