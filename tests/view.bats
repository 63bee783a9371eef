#!/usr/bin/env bats
# mt-view (issues 21, 47): a viewer for the trace on this machine. Real
# parts only: mt-view's own server on loopback, speedscope as npm installs
# it, and Debian's Chromium, headless, loading the page as a user's browser
# does. Oracles: what speedscope itself made of the profile (its own
# Export, read back over the DevTools protocol: tools/speedscope_read.py)
# held against the trace's slices (mt-toperfetto --format=threads, the
# slices every format is written from: tools/speedscope_cmp.py) and, for a
# sampling recording, against perf script's own samples; what the server
# answers; and the kernel's own list of listening sockets.

load helpers
bats_require_minimum_version 1.5.0

VIEW=$MT_BIN/mt-view

# start_view FILE [OPTION...]: mt-view in the background; URL and PORT set
start_view() {
	"$VIEW" --no-open "${@:2}" "$1" > "$BATS_TEST_TMPDIR/url" 2> "$BATS_TEST_TMPDIR/view.err" &
	VIEW_PID=$!
	# (up to 60 s: under CI's load a start has taken over 10)
	for _ in $(seq 600); do
		[ -s "$BATS_TEST_TMPDIR/url" ] && break
		kill -0 "$VIEW_PID" 2> /dev/null || break
		sleep 0.1
	done
	URL=$(head -1 "$BATS_TEST_TMPDIR/url")
	PORT=$(sed -n 's,^http://127\.0\.0\.1:\([0-9]*\)/.*,\1,p' <<< "$URL")
	TOKEN=$(sed -n 's,^http://127\.0\.0\.1:[0-9]*/\([0-9a-f]\{32\}\)/.*,\1,p' <<< "$URL")
	BASE=http://127.0.0.1:$PORT/$TOKEN
	[ -n "$PORT" ] || { cat "$BATS_TEST_TMPDIR/view.err"; false; }
	[ -n "$TOKEN" ] || { echo "no token in $URL"; false; }
}

stop_view() {
	kill -INT "$VIEW_PID"
	wait "$VIEW_PID"
}

teardown() {
	[ -z "${VIEW_PID:-}" ] || kill "$VIEW_PID" 2> /dev/null || true
}

# speedscope's model of the page at $URL (its Export), the page's picture
# kept under build/test-screenshots/ and named in the TAP output
SHOTS=$MT_BIN/../test-screenshots
read_page() { # EXPORT SHOT-NAME
	mkdir -p "$SHOTS"
	python3 "$BATS_TEST_DIRNAME/tools/speedscope_read.py" "$URL" "$1" "$SHOTS/$2.png" 90
	local rc=$?
	echo "# screenshot: $(realpath "$SHOTS/$2.png")" >&3
	return $rc
}

# the speedscope file the server gives the page
served() { curl -s -o "$1" "$BASE/trace.speedscope.json"; }

@test "speedscope in Chromium draws every slice of exact traces as it is: begin, end, depth to the ns, a frame per function" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" > flow.ev
	"$MT_BIN/mt-toperfetto" --format=threads -o flow.threads flow.ev
	start_view flow.ev
	[[ "$URL" == "$BASE/#profileURL=http%3A%2F%2F127.0.0.1%3A$PORT%2F$TOKEN%2Ftrace.speedscope.json" ]]
	served served.json
	read_page export.json view-flow
	python3 "$BATS_TEST_DIRNAME/tools/speedscope_cmp.py" export.json served.json flow.threads
	# the page says what it shows
	curl -s "$BASE/" | grep -q 'mt-view: <b>flow.ev</b>: an exact trace: every call'
	stop_view
	grep -q 'stopped ([1-9][0-9]* files served' view.err # the page, its scripts, the trace
	# a perf.data of several threads, decoded on the way: a profile each
	cp "$MT_FIXTURES/threads/per-cpu.data" threads.data
	"$PT2EVENTS" threads.data | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" --format=threads -o threads.threads
	start_view threads.data
	served served.json
	read_page export.json view-threads
	python3 "$BATS_TEST_DIRNAME/tools/speedscope_cmp.py" export.json served.json threads.threads | tee cmp
	[ "$(cut -f1 threads.threads | sort -u | wc -l)" -eq 1 ]
	[ "$(cut -f2 threads.threads | sort -u | wc -l)" -ge 2 ]
	grep -q "^$(cut -f2 threads.threads | sort -u | wc -l) profiles" cmp
	stop_view
	# folded stacks, made by mt-toperfetto: speedscope imports them
	"$MT_BIN/mt-toperfetto" -o flow.folded flow.ev
	start_view flow.folded
	[[ "$URL" == *"%2Ftrace.folded&title=flow.folded" ]]
	read_page folded.json view-folded
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["profiles"][0]["events"]' folded.json
	stop_view
}

