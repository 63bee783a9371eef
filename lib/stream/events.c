/* events: the stream's vocabulary (event kinds, encodings) and the text
 * form's line parser; the writer is events_write.c, the reader
 * events_read.c. */
#define _POSIX_C_SOURCE 200809L
#include "stream/events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "stream/limits.h"

static const char *const kind_names[MT_EV_KIND_COUNT] = {
	[MT_EV_CALL] = "call", [MT_EV_RETURN] = "return", [MT_EV_JUMP] = "jump",
	[MT_EV_SYSCALL] = "syscall", [MT_EV_SYSRET] = "sysret",
	[MT_EV_INTERRUPT] = "interrupt", [MT_EV_IRET] = "iret",
	[MT_EV_TRACE_START] = "trace-start", [MT_EV_TRACE_END] = "trace-end",
	[MT_EV_ERROR] = "error", [MT_EV_SAMPLE] = "sample", [MT_EV_POWER] = "power",
	[MT_EV_TX_ABORT] = "tx-abort", [MT_EV_SNAPSHOT] = "snapshot",
	[MT_EV_SWITCH_OUT] = "switch-out", [MT_EV_SWITCH_IN] = "switch-in",
};

const char *mt_event_kind_name(enum mt_event_kind k)
{
	return (unsigned)k < MT_EV_KIND_COUNT ? kind_names[k] : "unknown";
}

int mt_event_kind_parse(const char *s, size_t n)
{
	for (int k = 0; k < MT_EV_KIND_COUNT; k++)
		if (n && kind_names[k][0] == s[0] && !strncmp(kind_names[k], s, n) && !kind_names[k][n])
			return k;
	return -1;
}

int mt_events_format_parse(const char *s)
{
	if (!strcmp(s, "text"))
		return MT_EVENTS_TEXT;
	if (!strcmp(s, "binary"))
		return MT_EVENTS_BINARY;
	return -1;
}

bool mt_events_parse_mmap(const char *meta, struct mt_mmap_meta *m)
{
	/* mmap PID 0xSTART 0xLEN 0xPGOFF BUILDID PATH */
	int n = 0;
	if (sscanf(meta, "mmap\t%" SCNu32 "\t%" SCNx64 "\t%" SCNx64 "\t%" SCNx64 "\t%63[^\t]\t%n", &m->pid, &m->start,
		   &m->len, &m->pgoff, m->build_id, &n) != 5 || !n || !meta[n])
		return false;
	if (!strcmp(m->build_id, "-"))
		m->build_id[0] = '\0';
	m->path = meta + n;
	return true;
}


/* Digits only (base 16: an optional 0x first), no sign or blank, no
 * overflow; strtoull, which allowed those, was a tenth of a filter's time. */
static int parse_u64(const char *s, const char *end, int base, uint64_t *out)
{
	if (base == 16 && end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (s == end)
		return -1;
	uint64_t v = 0;
	for (; s < end; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && (*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
			d = (unsigned)((*s | 0x20) - 'a' + 10);
		else
			return -1;
		/* overflow checked without a division per digit */
		if (__builtin_mul_overflow(v, (uint64_t)base, &v) || __builtin_add_overflow(v, (uint64_t)d, &v))
			return -1;
	}
	*out = v;
	return 0;
}

int mt_events_parse_line(char *line, struct mt_event *ev, struct mt_kv *kv, struct mt_err *err)
{
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (n == 0 || line[0] == '#')
		return 0;
	memset(ev, 0, sizeof *ev);
	ev->cpu = -1;
	ev->offset = MT_NO_OFFSET;
	ev->extra = kv;
	char *col[6], *cend[6]; /* each column and its end (the NUL that was its TAB) */
	char *p = line, *lend = line + n;
	for (int i = 0; i < 6; i++) {
		col[i] = p;
		p = memchr(p, '\t', (size_t)(lend - p));
		if (!p && i < 5)
			return mt_err_set(err, MT_EFORMAT, "event line has %d columns, need 6", i + 1);
		cend[i] = p ? p : lend;
		if (p)
			*p++ = '\0';
	}
	uint64_t v;
	if (col[0][0] != '-' || col[0][1]) {
		if (parse_u64(col[0], cend[0], 10, &ev->time))
			return mt_err_set(err, MT_EFORMAT, "bad time '%s'", col[0]);
		ev->has_time = true;
	}
	if (parse_u64(col[1], cend[1], 10, &v) || v > UINT32_MAX)
		return mt_err_set(err, MT_EFORMAT, "bad pid '%s'", col[1]);
	ev->pid = (uint32_t)v;
	if (parse_u64(col[2], cend[2], 10, &v) || v > UINT32_MAX)
		return mt_err_set(err, MT_EFORMAT, "bad tid '%s'", col[2]);
	ev->tid = (uint32_t)v;
	int k = mt_event_kind_parse(col[3], (size_t)(cend[3] - col[3]));
	if (k < 0)
		return mt_err_set(err, MT_EFORMAT, "unknown event kind '%s'", col[3]);
	ev->kind = (enum mt_event_kind)k;
	if (strncmp(col[4], "0x", 2) || parse_u64(col[4], cend[4], 16, &ev->from))
		return mt_err_set(err, MT_EFORMAT, "bad address '%s'", col[4]);
	if (strncmp(col[5], "0x", 2) || parse_u64(col[5], cend[5], 16, &ev->to))
		return mt_err_set(err, MT_EFORMAT, "bad address '%s'", col[5]);
	while (p) {
		char *next = memchr(p, '\t', (size_t)(lend - p)), *pend = next ? next : lend;
		if (next)
			*next++ = '\0';
		if (!*p || *p == '=') { /* an empty column or key carries nothing */
			p = next;
			continue;
		}
		char *eq = memchr(p, '=', (size_t)(pend - p));
		const char *val = eq ? eq + 1 : NULL, *vend = pend;
		if (eq)
			*eq = '\0';
		int bad = 0;
		/* the columns read here start with one of these letters: most
		 * extra columns (to_sym...) skip the comparisons */
		if (!val || !strchr("cioam", *p))
			goto extra;
		if (!strcmp(p, "cpu"))
			bad = parse_u64(val, vend, 10, &v) || v > INT32_MAX, ev->cpu = (int32_t)v;
		else if (!strcmp(p, "insn"))
			bad = parse_u64(val, vend, 10, &ev->insn);
		else if (!strcmp(p, "off"))
			bad = strncmp(val, "0x", 2) || parse_u64(val, vend, 16, &ev->offset);
		else if (!strcmp(p, "cbr"))
			bad = parse_u64(val, vend, 10, &v) || v > UINT32_MAX, ev->cbr = (uint32_t)v;
		else if (!strcmp(p, "cond"))
			bad = strcmp(val, "1") && strcmp(val, "0"), ev->cond = val[0] == '1';
		else if (!strcmp(p, "async"))
			bad = strcmp(val, "1") && strcmp(val, "0"), ev->async = val[0] == '1';
		else if (!strcmp(p, "msg"))
			ev->msg = val;
		else
			goto extra;
		if (bad)
			return mt_err_set(err, MT_EFORMAT, "bad %s value '%s'", p, val);
		p = next;
		continue;
extra:
		/* Keys we do not know travel on unchanged. */
		if (ev->nextra == MT_EVENT_MAX_EXTRA)
			return mt_err_set(err, MT_EFORMAT, "more than %d extra columns", MT_EVENT_MAX_EXTRA);
		kv[ev->nextra].key = p;
		kv[ev->nextra++].val = val;
		p = next;
	}
	return 1;
}

