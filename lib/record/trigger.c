/* trigger: resolve a trigger and watch every thread for it (trigger.h). */
#define _GNU_SOURCE
#include "record/trigger.h"

#include <ctype.h>
#include <dirent.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "objects/elfsyms.h"
#include "base/strtab.h"

/* x86-64 perf register numbers (asm/perf_regs.h): samples carry them in
 * this order, lowest first */
#define REG_SI 4
#define REG_DI 5

#define RING_PAGES 2 /* data pages per event, after the control page */

/* The ':' before a decimal number that ends s, with something before it;
 * NULL when s does not end so. */
static const char *colon_number(const char *s)
{
	const char *c = strrchr(s, ':');
	return c && c > s && c[1] && !c[1 + strspn(c + 1, "0123456789")] ? c : NULL;
}

int mt_trigger_parse(const char *s, struct mt_trigger_spec *spec, struct mt_err *err)
{
	memset(spec, 0, sizeof *spec);
	if (!strcmp(s, ".")) {
		spec->kind = MT_TRIGGER_SYMBOL;
		snprintf(spec->name, sizeof spec->name, "%s", MT_STOP_INDICATOR);
		return 0;
	}
	const char *body = s;
	enum { ANY, SYM, ADDR, LINE } form = ANY;
	if (!strncmp(s, "symbol:", 7))
		form = SYM, body = s + 7;
	else if (!strncmp(s, "addr:", 5))
		form = ADDR, body = s + 5;
	else if (!strncmp(s, "line:", 5))
		form = LINE, body = s + 5;
	if (!strcmp(body, "?"))
		return mt_err_set(err, MT_EUSAGE,
				  "trigger '%s': interactive selection (fzf) is not supported; name the symbol, address "
				  "or FILE:LINE", s);
	if (!*body || strlen(body) >= sizeof spec->name)
		return mt_err_set(err, MT_EUSAGE, "trigger '%s': empty or too long", s);
	bool hex = !strncmp(body, "0x", 2) && body[2] && !body[2 + strspn(body + 2, "0123456789abcdefABCDEF")];
	bool line = colon_number(body) != NULL;
	if (form == ADDR || (form == ANY && hex)) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(body, &end, 0);
		if (errno || *end || !v)
			return mt_err_set(err, MT_EUSAGE, "trigger '%s': not an address", s);
		spec->kind = MT_TRIGGER_ADDR;
		spec->addr = v;
		snprintf(spec->name, sizeof spec->name, "%s", body);
	} else if (form == LINE || (form == ANY && line)) {
		/* FILE:LINE, or FILE:LINE:COL as magic-trace writes it (the
		 * column is not needed to find the line's first address) */
		char file[256];
		snprintf(file, sizeof file, "%s", body);
		char *c = (char *)colon_number(file);
		if (c) {
			*c = 0;
			char *col = (char *)colon_number(file);
			if (col) { /* c was the column's */
				*col = 0;
				c = col;
			}
			spec->line = (unsigned)strtoul(c + 1, NULL, 10);
		}
		if (!spec->line)
			return mt_err_set(err, MT_EUSAGE, "trigger '%s': expected FILE:LINE", s);
		spec->kind = MT_TRIGGER_LINE;
		snprintf(spec->name, sizeof spec->name, "%s", file);
	} else {
		spec->kind = MT_TRIGGER_SYMBOL;
		snprintf(spec->name, sizeof spec->name, "%s", body);
	}
	return 0;
}

struct find_sym {
	const char *name;
	uint64_t value;
	bool found;
};

static void match_sym(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct find_sym *f = ctx;
	if (!f->found && !strcmp(name, f->name)) {
		f->value = sym->st_value;
		f->found = true;
	}
}

/* The lowest address of a statement on file:line, from the DWARF line
 * tables; a relative file name matches the end of the recorded path. */
static bool line_address(Elf *elf, const char *file, unsigned line, uint64_t *addr)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw)
		return false;
	bool found = false;
	Dwarf_Off off = 0, next;
	size_t hsize;
	size_t flen = strlen(file);
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_getsrclines(&cu, &lines, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				Dwarf_Line *l = dwarf_onesrcline(lines, i);
				int lno;
				bool stmt;
				Dwarf_Addr a;
				const char *src = dwarf_linesrc(l, NULL, NULL);
				if (!src || dwarf_lineno(l, &lno) || lno != (int)line || dwarf_lineaddr(l, &a) ||
				    dwarf_linebeginstatement(l, &stmt) || !stmt)
					continue;
				size_t slen = strlen(src);
				bool same = file[0] == '/' ? !strcmp(src, file)
							   : slen >= flen && !strcmp(src + slen - flen, file) &&
								     (slen == flen || src[slen - flen - 1] == '/');
				if (same && (!found || a < *addr)) {
					*addr = a;
					found = true;
				}
			}
		}
		off = next;
	}
	dwarf_end(dw);
	return found;
}

