#!/usr/bin/env bats
# mt-symbolize. Oracles: perf script's own sym+off for the same addresses of
# the same synthesized files, and nm on the test programs.

load helpers

SYMBOLIZE=$MT_BIN/mt-symbolize

# "kind from-ip from-sym+off to-ip to-sym+off" for calls and returns
mt_syms() {
	awk -F'\t' '$4=="call"||$4=="return" { fs="[unknown]"; fo=""; ts="[unknown]"; to="";
		for (i = 7; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = substr($i, length(k) + 2)
			if (k=="from_sym") fs=v; if (k=="from_off") fo=v; if (k=="to_sym") ts=v; if (k=="to_off") to=v }
		printf "%s %s %s%s %s %s%s\n", $4, substr($5,3), fs, (fo!="" ? "+" fo : ""), substr($6,3), ts, (to!="" ? "+" to : "") }'
}
perf_syms() { awk '$1=="call"||$1=="return" {print $1, $2, $3, $5, $6}'; }

# perf names the first PLT entry of libc_flow "_init+0x30" (its .init symbol
# stretched over .plt); mt says raise@plt. That is the only difference allowed.
compare_perf() { # VARIANT [decode option] [symbolize option]
	local f=$MT_FIXTURES/$1.data
	perf script ${2:+"$2"} -i "$f" --itrace=cr -F flags,ip,sym,symoff,addr 2>/dev/null | perf_syms > "$BATS_TEST_TMPDIR/perf"
	"$PT2EVENTS" ${2:+"$2"} "$f" | "$SYMBOLIZE" ${3:+"$3"} | mt_syms > "$BATS_TEST_TMPDIR/mt"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/perf")" -gt 1000 ]
	diff "$BATS_TEST_TMPDIR/perf" "$BATS_TEST_TMPDIR/mt" > "$BATS_TEST_TMPDIR/diff" || true
	! grep '^<' "$BATS_TEST_TMPDIR/diff" | grep -v ' 555555555030 _init+0x30$'
	! grep '^>' "$BATS_TEST_TMPDIR/diff" | grep -v ' 555555555030 raise@plt+0x0$'
}

@test "flow (static): sym+off of every call and return equal perf script's" { compare_perf flow/plain; }
@test "libc (PIE, ld.so, libc, PLT): sym+off equal perf script's" { compare_perf libc/plain; }
@test "kernel symbols from --vmlinux equal perf script --vmlinux's" {
	compare_perf libc/kernel --vmlinux="$MT_FIXTURES/libc/kernel.vmlinux" --vmlinux="$MT_FIXTURES/libc/kernel.vmlinux"
	grep -q 'call ffffffff81000001 entry_SYSCALL_64+0x1 ffffffff81000020 do_syscall+0x0' "$BATS_TEST_TMPDIR/mt"
}
@test "kernel symbols from a kallsyms copy equal perf script --vmlinux's" {
	compare_perf libc/kcore --vmlinux="$MT_FIXTURES/libc/kernel.vmlinux" --kallsyms="$MT_FIXTURES/libc/kcore.kcore_dir/kallsyms"
}

@test "call targets are named as nm names them (non-PIE flow)" {
	"$PT2EVENTS" "$MT_FIXTURES/flow/plain.data" | "$SYMBOLIZE" > "$BATS_TEST_TMPDIR/ev"
	nm "$MT_PROGS/flow" | awk '$2 ~ /^[tT]$/ {print "0x" substr($1, match($1, /[^0]/)), $3}' | sort > "$BATS_TEST_TMPDIR/nm"
	awk -F'\t' '$4=="call" { for (i = 7; i <= NF; i++) if ($i ~ /^to_sym=/) print $6, substr($i, 8) }' "$BATS_TEST_TMPDIR/ev" |
		sort -u > "$BATS_TEST_TMPDIR/calls"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/calls")" -ge 5 ]
	# every named call target is a function start with nm's name
	[ -z "$(comm -23 "$BATS_TEST_TMPDIR/calls" "$BATS_TEST_TMPDIR/nm")" ]
}

