#!/usr/bin/env bats
# Bundles (mt-bundle(5)): a trace with everything needed to decode it, read
# after the original files are gone. Oracles: the ground truth of the
# synthesized run, the decode of the same perf.data while the files still
# existed, and perf script reading the extracted bundle.

load helpers
bats_require_minimum_version 1.5.0

BUNDLE=$MT_BIN/mt-bundle
SYMBOLIZE=$MT_BIN/mt-symbolize

# The lines of an event stream that do not say where the input came from.
stream_body() { grep -v -e '^# bundle' -e '^# fact	source' "$1"; }

# A program whose every mapped object lives under DIR: the dynamic loader
# run directly, with the program and libc copied beside it.
private_program() { # DIR
	mkdir -p "$1"
	cp "$MT_PROGS/libc_flow" /lib64/ld-linux-x86-64.so.2 "$(ldd "$MT_PROGS/libc_flow" | awk '$1=="libc.so.6"{print $3}')" "$1/"
}

@test "a bundle decodes identically after every original file is gone: truth, earlier decode, perf script" {
	local t=$BATS_TEST_TMPDIR src=$BATS_TEST_TMPDIR/src
	private_program "$src"
	"$SYNTH" -q -o "$t" --variants plain -- "$src/ld-linux-x86-64.so.2" --library-path "$src" "$src/libc_flow" > /dev/null 2>&1
	# three objects, all under src/
	[ "$(grep -c "^# mmap.*	$src/" <("$PT2EVENTS" "$t/plain.data"))" -eq 3 ]
	"$PT2EVENTS" "$t/plain.data" > "$t/before.ev"
	"$SYMBOLIZE" "$t/before.ev" > "$t/before.sym"
	run --separate-stderr "$BUNDLE" create -o "$t/b.tar.zst" "$t/plain.data"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"3 objects (0 missing)"* ]]
	rm -rf "$src"
	TMPDIR=$t/tmp && mkdir -p "$TMPDIR" && export TMPDIR
	"$PT2EVENTS" "$t/b.tar.zst" > "$t/after.ev"
	diff <(stream_body "$t/before.ev") <(stream_body "$t/after.ev")
	grep -q "^# bundle	$t/b.tar.zst$" "$t/after.ev"
	# every taken branch, as the single-stepped run took it
	"$PT2EVENTS" --all-branches "$t/b.tar.zst" > "$t/all.ev"
	diff <(events_body "$t/plain.truth") <(events_body "$t/all.ev")
	# symbols: the same as before, from the bundle named in the stream
	"$SYMBOLIZE" "$t/after.ev" > "$t/after.sym"
	diff <(stream_body "$t/before.sym") <(stream_body "$t/after.sym")
	[ "$(grep -c 'from_sym=' "$t/after.sym")" -gt 1000 ]
	grep -q "from_dso=$src/libc.so.6" "$t/after.sym"
	# and so with --symfs naming the bundle
	"$SYMBOLIZE" --symfs="$t/b.tar.zst" "$t/after.ev" | stream_body /dev/stdin > "$t/symfs.sym"
	diff <(stream_body "$t/before.sym") "$t/symfs.sym"
	# perf's own decoder, given the extracted bundle as its --symfs
	"$BUNDLE" extract -C "$t/x" "$t/b.tar.zst"
	HOME=$t perf script -i "$t/x/perf.data" --symfs="$t/x/root" --itrace=cr -F flags,ip,addr 2>/dev/null |
		perf_cr > "$t/perf"
	[ -s "$t/perf" ]
	diff "$t/perf" <(events_cr "$t/after.ev")
	# nothing extracted is left behind
	[ -z "$(ls -A "$TMPDIR")" ]
}

