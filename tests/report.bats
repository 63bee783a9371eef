#!/usr/bin/env bats
# mt-report, the calls database and folded stacks (issue 21). Oracles, none
# of them mt's own reconstruction: uftrace's exact call counts of the same
# binary (calls_pg: fentry nops that `uftrace record -P .` patches, run
# unpatched under mt-synth), perf script's instructions per symbol on the
# same perf.data, perf report --children on a real sampled recording, the
# program's own structure (run(n) makes n calls), and the slices of
# mt-toperfetto's trace as an independent reader (tests/tools/slicetime.py)
# sees them: the report must say what the timeline shows.

load helpers
bats_require_minimum_version 1.5.0

REPORT=$MT_BIN/mt-report
SYM=$MT_BIN/mt-symbolize
TP=$MT_BIN/mt-toperfetto

setup_file() {
	local d=$BATS_FILE_TMPDIR
	for n in 50 100; do
		"$SYNTH" -q -o "$d/c$n" --variants=tsc,plain -- "$MT_PROGS/calls_pg" "$n" > /dev/null 2>&1
		"$PT2EVENTS" "$d/c$n/tsc.data" | "$SYM" > "$d/c$n.ev"
		# --no-sched: no linux:schedule entries when the run is descheduled (not a function)
		uftrace record --no-sched -d "$d/u$n" -P . "$MT_PROGS/calls_pg" "$n" > /dev/null 2>&1
		uftrace report -d "$d/u$n" -f call --no-pager | awk 'NR > 2 && $2 !~ /^linux:/ { print $2 "\t" $1 }' | sort > "$d/u$n.calls"
	done
	"$PT2EVENTS" "$MT_FIXTURES/threads/per-cpu.data" | "$SYM" > "$d/threads.ev"
}

# NAME<TAB>CALLS of a TSV report, sorted by name
tsv_calls() { awk -F'\t' 'NR > 1 { print $1 "\t" $2 }' "$1" | sort; }

@test "call counts equal uftrace's for every function it counts, in two runs" {
	cd "$BATS_TEST_TMPDIR"
	for n in 50 100; do
		"$REPORT" --format=tsv "$BATS_FILE_TMPDIR/c$n.ev" > "$BATS_TEST_TMPDIR/r$n.tsv"
		tsv_calls "$BATS_TEST_TMPDIR/r$n.tsv" > "$BATS_TEST_TMPDIR/mt$n"
		cat "$BATS_FILE_TMPDIR/u$n.calls"
		[ "$(wc -l < "$BATS_FILE_TMPDIR/u$n.calls")" -ge 7 ] # main run step twice leaf fact printf at least
		# every function uftrace counted, with uftrace's count
		join -t $'\t' -a 1 -e MISSING -o 0,1.2,2.2 "$BATS_FILE_TMPDIR/u$n.calls" "$BATS_TEST_TMPDIR/mt$n" > both
		cat both
		awk -F'\t' '$2 != $3 { bad = 1 } END { exit bad }' both
	done
	# the program's structure: run(n) calls step and twice n/2 times each
	grep -qx $'step\t25' "$BATS_FILE_TMPDIR/u50.calls"
	grep -qx $'twice\t50' "$BATS_FILE_TMPDIR/u100.calls"
}

# The report and the timeline agree: per function, the calls are its slices
# in mt-toperfetto's trace, total_ns their durations summed, self_ns less
# their children's, to the ns (a JSON trace carries ns exactly).
check_against_slices() { # STREAM
	"$TP" -o "$BATS_TEST_TMPDIR/t.json" "$1"
	python3 "$SLICETIME" "$BATS_TEST_TMPDIR/t.json" | awk -F'\t' '{ print $1 "\t" $2 "\t" $4 "\t" $3 }' | sort > slices
	"$REPORT" --format=tsv "$1" | awk -F'\t' 'NR > 1 { print $1 "\t" $2 "\t" $3 "\t" $4 }' | sort > report
	[ "$(wc -l < slices)" -gt 5 ]
	diff slices report
}

@test "calls, total and self time equal the slices of mt-toperfetto's trace (calls_pg)" {
	cd "$BATS_TEST_TMPDIR"
	check_against_slices "$BATS_FILE_TMPDIR/c50.ev"
}

@test "calls, total and self time equal the slices of mt-toperfetto's trace (threads, per-cpu)" {
	cd "$BATS_TEST_TMPDIR"
	check_against_slices "$BATS_FILE_TMPDIR/threads.ev"
}

@test "self instructions of the program's functions equal perf script's instructions per symbol" {
	cd "$BATS_TEST_TMPDIR"
	perf script -i "$BATS_FILE_TMPDIR/c50/plain.data" --itrace=i1i -F ip,sym 2> /dev/null |
		awk '{ n[$2]++ } END { for (s in n) print s "\t" n[s] }' | sort > perf
	"$PT2EVENTS" "$BATS_FILE_TMPDIR/c50/plain.data" | "$SYM" | "$REPORT" --format=tsv |
		awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $1 "\t" $c["self_insn"] }' | sort > mt
	for f in main run step twice leaf fact; do
		grep -P "^$f\t" perf
		[ "$(grep -P "^$f\t" perf)" = "$(grep -P "^$f\t" mt)" ]
	done
	# and the whole run's instructions, perf's count, lie in the report's calls
	total=$(wc -l < <(perf script -i "$BATS_FILE_TMPDIR/c50/plain.data" --itrace=i1i -F ip 2> /dev/null))
	[ "$total" -gt 100000 ]
	[ "$(awk -F'\t' '{ s += $2 } END { print s }' mt)" -ge "$total" ]
}

