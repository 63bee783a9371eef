/* framecols: a frame's columns are what a fresh lookup gives (the
 * symbolizer itself is the oracle: mt_sym_lookup on the same address),
 * written as perf script prints a frame; the line of a caller's frame is
 * its call's (ip - 1); what is kept is given again, and forgetting (a
 * mapping changed) looks it up anew. Inlined frames: tests/symbolize.bats,
 * against addr2line -i. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names/framecols.h"
#include "selfmap.h"
#include "tap.h"

__attribute__((noinline)) static int probe(int x)
{
	return x * 3 + 1;
}

/* The frame text of a fresh lookup of addr. */
static void want_frame(struct mt_sym *sym, uint64_t addr, char *out, size_t n)
{
	struct mt_sym_result r;
	mt_sym_lookup(sym, 42, addr, &r);
	if (r.name)
		snprintf(out, n, "0x%" PRIx64 " %s+0x%" PRIx64 " (%s)", addr, r.name, r.off, r.dso ? r.dso : "[unknown]");
	else
		snprintf(out, n, "0x%" PRIx64 " [unknown] (%s)", addr, r.dso ? r.dso : "[unknown]");
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct mt_sym *sym = mt_sym_new(NULL, NULL, NULL);
	if (sym)
		mt_sym_set_lines(sym, true);
	struct mt_framecols *c = sym ? mt_framecols_new(sym, false, true) : NULL;
	ok(c != NULL, "made");
	if (!c)
		return tap_done();
	selfmap_add(sym, "test_framecols", 42);
	uint64_t addr = (uint64_t)(uintptr_t)&probe + 2;
	char want[4200];
	want_frame(sym, addr, want, sizeof want);
	unsigned n = 0;
	const struct mt_kv *kv = mt_framecols_get(c, 42, addr, false, &n);
	ok(kv && n >= 1 && !strcmp(kv[0].key, "frame") && !strcmp(kv[0].val, want) && strstr(want, " probe+0x2 ("),
	   "the frame as perf prints it: 0xIP NAME+0xOFF (DSO)");
	struct mt_sym_result r;
	mt_sym_lookup(sym, 42, addr, &r);
	char src[2100] = "";
	if (r.file)
		snprintf(src, sizeof src, "%s:%d", r.file, r.line);
	ok(n == 2 && !strcmp(kv[1].key, "frame_src") && !strcmp(kv[1].val, src), "its line after it (--lines)");
	const struct mt_kv *again = mt_framecols_get(c, 42, addr, false, &n);
	ok(again == kv && n == 2, "asked again: what was kept");
	kv = mt_framecols_get(c, 42, addr, true, &n);
	mt_sym_lookup(sym, 42, addr - 1, &r);
	snprintf(src, sizeof src, "%s:%d", r.file ? r.file : "", r.line);
	ok(kv && !strcmp(kv[0].val, want) && (n == 1 || !strcmp(kv[1].val, src)), "a caller's frame: the call's line");
	kv = mt_framecols_get(c, 43, addr, false, &n);
	ok(kv && n == 1 && strstr(kv[0].val, " [unknown] ([unknown])"),
	   "another process without the mapping: [unknown] ([unknown])");
	mt_framecols_forget(c);
	kv = mt_framecols_get(c, 42, addr, false, &n);
	ok(kv && n == 2 && !strcmp(kv[0].val, want), "after forgetting: looked up again, the same");
	/* every frame of one event holds, two in one slot of the table too
	 * (found by trying: 4096 slots, the table's hash) */
	uint64_t other = 0;
	for (uint64_t a = addr + 1; a < addr + (1u << 22) && !other; a++) {
		uint64_t h1 = (addr ^ (uint64_t)42 << 40) * 0x9e3779b97f4a7c15ULL;
		uint64_t h2 = (a ^ (uint64_t)42 << 40) * 0x9e3779b97f4a7c15ULL;
		if (h1 >> 52 == h2 >> 52)
			other = a;
	}
	mt_framecols_next_event(c);
	const struct mt_kv *first = mt_framecols_get(c, 42, addr, false, &n);
	char first_text[4200];
	snprintf(first_text, sizeof first_text, "%s", first ? first[0].val : "");
	unsigned n2;
	const struct mt_kv *second = mt_framecols_get(c, 42, other, false, &n2);
	char want2[4200];
	want_frame(sym, other, want2, sizeof want2);
	ok(other && first && second && !strcmp(first[0].val, want) && !strcmp(first_text, want) &&
		   !strcmp(second[0].val, want2),
	   "two frames of one event in one slot: both hold until the next event");
	mt_framecols_next_event(c);
	second = mt_framecols_get(c, 42, other, false, &n2);
	ok(second && !strcmp(second[0].val, want2), "the next event: the slot goes to who asks");
	mt_framecols_free(c);
	mt_sym_free(sym);
	return tap_done();
}
