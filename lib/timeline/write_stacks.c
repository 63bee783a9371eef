/* write_stacks: the call stacks as text. stacks: magic-trace's
 * test-harness format, "TIME BEGIN NAME" and "TIME END   NAME" lines in the
 * order the stacks are rebuilt (not time order), an instant as a BEGIN and
 * an "END   NAME" without a time; times as the callstack gives them.
 * threads: one line an event, "PID TID TIME KIND NAME" (TAB-separated, ns
 * since the first event), in time order per thread, for scripts; an end
 * closes the innermost slice open, and has no name. */
#define _GNU_SOURCE
#include "timeline/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Core's Time_ns.Span.to_string_hum: ns, us, ms or s, at most 3 decimals,
 * trailing zeros dropped. Written by hand (printf was most of the time);
 * returns the end (no NUL). */
static __attribute__((noinline)) uint64_t tie_milli(uint64_t ns, uint64_t div)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%.3f", (double)ns / (double)div);
	char *dot = strchr(buf, '.');
	return strtoull(buf, NULL, 10) * 1000 + (dot ? strtoull(dot + 1, NULL, 10) : 0);
}

static char *fmt_time(char *p, uint64_t ns)
{
	static const struct { uint64_t div; char unit[3]; } u[] = {
		{1000000000ULL, "s"}, {1000000ULL, "ms"}, {1000ULL, "us"},
	};
	for (size_t i = 0; i < 3; i++) {
		if (ns < u[i].div)
			continue;
		/* value in thousandths of the unit, rounded to nearest; a tie
		 * as Core rounds it: printf's %.3f of the double ns / unit
		 * (40636500 ns is 40.63649999... ms: 40.636ms) */
		uint64_t milli = (ns * 1000 + u[i].div / 2) / u[i].div;
		if (ns * 1000 % u[i].div == u[i].div / 2)
			milli = tie_milli(ns, u[i].div);
		p = mt_put_dec(p, milli / 1000);
		unsigned frac = (unsigned)(milli % 1000);
		if (frac) {
			*p++ = '.';
			*p++ = (char)('0' + frac / 100);
			if (frac % 100) {
				*p++ = (char)('0' + frac / 10 % 10);
				if (frac % 10)
					*p++ = (char)('0' + frac % 10);
			}
		}
		for (const char *q = u[i].unit; *q; q++)
			*p++ = *q;
		return p;
	}
	p = mt_put_dec(p, ns);
	*p++ = 'n';
	*p++ = 's';
	return p;
}

/* "<time> <VERB> <name>\n" (time omitted when verb is NULL: "END   name"
 * of an instant), one write. */
static void st_line(struct mt_pftrace *pf, uint64_t time, const char *verb, const char *name)
{
	size_t n = strlen(name);
	char small[256], *big = NULL, *b = n + 48 <= sizeof small ? small : (big = malloc(n + 48));
	if (!b) {
		pf->oom = true;
		return;
	}
	char *p = b;
	if (verb) {
		p = fmt_time(p, time);
		*p++ = ' ';
		size_t v = strlen(verb);
		memcpy(p, verb, v);
		p += v;
	} else {
		memcpy(p, "END  ", 5);
		p += 5;
	}
	*p++ = ' ';
	memcpy(p, name, n);
	p += n;
	*p++ = '\n';
	mt_tl_out(pf, b, (size_t)(p - b));
	free(big);
}

static void st_begin(struct seqw *w, uint64_t time, const char *name, uint64_t ip)
{
	(void)ip;
	st_line(w->pf, time, "BEGIN", name);
}

static void st_end(struct seqw *w, uint64_t time, const char *name)
{
	st_line(w->pf, time, "END  ", name);
}

static void st_instant(struct seqw *w, uint64_t time, const char *name)
{
	st_line(w->pf, time, "BEGIN", name);
	st_line(w->pf, 0, NULL, name);
}

const struct mt_tl_ops mt_tl_stacks = {
	.name = "stacks", .arrival_order = true, .slice_begin = st_begin, .slice_end = st_end,
	.instant = st_instant,
};

/* --- threads ------------------------------------------------------------- */

static void th_line(struct seqw *w, uint64_t time, const char *kind, const char *name)
{
	size_t n = strlen(name);
	char small[256], *big = NULL, *b = n + 96 <= sizeof small ? small : (big = malloc(n + 96));
	if (!b) {
		w->pf->oom = true;
		return;
	}
	char *p = mt_put_dec(b, w->pid);
	*p++ = '\t';
	p = mt_put_dec(p, w->tid);
	*p++ = '\t';
	p = mt_put_dec(p, time - w->base);
	*p++ = '\t';
	size_t k = strlen(kind);
	memcpy(p, kind, k);
	p += k;
	*p++ = '\t';
	memcpy(p, name, n);
	p += n;
	*p++ = '\n';
	mt_tl_out(w->pf, b, (size_t)(p - b));
	free(big);
}

static void th_thread(struct mt_pftrace *pf, struct pthread *t, bool first)
{
	(void)pf;
	(void)t;
	(void)first;
}

static void th_begin(struct seqw *w, uint64_t time, const char *name, uint64_t ip)
{
	(void)ip;
	th_line(w, time, "begin", name);
}

/* an end closes the innermost slice open: it has no name here */
static void th_end(struct seqw *w, uint64_t time, const char *name)
{
	th_line(w, time, "end", name ? name : "");
}

static void th_instant(struct seqw *w, uint64_t time, const char *name)
{
	th_line(w, time, "instant", name);
}

static void th_sample(struct seqw *w, uint64_t time, const char *name, uint32_t k, uint64_t ip)
{
	(void)k;
	(void)ip;
	th_line(w, time, "sample", name);
}

static void th_counter(struct seqw *w, uint64_t time, unsigned k, double value)
{
	(void)k;
	(void)w;
	(void)time;
	(void)value;
}

const struct mt_tl_ops mt_tl_threads = {
	.name = "threads", .thread = th_thread, .slice_begin = th_begin, .slice_end = th_end,
	.instant = th_instant, .sample = th_sample, .counter = th_counter,
};
