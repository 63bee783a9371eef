/* events_read: the stream's reader: text lines or binary records (either
 * told by the first bytes), events and metadata lines in order. */
#define _POSIX_C_SOURCE 200809L
#include "stream/events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"
#include "base/pipebuf.h"
#include "base/readahead.h"
#include "base/strtab.h"

#include "mt-events.pb-c.h"
#include "stream/limits.h"
#include "stream/pbwire.h"
#include "stream/linememo.h"
#include "stream/recmemo.h"
#include "stream/textmemo.h"

#define READ_CHUNK (1u << 20)
#define RECORD_MAX (64u << 20)

/* The reader's own buffer from here on (a record longer than the ring, or
 * the ring full at the end of the input): the bytes held in the ring
 * copied into it and released, the rest copied from the ring as read. */
static bool to_own_buffer(struct mt_events_reader *r, struct mt_err *err)
{
	size_t n = r->end - r->start, ncap = r->cap;
	while (ncap < n + READ_CHUNK)
		ncap = ncap ? ncap * 2 : 2 * READ_CHUNK;
	if (ncap != r->cap) {
		char *nb = realloc(r->own, ncap + 1);
		if (!nb) {
			mt_err_set(err, MT_ENOMEM, "%s: out of memory", r->name);
			return false;
		}
		r->own = nb;
		r->cap = ncap;
	}
	memcpy(r->own, r->buf + r->start, n);
	mt_readahead_release(r->ra, r->end);
	r->buf = r->own;
	r->start = 0;
	r->end = n;
	r->direct = false;
	return true;
}

/* fill from the ring itself, without a copy: the bytes before start are
 * released, the view begins at start and ends where the thread has read.
 * False: the ring cannot give want bytes in one view (then to_own_buffer). */
static bool fill_direct(struct mt_events_reader *r, size_t want, struct mt_err *err)
{
	size_t ring = mt_readahead_mirrored(r->ra);
	mt_readahead_release(r->ra, r->start);
	r->buf += r->start; /* in the second view if need be: the same bytes */
	r->end -= r->start;
	r->start = 0;
	while (r->end < want && want <= ring) {
		const char *at;
		ssize_t n = mt_readahead_peek(r->ra, r->end, &at);
		if (n < 0) {
			mt_err_set(err, MT_EIO, "%s: read: %s", r->name, strerror(errno));
			return true;
		}
		r->buf = (char *)at;
		if ((size_t)n <= r->end) {
			if ((size_t)n == ring)
				return false; /* full, not the end: the NUL after a last line would land on its first byte */
			r->eof = true; /* the NUL after a last line goes to a byte no one holds */
			return true;
		}
		r->end = (size_t)n;
	}
	return r->end >= want;
}

/* Into the own buffer, as read(2) would: from the ring no further than
 * the end of the line or record wanted, so that the buffer is drained
 * when it is done and the ring is read in place again (fill). */
static ssize_t copy_from_ring(struct mt_events_reader *r, size_t want)
{
	const char *at;
	ssize_t held = mt_readahead_peek(r->ra, 0, &at);
	if (held <= 0)
		return held;
	size_t n = (size_t)held < r->cap - r->end ? (size_t)held : r->cap - r->end;
	if (r->format == MT_EVENTS_BINARY) {
		if (n > want - (r->end - r->start))
			n = want - (r->end - r->start);
	} else {
		const char *nl = memchr(at, '\n', n);
		if (nl)
			n = (size_t)(nl + 1 - at);
	}
	memcpy(r->buf + r->end, at, n);
	mt_readahead_release(r->ra, n);
	return (ssize_t)n;
}

/* Makes at least want bytes available from start; returns how many are. */
static size_t fill(struct mt_events_reader *r, size_t want, struct mt_err *err)
{
	if (r->end - r->start < want && !r->eof && r->linememo) /* bytes move: a line's lookup begun is lost */
		mt_linememo_forget_next(r->linememo);
	if (r->ra && !r->direct && r->start == r->end && mt_readahead_mirrored(r->ra)) {
		r->direct = true; /* the own buffer drained: back to the ring */
		r->start = r->end = 0;
	}
	if (r->direct && r->end - r->start < want && !r->eof && !fill_direct(r, want, err) && !err->code &&
	    !to_own_buffer(r, err))
		return 0;
	if (err->code)
		return 0;
	while (r->end - r->start < want && !r->eof) {
		if (r->start && (r->cap - r->end < READ_CHUNK || r->start == r->end)) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		if (r->cap - r->end < READ_CHUNK) {
			size_t ncap = r->cap ? r->cap * 2 : 2 * READ_CHUNK;
			char *nb = realloc(r->own, ncap + 1);
			if (!nb) {
				mt_err_set(err, MT_ENOMEM, "%s: out of memory", r->name);
				return 0;
			}
			r->buf = r->own = nb;
			r->cap = ncap;
		}
		size_t got;
		bool failed;
		if (r->ra) { /* a pipe, drained by its own thread */
			ssize_t n = mt_readahead_mirrored(r->ra) ? copy_from_ring(r, want)
								 : mt_readahead_read(r->ra, r->buf + r->end, r->cap - r->end);
			got = n > 0 ? (size_t)n : 0;
			failed = n < 0;
		} else {
			got = fread(r->buf + r->end, 1, r->cap - r->end, r->in);
			failed = !got && ferror(r->in);
		}
		r->end += got;
		if (got == 0) {
			if (failed) {
				mt_err_set(err, MT_EIO, "%s: read: %s", r->name, strerror(errno));
				return 0;
			}
			r->eof = true;
		}
	}
	size_t have = r->end - r->start;
	return have < want ? have : want;
}

