/* Unit tests of branch stacks played as calls and returns
 * (timeline/brwindow.c), TAP output. Oracle: small flows worked by hand,
 * each entry's effect on the stack and its time written out below. */
#include <stdio.h>
#include <string.h>

#include "timeline/brwindow.h"

#include "tap.h"

/* interned names: compared as pointers */
static const char *MAIN = "main", *F = "f", *G = "g", *FOO = "foo", *FOO_PLT = "foo@plt", *H = "h";

/* main calls g at 0x1003 (g returns to 0x1008), then f at 0x100c (f
 * returns to 0x1010); the sample finds f at 0x2008. Newest first. */
static const struct mt_brentry flow[] = {
	{0x100c, 0x2000, "main", "f", 4, MT_BR_CALL},
	{0x3010, 0x1008, "g", "main", 6, MT_BR_RET},
	{0x1003, 0x3000, "main", "g", 2, MT_BR_CALL},
	{0x1001, 0x1002, "main", "main", 1, MT_BR_JUMP},
};

static size_t steps_of(const struct mt_brentry *b, size_t nb, enum mt_brclock clock, uint64_t period,
		       bool has_lower, struct mt_brstep *st, const char **sn, uint64_t *si, size_t *n)
{
	static struct mt_brentry e[8];
	for (size_t i = 0; i < nb; i++) {
		e[i] = b[i];
		/* the same pointers as the stack's */
		e[i].from_name = !strcmp(b[i].from_name, "main") ? MAIN : !strcmp(b[i].from_name, "g") ? G
				 : !strcmp(b[i].from_name, "foo@plt") ? FOO_PLT : F;
		e[i].to_name = !strcmp(b[i].to_name, "main") ? MAIN : !strcmp(b[i].to_name, "g") ? G
			       : !strcmp(b[i].to_name, "foo") ? FOO : !strcmp(b[i].to_name, "foo@plt") ? FOO_PLT
			       : !strcmp(b[i].to_name, "h") ? H : F;
	}
	static const char *names[2] = {NULL, NULL};
	names[0] = MAIN;
	names[1] = nb && b[0].kind == MT_BR_JUMP && !strcmp(b[0].to_name, "foo") ? FOO : F;
	static const uint64_t ips[2] = {0x1010, 0x2008};
	struct mt_brwindow w = {.names = names, .ips = ips, .nf = 2, .b = e, .nb = nb, .time = 1000,
				.lower = 900, .has_lower = has_lower, .clock = clock, .period = period};
	size_t forward;
	return mt_brwindow_steps(&w, st, sn, si, 16, n, &forward);
}

