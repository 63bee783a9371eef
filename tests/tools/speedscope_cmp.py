#!/usr/bin/env python3
"""Hold what speedscope drew against the trace's slices, frame by frame.

Usage: speedscope_cmp.py EXPORT.json SERVED.json THREADS

EXPORT.json: speedscope's own export of what it imported
(speedscope_read.py); SERVED.json: the speedscope file mt-view served, or
the Chrome JSON of one thread it served as it is (for
each profile's thread, in its name "(pid P, tid T)", and its startValue:
speedscope's export counts from 0; the export keeps the profiles' order); THREADS: the same trace as
`mt-toperfetto --format=threads` (PID TID NS begin|end NAME), the oracle:
the slices every format of mt-toperfetto writes.

For every evented profile, each call speedscope shows (its frame's name,
begin, end and depth, in order) must be a slice of that thread, and every
slice of it longer than 0 ns must be shown (speedscope draws no frame 0 ns
long), or as long as the profile's name says slices must be to be drawn
("; slices under X us not drawn"). Each profile's frames must name each function once. Prints counts and
the first differences; exit 0 when all agree, 1 otherwise. Test instrument.
"""
import collections
import json
import re
import sys


def slices_of_threads(path):
    """(pid, tid) -> [(begin, end, depth, name)] in begin order."""
    out = collections.defaultdict(list)
    stacks = collections.defaultdict(list)
    for line in open(path, encoding="utf-8", errors="replace"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 4:
            continue
        key, t, kind = (int(f[0]), int(f[1])), int(f[2]), f[3]
        st = stacks[key]
        if kind == "begin":
            st.append(len(out[key]))
            out[key].append([t, None, len(st) - 1, f[4] if len(f) > 4 else ""])
        elif kind == "end":
            out[key][st.pop()][1] = t
    return {k: [tuple(s) for s in v] for k, v in out.items()}


def calls_of_export(profile, frames, offset, scale=1):
    """speedscope's O/C events -> [(begin, end, depth, name)] in begin order
    (at * scale + offset: ns)."""
    out, st = [], []
    for e in profile["events"]:
        at = round(e["at"] * scale) + offset
        if e["type"] == "O":
            st.append(len(out))
            out.append([at, None, len(st) - 1, frames[e["frame"]]["name"]])
        else:
            i = st.pop()
            if out[i][3] != frames[e["frame"]]["name"]:
                raise ValueError(f"close of {frames[e['frame']]['name']} ends {out[i][3]}")
            out[i][1] = at
    return [tuple(c) for c in out]


def chrome_json(export, served, truth):
    """SERVED is Chrome JSON of one thread: speedscope's Chrome importer
    counts microseconds from the first event's ts and names a frame NAME
    ARGS-as-JSON."""
    ev = [e for e in served["traceEvents"] if e.get("ph") in ("B", "E", "X")]
    keys = {(e["pid"], e["tid"]) for e in ev}
    if len(keys) != 1 or len(export["profiles"]) != 1:
        print("Chrome JSON: one thread only")
        return 1
    offset = min(round(e["ts"] * 1000) for e in ev)
    frames = [dict(f, name=re.sub(r" \{.*\}$", "", f["name"])) for f in export["shared"]["frames"]]
    have = calls_of_export(export["profiles"][0], frames, offset, 1000)
    want = [s for s in truth.get(keys.pop(), []) if s[1] > s[0]]
    have = [c for c in have if c[1] > c[0]]
    if have != want:
        i = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
        print(f"speedscope shows {len(have)} calls, the trace has {len(want)} slices; first difference at call {i}:")
        print(f"  speedscope: {have[i] if i < len(have) else None}")
        print(f"  trace:      {want[i] if i < len(want) else None}")
        return 1
    print(f"1 profiles, {len(have)} calls shown: all as the trace")
    return 0


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    export = json.load(open(sys.argv[1]))
    served = json.load(open(sys.argv[2]))
    truth = slices_of_threads(sys.argv[3])
    if "traceEvents" in served:
        return chrome_json(export, served, truth)
    bad = 0
    names = [f["name"] for f in export["shared"]["frames"]]
    # speedscope keeps a profile's frames apart from another's: one frame
    # per function is asked of each profile
    for p in export["profiles"]:
        used = {e["frame"] for e in p["events"]}
        dup = [n for n, c in collections.Counter(names[i] for i in used).items() if c > 1]
        if dup:
            print(f"{p['name']}: frames named more than once: {len(dup)}, e.g. {dup[:3]}")
            bad += 1
    # profiles in the order served (speedscope may rename one after the page's title)
    if len(export["profiles"]) != len(served["profiles"]):
        print(f"speedscope shows {len(export['profiles'])} of the {len(served['profiles'])} profiles")
        bad += 1
    evented = [(p, e) for p, e in zip(served["profiles"], export["profiles"]) if p["type"] == "evented"]
    total = 0
    for p, e in evented:
        m = re.search(r"\(pid (\d+), tid (\d+)\)", p["name"])
        key = (int(m.group(1)), int(m.group(2)))
        # the reduction the profile states (mt-toperfetto --max-slices):
        # "; slices under X us not drawn"
        cut = re.search(r"; slices under (\d+)\.(\d{3}) us not drawn", p["name"])
        min_ns = int(cut.group(1)) * 1000 + int(cut.group(2)) if cut else 1
        want = [s for s in truth.get(key, []) if s[1] - s[0] >= max(min_ns, 1)]
        # a 0 ns slice has no children longer than it: the depths of
        # those shown stay as they are
        try:
            have = calls_of_export(e, export["shared"]["frames"], p["startValue"])
        except (ValueError, IndexError) as err:
            print(f"{p['name']}: mis-nested: {err}")
            bad += 1
            continue
        total += len(have)
        if have != want:
            bad += 1
            diff = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
            print(f"{p['name']}: speedscope shows {len(have)} calls, the trace has {len(want)} slices; "
                  f"first difference at call {diff}:")
            print(f"  speedscope: {have[diff] if diff < len(have) else None}")
            print(f"  trace:      {want[diff] if diff < len(want) else None}")
    print(f"{len(evented)} profiles, {total} calls shown, {len(names)} frames: "
          f"{'all as the trace' if not bad else f'{bad} differences'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
