/* writer: the timeline's writers behind one ops table, and the state the
 * held-items window (window.c) shares with them. Internal to timeline/;
 * the interface for tools is pftrace.h.
 *
 * Each format is one struct mt_tl_ops (write_perfetto.c, write_json.c,
 * write_fxt.c, write_stacks.c): the window calls head once, thread before
 * a thread's first event, then the thread's slices, instants, samples and
 * counters in time order, and foot at the end. A writer in arrival order
 * (stacks: magic-trace's test format) is called as the call stacks come,
 * without the window. Every writer writes through mt_tl_out. */
#ifndef MT_TL_WRITER_H
#define MT_TL_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <zlib.h>

#include "base/strtab.h"
#include "timeline/pftrace.h"

/* Track uuids: deterministic, one high bit per kind of track. */
#define UUID_THREAD(pid, tid) ((1ULL << 62) | ((uint64_t)(pid) << 31) | (uint64_t)(tid))
#define UUID_PROCESS(pid) ((1ULL << 61) | (uint64_t)(pid))
#define UUID_COUNTER(pid) ((1ULL << 60) | (uint64_t)(pid))
#define UUID_EXTRA(pid, tid, k) ((1ULL << 59) | ((uint64_t)(k) << 50) | ((uint64_t)(pid) << 25) | (uint64_t)(tid))
#define SEQ_DESCRIPTORS 1
#define SEQ_THREAD0 2 /* small ids: one varint byte for the first 126 threads */
#define CLOCK_INCREMENTAL 64
#define CLOCK_BOOTTIME 6
enum item_kind { IT_SLICE, IT_INSTANT, IT_COUNTER, IT_SAMPLE, IT_STACK };
/* IT_STACK's name: the sampled stack's frames, outermost first, each
 * NAME MT_TL_DSO_SEP DSO, MT_TL_FRAME_SEP between them (interned). */
#define MT_TL_FRAME_SEP '\x1e'
#define MT_TL_DSO_SEP '\x1f'

/* The counter tracks, one of each per process: the CPU's frequency (perf's
 * CBR), its C-state (PWRE/PWRX notes), PTWRITE payloads
 * (--ptwrite-track=counter). Named by mt_tl_counter_names. */
enum { MT_TL_COUNTER_CPU, MT_TL_COUNTER_CSTATE, MT_TL_COUNTER_PTWRITE, MT_TL_COUNTERS };
extern const char *const mt_tl_counter_names[MT_TL_COUNTERS];
/* The counter index of an item's name (MT_TL_COUNTER_CPU when none). */
unsigned mt_tl_counter_of(const char *name);

/* A slice, instant, counter value or sample not written yet (64 bytes:
 * the window holds many of them). */
struct item {
	uint64_t begin, end;     /* mapped times; end: UINT64_MAX while the slice is open */
	const char *name;        /* interned */
	const char *file;        /* interned, NULL: no source line */
	uint64_t ip;
	union {
		uint64_t id;     /* IT_SLICE: the frame id (its end repeats it) */
		double value;    /* IT_COUNTER, IT_SAMPLE; IT_STACK: its period */
	} u;
	uint32_t seq;            /* arrival order within the thread's held items */
	int32_t line;
	uint32_t extra;          /* IT_SAMPLE: index of its event track */
	uint8_t kind;
	bool inferred;
	bool late;               /* copied to the late items (order_items) */
};

struct open_slice {
	uint64_t id;
	size_t item;
};

/* A slice written (or dropped for depth) whose END is still to come. */
enum { WF_DROPPED, WF_BEGIN, WF_COMPLETE };
struct wframe {
	uint64_t id, end;        /* end: UINT64_MAX until the frame's end arrives */
	uint8_t mode;            /* WF_BEGIN: an END must be written when it pops */
};

/* Per-sequence name interning: name pointer -> iid. */
struct iids {
	const char **k;
	uint64_t *v;
	size_t cap, n;
};

