#!/usr/bin/env bats
# The event stream's two forms (mt-events(5)). Oracle: the text form that
# mt-pt2events writes; converting it to binary and back must reproduce it
# byte for byte, and mt-pt2events' own binary output must be the same bytes
# as the converted text.

load helpers
bats_require_minimum_version 1.5.0

EVENTS=$MT_BIN/mt-events

roundtrip() { # PROG VARIANT
	local f=$MT_FIXTURES/$1/$2.data t=$BATS_TEST_TMPDIR
	"$PT2EVENTS" --all-branches --power "$f" > "$t/a.txt"
	"$PT2EVENTS" --all-branches --power --output-format=binary "$f" > "$t/a.bin"
	"$EVENTS" --output-format=binary "$t/a.txt" > "$t/b.bin"
	"$EVENTS" < "$t/b.bin" > "$t/b.txt"
	cmp "$t/a.txt" "$t/b.txt"
	cmp "$t/a.bin" "$t/b.bin"
	# binary is the compact form
	[ "$(stat -c %s "$t/a.bin")" -lt "$(stat -c %s "$t/a.txt")" ]
	[ "$(grep -vc '^#' "$t/a.txt")" -gt 100 ]
}

@test "text -> binary -> text is exact: flow plain (timeless)" { roundtrip flow plain; }
@test "text -> binary -> text is exact: flow mtc (timed)" { roundtrip flow mtc; }
@test "text -> binary -> text is exact: flow per-cpu" { roundtrip flow per-cpu; }
@test "text -> binary -> text is exact: libc plain" { roundtrip libc plain; }

@test "extra columns and unknown metadata pass through both forms in order" {
	local t=$BATS_TEST_TMPDIR
	"$PT2EVENTS" "$MT_FIXTURES/flow/plain.data" |
		awk -F'\t' 'BEGIN{OFS="\t"} /^#/{print; next} {print $0, "sym=f" NR%7, "flag", "empty="}' > "$t/x.txt"
	printf '# future\tmetadata line\n' >> "$t/x.txt"
	"$EVENTS" --output-format=binary "$t/x.txt" | "$EVENTS" > "$t/y.txt"
	cmp "$t/x.txt" "$t/y.txt"
}

@test "readers reject a stream that is neither form, by name" {
	printf 'hello\n' > "$BATS_TEST_TMPDIR/x"
	run "$EVENTS" "$BATS_TEST_TMPDIR/x"
	[ "$status" -eq 1 ]
	[[ "$output" == "mt-events: $BATS_TEST_TMPDIR/x: not an mt event stream"* ]]
	run "$EVENTS" < /dev/null
	[ "$status" -eq 1 ]
	[[ "$output" == *"empty input"* ]]
}

@test "a later stream version is refused, not misread" {
	printf '# mt-events 2\n' > "$BATS_TEST_TMPDIR/x"
	run "$EVENTS" "$BATS_TEST_TMPDIR/x"
	[ "$status" -eq 1 ]
	[[ "$output" == *"mt-events version 2, this reader knows 1"* ]]
}

@test "a malformed text line is reported with its line number" {
	printf '# mt-events 1\n-\t1\t1\tcall\t0x1\t0x2\n-\t1\t1\tcall\t0x1\n' > "$BATS_TEST_TMPDIR/x"
	run "$EVENTS" "$BATS_TEST_TMPDIR/x"
	[ "$status" -eq 1 ]
	[[ "$output" == *"x:3: event line has 5 columns"* ]]
	# what came before the damage is still written
	[[ "$output" == *"-	1	1	call	0x1	0x2"* ]]
}

