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

size_t mt_brwindow_steps(const struct mt_brwindow *w, struct mt_brstep *steps, const char **start_names,
			 uint64_t *start_ips, size_t cap, size_t *start_n)
{
	*start_n = 0;
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
	/* newest first: each entry's time, then its undo */
	struct mt_brstep tmp;
	size_t k = 0;
	double acc = 0;
	for (; k < w->nb; k++) {
		if (k)
			acc += counted ? w->b[k - 1].cycles : 1;
		uint64_t back = (uint64_t)(acc * scale + 0.5);
		if (back >= span || (w->clock == MT_BRCLOCK_TAKEN && k >= w->period))
			break;
		size_t n = *start_n;
		if (!undo(&w->b[k], start_names, start_ips, &n, cap, &tmp))
			break;
		*start_n = n;
		tmp.time = w->time - back;
		steps[k] = tmp;
	}
	/* oldest first */
	for (size_t i = 0; i < k / 2; i++) {
		struct mt_brstep s = steps[i];
		steps[i] = steps[k - 1 - i];
		steps[k - 1 - i] = s;
	}
	return k;
}
