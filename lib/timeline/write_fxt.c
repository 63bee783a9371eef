/* write_fxt: the timeline in the Fuchsia trace format (perfetto-output.md
 * section 7), as magic-trace's viewer reads it: a string table of 32767
 * slots reused oldest first, thread references in 255 slots, duration
 * complete events when the end is known (else begin and end), instants as
 * zero-length complete events, the CPU frequency as a counter. */
#define _GNU_SOURCE
#include "timeline/writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#define FXT_MAGIC 0x0016547846040010ULL
#define FXT_STRINGS 32767
#define FXT_STRING_MAX 31999

static void fxt_words(struct mt_pftrace *pf, const uint64_t *w, size_t n)
{
	mt_tl_out(pf, w, n * 8);
}

static void fxt_padded(struct mt_pftrace *pf, const char *s, size_t n)
{
	static const uint8_t zero[8];
	mt_tl_out(pf, s, n);
	mt_tl_out(pf, zero, (8 - n % 8) % 8);
}

/* The string-to-slot map: open addressing by the interned pointer, with
 * exactly the strings the slots hold (an evicted string's entry goes), so
 * it is never more than a quarter full, whatever the number of names. */
#define FXT_MAP_BITS 17

/* Multiplied: names from one array sit a few bytes apart, and homes one
 * after another made clusters as long as the table's live part. */
