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
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/strtab.h"
#include "stream/limits.h"
#include "stream/textmemo.h"

static const char *const kind_names[MT_EV_KIND_COUNT] = {
	[MT_EV_CALL] = "call", [MT_EV_RETURN] = "return", [MT_EV_JUMP] = "jump",
	[MT_EV_SYSCALL] = "syscall", [MT_EV_SYSRET] = "sysret",
	[MT_EV_INTERRUPT] = "interrupt", [MT_EV_IRET] = "iret",
	[MT_EV_TRACE_START] = "trace-start", [MT_EV_TRACE_END] = "trace-end",
	[MT_EV_ERROR] = "error", [MT_EV_SAMPLE] = "sample", [MT_EV_POWER] = "power",
	[MT_EV_TX_ABORT] = "tx-abort", [MT_EV_SNAPSHOT] = "snapshot",
	[MT_EV_SWITCH_OUT] = "switch-out", [MT_EV_SWITCH_IN] = "switch-in",
	[MT_EV_PTWRITE] = "ptwrite", [MT_EV_MWAIT] = "mwait", [MT_EV_PWRE] = "pwre",
	[MT_EV_PWRX] = "pwrx", [MT_EV_EXSTOP] = "exstop", [MT_EV_VMCS] = "vmcs",
	[MT_EV_CFE] = "cfe", [MT_EV_TRIG] = "trig",
};

uint64_t mt_events_new_epoch(void)
{
	static _Atomic uint64_t last;
	return ++last;
}

const char *mt_event_kind_name(enum mt_event_kind k)
{
	return (unsigned)k < MT_EV_KIND_COUNT ? kind_names[k] : "unknown";
}

int mt_event_kind_parse(const char *s, size_t n)
{
	/* compared here, not by strncmp: a call a line was a twentieth of
	 * parsing an unsymbolized one */
	for (int k = 0; k < MT_EV_KIND_COUNT; k++) {
		const char *name = kind_names[k];
		if (!n || name[0] != s[0])
			continue;
		size_t i = 1;
		while (i < n && name[i] && name[i] == s[i])
			i++;
		if (i == n && !name[n])
			return k;
	}
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

/* Each digit's value plus one; 0: not a digit. */
static const uint8_t digit_of[256] = {
	['0'] = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
	['A'] = 11, 12, 13, 14, 15, 16,
	['a'] = 11, 12, 13, 14, 15, 16,
};

/* The fast path's view of a line: a bit per byte for each TAB and each
 * '=', found 16 bytes at a time, so a column's end and its key's end are a
 * bit scan each. Lines longer than this take the general path. */
#define FAST_LINE_MAX MT_EVENTS_COPY_MAX
struct seps {
	uint64_t tab[FAST_LINE_MAX / 64], eq[FAST_LINE_MAX / 64];
	size_t words, done; /* the line's words; those found so far */
	uint64_t nul;       /* NULs among them: not a line mt writes */
	const char *p;
	size_t n;
};

/* 64 bytes a word: whole words straight from the line, the last piece
 * through a zeroed copy (nothing is read past the line). *z gets the NUL
 * bytes' bits ORed in: a line with one takes the general path, which says
 * so (the reader checks for them no other way). */
#ifdef __SSE2__
/* The TAB and '=' bits of the 16 bytes at src; their NULs' bits ORed into *z. */
static inline void seps16(const char *src, unsigned *t, unsigned *e, unsigned *z)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)src);
	*t = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')));
	*e = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('=')));
	*z |= (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));
}

