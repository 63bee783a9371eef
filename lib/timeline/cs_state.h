/* cs_state: the call-stack reconstruction's state (callstack.c), shared
 * with its OCaml exception unwinding (ocaml_traps.c). Internal to
 * timeline/. Section numbers refer to shared/docs/magic-trace-behaviour.md. */
#ifndef MT_CS_STATE_H
#define MT_CS_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strtab.h"
#include "timeline/callstack.h"

/* --- per-thread state (5.4) -------------------------------------------------- */

struct frame {
	uint64_t ip;
	const char *name;
	uint64_t id;
	const char *file;
	int line;
};

struct stack {
	struct frame *v;
	size_t n, cap;
	uint64_t create_time;
	struct mt_cs_counts create_count; /* the thread's counts at create_time */
};

enum pkind { P_CALL, P_RET, P_RET_UNTRACED };

struct pev {
	enum pkind k;
	bool no_return;          /* P_RET: the stack was ended, no return seen */
	/* P_CALL: the frame, handed to the sink as it is (a copy's wide loads
	 * over the fields' stores just made stalled); P_RET: its name and id */
	struct mt_cs_frame f;
	uint64_t reset_time;
	struct mt_cs_counts count; /* the thread's counts at the event */
};

struct sev {
	uint64_t time;
	struct pev ev;
};

struct thread {
	struct mt_cs_thread pub;
	struct mt_cs_counts count; /* retired so far */
	struct stack cur;
	struct stack *inactive;
	size_t ninactive, capinactive;
	uint64_t last_decode_error_time, last_event_time, pending_time;
	struct pev *pending;
	size_t npending, cappending;
	struct sev *start;     /* deque (ring) of start events */
	size_t start_head, start_n, start_cap;
	int ocaml_frames;
	uint64_t last_known_ip;   /* OCaml mode A: where the trap walk resumes (UINT64_MAX: not yet) */
	/* off CPU (sampling with switch events): an [off-CPU] or [preempted]
	 * frame is open on top of the stack */
	bool off_cpu;
	bool timed;            /* last_event_time is a timed event's */
	bool after_stack_sample; /* its last event was a stack sample: cur is that sample's stack */
	/* TSX (5.10): events inside a transaction wait for its outcome */
	struct txev *tx;
	size_t ntx, captx;
};

struct txev {
	struct mt_event ev;   /* strings below, extra rebuilt on replay */
	const char *to_sym, *via;
};

/* The columns the algorithm reads, found in one pass over an event's
 * extra columns (a lookup by name per use cost a tenth of the time). The
 * first of a repeated key counts. */
enum col { C_TO_SYM, C_FROM_SYM, C_VIA, C_TX, C_TO_FILE, C_TO_LINE, C_TO_OFF, C_MHZ, C_EVENT, C_FRAME, C_PERIOD,
	   C_PREEMPT, C_TO_DSO, C_COUNT };
static const char *const col_names[C_COUNT] = {"to_sym", "from_sym", "via", "tx", "to_file", "to_line", "to_off",
						"mhz", "event", "frame", "period", "preempt", "to_dso"};

/* Caches by string pointer while the input's strings are stable (a
 * binary stream's table, events.h strings_epoch): column keys and symbol
 * names are then found without comparing or hashing their text. */
#define KEY_CACHE 64
#define SYM_CACHE 4096
#define SCAN_MEMO_BITS 11
struct scan_memo {
	uint64_t id;              /* the events' extra_id; 0: empty */
	unsigned colset;
	const char *col[C_COUNT];
	const char *to_name;      /* sym_name of to_sym, once asked (NULL: not yet) */
};
struct ptr_cache {
	uint64_t epoch;           /* 0: nothing cached */
	const char *key[KEY_CACHE]; /* direct-mapped by address */
	signed char col[KEY_CACHE];
	struct { const char *s, *name; } sym[SYM_CACHE];
	struct scan_memo scan[1u << SCAN_MEMO_BITS]; /* scan_cols's result by extra_id */
};

struct mt_cs {
	const char *col[C_COUNT]; /* the current event's columns when scanned ... */
	const char *const *cols;  /* ... these or a scan_memo's (scan_cols) ... */
	unsigned colset;          /* ... those set (bit per column; the rest are stale) */
	bool stable;              /* ... and they are the input's stable strings */
	struct scan_memo *scan;   /* ... kept there too (NULL: not kept) */
	struct ptr_cache *pc;
	const struct mt_ocaml_trap *traps; /* OCaml mode A, sorted; none: mode B */
	size_t ntraps;
	struct mt_cs_sink sink;
	struct mt_cs_opts opts;
	struct mt_strtab names;
	struct thread **threads; /* in order of appearance */
	size_t nthreads, capthreads;
	struct thread **map;     /* (pid,tid) -> thread, open addressing */
	size_t mapcap;
	struct thread *last;     /* the thread found last */
	bool have_base;
	bool snapshot_pending;   /* a snapshot event: the next trace event ends every stack */
	uint64_t base;
	const char *n_untraced, *n_syscall, *n_returned, *n_unknown, *n_snapshot, *n_off_cpu, *n_preempted,
		   *n_unknown_dso;
	bool oom;
	unsigned warned;
	uint64_t next_id;
	uint64_t ptwrite_names;   /* ptwrite instants named by their payload so far */
	/* range filter (5.12), one pass: a region opens at a call to start and is
	 * written only once a call to stop closes it; until then its output
	 * waits in log */
	const char *filter_start, *filter_stop;
	const char *stack_event; /* the event whose samples' callchains are stacks (is_stack_event) */
	bool in_region, tentative;
	bool ending_stacks;       /* end_of_thread is ending the stacks: returns not seen */
	uint64_t filter_starts, filter_regions; /* calls to start; regions a stop closed */
	uint64_t late_events, late_max_ns; /* timed before their thread's last event: moved, how far at most */
	struct logrec *log;
	size_t nlog, caplog;
	/* the current event's target source line, when it is a function entry */
	uint64_t src_ip;
	const char *src_file;
	int src_line;
};

enum logkind { L_BEGIN, L_END, L_COMPLETE, L_INSTANT, L_COUNTER, L_SAMPLE };

struct logrec {
	enum logkind k;
	struct thread *t;
	uint64_t time, time2, ip, id;
	const char *name, *name2, *file;
	int line;
	bool inferred, no_return;
	double value;
	struct mt_cs_counts count;
};


uint64_t mt_cs_push_frame(struct mt_cs *cs, struct stack *s, uint64_t ip, const char *name);
/* Ends every frame of the current stack. */
void mt_cs_clear_stack(struct mt_cs *cs, struct thread *t, uint64_t time);
/* Suspends the current stack (a try block begins) / resumes the last one. */
void mt_cs_push_inactive(struct mt_cs *cs, struct thread *t);
void mt_cs_pop_inactive(struct thread *t);
/* A warning of kind bit, the first time only. */
void mt_cs_warn_once(struct mt_cs *cs, unsigned bit, const char *msg);

/* OCaml mode A (ocaml_traps.c) */
bool mt_cs_is_entertrap(const struct mt_cs *cs, uint64_t addr);
/* Clear the try block's stack, then resume the one it interrupted (or an
 * empty one). */
void mt_cs_clear_trap_stack(struct mt_cs *cs, struct thread *t, uint64_t time);
/* Before each branch: the pushtraps and poptraps executed since the last
 * known IP, up to the branch. */
void mt_cs_trap_walk(struct mt_cs *cs, struct thread *t, uint64_t time, const struct mt_event *ev);

#endif
