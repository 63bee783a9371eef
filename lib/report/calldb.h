/* calldb: a trace's calls and functions as an SQLite database
 * (mt-calls(5)): tables traces, threads, functions and calls, one row per
 * call with perf's export-to-sqlite names and meanings where they overlap
 * (call_time, return_time, insn_count, cyc_count, flags: 1 no call seen, 2
 * no return seen, parent_id). Written in one transaction into a temporary
 * file beside the target and renamed over it when complete; rows stream
 * into it as the calls come, so memory stays bounded. Databases of many
 * traces merge into one (mt_calldb_merge), each trace a row of traces. */
#ifndef MT_CALLDB_H
#define MT_CALLDB_H

#include <stdbool.h>
#include <stdint.h>

#include "base/mt_err.h"
#include "report/report.h"

enum mt_calldb_level { MT_CALLDB_CALLS, MT_CALLDB_FUNCTIONS }; /* functions: no calls table rows */

struct mt_calldb;

/* Opens path's temporary file and makes the schema. */
struct mt_calldb *mt_calldb_open(const char *path, enum mt_calldb_level level, struct mt_err *err);
/* The sink that takes the calls (mt_report_sink's next): their function
 * and thread ids are the report's (mt_fstat.id, mt_rthread.id). */
void mt_calldb_sink(struct mt_calldb *db, struct mt_report_next *sink);
/* Ends the trace's rows: its threads and functions from r (the report
 * the calls came through, not per thread), its traces row (input, status
 * "ok" or the damage, span, events: the stream's events and the time from
 * its first to its last, as mt-events --stats and mt-batch's summary say
 * them; span UINT64_MAX: none timed, NULL), commits and renames. Returns 0
 * or an error (nothing left under path's name); frees db either way. */
int mt_calldb_finish(struct mt_calldb *db, const struct mt_report *r, const char *input, const char *status,
		     uint64_t events, uint64_t span, struct mt_err *err);
/* Frees db, leaving nothing under its name. */
void mt_calldb_abort(struct mt_calldb *db);
/* Copies every trace of the databases ins[0..n) into a new database at
 * out (atomically), each trace a new traces row, their ids renumbered. */
int mt_calldb_merge(const char *out, const char *const *ins, size_t n, enum mt_calldb_level level,
		    struct mt_err *err);

#endif