static inline void seps_word(const char *src, uint64_t *t, uint64_t *e, uint64_t *z)
{
	uint64_t tw = 0, ew = 0;
	unsigned zw = 0;
	for (unsigned j = 0; j < 64; j += 16) {
		unsigned a, b;
		seps16(src + j, &a, &b, &zw);
		tw |= (uint64_t)a << j;
		ew |= (uint64_t)b << j;
	}
	*t = tw;
	*e = ew;
	*z |= zw;
}
#else
static inline void seps_word(const char *src, uint64_t *t, uint64_t *e, uint64_t *z)
{
	uint64_t tw = 0, ew = 0, zw = 0;
	for (unsigned k = 0; k < 64; k++) {
		tw |= (uint64_t)(src[k] == '\t') << k;
		ew |= (uint64_t)(src[k] == '=') << k;
		zw |= (uint64_t)(src[k] == '\0') << k;
	}
	*t = tw;
	*e = ew;
	*z |= zw;
}
#endif

#ifdef __SSE2__
/* The bytes [from, n) of the last word, fewer than 64: 16 at a time, the
 * last piece from the 16 bytes that end the line (the masks shifted down
 * to it), so nothing past the line is read and nothing copied. */
static inline bool seps_tail(const char *p, size_t from, size_t n, uint64_t *t, uint64_t *e, uint64_t *z)
{
	if (n < 16)
		return false;
	uint64_t tw = 0, ew = 0;
	unsigned m, q, zw = 0; /* the overlap is the line's own bytes: its NULs are too */
	size_t j = from;
	for (; j + 16 <= n; j += 16) {
		seps16(p + j, &m, &q, &zw);
		tw |= (uint64_t)m << (j - from);
		ew |= (uint64_t)q << (j - from);
	}
	if (j < n) {
		unsigned left = (unsigned)(n - j); /* 1..15 bytes: the top of the last 16 */
		seps16(p + n - 16, &m, &q, &zw);
		tw |= (uint64_t)(m >> (16 - left)) << (j - from);
		ew |= (uint64_t)(q >> (16 - left)) << (j - from);
	}
	*t = tw;
	*e = ew;
	*z |= zw;
	return true;
}
#else
static inline bool seps_tail(const char *p, size_t from, size_t n, uint64_t *t, uint64_t *e, uint64_t *z)
{
	(void)p, (void)from, (void)n, (void)t, (void)e, (void)z;
	return false;
}
#endif

/* The last piece through a zeroed copy: the copy's zeros are no NULs. */
static void seps_copied(const char *p, size_t from, size_t n, uint64_t *t, uint64_t *e, uint64_t *z)
{
	char tmp[64] = {0};
	uint64_t zw = 0;
	memcpy(tmp, p + from, n - from);
	seps_word(tmp, t, e, &zw);
	*z |= zw & ((1ULL << (n - from)) - 1);
}

/* Words are found as the parse reaches them: a line whose tail the memo
 * has is not scanned past the tail's start. */
static void seps_more(struct seps *s, size_t w)
{
	size_t whole = s->n / 64;
	for (; s->done <= w; s->done++) {
		size_t d = s->done;
		if (d < whole)
			seps_word(s->p + 64 * d, &s->tab[d], &s->eq[d], &s->nul);
		else if (!seps_tail(s->p, 64 * d, s->n, &s->tab[d], &s->eq[d], &s->nul))
			seps_copied(s->p, 64 * d, s->n, &s->tab[d], &s->eq[d], &s->nul);
	}
}

/* Word w (below words) found. */
static inline void seps_need(struct seps *s, size_t w)
{
	if (w >= s->done)
		seps_more(s, w);
}

/* The first word found now: all of a short line. */
static inline void seps_start(struct seps *s, const char *p, size_t n)
{
	s->p = p;
	s->n = n;
	s->words = (n + 63) / 64;
	s->done = 1;
	s->nul = 0;
	if (n >= 64)
		seps_word(p, &s->tab[0], &s->eq[0], &s->nul);
	else if (!seps_tail(p, 0, n, &s->tab[0], &s->eq[0], &s->nul))
		seps_copied(p, 0, n, &s->tab[0], &s->eq[0], &s->nul);
}

