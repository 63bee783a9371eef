/* perfscript: reading perf script text (see perfscript.h). */
#define _GNU_SOURCE
#include "trace/perfscript.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)
#define LINE_MAX_LEN (1u << 20)

static const char *const skip_names[MT_PSKIP_COUNT] = {
	[MT_PSKIP_SYNTAX] = "unreadable lines",
	[MT_PSKIP_EVENT] = "records of unknown events",
	[MT_PSKIP_FLAGS] = "branches with unknown flags",
	[MT_PSKIP_FRAMES] = "callchain entries past the limit",
};

bool mt_pscript_detect(const char *head, size_t len)
{
	size_t i = 0;
	while (i < len && (head[i] == ' ' || head[i] == '\n'))
		i++;
	if (len - i >= 24 && !strncmp(head + i, "instruction trace error", 23))
		return true;
	/* PID/TID SEC.FRAC: */
	size_t d = i;
	while (i < len && isdigit((unsigned char)head[i]))
		i++;
	if (i == d || i >= len || head[i] != '/')
		return false;
	d = ++i;
	while (i < len && isdigit((unsigned char)head[i]))
		i++;
	return i > d && i < len && head[i] == ' ';
}

int mt_pscript_init(struct mt_pscript_reader *r, int fd, const char *name, const char *prefix,
		    size_t prefix_len, struct mt_err *err)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->name = name;
	r->cap = 2 * READ_CHUNK;
	r->buf = malloc(r->cap + 1);
	if (!r->buf)
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	if (prefix_len > r->cap)
		prefix_len = r->cap;
	if (prefix_len)
		memcpy(r->buf, prefix, prefix_len);
	r->end = prefix_len;
	return 0;
}

void mt_pscript_fini(struct mt_pscript_reader *r)
{
	free(r->buf);
	free(r->pending);
	free(r->held);
	r->buf = r->pending = r->held = NULL;
}

/* The next line, NUL-terminated in the buffer (valid until the next call),
 * or NULL at the end. */
static char *next_line(struct mt_pscript_reader *r, struct mt_err *err)
{
	size_t scanned = 0;
	for (;;) {
		char *base = r->buf + r->start;
		char *nl = memchr(base + scanned, '\n', r->end - r->start - scanned);
		if (nl) {
			*nl = '\0';
			r->start = (size_t)(nl + 1 - r->buf);
			r->lineno++;
			return base;
		}
		scanned = r->end - r->start;
		if (r->eof) {
			if (!scanned)
				return NULL;
			r->buf[r->end] = '\0';
			r->start = r->end;
			r->lineno++;
			return base;
		}
		if (scanned >= LINE_MAX_LEN) {
			/* an absurd line: drop it whole */
			r->start = r->end;
			r->skipped[MT_PSKIP_SYNTAX]++;
			scanned = 0;
			continue;
		}
		if (r->start) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		if (r->cap - r->end < READ_CHUNK) {
			char *nb = realloc(r->buf, 2 * r->cap + 1);
			if (!nb) {
				mt_err_set(err, MT_ENOMEM, "out of memory reading %s", r->name);
				return NULL;
			}
			r->buf = nb;
			r->cap *= 2;
		}
		ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			mt_err_set(err, MT_EIO, "%s: %s", r->name, strerror(errno));
			return NULL;
		}
		if (n == 0)
			r->eof = true;
		r->end += (size_t)n;
	}
}

static void skip(struct mt_pscript_reader *r, enum mt_pscript_skip why, const char *what)
{
	if (r->skipped[why]++ == 0 && r->warn) {
		char msg[MT_PSCRIPT_STR + 128];
		snprintf(msg, sizeof msg, "%s:%" PRIu64 ": skipping %s (first: '%.200s'); counted, not reported again",
			 r->name, r->lineno, skip_names[why], what);
		r->warn(r->warn_ctx, msg);
	}
}

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A number in base 16 (an optional 0x first) or 10 at *pp; advances *pp. */
static bool parse_num(const char **pp, uint64_t *v, int base)
{
	const char *p = *pp;
	if (base == 16 && p[0] == '0' && p[1] == 'x')
		p += 2;
	if (!(base == 16 ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)))
		return false;
	char *e;
	errno = 0;
	*v = strtoull(p, &e, base);
	if (errno)
		return false;
	*pp = e;
	return true;
}

