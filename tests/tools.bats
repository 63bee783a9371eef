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

# Abbreviations (issue 23): the C tools take GNU getopt_long's unique
# prefixes, the shell pipelines took none. Oracle: getopt_long's rules
# (a unique prefix is the option, an ambiguous one is refused with the
# candidates), the same for every tool and pipeline.
@test "every tool and pipeline: a unique abbreviation is the option, an ambiguous one a usage error" {
	while read -r t; do
		name=$(basename "$t")
		run --separate-stderr "$t" --versi
		[ "$status" -eq 0 ] && [ "$output" = "$("$t" --version)" ] || { echo "$name --versi: $status $output $stderr"; false; }
		run --separate-stderr "$t" --he
		[ "$status" -eq 0 ] && [[ "$output" == Usage:* ]] || { echo "$name --he: $status"; false; }
	done < <(tools)
	cd "$BATS_TEST_TMPDIR"
	printf '# mt-events 1\n100\t1\t1\tcall\t0x1\t0x2\tto_sym=a\n' > a.events
	# abbreviated options with values, both spellings, in each pipeline
	mkdir in && cp "$MT_FIXTURES/flow/plain.data" in/f.data
	run --separate-stderr "$PIPES/mt-trace" decode in/f.data --form=json --no-k --outp abbr.json
	[ "$status" -eq 0 ]
	head -c 1 abbr.json | grep -q '{'
	run --separate-stderr "$PIPES/mt-batch" --output-d=out --form json in/f.data
	[ "$status" -eq 0 ]
	[ -s out/f.json ]
	run --separate-stderr "$PIPES/mt-trace" run --s -- true
	[ "$status" -eq 2 ]
	[[ "$stderr" == "mt-trace: option '--s' is ambiguous; possibilities:"*"'--sampling'"* ]]
	run --separate-stderr "$PIPES/mt-batch" --re in/f.data
	[ "$status" -eq 2 ]
	[[ "$stderr" == "mt-batch: option '--re' is ambiguous; possibilities: '--resume' '--resume-failed'"* ]]
	run --separate-stderr "$MT_BIN/mt-toperfetto" --f=json a.events
	[ "$status" -eq 2 ]
	[[ "$stderr" == "mt-toperfetto: option '--f=json' is ambiguous; possibilities:"* ]]
	run --separate-stderr "$PIPES/mt-archive-watch" --onc --interv=x in out
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"bad --interval 'x'"* ]]
}

