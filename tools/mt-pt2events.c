/* mt-pt2events: decode Intel PT into the mt event stream. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "stream/events.h"
#include "trace/image.h"
#include "base/outfile.h"
#include "trace/perfdata.h"
#include "trace/perfscript.h"
#include "trace/ptdecode.h"
#include "trace/ptperf.h"
#include "base/strtab.h"
#include "base/utf8.h"
#include "base/version.h"

#define PROG "mt-pt2events"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... [FILE]...\n"
"Decode Intel PT into the mt event stream (mt-events(5)) on standard output.\n"
"FILE is a perf.data in file or pipe mode (perf record -z too), a perf.data\n"
"directory (DIR/data; perf record --threads: with every DIR/data.N; --kcore:\n"
"with DIR/kcore_dir used for kernel code), or a bundle\n"
"(mt-bundle(5): its perf.data, decoded with its objects only, never this\n"
"host's); '-' or no FILE reads standard input. Several FILEs are the pieces\n"
"of one recording (perf record --switch-output), read as one in time order.\n"
"A perf.data of stack samples (no Intel PT) gives one sample event per sample,\n"
"with its callchain.\n"
"\n"
"  -o, --output=FILE        write events to FILE (atomically) instead of stdout\n"
"      --symfs=DIR|ARCHIVE  look up traced binaries under DIR, or only in a\n"
"                           bundle or a perf archive tarball (perf-archive(1))\n"
"      --vmlinux=FILE       kernel image for kernel-mode trace (intel_pt//k, //uk)\n"
"      --kcore=DIR          kernel code from perf record --kcore's kcore_dir\n"
"      --all-branches       emit every taken branch (default: calls, returns,\n"
"                           syscalls, trace start/end, errors, and jumps that\n"
"                           leave their function)\n"
"      --decoder=NAME       who reads the packets and walks the code: mt (the\n"
"                           default: mt reads the packets of ordinary traces,\n"
"                           libipt's query decoder the rest, mt walks), or\n"
"                           libipt-query (libipt reads every packet, mt walks),\n"
"                           or libipt (libipt's block decoder: slower; 16/32-bit)\n"
"      --power              emit CBR (core:bus ratio) changes as power events,\n"
"                           and the power notes (mwait, pwre, pwrx, exstop)\n"
"      --stitch-lbr         --call-graph lbr stacks deeper than the LBR: each\n"
"                           sample's LBR call stack continued by the frames\n"
"                           of the thread's earlier ones, as perf script\n"
"                           --stitch-lbr stitches them\n"
"      --info               describe the perf.data instead of decoding it\n"
"      --stats              print a summary line on standard error at the end\n"
"      --progress[=WHEN]    a progress bar on standard error: auto (default:\n"
"                           when it is a terminal), always, never\n"
"  -j, --jobs=N             decode independent segments (queues, buffers after\n"
"                           a gap) on N threads; the output is the same for any\n"
"                           N (default: the number of cores; 1 below 256K\n"
"                           of PT)\n"
"      --split-size=SIZE    with N > 1, a segment longer than twice SIZE is cut\n"
"                           at PSB packets into pieces of about SIZE decoded at\n"
"                           once and stitched: the same output (K, M, G\n"
"                           suffixes; default 1M; 0: never cut); with any N,\n"
"                           contiguous buffers past 16 pieces' worth are\n"
"                           decoded in pieces as they come (bounded memory)\n"
"      --input=FORMAT       perf-data, perf-script (the text of perf script with\n"
"                           magic-trace's fields), or auto (default: by content)\n"
"      --pt=FILE            decode raw PT bytes from FILE instead of a perf.data\n"
"      --image=FILE[:OFF[-END]]@VADDR  (with --pt) map FILE bytes at VADDR\n"
"      --pages=PREFIX       (with --pt) map a page-image set PREFIX.addr/PREFIX.dump\n"
"      --cpu=F/M/S          (with --pt) CPU family/model/stepping, for errata\n"
"      --filter-addr=N:FROM-TO[:filter|stop]  (with --pt) the recording's\n"
"                           address range N (0-3; ptxed's --filter:addrN_*)\n"
"      --tsc                (with --pt) times from the trace's TSC (in ticks)\n"
"      --mtc-freq=N, --nom-freq=N, --cpuid-0x15-eax=N, --cpuid-0x15-ebx=N\n"
"                           (with --pt) MTC period, max non-turbo ratio, and\n"
"                           the TSC/CTC ratio, for MTC and CYC times\n"
"      --output-format=text|binary  event stream encoding (default: text)\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"Exit status: 0 decoded; 1 input unreadable, not a trace, or damaged (what was\n"
"sound is still decoded and the damage reported as error events); 2 usage.\n"
"PT decode errors inside a sound file are error events, not a failure.\n");
}

static void warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": %s\n", msg);
}

struct sink { struct mt_events_writer *w; };

static void sink(void *ctx, const struct mt_event *ev)
{
	mt_events_write(((struct sink *)ctx)->w, ev);
}

static void print_stats(const struct mt_ptdec_stats *st)
{
	fprintf(stderr, PROG ": stats: pt_bytes=%" PRIu64 " insns=%" PRIu64, st->pt_bytes, st->insns);
	for (int k = 0; k < MT_EV_KIND_COUNT; k++)
		if (st->by_kind[k])
			fprintf(stderr, " %s=%" PRIu64, mt_event_kind_name((enum mt_event_kind)k), st->by_kind[k]);
	fprintf(stderr, " errors=%" PRIu64, st->errors);
	if (st->pieces)
		fprintf(stderr, " pieces=%" PRIu64 " redone=%" PRIu64, st->pieces, st->redone);
	if (st->redone)
		fprintf(stderr, " first_redone_at=%" PRIu64 " (%s)", st->redo_at, st->redo_why);
	if (st->handed_over)
		fprintf(stderr, " handed_over=%" PRIu64, st->handed_over);
	if (st->unbound_mwait)
		fprintf(stderr, " unbound_mwait=%" PRIu64, st->unbound_mwait);
	if (st->blocks_handed)
		fprintf(stderr, " blocks_handed=%" PRIu64, st->blocks_handed);
	if (st->libipt21)
		fprintf(stderr, " libipt21=%" PRIu64, st->libipt21);
	fputc('\n', stderr);
}

static int decode_raw(const char *ptpath, char **images, int nimages, char **pages, int npages,
		      const struct mt_ptdec_config *cfg, struct mt_events_writer *w,
		      struct mt_ptdec_stats *st, struct mt_err *err)
{
	struct mt_image img;
	int rc = mt_image_init(&img, "raw", err);
	if (rc)
		return rc;
	for (int i = 0; i < nimages && !rc; i++)
		rc = mt_image_add_spec(&img, images[i], err);
	for (int i = 0; i < npages && !rc; i++)
		rc = mt_image_add_pageset(&img, pages[i], err);
	int fd = -1;
	void *m = MAP_FAILED;
	struct stat sb;
	if (!rc) {
		fd = open(ptpath, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &sb) < 0)
			rc = mt_err_set(err, MT_EIO, "%s: %s", ptpath, strerror(errno));
		else if (sb.st_size == 0)
			rc = mt_err_set(err, MT_ETRUNC, "%s: empty trace", ptpath);
		else if ((m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
			rc = mt_err_set(err, MT_EIO, "%s: mmap: %s", ptpath, strerror(errno));
	}
	if (!rc) {
		mt_events_write_fact(w, "source", "%s", ptpath);
		mt_events_write_fact(w, "format", "raw PT, %zu image sections", img.nsections);
		if (cfg->timed)
			mt_events_write_fact(w, "time", "TSC ticks (--tsc)");
		else
			mt_events_write_fact(w, "time", "timeless");
		struct sink sk = {w};
		struct mt_ptdec_stream s = {.data = m, .len = (size_t)sb.st_size, .cpu = -1, .sink = sink, .sink_ctx = &sk};
		rc = mt_ptdec_decode(&s, &img, cfg, st, err);
	}
	if (m != MAP_FAILED)
		munmap(m, (size_t)sb.st_size);
	if (fd >= 0)
		close(fd);
	mt_image_fini(&img);
	return rc;
}

/* perf script text in, events out. */
static int decode_script(int fd, const char *name, const char *head, size_t head_len, const char *out,
			 int format, bool stats)
{
	struct mt_err err = {0};
	struct mt_pscript_reader r;
	if (mt_pscript_init(&r, fd, name, head, head_len, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_DATA;
	}
	r.warn = warn;
	struct mt_outfile of;
	if (mt_outfile_open(&of, out, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		mt_pscript_fini(&r);
		return EXIT_DATA;
	}
	struct mt_events_writer w;
	if (mt_events_writer_init_format(&w, of.f, (enum mt_events_format)format)) {
		fprintf(stderr, PROG ": out of memory\n");
		mt_outfile_abort(&of);
		mt_pscript_fini(&r);
		return EXIT_DATA;
	}
	mt_events_write_fact(&w, "source", "%s", name);
	mt_events_write_fact(&w, "format", "perf script text");
	uint64_t by_kind[MT_EV_KIND_COUNT] = {0}, n = 0;
	struct mt_event ev;
	int rc;
	while ((rc = mt_pscript_next(&r, &ev, &err)) > 0) {
		mt_events_write(&w, &ev);
		by_kind[ev.kind]++;
		n++;
	}
	int status = 0;
	if (rc < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		status = EXIT_DATA;
	}
	struct mt_err werr = {0};
	if (mt_events_writer_finish(&w, &werr)) {
		fprintf(stderr, PROG ": %s\n", werr.msg);
		mt_outfile_abort(&of);
		status = EXIT_DATA;
	} else if (mt_outfile_commit(&of, &werr)) {
		fprintf(stderr, PROG ": %s\n", werr.msg);
		status = EXIT_DATA;
	} else {
		mt_outfile_say_replaced(&of, PROG, out);
	}
	if (stats) {
		fprintf(stderr, PROG ": stats: lines=%" PRIu64 " records=%" PRIu64 " events=%" PRIu64, r.lineno,
			r.records, n);
		for (int k = 0; k < MT_EV_KIND_COUNT; k++)
			if (by_kind[k])
				fprintf(stderr, " %s=%" PRIu64, mt_event_kind_name((enum mt_event_kind)k), by_kind[k]);
		fprintf(stderr, " psb=%" PRIu64 " skipped_lines=%" PRIu64 " skipped_events=%" PRIu64
			" skipped_flags=%" PRIu64 " skipped_frames=%" PRIu64 "\n", r.psbs, r.skipped[MT_PSKIP_SYNTAX],
			r.skipped[MT_PSKIP_EVENT], r.skipped[MT_PSKIP_FLAGS], r.skipped[MT_PSKIP_FRAMES]);
	}
	mt_pscript_fini(&r);
	if (fd > 0)
		close(fd);
	return status;
}

/* The progress bar: at most ten redraws a second. */
struct bar {
	struct timespec last;
	bool shown;
};

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct bar *b = ctx;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double since = (double)(now.tv_sec - b->last.tv_sec) + (double)(now.tv_nsec - b->last.tv_nsec) / 1e9;
	if (b->shown && since < 0.1 && done < total)
		return;
	b->last = now;
	b->shown = true;
	int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
	char bar[41];
	int fill = pct * 40 / 100;
	for (int i = 0; i < 40; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[40] = '\0';
	fprintf(stderr, "\r" PROG ": [%s] %3d%% %.1f of %.1f MB of PT", bar, pct, (double)done / 1e6,
		(double)total / 1e6);
	fflush(stderr);
}

/* Opens path ("-" = stdin) and reads up to n first bytes into head. */
static int open_peek(const char *path, int *fd, char *head, size_t n, size_t *len)
{
	*fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (*fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	*len = 0;
	while (*len < n) {
		ssize_t r = read(*fd, head + *len, n - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* errors show again when the reader reads */
		*len += (size_t)r;
	}
	return 0;
}

static int cmp_hit_time(const void *a, const void *b)
{
	const struct mt_ptperf_hit *x = a, *y = b;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* One unsigned number of a hit line at *p, whole: digits only (no sign,
 * no space before), base 16 after "0x" when hex, at most max; *p moves past
 * it. False when it is not that. */
static bool hit_field(const char **p, bool hex, uint64_t max, uint64_t *v)
{
	const char *s = *p;
	if (hex) {
		if (strncmp(s, "0x", 2))
			return false;
		s += 2;
	}
	if (!(hex ? isxdigit((unsigned char)*s) : isdigit((unsigned char)*s)))
		return false;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, hex ? 16 : 10);
	if (errno || x > max)
		return false;
	*v = x;
	*p = end;
	return true;
}

/* A bundle's trigger hits (mt-bundle(5): trigger-hit=TIME PID TID 0xIP),
 * in time order; a line that does not parse whole (a sign, an overflow,
 * a field missing, anything after) is skipped, with a warning. Nonzero
 * out of memory. */
static int manifest_hits(const char *manifest, struct mt_ptperf_opts *po)
{
	static struct mt_ptperf_hit *hits;
	size_t n = 0, cap = 0, lineno = 0;
	for (const char *l = manifest; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		lineno++;
		if (strncmp(l, "trigger-hit=", 12))
			continue;
		struct mt_ptperf_hit h;
		uint64_t pid = 0, tid = 0;
		const char *p = l + 12;
		bool whole = hit_field(&p, false, UINT64_MAX, &h.time) && *p++ == ' ' &&
			     hit_field(&p, false, UINT32_MAX, &pid) && *p++ == ' ' && hit_field(&p, false, UINT32_MAX, &tid) &&
			     *p++ == ' ' && hit_field(&p, true, UINT64_MAX, &h.ip) && (*p == '\n' || !*p);
		if (!whole) {
			char line[201];
			size_t len = strcspn(l, "\n");
			snprintf(line, sizeof line, "%.*s", (int)(len < 200 ? len : 200), l);
			fprintf(stderr, PROG ": warning: the bundle's manifest, line %zu: '", lineno);
			mt_utf8_put_escaped(stderr, line); /* its bytes as they are, no control reaching a terminal */
			fprintf(stderr, "' is not trigger-hit=TIME PID TID 0xIP: that trigger hit is skipped\n");
			continue;
		}
		h.pid = (uint32_t)pid;
		h.tid = (uint32_t)tid;
		if (!mt_grow((void **)&hits, &cap, n + 1, sizeof *hits)) {
			fprintf(stderr, PROG ": out of memory\n");
			return 1;
		}
		hits[n++] = h;
	}
	if (n)
		qsort(hits, n, sizeof *hits, cmp_hit_time);
	po->hits = hits;
	po->nhits = n;
	return 0;
}

/* "# bundle PATH": mt-symbolize then takes objects from the same bundle. */
static void bundle_meta_line(char *out, size_t n, const char *path)
{
	char abs[4096];
	snprintf(out, n, "bundle\t%s", realpath(path, abs) ? abs : path);
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	/* Decoded events are held in buffers of megabytes, allocated and freed
	 * round after round: returned to the kernel each time, every round
	 * would fault its pages in afresh (a quarter of the CPU time with two
	 * jobs). Keep freed memory for reuse. */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"symfs", required_argument, NULL, 's'},
		{"vmlinux", required_argument, NULL, 'k'},
		{"kcore", required_argument, NULL, 'K'},
		{"all-branches", no_argument, NULL, 'a'},
		{"power", no_argument, NULL, 'P'},
		{"stitch-lbr", no_argument, NULL, 1006},
		{"decoder", required_argument, NULL, 'D'},
		{"info", no_argument, NULL, 'i'},
		{"stats", no_argument, NULL, 'S'},
		{"pt", required_argument, NULL, 't'},
		{"input", required_argument, NULL, 'n'},
		{"jobs", required_argument, NULL, 'j'},
		{"split-size", required_argument, NULL, 'z'},
		{"progress", optional_argument, NULL, 'G'},
		{"image", required_argument, NULL, 'I'},
		{"pages", required_argument, NULL, 'g'},
		{"cpu", required_argument, NULL, 'c'},
		{"filter-addr", required_argument, NULL, 1000},
		{"tsc", no_argument, NULL, 1001},
		{"mtc-freq", required_argument, NULL, 1002},
		{"nom-freq", required_argument, NULL, 1003},
		{"cpuid-0x15-eax", required_argument, NULL, 1004},
		{"cpuid-0x15-ebx", required_argument, NULL, 1005},
		{"output-format", required_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	const char *out = "-", *symfs = NULL, *ptpath = NULL;
	bool info = false, stats = false;
	char *images[argc], *pages[argc]; /* option values point into argv */
	int nimages = 0, npages = 0, format = MT_EVENTS_TEXT;
	enum { IN_AUTO, IN_PERF_DATA, IN_PERF_SCRIPT } input = IN_AUTO;
	struct mt_ptdec_config cfg = {0};
	struct mt_ptperf_opts po = {.warn = warn};
	int c;
	int progress = -1;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	po.jobs = cores > 0 ? (unsigned)(cores > 64 ? 64 : cores) : 1;
	po.jobs_auto = true;
	po.split_bytes = (size_t)1 << 20;
	while ((c = getopt_long(argc, argv, "o:j:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'j': {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);
			if (!isdigit((unsigned char)optarg[0]) || *end || n < 1 || n > 64) {
				fprintf(stderr, PROG ": bad --jobs '%s': expected 1 to 64\n", optarg);
				return EXIT_USAGE;
			}
			po.jobs = (unsigned)n;
			po.jobs_auto = false;
			break;
		}
		case 'z': {
			uint64_t n;
			/* below a few PSB periods pieces would be mostly overlap */
			if (mt_parse_count(optarg, true, &n) || (n && n < 65536) || n > ((uint64_t)1 << 40)) {
				fprintf(stderr, PROG ": bad --split-size '%s': expected 0, or 64K to 1T\n", optarg);
				return EXIT_USAGE;
			}
			po.split_bytes = (size_t)n;
			break;
		}
		case 'G':
			if (!optarg || !strcmp(optarg, "always"))
				progress = 1;
			else if (!strcmp(optarg, "never"))
				progress = 0;
			else if (!strcmp(optarg, "auto"))
				progress = -1;
			else {
				fprintf(stderr, PROG ": bad --progress '%s': expected auto, always or never\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 's': symfs = optarg; break;
		case 'k': po.vmlinux = optarg; break;
		case 'K': po.kcore_dir = optarg; break;
		case 'a': cfg.all_branches = po.all_branches = true; break;
		case 'P': cfg.want_power = po.power = true; break;
		case 1006: po.stitch_lbr = true; break;
		case 'D':
			if (!strcmp(optarg, "mt") || !strcmp(optarg, "libipt") || !strcmp(optarg, "libipt-query")) {
				cfg.libipt_blocks = po.libipt_blocks = !strcmp(optarg, "libipt");
				cfg.libipt_packets = po.libipt_packets = !strcmp(optarg, "libipt-query");
				break;
			}
			fprintf(stderr, PROG ": bad --decoder '%s': expected mt, libipt-query or libipt\n", optarg);
			return EXIT_USAGE;
		case 'i': info = true; break;
		case 'S': stats = true; break;
		case 't': ptpath = optarg; break;
		case 'n':
			if (!strcmp(optarg, "auto"))
				input = IN_AUTO;
			else if (!strcmp(optarg, "perf-data"))
				input = IN_PERF_DATA;
			else if (!strcmp(optarg, "perf-script"))
				input = IN_PERF_SCRIPT;
			else {
				fprintf(stderr, PROG ": bad --input '%s': expected auto, perf-data or perf-script\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'I': images[nimages++] = optarg; break;
		case 'g': pages[npages++] = optarg; break;
		case 'c':
			if (sscanf(optarg, "%u/%u/%u", &cfg.family, &cfg.model, &cfg.stepping) != 3) {
				fprintf(stderr, PROG ": bad --cpu '%s': expected FAMILY/MODEL/STEPPING\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 1000:
			if (!mt_ptdec_parse_filter(optarg, &cfg)) {
				fprintf(stderr, PROG ": bad --filter-addr '%s': expected N:FROM-TO[:filter|stop], N 0 to 3\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 1001: /* TSC ticks as the stream's times */
			cfg.timed = true;
			cfg.conv = (struct mt_tsc_conv){.time_mult = 1};
			break;
		case 1002:
		case 1003:
		case 1004:
		case 1005: {
			static const char *const names[] = {"mtc-freq", "nom-freq", "cpuid-0x15-eax", "cpuid-0x15-ebx"};
			char *end;
			unsigned long v = strtoul(optarg, &end, 0);
			if (end == optarg || *end || v > (c == 1002 || c == 1003 ? 255UL : 0xffffffffUL)) {
				fprintf(stderr, PROG ": bad --%s '%s'\n", names[c - 1002], optarg);
				return EXIT_USAGE;
			}
			if (c == 1002)
				cfg.mtc_freq = (uint8_t)v;
			else if (c == 1003)
				cfg.nom_freq = (uint8_t)v;
			else if (c == 1004)
				cfg.ctc_d = (uint32_t)v;
			else
				cfg.ctc_n = (uint32_t)v;
			break;
		}
		case 'F':
			if ((format = mt_events_format_parse(optarg)) < 0) {
				fprintf(stderr, PROG ": bad --output-format '%s': expected text or binary\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " (mt) " MT_VERSION "\n"); return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	if ((nimages || npages) && !ptpath) {
		fprintf(stderr, PROG ": --image and --pages need --pt\n");
		return EXIT_USAGE;
	}
	if (ptpath && optind < argc) {
		fprintf(stderr, PROG ": too many arguments\nTry '" PROG " --help' for more information.\n");
		return EXIT_USAGE;
	}
	/* several FILEs: the pieces of one recording (perf record
	 * --switch-output), each a perf.data file */
	int npieces = argc - optind;
	if (npieces > 1) {
		for (int i = optind; i < argc; i++) {
			struct stat pst;
			if (!strcmp(argv[i], "-") || (stat(argv[i], &pst) == 0 && !S_ISREG(pst.st_mode))) {
				fprintf(stderr, PROG ": %s: several FILEs are the pieces of one recording, each a perf.data "
					"file (not standard input, a directory or another kind of file)\n", argv[i]);
				return EXIT_USAGE;
			}
		}
	}
	/* no FILE and a terminal on stdin: ./perf.data, as perf script reads it */
	const char *in = optind < argc ? argv[optind] : ptpath || !isatty(0) ? "-" : "perf.data";
	po.symfs = symfs;
	/* perf record --kcore writes a directory: DIR/data and DIR/kcore_dir */
	char data_path[4096], kcore_path[4096];
	struct stat dst;
	if (strcmp(in, "-") && stat(in, &dst) == 0 && S_ISDIR(dst.st_mode)) {
		snprintf(data_path, sizeof data_path, "%s/data", in);
		snprintf(kcore_path, sizeof kcore_path, "%s/kcore_dir", in);
		if (stat(data_path, &dst) < 0) {
			fprintf(stderr, PROG ": %s: is a directory without a 'data' file, not a perf.data directory\n",
				in);
			return EXIT_DATA;
		}
		in = data_path;
		if (!po.kcore_dir && !po.vmlinux && stat(kcore_path, &dst) == 0 && S_ISDIR(dst.st_mode))
			po.kcore_dir = kcore_path;
	}
	if (po.kcore_dir && po.vmlinux) {
		fprintf(stderr, PROG ": --vmlinux and --kcore exclude each other\n");
		return EXIT_USAGE;
	}

	struct mt_err err = {0};
	struct mt_ptdec_stats st = {0};
	int status = 0;
	struct mt_perfdata pd = {0};

	/* --symfs naming an archive: objects from it alone */
	static struct mt_bundle symfs_bundle, in_bundle;
	char bundle_meta[4200] = "";
	if (symfs && mt_bundle_is_archive_file(symfs)) {
		if (mt_bundle_open(&symfs_bundle, symfs, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			return EXIT_DATA;
		}
		mt_bundle_close_at_exit(&symfs_bundle);
		po.symfs = symfs_bundle.root;
		po.buildid_dir = symfs_bundle.buildid_dir;
		bundle_meta_line(bundle_meta, sizeof bundle_meta, symfs);
	}

	/* Open the input before writing anything: a file that cannot be read
	 * leaves no output at all, not even the version line. The first bytes
	 * tell a perf.data from a bundle and from perf script text. */
	int in_fd = -1;
	char head[512], in_name[4200];
	snprintf(in_name, sizeof in_name, "%s", strcmp(in, "-") ? in : "standard input");
	size_t head_len = 0;
	if (npieces > 1) {
		if (input == IN_PERF_SCRIPT) {
			fprintf(stderr, PROG ": several FILEs are the pieces of one perf.data recording, not perf script "
				"text\n");
			return EXIT_USAGE;
		}
		if (mt_perfdata_open_pieces(&pd, (const char *const *)argv + optind, (size_t)npieces, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			return EXIT_DATA;
		}
		input = IN_PERF_DATA;
	} else if (!ptpath) {
		if (open_peek(in, &in_fd, head, sizeof head, &head_len))
			return EXIT_DATA;
		if (input != IN_PERF_SCRIPT && mt_bundle_sniff(head, head_len)) {
			if (symfs) {
				fprintf(stderr, PROG ": %s is a bundle, with its own objects: --symfs does not apply\n", in);
				close(in_fd);
				return EXIT_USAGE;
			}
			const char *name = strcmp(in, "-") ? in : "standard input";
			if (mt_bundle_open_fd(&in_bundle, in_fd, name, head, head_len, &err)) {
				fprintf(stderr, PROG ": %s\n", err.msg);
				return EXIT_DATA;
			}
			mt_bundle_close_at_exit(&in_bundle);
			if (in_bundle.perf_archive) {
				fprintf(stderr, PROG ": %s is a perf archive (objects, no perf.data): give the perf.data, "
					"and --symfs=%s\n", name, name);
				return EXIT_DATA;
			}
			if (strcmp(in, "-"))
				bundle_meta_line(bundle_meta, sizeof bundle_meta, in);
			snprintf(in_name, sizeof in_name, "%s:perf.data", name);
			in = in_bundle.perf_data;
			po.symfs = in_bundle.root;
			po.buildid_dir = in_bundle.buildid_dir;
			if (!po.kcore_dir && !po.vmlinux && in_bundle.kcore_dir[0])
				po.kcore_dir = in_bundle.kcore_dir;
			if (manifest_hits(in_bundle.manifest, &po))
				return EXIT_DATA;
			if (open_peek(in, &in_fd, head, sizeof head, &head_len))
				return EXIT_DATA;
		}
		if (input == IN_AUTO)
			input = head_len >= 8 && !memcmp(head, "PERFILE2", 8) ? IN_PERF_DATA
				: mt_pscript_detect(head, head_len) ? IN_PERF_SCRIPT : IN_PERF_DATA;
	}
	if (info) {
		if (ptpath) {
			fprintf(stderr, PROG ": --info describes a perf.data, not --pt input\n");
			return EXIT_USAGE;
		}
		if ((npieces < 2 && mt_perfdata_open_fd(&pd, in_fd, in_name, (const uint8_t *)head, head_len, &err)) ||
		    mt_ptperf_info(&pd, stdout, &err)) {
			fprintf(stderr, PROG ": %s\n", err.msg);
			status = EXIT_DATA;
		} else if (pd.truncated) {
			status = EXIT_DATA;
		}
		mt_perfdata_close(&pd);
		if (fflush(stdout)) {
			fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
			status = EXIT_DATA;
		}
		return status;
	}
	if (input == IN_PERF_SCRIPT)
		return decode_script(in_fd, in_name, head, head_len, out, format, stats);
	if (!ptpath && npieces < 2 && mt_perfdata_open_fd(&pd, in_fd, in_name, (const uint8_t *)head, head_len, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		mt_perfdata_close(&pd);
		return EXIT_DATA;
	}
	struct mt_outfile of;
	if (mt_outfile_open(&of, out, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_DATA;
	}
	struct mt_events_writer w;
	if (mt_events_writer_init_format(&w, of.f, (enum mt_events_format)format)) {
		fprintf(stderr, PROG ": out of memory\n");
		mt_outfile_abort(&of);
		return EXIT_DATA;
	}
	if (bundle_meta[0])
		mt_events_write_meta(&w, bundle_meta);
	struct bar bar = {0};
	if (progress == 1 || (progress < 0 && isatty(2))) {
		po.progress = show_progress;
		po.progress_ctx = &bar;
	}
	int rc;
	bool damaged = false;
	if (ptpath) {
		cfg.stop_at_end = true; /* a raw trace as libipt's ptxed reads it */
		rc = decode_raw(ptpath, images, nimages, pages, npages, &cfg, &w, &st, &err);
	} else {
		rc = mt_ptperf_decode(&pd, &po, &w, &st, &damaged, &err);
		mt_perfdata_close(&pd);
	}
	if (bar.shown)
		fputs("\r\033[K", stderr); /* the bar goes; messages follow on a clean line */
	uint64_t nevents = 0;
	for (int k = 0; k < MT_EV_KIND_COUNT; k++) /* a thread's switches alone are no result */
		nevents += k == MT_EV_SWITCH_OUT || k == MT_EV_SWITCH_IN ? 0 : st.by_kind[k];
	/* perf report says "no samples" and exits 0; an empty result is not a
	 * success here (mt-guarantees(7)) */
	bool empty = !rc && !nevents && !st.insns && !st.pt_bytes;
	char emsg[4200] = "";
	if (rc)
		snprintf(emsg, sizeof emsg, "%.4000s", err.msg);
	else if (empty)
		snprintf(emsg, sizeof emsg, "%.4000s: nothing recorded: no trace data and no samples",
			 ptpath ? ptpath : in_name);
	/* the stream says it stops short: a reader downstream (a pipe cannot
	 * be taken back) exits non-zero instead of writing a complete-looking
	 * result */
	if (emsg[0])
		mt_events_write_error(&w, emsg);
	struct mt_err werr = {0};
	int wrc = mt_events_writer_finish(&w, &werr);
	if (emsg[0]) {
		fprintf(stderr, PROG ": %s\n", emsg);
		status = EXIT_DATA;
	}
	if (wrc) {
		fprintf(stderr, PROG ": %s\n", werr.msg);
		status = EXIT_DATA;
		empty = false;
	}
	if (damaged)
		status = EXIT_DATA;
	if (status && (rc || wrc || empty)) {
		mt_outfile_abort(&of);
	} else if (mt_outfile_commit(&of, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		status = EXIT_DATA;
	} else {
		mt_outfile_say_replaced(&of, PROG, out);
	}
	if (stats)
		print_stats(&st);
	return status;
}