/* The first bit of m (s's tab or eq) at or after from, or n: none. */
static inline size_t next_sep(struct seps *s, const uint64_t *m, size_t from)
{
	size_t w = from >> 6;
	if (w >= s->words)
		return s->n;
	seps_need(s, w);
	uint64_t x = m[w] & (~0ULL << (from & 63));
	while (!x) {
		if (++w >= s->words)
			return s->n;
		seps_need(s, w);
		x = m[w];
	}
	return w * 64 + (size_t)__builtin_ctzll(x);
}

/* Digits filling [s, e), at most max of them (then no overflow is
 * possible; longer numbers and anything else go to the general path). */
static inline bool span_num(const char *s, const char *e, unsigned base, size_t max, uint64_t *out)
{
	if (s == e || (size_t)(e - s) > max)
		return false;
	uint64_t v = 0;
	for (; s < e; s++) {
		unsigned d = digit_of[(unsigned char)*s];
		if (!d || d > base)
			return false;
		v = v * base + d - 1;
	}
	*out = v;
	return true;
}

#if defined(__SSE2__) && defined(__x86_64__)
/* Up to 16 digits ending at e in one vector (the 16 bytes before e must be
 * the line's): the bytes before the number masked off by keep. */
static const unsigned char keep_last[32] = {
	[16] = 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

static inline bool hex16(const char *e, size_t len, uint64_t *out)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(e - 16));
	__m128i keep = _mm_loadu_si128((const __m128i *)(const void *)(keep_last + len));
	__m128i l = _mm_or_si128(x, _mm_set1_epi8(0x20)); /* letters lowercase */
	__m128i dig = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
	__m128i let = _mm_and_si128(_mm_cmpgt_epi8(l, _mm_set1_epi8('a' - 1)), _mm_cmplt_epi8(l, _mm_set1_epi8('f' + 1)));
	int k = _mm_movemask_epi8(keep);
	if ((_mm_movemask_epi8(_mm_or_si128(dig, let)) & k) != k)
		return false;
	__m128i nib = _mm_add_epi8(_mm_and_si128(x, _mm_set1_epi8(0x0f)), _mm_and_si128(let, _mm_set1_epi8(9)));
	nib = _mm_and_si128(nib, keep);
	/* each pair of digits a byte, the first the high nibble */
	__m128i pairs = _mm_and_si128(_mm_or_si128(_mm_slli_epi16(nib, 4), _mm_srli_epi16(nib, 8)), _mm_set1_epi16(0xff));
	*out = __builtin_bswap64((uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pairs, pairs)));
	return true;
}

static inline bool dec16(const char *e, size_t len, uint64_t *out)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(e - 16));
	__m128i keep = _mm_loadu_si128((const __m128i *)(const void *)(keep_last + len));
	__m128i dig = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
	int k = _mm_movemask_epi8(keep);
	if ((_mm_movemask_epi8(dig) & k) != k)
		return false;
	__m128i nib = _mm_and_si128(_mm_and_si128(x, _mm_set1_epi8(0x0f)), keep);
	/* pairs, fours, eights: the first of each the more significant */
	__m128i p = _mm_add_epi16(_mm_mullo_epi16(_mm_and_si128(nib, _mm_set1_epi16(0xff)), _mm_set1_epi16(10)),
				  _mm_srli_epi16(nib, 8));
	__m128i q = _mm_madd_epi16(p, _mm_set1_epi32(1 << 16 | 100));
	__m128i r = _mm_madd_epi16(_mm_packs_epi32(q, q), _mm_set1_epi32(1 << 16 | 10000));
	uint64_t hi = (uint32_t)_mm_cvtsi128_si32(r), lo = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(r, 4));
	*out = hi * 100000000 + lo;
	return true;
}

/* Digits filling [s, e) as span_num reads them; lo: where the line starts. */
static inline bool span_dec(const char *lo, const char *s, const char *e, size_t max, uint64_t *out)
{
	size_t len = (size_t)(e - s);
	if (len && len <= 16 && len <= max && e - lo >= 16)
		return dec16(e, len, out);
	return span_num(s, e, 10, max, out);
}

