/* synth: recording the ground truth (ptrace) and classifying instructions. */
#define _GNU_SOURCE
#include "synth.h"

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

static int push_ip(uint64_t **v, size_t *n, size_t *cap, uint64_t ip)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1 << 16;
		uint64_t *nv = realloc(*v, nc * sizeof *nv);
		if (!nv)
			return MT_ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = ip;
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

/* Single-steps argv to its exit, recording every user RIP. */
static int record_steps(char *const argv[], bool quiet, struct mt_synth_run *run, struct mt_err *err)
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
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL));
	run->pid = (uint32_t)pid;
	const char *base = strrchr(argv[0], '/');
	snprintf(run->comm, sizeof run->comm, "%s", base ? base + 1 : argv[0]);
	size_t cap = 0;
	int sig = 0, rc = 0;
	bool skip_record = false;
	for (;;) {
		if (skip_record) {
			/* The instruction at a signal-delivery stop does not run
			 * next when a handler is entered: it is not recorded. */
			skip_record = false;
			goto step;
		}
		long rip = ptrace(PTRACE_PEEKUSER, pid, (void *)offsetof(struct user_regs_struct, rip), NULL);
		if (rip == -1 && errno) {
			rc = mt_err_set(err, MT_EIO, "ptrace PEEKUSER: %s", strerror(errno));
			break;
		}
		if ((rc = push_ip(&run->ips, &run->nips, &cap, (uint64_t)rip)))
			break;
	step:
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, (void *)(long)sig) < 0) {
			rc = mt_err_set(err, MT_EIO, "ptrace SINGLESTEP: %s", strerror(errno));
			break;
		}
		sig = 0;
		if (waitpid(pid, &status, 0) < 0) {
			rc = mt_err_set(err, MT_EIO, "waitpid: %s", strerror(errno));
			break;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			rc = mt_err_set(err, MT_EIO, "%s exited before its exit event", argv[0]);
			break;
		}
		if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
			unsigned long code = 0;
			ptrace(PTRACE_GETEVENTMSG, pid, NULL, &code);
			run->exit_status = (int)(code >> 8 & 0xff);
			rc = read_maps(run, pid, err);
			break;
		}
		if (WSTOPSIG(status) != SIGTRAP) {
			/* A signal stop executed nothing: drop the instruction
			 * recorded before it. The next step delivers the signal. */
			sig = WSTOPSIG(status);
			run->nips--;
			skip_record = signal_caught(pid, sig);
		}
	}
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	waitpid(pid, &status, 0);
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
	free(run->tab);
	memset(run, 0, sizeof *run);
}

static const struct mt_synth_map *map_of(const struct mt_synth_run *run, uint64_t ip)
{
	for (size_t i = 0; i < run->nmaps; i++)
		if (ip >= run->maps[i].start && ip - run->maps[i].start < run->maps[i].len)
			return &run->maps[i];
	return NULL;
}

/* Length of a VEX- or EVEX-encoded instruction (AVX, AVX-512, mask ops),
 * some of which Capstone 4 does not know. Neither encoding is ever a
 * branch, so the length is all the synthesizer needs. 0: not VEX/EVEX. */
static unsigned vex_len(const uint8_t *c, size_t avail)
{
	if (avail < 8)
		return 0;
	unsigned p, map;
	if (c[0] == 0xc5) {
		p = 2;
		map = 1;
	} else if (c[0] == 0xc4) {
		p = 3;
		map = c[1] & 0x1f;
	} else if (c[0] == 0x62) {
		p = 4;
		map = c[1] & 3;
	} else {
		return 0;
	}
	if (map < 1 || map > 3)
		return 0;
	uint8_t op = c[p], modrm = c[p + 1];
	unsigned mod = modrm >> 6, rm = modrm & 7, n = p + 2;
	if (mod != 3 && rm == 4) {
		if (mod == 0 && (c[p + 2] & 7) == 5)
			n += 4;
		n++;
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		n += 4;
	if (map == 3 || (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 || (op >= 0xc4 && op <= 0xc6))))
		n += 1;
	return n;
}

static int classify(csh cs, const struct mt_synth_run *run, uint64_t ip, struct mt_synth_insn *out)
{
	const struct mt_synth_map *m = map_of(run, ip);
	if (!m)
		return -1;
	size_t avail = m->start + m->len - ip;
	const uint8_t *code = m->bytes + (ip - m->start);
	cs_insn *insn;
	size_t n = cs_disasm(cs, code, avail < 16 ? avail : 16, ip, 1, &insn);
	if (n != 1) {
		unsigned len = vex_len(code, avail);
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

/* Is `next` a possible successor of instruction i? */
static bool follows(const struct mt_synth_insn *i, uint64_t next)
{
	uint64_t ft = i->ip + i->len;
	switch (i->cls) {
	case MT_IC_OTHER: return next == ft || (i->rep && next == i->ip);
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
	int rc = record_steps(argv, quiet, run, err);
	if (rc)
		return rc;
	csh cs;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return mt_err_set(err, MT_EUNSUP, "capstone: cannot open an x86-64 disassembler");
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	/* Rebuild the instruction list: drop REP repeats, bridge missed steps. */
	uint64_t *out = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < run->nips && !rc; i++) {
		uint64_t ip = run->ips[i];
		const struct mt_synth_insn *s = lookup(cs, run, ip, &rc);
		if (!s) {
			rc = mt_err_set(err, MT_EFORMAT, "cannot decode the instruction at 0x%" PRIx64
					" (step %zu): outside the executable mappings, or unknown to Capstone", ip, i);
			break;
		}
		if (s->rep && n && out[n - 1] == ip) {
			run->collapsed++;
			continue;
		}
		if (n) {
			const struct mt_synth_insn *prev = mt_synth_insn_at(run, out[n - 1]);
			if (!follows(prev, ip)) {
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
					rc = push_ip(&out, &n, &cap, path[k]);
				run->repaired += (uint64_t)plen;
			}
		}
		if (!rc)
			rc = push_ip(&out, &n, &cap, ip);
	}
	cs_close(&cs);
	if (rc == MT_ENOMEM)
		mt_err_set(err, rc, "out of memory classifying instructions");
	free(run->ips);
	run->ips = out;
	run->nips = n;
	for (size_t i = 0; !rc && i < n; i++)
		if (mt_synth_insn_at(run, out[i])->cls == MT_IC_UNSUPPORTED)
			rc = mt_err_set(err, MT_EUNSUP, "instruction at 0x%" PRIx64 " (far branch, iret, int3 or ud2) "
					"cannot be synthesized", out[i]);
	return rc;
}
