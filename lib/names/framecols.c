/* framecols: see framecols.h. */
#define _GNU_SOURCE
#include "names/framecols.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 4096
#define MAX_COLS 34 /* the frame, 32 inlined functions, its line */

struct entry {
	uint64_t ip, gen;   /* gen 0: empty */
	uint64_t event;     /* the event that last asked for it: held until the next one */
	uint32_t pid;
	bool caller;
	unsigned n;
	struct mt_kv kv[MAX_COLS];
	char *text;         /* every value, one allocation */
};

struct mt_framecols {
	struct mt_sym *sym;
	bool inlines, lines;
	uint64_t gen, event;
	struct entry *slots;
	/* frames of this event whose slot another of its frames holds:
	 * looked up into these, not kept */
	struct entry spare[MT_EVENT_MAX_EXTRA];
	size_t nspare;
	struct mt_sym_result res;
};

struct mt_framecols *mt_framecols_new(struct mt_sym *sym, bool inlines, bool lines)
{
	struct mt_framecols *c = calloc(1, sizeof *c);
	if (c && !(c->slots = calloc(SLOTS, sizeof *c->slots))) {
		free(c);
		c = NULL;
	}
	if (c) {
		c->sym = sym;
		c->inlines = inlines;
		c->lines = lines;
		c->gen = 1;
		c->event = 1;
	}
	return c;
}

void mt_framecols_free(struct mt_framecols *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < SLOTS; i++)
		free(c->slots[i].text);
	for (size_t i = 0; i < MT_EVENT_MAX_EXTRA; i++)
		free(c->spare[i].text);
	free(c->slots);
	free(c);
}

void mt_framecols_forget(struct mt_framecols *c)
{
	c->gen++;
}

void mt_framecols_next_event(struct mt_framecols *c)
{
	c->event++;
	c->nspare = 0;
}

/* Appends one value to the entry's texts (a memstream's buffer): its
 * offset, or -1. */
static long put(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static long put(FILE *f, const char *fmt, ...)
{
	long at = ftell(f);
	va_list ap;
	va_start(ap, fmt);
	int n = vfprintf(f, fmt, ap);
	va_end(ap);
	return n < 0 || fputc('\0', f) == EOF ? -1 : at;
}

static bool fill(struct mt_framecols *c, struct entry *e)
{
	struct mt_sym_result *r = &c->res;
	mt_sym_lookup(c->sym, e->pid, e->ip, r);
	const char *dso = r->dso ? r->dso : "[unknown]";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return false;
	long at[MAX_COLS];
	const char *key[MAX_COLS];
	unsigned n = 0;
	key[n] = "frame";
	at[n++] = r->name ? put(f, "0x%" PRIx64 " %s+0x%" PRIx64 " (%s)", e->ip, r->name, r->off, dso)
			  : put(f, "0x%" PRIx64 " [unknown] (%s)", e->ip, dso);
	if (c->inlines && r->name && r->inlines[0]) {
		/* innermost first in the lookup: written outermost first */
		const char *names[MAX_COLS];
		size_t lens[MAX_COLS], k = 0;
		for (const char *p = r->inlines; *p && k < MAX_COLS - 2;) {
			const char *semi = strchr(p, ';');
			size_t l = semi ? (size_t)(semi - p) : strlen(p);
			names[k] = p;
			lens[k++] = l;
			p += l + (semi != NULL);
		}
		while (k-- > 0) {
			key[n] = "frame";
			at[n++] = put(f, "0x%" PRIx64 " %.*s (inlined) (%s)", e->ip, (int)lens[k], names[k], dso);
		}
	}
	if (c->lines) {
		/* a caller's frame holds its return address, which may begin
		 * the next line: its line is the call's */
		if (e->caller && e->ip)
			mt_sym_lookup(c->sym, e->pid, e->ip - 1, r);
		if (r->file && r->line > 0) {
			key[n] = "frame_src";
			at[n++] = put(f, "%s:%d", r->file, r->line);
		}
	}
	bool ok = !ferror(f);
	if (fclose(f) || !ok || !buf) {
		free(buf);
		return false;
	}
	for (unsigned i = 0; i < n; i++)
		if (at[i] < 0) {
			free(buf);
			return false;
		}
	free(e->text);
	e->text = buf;
	e->n = n;
	for (unsigned i = 0; i < n; i++)
		e->kv[i] = (struct mt_kv){key[i], buf + at[i]};
	return true;
}

const struct mt_kv *mt_framecols_get(struct mt_framecols *c, uint32_t pid, uint64_t ip, bool caller, unsigned *n)
{
	uint64_t h = (ip ^ (uint64_t)pid << 40 ^ (uint64_t)caller << 63) * 0x9e3779b97f4a7c15ULL;
	struct entry *e = &c->slots[h >> (64 - 12)];
	if (e->gen != c->gen || e->ip != ip || e->pid != pid || e->caller != caller) {
		if (e->gen && e->event == c->event) {
			/* this event holds the slot: a spare, not kept */
			if (c->nspare == MT_EVENT_MAX_EXTRA)
				return NULL;
			e = &c->spare[c->nspare++];
		}
		e->gen = 0;
		e->ip = ip;
		e->pid = pid;
		e->caller = caller;
		if (!fill(c, e))
			return NULL;
		e->gen = c->gen;
	}
	e->event = c->event;
	*n = e->n;
	return e->kv;
}
