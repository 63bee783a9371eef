#!/usr/bin/env python3
"""Hold mt's sample frames against perf script's, sample by sample.

Usage: framecmp.py PERF_SCRIPT_OUTPUT MT_EVENTS [MIN_PERCENT]
PERF_SCRIPT_OUTPUT: `perf script -F tid,time,ip,sym --ns --no-inline`
(Debian's perf 6.1 unwinds --call-graph=dwarf samples with libunwind:
util/unwind-libunwind-local.c); MT_EVENTS: the
same perf.data through mt-pt2events | mt-symbolize. Samples are matched by
thread and time; each one's function names, innermost first, must be
perf's. A perf frame at ffffffffffffffff is left out: where a stack copy
ends, perf's unwinder reports the frame it could not read as pc 0, less
one for a caller (its access_mem gives 0 for a word it cannot read); it
is no frame. Prints the counts and the first differences; exits 1 when fewer
than MIN_PERCENT (default 99) of perf's samples agree, or when the two
name different samples. A sample whose chain mt cut (frames_cut=N) agrees
when its frames are perf's innermost and perf has N more; a PLT stub mt
names NAME@plt agrees with perf 6.1's misnames of it (same_frame). Test
instrument.
"""
import sys


def perf_samples(path):
    out, cur = {}, None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line.strip():
            cur = None
            continue
        if not line.startswith("\t"):  # a sample's line (its tid padded with spaces)
            f = line.split()
            # a thread being reaped: perf prints tid -1, mt the same u32 as 4294967295
            tid, t = int(f[0]) & 0xFFFFFFFF, f[1].rstrip(":").replace(".", "")
            cur = []
            out[(tid, int(t))] = cur
            continue
        f = line.split(None, 1)
        if cur is not None and len(f) == 2 and f[0] != "ffffffffffffffff":
            name = f[1]
            if name.endswith(")") and " (" in name:  # a DSO shown with the symbol
                name = name[: name.rindex(" (")]
            cur.append(name)
    return out


def mt_samples(path):
    out = {}
    for line in open(path, errors="replace"):
        if line.startswith("#"):
            continue
        c = line.rstrip("\n").split("\t")
        if len(c) < 4 or c[3] != "sample":
            continue
        names, cut = [], 0
        for col in c[6:]:
            if col.startswith("frames_cut="):
                cut = int(col[11:])
            if col.startswith("frame="):
                v = col[6:].split(" ", 1)
                name = v[1] if len(v) > 1 else "[unknown]"
                # the DSO: "NAME (DSO)", a DSO such as "/memfd:x (deleted)" too
                for mark in (" (/", " (["):
                    if mark in name:
                        name = name[: name.index(mark)]
                        break
                else:
                    if " (" in name:
                        name = name[: name.rindex(" (")]
                if "+0x" in name:
                    name = name[: name.rindex("+0x")]
                names.append(name)
        out[(int(c[2]) & 0xFFFFFFFF, int(c[0]))] = Frames(names[::-1], cut)
    return out


class Frames(list):
    """A sample's frames, innermost first, and how many outer ones the
    stream left out (frames_cut=N): perf's chain must be these, then N
    more."""

    def __init__(self, names, cut):
        super().__init__(names)
        self.cut = cut

    def holds(self, perf):
        n = len(self)
        if len(perf) != n + self.cut:
            return False
        return all(same_frame(p, m) for p, m in zip(perf[:n], self))


def same_frame(perf, mt):
    """perf 6.1 misnames PLT stubs: .plt.got's as _init or [unknown], libc's
    .plt entries by .rela.plt's order ("@plt" for __tunable_get_val@plt);
    mt names each NAME@plt as objdump labels it (symbolize.bats holds it)."""
    if perf == mt:
        return True
    return mt.endswith("@plt") and (perf in ("_init", "[unknown]") or perf.endswith("@plt"))


def main():
    want = perf_samples(sys.argv[1])
    got = mt_samples(sys.argv[2])
    need = float(sys.argv[3]) if len(sys.argv) > 3 else 99.0
    same = sum(1 for k, v in want.items() if k in got and got[k].holds(v))
    deep = sum(1 for v in want.values() if len(v) > 1)
    print(f"perf samples {len(want)}, mt samples {len(got)}, frames equal {same} "
          f"({100.0 * same / max(len(want), 1):.2f}%), perf samples deeper than one frame {deep}")
    shown = 0
    for k, v in want.items():
        if not (k in got and got[k].holds(v)) and shown < 5:
            print(f"  {k}: perf {v[:8]}\n  {' ' * len(str(k))}  mt   {(got.get(k) or [])[:8]}")
            shown += 1
    ok = set(want) == set(got) and same * 100.0 >= need * len(want) and len(want) > 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