@test "the manifest: format version, host, objects with build-ids, capabilities" {
	local t=$BATS_TEST_TMPDIR
	"$BUNDLE" create -o "$t/b.tar.gz" "$MT_FIXTURES/libc/plain.data" 2>/dev/null
	# gzip by the name
	[ "$(head -c 2 "$t/b.tar.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ]
	"$BUNDLE" manifest "$t/b.tar.gz" > "$t/m"
	[ "$(head -1 "$t/m")" = mt-bundle-format=1 ]
	grep -q "^host=$(uname -n)$" "$t/m"
	grep -q "^caps.perf.version=" "$t/m"
	grep -q '^mt-version=' "$t/m"
	grep -q '^created=20' "$t/m"
	grep -q '^cpu=' "$t/m"
	# each object with the build-id its file has (readelf is the oracle)
	for obj in "$MT_PROGS/libc_flow" "$(ldd "$MT_PROGS/libc_flow" | awk '$1=="libc.so.6"{print $3}')"; do
		want=$(readelf -n "$obj" | awk '/Build ID/{print $3}')
		grep -q "^object=$(readlink -f "$obj")	$want	root$(readlink -f "$obj")$" "$t/m" ||
			grep -q "^object=$obj	$want	root$obj$" "$t/m"
	done
	# list: every entry, checked
	"$BUNDLE" list "$t/b.tar.gz" > "$t/l"
	grep -q '^file	[0-9]*	perf.data$' "$t/l"
	[ "$(grep -c "	root/" "$t/l")" -ge 3 ]
}

@test "mt-record --bundle for real: the program deleted, its hot function still named" {
	local t=$BATS_TEST_TMPDIR
	mkdir -p "$t/bin" && cp "$MT_PROGS/hot" "$t/bin/hot"
	run --separate-stderr "$MT_BIN/mt-record" --bundle "$t/hot.tar.zst" -- "$t/bin/hot"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"wrote $t/hot.tar.zst"* ]]
	rm -rf "$t/bin"
	"$BUNDLE" manifest "$t/hot.tar.zst" | grep -q "^command=$t/bin/hot$"
	[ -z "$(ls -A "$t" | grep mt-record)" ] # the perf.data recorded beside it is gone
	"$PT2EVENTS" "$t/hot.tar.zst" | "$SYMBOLIZE" > "$t/sym"
	hot=$(grep -c "from_sym=hot_loop	from_off=0x[0-9a-f]*	from_dso=$t/bin/hot" "$t/sym")
	all=$(grep -vc '^#' "$t/sym")
	[ "$all" -gt 20 ]
	[ $((hot * 2)) -gt "$all" ]
}

@test "plain perf record with a perf archive tarball: symbols from the tarball, the binary gone" {
	local t=$BATS_TEST_TMPDIR
	mkdir -p "$t/bin" "$t/home" && cp "$MT_PROGS/hot" "$t/bin/hot"
	cd "$t"
	HOME=$t/home perf record -q -e cpu-clock -g -o perf.data -- "$t/bin/hot" > /dev/null 2>&1
	# without the tarball, on this host: decodes and resolves as it is
	"$PT2EVENTS" perf.data | "$SYMBOLIZE" | grep -q "from_sym=hot_loop"
	HOME=$t/home perf archive perf.data > /dev/null 2>&1
	tar tjf perf.data.tar.bz2 | grep -q '^\.build-id/'
	rm -rf "$t/bin" "$t/home"
	"$PT2EVENTS" perf.data > ev
	# from the tarball only
	"$SYMBOLIZE" --symfs=perf.data.tar.bz2 ev > sym
	[ "$(grep -c "from_sym=hot_loop" sym)" -gt 20 ]
	# and a bundle made from the perf.data and the tarball carries the binary
	run --separate-stderr "$BUNDLE" create --perf-archive=perf.data.tar.bz2 -o b.tar.zst perf.data
	[ "$status" -eq 0 ]
	"$BUNDLE" list b.tar.zst | grep -q "	root$t/bin/hot$"
	"$PT2EVENTS" b.tar.zst | "$SYMBOLIZE" | grep -q "from_sym=hot_loop"
	# a perf archive alone is no trace
	run --separate-stderr "$PT2EVENTS" perf.data.tar.bz2
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"is a perf archive (objects, no perf.data)"* ]]
}

@test "objects not found with their build-id are left out with a warning, not guessed" {
	local t=$BATS_TEST_TMPDIR
	mkdir -p "$t/src" && cp "$MT_PROGS/flow" "$t/src/flow"
	"$SYNTH" -q -o "$t" --variants buildid -- "$t/src/flow" > /dev/null 2>&1
	# the file at the path changes: another program now
	cp "$MT_PROGS/mangled" "$t/src/flow"
	HOME=$t run --separate-stderr "$BUNDLE" create -o "$t/b.tar.zst" "$t/buildid.data"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"$t/src/flow: build-id "*", but the trace ran build-id "*"left out"* ]]
	"$BUNDLE" manifest "$t/b.tar.zst" | grep -q "^object=$t/src/flow	[0-9a-f]*	(missing)$"
	! "$BUNDLE" list "$t/b.tar.zst" | grep -q "root$t/src/flow" || false
}