/* The load bias of path in pid: from its first mapping of the file. */
static bool process_bias(Elf *elf, pid_t pid, const char *path, uint64_t *bias)
{
	char maps[64], line[4400];
	snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(maps, "r");
	if (!f)
		return false;
	bool ok = false;
	while (!ok && fgets(line, sizeof line, f)) {
		unsigned long long start, pgoff;
		int pos = 0;
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %n", &start, &pgoff, &pos) < 2 || !pos)
			continue;
		char *p = line + pos;
		p[strcspn(p, "\n")] = 0;
		if (!strcmp(p, path))
			ok = mt_elf_load_bias(elf, start, pgoff, bias);
	}
	fclose(f);
	return ok;
}

int mt_trigger_resolve(const struct mt_trigger_spec *spec, pid_t pid, struct mt_trigger_site *site,
		       struct mt_err *err)
{
	memset(site, 0, sizeof *site);
	char exe[64];
	snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(exe, site->path, sizeof site->path - 1);
	if (n <= 0)
		return mt_err_set(err, MT_EIO, "trigger: %s: %s", exe, n < 0 ? strerror(errno) : "empty link");
	site->path[n] = 0;
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mt_err_set(err, MT_EIO, "trigger: %s: %s", site->path, strerror(errno));
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	int rc = 0;
	if (!elf || !gelf_getehdr(elf, &eh)) {
		rc = mt_err_set(err, MT_EFORMAT, "trigger: %s: not an ELF file", site->path);
		goto out;
	}
	switch (spec->kind) {
	case MT_TRIGGER_SYMBOL: {
		struct find_sym f = {.name = spec->name};
		mt_elf_for_each_func(elf, false, match_sym, &f);
		if (!f.found) {
			rc = mt_err_set(err, MT_EUSAGE, "trigger: no function '%s' in %s%s", spec->name, site->path,
					mt_elf_symtab(elf, &(GElf_Shdr){0}) ? "" : " (it has no symbol table)");
			goto out;
		}
		site->vaddr = f.value;
		snprintf(site->what, sizeof site->what, "%s", spec->name);
		break;
	}
	case MT_TRIGGER_ADDR:
		site->vaddr = spec->addr;
		snprintf(site->what, sizeof site->what, "0x%" PRIx64, spec->addr);
		break;
	case MT_TRIGGER_LINE:
		if (!line_address(elf, spec->name, spec->line, &site->vaddr)) {
			rc = mt_err_set(err, MT_EUSAGE, "trigger: no code for %s:%u in %s's line table", spec->name,
					spec->line, site->path);
			goto out;
		}
		snprintf(site->what, sizeof site->what, "%s:%u", spec->name, spec->line);
		break;
	}
	/* the file offset (for a uprobe) from the loadable segment holding it */
	size_t nph;
	bool in_segment = false;
	if (elf_getphdrnum(elf, &nph) == 0)
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
			    site->vaddr >= ph.p_vaddr && site->vaddr < ph.p_vaddr + ph.p_filesz) {
				site->offset = site->vaddr - ph.p_vaddr + ph.p_offset;
				in_segment = true;
			}
		}
	if (!in_segment) {
		rc = mt_err_set(err, MT_EUSAGE, "trigger: %s (0x%" PRIx64 ") is not in the executable code of %s",
				site->what, site->vaddr, site->path);
		goto out;
	}
	uint64_t bias = 0;
	if (eh.e_type == ET_DYN && !process_bias(elf, pid, site->path, &bias)) {
		rc = mt_err_set(err, MT_EIO, "trigger: %s is not mapped in process %d", site->path, (int)pid);
		goto out;
	}
	site->addr = site->vaddr + bias;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

static int event_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The function the breakpoint self-test stops at; called through a
 * volatile pointer so that it stays a call. */
__attribute__((noinline)) static void breakpoint_probe(void)
{
	__asm__ volatile("");
}

