/* perfdata: reader for perf.data in file mode and pipe mode.
 *
 * The whole input is made addressable once (a regular file is mmap'd, a pipe
 * is read into memory), then records are walked in place: no per-record
 * allocation. Knows nothing of PT packets or symbols. */
#ifndef MT_PERFDATA_H
#define MT_PERFDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"
#include "trace/perfexpand.h"

/* Kernel and perf record types (perf_event.h, tools/perf/util/event.h). */
enum {
	MT_REC_MMAP = 1, MT_REC_LOST = 2, MT_REC_COMM = 3, MT_REC_EXIT = 4,
	MT_REC_THROTTLE = 5, MT_REC_UNTHROTTLE = 6, MT_REC_FORK = 7,
	MT_REC_READ = 8, MT_REC_SAMPLE = 9, MT_REC_MMAP2 = 10, MT_REC_AUX = 11,
	MT_REC_ITRACE_START = 12, MT_REC_LOST_SAMPLES = 13, MT_REC_SWITCH = 14,
	MT_REC_SWITCH_CPU_WIDE = 15, MT_REC_NAMESPACES = 16, MT_REC_KSYMBOL = 17,
	MT_REC_BPF_EVENT = 18, MT_REC_CGROUP = 19, MT_REC_TEXT_POKE = 20,
	MT_REC_AUX_OUTPUT_HW_ID = 21,
	MT_REC_HEADER_ATTR = 64, MT_REC_HEADER_EVENT_TYPE = 65,
	MT_REC_HEADER_TRACING_DATA = 66, MT_REC_HEADER_BUILD_ID = 67,
	MT_REC_FINISHED_ROUND = 68, MT_REC_ID_INDEX = 69,
	MT_REC_AUXTRACE_INFO = 70, MT_REC_AUXTRACE = 71,
	MT_REC_AUXTRACE_ERROR = 72, MT_REC_THREAD_MAP = 73,
	MT_REC_CPU_MAP = 74, MT_REC_STAT_CONFIG = 75, MT_REC_STAT = 76,
	MT_REC_STAT_ROUND = 77, MT_REC_EVENT_UPDATE = 78, MT_REC_TIME_CONV = 79,
	MT_REC_HEADER_FEATURE = 80, MT_REC_COMPRESSED = 81,
	MT_REC_FINISHED_INIT = 82, MT_REC_COMPRESSED2 = 83,
};

/* perf_event_attr.sample_type bits */
enum {
	MT_SAMPLE_IP = 1u << 0, MT_SAMPLE_TID = 1u << 1, MT_SAMPLE_TIME = 1u << 2,
	MT_SAMPLE_ADDR = 1u << 3, MT_SAMPLE_READ = 1u << 4,
	MT_SAMPLE_CALLCHAIN = 1u << 5, MT_SAMPLE_ID = 1u << 6,
	MT_SAMPLE_CPU = 1u << 7, MT_SAMPLE_PERIOD = 1u << 8,
	MT_SAMPLE_STREAM_ID = 1u << 9, MT_SAMPLE_RAW = 1u << 10, MT_SAMPLE_BRANCH_STACK = 1u << 11,
	MT_SAMPLE_REGS_USER = 1u << 12, MT_SAMPLE_STACK_USER = 1u << 13, MT_SAMPLE_IDENTIFIER = 1u << 16,
};

/* perf_event_attr flag bits (the u64 bitfield at offset 40) */
enum {
	MT_ATTR_DISABLED = 1u << 0, MT_ATTR_INHERIT = 1u << 1,
	MT_ATTR_EXCLUDE_USER = 1u << 4, MT_ATTR_EXCLUDE_KERNEL = 1u << 5,
	MT_ATTR_EXCLUDE_HV = 1u << 6, MT_ATTR_MMAP = 1u << 8,
	MT_ATTR_COMM = 1u << 9, MT_ATTR_FREQ = 1u << 10,
	MT_ATTR_ENABLE_ON_EXEC = 1u << 12, MT_ATTR_TASK = 1u << 13,
	MT_ATTR_SAMPLE_ID_ALL = 1u << 18, MT_ATTR_EXCLUDE_GUEST = 1u << 20,
	MT_ATTR_MMAP2 = 1u << 23, MT_ATTR_COMM_EXEC = 1u << 24,
	MT_ATTR_USE_CLOCKID = 1u << 25, MT_ATTR_CONTEXT_SWITCH = 1u << 26,
};
/* perf_event_attr.branch_sample_type: the LBR in call-stack mode
 * (--call-graph lbr); the hw_idx before the entries */