# Archives written byte by byte, for what a real tar tool will not make.
craft() { # OUT [KIND NAME [ARG]]...
	python3 - "$@" <<'EOF'
import io, sys, tarfile
out, args = sys.argv[1], sys.argv[2:]
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
    for i in range(0, len(args), 3):
        kind, name, arg = args[i:i + 3]
        ti = tarfile.TarInfo(name)
        if kind == "file":
            data = arg.encode()
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        elif kind in ("symlink", "hardlink"):
            ti.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
            ti.linkname = arg
            tf.addfile(ti)
        elif kind == "fifo":
            ti.type = tarfile.FIFOTYPE
            tf.addfile(ti)
        elif kind == "dir":
            ti.type = tarfile.DIRTYPE
            tf.addfile(ti)
        elif kind == "huge":  # a header declaring arg bytes, and no data
            ti.size = int(arg)
            tf.fileobj.write(ti.tobuf(tarfile.PAX_FORMAT))
            tf.offset += 512
EOF
}

# Extraction must fail with the message, remove the target, write nothing
# outside it; mt-pt2events must fail the same and leave no temporary copy.
refused() { # ARCHIVE MESSAGE
	local t=$BATS_TEST_TMPDIR
	mkdir -p "$t/tmp" "$t/box"
	run --separate-stderr "$BUNDLE" extract -C "$t/box/x" "$1"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"$2"* ]]
	[ ! -e "$t/box/x" ]
	[ -z "$(ls -A "$t/box")" ]
	run --separate-stderr env TMPDIR="$t/tmp" "$PT2EVENTS" "$1"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"$2"* ]]
	[ -z "$(ls -A "$t/tmp")" ]
	run --separate-stderr "$BUNDLE" list "$1"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"$2"* ]]
}

@test "untrusted bundles: '..', absolute names, links leading out, duplicates, special files" {
	local t=$BATS_TEST_TMPDIR
	craft "$t/dotdot.tar" file manifest "mt-bundle-format=1" file ../evil x
	refused "$t/dotdot.tar" "entry '../evil': a '..' component"
	craft "$t/deep.tar" file a/b/../../../evil x
	refused "$t/deep.tar" "a '..' component"
	craft "$t/abs.tar" file "$t/box/evil" x
	refused "$t/abs.tar" "an absolute name"
	craft "$t/symabs.tar" symlink etc /etc
	refused "$t/symabs.tar" "entry 'etc': a symbolic link leading outside: /etc"
	craft "$t/symup.tar" symlink a/up ../../x
	refused "$t/symup.tar" "a symbolic link leading outside: ../../x"
	craft "$t/symmid.tar" symlink a/up x/../../y
	refused "$t/symmid.tar" "a symbolic link leading outside"
	# a link that stays inside is kept, but nothing is written through it
	craft "$t/through.tar" dir sub - symlink s sub file s/evil x
	refused "$t/through.tar" "entry 's/evil': its directory is a symbolic link"
	craft "$t/hard.tar" hardlink passwd /etc/passwd
	refused "$t/hard.tar" "a hard link to outside the archive's files: /etc/passwd"
	craft "$t/hardup.tar" hardlink x ../x
	refused "$t/hardup.tar" "a hard link to outside"
	craft "$t/dup.tar" file a 1 file a 2
	refused "$t/dup.tar" "entry 'a': a duplicate name"
	craft "$t/fifo.tar" fifo f -
	refused "$t/fifo.tar" "entry 'f': not a file, directory or link"
	# inside links are fine: a perf archive's .build-id links are such
	craft "$t/ok.tar" file d/f x symlink l/link ../d/f hardlink h d/f
	"$BUNDLE" extract -C "$t/ok" "$t/ok.tar"
	[ "$(cat "$t/ok/l/link")" = x ]
	[ "$(cat "$t/ok/h")" = x ]
}