# A sampling recording made here for real (cpu-clock): the slices as the
# trace has them, [off-CPU] drawn where the program slept, and the "stack
# samples" profile weighs what perf's own periods add up to (perf script).
@test "speedscope draws a real sampling recording: every slice, off-CPU time, samples weighed by perf's periods" {
	cd "$BATS_TEST_TMPDIR"
	"$MT_BIN/mt-record" -o naps.data -- "$MT_PROGS/naps" 2> /dev/null
	"$PT2EVENTS" naps.data 2> /dev/null | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" --format=threads -o naps.threads
	grep -q $'\tbegin\t\\[off-CPU\\]$' naps.threads
	start_view naps.data
	served served.json
	read_page export.json view-naps
	python3 "$BATS_TEST_DIRNAME/tools/speedscope_cmp.py" export.json served.json naps.threads
	curl -s "$BASE/" | grep -q 'mt-view: <b>naps.data</b>: stack samples'
	stop_view
	perf script -i naps.data -F tid,period 2> /dev/null > perf.periods
	python3 - <<-'PY'
	import collections, json, re
	perf = collections.Counter()
	for line in open("perf.periods"):
	    tid, period = line.split()
	    perf[int(tid)] += int(period)
	served = json.load(open("served.json"))
	export = json.load(open("export.json"))
	frames = [f["name"] for f in export["shared"]["frames"]]
	seen = 0
	for p, e in zip(served["profiles"], export["profiles"]):
	    tid = int(re.search(r"tid (\d+)\)", p["name"]).group(1))
	    if p["type"] == "sampled":
	        seen += 1
	        assert e["endValue"] == perf[tid], (tid, e["endValue"], perf[tid])
	    else:
	        assert any(frames[x["frame"]] == "[off-CPU]" for x in e["events"]), "no [off-CPU] drawn"
	assert seen == len(perf), (seen, perf)
	PY
}

