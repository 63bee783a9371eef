/* symbolize: ELF symbols for stream addresses (see symbolize.h). */
#define _GNU_SOURCE
#include "names/symbolize.h"
#include "objects/elfnotes.h"

#include <errno.h>
#include <fcntl.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/infile.h"
#include "names/demangle.h"
#include "objects/jitdump.h"
#include "objects/debuginfod.h"
#include "objects/elfsyms.h"
#include "objects/kallsyms.h"
#include "stream/events.h"
#include "objects/objfind.h"
#include "base/strtab.h"

struct symbol {
	uint64_t start, end;  /* object addresses (before load bias) */
	const char *name;
	uint8_t bind;
};

/* Symbols being read: names go into one block, referenced by offset until
 * the block stops moving (symbols_done). */
struct symbuf {
	struct symbol *syms;
	size_t n, cap;
	char *strings;
	size_t slen, scap;
	bool oom;
};

static void symbuf_add(struct symbuf *b, uint64_t start, uint64_t end, const char *name, const char *suffix,
		       uint8_t bind)
{
	size_t l = strlen(name) + strlen(suffix) + 1;
	if (b->oom || !mt_grow((void **)&b->strings, &b->scap, b->slen + l, 1) ||
	    !mt_grow((void **)&b->syms, &b->cap, b->n + 1, sizeof *b->syms)) {
		b->oom = true;
		return;
	}
	snprintf(b->strings + b->slen, l, "%s%s", name, suffix);
	b->syms[b->n++] = (struct symbol){start, end, (const char *)(uintptr_t)b->slen, bind};
	b->slen += l;
}

struct object {
	char *path;           /* as the mapping names it */
	char bid[41];
	bool loaded, failed;
	bool kernel;          /* symbols from --vmlinux or --kallsyms, no load bias */
	struct symbol *syms;
	size_t nsyms;
	char *strings;        /* the names, one block */
	/* PT_LOAD segments, to compute a mapping's load bias */
	struct load_seg { uint64_t vaddr, offset, filesz; } *loads;
	size_t nloads;
	char *elf_path, *debug_path; /* as found; debug_path: separate debug info */
	char **demangled;     /* names owned here */
	size_t ndemangled, capdemangled;
	bool dw_tried;
	/* compilation units checked for their DIE depth (inlines_of), sorted
	 * by offset; deep_warned: the one warning said for this object */
	struct cu_depth { uint64_t off; bool shallow; } *cus;
	size_t ncus, capcus;
	bool deep_warned;
	Dwarf *dw;            /* line tables, opened on first use */
	/* page index: pidx[p] = symbols starting below page pidx_lo + p, so a
	 * lookup searches one page's symbols (a binary search over all of them
	 * was a tenth of the time, in cache misses) */
	uint32_t *pidx;
	uint64_t pidx_lo;
	size_t pidx_n;
	int dwfd;
};

/* A process's mapping of an object, in its process's table. */
struct mapping {
	uint32_t pid;
	uint64_t start, len, pgoff;
	uint64_t seq;         /* order added: where mappings overlap the later wins (a new mmap covers the old) */
	uint64_t end_max;     /* the furthest end of the table's mappings up to this one: a backward search stops below it */
	struct object *obj;
	const char *dso;      /* basename-free path as perf prints it */
	bool have_bias;
	uint64_t bias;
};

/* A JIT's perf map (/tmp/perf-PID.map): "START SIZE NAME" lines. */
struct perf_map {
	uint32_t pid;
	char *path;
	struct object obj;    /* its symbols, absolute addresses */
	/* a jitdump: its code loads, and each symbol's load (source lines) */
	struct mt_jitdump jd;
	size_t *code_of;      /* obj.syms[k] is jd.code[code_of[k]] */
	size_t capsyms, capcode;
	/* jd.code's indexes in the order they take effect: by time where the
	 * times are the recording's clock, else as written; [next, npending)
	 * not yet in obj.syms */
	size_t *pending;
	size_t npending, next;
	bool timed;
};

/* A trace hits the same addresses again and again (loops): the last
 * result of each of a few thousand address slots is kept, so a repeated
 * address costs a compare instead of two binary searches. Cleared when
 * mappings or settings change (results are all pointers into the tables,
 * valid as long as mt_sym). Not with inlines on: that result is a buffer.
 * Clearing is a new epoch, not a 256 KB memset: a stream of 100,000 mmap
 * lines cleared it 100,000 times. */
#define MEMO_SLOTS 4096
struct lookup_memo {
	uint64_t addr, off;
	uint32_t pid;
	int line;
	uint32_t epoch;       /* valid while it equals mt_sym's memo_epoch */
	const char *name, *dso, *file;
};

struct pid_maps {
	uint64_t pid;         /* a uint32_t's value: the key mt_count_at_or_below searches */
	struct mapping *v;
	size_t n, cap;
};

struct mt_sym {
	char *symfs;
	char *buildid_dir;          /* set: objects only from there and symfs */
	bool lines, inlines, no_demangle;
	char *perf_map_dir, *perf_map_file;
	struct perf_map *pmaps;
	size_t npmaps, cappmaps;
	/* jitdumps (jit-PID.dump) the processes mapped: their code by name */
	struct perf_map *jits;
	size_t njits, capjits;
	/* the stream's time (mt_sym_advance); JIT loads take effect at theirs
	 * when the recording's clock is theirs (perf record -k mono), as perf
	 * inject --jit maps each load at its time */
	uint64_t now, next_jit_time;
	bool jit_clock, advanced;
	char *vmlinux, *kallsyms;
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	struct object **objs;
	size_t nobjs, capobjs;
	/* each process's mappings, sorted by (start, seq); the tables sorted
	 * by pid: a lookup searches one process's, however many processes a
	 * perf record -a saw (the kernel's are pid -1's) */
	struct pid_maps *procs;
	size_t nprocs, capprocs;
	uint64_t map_seq;
	struct lookup_memo *memo;   /* recent results by address; NULL: none yet */
	uint32_t memo_epoch;        /* of the valid entries; never 0 */
	/* objects by path and build-id: open addressing, a power of two */
	struct object **obj_index;
	size_t obj_index_cap;
	struct mt_debuginfod *dclient; /* when DEBUGINFOD_URLS is set, made on first use */
	char *vdso_copy;            /* this kernel's vDSO, copied once: /proc/self/fd/N of a memfd */
	int vdso_fd;
	bool vdso_tried;
	bool dclient_failed;
};

static void forget_lookups(struct mt_sym *s)
{
	if (s->memo && ++s->memo_epoch == 0) {
		memset(s->memo, 0, MEMO_SLOTS * sizeof *s->memo);
		s->memo_epoch = 1;
	}
}

struct mt_sym *mt_sym_new(const char *symfs, void (*warn)(void *ctx, const char *msg), void *warn_ctx)
{
	struct mt_sym *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->symfs = symfs ? strdup(symfs) : NULL;
	s->warn = warn;
	s->warn_ctx = warn_ctx;
	return s;
}

