/* brwindow: a sample's branch stack as calls and returns (brwindow.h). */
#include "timeline/brwindow.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

bool mt_brentry_parse(const char *text, struct mt_brentry *e)
{
	char *end;
	*e = (struct mt_brentry){0};
	e->from = strtoull(text, &end, 16);
	if (end == text || *end != '/')
		return false;
	const char *p = end + 1;
	e->to = strtoull(p, &end, 16);
	if (end == p || *end != '/')
		return false;
	p = end + 1;
	/* PRED/TX/ABORT: one character each */
	for (int i = 0; i < 3; i++) {
		if (!p[0] || p[1] != '/')
			return false;
		p += 2;
	}
	unsigned long cyc = strtoul(p, &end, 10);
	if (end == p || *end != '/')
		return false;
	e->cycles = (unsigned)cyc;
	p = end + 1;
	e->kind = mt_brkind_of_type(p, strcspn(p, "/"));
	return true;
}

enum mt_brkind mt_brkind_of_type(const char *type, size_t n)
{
	static const struct {
		const char *name;
		enum mt_brkind kind;
	} kinds[] = {{"COND", MT_BR_JUMP}, {"UNCOND", MT_BR_JUMP}, {"IND", MT_BR_JUMP},
		     {"CALL", MT_BR_CALL}, {"IND_CALL", MT_BR_CALL}, {"RET", MT_BR_RET}};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strlen(kinds[i].name) == n && !strncmp(type, kinds[i].name, n))
			return kinds[i].kind;
	return MT_BR_OTHER;
}

/* One end of a branch_sym: "[unknown]" or NAME+0xHEX, ending at '/' or
 * the text's end; its name into out. Returns where it ended, or NULL. */
static const char *sym_end(const char *s, char *out, size_t n, bool last)
{
	if (!strncmp(s, "[unknown]", 9) && (last ? !s[9] : s[9] == '/')) {
		out[0] = '\0';
		return s + 9;
	}
	/* the first "+0xHEX" that the separator follows (a name may hold
	 * '/' and "+0x" itself: operator/, lambdas) */
	for (const char *q = strstr(s, "+0x"); q; q = strstr(q + 1, "+0x")) {
		const char *h = q + 3;
		while (isxdigit((unsigned char)*h))
			h++;
		if (h == q + 3 || (last ? *h != '\0' : *h != '/'))
			continue;
		size_t len = (size_t)(q - s);
		if (len == 0 || len >= n)
			return NULL;
		memcpy(out, s, len);
		out[len] = '\0';
		return h;
	}
	return NULL;
}

bool mt_brsym_split(const char *text, char *from, char *to, size_t n)
{
	const char *e = sym_end(text, from, n, false);
	return e && *e == '/' && sym_end(e + 1, to, n, true);
}

enum mt_brclock mt_brclock_of(const char *event)
{
	if (!event)
		return MT_BRCLOCK_NONE;
	size_t n = strcspn(event, ":");
	static const char *const cycles[] = {"cycles", "cpu-cycles", "cpu/cycles", "cpu_core/cycles", "cpu_atom/cycles"};
	static const char *const taken[] = {"r20c4", "rc4", "br_inst_retired.near_taken", "ex_ret_brn_tkn",
					    "cpu/br_inst_retired.near_taken"};
	for (size_t i = 0; i < sizeof cycles / sizeof cycles[0]; i++)
		if (strlen(cycles[i]) == n && !strncmp(event, cycles[i], n))
			return MT_BRCLOCK_CYCLES;
	for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
		if (strlen(taken[i]) == n && !strncmp(event, taken[i], n))
			return MT_BRCLOCK_TAKEN;
	return MT_BRCLOCK_NONE;
}

/* Undoes entry e on the stack (names, ips, *n of cap): the step that
 * plays it forward into *st. False when e does not agree with the stack. */