@test "untrusted bundles: huge declared sizes, truncation, a wrong manifest version, not an archive" {
	local t=$BATS_TEST_TMPDIR
	craft "$t/huge.tar" huge big $((1 << 50))
	refused "$t/huge.tar" "entry 'big': a declared size too large: 1125899906842624 bytes"
	# under the limit, over the free space of the target's file system
	run --separate-stderr env MT_BUNDLE_MAX_BYTES=$((1 << 62)) "$BUNDLE" extract -C "$t/free" "$t/huge.tar"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"entry 'big': a declared size too large: 1125899906842624 bytes, more than the "*" free" ]]
	[ ! -e "$t/free" ]
	craft "$t/limit.tar" file a 0123456789
	MT_BUNDLE_MAX_BYTES=5 refused "$t/limit.tar" "over the limit of 5 in all (MT_BUNDLE_MAX_BYTES)"
	"$BUNDLE" create -o "$t/good.tar.zst" "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	head -c $(($(stat -c %s "$t/good.tar.zst") / 2)) "$t/good.tar.zst" > "$t/cut.tar.zst"
	refused "$t/cut.tar.zst" "truncated or corrupt archive"
	craft "$t/v2.tar" file manifest "mt-bundle-format=2
" file perf.data x
	run --separate-stderr "$PT2EVENTS" "$t/v2.tar"
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-pt2events: $t/v2.tar: bundle format version 2; this mt reads version 1" ]
	craft "$t/nomanifest.tar" file perf.data x
	run --separate-stderr "$PT2EVENTS" "$t/nomanifest.tar"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"neither an mt bundle (no manifest) nor a perf archive (no .build-id/)"* ]]
	printf 'not a tar\n' | gzip > "$t/notar.gz"
	run --separate-stderr "$BUNDLE" list "$t/notar.gz"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"not a readable tar archive"* ]]
	# extraction only into a new or empty directory
	mkdir -p "$t/full" && touch "$t/full/keep"
	run --separate-stderr "$BUNDLE" extract -C "$t/full" "$t/good.tar.zst"
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-bundle: $t/full: not an empty directory" ]
	[ -e "$t/full/keep" ]
}

@test "a bundle through a pipe; create's failures leave no output file" {
	local t=$BATS_TEST_TMPDIR
	"$BUNDLE" create -o "$t/b.tar.zst" "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	cat "$t/b.tar.zst" | "$PT2EVENTS" > "$t/pipe.ev"
	"$PT2EVENTS" "$MT_FIXTURES/flow/plain.data" > "$t/file.ev"
	diff <(stream_body "$t/file.ev") <(stream_body "$t/pipe.ev")
	run --separate-stderr "$BUNDLE" create -o "$t/x.tar.zst" "$t/missing.data"
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-bundle: $t/missing.data: No such file or directory" ]
	[ ! -e "$t/x.tar.zst" ]
	printf 'PERFILE2 but short' > "$t/short.data"
	run --separate-stderr "$BUNDLE" create -o "$t/y.tar.zst" "$t/short.data"
	[ "$status" -eq 1 ]
	[ ! -e "$t/y.tar.zst" ]
	run --separate-stderr "$BUNDLE" create --compress=lz4 "$t/b.data"
	[ "$status" -eq 2 ]
	[ "$stderr" = "mt-bundle: bad --compress 'lz4': expected zstd, gzip or none" ]
	run --separate-stderr "$BUNDLE" frobnicate
	[ "$status" -eq 2 ]
}

@test "a perf record --kcore directory: the bundle carries the kcore copy and decodes the kernel part" {
	local t=$BATS_TEST_TMPDIR
	mkdir -p "$t/rec"
	cp "$MT_FIXTURES/flow/kcore.data" "$t/rec/data"
	cp -r "$MT_FIXTURES/flow/kcore.kcore_dir" "$t/rec/kcore_dir"
	run --separate-stderr "$BUNDLE" create --no-kallsyms -o "$t/k.tar.zst" "$t/rec"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *", kcore,"* ]]
	"$BUNDLE" list "$t/k.tar.zst" | grep -q '	kcore_dir/kcore$'
	rm -rf "$t/rec"
	"$PT2EVENTS" --all-branches "$t/k.tar.zst" > "$t/ev"
	diff <(events_body "$MT_FIXTURES/flow/kcore.truth") <(events_body "$t/ev")
}