/* A NUL inside a text line would end it silently: an error instead. */
static bool has_nul(const struct mt_events_reader *r, const char *line, size_t len, struct mt_err *err)
{
	if (!memchr(line, '\0', len))
		return false;
	mt_err_set(err, MT_EFORMAT, "%s:%" PRIu64 ": a NUL byte in a text line", r->name, r->line);
	return true;
}

/* An "error" metadata line: noted, and passed on like any other. */
static void note_meta(struct mt_events_reader *r, const char *meta)
{
	if (strncmp(meta, "error", 5) || (meta[5] && meta[5] != '\t'))
		return;
	if (!r->upstream_error)
		snprintf(r->upstream_msg, sizeof r->upstream_msg, "%s", meta[5] ? meta + 6 : "(no message)");
	r->upstream_error = true;
}

/* The next text line, NUL-terminated in the buffer, or NULL at the end;
 * its length into *len. NULs in it are not looked for: the text parser
 * finds them in an event line as it scans it. */
static char *next_line_unchecked(struct mt_events_reader *r, size_t *len, struct mt_err *err)
{
	size_t scanned = 0;
	for (;;) {
		char *base = r->buf + r->start;
		char *nl = memchr(base + scanned, '\n', r->end - r->start - scanned);
		if (nl) {
			*nl = '\0';
			r->start = (size_t)(nl + 1 - r->buf);
			r->line++;
			*len = (size_t)(nl - base);
			return base;
		}
		scanned = r->end - r->start;
		if (r->eof) {
			if (!scanned)
				return NULL;
			r->buf[r->end] = '\0'; /* last line without a newline */
			r->start = r->end;
			r->line++;
			*len = scanned;
			return base;
		}
		if (scanned > RECORD_MAX) {
			mt_err_set(err, MT_EFORMAT, "%s:%" PRIu64 ": line longer than %u bytes", r->name,
				   r->line + 1, RECORD_MAX);
			return NULL;
		}
		fill(r, scanned + 1, err);
		if (err->code)
			return NULL;
	}
}

/* The same, a line with a NUL an error. */
static char *next_line(struct mt_events_reader *r, size_t *len, struct mt_err *err)
{
	char *line = next_line_unchecked(r, len, err);
	return line && has_nul(r, line, *len, err) ? NULL : line;
}

/* Bump allocator for protobuf-c: one arena, reset for every record, so
 * reading a record allocates nothing once the arena is big enough. */
static void *arena_alloc(void *data, size_t size)
{
	struct mt_events_reader *r = data;
	size_t at = (r->arena_used + 15) & ~(size_t)15;
	if (at + size > r->arena_cap)
		return NULL;
	r->arena_used = at + size;
	return (char *)r->arena + at;
}

static void arena_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

static int reader_open(struct mt_events_reader *r, FILE *in, const char *name, struct mt_err *err)
{
	memset(r, 0, sizeof *r);
	r->in = in;
	r->name = name;
	mt_pipebuf_widen(fileno(in));
	r->ra = mt_readahead_start(fileno(in), MT_READAHEAD_SIZE); /* nothing read from in yet */
	size_t have = fill(r, MT_EVENTS_MAGIC_LEN, err);
	if (err->code)
		return err->code;
	if (have == MT_EVENTS_MAGIC_LEN && !memcmp(r->buf, MT_EVENTS_MAGIC, MT_EVENTS_MAGIC_LEN)) {
		r->format = MT_EVENTS_BINARY;
		r->start = MT_EVENTS_MAGIC_LEN;
		r->strings_epoch = mt_events_new_epoch();
		if ((r->recmemo = malloc(sizeof *r->recmemo))) /* without: slower, the same events */
			mt_recmemo_init(r->recmemo);
		return 0;
	}
	/* a recording given where its decoded stream belongs */
	static const struct { const char *magic; size_t len; const char *what; } recordings[] = {
		{"PERFILE2", 8, "a perf.data recording"},
		{"\x28\xb5\x2f\xfd", 4, "an mt bundle or another zstd-compressed archive"},
		{"\x1f\x8b", 2, "an mt bundle or another gzip-compressed archive"},
		{"\xfd" "7zXZ", 5, "an mt bundle or another xz-compressed archive"},
	};
	for (size_t i = 0; i < sizeof recordings / sizeof *recordings; i++)
		if (have >= recordings[i].len && !memcmp(r->buf, recordings[i].magic, recordings[i].len)) {
			r->recording = recordings[i].what;
			return mt_err_set(err, MT_EFORMAT, "%s: %s, not an mt event stream", name, recordings[i].what);
		}
	r->format = MT_EVENTS_TEXT;
	struct mt_textmemo *memo = malloc(sizeof *memo);
	if (memo && mt_textmemo_init(memo, 0))
		r->textmemo = memo;
	else
		free(memo); /* parsed without: slower, the same events */
	if ((r->linememo = malloc(sizeof *r->linememo))) /* the same */
		mt_linememo_init(r->linememo);
	size_t first_len;
	char *first = next_line(r, &first_len, err);
	if (err->code)
		return err->code;
	if (!first) {
		r->empty = true;
		return mt_err_set(err, MT_EFORMAT, "%s: empty input, not an mt event stream", name);
	}
	int version;
	if (sscanf(first, "# mt-events %d", &version) != 1)
		return mt_err_set(err, MT_EFORMAT, "%s: not an mt event stream (no '# mt-events' line)", name);
	if (version != MT_EVENTS_VERSION)
		return mt_err_set(err, MT_EUNSUP, "%s: mt-events version %d, this reader knows %d", name, version,
				  MT_EVENTS_VERSION);
	return 0;
}