# Options (issue 23): every long option a tool's --help lists at the start
# of a line is a tag of its man page's OPTIONS section, and every tag there
# is in --help (mt-caps(1) had no --help, mt-perfargs(1) only "see --help").
# Oracle: the two texts themselves, the man page as man(1) renders it.
@test "every tool: each option of --help is in its man page's OPTIONS, and the reverse" {
	local t name help man bad=0
	while read -r t; do
		name=$(basename "$t")
		help=$("$t" --help | awk '/^ +-/ { sub(/^ +/, ""); sub(/  .*/, ""); print }' |
			grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
		man=$(MANWIDTH=300 man -l "$DOC/$name.1" 2> /dev/null | col -b |
			awk '/^OPTIONS/ { f = 1; next } /^[A-Z][A-Z ]+$/ { f = 0 } f && /^       -/' |
			grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
		[ -n "$help" ] || { echo "$name: no options read from --help"; bad=1; }
		if [ "$help" != "$man" ]; then
			echo "$name: --help only: $(comm -23 <(echo "$help") <(echo "$man") | tr '\n' ' ')"
			echo "$name: man page only: $(comm -13 <(echo "$help") <(echo "$man") | tr '\n' ' ')"
			bad=1
		fi
	done < <(tools)
	[ "$bad" -eq 0 ]
}

# Messages (issue 23): a usage error names the tool (getopt named the path
# it ran by: /usr/local/bin/mt-caps: unrecognized option), then says how
# to get help; a run with no operands where some are needed is a message,
# not the whole usage (mt-archive-watch).
@test "every tool: usage errors are said in the tool's name, then 'Try ... --help'" {
	local t name line
	while read -r t; do
		name=$(basename "$t")
		for args in "--no-such-option" "create --no-such-option"; do
			[ "$name" = mt-bundle ] || [ "$args" = --no-such-option ] || continue
			# shellcheck disable=SC2086
			run --separate-stderr "$t" $args
			[ "$status" -eq 2 ]
			[ -n "$stderr" ]
			while IFS= read -r line; do
				[[ "$line" == "$name: "* || "$line" == "Try '$name --help' for more information." ]] ||
					{ echo "$name $args: $line"; false; }
			done <<< "$stderr"
			[[ "$stderr" == *"Try '$name --help' for more information." ]]
		done
	done < <(tools)
	run --separate-stderr "$PIPES/mt-archive-watch"
	[ "$status" -eq 2 ]
	[ "$stderr" = "mt-archive-watch: expected INBOX and OUTDIR
Try 'mt-archive-watch --help' for more information." ]
}

# Writing over a file (issue 23): every tool replaced it without a word.
# One convention for all: replaced, and said once on standard error; a new
# file says nothing. Oracle: the files (the new content is there).
@test "every tool that writes a file says when it replaced one, and only then" {
	cd "$BATS_TEST_TMPDIR"
	local data=$MT_FIXTURES/flow/plain.data t
	"$MT_BIN/mt-pt2events" "$data" > ev
	for t in "mt-pt2events:$data" "mt-events:ev" "mt-symbolize:ev" "mt-toperfetto:ev" "mt-bundle:$data"; do
		local tool=${t%%:*} in=${t#*:} cmd
		cmd=("$MT_BIN/$tool" -o "out.$tool" "$in")
		[ "$tool" != mt-bundle ] || cmd=("$MT_BIN/mt-bundle" create -o "out.$tool" "$in")
		run --separate-stderr "${cmd[@]}"
		[ "$status" -eq 0 ]
		[[ "$stderr" != *"replaced"* ]] || { echo "$tool: $stderr"; false; }
		cp "out.$tool" first
		echo old > "out.$tool"
		run --separate-stderr "${cmd[@]}"
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"$tool: replaced out.$tool"* ]] || { echo "$tool: $stderr"; false; }
		[ "$(grep -c replaced <<< "$stderr")" -eq 1 ]
		[ "$(head -c 3 "out.$tool")" != old ]
	done
}

@test "the file-format and guarantee pages render without warnings" {
	for p in "$DOC"/*.5 "$DOC"/*.7; do
		groff -man -ww -z "$p" 2>&1 | { ! grep .; }
	done
}

# tests/run runs the tests whose names match MT_TIMED_RE alone, then skips
# them beside the other suites (runs_alone): a test so named that does not
# call it would run twice; one that calls it under another name, never
# alone (runs_alone fails it).
@test "a test named as timed (MT_TIMED_RE) starts with runs_alone, and only such a test calls it" {
	cd "$BATS_TEST_DIRNAME"
	run python3 - "$MT_TIMED_RE" ./*.bats <<-'PY'
	import re, sys
	timed = re.compile(sys.argv[1])
	bad = named = 0
	for path in sys.argv[2:]:
	    lines = open(path).read().split("\n")
	    for i, line in enumerate(lines):
	        m = re.match(r'@test "(.*)" \{(.*)$', line)
	        if m:
	            first = m.group(2).strip() or (lines[i + 1].strip() if i + 1 < len(lines) else "")
	            is_timed = bool(timed.search(m.group(1)))
	            named += is_timed
	            if is_timed != (first == "runs_alone"):
	                print(f"{path}:{i + 1}: {m.group(1)!r} {'does not start with' if is_timed else 'is not named for'} runs_alone")
	                bad += 1
	        elif re.match(r"\s*runs_alone\b", line) and not re.match(r"@test ", lines[i - 1]):
	            print(f"{path}:{i + 1}: runs_alone not first in a test")
	            bad += 1
	print(f"{named} timed tests")
	sys.exit(1 if bad or not named else 0)
	PY
	echo "$output"
	[ "$status" -eq 0 ]
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

# Start-up (issue 52's small traces; every test starts tools thousands of
# times): libarchive is loaded when a bundle is read or written, not linked
# (with it came libxml2, ICU and libstdc++: 6 ms of every start), as
# libdebuginfod is loaded when a server is asked. Oracle: ldd.
@test "no tool links libarchive, libxml2, ICU or libdebuginfod: loaded only when a bundle or a server needs them" {
	local tool n=0
	for tool in "$MT_BIN"/mt-*; do
		run ldd "$tool"
		[ "$status" -eq 0 ]
		! grep -E 'libarchive|libxml2|libicu|libdebuginfod' <<< "$output" || false
		n=$((n + 1))
	done
	[ "$n" -ge 11 ]
	# and a bundle still reads and writes (bundle.bats holds the rest)
	"$MT_BIN/mt-bundle" create --no-kallsyms -o "$BATS_TEST_TMPDIR/b.tar.zst" "$MT_FIXTURES/flow/plain.data" 2> /dev/null
	"$PT2EVENTS" "$BATS_TEST_TMPDIR/b.tar.zst" | grep -v '^# ' > "$BATS_TEST_TMPDIR/b.ev"
	[ -s "$BATS_TEST_TMPDIR/b.ev" ]
	"$PT2EVENTS" "$MT_FIXTURES/flow/plain.data" | grep -v '^# ' | cmp - "$BATS_TEST_TMPDIR/b.ev"
}

# Start-up, the same way: mt-pt2events measures the instructions' lengths
# itself (mt_insn_length) and loads Capstone for those it leaves only
# (linked, its ~77,000 relocations cost every start some 400 page faults).
# Oracle: ldd; ld.so's own account of what it loaded (LD_DEBUG=files); the
# SDM's encodings: pshufb xmm0, xmm1 (66 0F 38 00 C1, of the 0F38 map,
# Capstone's) then jmp rax, whose target the TIP gives; TIP.PGD at the
# next jmp rax.
@test "mt-pt2events does not link Capstone: it loads it for an instruction its own length decoder leaves" {
	local t=$BATS_TEST_TMPDIR psb='\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82'
	run ldd "$PT2EVENTS"
	[ "$status" -eq 0 ]
	[[ "$output" != *libcapstone* ]]
	printf "$psb\x99\x01\x7d\x00\x10\x00\x00\x00\x00\x02\x23\x6d\x10\x10\x00\x00\x00\x00\x01" > "$t/v.pt"
	{ printf '\x66\x0f\x38\x00\xc1\xff\xe0'; printf '\x90%.0s' $(seq 9); printf '\xff\xe0'; } > "$t/v.code"
	LD_DEBUG=files "$PT2EVENTS" --all-branches --pt "$t/v.pt" --image "$t/v.code@0x1000" > "$t/ev" 2> "$t/ld"
	[ "$(grep -v '^#' "$t/ev")" = $'-\t0\t0\tjump\t0x1005\t0x1010\tinsn=2\n-\t0\t0\ttrace-end\t0x1010\t0x0\tinsn=1' ]
	grep -q 'file=libcapstone\.so\.[0-9]* \[0\];  dynamically loaded by' "$t/ld"
	# vzeroupper (VEX) and nops in its place: measured here, never loaded
	{ printf '\xc5\xf8\x77\x90\x90\xff\xe0'; printf '\x90%.0s' $(seq 9); printf '\xff\xe0'; } > "$t/n.code"
	LD_DEBUG=files "$PT2EVENTS" --all-branches --pt "$t/v.pt" --image "$t/n.code@0x1000" > "$t/ev" 2> "$t/ld"
	grep -q $'\tjump\t0x1005\t0x1010\tinsn=4$' "$t/ev"
	! grep -q 'file=libcapstone' "$t/ld" || false
}
