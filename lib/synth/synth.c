/* synth: recording the ground truth (ptrace) and classifying instructions. */
#define _GNU_SOURCE
#include "synth/synth.h"
#include "base/strtab.h"
#include "trace/x86.h"

#include <capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t hash_ip(uint64_t ip)
{
	ip ^= ip >> 33;
	ip *= 0xff51afd7ed558ccdULL;
	ip ^= ip >> 33;
	return ip;
}

static struct mt_synth_insn *slot(struct mt_synth_insn *tab, size_t cap, uint64_t ip)
{
	size_t i = hash_ip(ip) & (cap - 1);
	while (tab[i].ip && tab[i].ip != ip)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

const struct mt_synth_insn *mt_synth_insn_at(const struct mt_synth_run *run, uint64_t ip)
{
	if (!run->tabcap)
		return NULL;
	const struct mt_synth_insn *s = slot(run->tab, run->tabcap, ip);
	return s->ip ? s : NULL;
}

static int tab_reserve(struct mt_synth_run *run)
{
	if (run->tabn * 2 < run->tabcap)
		return 0;
	size_t nc = run->tabcap ? run->tabcap * 2 : 4096;
	struct mt_synth_insn *nt = calloc(nc, sizeof *nt);
	if (!nt)
		return MT_ENOMEM;
	for (size_t i = 0; i < run->tabcap; i++)
		if (run->tab[i].ip)
			*slot(nt, nc, run->tab[i].ip) = run->tab[i];
	free(run->tab);
	run->tab = nt;
	run->tabcap = nc;
	return 0;
}

int mt_synth_insn_add(struct mt_synth_run *run, const struct mt_synth_insn *insn)
{
	if (!insn->ip)
		return MT_EFORMAT;
	if (tab_reserve(run))
		return MT_ENOMEM;
	struct mt_synth_insn *s = slot(run->tab, run->tabcap, insn->ip);
	if (s->ip)
		return MT_EFORMAT;
	*s = *insn;
	run->tabn++;
	return 0;
}

/* The GNU build-id note of an ELF file, as perf records it. */
static void read_build_id(struct mt_synth_map *m)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz <= 20) {
				memcpy(m->build_id, (char *)d->d_buf + desc_off, nh.n_descsz);
				m->build_id_size = (uint8_t)nh.n_descsz;
				goto out;
			}
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
}

static int read_maps(struct mt_synth_run *run, pid_t pid, struct mt_err *err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	snprintf(path, sizeof path, "/proc/%d/mem", pid);
	int memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (memfd < 0) {
		fclose(f);
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	}
	char line[8192];
	int rc = 0;
	while (!rc && fgets(line, sizeof line, f)) {
		uint64_t start, end, off, ino;
		unsigned maj, min;
		char perms[8];
		int n = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &off, &maj, &min, &ino, &n) < 7)
			continue;
		if (perms[2] != 'x')
			continue;
		void *nm = realloc(run->maps, (run->nmaps + 1) * sizeof *run->maps);
		if (!nm) {
			rc = mt_err_set(err, MT_ENOMEM, "out of memory");
			break;
		}
		run->maps = nm;
		struct mt_synth_map *m = &run->maps[run->nmaps];
		memset(m, 0, sizeof *m);
		m->start = start;
		m->len = end - start;
		m->pgoff = off;
		m->maj = maj;
		m->min = min;
		m->ino = ino;
		m->prot = (perms[0] == 'r' ? 1 : 0) | (perms[1] == 'w' ? 2 : 0) | 4;
		char *p = line + n;
		p[strcspn(p, "\n")] = '\0';
		snprintf(m->path, sizeof m->path, "%s", p);
		if (m->path[0] == '/')
			read_build_id(m);
		m->bytes = malloc(m->len);
		if (!m->bytes) {
			rc = mt_err_set(err, MT_ENOMEM, "out of memory");
			break;
		}
		ssize_t got = pread(memfd, m->bytes, m->len, (off_t)start);
		if (got < 0)
			memset(m->bytes, 0, m->len); /* e.g. [vsyscall]: unreadable, never decoded */
		run->nmaps++;
	}
	close(memfd);
	fclose(f);
	return rc;
}


