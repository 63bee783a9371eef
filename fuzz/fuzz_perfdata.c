/* fuzz_perfdata: perf.data (file and pipe mode) through the reader and the
 * Intel PT decode of mt-pt2events, events written to /dev/null. */
#include "fuzz.h"

#include "stream/events.h"
#include "trace/perfdata.h"
#include "trace/ptperf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_perfdata pd;
	struct mt_err err = {0};
	if (mt_perfdata_open_mem(&pd, data, size, "fuzz", &err))
		return 0;
	struct mt_events_writer w;
	if (!mt_events_writer_init(&w, fuzz_devnull())) {
		/* binaries are looked up under a root that has none */
		struct mt_ptperf_opts o = {.symfs = "/nonexistent", .all_branches = size % 2, .power = true};
		struct mt_ptdec_stats st = {0};
		bool damaged = false;
		mt_ptperf_decode(&pd, &o, &w, &st, &damaged, &err);
		struct mt_err we = {0};
		mt_events_writer_finish(&w, &we);
	}
	mt_perfdata_close(&pd);
	return 0;
}