static inline bool span_hexnum(const char *lo, const char *s, const char *e, uint64_t *out)
{
	size_t len = (size_t)(e - s);
	if (len && len <= 16 && e - lo >= 16)
		return hex16(e, len, out);
	return span_num(s, e, 16, 16, out);
}
#else
static inline bool span_dec(const char *lo, const char *s, const char *e, size_t max, uint64_t *out)
{
	(void)lo;
	return span_num(s, e, 10, max, out);
}

static inline bool span_hexnum(const char *lo, const char *s, const char *e, uint64_t *out)
{
	(void)lo;
	return span_num(s, e, 16, 16, out);
}
#endif

/* No uppercase letter among len hex digits: every one has bit 5 (0x20),
 * two words at a time where there are eight. */
static inline bool hex_lower(const char *s, size_t len)
{
	if (len >= 8) {
		uint64_t a, b;
		memcpy(&a, s, 8);
		memcpy(&b, s + len - 8, 8);
		return (a & b & 0x2020202020202020ULL) == 0x2020202020202020ULL;
	}
	for (size_t i = 0; i < len; i++)
		if (!(s[i] & 0x20))
			return false;
	return true;
}

/* "0x" and hex digits; *canon (when it is still true) false unless they
 * are as mt_put_hex writes them (lowercase, no leading zero). */
static inline bool span_hex(const char *lo, const char *s, const char *e, uint64_t *out, bool *canon)
{
	if (e - s < 3 || s[0] != '0' || s[1] != 'x' || !span_hexnum(lo, s + 2, e, out))
		return false;
	size_t len = (size_t)(e - s - 2);
	*canon = *canon && (s[2] != '0' || len == 1) && hex_lower(s + 2, len);
	return true;
}

/* Decimal digits as mt_put_dec writes them: no leading zero. */
static inline bool dec_canon(const char *s, const char *e)
{
	return e - s == 1 || *s != '0';
}

/* canon stays true while c holds; c is not looked at once it is false */
#define CANON(c) (canon = canon && (c))

/* The NULs a parsed line gets: at its TABs before limit, and its keys' '='. */
static int put_nuls(char *line, const struct seps *sp, size_t limit, char *const *eqs, unsigned neq)
{
	for (size_t w = 0; w < sp->done && w * 64 < limit; w++) { /* the parse found every TAB before limit */
		uint64_t x = sp->tab[w];
		if (limit - w * 64 < 64)
			x &= (1ULL << (limit - w * 64)) - 1;
		for (; x; x &= x - 1)
			line[w * 64 + (size_t)__builtin_ctzll(x)] = '\0';
	}
	for (unsigned i = 0; i < neq; i++)
		*eqs[i] = '\0';
	return 1;
}

/* At the line's first extra column: a tail the memo has gives the event
 * its columns (true); else *hash is the tail's, for keeping it. The hash
 * is of the event's addresses, not of the tail's bytes (a fifth of a
 * line's parse): a symbolized stream's tail is their symbols; the bytes
 * are compared in any case. */
static bool tail_starts(struct mt_textmemo *memo, const char *line, size_t n, size_t start, struct mt_event *ev,
			uint64_t *hash)
{
	uint64_t h = ev->from ^ ev->to * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(n - start) << 48;
	h = (h ^ h >> 33) * 0xff51afd7ed558ccdULL; /* every bit into the top ones */
	h = (h ^ h >> 33) * 0xc4ceb9fe1a85ec53ULL;
	*hash = h ^ h >> 33;
	const struct mt_textmemo_tail *t = mt_textmemo_find(memo, line + start, n - start, *hash);
	if (!t)
		return false;
	ev->extra = t->kv;
	ev->nextra = t->n;
	if (!ev->msg) { /* msg is in the line, not kept */
		ev->strings_epoch = memo->epoch;
		ev->extra_id = t->id;
	}
	return true;
}

/* The writer's order of the columns with fields of their own
 * (events_write.c write_text): a line has them in it, once each, before
 * any extra column, or the writer would write it otherwise. */
