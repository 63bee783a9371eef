/* calldb: calls and functions into SQLite (calldb.h, mt-calls(5)). */
#define _GNU_SOURCE
#include "report/calldb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "base/outfile.h"
#include "base/utf8.h"

static const char schema[] =
	"CREATE TABLE traces (id INTEGER PRIMARY KEY, input TEXT, status TEXT, span_ns INTEGER, events INTEGER,"
	" calls INTEGER);"
	"CREATE TABLE threads (id INTEGER PRIMARY KEY, trace_id INTEGER, pid INTEGER, tid INTEGER, comm TEXT,"
	" process_comm TEXT);"
	"CREATE TABLE functions (id INTEGER PRIMARY KEY, trace_id INTEGER, name TEXT, calls INTEGER,"
	" total_ns INTEGER, self_ns INTEGER, avg_ns INTEGER, min_ns INTEGER, max_ns INTEGER, p50_ns INTEGER,"
	" p90_ns INTEGER, p99_ns INTEGER, insn INTEGER, self_insn INTEGER, cycles INTEGER, self_cycles INTEGER,"
	" samples_self INTEGER,"
	" samples_children INTEGER, period_self INTEGER, period_children INTEGER);"
	"CREATE TABLE calls (id INTEGER PRIMARY KEY, trace_id INTEGER, thread_id INTEGER, pid INTEGER,"
	" tid INTEGER, function_id INTEGER, parent_id INTEGER, depth INTEGER, call_time INTEGER,"
	" return_time INTEGER, insn_count INTEGER, cyc_count INTEGER, flags INTEGER);"
	"CREATE VIEW calls_view AS SELECT calls.id, calls.trace_id, calls.pid, calls.tid, functions.name AS function,"
	" calls.parent_id, calls.depth, calls.call_time, calls.return_time,"
	" calls.return_time - calls.call_time AS elapsed_ns, calls.insn_count, calls.cyc_count, calls.flags"
	" FROM calls JOIN functions ON functions.id = calls.function_id;";

/* The calls' function and thread ids are the report's rows' and threads'
 * (mt_fstat.id, mt_rthread.id): those tables are written at the end, from
 * the report, and the calls stream in as they come. */
struct mt_calldb {
	sqlite3 *db;
	struct mt_outfile of;
	enum mt_calldb_level level;
	sqlite3_stmt *ins_call;
	bool failed;
	char msg[256];
};

static void fail(struct mt_calldb *db, const char *what)
{
	if (db->failed)
		return;
	db->failed = true;
	snprintf(db->msg, sizeof db->msg, "%s: %s", what, db->db ? sqlite3_errmsg(db->db) : "out of memory");
}

static bool exec(struct mt_calldb *db, const char *sql)
{
	char *e = NULL;
	if (sqlite3_exec(db->db, sql, NULL, NULL, &e) != SQLITE_OK) {
		if (!db->failed) {
			db->failed = true;
			snprintf(db->msg, sizeof db->msg, "sqlite: %s", e ? e : "error");
		}
		sqlite3_free(e);
		return false;
	}
	return true;
}

static void close_all(struct mt_calldb *db)
{
	sqlite3_finalize(db->ins_call);
	db->ins_call = NULL;
	if (db->db)
		sqlite3_close(db->db);
	db->db = NULL;
}


/* The temporary file opened as a database, made fast: it is renamed only
 * when complete, so no journal is needed for safety. */
