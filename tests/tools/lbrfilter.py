#!/usr/bin/env python3
"""Ready an LBR call-stack recording's samples for framecmp.py.

Usage: lbrfilter.py PERF_SCRIPT MT_EVENTS PERF_OUT MT_OUT

PERF_SCRIPT: `perf script -F tid,time,ip,sym --ns` of a --call-graph lbr
recording (mt-synth's lbr variant); MT_EVENTS: the same through
mt-pt2events | mt-symbolize. Written to PERF_OUT and MT_OUT without the
samples whose LBR was empty (perf's one frame there is no frame of the
run: it reads past the sample), and with perf's _init frames at a PLT
stub (libc_flow's raise@plt, deep's __cxa_finalize@plt in .plt.got) named
as mt names them, by position. Prints the counts; fails past 3 empty
samples or PLT frames in more than one sample in 20. Test instrument.
"""
import sys

import sys
perf, mt, perf_out, mt_out = sys.argv[1:]
# samples with no LBR entry: perf's one frame is no frame of the run
empty, names = set(), {}
for line in open(mt):
    c = line.rstrip("\n").split("\t")
    if len(c) > 3 and c[3] == "sample":
        key = "%s %s" % (c[2], c[0])
        if not any(x.startswith("branch=") for x in c):
            empty.add(key)
        fr = [x[6:].split(" ")[1] if " " in x[6:] else "" for x in c if x.startswith("frame=")]
        names[key] = [n.split("+0x")[0] for n in fr][::-1]
keep, key, at, dropped, plt = True, "", 0, 0, 0
with open(perf_out, "w") as out:
    for line in open(perf):
        if line.strip() and not line.startswith("\t"):
            f = line.split()
            key = "%s %s" % (f[0], f[1].rstrip(":").replace(".", ""))
            keep, at = key not in empty, 0
            dropped += not keep
        elif line.startswith("\t"):
            # perf's _init stretched over .plt (libc_flow's raise@plt) or
            # .plt.got (deep's __cxa_finalize@plt)
            mine = names.get(key, [])
            if line.endswith(" _init\n") and at < len(mine) and mine[at].endswith("@plt"):
                line = line[: -len("_init\n")] + mine[at] + "\n"
                plt += 1
            at += 1
        if keep:
            out.write(line)
with open(mt_out, "w") as out:
    for line in open(mt):
        c = line.split("\t")
        if len(c) > 3 and c[3] == "sample" and "%s %s" % (c[2], c[0]) in empty:
            continue
        out.write(line)
print("samples with an empty call stack, left out:", dropped, "; perf's _init frames at a PLT:", plt)
assert dropped <= 3 and plt * 20 <= len(names)