@test "Intel PT with a perf archive tarball (perf's build-id cache layout): decodes with the binary gone" {
	local t=$BATS_TEST_TMPDIR
	mkdir -p "$t/src" "$t/home" && cp "$MT_PROGS/flow" "$t/src/flow"
	"$SYNTH" -q -o "$t" --variants buildid -- "$t/src/flow" > /dev/null 2>&1
	# perf's cache, and the tarball perf archive makes of it (its file list)
	HOME=$t/home perf buildid-cache -a "$t/src/flow"
	id=$(readelf -n "$t/src/flow" | awk '/Build ID/{print $3}')
	[ -L "$t/home/.debug/.build-id/${id:0:2}/${id:2}" ]
	tar cjf "$t/arch.tar.bz2" -C "$t/home/.debug" ".build-id/${id:0:2}/${id:2}" "${t#/}/src/flow/$id"
	rm -rf "$t/src" "$t/home"
	HOME=$t "$PT2EVENTS" --all-branches --symfs="$t/arch.tar.bz2" "$t/buildid.data" > "$t/ev"
	diff <(events_body "$t/buildid.truth") <(events_body "$t/ev")
	# without it, the code cannot be found: the decode says so
	HOME=$t run --separate-stderr "$PT2EVENTS" --symfs="$t" "$t/buildid.data"
	[[ "$stderr" == *"$t/src/flow not found"* ]]
}

@test "JIT perf maps and kallsyms travel in the bundle, and symbolize from it" {
	local t=$BATS_TEST_TMPDIR
	pid=$("$PT2EVENTS" "$MT_FIXTURES/flow/plain.data" | awk -F'\t' '$1=="# comm"{print $2; exit}')
	[ -n "$pid" ]
	mkdir -p "$t/maps"
	printf '7f0000001000 100 jitted_function\n' > "$t/maps/perf-$pid.map"
	run --separate-stderr "$BUNDLE" create --perf-map-dir="$t/maps" -o "$t/j.tar.zst" "$MT_FIXTURES/flow/plain.data"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *", 1 perf maps,"* ]]
	rm -rf "$t/maps"
	# a call into the JIT's code, added to the stream decoded from the bundle
	{ "$PT2EVENTS" "$t/j.tar.zst"; printf -- '-\t%s\t%s\tcall\t0x401000\t0x7f0000001010\n' "$pid" "$pid"; } |
		"$SYMBOLIZE" | tail -1 > "$t/last"
	grep -q 'to_sym=jitted_function	to_off=0x10' "$t/last"
	# a trace with kernel code carries kallsyms (when this host shows addresses)
	if awk '$1 != "0000000000000000" {found=1; exit} END {exit !found}' /proc/kallsyms; then
		"$BUNDLE" create -o "$t/k.tar" "$MT_FIXTURES/flow/kernel.data" 2>/dev/null
		"$BUNDLE" list "$t/k.tar" | grep -q '	kallsyms$'
		"$BUNDLE" manifest "$t/k.tar" | grep -q '^kallsyms=kallsyms$'
	fi
	"$BUNDLE" create --no-kallsyms -o "$t/n.tar" "$MT_FIXTURES/flow/kernel.data" 2>/dev/null
	! "$BUNDLE" list "$t/n.tar" | grep -q kallsyms || false
	# a user-space trace has no use for them
	"$BUNDLE" create -o "$t/u.tar" "$MT_FIXTURES/flow/plain.data" 2>/dev/null
	! "$BUNDLE" list "$t/u.tar" | grep -q kallsyms || false
}

