/* mt-synth: synthesize Intel PT perf.data files, with their ground truth,
 * from a real run of a program under ptrace single-step. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>
#include <gelf.h>

#include "objects/elfsyms.h"
#include "base/infile.h"
#include "base/outfile.h"
#include "base/strtab.h"
#include "synth/runfile.h"
#include "synth/synth.h"
#include "base/version.h"

#define PROG "mt-synth"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... -- COMMAND [ARG]...\n"
"  or:  " PROG " [OPTION]... --from-run=FILE\n"
"Run COMMAND with ASLR off under ptrace single-step, record every user-space\n"
"instruction it executes, and write for each variant DIR/NAME.data (a perf.data\n"
"with that control flow encoded as Intel PT) and DIR/NAME.truth (the true event\n"
"stream, mt-events(5), every taken branch). The kernel variants also write the\n"
"synthetic kernel: DIR/kernel.vmlinux, DIR/kcore.kcore_dir/{kcore,kallsyms}.\n"
"\n"
"  -o, --output-dir=DIR     where to write (default: .)\n"
"      --variants=LIST      comma-separated variant names, or 'all' (default: plain;\n"
"                           all: every Intel PT variant, not lbr, brstack\n"
"                           or brstack-notype)\n"
"      --list-variants      print the variant names and exit\n"
"  -q, --quiet              send COMMAND's standard output to /dev/null\n"
"      --hit=SYMBOL|0xADDR  also record an execute breakpoint there, as\n"
"                           perf record -e mem:ADDR:x does: its samples are the\n"
"                           hits (magic-trace's trigger), sample events in the truth\n"
"      --repeat=N           large traces: the run's PT written N times, as\n"
"                           independent buffers (per-thread, timeless variants\n"
"                           such as plain; or per-cpu(-mtc), see --cpus); each\n"
"                           decodes to the one-run truth\n"
"      --size=BYTES[K|M|G]  as --repeat, with N making at least BYTES of PT\n"
"      --threads=T          (with --repeat) the buffers spread round robin over\n"
"                           T threads (tids PID..PID+T-1), one queue each\n"
"      --loop               (with --repeat) repeat one call of the program's main,\n"
"                           from the call to its return, each copy ended as an\n"
"                           interrupt ends it: a long run of the program's work in\n"
"                           a loop (without: the whole run, from _start to exit,\n"
"                           so copies on one thread pile up a staircase of\n"
"                           _starts: the deep-stack case)\n"
"      --contiguous         (with --repeat) a thread's buffers follow one another\n"
"                           in its AUX area: one long segment, as perf records\n"
"                           a long run (decoded in pieces cut at PSBs)\n"
"      --cpus=C             (with --repeat, per-cpu or per-cpu-mtc) the copies\n"
"                           spread round robin over C CPUs (perf record -a):\n"
"                           copy J on CPU J mod C as thread J mod T (T:\n"
"                           --threads, at least C), moved in time by J/C times\n"
"                           cpu_period (printed), the CPU-wide switches around it\n"
"      --save-run=FILE      also save the recorded run to FILE (the program's\n"
"                           executable mappings, every step, its threads)\n"
"      --from-run=FILE      run nothing: write the variants of a run saved by\n"
"                           --save-run (single-stepping takes seconds; a saved\n"
"                           run gives any number of traces of it at once)\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"One line per variant goes to standard output: NAME insns=N pt_bytes=N psbs=N\n"
"first_insn=N (and hits=N, cpu_period=N where they apply).\n"
"Exit status: 0 success; 1 the run or a file failed; 2 usage.\n");
}

/* One file of the kernel image, written atomically. */
static int write_kernel_file(const char *path, int what)
{
	struct mt_err err = {0};
	struct mt_outfile o;
	if (mt_outfile_open(&o, path, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	int rc = what == 2 ? mt_synth_write_kallsyms(o.f, &err) : mt_synth_write_kernel_elf(o.f, what == 1, &err);
	if (rc || mt_outfile_commit(&o, &err)) {
		fprintf(stderr, PROG ": %s: %s\n", path, err.msg);
		mt_outfile_abort(&o);
		return 1;
	}
	return 0;
}

/* The kernel variants' code image: NAME.vmlinux, or NAME.kcore_dir/ with
 * kcore and kallsyms as perf record --kcore saves them. */
static int write_kernel_image(const struct mt_synth_variant *v, const char *dir)
{
	char path[4096];
	if (!v->kcore) {
		snprintf(path, sizeof path, "%s/%s.vmlinux", dir, v->name);
		return write_kernel_file(path, 0);
	}
	snprintf(path, sizeof path, "%s/%s.kcore_dir", dir, v->name);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return 1;
	}
	snprintf(path, sizeof path, "%s/%s.kcore_dir/kcore", dir, v->name);
	if (write_kernel_file(path, 1))
		return 1;
	snprintf(path, sizeof path, "%s/%s.kcore_dir/kallsyms", dir, v->name);
	return write_kernel_file(path, 2);
}

struct find_sym { const char *name; uint64_t value; bool found; };

static void match_sym(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct find_sym *f = ctx;
	if (!f->found && !strcmp(name, f->name)) {
		f->value = sym->st_value;
		f->found = true;
	}
}

/* The run-time address of a function symbol of one of the run's objects
 * (its value plus the load bias of the mapping). 0 when none has it. */
static uint64_t resolve_symbol(const struct mt_synth_run *run, const char *name)
{
	elf_version(EV_CURRENT);
	for (size_t i = 0; i < run->nmaps; i++) {
		const struct mt_synth_map *m = &run->maps[i];
		if (m->path[0] != '/')
			continue;
		int fd = open(m->path, O_RDONLY);
		if (fd < 0)
			continue;
		Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
		struct find_sym f = {name, 0, false};
		uint64_t bias = 0;
		if (elf && elf_kind(elf) == ELF_K_ELF && mt_elf_load_bias(elf, m->start, m->pgoff, &bias))
			mt_elf_for_each_func(elf, false, match_sym, &f);
		if (elf)
			elf_end(elf);
		close(fd);
		if (f.found)
			return f.value + bias;
	}
	return 0;
}

/* The run saved to path, atomically. */
static int write_run(const char *path, const struct mt_synth_run *run)
{
	struct mt_err err = {0};
	struct mt_outfile o;
	if (mt_outfile_open(&o, path, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	if (mt_synth_run_save(run, o.f, &err) || mt_outfile_commit(&o, &err)) {
		fprintf(stderr, PROG ": %s: %s\n", path, err.msg);
		mt_outfile_abort(&o);
		return 1;
	}
	return 0;
}

/* A run saved by --save-run, read from path (a regular file). */
static int load_run(const char *path, struct mt_synth_run *run)
{
	memset(run, 0, sizeof *run);
	struct mt_err err = {0};
	FILE *f = mt_infile_fopen(path, 0, &err);
	struct stat st;
	if (!f || fstat(fileno(f), &st) < 0) {
		fprintf(stderr, PROG ": %s\n", f ? strerror(errno) : err.msg);
		if (f)
			fclose(f);
		return 1;
	}
	int rc = mt_synth_run_load(f, (uint64_t)st.st_size, run, &err);
	fclose(f);
	if (rc)
		fprintf(stderr, PROG ": %s: %s\n", path, err.msg);
	return rc ? 1 : 0;
}

static int write_variant(const struct mt_synth_run *run, const struct mt_synth_variant *v,
			 const struct mt_synth_opts *so, const char *dir)
{
	char dpath[4096], tpath[4096];
	snprintf(dpath, sizeof dpath, "%s/%s.data", dir, v->name);
	snprintf(tpath, sizeof tpath, "%s/%s.truth", dir, v->name);
	struct mt_err err = {0};
	struct mt_outfile od, ot;
	if (mt_outfile_open(&od, dpath, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	if (mt_outfile_open(&ot, tpath, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		mt_outfile_abort(&od);
		return 1;
	}
	struct mt_synth_result res;
	if (mt_synth_write(run, v, so, od.f, ot.f, &res, &err) || mt_outfile_commit(&od, &err) ||
	    mt_outfile_commit(&ot, &err)) {
		fprintf(stderr, PROG ": %s: %s\n", v->name, err.msg);
		mt_outfile_abort(&od);
		mt_outfile_abort(&ot);
		return 1;
	}
	if (v->kernel && write_kernel_image(v, dir))
		return 1;
	printf("%s insns=%" PRIu64 " pt_bytes=%" PRIu64 " psbs=%" PRIu64 " first_insn=%" PRIu64, v->name,
	       res.insns_traced, res.pt_bytes, res.psbs, res.first_insn);
	if (so->hit_ip)
		printf(" hits=%" PRIu64, res.hits);
	if (res.cpu_period)
		printf(" cpu_period=%" PRIu64, res.cpu_period);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	argv[0] = (char *)PROG; /* getopt's messages name the tool, not the path it ran by */
	static const struct option opts[] = {
		{"output-dir", required_argument, NULL, 'o'},
		{"variants", required_argument, NULL, 'v'},
		{"list-variants", no_argument, NULL, 'l'},
		{"quiet", no_argument, NULL, 'q'},
		{"hit", required_argument, NULL, 'H'},
		{"repeat", required_argument, NULL, 'R'},
		{"size", required_argument, NULL, 'Z'},
		{"threads", required_argument, NULL, 'T'},
		{"contiguous", no_argument, NULL, 'C'},
		{"loop", no_argument, NULL, 'L'},
		{"cpus", required_argument, NULL, 'P'},
		{"save-run", required_argument, NULL, 'S'},
		{"from-run", required_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	const char *dir = ".", *variants = "plain", *hit = NULL, *save_run = NULL, *from_run = NULL;
	bool quiet = false;
	uint64_t repeat = 0, size = 0, threads = 0, cpus = 0;
	bool contiguous = false, loop = false;
	int c;
	while ((c = getopt_long(argc, argv, "+o:qhV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'v': variants = optarg; break;
		case 'q': quiet = true; break;
		case 'C': contiguous = true; break;
		case 'L': loop = true; break;
		case 'H': hit = optarg; break;
		case 'S': save_run = optarg; break;
		case 'F': from_run = optarg; break;
		case 'R':
		case 'Z':
		case 'T':
		case 'P': {
			uint64_t *to = c == 'R' ? &repeat : c == 'Z' ? &size : c == 'T' ? &threads : &cpus;
			if (mt_parse_count(optarg, c == 'Z', to) || !*to || ((c == 'T' || c == 'P') && *to > 4096)) {
				fprintf(stderr, PROG ": bad --%s '%s'\n",
					c == 'R' ? "repeat" : c == 'Z' ? "size" : c == 'T' ? "threads" : "cpus", optarg);
				return 2;
			}
			break;
		}
		case 'l':
			for (const struct mt_synth_variant *v = mt_synth_variants; v->name; v++)
				printf("%s\n", v->name);
			return 0;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " (mt) " MT_VERSION "\n"); return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return 2;
		}
	}
	if (optind >= argc && !from_run) {
		fprintf(stderr, PROG ": no command given\nTry '" PROG " --help' for more information.\n");
		return 2;
	}
	if (from_run && (optind < argc || save_run)) {
		fprintf(stderr, PROG ": --from-run runs nothing: no COMMAND%s\nTry '" PROG " --help' for more information.\n",
			save_run ? " and no --save-run" : "");
		return 2;
	}
	/* Validate every variant name before the (slow) run. */
	char *list = strdup(variants);
	if (!list)
		return 1;
	const struct mt_synth_variant *chosen[32];
	size_t nchosen = 0;
	bool all = !strcmp(list, "all");
	if (all) {
		for (const struct mt_synth_variant *v = mt_synth_variants; v->name && nchosen < 32; v++)
			if (!v->lbr) /* 'all': the PT variants */
				chosen[nchosen++] = v;
	} else {
		for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
			const struct mt_synth_variant *v = mt_synth_variant_find(tok);
			if (!v) {
				fprintf(stderr, PROG ": unknown variant '%s' (see --list-variants)\n", tok);
				free(list);
				return 2;
			}
			if (nchosen < 32)
				chosen[nchosen++] = v;
		}
	}
	free(list);
	/* a missing output directory is made (one level, as mkdir would) */
	struct stat st;
	if (stat(dir, &st) < 0 && errno == ENOENT && mkdir(dir, 0755) < 0) {
		fprintf(stderr, PROG ": %s: cannot make the directory: %s\n", dir, strerror(errno));
		return 1;
	}
	if (stat(dir, &st) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, PROG ": %s: not a directory\n", dir);
		return 1;
	}
	struct mt_synth_run run;
	struct mt_err err = {0};
	if (from_run ? load_run(from_run, &run) : mt_synth_record(argv + optind, quiet, &run, &err)) {
		if (!from_run)
			fprintf(stderr, PROG ": %s\n", err.msg);
		mt_synth_run_free(&run);
		return 1;
	}
	if (save_run && write_run(save_run, &run)) {
		mt_synth_run_free(&run);
		return 1;
	}
	fprintf(stderr, PROG ": %s: pid %u, %zu thread%s, %zu instructions (%" PRIu64 " bridged after missed steps, %"
		PRIu64 " REP iterations folded), exit status %d\n", from_run ? from_run : argv[optind], run.pid, run.nthreads,
		run.nthreads == 1 ? "" : "s", run.nips, run.repaired, run.collapsed, run.exit_status);
	struct mt_synth_opts so = {.repeat = repeat, .threads = (unsigned)threads, .contiguous = contiguous, .loop = loop,
				   .cpus = (unsigned)cpus};
	if ((threads || cpus) && !repeat && !size)
		so.repeat = threads > cpus ? threads : cpus;
	if (size) {
		/* one copy's PT size, without writing, sets the count (with
		 * --loop a copy is one call of main: measured as a repeat) */
		struct mt_synth_result one;
		struct mt_synth_opts measure = {.repeat = 2, .loop = true};
		if (mt_synth_write(&run, chosen[0], loop ? &measure : NULL, NULL, NULL, &one, &err) || !one.pt_bytes) {
			fprintf(stderr, PROG ": %s: %s\n", chosen[0]->name, err.msg[0] ? err.msg : "no PT");
			mt_synth_run_free(&run);
			return 1;
		}
		so.repeat = (size + one.pt_bytes - 1) / one.pt_bytes;
	}
	if (hit) {
		char *end;
		so.hit_ip = !strncmp(hit, "0x", 2) ? strtoull(hit, &end, 16) : resolve_symbol(&run, hit);
		if (!so.hit_ip || (!strncmp(hit, "0x", 2) && *end)) {
			fprintf(stderr, PROG ": --hit: no function '%s' in the program's objects\n", hit);
			mt_synth_run_free(&run);
			return 2;
		}
	}
	int status = 0;
	for (size_t i = 0; i < nchosen; i++) {
		if (all && run.nthreads > 1 && !chosen[i]->per_cpu)
			continue; /* only per-cpu variants can hold several threads */
		status |= write_variant(&run, chosen[i], &so, dir);
	}
	mt_synth_run_free(&run);
	if (fflush(stdout) != 0) {
		fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
		status = 1;
	}
	return status;
}