/* On failure nothing is left allocated (closing r again is harmless). */
int mt_events_reader_open(struct mt_events_reader *r, FILE *in, const char *name, struct mt_err *err)
{
	int rc = reader_open(r, in, name, err);
	if (rc) {
		bool empty = r->empty;
		const char *recording = r->recording;
		mt_events_reader_close(r);
		r->empty = empty;
		r->recording = recording;
	}
	return rc;
}

/* What the line memo was told of a line before its end was found
 * (remembered_in_place), for parse_remembered: nothing yet; the line
 * counted (mt_linememo_active: true) and to be looked up as usual; not a
 * line for the memo; looked up and missed (kept in slot, with hash). */
enum memo_try { TRY_FRESH, TRY_LOOKUP, TRY_OFF, TRY_KEEP };
struct memo_state {
	enum memo_try how;
	struct mt_linememo_entry *slot;
	uint64_t hash;
};

/* A line's time column (before tab): *has_time false for "-". */
static inline bool line_time(const char *line, const char *tab, uint64_t *time, bool *has_time, bool *canon)
{
	*time = 0;
	*canon = true;
	*has_time = !(tab == line + 1 && line[0] == '-');
	return !*has_time || mt_events_parse_time(line, (size_t)(tab - line), time, canon);
}

/* A line's event parsed without its time: given this line's time, and the
 * line's bytes copied when they are the writer's (writers: whether they
 * are, but for the time). */
static void with_time(struct mt_event *ev, const char *line, size_t n, uint64_t time, bool has_time, bool time_canon,
		      bool writers, char *copy, bool *copied)
{
	ev->time = time;
	ev->has_time = has_time;
	*copied = copy && writers && time_canon;
	if (*copied)
		memcpy(copy, line, n);
}

/* The memo's event for its line, with this line's time. */
static void remembered(const struct mt_linememo_entry *e, const char *line, size_t n, uint64_t time, bool has_time,
		       bool time_canon, struct mt_event *ev, char *copy, bool *copied)
{
	*ev = e->ev;
	with_time(ev, line, n, time, has_time, time_canon, e->copied, copy, copied);
}

/* The next line through the line memo while it is still in the buffer,
 * before its newline is looked for: a line the memo holds is known by its
 * bytes up to its newline, so it is never scanned for it. True when it was
 * found (the line read: ev, the copy and *n filled). */
static bool remembered_in_place(struct mt_events_reader *r, struct mt_event *ev, char *copy, bool *copied, size_t *n,
				struct memo_state *st)
{
	struct mt_linememo *lm = r->linememo;
	char *line = r->buf + r->start;
	size_t avail = r->end - r->start;
	st->how = TRY_FRESH;
	if (!lm || !avail || line[0] == '#' || line[0] == '\n')
		return false;
	if (!mt_linememo_active(lm)) {
		st->how = TRY_OFF;
		return false;
	}
	st->how = TRY_LOOKUP;
	/* the TAB the last hit's prefetch found: it looked from the start
	 * the buffer had then, which only moves on (a moved buffer forgets
	 * it), so a key at or after this line is this line's first TAB, one
	 * before it an earlier line's */
	const char *tab = lm->next.key && lm->next.key >= line ? lm->next.key
							   : memchr(line, '\t', avail < 20 ? avail : 20);
	uint64_t time;
	bool has_time, time_canon;
	if (!tab || !line_time(line, tab, &time, &has_time, &time_canon)) {
		/* as parse_remembered would find, unless the line goes on past
		 * what is read: a time column is digits, no newline */
		if (avail >= 20 || (tab && memchr(line, '\n', (size_t)(tab - line))))
			st->how = TRY_OFF;
		return false;
	}
	size_t klen = mt_linememo_find(lm, tab, avail - (size_t)(tab - line), r->textmemo ? r->textmemo->epoch : 0,
				       &st->slot, &st->hash);
	if (!klen) {
		if (st->slot)
			st->how = TRY_KEEP;
		return false;
	}
	*n = (size_t)(tab - line) + klen;
	remembered(st->slot, line, *n, time, has_time, time_canon, ev, copy, copied);
	r->raw.aux = &st->slot->aux;
	r->start += *n + 1;
	r->line++;
	/* the next line's slots, loading while this event is used */
	line = r->buf + r->start;
	avail = r->end - r->start;
	if (avail && (tab = memchr(line, '\t', avail < 20 ? avail : 20)))
		mt_linememo_prefetch(lm, tab, avail - (size_t)(tab - line));
	return true;
}

/* An event line through the line memo: its time parsed, the rest copied
 * from the memo, or parsed there as "-" and the rest (the same parse: no
 * column but the first depends on the time) and kept. False for a line the
 * memo does not take (nothing changed: it is parsed as it is). st: what
 * remembered_in_place found. */