# Bundles and hostile names (issue 25): list printed names as they were,
# so an entry named "x<newline>file<tab>9<tab>perf.data" printed as a line
# of its own; a failed extract -C DIR removed a DIR the user had; create on
# a --kcore directory without a regular kcore exited 0 with a manifest
# claiming one. Oracle: the archives and directories made here.
@test "bundles: list escapes names; a failed extract keeps the user's DIR; a kcore_dir without its kcore is refused" {
	local t=$BATS_TEST_TMPDIR
	craft "$t/names.tar" file manifest "mt-bundle-format=1" file "$(printf 'x\nfile\t9\tperf.data')" y \
		file 'back\slash' z
	run --separate-stderr "$BUNDLE" list "$t/names.tar"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[1]}" = "$(printf 'file\t1\tx\\nfile\\t9\\tperf.data')" ]
	[ "${lines[2]}" = "$(printf 'file\t1\tback\\\\slash')" ]
	# extract -C onto an empty directory of the user's, refused: the
	# directory stays, empty, with its mode
	craft "$t/bad.tar" file manifest "mt-bundle-format=1" file ok x file ../evil x
	mkdir -m 0710 "$t/mine"
	run --separate-stderr "$BUNDLE" extract -C "$t/mine" "$t/bad.tar"
	[ "$status" -eq 1 ]
	[ -d "$t/mine" ]
	[ -z "$(ls -A "$t/mine")" ]
	[ "$(stat -c %a "$t/mine")" = 710 ]
	# a kcore_dir whose kcore is missing, or a FIFO
	mkdir -p "$t/rec"
	cp "$MT_FIXTURES/flow/kcore.data" "$t/rec/data"
	cp -r "$MT_FIXTURES/flow/kcore.kcore_dir" "$t/rec/kcore_dir"
	rm "$t/rec/kcore_dir/kcore"
	run --separate-stderr "$BUNDLE" create --no-kallsyms -o "$t/k.tar.zst" "$t/rec"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"$t/rec/kcore_dir/kcore: No such file or directory"* ]]
	[ ! -e "$t/k.tar.zst" ]
	mkfifo "$t/rec/kcore_dir/kcore"
	run --separate-stderr timeout 30 "$BUNDLE" create --no-kallsyms -o "$t/k.tar.zst" "$t/rec"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"$t/rec/kcore_dir/kcore: not a regular file (a FIFO)"* ]]
	[ ! -e "$t/k.tar.zst" ]
}