int main(void)
{
	struct mt_brentry e;
	ok(mt_brentry_parse("0x10/0x20/P/-/-/5/IND_CALL", &e) && e.from == 0x10 && e.to == 0x20 && e.cycles == 5 &&
		   e.kind == MT_BR_CALL, "an indirect call, 5 cycles");
	ok(mt_brentry_parse("0x10/0x20/M/-/-/0/", &e) && e.kind == MT_BR_OTHER, "no type saved: other");
	ok(mt_brentry_parse("0x1/0x2/P/-/-/3/COND/SPEC_WRONG_PATH", &e) && e.kind == MT_BR_JUMP && e.cycles == 3,
	   "a conditional jump with AMD's speculation field");
	ok(mt_brentry_parse("0x1/0x2/P/-/-/0/SYSRET", &e) && e.kind == MT_BR_OTHER, "SYSRET: other");
	ok(!mt_brentry_parse("0x1/0x2/P/-", &e) && !mt_brentry_parse("x", &e), "cut or not an entry: refused");
	ok(mt_brkind_of_type("IND", 3) == MT_BR_JUMP && mt_brkind_of_type("RET", 3) == MT_BR_RET &&
		   mt_brkind_of_type("SYSCALL", 7) == MT_BR_OTHER && mt_brkind_of_type("CALLX", 5) == MT_BR_OTHER,
	   "kinds of type names (mt-pt2events' branch_type= too)");

	char a[64], b[64];
	ok(mt_brsym_split("operator/+0x10/foo+0x0", a, b, sizeof a) && !strcmp(a, "operator/") && !strcmp(b, "foo"),
	   "a name with '/' in it");
	ok(mt_brsym_split("[unknown]/x+0x1", a, b, sizeof a) && !*a && !strcmp(b, "x"), "[unknown] is ''");
	ok(mt_brsym_split("f+0x1/[unknown]", a, b, sizeof a) && !strcmp(a, "f") && !*b, "[unknown] last");
	ok(!mt_brsym_split("f+0x1", a, b, sizeof a) && !mt_brsym_split("f/g", a, b, sizeof a), "no pair: refused");

	ok(mt_brclock_of("cycles:u") == MT_BRCLOCK_CYCLES && mt_brclock_of("r20c4") == MT_BRCLOCK_TAKEN &&
		   mt_brclock_of("rc4") == MT_BRCLOCK_TAKEN && mt_brclock_of("cpu-clock") == MT_BRCLOCK_NONE &&
		   mt_brclock_of(NULL) == MT_BRCLOCK_NONE, "clocks by event name");

	struct mt_brstep st[8];
	const char *sn[16];
	uint64_t si[16];
	size_t n;
	/* taken branches, period 3: the newest 3 fill (900, 1000] by their
	 * cycles 4, 6, 2 (100 ns over 12: 8.33 a cycle): f's call at 1000,
	 * g's return 4 cycles before (967), g's call 10 before (917) */
	size_t k = steps_of(flow, 4, MT_BRCLOCK_TAKEN, 3, true, st, sn, si, &n);
	ok(k == 3, "taken-branch clock: the period's 3 newest");
	ok(st[0].op == MT_BROP_CALL && st[0].name == G && st[0].ip == 0x3000 && st[0].ret_ip == 0x1008 &&
		   st[0].time == 917, "g called at 917, main waiting at 0x1008");
	ok(st[1].op == MT_BROP_RET && st[1].time == 967 && st[1].ret_ip == 0x1008, "g returns at 967");
	ok(st[2].op == MT_BROP_CALL && st[2].name == F && st[2].ret_ip == 0x1010 && st[2].time == 1000,
	   "f called at the sample's time, main's frame at f's return address");
	ok(n == 1 && sn[0] == MAIN && si[0] == 0x1003, "before them: main alone, at g's call");

	/* cycles: 120 since the last sample over 100 ns (0.83 a cycle): 997,
	 * 992, 990 (the jump in main, no frame changed); nothing left after */
	k = steps_of(flow, 4, MT_BRCLOCK_CYCLES, 120, true, st, sn, si, &n);
	ok(k == 4 && st[0].op == MT_BROP_NONE && st[0].time == 990 && st[1].time == 992 && st[2].time == 997 &&
		   st[3].time == 1000, "cycle clock: 990, 992, 997, 1000");
	ok(n == 1 && si[0] == 0x1001, "before them: main at the jump");

	/* no clock: order alone, 1 ns a step, lower or not */
	k = steps_of(flow, 4, MT_BRCLOCK_NONE, 1, false, st, sn, si, &n);
	ok(k == 4 && st[0].time == 997 && st[3].time == 1000, "no clock: a nanosecond a step");

	/* a clock without the thread's previous event: no scale, no steps */
	ok(steps_of(flow, 4, MT_BRCLOCK_TAKEN, 3, false, st, sn, si, &n) == 0 && n == 2,
	   "the thread's first sample: nothing played, the stack as sampled");

	/* an entry the stack denies ends the window there */
	struct mt_brentry bad[4];
	memcpy(bad, flow, sizeof bad);
	bad[0].to_name = "h";
	ok(steps_of(bad, 4, MT_BRCLOCK_TAKEN, 3, true, st, sn, si, &n) == 0, "a call into h, f on top: none");
	memcpy(bad, flow, sizeof bad);
	bad[2].from_name = "g";
	ok(steps_of(bad, 4, MT_BRCLOCK_TAKEN, 3, true, st, sn, si, &n) == 2 && st[0].op == MT_BROP_RET,
	   "a call from g, main on top: the two newer steps");
	memcpy(bad, flow, sizeof bad);
	bad[1].kind = MT_BR_OTHER;
	ok(steps_of(bad, 4, MT_BRCLOCK_TAKEN, 3, true, st, sn, si, &n) == 1, "an entry of no known type stops it");

	/* a jump into another function: the PLT stub's frame becomes foo's */
	static const struct mt_brentry plt[] = {{0x5006, 0x6000, "foo@plt", "foo", 2, MT_BR_JUMP},
						{0x100c, 0x5000, "main", "foo@plt", 3, MT_BR_CALL}};
	k = steps_of(plt, 2, MT_BRCLOCK_NONE, 1, true, st, sn, si, &n);
	ok(k == 2 && st[0].op == MT_BROP_CALL && st[0].name == FOO_PLT && st[1].op == MT_BROP_TAIL && st[1].name == FOO &&
		   st[1].ip == 0x6000, "call foo@plt, then its jump: foo in its place");

	/* played forward from the previous sample. It found f in main (main
	 * waiting at 0x1010); since: f returns to main, main calls g (to come
	 * back to 0x1025), g's syscall is cut short by a signal whose handler
	 * h (an entry of another type) jumps once; the sample finds h on top
	 * of g. Taken-branch clock, period 4 = the 4 entries; cycles 2, 3, 1,
	 * 4 fill (900, 1000]: 10 ns a cycle, so the jump at 1000, the signal
	 * at 980, the call at 950, the return at 940. */
	const char *sig_names[3] = {MAIN, G, H}, *prev_names[2] = {MAIN, F};
	const uint64_t sig_ips[3] = {0x1025, 0x3007, 0x4008}, prev_ips[2] = {0x1010, 0x2004};
	struct mt_brentry sig[4] = {
		{0x4002, 0x4008, H, H, 2, MT_BR_JUMP},
		{0x3005, 0x4000, G, H, 3, MT_BR_OTHER},
		{0x1020, 0x3000, MAIN, G, 1, MT_BR_CALL},
		{0x2010, 0x1010, F, MAIN, 4, MT_BR_RET},
	};
	struct mt_brwindow w = {.names = sig_names, .ips = sig_ips, .nf = 3, .b = sig, .nb = 4, .time = 1000,
				.lower = 900, .has_lower = true, .clock = MT_BRCLOCK_TAKEN, .period = 4,
				.prev_names = prev_names, .prev_ips = prev_ips, .prev_n = 2};
	size_t fwd;
	k = mt_brwindow_steps(&w, st, sn, si, 16, &n, &fwd);
	ok(k == 3 && fwd == 2, "the signal stops the undoing after the jump; the two before it played forward");
	ok(st[0].op == MT_BROP_RET && st[0].time == 940 && st[0].ret_ip == 0x1010 && st[1].op == MT_BROP_CALL &&
		   st[1].name == G && st[1].ip == 0x3000 && st[1].time == 950 && st[1].ret_ip == 0x1025,
	   "f returns at 940; g called at 950, main waiting where the sample's stack says (0x1025)");
	ok(st[2].op == MT_BROP_NONE && st[2].time == 1000, "then the undone jump in h, at the sample's time");
	ok(n == 3 && sn[0] == MAIN && sn[1] == G && sn[2] == H && si[2] == 0x4002,
	   "the undone steps start from the sample's stack, h at the jump: the handler's frame added between");
	/* not known to follow the previous sample: nothing played forward */
	w.period = 5;
	ok(mt_brwindow_steps(&w, st, sn, si, 16, &n, &fwd) == 1 && fwd == 0,
	   "a period longer than the branch stack: the entries since the sample not all there");
	w.period = 4;
	w.clock = MT_BRCLOCK_CYCLES;
	w.period = 100;
	ok(mt_brwindow_steps(&w, st, sn, si, 16, &n, &fwd) == 1 && fwd == 0,
	   "a cycle clock: which entries came since the sample is not known");
	w.clock = MT_BRCLOCK_TAKEN;
	w.period = 4;
	w.prev_n = 0;
	ok(mt_brwindow_steps(&w, st, sn, si, 16, &n, &fwd) == 1 && fwd == 0,
	   "the previous event not a stack sample: no stack to play forward from");
	w.prev_n = 2;
	/* forward ends in main, g; a sample's stack of main, f, h does not
	 * start with it: refused */
	const char *other_names[3] = {MAIN, F, H};
	w.names = other_names;
	ok(mt_brwindow_steps(&w, st, sn, si, 16, &n, &fwd) == 1 && fwd == 0 && n == 3 && sn[1] == F,
	   "played forward into a stack the sample's does not begin with: dropped");
	w.names = sig_names;
	/* the previous stack's leaf is not where the oldest entry comes from */
	prev_names[1] = G;
	ok(mt_brwindow_steps(&w, st, sn, si, 16, &n, &fwd) == 1 && fwd == 0,
	   "the oldest entry's origin not the previous leaf: nothing forward");
	prev_names[1] = F;
	/* a call and its return played forward: the return gives the call
	 * its return address */
	struct mt_brentry callret[4] = {
		{0x3005, 0x4000, G, H, 1, MT_BR_OTHER},
		{0x2010, 0x1010, F, MAIN, 1, MT_BR_RET},
		{0x3010, 0x2009, G, F, 1, MT_BR_RET},
		{0x2004, 0x3000, F, G, 1, MT_BR_CALL},
	};
	const char *h_names[2] = {MAIN, H};
	const uint64_t h_ips[2] = {0x1010, 0x4000};
	w.b = callret;
	w.names = h_names;
	w.ips = h_ips;
	w.nf = 2;
	k = mt_brwindow_steps(&w, st, sn, si, 16, &n, &fwd);
	ok(k == 3 && fwd == 3 && st[0].op == MT_BROP_CALL && st[0].ret_ip == 0x2009 && st[1].op == MT_BROP_RET &&
		   st[1].ret_ip == 0x2009 && st[2].op == MT_BROP_RET && st[2].ret_ip == 0x1010,
	   "f calls g, g returns to 0x2009 (the call's return address), f to main; the handler's entry left");
	ok(st[0].time == 925 && st[1].time == 950 && st[2].time == 975, "at 925, 950, 975 (25 ns a branch)");
	return tap_done();
}