#define MT_BRANCH_CALL_STACK (1u << 11)
#define MT_BRANCH_TYPE_SAVE (1u << 16) /* each entry's type saved (perf record -j save_type) */
#define MT_BRANCH_HW_INDEX (1u << 17)
#define MT_BRANCH_COUNTERS (1u << 19) /* each entry's event counts after the entries (Linux 6.8) */


enum { MT_MISC_CPUMODE_MASK = 7, MT_MISC_SWITCH_OUT = 1u << 13, MT_MISC_SWITCH_OUT_PREEMPT = 1u << 14,
       MT_MISC_COMM_EXEC = 1u << 13, MT_MISC_MMAP_BUILD_ID = 1u << 14 };

/* Feature bits (tools/perf/util/header.h) that we read. */
enum {
	MT_FEAT_BUILD_ID = 2, MT_FEAT_HOSTNAME = 3, MT_FEAT_OSRELEASE = 4,
	MT_FEAT_VERSION = 5, MT_FEAT_ARCH = 6, MT_FEAT_NRCPUS = 7,
	MT_FEAT_CPUDESC = 8, MT_FEAT_CPUID = 9, MT_FEAT_CMDLINE = 11,
	MT_FEAT_EVENT_DESC = 12, MT_FEAT_AUXTRACE = 18, MT_FEAT_DIR_FORMAT = 24, MT_FEAT_COMPRESSED = 27,
	MT_FEAT_CPU_PMU_CAPS = 28,
};

struct mt_perf_evattr {
	uint32_t type, size;
	uint64_t config, sample_period, sample_type, read_format, flags;
	uint64_t config1, config2;     /* breakpoints: bp_addr, bp_len */
	uint32_t bp_type;              /* breakpoints: 1 r, 2 w, 3 rw, 4 x */
	uint64_t branch_sample_type;   /* MT_BRANCH_* */
	uint64_t sample_regs_user;     /* which user registers a sample holds (perf_regs order) */
	uint32_t sample_stack_user;    /* bytes of user stack a sample copies */
	int32_t clockid;               /* with MT_ATTR_USE_CLOCKID: the clock of its times (perf record -k) */
	const char *name;      /* from EVENT_DESC, or NULL */
	const uint64_t *ids;   /* points into the input (little-endian u64s) */
	size_t nids;
};

/* The sample id fields found in a record's trailer (or a SAMPLE's front). */
struct mt_perf_sample_id {
	bool has_tid, has_time, has_cpu, has_id;
	uint32_t pid, tid, cpu;
	uint64_t time, id;
	uint64_t ip, addr, period; /* SAMPLE records only */
	bool has_ip, has_addr, has_period;
	const uint8_t *callchain;  /* SAMPLE: callchain_nr u64 IPs, innermost first */
	uint64_t callchain_nr;
	/* SAMPLE with BRANCH_STACK: brstack_nr entries (brstack.h), newest first */
	const uint8_t *brstack;
	uint64_t brstack_nr;
	uint64_t brstack_hw_idx;   /* the newest entry's LBR register (has_hw_idx) */
	bool has_hw_idx;
	const uint8_t *brstack_cntr; /* BRANCH_COUNTERS: a u64 an entry (NULL: none) */
	/* SAMPLE with REGS_USER: regs_n u64s, the attr's sample_regs_user
	 * bits in ascending order (NULL: none, the abi said none) */
	const uint8_t *regs;
	unsigned regs_n;
	uint64_t regs_mask;
	/* SAMPLE with STACK_USER: the copy of the user stack from the sampled
	 * SP, stack_size bytes of it valid (perf's dyn_size) */
	const uint8_t *stack;
	uint64_t stack_size;
	bool has_stack;            /* the sample type asked for it (regs, stack) */
	int attr_index;            /* -1 when unknown */
};

struct mt_perf_record {
	uint32_t type;
	uint16_t misc, size;
	uint64_t offset;           /* file offset of the record header */
	const uint8_t *body;       /* after the 8-byte header */
	size_t body_size;          /* header.size - 8, trailer included */
	struct mt_perf_sample_id sid;
	/* AUXTRACE only: the payload that follows the record */
	const uint8_t *aux_data;
	uint64_t aux_size;         /* bytes available (may be < declared) */
	uint64_t aux_declared;
};

struct mt_perf_buildid {
	int32_t pid;
	uint8_t id[20];
	uint8_t id_size;
	const char *path;
};