@test "percentiles within 1/64 of the exact ones from the calls table; min, max, avg exact" {
	cd "$BATS_TEST_TMPDIR"
	"$REPORT" -o c.db "$BATS_FILE_TMPDIR/c100.ev"
	"$REPORT" --format=tsv "$BATS_FILE_TMPDIR/c100.ev" > r.tsv
	sqlite3 -separator $'\t' c.db 'SELECT function, elapsed_ns FROM calls_view' > durations
	python3 - durations r.tsv <<-'EOF'
	import collections, math, sys
	d = collections.defaultdict(list)
	for line in open(sys.argv[1]):
	    f, ns = line.rstrip("\n").split("\t")
	    d[f].append(int(ns))
	rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
	col = {k: i for i, k in enumerate(rows[0])}
	checked = 0
	for r in rows[1:]:
	    v = sorted(d[r[0]])
	    assert len(v) == int(r[col["calls"]]), r
	    assert v[0] == int(r[col["min_ns"]]) and v[-1] == int(r[col["max_ns"]]), r
	    assert sum(v) // len(v) == int(r[col["avg_ns"]]), r
	    for p in ("50", "90", "99"):
	        exact = v[max(1, math.ceil(int(p) / 100 * len(v))) - 1]
	        got = int(r[col["p%s_ns" % p]])
	        assert exact <= got <= exact + exact // 64 + 1, (r[0], p, exact, got)
	    checked += 1
	assert checked > 20, checked
	print(checked, "functions")
	EOF
}

@test "SQLite: the calls table's rows are the trace's slices; queries give the report's numbers" {
	cd "$BATS_TEST_TMPDIR"
	ev=$BATS_FILE_TMPDIR/c50.ev
	"$REPORT" --format=sqlite -o c.db "$ev"
	"$TP" -o t.json "$ev"
	# every slice of the trace a row: thread, name, start and end (relative
	# to the first), as a multiset
	python3 - t.json <<-'EOF' > slices
	import json, sys
	from chromejson import complete
	ev = complete(json.load(open(sys.argv[1]))["traceEvents"])
	t0 = min(e["ts"] for e in ev)
	for e in ev:
	    print("%d\t%s\t%d\t%d" % (e["tid"], e["name"], round((e["ts"] - t0) * 1000), round(e["dur"] * 1000)))
	EOF
	sqlite3 -separator $'\t' c.db 'SELECT tid, function, call_time - (SELECT MIN(call_time) FROM calls), elapsed_ns FROM calls_view' > rows
	[ "$(wc -l < rows)" -gt 1000 ]
	diff <(sort slices) <(sort rows)
	# the top functions and their figures, in SQL
	"$REPORT" --format=tsv "$ev" | awk -F'\t' 'NR > 1 { print $1 "\t" $2 "\t" $3 "\t" $4 }' | sort > report
	sqlite3 -separator $'\t' c.db "SELECT f.name, COUNT(*), SUM(c.return_time - c.call_time),
		SUM(c.return_time - c.call_time - IFNULL((SELECT SUM(k.return_time - k.call_time) FROM calls k WHERE k.parent_id = c.id), 0))
		FROM calls c JOIN functions f ON f.id = c.function_id GROUP BY f.name" | sort > sql
	diff report sql
	sqlite3 -separator $'\t' c.db 'SELECT name, calls, total_ns, self_ns FROM functions WHERE calls > 0' | sort > table
	diff report table
	# a call's children: run(50) makes 50 calls, as the program says
	[ "$(sqlite3 c.db "SELECT COUNT(*) FROM calls WHERE parent_id = (SELECT c.id FROM calls c JOIN functions f ON f.id = c.function_id WHERE f.name = 'run')")" -eq 50 ]
	[ "$(sqlite3 c.db "SELECT input, status, calls = (SELECT COUNT(*) FROM calls) FROM traces")" = "$ev|ok|1" ]
	# perf's flags: the roots whose start the stack rebuild inferred, and the stacks the trace's end closed
	[ "$(sqlite3 c.db 'SELECT COUNT(*) FROM calls WHERE flags & 2')" -ge 1 ]
	[ "$(sqlite3 c.db 'SELECT COUNT(*) FROM calls WHERE flags & 2 AND depth = 0')" -ge 1 ]
}

