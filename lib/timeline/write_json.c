/* write_json: the timeline as Chrome JSON (Trace Event Format,
 * perfetto-output.md section 8): M events naming processes and threads, B
 * and E events for slices, i for instants, C for the CPU frequency;
 * microseconds with 3 decimals. Never X: its end is ts + dur, added by the
 * reader in doubles (JavaScript's numbers in chrome://tracing and
 * speedscope), and 897.003 + 0.008 is 897.0110000000001 there, so the
 * slice beginning at 897.011 was drawn inside it; B and E times are read,
 * not added, and ends at one time nest in the order written. */
#define _GNU_SOURCE
#include "timeline/writer.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/utf8.h"

enum tl_kind { TL_BEGIN, TL_END, TL_INSTANT, TL_SAMPLE, TL_COUNTER };

static void json_str(char *out, size_t cap, const char *s)
{
	*mt_utf8_json(out, cap, s) = '\0';
}

/* What goes before every JSON event: a comma after the first, a newline. */
static char *json_sep(struct mt_pftrace *pf, char *p)
{
	if (!pf->json_first)
		*p++ = ',';
	pf->json_first = false;
	*p++ = '\n';
	return p;
}

/* One JSON event through printf (metadata, instants, counters: the rare ones). */
static void json_event(struct mt_pftrace *pf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void json_event(struct mt_pftrace *pf, const char *fmt, ...)
{
	char buf[2600];
	size_t n = (size_t)(json_sep(pf, buf) - buf);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
	va_end(ap);
	if (m > 0)
		n += (size_t)m < sizeof buf - n ? (size_t)m : sizeof buf - n - 1;
	mt_tl_out(pf, buf, n);
}

/* ns as microseconds, ts and dur: exactly 3 decimals keep the nanoseconds;
 * returns the end (no NUL). */
static char *j_us(char *p, uint64_t ns)
{
	unsigned f = (unsigned)(ns % 1000);
	p = mt_put_dec(p, ns / 1000);
	*p++ = '.';
	*p++ = (char)('0' + f / 100);
	*p++ = (char)('0' + f / 10 % 10);
	*p++ = (char)('0' + f % 10);
	return p;
}

#define J_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

/* A JSON string's text (no quotes) into b at p, whole whatever its length:
 * a long one (a C++ name of thousands of bytes) is written out with what
 * came before it in b, in pieces; returns where b goes on. */
static char *json_text(struct mt_pftrace *pf, char *b, char *p, const char *s)
{
	size_t n = strlen(s);
	if (n < 1024)
		return mt_utf8_json(p, 1024 * 6 + 8, s);
	mt_tl_out(pf, b, (size_t)(p - b));
	char piece[256 * 6 + 8], src[257];
	for (size_t i = 0, k; i < n; i += k) {
		k = n - i < 256 ? n - i : 256;
		while (k == 256 && k > 253 && ((unsigned char)s[i + k] & 0xc0) == 0x80)
			k--; /* a UTF-8 sequence is not cut */
		memcpy(src, s + i, k);
		src[k] = '\0';
		mt_tl_out(pf, piece, (size_t)(mt_utf8_json(piece, sizeof piece, src) - piece));
	}
	return b;
}

/* One event of a thread: slices written by hand (most of the file), the
 * rest through json_event. */
static void emit_json(struct seqw *w, uint64_t time, enum tl_kind type, const char *name, uint64_t ip, double value)
{
	struct mt_pftrace *pf = w->pf;
	if (type == TL_BEGIN || type == TL_END) {
		/* most of the file: written by hand, as json_event would */
		char b[2 * 1024 * 6 + 512]; /* name, file (escaped, each under 1024 bytes: else written apart) and under 300 bytes more */
		char *p = json_sep(pf, b);
		if (type == TL_END) {
			p = J_LIT(p, "{\"ph\":\"E\"");
		} else {
			p = J_LIT(p, "{\"ph\":\"B\"");
		}
		p = J_LIT(p, ",\"pid\":");
		p = mt_put_dec(p, w->pid);
		p = J_LIT(p, ",\"tid\":");
		p = mt_put_dec(p, w->tid);
		p = J_LIT(p, ",\"ts\":");
		p = j_us(p, time - w->base);
		/* an E names its slice: speedscope ends the slice on top only
		 * with an E of its name (else it drops the E, and warns) */
		if (type == TL_END && name) {
			p = J_LIT(p, ",\"name\":\"");
			p = json_text(pf, b, p, name);
			*p++ = '"';
		}
		if (type == TL_BEGIN) {
			p = J_LIT(p, ",\"name\":\"");
			p = json_text(pf, b, p, name ? name : "");
			p = J_LIT(p, "\",\"cat\":\"\",\"args\":{\"address\":\"");
			p = mt_put_hex(p, ip);
			*p++ = '"';
			if (w->file) {
				p = J_LIT(p, ",\"file\":\"");
				p = json_text(pf, b, p, w->file);
				p = J_LIT(p, "\",\"line\":");
				if (w->line < 0) {
					*p++ = '-';
					p = mt_put_dec(p, (uint64_t)-(int64_t)w->line);
				} else {
					p = mt_put_dec(p, (uint64_t)w->line);
				}
			}
			*p++ = '}';
		}
		*p++ = '}';
		mt_tl_out(pf, b, (size_t)(p - b));
		return;
	}
	char ts[32], nm[2048];
	*j_us(ts, time - w->base) = '\0';
	json_str(nm, sizeof nm, name ? name : "");
	switch (type) {
	case TL_INSTANT:
	case TL_SAMPLE:
		json_event(pf, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"name\":\"%s\",\"cat\":\"%s\"}",
			   w->pid, w->tid, ts, nm, type == TL_SAMPLE ? "sample" : "");
		break;
	case TL_COUNTER:
		/* name: the counter's ("CPU" its frequency's, in MHz) */
		if (!strcmp(nm, "CPU"))
			json_event(pf, "{\"ph\":\"C\",\"pid\":%u,\"ts\":%s,\"name\":\"CPU\",\"args\":{\"freq (MHz)\":%.0f}}",
				   w->pid, ts, value);
		else
			json_event(pf, "{\"ph\":\"C\",\"pid\":%u,\"ts\":%s,\"name\":\"%s\",\"args\":{\"%s\":%.17g}}",
				   w->pid, ts, nm, nm, value);
		break;
	default:
		break;
	}
}

static void json_head(struct mt_pftrace *pf)
{
	static const char head[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
	pf->json_first = true;
	mt_tl_out(pf, head, sizeof head - 1);
}

static void json_thread(struct mt_pftrace *pf, struct pthread *t, bool first)
{
	const char *pname = mt_tl_comm(pf, t->pid, t->pid), *tname = mt_tl_comm(pf, t->pid, t->tid);
	char nm[256];
	/* no name known: no M event (Perfetto counts an empty one a parser failure) */
	if (first && pname && *pname) {
		json_str(nm, sizeof nm, pname);
		json_event(pf, "{\"ph\":\"M\",\"pid\":%u,\"name\":\"process_name\",\"args\":{\"name\":\"%s\"}}",
			   t->pid, nm);
	}
	if (!tname || !*tname)
		return;
	json_str(nm, sizeof nm, tname);
	json_event(pf, "{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"%s\"}}",
		   t->pid, t->tid, nm);
}

static void json_slice_begin(struct seqw *w, uint64_t time, const char *name, uint64_t ip)
{
	if (!mt_grow((void **)&w->open_names, &w->capopen_names, w->nopen_names + 1, sizeof *w->open_names))
		w->pf->oom = true;
	else
		w->open_names[w->nopen_names++] = name ? name : "";
	emit_json(w, time, TL_BEGIN, name, ip, 0);
}

static void json_slice_end(struct seqw *w, uint64_t time, const char *name)
{
	(void)name; /* NULL from the window: the name is the one its begin pushed */
	emit_json(w, time, TL_END, w->nopen_names ? w->open_names[--w->nopen_names] : NULL, 0, 0);
}

static void json_instant(struct seqw *w, uint64_t time, const char *name)
{
	emit_json(w, time, TL_INSTANT, name, 0, 0);
}

static void json_sample(struct seqw *w, uint64_t time, const char *name, uint32_t k, uint64_t ip)
{
	(void)k;
	emit_json(w, time, TL_SAMPLE, name, ip, 0);
}

static void json_counter(struct seqw *w, uint64_t time, unsigned k, double value)
{
	emit_json(w, time, TL_COUNTER, mt_tl_counter_names[k], 0, value);
}

static void json_foot(struct mt_pftrace *pf)
{
	mt_tl_out(pf, "\n]}\n", 4);
}

const struct mt_tl_ops mt_tl_json = {
	.name = "json", .head = json_head, .thread = json_thread,
	.slice_begin = json_slice_begin, .slice_end = json_slice_end, .instant = json_instant,
	.sample = json_sample, .counter = json_counter, .foot = json_foot,
};
