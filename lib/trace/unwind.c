#define _GNU_SOURCE
#include "trace/unwind.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/strtab.h"
#include "trace/dwload.h"

struct umap {
	uint32_t pid;
	uint64_t start, len, pgoff;
	char *path;
};

struct uproc {
	uint32_t pid;
	Dwfl *dwfl;
	bool attached;
};

struct mt_unwind {
	const struct mt_dw *dw;
	Dwfl_Callbacks callbacks;
	char debuginfo_path[4200], *debuginfo_ptr;
	int image_fd;                 /* mt_unwind_add_image's file, -1 none */
	char image_path[64];
	struct umap *maps;
	size_t nmaps, capmaps;
	struct uproc *procs;
	size_t nprocs, capprocs;
	/* the walk under way: what the callbacks read and fill */
	const struct mt_unwind_sample *cur;
	uint64_t *pcs;
	size_t n, max;
	const char *why;
	/* each DWARF register's latest known value, frame by frame (rax..r15,
	 * rip), which of them the last frame knows, and that frame's PC */
	uint64_t carry[17];
	uint32_t last_known;
	uint64_t last_pc;
	bool last_activation;
	bool resume;  /* the next walk starts from carry and last_pc */
	size_t skip;  /* frames of that walk already written */
};

struct mt_unwind *mt_unwind_new(const char *symfs, const char **why)
{
	const struct mt_dw *dw = mt_dw_load(why);
	if (!dw)
		return NULL;
	struct mt_unwind *u = calloc(1, sizeof *u);
	if (!u) {
		*why = "out of memory";
		return NULL;
	}
	u->dw = dw;
	u->image_fd = -1;
	/* separate debug info (.debug_frame): beside the object, in its
	 * .debug/, and by build-id under the root's /usr/lib/debug (a
	 * bundle's or --symfs's, never this host's then) */
	snprintf(u->debuginfo_path, sizeof u->debuginfo_path, ":.debug:%s/usr/lib/debug", symfs ? symfs : "");
	u->debuginfo_ptr = u->debuginfo_path;
	u->callbacks = (Dwfl_Callbacks){.find_elf = u->dw->dwfl_linux_proc_find_elf,
					.find_debuginfo = u->dw->dwfl_standard_find_debuginfo,
					.debuginfo_path = &u->debuginfo_ptr};
	return u;
}

void mt_unwind_free(struct mt_unwind *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nmaps; i++)
		free(u->maps[i].path);
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].dwfl)
			u->dw->dwfl_end(u->procs[i].dwfl);
	free(u->maps);
	free(u->procs);
	if (u->image_fd >= 0)
		close(u->image_fd);
	free(u);
}

int mt_unwind_add_map(struct mt_unwind *u, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *path)
{
	if (!mt_grow((void **)&u->maps, &u->capmaps, u->nmaps + 1, sizeof *u->maps))
		return -1;
	char *p = strdup(path);
	if (!p)
		return -1;
	u->maps[u->nmaps++] = (struct umap){pid, start, len, pgoff, p};
	return 0;
}

int mt_unwind_add_image(struct mt_unwind *u, uint32_t pid, uint64_t start, uint64_t len, const void *image,
			size_t size)
{
	if (u->image_fd < 0) {
		int fd = memfd_create("mt-vdso", MFD_CLOEXEC);
		if (fd < 0)
			return -1;
		if (write(fd, image, size) != (ssize_t)size) {
			close(fd);
			return -1;
		}
		u->image_fd = fd;
		snprintf(u->image_path, sizeof u->image_path, "/proc/self/fd/%d", fd);
	}
	return mt_unwind_add_map(u, pid, start, len, 0, u->image_path);
}

static struct uproc *proc_of(struct mt_unwind *u, uint32_t pid)
{
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid)
			return &u->procs[i];
	if (!mt_grow((void **)&u->procs, &u->capprocs, u->nprocs + 1, sizeof *u->procs))
		return NULL;
	Dwfl *d = u->dw->dwfl_begin(&u->callbacks);
	if (!d)
		return NULL;
	u->procs[u->nprocs] = (struct uproc){pid, d, false};
	return &u->procs[u->nprocs++];
}

/* The object of pc reported to the process's Dwfl (perf's report_module):
 * the latest mapping of it, based where the file's offset 0 would be. */