@test "the speedscope check can fail: a profile it refuses, one 1 ns off, Chrome JSON's X added up in doubles" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" > flow.ev
	"$MT_BIN/mt-toperfetto" --format=threads -o flow.threads flow.ev
	"$MT_BIN/mt-toperfetto" -o flow.speedscope.json flow.ev
	# two ends swapped: a child that outlives its parent
	python3 - <<-'PY'
	import json
	d = json.load(open("flow.speedscope.json"))
	ev = d["profiles"][0]["events"]
	i = next(i for i in range(len(ev) - 1) if ev[i]["type"] == ev[i + 1]["type"] == "C" and ev[i]["frame"] != ev[i + 1]["frame"])
	ev[i]["frame"], ev[i + 1]["frame"] = ev[i + 1]["frame"], ev[i]["frame"]
	json.dump(d, open("swapped.speedscope.json", "w"))
	# a slice ending 1 ns early: speedscope takes it, the comparison does not
	d = json.load(open("flow.speedscope.json"))
	ev = d["profiles"][0]["events"]
	i = next(i for i in range(1, len(ev)) if ev[i]["type"] == "C" and ev[i]["at"] > ev[i - 1]["at"])
	ev[i]["at"] -= 1
	json.dump(d, open("early.speedscope.json", "w"))
	PY
	start_view swapped.speedscope.json
	run read_page export.json view-swapped
	[ "$status" -eq 1 ]
	stop_view
	start_view early.speedscope.json # served as it is
	read_page export.json view-early
	run python3 "$BATS_TEST_DIRNAME/tools/speedscope_cmp.py" export.json early.speedscope.json flow.threads
	[ "$status" -eq 1 ]
	[[ "$output" == *"first difference"* ]]
	stop_view
	# 897.003 + 0.008 is 897.0110000000001 in doubles: an X slice ending
	# there holds the next one, which begins at 897.011 (the staircase of
	# issue 47); B and E nest as they are (an E named as its B: speedscope
	# drops an E of another name)
	for form in X BE; do
		python3 - "$form" <<-'PY' > "$form.json"
		import json, sys
		s = [("main", 0, 2000000), ("a", 897003, 897011), ("b", 897011, 898011)]
		us = lambda ns: float("%d.%03d" % (ns // 1000, ns % 1000))
		ev = [{"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "t"}}]
		if sys.argv[1] == "X":
		    ev += [{"ph": "X", "pid": 1, "tid": 1, "ts": us(b), "dur": us(e - b), "name": n} for n, b, e in s]
		else:
		    ev += [{"ph": "B", "pid": 1, "tid": 1, "ts": us(b), "name": n} for n, b, e in s[:2]]
		    ev += [{"ph": "E", "pid": 1, "tid": 1, "ts": us(897011), "name": "a"},
		           {"ph": "B", "pid": 1, "tid": 1, "ts": us(897011), "name": "b"},
		           {"ph": "E", "pid": 1, "tid": 1, "ts": us(898011), "name": "b"},
		           {"ph": "E", "pid": 1, "tid": 1, "ts": us(2000000), "name": "main"}]
		print(json.dumps({"traceEvents": ev}))
		PY
		start_view "$form.json"
		read_page "$form.export.json" "view-json-$form"
		stop_view
		python3 - "$form.export.json" <<-'PY' > "$form.depths"
		import json, sys
		d = json.load(open(sys.argv[1]))
		names, depth = [f["name"] for f in d["shared"]["frames"]], 0
		for e in d["profiles"][0]["events"]:
		    if e["type"] == "O":
		        print(names[e["frame"]], depth)
		    depth += 1 if e["type"] == "O" else -1
		PY
	done
	cat X.depths BE.depths
	[ "$(cat BE.depths)" = "$(printf 'main 0\na 1\nb 1')" ]
	[ "$(cat X.depths)" != "$(cat BE.depths)" ]
	# and mt-toperfetto's own Chrome JSON, served as it is: as the trace
	"$MT_BIN/mt-toperfetto" -o flow.json flow.ev
	start_view flow.json
	read_page export.json view-json-mt
	python3 "$BATS_TEST_DIRNAME/tools/speedscope_cmp.py" export.json flow.json flow.threads
	stop_view
}

# Large traces (issue 47): speedscope in Chromium here took 10 s for 1 M
# calls (one thread), 26 s for 3 M, 65 s for 7 M (a 537 MB file, about the
# longest string V8 makes); a stack 5,000 deep throws "Maximum call stack
# size exceeded" (3,000 opened). mt writes 500 deep at most; mt-view draws
# the longest --max-slices (default 1,000,000) and says what it left out.
@test "mt-view --max-slices: the longest slices drawn, the rest said on stderr and on the page, the drawing as the trace" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" > flow.ev
	"$MT_BIN/mt-toperfetto" --format=threads -o flow.threads flow.ev
	total=$(grep -c $'\tbegin\t' flow.threads)
	start_view flow.ev --max-slices=20
	grep -q "^mt-toperfetto: --max-slices=20: [0-9]* of $total slices left out, all those under [0-9]*\.[0-9]* us" view.err
	grep -q '^mt-view: slices under [0-9]*\.[0-9]* us are not drawn (--max-slices=20; 0 draws all)$' view.err
	curl -s "$BASE/" | grep -q '<b>Not drawn: slices under [0-9]*\.[0-9]* us</b>'
	served served.json
	read_page export.json view-max-slices
	python3 "$BATS_TEST_DIRNAME/tools/speedscope_cmp.py" export.json served.json flow.threads | tee cmp
	n=$(sed -n 's/^1 profiles, \([0-9]*\) calls shown.*/\1/p' cmp)
	[ "$n" -ge 1 ]
	[ "$n" -le 20 ]
	stop_view
	run "$VIEW" --max-slices=-1 flow.ev
	[ "$status" -eq 2 ]
	run "$MT_BIN/mt-toperfetto" --max-slices=5 -o x.json flow.ev
	[ "$status" -eq 2 ]
	[[ "$output" == *"--max-slices is for --format=speedscope"* ]]
}

@test "a trace with nothing to draw: mt-view says so, names what to run, exit 1, no server" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | grep '^#' > empty.ev
	[ -s empty.ev ]
	run "$VIEW" --no-open empty.ev
	[ "$status" -eq 1 ]
	[[ "$output" == *"mt-view: empty.ev: nothing to view: no call and no stack sample in it ('mt-report empty.ev' says what it holds"* ]]
	[[ "$output" != *"serving"* ]]
}

@test "mt-view serves on loopback only, and only the viewer's files and the trace" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" > flow.ev
	# a viewer directory of our own, with a way out planted in it
	mkdir -p www/sub
	echo '<html><body>viewer</body></html>' > www/index.html
	echo 'js' > www/sub/app.js
	echo 'secret' > secret.txt
	ln -s "$PWD/secret.txt" www/out.txt
	mkdir tmp
	TMPDIR=$PWD/tmp MT_SPEEDSCOPE_DIR=$PWD/www start_view flow.ev
	# what was made for the viewer is open, and gone from TMPDIR already
	[ -z "$(ls -A tmp)" ]
	ss -Hltn "sport = :$PORT" > sockets
	cat sockets
	[ "$(wc -l < sockets)" -eq 1 ]
	grep -q "127.0.0.1:$PORT" sockets
	code() { curl -s --path-as-is -o /dev/null -w '%{http_code}' "$@"; }
	[ "$(code "$BASE/")" = 200 ]
	# the viewer's page, with mt-view's line saying what it shows before its end
	curl -s "$BASE/" > page
	[[ "$(cat page)" == '<html><body>viewer<div id="mt-view" '*'mt-view: <b>flow.ev</b>: an exact trace'*'</div>'$'\n''</body></html>' ]]
	[ "$(curl -s "$BASE/index.html")" = "$(cat page)" ]
	[ "$(code "$BASE/sub/app.js")" = 200 ]
	[ "$(code "$BASE/trace.speedscope.json")" = 200 ]
	curl -s "$BASE/trace.speedscope.json" | python3 -c 'import json, sys; assert json.load(sys.stdin)["profiles"]'
	for p in /../secret.txt /sub/../../secret.txt /%2e%2e/secret.txt /out.txt /sub/ /sub //etc/passwd /etc/passwd \
		"/$(basename "$PWD")/flow.ev" /flow.ev; do
		[ "$(code "$BASE$p")" = 404 ] || { echo "served $p"; false; }
	done
	# only under the secret: none of it without, or with another (its last
	# digit changed: a token ending in 0 made "another" the same, 1 run in 16)
	local other=${TOKEN%?}0
	[ "$other" != "$TOKEN" ] || other=${TOKEN%?}1
	for p in / /index.html /trace.speedscope.json /sub/app.js "/$TOKEN" "/$other/" "/x/../$TOKEN/"; do
		[ "$(code "http://127.0.0.1:$PORT$p")" = 403 ] || { echo "served $p without the token"; false; }
	done
	# only to a Host that is this server: a DNS-rebinding page's requests
	# carry its own name
	[ "$(code -H 'Host: attacker.example' "$BASE/trace.speedscope.json")" = 421 ]
	[ "$(code -H "Host: attacker.example:$PORT" "$BASE/trace.speedscope.json")" = 421 ]
	[ "$(code -H "Host: localhost:$PORT" "$BASE/trace.speedscope.json")" = 200 ]
	[ "$(code -X POST "$BASE/")" = 405 ]
	[ "$(code -I "$BASE/trace.speedscope.json")" = 200 ]
	# files swapped for symlinks to the secret once serving began: what was
	# opened at the start is what is served
	rm www/sub/app.js
	ln -s "$PWD/secret.txt" www/sub/app.js
	[ "$(curl -s "$BASE/sub/app.js")" = js ]
	stop_view
	grep -q 'stopped (9 files served, 20 requests refused)' view.err # the requests above
	[ -z "$(ls -A tmp)" ]
	# a Chrome JSON file served as it is, swapped the same way
	"$MT_BIN/mt-toperfetto" --format=json -o given.json flow.ev
	cp given.json want.json
	start_view given.json
	rm given.json
	ln -s "$PWD/secret.txt" given.json
	curl -s -o got.json "$BASE/trace.json"
	cmp got.json want.json
	stop_view
}

# One client that stalls (half a request head; a big file asked for and
# never read) must not keep the others waiting, nor ^C from ending the
# server at once; the old server answered one connection at a time and
# sat in send() while its client did not read.
@test "mt-view is a real server: stalled clients block no one, heads have a deadline, ^C ends it at once" {
	cd "$BATS_TEST_TMPDIR"
	# 64 MB of Chrome JSON, served as it is: more than loopback's buffers hold
	{ printf '{"traceEvents":[],"pad":"'; head -c 64M /dev/zero | tr '\0' a; printf '"}'; } > big.json
	start_view big.json --timeout=2
	exec 5<> "/dev/tcp/127.0.0.1/$PORT"
	printf 'GET /%s/trace.json HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$TOKEN" "$PORT" >&5 # never read
	exec 6<> "/dev/tcp/127.0.0.1/$PORT"
	printf 'GET / HTTP/1.1\r\nHo' >&6 # half a head, then nothing
	sleep 0.5
	# others are answered meanwhile, in full
	for _ in 1 2 3; do
		[ "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$BASE/")" = 200 ]
	done
	[ "$(curl -s --max-time 20 "$BASE/trace.json" | wc -c)" -eq "$(stat -c %s big.json)" ]
	# the half head: 408 and closed at the deadline (2 s), not held
	timeout 5 cat <&6 > half.txt
	grep -q '^HTTP/1.1 408' half.txt
	# ^C while the first client still reads nothing: mt-view ends at once
	kill -INT "$VIEW_PID"
	for _ in $(seq 30); do
		kill -0 "$VIEW_PID" 2> /dev/null || break
		sleep 0.1
	done
	if kill -0 "$VIEW_PID" 2> /dev/null; then echo "still serving 3 s after ^C"; false; fi
	wait "$VIEW_PID"
	exec 5>&- 6>&-
	grep -q '^mt-view: stopped' view.err
	run "$VIEW" --timeout=0 big.json
	[ "$status" -eq 2 ]
}

# ^C while mt-view converts the trace: the filters it started are ended
# and waited for, and nothing stays in TMPDIR.
@test "^C during the conversion before serving: the filters end, TMPDIR is left empty, mt-view ends by the signal" {
	cd "$BATS_TEST_TMPDIR"
	mkdir tmp
	mkfifo slow.ev
	# an event stream that never goes on: its first line is there for
	# mt-view to see what it is, then the conversion waits on it (the FIFO
	# held open for reading and writing here, so nothing blocks or breaks)
	exec 7<> slow.ev
	printf '# mt-events 1\n' >&7
	TMPDIR=$PWD/tmp "$VIEW" --no-open slow.ev > url 2> err &
	pid=$!
	for _ in $(seq 100); do
		grep -q 'converting' err && [ -n "$(ls -A tmp)" ] && break
		sleep 0.1
	done
	grep -q 'converting' err
	sleep 0.5
	kill -INT "$pid"
	status=0
	wait "$pid" || status=$?
	exec 7>&-
	[ "$status" -eq 130 ]
	[ ! -s url ]
	[ -z "$(ls -A tmp)" ] || { ls -laR tmp; false; }
	# no filter of it left running
	! pgrep -f "mt-toperfetto --format=speedscope.*$PWD/tmp" || false
}

@test "MT_PERFETTO_DIR: that UI is served with a Perfetto trace of the file" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" > flow.ev
	mkdir ui && echo '<html>perfetto</html>' > ui/index.html
	MT_PERFETTO_DIR=$PWD/ui start_view flow.ev
	[[ "$URL" == "$BASE/#!/?url=http%3A%2F%2F127.0.0.1%3A$PORT%2F$TOKEN%2Ftrace.pftrace" ]]
	[ "$(curl -s "$BASE/")" = '<html>perfetto</html>' ]
	curl -s -o got.pftrace "$BASE/trace.pftrace"
	"$MT_BIN/mt-toperfetto" -o want.pftrace flow.ev
	cmp got.pftrace want.pftrace
	stop_view
	# a .pftrace as it is
	MT_PERFETTO_DIR=$PWD/ui start_view want.pftrace
	curl -s -o again.pftrace "$BASE/trace.pftrace"
	cmp again.pftrace want.pftrace
	stop_view
}

