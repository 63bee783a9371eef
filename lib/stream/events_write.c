/* events_write: the stream's writer, text or binary (interned strings,
 * events encoded by hand), to a FILE or to memory. */
#define _POSIX_C_SOURCE 200809L
#include "stream/events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/bigmem.h"
#include "base/pipebuf.h"
#include "base/strtab.h"

#include "mt-events.pb-c.h"
#include "stream/limits.h"
#include "stream/pbwire.h"

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
	uint32_t gen;        /* counts resets: ids of an older generation are void */
	struct intern_memo memo[INTERN_MEMO];
};

/* Column groups (mt_events_write_cols) encoded once: their text, or their
 * string ids as packed varints, by group id. Direct-mapped; a group too
 * long for a slot is encoded each time. 8192 slots: mt-symbolize keeps
 * 4096 addresses a side (names/symcols.c); with 2048 the bench trace's
 * groups' strings were interned again 40% more often (4 MiB of slots, touched
 * only where used). */
#define COLS_MEMO_BITS 13
#define COLS_MEMO (1u << COLS_MEMO_BITS)
#define COLS_MEMO_BYTES 496
struct cols_memo {
	uint64_t id;         /* 0: empty */
	uint32_t gen;        /* binary: the string table's generation */
	uint16_t len;
	char bytes[COLS_MEMO_BYTES];
};

/* Records passed on by mt_events_write_cols with their fields as read
 * (raw ok) and column groups after them: the body after the time field,
 * by the reader's identity of the record (raw->kept, kept_stamp: the same
 * bytes after the time), the groups' ids and the string table's
 * generation. A record found again is written as its time and these bytes:
 * what encoding it would write, since the same ids in the same generation
 * intern to the same string ids and define none. Direct-mapped. */
#define OUT_MEMO_BITS 12
#define OUT_MEMO (1u << OUT_MEMO_BITS)
#define OUT_MEMO_GROUPS 2
#define OUT_MEMO_BYTES 96
struct out_memo {
	const void *kept;     /* NULL: empty */
	uint64_t stamp;
	uint64_t ids[OUT_MEMO_GROUPS];
	uint32_t gen;
	uint8_t ncols;
	uint8_t len;
	uint8_t bytes[OUT_MEMO_BYTES];
};

static void intern_clear(struct mt_intern *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->slots[i].key);
		t->slots[i].key = NULL;
	}
	memset(t->memo, 0, sizeof t->memo); /* its keys were the table's */
	t->n = 0;
	t->next_id = 1;
	t->gen++;
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
	/* large writes into a wide pipe: the next stage wakes less often */
	w->cap = 1 << 18;
	mt_pipebuf_widen(fileno(out));
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

/* The writer's buffer goes to the descriptor in one write, not through
 * stdio: fwrite of a buffer that is not a multiple of the FILE's 4 KiB put
 * the rest in its own buffer, and the next fwrite wrote those 4 KiB alone,
 * so every chunk was two writes and woke the next stage twice. Anything
 * already in the FILE's buffer goes first. A FILE without a descriptor
 * (a memory stream) is written through stdio. */
static void put(struct mt_events_writer *w, const void *p, size_t n)
{
	if (!n || w->failed)
		return;
	int fd = fileno(w->out);
	if (fd < 0) {
		if (fwrite(p, 1, n, w->out) != n) {
			w->failed = true;
			w->err_no = errno;
		}
		return;
	}
	if (fflush(w->out) != 0) {
		w->failed = true;
		w->err_no = errno;
		return;
	}
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			w->failed = true;
			w->err_no = k < 0 ? errno : EIO;
			return;
		}
		c += k;
		n -= (size_t)k;
	}
}