static sqlite3 *open_tmp(struct mt_outfile *of, const char *path, struct mt_err *err)
{
	if (!strcmp(path, "-")) {
		mt_err_set(err, MT_EUSAGE, "an SQLite database needs a file name, not standard output");
		return NULL;
	}
	if (mt_outfile_open(of, path, err))
		return NULL;
	if (of->direct) {
		mt_outfile_abort(of);
		mt_err_set(err, MT_EUSAGE, "%s: an SQLite database must be a regular file", path);
		return NULL;
	}
	sqlite3 *s = NULL;
	/* URI names: --merge's inputs are attached read-only (part_uri);
	 * defensive, and no function or virtual table run from any schema */
	if (sqlite3_open_v2(of->tmp, &s, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, NULL) != SQLITE_OK ||
	    sqlite3_db_config(s, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL) != SQLITE_OK ||
	    sqlite3_db_config(s, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL) != SQLITE_OK ||
	    sqlite3_exec(s, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		mt_err_set(err, MT_EIO, "%s: %s", path, s ? sqlite3_errmsg(s) : "out of memory");
		sqlite3_close(s);
		mt_outfile_abort(of);
		return NULL;
	}
	return s;
}

/* Commits, closes, and renames the temporary file over path. */
static int commit_tmp(sqlite3 *s, struct mt_outfile *of, const char *path, struct mt_err *err)
{
	if (sqlite3_exec(s, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		mt_err_set(err, MT_EIO, "%s: %s", path, sqlite3_errmsg(s));
		sqlite3_close(s);
		mt_outfile_abort(of);
		return err->code;
	}
	if (sqlite3_close(s) != SQLITE_OK) {
		mt_err_set(err, MT_EIO, "%s: closing the database failed", path);
		mt_outfile_abort(of);
		return err->code;
	}
	return mt_outfile_commit(of, err);
}

struct mt_calldb *mt_calldb_open(const char *path, enum mt_calldb_level level, struct mt_err *err)
{
	struct mt_calldb *db = calloc(1, sizeof *db);
	if (!db) {
		mt_err_set(err, MT_ENOMEM, "out of memory");
		return NULL;
	}
	db->level = level;
	if (!(db->db = open_tmp(&db->of, path, err))) {
		free(db);
		return NULL;
	}
	if (!exec(db, schema) ||
	    sqlite3_prepare_v2(db->db, "INSERT INTO calls VALUES (?,1,?,?,?,?,?,?,?,?,?,?,?)", -1, &db->ins_call,
			       NULL) != SQLITE_OK) {
		fail(db, "making the database");
		mt_err_set(err, MT_EIO, "%s: %s", path, db->msg);
		mt_calldb_abort(db);
		return NULL;
	}
	return db;
}

static void db_call(void *ctx, const struct mt_report_call *rc)
{
	struct mt_calldb *db = ctx;
	const struct mt_tl_call *c = rc->c;
	if (db->failed || !rc->function)
		return;
	sqlite3_stmt *s = db->ins_call;
	sqlite3_bind_int64(s, 1, (int64_t)c->id);
	sqlite3_bind_int64(s, 2, rc->thread->id);
	sqlite3_bind_int64(s, 3, c->pid);
	sqlite3_bind_int64(s, 4, c->tid);
	sqlite3_bind_int64(s, 5, rc->function->id);
	if (c->parent)
		sqlite3_bind_int64(s, 6, (int64_t)c->parent);
	else
		sqlite3_bind_null(s, 6);
	sqlite3_bind_int64(s, 7, (int64_t)c->depth);
	sqlite3_bind_int64(s, 8, (int64_t)c->start);
	sqlite3_bind_int64(s, 9, (int64_t)c->end);
	if (c->has_insn)
		sqlite3_bind_int64(s, 10, (int64_t)c->insn);
	else
		sqlite3_bind_null(s, 10);
	if (c->has_cyc)
		sqlite3_bind_int64(s, 11, (int64_t)c->cyc);
	else
		sqlite3_bind_null(s, 11);
	sqlite3_bind_int(s, 12, (c->no_call ? 1 : 0) | (c->no_return ? 2 : 0));
	if (sqlite3_step(s) != SQLITE_DONE)
		fail(db, "writing a call");
	sqlite3_reset(s);
}

void mt_calldb_sink(struct mt_calldb *db, struct mt_report_next *sink)
{
	/* the functions level: the report's figures alone */
	*sink = (struct mt_report_next){.ctx = db, .call = db->level == MT_CALLDB_CALLS ? db_call : NULL};
}

void mt_calldb_abort(struct mt_calldb *db)
{
	if (!db)
		return;
	close_all(db);
	mt_outfile_abort(&db->of);
	free(db);
}

static void bind_u64_or_null(sqlite3_stmt *s, int i, bool known, uint64_t v)
{
	if (known)
		sqlite3_bind_int64(s, i, (int64_t)v);
	else
		sqlite3_bind_null(s, i);
}

/* TEXT is UTF-8: a name's bad bytes become U+FFFD (base/utf8.h), in a
 * copy SQLite keeps */
static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
	if (!v) {
		sqlite3_bind_null(s, i);
		return;
	}
	char *buf = NULL;
	size_t cap = 0;
	const char *t = mt_utf8_fixed(v, &buf, &cap);
	if (t == v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	else if (t)
		sqlite3_bind_text(s, i, t, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
	free(buf);
}

/* The threads table, and the trace's span and calls, from the report's threads. */
static void write_threads(struct mt_calldb *db, const struct mt_report *r, uint64_t *span, uint64_t *calls)
{
	sqlite3_stmt *th = NULL;
	if (sqlite3_prepare_v2(db->db, "INSERT INTO threads VALUES (?,1,?,?,?,?)", -1, &th, NULL) != SQLITE_OK) {
		fail(db, "writing the threads");
		return;
	}
	uint64_t first = UINT64_MAX, last = 0;
	*calls = 0;
	for (size_t i = 0; !db->failed && i < mt_report_nthreads(r); i++) {
		const struct mt_rthread *t = mt_report_thread(r, i);
		sqlite3_bind_int64(th, 1, t->id);
		sqlite3_bind_int64(th, 2, t->pid);
		sqlite3_bind_int64(th, 3, t->tid);
		bind_text_or_null(th, 4, t->comm);
		bind_text_or_null(th, 5, t->process_comm);
		if (sqlite3_step(th) != SQLITE_DONE)
			fail(db, "writing the threads");
		sqlite3_reset(th);
		*calls += t->calls;
		if (t->calls && t->first < first)
			first = t->first;
		if (t->calls && t->last > last)
			last = t->last;
	}
	sqlite3_finalize(th);
	*span = *calls ? last - first : UINT64_MAX;
}

int mt_calldb_finish(struct mt_calldb *db, const struct mt_report *r, const char *input, const char *status,
		     uint64_t events, uint64_t span, struct mt_err *err)
{
	sqlite3_stmt *up = NULL, *tr = NULL;
	uint64_t calls_span = UINT64_MAX, calls = 0;
	bool sampled = mt_report_samples(r) > 0, ns = mt_report_period_is_ns(r);
	if (!db->failed)
		write_threads(db, r, &calls_span, &calls);
	if (!db->failed &&
	    (sqlite3_prepare_v2(db->db, "INSERT INTO functions VALUES (?,1,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &up,
				NULL) != SQLITE_OK ||
	     sqlite3_prepare_v2(db->db, "INSERT INTO traces VALUES (1,?,?,?,?,?)", -1, &tr, NULL) != SQLITE_OK))
		fail(db, "writing the functions");
	for (size_t i = 0; !db->failed && i < mt_report_nfuncs(r); i++) {
		const struct mt_fstat *f = mt_report_func(r, i);
		/* sampled: times are the samples' periods (perf report -F
		 * period), when those are ns; the slices' are estimates */
		bool c = f->calls > 0 && !sampled;
		sqlite3_bind_int64(up, 1, f->id);
		bind_text_or_null(up, 2, f->name);
		sqlite3_bind_int64(up, 3, (int64_t)f->calls);
		bind_u64_or_null(up, 4, !sampled || ns, sampled ? f->period_children : f->total);
		bind_u64_or_null(up, 5, !sampled || ns, sampled ? f->period_self : f->self);
		bind_u64_or_null(up, 6, c, c ? f->total / f->calls : 0);
		bind_u64_or_null(up, 7, c, f->hist.min);
		bind_u64_or_null(up, 8, c, f->hist.max);
		bind_u64_or_null(up, 9, c, mt_durhist_quantile(&f->hist, 0.5));
		bind_u64_or_null(up, 10, c, mt_durhist_quantile(&f->hist, 0.9));
		bind_u64_or_null(up, 11, c, mt_durhist_quantile(&f->hist, 0.99));
		bind_u64_or_null(up, 12, f->insn_calls > 0, f->insn);
		bind_u64_or_null(up, 13, f->insn_calls > 0, f->self_insn);
		bind_u64_or_null(up, 14, f->cyc_calls > 0, f->cyc);
		bind_u64_or_null(up, 15, f->cyc_calls > 0, f->self_cyc);
		sqlite3_bind_int64(up, 16, (int64_t)f->samples_self);
		sqlite3_bind_int64(up, 17, (int64_t)f->samples_children);
		bind_u64_or_null(up, 18, sampled, f->period_self);
		bind_u64_or_null(up, 19, sampled, f->period_children);
		if (sqlite3_step(up) != SQLITE_DONE)
			fail(db, "writing the functions");
		sqlite3_reset(up);
	}
	if (!db->failed) {
		bind_text_or_null(tr, 1, input);
		bind_text_or_null(tr, 2, status);
		bind_u64_or_null(tr, 3, span != UINT64_MAX, span);
		sqlite3_bind_int64(tr, 4, (int64_t)events);
		sqlite3_bind_int64(tr, 5, (int64_t)calls);
		if (sqlite3_step(tr) != SQLITE_DONE)
			fail(db, "writing the trace");
	}
	sqlite3_finalize(up);
	sqlite3_finalize(tr);
	if (db->failed) {
		mt_err_set(err, MT_EIO, "%s: %s", db->of.path, db->msg);
		mt_calldb_abort(db);
		return err->code;
	}
	sqlite3_finalize(db->ins_call);
	db->ins_call = NULL;
	sqlite3 *s = db->db;
	db->db = NULL;
	char *path = db->of.path ? strdup(db->of.path) : NULL;
	int rc = commit_tmp(s, &db->of, path ? path : "database", err);
	free(path);
	free(db);
	return rc;
}

/* --- merging ------------------------------------------------------------------ */

/* "file:PATH?mode=ro" for ATTACH: read only, never created; every byte of
 * the path but unreserved ones and '/' %-encoded. NULL when out of memory. */
static char *part_uri(const char *path)
{
	size_t n = strlen(path);
	char *u = malloc(3 * n + 32), *o = u;
	if (!u)
		return NULL;
	o += sprintf(o, "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~/", *p))
			*o++ = (char)*p;
		else
			o += sprintf(o, "%%%02X", *p);
	}
	strcpy(o, "?mode=ro");
	return u;
}

/* Whether the attached part holds mt's schema and nothing else: its four
 * tables and its view, each as mt's own CREATE statement wrote it (the
 * text SQLite keeps); no other table, no other view, no trigger, no
 * index. A crafted database's "traces" as a view (a query that never
 * ends) or a trigger is refused before anything of it is read. Fills why. */
static bool part_is_mt(sqlite3 *s, char *why, size_t cap)
{
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(s, "SELECT type, name, sql FROM part.sqlite_schema", -1, &q, NULL) != SQLITE_OK) {
		snprintf(why, cap, "%s", sqlite3_errmsg(s));
		return false;
	}
	size_t seen = 0, wanted = 0;
	bool ok = true;
	for (const char *c = schema; *c; c++)
		wanted += *c == ';';
	int rc;
	while (ok && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(q, 0), *name = (const char *)sqlite3_column_text(q, 1),
			   *sql = (const char *)sqlite3_column_text(q, 2);
		/* the statement in mt's schema that makes it: the same text */
		bool found = false;
		for (const char *st = schema; sql && *st && !found;) {
			const char *end = strchr(st, ';');
			size_t len = (size_t)(end - st);
			found = strlen(sql) == len && !memcmp(sql, st, len);
			st = end + 1;
		}
		if (!found) {
			snprintf(why, cap, "not an mt calls database: it has %s '%s' of its own (only mt's tables are read)",
				 type ? type : "?", name ? name : "?");
			ok = false;
		}
		seen++;
	}
	if (ok && rc != SQLITE_DONE) {
		snprintf(why, cap, "%s", sqlite3_errmsg(s));
		ok = false;
	}
	sqlite3_finalize(q);
	if (ok && seen != wanted) {
		snprintf(why, cap, "not an mt calls database (%zu of mt's %zu tables and views)", seen, wanted);
		ok = false;
	}
	return ok;
}

