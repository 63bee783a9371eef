#define _POSIX_C_SOURCE 200809L
#include "stream/events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mt-events.pb-c.h"
#include "stream/pbwire.h"
#include "base/strtab.h"

static const char *const kind_names[MT_EV_KIND_COUNT] = {
	[MT_EV_CALL] = "call", [MT_EV_RETURN] = "return", [MT_EV_JUMP] = "jump",
	[MT_EV_SYSCALL] = "syscall", [MT_EV_SYSRET] = "sysret",
	[MT_EV_INTERRUPT] = "interrupt", [MT_EV_IRET] = "iret",
	[MT_EV_TRACE_START] = "trace-start", [MT_EV_TRACE_END] = "trace-end",
	[MT_EV_ERROR] = "error", [MT_EV_SAMPLE] = "sample", [MT_EV_POWER] = "power",
	[MT_EV_TX_ABORT] = "tx-abort", [MT_EV_SNAPSHOT] = "snapshot",
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

#define LINE_MAX_BYTES 4096
#define MSG_MAX 1024
#define EXTRA_KEY_MAX 128
#define EXTRA_VAL_MAX 4096

int mt_events_format_parse(const char *s)
{
	if (!strcmp(s, "text"))
		return MT_EVENTS_TEXT;
	if (!strcmp(s, "binary"))
		return MT_EVENTS_BINARY;
	return -1;
}

/* The binary writer's string table: open addressing, string -> id. It is
 * reset (and the reset recorded in the stream) when it grows past
 * INTERN_MAX, so memory stays bounded whatever the input. */
#define INTERN_MAX (1u << 18)
struct intern_slot {
	char *key;      /* NULL: empty */
	uint64_t hash;
	uint32_t len, id;
};
/* Writers pass the same few strings again and again, mostly from the same
 * addresses (column names, symbol and object names): the id last found
 * for an address is tried first, confirmed by comparing the text (so a
 * buffer reused for other text is simply a miss) unless the event promises
 * its strings unchanged (strings_epoch, the epoch the entry was made in). */
#define INTERN_MEMO_BITS 12
#define INTERN_MEMO (1u << INTERN_MEMO_BITS)
struct intern_memo {
	const char *s;       /* the caller's address */
	const char *key;     /* the table's copy (NULL: empty) */
	uint64_t epoch;      /* 0: no promise */
	uint32_t len, id;
};
struct mt_intern {
	struct intern_slot *slots;
	size_t cap, n;
	uint32_t next_id;
	struct intern_memo memo[INTERN_MEMO];
};

/* A word at a time: the table is probed for a few strings of every event
 * (symbol, offset, object), so a byte-wise hash showed in profiles. */
static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	for (; n >= 8; s += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	uint64_t w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

static void intern_clear(struct mt_intern *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->slots[i].key);
		t->slots[i].key = NULL;
	}
	memset(t->memo, 0, sizeof t->memo); /* its keys were the table's */
	t->n = 0;
	t->next_id = 1;
}

static void intern_free(struct mt_intern *t)
{
	if (!t)
		return;
	intern_clear(t);
	free(t->slots);
	free(t);
}

static int intern_grow(struct mt_intern *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	struct intern_slot *ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return MT_ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i].key)
			continue;
		size_t j = t->slots[i].hash & (ncap - 1);
		while (ns[j].key)
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

int mt_events_writer_init_format(struct mt_events_writer *w, FILE *out, enum mt_events_format format)
{
	memset(w, 0, sizeof *w);
	w->out = out;
	w->format = format;
	w->cap = 1 << 16;
	w->buf = malloc(w->cap);
	if (!w->buf)
		return MT_ENOMEM;
	if (format == MT_EVENTS_BINARY) {
		w->strings = calloc(1, sizeof *w->strings);
		if (!w->strings || intern_grow(w->strings)) {
			intern_free(w->strings);
			free(w->buf);
			return MT_ENOMEM;
		}
		w->strings->next_id = 1;
		memcpy(w->buf, MT_EVENTS_MAGIC, MT_EVENTS_MAGIC_LEN);
		w->len = MT_EVENTS_MAGIC_LEN;
	} else {
		mt_events_write_fact(w, NULL, NULL);
	}
	return 0;
}

int mt_events_writer_init(struct mt_events_writer *w, FILE *out)
{
	return mt_events_writer_init_format(w, out, MT_EVENTS_TEXT);
}