@test "SQLite --db-level=functions: the functions and no calls; --merge puts two traces in one database" {
	cd "$BATS_TEST_TMPDIR"
	"$REPORT" --db-level=functions -o f50.db "$BATS_FILE_TMPDIR/c50.ev"
	[ "$(sqlite3 f50.db 'SELECT COUNT(*) FROM calls')" -eq 0 ]
	[ "$(sqlite3 f50.db "SELECT calls FROM functions WHERE name = 'leaf'")" = "$(awk -F'\t' '$1 == "leaf" { print $2 }' "$BATS_FILE_TMPDIR/u50.calls")" ]
	"$REPORT" -o a.db "$BATS_FILE_TMPDIR/c50.ev"
	"$REPORT" -o b.db "$BATS_FILE_TMPDIR/c100.ev"
	"$REPORT" --merge -o all.db a.db b.db
	[ "$(sqlite3 all.db 'SELECT COUNT(*) FROM traces')" -eq 2 ]
	[ "$(sqlite3 all.db 'SELECT COUNT(*) FROM calls')" -eq $(( $(sqlite3 a.db 'SELECT COUNT(*) FROM calls') + $(sqlite3 b.db 'SELECT COUNT(*) FROM calls') )) ]
	# per trace, leaf's calls as uftrace counted them, and the ids still join
	sqlite3 -separator ' ' all.db "SELECT t.input, f.calls, (SELECT COUNT(*) FROM calls c WHERE c.function_id = f.id)
		FROM functions f JOIN traces t ON t.id = f.trace_id WHERE f.name = 'leaf' ORDER BY t.id" > leaf
	cat leaf
	u50=$(awk -F'\t' '$1 == "leaf" { print $2 }' "$BATS_FILE_TMPDIR/u50.calls")
	u100=$(awk -F'\t' '$1 == "leaf" { print $2 }' "$BATS_FILE_TMPDIR/u100.calls")
	[ "$(cat leaf)" = "$BATS_FILE_TMPDIR/c50.ev $u50 $u50"$'\n'"$BATS_FILE_TMPDIR/c100.ev $u100 $u100" ]
	# parents stay in their own trace
	[ "$(sqlite3 all.db 'SELECT COUNT(*) FROM calls c JOIN calls p ON p.id = c.parent_id WHERE p.trace_id != c.trace_id OR p.tid != c.tid')" -eq 0 ]
}

# Crafted databases (issue 49): --merge's inputs (and mt-batch --db's
# parts) are untrusted. Each is opened read only (mode=ro: never created,
# never written), defensive and with trusted_schema off, and only mt's own
# tables are read: a view or trigger of its own is refused before any of
# it runs (a view that never ends would hang the merge).
@test "--merge: crafted databases are refused before anything runs; inputs are never created nor changed" {
	cd "$BATS_TEST_TMPDIR"
	"$REPORT" -o a.db "$BATS_FILE_TMPDIR/c50.ev"
	sum=$(sha256sum a.db)
	# a missing input: said, and not created (plain ATTACH creates it)
	run "$REPORT" --merge -o m.db a.db missing.db
	[ "$status" -eq 1 ]
	[[ "$output" == *"missing.db: No such file or directory"* ]]
	[ ! -e missing.db ]
	[ ! -e m.db ]
	# a FIFO: refused at once, never opened
	mkfifo fifo.db
	run timeout 10 "$REPORT" --merge -o m.db a.db fifo.db
	[ "$status" -eq 1 ]
	[[ "$output" == *"fifo.db: not a regular file"* ]]
	# "traces" as a view that never ends, a trigger, a table of its own
	cp a.db view.db
	sqlite3 view.db "DROP TABLE traces; CREATE VIEW traces AS WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM r) SELECT id, '' AS input, '' AS status, 0 AS span_ns, 0 AS events, 0 AS calls FROM r"
	run timeout 20 "$REPORT" --merge -o m.db a.db view.db
	[ "$status" -eq 1 ]
	[[ "$output" == *"view.db: not an mt calls database: it has view 'traces' of its own"* ]]
	cp a.db trigger.db
	sqlite3 trigger.db "CREATE TRIGGER t AFTER INSERT ON traces BEGIN DELETE FROM functions; END"
	run "$REPORT" --merge -o m.db trigger.db
	[ "$status" -eq 1 ]
	[[ "$output" == *"trigger.db: not an mt calls database: it has trigger 't' of its own"* ]]
	cp a.db extra.db
	sqlite3 extra.db "CREATE TABLE notes (x)"
	run "$REPORT" --merge -o m.db extra.db
	[ "$status" -eq 1 ]
	[[ "$output" == *"it has table 'notes' of its own"* ]]
	echo 'not a database' > junk.db
	run "$REPORT" --merge -o m.db junk.db
	[ "$status" -eq 1 ]
	[[ "$output" == *"junk.db: "* ]]
	[ ! -e m.db ]
	# a good merge leaves its input as it was: no journal beside it, the same bytes
	"$REPORT" --merge -o m.db a.db
	[ "$(sha256sum a.db)" = "$sum" ]
	[ "$(ls a.db* | wc -l)" -eq 1 ]
	[ "$(sqlite3 m.db 'SELECT COUNT(*) FROM calls')" -eq "$(sqlite3 a.db 'SELECT COUNT(*) FROM calls')" ]
	# a name with URI characters is the file of that name
	cp a.db 'odd?mode=rwc#x%41.db'
	"$REPORT" --merge -o m2.db 'odd?mode=rwc#x%41.db'
	[ "$(sqlite3 m2.db 'SELECT COUNT(*) FROM traces')" -eq 1 ]
}

