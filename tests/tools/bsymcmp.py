#!/usr/bin/env python3
"""Hold mt's branch entry names against perf script -F brstacksym's.

Usage: bsymcmp.py PERF_BRSTACKSYM MT_BRSTACKSYM

Both: a line per sample, its entries FROM/TO/FLAGS... separated by spaces,
each end NAME+0xOFF or [unknown] (MT_BRSTACKSYM made from mt-symbolize's
branch_sym= and branch= columns). Equal line by line, but where perf 6.1
misnames a PLT stub that mt names NAME@plt (framecmp.same_frame: mt's
names held against objdump in symbolize.bats). Prints the counts and the
first differences; exit 0 when all agree and there is something to
compare, 1 otherwise. Test instrument.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from framecmp import same_frame  # noqa: E402


def ends(entry):
    # FROM/TO/FLAGS: the names, +0xOFF dropped for the PLT rule; a name may
    # hold '/' itself, the offsets mark the ends
    m = re.match(r"^(\[unknown\]|.+?\+0x[0-9a-f]+)/(\[unknown\]|.+?\+0x[0-9a-f]+)(/.*)$", entry)
    return m.groups() if m else (entry, "", "")


def same_end(p, m):
    if p == m:
        return True
    return m.endswith("@plt+0x0") and same_frame(re.sub(r"\+0x[0-9a-f]+$", "", p), m[: -len("+0x0")])


def main():
    perf = open(sys.argv[1]).read().splitlines()
    mt = open(sys.argv[2]).read().splitlines()
    bad, plt = [], 0
    for i, (p, m) in enumerate(zip(perf, mt)):
        if p == m:
            continue
        pe, me = p.split(" "), m.split(" ")
        ok = len(pe) == len(me)
        for a, b in zip(pe, me):
            if not ok:
                break
            (pf, pt, pr), (mf, mtn, mr) = ends(a), ends(b)
            ok = pr == mr and same_end(pf, mf) and same_end(pt, mtn)
        if ok:
            plt += 1
        else:
            bad.append((i + 1, p, m))
    print(f"brstacksym: {len(perf)} samples of perf, {len(mt)} of mt; {plt} differ only in a PLT stub perf "
          f"misnames; {len(bad)} differ")
    for i, p, m in bad[:3]:
        print(f"  line {i}:\n    perf {p[:300]}\n    mt   {m[:300]}")
    sys.exit(0 if not bad and len(perf) == len(mt) and perf else 1)


main()