static bool parse_remembered(struct mt_events_reader *r, char *line, size_t n, struct mt_event *ev, char *copy,
			     bool *copied, const struct memo_state *st)
{
	struct mt_linememo *lm = r->linememo;
	if (!lm || st->how == TRY_OFF || n > MT_EVENTS_COPY_MAX || !n || line[0] == '#' ||
	    (st->how == TRY_FRESH && !mt_linememo_active(lm)))
		return false;
	const char *tab = memchr(line, '\t', n < 20 ? n : 20);
	uint64_t time;
	bool has_time, time_canon;
	if (!tab || !line_time(line, tab, &time, &has_time, &time_canon))
		return false;
	size_t klen = n - (size_t)(tab - line);
	if (klen > MT_LINEMEMO_MAX)
		return false;
	uint64_t hash = st->hash;
	struct mt_linememo_entry *e = st->slot;
	if (st->how != TRY_KEEP) {
		if (mt_linememo_lookup(lm, tab, klen, r->textmemo ? r->textmemo->epoch : 0, &e, &hash)) {
			remembered(e, line, n, time, has_time, time_canon, ev, copy, copied);
			r->raw.aux = &e->aux;
			return true;
		}
		if (!e)
			return false;
	}
	bool ok;
	e->hash = 0;
	e->aux.tag = 0; /* what a filter kept was for the slot's last line */
	memcpy(e->key, tab, klen);
	e->parsed[0] = '-';
	memcpy(e->parsed + 1, tab, klen);
	e->parsed[klen + 1] = '\0'; /* as the reader ends a line: its last column's end */
	if (mt_events_parse_fast(e->parsed, klen + 1, ev, r->kv, r->textmemo, copy, &ok) != 1)
		return false;
	bool own = ev->extra == r->kv;
	if (!own || ev->nextra <= MT_LINEMEMO_KV) {
		e->ev = *ev;
		if (own) {
			memcpy(e->kv, r->kv, ev->nextra * sizeof *e->kv);
			e->ev.extra = e->kv;
		}
		e->own = own;
		e->epoch = ev->strings_epoch;
		e->copied = ok;
		e->len = klen;
		e->hash = hash;
		r->raw.aux = &e->aux;
	}
	with_time(ev, line, n, time, has_time, time_canon, ok, copy, copied);
	return true;
}

static __attribute__((noinline)) int read_text(struct mt_events_reader *r, struct mt_event *ev, const char **meta,
					       struct mt_err *err)
{
	/* a filter's copy of the line, to pass on (none when out of memory:
	 * then its fields are written again) */
	if (r->keep_raw && !r->line_copy)
		r->raw.line = r->line_copy = malloc(MT_EVENTS_COPY_MAX);
	char *copy = r->keep_raw ? r->line_copy : NULL;
	if (r->linememo)
		r->linememo->aux_used = r->keep_raw;
	for (;;) {
		size_t n;
		bool copied = false;
		struct memo_state st;
		r->raw.aux = NULL;
		if (remembered_in_place(r, ev, copy, &copied, &n, &st)) {
			r->raw.line_ok = copied;
			r->raw.line_len = n;
			return MT_EVENTS_EVENT;
		}
		char *line = next_line_unchecked(r, &n, err);
		if (!line)
			return err->code ? err->code : MT_EVENTS_EOF;
		if (line[0] == '#') {
			if (has_nul(r, line, n, err))
				return err->code;
			if (n && line[n - 1] == '\r')
				line[n - 1] = '\0';
			*meta = line + 1 + (line[1] == ' ');
			note_meta(r, *meta);
			return MT_EVENTS_META;
		}
		int rc = parse_remembered(r, line, n, ev, copy, &copied, &st)
				 ? 1
				 : mt_events_parse_line_copy(line, n, ev, r->kv, r->textmemo, copy, &copied, err);
		r->raw.line_ok = copied;
		r->raw.line_len = n;
		if (rc < 0) {
			char msg[sizeof err->msg];
			snprintf(msg, sizeof msg, "%s", err->msg);
			mt_err_clear(err);
			return mt_err_set(err, rc, "%s:%" PRIu64 ": %s", r->name, r->line, msg);
		}
		if (rc == 1)
			return MT_EVENTS_EVENT;
	}
}

static int bad_record(struct mt_events_reader *r, struct mt_err *err, const char *what)
{
	return mt_err_set(err, MT_EFORMAT, "%s: record %" PRIu64 ": %s", r->name, r->line, what);
}

static const char *string_id(struct mt_events_reader *r, uint32_t id)
{
	return id && id <= r->nstrings ? r->strings[id - 1] : NULL;
}

/* One varint field of an Event into ev; false for a bad value or a field
 * the fast path leaves to protobuf-c. */
static inline bool set_field(struct mt_events_reader *r, struct mt_event *ev, unsigned field, uint64_t v,
			     bool *has_delta, uint64_t *delta)
{
	switch (field) {
	case 1: *has_delta = true; *delta = mt_pb_unzigzag(v); return true;
	case 2: ev->pid = (uint32_t)v; return true;
	case 3: ev->tid = (uint32_t)v; return true;
	case 4: ev->kind = (enum mt_event_kind)v; return v < MT_EV_KIND_COUNT;
	case 5: ev->from = v; return true;
	case 6: ev->to = v; return true;
	case 7: ev->cpu = (int32_t)v; return v <= INT32_MAX;
	case 8: ev->insn = v; return true;
	case 9: ev->offset = v; return true;
	case 10: ev->cbr = (uint32_t)v; return true;
	case 11: ev->cond = v != 0; return true;
	case 12: ev->async = v != 0; return true;
	case 13: return v <= UINT32_MAX && (ev->msg = string_id(r, (uint32_t)v));
	case 15: ev->cyc = v; return true;
	default: return false;
	}
}

