#!/usr/bin/env python3
"""Reads an FXT file back (the test reader for mt-toperfetto --format=fxt).

Checks the framing of shared/docs/perfetto-output.md section 7: the magic
word, a provider record before any other, sizes that fit, string and thread
references defined before use, kernel objects for every thread. Prints one
line per slice (a complete event, or a duration begin matched by its end):
"tid depth name" (depth from the events' nesting, which must be laminar per
thread) and a summary on stderr. Exit 0 valid,
1 invalid."""
import struct
import sys


def fail(off, what):
    sys.stderr.write("fxtread: offset %d: %s\n" % (off, what))
    sys.exit(1)


def main():
    data = open(sys.argv[1], "rb").read()
    if len(data) < 8 or struct.unpack_from("<Q", data, 0)[0] != 0x0016547846040010:
        fail(0, "no FXT magic word")
    strings, threads, thread_koids = {}, {}, set()
    have_provider = False
    stacks = {}   # tid -> list of open ends
    events = 0
    off = 8
    while off < len(data):
        if off + 8 > len(data):
            fail(off, "truncated header")
        h = struct.unpack_from("<Q", data, off)[0]
        rtype, size = h & 15, (h >> 4) & 0xFFF
        if size == 0 or off + size * 8 > len(data):
            fail(off, "bad record size %d" % size)
        words = struct.unpack_from("<%dQ" % size, data, off)
        if rtype == 0:
            have_provider = True
        elif not have_provider:
            fail(off, "record before any provider record")
        if rtype == 2:
            idx, ln = (h >> 16) & 0x7FFF, (h >> 32) & 0x7FFF
            if idx == 0 or 1 + (ln + 7) // 8 != size:
                fail(off, "bad string record")
            strings[idx] = data[off + 8: off + 8 + ln].decode("utf-8", "replace")
        elif rtype == 3:
            threads[(h >> 16) & 0xFF] = (words[1], words[2])
        elif rtype == 7:
            if ((h >> 24) & 0xFFFF) not in strings:
                fail(off, "kernel object name not defined")
            if (h >> 16) & 0xFF == 2:
                thread_koids.add(words[1])
        elif rtype == 4:
            etype, nargs = (h >> 16) & 15, (h >> 20) & 15
            tref, cref, nref = (h >> 24) & 0xFF, (h >> 32) & 0xFFFF, (h >> 48) & 0xFFFF
            if tref not in threads:
                fail(off, "thread ref %d not defined" % tref)
            if threads[tref][1] not in thread_koids:
                fail(off, "thread without a kernel object")
            for ref in (cref, nref):
                if ref and not ref & 0x8000 and ref not in strings:
                    fail(off, "string ref %d not defined" % ref)
            w = 2
            for _ in range(nargs):
                a = words[w]
                if ((a >> 16) & 0xFFFF) not in strings:
                    fail(off, "arg name not defined")
                w += (a >> 4) & 0xFFF
            tid = threads[tref][1] & 0xFFFFFFFF
            st = stacks.setdefault(tid, [])
            if etype == 4 or etype == 2:
                start = words[1]
                end = words[w] if etype == 4 else None
                if end is not None and end < start:
                    fail(off, "complete event ends before it starts")
                # the writer's rule: a slice that ended at or before this start is closed
                while st and st[-1] is not None and st[-1] <= start:
                    st.pop()
                if st and end is not None and st[-1] is not None and end > st[-1]:
                    fail(off, "slice outlives its parent")
                st.append(end)
                events += 1
                print("%d\t%d\t%s" % (tid, len(st), strings.get(nref, "")))
            elif etype == 3:
                # a duration end closes the innermost begin (its complete children first)
                t = words[1]
                while st and st[-1] is not None and st[-1] <= t:
                    st.pop()
                if not st or st[-1] is not None:
                    fail(off, "duration end without a begin")
                st.pop()
        off += size * 8
    for tid, st in stacks.items():
        if None in st:
            fail(off, "thread %d: a duration begin never ends" % tid)
    sys.stdout.flush()
    sys.stderr.write("fxtread: ok events=%d strings=%d threads=%d\n" % (events, len(strings), len(threads)))


main()
