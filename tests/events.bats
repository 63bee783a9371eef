#!/usr/bin/env bats
# The event stream's two forms (mt-events(5)). Oracle: the text form that
# mt-pt2events writes; converting it to binary and back must reproduce it
# byte for byte, and mt-pt2events' own binary output must be the same bytes
# as the converted text.

load helpers

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
	# every line written is a line of the full stream, in order, and only the last is missing
	[ "$(wc -l < "$t/cut.txt")" -eq $(( $(wc -l < "$t/a.txt") - 1 )) ]
	cmp "$t/cut.txt" <(head -n -1 "$t/a.txt")
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