/* Does the tracee have a handler for sig (SigCgt in /proc/PID/status)? */
static bool signal_caught(pid_t pid, int sig)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	uint64_t mask = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "SigCgt: %" SCNx64, &mask) == 1)
			break;
	fclose(f);
	return (mask >> (sig - 1)) & 1;
}

/* --- the recorder's scheduler: threads run one at a time, as on one CPU --- */

#define QUANTUM 3000          /* steps before another ready thread gets the CPU */
#define STEP_WAIT_US 20000    /* a step not back by then is blocked in the kernel */

enum tstate { T_NEW, T_READY, T_INFLIGHT, T_GONE };

struct tracee {
	pid_t tid;
	enum tstate st;
	bool record;          /* push RIP before the next step */
	int sig;              /* signal to deliver with the next step */
	size_t last;          /* index of its last recorded step */
	bool has_last;
};

/* The PTWRITEs emulated, in the order they ran. */
struct ptw_log {
	struct mt_synth_ptw *v;
	size_t n, cap;
};

struct sched {
	struct ptw_log ptw;
	struct mt_synth_run *run;
	struct tracee th[MT_SYNTH_MAX_THREADS];
	int nth;
	size_t cap;
	bool done;
};

static void on_alarm(int sig)
{
	(void)sig;
}

static int push_step(struct mt_synth_run *run, size_t *cap, uint64_t ip, uint32_t tid)
{
	if (run->nips == *cap) {
		size_t nc = *cap ? *cap * 2 : 1 << 16;
		uint64_t *ni = realloc(run->ips, nc * sizeof *ni);
		if (!ni)
			return MT_ENOMEM;
		run->ips = ni;
		uint32_t *nt = realloc(run->tids, nc * sizeof *nt);
		if (!nt)
			return MT_ENOMEM;
		run->tids = nt;
		*cap = nc;
	}
	run->ips[run->nips] = ip;
	run->tids[run->nips++] = tid;
	return 0;
}

static int live_threads(const struct sched *sc)
{
	int n = 0;
	for (int i = 0; i < sc->nth; i++)
		n += sc->th[i].st != T_GONE;
	return n;
}

static struct tracee *tracee_of(struct sched *sc, pid_t tid, struct mt_err *err)
{
	for (int i = 0; i < sc->nth; i++)
		if (sc->th[i].tid == tid)
			return &sc->th[i];
	if (sc->nth == MT_SYNTH_MAX_THREADS) {
		mt_err_set(err, MT_EUNSUP, "more than %d threads", MT_SYNTH_MAX_THREADS);
		return NULL;
	}
	/* a new thread can stop before its parent's clone event is seen */
	struct tracee *t = &sc->th[sc->nth++];
	*t = (struct tracee){.tid = tid, .st = T_NEW, .record = true};
	sc->run->threads[sc->run->nthreads++] = (uint32_t)tid;
	return t;
}