static size_t fxt_home(const char *s)
{
	return (size_t)((uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ULL >> (64 - FXT_MAP_BITS));
}

/* Removes s's entry (linear probing: the entries after it that could sit
 * in the hole move back into it, so no lookup stops early). */
static void fxt_map_remove(struct mt_pftrace *pf, const char *s)
{
	size_t mask = pf->fxt_map.cap - 1, i = fxt_home(s);
	while (pf->fxt_map.k[i] && pf->fxt_map.k[i] != s)
		i = (i + 1) & mask;
	if (!pf->fxt_map.k[i])
		return;
	for (size_t j = (i + 1) & mask; pf->fxt_map.k[j]; j = (j + 1) & mask) {
		size_t h = fxt_home(pf->fxt_map.k[j]);
		/* the entry at j may move to i unless its home lies in (i, j] */
		if (i <= j ? h > i && h <= j : h > i || h <= j)
			continue;
		pf->fxt_map.k[i] = pf->fxt_map.k[j];
		pf->fxt_map.v[i] = pf->fxt_map.v[j];
		i = j;
	}
	pf->fxt_map.k[i] = NULL;
}

/* The string-table index of s, defining (or redefining) a slot when new:
 * past 32767 strings the oldest slot is reused, which FXT allows. */
static uint16_t fxt_string(struct mt_pftrace *pf, const char *s)
{
	if (!pf->fxt_str) {
		pf->fxt_str = calloc(FXT_STRINGS + 1, sizeof *pf->fxt_str);
		pf->fxt_map.cap = 1u << FXT_MAP_BITS;
		pf->fxt_map.k = calloc(pf->fxt_map.cap, sizeof *pf->fxt_map.k);
		pf->fxt_map.v = calloc(pf->fxt_map.cap, sizeof *pf->fxt_map.v);
		pf->fxt_next = 1;
		if (!pf->fxt_str || !pf->fxt_map.k || !pf->fxt_map.v) {
			pf->oom = true;
			return 0;
		}
	}
	size_t mask = pf->fxt_map.cap - 1, j = fxt_home(s);
	for (; pf->fxt_map.k[j]; j = (j + 1) & mask)
		if (pf->fxt_map.k[j] == s)
			return pf->fxt_map.v[j];
	uint16_t idx = pf->fxt_next;
	pf->fxt_next = pf->fxt_next == FXT_STRINGS ? 1 : pf->fxt_next + 1;
	if (pf->fxt_str[idx]) {
		fxt_map_remove(pf, pf->fxt_str[idx]);
		for (j = fxt_home(s); pf->fxt_map.k[j]; j = (j + 1) & mask)
			;
	}
	pf->fxt_str[idx] = s;
	pf->fxt_map.k[j] = s;
	pf->fxt_map.v[j] = idx;
	/* FXT strings are UTF-8: a bad byte becomes U+FFFD, a cut never
	 * splits a sequence */
	char *fixed = NULL;
	size_t cap = 0;
	const char *t = mt_utf8_fixed(s, &fixed, &cap);
	if (!t)
		t = "";
	size_t len = strlen(t);
	if (len > FXT_STRING_MAX) {
		len = FXT_STRING_MAX;
		while (len && ((unsigned char)t[len] & 0xc0) == 0x80)
			len--;
	}
	uint64_t h = 2 | ((uint64_t)(1 + (len + 7) / 8) << 4) | ((uint64_t)idx << 16) | ((uint64_t)len << 32);
	fxt_words(pf, &h, 1);
	fxt_padded(pf, t, len);
	free(fixed);
	return idx;
}

static void fxt_begin_file(struct mt_pftrace *pf)
{
	static const char provider[] = "mt";
	uint64_t w[2];
	w[0] = FXT_MAGIC;
	fxt_words(pf, w, 1);
	w[0] = 0 | ((uint64_t)(1 + (sizeof provider - 1 + 7) / 8) << 4) | (1ULL << 16) |
	       ((uint64_t)(sizeof provider - 1) << 52); /* provider info, id 0 */
	fxt_words(pf, w, 1);
	fxt_padded(pf, provider, sizeof provider - 1);
	w[0] = 0 | (1ULL << 4) | (2ULL << 16); /* provider section, id 0 */
	fxt_words(pf, w, 1);
	w[0] = 1 | (2ULL << 4); /* initialization: ticks are nanoseconds */
	w[1] = 1000000000ULL;
	fxt_words(pf, w, 2);
}

/* Process and thread kernel objects: koid = pid for the process, and
 * 1 << 32 | tid for the thread (the reader keeps the low 32 bits). */
static void fxt_thread_objects(struct mt_pftrace *pf, const struct pthread *t, bool first_of_pid)
{
	char name[256];
	if (first_of_pid) {
		const char *c = mt_tl_comm(pf, t->pid, t->pid);
		snprintf(name, sizeof name, "%s%s[pid=%u]", c ? c : "", c && *c ? " " : "", t->pid);
		uint64_t w[2] = {7 | (2ULL << 4) | (1ULL << 16) | ((uint64_t)fxt_string(pf, mt_tl_intern(pf, name)) << 24),
				 t->pid};
		fxt_words(pf, w, 2);
	}
	const char *c = mt_tl_comm(pf, t->pid, t->tid);
	snprintf(name, sizeof name, "%s", c && *c ? c : "main");
	uint16_t nref = fxt_string(pf, mt_tl_intern(pf, name)), pref = fxt_string(pf, mt_tl_intern(pf, "process"));
	uint64_t w[4] = {7 | (4ULL << 4) | (2ULL << 16) | ((uint64_t)nref << 24) | (1ULL << 40),
			 (1ULL << 32) | t->tid, 8 | (2ULL << 4) | ((uint64_t)pref << 16), t->pid};
	fxt_words(pf, w, 4);
}

static uint8_t fxt_thread_ref(struct mt_pftrace *pf, size_t k)
{
	for (unsigned i = 1; i < 256; i++)
		if (pf->fxt_thread_slot[i] == k + 1)
			return (uint8_t)i;
	unsigned slot = 1 + pf->fxt_next_thread % 255;
	pf->fxt_next_thread++;
	pf->fxt_thread_slot[slot] = (uint32_t)k + 1;
	const struct pthread *t = pf->threads[k];
	uint64_t w[3] = {3 | (3ULL << 4) | ((uint64_t)slot << 16), t->pid, (1ULL << 32) | t->tid};
	fxt_words(pf, w, 3);
	return (uint8_t)slot;
}

/* A complete event (slices, and zero-length ones for instants) or a counter. */
static void fxt_event(struct mt_pftrace *pf, size_t k, int type, uint64_t ticks, uint64_t end, const char *name,
		      uint64_t ip, bool counter, double value, const char *file, int32_t line)
{
	/* a counter: CPU's frequency (id 1, argument "freq (MHz)") or
	 * another (id 2, 3...: argument "value") */
	unsigned cid = counter ? mt_tl_counter_of(name) : 0;
	uint16_t nref = fxt_string(pf, name ? name : pf->fx_empty), cref = fxt_string(pf, pf->fx_empty);
	uint16_t aref = 0;
	if (ip)
		aref = fxt_string(pf, pf->fx_address);
	if (counter)
		aref = fxt_string(pf, cid == MT_TL_COUNTER_CPU ? pf->fx_freq : pf->fx_value);
	uint16_t fref = 0, fvref = 0, lref = 0;
	if (file) {
		fref = fxt_string(pf, pf->fx_file);
		fvref = fxt_string(pf, file);
		lref = fxt_string(pf, pf->fx_line);
	}
	uint8_t tref = fxt_thread_ref(pf, k);
	uint64_t w[10];
	size_t n = 1, nargs = 0;
	w[n++] = ticks;
	if (ip || counter) {
		w[n++] = (uint64_t)(counter ? 5 : 7) | (2ULL << 4) | ((uint64_t)aref << 16);
		if (counter)
			memcpy(&w[n++], &value, 8);
		else
			w[n++] = ip;
		nargs++;
	}
	if (file) {
		w[n++] = 6 | (1ULL << 4) | ((uint64_t)fref << 16) | ((uint64_t)fvref << 32); /* string arg */
		w[n++] = 1 | (1ULL << 4) | ((uint64_t)lref << 16) | ((uint64_t)(uint32_t)line << 32); /* int32 */
		nargs += 2;
	}
	if (type == 4)
		w[n++] = end;
	if (type == 1)
		w[n++] = cid + 1; /* counter id */
	w[0] = 4 | ((uint64_t)n << 4) | ((uint64_t)type << 16) | ((uint64_t)nargs << 20) | ((uint64_t)tref << 24) |
	       ((uint64_t)cref << 32) | ((uint64_t)nref << 48);
	fxt_words(pf, w, n);
}

static void fxt_head(struct mt_pftrace *pf)
{
	pf->fx_empty = mt_tl_intern(pf, "");
	pf->fx_address = mt_tl_intern(pf, "address");
	pf->fx_freq = mt_tl_intern(pf, "freq (MHz)");
	pf->fx_value = mt_tl_intern(pf, "value");
	pf->fx_file = mt_tl_intern(pf, "file");
	pf->fx_line = mt_tl_intern(pf, "line");
	pf->fx_cpu = mt_tl_intern(pf, "CPU");
	fxt_begin_file(pf);
}

static void fxt_thread(struct mt_pftrace *pf, struct pthread *t, bool first)
{
	fxt_thread_objects(pf, t, first);
}

/* duration complete when the end is known, else begin now and end later */
static void fxt_slice_begin(struct seqw *w, uint64_t time, const char *name, uint64_t ip)
{
	fxt_event(w->pf, w->k, w->end_known ? 4 : 2, time - w->base, w->json_end - w->base, name, ip, false, 0,
		  w->file, w->line);
}

static void fxt_slice_end(struct seqw *w, uint64_t time, const char *name)
{
	(void)name;
	fxt_event(w->pf, w->k, 3, time - w->base, 0, w->pf->fx_empty, 0, false, 0, NULL, 0);
}

static void fxt_instant(struct seqw *w, uint64_t time, const char *name)
{
	uint64_t ticks = time - w->base;
	fxt_event(w->pf, w->k, 4, ticks, ticks, name, 0, false, 0, NULL, 0);
}

static void fxt_sample(struct seqw *w, uint64_t time, const char *name, uint32_t k, uint64_t ip)
{
	(void)k;
	uint64_t ticks = time - w->base;
	fxt_event(w->pf, w->k, 4, ticks, ticks, name, ip, false, 0, NULL, 0);
}

static void fxt_counter(struct seqw *w, uint64_t time, unsigned k, double value)
{
	const char *name = k == MT_TL_COUNTER_CPU ? w->pf->fx_cpu : mt_tl_intern(w->pf, mt_tl_counter_names[k]);
	fxt_event(w->pf, w->k, 1, time - w->base, 0, name, 0, true, value, NULL, 0);
}

const struct mt_tl_ops mt_tl_fxt = {
	.name = "fxt", .complete_slices = true, .head = fxt_head, .thread = fxt_thread,
	.slice_begin = fxt_slice_begin, .slice_end = fxt_slice_end, .instant = fxt_instant,
	.sample = fxt_sample, .counter = fxt_counter,
};
