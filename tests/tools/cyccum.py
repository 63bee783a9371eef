#!/usr/bin/env python3
"""Cycles of two event streams (mt-events(5) text), held against each other.

Usage: cyccum.py TRUTH DECODED
The running sum of the cyc columns must be the same at every event that
needs a packet of its own (return, syscall, sysret, interrupt, iret,
trace-start, trace-end, a conditional jump) and at the end; the events
are the same, one for one. A direct call or jump needs no packet: its
cycles may be those of the packet read after it. Test instrument: exits 1
naming the first event where the sums part.
"""
import re
import sys

NEEDS_PACKET = {"return", "syscall", "sysret", "interrupt", "iret", "trace-start", "trace-end"}


def running(path):
    out, total = [], 0
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            m = re.search(r"\tcyc=(\d+)", line)
            total += int(m.group(1)) if m else 0
            out.append((cols[3] in NEEDS_PACKET or "\tcond=1" in line, total, line.rstrip("\n")))
    return out


def main():
    a, b = running(sys.argv[1]), running(sys.argv[2])
    if len(a) != len(b):
        sys.exit("%d events in the truth, %d decoded" % (len(a), len(b)))
    for i, (x, y) in enumerate(zip(a, b)):
        if (x[0] or i == len(a) - 1) and x[1] != y[1]:
            sys.exit("event %d: %d cycles so far in the truth, %d decoded\n  %s\n  %s" % (i + 1, x[1], y[1], x[2], y[2]))
    if not a or a[-1][1] == 0:
        sys.exit("no cycles in the truth")
    print("%d events, %d cycles" % (len(a), a[-1][1]))


if __name__ == "__main__":
    main()