@test "--diff: the change in calls per function is uftrace's change between the two runs" {
	cd "$BATS_TEST_TMPDIR"
	"$REPORT" --diff --format=tsv "$BATS_FILE_TMPDIR/c50.ev" "$BATS_FILE_TMPDIR/c100.ev" > diff.tsv
	head -3 diff.tsv
	join -t $'\t' "$BATS_FILE_TMPDIR/u50.calls" "$BATS_FILE_TMPDIR/u100.calls" | awk -F'\t' '{ print $1 "\t" $2 "\t" $3 "\t" $3 - $2 }' > uf
	awk -F'\t' 'NR > 1 { print $1 "\t" $2 "\t" $3 "\t" $4 }' diff.tsv | sort > mt
	join -t $'\t' uf mt > both
	[ "$(wc -l < both)" -eq "$(wc -l < uf)" ]
	awk -F'\t' '$2 != $5 || $3 != $6 || $4 != $7 { bad = 1; print } END { exit bad }' both
	# the times, each side's own report
	"$REPORT" --format=tsv "$BATS_FILE_TMPDIR/c100.ev" | awk -F'\t' '$1 == "run" { print $3 }' > want
	[ "$(awk -F'\t' '$1 == "run" { print $6 }' diff.tsv)" = "$(cat want)" ]
	"$REPORT" --diff --format=text "$BATS_FILE_TMPDIR/c50.ev" "$BATS_FILE_TMPDIR/c100.ev" | grep -E ' run$'
}

@test "--per-thread, --tid, --pid: each thread's rows add up to the whole" {
	cd "$BATS_TEST_TMPDIR"
	ev=$BATS_FILE_TMPDIR/threads.ev
	"$REPORT" --format=tsv "$ev" > all.tsv
	"$REPORT" --format=tsv --per-thread "$ev" > per.tsv
	head -1 per.tsv | grep -q $'\tpid\ttid\tcomm$'
	[ "$(cut -f24 per.tsv | sort -u | grep -c .)" -ge 3 ] # threads (tid column) and the header
	# per function, the threads' calls and totals sum to the whole's
	diff <(awk -F'\t' 'NR > 1 { c[$1] += $2; t[$1] += $3 } END { for (f in c) print f "\t" c[f] "\t" t[f] }' per.tsv | sort) \
		<(awk -F'\t' 'NR > 1 { print $1 "\t" $2 "\t" $3 }' all.tsv | sort)
	tid=$(awk -F'\t' 'NR == 2 { print $24 }' per.tsv)
	pid=$(awk -F'\t' 'NR == 2 { print $23 }' per.tsv)
	"$REPORT" --format=tsv --tid="$tid" "$ev" | awk -F'\t' 'NR > 1 { print $1 "\t" $2 "\t" $3 }' | sort > one
	awk -F'\t' -v t="$tid" 'NR > 1 && $24 == t { print $1 "\t" $2 "\t" $3 }' per.tsv | sort > want
	[ -s want ]
	diff one want
	"$REPORT" --format=tsv --pid="$pid" "$ev" | awk -F'\t' 'NR > 1 { print $1 "\t" $2 }' | sort > bypid
	awk -F'\t' -v p="$pid" 'NR > 1 && $23 == p { c[$1] += $2 } END { for (f in c) print f "\t" c[f] }' per.tsv | sort > want
	diff bypid want
	"$REPORT" --format=text --per-thread --top=3 "$ev" > text
	[ "$(wc -l < text)" -eq 4 ]
}

@test "--min-duration and --depth count what the calls table says is that long and that shallow" {
	cd "$BATS_TEST_TMPDIR"
	ev=$BATS_FILE_TMPDIR/c50.ev
	"$REPORT" -o c.db "$ev"
	"$REPORT" --format=tsv --depth=3 "$ev" | awk -F'\t' 'NR > 1 { print $1 "\t" $2 }' | sort > mt
	sqlite3 -separator $'\t' c.db 'SELECT function, COUNT(*) FROM calls_view WHERE depth < 3 GROUP BY function' | sort > sql
	[ -s sql ]
	diff mt sql
	"$REPORT" --format=tsv --min-duration=1.5us "$ev" | awk -F'\t' 'NR > 1 { print $1 "\t" $2 }' | sort > mt
	sqlite3 -separator $'\t' c.db 'SELECT function, COUNT(*) FROM calls_view WHERE elapsed_ns >= 1500 GROUP BY function' | sort > sql
	[ -s sql ]
	diff mt sql
	# the time of what is left out is its caller's own: the roots' total stays
	"$REPORT" --format=json "$ev" | python3 -c 'import json,sys; print(sum(t["root_total_ns"] for t in json.load(sys.stdin)["threads"]))' > a
	"$REPORT" --format=json --min-duration=1.5us "$ev" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(f["self_ns"] for f in d["functions"]))' > b
	diff a b
}