void mt_sym_free(struct mt_sym *s)
{
	if (!s)
		return;
	mt_debuginfod_end(s->dclient);
	if (s->vdso_copy) {
		close(s->vdso_fd);
		free(s->vdso_copy);
	}
	for (size_t i = 0; i < s->nobjs; i++) {
		free(s->objs[i]->path);
		free(s->objs[i]->syms);
		free(s->objs[i]->strings);
		free(s->objs[i]->loads);
		free(s->objs[i]->elf_path);
		for (size_t k = 0; k < s->objs[i]->ndemangled; k++)
			free(s->objs[i]->demangled[k]);
		free(s->objs[i]->demangled);
		free(s->objs[i]->debug_path);
		free(s->objs[i]->pidx);
		free(s->objs[i]->cus);
		if (s->objs[i]->dw)
			dwarf_end(s->objs[i]->dw);
		if (s->objs[i]->dw_tried && s->objs[i]->dwfd >= 0)
			close(s->objs[i]->dwfd);
		free(s->objs[i]);
	}
	free(s->objs);
	free(s->obj_index);
	for (size_t i = 0; i < s->nprocs; i++)
		free(s->procs[i].v);
	free(s->procs);
	free(s->symfs);
	free(s->buildid_dir);
	free(s->vmlinux);
	free(s->kallsyms);
	for (size_t i = 0; i < s->npmaps; i++) {
		free(s->pmaps[i].path);
		free(s->pmaps[i].obj.syms);
		free(s->pmaps[i].obj.strings);
	}
	free(s->pmaps);
	for (size_t i = 0; i < s->njits; i++) {
		free(s->jits[i].path);
		free(s->jits[i].obj.syms);
		free(s->jits[i].obj.strings);
		mt_jitdump_free(&s->jits[i].jd);
		free(s->jits[i].code_of);
		free(s->jits[i].pending);
	}
	free(s->jits);
	free(s->perf_map_dir);
	free(s->perf_map_file);
	free(s->memo);
	free(s);
}

void mt_sym_set_perf_maps(struct mt_sym *s, const char *dir, const char *file)
{
	forget_lookups(s);
	free(s->perf_map_dir);
	free(s->perf_map_file);
	s->perf_map_dir = dir ? strdup(dir) : NULL;
	s->perf_map_file = file ? strdup(file) : NULL;
}

bool mt_kallsyms_usable(const char *path)
{
	struct mt_err err = {0};
	FILE *f = mt_infile_fopen(path, 0, &err);
	if (!f)
		return false;
	char line[256];
	bool ok = false;
	for (int i = 0; i < 16 && !ok && fgets(line, sizeof line, f); i++)
		ok = strtoull(line, NULL, 16) != 0;
	fclose(f);
	return ok;
}

void mt_sym_set_symfs(struct mt_sym *s, const char *symfs)
{
	forget_lookups(s);
	free(s->symfs);
	s->symfs = symfs ? strdup(symfs) : NULL;
}

void mt_sym_set_buildid_dir(struct mt_sym *s, const char *dir)
{
	forget_lookups(s);
	free(s->buildid_dir);
	s->buildid_dir = dir ? strdup(dir) : NULL;
}

void mt_sym_set_demangle(struct mt_sym *s, bool on)
{
	forget_lookups(s);
	s->no_demangle = !on;
}

void mt_sym_set_inlines(struct mt_sym *s, bool on)
{
	forget_lookups(s);
	s->inlines = on;
}

void mt_sym_set_lines(struct mt_sym *s, bool on)
{
	forget_lookups(s);
	s->lines = on;
}

void mt_sym_set_kernel(struct mt_sym *s, const char *vmlinux, const char *kallsyms)
{
	forget_lookups(s);
	free(s->vmlinux);
	free(s->kallsyms);
	s->vmlinux = vmlinux ? strdup(vmlinux) : NULL;
	s->kallsyms = kallsyms ? strdup(kallsyms) : NULL;
}

static size_t object_hash(const char *path, const char *bid)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const char *p = path; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (const char *p = bid; *p && p < bid + 40; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return (size_t)(h ^ h >> 29);
}

/* The slot of (path, bid) in the index: its object, or the empty slot
 * where it goes. */
static struct object **object_slot(struct mt_sym *s, const char *path, const char *bid)
{
	size_t mask = s->obj_index_cap - 1;
	for (size_t i = object_hash(path, bid) & mask;; i = (i + 1) & mask) {
		struct object *o = s->obj_index[i];
		if (!o || (!strcmp(o->path, path) && !strncmp(o->bid, bid, 40)))
			return &s->obj_index[i];
	}
}

/* Keeps the index at most half full; false when out of memory. */
static bool object_index_room(struct mt_sym *s)
{
	if (2 * (s->nobjs + 1) <= s->obj_index_cap)
		return true;
	size_t ncap = s->obj_index_cap ? 2 * s->obj_index_cap : 256;
	struct object **old = s->obj_index, **ni = calloc(ncap, sizeof *ni);
	if (!ni)
		return false;
	s->obj_index = ni;
	s->obj_index_cap = ncap;
	for (size_t i = 0; i < s->nobjs; i++)
		*object_slot(s, s->objs[i]->path, s->objs[i]->bid) = s->objs[i];
	free(old);
	return true;
}

/* One object per path and build-id, found by hash: a stream of 100,000
 * mappings of distinct files was 100,000 linear searches. */
static struct object *object_of(struct mt_sym *s, const char *path, const char *bid)
{
	if (!object_index_room(s))
		return NULL;
	struct object **slot = object_slot(s, path, bid);
	if (*slot)
		return *slot;
	/* grown by doubling: one element at a time is a copy of all each time
	 * where realloc cannot extend in place (ASan's always copies) */
	if (!mt_grow((void **)&s->objs, &s->capobjs, s->nobjs + 1, sizeof *s->objs))
		return NULL;
	struct object *o = calloc(1, sizeof *o);
	if (!o || !(o->path = strdup(path))) {
		free(o);
		return NULL;
	}
	snprintf(o->bid, sizeof o->bid, "%.40s", bid);
	s->objs[s->nobjs++] = o;
	*slot = o;
	return o;
}

/* The table of pid's mappings; NULL: none (*at: where it would go). */
static struct pid_maps *proc_of(const struct mt_sym *s, uint32_t pid, size_t *at)
{
	size_t n = mt_count_at_or_below(s->procs, s->nprocs, sizeof *s->procs, offsetof(struct pid_maps, pid), pid);
	if (at)
		*at = n;
	return n && s->procs[n - 1].pid == pid ? &s->procs[n - 1] : NULL;
}

/* How many of p's mappings start at or below addr. */
static size_t starts_at_or_below(const struct pid_maps *p, uint64_t addr)
{
	return mt_count_at_or_below(p->v, p->n, sizeof *p->v, offsetof(struct mapping, start), addr);
}

/* Puts m in its process's table, in its place (mappings come mostly in
 * ascending order: a move of the few above it); the end_max of those
 * above follow. */
