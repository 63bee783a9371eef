/* mt-symbolize: add function names to the addresses of an event stream. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/infile.h"
#include "bundle/bundle.h"
#include "stream/events.h"
#include "stream/filterio.h"
#include "base/strtab.h"
#include "names/symbolize.h"
#include "names/framecols.h"
#include "names/symcols.h"
#include "base/version.h"

#define PROG "mt-symbolize"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... [FILE]\n"
"Read an mt event stream (mt-events(5), text or binary; FILE '-' or none is\n"
"standard input) and add, for the from and to address of every event, the\n"
"function, the offset in it and the object: from_sym, from_off, from_dso,\n"
"to_sym, to_off, to_dso. Symbols come from the ELF files named by the\n"
"stream's mmap metadata. Columns already present are kept.\n"
"\n"
"  -o, --output=FILE              write to FILE (atomically) instead of stdout\n"
"      --symfs=DIR|BUNDLE         look up objects under DIR, or only in a bundle\n"
"                                 (mt-bundle(5)) or a perf archive tarball\n"
"      --vmlinux=FILE             kernel symbols from this ELF\n"
"      --kallsyms=FILE            kernel symbols from this /proc/kallsyms copy\n"
"                                 (default: /proc/kallsyms when it shows addresses)\n"
"      --perf-map=FILE            JIT symbols from this perf map (default: the\n"
"                                 process's /tmp/perf-PID.map when it exists)\n"
"      --perf-map-dir=DIR         look for perf-PID.map files in DIR (default /tmp)\n"
"      --no-demangle              keep C++, Rust and OCaml names mangled\n"
"      --inlines                  also from_inline/to_inline: the inlined functions\n"
"                                 at the address, innermost first, ';'-separated;\n"
"                                 in a stack sample a frame of its own for each,\n"
"                                 as perf names it: 0xIP NAME (inlined) (DSO)\n"
"      --lines                    also from_file/from_line and to_file/to_line,\n"
"                                 and after each sample frame its frame_src=FILE:LINE\n"
"                                 (DWARF line tables, separate debug info too;\n"
"                                 a jitdump's DEBUG_INFO records for JIT code)\n"
"      --output-format=text|binary  (default: the input's)\n"
"  -h, --help                     show this help and exit\n"
"  -V, --version                  show the version and exit\n"
"\n"
"A stream decoded from a bundle names it (# bundle): without --symfs, objects,\n"
"kallsyms and perf maps then come from that bundle, never from this host.\n"
"\n"
"DEBUGINFOD_URLS set: separate debug info not found locally is asked of those\n"
"debuginfod servers, by build-id.\n"
"\n"
"Exit status: 0 done (objects not found only warn); 1 unreadable or malformed\n"
"input (what came before is still written) or a write error; 2 usage.\n");
}

static void warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": %s\n", msg);
}

/* Whether a stack's outermost frame is where a thread begins ("0xIP
 * NAME+0xOFF (DSO)"): a stack that does not reach one was cut short. */
static bool is_root_frame(const char *frame)
{
	static const char *const roots[] = {"_start", "__libc_start_main", "__libc_start_call_main", "start_thread",
					    "clone", "clone3", "__clone", "__clone3", "__GI___clone3",
					    "_dl_start_user", "_dl_start", "thread_start", "runtime.goexit",
					    "runtime.rt0_go", "ret_from_fork", "ret_from_fork_asm"};
	const char *name = strchr(frame, ' ');
	if (!name++)
		return false;
	size_t l = strcspn(name, "+ ");
	for (size_t i = 0; i < sizeof roots / sizeof *roots; i++)
		if (strlen(roots[i]) == l && !strncmp(name, roots[i], l))
			return true;
	return false;
}

/* A callchain frame as mt-pt2events writes it: "0xIP", nothing more. */
static bool is_bare_frame(const struct mt_kv *kv)
{
	return kv->key[0] == 'f' && !strcmp(kv->key, "frame") && kv->val && !strchr(kv->val, ' ');
}

/* A branch stack entry as mt-pt2events writes it: "0xFROM/0xTO/...". */
static bool is_bare_branch(const struct mt_kv *kv)
{
	return kv->key[0] == 'b' && !strcmp(kv->key, "branch") && kv->val && !strncmp(kv->val, "0x", 2);
}

/* Names for the branch entries of an event: "FROM+0xOFF/TO+0xOFF" as perf
 * script -F brstacksym names each end ([unknown] where nothing does), in
 * one buffer reused from event to event. */
struct branch_names {
	char *buf;
	size_t len, cap;
	size_t at[MT_EVENT_MAX_EXTRA];
	unsigned n;
};