/* Extra columns by their packed ids (decode_event_fast). 32 bytes hold
 * at most 16 id pairs: each id is a byte or more. */
#define EXTRA_MEMO 4096
#define EXTRA_MEMO_BYTES 32
#define EXTRA_MEMO_KV 16
struct extra_memo {
	uint64_t epoch; /* the string table's; 0: empty */
	uint64_t id;    /* the events' extra_id */
	uint16_t len;
	unsigned n;
	uint64_t key[4]; /* short_key of the bytes */
	struct mt_kv kv[EXTRA_MEMO_KV];
};

/* Up to 32 bytes as four words, loaded overlapping (never past p + n):
 * with n they are the bytes, so they hash and compare without a loop or a
 * call. */
static inline void short_key(const uint8_t *p, size_t n, uint64_t k[4])
{
	k[1] = k[2] = k[3] = 0;
	if (n >= 16) {
		memcpy(&k[0], p, 8);
		memcpy(&k[1], p + 8, 8);
		memcpy(&k[2], p + n - 16, 8);
		memcpy(&k[3], p + n - 8, 8);
	} else if (n >= 8) {
		memcpy(&k[0], p, 8);
		memcpy(&k[1], p + n - 8, 8);
	} else if (n >= 4) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + n - 4, 4);
		k[0] = lo | (uint64_t)hi << 32;
	} else {
		k[0] = 0;
		for (size_t i = 0; i < n; i++)
			k[0] |= (uint64_t)p[i] << 8 * i;
	}
}

static inline size_t short_key_slot(const uint64_t k[4], size_t n)
{
	uint64_t h = (k[0] ^ n) * 0x9e3779b97f4a7c15ULL ^ k[1] * 0xff51afd7ed558ccdULL ^
		     k[2] * 0xc4ceb9fe1a85ec53ULL ^ k[3];
	h *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(h >> 52) & (EXTRA_MEMO - 1);
}

/* The fast path for the common record, an Event with the fields mt
 * writers use (tag numbers of proto/mt-events.proto), decoded straight
 * into ev. Returns false for anything else, or anything wrong, which
 * protobuf-c then reads (or rejects with the message). */
