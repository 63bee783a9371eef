#!/usr/bin/env bats
# The shell pipelines: mt-trace (record and decode in one command), mt-batch
# (many inputs with GNU parallel) and mt-archive-watch (an archival job).
# Oracles: the filters composed by hand on the same input, pfcheck (a
# Perfetto reader of our own, tests/tools/pfcheck.c), and the test
# program's known structure.

load helpers
bats_require_minimum_version 1.5.0

PIPES=$BATS_TEST_DIRNAME/../pipelines
PFCHECK=$MT_TESTTOOLS/pfcheck

# A second "host": Debian's sshd on 127.0.0.1 at a free port, with a
# throwaway host key and user key in DIR, the mt pipelines (and through
# them the tools) on the PATH of its sessions. Sets login (GNU parallel's
# --sshlogin for it, one job at a time), PARALLEL_SSH and sshd_pid.
# SHLVL=1: the host's bash, a second level, reads no ~/.bashrc (bash
# reads it for sshd's top-level shells), so the host is this test's alone
# (a pyenv set up there took 0.5 s of every ssh run).
start_sshd() { # DIR
	local d=$1 port
	mkdir -p "$d" /run/sshd
	[ -f "$d/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$d/host_key"
	[ -f "$d/user_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$d/user_key"
	cp "$d/user_key.pub" "$d/authorized_keys"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf '%s\n' "Port $port" "ListenAddress 127.0.0.1" "HostKey $d/host_key" "AuthorizedKeysFile $d/authorized_keys" \
		"PidFile $d/sshd.pid" "StrictModes no" "UsePAM no" "PermitRootLogin prohibit-password" \
		"PasswordAuthentication no" "SetEnv PATH=$PIPES:/usr/bin:/bin SHLVL=1" > "$d/sshd_config"
	rm -f "$d/sshd.pid"
	/usr/sbin/sshd -f "$d/sshd_config" -E "$d/sshd.log"
	for i in $(seq 50); do [ -s "$d/sshd.pid" ] && break; sleep 0.1; done
	sshd_pid=$(cat "$d/sshd.pid")
	# the host by a name of its own (a login with spaces, "ssh -p ...", is
	# one parallel cannot read back from its job log for --resume-failed)
	host=mthost-$(basename "$d")
	# (one connection shared by every ssh run: ControlMaster; it is one of
	# the host's sessions, ended with the host)
	printf '%s\n' "Host $host" "HostName 127.0.0.1" "Port $port" "IdentityFile $d/user_key" "BatchMode yes" \
		"StrictHostKeyChecking no" "UserKnownHostsFile /dev/null" "LogLevel ERROR" "GSSAPIAuthentication no" \
		"ControlMaster auto" "ControlPath $d/cm-%C" "ControlPersist 30" >> "$BATS_TEST_TMPDIR/ssh_config"
	export PARALLEL_SSH="ssh -F $BATS_TEST_TMPDIR/ssh_config"
	login=1/$host
	# up and letting us in: the shared connection, opened here with its
	# output away from bats (one opened by a job would hold the job's
	# stderr, and so bats's `run`, for ControlPersist's seconds)
	$PARALLEL_SSH -f -N -o ControlPersist=yes "$host" < /dev/null > /dev/null 2>> "$d/master.log"
}

# The host goes down: its sshd and every session under it. Stopped first,
# so that it starts no session while its tree is walked; a session is two
# processes ([priv] and its child serving the connection), and the child
# alone keeps a shared (ControlMaster) connection going.
stop_sshd() { # PID
	kill -STOP "$1" 2> /dev/null || return 0
	kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill "$1" 2> /dev/null || true; }
	kill_tree "$1"
	kill -CONT "$1" 2> /dev/null || true
}

teardown() {
	# an sshd a test started, with its sessions
	local f
	for f in "$BATS_TEST_TMPDIR"/ssh*/sshd.pid; do
		[ -s "$f" ] || continue
		stop_sshd "$(cat "$f")"
	done
	# a watcher a test left running (it failed before stopping it)
	[ ! -s "$BATS_TEST_TMPDIR/watcher.pid" ] || kill "$(cat "$BATS_TEST_TMPDIR/watcher.pid")" 2> /dev/null || true
}

@test "the pipelines are shellcheck-clean" {
	shellcheck "$PIPES"/*
}

@test "mt-trace run, for real in sampling mode: a Perfetto trace where the hot function dominates" {
	cd "$BATS_TEST_TMPDIR"
	mkdir tmp
	TMPDIR=$PWD/tmp run --separate-stderr "$PIPES/mt-trace" run -- "$MT_PROGS/hot"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^[0-9]+$ ]] # the program's own output
	"$PFCHECK" trace.pftrace --slices > slices
	# the function with the most self samples, read from the kept
	# recording (the slices' time counts [preempted] too, which a busy
	# machine makes long)
	"$MT_BIN/mt-pt2events" trace.tar.zst 2> /dev/null | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-report" --format=tsv --sort=self |
		awk -F'\t' 'NR==2 {print $1}' | grep -qx hot_loop
	# no temporary recording or extracted bundle is left
	[ -z "$(ls -A tmp)" ]
	# it says where the trace is, its size and counts, how to open it, and
	# keeps the recording beside it (issue 23); perf's line names no file
	# that is gone (its perf.data in mt-record's temporary directory)
	[[ "$stderr" == *"mt-trace: wrote $PWD/trace.pftrace ($(stat -c %s trace.pftrace) bytes)"* ]]
	[[ "$stderr" == *"mt-toperfetto: wrote trace.pftrace: perfetto, $(wc -l < slices) slices, "* ]]
	[[ "$stderr" == *"open https://ui.perfetto.dev"* ]]
	[[ "$stderr" == *"mt-trace: the recording is kept in $PWD/trace.tar.zst"* ]]
	[[ "$stderr" == *"[ perf record: Captured and wrote "*" MB for the bundle"* ]]
	[[ "$stderr" != *".mt-record."* ]]
	"$MT_BIN/mt-bundle" manifest trace.tar.zst | grep -q "^command=$MT_PROGS/hot$"
	# --no-keep: the trace alone; a name's ending chooses the bundle's name
	TMPDIR=$PWD/tmp "$PIPES/mt-trace" run --no-keep -o t2.json.gz -- "$MT_PROGS/hot" > /dev/null 2>&1
	gzip -dc t2.json.gz | python3 -c 'import json, sys; json.load(sys.stdin)'
	[ ! -e t2.tar.zst ]
	[ ! -e t2.json.tar.zst ]
	[ -z "$(ls -A tmp)" ]
	TMPDIR=$PWD/tmp "$PIPES/mt-trace" run -o t3.fxt -- "$MT_PROGS/hot" > /dev/null 2>&1
	[ -s t3.tar.zst ]
	"$PIPES/mt-trace" decode t3.tar.zst -o t3again.fxt 2> /dev/null
	cmp t3.fxt t3again.fxt
}

# issue 48: a run that records nothing (a mistyped command, a bad option)
# said it decoded the previous recording again and rewrote the trace.
# Now: exit 1 (2 for usage), said, and every file of the earlier run as it
# was (checksums and times); the format follows -o's name for folded
# stacks and speedscope too, and the last line says how to open the file.
@test "mt-trace keeps its promises: nothing recorded leaves every earlier file untouched; -o's name picks any format" {
	cd "$BATS_TEST_TMPDIR"
	"$PIPES/mt-trace" run -- "$MT_PROGS/hot" 100 > /dev/null 2>&1
	[ -s trace.pftrace ]
	[ -s trace.tar.zst ]
	stat -c '%n %s %Y' trace.pftrace trace.tar.zst > before
	md5sum trace.pftrace trace.tar.zst >> before
	sleep 1
	run --separate-stderr "$PIPES/mt-trace" run -- ./no-such-program
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"mt-record: ./no-such-program: no such executable"* ]]
	[[ "$stderr" == *"mt-trace: nothing recorded (mt-record exit status 1); no file was written or changed" ]]
	[[ "$stderr" != *"decoding"* && "$stderr" != *"complete"* ]]
	run --separate-stderr "$PIPES/mt-trace" run --timer-resolution=bogus -- "$MT_PROGS/hot" 100
	[ "$status" -eq 2 ]
	diff before <(stat -c '%n %s %Y' trace.pftrace trace.tar.zst; md5sum trace.pftrace trace.tar.zst)
	[ "$(ls -A | grep -v "^separate-stderr-" | sort | tr "\n" " ")" = "before trace.pftrace trace.tar.zst " ] # (and bats's own files)
	# folded stacks and speedscope by the name, each read back
	run --separate-stderr "$PIPES/mt-trace" decode -o t.folded trace.tar.zst
	[ "$status" -eq 0 ]
	"$MT_BIN/mt-toperfetto" --format=folded <("$PT2EVENTS" trace.tar.zst 2> /dev/null | "$MT_BIN/mt-symbolize") | cmp - t.folded
	[[ "${stderr##*$'\n'}" == "mt-trace: view it: flamegraph.pl $PWD/t.folded > flame.svg, or drop it on https://www.speedscope.app" ]]
	[[ "$stderr" != *"ui.perfetto.dev"* ]]
	run --separate-stderr "$PIPES/mt-trace" decode -o t.speedscope.json trace.tar.zst
	[ "$status" -eq 0 ]
	python3 -c 'import json, sys; d = json.load(open("t.speedscope.json")); assert d["$schema"].startswith("https://www.speedscope.app/")'
	[[ "${stderr##*$'\n'}" == *"speedscope.app"* ]]
	run --separate-stderr "$PIPES/mt-trace" run -o t2.folded -- "$MT_PROGS/hot" 100
	[ "$status" -eq 0 ]
	[ -s t2.folded ]
	[ -s t2.tar.zst ]
	grep -q ';hot_loop [0-9]*$' t2.folded
	[[ "${stderr##*$'\n'}" == *"flamegraph.pl"* ]]
}

@test "mt-trace run -trigger .: the recording ends at the hit, the trace holds the time before it only" {
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr "$PIPES/mt-trace" run -trigger . -- "$MT_PROGS/trigger" 1 800
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"mt-record: trigger hit: magic_trace_stop_indicator"* ]]
	"$PFCHECK" trace.pftrace > /dev/null
	# samples in each, from the recording kept beside the trace (slices
	# no longer count samples: a frame is one slice while it lasts)
	"$MT_BIN/mt-pt2events" trace.tar.zst 2> /dev/null | "$MT_BIN/mt-symbolize" | grep '	sample	' > samples
	before=$(grep -c 'frame=[^	]* before_hit+' samples || true)
	after=$(grep -c 'frame=[^	]* after_hit+' samples || true)
	[ "$before" -gt 0 ]
	# 800 ms of after_hit ran after the hit, against 300 ms of before_hit
	# before it: samples of it come from the few ms perf takes to stop
	[ "$((after * 5))" -le "$before" ] || [ "$after" -le 1 ]
}

@test "mt-trace: magic-trace's spellings, a kept bundle, and decode equal to the filters by hand" {
	cd "$BATS_TEST_TMPDIR"
	"$PIPES/mt-trace" run -output t.json -format json -bundle kept.tar.zst -sampling "$MT_PROGS/hot" > /dev/null 2>&1
	python3 -c 'import json,sys; d=json.load(open("t.json")); assert any(e.get("name")=="hot_loop" for e in d["traceEvents"])'
	"$MT_BIN/mt-bundle" manifest kept.tar.zst | grep -q "^command=$MT_PROGS/hot$"
	"$PIPES/mt-trace" decode kept.tar.zst -o again.pftrace 2>/dev/null
	"$MT_BIN/mt-pt2events" kept.tar.zst | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o byhand.pftrace
	cmp again.pftrace byhand.pftrace
	# a perf.data with its options passed through
	"$PIPES/mt-trace" decode --format=stacks -o stacks.txt "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	"$MT_BIN/mt-pt2events" "$MT_FIXTURES/flow/plain.data" | "$MT_BIN/mt-symbolize" |
		"$MT_BIN/mt-toperfetto" --format=stacks | cmp - stacks.txt
}

# mt-record's and mt-pt2events's options through mt-trace (issue 23): it
# had no --duration, --trigger-via, --extra-events, --jobs or --progress.
# Oracle: mt-record's own word that --duration ended the recording (the
# program runs on, as mt-record(1) says), and the decode with -j 1 and
# --progress=never equal to the filters by hand.
@test "mt-trace passes --duration, --trigger-via, --jobs and --progress on" {
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr "$PIPES/mt-trace" run --duration=1 --trigger-via=auto -j 1 --progress=never \
		-o d.pftrace -- "$MT_PROGS/hot" 300
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"mt-record: recording ended (--duration reached)"* ]]
	"$MT_BIN/mt-pt2events" d.tar.zst | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o byhand.pftrace
	cmp d.pftrace byhand.pftrace
	run --separate-stderr "$PIPES/mt-trace" run --snapshot-size=banana -- "$MT_PROGS/hot" 10
	[ "$status" -eq 2 ]
	[[ "$stderr" == "mt-record: "* ]]
	# a bad -o is found before anything runs; a decode that fails keeps
	# the recording even with --no-keep (issue 26: both lost it)
	run --separate-stderr "$PIPES/mt-trace" run -o /nonexistent/dir/t.pftrace -- "$MT_PROGS/hot" 30
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-trace: /nonexistent/dir/t.pftrace: no directory /nonexistent/dir" ]
	[ -z "$output" ] # the program never ran
	run --separate-stderr "$PIPES/mt-trace" run --no-keep --filter=no_such_function,main -o f.pftrace -- "$MT_PROGS/hot" 30
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"mt-trace: the recording is kept in $PWD/f.tar.zst"* ]]
	[ ! -e f.pftrace ]
	"$MT_BIN/mt-bundle" manifest f.tar.zst | grep -q "^command=$MT_PROGS/hot 30$"
	# the program's own failure, passed on, is said to be the program's
	run --separate-stderr "$PIPES/mt-trace" run -o s.pftrace -- sh -c "$MT_PROGS/hot 30 > /dev/null; exit 3"
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"mt-trace: the trace is complete; the program's own exit status, 3, is passed on"* ]]
	[ -s s.pftrace ]
	# a value a filter refuses is a usage error of mt-trace's (issue 23: it was 1)
	run --separate-stderr "$PIPES/mt-trace" decode --jobs=2 --progress=bogus d.tar.zst -o e.pftrace
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"mt-pt2events: "*"--progress"* ]]
	[ ! -e e.pftrace ]
}

@test "mt-trace attach -pid: traces a running process until it ends" {
	cd "$BATS_TEST_TMPDIR"
	"$MT_PROGS/hot" 300 > /dev/null &
	pid=$!
	# ended once perf is recording it (mt-record says so), however long
	# that takes on a busy machine: no fixed delay
	"$PIPES/mt-trace" attach -pid "$pid" -o att.pftrace --bundle att.tar.zst 2> err &
	local tr=$!
	for _ in $(seq 600); do grep -q "^mt-record: recording pid $pid until" err && break; sleep 0.1; done
	grep -q "^mt-record: recording pid $pid until" err
	sleep 0.5 # samples of its hot loop
	kill "$pid"
	status=0
	wait "$tr" || status=$?
	cat err
	[ "$status" -eq 0 ]
	grep -q "attaching to $pid" err
	"$MT_BIN/mt-bundle" manifest att.tar.zst | grep -q "^command=attach --pid=$pid$"
	"$PIPES/mt-trace" decode att.tar.zst -o att.json 2> /dev/null
	# the most samples on top (the slices' time counts [preempted] too,
	# which a busy machine makes long)
	"$MT_BIN/mt-pt2events" att.tar.zst 2> /dev/null | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-report" --format=tsv --sort=self |
		awk -F'\t' 'NR==2 {print $1}' | grep -qx hot_loop
}

# Attaching while sampling (issue 26): mt-record passed --per-thread -t PID,
# so a process whose worker thread does the work (a server) gave a trace of
# its idle main thread. Now every thread, as perf record -p does. A real
# process: python3 with a worker busy 2.5 s while the main thread waits in
# join. Oracle: perf script on the recording (its samples' threads) and the
# trace's slices by thread.
@test "mt-trace attach while sampling follows every thread: the busy worker is in the trace" {
	cd "$BATS_TEST_TMPDIR"
	python3 -c 'import threading, time
def work():
    t = time.time()
    while time.time() - t < 2.5: pass
w = threading.Thread(target=work); w.start(); w.join()' &
	local pid=$! i
	# attached once the worker runs: perf record -p follows the threads
	# there are when it starts (python took over 0.3 s to start one here)
	for i in $(seq 100); do
		[ "$(ls "/proc/$pid/task" 2> /dev/null | wc -l)" -ge 2 ] && break
		sleep 0.05
	done
	"$PIPES/mt-trace" attach -pid "$pid" -o a.pftrace 2> /dev/null
	wait "$pid"
	"$MT_BIN/mt-bundle" extract -C x a.tar.zst > /dev/null
	perf script -i x/perf.data -F tid 2> /dev/null | sort | uniq -c | sort -rn > perf.tids
	local busy
	busy=$(awk 'NR == 1 { print $2 }' perf.tids)
	[ "$busy" != "$pid" ] # the worker is the busy one, by perf's count
	"$PFCHECK" a.pftrace --slices 2> /dev/null | cut -f1 | sort | uniq -c | sort -rn > trace.tids
	[ "$(awk 'NR == 1 { print $2 }' trace.tids)" = "$busy" ]
}

@test "mt-trace: usage errors, a failing decode, no partial trace" {
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr "$PIPES/mt-trace" frob
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"unknown command 'frob'"* ]]
	run --separate-stderr "$PIPES/mt-trace" run --bogus -- true
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"unrecognized option '--bogus'"* ]] # getopt_long's words, as the C tools say it
	run --separate-stderr "$PIPES/mt-trace" run -multi-snapshot -trigger . -- true
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"'--multi-snapshot' writes a file per snapshot, and a bundle holds one"* ]]
	run --separate-stderr "$PIPES/mt-trace" attach
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"attach needs -p PID"* ]]
	run --separate-stderr "$PIPES/mt-trace" decode --format=svg x
	[ "$status" -eq 2 ]
	head -c 2000 /dev/urandom > junk.data
	run --separate-stderr "$PIPES/mt-trace" decode -o junk.pftrace junk.data
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"mt-pt2events: junk.data: not a perf.data file"* ]]
	[[ "$stderr" == *"decoding failed"* ]]
	[ ! -e junk.pftrace ]
	run --separate-stderr "$PIPES/mt-trace" run -- ./no-such-program
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"no such executable"* ]]
}

# 20 inputs: 18 traces (perf.data files and bundles), one corrupted, one empty.
make_inputs() { # DIR
	mkdir -p "$1"
	local i=0 f
	for f in "$MT_FIXTURES"/flow/*.data "$MT_FIXTURES"/libc/plain.data "$MT_FIXTURES"/threads/per-cpu.data; do
		[ "$i" -lt 16 ] || break
		i=$((i + 1))
		cp "$f" "$1/in$i.data"
	done
	"$MT_BIN/mt-bundle" create -o "$1/b17.tar.zst" "$MT_FIXTURES/libc/plain.data" 2>/dev/null
	"$MT_BIN/mt-bundle" create -o "$1/b18.tar.gz" "$MT_FIXTURES/threads/per-cpu.data" 2>/dev/null
	head -c 4096 /dev/urandom > "$1/corrupt.data"
	: > "$1/empty.data"
}

@test "mt-batch over 20 inputs, one corrupted and one empty: 18 traces, the 2 failures with reasons, exit 1" {
	cd "$BATS_TEST_TMPDIR"
	make_inputs in
	[ "$(ls in | wc -l)" -eq 20 ]
	run --separate-stderr "$PIPES/mt-batch" -j 2 -d out in/*
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"mt-batch: 18 of 20 decoded; summary in out/summary.tsv"* ]]
	[ "$(ls out/*.pftrace | wc -l)" -eq 18 ]
	[ "$(awk -F'\t' 'NR>1' out/summary.tsv | wc -l)" -eq 20 ]
	[ "$(awk -F'\t' '$2=="ok"' out/summary.tsv | wc -l)" -eq 18 ]
	grep -q "^in/corrupt.data	failed	-	-	-	-	[0-9]*	mt-pt2events: in/corrupt.data: not a perf.data file" out/summary.tsv
	grep -q "^in/empty.data	failed	-	-	-	-	[0-9]*	mt-pt2events: in/empty.data: empty input" out/summary.tsv
	# each trace is what the filters make by hand, with the events counted
	# (named for the input less its directory and ending: issue 23)
	for f in in/in3.data:in3 in/b17.tar.zst:b17 in/b18.tar.gz:b18; do
		n=${f#*:} f=${f%%:*}
		"$MT_BIN/mt-pt2events" "$f" | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o byhand.pftrace
		cmp byhand.pftrace "out/$n.pftrace"
		events=$("$MT_BIN/mt-pt2events" "$f" | grep -vc '^#')
		grep -q "^$f	ok	$events	" out/summary.tsv
	done
	"$PFCHECK" out/b18.pftrace > /dev/null
	# resumed: nothing runs again, every input is still reported
	nlog=$(wc -l < out/joblog)
	run --separate-stderr "$PIPES/mt-batch" -d out --resume in/*
	[ "$status" -eq 1 ]
	[ "$(wc -l < out/joblog)" -eq "$nlog" ]
	[ "$(awk -F'\t' '$2=="ok"' out/summary.tsv | wc -l)" -eq 18 ]
	# the summary and the database say the same of each input (issue 48:
	# the database counted lines and the calls' span): events, and the
	# span from the first event to the last
	"$PIPES/mt-batch" -d out2 --db b.db in/in3.data in/b17.tar.zst > /dev/null 2>&1
	awk -F'\t' 'NR > 1 { print $1 "\t" $3 "\t" $5 }' out2/summary.tsv | sort > sum.rows
	sqlite3 -separator $'\t' b.db "SELECT input, events, CASE WHEN span_ns IS NULL THEN '-' ELSE printf('%.3f', span_ns / 1e6) END FROM traces" | sort > db.rows
	[ "$(wc -l < sum.rows)" -eq 2 ]
	diff sum.rows db.rows
}

@test "mt-batch: --sshlogin passes through to GNU parallel (':' is this machine); usage errors" {
	cd "$BATS_TEST_TMPDIR"
	cp "$MT_FIXTURES/flow/plain.data" a.data
	# jobs sent through --sshlogin find mt-batch on PATH, there as here
	PATH=$PIPES:$PATH run --separate-stderr "$PIPES/mt-batch" --sshlogin : -d out --format=json a.data
	[ "$status" -eq 0 ]
	python3 -c 'import json; json.load(open("out/a.json"))'
	[ -e a.data ] # a local job's input is not cleaned up
	run --separate-stderr "$PIPES/mt-batch" -d out
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"no INPUT given"* ]]
	run --separate-stderr "$PIPES/mt-batch" --jobs=x a.data
	[ "$status" -eq 2 ]
	mkdir -p d1 && cp a.data d1/ && cp a.data d1_a.data
	run --separate-stderr "$PIPES/mt-batch" -d same d1/a.data d1_a.data
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"the same name"* ]]
	# --format=stacks (issue 23: mt-batch lacked it), as the filters write it
	"$PIPES/mt-batch" --no-bar -d st --format=stacks a.data > /dev/null
	"$MT_BIN/mt-pt2events" a.data | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" --format=stacks | cmp - st/a.stacks
	# names (issue 23): less the shared directory and a known ending; two
	# that would be one keep their endings
	mkdir -p inbox/sub && cp a.data inbox/x.data && cp a.data inbox/x.perf && cp a.data inbox/sub/y.data
	"$PIPES/mt-batch" --no-bar -d nm inbox/x.data inbox/x.perf inbox/sub/y.data > /dev/null
	[ "$(cd nm && ls *.pftrace | tr '\n' ' ')" = "sub_y.pftrace x.data.pftrace x.perf.pftrace " ]
	"$PIPES/mt-batch" --no-bar -d nm1 "$PWD/inbox/sub/y.data" > /dev/null
	[ -s nm1/y.pftrace ]
}

# Hostile names and inputs (issue 25): a FIFO input hung the batch and no
# summary was written; a name with a newline made two jobs; a leading '-'
# was read as an option; a TAB shifted the summary's columns; a killed job
# left $TMPDIR/mt-batch.* behind. Oracle: the files made here, by name;
# each decoded input's trace equal to the filters run by hand.
@test "mt-batch: --timeout stops a FIFO input; newline, TAB and '-' in names; a signal still gives the summary" {
	cd "$BATS_TEST_TMPDIR"
	export TMPDIR=$BATS_TEST_TMPDIR/tmp
	mkdir "$TMPDIR"
	cp "$MT_FIXTURES/flow/plain.data" ./-x.data
	cp "$MT_FIXTURES/flow/plain.data" "$(printf 'we\nird.data')"
	cp "$MT_FIXTURES/flow/plain.data" "$(printf 'ta\tb.data')"
	mkfifo fifo.data
	run --separate-stderr "$PIPES/mt-batch" -j 2 --no-bar --timeout=3 -d out -- -x.data "$(printf 'we\nird.data')" \
		"$(printf 'ta\tb.data')" fifo.data
	[ "$status" -eq 1 ]
	[ "$(wc -l < out/summary.tsv)" -eq 5 ]
	[ "$(awk -F'\t' '{ print NF }' out/summary.tsv | sort -u)" = 8 ]
	grep -q '^-x.data	ok	' out/summary.tsv
	grep -q '^we\\nird.data	ok	.*	out/we\\nird.pftrace	' out/summary.tsv
	grep -q '^ta\\tb.data	ok	.*	out/ta\\tb.pftrace	' out/summary.tsv
	grep -q '^fifo.data	failed	.*	timed out: stopped after --timeout=3 seconds$' out/summary.tsv
	"$MT_BIN/mt-pt2events" "$MT_FIXTURES/flow/plain.data" | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o byhand.pftrace
	cmp byhand.pftrace "out/$(printf 'we\nird').pftrace"
	cmp byhand.pftrace "out/-x.pftrace"
	[ -z "$(ls -A "$TMPDIR")" ]
	# names NUL-separated from a list: one job for the name with a newline
	printf '%s\0' "$(printf 'we\nird.data')" -x.data > list0
	run --separate-stderr "$PIPES/mt-batch" --no-bar -d out0 -0 --inputs-from=list0
	[ "$status" -eq 0 ]
	[ "$(wc -l < out0/summary.tsv)" -eq 3 ]
	# stopped by SIGTERM while a job waits on the FIFO: the summary is
	# written, the jobs not finished listed as not-run, nothing left behind
	"$PIPES/mt-batch" -j 1 --no-bar -d out2 -- fifo.data -x.data > /dev/null 2> err &
	local pid=$!
	for i in $(seq 50); do
		pgrep -f 'mt-pt2events --output-format=binary -- fifo.data' > /dev/null && break
		sleep 0.1
	done
	kill -TERM "$pid"
	local st=0
	wait "$pid" || st=$?
	[ "$st" -eq 1 ]
	grep -q 'stopped by a signal' err
	grep -q '^fifo.data	not-run	' out2/summary.tsv
	[ "$(wc -l < out2/summary.tsv)" -eq 3 ]
	sleep 0.5
	! pgrep -f 'mt-pt2events --output-format=binary -- fifo.data' || false
	[ -z "$(ls -A "$TMPDIR")" ]
	run --separate-stderr "$PIPES/mt-batch" --timeout=soon -- -x.data
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"bad --timeout 'soon'"* ]]
}

# Many hosts, for real (issue 25): --sshlogin was tested only with ':'.
# A second host is sshd on loopback (start_sshd) whose sessions start in
# root's home, where none of the inputs are: parallel carries each input
# there and each trace back (--transferfile, --return, --cleanup). Then
# that host is stopped mid-batch (its sshd and sessions killed): the jobs
# it held fail with the reason, --resume-failed on a healthy host completes
# them, and the summary reports every input once. Oracle: a local run of
# the same inputs, byte for byte.
@test "mt-batch across real ssh: traces equal a local run; a host stopped mid-batch; --resume-failed completes" {
	cd "$BATS_TEST_TMPDIR"
	mkdir in
	for i in 1 2 3 4 5; do cp "$MT_FIXTURES/flow/plain.data" "in/ssh$i-$$.data"; done
	"$PIPES/mt-batch" --no-bar -d local --db local.db in/* > /dev/null 2>&1
	start_sshd "$BATS_TEST_TMPDIR/ssh1"
	run --separate-stderr "$PIPES/mt-batch" --no-bar -d remote --db remote.db --sshlogin "$login" in/*
	echo "$output"
	[ "$status" -eq 0 ]
	for f in local/*.pftrace; do cmp "$f" "remote/${f#local/}"; done
	# the database's parts came back too: the same calls as the local run's
	q='SELECT t.input, COUNT(c.id) FROM traces t LEFT JOIN calls c ON c.trace_id = t.id GROUP BY t.id'
	[ "$(sqlite3 remote.db "$q")" = "$(sqlite3 local.db "$q")" ]
	[ "$(sqlite3 remote.db 'SELECT COUNT(*) FROM traces WHERE status = "ok"')" -eq 5 ]
	[ "$(sqlite3 remote.db 'SELECT MIN(calls) FROM traces')" -gt 100 ]
	[ "$(ls remote/*.pftrace | wc -l)" -eq 5 ]
	# the copies on the host are gone
	[ ! -e "$HOME/in/ssh1-$$.data" ]
	# stopped after its first result
	"$PIPES/mt-batch" --no-bar -d cut --sshlogin "$login" in/* > /dev/null 2> cut.err &
	local batch=$!
	for i in $(seq 300); do
		[ -n "$(ls -A cut/.status 2> /dev/null)" ] && break
		sleep 0.1
	done
	stop_sshd "$sshd_pid"
	local st=0
	wait "$batch" || st=$?
	cat cut/summary.tsv
	[ "$st" -eq 1 ]
	[ "$(awk -F'\t' 'NR > 1' cut/summary.tsv | wc -l)" -eq 5 ]
	[ "$(awk -F'\t' 'NR > 1 {print $1}' cut/summary.tsv | sort -u | wc -l)" -eq 5 ]
	ok=$(awk -F'\t' '$2 == "ok"' cut/summary.tsv | wc -l)
	[ "$ok" -ge 1 ]
	[ "$ok" -lt 5 ]
	grep -q '	failed	.*	host mthost-ssh1 not reachable (ssh exit 255): no result came back$' cut/summary.tsv
	[ "$(awk -F'\t' '$2 != "ok" && $8 == ""' cut/summary.tsv | wc -l)" -eq 0 ] # every failure says why
	# a healthy host runs the failed ones again, and only those
	start_sshd "$BATS_TEST_TMPDIR/ssh2"
	nlog=$(wc -l < cut/joblog)
	run --separate-stderr "$PIPES/mt-batch" --no-bar -d cut --resume-failed --sshlogin "$login" in/*
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' '$2 == "ok"' cut/summary.tsv | wc -l)" -eq 5 ]
	[ $(($(wc -l < cut/joblog) - nlog)) -eq $((5 - ok)) ]
	for f in local/*.pftrace; do cmp "$f" "cut/${f#local/}"; done
}

# Bundles arrive, copies finish: one not written to for --interval seconds
# (default 10) is taken; fresh ones are made old here with touch.
settle() { touch -d '1 minute ago' "$@"; }

@test "mt-archive-watch --once: converts the bundles in an inbox, then only new ones" {
	cd "$BATS_TEST_TMPDIR"
	mkdir inbox
	"$MT_BIN/mt-bundle" create -o inbox/one.tar.zst "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	settle inbox/one.tar.zst
	"$PIPES/mt-archive-watch" --once inbox archive 2>/dev/null
	[ -s archive/one.pftrace ]
	[ "$(grep -c one.tar.zst archive/joblog)" -eq 1 ]
	"$MT_BIN/mt-bundle" create -o inbox/two.tar.zst "$MT_FIXTURES/libc/plain.data" 2>/dev/null
	settle inbox/two.tar.zst
	"$PIPES/mt-archive-watch" --once inbox archive 2>/dev/null
	[ -s archive/two.pftrace ]
	[ "$(grep -c one.tar.zst archive/joblog)" -eq 1 ] # not converted twice
	[ "$(awk -F'\t' '$2=="ok"' archive/summary.tsv | wc -l)" -eq 2 ]
}

# The watcher under faults (issue 25): with --once a bundle still being
# written was taken (half a file); a bundle sorting before the converted
# ones shifted parallel's places in its job log, so one was skipped and
# another converted again; the watcher stopped mid-conversion (its process
# group killed, as a service manager does) and started again must convert
# the bundle it was on, once. Oracle: the job log (one successful line per
# bundle) and the traces made by hand.
@test "mt-archive-watch under faults: a bundle being written waits; a new first name; killed mid-conversion, each converted once" {
	cd "$BATS_TEST_TMPDIR"
	mkdir inbox
	for n in b c d e; do "$MT_BIN/mt-bundle" create -o inbox/$n.tar.zst "$MT_FIXTURES/flow/plain.data" 2>/dev/null; done
	settle inbox/b.tar.zst inbox/c.tar.zst
	# d and e are "still being written" (just modified): left for later
	"$PIPES/mt-archive-watch" --once inbox archive 2>/dev/null
	[ -s archive/b.pftrace ]
	[ ! -e archive/d.pftrace ]
	[ "$(awk -F'\t' 'NR > 1' archive/summary.tsv | wc -l)" -eq 2 ]
	# a bundle whose name sorts first arrives; d and e settle; more arrive
	# (the libc trace: long enough a conversion to be stopped in)
	"$MT_BIN/mt-bundle" create -o inbox/a.tar.zst "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	for n in f g h i; do "$MT_BIN/mt-bundle" create -o inbox/$n.tar.zst "$MT_FIXTURES/libc/plain.data" 2>/dev/null; done
	settle inbox/*.tar.zst
	# stopped while converting: the whole process group, as systemd does
	setsid "$PIPES/mt-archive-watch" --once -j 1 inbox archive > /dev/null 2>&1 &
	local w='' i
	for i in $(seq 300); do
		w=$(pgrep -f 'mt-archive-watch --once -j 1 inbox' | head -1)
		[ -n "$w" ] && pgrep -f 'mt-pt2events --output-format=binary -- inbox/' > /dev/null && break
		sleep 0.01
	done
	[ -n "$w" ]
	kill -TERM -- "-$w" # setsid made it its group's leader
	for i in $(seq 50); do pgrep -f 'mt-archive-watch --once -j 1' > /dev/null || break; sleep 0.1; done
	! pgrep -f 'mt-pt2events --output-format=binary -- inbox/' || false
	[ "$(ls archive/.status | wc -l)" -lt 9 ] # stopped before all were done
	# started again: what is left is converted, what was done is not again
	"$PIPES/mt-archive-watch" --once inbox archive 2>/dev/null
	[ "$(awk -F'\t' '$2 == "ok"' archive/summary.tsv | wc -l)" -eq 9 ]
	for n in a b c d e f g h i; do
		[ "$(awk -F'\t' -v b="inbox/$n.tar.zst" '$7 == 0 && $9 ~ ("--job " b " ")' archive/joblog | wc -l)" -eq 1 ]
		"$MT_BIN/mt-pt2events" inbox/$n.tar.zst | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o byhand.pftrace
		cmp byhand.pftrace archive/$n.pftrace
	done
}

# The watcher as a service runs it, not --once (issue 25): it noted each
# bundle's size in a subshell, so no size was ever the same "at the last
# look" and it never converted anything. Oracle: the job log (one line a
# bundle) and a trace made by hand.
@test "mt-archive-watch running: a bundle is taken once its size holds over a pass, each converted once, nothing left behind" {
	cd "$BATS_TEST_TMPDIR"
	mkdir inbox tmp
	"$MT_BIN/mt-bundle" create -o inbox/a.tar.zst "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	settle inbox/a.tar.zst
	TMPDIR=$PWD/tmp "$PIPES/mt-archive-watch" --interval=1 inbox archive > /dev/null 2>&1 3>&- &
	local w=$! i
	echo "$w" > watcher.pid
	for i in $(seq 300); do [ -s archive/a.pftrace ] && break; sleep 0.1; done
	[ -s archive/a.pftrace ]
	# one arriving while it runs: taken once it has not changed for a pass
	"$MT_BIN/mt-bundle" create -o inbox/b.tar.zst "$MT_FIXTURES/libc/plain.data" 2>/dev/null
	for i in $(seq 300); do [ -s archive/b.pftrace ] && break; sleep 0.1; done
	sleep 2.5 # two more passes: nothing converted again
	kill -TERM "$w"
	wait "$w" || true
	[ -s archive/b.pftrace ]
	for n in a b; do
		[ "$(awk -F'\t' -v b="inbox/$n.tar.zst" '$7 == 0 && $9 ~ ("--job " b " ")' archive/joblog | wc -l)" -eq 1 ]
	done
	"$MT_BIN/mt-pt2events" inbox/b.tar.zst | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o byhand.pftrace
	cmp byhand.pftrace archive/b.pftrace
	[ -z "$(ls tmp)" ] # its list of names went with it
}

# Batch and watcher (issue 49): an input named "-" was read from standard
# input; a stage killed by a signal was reported as a timeout (SIGKILL's
# 137) or under the writer that SIGPIPE stopped after it; two watchers on
# one inbox converted each bundle twice; a bundle gone from the inbox left
# the watcher's summary. Oracle: the stages run by hand; a stage made to
# die by SIGKILL (a wrapper in a bin directory of mt's tools).
@test "mt-batch: a file named -, a stage killed by a signal named with its signal, not as a timeout nor by the writer before it" {
	cd "$BATS_TEST_TMPDIR"
	cp "$MT_FIXTURES/flow/plain.data" ./-
	"$PIPES/mt-batch" --no-bar -d out -- - < /dev/null > /dev/null
	grep -q '^-	ok	' out/summary.tsv
	"$MT_BIN/mt-pt2events" "$MT_FIXTURES/flow/plain.data" | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o byhand.pftrace
	cmp byhand.pftrace out/-.pftrace
	# mt-symbolize killed by SIGKILL (as the OOM killer does) mid-stream
	mkdir bin
	for t in "$MT_BIN"/*; do ln -s "$t" bin/; done
	rm bin/mt-symbolize
	printf '#!/bin/sh\nhead -c 100 > /dev/null\nkill -KILL $$\n' > bin/mt-symbolize
	chmod +x bin/mt-symbolize
	cp "$MT_FIXTURES/libc/plain.data" big.data
	run env MT_BIN=$PWD/bin "$PIPES/mt-batch" --no-bar --timeout=100 -d out2 big.data
	[ "$status" -eq 1 ]
	cat out2/summary.tsv
	grep -q '	mt-symbolize killed by SIGKILL$' out2/summary.tsv
}

@test "mt-archive-watch: a second watcher on an inbox is refused; the summary keeps every bundle ever converted" {
	cd "$BATS_TEST_TMPDIR"
	mkdir inbox
	"$MT_BIN/mt-bundle" create -o inbox/a.tar.zst "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	settle inbox/a.tar.zst
	"$PIPES/mt-archive-watch" --interval=1 inbox archive 2> w1.err &
	local w1=$!
	for _ in $(seq 100); do [ -s archive/a.pftrace ] && break; sleep 0.1; done
	run "$PIPES/mt-archive-watch" --once inbox archive2
	[ "$status" -eq 1 ]
	[[ "$output" == *"inbox: another mt-archive-watch is converting this inbox; nothing done"* ]]
	[ ! -e archive2/summary.tsv ]
	kill "$w1"
	wait "$w1" || true
	# a gone, b come: both in the summary
	rm inbox/a.tar.zst
	"$MT_BIN/mt-bundle" create -o inbox/b.tar.zst "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	settle inbox/b.tar.zst
	"$PIPES/mt-archive-watch" --once inbox archive 2> /dev/null
	cat archive/summary.tsv
	grep -q '^inbox/a.tar.zst	ok	' archive/summary.tsv
	grep -q '^inbox/b.tar.zst	ok	' archive/summary.tsv
	[ "$(wc -l < archive/summary.tsv)" -eq 3 ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0' archive/joblog | wc -l)" -eq 2 ]
}

# Many small bundles in the inbox (issue 25): each converted once, and the
# memory of the pass flat (the largest process of the pass, against the
# same pass over a tenth of them: names go to mt-batch in a file, not held
# per bundle). A second pass converts none again. (120 and 12: 1,000 and
# 100 took 6 of make check's minutes, 300 and 30 still 1.5, 200 and 20 a
# minute beside the other suites; the ratio is what is held.)
@test "mt-archive-watch with 120 bundles: each converted once, memory flat against 12, none converted twice" {
	cd "$BATS_TEST_TMPDIR"
	mkdir in12 in120
	"$MT_BIN/mt-bundle" create -o one.tar.zst "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	local i
	for i in $(seq 120); do
		[ "$i" -gt 12 ] || cp one.tar.zst "in12/b $i.tar.zst"
		cp one.tar.zst "in120/b $i.tar.zst" # a space in every name
	done
	settle in12/* in120/*
	/usr/bin/time -f %M -o rss12 "$PIPES/mt-archive-watch" --once in12 out12 2> /dev/null
	/usr/bin/time -f %M -o rss120 "$PIPES/mt-archive-watch" --once in120 out120 2> /dev/null
	[ "$(awk -F'\t' 'NR > 1 && $2 == "ok"' out120/summary.tsv | wc -l)" -eq 120 ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0' out120/joblog | wc -l)" -eq 120 ]
	[ "$(ls out120/*.pftrace | wc -l)" -eq 120 ]
	echo "max RSS: 12 bundles $(cat rss12) KB, 120 bundles $(cat rss120) KB"
	[ "$(cat rss120)" -lt $(($(cat rss12) * 3 / 2)) ]
	"$PIPES/mt-archive-watch" --once in120 out120 2> /dev/null
	[ "$(awk -F'\t' 'NR > 1' out120/joblog | wc -l)" -eq 120 ]
	[ "$(awk -F'\t' 'NR > 1 && $2 == "ok"' out120/summary.tsv | wc -l)" -eq 120 ]
}