# Bundles and --symfs roots stay inside themselves (issue 49): a trace's
# object path with ".." (made here: the fixture's path, bytes replaced by
# one of the same length) was looked up as ROOT/PATH, and read a file
# outside the root. Normalized, then checked: not found, said, no code
# read and no names, where the same file inside the root is decoded.
@test "an object path with .. or a symlink never reaches outside --symfs: not found, said" {
	cd "$BATS_TEST_TMPDIR"
	export HOME=$PWD # no build-id cache of the user's
	prog=$MT_PROGS/flow
	n=${#prog}
	esc=/../outside/flow
	[ $(( (n - ${#esc}) % 2 )) -eq 0 ] || esc=/$esc # "//": the same path
	while [ ${#esc} -lt "$n" ]; do esc=/.$esc; done
	[ ${#esc} -eq "$n" ]
	python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); a, b = sys.argv[2].encode(), sys.argv[3].encode(); assert a in d; open(sys.argv[4], "wb").write(d.replace(a, b))' \
		"$MT_FIXTURES/flow/plain.data" "$prog" "$esc" esc.data
	mkdir -p root outside
	cp "$prog" outside/flow
	run --separate-stderr "$PT2EVENTS" --symfs=root esc.data
	[[ "$stderr" == *"$esc"*"not found under --symfs root"* ]]
	[ "$(grep -c $'\tcall\t' <<< "$output")" -eq 0 ]
	# a link inside the root that leads out: the same
	mkdir -p "root$(dirname "$prog")"
	ln -s "$PWD/outside/flow" "root$prog"
	run --separate-stderr "$PT2EVENTS" --symfs=root "$MT_FIXTURES/flow/plain.data"
	[[ "$stderr" == *"$prog"*"not found under --symfs root"* ]]
	run --separate-stderr "$MT_BIN/mt-symbolize" --symfs=root <("$PT2EVENTS" "$MT_FIXTURES/flow/plain.data" 2> /dev/null)
	[[ "$stderr" == *"not found under --symfs"* ]]
	[[ "$output" != *"to_sym=fib"* ]]
	# the file itself in the root: decoded and named (the check is not all refusing)
	rm "root$prog"
	cp "$prog" "root$prog"
	"$PT2EVENTS" --symfs=root "$MT_FIXTURES/flow/plain.data" | "$MT_BIN/mt-symbolize" --symfs=root | grep -q $'\tto_sym=fib\t'
}

# A trigger hit in a bundle's manifest is TIME PID TID 0xIP, whole: a line
# with a sign, an overflow or trailing junk was read in part (sscanf) and
# gave a hit where none was. Skipped now, each with a warning; the good
# line's hit is there (a real cpu-clock recording, its first sample's time
# and thread: the oracle is the line written).
@test "trigger-hit lines that do not parse whole are skipped with a warning; a whole one is a hit" {
	cd "$BATS_TEST_TMPDIR"
	"$MT_BIN/mt-record" --bundle=r.tar.zst -- "$MT_PROGS/naps" 2> /dev/null
	"$PT2EVENTS" r.tar.zst 2> /dev/null | grep -v '^#' | head -1 > first
	read -r t pid tid _ < first
	mkdir x
	tar -C x -xf r.tar.zst
	{
		echo "trigger-hit=-5 $pid $tid 0x10"
		echo "trigger-hit=$t $pid $tid 0x401000junk"
		echo "trigger-hit=99999999999999999999999 $pid $tid 0x1"
		echo "trigger-hit=$t 4294967296 $tid 0x1"
		echo "trigger-hit=$t $pid $tid 0x1234"
	} >> x/manifest
	tar -C x --zstd -cf r2.tar.zst $(tar -tf r.tar.zst | grep -v /$)
	run --separate-stderr "$PT2EVENTS" r2.tar.zst
	[ "$(grep -c "warning: the bundle's manifest, line [0-9]*: 'trigger-hit=.*' is not trigger-hit=TIME PID TID 0xIP: that trigger hit is skipped" <<< "$stderr")" -eq 4 ]
	[ "$(grep -c $'\tsample\t0x1234\t' <<< "$output")" -eq 1 ]
	grep -q "^$t	$pid	$tid	sample	0x1234	" <<< "$output"
}

# No gigabytes left behind (issue 49): each tool of a pipeline unpacked
# the whole bundle, perf.data included, into TMPDIR; the copy was removed
# on a signal only once the unpacking was done, so a signal in the middle
# of a large perf.data's left it all there. Now mt-symbolize takes the
# objects only, and an extraction is removed by a signal from its start.
@test "a bundle in TMPDIR: mt-symbolize unpacks no perf.data; SIGTERM, SIGHUP or SIGPIPE mid-extraction leaves nothing" {
	cd "$BATS_TEST_TMPDIR"
	mkdir tmp
	export TMPDIR=$PWD/tmp
	"$BUNDLE" create --compress=none -o b.tar "$MT_FIXTURES/libc/plain.data" 2> /dev/null
	tar -tvf b.tar | grep -q ' perf.data$'
	# mt-symbolize with the bundle as --symfs, waiting on its input: what
	# it unpacked is there to see
	mkfifo in
	exec 7<> in
	printf '# mt-events 1\n' >&7 # (it reads its input's first line before all)
	"$MT_BIN/mt-symbolize" --symfs=b.tar in > /dev/null 7>&- &
	local pid=$!
	for _ in $(seq 100); do [ -s tmp/mt-bundle.*/manifest ] 2> /dev/null && break; sleep 0.1; done
	ls -R tmp
	[ -s tmp/mt-bundle.*/manifest ] || { kill "$pid"; false; }
	[ -n "$(find tmp -path '*/root/*' -type f)" ] # the objects
	[ -z "$(find tmp -name perf.data)" ]          # not the trace
	exec 7>&-
	wait "$pid"
	[ -z "$(ls -A tmp)" ]
	# the bundle arriving slowly on standard input: stopped by a signal in
	# the middle of its perf.data
	half=$(( $(stat -c %s b.tar) / 2 ))
	mkfifo slow
	for sig in TERM HUP; do
		exec 8<> slow # held open: the rest never comes
		"$PT2EVENTS" - < slow > /dev/null 2>&1 &
		pid=$!
		head -c "$half" b.tar >&8
		for _ in $(seq 100); do [ -n "$(find tmp -name perf.data)" ] && break; sleep 0.1; done
		[ -n "$(find tmp -name perf.data)" ]
		kill -"$sig" "$pid"
		wait "$pid" || true
		exec 8>&-
		[ -z "$(ls -A tmp)" ] || { echo "SIG$sig left:"; ls -R tmp; false; }
	done
	# SIGPIPE: the reader of mt-pt2events's output gone while it unpacks
	{ head -c "$half" b.tar; sleep 3; cat b.tar | tail -c +$((half + 1)); } | "$PT2EVENTS" - | head -c 0
	[ -z "$(ls -A tmp)" ]
}
