#!/usr/bin/env bats
# mt-synth's command line (its output is checked in decode-synth.bats).

load helpers
bats_require_minimum_version 1.5.0

@test "mt-synth: --help, --version, --list-variants" {
	run "$SYNTH" --help
	[ "$status" -eq 0 ]
	[[ "$output" == Usage:* ]]
	run "$SYNTH" --version
	[[ "$output" == "mt-synth (mt) "* ]]
	run "$SYNTH" --list-variants
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | tr '\n' ' ')" = "plain long-tnt noretcomp tsc mtc psb psb-timeless wrap pipe per-cpu buildid cyc cyc-turbo per-cpu-mtc snapshot snapshot-gap kernel kcore ptw-fup power lbr brstack brstack-notype " ]
}

@test "mt-synth: usage errors exit 2 before running anything" {
	run "$SYNTH" --variants nosuch -- /bin/true
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown variant 'nosuch'"* ]]
	run "$SYNTH"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no command given"* ]]
}

@test "mt-synth: a command that cannot run exits 1 with its reason" {
	run "$SYNTH" -o "$BATS_TEST_TMPDIR" -- /nonexistent/prog
	[ "$status" -eq 1 ]
	[ "$output" = "mt-synth: /nonexistent/prog: No such file or directory" ]
	[ -z "$(ls "$BATS_TEST_TMPDIR")" ]
}

@test "mt-synth: the fixture runs recorded the expected programs" {
	grep -q '^plain insns=[0-9]* pt_bytes=' "$MT_FIXTURES/flow/variants.txt"
	grep -q 'flow: pid [0-9]*, 1 thread, [0-9]* instructions' "$MT_FIXTURES/flow/synth.log"
	grep -q 'threads: pid [0-9]*, 2 threads, [0-9]* instructions' "$MT_FIXTURES/threads/synth.log"
	# only per-cpu variants can hold two threads
	[ "$(cut -d' ' -f1 "$MT_FIXTURES/threads/variants.txt" | tr '\n' ' ')" = "per-cpu per-cpu-mtc " ]
	# the libc run went through ld.so and libc, and hit missed single-steps or not:
	# either way every variant was written
	# 'all': every variant but lbr, brstack and brstack-notype (sampling recordings, no PT)
	[ "$(wc -l < "$MT_FIXTURES/libc/variants.txt")" -eq "$("$MT_BIN/mt-synth" --list-variants 2>/dev/null | grep -cvx 'lbr\|brstack\|brstack-notype')" ]
	[ -s "$MT_FIXTURES/libc/kernel.vmlinux" ]
	[ -s "$MT_FIXTURES/libc/kcore.kcore_dir/kcore" ]
	grep -q 'libc.so.6$' "$MT_FIXTURES/libc/plain.truth"
}

