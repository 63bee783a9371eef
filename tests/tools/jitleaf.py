#!/usr/bin/env python3
"""Hold the names mt gives samples in JIT code against perf script's.

Usage: jitleaf.py PERF_SCRIPT EVENTS DSO_RE HOT MIN

PERF_SCRIPT: `perf script -F tid,time,ip,sym --ns --no-inline` of the
recording (perf's names: its own for perf maps, perf inject --jit's for
jitdumps); EVENTS: mt-symbolize's stream of the same recording. Every
sample whose from_dso matches DSO_RE (the JIT's: a jitdump, a perf map)
must have perf's name for its innermost frame, the sample found by thread
and time; at least MIN such samples, over MIN/2 with HOT in their name.
Prints the counts and the first differences; exit 0 when all agree, 1
otherwise. Test instrument.
"""
import re
import sys

perf_file, events, dso_re, hot_name, least = sys.argv[1], sys.argv[2], re.compile(sys.argv[3]), sys.argv[4], \
    int(sys.argv[5])
perf, cur = {}, None
for line in open(perf_file, errors="replace"):
    line = line.rstrip("\n")
    if not line.strip():
        cur = None
    elif not line.startswith("\t"):
        f = line.split()
        cur = (int(f[0]) & 0xFFFFFFFF, int(f[1].rstrip(":").replace(".", "")))
        perf[cur] = []
    elif cur is not None:
        parts = line.strip().split(None, 1)
        perf[cur].append(re.sub(r"\+0x[0-9a-f]+$", "", parts[1] if len(parts) > 1 else ""))
n = same = hot = 0
for line in open(events, errors="replace"):
    f = line.rstrip("\n").split("\t")
    if len(f) < 4 or f[3] != "sample":
        continue
    if not any(x.startswith("from_dso=") and dso_re.search(x[9:]) for x in f):
        continue
    mt = next(x[9:] for x in f if x.startswith("from_sym="))
    p = perf.get((int(f[2]) & 0xFFFFFFFF, int(f[0])), ["(no such sample)"])[0]
    n += 1
    same += p == mt
    hot += hot_name in mt
    if p != mt and n - same <= 5:
        print("differs: perf %r, mt %r" % (p, mt))
print("%d samples in JIT code, %d named as perf names them, %d in %s" % (n, same, hot, hot_name))
sys.exit(0 if n >= least and same == n and hot > least // 2 else 1)