static void branch_end_name(struct branch_names *b, struct mt_sym *sym, uint32_t pid, uint64_t addr)
{
	struct mt_sym_result r;
	mt_sym_lookup(sym, pid, addr, &r);
	char off[24] = "";
	if (r.name)
		snprintf(off, sizeof off, "+0x%" PRIx64, r.off);
	const char *name = r.name ? r.name : "[unknown]";
	size_t need = strlen(name) + strlen(off) + 2;
	if (!mt_grow((void **)&b->buf, &b->cap, b->len + need, 1))
		return;
	b->len += (size_t)snprintf(b->buf + b->len, need, "%s%s", name, off);
}

/* Adds the names of branch entry kv (pid's addresses); false: out of memory. */
static bool branch_name(struct branch_names *b, struct mt_sym *sym, uint32_t pid, const char *val)
{
	char *end;
	uint64_t from = strtoull(val, &end, 16), to = *end == '/' ? strtoull(end + 1, NULL, 16) : 0;
	size_t start = b->len;
	branch_end_name(b, sym, pid, from);
	if (mt_grow((void **)&b->buf, &b->cap, b->len + 2, 1))
		b->buf[b->len++] = '/';
	branch_end_name(b, sym, pid, to);
	if (!mt_grow((void **)&b->buf, &b->cap, b->len + 1, 1))
		return false;
	b->buf[b->len++] = '\0';
	b->at[b->n++] = start;
	return true;
}

static bool has_key(const struct mt_event *ev, const char *key)
{
	for (unsigned i = 0; i < ev->nextra; i++)
		if (ev->extra[i].key[0] == key[0] && !strcmp(ev->extra[i].key, key))
			return true;
	return false;
}