static void flush(struct mt_events_writer *w)
{
	if (!w->out)
		return; /* a memory writer keeps it all */
	put(w, w->buf, w->len);
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

/* A column group's text, "\tKEY=VAL..." as write_text writes columns: the
 * bytes it may need. */
static size_t cols_text_size(const struct mt_events_cols *g)
{
	size_t n = 0;
	for (unsigned i = 0; i < g->n; i++)
		n += 2 + strnlen(g->kv[i].key, EXTRA_KEY_MAX) +
		     (g->kv[i].val ? strnlen(g->kv[i].val, EXTRA_VAL_MAX) : 0);
	return n;
}

static char *put_cols_text(char *p, const struct mt_events_cols *g)
{
	for (unsigned i = 0; i < g->n; i++) {
		*p++ = '\t';
		p = put_str(p, g->kv[i].key, EXTRA_KEY_MAX);
		if (g->kv[i].val) {
			*p++ = '=';
			p = put_str(p, g->kv[i].val, EXTRA_VAL_MAX);
		}
	}
	return p;
}

size_t mt_events_cols_text(const struct mt_events_cols *g, char *out, size_t cap)
{
	if (cols_text_size(g) > cap) /* at most that: "=" counted for a key without a value */
		return 0;
	return (size_t)(put_cols_text(out, g) - out);
}

/* The memo slot of a group id; NULL when the writer has none (no memory). */
static struct cols_memo *cols_slot(struct mt_events_writer *w, uint64_t id)
{
	if (!id)
		return NULL;
	if (!w->cols_memo && !(w->cols_memo = mt_bigmem_zalloc(COLS_MEMO * sizeof *w->cols_memo)))
		return NULL;
	return &w->cols_memo[id * 0x9e3779b97f4a7c15ULL >> (64 - COLS_MEMO_BITS)];
}

/* The event's own columns, as write_text writes them. */
static char *put_event_text(struct mt_events_writer *w, char *p, const struct mt_event *ev, unsigned nx,
			    const uint16_t *klen, const uint16_t *vlen)
{
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
	if (ev->cyc) {
		memcpy(p, "\tcyc=", 5);
		p = mt_put_dec(p + 5, ev->cyc);
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
	return p;
}

/* raw (may be NULL): a text reader's line for ev, copied where it is what
 * put_event_text would write. */
static void write_text(struct mt_events_writer *w, const struct mt_event *ev, const struct mt_events_raw *raw,
		       const struct mt_events_cols *cols, unsigned ncols)
{
	uint16_t klen[MT_EVENT_MAX_EXTRA], vlen[MT_EVENT_MAX_EXTRA]; /* small: no stack probe */
	unsigned nx = ev->nextra < MT_EVENT_MAX_EXTRA ? ev->nextra : MT_EVENT_MAX_EXTRA;
	bool copy = raw && raw->line_ok;
	size_t need = copy ? raw->line_len + 1 : text_size(ev, nx, klen, vlen);
	for (unsigned g = 0; g < ncols; g++) {
		if (cols[g].text) {
			need += cols[g].text_len;
			continue;
		}
		const struct cols_memo *m = cols_slot(w, cols[g].id);
		need += m && m->id == cols[g].id ? m->len : cols_text_size(&cols[g]);
	}
	char *p = reserve(w, need), *start = p;
	w->last_ok = p != NULL;
	if (!p)
		return;
	w->last_at = (size_t)(p - w->buf);
	if (copy) {
		memcpy(p, raw->line, raw->line_len);
		p += raw->line_len;
	} else {
		p = put_event_text(w, p, ev, nx, klen, vlen);
	}
	/* each group whole before the next: one may take another's slot */
	for (unsigned g = 0; g < ncols; g++) {
		if (cols[g].text) { /* the filter's own copy, beside the columns it looked up */
			memcpy(p, cols[g].text, cols[g].text_len);
			p += cols[g].text_len;
			continue;
		}
		struct cols_memo *m = cols_slot(w, cols[g].id);
		if (m && m->id == cols[g].id) {
			memcpy(p, m->bytes, m->len);
			p += m->len;
			continue;
		}
		char *at = p;
		p = put_cols_text(p, &cols[g]);
		if (m && (size_t)(p - at) <= COLS_MEMO_BYTES) {
			m->id = cols[g].id;
			m->len = (uint16_t)(p - at);
			memcpy(m->bytes, at, m->len);
		}
	}
	*p++ = '\n';
	w->len += (size_t)(p - start);
}

void mt_events_write_cols_kept(struct mt_events_writer *w, const struct mt_event *ev, const struct mt_events_raw *raw,
			       const struct mt_events_cols *cols, unsigned ncols, uint64_t tag)
{
	w->last_ok = false;
	mt_events_write_cols(w, ev, raw, cols, ncols);
	struct mt_events_aux *aux = raw ? raw->aux : NULL;
	if (w->format != MT_EVENTS_TEXT || !aux || !tag || !w->last_ok || w->failed)
		return;
	/* the line as written: its time, then from the first TAB to the newline */
	const char *line = w->buf + w->last_at, *end = w->buf + w->len - 1;
	const char *tab = memchr(line, '\t', (size_t)(end - line));
	if (!tab || (size_t)(end - tab) > MT_EVENTS_AUX_MAX)
		return;
	aux->len = (uint16_t)(end - tab);
	memcpy(aux->bytes, tab, aux->len);
	aux->tag = tag;
}

bool mt_events_write_kept(struct mt_events_writer *w, const struct mt_event *ev, const struct mt_events_raw *raw,
			  uint64_t tag)
{
	const struct mt_events_aux *aux = raw ? raw->aux : NULL;
	if (w->format != MT_EVENTS_TEXT || !aux || !tag || aux->tag != tag)
		return false;
	char *p = reserve(w, 24 + aux->len);
	if (!p)
		return true; /* failed: the writer says so at the end */
	char *start = p;
	if (ev->has_time)
		p = mt_put_dec(p, ev->time);
	else
		*p++ = '-';
	memcpy(p, aux->bytes, aux->len);
	p += aux->len;
	*p++ = '\n';
	w->len += (size_t)(p - start);
	return true;
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
	uint64_t h = mt_hash_bytes(s, n); /* a word at a time: probed for strings of every event */
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

/* The output memo's slot for a record passed on as read (raw ok, from
 * the last time written, no columns of its own) with ncols groups, or NULL
 * when such a record is not kept. */
static struct out_memo *out_slot(struct mt_events_writer *w, const struct mt_event *ev,
				 const struct mt_events_raw *raw, unsigned ncols)
{
	if (!raw || !raw->ok || !raw->kept || raw->prev_time != w->last_time || ev->nextra || ev->msg ||
	    !ncols || ncols > OUT_MEMO_GROUPS)
		return NULL;
	if (!w->out_memo && !(w->out_memo = mt_bigmem_zalloc(OUT_MEMO * sizeof *w->out_memo)))
		return NULL;
	uint64_t h = (uint64_t)(uintptr_t)raw->kept * 0x9e3779b97f4a7c15ULL;
	return &w->out_memo[h >> (64 - OUT_MEMO_BITS)];
}

static bool out_found(const struct out_memo *m, const struct mt_events_raw *raw, uint32_t gen,
		      const struct mt_events_cols *cols, unsigned ncols)
{
	if (m->kept != raw->kept || m->stamp != raw->kept_stamp || m->gen != gen || m->ncols != ncols)
		return false;
	for (unsigned g = 0; g < ncols; g++)
		if (m->ids[g] != cols[g].id || !cols[g].id)
			return false;
	return true;
}

/* A found record: its time, then the bytes kept. */
static void out_write(struct mt_events_writer *w, const struct mt_event *ev, const struct out_memo *m)
{
	uint8_t tb[11] = {0}, *tp = tb;
	if (ev->has_time) {
		tp = mt_pb_uint(tp, 1, mt_pb_zigzag((int64_t)(ev->time - w->last_time)));
		w->last_time = ev->time;
	}
	size_t tlen = (size_t)(tp - tb), blen = tlen + m->len;
	size_t rlen = 1 + mt_pb_varint_len(blen) + blen;
	/* room for whole-array copies: fixed sizes, no call into memcpy */
	uint8_t *out = (uint8_t *)reserve(w, rlen + 10 + sizeof tb + sizeof m->bytes);
	if (!out)
		return;
	uint8_t *o = mt_pb_varint(out, rlen);
	o = mt_pb_varint(mt_pb_tag(o, 2, MT_PB_LEN), blen);
	memcpy(o, tb, sizeof tb);
	o += tlen;
	memcpy(o, m->bytes, sizeof m->bytes);
	o += m->len;
	w->len += (size_t)(o - out);
}

/* Keeps a record written from raw's fields: the body after the time
 * field (body, fields then column ids, blen bytes). */
static void out_keep(struct out_memo *m, const struct mt_events_raw *raw, uint32_t gen,
		     const struct mt_events_cols *cols, unsigned ncols, const uint8_t *body, size_t blen)
{
	const uint8_t *p = body, *end = body + blen;
	uint64_t v;
	if (p < end && *p == (1 << 3 | MT_PB_VARINT) && (++p, !mt_pb_get_varint(&p, end, &v)))
		return;
	size_t n = (size_t)(end - p);
	m->kept = NULL;
	if (n > OUT_MEMO_BYTES)
		return;
	memcpy(m->bytes, p, n);
	m->len = (uint8_t)n;
	for (unsigned g = 0; g < ncols; g++)
		m->ids[g] = cols[g].id;
	m->ncols = (uint8_t)ncols;
	m->gen = gen;
	m->stamp = raw->kept_stamp;
	m->kept = raw->kept;
}

/* Events are most of a stream: encoded by hand (proto/mt-events.proto,
 * fields in number order, as protobuf-c writes them; the bytes are the
 * same) instead of through protobuf-c's reflective packer. */
static void write_binary(struct mt_events_writer *w, const struct mt_event *ev, const struct mt_events_raw *raw,
			 const struct mt_events_cols *cols, unsigned ncols)
{
	uint32_t extra[2 * MT_EVENT_MAX_EXTRA];
	unsigned nx = ev->nextra < MT_EVENT_MAX_EXTRA ? ev->nextra : MT_EVENT_MAX_EXTRA, ncx = 0;
	for (unsigned g = 0; g < ncols; g++)
		ncx += cols[g].n;
	/* A full table is reset before the event's strings, never between
	 * them: ids taken before a reset would name other strings after it. */
	struct mt_intern *t = w->strings;
	if (t->n + 1 + 2 * (nx + ncx) > INTERN_MAX) {
		Mt__Record rec = MT__RECORD__INIT;
		rec.record_case = MT__RECORD__RECORD_STRINGS_RESET;
		rec.strings_reset = true;
		put_record(w, &rec);
		intern_clear(t);
	}
	struct out_memo *om = out_slot(w, ev, raw, ncols);
	if (om && out_found(om, raw, t->gen, cols, ncols)) {
		w->out_found++;
		out_write(w, ev, om);
		return;
	}
	uint64_t epoch = ev->strings_epoch;
	uint32_t msg = ev->msg ? intern(w, ev->msg, MSG_MAX, epoch) : 0;
	for (unsigned i = 0; i < nx; i++) {
		extra[2 * i] = intern(w, ev->extra[i].key, EXTRA_KEY_MAX, epoch);
		/* value id 0: a column with no '=' */
		extra[2 * i + 1] = ev->extra[i].val ? intern(w, ev->extra[i].val, EXTRA_VAL_MAX, epoch) : 0;
	}
	uint8_t body[16 * 11], *p = body;
	const uint8_t *fields = body;
	if (raw && raw->ok && raw->prev_time == w->last_time && !nx && !ev->msg && raw->len <= sizeof body) {
		/* the fields as read: the bytes this writer would make (the
		 * reader checked), the time delta from the same base */
		fields = raw->body;
		p = body + raw->len;
		if (ev->has_time)
			w->last_time = ev->time;
		goto fields_done;
	}
	if (ev->has_time) {
		int64_t d = (int64_t)(ev->time - w->last_time);
		w->last_time = ev->time;
		p = mt_pb_uint(p, 1, mt_pb_zigzag(d));
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
	if (ev->cyc)
		p = mt_pb_uint(p, 15, ev->cyc);
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
fields_done:;
	size_t flen = (size_t)(p - body);
	uint8_t ids[10 * 2 * MT_EVENT_MAX_EXTRA], *q = ids;
	if (nx + ncx) {
		for (unsigned i = 0; i < 2 * nx; i++)
			q = mt_pb_varint(q, extra[i]);
		/* groups after the event's own columns, their ids as the
		 * columns' would be: interned in order, the same new strings */
		for (unsigned g = 0; g < ncols; g++) {
			struct cols_memo *m = cols_slot(w, cols[g].id);
			if (m && m->id == cols[g].id && m->gen == t->gen) {
				mt_pb_copy(q, m->bytes, m->len);
				q += m->len;
				continue;
			}
			uint8_t *at = q;
			for (unsigned i = 0; i < cols[g].n; i++) {
				q = mt_pb_varint(q, intern(w, cols[g].kv[i].key, EXTRA_KEY_MAX, 0));
				q = mt_pb_varint(q, cols[g].kv[i].val ? intern(w, cols[g].kv[i].val, EXTRA_VAL_MAX, 0) : 0);
			}
			if (m && (size_t)(q - at) <= COLS_MEMO_BYTES && !w->failed) {
				m->id = cols[g].id;
				m->gen = t->gen;
				m->len = (uint16_t)(q - at);
				memcpy(m->bytes, at, m->len);
			}
		}
	}
	/* Record { event = 2 } after its length, written in place: the body
	 * is the fields, then the extra ids packed (field 14) */
	size_t nids = (size_t)(q - ids);
	size_t blen = flen + (nx + ncx ? 1 + mt_pb_varint_len(nids) + nids : 0);
	size_t rlen = 1 + mt_pb_varint_len(blen) + blen; /* tag, length, body */
	uint8_t *out = (uint8_t *)reserve(w, rlen + 10);
	if (!out)
		return;
	uint8_t *o = mt_pb_varint(out, rlen);
	o = mt_pb_varint(mt_pb_tag(o, 2, MT_PB_LEN), blen);
	mt_pb_copy(o, fields, flen);
	o += flen;
	if (nx + ncx) {
		o = mt_pb_varint(mt_pb_tag(o, 14, MT_PB_LEN), nids); /* packed */
		mt_pb_copy(o, ids, nids);
		o += nids;
	}
	if (om && fields == raw->body && !w->failed)
		out_keep(om, raw, t->gen, cols, ncols, o - blen, blen);
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
	put(w, p, n);
}

void mt_events_write(struct mt_events_writer *w, const struct mt_event *ev)
{
	if (w->format == MT_EVENTS_BINARY)
		write_binary(w, ev, NULL, NULL, 0);
	else
		write_text(w, ev, NULL, NULL, 0);
}

void mt_events_write_cols(struct mt_events_writer *w, const struct mt_event *ev, const struct mt_events_raw *raw,
			  const struct mt_events_cols *cols, unsigned ncols)
{
	unsigned n = ev->nextra;
	for (unsigned g = 0; g < ncols; g++)
		n += cols[g].n;
	if (n > MT_EVENT_MAX_EXTRA) { /* cut short as mt_events_write cuts: the columns in one list */
		struct mt_kv kv[MT_EVENT_MAX_EXTRA];
		unsigned k = 0;
		for (unsigned i = 0; i < ev->nextra && k < MT_EVENT_MAX_EXTRA; i++)
			kv[k++] = ev->extra[i];
		for (unsigned g = 0; g < ncols; g++)
			for (unsigned i = 0; i < cols[g].n && k < MT_EVENT_MAX_EXTRA; i++)
				kv[k++] = cols[g].kv[i];
		struct mt_event e = *ev;
		e.extra = kv;
		e.nextra = k;
		mt_events_write(w, &e);
		return;
	}
	if (w->format == MT_EVENTS_BINARY)
		write_binary(w, ev, raw, cols, ncols);
	else
		write_text(w, ev, raw, cols, ncols);
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

void mt_events_write_error(struct mt_events_writer *w, const char *msg)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "error\t%s", msg);
	for (int i = 6; i < n && i < (int)sizeof line - 1; i++)
		if (line[i] == '\t' || line[i] == '\n')
			line[i] = ' ';
	mt_events_write_meta(w, line);
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


int mt_events_writer_finish(struct mt_events_writer *w, struct mt_err *err)
{
	flush(w);
	if (!w->failed && w->out && fflush(w->out) != 0) {
		w->failed = true;
		w->err_no = errno;
	}
	free(w->buf);
	w->buf = NULL;
	mt_bigmem_zfree(w->cols_memo, COLS_MEMO * sizeof *w->cols_memo);
	w->cols_memo = NULL;
	mt_bigmem_zfree(w->out_memo, OUT_MEMO * sizeof *w->out_memo);
	w->out_memo = NULL;
	intern_free(w->strings);
	w->strings = NULL;
	if (w->failed)
		return mt_err_set(err, MT_EIO, "writing events: %s", strerror(w->err_no));
	return 0;
}
