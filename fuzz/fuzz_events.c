/* fuzz_events: the mt event stream (text and binary) through the reader,
 * the call-stack reconstruction and the Perfetto writer: mt-toperfetto. */
#define _GNU_SOURCE
#include "fuzz.h"

#include "timeline/callstack.h"
#include "stream/events.h"
#include "timeline/pftrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *in = fmemopen((void *)data, size, "r");
	if (!in)
		return 0;
	struct mt_events_reader r;
	struct mt_err err = {0};
	if (mt_events_reader_open(&r, in, "fuzz", &err)) {
		fclose(in);
		return 0;
	}
	/* the format rotates with the input size; a small window exercises
	 * the write-outs too */
	struct mt_pftrace *pf = mt_pftrace_new(fuzz_devnull(), (enum mt_pftrace_format)(size % 3), false);
	struct mt_cs_sink sink;
	mt_pftrace_sink(pf, &sink);
	mt_pftrace_set_window(pf, 64);
	struct mt_cs_opts co = {.starts_when_known = true};
	struct mt_cs *cs = mt_cs_new(&sink, &co);
	if (cs) {
		if (size % 5 == 0)
			mt_cs_set_filter(cs, "a", "b");
		struct mt_event ev;
		const char *meta;
		int rc;
		while ((rc = mt_events_read(&r, &ev, &meta, &err)) > 0) {
			if (rc == MT_EVENTS_META)
				mt_pftrace_meta(pf, meta);
			else if (mt_cs_event(cs, &ev, &err))
				break;
		}
		mt_cs_finish(cs);
	}
	mt_pftrace_finish(pf, NULL, &err);
	if (cs)
		mt_cs_free(cs);
	mt_events_reader_close(&r);
	fclose(in);
	return 0;
}