enum { RANK_CPU = 1, RANK_INSN, RANK_CYC, RANK_COND, RANK_ASYNC, RANK_CBR, RANK_OFF, RANK_EXTRA };

/* Most lines are calls and returns: those two by one comparison each. */
static inline int kind_of(const char *s, size_t n)
{
	if (n == 4 && !memcmp(s, "call", 4))
		return MT_EV_CALL;
	if (n == 6 && !memcmp(s, "return", 6))
		return MT_EV_RETURN;
	return mt_event_kind_parse(s, n);
}

bool mt_events_parse_time(const char *s, size_t len, uint64_t *time, bool *canon)
{
	if (!span_dec(s, s, s + len, 19, time))
		return false;
	*canon = dec_canon(s, s + len);
	return true;
}

/* A parsed line's end: the copy of its bytes (copy non-NULL and the line
 * exactly what the writer writes for its event), then its NULs. */
static int parse_done(char *line, size_t n, const struct seps *sp, size_t limit, char *const *eqs, unsigned neq,
		      bool canon, char *copy, bool *copied, bool cut)
{
	if (copy && canon)
		memcpy(copy, line, n);
	if (copied)
		*copied = copy && canon;
	/* NULs only where the event has strings in the line (msg, the extra
	 * columns): the fields' numbers are parsed, a memo's tail is its own */
	return cut ? put_nuls(line, sp, limit, eqs, neq) : 1;
}

/* The line as mt's writers write it: columns found by the bit masks, each
 * parsed once. Anything else (a CR, long numbers, empty columns, a bad
 * value, a long line) returns 0 having changed nothing, for the general
 * parser, which also has the error messages. NULs are put in only once the
 * whole line has passed. copy (FAST_LINE_MAX bytes, or NULL): the line's
 * bytes before the NULs, when they are what mt_events_write writes for the
 * event (*copied: whether they were copied). */
