#!/usr/bin/env bats
# PT notes on synthesized and hand-made traces (issue 22; the ptt runs'
# are in decode-real.bats). PTWRITE: testdata/progs/ptwrite writes 17 values with PTWRITE
# (register forms, 32 and 64 bits; payloads in its source). mt-synth
# emulates the instruction (no CPU here has it) and encodes each as a PTW
# packet, with a FUP in the ptw-fup variant. Oracles: the run's ground
# truth, perf script --itrace=w (an independent decoder) and the program's
# source.

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	export PTW=$BATS_FILE_TMPDIR/ptw
	"$MT_BIN/mt-synth" -q -o "$PTW" --variants plain,ptw-fup,tsc,mtc,per-cpu,psb -- "$MT_PROGS/ptwrite" emulate \
		> "$BATS_FILE_TMPDIR/variants" 2> "$BATS_FILE_TMPDIR/synth.log"
}

# "payload ip" per ptwrite note of a stream
mt_ptw() { awk -F'\t' '$4 == "ptwrite" { for (i = 7; i <= NF; i++) if ($i ~ /^payload=/) print substr($i, 9), $5 }' "$1"; }

@test "ptwrite: run plainly, it exits as its source says (a PTWRITE only where the CPU has one)" {
	run "$MT_PROGS/ptwrite"
	[ "$status" -eq 12 ]
}

@test "ptwrite: each variant decodes to the ground truth, its 17 notes included" {
	for v in plain ptw-fup tsc mtc per-cpu psb; do
		"$PT2EVENTS" --all-branches -o "$BATS_TEST_TMPDIR/$v" "$PTW/$v.data"
		diff <(events_body "$PTW/$v.truth") <(events_body "$BATS_TEST_TMPDIR/$v")
		[ "$(mt_ptw "$BATS_TEST_TMPDIR/$v" | wc -l)" -eq 17 ]
	done
	# the payloads the source writes: 0x1000 + i*i, i ^ 0x5a5a, then one constant
	python3 - "$BATS_TEST_TMPDIR/plain" <<-'PY'
	import sys
	want = []
	for i in range(8):
	    want += ['0x%x' % (0x1000 + i * i), '0x%x' % (i ^ 0x5a5a)]
	want.append('0xfeedfacecafebeef')
	got = [l.rstrip('\n').split('\t') for l in open(sys.argv[1]) if '\tptwrite\t' in l]
	got = [kv[8:] for c in got for kv in c[6:] if kv.startswith('payload=')]
	assert got == want, (got, want)
	PY
}

@test "ptwrite: payloads and addresses equal perf script --itrace=w, with and without FUPs" {
	for v in plain ptw-fup; do
		perf script -i "$PTW/$v.data" --itrace=w -F ip,synth 2>/dev/null |
			awk '{ print $4, "0x" $NF }' > "$BATS_TEST_TMPDIR/perf"
		[ "$(wc -l < "$BATS_TEST_TMPDIR/perf")" -eq 17 ]
		"$PT2EVENTS" -o "$BATS_TEST_TMPDIR/mt" "$PTW/$v.data"
		diff "$BATS_TEST_TMPDIR/perf" <(mt_ptw "$BATS_TEST_TMPDIR/mt")
		# perf's IP flag: the packet had a FUP
		local ipflag=0
		[ $v = ptw-fup ] && ipflag=1
		[ "$(perf script -i "$PTW/$v.data" --itrace=w -F synth 2>/dev/null | grep -c "IP: $ipflag payload")" -eq 17 ]
	done
}

@test "ptwrite: decoded by the worker threads (events held in their logs), the same notes" {
	"$PT2EVENTS" --all-branches -j 1 -o "$BATS_TEST_TMPDIR/one" "$PTW/per-cpu.data"
	"$PT2EVENTS" --all-branches -j 2 -o "$BATS_TEST_TMPDIR/two" "$PTW/per-cpu.data"
	cmp "$BATS_TEST_TMPDIR/one" "$BATS_TEST_TMPDIR/two"
	[ "$(mt_ptw "$BATS_TEST_TMPDIR/two" | wc -l)" -eq 17 ]
}