static bool insert_mapping(struct mt_sym *s, struct mapping m)
{
	size_t pi;
	struct pid_maps *p = proc_of(s, m.pid, &pi);
	if (!p) {
		if (!mt_grow((void **)&s->procs, &s->capprocs, s->nprocs + 1, sizeof *s->procs))
			return false;
		memmove(&s->procs[pi + 1], &s->procs[pi], (s->nprocs - pi) * sizeof *s->procs);
		s->nprocs++;
		p = &s->procs[pi];
		*p = (struct pid_maps){.pid = m.pid};
	}
	if (!mt_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v))
		return false;
	size_t at = starts_at_or_below(p, m.start);
	memmove(&p->v[at + 1], &p->v[at], (p->n - at) * sizeof *p->v);
	p->n++;
	uint64_t end = m.start + m.len < m.start ? UINT64_MAX : m.start + m.len;
	m.end_max = at && p->v[at - 1].end_max > end ? p->v[at - 1].end_max : end;
	p->v[at] = m;
	for (size_t i = at + 1; i < p->n && p->v[i].end_max < m.end_max; i++)
		p->v[i].end_max = m.end_max;
	return true;
}

bool mt_sym_add_mmap_meta(struct mt_sym *s, const char *meta)
{
	struct mt_mmap_meta mm;
	if (!strncmp(meta, "fact\tclock\t", 11))
		s->jit_clock = !strncmp(meta + 11, "monotonic ", 10); /* a jitdump's clock */
	if (!mt_events_parse_mmap(meta, &mm))
		return false;
	const char *path = mm.path;
	struct object *o = object_of(s, path, mm.build_id);
	if (!o)
		return false;
	o->kernel = !strncmp(path, "[kernel.kallsyms]", 17);
	/* a JIT maps its jitdump so that perf records where it is (perf
	 * inject --jit reads it from there): its code is named from it */
	if (mt_jitdump_named(path) && mt_grow((void **)&s->jits, &s->capjits, s->njits + 1, sizeof *s->jits)) {
		struct perf_map *j = &s->jits[s->njits];
		memset(j, 0, sizeof *j);
		j->pid = mm.pid;
		if ((j->path = strdup(path))) {
			s->njits++;
			s->next_jit_time = 0; /* read at the next mt_sym_advance */
		}
	}
	if (!insert_mapping(s, (struct mapping){.pid = mm.pid, .start = mm.start, .len = mm.len, .pgoff = mm.pgoff,
						.seq = s->map_seq++, .obj = o, .dso = o->path}))
		return false;
	forget_lookups(s);
	return true;
}


static size_t underscores(const char *s)
{
	size_t n = 0;
	while (s[n] == '_')
		n++;
	return n;
}

/* Among aliases at one address, perf's choice (choose_best_symbol): a
 * sized one, then not weak, then global, then fewer leading underscores,
 * then the longer name. Negative: x is better. */
static int better(const struct symbol *x, const struct symbol *y)
{
	bool xs = x->end > x->start, ys = y->end > y->start;
	if (xs != ys)
		return xs ? -1 : 1;
	bool xw = x->bind == STB_WEAK, yw = y->bind == STB_WEAK;
	if (xw != yw)
		return xw ? 1 : -1;
	bool xg = x->bind == STB_GLOBAL, yg = y->bind == STB_GLOBAL;
	if (xg != yg)
		return xg ? -1 : 1;
	size_t xu = underscores(x->name), yu = underscores(y->name);
	if (xu != yu)
		return xu < yu ? -1 : 1;
	size_t xl = strlen(x->name), yl = strlen(y->name);
	if (xl != yl)
		return xl > yl ? -1 : 1;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return better(x, y);
}

static void warnf(struct mt_sym *s, const char *fmt, const char *a, const char *b)
{
	if (!s->warn)
		return;
	char msg[4400];
	snprintf(msg, sizeof msg, fmt, a, b);
	s->warn(s->warn_ctx, msg);
}

/* "warning: PATH: N malformed line(s) skipped", when n is not 0. */
static void warn_malformed(struct mt_sym *s, const char *path, size_t n)
{
	char count[32];
	snprintf(count, sizeof count, "%zu", n);
	if (n)
		warnf(s, "warning: %s: %s malformed line(s) skipped", path, count);
}

/* The relocation of a PLT entry's GOT slot: entry bytes p[n] at address a
 * jump through it (jmp *SLOT(%rip), after an endbr64 and a bnd prefix
 * where built so); *slot gets it. False when p holds no such jump. */
