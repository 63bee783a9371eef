/* report_write: tables, TSV and JSON of a report (report_write.h). */
#define _GNU_SOURCE
#include "report/report_write.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

int mt_report_format_parse(const char *s)
{
	if (!strcmp(s, "text"))
		return MT_REPORT_TEXT;
	if (!strcmp(s, "tsv"))
		return MT_REPORT_TSV;
	if (!strcmp(s, "json"))
		return MT_REPORT_JSON;
	return -1;
}

/* ns for people, as uftrace shows times: 3 decimals and a unit. */
static const char *human_ns(char *b, size_t n, uint64_t ns)
{
	if (ns < 1000)
		snprintf(b, n, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(b, n, "%.3f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(b, n, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(b, n, "%.3f s", (double)ns / 1e9);
	return b;
}

struct figures {
	uint64_t avg, min, max, p50, p90, p99;
};

static struct figures figures_of(const struct mt_fstat *f)
{
	struct figures g = {0};
	if (!f->calls)
		return g;
	g.avg = f->total / f->calls;
	g.min = f->hist.min;
	g.max = f->hist.max;
	g.p50 = mt_durhist_quantile(&f->hist, 0.50);
	g.p90 = mt_durhist_quantile(&f->hist, 0.90);
	g.p99 = mt_durhist_quantile(&f->hist, 0.99);
	return g;
}

static const char *comm_of(const struct mt_report *r, uint32_t pid, uint32_t tid)
{
	const struct mt_rthread *t = mt_report_find_thread(r, pid, tid);
	return t && t->comm ? t->comm : "";
}

static void write_tsv(const struct mt_report *r, FILE *out, size_t n)
{
	bool per_thread = mt_report_options(r)->per_thread, sampled = mt_report_samples(r) > 0;
	bool ns = mt_report_period_is_ns(r);
	/* sampled: the slices are not calls, and the times are the periods */
	fputs(sampled ? "function\tslices" : "function\tcalls", out);
	fputs("\ttotal_ns\tself_ns\tavg_ns\tmin_ns\tmax_ns\tp50_ns\tp90_ns\tp99_ns\tinsn\tself_insn"
	      "\tcycles\tself_cycles\tipc\tinsn_calls\tsamples_self\tsamples_children\tno_call\tno_return"
	      "\tperiod_self\tperiod_children",
	      out);
	fputs(per_thread ? "\tpid\ttid\tcomm\n" : "\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct mt_fstat *f = mt_report_func(r, i);
		struct figures g = figures_of(f);
		mt_utf8_put_escaped(out, f->name);
		if (!sampled)
			fprintf(out, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, f->calls, f->total, f->self);
		else if (ns)
			fprintf(out, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, f->calls, f->period_children,
				f->period_self);
		else
			fprintf(out, "\t%" PRIu64 "\t\t", f->calls);
		if (f->calls && !sampled)
			fprintf(out, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64,
				g.avg, g.min, g.max, g.p50, g.p90, g.p99);
		else
			fputs("\t\t\t\t\t\t", out);
		if (f->insn_calls)
			fprintf(out, "\t%" PRIu64 "\t%" PRIu64, f->insn, f->self_insn);
		else
			fputs("\t\t", out);
		if (f->cyc_calls)
			fprintf(out, "\t%" PRIu64 "\t%" PRIu64, f->cyc, f->self_cyc);
		else
			fputs("\t\t", out);
		if (f->cyc && f->insn_calls)
			fprintf(out, "\t%.3f", (double)f->insn / (double)f->cyc);
		else
			fputs("\t", out);
		fprintf(out, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, f->insn_calls,
			f->samples_self, f->samples_children, f->no_call, f->no_return);
		if (sampled)
			fprintf(out, "\t%" PRIu64 "\t%" PRIu64, f->period_self, f->period_children);
		else
			fputs("\t\t", out);
		if (per_thread) {
			fprintf(out, "\t%" PRIu32 "\t%" PRIu32 "\t", f->pid, f->tid);
			mt_utf8_put_escaped(out, comm_of(r, f->pid, f->tid));
		}
		fputc('\n', out);
	}
}

static void write_json(const struct mt_report *r, FILE *out, size_t n)
{
	bool per_thread = mt_report_options(r)->per_thread;
	uint64_t samples = mt_report_samples(r);
	bool sampled = samples > 0, ns = mt_report_period_is_ns(r);
	fprintf(out, "{\"version\":1,\"samples\":%" PRIu64 ",\"estimated\":%s,", samples, sampled ? "true" : "false");
	if (sampled) {
		fprintf(out, "\"period\":%" PRIu64 ",\"period_unit\":\"%s\",\"sample_event\":", mt_report_period(r),
			ns ? "ns" : "events");
		if (mt_report_sample_event(r))
			mt_utf8_put_json(out, mt_report_sample_event(r));
		else
			fputs("null", out);
		uint64_t off, pre;
		mt_report_off_cpu(r, &off, &pre);
		fprintf(out, ",\"off_cpu_ns\":%" PRIu64 ",\"preempted_ns\":%" PRIu64 ",", off, pre);
	}
	if (mt_report_lost(r)) {
		fputs("\"lost\":", out);
		mt_utf8_put_json(out, mt_report_lost(r));
		fputc(',', out);
	}
	fputs("\"threads\":[", out);
	for (size_t i = 0; i < mt_report_nthreads(r); i++) {
		const struct mt_rthread *t = mt_report_thread(r, i);
		fprintf(out, "%s{\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"comm\":", i ? "," : "", t->pid, t->tid);
		if (t->comm)
			mt_utf8_put_json(out, t->comm);
		else
			fputs("null", out);
		if (sampled)
			fprintf(out, ",\"slices\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"period\":%" PRIu64 "}", t->calls,
				t->samples, t->period);
		else
			fprintf(out, ",\"calls\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"root_total_ns\":%" PRIu64 "}",
				t->calls, t->samples, t->root_total);
	}
	fputs("],\"functions\":[", out);
	for (size_t i = 0; i < n; i++) {
		const struct mt_fstat *f = mt_report_func(r, i);
		struct figures g = figures_of(f);
		fputs(i ? ",\n{\"function\":" : "\n{\"function\":", out);
		mt_utf8_put_json(out, f->name);
		if (!sampled)
			fprintf(out, ",\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64, f->calls,
				f->total, f->self);
		else
			fprintf(out, ",\"slices\":%" PRIu64 ",\"period_children\":%" PRIu64 ",\"period_self\":%" PRIu64,
				f->calls, f->period_children, f->period_self);
		if (sampled && ns)
			fprintf(out, ",\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64, f->period_children, f->period_self);
		if (f->calls && !sampled)
			fprintf(out, ",\"avg_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64
				",\"p90_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64, g.avg, g.min, g.max, g.p50, g.p90, g.p99);
		if (f->insn_calls)
			fprintf(out, ",\"insn\":%" PRIu64 ",\"self_insn\":%" PRIu64, f->insn, f->self_insn);
		if (f->cyc_calls)
			fprintf(out, ",\"cycles\":%" PRIu64 ",\"self_cycles\":%" PRIu64, f->cyc, f->self_cyc);
		if (f->cyc && f->insn_calls)
			fprintf(out, ",\"ipc\":%.3f", (double)f->insn / (double)f->cyc);
		fprintf(out, ",\"insn_calls\":%" PRIu64 ",\"samples_self\":%" PRIu64 ",\"samples_children\":%" PRIu64
			",\"no_call\":%" PRIu64 ",\"no_return\":%" PRIu64, f->insn_calls, f->samples_self,
			f->samples_children, f->no_call, f->no_return);
		if (per_thread) {
			fprintf(out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"comm\":", f->pid, f->tid);
			mt_utf8_put_json(out, comm_of(r, f->pid, f->tid));
		}
		fputc('}', out);
	}
	fputs("]}\n", out);
}

static void write_text(const struct mt_report *r, FILE *out, size_t n)
{
	bool per_thread = mt_report_options(r)->per_thread, cycles = false;
	for (size_t i = 0; i < n && !cycles; i++)
		cycles = mt_report_func(r, i)->cyc_calls > 0;
	uint64_t samples = mt_report_samples(r);
	char b[9][32];
	bool ns = mt_report_period_is_ns(r);
	const char *ev = mt_report_sample_event(r) ? mt_report_sample_event(r) : "an event";
	if (samples && ns) {
		fprintf(out, "# %" PRIu64 " samples of %s, %s in all; Total and Self: the time of the samples that found"
			" a function, anywhere and on top (perf report -F period)\n", samples, ev,
			human_ns(b[0], sizeof b[0], mt_report_period(r)));
	} else if (samples) {
		fprintf(out, "# %" PRIu64 " samples of %s, a period of %" PRIu64 " events in all; Total and Self: the"
			" periods of the samples that found a function, anywhere and on top (perf report -F period)\n",
			samples, ev, mt_report_period(r));
	}
	if (samples) {
		fprintf(out, "%9s %9s %9s %12s %12s  %s%s\n", "Children", "Self", "Samples", "Total", "Self",
			per_thread ? "PID/TID  Thread           " : "", "Function");
	} else {
		fprintf(out, "%12s %12s %10s %12s %12s %12s %12s %12s %14s", "Total time", "Self time", "Calls",
			"Avg", "Min", "Max", "p90", "p99", "Instructions");
		if (cycles)
			fprintf(out, " %14s %6s", "Cycles", "IPC");
		fprintf(out, "  %s%s\n", per_thread ? "PID/TID  Thread           " : "", "Function");
	}
	for (size_t i = 0; i < n; i++) {
		const struct mt_fstat *f = mt_report_func(r, i);
		struct figures g = figures_of(f);
		if (samples) {
			if (ns) {
				human_ns(b[0], sizeof b[0], f->period_children);
				human_ns(b[1], sizeof b[1], f->period_self);
			} else {
				snprintf(b[0], sizeof b[0], "%" PRIu64, f->period_children);
				snprintf(b[1], sizeof b[1], "%" PRIu64, f->period_self);
			}
			fprintf(out, "%8.2f%% %8.2f%% %9" PRIu64 " %12s %12s  ",
				100.0 * (double)f->samples_children / (double)samples,
				100.0 * (double)f->samples_self / (double)samples, f->samples_self, b[0], b[1]);
		} else {
			char insn[32] = "-";
			if (f->insn_calls)
				snprintf(insn, sizeof insn, "%" PRIu64, f->insn);
			fprintf(out, "%12s %12s %10" PRIu64 " %12s %12s %12s %12s %12s %14s",
				human_ns(b[0], sizeof b[0], f->total), human_ns(b[1], sizeof b[1], f->self), f->calls,
				f->calls ? human_ns(b[2], sizeof b[2], g.avg) : "-",
				f->calls ? human_ns(b[3], sizeof b[3], g.min) : "-",
				f->calls ? human_ns(b[4], sizeof b[4], g.max) : "-",
				f->calls ? human_ns(b[5], sizeof b[5], g.p90) : "-",
				f->calls ? human_ns(b[6], sizeof b[6], g.p99) : "-", insn);
			if (cycles) {
				char cyc[32] = "-", ipc[16] = "-";
				if (f->cyc_calls)
					snprintf(cyc, sizeof cyc, "%" PRIu64, f->cyc);
				if (f->cyc && f->insn_calls)
					snprintf(ipc, sizeof ipc, "%.2f", (double)f->insn / (double)f->cyc);
				fprintf(out, " %14s %6s", cyc, ipc);
			}
			fputs("  ", out);
		}
		if (per_thread) /* the thread by its name too, as perf report --sort comm shows it */
		{
			fprintf(out, "%" PRIu32 "/%" PRIu32 "  ", f->pid, f->tid);
			for (size_t w = mt_utf8_put_escaped(out, comm_of(r, f->pid, f->tid)); w < 15; w++)
				fputc(' ', out);
			fputs("  ", out);
		}
		/* no byte of a traced program's names reaches a terminal as a control */
		mt_utf8_put_escaped(out, f->name);
		fputc('\n', out);
	}
	if (mt_report_lost(r))
		fprintf(out, "# lost while recording: %s: the figures are short of them\n", mt_report_lost(r));
	uint64_t off, pre;
	mt_report_off_cpu(r, &off, &pre);
	if (samples && (off || pre))
		fprintf(out, "# off CPU, from the switch events (exact, not sampled): %s [off-CPU], %s [preempted]\n",
			human_ns(b[0], sizeof b[0], off), human_ns(b[1], sizeof b[1], pre));
}

void mt_report_write(const struct mt_report *r, FILE *out, enum mt_report_format fmt, size_t top)
{
	size_t n = mt_report_nfuncs(r);
	if (top && top < n)
		n = top;
	switch (fmt) {
	case MT_REPORT_TEXT: write_text(r, out, n); break;
	case MT_REPORT_TSV: write_tsv(r, out, n); break;
	case MT_REPORT_JSON: write_json(r, out, n); break;
	}
}

/* --- diff ------------------------------------------------------------------------ */

struct drow {
	const char *name;
	uint64_t calls[2], total[2], self[2];
};

static int cmp_drow(const void *pa, const void *pb)
{
	const struct drow *a = pa, *b = pb;
	int64_t da = (int64_t)(a->total[1] - a->total[0]), db = (int64_t)(b->total[1] - b->total[0]);
	uint64_t ma = da < 0 ? (uint64_t)-da : (uint64_t)da, mb = db < 0 ? (uint64_t)-db : (uint64_t)db;
	if (ma != mb)
		return ma > mb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_name(const void *pa, const void *pb)
{
	const struct drow *a = pa, *b = pb;
	return strcmp(a->name, b->name);
}

/* Rows of both reports merged by name (threads summed). */
static struct drow *merge_rows(const struct mt_report *const rs[2], size_t *nrows)
{
	size_t cap = mt_report_nfuncs(rs[0]) + mt_report_nfuncs(rs[1]), n = 0;
	struct drow *v = calloc(cap ? cap : 1, sizeof *v);
	if (!v)
		return NULL;
	for (int side = 0; side < 2; side++)
		for (size_t i = 0; i < mt_report_nfuncs(rs[side]); i++) {
			const struct mt_fstat *f = mt_report_func(rs[side], i);
			struct drow *d = &v[n++];
			d->name = f->name;
			d->calls[side] = f->calls;
			d->total[side] = f->total;
			d->self[side] = f->self;
		}
	qsort(v, n, sizeof *v, cmp_name);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(v[m - 1].name, v[i].name)) {
			for (int s = 0; s < 2; s++) {
				v[m - 1].calls[s] += v[i].calls[s];
				v[m - 1].total[s] += v[i].total[s];
				v[m - 1].self[s] += v[i].self[s];
			}
		} else {
			v[m++] = v[i];
		}
	}
	qsort(v, m, sizeof *v, cmp_drow);
	*nrows = m;
	return v;
}

static void put_change_pct(FILE *out, uint64_t a, uint64_t b, const char *sep)
{
	if (a)
		fprintf(out, "%s%+.2f%%", sep, 100.0 * ((double)b - (double)a) / (double)a);
	else
		fprintf(out, "%s%s", sep, b ? "new" : "");
}

int mt_report_diff_write(const struct mt_report *old_r, const struct mt_report *new_r, FILE *out,
			 enum mt_report_format fmt, size_t top)
{
	const struct mt_report *rs[2] = {old_r, new_r};
	size_t n;
	struct drow *v = merge_rows(rs, &n);
	if (!v)
		return -1;
	if (top && top < n)
		n = top;
	if (fmt == MT_REPORT_TSV)
		fputs("function\tcalls_old\tcalls_new\tcalls_diff\ttotal_ns_old\ttotal_ns_new\ttotal_ns_diff\ttotal_pct"
		      "\tself_ns_old\tself_ns_new\tself_ns_diff\tself_pct\n",
		      out);
	else if (fmt == MT_REPORT_JSON)
		fputs("{\"version\":1,\"diff\":[", out);
	else
		fprintf(out, "%12s %12s %10s %12s %12s %10s %10s %10s %9s  %s\n", "Total old", "Total new", "Total",
			"Self old", "Self new", "Self", "Calls old", "Calls new", "Calls", "Function");
	for (size_t i = 0; i < n; i++) {
		const struct drow *d = &v[i];
		int64_t dc = (int64_t)(d->calls[1] - d->calls[0]), dt = (int64_t)(d->total[1] - d->total[0]),
			ds = (int64_t)(d->self[1] - d->self[0]);
		if (fmt == MT_REPORT_TSV) {
			mt_utf8_put_escaped(out, d->name);
			fprintf(out, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64,
				d->calls[0], d->calls[1], dc, d->total[0], d->total[1], dt);
			put_change_pct(out, d->total[0], d->total[1], "\t");
			fprintf(out, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64, d->self[0], d->self[1], ds);
			put_change_pct(out, d->self[0], d->self[1], "\t");
			fputc('\n', out);
		} else if (fmt == MT_REPORT_JSON) {
			fputs(i ? ",\n{\"function\":" : "\n{\"function\":", out);
			mt_utf8_put_json(out, d->name);
			fprintf(out, ",\"calls_old\":%" PRIu64 ",\"calls_new\":%" PRIu64 ",\"total_ns_old\":%" PRIu64
				",\"total_ns_new\":%" PRIu64 ",\"self_ns_old\":%" PRIu64 ",\"self_ns_new\":%" PRIu64 "}",
				d->calls[0], d->calls[1], d->total[0], d->total[1], d->self[0], d->self[1]);
		} else {
			char b[4][32];
			fprintf(out, "%12s %12s", human_ns(b[0], sizeof b[0], d->total[0]),
				human_ns(b[1], sizeof b[1], d->total[1]));
			put_change_pct(out, d->total[0], d->total[1], " ");
			fprintf(out, " %12s %12s", human_ns(b[2], sizeof b[2], d->self[0]),
				human_ns(b[3], sizeof b[3], d->self[1]));
			put_change_pct(out, d->self[0], d->self[1], " ");
			fprintf(out, " %10" PRIu64 " %10" PRIu64 " %+9" PRId64 "  ", d->calls[0], d->calls[1], dc);
			mt_utf8_put_escaped(out, d->name);
			fputc('\n', out);
		}
	}
	if (fmt == MT_REPORT_JSON)
		fputs("]}\n", out);
	free(v);
	return 0;
}
