#!/usr/bin/env python3
"""Hold a timeline drawn from branch stacks against the single-step truth's.

Usage: brcmp.py TRUTH TRUTH_BASE MT MT_BASE LO HI SHIFT

TRUTH, MT: one thread's timeline as `mt-toperfetto --format=threads`
writes it (PID TID NS begin|end NAME, NS since the file's first event);
TRUTH_BASE, MT_BASE: the perf time of each file's first event. TRUTH is
drawn from mt-synth's exact flow of the run (a PT variant's truth), MT
from the brstack variant's samples. Their slices (begin, end, depth,
name), absolute, the truth's moved by SHIFT ns, must be the same set
among those that begin after LO and end before HI. Left out: the truth's
[syscall] slices (a user-only branch stack sees no kernel), depth 0 (a
callchain names the outermost frame by its return address, which a call
as a function's last instruction puts in the next function: ld.so's
_start calls _dl_start, which returns into _dl_start_user), and where a
place has no symbol the truth's "[unknown @ ADDR (DSO)]" is the branch
stack's "[unknown]" (brstacksym names no object).

Prints the counts and the first differences; exit 0 when the sets are
equal and not empty, 1 otherwise. Test instrument.
"""
import sys


def slices(path, base):
    out, stack = [], []
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) < 5:
            continue
        t = int(f[2]) + base
        if f[3] == "begin":
            stack.append((t, f[4]))
        elif f[3] == "end" and stack:
            b, name = stack.pop()
            out.append((b, t, len(stack), name))
    return sorted(out)


def norm(name):
    return "[unknown]" if name.startswith("[unknown @ ") else name


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    tp, tb, mp, mb, lo, hi, shift = sys.argv[1:]
    tb, mb, lo, hi, shift = int(tb), int(mb), int(lo), int(hi), int(shift)
    truth = [(b + shift, e + shift, d, norm(n)) for b, e, d, n in slices(tp, tb) if n != "[syscall]"]
    mt = slices(mp, mb)
    want = [s for s in truth if lo < s[0] and s[1] < hi and s[2] > 0]
    got = [s for s in mt if lo < s[0] and s[1] < hi and s[2] > 0]
    ws, gs = set(want), set(got)
    miss, extra = [s for s in want if s not in gs], [s for s in got if s not in ws]
    print(f"brcmp: {len(want)} slices of the truth in range, {len(got)} of mt's; "
          f"{len(miss)} missing, {len(extra)} extra")
    for s in miss[:10]:
        print("missing:", s)
    for s in extra[:10]:
        print("extra:  ", s)
    sys.exit(1 if miss or extra or not want else 0)


main()