@test "folded stacks: time, instructions and sample weights add up to the trace's, the decoder's and perf's totals" {
	cd "$BATS_TEST_TMPDIR"
	ev=$BATS_FILE_TMPDIR/c50.ev
	"$TP" -o t.folded "$ev"
	grep -q '^calls_pg;.*;main;run;step;leaf [0-9]*$' t.folded
	# time: the roots' slices of the Perfetto-side trace, summed
	"$TP" -o t.json "$ev"
	python3 - t.json <<-'EOF' > roots
	import json, sys
	from chromejson import complete
	ev = complete(json.load(open(sys.argv[1]))["traceEvents"])
	total = 0
	for tid in {e["tid"] for e in ev}:
	    end = -1
	    for e in sorted((e for e in ev if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"])):
	        if e["ts"] >= end:  # not inside the root before
	            total += round(e["dur"] * 1000)
	            end = e["ts"] + e["dur"]
	print(total)
	EOF
	[ "$(awk '{ s += $NF } END { print s }' t.folded)" = "$(cat roots)" ]
	# instructions: a function's self instructions are perf script's count for it
	"$PT2EVENTS" "$BATS_FILE_TMPDIR/c50/plain.data" | "$SYM" | "$TP" --format=folded --weight=instructions > i.folded
	perf script -i "$BATS_FILE_TMPDIR/c50/plain.data" --itrace=i1i -F ip,sym 2> /dev/null | awk '{ n[$2]++ } END { for (s in n) print s "\t" n[s] }' > perf
	for f in run step leaf fact; do
		[ "$(awk -v f="$f" '{ n = split($1, a, ";") } a[n] == f { s += $NF } END { print s }' i.folded)" = "$(awk -F'\t' -v f="$f" '$1 == f { print $2 }' perf)" ]
	done
	# samples: a real recording; every sample is one stack
	"$MT_BIN/mt-record" -o hot.data -- "$MT_PROGS/hot" > /dev/null 2>&1
	"$PT2EVENTS" hot.data 2> /dev/null | "$SYM" | "$TP" --format=folded > s.folded
	samples=$(perf script -i hot.data -G -F ip 2> /dev/null | wc -l)
	[ "$samples" -gt 20 ]
	[ "$(awk '{ s += $NF } END { print s }' s.folded)" -eq "$samples" ]
	grep -q ';main;hot_loop [0-9]*$' s.folded
}

@test "sampling: children and self percentages equal perf report --children on the same perf.data" {
	cd "$BATS_TEST_TMPDIR"
	"$MT_BIN/mt-record" -o hot.data -- "$MT_PROGS/hot" > /dev/null 2>&1
	"$PT2EVENTS" hot.data 2> /dev/null | "$SYM" > hot.ev
	"$REPORT" --format=json hot.ev > r.json
	perf report -i hot.data --children --stdio -g none --sort sym -q 2> /dev/null |
		awk '$4 !~ /^(0x)?[0-9a-f]+$/ { print $4 "\t" $1 "\t" $2 }' | sort > perf
	python3 -c '
import json, sys
d = json.load(open("r.json"))
assert d["estimated"] and d["samples"] > 20
for f in d["functions"]:
    print("%s\t%.2f%%\t%.2f%%" % (f["function"], 100 * f["samples_children"] / d["samples"], 100 * f["samples_self"] / d["samples"]))
' | sort > mt
	cat perf
	grep -q '^hot_loop' perf
	# every function perf names, with perf's figures; a startup function
	# with a sample or two that the two symbolizers name differently (an
	# alias) may be missing on one side, never one of 0.5% or more.
	# mt-report counts functions of one name in one row (ld.so's _start
	# and the program's), perf lists them apart: such rows are summed
	# (never on one stack, so children add up too), each of perf's
	# figures rounded to 0.01%, so within 0.005% each, and mt's within
	# 0.005%
	awk -F'\t' '{ n[$1]++; c[$1] += $2; s[$1] += $3 } END { for (f in n) printf "%s\t%.2f%%\t%.2f%%\t%d\n", f, c[f], s[f], n[f] }' perf |
		sort > perf.byname
	join -t $'\t' -a 1 -e MISSING -o 0,1.2,1.3,2.2,2.3,1.4 perf.byname mt > both
	cat both
	awk -F'\t' '
		function off(a, b) { d = a - b; return d < 0 ? -d : d }
		$4 == "MISSING" && $2 + 0 < 0.5 { next }
		$6 == 1 && ($2 != $4 || $3 != $5) { bad = 1; print "differs:", $0 }
		$6 > 1 && ($4 == "MISSING" || off($2, $4) > 0.005 * ($6 + 1) + 1e-9 || off($3, $5) > 0.005 * ($6 + 1) + 1e-9) { bad = 1; print "differs:", $0 }
		END { exit bad }' both
	[ "$(awk -F'\t' '$4 != "MISSING"' both | wc -l)" -ge 3 ]
	"$REPORT" --format=text hot.ev | grep -q '^# [0-9]* samples of cpu-clock'
}

# Sampled figures are perf's (issue 48): a function's Total is the sum of
# the periods of the samples that found it anywhere on the stack (once per
# sample), its Self those where it is the leaf. Oracles on the same
# perf.data: perf report --no-children -F period,sym for Self; perf
# script's callchains (perf's own unwinding) with each sample's period for
# Total. A row with no sample has no time, so --sort=self starts with the
# hot loop, never [off-CPU]; and a thread keeps its frames across its
# switches: main is one slice.
@test "sampling: Total and Self are the sums of the samples' periods, as perf report -F period gives them" {
	cd "$BATS_TEST_TMPDIR"
	"$MT_BIN/mt-record" -o naps.data -- "$MT_PROGS/naps" 100 100 > /dev/null 2>&1
	"$PT2EVENTS" naps.data 2> /dev/null | "$SYM" > naps.ev
	"$REPORT" --format=json naps.ev > r.json
	perf report -i naps.data --no-children --stdio -g none --sort sym -F period,sym -q 2> /dev/null |
		awk '$3 !~ /^(0x)?[0-9a-f]+$/ { s[$3] += $1 } END { for (f in s) print f "\t" s[f] }' | sort > perf.self
	perf script -i naps.data -F period,ip,sym 2> /dev/null | python3 -c '
import sys
tot, seen, period = {}, set(), None
for line in sys.stdin:
    f = line.split()
    if not f:
        period, seen = None, set()
    elif period is None:
        period = int(f[0])
    elif len(f) >= 2 and f[1] != "[unknown]" and f[1] not in seen:
        # (the one [unknown] row of perf is, in mt, a row per address)
        seen.add(f[1])
        tot[f[1]] = tot.get(f[1], 0) + period
for k, v in tot.items():
    print("%s\t%d" % (k, v))
' | sort > perf.children
	grep -q $'^spin\t' perf.self
	# main's slices: one per run of samples whose chain holds it, as perf
	# unwinds them (a sample at nap's ret, its frame popped, skips main in
	# frame-pointer chains: under load CI's run met one; main is then two
	# slices, perf's chains the same)
	perf script -i naps.data -F ip,sym 2> /dev/null | python3 -c '
import sys
runs, cur, inside = 0, [], False
for line in sys.stdin.read().split("\n") + [""]:
    f = line.split()
    if f:
        cur.append(f[1] if len(f) > 1 else "")
        continue
    if cur:
        has = "main" in cur
        runs += has and not inside
        inside, cur = has, []
print(runs)' > main.runs
	python3 - <<'PY'
import json
d = json.load(open("r.json"))
assert d["estimated"] and d["period_unit"] == "ns" and d["sample_event"].startswith("cpu-clock"), d.keys()
rows = {f["function"]: f for f in d["functions"]}
load = lambda p: {l.split("\t")[0]: int(l.split("\t")[1]) for l in open(p)}
pself, pchild = load("perf.self"), load("perf.children")
total = d["period"]
assert total == sum(pself.values()) or abs(total - sum(pself.values())) <= max(pself.values()), (total, sum(pself.values()))
for want, key in ((pself, "period_self"), (pchild, "period_children")):
    for name, v in want.items():
        # a start-up function the two symbolizers name apart (an alias):
        # missing on one side only below 0.5% of all the periods
        if name not in rows:
            assert v < total * 0.005, (name, v)
            continue
        assert rows[name][key] == v, (name, key, rows[name][key], v)
for name in ("main", "spin"):
    assert rows[name]["period_children"] == pchild[name] and rows[name]["total_ns"] == pchild[name]
    assert rows[name]["self_ns"] == rows[name]["period_self"]
# a row no sample found has no time
for f in d["functions"]:
    if f["samples_children"] == 0:
        assert f["period_children"] == 0 and f["total_ns"] == 0, f
# main: one slice, switches and all, but for samples perf's chains leave
# it out of
runs = int(open("main.runs").read())
assert runs >= 1 and rows["main"]["slices"] == runs, (rows["main"], runs)
assert d["off_cpu_ns"] + d["preempted_ns"] >= 100_000_000
print("ok", len(pself), len(pchild), total)
PY
	run "$REPORT" --format=text --sort=self naps.ev
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "# "*" samples of cpu-clock"*"(perf report -F period)" ]]
	[[ "${lines[1]}" != *Calls* ]]
	[[ "${lines[2]}" == *"  spin" ]]
	[[ "$output" == *"# off CPU, from the switch events (exact, not sampled): "* ]]
	# the TSV says slices, not calls
	"$REPORT" --format=tsv naps.ev | head -1 | grep -q $'^function\tslices\t'
}

