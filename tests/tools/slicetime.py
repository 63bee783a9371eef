#!/usr/bin/env python3
"""Self and total time per function of an mt-toperfetto --format=json trace.

Usage: slicetime.py TRACE.json [--under=PARENT]
Prints one line per function, most self time first:
  NAME<TAB>SLICES<TAB>SELF_NS<TAB>TOTAL_NS
Self time is a slice's duration less its children's (the slices of its
thread that lie inside it one level down), as perf report's "Self" is a
function's own samples. --under=PARENT: only slices whose enclosing slice
is PARENT. Test instrument: reads what the writer wrote.
"""
import collections
import json
import sys

from chromejson import complete


def main():
    under = None
    for a in sys.argv[2:]:
        if a.startswith("--under="):
            under = a[len("--under="):]
    with open(sys.argv[1]) as f:
        events = json.load(f)["traceEvents"]
    by_thread = collections.defaultdict(list)
    for e in complete(events):
        by_thread[(e["pid"], e["tid"])].append(e)
    slices = collections.Counter()
    self_ns = collections.Counter()
    total_ns = collections.Counter()
    for evs in by_thread.values():
        # outer before inner at the same start: longer first
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [end_us, name, start_us, child_us, parent]

        def close(entry):
            end, name, start, child, parent = entry
            dur = end - start
            if under is None or parent == under:
                self_ns[name] += round((dur - child) * 1000)
            if stack:
                stack[-1][3] += dur
        for e in evs:
            start, end = e["ts"], e["ts"] + e["dur"]
            while stack and stack[-1][0] <= start + 1e-9:
                close(stack.pop())
            parent = stack[-1][1] if stack else None
            stack.append([end, e["name"], start, 0.0, parent])
            if under is None or parent == under:
                slices[e["name"]] += 1
                total_ns[e["name"]] += round(e["dur"] * 1000)
        while stack:
            close(stack.pop())
    for name, ns in self_ns.most_common():
        if not slices[name]:
            continue
        print(f"{name}\t{slices[name]}\t{ns}\t{total_ns[name]}")


if __name__ == "__main__":
    main()