/* Objects, kernel symbols and perf maps from a bundle only. */
static int use_bundle(struct mt_sym *sym, struct mt_bundle *b, const char *path, bool from_stream,
		      bool kernel_given, bool perf_map_given)
{
	struct mt_err err = {0};
	/* a path a stream names must be a regular file (a FIFO there would
	 * hang); one given by the user may be a pipe */
	int fd = from_stream ? mt_infile_open(path, 0, &err) : -1;
	if ((from_stream && fd < 0) || mt_bundle_open_objects(b, fd, path, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return -1;
	}
	mt_bundle_close_at_exit(b);
	mt_sym_set_symfs(sym, b->root);
	mt_sym_set_buildid_dir(sym, b->buildid_dir);
	if (!kernel_given)
		mt_sym_set_kernel(sym, NULL, b->kallsyms[0] ? b->kallsyms : NULL);
	if (!perf_map_given)
		mt_sym_set_perf_maps(sym, b->perf_maps[0] ? b->perf_maps : "/nonexistent", NULL);
	return 0;
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"symfs", required_argument, NULL, 's'},
		{"vmlinux", required_argument, NULL, 'k'},
		{"kallsyms", required_argument, NULL, 'K'},
		{"lines", no_argument, NULL, 'L'},
		{"inlines", no_argument, NULL, 'i'},
		{"perf-map", required_argument, NULL, 'm'},
		{"perf-map-dir", required_argument, NULL, 'M'},
		{"no-demangle", no_argument, NULL, 'D'},
		{"output-format", required_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	const char *out = "-", *symfs = NULL, *vmlinux = NULL, *kallsyms = NULL;
	int format = -1, c;
	bool lines = false, inlines = false, demangle = true;
	const char *perf_map = NULL, *perf_map_dir = "/tmp";
	bool perf_map_given = false;
	while ((c = getopt_long(argc, argv, "o:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 's': symfs = optarg; break;
		case 'k': vmlinux = optarg; break;
		case 'K': kallsyms = optarg; break;
		case 'L': lines = true; break;
		case 'i': inlines = true; break;
		case 'm': perf_map = optarg; perf_map_given = true; break;
		case 'M': perf_map_dir = optarg; perf_map_given = true; break;
		case 'D': demangle = false; break;
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
	if (optind + 1 < argc) {
		fprintf(stderr, PROG ": too many arguments\nTry '" PROG " --help' for more information.\n");
		return EXIT_USAGE;
	}
	bool kernel_given = vmlinux || kallsyms;
	bool symfs_bundle = symfs && mt_bundle_is_archive_file(symfs);
	if (!kernel_given && !symfs_bundle && mt_kallsyms_usable("/proc/kallsyms"))
		kallsyms = "/proc/kallsyms";
	const char *in = optind < argc ? argv[optind] : "-";
	struct mt_filterio io;
	int open_rc = mt_filterio_open(&io, PROG, in, out);
	if (open_rc)
		return open_rc;
	struct mt_err err = {0};
	struct mt_events_writer w;
	struct mt_sym *sym = mt_sym_new(symfs_bundle ? NULL : symfs, warn, NULL);
	struct mt_bundle bundle = {0};
	bool bundle_open = false, bundle_failed = false;
	if (sym) {
		mt_sym_set_kernel(sym, vmlinux, kallsyms);
		mt_sym_set_lines(sym, lines);
		mt_sym_set_inlines(sym, inlines);
		mt_sym_set_demangle(sym, demangle);
		mt_sym_set_perf_maps(sym, perf_map_dir, perf_map);
		if (symfs_bundle) {
			if (use_bundle(sym, &bundle, symfs, false, kernel_given, perf_map_given)) {
				mt_sym_free(sym);
				return mt_filterio_close(&io, EXIT_DATA, true);
			}
			bundle_open = true;
		}
	}
	if (!sym || mt_events_writer_init_format(&w, io.out.f, format < 0 ? io.reader.format
									  : (enum mt_events_format)format)) {
		fprintf(stderr, PROG ": out of memory\n");
		mt_sym_free(sym);
		return mt_filterio_close(&io, EXIT_DATA, true);
	}
	static struct mt_kv kv[MT_EVENT_MAX_EXTRA];
	static struct mt_kv framed[MT_EVENT_MAX_EXTRA];
	static struct branch_names bnames;
	static const char branch_pending[] = ""; /* a branch_sym column whose text is not yet placed */
	io.reader.keep_raw = true; /* events pass on as the bytes they came in */
	struct mt_symcols *cols = mt_symcols_new(sym, w.format == MT_EVENTS_TEXT);
	struct mt_framecols *fcols = mt_framecols_new(sym, inlines, lines);
	if (!cols || !fcols) {
		mt_symcols_free(cols);
		mt_framecols_free(fcols);
		fprintf(stderr, PROG ": out of memory\n");
		mt_sym_free(sym);
		return mt_filterio_close(&io, EXIT_DATA, true);
	}
	struct mt_event ev;
	const char *meta;
	int rc, status = 0;
	/* stacks from perf's frame-pointer walk that stop short of where a
	 * thread begins: most of them, and the program was built without
	 * frame pointers (said once, at the end) */
	bool fp_callchains = false;
	uint64_t stacks = 0, short_stacks = 0, at_zero = 0;
	const bool text_out = w.format == MT_EVENTS_TEXT; /* lines kept in the reader's memo (text in, text out) */
	while ((rc = mt_events_read(&io.reader, &ev, &meta, &err)) > 0) {
		if (rc == MT_EVENTS_META) {
			if (!strncmp(meta, "bundle\t", 7) && !symfs && !bundle_open) {
				if (use_bundle(sym, &bundle, meta + 7, true, kernel_given, perf_map_given)) {
					fprintf(stderr, PROG ": the stream was decoded from that bundle; "
						"give --symfs to symbolize from elsewhere\n");
					status = EXIT_DATA;
					bundle_failed = true;
					break;
				}
				bundle_open = true;
			}
			if (!strncmp(meta, "fact\tcallchains\tfp:", 19))
				fp_callchains = true;
			mt_sym_add_mmap_meta(sym, meta);
			mt_symcols_forget(cols); /* what an address names may have changed */
			mt_framecols_forget(fcols);
			if (strncmp(meta, "mt-events ", 10)) /* the writer wrote its own version line */
				mt_events_write_meta(&w, meta);
			continue;
		}
		/* JIT code loaded by this time names its addresses from now on */
		if (ev.has_time && mt_sym_advance(sym, ev.time)) {
			mt_symcols_forget(cols);
			mt_framecols_forget(fcols);
		}
		/* a line whose bytes after the time came before, since the last
		 * mapping: its time and what was written for it then */
		uint64_t gen = text_out ? mt_symcols_generation(cols) : 0;
		if (text_out && mt_events_write_kept(&w, &ev, &io.reader.raw, gen))
			continue;
		unsigned n = ev.nextra < MT_EVENT_MAX_EXTRA - 10 ? ev.nextra : MT_EVENT_MAX_EXTRA - 10;
		struct mt_events_cols added[2];
		unsigned nadded = 0;
		if (ev.from && (!ev.nextra || (!has_key(&ev, "from_sym") && !has_key(&ev, "from_dso"))))
			added[nadded++] = *mt_symcols_get(cols, ev.pid, ev.from, MT_SYMCOLS_FROM);
		if (ev.to && (!ev.nextra || (!has_key(&ev, "to_sym") && !has_key(&ev, "to_dso"))))
			added[nadded++] = *mt_symcols_get(cols, ev.pid, ev.to, MT_SYMCOLS_TO);
		/* the common event: its own columns, then the groups, each
		 * encoded once by the writer */
		bool framed_event = false;
		for (unsigned k = 0; k < n && !framed_event; k++)
			framed_event = is_bare_frame(&ev.extra[k]) || (is_bare_branch(&ev.extra[k]) && !has_key(&ev, "branch_sym"));
		if (!framed_event && n == ev.nextra) {
			if (text_out)
				mt_events_write_cols_kept(&w, &ev, &io.reader.raw, added, nadded, gen);
			else
				mt_events_write_cols(&w, &ev, &io.reader.raw, added, nadded);
			continue;
		}
		memcpy(kv, ev.extra, n * sizeof *kv);
		for (unsigned g = 0; g < nadded; g++)
			for (unsigned i = 0; i < added[g].n; i++)
				kv[n++] = added[g].kv[i];
		/* callchain frames with an address only: "0xIP NAME+0xOFF (DSO)", as
		 * perf prints them; with --lines each followed by its frame_src */
		unsigned nframes = 0, last_frame = 0, first_frame = 0, nbranches = 0;
		for (unsigned k = 0; k < ev.nextra && k < n; k++) { /* the input's columns: ours are no frames */
			if (is_bare_frame(&kv[k])) {
				if (!nframes++)
					first_frame = k;
				last_frame = k;
			}
			nbranches += is_bare_branch(&kv[k]);
		}
		if (nbranches && has_key(&ev, "branch_sym"))
			nbranches = 0; /* named already */
		if (nframes || nbranches) {
			/* each frame as perf prints it, with the functions inlined
			 * there (--inlines) and its line (--lines): made once per
			 * address (mt_framecols) */
			unsigned m = 0;
			mt_framecols_next_event(fcols);
			bnames.len = bnames.n = 0;
			for (unsigned k = 0; k < n && m < MT_EVENT_MAX_EXTRA; k++) {
				if (k < ev.nextra && nbranches && is_bare_branch(&kv[k])) {
					/* the entry, then its names (pointed at once the buffer stops moving) */
					framed[m++] = kv[k];
					if (m < MT_EVENT_MAX_EXTRA && branch_name(&bnames, sym, ev.pid, kv[k].val))
						framed[m++] = (struct mt_kv){"branch_sym", branch_pending};
					continue;
				}
				if (k >= ev.nextra || !is_bare_frame(&kv[k])) {
					framed[m++] = kv[k];
					continue;
				}
				unsigned nc;
				const struct mt_kv *fc = mt_framecols_get(fcols, ev.pid, strtoull(kv[k].val, NULL, 16),
									  k != last_frame, &nc);
				if (!fc) {
					fprintf(stderr, PROG ": out of memory\n");
					status = EXIT_DATA;
					break;
				}
				if (k == first_frame) {
					stacks++;
					if (!is_root_frame(fc[0].val)) {
						short_stacks++;
						at_zero += strncmp(fc[0].val, "0x0 ", 4) == 0 || strstr(fc[0].val, " [unknown] (");
					}
				}
				for (unsigned i = 0; i < nc && m < MT_EVENT_MAX_EXTRA - (n - k - 1); i++)
					framed[m++] = fc[i];
			}
			for (unsigned k = 0, b = 0; k < m; k++)
				if (framed[k].val == branch_pending && b < bnames.n)
					framed[k].val = bnames.buf + bnames.at[b++];
			n = m;
		}
		ev.extra = nframes || nbranches ? framed : kv;
		ev.nextra = n;
		ev.strings_epoch = 0; /* its strings are ours, in buffers reused */
		ev.extra_id = 0;
		mt_events_write(&w, &ev);
	}
	if (rc < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		status = EXIT_DATA;
		mt_events_write_error(&w, err.msg); /* the output says it stops short */
	}
	if (fp_callchains && stacks >= 20 && short_stacks * 2 > stacks)
		fprintf(stderr, PROG ": warning: %" PRIu64 " of %" PRIu64 " stacks (%.0f%%) stop short of where a thread "
			"begins (%" PRIu64 " at address 0 or in unknown code): perf's frame-pointer walk (--call-graph=fp) "
			"cannot follow code built without frame pointers; record with mt-record --callgraph=dwarf "
			"(perf record --call-graph=dwarf)\n", short_stacks, stacks,
			100.0 * (double)short_stacks / (double)stacks, at_zero);
	struct mt_err werr = {0};
	bool wfail = mt_events_writer_finish(&w, &werr) != 0;
	if (wfail) {
		fprintf(stderr, PROG ": %s\n", werr.msg);
		status = EXIT_DATA;
	}
	mt_symcols_free(cols);
	mt_framecols_free(fcols);
	mt_sym_free(sym);
	free(bnames.buf);
	if (bundle_open)
		mt_bundle_close(&bundle);
	return mt_filterio_close(&io, status, wfail || bundle_failed);
}