@test "bad input: usage errors, an empty stream, a damaged one, a database that cannot be written" {
	cd "$BATS_TEST_TMPDIR"
	run "$REPORT" --format=sqlite "$BATS_FILE_TMPDIR/c50.ev"
	[ "$status" -eq 2 ]
	[[ "$output" == *"needs -o FILE.db"* ]]
	run "$REPORT" --diff "$BATS_FILE_TMPDIR/c50.ev"
	[ "$status" -eq 2 ]
	run "$REPORT" --sort=nope /dev/null
	[ "$status" -eq 2 ]
	run "$REPORT" --depth=0 /dev/null
	[ "$status" -eq 2 ]
	run "$REPORT" --min-duration=5parsecs /dev/null
	[ "$status" -eq 2 ]
	# an empty stream: said, nothing written
	run "$REPORT" -o out.tsv /dev/null
	[ "$status" -eq 1 ]
	[ ! -e out.tsv ]
	printf '# mt-events 1\n' > empty.ev
	run "$REPORT" -o out.tsv empty.ev
	[ "$status" -eq 1 ]
	[[ "$output" == *"no calls or samples"* ]]
	[ ! -e out.tsv ]
	# a stream cut short: what came before is reported, the damage said, status 1
	"$PT2EVENTS" --output-format=binary "$BATS_FILE_TMPDIR/c50/tsc.data" | "$SYM" > full.bin
	head -c $(( $(stat -c %s full.bin) / 2 )) full.bin > cut.bin
	run --separate-stderr "$REPORT" --format=tsv -o cut.tsv cut.bin
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"mt-report: "* ]]
	[ "$(wc -l < cut.tsv)" -gt 5 ]
	run "$REPORT" -o cut.db cut.bin
	[ "$status" -eq 1 ]
	[[ "$(sqlite3 cut.db 'SELECT status FROM traces')" == damaged:* ]]
	# a database where none can be: nothing left behind, an old one kept
	mkdir d
	run "$REPORT" -o d "$BATS_FILE_TMPDIR/c50.ev"
	[ "$status" -ne 0 ]
	"$REPORT" -o keep.db "$BATS_FILE_TMPDIR/c50.ev"
	before=$(md5sum < keep.db)
	run "$REPORT" -o keep.db empty.ev
	[ "$status" -eq 1 ]
	[ "$(md5sum < keep.db)" = "$before" ]
	ls -A
	[ -z "$(ls -A | grep -v -e '^d$' -e '^separate-stderr-' -e '\.\(ev\|bin\|tsv\|db\)$')" ] # no temporary file left
	run "$REPORT" --merge -o m.db keep.db empty.ev
	[ "$status" -eq 1 ]
	[ ! -e m.db ]
}