static bool parse_hex(const char **pp, uint64_t *v)
{
	return parse_num(pp, v, 16);
}

static bool parse_dec(const char **pp, uint64_t *v)
{
	return parse_num(pp, v, 10);
}

/* SEC.FRAC -> ns; FRAC scaled to 9 digits (more digits are cut). */
static bool parse_time(const char **pp, uint64_t *ns)
{
	uint64_t sec;
	const char *p = *pp;
	if (!parse_dec(&p, &sec) || *p != '.')
		return false;
	p++;
	uint64_t frac = 0;
	int digits = 0;
	while (isdigit((unsigned char)*p)) {
		if (digits < 9) {
			frac = frac * 10 + (uint64_t)(*p - '0');
			digits++;
		}
		p++;
	}
	if (!digits)
		return false;
	while (digits++ < 9)
		frac *= 10;
	*ns = sec * 1000000000ULL + frac;
	*pp = p;
	return true;
}

/* Extra columns of the event being built. */
struct build {
	struct mt_pscript_reader *r;
	struct mt_event *ev;
	unsigned n;
};

static void put_kv(struct build *b, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void put_kv(struct build *b, const char *key, const char *fmt, ...)
{
	if (b->n >= MT_EVENT_MAX_EXTRA) {
		b->r->skipped[MT_PSKIP_FRAMES]++;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->r->str[b->n], MT_PSCRIPT_STR, fmt, ap);
	va_end(ap);
	b->r->kv[b->n].key = key;
	b->r->kv[b->n].val = b->r->str[b->n];
	b->n++;
	b->ev->extra = b->r->kv;
	b->ev->nextra = b->n;
}

/* "NAME+0xOFF (DSO)", "[unknown] (DSO)" or "NAME+0xOFF": split into parts.
 * The DSO is what the last " (" opens; the offset follows the last "+0x". */
static void put_symbol(struct build *b, const char *text, size_t len, const char *which)
{
	while (len && text[len - 1] == ' ')
		len--;
	const char *dso = NULL;
	size_t dsolen = 0, symlen = len;
	if (len && text[len - 1] == ')') {
		for (size_t i = len - 1; i-- > 0;)
			if (text[i] == '(' && (i == 0 || text[i - 1] == ' ')) {
				dso = text + i + 1;
				dsolen = len - 1 - (i + 1);
				symlen = i ? i - 1 : 0;
				break;
			}
	}
	size_t namelen = symlen;
	const char *off = NULL;
	for (size_t i = symlen; i >= 3 && i-- > 2;) {
		if (text[i - 2] == '+' && text[i - 1] == '0' && text[i] == 'x') {
			namelen = i - 2;
			off = text + i + 1;
			break;
		}
	}
	char key[3][16];
	snprintf(key[0], sizeof key[0], "%s_sym", which);
	if (namelen && !(namelen == 9 && !memcmp(text, "[unknown]", 9)))
		put_kv(b, !strcmp(which, "from") ? "from_sym" : "to_sym", "%.*s", (int)namelen, text);
	if (off) {
		/* perf sometimes prints absurd offsets (memcpy@plt+0xffffffffff22f000): kept as text */
		size_t ol = (size_t)(text + symlen - off);
		put_kv(b, !strcmp(which, "from") ? "from_off" : "to_off", "0x%.*s", (int)ol, off);
	}
	if (dso && dsolen && !(dsolen == 9 && !memcmp(dso, "[unknown]", 9)))
		put_kv(b, !strcmp(which, "from") ? "from_dso" : "to_dso", "%.*s", (int)dsolen, dso);
}

static bool all_hex(const char *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)w[i]))
			return false;
	return n > 0;
}