static bool plt_slot(const uint8_t *p, size_t n, uint64_t a, uint64_t *slot)
{
	size_t i = 0;
	if (n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		i = 4; /* endbr64 */
	if (i < n && p[i] == 0xf2)
		i++; /* bnd */
	if (n < i + 6 || p[i] != 0xff || p[i + 1] != 0x25)
		return false;
	int32_t disp;
	memcpy(&disp, p + i + 2, 4);
	*slot = a + i + 6 + (uint64_t)(int64_t)disp;
	return true;
}

struct slot_rel { uint64_t slot; size_t index; };

static int cmp_slot_rel(const void *a, const void *b)
{
	const struct slot_rel *x = a, *y = b;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* name@plt for the PLT stubs of section sec (.plt: lazy binding, named by
 * .rela.plt; .plt.got: bound at load, by .rela.dyn's GLOB_DAT): each
 * entry by the relocation of the GOT slot it jumps through, as objdump
 * labels them (perf 6.1 pairs .plt entries with .rela.plt by position,
 * which libc's IRELATIVE entries reorder, and names no .plt.got entry);
 * a lazy entry without that jump, by the index it pushes. An IRELATIVE
 * entry has no symbol: "@plt", as perf 6.1 names it. */
static void add_plt_section(Elf *elf, struct symbuf *b, const char *sec, const char *relsec, bool lazy)
{
	Elf_Scn *scn = NULL, *plt = NULL, *rela = NULL;
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *nm = elf_strptr(elf, shstrndx, sh.sh_name);
		if (nm && !strcmp(nm, sec))
			plt = scn;
		else if (nm && !strcmp(nm, relsec))
			rela = scn;
	}
	GElf_Shdr psh, rsh, dsh;
	Elf_Data *pd = plt ? elf_getdata(plt, NULL) : NULL, *rd = rela ? elf_getdata(rela, NULL) : NULL;
	if (!pd || !rd || !pd->d_buf || !gelf_getshdr(plt, &psh) || !gelf_getshdr(rela, &rsh) ||
	    psh.sh_type != SHT_PROGBITS || !rsh.sh_entsize)
		return;
	Elf_Scn *dsym = elf_getscn(elf, rsh.sh_link);
	Elf_Data *dd = dsym && gelf_getshdr(dsym, &dsh) ? elf_getdata(dsym, NULL) : NULL;
	if (!dd)
		return;
	/* sizes from the file, bounded by what it holds: a .rela.plt claiming
	 * 2^62 bytes (SHT_NOBITS) was looped over entry by entry */
	size_t nrel = mt_elf_entries(rd, &rsh, rsh.sh_entsize);
	size_t entsize = psh.sh_entsize >= 8 && psh.sh_entsize <= 64 ? psh.sh_entsize : lazy ? 16 : 8;
	struct slot_rel *by_slot = nrel ? malloc(nrel * sizeof *by_slot) : NULL;
	size_t nslots = 0;
	for (size_t k = 0; by_slot && k < nrel; k++) {
		GElf_Rela r;
		if (gelf_getrela(rd, (int)k, &r) && (lazy || GELF_R_TYPE(r.r_info) == R_X86_64_GLOB_DAT))
			by_slot[nslots++] = (struct slot_rel){r.r_offset, k};
	}
	if (!nslots) {
		free(by_slot);
		return;
	}
	qsort(by_slot, nslots, sizeof *by_slot, cmp_slot_rel);
	/* .plt's first entry is the resolver's (PLT0) */
	for (size_t e = lazy; e < pd->d_size / entsize; e++) {
		const uint8_t *p = (const uint8_t *)pd->d_buf + e * entsize;
		uint64_t a = psh.sh_addr + e * entsize, slot;
		size_t k = nrel;
		if (plt_slot(p, entsize, a, &slot)) {
			struct slot_rel key = {slot, 0}, *hit = bsearch(&key, by_slot, nslots, sizeof *by_slot, cmp_slot_rel);
			if (hit)
				k = hit->index;
		} else if (lazy) {
			for (size_t i = 0; i + 5 <= entsize; i++)
				if (p[i] == 0x68) { /* push imm32: the relocation's index */
					uint32_t idx;
					memcpy(&idx, p + i + 1, 4);
					k = idx;
					break;
				}
		}
		GElf_Rela r;
		GElf_Sym sym;
		if (k >= nrel || !gelf_getrela(rd, (int)k, &r) || !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		const char *nm = elf_strptr(elf, dsh.sh_link, sym.st_name);
		if (nm && (lazy || *nm))
			symbuf_add(b, a, a + entsize, nm, "@plt", STB_GLOBAL);
	}
	free(by_slot);
}

static bool has_symtab(Elf *elf)
{
	GElf_Shdr sh;
	return mt_elf_symtab(elf, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_size;
}

/* Separate debug info from a debuginfod server: an Elf with a .symtab, its
 * fd in *fdp and its path in o->debug_path; NULL (one warning) otherwise. */
static Elf *debuginfod_debug(struct mt_sym *s, struct object *o, const char *path, const void *id, int idlen,
			     int *fdp)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (!urls || !*urls || s->dclient_failed)
		return NULL;
	struct mt_err err = {0};
	if (!s->dclient && !(s->dclient = mt_debuginfod_begin(MT_DEBUGINFOD_SONAME, &err))) {
		s->dclient_failed = true;
		warnf(s, "warning: cannot start a debuginfod client (%s)%s", err.msg, "");
		return NULL;
	}
	char *dpath = NULL;
	int fd = mt_debuginfod_find_debuginfo(s->dclient, id, idlen, &dpath);
	if (fd < 0) {
		warnf(s, "warning: no debug info from debuginfod for %s (%s)", path, strerror(-fd));
		return NULL;
	}
	Elf *dbg = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (dbg && (elf_kind(dbg) != ELF_K_ELF || !has_symtab(dbg))) {
		elf_end(dbg);
		dbg = NULL;
	}
	if (!dbg) {
		close(fd);
		free(dpath);
		return NULL;
	}
	o->debug_path = dpath;
	*fdp = fd;
	return dbg;
}


/* FUNC and IFUNC symbols of .symtab (else .dynsym). */
static void add_func_symbol(void *ctx, const GElf_Sym *sym, const char *name)
{
	if (name && *name && sym->st_shndx < SHN_LORESERVE)
		symbuf_add(ctx, sym->st_value, sym->st_value + sym->st_size, name, "", (uint8_t)GELF_ST_BIND(sym->st_info));
}

static void add_kallsyms_symbol(void *ctx, uint64_t addr, const char *name)
{
	struct symbuf *b = ctx;
	symbuf_add(b, addr, b->n, name, "", STB_GLOBAL); /* end: its line's order, until sized */
}

static int cmp_start_then_end(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* kallsyms gives no sizes: as perf does (symbols__fixup_end), each symbol
 * ends where the next address begins, and of aliases at one address all
 * but the last in the file have none; perf keeps the sized one
 * (choose_best_symbol), so memset, __memset, __pi_memset name __pi_memset. */
static void size_kallsyms(struct symbol *syms, size_t n)
{
	if (!n)
		return; /* (syms NULL: qsort's pointer must not be) */
	qsort(syms, n, sizeof *syms, cmp_start_then_end);
	for (size_t i = n; i-- > 0;) {
		if (i + 1 < n && syms[i + 1].start == syms[i].start)
			syms[i].end = syms[i].start;
		else if (i + 1 < n)
			syms[i].end = syms[i + 1].start;
		else
			syms[i].end = ((syms[i].start + 4095) & ~4095ULL) + 4096; /* perf's rule for the last */
	}
}

/* kallsyms: code symbols, each ending at the next. */
static void load_kallsyms(struct mt_sym *s, struct object *o)
{
	struct mt_err err = {0};
	struct symbuf b = {0};
	size_t bad = 0;
	if (mt_kallsyms_read(s->kallsyms, add_kallsyms_symbol, &b, &bad, &err)) {
		o->failed = true;
		warnf(s, "warning: %s%s: kernel addresses stay unnamed", err.msg, "");
	}
	warn_malformed(s, s->kallsyms, bad);
	size_kallsyms(b.syms, b.n);
	o->syms = b.syms;
	o->nsyms = b.n;
	o->strings = b.strings;
}

static void finish_symbols(struct object *o, bool demangle);

/* This kernel's vDSO as a file (its image is in every process's memory). */
static const char *own_vdso(struct mt_sym *s)
{
	if (s->vdso_tried)
		return s->vdso_copy;
	s->vdso_tried = true;
	const void *base;
	size_t len = mt_own_vdso(&base);
	/* in memory, named by its descriptor: no file in TMPDIR for a signal
	 * or a crash to leave behind */
	int fd = len ? memfd_create("mt-vdso", MFD_CLOEXEC) : -1;
	if (fd < 0)
		return NULL;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (write(fd, base, len) != (ssize_t)len || !(s->vdso_copy = strdup(path))) {
		close(fd);
		return NULL;
	}
	s->vdso_fd = fd;
	return s->vdso_copy;
}

static void hex_build_id(Elf *elf, char *out, size_t n)
{
	const void *idp;
	ssize_t len = elf ? mt_elf_gnu_build_id(elf, &idp) : -1;
	out[0] = '\0';
	if (len > 0 && 2 * (size_t)len < n)
		mt_hex(idp, (size_t)len, out);
}

/* The vDSO a trace ran: perf's build-id cache (~/.debug/[vdso]/ID/vdso),
 * else this kernel's own when the build-ids agree (a trace decoded where
 * it was recorded; a mapping without a build-id takes it as it is). */
static bool vdso_image(struct mt_sym *s, const char *bid, char *path, size_t n)
{
	if (mt_obj_vdso_cached(s->buildid_dir, bid, path, n))
		return true;
	if (s->buildid_dir)
		return false; /* a bundle's vDSO or none: never this host's */
	const char *own = own_vdso(s);
	if (!own)
		return false;
	struct mt_err err = {0};
	int fd = mt_infile_open(own, 0, &err);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	char have[48];
	hex_build_id(elf, have, sizeof have);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	if (bid[0] && strcmp(have, bid))
		return false;
	snprintf(path, n, "%s", own);
	return true;
}

static void load(struct mt_sym *s, struct object *o)
{
	o->loaded = true;
	if (o->kernel) {
		if (s->kallsyms && !s->vmlinux) {
			load_kallsyms(s, o);
			finish_symbols(o, !s->no_demangle);
			return;
		}
		if (!s->vmlinux) {
			o->failed = true;
			warnf(s, "warning: %s: no --vmlinux or --kallsyms: kernel addresses stay unnamed", o->path, "");
			return;
		}
	}
	uint8_t bid[20];
	unsigned bidsz = 0;
	for (size_t i = 0; o->bid[2 * i] && o->bid[2 * i + 1] && i < 20; i++, bidsz++) {
		unsigned v;
		if (sscanf(o->bid + 2 * i, "%2x", &v) != 1)
			break;
		bid[i] = (uint8_t)v;
	}
	char path[4096];
	if (!strcmp(o->path, "//anon") || !strncmp(o->path, "/memfd:", 7) || !strncmp(o->path, "/dev/zero", 9)) {
		o->failed = true; /* anonymous code (a JIT): perf maps name it */
		return;
	}
	if (o->kernel)
		snprintf(path, sizeof path, "%s", s->vmlinux);
	else if (!strcmp(o->path, "[vdso]")) {
		if (!vdso_image(s, o->bid, path, sizeof path)) {
			o->failed = true;
			warnf(s, "warning: [vdso] (build-id %s): not in perf's build-id cache and not this kernel's%s: "
			      "its addresses stay unnamed", o->bid[0] ? o->bid : "unknown", "");
			return;
		}
	} else if (o->path[0] != '/' || mt_obj_find(o->path, bidsz ? bid : NULL, bidsz, s->symfs, s->buildid_dir, path, sizeof path)) {
		o->failed = true;
		if (o->path[0] == '/')
			warnf(s, "warning: %s not found%s: its addresses stay unnamed", o->path,
			      s->symfs ? " under --symfs" : "");
		return;
	}
	struct mt_err err = {0};
	int fd = mt_infile_open(path, 0, &err);
	if (fd < 0) {
		o->failed = true;
		warnf(s, "warning: %s%s: its addresses stay unnamed", err.msg, "");
		return;
	}
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t nph;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		o->failed = true;
		warnf(s, "warning: %s: not an ELF file%s: its addresses stay unnamed", path, "");
		if (elf)
			elf_end(elf);
		close(fd);
		return;
	}
	o->loads = calloc(nph ? nph : 1, sizeof *o->loads);
	for (size_t i = 0; o->loads && i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			o->loads[o->nloads++] = (struct load_seg){ph.p_vaddr, ph.p_offset, ph.p_filesz};
	}
	struct symbuf b = {0};
	/* No .symtab here: separate debug info, by build-id (as perf finds
	 * it) or by .gnu_debuglink (beside the file, in .debug/, or under
	 * /usr/lib/debug), each under --symfs when given. */
	Elf *dbg = NULL;
	int dbgfd = -1;
	if (!has_symtab(elf)) {
		char cand[MT_OBJ_DEBUG_CANDIDATES][MT_OBJ_PATH_MAX];
		int ncand = mt_obj_debug_candidates(elf, path, o->path, s->symfs, cand);
		const void *idp;
		ssize_t idlen = mt_elf_gnu_build_id(elf, &idp);
		for (int c = 0; c < ncand && !dbg; c++) {
			if (!strcmp(cand[c], path))
				continue;
			struct mt_err derr = {0};
			if ((dbgfd = mt_infile_open(cand[c], 0, &derr)) < 0) {
				if (derr.code == MT_EFORMAT) /* there, but a FIFO or a device */
					warnf(s, "warning: %s%s: not read as debug info", derr.msg, "");
				continue;
			}
			dbg = elf_begin(dbgfd, ELF_C_READ_MMAP, NULL);
			if (dbg && (elf_kind(dbg) != ELF_K_ELF || !has_symtab(dbg))) {
				elf_end(dbg);
				dbg = NULL;
			}
			if (dbg) {
				o->debug_path = strdup(cand[c]);
			} else {
				close(dbgfd);
				dbgfd = -1;
			}
		}
		/* Last, a debuginfod server (DEBUGINFOD_URLS), by build-id: the
		 * file comes back through the client's cache. */
		if (!dbg && idlen > 1)
			dbg = debuginfod_debug(s, o, path, idp, (int)idlen, &dbgfd);
	}
	o->elf_path = strdup(path);
	size_t unnamed = mt_elf_for_each_func(dbg ? dbg : elf, true, add_func_symbol, &b);
	if (unnamed) {
		char count[32];
		snprintf(count, sizeof count, "%zu", unnamed);
		warnf(s, "warning: %s: a damaged symbol table: %s function names cannot be read", dbg ? o->debug_path : path,
		      count);
	}
	if (dbg)
		elf_end(dbg);
	if (dbgfd >= 0)
		close(dbgfd);
	add_plt_section(elf, &b, ".plt", ".rela.plt", true);
	add_plt_section(elf, &b, ".plt.got", ".rela.dyn", false);
	elf_end(elf);
	close(fd);
	o->syms = b.syms;
	o->nsyms = b.n;
	o->strings = b.strings;
	finish_symbols(o, !s->no_demangle);
	if (!o->nsyms)
		warnf(s, "warning: %s has no function symbols%s: its addresses stay unnamed", path, "");
}

/* Names resolved, sorted, one per address, zero sizes fixed as perf does. */
#define PIDX_MAX_PAGES (1u << 20) /* 4 MB of index for 4 GB of code at most */

static void build_page_index(struct object *o)
{
	if (!o->nsyms || o->nsyms > UINT32_MAX)
		return;
	uint64_t lo = o->syms[0].start >> 12, hi = o->syms[o->nsyms - 1].start >> 12;
	if (hi - lo >= PIDX_MAX_PAGES || !(o->pidx = malloc((hi - lo + 2) * sizeof *o->pidx)))
		return;
	size_t k = 0;
	for (uint64_t p = lo; p <= hi + 1; p++) {
		while (k < o->nsyms && o->syms[k].start >> 12 < p)
			k++;
		o->pidx[p - lo] = (uint32_t)k;
	}
	o->pidx_lo = lo;
	o->pidx_n = hi - lo + 2;
}

/* Symbols starting at or below a (mt_count_at_or_below), through the
 * page index when there is one. */
static size_t syms_at_or_below(const struct object *o, uint64_t a)
{
	uint64_t p = a >> 12;
	if (!o->pidx)
		return mt_count_at_or_below(o->syms, o->nsyms, sizeof *o->syms, offsetof(struct symbol, start), a);
	if (p < o->pidx_lo)
		return 0;
	size_t first = p - o->pidx_lo + 1 < o->pidx_n ? o->pidx[p - o->pidx_lo] : o->pidx[o->pidx_n - 1];
	size_t last = p - o->pidx_lo + 1 < o->pidx_n ? o->pidx[p - o->pidx_lo + 1] : o->nsyms;
	return first + mt_count_at_or_below(o->syms + first, last - first, sizeof *o->syms,
					    offsetof(struct symbol, start), a);
}

static void finish_symbols(struct object *o, bool demangle)
{
	struct symbol *syms = o->syms;
	size_t n = o->nsyms;
	char *strings = o->strings;
	for (size_t i = 0; i < n; i++)
		syms[i].name = strings + (uintptr_t)syms[i].name;
	if (n)
		qsort(syms, n, sizeof *syms, cmp_sym);
	/* one symbol per address: the best alias */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || syms[i].start != syms[k - 1].start)
			syms[k++] = syms[i];
	n = k;
	/* zero-sized symbols (assembly) end where the next one starts */
	for (size_t i = 0; i < n; i++)
		if (syms[i].end == syms[i].start)
			syms[i].end = i + 1 < n ? syms[i + 1].start
					        : ((syms[i].start + 4095) & ~4095ULL) + 4096; /* perf's rule for the last */
	o->nsyms = n;
	/* readable names, after the alias choice (perf chooses on raw names) */
	for (size_t i = 0; demangle && i < n; i++) {
		char *d = mt_demangle(syms[i].name);
		if (!d)
			continue;
		if (!mt_grow((void **)&o->demangled, &o->capdemangled, o->ndemangled + 1, sizeof *o->demangled)) {
			free(d);
			break;
		}
		o->demangled[o->ndemangled++] = d;
		syms[i].name = d;
	}
	build_page_index(o);
}

/* The mapping of pid's that holds addr, the latest of those that do. */
static struct mapping *pid_mapping_of(const struct mt_sym *s, uint32_t pid, uint64_t addr)
{
	struct pid_maps *p = proc_of(s, pid, NULL);
	struct mapping *best = NULL;
	for (size_t i = p ? starts_at_or_below(p, addr) : 0; i-- > 0;) {
		struct mapping *m = &p->v[i];
		if (m->end_max <= addr)
			break;
		if (addr - m->start < m->len && (!best || m->seq > best->seq))
			best = m;
	}
	return best;
}

/* The process's own mappings first, then those of every process (the
 * kernel's, pid -1). A kernel address past the kernel's mapping (perf
 * records _stext to _etext; init text lies beyond: start_kernel in every
 * idle task's stack) is the kernel's, as perf names it from kallsyms. */
static struct mapping *mapping_of(struct mt_sym *s, uint32_t pid, uint64_t addr)
{
	struct mapping *m = pid_mapping_of(s, pid, addr);
	if (!m && pid != UINT32_MAX)
		m = pid_mapping_of(s, UINT32_MAX, addr);
	struct pid_maps *k = proc_of(s, UINT32_MAX, NULL);
	if (m || !(addr >> 63) || !k)
		return m;
	for (size_t i = starts_at_or_below(k, addr); i-- > 0;)
		if (k->v[i].obj->kernel)
			return &k->v[i];
	return NULL;
}

/* The source line of object address a, from the line table of the
 * separate debug info or of the object itself. */
static Dwarf *dwarf_of(struct object *o)
{
	if (!o->dw_tried) {
		o->dw_tried = true;
		const char *p = o->debug_path ? o->debug_path : o->elf_path;
		struct mt_err err = {0};
		o->dwfd = p ? mt_infile_open(p, 0, &err) : -1;
		if (o->dwfd >= 0)
			o->dw = dwarf_begin(o->dwfd, DWARF_C_READ);
	}
	return o->dw;
}

static void line_of(struct object *o, uint64_t a, struct mt_sym_result *r)
{
	Dwarf_Die cu;
	if (!dwarf_of(o) || !dwarf_addrdie(o->dw, a, &cu))
		return;
	Dwarf_Line *l = dwarf_getsrc_die(&cu, a);
	int line;
	if (!l || dwarf_lineno(l, &line))
		return;
	r->file = dwarf_linesrc(l, NULL, NULL);
	r->line = line;
}

/* libdw's dwarf_getscopes recurses once per level of DIE nesting: a CU
 * nested 100,000 levels deep (5 KB compressed) overflowed the stack. A CU
 * is walked once, without recursion, and its inline chains are read only
 * when it nests at most MAX_DIE_DEPTH levels (real code: a few dozen). */
#define MAX_DIE_DEPTH 512

static bool die_tree_shallow(Dwarf_Die *cu)
{
	Dwarf_Die path[MAX_DIE_DEPTH + 1], next;
	if (!dwarf_haschildren(cu) || dwarf_child(cu, &path[1]))
		return true;
	int d = 1;
	for (;;) {
		if (dwarf_haschildren(&path[d]) && dwarf_child(&path[d], &next) == 0) {
			if (d == MAX_DIE_DEPTH)
				return false;
			path[++d] = next;
			continue;
		}
		for (;;) {
			int rc = dwarf_siblingof(&path[d], &next);
			if (rc == 0) {
				path[d] = next;
				break;
			}
			if (rc < 0)
				return false; /* unreadable: not handed to libdw either */
			if (--d == 0)
				return true;
		}
	}
}

static bool cu_shallow(struct object *o, Dwarf_Die *cu)
{
	uint64_t off = dwarf_dieoffset(cu); /* past the unit's header: never 0 */
	size_t lo = mt_count_at_or_below(o->cus, o->ncus, sizeof *o->cus, offsetof(struct cu_depth, off), off - 1);
	if (lo < o->ncus && o->cus[lo].off == off)
		return o->cus[lo].shallow;
	bool shallow = die_tree_shallow(cu);
	if (mt_grow((void **)&o->cus, &o->capcus, o->ncus + 1, sizeof *o->cus)) {
		memmove(o->cus + lo + 1, o->cus + lo, (o->ncus - lo) * sizeof *o->cus);
		o->cus[lo] = (struct cu_depth){off, shallow};
		o->ncus++;
	}
	return shallow;
}

/* The inlined subroutines whose code holds a, innermost first (what
 * addr2line -i lists before the real function). */
static void inlines_of(struct mt_sym *s, struct object *o, uint64_t a, bool demangle, struct mt_sym_result *r)
{
	Dwarf_Die cu, *scopes = NULL;
	if (!dwarf_of(o) || !dwarf_addrdie(o->dw, a, &cu))
		return;
	if (!cu_shallow(o, &cu)) {
		if (!o->deep_warned) {
			char depth[16];
			snprintf(depth, sizeof depth, "%d", MAX_DIE_DEPTH);
			warnf(s, "warning: %s: DWARF nested deeper than %s levels: its inline chains are left out",
			      o->debug_path ? o->debug_path : o->elf_path, depth);
		}
		o->deep_warned = true;
		return;
	}
	int n = dwarf_getscopes(&cu, a, &scopes), first = 0;
	while (first < n && dwarf_tag(&scopes[first]) != DW_TAG_inlined_subroutine)
		first++;
	if (first < n) {
		/* the concrete tree above the innermost inlined instance holds the
		 * instances it was inlined into (dwarf_getscopes stops at it) */
		Dwarf_Die inl = scopes[first], *chain = NULL;
		free(scopes);
		scopes = NULL;
		n = dwarf_getscopes_die(&inl, &chain);
		scopes = chain;
	}
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		Dwarf_Attribute at;
		const char *name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_name, &at));
		const char *link = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_linkage_name, &at));
		char *dm = demangle && link ? mt_demangle(link) : NULL;
		const char *show = dm ? dm : name ? name : "[unknown]";
		int w = snprintf(r->inlines + len, sizeof r->inlines - len, "%s%s", len ? ";" : "", show);
		free(dm);
		if (w < 0 || (size_t)w >= sizeof r->inlines - len)
			break;
		len += (size_t)w;
	}
	free(scopes);
}

