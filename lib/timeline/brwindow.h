/* brwindow: a stack sample's branch stack (perf record -b: the thread's
 * last taken branches before the sample, newest first) as the calls and
 * returns it proves. The sample's own stack is undone branch by branch,
 * newest first, while each branch agrees with it (a call's callee is the
 * leaf, its caller below; a return's target is the leaf); the steps are
 * then played forward, oldest first, each at its estimated time. Pure:
 * names are the caller's interned pointers, compared as pointers. */
#ifndef MT_BRWINDOW_H
#define MT_BRWINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mt_brkind { MT_BR_OTHER, MT_BR_JUMP, MT_BR_CALL, MT_BR_RET };

struct mt_brentry {
	uint64_t from, to;
	const char *from_name, *to_name; /* interned; NULL: not named */
	unsigned cycles;                 /* since the previous entry; 0: not counted */
	enum mt_brkind kind;
};

/* One branch= column's text (mt-events(5)): its addresses, cycles and kind
 * from its TYPE (COND, UNCOND, IND: a jump; CALL, IND_CALL; RET; any other
 * type, or none saved: OTHER). False when the text does not parse. */
bool mt_brentry_parse(const char *text, struct mt_brentry *e);
/* The kind of perf's type name type[0..n) (as above). */
enum mt_brkind mt_brkind_of_type(const char *type, size_t n);

/* A branch_sym= column's two function names, +0xOFF dropped, into from and
 * to (n bytes each; "" for [unknown]). False when it does not parse. */
bool mt_brsym_split(const char *text, char *from, char *to, size_t n);

/* What the sample's event counts, which sets the window's clock: cycles
 * (perf's period is the cycles since the thread's previous sample), taken
 * branches (Intel's BR_INST_RETIRED.NEAR_TAKEN, raw 0x20c4; AMD's
 * ex_ret_brn_tkn, raw 0xc4: the period is the entries since it), or
 * neither. */
enum mt_brclock { MT_BRCLOCK_NONE, MT_BRCLOCK_CYCLES, MT_BRCLOCK_TAKEN };
enum mt_brclock mt_brclock_of(const char *event);

enum mt_brop { MT_BROP_NONE, MT_BROP_CALL, MT_BROP_RET, MT_BROP_TAIL };

/* One branch played forward: CALL begins name at ip (the branch's target)
 * on top of the leaf, whose frame then shows ret_ip (the return address,
 * as callchains show callers); RET ends the leaf; TAIL ends the leaf and
 * begins name at ip (a jump into another function); NONE changes no frame. */
struct mt_brstep {
	enum mt_brop op;
	const char *name;
	uint64_t ip, ret_ip, time;
};

struct mt_brwindow {
	const char *const *names; /* the sample's stack, outermost first */
	const uint64_t *ips;      /* the leaf's IP, the callers' return addresses */
	size_t nf;
	const struct mt_brentry *b; /* newest first */
	size_t nb;
	uint64_t time;             /* the sample's */
	uint64_t lower;            /* the thread's previous event's: every step is later */
	bool has_lower;            /* false: the thread's first event */
	enum mt_brclock clock;
	uint64_t period;
	/* the thread's stack at its previous sample, when that sample was its
	 * previous event (prev_n 0: not known): what the window's oldest
	 * entries are played forward from */
	const char *const *prev_names;
	const uint64_t *prev_ips;
	size_t prev_n;
};

/* The window's steps, oldest first, into steps[w->nb]; returns how many
 * (the newest entries that agree with the stack and fall after lower).
 * start_names/start_ips (cap entries) get the stack before the oldest
 * undone step, *start_n its depth. Where the undoing stops short of the
 * previous sample (an entry of another type: a signal's delivery, its
 * sigreturn) and the entries since that sample are known (a taken-branch
 * clock whose period the branch stack holds), the oldest of them are also
 * played forward from prev_names while each agrees with that stack (a call
 * from the leaf, a return to the frame below, a jump from the leaf): the
 * first *forward steps, kept only when the stack they end in is the bottom
 * of the start stack, name by name (what lies between, unplayed, only adds
 * frames: a signal's handler on top). The caller plays those on the
 * previous stack, then makes it the start stack, then the rest. Times: the
 * newest branch at the sample's time, each
 * older one earlier by its cycles (one unit each when not counted) times a
 * scale: for a taken-branch clock, the newest period entries fill the time
 * since lower; for a cycle clock, the time since lower over period; with
 * no clock, 1 ns a step (order alone). Without lower, a clock's scale is
 * unknown: no steps. */
size_t mt_brwindow_steps(const struct mt_brwindow *w, struct mt_brstep *steps, const char **start_names,
			 uint64_t *start_ips, size_t cap, size_t *start_n, size_t *forward);

#endif
