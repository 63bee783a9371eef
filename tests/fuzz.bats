#!/usr/bin/env bats
# The fuzz harnesses' saved inputs (fuzz/regress/NAME/: each once crashed,
# hung or leaked; fixed since) and their seeds, replayed through the same
# entry points without libFuzzer. Under `make check SAN=1` ASan and UBSan
# watch them, so a regression fails here.

load helpers

replay() { # NAME [INPUT...]
	local bin=$MT_BIN/../fuzz/replay_$1
	shift
	MT_FUZZ_PAGES=$MT_REAL/libxdc/foo/data run "$bin" "$@"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"replay: "*" inputs"* ]]
	[[ "$output" != *"ERROR: AddressSanitizer"* && "$output" != *"runtime error"* ]]
}

@test "fuzz regressions: perf.data (a borrowed buffer freed on close; a null switch table offset; a TSC shift of 4145; a queue with no data; a data size that wraps the feature table offset; code read from an image without sections)" {
	replay perfdata "$BATS_TEST_DIRNAME/../fuzz/regress/perfdata" "$MT_FIXTURES"/flow/*.data \
		"$MT_REAL"/quipper/perf.data.intel_pt-4.14 "$MT_REAL"/quipper/perf.data.piped.intel_pt-4.14
}

@test "fuzz regressions: raw PT (a loop of direct branches walked forever is now cut, as an error event; mt's packet reader kept TNT bits across a resync at the PSB where libipt takes over, and synchronised on the first PSB of a run of two where libipt takes the last) and the real traces, each decoded by mt and libipt alike" {
	replay rawpt "$BATS_TEST_DIRNAME/../fuzz/regress/rawpt" "$MT_REAL"/libxdc/*/trace
	"$MT_BIN/mt-pt2events" --pt "$BATS_TEST_DIRNAME/../fuzz/regress/rawpt/direct-branch-loop" \
		--pages "$MT_REAL/libxdc/foo/data" > "$BATS_TEST_TMPDIR/ev" || true
	grep -q 'msg=no packet for over 1048576 instructions' "$BATS_TEST_TMPDIR/ev"
}

@test "fuzz regressions: perf script text (an empty input)" {
	replay perfscript "$BATS_TEST_DIRNAME/../fuzz/regress/perfscript" "$MT_REAL"/magic-trace/memmove_decode_error.perf
}

@test "fuzz regressions: event streams through mt-toperfetto's reconstruction (a reader leaked on a failed open)" {
	replay events "$BATS_TEST_DIRNAME/../fuzz/regress/events" "$MT_FIXTURES"/flow/plain.truth \
		"$BATS_TEST_DIRNAME"/../testdata/callstack
}

@test "fuzz seeds: perf maps and kallsyms" {
	replay symbols "$BATS_TEST_DIRNAME/../fuzz/seeds/symbols"
}

@test "fuzz harness: bundles (the checking walk, extraction and manifest) replay their seeds cleanly" {
	local d=$BATS_TEST_TMPDIR/seeds
	mkdir -p "$d"
	for c in none zstd gzip; do
		"$MT_BIN/mt-bundle" create --no-caps --compress=$c -o "$d/flow.$c" "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	done
	head -c 3000 "$d/flow.none" > "$d/cut"
	mkdir -p "$BATS_TEST_TMPDIR/tmp"
	TMPDIR=$BATS_TEST_TMPDIR/tmp replay bundle "$d"
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/tmp")" ] # every extraction removed
}