static bool report_module(struct mt_unwind *u, struct uproc *p, uint64_t pc)
{
	if (u->dw->dwfl_addrmodule(p->dwfl, pc))
		return true;
	const struct umap *m = NULL;
	for (size_t i = u->nmaps; i-- > 0;)
		if (u->maps[i].pid == p->pid && pc - u->maps[i].start < u->maps[i].len) {
			m = &u->maps[i];
			break;
		}
	if (!m)
		return false;
	const char *base = strrchr(m->path, '/');
	u->dw->dwfl_report_begin_add(p->dwfl);
	Dwfl_Module *mod = u->dw->dwfl_report_elf(p->dwfl, base ? base + 1 : m->path, m->path, -1, m->start - m->pgoff, false);
	u->dw->dwfl_report_end(p->dwfl, NULL, NULL);
	return mod != NULL;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct mt_unwind *u = arg;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return (pid_t)u->cur->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct mt_unwind *u = arg;
	*thread_argp = u;
	return (uint32_t)tid == u->cur->tid;
}

/* Only the stack copy is read: perf's copy from the sampled SP. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct mt_unwind *u = arg;
	const struct mt_unwind_sample *s = u->cur;
	uint64_t sp = s->regs[MT_PREG_SP];
	if (addr < sp || addr - sp > s->stack_size || s->stack_size - (addr - sp) < 8) {
		u->why = "the stack copy ends (perf record --call-graph=dwarf,SIZE copies more)";
		return false;
	}
	memcpy(result, s->stack + (addr - sp), 8);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct mt_unwind *u = arg;
	const struct mt_unwind_sample *s = u->cur;
	/* DWARF x86-64 numbering: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
	static const int perf_of_dwarf[17] = {MT_PREG_AX, MT_PREG_DX, MT_PREG_CX, MT_PREG_BX, MT_PREG_SI,
					      MT_PREG_DI, MT_PREG_BP, MT_PREG_SP, MT_PREG_R8, MT_PREG_R8 + 1,
					      MT_PREG_R8 + 2, MT_PREG_R8 + 3, MT_PREG_R8 + 4, MT_PREG_R8 + 5,
					      MT_PREG_R8 + 6, MT_PREG_R8 + 7, MT_PREG_IP};
	if (u->resume) {
		/* the frame libdwfl stopped at, each register it did not
		 * know as the frame inside it left it; its PC inside the call
		 * (libdwfl looks up a first frame's PC as it is) */
		Dwarf_Word w[16];
		memcpy(w, u->carry, sizeof w);
		if (!u->dw->dwfl_thread_state_registers(thread, 0, 16, w))
			return false;
		u->dw->dwfl_thread_state_register_pc(thread, u->last_activation ? u->last_pc : u->last_pc - 1);
		return true;
	}
	for (int r = 0; r < 17; r++) {
		int pr = perf_of_dwarf[r];
		if (!(s->mask >> pr & 1))
			continue;
		Dwarf_Word w = s->regs[pr];
		if (!u->dw->dwfl_thread_state_registers(thread, r, 1, &w))
			return false;
	}
	u->dw->dwfl_thread_state_register_pc(thread, s->regs[MT_PREG_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int frame_callback(Dwfl_Frame *frame, void *arg)
{
	struct mt_unwind *u = arg;
	struct uproc *p = proc_of(u, u->cur->pid);
	Dwarf_Addr pc;
	bool activation;
	if (!u->dw->dwfl_frame_pc(frame, &pc, NULL)) {
		u->why = u->dw->dwfl_errmsg(-1);
		return DWARF_CB_ABORT;
	}
	if (!report_module(u, p, pc)) /* the unwinder needs its CFI for the next step */
		u->why = "a frame's address is in no mapped object";
	if (!u->dw->dwfl_frame_pc(frame, &pc, &activation)) {
		u->why = u->dw->dwfl_errmsg(-1);
		return DWARF_CB_ABORT;
	}
	if (u->skip) { /* a resumed walk's first frame: written already */
		u->skip--;
		return DWARF_CB_OK;
	}
	u->last_known = 0;
	for (unsigned r = 0; r < 17; r++) {
		Dwarf_Word v;
		if (u->dw->dwfl_frame_reg(frame, r, &v) == 0) {
			u->carry[r] = v;
			u->last_known |= 1u << r;
		}
	}
	u->last_pc = pc;
	u->last_activation = activation;
	u->pcs[u->n++] = activation ? pc : pc - 1;
	return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* Whether the walk that ended at the last frame ended where perf's
 * unwinder (libunwind) would go on. libdwfl takes a register that no CFI
 * rule gives (rbx through _dl_fixup's entry, say) as unknown, and a CFA
 * computed from it (_dl_runtime_resolve's rbx+32) as no caller: the
 * walk ends. libunwind takes such a register as keeping its value, and
 * goes on. Where the frame's CFI says its return address is undefined
 * (_start, clone3), it is the outermost for both. */
static bool goes_on(struct mt_unwind *u, struct uproc *p)
{
	if ((u->last_known & 0xffff) == 0xffff)
		return false; /* every register known: libdwfl ended for another reason */
	Dwarf_Addr pc = u->last_activation ? u->last_pc : u->last_pc - 1, bias;
	Dwfl_Module *mod = u->dw->dwfl_addrmodule(p->dwfl, pc);
	if (!mod)
		return false;
	Dwarf_Frame *f = NULL;
	Dwarf_CFI *cfi = u->dw->dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || u->dw->dwarf_cfi_addrframe(cfi, pc - bias, &f) != 0) {
		cfi = u->dw->dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || u->dw->dwarf_cfi_addrframe(cfi, pc - bias, &f) != 0)
			return false; /* no CFI: libdwfl's own end, as perf's */
	}
	Dwarf_Addr start, end;
	bool signal;
	int ra = u->dw->dwarf_frame_info(f, &start, &end, &signal);
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	bool undefined = ra < 0 || u->dw->dwarf_frame_register(f, ra, mem, &ops, &nops) != 0 || (nops == 0 && ops == mem);
	free(f);
	return !undefined;
}

size_t mt_unwind_run(struct mt_unwind *u, const struct mt_unwind_sample *s, uint64_t *pcs, size_t max,
		     const char **why)
{
	*why = NULL;
	if (!max)
		return 0;
	if (!(s->mask >> MT_PREG_IP & 1) || !(s->mask >> MT_PREG_SP & 1)) {
		*why = "the sample holds no IP or SP register";
		return 0;
	}
	struct uproc *p = proc_of(u, s->pid);
	if (!p) {
		*why = "out of memory";
		return 0;
	}
	u->cur = s;
	u->pcs = pcs;
	u->n = 0;
	u->max = max;
	u->why = NULL;
	if (!report_module(u, p, s->regs[MT_PREG_IP])) {
		pcs[0] = s->regs[MT_PREG_IP];
		*why = "the sampled IP is in no mapped object";
		return 1;
	}
	if (!p->attached) {
		/* the architecture comes from the first module's ELF */
		if (!u->dw->dwfl_attach_state(p->dwfl, NULL, (pid_t)s->pid, &thread_callbacks, u)) {
			pcs[0] = s->regs[MT_PREG_IP];
			*why = u->dw->dwfl_errmsg(-1);
			return 1;
		}
		p->attached = true;
	}
	u->resume = false;
	u->skip = 0;
	int rc = u->dw->dwfl_getthread_frames(p->dwfl, (pid_t)s->tid, frame_callback, u);
	/* where libdwfl stopped for want of a register libunwind would keep,
	 * go on from that frame: at most a few times, each adding frames */
	for (int tries = 0; tries < 8 && u->n && u->n < max && !u->why && goes_on(u, p); tries++) {
		size_t before = u->n;
		u->resume = true;
		u->skip = 1;
		rc = u->dw->dwfl_getthread_frames(p->dwfl, (pid_t)s->tid, frame_callback, u);
		u->resume = false;
		u->skip = 0;
		if (u->n == before)
			break;
	}
	if (!u->n) {
		pcs[u->n++] = s->regs[MT_PREG_IP];
		if (!u->why)
			u->why = u->dw->dwfl_errmsg(-1);
	}
	/* a failed step also ends the walk as if at the outermost frame (rc
	 * 0): what failed on the way is the reason. libdwfl's own failures
	 * (no CFI past the outermost frame) end it as they end perf's. */
	(void)rc;
	if (u->n == max)
		u->why = NULL; /* cut at max: the caller's limit, not a failure */
	*why = u->why;
	u->cur = NULL;
	return u->n;
}