static void flush(struct mt_events_writer *w)
{
	if (!w->out)
		return; /* a memory writer keeps it all */
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
	if (w->len + n > w->cap) {
		size_t nc = w->out ? n : w->cap * 2 > w->len + n ? w->cap * 2 : w->len + n;
		char *nb = realloc(w->buf, nc);
		if (!nb) {
			w->failed = true;
			w->err_no = ENOMEM;
			return NULL;
		}
		w->buf = nb;
		w->cap = nc;
	}
	return w->buf + w->len;
}

/* n bytes of a value: a TAB or newline would split columns, so each
 * becomes a space. Rare: after a plain copy, a word at a time looks for
 * any byte below 11 (TAB is 9, newline 10; memchr per value cost more). */
static char *put_bytes(char *p, const char *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	memcpy(p, s, n);
	/* the source is read, not the copy (reading bytes just stored stalls) */
	uint64_t low = 0, x;
	size_t i = 0;
	for (; i + 8 <= n && !low; i += 8) {
		memcpy(&x, s + i, 8);
		low = (x - 11 * ones) & ~x & highs;
	}
	if (i < n && !low) {
		if (n >= 8) { /* the last 8 bytes, overlapping what was seen */
			memcpy(&x, s + n - 8, 8);
			low = (x - 11 * ones) & ~x & highs;
		} else {
			for (; i < n && !low; i++)
				low = (unsigned char)s[i] < 11;
		}
	}
	if (low)
		for (i = 0; i < n; i++)
			if (p[i] == '\t' || p[i] == '\n')
				p[i] = ' ';
	return p + n;
}

static char *put_str(char *p, const char *s, size_t max)
{
	return put_bytes(p, s, strnlen(s, max));
}

/* The bytes write_text may need; the columns' lengths into klen, vlen. */
static size_t text_size(const struct mt_event *ev, unsigned nx, uint16_t *klen, uint16_t *vlen)
{
	size_t n = 256 + (ev->msg ? MSG_MAX + 8 : 0);
	for (unsigned i = 0; i < nx; i++) {
		klen[i] = (uint16_t)strnlen(ev->extra[i].key, EXTRA_KEY_MAX);
		vlen[i] = ev->extra[i].val ? (uint16_t)strnlen(ev->extra[i].val, EXTRA_VAL_MAX) : 0;
		n += klen[i] + vlen[i] + 2;
	}
	return n;
}

static void write_text(struct mt_events_writer *w, const struct mt_event *ev)
{
	uint16_t klen[MT_EVENT_MAX_EXTRA], vlen[MT_EVENT_MAX_EXTRA]; /* small: no stack probe */
	unsigned nx = ev->nextra < MT_EVENT_MAX_EXTRA ? ev->nextra : MT_EVENT_MAX_EXTRA;
	char *p = reserve(w, text_size(ev, nx, klen, vlen)), *start = p;
	if (!p)
		return;
	if (ev->has_time)
		p = mt_put_dec(p, ev->time);
	else
		*p++ = '-';
	*p++ = '\t';
	if (!w->thr_len || ev->pid != w->thr_pid || ev->tid != w->thr_tid) {
		/* a thread's events come in runs: its columns formatted once a run */
		char *t = mt_put_dec(w->thr, ev->pid);
		*t++ = '\t';
		t = mt_put_dec(t, ev->tid);
		*t++ = '\t';
		w->thr_len = (uint8_t)(t - w->thr);
		w->thr_pid = ev->pid;
		w->thr_tid = ev->tid;
	}
	memcpy(p, w->thr, w->thr_len);
	p += w->thr_len;
	/* our own short names: no TAB cleaning needed */
	const char *kn = mt_event_kind_name(ev->kind);
	size_t kl = strlen(kn);
	memcpy(p, kn, kl);
	p += kl;
	*p++ = '\t';
	p = mt_put_hex(p, ev->from);
	*p++ = '\t';
	p = mt_put_hex(p, ev->to);
	if (ev->cpu >= 0) {
		memcpy(p, "\tcpu=", 5);
		p = mt_put_dec(p + 5, (uint64_t)ev->cpu);
	}
	if (ev->insn) {
		memcpy(p, "\tinsn=", 6);
		p = mt_put_dec(p + 6, ev->insn);
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
		p = mt_put_dec(p + 5, ev->cbr);
	}
	if (ev->offset != MT_NO_OFFSET) {
		memcpy(p, "\toff=", 5);
		p = mt_put_hex(p + 5, ev->offset);
	}
	if (ev->msg) {
		memcpy(p, "\tmsg=", 5);
		p = put_str(p + 5, ev->msg, MSG_MAX);
	}
	for (unsigned i = 0; i < nx; i++) {
		*p++ = '\t';
		p = put_bytes(p, ev->extra[i].key, klen[i]);
		if (ev->extra[i].val) {
			*p++ = '=';
			p = put_bytes(p, ev->extra[i].val, vlen[i]);
		}
	}
	*p++ = '\n';
	w->len += (size_t)(p - start);
}