struct mt_perfdata {
	const char *name;
	const uint8_t *base;       /* whole input */
	size_t len;
	bool mapped, pipe_mode;
	bool borrowed;        /* base belongs to the caller (mt_perfdata_open_mem) */
	uint64_t data_off, data_end, pos;
	uint64_t data_declared;    /* the header's data size (0: not said, a crashed perf record) */
	uint8_t features[32];
	struct mt_perf_evattr attrs[64];
	size_t nattrs;
	bool any_identifier;
	/* every attr's ids, sorted (id, then attr): a record's attr by binary
	 * search, not a scan of all ids per record */
	struct mt_perf_id { uint64_t id; uint32_t attr; } *id_index;
	size_t nid_index;
	/* features that --info reports (NUL-terminated, in the input or owned) */
	const char *hostname, *osrelease, *version, *arch, *cpudesc, *cpuid;
	uint32_t nrcpus_online, nrcpus_avail;
	struct mt_perf_buildid *buildids;
	size_t nbuildids;
	/* perf record -z or --threads: the records were expanded from their
	 * zstd batches, or gathered from the directory's data.N files, into
	 * the image walked here (offsets are that image's) */
	bool expanded;
	struct mt_perfexpand_stats zstd;
	uint32_t comp_mmap_len;    /* HEADER_COMPRESSED: the ring buffer a batch was compressed from */
	unsigned max_branches;     /* HEADER_CPU_PMU_CAPS: the LBR's entries (0: not said) */
	bool truncated;            /* set when the walk hit the end early */
	bool rewound;              /* a walk again: pipe headers are taken already */
};

/* Opens `path` ("-" = stdin). Regular files are mmap'd; anything else is read
 * into memory. Parses header, attrs and features (file mode) so that records
 * can be walked with mt_perfdata_next. Records perf record -z compressed
 * are expanded first, and a perf.data directory's data.N files (its
 * `data` opened by path) taken in (perfexpand.h): pd->expanded, pd->zstd. */
int mt_perfdata_open(struct mt_perfdata *pd, const char *path, struct mt_err *err);
/* The same on an open fd (closed here unless 0) whose first prefix_len
 * bytes were already read (peeked) into prefix. */
int mt_perfdata_open_fd(struct mt_perfdata *pd, int fd, const char *name, const uint8_t *prefix,
			size_t prefix_len, struct mt_err *err);
/* Same, over a caller-owned buffer that must outlive pd. */
int mt_perfdata_open_mem(struct mt_perfdata *pd, const uint8_t *buf, size_t len,
			 const char *name, struct mt_err *err);
/* Several files as one recording (perf record --switch-output's pieces):
 * each opened (and expanded) as mt_perfdata_open does, put in time order
 * (each one's first record with a time), their records gathered after the first
 * one's as one data section (perfexpand.h); pd->name is the first's. Every
 * piece must be a file-mode perf.data of the same events. */
int mt_perfdata_open_pieces(struct mt_perfdata *pd, const char *const *paths, size_t n, struct mt_err *err);
void mt_perfdata_close(struct mt_perfdata *pd);
/* Back to the first record, for another walk (pipe-mode header records
 * are returned again, not taken again). */
void mt_perfdata_rewind(struct mt_perfdata *pd);

/* Returns 1 with *rec filled, 0 at the end of data, or a negative code (the
 * walk stops there; pd->truncated is set for MT_ETRUNC). Pipe-mode
 * HEADER_ATTR and HEADER_FEATURE records are consumed into pd and also
 * returned, so callers can count them. */
int mt_perfdata_next(struct mt_perfdata *pd, struct mt_perf_record *rec, struct mt_err *err);

/* An MMAP or MMAP2 record's fields; path points into the record. */
struct mt_perf_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	const char *path;
	uint8_t bid[20], bidsz;    /* MMAP2 in its build-id form, else 0 */
	bool exec;                 /* may hold code (not MMAP_DATA, PROT_EXEC) */
};
/* Parses rec (MMAP or MMAP2); false when it is neither or malformed. */
bool mt_perf_parse_mmap(const struct mt_perf_record *rec, struct mt_perf_mmap *m);

/* Lets the kernel drop the pages holding [p, p+len) of a mapped input from
 * memory (they are read again from the file if touched): keeps a walk over
 * a large file from holding all of it resident. No effect on an input read
 * into memory. */
void mt_perfdata_release(const struct mt_perfdata *pd, const void *p, size_t len);

const char *mt_perf_record_name(uint32_t type);
/* The attr a record belongs to (by sample id; id 0 or unknown = first). */
const struct mt_perf_evattr *mt_perfdata_attr_of(const struct mt_perfdata *pd,
						 const struct mt_perf_record *rec);

static inline uint16_t mt_rd16(const uint8_t *p) { uint16_t v; __builtin_memcpy(&v, p, 2); return v; }
static inline uint32_t mt_rd32(const uint8_t *p) { uint32_t v; __builtin_memcpy(&v, p, 4); return v; }
static inline uint64_t mt_rd64(const uint8_t *p) { uint64_t v; __builtin_memcpy(&v, p, 8); return v; }

#endif