static bool undo(const struct mt_brentry *e, const char **names, uint64_t *ips, size_t *n, size_t cap,
		 struct mt_brstep *st)
{
	size_t k = *n;
	if (!e->from_name || !e->to_name || !k || names[k - 1] != e->to_name)
		return false;
	*st = (struct mt_brstep){.op = MT_BROP_NONE, .name = e->to_name, .ip = e->to};
	switch (e->kind) {
	case MT_BR_CALL:
		/* before it, the caller ran the call: the callee's frame goes */
		if (k < 2 || names[k - 2] != e->from_name)
			return false;
		st->op = MT_BROP_CALL;
		st->ret_ip = ips[k - 2];
		ips[k - 2] = e->from;
		*n = k - 1;
		return true;
	case MT_BR_RET:
		/* before it, the callee ran its ret: back on top, the caller
		 * waiting at the return address */
		if (k >= cap)
			return false;
		st->op = MT_BROP_RET;
		st->ret_ip = e->to;
		ips[k - 1] = e->to;
		names[k] = e->from_name;
		ips[k] = e->from;
		*n = k + 1;
		return true;
	case MT_BR_JUMP:
		if (e->from_name != e->to_name)
			st->op = MT_BROP_TAIL;
		names[k - 1] = e->from_name;
		ips[k - 1] = e->from;
		return true;
	default:
		return false;
	}
}

/* Plays entry e forward on the stack (names, ips, *n of cap), into *st;
 * a call's return address is not in the entry: ret_ip 0, for the caller to
 * fill in. False when e does not agree with the stack. */
static bool play(const struct mt_brentry *e, const char **names, uint64_t *ips, size_t *n, size_t cap,
		 struct mt_brstep *st)
{
	size_t k = *n;
	if (!e->from_name || !e->to_name || !k || names[k - 1] != e->from_name)
		return false;
	*st = (struct mt_brstep){.op = MT_BROP_NONE, .name = e->to_name, .ip = e->to};
	switch (e->kind) {
	case MT_BR_CALL:
		if (k >= cap)
			return false;
		st->op = MT_BROP_CALL;
		names[k] = e->to_name;
		ips[k] = e->to;
		*n = k + 1;
		return true;
	case MT_BR_RET:
		if (k < 2 || names[k - 2] != e->to_name)
			return false;
		st->op = MT_BROP_RET;
		st->ret_ip = e->to;
		ips[k - 2] = e->to;
		*n = k - 1;
		return true;
	case MT_BR_JUMP:
		if (e->from_name != e->to_name)
			st->op = MT_BROP_TAIL;
		names[k - 1] = e->to_name;
		ips[k - 1] = e->to;
		return true;
	default:
		return false;
	}
}

/* The entries after the previous sample that the undoing left, played
 * forward from the previous stack: entries [lo, hi) (newest first), oldest
 * first, each step into steps[its index]. Returns the lowest index played
 * (hi: none); SIZE_MAX when the stack they end in is not the bottom of the
 * one the undoing began from (names[n]; what lies between, a signal's
 * delivery, only adds frames). */
static size_t play_forward(const struct mt_brwindow *w, size_t lo, size_t hi, const char *const *names,
			   const uint64_t *ips, size_t n, struct mt_brstep *steps)
{
	enum { CAP = 1024 };
	const char *fn[CAP];
	uint64_t fi[CAP];
	size_t pushed_by[CAP]; /* the step that began a frame, SIZE_MAX: the previous stack's */
	size_t fnn = w->prev_n;
	if (fnn > CAP || n > CAP)
		return SIZE_MAX;
	memcpy(fn, w->prev_names, fnn * sizeof *fn);
	memcpy(fi, w->prev_ips, fnn * sizeof *fi);
	for (size_t d = 0; d < fnn; d++)
		pushed_by[d] = SIZE_MAX;
	size_t j = hi;
	while (j > lo) {
		struct mt_brstep st;
		size_t before = fnn;
		if (!play(&w->b[j - 1], fn, fi, &fnn, CAP, &st))
			break;
		j--;
		st.time = steps[j].time;
		steps[j] = st;
		if (st.op == MT_BROP_CALL)
			pushed_by[before] = j;
		else if (st.op == MT_BROP_RET && pushed_by[before - 1] != SIZE_MAX)
			steps[pushed_by[before - 1]].ret_ip = st.ret_ip; /* the call's return address */
	}
	if (fnn > n)
		return SIZE_MAX;
	for (size_t d = 0; d < fnn; d++)
		if (fn[d] != names[d])
			return SIZE_MAX;
	/* frames begun here and still there: their callers wait where the
	 * stack the undoing began from says */
	for (size_t d = 1; d < fnn; d++)
		if (pushed_by[d] != SIZE_MAX)
			steps[pushed_by[d]].ret_ip = ips[d - 1];
	return j;
}

