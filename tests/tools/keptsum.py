#!/usr/bin/env python3
"""keptsum.py TRUTH OUT: OUT, mt-pt2events' default output (calls, returns,
syscalls, trace starts and ends, errors, and only the jumps that leave their
function), checked against TRUTH, mt-synth's ground truth of every taken
branch (the --all-branches form):

- OUT's events are TRUTH's in order, OUT leaving out only jumps (which
  jumps leave a function is mt's to say: the check is that nothing else
  is left out, nothing added, nothing moved);
- each event's instruction count (insn=) is the sum of TRUTH's since the
  event before it in OUT (the jumps left out folded into the next kept);
- time and cycles are not compared (cyccum.py does cycles).
Prints the first difference and exits 1; prints a summary and exits 0."""
import sys


def events(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith('#'):
                continue
            cols = line.rstrip('\n').split('\t')
            # time pid tid kind from to [key=value...]
            extra = dict(c.split('=', 1) for c in cols[6:] if '=' in c)
            out.append((cols[1], cols[2], cols[3], cols[4], cols[5], int(extra.get('insn', 0))))
    return out


def main():
    truth, out = events(sys.argv[1]), events(sys.argv[2])
    i = acc = dropped = 0
    for n, ev in enumerate(out):
        key = ev[:5]
        while i < len(truth) and truth[i][:5] != key:
            if truth[i][2] != 'jump':
                print(f'keptsum: event {n} {key}: truth event {i} {truth[i][:5]} is not a jump, yet left out')
                return 1
            acc += truth[i][5]
            dropped += 1
            i += 1
        if i == len(truth):
            print(f'keptsum: event {n} {key} is not in the truth (after its event {i})')
            return 1
        acc += truth[i][5]
        if acc != ev[5]:
            print(f'keptsum: event {n} {key}: insn={ev[5]}, the truth since the last kept: {acc}')
            return 1
        acc = 0
        i += 1
    rest = [t for t in truth[i:] if t[2] != 'jump']
    if rest:
        print(f'keptsum: the truth goes on with {rest[0]} after the output ends')
        return 1
    print(f'keptsum: {len(out)} events, {dropped + len(truth) - i} jumps left out, insn sums equal')
    return 0


sys.exit(main())