bool mt_hw_breakpoints_fire(void)
{
	struct perf_event_attr a = {.size = sizeof a, .type = PERF_TYPE_BREAKPOINT, .bp_type = HW_BREAKPOINT_X,
				    .bp_addr = (uint64_t)(uintptr_t)breakpoint_probe, .bp_len = sizeof(long),
				    .exclude_kernel = 1, .exclude_hv = 1};
	int fd = event_open(&a, 0, -1);
	if (fd < 0)
		return false;
	void (*volatile call)(void) = breakpoint_probe;
	call();
	uint64_t count = 0;
	bool fired = read(fd, &count, sizeof count) == (ssize_t)sizeof count && count > 0;
	close(fd);
	return fired;
}

static int uprobe_pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int type = -1;
	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	return type;
}

struct ring {
	int fd;
	struct perf_event_mmap_page *page;
};

#define MT_TRIGGER_MAX_PIDS 64

struct mt_trigger {
	enum mt_trigger_via via;
	pid_t pids[MT_TRIGGER_MAX_PIDS]; /* uprobe: the processes whose hits count */
	size_t npids;
	int epoll;
	size_t n, cap;
	struct ring *rings;
	size_t page_size;
};

static int add_thread(struct mt_trigger *t, struct perf_event_attr *a, pid_t tid, int ncpu, struct mt_err *err)
{
	int opened = 0, last_errno = 0;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = event_open(a, tid, cpu);
		if (fd < 0) {
			if (errno == ESRCH) /* the thread ended meanwhile */
				return 0;
			last_errno = errno;
			continue; /* an offline CPU */
		}
		void *m = mmap(NULL, (1 + RING_PAGES) * t->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			last_errno = errno;
			close(fd);
			continue;
		}
		if (!mt_grow((void **)&t->rings, &t->cap, t->n + 1, sizeof *t->rings)) {
			munmap(m, (1 + RING_PAGES) * t->page_size);
			close(fd);
			return mt_err_set(err, MT_ENOMEM, "trigger: out of memory");
		}
		t->rings[t->n++] = (struct ring){.fd = fd, .page = m};
		struct epoll_event ev = {.events = EPOLLIN};
		if (epoll_ctl(t->epoll, EPOLL_CTL_ADD, fd, &ev) < 0)
			return mt_err_set(err, MT_EIO, "trigger: epoll: %s", strerror(errno));
		opened++;
	}
	if (!opened)
		return mt_err_set(err, MT_EIO, "trigger: perf_event_open (%s) for %s %d: %s",
				  t->via == MT_TRIGGER_UPROBE ? "uprobe" : "hardware breakpoint",
				  tid < 0 ? "every process, cpu" : "thread", tid < 0 ? 0 : (int)tid,
				  strerror(last_errno));
	return 0;
}

int mt_trigger_open(const struct mt_trigger_site *site, const pid_t *pids, size_t npids, enum mt_trigger_via via,
		    struct mt_trigger **out, struct mt_err *err)
{
	if (via == MT_TRIGGER_AUTO)
		via = mt_hw_breakpoints_fire() ? MT_TRIGGER_BREAKPOINT : MT_TRIGGER_UPROBE;
	struct perf_event_attr a = {
		.size = sizeof a,
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER,
		.sample_regs_user = (1ULL << REG_SI) | (1ULL << REG_DI),
		.wakeup_events = 1,
		/* threads started later are watched too (magic-trace's #274) */
		.inherit = 1,
	};
	if (via == MT_TRIGGER_BREAKPOINT) {
		a.type = PERF_TYPE_BREAKPOINT;
		a.bp_type = HW_BREAKPOINT_X;
		a.bp_addr = site->addr;
		a.bp_len = sizeof(long);
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
	} else {
		int type = uprobe_pmu_type();
		if (type < 0)
			return mt_err_set(err, MT_EUNSUP,
					  "trigger: hardware breakpoints do not fire here and the kernel has no uprobe "
					  "PMU (/sys/bus/event_source/devices/uprobe)");
		a.type = (uint32_t)type;
		a.config1 = (uint64_t)(uintptr_t)site->path;
		a.config2 = site->offset;
	}
	struct mt_trigger *t = calloc(1, sizeof *t);
	if (!t)
		return mt_err_set(err, MT_ENOMEM, "trigger: out of memory");
	t->via = via;
	t->page_size = (size_t)sysconf(_SC_PAGESIZE);
	t->epoll = epoll_create1(EPOLL_CLOEXEC);
	if (t->epoll < 0) {
		free(t);
		return mt_err_set(err, MT_EIO, "trigger: epoll: %s", strerror(errno));
	}
	int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	int rc = 0;
	if (via == MT_TRIGGER_UPROBE) {
		/* An inherited uprobe event cannot be: the kernel would read the
		 * path (config1) again, as a pointer into the traced process, when
		 * a thread starts, and fail the thread's clone. The probe sits in
		 * the file for every process anyway: one event per CPU for all of
		 * them, hits of other processes dropped when read. */
		a.inherit = 0;
		t->npids = npids < MT_TRIGGER_MAX_PIDS ? npids : MT_TRIGGER_MAX_PIDS;
		memcpy(t->pids, pids, t->npids * sizeof *pids);
		rc = add_thread(t, &a, -1, ncpu, err);
	}
	/* inherited per-task events cannot share one ring (the kernel refuses
	 * the mmap): one per thread and CPU, as perf record does */
	for (size_t i = 0; via == MT_TRIGGER_BREAKPOINT && i < npids && !rc; i++) {
		char dir[64];
		snprintf(dir, sizeof dir, "/proc/%d/task", (int)pids[i]);
		DIR *d = opendir(dir);
		if (!d) {
			rc = mt_err_set(err, MT_EIO, "trigger: %s: %s", dir, strerror(errno));
			break;
		}
		struct dirent *e;
		while (!rc && (e = readdir(d)))
			if (isdigit((unsigned char)e->d_name[0]))
				rc = add_thread(t, &a, (pid_t)atoi(e->d_name), ncpu, err);
		closedir(d);
	}
	if (!rc && !t->n)
		rc = mt_err_set(err, MT_EIO, "trigger: the processes have no threads left to watch");
	if (rc) {
		mt_trigger_close(t);
		return rc;
	}
	*out = t;
	return 0;
}

