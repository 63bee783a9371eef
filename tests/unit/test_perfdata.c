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

int main(void)
{
	test_perfdata_headers();
	return tap_done();
}