static inline __attribute__((always_inline)) bool decode_event(struct mt_events_reader *r, const uint8_t *p, size_t n,
								 bool slack, struct mt_event *ev, const bool track)
{
	const uint8_t *end = p + n;
	uint64_t len;
	if (n < 2 || p[0] != 0x12) /* Record.event, length-delimited */
		return false;
	p++;
	const uint8_t *q0 = p;
	if (!mt_pb_get_varint(&p, end, &len) || len != (uint64_t)(end - p))
		return false;
	/* Whether the record is what mt's writer writes for the event (fields
	 * in its order and only where it writes them, varints minimal): then a
	 * filter may pass its bytes on (r->raw). A varint is minimal when it is
	 * one byte or its last byte is not zero. */
#define MINIMAL(from) (!track || p - (from) == 1 || p[-1] != 0)
	bool canon = track && MINIMAL(q0);
	if (track)
		r->raw = (struct mt_events_raw){.body = p, .len = (size_t)len, .prev_time = r->last_time};
	/* field by field: a compound literal became a rep stos, slow to start */
	ev->time = 0;
	ev->has_time = false;
	ev->pid = ev->tid = 0;
	ev->cpu = -1;
	ev->kind = MT_EV_CALL;
	ev->from = ev->to = ev->insn = ev->cyc = 0;
	ev->offset = MT_NO_OFFSET;
	ev->cbr = 0;
	ev->cond = ev->async = false;
	ev->msg = NULL;
	ev->extra = r->kv;
	ev->nextra = 0;
	ev->strings_epoch = r->strings_epoch;
	ev->extra_id = 0;
	bool has_delta = false, seen_extra = false;
	uint64_t delta = 0, v;
	r->late_time = false;
	/* mt's writers put the fields in number order: the first six are
	 * matched in that order (no tag decoding, no dispatch), the rest and
	 * anything out of order by the loop. The head as the writer writes it,
	 * [time delta] pid tid kind from to, where 8 bytes can be read past
	 * the record (slack): one bounds check a field, and the record's end
	 * once after the last (a varint that ran past it is read, not used). */
	bool head = false;
	if (slack) {
		const uint8_t *h = p;
		uint64_t f[7];
		bool minimal = true;
		unsigned field = 1;
#pragma GCC unroll 6
		for (; field <= 6; field++) {
			if (h < end && *h == field << 3) {
				unsigned l = mt_pb_varint8(h + 1, &f[field]);
				if (!l)
					break;
				minimal &= l == 1 || h[l] != 0;
				h += 1 + l;
				has_delta |= field == 1;
			} else if (field == 1) {
				f[1] = 0;
			} else {
				break;
			}
		}
		if (field > 6 && h <= end && f[4] < MT_EV_KIND_COUNT) {
			delta = mt_pb_unzigzag(f[1]);
			ev->pid = (uint32_t)f[2];
			ev->tid = (uint32_t)f[3];
			ev->kind = (enum mt_event_kind)f[4];
			ev->from = f[5];
			ev->to = f[6];
			canon &= minimal;
			p = h;
			head = true;
		} else {
			has_delta = false;
		}
	}
	/* (unrolled: each copy's field is a constant, so set_field's switch
	 * folds away) */
	if (!head) {
#pragma GCC unroll 6
		for (unsigned field = 1; field <= 6; field++)
			if (p < end && *p == field << 3) {
				q0 = ++p;
				if (!mt_pb_get_varint(&p, end, &v) || !set_field(r, ev, field, v, &has_delta, &delta))
					return false;
				canon &= MINIMAL(q0);
			} else {
				canon &= !track || field == 1; /* the writer writes 2 to 6 always */
			}
	}
	/* the writer's order: the fields by number, but cyc (15) right after insn (8) */
	unsigned last_rank = 2 * 6;
	bool has_cbr = false;
	while (p < end) {
		uint64_t tag;
		q0 = p;
		if (!mt_pb_get_varint(&p, end, &tag))
			return false;
		if (track) {
			unsigned f = (unsigned)(tag >> 3 < 64 ? tag >> 3 : 63), rank = f == 15 ? 2 * 8 + 1 : 2 * f;
			canon &= p - q0 == 1 && rank > last_rank;
			last_rank = rank;
		}
		if (tag == (14 << 3 | MT_PB_LEN)) { /* extra, packed: key and value string ids */
			canon = false; /* a filter's columns join these: not passed on as bytes */
			if (!mt_pb_get_varint(&p, end, &len) || len > (uint64_t)(end - p) || seen_extra)
				return false;
			seen_extra = true;
			/* a symbolized stream's columns repeat (an address's
			 * symbols): the same ids, decoded once while the table lasts */
			struct extra_memo *m = NULL;
			uint64_t memo_key[4];
			if (len <= EXTRA_MEMO_BYTES && (r->extra_memo || (r->extra_memo = mt_bigmem_zalloc(EXTRA_MEMO * sizeof *m)))) {
				short_key(p, (size_t)len, memo_key);
				m = &r->extra_memo[short_key_slot(memo_key, (size_t)len)];
				if (m->epoch == r->strings_epoch && m->len == len && m->key[0] == memo_key[0] &&
				    m->key[1] == memo_key[1] && m->key[2] == memo_key[2] && m->key[3] == memo_key[3]) {
					ev->extra = m->kv;
					ev->nextra = m->n;
					ev->extra_id = m->id;
					p += len;
					continue;
				}
				m->epoch = 0;
			}
			struct mt_kv *kv = m ? m->kv : r->kv;
			unsigned kmax = m ? EXTRA_MEMO_KV : MT_EVENT_MAX_EXTRA;
			const uint8_t *q = p, *qe = p + len;
			unsigned k = 0;
			while (q < qe) {
				uint64_t key, val;
				if (k == kmax || !mt_pb_get_varint(&q, qe, &key) ||
				    !mt_pb_get_varint(&q, qe, &val) || key > UINT32_MAX || val > UINT32_MAX)
					return false;
				const char *ks = string_id(r, (uint32_t)key), *vs = NULL;
				if (!ks || (val && !(vs = string_id(r, (uint32_t)val))))
					return false;
				kv[k++] = (struct mt_kv){ks, vs};
			}
			if (m) {
				ev->extra_id = m->id = mt_events_new_epoch();
				m->epoch = r->strings_epoch;
				m->len = (uint16_t)len;
				memcpy(m->key, memo_key, sizeof memo_key);
				m->n = k;
			}
			ev->extra = kv;
			ev->nextra = k;
			p = qe;
			continue;
		}
		q0 = p;
		r->late_time |= tag == (1 << 3 | MT_PB_VARINT);
		if ((tag & 7) != 0 || !mt_pb_get_varint(&p, end, &v) || tag >> 3 > UINT32_MAX ||
		    !set_field(r, ev, (unsigned)(tag >> 3), v, &has_delta, &delta))
			return false;
		canon &= MINIMAL(q0);
		if (track) {
			switch (tag >> 3) { /* what the writer leaves out, and how it writes flags */
			case 8: case 15: canon &= v != 0; break;
			case 9: canon &= v != MT_NO_OFFSET; break;
			case 10: canon &= ev->kind == MT_EV_POWER; has_cbr = true; break;
			case 11: case 12: canon &= v == 1; break;
			case 13: canon = false; break; /* a string id of the input's table */
			default: break;
			}
		}
	}
#undef MINIMAL
	if (track)
		r->raw.ok = canon && (ev->kind != MT_EV_POWER || has_cbr);
	if (has_delta) {
		r->last_time += delta;
		ev->time = r->last_time;
		ev->has_time = true;
	}
	return true;
}

/* Two copies: with the check for bytes a filter may pass on (r->keep_raw),
 * and without it for the readers that only read. */
static __attribute__((noinline)) bool decode_event_fast(struct mt_events_reader *r, const uint8_t *p, size_t n,
							  bool slack, struct mt_event *ev)
{
	return r->keep_raw ? decode_event(r, p, n, slack, ev, true) : decode_event(r, p, n, slack, ev, false);
}