@test "ptwrite: mt-toperfetto draws each note inside the function that wrote it" {
	"$PT2EVENTS" "$PTW/tsc.data" | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" --format=json -o "$BATS_TEST_TMPDIR/t.json"
	"$PT2EVENTS" "$PTW/tsc.data" | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o "$BATS_TEST_TMPDIR/t.pftrace"
	"$MT_TESTTOOLS/pfcheck" "$BATS_TEST_TMPDIR/t.pftrace"
	python3 - "$BATS_TEST_TMPDIR/t.json" <<-'PY'
	import json, sys
	from chromejson import complete
	ev = json.load(open(sys.argv[1]))['traceEvents']
	slices = complete(ev)
	notes = [e for e in ev if e.get('ph') == 'i' and e['name'].startswith('ptwrite ')]
	assert len(notes) == 17, len(notes)
	for n in notes:
	    v = int(n['name'][8:], 16)
	    fn = 'ptw32' if 0x5a50 <= v <= 0x5a5f else 'ptw64'  # i ^ 0x5a5a, i < 8: the 32-bit ones
	    inside = [s for s in slices if s['name'] == fn and s['ts'] <= n['ts'] <= s['ts'] + s['dur']]
	    assert inside, (n, fn)
	PY
}

@test "ptwrite: one with a memory operand is refused by mt-synth, with the reason" {
	run --separate-stderr "$MT_BIN/mt-synth" -q -o "$BATS_TEST_TMPDIR/mem" --variants plain -- "$MT_PROGS/ptwrite" emulate memory
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"has a memory operand, which mt-synth does not emulate"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/mem/plain.data" ]
}

# The power variant (mt-synth(1)): the core sleeps in C3 through each
# syscall that returns: MWAIT, PWRE, EXSTOP, PWRX while tracing is off.
# Oracles: the truth (every note, with --power), and perf script
# --itrace=p for the EXSTOPs and PWRXs (perf reports an MWAIT and a PWRE
# only with the FUP of an EXSTOP with an IP, which these have not; libipt
# 2.1 reports them without one, as mt does).
@test "power variant: the notes equal the truth with --power, none without; perf's PWRX and EXSTOP agree" {
	local t=$BATS_TEST_TMPDIR
	"$MT_BIN/mt-synth" -q -o "$t/s" --variants power -- "$MT_PROGS/flow" > /dev/null 2>&1
	"$PT2EVENTS" --all-branches --power -o "$t/mt" "$t/s/power.data"
	diff <(events_body "$t/s/power.truth") <(events_body "$t/mt")
	[ "$(grep -c '	pwrx	' "$t/mt")" -eq 2 ] # flow's two syscalls that return (write, getpid)
	"$PT2EVENTS" --all-branches -o "$t/plain" "$t/s/power.data"
	diff <(events_body "$t/s/power.truth" | grep -vE $'\t(mwait|pwre|pwrx|exstop)\t') <(events_body "$t/plain")
	perf script -i "$t/s/power.data" --itrace=p -F synth 2>/dev/null > "$t/perf"
	# perf's C-states are the hint values: C3 is 2
	[ "$(grep -c 'deepest cstate: 2 last cstate: 2 wake reason: 0x1' "$t/perf")" -eq 2 ]
	[ "$(grep -c '^ *IP: 0 *$' "$t/perf")" -eq "$(grep -c '	exstop	0x0	' "$t/mt")" ]
}

# PT notes out of context, by hand (raw PT over 16 NOPs and a RET at
# 0x1000): a PTW cut short at the end, a PTW before the first PSB, a PWRX
# with no PWRE, a PTW whose IP bit promises a FUP that never comes (a
# TIP.PGD instead). Oracle: libipt's query decoder reading the same bytes
# (--decoder=libipt-query) gives the same stream; no crash, exit 0.
@test "PT notes out of context decode as libipt's query decoder decodes them" {
	local t=$BATS_TEST_TMPDIR
	local psb='\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82' fup='\x7d\x00\x10\x00\x00\x00\x00' end='\x02\x23'
	printf '\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\xc3' > "$t/code"
	printf "$psb$fup$end\\x02\\x12\\xcd" > "$t/cut.pt"
	printf "\\x02\\x12\\xaa\\xbb\\xcc\\xdd$psb$fup$end\\x02\\x12\\x01\\x02\\x03\\x04\\x01" > "$t/before.pt"
	printf "$psb$fup$end\\x02\\xa2\\x21\\x01\\x00\\x00\\x00\\x01" > "$t/pwrx.pt"
	printf "$psb$fup$end\\x02\\x92\\x05\\x00\\x00\\x00\\x01" > "$t/nofup.pt"
	for f in cut before pwrx nofup; do
		run "$PT2EVENTS" --power --pt "$t/$f.pt" --image "$t/code@0x1000" -o "$t/$f.mt"
		[ "$status" -eq 0 ]
		"$PT2EVENTS" --decoder=libipt-query --power --pt "$t/$f.pt" --image "$t/code@0x1000" -o "$t/$f.ipt"
		diff <(events_body "$t/$f.mt") <(events_body "$t/$f.ipt")
	done
	# the PTW after the PSB is read, the one before it is not
	[ "$(grep -c 'ptwrite.*payload=0x4030201$' "$t/before.mt")" -eq 1 ]
	grep -q $'\tpwrx\t.*cstate=3\tdeepest=2\twake=int' "$t/pwrx.mt"
}