@test "mt-synth: a per-thread variant of a two-thread run is refused by name" {
	# the fixture's two-thread run of threads, saved (a run single-stepped
	# here takes seconds; the save is held to the recording below)
	run "$SYNTH" -q -o "$BATS_TEST_TMPDIR" --variants plain --from-run="$MT_FIXTURES/threads/threads.run"
	[ "$status" -eq 1 ]
	[[ "$output" == *"variant plain: 2 threads need a per-cpu variant"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/plain.data" ]
}

@test "mt-synth --hit: the fixture's breakpoint has one hit per run of tail_target (nm's address), an unknown symbol is refused" {
	# tail_target runs once per loop iteration of flow's _start: 30 times
	grep -q '^cyc .* hits=30$' "$MT_FIXTURES/hits/variants.txt"
	addr=$(nm "$MT_PROGS/flow" | awk '$3=="tail_target"{print $1}')
	grep -q "event=mem:0x${addr#"${addr%%[1-9a-f]*}"}:x" "$MT_FIXTURES/hits/cyc.truth"
	run "$SYNTH" -q -o "$BATS_TEST_TMPDIR" --hit=no_such_function -- "$MT_PROGS/flow"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--hit: no function 'no_such_function'"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/plain.data" ]
}

# -o DIR that is not there yet (issue 23): it said "not a directory". Made,
# as mkdir would; a file there is still refused, by name.
@test "mt-synth -o a missing directory makes it; a file there is refused" {
	cd "$BATS_TEST_TMPDIR"
	"$MT_BIN/mt-synth" -q -o new --variants plain -- "$MT_PROGS/flow" > /dev/null 2>&1
	[ -s new/plain.data ]
	touch afile
	run --separate-stderr "$MT_BIN/mt-synth" -q -o afile --variants plain -- "$MT_PROGS/flow"
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-synth: afile: not a directory" ]
}

# A run saved by --save-run and written again by --from-run (issue 49's
# CI time: the large tests single-step libc_flow and deep once, in the
# fixtures, not a dozen times). Oracle: the recording's own outputs, byte
# for byte: the fixtures tests/run recorded with --save-run (libc: every
# variant, the kernel images too; threads: two threads; hits: --hit), and
# here a run with PTWRITEs and repeated traces (--loop, --threads,
# --contiguous).
@test "mt-synth --save-run, --from-run: a saved run writes the recording's very files (every variant, --hit, PTWRITE, threads, --repeat)" {
	local t=$BATS_TEST_TMPDIR fx f n=0
	for fx in "libc libc_flow all" "threads threads all" "hits flow cyc,per-cpu,plain --hit=tail_target" \
		"deep deep plain"; do
		set -- $fx
		"$SYNTH" -o "$t/$1" --variants="$3" ${4:+"$4"} --from-run="$MT_FIXTURES/$1/$2.run" > "$t/$1.out" 2> "$t/$1.err"
		cmp "$t/$1.out" "$MT_FIXTURES/$1/variants.txt"
		for f in "$t/$1"/*; do
			diff -r "$f" "$MT_FIXTURES/$1/${f##*/}"
			n=$((n + 1))
		done
		[ "$(sed 's/^mt-synth: [^:]*: //' "$t/$1.err")" = "$(sed 's/^mt-synth: [^:]*: //' "$MT_FIXTURES/$1/synth.log")" ]
		grep -q "^mt-synth: $MT_FIXTURES/$1/$2.run: pid " "$t/$1.err"
	done
	local args
	for args in "ptw --variants=plain,ptw-fup,tsc,per-cpu -- $MT_PROGS/ptwrite emulate" \
		"rep --variants=plain,psb-timeless --repeat=5 --loop --threads=2 --contiguous -- $MT_PROGS/flow"; do
		set -- $args
		local name=$1
		shift
		"$SYNTH" -q -o "$t/$name.rec" --save-run="$t/$name.run" "$@" > "$t/$name.rec.out" 2> "$t/$name.rec.err"
		# the same options, the command's place taken by the saved run
		local opts=()
		while [ "$1" != -- ]; do opts+=("$1"); shift; done
		"$SYNTH" -o "$t/$name.back" "${opts[@]}" --from-run="$t/$name.run" > "$t/$name.back.out" 2> "$t/$name.back.err"
		cmp "$t/$name.rec.out" "$t/$name.back.out"
		diff -r "$t/$name.rec" "$t/$name.back"
		n=$((n + $(ls "$t/$name.rec" | wc -l)))
		[ "$(sed 's/^mt-synth: [^:]*: //' "$t/$name.rec.err")" = "$(sed 's/^mt-synth: [^:]*: //' "$t/$name.back.err")" ]
	done
	echo "$n files written again, each the same"
	[ "$n" -ge 60 ]
}

# A saved run is input: one that is not a run, cut, or not a regular file
# is refused with its reason (the unit test holds every field); usage.
@test "mt-synth --from-run: a cut file, another file, a FIFO, no file: exit 1 with the reason; with a COMMAND: usage" {
	local t=$BATS_TEST_TMPDIR
	"$SYNTH" -q -o "$t" --save-run="$t/flow.run" -- "$MT_PROGS/flow" > /dev/null 2>&1
	head -c 5000 "$t/flow.run" > "$t/cut.run"
	run --separate-stderr "$SYNTH" -o "$t/out" --from-run="$t/cut.run"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "mt-synth: $t/cut.run: cut short in "* || "$stderr" == *"more than the file holds"* ||
		"$stderr" == *"past the file"* ]]
	[ ! -e "$t/out/plain.data" ]
	run --separate-stderr "$SYNTH" -o "$t/out" --from-run="$MT_FIXTURES/flow/plain.data"
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-synth: $MT_FIXTURES/flow/plain.data: not a run saved by mt-synth --save-run (no MTSYNRUN)" ]
	mkfifo "$t/fifo"
	run --separate-stderr timeout 10 "$SYNTH" -o "$t/out" --from-run="$t/fifo"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"$t/fifo: not a regular file (a FIFO)"* ]]
	run --separate-stderr "$SYNTH" -o "$t/out" --from-run="$t/none"
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-synth: $t/none: No such file or directory" ]
	run --separate-stderr "$SYNTH" --from-run="$t/flow.run" -- "$MT_PROGS/flow"
	[ "$status" -eq 2 ]
	[[ "$stderr" == "mt-synth: --from-run runs nothing: no COMMAND"* ]]
	run --separate-stderr "$SYNTH" --from-run="$t/flow.run" --save-run="$t/x.run"
	[ "$status" -eq 2 ]
	[ ! -e "$t/x.run" ]
}