/* The branch part of a `branches` record. Returns false to skip the line. */
static bool parse_branch(struct build *b, const char *p)
{
	struct mt_event *ev = b->ev;
	char flags[64] = "";
	size_t fl = 0;
	bool tx = false;
	for (;;) {
		p = skip_space(p);
		const char *w = p;
		while (*p && *p != ' ')
			p++;
		size_t n = (size_t)(p - w);
		if (!n)
			return false;
		if (n == 3 && !memcmp(w, "(x)", 3)) {
			tx = true;
			continue;
		}
		if (all_hex(w, n)) {
			p = w;
			break;
		}
		if (fl + n + 2 > sizeof flags)
			return false;
		if (fl)
			flags[fl++] = ' ';
		memcpy(flags + fl, w, n);
		fl += n;
		flags[fl] = '\0';
	}
	uint64_t from, to;
	if (!parse_hex(&p, &from))
		return false;
	/* the source symbol runs to the " =>" that is followed by an address */
	const char *arrow = NULL;
	for (const char *q = strstr(p, " =>"); q; q = strstr(q + 1, " =>")) {
		const char *a = skip_space(q + 3);
		if (isxdigit((unsigned char)*a)) {
			arrow = q;
			break;
		}
	}
	if (!arrow)
		return false;
	const char *src_sym = skip_space(p);
	size_t src_len = arrow > src_sym ? (size_t)(arrow - src_sym) : 0;
	p = skip_space(arrow + 3);
	if (!parse_hex(&p, &to))
		return false;
	const char *dst_sym = skip_space(p);
	ev->from = from;
	ev->to = to;
	if (tx)
		put_kv(b, "tx", "1");

	static const struct { const char *flags; enum mt_event_kind kind; const char *via; int cond, sw_int, async; } map[] = {
		{"call", MT_EV_CALL, NULL, 0, 0, 0},
		{"return", MT_EV_RETURN, NULL, 0, 0, 0},
		{"jmp", MT_EV_JUMP, NULL, 0, 0, 0},
		{"jcc", MT_EV_JUMP, NULL, 1, 0, 0},
		{"int", MT_EV_JUMP, NULL, 0, 1, 0},
		{"syscall", MT_EV_SYSCALL, NULL, 0, 0, 0},
		{"sysret", MT_EV_SYSRET, NULL, 0, 0, 0},
		{"hw int", MT_EV_INTERRUPT, NULL, 0, 0, 0},
		{"iret", MT_EV_IRET, NULL, 0, 0, 0},
		{"tx abrt", MT_EV_TX_ABORT, NULL, 0, 0, 0},
		{"tr strt", MT_EV_TRACE_START, NULL, 0, 0, 0},
		{"tr strt jmp", MT_EV_TRACE_START, NULL, 0, 0, 0},
		{"tr end", MT_EV_TRACE_END, NULL, 0, 0, 0},
		{"tr end async", MT_EV_TRACE_END, NULL, 0, 0, 1},
		{"tr end call", MT_EV_TRACE_END, "call", 0, 0, 0},
		{"tr end return", MT_EV_TRACE_END, "return", 0, 0, 0},
		{"tr end syscall", MT_EV_TRACE_END, "syscall", 0, 0, 0},
		{"tr end sysret", MT_EV_TRACE_END, "sysret", 0, 0, 0},
		{"tr end iret", MT_EV_TRACE_END, "iret", 0, 0, 0},
	};
	if (!strcmp(flags, "tr strt tr end"))
		return false; /* a start and an end at once: nothing changes (magic-trace ignores it too) */
	size_t i = 0;
	while (i < sizeof map / sizeof map[0] && strcmp(map[i].flags, flags))
		i++;
	if (i == sizeof map / sizeof map[0]) {
		skip(b->r, MT_PSKIP_FLAGS, flags);
		return false;
	}
	ev->kind = map[i].kind;
	ev->cond = map[i].cond;
	ev->async = map[i].async;
	if (map[i].via)
		put_kv(b, "via", "%s", map[i].via);
	if (map[i].sw_int)
		put_kv(b, "int", "1");
	if (ev->kind != MT_EV_TRACE_START)
		put_symbol(b, src_sym, src_len, "from");
	if (ev->kind != MT_EV_TRACE_END)
		put_symbol(b, dst_sym, strlen(dst_sym), "to");
	return true;
}