/* Attaches one input as "part", read only, and checks it. */
static int attach_part(sqlite3 *s, const char *in, struct mt_err *err)
{
	struct stat st;
	if (stat(in, &st))
		return mt_err_set(err, MT_EIO, "%s: %s", in, strerror(errno));
	if (!S_ISREG(st.st_mode)) /* a FIFO is never opened: no blocking */
		return mt_err_set(err, MT_EFORMAT, "%s: not a regular file", in);
	char *uri = part_uri(in), *sql = uri ? sqlite3_mprintf("COMMIT; ATTACH %Q AS part; BEGIN;", uri) : NULL;
	free(uri);
	if (!sql)
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	char *e = NULL, why[512];
	int rc = sqlite3_exec(s, sql, NULL, NULL, &e);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		mt_err_set(err, MT_EFORMAT, "%s: %s", in, e ? e : sqlite3_errmsg(s));
		sqlite3_free(e);
		return err->code;
	}
	if (!part_is_mt(s, why, sizeof why)) {
		sqlite3_exec(s, "COMMIT; DETACH part; BEGIN", NULL, NULL, NULL);
		return mt_err_set(err, MT_EFORMAT, "%s: %s", in, why);
	}
	return 0;
}

int mt_calldb_merge(const char *out, const char *const *ins, size_t n, enum mt_calldb_level level,
		    struct mt_err *err)
{
	struct mt_outfile of;
	sqlite3 *s = open_tmp(&of, out, err);
	if (!s)
		return err->code;
	char *e = NULL;
	if (sqlite3_exec(s, schema, NULL, NULL, &e) != SQLITE_OK)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		/* every id of the input moves past the ids already there */
		if (attach_part(s, ins[i], err)) {
			sqlite3_close(s);
			mt_outfile_abort(&of);
			return err->code;
		}
		char *sql = sqlite3_mprintf(
			"CREATE TEMP TABLE off AS SELECT"
			" (SELECT IFNULL(MAX(id),0) FROM main.traces) AS tr,"
			" (SELECT IFNULL(MAX(id),0) FROM main.threads) AS th,"
			" (SELECT IFNULL(MAX(id),0) FROM main.functions) AS fn,"
			" (SELECT IFNULL(MAX(id),0) FROM main.calls) AS ca;"
			"INSERT INTO main.traces SELECT id + (SELECT tr FROM off), input, status, span_ns, events, calls"
			" FROM part.traces;"
			"INSERT INTO main.threads SELECT id + (SELECT th FROM off), trace_id + (SELECT tr FROM off), pid,"
			" tid, comm, process_comm FROM part.threads;"
			"INSERT INTO main.functions SELECT id + (SELECT fn FROM off), trace_id + (SELECT tr FROM off),"
			" name, calls, total_ns, self_ns, avg_ns, min_ns, max_ns, p50_ns, p90_ns, p99_ns, insn,"
			" self_insn, cycles, self_cycles, samples_self, samples_children, period_self, period_children"
			" FROM part.functions;"
			"%s"
			"DROP TABLE temp.off;"
			"COMMIT; DETACH part; BEGIN;",
			level == MT_CALLDB_CALLS
				? "INSERT INTO main.calls SELECT id + (SELECT ca FROM off), trace_id + (SELECT tr FROM off),"
				  " thread_id + (SELECT th FROM off), pid, tid, function_id + (SELECT fn FROM off),"
				  " parent_id + (SELECT ca FROM off), depth, call_time, return_time, insn_count,"
				  " cyc_count, flags FROM part.calls;"
				: "");
		if (!sql) {
			sqlite3_close(s);
			mt_outfile_abort(&of);
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		}
		int rc = sqlite3_exec(s, sql, NULL, NULL, &e);
		sqlite3_free(sql);
		if (rc != SQLITE_OK) {
			mt_err_set(err, MT_EFORMAT, "%s: %s", ins[i], e ? e : "not an mt calls database");
			sqlite3_free(e);
			sqlite3_close(s);
			mt_outfile_abort(&of);
			return err->code;
		}
	}
	return commit_tmp(s, &of, out, err);
bad:
	mt_err_set(err, MT_EIO, "%s: %s", out, e ? e : "sqlite error");
	sqlite3_free(e);
	sqlite3_close(s);
	mt_outfile_abort(&of);
	return err->code;
}
