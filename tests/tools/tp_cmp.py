#!/usr/bin/env python3
"""Hold what Perfetto's own importer reads from a trace against its slices.

Usage: tp_cmp.py TRACE_PROCESSOR_SHELL TRACE THREADS [EVENTS]

TRACE: a file mt-toperfetto wrote (.pftrace, Chrome JSON, .json.gz, FXT);
THREADS: the same trace as `mt-toperfetto --format=threads`, the oracle
(PID TID NS begin|end|instant|sample NAME); EVENTS: the event stream it was
made from, whose comm lines name the processes and threads.

Per thread, Perfetto's slices (trace_processor's slice table on the
thread's track: ts, dur, depth, name; no depth for a 0 ns one, which
Perfetto stacks on others of its time) must be THREADS' slices and
instants to the nanosecond (times relative: a Perfetto trace counts from the perf clock,
the others from the first event), the threads and processes named as the
comm lines say, and the stats table must hold no error or data loss (but
one: where the trace's clock is a recording's own, perf record -k, the
importer says once that BOOTTIME, a Perfetto file's own, is unrelated).
Prints counts and the first differences; exit 0 when all agree, 1
otherwise, 2 when trace_processor cannot run. Test instrument.
"""
import collections
import csv
import io
import subprocess
import sys

# event samples: JSON and FXT put them on the thread's track as instants of
# category "sample", Perfetto's own format on tracks of their own; left out
SLICES = """select t.tid as tid, s.ts as ts, s.dur as dur, s.depth as depth, s.name as name
from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid)
where s.category is null or s.category != 'sample'
order by t.tid, s.ts, s.depth"""
THREADS = "select t.tid as tid, t.name as name, p.pid as pid, p.name as pname " \
          "from thread t left join process p using (upid) where t.tid != 0"
STATS = "select name, idx, severity, value from stats where value > 0 and severity in ('error', 'data_loss')"
CLOCK = "select int_value from metadata where name = 'trace_time_clock_id'"
UNRELATED = "select (select int_value from args where key = 'source_clock_id') as source, " \
            "(select int_value from args where key = 'target_clock_id') as target"


def query(tp, trace, sql):
    r = subprocess.run([tp, "-Q", sql, trace], capture_output=True, text=True, errors="replace")
    if r.returncode:
        print(f"trace_processor failed ({r.returncode}): {r.stderr.strip()[-500:]}", file=sys.stderr)
        sys.exit(2)
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    return rows


def truth_of(path, samples):
    """tid -> [(begin, dur, depth, name)], in (begin, depth) order; and pids.
    samples: event samples are 0 ns slices on the thread too."""
    out = collections.defaultdict(list)
    stacks = collections.defaultdict(list)
    pid = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 4:
            continue
        tid, t, kind = int(f[1]), int(f[2]), f[3]
        pid[tid] = int(f[0])
        st = stacks[tid]
        if kind == "begin":
            st.append(len(out[tid]))
            out[tid].append([t, None, len(st) - 1, f[4] if len(f) > 4 else ""])
        elif kind == "end":
            s = out[tid][st.pop()]
            s[1] = t - s[0]
        elif kind == "instant" or (kind == "sample" and samples):  # a 0 ns slice where it happens
            out[tid].append([t, 0, len(st), f[4] if len(f) > 4 else ""])
    return {k: sorted((tuple(s) for s in v), key=lambda s: (s[0], s[2])) for k, v in out.items()}, pid


def comms_of(path):
    names = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("# comm\t"):
                _, pid, tid, name = line.rstrip("\n").split("\t", 3)
                names[int(tid)] = (int(pid), name)
            elif not line.startswith("#"):
                break
    return names


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    tp, trace, threads = sys.argv[1:4]
    # FXT (magic-trace's viewer format) draws event samples as 0 ns events
    # on the thread, uncategorized
    truth, pids = truth_of(threads, trace.endswith((".fxt", ".fxt.gz")))
    got = collections.defaultdict(list)
    for r in query(tp, trace, SLICES):
        got[int(r["tid"])].append((int(r["ts"]), int(r["dur"]), int(r["depth"]), r["name"]))
    bad = 0
    first_tp = min((s[0] for v in got.values() for s in v), default=0)
    first_mt = min((s[0] for v in truth.values() for s in v), default=0)
    shift = first_tp - first_mt
    total = 0
    for tid in sorted(set(truth) | set(got)):
        # Perfetto stacks instants and 0 ns slices of one time on each other
        # (each starts inside the one before): their depth is its layout,
        # not the trace's; held without it, in name order
        def key(s):
            return (s[0], s[2] if s[1] else -1, s[3])

        def flat(s):
            return s if s[1] else (s[0], 0, None, s[3])
        want = sorted((flat((b + shift, d, depth, n)) for b, d, depth, n in truth.get(tid, [])), key=key)
        have = sorted((flat(s) for s in got.get(tid, [])), key=key)
        total += len(have)
        if have != want:
            bad += 1
            i = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
            print(f"tid {tid}: Perfetto reads {len(have)} slices, the trace has {len(want)}; first difference:")
            print(f"  Perfetto: {have[i] if i < len(have) else None}")
            print(f"  trace:    {want[i] if i < len(want) else None}")
    clock = query(tp, trace, CLOCK)
    clock = int(clock[0]["int_value"]) if clock else 6
    for r in query(tp, trace, STATS):
        if r["name"] == "clock_sync_unrelatable_clock_domains" and clock != 6 and r["value"] == "1" \
                and query(tp, trace, UNRELATED) == [{"source": "6", "target": str(clock)}]:
            # the trace's clock is the recording's (perf record -k), and
            # Perfetto's importer says once that a proto file's own clock,
            # BOOTTIME, is not related to it (nothing in that clock to drop)
            print(f"stats: {r['name']} = 1: BOOTTIME, the file's, against the trace's clock {clock}")
            continue
        print(f"stats: {r['name']}[{r['idx']}] = {r['value']} ({r['severity']})")
        bad += 1
    if len(sys.argv) == 5:
        comms = comms_of(sys.argv[4])
        for r in query(tp, trace, THREADS):
            tid = int(r["tid"])
            if tid not in truth:
                continue
            want = comms.get(tid, (pids[tid], None))[1]
            pname = comms.get(pids[tid], (pids[tid], None))[1]
            if want is not None and r["name"] != want:
                print(f"tid {tid}: thread named {r['name']!r}, the stream says {want!r}")
                bad += 1
            # FXT names a process as magic-trace does, "NAME [pid=PID]"
            if pname is not None and r["pname"] not in (pname, f"{pname} [pid={pids[tid]}]"):
                print(f"tid {tid}: process named {r['pname']!r}, the stream says {pname!r}")
                bad += 1
    print(f"{len(truth)} threads, {total} slices read by Perfetto: "
          f"{'all as the trace' if not bad else f'{bad} differences'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
