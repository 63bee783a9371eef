/* Unit tests of the perf.data reader (trace/perfdata.c), TAP output. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/perfdata.h"

#include "tap.h"

/* Oracle: hand-built headers from the format description. */
static void test_perfdata_headers(void)
{
	struct mt_perfdata pd;
	struct mt_err err = {0};
	ok(mt_perfdata_open_mem(&pd, (const uint8_t *)"", 0, "x", &err) == MT_ETRUNC, "empty input is truncated");
	mt_err_clear(&err);
	ok(mt_perfdata_open_mem(&pd, (const uint8_t *)"PERFILE2\x68\0\0\0\0\0\0\0", 16, "x", &err) == MT_ETRUNC,
	   "a file header cut at 16 bytes is truncated");
	mt_err_clear(&err);
	ok(mt_perfdata_open_mem(&pd, (const uint8_t *)"2ELIFREP\x10\0\0\0\0\0\0\0", 16, "x", &err) == MT_EUNSUP,
	   "byte-swapped files are refused by name");
	/* pipe mode: header, one HEADER_ATTR (64-byte attr + 1 id), one FINISHED_ROUND */
	uint8_t buf[16 + 8 + 64 + 8 + 8] = {0};
	memcpy(buf, "PERFILE2", 8);
	buf[8] = 16;
	uint8_t *r = buf + 16;
	r[0] = 64;                 /* HEADER_ATTR */
	r[6] = 8 + 64 + 8;         /* size */
	r[8] = 8;                  /* attr.type */
	r[12] = 64;                /* attr.size */
	r[8 + 24] = 0x87;          /* sample_type IP|TID|TIME|CPU */
	r[8 + 64] = 7;             /* id */
	uint8_t *fr = r + 8 + 64 + 8;
	fr[0] = 68;
	fr[6] = 8;
	mt_err_clear(&err);
	int rc = mt_perfdata_open_mem(&pd, buf, sizeof buf, "pipe", &err);
	struct mt_perf_record rec;
	int n1 = mt_perfdata_next(&pd, &rec, &err), t1 = (int)rec.type;
	int n2 = mt_perfdata_next(&pd, &rec, &err), t2 = (int)rec.type;
	int n3 = mt_perfdata_next(&pd, &rec, &err);
	ok(rc == 0 && pd.pipe_mode && n1 == 1 && t1 == 64 && n2 == 1 && t2 == 68 && n3 == 0 && pd.nattrs == 1 &&
	   pd.attrs[0].type == 8 && pd.attrs[0].sample_type == 0x87 && pd.attrs[0].nids == 1,
	   "pipe mode: HEADER_ATTR parsed into an attr with its id");
	/* a record whose size runs past the end */
	fr[6] = 16;
	mt_err_clear(&err);
	mt_perfdata_open_mem(&pd, buf, sizeof buf, "pipe", &err);
	mt_perfdata_next(&pd, &rec, &err);
	rc = mt_perfdata_next(&pd, &rec, &err);
	ok(rc == MT_ETRUNC && pd.truncated && strstr(err.msg, "FINISHED_ROUND record truncated at offset 96"),
	   "a record running past the end is reported with its offset");
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A sample with a branch stack: hw_idx, 2 entries, each entry's counters
 * (BRANCH_COUNTERS, Linux 6.8: a u64 an entry after them), then the user
 * registers, which must be read after the counters. Oracle: the sample
 * layout in include/uapi/linux/perf_event.h. */
static void test_perfdata_branch_counters(void)
{
	enum { ATTR = 96, HDR = 16, AREC = 8 + ATTR + 8, SREC = 8 + 8 + 8 + 8 + 8 + 2 * 24 + 2 * 8 + 8 + 8 };
	uint8_t buf[HDR + AREC + SREC] = {0};
	memcpy(buf, "PERFILE2", 8);
	buf[8] = 16;
	uint8_t *r = buf + HDR;
	r[0] = 64; /* HEADER_ATTR */
	r[6] = AREC;
	uint8_t *a = r + 8;
	a[4] = ATTR;                                   /* attr.size */
	put64(a + 24, MT_SAMPLE_IP | MT_SAMPLE_TID | MT_SAMPLE_BRANCH_STACK | MT_SAMPLE_REGS_USER);
	put64(a + 72, MT_BRANCH_HW_INDEX | MT_BRANCH_COUNTERS | (1u << 3) /* ANY */);
	put64(a + 80, 1);                              /* sample_regs_user: one register */
	put64(a + ATTR, 7);                            /* id */
	uint8_t *sr = buf + HDR + AREC;
	sr[0] = 9; /* SAMPLE */
	sr[6] = SREC;
	uint8_t *q = sr + 8;
	put64(q, 0x401000), q += 8;                    /* ip */
	put64(q, 42 | (uint64_t)43 << 32), q += 8;     /* pid, tid */
	put64(q, 2), q += 8;                           /* nr */
	put64(q, 5), q += 8;                           /* hw_idx */
	for (int i = 0; i < 2; i++) {
		put64(q, 0x401000 + 0x10 * (unsigned)i), put64(q + 8, 0x402000 + 0x10 * (unsigned)i), put64(q + 16, 2);
		q += 24;
	}
	put64(q, 0x31), q += 8;                        /* counters of entry 0 */
	put64(q, 0x2), q += 8;                         /* and of entry 1 */
	put64(q, 2), q += 8;                           /* abi 64 */
	put64(q, 0x1234), q += 8;                      /* the register */
	struct mt_perfdata pd;
	struct mt_err err = {0};
	struct mt_perf_record rec;
	int rc = mt_perfdata_open_mem(&pd, buf, sizeof buf, "cntr", &err);
	mt_perfdata_next(&pd, &rec, &err);
	int n = mt_perfdata_next(&pd, &rec, &err);
	ok(rc == 0 && n == 1 && rec.type == 9 && rec.sid.brstack_nr == 2 && rec.sid.has_hw_idx &&
		   rec.sid.brstack_hw_idx == 5 && mt_rd64(rec.sid.brstack + 24) == 0x401010,
	   "a branch stack with hw_idx: its entries");
	ok(rec.sid.brstack_cntr && mt_rd64(rec.sid.brstack_cntr) == 0x31 && mt_rd64(rec.sid.brstack_cntr + 8) == 0x2,
	   "BRANCH_COUNTERS: each entry's counters after the entries");
	ok(rec.sid.regs && rec.sid.regs_n == 1 && mt_rd64(rec.sid.regs) == 0x1234,
	   "the user registers after the counters");
}

int main(void)
{
	test_perfdata_headers();
	test_perfdata_branch_counters();
	return tap_done();
}