@test "mt-batch --db: every input's calls in one database, a traces row each, a failed input's too" {
	cd "$BATS_TEST_TMPDIR"
	cp "$BATS_FILE_TMPDIR/c50/tsc.data" c50.data
	cp "$BATS_FILE_TMPDIR/c100/tsc.data" c100.data
	head -c 3000 c100.data > cut.data
	run --separate-stderr "$BATS_TEST_DIRNAME/../pipelines/mt-batch" --no-bar -d out --db all.db c50.data c100.data cut.data missing.data
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 1 ]
	sqlite3 -separator ' ' all.db 'SELECT input, status FROM traces ORDER BY id' > traces
	cat traces
	[ "$(sed -n 1p traces)" = 'c50.data ok' ]
	[ "$(sed -n 2p traces)" = 'c100.data ok' ]
	[ "$(wc -l < traces)" -eq 4 ]
	grep -q '^missing.data failed: ' traces
	grep -q '^cut.data ' traces
	# per trace, each function's calls are uftrace's count of that run
	for n in 50 100; do
		sqlite3 -separator $'\t' all.db "SELECT f.name, COUNT(*) FROM calls c JOIN functions f ON f.id = c.function_id
			JOIN traces t ON t.id = c.trace_id WHERE t.input = 'c$n.data' GROUP BY f.name" | sort > db$n
		join -t $'\t' "$BATS_FILE_TMPDIR/u$n.calls" db$n > both
		[ "$(wc -l < both)" -eq "$(wc -l < "$BATS_FILE_TMPDIR/u$n.calls")" ]
		awk -F'\t' '$2 != $3 { bad = 1; print } END { exit bad }' both
	done
	# the functions only, at a fraction of the size
	"$BATS_TEST_DIRNAME/../pipelines/mt-batch" --no-bar -d out2 --db fn.db --db-level=functions c50.data c100.data 2> /dev/null
	[ "$(sqlite3 fn.db 'SELECT COUNT(*) FROM calls')" -eq 0 ]
	[ "$(sqlite3 fn.db "SELECT SUM(calls) FROM functions WHERE name = 'leaf'")" -eq \
		$(( $(awk -F'\t' '$1 == "leaf" { print $2 }' "$BATS_FILE_TMPDIR/u50.calls") + $(awk -F'\t' '$1 == "leaf" { print $2 }' "$BATS_FILE_TMPDIR/u100.calls") )) ]
}

# Cycles (CYC packets of a cycle-accurate trace): the stream's cyc columns
# hold every CYC payload that times a packet of the flow, as perf's own
# packet decoder lists them (perf script -D; the CYCs after the last such
# packet time nothing); mt-report's calls and folded stacks carry them on.
@test "cycles: the cyc columns sum the trace's CYC packets as perf script -D lists them; reports and folded stacks add up" {
	cd "$BATS_TEST_TMPDIR"
	for v in cyc cyc-turbo; do
		perf script -D -i "$MT_FIXTURES/flow/$v.data" 2> /dev/null | python3 -c '
import re, sys
total = pending = 0
for line in sys.stdin:
    m = re.match(r"\.\s+[0-9a-f]+:\s+(?:[0-9a-f]{2} )+\s*(\S+)(?: 0x([0-9a-f]+))?", line)
    if not m:
        continue
    if m.group(1) == "CYC":
        pending += int(m.group(2), 16)
    elif m.group(1) in ("TNT", "TIP", "TIP.PGE", "TIP.PGD", "FUP"):
        total += pending
        pending = 0
print(total)' > perf
		"$PT2EVENTS" "$MT_FIXTURES/flow/$v.data" | "$SYM" > $v.ev
		grep -o 'cyc=[0-9]*' $v.ev | cut -d= -f2 | awk '{ s += $1 } END { print s }' > mt
		echo "$v: perf $(cat perf), mt $(cat mt)"
		[ "$(cat perf)" -gt 100000 ]
		diff perf mt
		# the binary form carries them the same
		"$PT2EVENTS" --output-format=binary "$MT_FIXTURES/flow/$v.data" | "$MT_BIN/mt-events" | grep -o 'cyc=[0-9]*' |
			cut -d= -f2 | awk '{ s += $1 } END { print s }' | diff - mt
		[ "$("$TP" --format=folded --weight=cycles $v.ev | awk '{ s += $NF } END { print s }')" = "$(cat mt)" ]
		"$REPORT" -o $v.db $v.ev
		# a root's cycles are the cycles of everything under it: all of them
		[ "$(sqlite3 $v.db 'SELECT SUM(cyc_count) FROM calls WHERE depth = 0')" = "$(cat mt)" ]
		[ "$(sqlite3 $v.db 'SELECT COUNT(*) FROM calls WHERE cyc_count IS NULL AND NOT flags & 1')" -eq 0 ]
		"$REPORT" --format=tsv $v.ev | awk -F'\t' '$1 == "fib" { printf "%.3f %.3f\n", $11 / $13, $15 }' > ipc
		cat ipc
		[ "$(cut -d' ' -f1 ipc)" = "$(cut -d' ' -f2 ipc)" ]
	done
	# the synthesizer's turbo runs 1.4 cycles a tick (lib/synth/encode.c): 7/5 of the plain run's
	[ $(( $(sqlite3 cyc.db 'SELECT SUM(cyc_count) FROM calls WHERE depth = 0') * 7 / 5 )) -eq \
		"$(sqlite3 cyc-turbo.db 'SELECT SUM(cyc_count) FROM calls WHERE depth = 0')" ]
	# a stream without CYC packets has no cycles: empty, not 0
	"$REPORT" --format=tsv "$BATS_FILE_TMPDIR/c50.ev" | awk -F'\t' 'NR > 1 && ($13 != "" || $15 != "") { bad = 1 } END { exit bad }'
}

