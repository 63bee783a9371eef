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
	[ "$(echo "$output" | tr '\n' ' ')" = "plain long-tnt noretcomp tsc mtc psb psb-timeless wrap pipe per-cpu buildid cyc cyc-turbo per-cpu-mtc snapshot snapshot-gap kernel kcore ptw-fup power " ]
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
	[ "$(wc -l < "$MT_FIXTURES/libc/variants.txt")" -eq "$("$MT_BIN/mt-synth" --list-variants 2>/dev/null | wc -l)" ]
	[ -s "$MT_FIXTURES/libc/kernel.vmlinux" ]
	[ -s "$MT_FIXTURES/libc/kcore.kcore_dir/kcore" ]
	grep -q 'libc.so.6$' "$MT_FIXTURES/libc/plain.truth"
}

@test "mt-synth: a per-thread variant of a two-thread run is refused by name" {
	run "$SYNTH" -q -o "$BATS_TEST_TMPDIR" --variants plain -- "$MT_PROGS/threads"
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