@test "mt-toperfetto --ptwrite-track=counter: the payloads as the process's ptwrite counter; C-states as its C-state counter" {
	local t=$BATS_TEST_TMPDIR
	"$PT2EVENTS" "$PTW/tsc.data" | "$MT_BIN/mt-toperfetto" --ptwrite-track=counter --format=json -o "$t/c.json"
	python3 - "$t/c.json" <<-'PY'
	import json, sys
	ev = json.load(open(sys.argv[1]))['traceEvents']
	got = [e['args']['ptwrite'] for e in ev if e.get('ph') == 'C' and e['name'] == 'ptwrite']
	want = []
	for i in range(8):  # the source's payloads
	    want += [0x1000 + i * i, i ^ 0x5a5a]
	want.append(float(0xfeedfacecafebeef))  # a double: exact to 2^53
	assert got == want, (got, want)
	assert not [e for e in ev if e.get('ph') == 'i' and e['name'].startswith('ptwrite ')]
	PY
	"$PT2EVENTS" "$PTW/tsc.data" | "$MT_BIN/mt-toperfetto" --ptwrite-track=counter -o "$t/c.pftrace"
	run "$MT_TESTTOOLS/pfcheck" "$t/c.pftrace"
	[ "$status" -eq 0 ]
	[[ "$output" == *" counters=17 "* ]]
	run "$MT_BIN/mt-toperfetto" --ptwrite-track=bars "$PTW/tsc.data"
	[ "$status" -eq 2 ]
	# C-states: the power variant's two sleeps in C3, each back to C0
	"$MT_BIN/mt-synth" -q -o "$t/s" --variants power -- "$MT_PROGS/flow" > /dev/null 2>&1
	"$PT2EVENTS" --power "$t/s/power.data" | "$MT_BIN/mt-toperfetto" --format=json -o "$t/p.json"
	python3 -c 'import json,sys; print(" ".join("%g" % e["args"]["C-state"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "C" and e["name"] == "C-state"))' "$t/p.json" > "$t/cstates"
	[ "$(cat "$t/cstates")" = "3 0 3 0" ]
	"$PT2EVENTS" --power "$t/s/power.data" | "$MT_BIN/mt-toperfetto" -o "$t/p.pftrace"
	"$MT_TESTTOOLS/pfcheck" "$t/p.pftrace"
	"$PT2EVENTS" --power "$t/s/power.data" | "$MT_BIN/mt-toperfetto" -o "$t/p.fxt"
	python3 "$BATS_TEST_DIRNAME/tools/fxtread.py" "$t/p.fxt" > /dev/null
}

# Bounded names: a stream of 70,000 distinct payloads (by hand, as
# mt-events(5) writes ptwrite notes): the first 65,536 instants carry their
# payload, the rest are "ptwrite", said once on standard error.
@test "mt-toperfetto: past 65,536 distinct PTWRITE payloads the instants are named ptwrite, with one warning" {
	local t=$BATS_TEST_TMPDIR
	{
		printf '# mt-events 1\n# comm\t1\t1\tapp\n'
		seq 70000 | awk '{ printf "%d\t1\t1\tptwrite\t0x401000\t0x0\tpayload=0x%x\n", 1000 + $1, $1 }'
	} > "$t/many"
	run --separate-stderr "$MT_BIN/mt-toperfetto" --format=json -o "$t/many.json" "$t/many"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'over 65536 distinct PTWRITE payloads' <<< "$stderr")" -eq 1 ]
	python3 - "$t/many.json" <<-'PY'
	import json, sys
	names = [e['name'] for e in json.load(open(sys.argv[1]))['traceEvents'] if e.get('ph') == 'i']
	assert len(names) == 70000, len(names)
	assert names[:65536] == ['ptwrite 0x%x' % i for i in range(1, 65537)], names[:3]
	assert names[65536:] == ['ptwrite'] * (70000 - 65536)
	PY
}