# Names whole (issue 48): mt-symbolize cut sample frames at ~584 bytes and
# the JSON writer at 2048, merging functions whose names differ only past
# that (_Hashtable<...>::_M_rehash and ::clear). longnames has two such
# functions of 3,005 and 3,006 bytes. Oracles: nm's names, perf report's
# periods per symbol on the same perf.data, and the readers of the
# outputs (trace_processor for Perfetto, Python's json).
@test "names of any length: two 3,000-byte names stay two rows and two slices, whole, with perf's periods" {
	cd "$BATS_TEST_TMPDIR"
	"$MT_BIN/mt-record" -o ln.data -- "$MT_PROGS/longnames" > /dev/null 2>&1
	nm "$MT_PROGS/longnames" | awk '$3 ~ /^long_name_/ { print $3 }' | sort > nm.names
	[ "$(wc -l < nm.names)" -eq 2 ]
	"$PT2EVENTS" ln.data 2> /dev/null | "$SYM" > ln.ev
	"$REPORT" --format=tsv ln.ev | awk -F'\t' 'NR > 1 && $1 ~ /^long_name_/ { print $1 "\t" $21 }' | sort > mt.rows
	perf report -i ln.data --no-children --stdio -g none --sort sym -F period,sym -q 2> /dev/null |
		awk '$3 ~ /^long_name_/ { print $3 "\t" $1 }' | sort > perf.rows
	diff <(cut -f1 mt.rows) nm.names
	diff mt.rows perf.rows
	"$TP" -o ln.json ln.ev 2> /dev/null
	python3 -c '
import json, sys
names = set(e["name"] for e in json.load(open("ln.json"))["traceEvents"] if e.get("ph") == "B")
want = set(open("nm.names").read().split())
assert want <= names, [len(n) for n in names if n.startswith("long_name_")]'
	if [ -x "$MT_REAL/../../tools/perfetto/trace_processor_shell" ]; then
		"$TP" -o ln.pftrace ln.ev 2> /dev/null
		echo "select name from slice where name like 'long_name_%' group by name order by name" > q.sql
		"$MT_REAL/../../tools/perfetto/trace_processor_shell" -q q.sql ln.pftrace 2> /dev/null | tail -n +2 | tr -d '"' > tp.names
		diff tp.names nm.names
	else
		echo "# ../shared/tools/perfetto absent: the Perfetto file not read back by trace_processor" >&3
	fi
}

# A child forked without exec (issue 48): perf writes no MMAP and no COMM
# for it, so its samples were [unknown @ ADDR] and it went unnamed. It
# runs its parent's code under its parent's name, as perf shows it.
# Oracle: perf report --sort pid,sym -F period on the same perf.data, and
# perf script's comm of each thread.
@test "a child forked without exec: its samples are named and it is named, as perf names them" {
	cd "$BATS_TEST_TMPDIR"
	"$MT_BIN/mt-record" -o fk.data -- "$MT_PROGS/forks" > /dev/null 2>&1
	"$PT2EVENTS" fk.data 2> /dev/null | "$SYM" > fk.ev
	perf report -i fk.data --no-children --stdio -g none --sort pid,sym -F period,pid,sym -q 2> /dev/null |
		awk '$4 ~ /_spin$/ { split($2, p, ":"); print p[1] "\t" $4 "\t" $1 }' | sort > perf.rows
	[ "$(wc -l < perf.rows)" -eq 2 ]
	"$REPORT" --format=tsv --per-thread fk.ev | awk -F'\t' 'NR > 1 && $1 ~ /_spin$/ { print $23 "\t" $1 "\t" $21 }' | sort > mt.rows
	diff perf.rows mt.rows
	[ "$(cut -f1 mt.rows | sort -u | wc -l)" -eq 2 ] # parent and child
	# named as perf names them
	perf script -i fk.data -F pid,comm 2> /dev/null | awk '{ print $2 "\t" $1 }' | sort -u > perf.comms
	"$REPORT" --format=json --per-thread fk.ev | python3 -c '
import json, sys
d = json.load(sys.stdin)
for t in sorted(d["threads"], key=lambda t: t["pid"]):
    print("%d\t%s" % (t["pid"], t["comm"]))' | sort -u > mt.comms
	diff perf.comms mt.comms
	# the text table names each row's thread too (issue 48: pid/tid only)
	"$REPORT" --format=text --per-thread fk.ev > text
	head -2 text | tail -1 | grep -q 'PID/TID  Thread  '
	while read -r pid comm; do
		grep -q "  $pid/$pid  $comm  *[a-z_]*_spin$" text
	done < <(tr '\t' ' ' < perf.comms)
}