@test "a truncated binary stream keeps its sound records and reports the cut" {
	local t=$BATS_TEST_TMPDIR
	"$PT2EVENTS" --output-format=binary "$MT_FIXTURES/flow/plain.data" > "$t/a.bin"
	"$PT2EVENTS" "$MT_FIXTURES/flow/plain.data" > "$t/a.txt"
	head -c $(( $(stat -c %s "$t/a.bin") - 3 )) "$t/a.bin" > "$t/cut.bin"
	run "$EVENTS" -o "$t/cut.txt" "$t/cut.bin"
	[ "$status" -eq 1 ]
	[[ "$output" == *"mt-events: $t/cut.bin: record "*": truncated"* ]]
	# every line written is a line of the full stream, in order, and only
	# the last is missing; the output ends saying where its input stopped
	[ "$(wc -l < "$t/cut.txt")" -eq "$(wc -l < "$t/a.txt")" ]
	cmp <(head -n -1 "$t/cut.txt") <(head -n -1 "$t/a.txt")
	tail -1 "$t/cut.txt" | grep -q "^# error	$t/cut.bin: record .*: truncated"
}

# Damaged input and -o (issue 25): the output was renamed into place looking
# complete. Now a text or binary stream ends with "# error MESSAGE"
# (mt-events(5)), every later reader passes the line on and exits 1, and
# folded stacks, which cannot say so, are not left under their name.
@test "damaged input: -o outputs say so at their end, readers downstream exit 1, stacks are not left" {
	local t=$BATS_TEST_TMPDIR
	printf '# mt-events 1\n-\t1\t1\tcall\t0x1\t0x2\nbogus line\n-\t1\t1\treturn\t0x2\t0x1\n' > "$t/bad.ev"
	for fmt in text binary; do
		run --separate-stderr "$EVENTS" --output-format=$fmt -o "$t/e.$fmt" "$t/bad.ev"
		[ "$status" -eq 1 ]
		"$EVENTS" "$t/e.$fmt" > "$t/e.txt" 2> "$t/e.err" || echo $? > "$t/e.rc"
		[ "$(cat "$t/e.rc")" -eq 1 ]
		rm "$t/e.rc"
		grep -q "the stream is incomplete: $t/bad.ev:3: event line has 1 columns" "$t/e.err"
		[ "$(tail -1 "$t/e.txt")" = "# error	$t/bad.ev:3: event line has 1 columns, need 6" ]
		grep -q "call	0x1	0x2" "$t/e.txt"
		run --separate-stderr "$MT_BIN/mt-symbolize" -o "$t/s.txt" "$t/e.$fmt"
		[ "$status" -eq 1 ]
		[[ "$stderr" == *"the stream is incomplete"* ]]
		{ "$EVENTS" "$t/s.txt" 2> /dev/null || true; } | tail -1 | grep -q "^# error	" # in the form it came in
		run --separate-stderr "$MT_BIN/mt-toperfetto" --format=stacks -o "$t/st" "$t/s.txt"
		[ "$status" -eq 1 ]
		[ ! -e "$t/st" ]
		run --separate-stderr "$MT_BIN/mt-toperfetto" --format=json -o "$t/j.json" "$t/s.txt"
		[ "$status" -eq 1 ]
		grep -q 'input damaged: ' "$t/j.json"
	done
	# a NUL inside a text line: an error naming the line, not a silent end
	printf '# mt-events 1\n-\t1\t1\tcall\t0x1\t0x2\0tail\n' > "$t/nul.ev"
	run --separate-stderr "$EVENTS" "$t/nul.ev"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"nul.ev:2: a NUL byte in a text line"* ]]
}

@test "mt-events: --help, --version, bad options" {
	run "$EVENTS" --help
	[ "$status" -eq 0 ]
	[[ "$output" == Usage:* ]]
	run "$EVENTS" --version
	[ "$status" -eq 0 ]
	[[ "$output" == "mt-events (mt) "* ]]
	run "$EVENTS" --output-format=xml
	[ "$status" -eq 2 ]
	[[ "$output" == *"expected text or binary"* ]]
	run "$PT2EVENTS" --output-format=xml /dev/null
	[ "$status" -eq 2 ]
	run "$EVENTS" a b
	[ "$status" -eq 2 ]
}
