/* synth: the trace synthesizer. Ground truth without Intel PT hardware.
 *
 * Runs a real program under ptrace single-step, records every user
 * instruction it executes, classifies each with Capstone, then encodes that
 * exact control flow as Intel PT (libipt's encoder) inside a perf.data that
 * Debian's perf and mt-pt2events both decode. The same run also writes the
 * true event stream, so a decoder can be checked against what really ran.
 * Knows nothing of the decoder. */
#ifndef MT_SYNTH_H
#define MT_SYNTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/mt_err.h"

enum mt_synth_class {
	MT_IC_OTHER, MT_IC_JCC, MT_IC_JMP, MT_IC_JMP_IND, MT_IC_CALL,
	MT_IC_CALL_IND, MT_IC_RET, MT_IC_SYSCALL, MT_IC_UNSUPPORTED,
	MT_IC_PTWRITE, /* emulated while recording: the CPU may not have it */
};

/* A PTWRITE the recording emulated: its step, and what it wrote (4 or 8
 * bytes). */
struct mt_synth_ptw {
	size_t step;
	uint64_t payload;
	uint8_t bytes;
};

struct mt_synth_insn {
	uint64_t ip, target;  /* target: direct branches only */
	uint8_t len, cls;
	bool rep;             /* REP-prefixed string op: traps once per iteration */
};

struct mt_synth_map {
	uint64_t start, len, pgoff, ino;
	uint32_t maj, min, prot;
	char path[4096];
	uint8_t *bytes;       /* the mapping's memory at exit */
	uint8_t build_id[20];
	uint8_t build_id_size;
};

#define MT_SYNTH_MAX_THREADS 64

struct mt_synth_run {
	uint32_t pid;
	char comm[16];
	uint32_t threads[MT_SYNTH_MAX_THREADS]; /* tids in order of creation; [0] = pid */
	size_t nthreads;
	struct mt_synth_map *maps;
	size_t nmaps;
	uint64_t *ips;        /* executed instructions in order (after repair) */
	uint32_t *tids;       /* the thread of each: threads run one at a time */
	size_t nips;
	/* distinct instructions, open-addressed by ip */
	struct mt_synth_insn *tab;
	size_t tabcap, tabn;
	/* A part of a run (a large trace's repeated call of main): the IP that
	 * runs after its last instruction; the trace ends there as an
	 * interrupt ends it. 0: the run's own end. */
	uint64_t end_next;
	/* the PTWRITEs, by step (ascending); a part's steps count from
	 * ptw_base of the run's */
	struct mt_synth_ptw *ptw;
	size_t nptw;
	size_t ptw_base;
	uint64_t repaired;    /* instructions inserted for missed single-steps */
	uint64_t collapsed;   /* REP iterations folded */
	int exit_status;
};

/* Runs argv[0] (searched in PATH) with ASLR off under single-step until it
 * exits; fills run. A PTWRITE with a register operand is emulated, not
 * executed (most CPUs here have none): its payload is read from the
 * register and the program goes on after it; one with a memory operand is
 * refused (MT_EUNSUP). Threads are followed and run one at a time, switched
 * every few thousand steps or when one blocks, as on a single CPU. stdout
 * of the program goes to /dev/null when quiet. */
int mt_synth_record(char *const argv[], bool quiet, struct mt_synth_run *run, struct mt_err *err);
void mt_synth_run_free(struct mt_synth_run *run);
/* The distinct-instruction record for ip (NULL if never executed). */
const struct mt_synth_insn *mt_synth_insn_at(const struct mt_synth_run *run, uint64_t ip);
/* The executable mapping holding ip (NULL if none). */
const struct mt_synth_map *mt_synth_map_of(const struct mt_synth_run *run, uint64_t ip);
/* Adds a distinct instruction (a run read back from a file): MT_EFORMAT
 * for ip 0 or one already there, MT_ENOMEM. */
int mt_synth_insn_add(struct mt_synth_run *run, const struct mt_synth_insn *insn);
/* Is `next` a possible successor of instruction i (its fall-through or
 * direct target; anything after an indirect branch, a return or a
 * syscall)? */
bool mt_synth_follows(const struct mt_synth_insn *i, uint64_t next);

enum mt_synth_timing { MT_SYNTH_TIMELESS, MT_SYNTH_TSC, MT_SYNTH_MTC };

struct mt_synth_variant {
	const char *name;
	bool noretcomp;       /* every ret gets a TIP */
	bool long_tnt;        /* pack up to 47 bits in TNT-64 */
	enum mt_synth_timing timing;
	bool per_cpu;
	unsigned psb_every;   /* insns between PSB+ (0: only at start) */
	unsigned wrap_at_psb; /* >0: the buffer starts with junk then the K-th PSB */
	bool pipe;
	bool build_ids;       /* MMAP2 records in their build-id form */
	bool cyc;             /* cycle-accurate: CYC packets (1 cycle = 1 TSC tick) */
	bool turbo;           /* cyc: the core at 1.4 cycles per TSC tick (CBR 28 over 20), no CYC at
			       * MTCs (a CYC may span MTC periods) */
	bool snapshot;        /* two overlapping snapshots of an overwritten ring */
	bool gap;             /* snapshot: the two snapshots do not meet (the middle third is lost) */
	bool kernel;          /* intel_pt//uk: syscalls run a synthetic kernel blob */
	bool kcore;           /* kernel, with the image as perf --kcore saves it */
	bool ptw_fup;         /* a FUP after each PTW (perf's fup_on_ptw) */
	bool power;           /* power events (pwr_evt): the core sleeps in C3 through each syscall */
	bool lbr;             /* no PT: cycles samples with LBR call stacks, as perf record
			       * --call-graph lbr writes them (not in 'all': a sampling recording) */
	bool brstack;         /* no PT: every MT_SYNTH_BRSTACK_PERIOD-th taken branch sampled with the
			       * branch stack, as perf record -b -j any,u,save_type -e r20c4 -c N
			       * writes it (not in 'all') */
	bool brstack_notype;  /* brstack: recorded without save_type (each entry's type 0) */
};