/* An Event's fields as protobuf-c read them. */
struct evfields {
	bool has_time_delta, has_cpu, has_offset, has_msg, cond, async;
	int64_t time_delta;
	uint32_t pid, tid, kind, cpu, cbr, msg;
	uint64_t from, to, insn, cyc, offset;
	const uint32_t *extra;
	size_t n_extra;
};

static int fill_event(struct mt_events_reader *r, const struct evfields *e, struct mt_event *ev, struct mt_err *err)
{
	r->raw.ok = false;
	memset(ev, 0, sizeof *ev);
	ev->cpu = -1;
	ev->offset = MT_NO_OFFSET;
	ev->extra = r->kv;
	if (e->has_time_delta) {
		r->last_time += (uint64_t)e->time_delta;
		ev->time = r->last_time;
		ev->has_time = true;
	}
	ev->pid = e->pid;
	ev->tid = e->tid;
	if (e->kind >= MT_EV_KIND_COUNT)
		return bad_record(r, err, "unknown event kind");
	ev->kind = (enum mt_event_kind)e->kind;
	ev->from = e->from;
	ev->to = e->to;
	if (e->has_cpu) {
		if (e->cpu > INT32_MAX)
			return bad_record(r, err, "bad cpu");
		ev->cpu = (int32_t)e->cpu;
	}
	ev->insn = e->insn;
	ev->cyc = e->cyc;
	if (e->has_offset)
		ev->offset = e->offset;
	ev->cbr = e->cbr;
	ev->cond = e->cond;
	ev->async = e->async;
	if (e->has_msg && !(ev->msg = string_id(r, e->msg)))
		return bad_record(r, err, "undefined string id");
	if (e->n_extra % 2 || e->n_extra / 2 > MT_EVENT_MAX_EXTRA)
		return bad_record(r, err, "bad extra columns");
	for (size_t k = 0; k < e->n_extra / 2; k++) {
		r->kv[k].key = string_id(r, e->extra[2 * k]);
		r->kv[k].val = e->extra[2 * k + 1] ? string_id(r, e->extra[2 * k + 1]) : NULL;
		if (!r->kv[k].key || (e->extra[2 * k + 1] && !r->kv[k].val))
			return bad_record(r, err, "undefined string id");
	}
	ev->nextra = (unsigned)(e->n_extra / 2);
	ev->strings_epoch = r->strings_epoch;
	return MT_EVENTS_EVENT;
}

/* A record the memo missed (at p, its fields after the time at key):
 * decoded, and kept in keep when the time field was first and alone;
 * canon (known only with keep_raw) where the time's varint was minimal
 * too, else not claimed: the writer then encodes the event, to the same
 * bytes. Out of line: the hits' path stays small. */
static __attribute__((noinline)) bool decode_and_keep(struct mt_events_reader *r, const uint8_t *p, size_t n,
						       bool slack, struct mt_event *ev, struct mt_recmemo_entry *keep,
						       uint64_t hash, const uint8_t *key, bool timed)
{
	if (!decode_event_fast(r, p, n, slack, ev))
		return false;
	if (keep && !r->late_time && ev->has_time == timed)
		mt_recmemo_keep(keep, hash, key, (size_t)(p + n - key), ev, r->keep_raw && r->raw.ok);
	return true;
}

/* A short record (n < 0x80 bytes, at p) through the record memo: the
 * event a record of the same bytes but the time field decoded to, with
 * this one's time; else decoded, and kept. */
static inline bool decode_event_memo(struct mt_events_reader *r, const uint8_t *p, size_t n, bool slack,
				     struct mt_event *ev)
{
	struct mt_recmemo *m = r->recmemo;
	/* Record.event, its length one byte: the Event's fields */
	if (!m || n < 2 || p[0] != 0x12 || p[1] != n - 2 || !mt_recmemo_active(m))
		return decode_event_fast(r, p, n, slack, ev);
	const uint8_t *body = p + 2, *key = body, *end = p + n;
	uint64_t zz = 0;
	bool timed = key < end && *key == (1 << 3 | MT_PB_VARINT), minimal = true;
	if (timed) {
		const uint8_t *q = ++key;
		if (!mt_pb_get_varint(&q, end, &zz))
			return decode_event_fast(r, p, n, slack, ev); /* (which says what is wrong) */
		minimal = q - key == 1 || q[-1] != 0;
		key = q;
	}
	size_t klen = (size_t)(end - key);
	if (klen > MT_RECMEMO_MAX)
		return decode_event_fast(r, p, n, slack, ev);
	struct mt_recmemo_entry *keep;
	uint64_t hash = 0;
	const struct mt_recmemo_entry *e = mt_recmemo_lookup(m, key, klen, r->strings_epoch, &keep, &hash);
	if (e) {
		*ev = e->ev;
		if (r->keep_raw)
			r->raw = (struct mt_events_raw){.body = body, .len = n - 2, .prev_time = r->last_time,
							.ok = e->canon && minimal, .kept = e, .kept_stamp = e->stamp};
		if (timed) {
			r->last_time += mt_pb_unzigzag(zz);
			ev->time = r->last_time;
			ev->has_time = true;
		}
		return true;
	}
	return decode_and_keep(r, p, n, slack, ev, keep, hash, key, timed);
}

/* The common case: a short record wholly in the buffer, an event the
 * fast path takes. */
