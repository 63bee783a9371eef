/* ocaml_traps: OCaml mode A (5.11): try blocks get stacks of their own
 * and raises unwind them, following the programs' .note.ocaml_eh traps. */
#define _GNU_SOURCE
#include "timeline/cs_state.h"

#include <string.h>

/* --- OCaml mode A (5.11): exception handlers from .note.ocaml_eh --------- */

/* The first trap at or above addr. */
static size_t trap_at_or_above(const struct mt_cs *cs, uint64_t addr)
{
	size_t lo = 0, hi = cs->ntraps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cs->traps[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool mt_cs_is_entertrap(const struct mt_cs *cs, uint64_t addr)
{
	for (size_t i = trap_at_or_above(cs, addr); i < cs->ntraps && cs->traps[i].addr == addr; i++)
		if (cs->traps[i].kind == MT_TRAP_ENTER)
			return true;
	return false;
}

/* Clear the try block's stack, then resume the one it interrupted (or an
 * empty one). */
void mt_cs_clear_trap_stack(struct mt_cs *cs, struct thread *t, uint64_t time)
{
	mt_cs_clear_stack(cs, t, time);
	if (t->ninactive) {
		mt_cs_pop_inactive(t);
	} else {
		t->cur.n = 0;
		t->cur.create_time = time;
		t->cur.create_count = t->count;
	}
}

/* A try block begins: the current stack is suspended and the block runs on
 * a stack holding a copy of its top frame (no BEGIN is written for it). */
static void pushtrap(struct mt_cs *cs, struct thread *t, uint64_t time)
{
	if (!t->cur.n) {
		/* magic-trace crashes here; mt skips the trap */
		mt_cs_warn_once(cs, 3, "warning: an OCaml try block begins with no known frame; its trap is ignored");
		return;
	}
	struct frame top = t->cur.v[t->cur.n - 1];
	mt_cs_push_inactive(cs, t);
	t->cur.create_time = time;
	t->cur.create_count = t->count;
	mt_cs_push_frame(cs, &t->cur, top.ip, top.name);
}

static void poptrap(struct mt_cs *cs, struct thread *t, uint64_t time)
{
	if (t->cur.n != 1) {
		mt_cs_warn_once(cs, 4, "warning: expected callstack depth to be the same going into a [try] block as "
			  "when leaving it");
		return;
	}
	t->cur.n = 0; /* the copy goes without an END, as it came without a BEGIN */
	mt_cs_clear_trap_stack(cs, t, time);
}

/* Before each branch: the pushtraps and poptraps executed since the last
 * known IP, up to the branch. */
void mt_cs_trap_walk(struct mt_cs *cs, struct thread *t, uint64_t time, const struct mt_event *ev)
{
	if (t->last_known_ip != UINT64_MAX && t->last_known_ip <= ev->from) {
		for (size_t i = trap_at_or_above(cs, t->last_known_ip); i < cs->ntraps &&
		     cs->traps[i].addr <= ev->from; i++) {
			if (cs->traps[i].kind == MT_TRAP_PUSH)
				pushtrap(cs, t, time);
			else if (cs->traps[i].kind == MT_TRAP_POP)
				poptrap(cs, t, time);
		}
	}
	t->last_known_ip = ev->to;
}

void mt_cs_set_ocaml_traps(struct mt_cs *cs, const struct mt_ocaml_trap *traps, size_t n)
{
	cs->traps = traps;
	cs->ntraps = n;
}