/* The predefined variants: NULL-terminated array. */
extern const struct mt_synth_variant mt_synth_variants[];
const struct mt_synth_variant *mt_synth_variant_find(const char *name);

/* The lbr variant: a sample every MT_SYNTH_LBR_PERIOD instructions, its
 * call stack the innermost MT_SYNTH_LBR_DEPTH active calls (a 32-entry
 * LBR, Skylake on). */
#define MT_SYNTH_LBR_PERIOD 97
#define MT_SYNTH_LBR_DEPTH 32

/* The brstack variant: a sample at every MT_SYNTH_BRSTACK_PERIOD-th taken
 * branch of a thread (Intel's BR_INST_RETIRED.NEAR_TAKEN, raw 0x20c4), at
 * its target, with the thread's last MT_SYNTH_LBR_DEPTH taken branches,
 * their types and cycles (one cycle an instruction), and the call stack as
 * frame pointers would give it. Period and depth equal: the branch stacks
 * cover the whole run, each branch in exactly one sample's newest PERIOD. */
#define MT_SYNTH_BRSTACK_PERIOD 32

/* Synthetic clock: TSC of the first instruction, ticks per instruction,
 * ticks spent in the kernel per syscall. perf time = TSC (shift 0, mult 1). */
#define MT_SYNTH_TSC0 1000000000ULL
#define MT_SYNTH_TICKS_PER_INSN 25
#define MT_SYNTH_SYSCALL_TICKS 1000
#define MT_SYNTH_PT_TYPE 8

struct mt_synth_result {
	uint64_t pt_bytes, psbs, insns_traced, hits;
	uint64_t first_insn;  /* index of the first instruction in the trace (wrap) */
	uint64_t cpu_period;  /* repeated per-cpu: the time between one CPU's copies */
};

/* The synthetic kernel of the kernel variants: a code blob at
 * MT_SYNTH_KERNEL_BASE that every syscall runs (entry, a call to a handler
 * with a 3-iteration loop, its return, a jump to the exit stub, SYSRETQ). */
#define MT_SYNTH_KERNEL_BASE 0xffffffff81000000ULL
#define MT_SYNTH_KERNEL_INSNS 12   /* per syscall */

/* Writes the kernel blob as an ELF: a vmlinux (ET_EXEC, .text, FUNC
 * symbols), or a kcore (ET_CORE, one PT_LOAD, no sections), as perf record
 * --kcore copies /proc/kcore. */
int mt_synth_write_kernel_elf(FILE *f, bool core, struct mt_err *err);
/* Writes /proc/kallsyms lines for the blob (the kcore_dir companion). */
int mt_synth_write_kallsyms(FILE *f, struct mt_err *err);

/* Options for every variant. hit_ip: also record an execute breakpoint
 * there (as perf record -e mem:ADDR:x does): a second event whose samples
 * are the hits, in the truth as sample events (event=mem:0xADDR:x). */
struct mt_synth_opts {
	uint64_t hit_ip;
	/* Large traces: the PT of the run, written `repeat` times (>1), as
	 * independent buffers (gaps between their AUX offsets) spread round
	 * robin over `threads` threads of the process (tids pid, pid+1, ...),
	 * each its own per-thread queue. The perf.data is streamed to `data`;
	 * the truth is the one run's (each buffer decodes to it, with the tid
	 * of its thread; see loop below for what of the run is repeated). Per-thread, timeless variants without snapshot,
	 * wrap, kernel or pipe only. contiguous: a thread's copies follow one
	 * another in its AUX area (one long segment, as a long recording).
	 * cpus (the per-cpu variant, a single-threaded run): the copies spread
	 * round robin over that many CPUs, each CPU's AUX area its own queue;
	 * copy j runs on CPU j % cpus as thread j % threads (threads: at least
	 * cpus), its times (TSC packets and records) moved by (j / cpus) *
	 * mt_synth_cpu_period(the run's TSC ticks, MTC timing), the CPU switching to it and back to
	 * idle around it (CPU-wide switch records): each decodes to the one-run
	 * truth with that thread, CPU and time shift. loop: what is repeated,
 * and what the truth holds, is one call of the program's main, from the
 * call to its return, the trace then ended as an interrupt ends it
 * (mt_synth_main_call): a long run of the program's work in a loop, each
 * copy a call that returns (a program without main is repeated whole);
 * without, the whole run, whose copies on one thread pile up _starts that
 * never return (the deep-stack case). */
	uint64_t repeat;
	unsigned threads;
	bool contiguous;
	bool loop;
	unsigned cpus;
};

/* The TSC ticks between one CPU's copies of a per-cpu run lasting `ticks`:
 * the run and a gap, rounded up to a power of ten (times stay readable);
 * with MTC timing, to a multiple of 2^16 CTC periods instead, so that the
 * copies' MTC and TMA packets stay as they are (only TSC packets move). */
uint64_t mt_synth_cpu_period(uint64_t ticks, bool mtc);

/* Writes perf.data for the variant to `data` and the true events to
 * `truth` (either may be NULL). */
int mt_synth_write(const struct mt_synth_run *run, const struct mt_synth_variant *v,
		   const struct mt_synth_opts *opts, FILE *data, FILE *truth, struct mt_synth_result *res,
		   struct mt_err *err);

#endif
