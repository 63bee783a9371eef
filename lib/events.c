#include "events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[MT_EV_KIND_COUNT] = {
	[MT_EV_CALL] = "call", [MT_EV_RETURN] = "return", [MT_EV_JUMP] = "jump",
	[MT_EV_SYSCALL] = "syscall", [MT_EV_SYSRET] = "sysret",
	[MT_EV_INTERRUPT] = "interrupt", [MT_EV_IRET] = "iret",
	[MT_EV_TRACE_START] = "trace-start", [MT_EV_TRACE_END] = "trace-end",
	[MT_EV_ERROR] = "error", [MT_EV_SAMPLE] = "sample", [MT_EV_POWER] = "power",
};

const char *mt_event_kind_name(enum mt_event_kind k)
{
	return (unsigned)k < MT_EV_KIND_COUNT ? kind_names[k] : "unknown";
}

int mt_event_kind_parse(const char *s, size_t n)
{
	for (int k = 0; k < MT_EV_KIND_COUNT; k++)
		if (strlen(kind_names[k]) == n && !memcmp(kind_names[k], s, n))
			return k;
	return -1;
}

#define LINE_MAX_BYTES 4096

int mt_events_writer_init(struct mt_events_writer *w, FILE *out)
{
	memset(w, 0, sizeof *w);
	w->out = out;
	w->cap = 1 << 16;
	w->buf = malloc(w->cap);
	if (!w->buf)
		return MT_ENOMEM;
	mt_events_write_fact(w, NULL, NULL);
	return 0;
}

static void flush(struct mt_events_writer *w)
{
	if (w->len && !w->failed) {
		if (fwrite(w->buf, 1, w->len, w->out) != w->len) {
			w->failed = true;
			w->err_no = errno;
		}
	}
	w->len = 0;
}

static char *reserve(struct mt_events_writer *w, size_t n)
{
	if (w->len + n > w->cap)
		flush(w);
	return w->buf + w->len;
}