/* " instruction trace error type N [time S.F] cpu C pid P tid T ip X code K: MSG" */
static bool parse_error(struct build *b, const char *p)
{
	struct mt_event *ev = b->ev;
	p = skip_space(p);
	if (strncmp(p, "instruction trace error type ", 29))
		return false;
	p += 29;
	uint64_t v;
	if (!parse_dec(&p, &v))
		return false;
	p = skip_space(p);
	if (!strncmp(p, "time ", 5)) {
		p += 5;
		if (!parse_time(&p, &ev->time))
			return false;
		ev->has_time = true;
		p = skip_space(p);
	}
	if (strncmp(p, "cpu ", 4))
		return false;
	p = skip_space(p + 4);
	if (*p == '-') {
		while (*p && *p != ' ')
			p++;
		ev->cpu = -1;
	} else if (parse_dec(&p, &v)) {
		ev->cpu = (int32_t)v;
	} else {
		return false;
	}
	p = skip_space(p);
	if (strncmp(p, "pid ", 4) || (p = skip_space(p + 4), !parse_dec(&p, &v)))
		return false;
	ev->pid = (uint32_t)v;
	p = skip_space(p);
	if (strncmp(p, "tid ", 4) || (p = skip_space(p + 4), !parse_dec(&p, &v)))
		return false;
	ev->tid = (uint32_t)v;
	p = skip_space(p);
	if (strncmp(p, "ip ", 3) || (p = skip_space(p + 3), !parse_hex(&p, &ev->from)))
		return false;
	p = skip_space(p);
	if (strncmp(p, "code ", 5) || (p = skip_space(p + 5), !parse_dec(&p, &v)) || *p != ':')
		return false;
	put_kv(b, "code", "%" PRIu64, v);
	p = skip_space(p + 1);
	snprintf(b->r->msg, sizeof b->r->msg, "%s", p);
	size_t n = strlen(b->r->msg);
	while (n && b->r->msg[n - 1] == ' ')
		b->r->msg[--n] = '\0';
	ev->msg = b->r->msg;
	ev->kind = MT_EV_ERROR;
	return true;
}

/* One "HEXIP SYM" location (an IPT sample's tail or a callchain line). */
static bool parse_location(const char *p, uint64_t *ip, const char **sym)
{
	p = skip_space(p);
	if (!parse_hex(&p, ip))
		return false;
	*sym = skip_space(p);
	return true;
}

static bool is_sampling_event(const char *e, size_t n)
{
	static const char *const names[] = {"cycles", "cpu-clock", "task-clock", "instructions"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i]) == n && !memcmp(names[i], e, n))
			return true;
	return false;
}

/* Reads the callchain lines after a sample header into frame= columns,
 * outermost first ("0xIP NAME+0xOFF (DSO)"). Stops at a blank line or at
 * the next record's header, which is kept for the next call. */
static int read_callchain(struct build *b, struct mt_err *err)
{
	struct mt_pscript_reader *r = b->r;
	unsigned first = b->n;
	bool have_ip = false;
	for (;;) {
		char *line = next_line(r, err);
		if (!line) {
			if (err->code)
				return err->code;
			break;
		}
		if (line[0] != '\t') {
			if (line[strspn(line, " ")]) {
				if (!(r->pending = strdup(line)))
					return mt_err_set(err, MT_ENOMEM, "out of memory");
			}
			break;
		}
		uint64_t ip;
		const char *sym;
		if (!parse_location(line + 1, &ip, &sym)) {
			skip(r, MT_PSKIP_SYNTAX, line);
			continue;
		}
		if (!have_ip) {
			b->ev->from = ip; /* the innermost frame */
			have_ip = true;
		}
		put_kv(b, "frame", "0x%" PRIx64 " %s", ip, sym);
	}
	/* perf prints innermost first */
	for (unsigned i = first, k = b->n; i + 1 < k; i++, k--) {
		struct mt_kv t = r->kv[i];
		r->kv[i] = r->kv[k - 1];
		r->kv[k - 1] = t;
	}
	return 0;
}