static int on_stop(struct sched *sc, pid_t w, int status, struct mt_err *err)
{
	struct mt_synth_run *run = sc->run;
	struct tracee *t = tracee_of(sc, w, err);
	if (!t)
		return MT_EUNSUP;
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		t->st = T_GONE;
		if ((uint32_t)w == run->pid)
			return mt_err_set(err, MT_EIO, "the program exited before its exit event");
		return 0;
	}
	if (!WIFSTOPPED(status))
		return 0;
	int sig = WSTOPSIG(status), event = status >> 16;
	if (event == PTRACE_EVENT_CLONE) {
		unsigned long tid = 0;
		ptrace(PTRACE_GETEVENTMSG, w, NULL, &tid);
		if (!tracee_of(sc, (pid_t)tid, err))
			return MT_EUNSUP;
		t->st = T_READY;
		t->record = false; /* mid-syscall: the next step finishes it */
		return 0;
	}
	if (event == PTRACE_EVENT_EXIT) {
		if ((uint32_t)w == run->pid) {
			unsigned long code = 0;
			ptrace(PTRACE_GETEVENTMSG, w, NULL, &code);
			run->exit_status = (int)(code >> 8 & 0xff);
			sc->done = true;
			return read_maps(run, w, err);
		}
		t->st = T_GONE;
		ptrace(PTRACE_CONT, w, NULL, NULL);
		return 0;
	}
	if (t->st == T_NEW && sig == SIGSTOP) {
		t->st = T_READY;
		return 0;
	}
	t->st = T_READY;
	t->record = true;
	if (sig == SIGTRAP)
		return 0;
	/* A signal stop executed nothing: drop the step recorded before it
	 * (marked 0, removed later). The next step delivers the signal; if a
	 * handler is entered, the interrupted instruction does not run next. */
	if (t->has_last) {
		run->ips[t->last] = 0;
		t->has_last = false;
	}
	t->sig = sig;
	t->record = !signal_caught(run->pid, sig);
	return 0;
}

/* Not PTWRITEs, by address: most steps need no look at their bytes. */
#define NOT_PTW_CACHE 4096

/* The general register that a ModRM r/m field (with REX.B) names. */
static uint64_t reg_of(const struct user_regs_struct *r, unsigned rm)
{
	const unsigned long long v[16] = {r->rax, r->rcx, r->rdx, r->rbx, r->rsp, r->rbp, r->rsi, r->rdi,
					  r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15};
	return v[rm & 15];
}

/* The instruction at the tracee's rip, if a PTWRITE: emulated (its
 * payload logged, rip moved past it). 1: emulated, 0: not a PTWRITE. */
static int emulate_ptwrite(struct sched *sc, pid_t tid, uint64_t rip, uint64_t *not_ptw, struct mt_err *err)
{
	size_t slot = rip % NOT_PTW_CACHE;
	if (not_ptw[slot] == rip)
		return 0;
	uint8_t code[16];
	for (int k = 0; k < 2; k++) {
		errno = 0;
		long word = ptrace(PTRACE_PEEKTEXT, tid, (void *)(rip + 8 * (uint64_t)k), NULL);
		if (word == -1 && errno)
			return mt_err_set(err, MT_EIO, "ptrace PEEKTEXT at 0x%" PRIx64 ": %s", rip, strerror(errno));
		memcpy(code + 8 * k, &word, 8);
	}
	unsigned len = mt_ptwrite_length(code, sizeof code);
	if (!len) {
		not_ptw[slot] = rip;
		return 0;
	}
	/* F3 [REX] 0F AE /4 */
	unsigned rex = (code[1] & 0xf0) == 0x40 ? code[1] : 0;
	uint8_t modrm = code[rex ? 4 : 3];
	if (modrm >> 6 != 3)
		return mt_err_set(err, MT_EUNSUP, "the PTWRITE at 0x%" PRIx64 " has a memory operand, which mt-synth "
				  "does not emulate", rip);
	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) < 0)
		return mt_err_set(err, MT_EIO, "ptrace GETREGS: %s", strerror(errno));
	bool wide = rex & 8;
	uint64_t value = reg_of(&regs, (modrm & 7) | (rex & 1 ? 8 : 0));
	struct ptw_log *l = &sc->ptw;
	if (!mt_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
		return mt_err_set(err, MT_ENOMEM, "out of memory recording");
	l->v[l->n++] = (struct mt_synth_ptw){.payload = wide ? value : (uint32_t)value, .bytes = wide ? 8 : 4};
	regs.rip += len;
	if (ptrace(PTRACE_SETREGS, tid, NULL, &regs) < 0)
		return mt_err_set(err, MT_EIO, "ptrace SETREGS: %s", strerror(errno));
	return 1;
}