/* Equal starts: the later line first. Before names are resolved a name is
 * its offset in the string block, which grows with the line number. */
static int cmp_map_entry(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (uintptr_t)x->name > (uintptr_t)y->name ? -1 : (uintptr_t)x->name < (uintptr_t)y->name;
}

/* perf map lines: "START SIZE NAME", hex with or without 0x; V8, Java
 * (perf-map-agent) and .NET write the same form, and a name may be long (a
 * Java signature): lines have no length limit. Later lines win for one
 * start address, as in perf. The file must be regular, and owned by this
 * user or root as perf requires: anyone can plant one in /tmp. */
static void load_perf_map(struct mt_sym *s, struct perf_map *pm)
{
	struct object *o = &pm->obj;
	o->loaded = true;
	struct mt_err err = {0};
	/* a map found by pid in a shared directory: a link there is not followed */
	FILE *f = mt_infile_fopen(pm->path, MT_INFILE_OWNED | (s->perf_map_file ? 0 : MT_INFILE_NOFOLLOW), &err);
	if (!f) {
		o->failed = true;
		struct stat st; /* no map for this pid: the common case, said nothing of */
		if (err.code != MT_EIO || !lstat(pm->path, &st))
			warnf(s, "warning: %s%s: perf map ignored", err.msg, "");
		return;
	}
	char *line = NULL;
	size_t cap = 0, bad = 0;
	ssize_t len;
	struct symbuf b = {0};
	while ((len = getline(&line, &cap, f)) > 0) {
		uint64_t start, size;
		int used = 0;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len)
			continue;
		if (strlen(line) != (size_t)len || /* a NUL inside: not a text line */
		    sscanf(line, "%" SCNx64 " %" SCNx64 " %n", &start, &size, &used) != 2 || !used || !line[used] || !size) {
			bad++;
			continue;
		}
		symbuf_add(&b, start, start + size, line + used, "", STB_GLOBAL);
	}
	free(line);
	fclose(f);
	warn_malformed(s, pm->path, bad);
	struct symbol *syms = b.syms;
	size_t n = b.n;
	if (n)
		qsort(syms, n, sizeof *syms, cmp_map_entry);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || syms[i].start != syms[k - 1].start)
			syms[k++] = syms[i];
	for (size_t i = 0; i < k; i++)
		syms[i].name = b.strings + (uintptr_t)syms[i].name;
	o->syms = syms;
	o->nsyms = k;
	o->strings = b.strings;
}