static int parse_fast(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_textmemo *memo,
		      char *copy, bool *copied)
{
	if (n > FAST_LINE_MAX || line[n - 1] == '\r')
		return 0;
	struct seps sp;
	seps_start(&sp, line, n);
	size_t t[6], at = 0;
	for (int i = 0; i < 6; i++) {
		t[i] = next_sep(&sp, sp.tab, at);
		if (t[i] == n && i < 5)
			return 0;
		at = t[i] + 1;
	}
	uint64_t v;
	bool canon = copy != NULL; /* so far as the writer would write it (wanted for a copy) */
	ev->time = 0;
	ev->has_time = false;
	if (!(t[0] == 1 && line[0] == '-')) {
		bool time_canon;
		if (!mt_events_parse_time(line, t[0], &ev->time, &time_canon))
			return 0;
		CANON(time_canon);
		ev->has_time = true;
	}
	const char *pid = line + t[0] + 1, *tid = line + t[1] + 1;
	if (!span_dec(line, pid, line + t[1], 10, &v) || v > UINT32_MAX)
		return 0;
	ev->pid = (uint32_t)v;
	if (!span_dec(line, tid, line + t[2], 10, &v) || v > UINT32_MAX)
		return 0;
	ev->tid = (uint32_t)v;
	CANON(dec_canon(pid, line + t[1]) && dec_canon(tid, line + t[2]));
	int k = kind_of(line + t[2] + 1, t[3] - t[2] - 1);
	if (k < 0 || !span_hex(line, line + t[3] + 1, line + t[4], &ev->from, &canon) ||
	    !span_hex(line, line + t[4] + 1, line + t[5], &ev->to, &canon))
		return 0;
	ev->kind = (enum mt_event_kind)k;
	ev->cpu = -1;
	ev->insn = ev->cyc = 0;
	ev->offset = MT_NO_OFFSET;
	ev->cbr = 0;
	ev->cond = ev->async = false;
	ev->msg = NULL;
	ev->extra = kv;
	ev->strings_epoch = 0;
	ev->extra_id = 0;
	char *eqs[MT_EVENT_MAX_EXTRA]; /* the '=' of each key=value: NULs later */
	unsigned nx = 0, neq = 0, rank = 0;
	bool has_cbr = false;
	/* the extra columns from the first on (the tail), when nothing else
	 * comes among them: looked up in the memo, kept there if new */
	if (memo && !mt_textmemo_active(memo))
		memo = NULL;
	size_t tail = 0;
	bool tail_pure = false;
	uint64_t tail_hash = 0;
	/* the TABs after the sixth in turn: a cursor over the mask's bits */
	size_t tw = t[5] >> 6;
	uint64_t tbits = t[5] < n ? sp.tab[tw] & (~0ULL << (t[5] & 63)) & ~(1ULL << (t[5] & 63)) : 0;
	for (size_t col = t[5]; col < n;) { /* col: the TAB before the column */
		size_t start = col + 1, stop = n;
		if (start >= n)
			return 0; /* a TAB ends the line: an empty column */
		while (!tbits && ++tw < sp.words) {
			seps_need(&sp, tw);
			tbits = sp.tab[tw];
		}
		if (tbits) {
			stop = tw * 64 + (size_t)__builtin_ctzll(tbits);
			tbits &= tbits - 1;
		}
		/* its key's '=': mostly in the same word as its start */
		seps_need(&sp, start >> 6);
		uint64_t ebits = sp.eq[start >> 6] >> (start & 63);
		size_t eq = ebits ? start + (size_t)__builtin_ctzll(ebits) : next_sep(&sp, sp.eq, start);
		col = stop;
		char *key = line + start;
		if (eq == start || stop == start)
			return 0; /* an empty column or key: the general path drops it */
		if (nx == MT_EVENT_MAX_EXTRA)
			return 0;
		/* the tail starts: the memo keeps only tails the writer writes
		 * unchanged (extras only, keys it does not cut short) */
		bool at_tail = !nx && memo && !sp.nul; /* a NUL so far: not taken in the end */
		if (eq >= stop) { /* a key alone */
			if (at_tail && tail_starts(memo, line, n, start, ev, &tail_hash))
				return parse_done(line, n, &sp, start, eqs, neq, canon && (k == MT_EV_POWER) == has_cbr,
						  copy, copied, ev->msg);
			kv[nx++] = (struct mt_kv){key, NULL};
			if (nx == 1 && memo)
				tail = start, tail_pure = true;
			if (stop - start > EXTRA_KEY_MAX)
				canon = tail_pure = false;
			rank = RANK_EXTRA;
			continue;
		}
		bool field = true; /* a column with a field of its own */
		unsigned r = 0;
		char *val = line + eq + 1, *vend = line + stop;
		switch (eq - start) { /* the columns with fields of their own */
		case 3:
			if (!memcmp(key, "cpu", 3)) {
				if (!span_dec(line, val, vend, 10, &v) || v > INT32_MAX)
					return 0;
				ev->cpu = (int32_t)v;
				r = RANK_CPU;
				CANON(dec_canon(val, vend));
			} else if (!memcmp(key, "off", 3)) {
				if (!span_hex(line, val, vend, &ev->offset, &canon))
					return 0;
				r = RANK_OFF;
				CANON(ev->offset != MT_NO_OFFSET);
			} else if (!memcmp(key, "cbr", 3)) {
				if (!span_dec(line, val, vend, 10, &v) || v > UINT32_MAX)
					return 0;
				ev->cbr = (uint32_t)v;
				r = RANK_CBR;
				CANON(dec_canon(val, vend));
				has_cbr = true;
			} else if (!memcmp(key, "msg", 3)) {
				ev->msg = val;
				canon = false; /* the writer may clean or cut it */
			} else if (!memcmp(key, "cyc", 3)) {
				if (!span_dec(line, val, vend, 19, &ev->cyc))
					return 0;
				r = RANK_CYC;
				CANON(ev->cyc && dec_canon(val, vend));
			} else {
				goto extra;
			}
			break;
		case 4:
			if (!memcmp(key, "insn", 4)) {
				if (!span_dec(line, val, vend, 19, &ev->insn))
					return 0;
				r = RANK_INSN;
				CANON(ev->insn && dec_canon(val, vend));
			} else if (!memcmp(key, "cond", 4)) {
				if (vend - val != 1 || (*val != '0' && *val != '1'))
					return 0;
				ev->cond = *val == '1';
				r = RANK_COND;
				CANON(ev->cond);
			} else {
				goto extra;
			}
			break;
		case 5:
			if (!memcmp(key, "async", 5)) {
				if (vend - val != 1 || (*val != '0' && *val != '1'))
					return 0;
				ev->async = *val == '1';
				r = RANK_ASYNC;
				CANON(ev->async);
				break;
			}
			goto extra;
		default:
		extra:
			if (at_tail && tail_starts(memo, line, n, start, ev, &tail_hash))
				return parse_done(line, n, &sp, start, eqs, neq, canon && (k == MT_EV_POWER) == has_cbr,
						  copy, copied, ev->msg);
			kv[nx++] = (struct mt_kv){key, val};
			if (nx == 1 && memo)
				tail = start, tail_pure = true;
			if (eq - start > EXTRA_KEY_MAX)
				canon = tail_pure = false;
			r = RANK_EXTRA;
			field = false;
			break;
		}
		if (field)
			tail_pure = false; /* among the extras: not kept */
		/* each field once, in the writer's order, before the extras */
		CANON(r > rank || (r == RANK_EXTRA && rank == RANK_EXTRA));
		rank = r > rank ? r : rank;
		eqs[neq++] = line + eq;
	}
	if (sp.nul)
		return 0;
	ev->nextra = nx;
	if (tail_pure && !ev->msg) {
		const struct mt_textmemo_tail *kept = mt_textmemo_keep(memo, line + tail, n - tail, tail_hash, kv, nx);
		if (kept) {
			ev->extra = kept->kv;
			ev->strings_epoch = memo->epoch;
			ev->extra_id = kept->id;
		}
	}
	return parse_done(line, n, &sp, n, eqs, neq, canon && (k == MT_EV_POWER) == has_cbr, copy, copied,
			  ev->msg || (nx && ev->extra == kv));
}

