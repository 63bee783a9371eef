/* symcols: a direct-mapped table of (pid, address, side) -> columns. A
 * group's strings are the symbolizer's (names, objects, files: they live as
 * long as it does) or the slot's own (offset, line, inlines). */
#define _POSIX_C_SOURCE 200809L
#include "names/symcols.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"
#include "base/strtab.h"

/* In sets of two, the one used last kept: two addresses an event stream
 * goes between (a call and its return) that shared a slot each pushed the
 * other out, and a new group id made the writer encode the group again.
 * On the bench's 4 MB trace (526 addresses a side) direct-mapped slots
 * missed 3.4% of the lookups, sets of two 0.6% (after each mapping line
 * all are looked up again). */
#define SLOT_BITS 12
#define SLOTS (1u << SLOT_BITS)
#define WAYS 2
#define INL_MAX 263 /* longer inline chains are made each time, not kept (a slot: 12 lines) */
/* The group's text form, kept right after what a lookup reads: a text
 * writer copies it from the lines the lookup brought in (the writer's own
 * memo by id cost a cache miss a group: 16% of mt-symbolize's time on the
 * bench's text stream, perf's samples). Longer ones go by the memo. */
#define TEXT_MAX 320

struct slot {
	uint64_t addr;
	uint64_t gen;       /* 0: empty */
	uint32_t pid;
	uint8_t last; /* a set's first slot: which of the set was used last */
	struct mt_events_cols cols;
	char text[TEXT_MAX];
	struct mt_kv kv[6];
	char off[20], line[12], inl[INL_MAX + 1];
};
/* What a lookup's hit reads (the key and the group) in one cache line, the
 * text in the lines after it: slots are whole lines, from a table aligned
 * to 2 MiB (bigmem). With the text added, a group that straddled two lines
 * cost mt-symbolize a third of its time on the binary stream (0.46 -> 0.59
 * s on the 16 MB trace). */
_Static_assert(offsetof(struct slot, cols) + sizeof(struct mt_events_cols) <= 64 && sizeof(struct slot) % 64 == 0,
	       "a slot's lines");

struct mt_symcols {
	struct mt_sym *sym;
	uint64_t gen;
	struct slot *slots[2];  /* per side: an event's two groups never share a slot */
	struct slot scratch[2]; /* a group too long to keep */
	struct mt_sym_result res;
	bool text; /* groups kept with their text form */
};

/* Group ids are unique in the process: a writer's memo by id never mixes
 * two tables' groups. */
static uint64_t next_id(void)
{
	static _Atomic uint64_t last;
	return ++last;
}

struct mt_symcols *mt_symcols_new(struct mt_sym *sym, bool text)
{
	struct mt_symcols *c = calloc(1, sizeof *c);
	/* the two sides' tables in one allocation: over 2 MiB, in huge pages
	 * (bigmem.h) */
	if (c && !(c->slots[0] = mt_bigmem_zalloc(2 * SLOTS * sizeof *c->slots[0]))) {
		free(c);
		return NULL;
	}
	if (c) {
		c->slots[1] = c->slots[0] + SLOTS;
		c->sym = sym;
		c->gen = 1;
		c->text = text;
	}
	return c;
}

void mt_symcols_free(struct mt_symcols *c)
{
	if (!c)
		return;
	mt_bigmem_zfree(c->slots[0], 2 * SLOTS * sizeof *c->slots[0]);
	free(c);
}

void mt_symcols_forget(struct mt_symcols *c)
{
	c->gen++;
}

uint64_t mt_symcols_generation(const struct mt_symcols *c)
{
	return c->gen;
}

static const char *const keys[2][6] = {
	{"from_sym", "from_off", "from_dso", "from_file", "from_line", "from_inline"},
	{"to_sym", "to_off", "to_dso", "to_file", "to_line", "to_inline"},
};

/* Fills s with the columns of one lookup; false when they do not fit its
 * buffers (an inline chain too long to keep). */
static bool fill(struct slot *s, const struct mt_sym_result *r, int side, bool text)
{
	unsigned n = 0;
	const char *const *k = keys[side];
	if (r->name) {
		s->kv[n++] = (struct mt_kv){k[0], r->name};
		*mt_put_hex(s->off, r->off) = '\0';
		s->kv[n++] = (struct mt_kv){k[1], s->off};
	}
	if (r->dso)
		s->kv[n++] = (struct mt_kv){k[2], r->dso};
	if (r->file) {
		s->kv[n++] = (struct mt_kv){k[3], r->file};
		snprintf(s->line, sizeof s->line, "%d", r->line);
		s->kv[n++] = (struct mt_kv){k[4], s->line};
	}
	bool fits = true;
	if (r->inlines[0]) {
		size_t len = strlen(r->inlines);
		fits = len <= INL_MAX;
		if (fits)
			memcpy(s->inl, r->inlines, len + 1);
		s->kv[n++] = (struct mt_kv){k[5], fits ? s->inl : r->inlines};
	}
	s->cols = (struct mt_events_cols){.kv = s->kv, .n = n, .id = fits ? next_id() : 0};
	if (fits && text && (s->cols.text_len = (uint32_t)mt_events_cols_text(&s->cols, s->text, sizeof s->text)))
		s->cols.text = s->text;
	return fits;
}

/* A miss: looked up and kept. Not inlined: the hit stays a leaf, with no
 * registers to save. */
static __attribute__((noinline)) const struct mt_events_cols *
symcols_miss(struct mt_symcols *c, struct slot *s, uint32_t pid, uint64_t addr, enum mt_symcols_side side)
{
	mt_sym_lookup(c->sym, pid, addr, &c->res);
	s->gen = 0;
	if (!fill(s, &c->res, side, c->text)) {
		/* the scratch slot points at res's inline text until the next call */
		fill(&c->scratch[side], &c->res, side, false);
		return &c->scratch[side].cols;
	}
	s->gen = c->gen;
	s->addr = addr;
	s->pid = pid;
	return &s->cols;
}

const struct mt_events_cols *mt_symcols_get(struct mt_symcols *c, uint32_t pid, uint64_t addr,
					    enum mt_symcols_side side)
{
	uint64_t h = (addr ^ (uint64_t)pid << 40) * 0x9e3779b97f4a7c15ULL;
	struct slot *set = &c->slots[side][(h >> (64 - SLOT_BITS + 1)) * WAYS];
	for (int k = 0; k < WAYS; k++) {
		struct slot *s = &set[k];
		if (s->gen == c->gen && s->addr == addr && s->pid == pid) {
			set->last = (uint8_t)k;
			return &s->cols;
		}
	}
	/* the slot used longest ago */
	set->last ^= 1;
	return symcols_miss(c, &set[set->last], pid, addr, side);
}