/* The symbol of a perf map or jitdump (absolute addresses) over addr:
 * its index + 1, 0 for none. */
static size_t map_symbol(const struct perf_map *pm, uint64_t addr, struct mt_sym_result *r)
{
	const struct object *o = &pm->obj;
	size_t lo = mt_count_at_or_below(o->syms, o->nsyms, sizeof *o->syms, offsetof(struct symbol, start), addr);
	/* inside [start, start + size): magic-trace's check is inverted */
	if (lo && addr < o->syms[lo - 1].end) {
		r->name = o->syms[lo - 1].name;
		r->off = addr - o->syms[lo - 1].start;
		r->dso = pm->path;
		return lo;
	}
	return 0;
}

/* A JIT frame: the perf map of pid (or the one given) covering addr. */
static bool perf_map_lookup(struct mt_sym *s, uint32_t pid, uint64_t addr, struct mt_sym_result *r)
{
	if (!s->perf_map_file && !s->perf_map_dir)
		return false;
	struct perf_map *pm = NULL;
	for (size_t i = 0; i < s->npmaps && !pm; i++)
		if (s->pmaps[i].pid == pid || s->perf_map_file)
			pm = &s->pmaps[i];
	if (!pm) {
		if (!mt_grow((void **)&s->pmaps, &s->cappmaps, s->npmaps + 1, sizeof *s->pmaps))
			return false;
		pm = &s->pmaps[s->npmaps++];
		memset(pm, 0, sizeof *pm);
		pm->pid = pid;
		if (s->perf_map_file)
			pm->path = strdup(s->perf_map_file);
		else if (asprintf(&pm->path, "%s/perf-%u.map", s->perf_map_dir, pid) < 0)
			pm->path = NULL;
		if (!pm->path)
			return false;
	}
	if (!pm->obj.loaded)
		load_perf_map(s, pm);
	return map_symbol(pm, addr, r) != 0;
}