size_t mt_brwindow_steps(const struct mt_brwindow *w, struct mt_brstep *steps, const char **start_names,
			 uint64_t *start_ips, size_t cap, size_t *start_n, size_t *forward)
{
	*start_n = 0;
	*forward = 0;
	if (w->nf > cap)
		return 0;
	memcpy(start_names, w->names, w->nf * sizeof *start_names);
	memcpy(start_ips, w->ips, w->nf * sizeof *start_ips);
	*start_n = w->nf;
	if (!w->nb || (w->clock != MT_BRCLOCK_NONE && (!w->has_lower || w->lower >= w->time)))
		return 0;
	/* weights: an entry's cycles when the window counts them, else 1 */
	bool counted = false;
	for (size_t i = 0; i < w->nb && w->clock != MT_BRCLOCK_NONE; i++)
		counted |= w->b[i].cycles != 0;
	double scale = 1; /* ns a weight unit */
	uint64_t span = w->has_lower && w->lower < w->time ? w->time - w->lower : w->time;
	if (w->clock == MT_BRCLOCK_TAKEN) {
		double sum = 0;
		for (size_t i = 0; i < w->nb && i < w->period; i++)
			sum += counted ? w->b[i].cycles : 1;
		if (sum <= 0)
			return 0;
		scale = (double)span / sum;
	} else if (w->clock == MT_BRCLOCK_CYCLES) {
		/* no cycles counted: order alone */
		scale = counted && w->period ? (double)span / (double)w->period : 1;
	}
	/* newest first: each entry's time (the entries after lower) */
	size_t limit = 0;
	double acc = 0;
	for (; limit < w->nb; limit++) {
		if (limit)
			acc += counted ? w->b[limit - 1].cycles : 1;
		uint64_t back = (uint64_t)(acc * scale + 0.5);
		if (back >= span || (w->clock == MT_BRCLOCK_TAKEN && limit >= w->period))
			break;
		steps[limit] = (struct mt_brstep){.time = w->time - back};
	}
	/* then their undoing, newest first */
	size_t k = 0;
	for (; k < limit; k++) {
		size_t n = *start_n;
		struct mt_brstep st;
		if (!undo(&w->b[k], start_names, start_ips, &n, cap, &st))
			break;
		st.time = steps[k].time;
		steps[k] = st;
		*start_n = n;
	}
	/* what it left since the previous sample, forward (known only when
	 * the window holds the period's every taken branch) */
	size_t total = k;
	if (k < limit && w->prev_n && w->clock == MT_BRCLOCK_TAKEN && limit == w->period) {
		size_t j = play_forward(w, k, limit, start_names, start_ips, *start_n, steps);
		if (j != SIZE_MAX && j < limit) {
			memmove(steps + k, steps + j, (limit - j) * sizeof *steps);
			total = k + (limit - j);
			*forward = limit - j;
		}
	}
	/* oldest first */
	for (size_t i = 0; i < total / 2; i++) {
		struct mt_brstep s = steps[i];
		steps[i] = steps[total - 1 - i];
		steps[total - 1 - i] = s;
	}
	return total;
}