/* Appends one length-prefixed record. */
static void put_record(struct mt_events_writer *w, const Mt__Record *rec)
{
	size_t n = protobuf_c_message_get_packed_size(&rec->base);
	uint8_t *p = (uint8_t *)reserve(w, n + 10);
	if (!p)
		return;
	uint8_t *start = p;
	p = mt_pb_varint(p, n);
	p += protobuf_c_message_pack(&rec->base, p);
	w->len += (size_t)(p - start);
}

/* The id of s (at most max bytes, TAB/newline as spaces, exactly as the text
 * form would carry it), defining it first if new. 0 when out of memory. */
static const struct intern_slot *intern_slow(struct mt_events_writer *w, const char *s, size_t max);

static uint32_t intern_memo_miss(struct mt_events_writer *w, struct intern_memo *m, const char *s, size_t max,
				 uint64_t epoch);

/* Inline: most strings of most events are found here. */
static inline uint32_t intern(struct mt_events_writer *w, const char *s, size_t max, uint64_t epoch)
{
	/* multiplied: strings a few bytes apart (literals) must not share a slot */
	struct intern_memo *m = &w->strings->memo[(uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ULL >> (64 - INTERN_MEMO_BITS)];
	if (m->s == s && epoch && m->epoch == epoch && m->key)
		return m->id;
	return intern_memo_miss(w, m, s, max, epoch);
}

static uint32_t intern_memo_miss(struct mt_events_writer *w, struct intern_memo *m, const char *s, size_t max,
				 uint64_t epoch)
{
	/* the copy is cleaned of TAB and newline: a string with them misses */
	if (m->s == s && m->key && !memcmp(m->key, s, m->len) && !s[m->len]) {
		m->epoch = epoch;
		return m->id;
	}
	const struct intern_slot *e = intern_slow(w, s, max);
	if (!e)
		return 0;
	*m = (struct intern_memo){.s = s, .key = e->key, .epoch = epoch, .len = e->len, .id = e->id};
	return e->id;
}

static const struct intern_slot *intern_slow(struct mt_events_writer *w, const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	/* the text form's spaces for TAB and newline: a copy only when needed */
	char tmp[EXTRA_VAL_MAX + 1];
	if (memchr(s, '\t', n) || memchr(s, '\n', n)) {
		for (size_t i = 0; i < n; i++)
			tmp[i] = (s[i] == '\t' || s[i] == '\n') ? ' ' : s[i];
		s = tmp;
	}
	struct mt_intern *t = w->strings;
	if ((t->n + 1) * 2 > t->cap && intern_grow(t)) {
		w->failed = true;
		w->err_no = ENOMEM;
		return NULL;
	}
	uint64_t h = hash_bytes(s, n);
	size_t j = h & (t->cap - 1);
	for (struct intern_slot *e; (e = &t->slots[j])->key; j = (j + 1) & (t->cap - 1))
		if (e->hash == h && e->len == n && !memcmp(e->key, s, n))
			return e;
	char *key = malloc(n + 1);
	if (!key) {
		w->failed = true;
		w->err_no = ENOMEM;
		return NULL;
	}
	memcpy(key, s, n);
	key[n] = '\0';
	t->slots[j] = (struct intern_slot){.key = key, .hash = h, .len = (uint32_t)n, .id = t->next_id++};
	t->n++;
	Mt__Record rec = MT__RECORD__INIT;
	rec.record_case = MT__RECORD__RECORD_STRING_DEF;
	rec.string_def = key;
	put_record(w, &rec);
	return &t->slots[j];
}

/* Events are most of a stream: encoded by hand (proto/mt-events.proto,
 * fields in number order, as protobuf-c writes them; the bytes are the
 * same) instead of through protobuf-c's reflective packer. */
static void write_binary(struct mt_events_writer *w, const struct mt_event *ev)
{
	uint32_t extra[2 * MT_EVENT_MAX_EXTRA];
	unsigned nx = ev->nextra < MT_EVENT_MAX_EXTRA ? ev->nextra : MT_EVENT_MAX_EXTRA;
	/* A full table is reset before the event's strings, never between
	 * them: ids taken before a reset would name other strings after it. */
	struct mt_intern *t = w->strings;
	if (t->n + 1 + 2 * nx > INTERN_MAX) {
		Mt__Record rec = MT__RECORD__INIT;
		rec.record_case = MT__RECORD__RECORD_STRINGS_RESET;
		rec.strings_reset = true;
		put_record(w, &rec);
		intern_clear(t);
	}
	uint64_t epoch = ev->strings_epoch;
	uint32_t msg = ev->msg ? intern(w, ev->msg, MSG_MAX, epoch) : 0;
	for (unsigned i = 0; i < nx; i++) {
		extra[2 * i] = intern(w, ev->extra[i].key, EXTRA_KEY_MAX, epoch);
		/* value id 0: a column with no '=' */
		extra[2 * i + 1] = ev->extra[i].val ? intern(w, ev->extra[i].val, EXTRA_VAL_MAX, epoch) : 0;
	}
	uint8_t body[16 * 11 + 10 * 2 * MT_EVENT_MAX_EXTRA + 16], *p = body;
	if (ev->has_time) {
		int64_t d = (int64_t)(ev->time - w->last_time);
		w->last_time = ev->time;
		p = mt_pb_uint(p, 1, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63)); /* sint64: zigzag */
	}
	p = mt_pb_uint(p, 2, ev->pid);
	p = mt_pb_uint(p, 3, ev->tid);
	p = mt_pb_uint(p, 4, (uint64_t)ev->kind);
	p = mt_pb_uint(p, 5, ev->from);
	p = mt_pb_uint(p, 6, ev->to);
	if (ev->cpu >= 0)
		p = mt_pb_uint(p, 7, (uint32_t)ev->cpu);
	if (ev->insn)
		p = mt_pb_uint(p, 8, ev->insn);
	if (ev->offset != MT_NO_OFFSET)
		p = mt_pb_uint(p, 9, ev->offset);
	if (ev->kind == MT_EV_POWER)
		p = mt_pb_uint(p, 10, ev->cbr);
	if (ev->cond)
		p = mt_pb_uint(p, 11, 1);
	if (ev->async)
		p = mt_pb_uint(p, 12, 1);
	if (ev->msg)
		p = mt_pb_uint(p, 13, msg);
	if (nx) {
		uint8_t ids[10 * 2 * MT_EVENT_MAX_EXTRA], *q = ids;
		for (unsigned i = 0; i < 2 * nx; i++)
			q = mt_pb_varint(q, extra[i]);
		p = mt_pb_varint(mt_pb_tag(p, 14, MT_PB_LEN), (uint64_t)(q - ids)); /* packed */
		memcpy(p, ids, (size_t)(q - ids));
		p += q - ids;
	}
	/* Record { event = 2 }, after its length */
	size_t blen = (size_t)(p - body);
	uint8_t hdr[24], *h = mt_pb_varint(hdr + 11, blen), *rec = hdr + 11;
	size_t rlen = 1 + (size_t)(h - rec) + blen; /* tag, length, body */
	uint8_t *out = (uint8_t *)reserve(w, rlen + 10);
	if (!out)
		return;
	uint8_t *o = mt_pb_varint(out, rlen);
	o = mt_pb_tag(o, 2, MT_PB_LEN);
	memcpy(o, rec, (size_t)(h - rec));
	o += h - rec;
	memcpy(o, body, blen);
	o += blen;
	w->len += (size_t)(o - out);
}