int mt_events_parse_fast(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_textmemo *memo,
			 char *copy, bool *copied)
{
	if (copied)
		*copied = false;
	return n && line[0] != '#' && parse_fast(line, n, ev, kv, memo, copy, copied) == 1;
}

int mt_events_parse_line(char *line, struct mt_event *ev, struct mt_kv *kv, struct mt_err *err)
{
	return mt_events_parse_line_n(line, strlen(line), ev, kv, err);
}

int mt_events_parse_line_n(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_err *err)
{
	return mt_events_parse_line_memo(line, n, ev, kv, NULL, err);
}

int mt_events_parse_line_memo(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_textmemo *memo,
			      struct mt_err *err)
{
	return mt_events_parse_line_copy(line, n, ev, kv, memo, NULL, NULL, err);
}

int mt_events_parse_line_copy(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_textmemo *memo,
			      char *copy, bool *copied, struct mt_err *err)
{
	if (copied)
		*copied = false;
	if (n && line[0] != '#' && parse_fast(line, n, ev, kv, memo, copy, copied))
		return 1;
	if (memchr(line, '\0', n)) /* the fast path takes no line with one */
		return mt_err_set(err, MT_EFORMAT, "a NUL byte in a text line");
	return mt_events_parse_line_general(line, n, ev, kv, err);
}

int mt_events_parse_line_general(char *line, size_t n, struct mt_event *ev, struct mt_kv *kv, struct mt_err *err)
{
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
		else if (!strcmp(p, "cyc"))
			bad = parse_u64(val, vend, 10, &ev->cyc);
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