struct seqw {
	struct mt_pftrace *pf;
	size_t k;            /* thread index */
	uint32_t pid, tid;
	uint64_t json_end;   /* JSON/FXT: the end of the slice a BEGIN starts */
	bool end_known;      /* ... when it is known already (a complete event) */
	const char *file;    /* the source line of the slice a BEGIN starts */
	int32_t line;
	uint32_t seq;
	uint64_t base;       /* perf time of mapped time 0; JSON and FXT times count from it */
	uint64_t last;       /* Perfetto: the incremental clock's last value (absolute) */
	uint64_t track;
	struct iids names;
	struct iids fnames, mappings, frames, stacks; /* stack samples' interning */
	uint64_t addr_iid;   /* debug annotation names "address", "file", "line" defined */
	const char **open_names; /* JSON: the names of the slices begun and not ended, outermost first */
	size_t nopen_names, capopen_names;
	/* the calls writer: the slice a begin starts has no call seen; the one
	 * an end ends: its counts (when known), no return seen */
	bool no_call, no_return, call_known;
	struct mt_cs_counts call_count;
};

/* A set of pids (open addressing, pid + 1 in each slot): which processes
 * are described, once per thread (a scan of all was quadratic in them). */
struct pidset {
	uint64_t *v;
	size_t n, cap;
};
/* Adds pid: 1 when new, 0 when there already, -1 out of memory. */
int mt_tl_pidset_add(struct pidset *s, uint32_t pid);

struct pthread {
	uint32_t pid, tid;
	struct item *items;       /* pending: not written yet, in arrival order */
	size_t nitems, capitems;
	struct open_slice *open;  /* pending slices without their end; ends waiting for their begin */
	size_t nopen, capopen;
	size_t nendfirst;         /* ends on open waiting for their begin */
	uint64_t last_begin;      /* of the last item held */
	bool unordered, ties;     /* an item held began before / with the one before it */
	struct wframe *ws;        /* written slices still open, outermost first */
	size_t depth, wdepth, capws; /* wdepth: frames on ws actually written */
	size_t ws_unended;        /* ws[ws_unended, depth) all have their ends: an end
				   * is looked for below (returns past the window were
				   * a scan of every ended frame above, quadratic) */
	uint64_t wmapped;         /* mapped time of the last packet written */
	uint64_t maxtime;         /* the latest time the thread has seen */
	uint64_t dropped;         /* frames too deep to write */
	struct seqw w;
	bool started;             /* descriptors and the sequence's first packet written */
	uint8_t xdesc[64];        /* sample tracks described (bit per extra index) */
	uint8_t counter_tracks;   /* its process's counter tracks described (bit per MT_TL_COUNTER_*) */
};

struct comm {
	uint32_t pid, tid;
	char name[64];
};

struct mt_tl_ops;
struct mt_tl_calls;

/* A slice's address annotation as Perfetto's writer encodes it, kept:
 * the same bytes for an address each time. */
struct addr_bytes {
	uint64_t ip;          /* 0: empty */
	uint8_t len;
	uint8_t b[15];
};

struct mt_pftrace {
	FILE *out;
	const struct mt_tl_ops *ops; /* the format's writer */
	gzFile gz;            /* compressing: writes go here */
	bool headed;          /* the JSON or FXT header is written */
	bool json_first;      /* no comma before the first JSON event */
	/* FXT string table: indices 1..FXT_STRINGS, reused round-robin */
	const char **fxt_str;     /* index -> interned name */
	uint16_t fxt_next;
	struct { const char **k; uint16_t *v; size_t cap; } fxt_map;
	uint32_t fxt_thread_slot[256]; /* slot -> thread index + 1 */
	uint16_t fxt_next_thread;
	struct mt_strtab names;
	const char *file_in, *file_out; /* the last source file, and it as UTF-8, interned */
	/* FXT's fixed strings, interned once (per event they cost a hash each) */
	const char *fx_empty, *fx_address, *fx_freq, *fx_value, *fx_file, *fx_line, *fx_cpu;
	struct pthread **threads;
	size_t nthreads, capthreads;
	struct pidset pids;       /* processes described */
	struct pidset counter_pids[MT_TL_COUNTERS]; /* processes whose counter track k is described */
	struct comm *comms;
	size_t ncomms, capcomms;
	uint32_t *comm_slots;     /* open addressing by (pid, tid): comm index + 1 */
	size_t capcomm_slots;
	const char **extra_names; /* event names of sample tracks */
	size_t nextra, capextra;
	size_t window, pending;   /* items held before every thread is written out */
	struct item *late;        /* flush_thread's items that came out of time order */
	size_t caplate;
	char *keybuf;             /* a stack sample's key being made */
	size_t capkeybuf;
	char damage[512];
	bool oom;
	/* Perfetto's builtin clock of every time: the recording's (perf record
	 * -k, said by the stream's clock fact); 0: perf's own, written as
	 * BOOTTIME as magic-trace does */
	uint32_t clock_id;
	/* writing */
	uint8_t *buf;
	size_t bufcap;
	struct mt_pftrace_stats st;
	uint8_t obuf[1 << 16];
	size_t nobuf;
	uint64_t written, writeback_from; /* bytes to out; from where the kernel was last asked to write them out */
	struct addr_bytes addr_bytes[256]; /* Perfetto: direct-mapped by address */
	bool write_failed;
	int write_errno;
	struct mt_tl_calls *calls; /* the calls writer's state (write_calls.c) */
	struct mt_tl_ss *ss;       /* speedscope's profiles until the foot (write_speedscope.c) */
	uint64_t max_slices;       /* speedscope: the longest this many written, 0: all */
};

