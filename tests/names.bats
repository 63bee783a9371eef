#!/usr/bin/env bats
# Names are bytes (issue 49): a function and a thread named with what a
# JIT's map, prctl or a hostile ELF can give (bytes that are not UTF-8, a
# cut sequence, a surrogate, terminal escapes ESC [ and OSC, C1's CSI,
# CR, quotes and backslashes) reach every output in a form its own reader
# takes: JSON and SQLite and Perfetto strings valid UTF-8 with U+FFFD
# where Python's decoder puts it (tools/names_check.py), TSV rows whole,
# the text table free of control characters. Readers: Python's json
# (strict UTF-8) and sqlite3 (refuses TEXT that is not UTF-8), and
# trace_processor (skipped, saying so, without ../shared).

load helpers

TPS=${MT_TRACE_PROCESSOR:-$BATS_TEST_DIRNAME/../../shared/tools/perfetto/trace_processor_shell}
CHECK=$BATS_TEST_DIRNAME/tools/names_check.py

# the hostile name and thread name, as hex, and a stream that has them
NAME_HEX=$(printf 'fib\xff\xfe\x1b]0;pwned\x07\x1b[31m\r\xc2\x9b2J\x9b"q\\e\xed\xa0\x80\xe2\x82' | od -An -tx1 | tr -d ' \n')
COMM_HEX=$(printf 'w\xc3\xa9\x1b[2J\xff\x9b' | od -An -tx1 | tr -d ' \n')

setup() {
	cd "$BATS_TEST_TMPDIR"
	local name comm
	name=$(printf "$(sed 's/../\\x&/g' <<< "$NAME_HEX")")
	comm=$(printf "$(sed 's/../\\x&/g' <<< "$COMM_HEX")")
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" |
		NAME=$name COMM=$comm perl -pe 's/(to_sym|from_sym)=fib\t/$1=$ENV{NAME}\t/g; s/^(# comm\t\d+\t\d+\t).*/$1$ENV{COMM}/' > hostile.ev
	grep -c $'\x1b' hostile.ev
}

@test "mt-report: the text table and TSV hold no control character; JSON and SQLite are UTF-8, names as Python decodes them" {
	"$MT_BIN/mt-report" --format=text --per-thread hostile.ev > r.txt
	python3 "$CHECK" text r.txt "$NAME_HEX" "$COMM_HEX"
	grep -qF 'fib\xff\xfe\x1b]0;pwned\x07\x1b[31m\r\xc2\x9b2J\x9b"q\\e\xed\xa0\x80\xe2\x82' r.txt # escaped, every byte said
	"$MT_BIN/mt-report" --format=tsv --per-thread hostile.ev > r.tsv
	python3 "$CHECK" tsv r.tsv "$NAME_HEX" "$COMM_HEX"
	"$MT_BIN/mt-report" --format=json --per-thread hostile.ev > r.json
	python3 "$CHECK" json r.json "$NAME_HEX" "$COMM_HEX"
	"$MT_BIN/mt-report" -o r.db hostile.ev
	python3 "$CHECK" db r.db "$NAME_HEX" "$COMM_HEX"
	# the diff's rows too
	"$MT_BIN/mt-report" --format=text --diff hostile.ev hostile.ev > d.txt
	python3 "$CHECK" text d.txt "$NAME_HEX" "$COMM_HEX"
}

@test "mt-toperfetto: Chrome JSON and speedscope are UTF-8 JSON; Perfetto and FXT strings are read by trace_processor" {
	"$MT_BIN/mt-toperfetto" --format=json -o t.json hostile.ev
	python3 "$CHECK" chrome t.json "$NAME_HEX" "$COMM_HEX"
	"$MT_BIN/mt-toperfetto" --format=speedscope -o t.speedscope.json hostile.ev
	python3 "$CHECK" speedscope t.speedscope.json "$NAME_HEX" "$COMM_HEX"
	[ -x "$TPS" ] || skip "Perfetto's trace_processor_shell is not here ($TPS: ../shared/tools/perfetto)"
	for f in pftrace fxt; do
		"$MT_BIN/mt-toperfetto" -o "t.$f" hostile.ev
		python3 "$CHECK" tp "t.$f" "$NAME_HEX" "$COMM_HEX" "$TPS"
	done
}