/* jd.code's indexes by time, then as written */
static const struct mt_jit_code *sort_code;
static int cmp_code_time(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	if (sort_code[x].time != sort_code[y].time)
		return sort_code[x].time < sort_code[y].time ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Load k of j takes effect: its code names [start, start + size), in place
 * of an earlier load at the same address (perf inject maps each load over
 * what was there). */
static void apply_jit_load(struct perf_map *j, size_t k)
{
	const struct mt_jit_code *c = &j->jd.code[k];
	if (!c->size || c->start + c->size < c->start)
		return;
	struct object *o = &j->obj;
	size_t at = mt_count_at_or_below(o->syms, o->nsyms, sizeof *o->syms, offsetof(struct symbol, start), c->start);
	struct symbol sym = {c->start, c->start + c->size, c->name, STB_GLOBAL};
	if (at && o->syms[at - 1].start == c->start) {
		o->syms[at - 1] = sym;
		j->code_of[at - 1] = k;
		return;
	}
	if (!mt_grow((void **)&o->syms, &j->capsyms, o->nsyms + 1, sizeof *o->syms) ||
	    !mt_grow((void **)&j->code_of, &j->capcode, o->nsyms + 1, sizeof *j->code_of))
		return;
	memmove(&o->syms[at + 1], &o->syms[at], (o->nsyms - at) * sizeof *o->syms);
	memmove(&j->code_of[at + 1], &j->code_of[at], (o->nsyms - at) * sizeof *j->code_of);
	o->syms[at] = sym;
	j->code_of[at] = k;
	o->nsyms++;
}

/* Applies j's loads up to time t (all of them, untimed); true when any. */
static bool apply_jit_loads(struct perf_map *j, uint64_t t)
{
	size_t from = j->next;
	while (j->next < j->npending && (!j->timed || j->jd.code[j->pending[j->next]].time <= t))
		apply_jit_load(j, j->pending[j->next++]);
	return j->next != from;
}

static void load_jitdump(struct mt_sym *s, struct perf_map *j)
{
	struct object *o = &j->obj;
	o->loaded = true;
	struct mt_err err = {0};
	/* under --symfs (a bundle's root) only, as the objects are; its code
	 * keeps the recorded path as its dso */
	char under[4200];
	const char *src = j->path;
	if (s->symfs && j->path[0] == '/') {
		snprintf(under, sizeof under, "%s%s", s->symfs, j->path);
		src = under;
	}
	if (mt_jitdump_read(&j->jd, src, &err)) {
		o->failed = true;
		warnf(s, "warning: %s%s: JIT code there is not named", err.msg, "");
		return;
	}
	if (j->jd.damaged_at) {
		char at[32];
		snprintf(at, sizeof at, "%" PRIu64, j->jd.damaged_at);
		warnf(s, "warning: %s: a record at offset %s is cut or lies about its size: the code loads after it are not "
		      "named", j->path, at);
	}
	/* times in the recording's clock: each load from its time on (TSC
	 * times, another clock, or a stream without times: the latest load at
	 * an address, always) */
	j->timed = s->jit_clock && s->advanced && !(j->jd.flags & MT_JITDUMP_ARCH_TIMESTAMP);
	if (!j->jd.ncode || !(j->pending = malloc(j->jd.ncode * sizeof *j->pending)))
		return;
	for (size_t i = 0; i < j->jd.ncode; i++)
		j->pending[i] = i;
	j->npending = j->jd.ncode;
	if (j->timed) {
		sort_code = j->jd.code;
		qsort(j->pending, j->npending, sizeof *j->pending, cmp_code_time);
	}
	apply_jit_loads(j, s->now);
}

bool mt_sym_advance(struct mt_sym *s, uint64_t t)
{
	if (t < s->next_jit_time)
		return false;
	bool changed = false;
	s->now = t;
	s->advanced = true; /* events with times: loads take effect at theirs */
	s->next_jit_time = UINT64_MAX;
	for (size_t i = 0; i < s->njits; i++) {
		struct perf_map *j = &s->jits[i];
		if (!j->obj.loaded) {
			load_jitdump(s, j);
			changed |= j->obj.nsyms > 0;
		} else
			changed |= apply_jit_loads(j, t);
		if (j->next < j->npending && j->timed && j->jd.code[j->pending[j->next]].time < s->next_jit_time)
			s->next_jit_time = j->jd.code[j->pending[j->next]].time;
	}
	if (changed)
		forget_lookups(s);
	return changed;
}

/* The source line of JIT code at addr in symbol k of jitdump j, from its
 * load's debug entries. */
static void jit_line(const struct perf_map *j, size_t k, uint64_t addr, struct mt_sym_result *r)
{
	const struct mt_jit_line *l = mt_jitdump_line(&j->jd, &j->jd.code[j->code_of[k]], addr);
	if (l) {
		r->file = l->file;
		r->line = l->line;
	}
}

/* JIT code a jitdump of pid names (the latest mapped one that does). */
static bool jit_lookup(struct mt_sym *s, uint32_t pid, uint64_t addr, struct mt_sym_result *r)
{
	for (size_t i = s->njits; i-- > 0;) {
		struct perf_map *j = &s->jits[i];
		if (j->pid != pid)
			continue;
		if (!j->obj.loaded)
			load_jitdump(s, j);
		size_t k = map_symbol(j, addr, r);
		if (k) {
			if (s->lines)
				jit_line(j, k - 1, addr, r);
			return true;
		}
	}
	return false;
}

static void lookup(struct mt_sym *s, uint32_t pid, uint64_t addr, struct mt_sym_result *r);

void mt_sym_lookup(struct mt_sym *s, uint32_t pid, uint64_t addr, struct mt_sym_result *r)
{
	/* field by field: clearing the whole result (its inline buffer is 1 KiB)
	 * was most of a lookup */
	r->name = r->dso = r->file = NULL;
	r->off = 0;
	r->line = 0;
	r->inlines[0] = '\0';
	if (s->inlines) {
		lookup(s, pid, addr, r);
		return;
	}
	if (!s->memo) {
		if (!(s->memo = calloc(MEMO_SLOTS, sizeof *s->memo))) {
			lookup(s, pid, addr, r);
			return;
		}
		s->memo_epoch = 1;
	}
	struct lookup_memo *e = &s->memo[(addr ^ addr >> 12 ^ pid) & (MEMO_SLOTS - 1)];
	if (e->epoch == s->memo_epoch && e->addr == addr && e->pid == pid) {
		r->name = e->name;
		r->off = e->off;
		r->dso = e->dso;
		r->file = e->file;
		r->line = e->line;
		return;
	}
	lookup(s, pid, addr, r);
	*e = (struct lookup_memo){.addr = addr, .off = r->off, .pid = pid, .line = r->line, .epoch = s->memo_epoch,
				  .name = r->name, .dso = r->dso, .file = r->file};
}

static void lookup(struct mt_sym *s, uint32_t pid, uint64_t addr, struct mt_sym_result *r)
{
	/* JIT code first, as perf inject --jit's later mappings win over the
	 * program's (V8's builtins inside node's text) */
	if (s->njits && jit_lookup(s, pid, addr, r))
		return;
	struct mapping *m = mapping_of(s, pid, addr);
	if (!m) {
		perf_map_lookup(s, pid, addr, r);
		return;
	}
	r->dso = m->dso;
	struct object *o = m->obj;
	if (!o->loaded)
		load(s, o);
	if (o->failed || !o->nsyms) {
		perf_map_lookup(s, pid, addr, r);
		return;
	}
	if (!m->have_bias && o->kernel) {
		m->have_bias = true; /* absolute addresses */
	}
	if (!m->have_bias) {
		/* bias = map start - (segment vaddr + (pgoff - segment offset)) */
		for (size_t i = 0; i < o->nloads; i++)
			if (m->pgoff >= (o->loads[i].offset & ~0xfffULL) &&
			    m->pgoff < o->loads[i].offset + o->loads[i].filesz) {
				m->bias = m->start - (o->loads[i].vaddr + (m->pgoff - o->loads[i].offset));
				break;
			}
		m->have_bias = true;
	}
	uint64_t a = addr - m->bias;
	size_t lo = syms_at_or_below(o, a);
	for (size_t i = lo; i > 0 && lo - i < 4; i--) {
		const struct symbol *sy = &o->syms[i - 1];
		if (a < sy->end) {
			r->name = sy->name;
			r->off = a - sy->start;
			break;
		}
	}
	if (s->lines)
		line_of(o, a, r);
	if (s->inlines)
		inlines_of(s, o, a, !s->no_demangle, r);
}