int mt_pscript_next(struct mt_pscript_reader *r, struct mt_event *out, struct mt_err *err)
{
	for (;;) {
		char *line;
		free(r->held);
		r->held = NULL;
		if (r->pending) {
			/* a header read ahead of a callchain's end */
			line = r->held = r->pending;
			r->pending = NULL;
		} else {
			line = next_line(r, err);
			if (!line)
				return err->code ? err->code : 0;
		}
		if (!line[0] || line[0] == '\t' || !line[strspn(line, " ")])
			continue; /* blank, or a callchain line without its header */
		struct mt_event ev = {.cpu = -1, .offset = MT_NO_OFFSET};
		struct build b = {r, &ev, 0};
		if (!strncmp(skip_space(line), "instruction trace error", 23)) {
			r->records++;
			if (!parse_error(&b, line)) {
				skip(r, MT_PSKIP_SYNTAX, line);
				continue;
			}
			*out = ev;
			return 1;
		}
		/* PID/TID SEC.FRAC: PERIOD EVENT[/CONFIG/][SEL]:[MOD:] REST; a
		 * timeless trace's text has no SEC.FRAC: (perf cannot print it) */
		const char *p = skip_space(line);
		uint64_t pid, tid, period;
		if (!parse_dec(&p, &pid) || *p++ != '/' || !parse_dec(&p, &tid)) {
			skip(r, MT_PSKIP_SYNTAX, line);
			continue;
		}
		p = skip_space(p);
		const char *at_time = p;
		ev.has_time = parse_time(&p, &ev.time) && *p == ':';
		p = ev.has_time ? p + 1 : at_time;
		if (p = skip_space(p), !parse_dec(&p, &period)) {
			skip(r, MT_PSKIP_SYNTAX, line);
			continue;
		}
		ev.pid = (uint32_t)pid;
		ev.tid = (uint32_t)tid;
		p = skip_space(p);
		const char *ename = p;
		while (*p && (islower((unsigned char)*p) || *p == '-'))
			p++;
		size_t elen = (size_t)(p - ename);
		if (*p == '/') { /* /CONFIG/ */
			const char *q = strchr(p + 1, '/');
			if (!q) {
				skip(r, MT_PSKIP_SYNTAX, line);
				continue;
			}
			p = q + 1;
		}
		while (*p && *p != ':' && *p != ' ')
			p++; /* selector */
		if (*p != ':') {
			skip(r, MT_PSKIP_SYNTAX, line);
			continue;
		}
		p++;
		if (isalpha((unsigned char)*p)) { /* modifier, e.g. uH: */
			const char *q = p;
			while (isalpha((unsigned char)*q))
				q++;
			if (*q == ':')
				p = q + 1;
		}
		r->records++;
#define IS(name) (elen == sizeof(name) - 1 && !memcmp(ename, name, elen))
		if (IS("branches")) {
			if (!parse_branch(&b, p))
				continue;
		} else if (IS("cbr")) {
			const char *c = strstr(p, "cbr:");
			uint64_t cbr, mhz;
			const char *q = c ? skip_space(c + 4) : NULL;
			if (!q || !parse_dec(&q, &cbr)) {
				skip(r, MT_PSKIP_SYNTAX, line);
				continue;
			}
			ev.kind = MT_EV_POWER;
			ev.cbr = (uint32_t)cbr;
			const char *f = strstr(q, "freq:");
			if (f && (f = skip_space(f + 5), parse_dec(&f, &mhz)))
				put_kv(&b, "mhz", "%" PRIu64, mhz);
		} else if (IS("psb")) {
			r->psbs++;
			continue;
		} else if (IS("branch-misses") || IS("cache-misses") || is_sampling_event(ename, elen)) {
			ev.kind = MT_EV_SAMPLE;
			put_kv(&b, "event", "%.*s", (int)elen, ename);
			put_kv(&b, "period", "%" PRIu64, period);
			const char *rest = skip_space(p);
			if (*rest) {
				/* IPT form: "ADDR IP SYM" on the same line */
				uint64_t addr, ip;
				const char *sym;
				if (!parse_hex(&rest, &addr) || !parse_location(rest, &ip, &sym)) {
					skip(r, MT_PSKIP_SYNTAX, line);
					continue;
				}
				ev.from = ip;
				put_symbol(&b, sym, strlen(sym), "from");
			} else {
				int rc = read_callchain(&b, err);
				if (rc)
					return rc;
			}
		} else {
			char what[64];
			snprintf(what, sizeof what, "%.*s", (int)(elen < 60 ? elen : 60), ename);
			skip(r, MT_PSKIP_EVENT, what);
			continue;
		}
#undef IS
		*out = ev;
		return 1;
	}
}
