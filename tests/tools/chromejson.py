"""Chrome JSON's slices as complete events, for tests reading mt's JSON.

mt-toperfetto writes slices as B and E events (write_json.c: X's ts + dur is
added in doubles by its readers); complete(events) pairs each B with the E
that closes it (the thread's innermost open B) and gives it back as the X
event it stands for: ph "X", dur in microseconds from the two times'
nanoseconds. X events pass as they are. Order: the slices' begins, as
written. Test instrument (imported: tests' PYTHONPATH has tests/tools).
"""


def _ns(us):
    return round(us * 1000)


def complete(events):
    out, open_b = [], {}
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            out.append(e)
        elif ph == "B":
            x = dict(e, ph="X")
            out.append(x)
            open_b.setdefault((e.get("pid"), e.get("tid")), []).append(x)
        elif ph == "E":
            st = open_b.get((e.get("pid"), e.get("tid")))
            if st:
                x = st.pop()
                x["dur"] = (_ns(e["ts"]) - _ns(x["ts"])) / 1000
    return [x for x in out if "dur" in x]
