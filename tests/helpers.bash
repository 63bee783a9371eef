# Shared helpers for the Bats suites. tests/run sets MT_BIN, MT_PROGS and
# MT_FIXTURES (synthesized traces, made once per run by tests/run).
#
# Bats fails a test on a failing line through `set -e`, which ignores a
# failure before `&&` and a negated command: write one assertion per line
# (not `[ a ] && [ b ]`) and `! cmd || false` (not a bare `! cmd`);
# tools.bats checks the suites for both.
MT_REAL=${MT_REAL:-$BATS_TEST_DIRNAME/../../shared/testdata/real}
PT2EVENTS=$MT_BIN/mt-pt2events
SYNTH=$MT_BIN/mt-synth
# self and total time per function of a --format=json trace (tools/slicetime.py)
SLICETIME=$BATS_TEST_DIRNAME/tools/slicetime.py
# Python test instruments importable (chromejson: JSON's B/E pairs as X)
export PYTHONPATH=$BATS_TEST_DIRNAME/tools${PYTHONPATH:+:$PYTHONPATH}

# Skips the test, saying so, when a file of ../shared (peers' suites and
# real recordings, which stay out of the repository) is not beside the
# checkout: make check runs on a clone without it, each such test skipped.
need_shared() { # PATH...
	local p
	for p; do
		[ -e "$p" ] || skip "not here: $p (../shared beside the checkout has it)"
	done
}

# The PATHs of ../shared that are here, one a line; each that is not is
# said on fd 3, and the test goes on without it.
shared_here() { # PATH...
	local p
	for p; do
		if [ -e "$p" ]; then printf '%s\n' "$p"; else echo "# not here: $p (../shared): left out" >&3; fi
	done
}

# Event lines without metadata and without the time column.
events_body() { grep -v '^#' "$1" | cut -f2-; }

# calls, returns and trace starts as "kind from to", from an event stream
events_cr() { grep -v '^#' "$1" | awk -F'\t' '$4=="call"||$4=="return"||$4=="trace-start"{print $4, $5, $6}'; }

# The same, from `perf script --itrace=cr -F flags,ip,addr` (the oracle).
perf_cr() {
	awk '{ if ($1=="tr" && $2=="strt") k="trace-start"; else if ($1=="call") k="call";
	       else if ($1=="return") k="return"; else next;
	       n=split($0,a," "); printf "%s 0x%s 0x%s\n", k, a[n-2], a[n] }'
}

# Count of instructions that perf decodes.
perf_insns() { perf script -i "$1" --itrace=i1i -F ip 2>/dev/null | wc -l; }

# A stream without its cyc columns (mt's reader counts CYC packets'
# cycles; libipt's decoders do not say them): mt's side of a comparison
# with libipt.
no_cyc() { sed -E 's/\tcyc=[0-9]+//'; }

# NAME's value on each line of FILE that has " NAME=" (the last one on a
# line), as sed -n "s/.* NAME=\([0-9]*\).*/\1/p" gives it: in bash, no
# process (tests call it thousands of times)
stat_field() { # NAME FILE
	local line re=".* $1=([0-9]*)"
	while IFS= read -r line || [ -n "$line" ]; do
		[[ "$line" =~ $re ]] && printf '%s\n' "${BASH_REMATCH[1]}"
	done < "$2"
	return 0
}

# KB of ASan shadow that reading a file's bytes through a mapping adds to
# peak RSS: 0 for a plain build. ASan keeps one shadow byte per 8 bytes of
# memory and does not give it back when the mapping goes: measured in
# /proc/PID/smaps, a 66 MB larger trace grew the shadow region by 8.3 MB
# while the trace's own mapping stayed under 2 MB.
asan_shadow_kb() { # PROGRAM BYTES
	if ldd "$1" | grep -q libasan; then
		echo $(($2 / 8 / 1024))
	else
		echo 0
	fi
}

# CPU seconds (user + system) one command takes, its output discarded.
cpu_seconds() {
	local TIMEFORMAT='%3U %3S'
	{ time "$@" > /dev/null 2>&1; } 2>&1 | awk '{ print $1 + $2 }'
}

# A test that holds CPU-time ratios (cost_ratio, least_cpu) starts with
# runs_alone: tests/run runs such tests first, one at a time with nothing
# beside them (bats --filter "$MT_TIMED_RE"), and skips them in its
# parallel phase (MT_TIMED=skip), where other suites share the cores. Their
# names say what they time, and so match MT_TIMED_RE (tools.bats holds the
# two together).
MT_TIMED_RE=${MT_TIMED_RE:-'costs? about 10x|within 2x of '}
runs_alone() {
	[[ "$BATS_TEST_DESCRIPTION" =~ $MT_TIMED_RE ]] ||
		{ echo "runs_alone in a test whose name does not match '$MT_TIMED_RE'"; return 1; }
	if [ "${MT_TIMED:-}" = skip ]; then
		skip "timed: tests/run runs it alone"
	fi
}

# How a cost grows: prints the CPU time of BIG divided by that of SMALL,
# as the ratio of two commands timed back to back in this run (never an
# absolute time). Input 10x larger: about 10 (n) to 13 (n log n); a
# quadratic cost gives about 100. Each is timed twice, the faster kept.
cost_ratio() { # "SMALL COMMAND" "BIG COMMAND"
	local s1 s2 b1 b2
	s1=$(cpu_seconds bash -c "$1"); b1=$(cpu_seconds bash -c "$2")
	s2=$(cpu_seconds bash -c "$1"); b2=$(cpu_seconds bash -c "$2")
	awk -v s1="$s1" -v s2="$s2" -v b1="$b1" -v b2="$b2" 'BEGIN {
		s = s1 < s2 ? s1 : s2; b = b1 < b2 ? b1 : b2; if (s < 0.001) s = 0.001
		printf "%.1f\n", b / s }'
}
