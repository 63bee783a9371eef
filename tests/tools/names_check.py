#!/usr/bin/env python3
"""Names of any bytes, as each output's own reader reads them (issue 49).

names_check.py KIND FILE RAW_NAME RAW_COMM [TRACE_PROCESSOR]
RAW_NAME and RAW_COMM are hex: the bytes the traced program's names had.
The oracle for UTF-8 readers is Python's own decoder with replacement
(bytes.decode("utf-8", "replace"): one U+FFFD per maximal subpart, the
Unicode Standard's practice); for terminals and TSV, the bytes must hold
no control character (C0 but LF and, in TSV, TAB; DEL; C1) and be UTF-8.

KIND: text | tsv (mt-report), json (mt-report), db (mt-report --db,
read by Python's sqlite3, which refuses TEXT that is not UTF-8),
chrome (mt-toperfetto's JSON), speedscope, tp (a .pftrace or .fxt read by
trace_processor: its slice and thread names).
"""
import csv
import io
import json
import sqlite3
import subprocess
import sys

kind, path = sys.argv[1], sys.argv[2]
raw_name, raw_comm = bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
want_name = raw_name.decode("utf-8", "replace")
want_comm = raw_comm.decode("utf-8", "replace")
data = open(path, "rb").read()


def controls(text, allowed):
    return [hex(ord(c)) for c in text if (ord(c) < 0x20 and c not in allowed) or 0x7f <= ord(c) <= 0x9f]


def fail(msg):
    print(f"{kind} {path}: {msg}", file=sys.stderr)
    sys.exit(1)


if kind in ("text", "tsv"):
    text = data.decode("utf-8")  # strict: raises when not UTF-8
    bad = controls(text, "\n\t" if kind == "tsv" else "\n")
    if bad:
        fail(f"control characters reach the reader: {bad[:10]}")
    # the escaped name is there, recognisably
    if "fib" not in text:
        fail("the function is not there")
    if kind == "tsv":
        rows = text.splitlines()
        n = rows[0].count("\t")
        if any(r.count("\t") != n for r in rows):
            fail("a row with more or fewer fields than the header")
elif kind == "json":
    d = json.loads(data)  # bytes: strict UTF-8
    names = {f["function"] for f in d["functions"]}
    if want_name not in names:
        fail(f"{want_name!r} not among {sorted(names)}")
    comms = {t["comm"] for t in d["threads"]}
    if want_comm not in comms:
        fail(f"{want_comm!r} not among {comms}")
elif kind == "db":
    db = sqlite3.connect(path)
    names = {r[0] for r in db.execute("SELECT name FROM functions")}
    comms = {r[0] for r in db.execute("SELECT comm FROM threads")}
    if want_name not in names or want_comm not in comms:
        fail(f"{want_name!r} / {want_comm!r} not in {names} / {comms}")
elif kind == "chrome":
    d = json.loads(data)
    evs = d["traceEvents"] if isinstance(d, dict) else d
    names = {e.get("name") for e in evs if e.get("ph") in ("B", "X")}
    tnames = {e["args"]["name"] for e in evs if e.get("ph") == "M" and e.get("name") == "thread_name"}
    if want_name not in names or want_comm not in tnames:
        fail(f"{want_name!r} / {want_comm!r} not in {names} / {tnames}")
elif kind == "speedscope":
    d = json.loads(data)
    frames = {f["name"] for f in d["shared"]["frames"]}
    if want_name not in frames:
        fail(f"{want_name!r} not among {frames}")
elif kind == "tp":
    tp = sys.argv[5]

    def query(sql):
        r = subprocess.run([tp, "-Q", sql, path], capture_output=True)
        if r.returncode:
            fail(f"trace_processor failed: {r.stderr.decode('utf-8', 'replace')[-400:]}")
        return list(csv.DictReader(io.StringIO(r.stdout.decode("utf-8"))))

    # as hex: trace_processor's CSV does not quote a '"' inside a value
    def names(sql):
        return {bytes.fromhex(r["h"]).decode("utf-8") for r in query(sql)}
    tnames = names("SELECT hex(name) AS h FROM thread WHERE tid <> 0 AND name IS NOT NULL")
    names = names("SELECT DISTINCT hex(name) AS h FROM slice")
    errors = query("SELECT name, value FROM stats WHERE (severity = 'error' OR severity = 'data_loss') AND value > 0")
    if want_name not in names or want_comm not in tnames:
        fail(f"{want_name!r} / {want_comm!r} not in {names} / {tnames}")
    if errors:
        fail(f"trace_processor's errors: {errors}")
else:
    fail("unknown kind")
print(f"ok: {kind}")