int mt_events_writer_init_memory(struct mt_events_writer *w)
{
	memset(w, 0, sizeof *w);
	w->format = MT_EVENTS_TEXT;
	w->cap = 1 << 16;
	w->buf = malloc(w->cap);
	return w->buf ? 0 : MT_ENOMEM;
}

void mt_events_write_bytes(struct mt_events_writer *w, const void *p, size_t n)
{
	if (!w->out) {
		char *q = reserve(w, n);
		if (q) {
			memcpy(q, p, n);
			w->len += n;
		}
		return;
	}
	flush(w);
	if (n && !w->failed && fwrite(p, 1, n, w->out) != n) {
		w->failed = true;
		w->err_no = errno;
	}
}

void mt_events_write(struct mt_events_writer *w, const struct mt_event *ev)
{
	if (w->format == MT_EVENTS_BINARY)
		write_binary(w, ev);
	else
		write_text(w, ev);
}

void mt_events_write_meta(struct mt_events_writer *w, const char *line)
{
	char tmp[LINE_MAX_BYTES];
	size_t n = strnlen(line, LINE_MAX_BYTES - 4);
	for (size_t i = 0; i < n; i++)
		tmp[i] = line[i] == '\n' ? ' ' : line[i];
	tmp[n] = '\0';
	if (w->format == MT_EVENTS_BINARY) {
		Mt__Record rec = MT__RECORD__INIT;
		rec.record_case = MT__RECORD__RECORD_META;
		rec.meta = tmp;
		put_record(w, &rec);
		return;
	}
	char *p = reserve(w, n + 3);
	if (!p)
		return;
	p[0] = '#';
	p[1] = ' ';
	memcpy(p + 2, tmp, n);
	p[n + 2] = '\n';
	w->len += n + 3;
}

