/* symcols: the groups it keeps are what a fresh lookup gives (the
 * symbolizer itself is the oracle: mt_sym_lookup on the same address), in
 * columns and in their text form, an
 * id names one content, and forgetting (a mapping changed) makes new ones. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "names/symcols.h"
#include "selfmap.h"
#include "tap.h"

/* The columns the old per-event code made from one lookup. */
static int same_as_lookup(struct mt_sym *sym, const struct mt_events_cols *g, uint32_t pid, uint64_t addr,
			  const char *pre)
{
	struct mt_sym_result r;
	mt_sym_lookup(sym, pid, addr, &r);
	char want[8][128], off[24];
	unsigned n = 0;
	if (r.name) {
		snprintf(want[n++], sizeof want[0], "%ssym=%s", pre, r.name);
		*mt_put_hex(off, r.off) = '\0';
		snprintf(want[n++], sizeof want[0], "%soff=%s", pre, off);
	}
	if (r.dso)
		snprintf(want[n++], sizeof want[0], "%sdso=%s", pre, r.dso);
	if (n != g->n)
		return 0;
	char text[1100] = "";
	for (unsigned i = 0; i < n; i++) {
		char got[256];
		snprintf(got, sizeof got, "%s=%s", g->kv[i].key, g->kv[i].val);
		if (strcmp(got, want[i]))
			return 0;
		strcat(text, "\t");
		strcat(text, want[i]);
	}
	/* the text form kept beside the columns: what a text writer writes */
	return g->text && g->text_len == strlen(text) && !memcmp(g->text, text, g->text_len);
}

int main(int argc, char **argv)
{
	(void)argc;
	struct mt_sym *sym = mt_sym_new(NULL, NULL, NULL);
	struct mt_symcols *c = sym ? mt_symcols_new(sym, true) : NULL;
	ok(c != NULL, "made");
	if (!c)
		return tap_done();
	/* this test program itself, mapped as the kernel maps it: its
	 * symbols are the ones the lookup must find */
	uint64_t text_lo = selfmap_add(sym, "test_symcols", 42);
	(void)argv;
	uint64_t addr = (uint64_t)(uintptr_t)&same_as_lookup + 3;
	ok(text_lo != 0, "the program's code is mapped");
	const struct mt_events_cols *g = mt_symcols_get(c, 42, addr, MT_SYMCOLS_FROM);
	ok(g->n == 3 && !strcmp(g->kv[0].val, "same_as_lookup") && !strcmp(g->kv[1].val, "0x3"),
	   "from: the function and offset of the address");
	ok(same_as_lookup(sym, g, 42, addr, "from_"), "from: the columns of a fresh lookup");
	uint64_t id = g->id;
	ok(id != 0, "a kept group has an id");
	g = mt_symcols_get(c, 42, addr, MT_SYMCOLS_TO);
	ok(same_as_lookup(sym, g, 42, addr, "to_") && g->id != id, "to: its own columns and id");
	g = mt_symcols_get(c, 42, addr, MT_SYMCOLS_FROM);
	ok(g->id == id, "asked again: the same group");
	g = mt_symcols_get(c, 43, addr, MT_SYMCOLS_FROM);
	ok(g->n == 0 && g->id != id, "another process without the mapping: nothing known, another group");
	uint64_t main_addr = (uint64_t)(uintptr_t)&main;
	g = mt_symcols_get(c, 42, main_addr, MT_SYMCOLS_FROM);
	ok(same_as_lookup(sym, g, 42, main_addr, "from_"), "another address: its own columns");
	mt_symcols_forget(c);
	g = mt_symcols_get(c, 42, addr, MT_SYMCOLS_FROM);
	ok(g->id != id && same_as_lookup(sym, g, 42, addr, "from_"), "after forgetting: the same columns, a new id");
	/* an event stream goes back and forth between addresses (a call site
	 * and its callee): any two asked by turns are both kept, their groups
	 * not made again (of 200 scattered addresses, 14 pairs shared a slot of
	 * a direct-mapped table and moved) */
	enum { NADDR = 200 };
	unsigned moved = 0, wrong = 0;
	uint64_t at[NADDR];
	uint32_t seed = 1;
	for (unsigned i = 0; i < NADDR; i++) { /* scattered as code is, not evenly spaced */
		seed = seed * 1103515245 + 12345;
		at[i] = text_lo + (seed >> 8) % 0x4000;
	}
	for (unsigned i = 0; i < NADDR; i++)
		for (unsigned j = i + 1; j < NADDR; j++) {
			uint64_t a = at[i], b = at[j];
			uint64_t ida = mt_symcols_get(c, 42, a, MT_SYMCOLS_TO)->id;
			g = mt_symcols_get(c, 42, b, MT_SYMCOLS_TO);
			wrong += !same_as_lookup(sym, g, 42, b, "to_");
			g = mt_symcols_get(c, 42, a, MT_SYMCOLS_TO);
			moved += g->id != ida;
			wrong += !same_as_lookup(sym, g, 42, a, "to_");
		}
	char msg[120];
	snprintf(msg, sizeof msg, "two addresses asked by turns keep their groups (%u of %u pairs moved, %u wrong)", moved,
		 NADDR * (NADDR - 1) / 2, wrong);
	ok(!moved && !wrong, msg);
	mt_symcols_free(c);
	mt_sym_free(sym);
	return tap_done();
}