static inline bool read_short_event(struct mt_events_reader *r, struct mt_event *ev)
{
	size_t avail = r->end - r->start;
	const uint8_t *b = (const uint8_t *)r->buf + r->start;
	if (avail >= 2 && b[0] < 0x80 && (size_t)b[0] + 1 <= avail && !r->general_only &&
	    decode_event_memo(r, b + 1, b[0], (size_t)b[0] + 9 <= avail, ev)) {
		r->line++;
		r->start += (size_t)b[0] + 1;
		return true;
	}
	return false;
}

/* Not inlined, nor read_text: mt_events_read's common case stays small. */
static __attribute__((noinline)) int read_binary(struct mt_events_reader *r, struct mt_event *ev, const char **meta,
						 struct mt_err *err)
{
	for (;;) {
		if (read_short_event(r, ev))
			return MT_EVENTS_EVENT;
		size_t have = fill(r, 10, err);
		if (err->code)
			return err->code;
		if (have == 0)
			return MT_EVENTS_EOF;
		r->line++;
		const uint8_t *p = (const uint8_t *)r->buf + r->start, *q = p;
		uint64_t len;
		if (!mt_pb_get_varint(&q, p + have, &len))
			return bad_record(r, err, "truncated or bad length");
		if (len > RECORD_MAX)
			return bad_record(r, err, "longer than 64 MiB");
		size_t hdr = (size_t)(q - p);
		if (fill(r, hdr + len, err) < hdr + len)
			return err->code ? err->code : bad_record(r, err, "truncated");
		p = (const uint8_t *)r->buf + r->start;
		if (!r->general_only && decode_event_fast(r, p + hdr, len, hdr + len + 8 <= r->end - r->start, ev)) {
			r->raw.ok &= hdr == 1 || p[hdr - 1] != 0;
			r->start += hdr + len;
			return MT_EVENTS_EVENT;
		}
		size_t need = 32 * len + 4096; /* unpacked size is bounded by this */
		if (need > r->arena_cap) {
			void *na = realloc(r->arena, need);
			if (!na)
				return mt_err_set(err, MT_ENOMEM, "%s: out of memory", r->name);
			r->arena = na;
			r->arena_cap = need;
		}
		r->arena_used = 0;
		ProtobufCAllocator alloc = {arena_alloc, arena_free, r};
		Mt__Record *rec = mt__record__unpack(&alloc, len, p + hdr);
		r->start += hdr + len;
		if (!rec)
			return bad_record(r, err, "not a valid protobuf Record");
		/* The arena is reset for every record: nothing to free. */
		switch (rec->record_case) {
		case MT__RECORD__RECORD_STRINGS_RESET:
			for (size_t k = 0; k < r->nstrings; k++)
				free(r->strings[k]);
			r->nstrings = 0;
			r->strings_epoch = mt_events_new_epoch();
			continue;
		case MT__RECORD__RECORD_STRING_DEF:
			if (r->nstrings == r->strings_cap) {
				size_t ncap = r->strings_cap ? 2 * r->strings_cap : 1024;
				char **ns = realloc(r->strings, ncap * sizeof *ns);
				if (!ns)
					return mt_err_set(err, MT_ENOMEM, "%s: out of memory", r->name);
				r->strings = ns;
				r->strings_cap = ncap;
			}
			if (!(r->strings[r->nstrings] = strdup(rec->string_def)))
				return mt_err_set(err, MT_ENOMEM, "%s: out of memory", r->name);
			r->nstrings++;
			continue;
		case MT__RECORD__RECORD_META:
			*meta = rec->meta;
			note_meta(r, *meta);
			return MT_EVENTS_META;
		case MT__RECORD__RECORD_EVENT:
			break;
		default:
			continue; /* a record kind from a later writer */
		}
		const Mt__Event *e = rec->event;
		struct evfields f = (struct evfields){.has_time_delta = e->has_time_delta, .time_delta = e->time_delta, .pid = e->pid,
				      .tid = e->tid, .kind = (uint32_t)e->kind, .from = e->from, .to = e->to,
				      .has_cpu = e->has_cpu, .cpu = e->cpu, .insn = e->insn, .cyc = e->cyc, .has_offset = e->has_offset,
				      .offset = e->offset, .cbr = e->cbr, .cond = e->cond, .async = e->async,
				      .has_msg = e->has_msg, .msg = e->msg, .extra = e->extra, .n_extra = e->n_extra};
		return fill_event(r, &f, ev, err);
	}
}

int mt_events_read(struct mt_events_reader *r, struct mt_event *ev, const char **meta, struct mt_err *err)
{
	if (r->format != MT_EVENTS_BINARY)
		return read_text(r, ev, meta, err);
	return read_short_event(r, ev) ? MT_EVENTS_EVENT : read_binary(r, ev, meta, err);
}

void mt_events_reader_close(struct mt_events_reader *r)
{
	for (size_t k = 0; k < r->nstrings; k++)
		free(r->strings[k]);
	free(r->strings);
	free(r->own);
	free(r->arena);
	mt_bigmem_zfree(r->extra_memo, EXTRA_MEMO * sizeof *r->extra_memo);
	free(r->line_copy);
	mt_readahead_stop(r->ra);
	if (r->textmemo)
		mt_textmemo_fini(r->textmemo);
	free(r->textmemo);
	if (r->linememo)
		mt_linememo_fini(r->linememo);
	free(r->linememo);
	if (r->recmemo)
		mt_recmemo_fini(r->recmemo);
	free(r->recmemo);
	memset(r, 0, sizeof *r);
}