static void write_meta(struct mt_events_writer *w, const char *fmt, ...)
{
	char line[LINE_MAX_BYTES];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n >= 0)
		mt_events_write_meta(w, line);
}

void mt_events_write_fact(struct mt_events_writer *w, const char *key, const char *fmt, ...)
{
	if (!key) {
		write_meta(w, "mt-events %d", MT_EVENTS_VERSION);
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
	write_meta(w, "fact\t%s\t%s", key, val);
}

void mt_events_write_comm(struct mt_events_writer *w, uint32_t pid, uint32_t tid, const char *comm)
{
	write_meta(w, "comm\t%" PRIu32 "\t%" PRIu32 "\t%s", pid, tid, comm);
}

void mt_events_write_mmap(struct mt_events_writer *w, uint32_t pid, uint64_t start, uint64_t len,
			  uint64_t pgoff, const uint8_t *build_id, unsigned build_id_size, const char *path)
{
	char bid[41] = "-";
	if (build_id && build_id_size)
		mt_hex(build_id, build_id_size < 20 ? build_id_size : 20, bid);
	write_meta(w, "mmap\t%" PRIu32 "\t0x%" PRIx64 "\t0x%" PRIx64 "\t0x%" PRIx64 "\t%s\t%s",
		   pid, start, len, pgoff, bid, path);
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

int mt_events_writer_finish(struct mt_events_writer *w, struct mt_err *err)
{
	flush(w);
	if (!w->failed && w->out && fflush(w->out) != 0) {
		w->failed = true;
		w->err_no = errno;
	}
	free(w->buf);
	w->buf = NULL;
	intern_free(w->strings);
	w->strings = NULL;
	if (w->failed)
		return mt_err_set(err, MT_EIO, "writing events: %s", strerror(w->err_no));
	return 0;
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

/* ---- stream reader ---- */

#define READ_CHUNK (1u << 20)
#define RECORD_MAX (64u << 20)

/* Makes at least want bytes available from start; returns how many are. */
static size_t fill(struct mt_events_reader *r, size_t want, struct mt_err *err)
{
	while (r->end - r->start < want && !r->eof) {
		if (r->start && (r->cap - r->end < READ_CHUNK || r->start == r->end)) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		if (r->cap - r->end < READ_CHUNK) {
			size_t ncap = r->cap ? r->cap * 2 : 2 * READ_CHUNK;
			char *nb = realloc(r->buf, ncap + 1);
			if (!nb) {
				mt_err_set(err, MT_ENOMEM, "%s: out of memory", r->name);
				return 0;
			}
			r->buf = nb;
			r->cap = ncap;
		}
		size_t got = fread(r->buf + r->end, 1, r->cap - r->end, r->in);
		r->end += got;
		if (got == 0) {
			if (ferror(r->in)) {
				mt_err_set(err, MT_EIO, "%s: read: %s", r->name, strerror(errno));
				return 0;
			}
			r->eof = true;
		}
	}
	size_t have = r->end - r->start;
	return have < want ? have : want;
}

/* The next text line, NUL-terminated in the buffer, or NULL at the end. */
static char *next_line(struct mt_events_reader *r, struct mt_err *err)
{
	size_t scanned = 0;
	for (;;) {
		char *base = r->buf + r->start;
		char *nl = memchr(base + scanned, '\n', r->end - r->start - scanned);
		if (nl) {
			*nl = '\0';
			r->start = (size_t)(nl + 1 - r->buf);
			r->line++;
			return base;
		}
		scanned = r->end - r->start;
		if (r->eof) {
			if (!scanned)
				return NULL;
			r->buf[r->end] = '\0'; /* last line without a newline */
			r->start = r->end;
			r->line++;
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

/* Epochs are unique in the process: a consumer fed by two readers never
 * mistakes one table's strings for the other's. */
static uint64_t new_strings_epoch(void)
{
	static _Atomic uint64_t last;
	return ++last;
}

static int reader_open(struct mt_events_reader *r, FILE *in, const char *name, struct mt_err *err)
{
	memset(r, 0, sizeof *r);
	r->in = in;
	r->name = name;
	size_t have = fill(r, MT_EVENTS_MAGIC_LEN, err);
	if (err->code)
		return err->code;
	if (have == MT_EVENTS_MAGIC_LEN && !memcmp(r->buf, MT_EVENTS_MAGIC, MT_EVENTS_MAGIC_LEN)) {
		r->format = MT_EVENTS_BINARY;
		r->start = MT_EVENTS_MAGIC_LEN;
		r->strings_epoch = new_strings_epoch();
		return 0;
	}
	r->format = MT_EVENTS_TEXT;
	char *first = next_line(r, err);
	if (err->code)
		return err->code;
	if (!first)
		return mt_err_set(err, MT_EFORMAT, "%s: empty input, not an mt event stream", name);
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
	if (rc)
		mt_events_reader_close(r);
	return rc;
}

static int read_text(struct mt_events_reader *r, struct mt_event *ev, const char **meta, struct mt_err *err)
{
	for (;;) {
		char *line = next_line(r, err);
		if (!line)
			return err->code ? err->code : MT_EVENTS_EOF;
		if (line[0] == '#') {
			size_t n = strlen(line);
			if (n && line[n - 1] == '\r')
				line[n - 1] = '\0';
			*meta = line + 1 + (line[1] == ' ');
			return MT_EVENTS_META;
		}
		int rc = mt_events_parse_line(line, ev, r->kv, err);
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
	case 1: *has_delta = true; *delta = (v >> 1) ^ -(v & 1); return true;
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
	default: return false;
	}
}

/* The fast path for the common record, an Event with the fields mt
 * writers use (tag numbers of proto/mt-events.proto), decoded straight
 * into ev. Returns false for anything else, or anything wrong, which
 * protobuf-c then reads (or rejects with the message). */
static bool decode_event_fast(struct mt_events_reader *r, const uint8_t *p, size_t n, struct mt_event *ev)
{
	const uint8_t *end = p + n;
	uint64_t len;
	if (n < 2 || p[0] != 0x12) /* Record.event, length-delimited */
		return false;
	p++;
	if (!mt_pb_get_varint(&p, end, &len) || len != (uint64_t)(end - p))
		return false;
	/* field by field: a compound literal became a rep stos, slow to start */
	ev->time = 0;
	ev->has_time = false;
	ev->pid = ev->tid = 0;
	ev->cpu = -1;
	ev->kind = MT_EV_CALL;
	ev->from = ev->to = ev->insn = 0;
	ev->offset = MT_NO_OFFSET;
	ev->cbr = 0;
	ev->cond = ev->async = false;
	ev->msg = NULL;
	ev->extra = r->kv;
	ev->nextra = 0;
	ev->strings_epoch = r->strings_epoch;
	bool has_delta = false, seen_extra = false;
	uint64_t delta = 0, v;
	/* mt's writers put the fields in number order: the first six are
	 * matched in that order (no tag decoding, no dispatch), the rest and
	 * anything out of order by the loop (unrolled: each copy's field is a
	 * constant, so set_field's switch folds away) */
#pragma GCC unroll 6
	for (unsigned field = 1; field <= 6; field++)
		if (p < end && *p == field << 3) {
			p++;
			if (!mt_pb_get_varint(&p, end, &v) || !set_field(r, ev, field, v, &has_delta, &delta))
				return false;
		}
	while (p < end) {
		uint64_t tag;
		if (!mt_pb_get_varint(&p, end, &tag))
			return false;
		if (tag == (14 << 3 | MT_PB_LEN)) { /* extra, packed: key and value string ids */
			if (!mt_pb_get_varint(&p, end, &len) || len > (uint64_t)(end - p) || seen_extra)
				return false;
			seen_extra = true;
			const uint8_t *q = p, *qe = p + len;
			unsigned k = 0;
			while (q < qe) {
				uint64_t key, val;
				if (k == MT_EVENT_MAX_EXTRA || !mt_pb_get_varint(&q, qe, &key) ||
				    !mt_pb_get_varint(&q, qe, &val) || key > UINT32_MAX || val > UINT32_MAX)
					return false;
				const char *ks = string_id(r, (uint32_t)key), *vs = NULL;
				if (!ks || (val && !(vs = string_id(r, (uint32_t)val))))
					return false;
				r->kv[k++] = (struct mt_kv){ks, vs};
			}
			ev->nextra = k;
			p = qe;
			continue;
		}
		if ((tag & 7) != 0 || !mt_pb_get_varint(&p, end, &v) || tag >> 3 > UINT32_MAX ||
		    !set_field(r, ev, (unsigned)(tag >> 3), v, &has_delta, &delta))
			return false;
	}
	if (has_delta) {
		r->last_time += delta;
		ev->time = r->last_time;
		ev->has_time = true;
	}
	return true;
}

/* An Event's fields as protobuf-c read them. */
struct evfields {
	bool has_time_delta, has_cpu, has_offset, has_msg, cond, async;
	int64_t time_delta;
	uint32_t pid, tid, kind, cpu, cbr, msg;
	uint64_t from, to, insn, offset;
	const uint32_t *extra;
	size_t n_extra;
};

static int fill_event(struct mt_events_reader *r, const struct evfields *e, struct mt_event *ev, struct mt_err *err)
{
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

static int read_binary(struct mt_events_reader *r, struct mt_event *ev, const char **meta, struct mt_err *err)
{
	for (;;) {
		/* the common case first: a short record wholly in the buffer */
		size_t avail = r->end - r->start;
		const uint8_t *b = (const uint8_t *)r->buf + r->start;
		if (avail >= 2 && b[0] < 0x80 && (size_t)b[0] + 1 <= avail && decode_event_fast(r, b + 1, b[0], ev)) {
			r->line++;
			r->start += (size_t)b[0] + 1;
			return MT_EVENTS_EVENT;
		}
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
		if (decode_event_fast(r, p + hdr, len, ev)) {
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
			r->strings_epoch = new_strings_epoch();
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
			return MT_EVENTS_META;
		case MT__RECORD__RECORD_EVENT:
			break;
		default:
			continue; /* a record kind from a later writer */
		}
		const Mt__Event *e = rec->event;
		struct evfields f = (struct evfields){.has_time_delta = e->has_time_delta, .time_delta = e->time_delta, .pid = e->pid,
				      .tid = e->tid, .kind = (uint32_t)e->kind, .from = e->from, .to = e->to,
				      .has_cpu = e->has_cpu, .cpu = e->cpu, .insn = e->insn, .has_offset = e->has_offset,
				      .offset = e->offset, .cbr = e->cbr, .cond = e->cond, .async = e->async,
				      .has_msg = e->has_msg, .msg = e->msg, .extra = e->extra, .n_extra = e->n_extra};
		return fill_event(r, &f, ev, err);
	}
}

int mt_events_read(struct mt_events_reader *r, struct mt_event *ev, const char **meta, struct mt_err *err)
{
	return r->format == MT_EVENTS_BINARY ? read_binary(r, ev, meta, err) : read_text(r, ev, meta, err);
}

void mt_events_reader_close(struct mt_events_reader *r)
{
	for (size_t k = 0; k < r->nstrings; k++)
		free(r->strings[k]);
	free(r->strings);
	free(r->buf);
	free(r->arena);
	memset(r, 0, sizeof *r);
}
