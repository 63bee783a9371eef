/* report_write: a report's rows written out (mt-report(1)): an aligned
 * table for people, TSV with a header line for scripts, or JSON; and the
 * difference of two reports by function name (uftrace's report --diff). */
#ifndef MT_REPORT_WRITE_H
#define MT_REPORT_WRITE_H

#include <stdio.h>

#include "report/report.h"

enum mt_report_format { MT_REPORT_TEXT, MT_REPORT_TSV, MT_REPORT_JSON };

/* Parses text, tsv or json; -1 otherwise. */
int mt_report_format_parse(const char *s);
/* The rows in their order (mt_report_sort), at most top of them (0: all).
 * TSV's columns: function calls total_ns self_ns avg_ns min_ns max_ns
 * p50_ns p90_ns p99_ns insn self_insn cycles self_cycles ipc insn_calls
 * samples_self samples_children no_call no_return, then pid tid comm with
 * per_thread;
 * times in ns, an unknown value empty. */
void mt_report_write(const struct mt_report *r, FILE *out, enum mt_report_format fmt, size_t top);
/* Per function name (threads merged): calls and times in old and new and
 * their change, ordered by the largest change of total time first. */
int mt_report_diff_write(const struct mt_report *old_r, const struct mt_report *new_r, FILE *out,
			 enum mt_report_format fmt, size_t top);

#endif
