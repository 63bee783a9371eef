/* calldb: a database written from hand-made calls, read back with
 * SQLite itself (the oracle): its rows, ids, flags and NULLs; the file
 * only under its name once complete; two merged with their ids renumbered. */
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/calldb.h"
#include "tap.h"

static long long q(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	long long v = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	return v;
}

static int write_db(const char *path, const char *status)
{
	struct mt_err err = {0};
	struct mt_calldb *db = mt_calldb_open(path, MT_CALLDB_CALLS, &err);
	if (!db)
		return -1;
	struct mt_report *r = mt_report_new(NULL);
	struct mt_report_next next;
	struct mt_tl_calls_sink k;
	mt_calldb_sink(db, &next);
	mt_report_sink(r, &k, &next);
	const char *stk[] = {"main", "f"};
	k.thread(k.ctx, 10, 11, "t", "p");
	struct mt_tl_call c = {.pid = 10, .tid = 11, .name = "f", .start = 5, .end = 8, .id = 2, .parent = 1,
			       .depth = 1, .stack = stk, .insn = 30, .has_insn = true};
	k.call(k.ctx, &c);
	c = (struct mt_tl_call){.pid = 10, .tid = 11, .name = "main", .start = 0, .end = 10, .id = 1, .depth = 0,
				.stack = stk, .no_call = true, .no_return = true};
	k.call(k.ctx, &c);
	int rc = mt_calldb_finish(db, r, "in.ev", status, 7, 10, &err); /* the stream's span, given */
	mt_report_free(r);
	return rc;
}

int main(void)
{
	char dir[] = "/tmp/test_calldb.XXXXXX", a[64], b[64], m[64];
	if (!mkdtemp(dir))
		return 1;
	snprintf(a, sizeof a, "%s/a.db", dir);
	snprintf(b, sizeof b, "%s/b.db", dir);
	snprintf(m, sizeof m, "%s/m.db", dir);
	ok(!write_db(a, "ok") && !write_db(b, "damaged: cut"), "two databases written");
	ok(q(a, "SELECT COUNT(*) FROM calls") == 2 && q(a, "SELECT parent_id FROM calls WHERE id = 2") == 1 &&
		   q(a, "SELECT parent_id FROM calls WHERE id = 1") == -2,
	   "two calls, the child's parent the root, the root's NULL");
	ok(q(a, "SELECT flags FROM calls WHERE id = 1") == 3 && q(a, "SELECT flags FROM calls WHERE id = 2") == 0,
	   "perf's flags: 1 no call, 2 no return");
	ok(q(a, "SELECT insn_count FROM calls WHERE id = 2") == 30 && q(a, "SELECT insn_count FROM calls WHERE id = 1") == -2 &&
		   q(a, "SELECT cyc_count FROM calls WHERE id = 2") == -2,
	   "instructions, NULL where unknown; no cycle counts");
	ok(q(a, "SELECT self_ns FROM functions WHERE name = 'main'") == 7 && q(a, "SELECT calls FROM functions WHERE name = 'f'") == 1,
	   "the functions table: the report's figures");
	ok(q(a, "SELECT events FROM traces") == 7 && q(a, "SELECT span_ns FROM traces") == 10 &&
		   q(a, "SELECT COUNT(*) FROM threads WHERE pid = 10 AND tid = 11 AND comm = 't'") == 1,
	   "traces and threads rows");
	ok(q(a, "SELECT elapsed_ns FROM calls_view WHERE function = 'f'") == 3, "calls_view");
	struct mt_err err = {0};
	const char *ins[] = {a, b};
	ok(!mt_calldb_merge(m, ins, 2, MT_CALLDB_CALLS, &err), "merged");
	ok(q(m, "SELECT COUNT(*) FROM traces") == 2 && q(m, "SELECT COUNT(*) FROM calls") == 4 &&
		   q(m, "SELECT COUNT(*) FROM calls c JOIN calls p ON p.id = c.parent_id AND p.trace_id = c.trace_id") == 2 &&
		   q(m, "SELECT COUNT(*) FROM calls c JOIN functions f ON f.id = c.function_id AND f.trace_id = c.trace_id") == 4,
	   "merged: every id renumbered, parents and functions still joined within their trace");
	ok(q(m, "SELECT COUNT(*) FROM traces WHERE status LIKE 'damaged:%'") == 1, "each trace's status kept");
	char bad[64];
	snprintf(bad, sizeof bad, "%s/none.db", dir);
	const char *ins2[] = {a, bad};
	ok(mt_calldb_merge(m, ins2, 2, MT_CALLDB_CALLS, &err) != 0 && q(m, "SELECT COUNT(*) FROM traces") == 2,
	   "a merge that fails leaves the old database as it was");
	err = (struct mt_err){0};
	ok(!mt_calldb_open("-", MT_CALLDB_CALLS, &err) && err.code == MT_EUSAGE, "no database on standard output");
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return tap_done();
}