static char *put_dec(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;
	*p++ = '0';
	*p++ = 'x';
	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_str(char *p, const char *s, size_t max)
{
	/* Values never contain TAB or newline: they would split columns. */
	for (size_t i = 0; s[i] && i < max; i++)
		*p++ = (s[i] == '\t' || s[i] == '\n') ? ' ' : s[i];
	return p;
}

void mt_events_write(struct mt_events_writer *w, const struct mt_event *ev)
{
	char *p = reserve(w, LINE_MAX_BYTES), *start = p;
	if (ev->has_time)
		p = put_dec(p, ev->time);
	else
		*p++ = '-';
	*p++ = '\t';
	p = put_dec(p, ev->pid);
	*p++ = '\t';
	p = put_dec(p, ev->tid);
	*p++ = '\t';
	p = put_str(p, mt_event_kind_name(ev->kind), 32);
	*p++ = '\t';
	p = put_hex(p, ev->from);
	*p++ = '\t';
	p = put_hex(p, ev->to);
	if (ev->cpu >= 0) {
		memcpy(p, "\tcpu=", 5);
		p = put_dec(p + 5, (uint64_t)ev->cpu);
	}
	if (ev->insn) {
		memcpy(p, "\tinsn=", 6);
		p = put_dec(p + 6, ev->insn);
	}
	if (ev->cond) {
		memcpy(p, "\tcond=1", 7);
		p += 7;
	}
	if (ev->async) {
		memcpy(p, "\tasync=1", 8);
		p += 8;
	}
	if (ev->kind == MT_EV_POWER) {
		memcpy(p, "\tcbr=", 5);
		p = put_dec(p + 5, ev->cbr);
	}
	if (ev->offset != MT_NO_OFFSET) {
		memcpy(p, "\toff=", 5);
		p = put_hex(p + 5, ev->offset);
	}
	if (ev->msg) {
		memcpy(p, "\tmsg=", 5);
		p = put_str(p + 5, ev->msg, 1024);
	}
	*p++ = '\n';
	w->len += (size_t)(p - start);
}

static void write_meta(struct mt_events_writer *w, const char *fmt, ...)
{
	char *p = reserve(w, LINE_MAX_BYTES);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(p, LINE_MAX_BYTES, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= LINE_MAX_BYTES) {
		n = LINE_MAX_BYTES - 1;
		p[n - 1] = '\n';
	}
	w->len += (size_t)n;
}

void mt_events_write_fact(struct mt_events_writer *w, const char *key, const char *fmt, ...)
{
	if (!key) {
		write_meta(w, "# mt-events %d\n", MT_EVENTS_VERSION);
		return;
	}
	char val[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(val, sizeof val, fmt, ap);
	va_end(ap);
	for (char *c = val; *c; c++)
		if (*c == '\t' || *c == '\n')
			*c = ' ';
	write_meta(w, "# fact\t%s\t%s\n", key, val);
}

void mt_events_write_comm(struct mt_events_writer *w, uint32_t pid, uint32_t tid, const char *comm)
{
	write_meta(w, "# comm\t%" PRIu32 "\t%" PRIu32 "\t%s\n", pid, tid, comm);
}

void mt_events_write_mmap(struct mt_events_writer *w, uint32_t pid, uint64_t start, uint64_t len,
			  uint64_t pgoff, const uint8_t *build_id, unsigned build_id_size, const char *path)
{
	char bid[41] = "-";
	if (build_id && build_id_size) {
		for (unsigned i = 0; i < build_id_size && i < 20; i++)
			snprintf(bid + 2 * i, 3, "%02x", build_id[i]);
	}
	write_meta(w, "# mmap\t%" PRIu32 "\t0x%" PRIx64 "\t0x%" PRIx64 "\t0x%" PRIx64 "\t%s\t%s\n",
		   pid, start, len, pgoff, bid, path);
}

int mt_events_writer_finish(struct mt_events_writer *w, struct mt_err *err)
{
	flush(w);
	if (!w->failed && fflush(w->out) != 0) {
		w->failed = true;
		w->err_no = errno;
	}
	free(w->buf);
	w->buf = NULL;
	if (w->failed)
		return mt_err_set(err, MT_EIO, "writing events: %s", strerror(w->err_no));
	return 0;
}

static int parse_u64(const char *s, const char *end, int base, uint64_t *out)
{
	if (s == end)
		return -1;
	char *e;
	errno = 0;
	*out = strtoull(s, &e, base);
	return (errno || e != end) ? -1 : 0;
}

int mt_events_parse_line(char *line, struct mt_event *ev, struct mt_err *err)
{
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (n == 0 || line[0] == '#')
		return 0;
	memset(ev, 0, sizeof *ev);
	ev->cpu = -1;
	ev->offset = MT_NO_OFFSET;
	char *col[6];
	char *p = line;
	for (int i = 0; i < 6; i++) {
		col[i] = p;
		p = strchr(p, '\t');
		if (!p && i < 5)
			return mt_err_set(err, MT_EFORMAT, "event line has %d columns, need 6", i + 1);
		if (p)
			*p++ = '\0';
	}
	uint64_t v;
	if (strcmp(col[0], "-")) {
		if (parse_u64(col[0], col[0] + strlen(col[0]), 10, &ev->time))
			return mt_err_set(err, MT_EFORMAT, "bad time '%s'", col[0]);
		ev->has_time = true;
	}
	if (parse_u64(col[1], col[1] + strlen(col[1]), 10, &v) || v > UINT32_MAX)
		return mt_err_set(err, MT_EFORMAT, "bad pid '%s'", col[1]);
	ev->pid = (uint32_t)v;
	if (parse_u64(col[2], col[2] + strlen(col[2]), 10, &v) || v > UINT32_MAX)
		return mt_err_set(err, MT_EFORMAT, "bad tid '%s'", col[2]);
	ev->tid = (uint32_t)v;
	int k = mt_event_kind_parse(col[3], strlen(col[3]));
	if (k < 0)
		return mt_err_set(err, MT_EFORMAT, "unknown event kind '%s'", col[3]);
	ev->kind = (enum mt_event_kind)k;
	if (parse_u64(col[4], col[4] + strlen(col[4]), 16, &ev->from) || strncmp(col[4], "0x", 2))
		return mt_err_set(err, MT_EFORMAT, "bad address '%s'", col[4]);
	if (parse_u64(col[5], col[5] + strlen(col[5]), 16, &ev->to) || strncmp(col[5], "0x", 2))
		return mt_err_set(err, MT_EFORMAT, "bad address '%s'", col[5]);
	while (p && *p) {
		char *next = strchr(p, '\t');
		if (next)
			*next++ = '\0';
		char *eq = strchr(p, '=');
		if (eq) {
			*eq = '\0';
			const char *val = eq + 1, *vend = val + strlen(val);
			if (!strcmp(p, "cpu") && !parse_u64(val, vend, 10, &v))
				ev->cpu = (int32_t)v;
			else if (!strcmp(p, "insn"))
				parse_u64(val, vend, 10, &ev->insn);
			else if (!strcmp(p, "off"))
				parse_u64(val, vend, 16, &ev->offset);
			else if (!strcmp(p, "cbr") && !parse_u64(val, vend, 10, &v))
				ev->cbr = (uint32_t)v;
			else if (!strcmp(p, "cond"))
				ev->cond = val[0] == '1';
			else if (!strcmp(p, "async"))
				ev->async = val[0] == '1';
			else if (!strcmp(p, "msg"))
				ev->msg = val;
			/* unknown keys: skipped, so later columns never break us */
		}
		p = next;
	}
	return 1;
}