@test "mt-view: a .pftrace without a Perfetto UI, a missing file, no viewer, a port taken, usage" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o t.pftrace
	run "$VIEW" --no-open t.pftrace
	[ "$status" -eq 1 ]
	[[ "$output" == *"speedscope does not read Perfetto traces"* ]]
	run "$VIEW" --no-open nothing.ev
	[ "$status" -eq 1 ]
	[[ "$output" == "mt-view: nothing.ev: No such file or directory" ]]
	MT_SPEEDSCOPE_DIR=$PWD/none run "$VIEW" --no-open t.pftrace
	[ "$status" -eq 1 ]
	[[ "$output" == *"speedscope is not installed"* ]]
	echo 'x;y 1' > a.folded
	start_view a.folded
	run "$VIEW" --no-open --port="$PORT" a.folded
	[ "$status" -eq 1 ]
	[[ "$output" == *"127.0.0.1:$PORT: Address already in use"* ]]
	stop_view
	run "$VIEW"
	[ "$status" -eq 2 ]
	run "$VIEW" --port=70000 a.folded
	[ "$status" -eq 2 ]
	# a file that cannot be decoded: said, no server
	echo 'not a trace' > junk
	run "$VIEW" --no-open junk
	[ "$status" -eq 1 ]
	[[ "$output" == *"could not be converted"* ]]
}

@test "mt-trace decode ends with the mt-view command that views its trace, and that command works" {
	cd "$BATS_TEST_TMPDIR"
	cp "$MT_FIXTURES/flow/tsc.data" rec.data
	PATH=$MT_BIN:$PATH "$BATS_TEST_DIRNAME/../pipelines/mt-trace" decode -o t.pftrace rec.data 2> err
	cat err
	grep -q "^mt-trace: wrote $PWD/t.pftrace ([0-9]* bytes)$" err
	cmd=$(sed -n 's/^mt-trace: view it here: //p' err)
	[ "$cmd" = "mt-view $PWD/rec.data" ]
	start_view "${cmd#mt-view }"
	read_page export.json view-mt-trace
	stop_view
	PATH=$MT_BIN:$PATH "$BATS_TEST_DIRNAME/../pipelines/mt-trace" decode -o t.json rec.data 2> err
	grep -qx "mt-trace: view it here: mt-view $PWD/t.json" err
}