@test "an object that cannot be found: one warning, the dso kept, no name, exit 0" {
	run "$SYMBOLIZE" --symfs="$BATS_TEST_TMPDIR/empty" <("$PT2EVENTS" "$MT_FIXTURES/flow/plain.data")
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c 'mt-symbolize: warning: .*/flow not found under --symfs')" -eq 1 ]
	echo "$output" | grep -q 'to_dso=.*/flow$'
	! echo "$output" | grep -q 'to_sym='
}

@test "kernel addresses without --vmlinux or --kallsyms: one warning" {
	run "$SYMBOLIZE" <("$PT2EVENTS" --vmlinux="$MT_FIXTURES/flow/kernel.vmlinux" "$MT_FIXTURES/flow/kernel.data")
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c 'no --vmlinux or --kallsyms')" -eq 1 ]
}

@test "binary in, binary out; columns already there (perf script input) are kept" {
	"$PT2EVENTS" --output-format=binary "$MT_FIXTURES/flow/plain.data" | "$SYMBOLIZE" | "$MT_BIN/mt-events" > "$BATS_TEST_TMPDIR/a"
	"$PT2EVENTS" "$MT_FIXTURES/flow/plain.data" | "$SYMBOLIZE" > "$BATS_TEST_TMPDIR/b"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	"$PT2EVENTS" "$MT_REAL/magic-trace/memmove_decode_error.perf" > "$BATS_TEST_TMPDIR/c"
	"$SYMBOLIZE" "$BATS_TEST_TMPDIR/c" | cmp - "$BATS_TEST_TMPDIR/c"
}

@test "mt-symbolize: --help, --version, usage errors" {
	run "$SYMBOLIZE" --help
	[ "$status" -eq 0 ] && [[ "$output" == Usage:* ]]
	run "$SYMBOLIZE" --version
	[[ "$output" == "mt-symbolize (mt) "* ]]
	run "$SYMBOLIZE" --bogus
	[ "$status" -eq 2 ]
	run "$SYMBOLIZE" /nonexistent
	[ "$status" -eq 1 ] && [[ "$output" == "mt-symbolize: /nonexistent: No such file or directory" ]]
}

# --lines against binutils' addr2line on the same addresses (paths as the
# compiler recorded them, addr2line's discriminator notes dropped).
lines_vs_addr2line() { # VARIANT PROG BIAS
	"$PT2EVENTS" "$MT_FIXTURES/$1.data" | "$SYMBOLIZE" --lines |
		awk -F'\t' -v p="$2" '($4=="call"||$4=="return") {
			f=""; l=""; d=""
			for (i = 7; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = substr($i, length(k) + 2)
				if (k=="to_file") f=v; if (k=="to_line") l=v; if (k=="to_dso") d=v }
			if (f != "" && d ~ ("/" p "$")) print $6, f ":" l }' | sort -u > "$BATS_TEST_TMPDIR/mt"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/mt")" -ge 8 ]
	while read -r addr _; do
		printf '0x%x\n' $((addr - $3))
	done < "$BATS_TEST_TMPDIR/mt" | addr2line -e "$MT_PROGS/$2" |
		sed "s|^$(cd "$BATS_TEST_DIRNAME/.." && pwd)/||; s| (discriminator [0-9]*)||" > "$BATS_TEST_TMPDIR/a2l"
	diff <(cut -d' ' -f2 "$BATS_TEST_TMPDIR/mt") "$BATS_TEST_TMPDIR/a2l"
}

@test "--lines: file and line of call and return targets equal addr2line's (static flow)" {
	lines_vs_addr2line flow/plain flow 0
}

@test "--lines: the same for the PIE libc_flow, load bias removed" {
	read -r start pgoff < <("$PT2EVENTS" "$MT_FIXTURES/libc/plain.data" | awk -F'\t' '$1=="# mmap" && $7 ~ /libc_flow$/ {print $3, $5; exit}')
	lines_vs_addr2line libc/plain libc_flow $((start - pgoff))
}