/* Single-steps argv to its exit, recording every user RIP. */
static int record_steps(char *const argv[], bool quiet, struct mt_synth_run *run, struct ptw_log *ptw,
			struct mt_err *err)
{
	memset(run, 0, sizeof *run);
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return mt_err_set(err, MT_EIO, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return mt_err_set(err, MT_EIO, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(pipefd[0]);
		personality(ADDR_NO_RANDOMIZE);
		if (quiet) {
			int dn = open("/dev/null", O_WRONLY);
			if (dn >= 0)
				dup2(dn, 1);
		}
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(argv[0], argv);
		int e = errno;
		if (write(pipefd[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	int status;
	pid_t w = waitpid(pid, &status, 0);
	/* exec failed: the child reports errno through the pipe and exits */
	int e = 0;
	bool stopped = w == pid && WIFSTOPPED(status);
	if (stopped && WSTOPSIG(status) == SIGTRAP) {
		close(pipefd[0]); /* closed on exec: at the first instruction */
	} else {
		ssize_t r = read(pipefd[0], &e, sizeof e);
		close(pipefd[0]);
		if (stopped) {
			kill(pid, SIGKILL);
			ptrace(PTRACE_CONT, pid, NULL, NULL);
		}
		while (waitpid(pid, &status, 0) > 0 && !WIFEXITED(status) && !WIFSIGNALED(status))
			;
		if (r == (ssize_t)sizeof e)
			return mt_err_set(err, MT_EIO, "%s: %s", argv[0], strerror(e));
		return mt_err_set(err, MT_EIO, "%s: did not start under ptrace", argv[0]);
	}
	/* pipe closed on exec: the child is at its first instruction */
	ptrace(PTRACE_SETOPTIONS, pid, NULL,
	       (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE));
	run->pid = (uint32_t)pid;
	const char *base = strrchr(argv[0], '/');
	snprintf(run->comm, sizeof run->comm, "%s", base ? base + 1 : argv[0]);
	struct sched sc = {.run = run};
	uint64_t *not_ptw = calloc(NOT_PTW_CACHE, sizeof *not_ptw);
	if (!not_ptw) {
		kill(pid, SIGKILL);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	sc.th[0] = (struct tracee){.tid = pid, .st = T_READY, .record = true};
	sc.nth = 1;
	run->threads[0] = (uint32_t)pid;
	run->nthreads = 1;
	struct sigaction sa = {.sa_handler = on_alarm}, old_sa; /* no SA_RESTART: waitpid returns EINTR */
	sigaction(SIGALRM, &sa, &old_sa);
	int rc = 0;
	int cur = 0;
	uint64_t slice = 0;
	while (!sc.done && !rc) {
		/* stops of threads whose step outlived the wait below */
		while (!rc && (w = waitpid(-1, &status, __WALL | WNOHANG)) > 0)
			rc = on_stop(&sc, w, status, err);
		if (rc || sc.done)
			break;
		/* Round-robin on one CPU: keep the current thread for QUANTUM
		 * steps, or until it blocks in the kernel. */
		int pick = -1;
		for (int k = 0; k < sc.nth && pick < 0; k++) {
			int c = (cur + (slice >= QUANTUM ? 1 : 0) + k) % sc.nth;
			if (sc.th[c].st == T_READY)
				pick = c;
		}
		if (pick < 0) {
			w = waitpid(-1, &status, __WALL);
			if (w < 0) {
				rc = mt_err_set(err, MT_EIO, "waitpid: %s", strerror(errno));
				break;
			}
			rc = on_stop(&sc, w, status, err);
			continue;
		}
		if (pick != cur)
			slice = 0;
		cur = pick;
		struct tracee *t = &sc.th[cur];
		if (t->record) {
			errno = 0;
			long rip = ptrace(PTRACE_PEEKUSER, t->tid, (void *)offsetof(struct user_regs_struct, rip), NULL);
			if (rip == -1 && errno) {
				rc = mt_err_set(err, MT_EIO, "ptrace PEEKUSER: %s", strerror(errno));
				break;
			}
			if ((rc = push_step(run, &sc.cap, (uint64_t)rip, (uint32_t)t->tid)))
				break;
			t->last = run->nips - 1;
			t->has_last = true;
			int em = emulate_ptwrite(&sc, t->tid, (uint64_t)rip, not_ptw, err);
			if (em < 0) {
				rc = em;
				break;
			}
			if (em) { /* it ran: nothing to step, nor to undo */
				t->has_last = false;
				slice++;
				continue;
			}
		}
		if (ptrace(PTRACE_SINGLESTEP, t->tid, NULL, (void *)(long)t->sig) < 0) {
			rc = mt_err_set(err, MT_EIO, "ptrace SINGLESTEP: %s", strerror(errno));
			break;
		}
		t->sig = 0;
		t->st = T_INFLIGHT;
		slice++;
		/* A step that blocks (futex, read) must not stall the run while
		 * other threads could go: wait with a timeout then. */
		bool timed_wait = live_threads(&sc) > 1;
		if (timed_wait) {
			struct itimerval it = {.it_value = {.tv_usec = STEP_WAIT_US}};
			setitimer(ITIMER_REAL, &it, NULL);
		}
		w = waitpid(t->tid, &status, __WALL);
		int wait_errno = errno;
		if (timed_wait) {
			struct itimerval off = {0};
			setitimer(ITIMER_REAL, &off, NULL);
		}
		if (w == t->tid)
			rc = on_stop(&sc, w, status, err);
		else if (!(w < 0 && wait_errno == EINTR))
			rc = mt_err_set(err, MT_EIO, "waitpid: %s", strerror(wait_errno));
	}
	sigaction(SIGALRM, &old_sa, NULL);
	free(not_ptw);
	*ptw = sc.ptw;
	/* A tracee in an exit-event stop ignores SIGKILL until resumed. */
	kill(pid, SIGKILL);
	for (int i = 0; i < sc.nth; i++)
		if (sc.th[i].st != T_GONE)
			ptrace(PTRACE_CONT, sc.th[i].tid, NULL, NULL);
	/* ... and the SIGKILL brings a stopped one to that stop first */
	while ((w = waitpid(-1, &status, __WALL)) > 0)
		if (WIFSTOPPED(status))
			ptrace(PTRACE_CONT, w, NULL, NULL);
	if (rc == MT_ENOMEM)
		mt_err_set(err, rc, "out of memory recording");
	return rc;
}

void mt_synth_run_free(struct mt_synth_run *run)
{
	for (size_t i = 0; i < run->nmaps; i++)
		free(run->maps[i].bytes);
	free(run->maps);
	free(run->ips);
	free(run->tids);
	free(run->tab);
	free(run->ptw);
	memset(run, 0, sizeof *run);
}

const struct mt_synth_map *mt_synth_map_of(const struct mt_synth_run *run, uint64_t ip)
{
	for (size_t i = 0; i < run->nmaps; i++)
		if (ip >= run->maps[i].start && ip - run->maps[i].start < run->maps[i].len)
			return &run->maps[i];
	return NULL;
}

static int classify(csh cs, const struct mt_synth_run *run, uint64_t ip, struct mt_synth_insn *out)
{
	const struct mt_synth_map *m = mt_synth_map_of(run, ip);
	if (!m)
		return -1;
	size_t avail = m->start + m->len - ip;
	const uint8_t *code = m->bytes + (ip - m->start);
	unsigned ptw_len = mt_ptwrite_length(code, avail < 15 ? avail : 15);
	if (ptw_len) { /* Capstone 4 knows none */
		memset(out, 0, sizeof *out);
		out->ip = ip;
		out->len = (uint8_t)ptw_len;
		out->cls = MT_IC_PTWRITE;
		return 0;
	}
	cs_insn *insn;
	size_t n = cs_disasm(cs, code, avail < 16 ? avail : 16, ip, 1, &insn);
	if (n != 1) {
		unsigned len = mt_vex_length(code, avail < 15 ? avail : 15);
		if (!len)
			return -1;
		memset(out, 0, sizeof *out);
		out->ip = ip;
		out->len = (uint8_t)len;
		out->cls = MT_IC_OTHER;
		return 0;
	}
	memset(out, 0, sizeof *out);
	out->ip = ip;
	out->len = (uint8_t)insn->size;
	out->cls = MT_IC_OTHER;
	cs_x86 *x = &insn->detail->x86;
	bool imm = x->op_count > 0 && x->operands[0].type == X86_OP_IMM;
	if (insn->id == X86_INS_SYSCALL || insn->id == X86_INS_SYSENTER ||
	    (insn->id == X86_INS_INT && imm && x->operands[0].imm == 0x80))
		out->cls = MT_IC_SYSCALL;
	else if (insn->id == X86_INS_RETF || insn->id == X86_INS_LJMP || insn->id == X86_INS_LCALL ||
		 cs_insn_group(cs, insn, CS_GRP_IRET) || insn->id == X86_INS_INT3 || insn->id == X86_INS_UD2)
		out->cls = MT_IC_UNSUPPORTED;
	else if (cs_insn_group(cs, insn, CS_GRP_RET))
		out->cls = MT_IC_RET;
	else if (cs_insn_group(cs, insn, CS_GRP_CALL))
		out->cls = imm ? MT_IC_CALL : MT_IC_CALL_IND;
	else if (cs_insn_group(cs, insn, CS_GRP_JUMP))
		out->cls = insn->id == X86_INS_JMP ? (imm ? MT_IC_JMP : MT_IC_JMP_IND) : MT_IC_JCC;
	if (imm && out->cls != MT_IC_OTHER && out->cls != MT_IC_SYSCALL)
		out->target = (uint64_t)x->operands[0].imm;
	for (int i = 0; i < 4; i++)
		if (x->prefix[i] == X86_PREFIX_REP || x->prefix[i] == X86_PREFIX_REPNE)
			out->rep = out->cls == MT_IC_OTHER;
	cs_free(insn, n);
	return 0;
}

static const struct mt_synth_insn *lookup(csh cs, struct mt_synth_run *run, uint64_t ip, int *rc)
{
	if ((*rc = tab_reserve(run)))
		return NULL;
	struct mt_synth_insn *s = slot(run->tab, run->tabcap, ip);
	if (!s->ip) {
		if (classify(cs, run, ip, s) < 0) {
			s->ip = 0;
			*rc = MT_EFORMAT;
			return NULL;
		}
		run->tabn++;
	}
	return s;
}

bool mt_synth_follows(const struct mt_synth_insn *i, uint64_t next)
{
	uint64_t ft = i->ip + i->len;
	switch (i->cls) {
	case MT_IC_OTHER: return next == ft || (i->rep && next == i->ip);
	case MT_IC_PTWRITE: return next == ft;
	case MT_IC_JCC: return next == ft || next == i->target;
	case MT_IC_JMP: case MT_IC_CALL: return next == i->target;
	default: return true; /* indirect, ret, syscall: anything */
	}
}

/* A missed single-step (after CPUID and similar emulated instructions in a
 * VM) drops instructions from the record. Find the straight-line path of at
 * most `depth` instructions from `from` to `to` and append it. */
static int bridge(csh cs, struct mt_synth_run *run, uint64_t from, uint64_t to, int depth,
		  uint64_t *path, int *plen)
{
	if (from == to)
		return 1;
	if (depth == 0)
		return 0;
	int rc;
	const struct mt_synth_insn *s = lookup(cs, run, from, &rc);
	if (!s)
		return 0;
	uint64_t ft = s->ip + s->len, tgt = s->target;
	uint8_t cls = s->cls;
	path[(*plen)++] = from;
	if ((cls == MT_IC_OTHER || cls == MT_IC_JCC) && bridge(cs, run, ft, to, depth - 1, path, plen))
		return 1;
	if ((cls == MT_IC_JCC || cls == MT_IC_JMP) && bridge(cs, run, tgt, to, depth - 1, path, plen))
		return 1;
	(*plen)--;
	return 0;
}

int mt_synth_record(char *const argv[], bool quiet, struct mt_synth_run *run, struct mt_err *err)
{
	struct ptw_log ptw = {0};
	int rc = record_steps(argv, quiet, run, &ptw, err);
	if (rc) {
		free(ptw.v);
		return rc;
	}
	size_t ptw_next = 0; /* the emulated PTWRITEs, given to their steps in order */
	csh cs;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return mt_err_set(err, MT_EUNSUP, "capstone: cannot open an x86-64 disassembler");
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	/* Rebuild the instruction list: drop REP repeats and steps undone by
	 * signals, bridge missed steps; each thread against its own previous. */
	struct mt_synth_run out = {0};
	size_t cap = 0;
	size_t prev_of[MT_SYNTH_MAX_THREADS];
	bool has_prev[MT_SYNTH_MAX_THREADS] = {0};
	for (size_t i = 0; i < run->nips && !rc; i++) {
		uint64_t ip = run->ips[i];
		if (!ip)
			continue;
		size_t th = 0;
		while (th + 1 < run->nthreads && run->threads[th] != run->tids[i])
			th++;
		const struct mt_synth_insn *s = lookup(cs, run, ip, &rc);
		if (!s) {
			rc = mt_err_set(err, MT_EFORMAT, "cannot decode the instruction at 0x%" PRIx64
					" (step %zu): outside the executable mappings, or unknown to Capstone", ip, i);
			break;
		}
		if (s->rep && has_prev[th] && out.ips[prev_of[th]] == ip) {
			run->collapsed++;
			continue;
		}
		if (has_prev[th]) {
			const struct mt_synth_insn *prev = mt_synth_insn_at(run, out.ips[prev_of[th]]);
			if (!mt_synth_follows(prev, ip)) {
				uint64_t path[8];
				int plen = 0;
				bool ok = false;
				if (prev->cls == MT_IC_OTHER || prev->cls == MT_IC_JCC)
					ok = bridge(cs, run, prev->ip + prev->len, ip, 6, path, &plen);
				if (!ok && (prev->cls == MT_IC_JCC || prev->cls == MT_IC_JMP || prev->cls == MT_IC_CALL))
					ok = bridge(cs, run, prev->target, ip, 6, path, &plen);
				if (!ok) {
					rc = mt_err_set(err, MT_EFORMAT, "step %zu: 0x%" PRIx64 " cannot follow 0x%" PRIx64
							" and no short path bridges them", i, ip, prev->ip);
					break;
				}
				for (int k = 0; k < plen && !rc; k++)
					rc = push_step(&out, &cap, path[k], run->tids[i]);
				run->repaired += (uint64_t)plen;
			}
		}
		if (!rc && s->cls == MT_IC_PTWRITE) {
			if (ptw_next == ptw.n) {
				rc = mt_err_set(err, MT_EFORMAT, "step %zu: a PTWRITE at 0x%" PRIx64 " that did not run", i, ip);
				break;
			}
			ptw.v[ptw_next++].step = out.nips;
		}
		if (!rc)
			rc = push_step(&out, &cap, ip, run->tids[i]);
		prev_of[th] = out.nips - 1;
		has_prev[th] = true;
	}
	cs_close(&cs);
	if (rc == MT_ENOMEM)
		mt_err_set(err, rc, "out of memory classifying instructions");
	run->ptw = ptw.v;
	run->nptw = ptw_next;
	free(run->ips);
	free(run->tids);
	run->ips = out.ips;
	run->tids = out.tids;
	run->nips = out.nips;
	size_t n = out.nips;
	for (size_t i = 0; !rc && i < n; i++)
		if (mt_synth_insn_at(run, run->ips[i])->cls == MT_IC_UNSUPPORTED)
			rc = mt_err_set(err, MT_EUNSUP, "instruction at 0x%" PRIx64 " (far branch, iret, int3 or ud2) "
					"cannot be synthesized", run->ips[i]);
	return rc;
}