struct mt_tl_ops {
	const char *name;
	/* straight through as the stacks arrive: no window, no time order */
	bool arrival_order;
	/* a slice whose end is known when it is written is written whole
	 * (JSON X, FXT duration complete); otherwise a begin now, an end later */
	bool complete_slices;
	void (*head)(struct mt_pftrace *pf);
	void (*thread)(struct mt_pftrace *pf, struct pthread *t, bool first_of_pid);
	/* w->file and w->line: the slice's source line; w->end_known and
	 * w->json_end: its end, with complete_slices */
	void (*slice_begin)(struct seqw *w, uint64_t time, const char *name, uint64_t ip);
	void (*slice_end)(struct seqw *w, uint64_t time, const char *name);
	void (*instant)(struct seqw *w, uint64_t time, const char *name);
	/* an event sample on the thread's track for event k (pf->extra_names[k]) */
	void (*sample)(struct seqw *w, uint64_t time, const char *name, uint32_t k, uint64_t ip);
	/* optional: a stack sample (IT_STACK's key) and its period, for the
	 * format's profiler view */
	void (*stack_sample)(struct seqw *w, uint64_t time, const char *key, uint64_t period);
	/* the CPU frequency (MHz) of the thread's process */
	void (*counter)(struct seqw *w, uint64_t time, unsigned k, double value); /* k: MT_TL_COUNTER_* */
	void (*foot)(struct mt_pftrace *pf);
};

extern const struct mt_tl_ops mt_tl_perfetto, mt_tl_json, mt_tl_fxt, mt_tl_stacks, mt_tl_threads, mt_tl_calls,
	mt_tl_speedscope;

/* The calls writer's instruction and cycle counts, kept by frame id from
 * the call stacks' begin and end (the held items have no room for them)
 * until the end is written: the counts at a begin, at an end (and whether
 * no return was seen), and the call's own taken when it is written out
 * (false: not known; the entry is forgotten either way). */
void mt_tl_callinfo_begin(struct mt_pftrace *pf, uint64_t id, struct mt_cs_counts at);
void mt_tl_callinfo_end(struct mt_pftrace *pf, uint64_t id, struct mt_cs_counts at, bool no_return);
bool mt_tl_callinfo_take(struct mt_pftrace *pf, uint64_t id, struct mt_cs_counts *in, bool *no_return);
struct mt_tl_calls *mt_tl_calls_new(const struct mt_tl_calls_sink *sink);
void mt_tl_calls_free(struct mt_tl_calls *c);

/* A stack sample's key (IT_STACK's name) split back into its frames:
 * names[i] and dsos[i] for i < n, outermost first, pointing into copy;
 * valid until the next split. */
struct mt_tl_stack {
	char *copy;
	size_t capcopy;
	const char **names, **dsos;
	size_t n, cap;
};
/* false: out of memory */
bool mt_tl_stack_split(struct mt_tl_stack *s, const char *key);
void mt_tl_stack_free(struct mt_tl_stack *s);


/* Names live as long as the writer; out of memory makes them "". */
const char *mt_tl_intern(struct mt_pftrace *pf, const char *s);
/* The name of a process (tid = pid) or thread from the stream's comm lines; NULL: none. */
const char *mt_tl_comm(const struct mt_pftrace *pf, uint32_t pid, uint32_t tid);
/* Output goes through a buffer of our own (out.c): stdio's per-call
 * locking cost more than the encoding of the small packets. */
void mt_tl_out(struct mt_pftrace *pf, const void *b, size_t n);
void mt_tl_flush(struct mt_pftrace *pf);

#endif
