#!/usr/bin/env bats
# What every tool owes its user: --help, --version, a man page that renders
# without warnings, and a usage error (exit 2) for an unknown option.

load helpers
bats_require_minimum_version 1.5.0

PIPES=$BATS_TEST_DIRNAME/../pipelines
DOC=$BATS_TEST_DIRNAME/../doc

tools() {
	local t
	for t in "$MT_BIN"/mt-*; do echo "$t"; done
	echo "$PIPES/mt-trace" "$PIPES/mt-batch" "$PIPES/mt-archive-watch" | tr ' ' '\n'
}

@test "every tool: --help, --version, a man page, exit 2 on an unknown option" {
	version=$(sed -n 's/^#define MT_VERSION "\(.*\)"/\1/p' "$BATS_TEST_DIRNAME/../lib/base/version.h")
	[ -n "$version" ]
	n=0
	while read -r t; do
		name=$(basename "$t")
		run --separate-stderr "$t" --help
		[ "$status" -eq 0 ] || { echo "$name --help: $status"; false; }
		[[ "$output" == Usage:* ]] || { echo "$name --help: $output" | head -2; false; }
		run --separate-stderr "$t" --version
		[ "$status" -eq 0 ] && [ "$output" = "$name (mt) $version" ] || { echo "$name --version: $output"; false; }
		[ -f "$DOC/$name.1" ] || { echo "$name: no doc/$name.1"; false; }
		(cd "$DOC/.." && groff -man -ww -z -I doc "doc/$name.1" 2>&1) > "$BATS_TEST_TMPDIR/groff"
		[ ! -s "$BATS_TEST_TMPDIR/groff" ] || { echo "$name.1:"; cat "$BATS_TEST_TMPDIR/groff"; false; }
		run --separate-stderr "$t" --no-such-option
		[ "$status" -eq 2 ] || { echo "$name --no-such-option: $status"; false; }
		n=$((n + 1))
	done < <(tools)
	[ "$n" -ge 12 ]
}

@test "the file-format and guarantee pages render without warnings" {
	for p in "$DOC"/*.5 "$DOC"/*.7; do
		groff -man -ww -z "$p" 2>&1 | { ! grep .; }
	done
}

@test "the suites hold no assertion bats would ignore: '[ a ] && [ b ]', a bare '! cmd', 'cmd && cmd' checks" {
	cd "$BATS_TEST_DIRNAME"
	# a test bracket before && on a line of its own; a negation without
	# '|| false'; grep -q chained by &&
	# (a chain that ends in '|| false' or '|| { ...; false; }' does fail)
	run grep -nE '^[[:space:]]*\[\[? .* \]\]? && \[' ./*.bats
	[ -z "$(grep -v '|| ' <<< "$output")" ]
	run grep -nE '^[[:space:]]*! ' ./*.bats
	[ -z "$(grep -v '|| false' <<< "$output")" ]
	run grep -nE '^[[:space:]]*grep -q [^|]* && grep' ./*.bats
	[ "$status" -eq 1 ]
}