enum mt_trigger_via mt_trigger_via_used(const struct mt_trigger *t)
{
	return t->via;
}

int mt_trigger_fd(const struct mt_trigger *t)
{
	return t->epoll;
}

static bool watched(const struct mt_trigger *t, pid_t pid)
{
	if (t->via != MT_TRIGGER_UPROBE)
		return true;
	for (size_t i = 0; i < t->npids; i++)
		if (t->pids[i] == pid)
			return true;
	return false;
}

static void ring_copy(const struct ring *r, size_t size, uint64_t pos, void *dst, size_t len)
{
	const uint8_t *data = (const uint8_t *)r->page + r->page->data_offset;
	size_t at = (size_t)(pos % size), first = len < size - at ? len : size - at;
	memcpy(dst, data + at, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

size_t mt_trigger_read(struct mt_trigger *t, struct mt_trigger_hit *hits, size_t max, uint64_t *lost)
{
	/* take the wake-ups first (a perf event's readiness is consumed by
	 * polling it), then whatever the rings hold */
	struct epoll_event ev[64];
	while (epoll_wait(t->epoll, ev, 64, 0) == 64)
		;
	size_t got = 0;
	for (size_t i = 0; i < t->n && got < max; i++) {
		struct ring *r = &t->rings[i];
		uint64_t size = r->page->data_size;
		uint64_t head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = r->page->data_tail;
		while (tail + sizeof(struct perf_event_header) <= head && got < max) {
			struct perf_event_header h;
			ring_copy(r, size, tail, &h, sizeof h);
			if (h.size < sizeof h || tail + h.size > head)
				break;
			uint64_t rec[16] = {0};
			size_t body = h.size - sizeof h < sizeof rec ? h.size - sizeof h : sizeof rec;
			ring_copy(r, size, tail + sizeof h, rec, body);
			if (h.type == PERF_RECORD_SAMPLE && body >= 3 * 8 && watched(t, (pid_t)(uint32_t)rec[1])) {
				/* ip, pid/tid, time, then abi and the registers SI, DI */
				struct mt_trigger_hit *hit = &hits[got++];
				*hit = (struct mt_trigger_hit){.ip = rec[0], .pid = (uint32_t)rec[1],
							       .tid = (uint32_t)(rec[1] >> 32), .time = rec[2]};
				if (body >= 6 * 8 && rec[3]) {
					hit->arg1 = rec[4];
					hit->arg0 = rec[5];
				}
			} else if (h.type == PERF_RECORD_LOST && body >= 16 && lost) {
				*lost += rec[1];
			}
			tail += h.size;
		}
		__atomic_store_n(&r->page->data_tail, tail, __ATOMIC_RELEASE);
	}
	return got;
}

void mt_trigger_close(struct mt_trigger *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		munmap(t->rings[i].page, (1 + RING_PAGES) * t->page_size);
		close(t->rings[i].fd);
	}
	free(t->rings);
	if (t->epoll >= 0)
		close(t->epoll);
	free(t);
}
