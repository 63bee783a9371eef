#!/usr/bin/env bats
# Bad input: a clear "mt-pt2events: ..." message, the documented exit status
# (0 decoded, 1 data problem, 2 usage), decode of whatever is sound, no crash.

load helpers
bats_require_minimum_version 1.5.0

@test "--help, --version, bad options" {
	run "$PT2EVENTS" --help
	[ "$status" -eq 0 ]
	[[ "$output" == Usage:* ]]
	run "$PT2EVENTS" --version
	[ "$status" -eq 0 ]
	[[ "$output" == "mt-pt2events (mt) "* ]]
	run "$PT2EVENTS" --bogus
	[ "$status" -eq 2 ]
	# several FILEs are the pieces of one recording (perfforms.bats); with
	# --pt, a FILE is one too many
	run "$PT2EVENTS" --pt x y
	[ "$status" -eq 2 ]
	[[ "$output" == *"too many arguments"* ]]
	run "$PT2EVENTS" a b
	[ "$status" -eq 1 ]
	[[ "$output" == "mt-pt2events: a: No such file or directory" ]]
	run "$PT2EVENTS" --output-format=protobuf x
	[ "$status" -eq 2 ]
	run "$PT2EVENTS" --image /bin/true@0x1000
	[ "$status" -eq 2 ]
	[[ "$output" == *"need --pt"* ]]
}

@test "missing file, directory, empty input, wrong magic" {
	run "$PT2EVENTS" /nonexistent/perf.data
	[ "$status" -eq 1 ]
	[ "$output" = "mt-pt2events: /nonexistent/perf.data: No such file or directory" ]
	run "$PT2EVENTS" /
	[ "$status" -eq 1 ]
	[[ "$output" == *"is a directory"* ]]
	: > "$BATS_TEST_TMPDIR/empty"
	run "$PT2EVENTS" "$BATS_TEST_TMPDIR/empty"
	[ "$status" -eq 1 ]
	[[ "$output" == *"empty input"* ]]
	run bash -c "'$PT2EVENTS' < /dev/null"
	[ "$status" -eq 1 ]
	head -c 4096 /bin/true > "$BATS_TEST_TMPDIR/elf"
	run "$PT2EVENTS" "$BATS_TEST_TMPDIR/elf"
	[ "$status" -eq 1 ]
	[[ "$output" == *"not a perf.data file (bad magic)"* ]]
}

@test "-o writes atomically: nothing is left behind when decoding fails" {
	run "$PT2EVENTS" -o "$BATS_TEST_TMPDIR/out.ev" /nonexistent
	[ "$status" -eq 1 ]
	[ -z "$(ls "$BATS_TEST_TMPDIR")" ]
	run "$PT2EVENTS" -o "$BATS_TEST_TMPDIR/out.ev" "$MT_FIXTURES/flow/plain.data"
	[ "$status" -eq 0 ]
	[ "$(ls "$BATS_TEST_TMPDIR")" = out.ev ]
}

@test "a full disk is an error, not a silent loss" {
	run bash -c "'$PT2EVENTS' '$MT_FIXTURES/libc/plain.data' > /dev/full"
	[ "$status" -eq 1 ]
	[[ "$output" == *"No space left on device"* ]]
}

@test "truncated at every 61st byte: never a crash; the sound part decodes" {
	f=$MT_FIXTURES/flow/tsc.data
	"$PT2EVENTS" "$f" | grep -v '^#' | grep -v '	error	' > "$BATS_TEST_TMPDIR/full"
	size=$(stat -c %s "$f")
	for ((n = 0; n < size; n += 61)); do
		head -c $n "$f" > "$BATS_TEST_TMPDIR/cut"
		"$PT2EVENTS" "$BATS_TEST_TMPDIR/cut" > "$BATS_TEST_TMPDIR/ev" 2> "$BATS_TEST_TMPDIR/err" && rc=0 || rc=$?
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
			echo "cut at $n: exit $rc"; cat "$BATS_TEST_TMPDIR/err"; return 1
		fi
		if [ "$rc" -eq 1 ] && ! grep -q '^mt-pt2events: ' "$BATS_TEST_TMPDIR/err"; then
			echo "cut at $n: exit 1 without a message"; return 1
		fi
		# what was decoded is a prefix of the full decode (the final
		# instructions of a cut buffer may be lost, never invented)
		grep -v '^#' "$BATS_TEST_TMPDIR/ev" | grep -v '	error	' > "$BATS_TEST_TMPDIR/got" || true
		lines=$(wc -l < "$BATS_TEST_TMPDIR/got")
		if [ "$lines" -gt 1 ]; then
			head -n $((lines - 1)) "$BATS_TEST_TMPDIR/got" | cut -f1-6 > "$BATS_TEST_TMPDIR/g"
			head -n $((lines - 1)) "$BATS_TEST_TMPDIR/full" | cut -f1-6 > "$BATS_TEST_TMPDIR/w"
			cmp -s "$BATS_TEST_TMPDIR/g" "$BATS_TEST_TMPDIR/w" || { echo "cut at $n: not a prefix"; return 1; }
		fi
	done
}

@test "truncated AUXTRACE payload: exit 1, an error event names the damage" {
	f=$MT_FIXTURES/libc/plain.data
	# cut 100 bytes into the payload: the AUXTRACE record is found with --info
	head -c 2000 "$f" > "$BATS_TEST_TMPDIR/cut" # header+attrs+sideband end well before
	run --separate-stderr "$PT2EVENTS" "$BATS_TEST_TMPDIR/cut"
	[ "$status" -eq 1 ]
	echo "$output" | grep -q 'error	.*msg=.*truncated'
	echo "$stderr" | grep -q '^mt-pt2events: warning: .*truncated'
}

@test "corrupted PT bytes: error events, then resync at the next PSB and equal the truth again" {
	f=$MT_FIXTURES/libc/psb.data
	cp "$f" "$BATS_TEST_TMPDIR/bad"
	# overwrite 16 bytes in the middle of the PT payload with 0xff
	off=$(( $(stat -c %s "$f") / 3 ))
	printf '\xff%.0s' $(seq 16) | dd of="$BATS_TEST_TMPDIR/bad" bs=1 seek=$off conv=notrunc status=none
	run "$PT2EVENTS" --all-branches "$BATS_TEST_TMPDIR/bad"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q '	error	.*off=0x'
	# after the last error, the tail equals the truth's tail
	echo "$output" | grep -v '^#' | awk -F'\t' '/\terror\t/{buf=""; next} {buf=buf $0 "\n"} END{printf "%s", buf}' |
		cut -f2- > "$BATS_TEST_TMPDIR/tail"
	n=$(wc -l < "$BATS_TEST_TMPDIR/tail")
	[ "$n" -gt 100 ]
	# the first event after a resync may carry a partial insn count: compare from the second
	diff <(tail -n $((n - 1)) "$BATS_TEST_TMPDIR/tail") <(events_body "$MT_FIXTURES/libc/psb.truth" | tail -n $((n - 1)))
}

@test "missing binaries: a warning per object, error events, decoding goes on" {
	run --separate-stderr "$PT2EVENTS" --symfs /nonexistent "$MT_FIXTURES/libc/plain.data"
	[ "$status" -eq 0 ]
	echo "$stderr" | grep -q '^mt-pt2events: warning: .*libc.so.6 not found under --symfs /nonexistent'
	echo "$output" | grep -q '	error	.*msg=no memory mapped at this address'
}

@test "--symfs finds binaries under another root" {
	root=$BATS_TEST_TMPDIR/root
	prog=$(awk -F'\t' '$1=="# mmap" && $7 ~ /flow$/ {print $7; exit}' "$MT_FIXTURES/flow/plain.truth")
	mkdir -p "$root$(dirname "$prog")"
	cp "$prog" "$root$prog"
	run "$PT2EVENTS" --all-branches --symfs "$root" "$MT_FIXTURES/flow/plain.data"
	[ "$status" -eq 0 ]
	diff <(echo "$output" | grep -v '^#' | cut -f2-) <(events_body "$MT_FIXTURES/flow/plain.truth")
}

@test "unknown record types are skipped" {
	f=$MT_FIXTURES/flow/plain.data
	cp "$f" "$BATS_TEST_TMPDIR/odd"
	# the first FINISHED_ROUND (type 68, size 8) becomes type 99
	off=$(grep -obUaP '\x44\x00\x00\x00\x00\x00\x08\x00' "$f" | head -1 | cut -d: -f1)
	[ -n "$off" ]
	printf '\x63' | dd of="$BATS_TEST_TMPDIR/odd" bs=1 seek="$off" conv=notrunc status=none
	diff <("$PT2EVENTS" "$f" | grep -v '^# fact	source') <("$PT2EVENTS" "$BATS_TEST_TMPDIR/odd" | grep -v '^# fact	source')
}

@test "a compressed record in a file whose header does not say it is compressed is reported, not silently dropped" {
	f=$MT_FIXTURES/flow/plain.data
	cp "$f" "$BATS_TEST_TMPDIR/z"
	off=$(grep -obUaP '\x44\x00\x00\x00\x00\x00\x08\x00' "$f" | head -1 | cut -d: -f1)
	printf '\x51' | dd of="$BATS_TEST_TMPDIR/z" bs=1 seek="$off" conv=notrunc status=none # type 81
	run --separate-stderr "$PT2EVENTS" "$BATS_TEST_TMPDIR/z"
	[ "$status" -eq 1 ]
	echo "$stderr" | grep -q "^mt-pt2events: warning: 1 zstd-compressed record batches skipped: the file's header does not say it is compressed"
	echo "$output" | grep -q '	error	.*msg=1 zstd-compressed'
}

@test "permission errors (as an unprivileged user): a clear message, exit 1, nothing written" {
	# the tools and inputs in a directory the user can reach but not write
	d=$(mktemp -d /tmp/mt-perm.XXXXXX)
	chmod 755 "$d"
	cp "$MT_BIN"/mt-pt2events "$MT_BIN"/mt-symbolize "$MT_BIN"/mt-toperfetto "$MT_BIN"/mt-events "$d/"
	cp "$MT_FIXTURES/flow/plain.data" "$d/secret.data"
	"$MT_BIN/mt-pt2events" "$MT_FIXTURES/flow/plain.data" > "$d/secret.ev"
	cp "$d/secret.ev" "$d/open.ev"
	chmod 600 "$d/secret.data" "$d/secret.ev"
	chmod 644 "$d/open.ev"
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	for t in "mt-pt2events secret.data" "mt-symbolize secret.ev" "mt-toperfetto secret.ev" "mt-events secret.ev"; do
		set -- $t
		run as_nobody "$d/$1" "$d/$2"
		[ "$status" -eq 1 ]
		[[ "$output" == "$1: $d/$2: Permission denied" ]]
	done
	for t in mt-symbolize mt-toperfetto mt-events; do
		run as_nobody "$d/$t" -o "$d/out.$t" "$d/open.ev"
		[ "$status" -eq 1 ]
		[[ "$output" == *"Permission denied"* ]]
		[ ! -e "$d/out.$t" ]
	done
	rm -rf "$d"
}

@test "a reader that stops early (SIGPIPE): every filter of the pipeline ends quietly" {
	# in a shell of their own: Bats' DEBUG trap would reset PIPESTATUS.
	# The last filter before head writes more than a pipe holds (MBs of
	# events; 139 KB of JSON), so it must meet the closed pipe.
	pipe() { # N LAST-FILTER...: statuses of pt2events | symbolize | mt-events -b | LAST | head -N
		bash -c '"$1/mt-pt2events" --all-branches "$2" 2> "$3/e1" | "$1/mt-symbolize" 2> "$3/e2" |
			"$1/mt-events" --output-format=binary 2> "$3/e3" | "${@:5}" 2> "$3/e4" | head -"$4" > /dev/null
			echo "${PIPESTATUS[@]}"' sh "$MT_BIN" "$MT_FIXTURES/libc/plain.data" "$BATS_TEST_TMPDIR" "$@"
	}
	for last in "$MT_BIN/mt-events" "$MT_BIN/mt-toperfetto --format=json"; do
		for n in 1 100; do
			read -ra st < <(pipe "$n" $last)
			echo "$last, head -$n: statuses ${st[*]}"
			# each finished (0) or was ended by SIGPIPE (141), the last one by SIGPIPE
			for s in "${st[@]:0:4}"; do [ "$s" -eq 0 ] || [ "$s" -eq 141 ]; done
			[ "${st[3]}" -eq 141 ]
			for e in e1 e2 e3 e4; do [ ! -s "$BATS_TEST_TMPDIR/$e" ]; done
		done
	done
}

# Paths that must name regular files (issue 25): each taken from a trace,
# a stream or a directory, where a FIFO, a device or a directory hung the
# tool or read forever. Each now refused at once, naming the path and its
# kind, within a bounded run. Oracle: the file kinds made here.
@test "hostile paths: a FIFO or a device where a regular file must be is refused, never waited on" {
	local d=$BATS_TEST_TMPDIR
	mkfifo "$d/fifo"
	# --kcore: its kallsyms, then its kcore, a FIFO
	for f in kallsyms kcore; do
		rm -rf "$d/kc"
		cp -r "$MT_FIXTURES/libc/kcore.kcore_dir" "$d/kc"
		rm "$d/kc/$f"
		mkfifo "$d/kc/$f"
		run --separate-stderr timeout 30 "$PT2EVENTS" --kcore="$d/kc" -o "$d/ev" "$MT_FIXTURES/libc/kcore.data"
		[ "$status" -ne 124 ]
		[[ "$stderr" == *"$d/kc/$f: not a regular file (a FIFO)"* ]]
	done
	# --kallsyms given a FIFO, and /dev/zero: a warning, no names, exit 0
	"$PT2EVENTS" --vmlinux="$MT_FIXTURES/flow/kernel.vmlinux" -o "$d/kev" "$MT_FIXTURES/flow/kernel.data"
	for k in "$d/fifo" /dev/zero; do
		run --separate-stderr timeout 30 "$MT_BIN/mt-symbolize" --kallsyms="$k" "$d/kev"
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"$k: not a regular file"*"kernel addresses stay unnamed"* ]]
	done
	# a stream that names a FIFO as its bundle: an error, exit 1
	printf '# mt-events 1\n# bundle\t%s\n' "$d/fifo" > "$d/bev"
	run --separate-stderr timeout 30 "$MT_BIN/mt-symbolize" "$d/bev"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"$d/fifo: not a regular file (a FIFO)"* ]]
	# a separate debug file (found by build-id under --symfs) that is a FIFO
	local root=$d/root dir
	dir=$root$(dirname "$MT_PROGS/flow")
	mkdir -p "$dir"
	strip -o "$dir/flow" "$MT_PROGS/flow"
	bid=$(readelf -n "$MT_PROGS/flow" | sed -n 's/.*Build ID: //p')
	mkdir -p "$root/usr/lib/debug/.build-id/${bid:0:2}"
	mkfifo "$root/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug"
	"$PT2EVENTS" -o "$d/fev" "$MT_FIXTURES/flow/plain.data"
	run --separate-stderr timeout 30 "$MT_BIN/mt-symbolize" --symfs="$root" "$d/fev"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"${bid:2}.debug: not a regular file (a FIFO): not read as debug info"* ]]
	# --image with a directory or a FIFO as its file
	printf '\x02\x82%.0s' 1 2 3 4 5 6 7 8 > "$d/psb.pt"
	for f in "$d" "$d/fifo"; do
		run --separate-stderr timeout 30 "$PT2EVENTS" --pt "$d/psb.pt" --image "$f@0x1000"
		[ "$status" -eq 1 ]
		[[ "$stderr" == *"$f: not a regular file"* ]]
	done
}

# A signal mid-write (issue 25): each tool left its X.tmp.XXXXXX behind.
# Each tool here is stopped while it writes -o (its input a FIFO held
# open, more than the reader's first 2 MiB read given), by SIGINT, SIGTERM
# and SIGHUP: it ends by that signal and its temporary file is gone.
# (env --default-signal, every signal: a background job of a script starts
# with SIGINT ignored, a suite run under nohup with SIGHUP ignored, and an
# ignored signal is left so: the tool then never ended and the test waited
# for it forever.) Oracle: the directory's listing, and the status the
# shell reports.
@test "a signal mid-write leaves no temporary file, and the tool ends by that signal" {
	local d=$BATS_TEST_TMPDIR
	"$PT2EVENTS" -o "$d/ev" "$MT_FIXTURES/flow/plain.data"
	{ head -1 "$d/ev"; for i in $(seq 80); do grep -v '^#' "$d/ev"; done; } > "$d/big.ev"
	[ "$(stat -c %s "$d/big.ev")" -gt $((3 << 20)) ]
	local tools=(mt-events mt-symbolize mt-toperfetto) real
	mapfile -t real < <(shared_here "$MT_REAL/magic-trace/hello_world_userspace.perf")
	if [ "${#real[@]}" -eq 1 ]; then
		head -c 3000 "${real[0]}" > "$d/script.head"
		tools+=(mt-pt2events)
	fi
	for tool in "${tools[@]}"; do
		for sig in INT TERM HUP; do
			mkdir "$d/out"
			mkfifo "$d/in"
			env --default-signal "$MT_BIN/$tool" -o "$d/out/result" "$d/in" &
			local pid=$!
			local w
			exec {w}> "$d/in" # not 3: Bats' own
			if [ "$tool" = mt-pt2events ]; then cat "$d/script.head" >&"$w"; else cat "$d/big.ev" >&"$w"; fi
			for i in $(seq 100); do
				compgen -G "$d/out/result.tmp.*" > /dev/null && break
				sleep 0.1
			done
			compgen -G "$d/out/result.tmp.*" > /dev/null # it is writing
			kill -s "$sig" "$pid"
			local st=0
			wait "$pid" || st=$?
			exec {w}>&-
			echo "$tool SIG$sig: status $st, left: $(ls -A "$d/out")"
			[ "$st" -eq $((128 + $(kill -l "$sig"))) ]
			[ -z "$(ls -A "$d/out")" ]
			rm -r "$d/out" "$d/in"
		done
	done
}

# -o over a 0600 file left it 0644 (issue 25): a private trace made
# readable. A file replaced keeps its mode; a new one is 0600, as perf
# makes perf.data. Oracle: stat.
@test "-o keeps the mode of the file it replaces; a new output is 0600 as perf.data is" {
	local d=$BATS_TEST_TMPDIR
	"$PT2EVENTS" -o "$d/ev" "$MT_FIXTURES/flow/plain.data"
	[ "$(stat -c %a "$d/ev")" = 600 ]
	for mode in 600 640 644 755; do
		for tool in mt-events mt-toperfetto mt-pt2events; do
			echo old > "$d/out"
			chmod "$mode" "$d/out"
			if [ "$tool" = mt-pt2events ]; then
				"$PT2EVENTS" -o "$d/out" "$MT_FIXTURES/flow/plain.data"
			else
				"$MT_BIN/$tool" -o "$d/out" "$d/ev"
			fi
			[ "$(stat -c %a "$d/out")" = "$mode" ]
			[ "$(head -c 3 "$d/out")" != old ]
		done
	done
	"$MT_BIN/mt-toperfetto" -o "$d/new.pftrace" "$d/ev"
	[ "$(stat -c %a "$d/new.pftrace")" = 600 ]
}

# A perf.data whose attr id table is large (issue 25): every record's
# attr was found by a scan of all ids (a 4 MB file: 119 s). Made here from
# a fixture: K more copies of its first COMM record, and N ids no record
# carries ahead of attr 0's own (perf script -D reads the result: K+1
# COMMs). Oracle: the decode of the same records without the extra ids
# (equal), and the cost of 10x of both, timed in this run (linear: about
# 10x; the scan: about 100x).
@test "a large attr id table: records find their attr by search, 10x the ids and records cost about 10x" {
	runs_alone
	local t=$BATS_TEST_TMPDIR
	mkdir "$t/s" "$t/b" "$t/z"
	local grow=$BATS_TEST_DIRNAME/tools/perfdata-grow.py
	"$grow" "$MT_FIXTURES/threads/per-cpu.data" "$t/s/t.data" comm 10000 10000
	"$grow" "$MT_FIXTURES/threads/per-cpu.data" "$t/b/t.data" comm 100000 100000
	"$grow" "$MT_FIXTURES/threads/per-cpu.data" "$t/z/t.data" comm 100000 0
	[ "$(perf script -D -i "$t/b/t.data" 2>/dev/null | grep -c 'PERF_RECORD_COMM')" -eq 100001 ]
	(cd "$t/b" && timeout 60 "$PT2EVENTS" t.data) > "$t/b.ev"
	(cd "$t/z" && "$PT2EVENTS" t.data) | cmp - "$t/b.ev"
	ratio=$(cost_ratio "timeout 60 $PT2EVENTS $t/s/t.data" "timeout 60 $PT2EVENTS $t/b/t.data")
	echo "cost ratio for 10x the ids and records: $ratio"
	awk -v r="$ratio" 'BEGIN { exit !(r < 30) }'
}

# The flow fixture grown by perfdata-grow.py MODE: $t/s with N/10 more
# records, $t/b with N, $t/z as it was, each as t.data.
grown_flow() { # MODE N
	local grow=$BATS_TEST_DIRNAME/tools/perfdata-grow.py
	mkdir "$t/s" "$t/b" "$t/z"
	"$grow" "$MT_FIXTURES/flow/plain.data" "$t/s/t.data" "$1" $(($2 / 10))
	"$grow" "$MT_FIXTURES/flow/plain.data" "$t/b/t.data" "$1" "$2"
	cp "$MT_FIXTURES/flow/plain.data" "$t/z/t.data"
}

# 100,000 mappings of objects that are not there (issue 25): each warning
# was checked against every one said before (17 s). Made here from a
# fixture: K more MMAP2 records after its first, each a distinct missing
# file at its own address (perf script -D reads the result). Oracle: one
# warning per missing object, the decode as without them, and 10x the
# mappings costing about 10x, timed here.
@test "100,000 missing objects: one warning each, the decode unchanged, 10x the mappings cost about 10x" {
	runs_alone
	local t=$BATS_TEST_TMPDIR
	grown_flow mmap2 100000
	[ "$(perf script -D -i "$t/b/t.data" 2>/dev/null | grep -c 'PERF_RECORD_MMAP2')" -ge 100001 ]
	(cd "$t/b" && timeout 60 "$PT2EVENTS" t.data) > "$t/b.ev" 2> "$t/b.err"
	[ "$(grep -c 'not found: code there cannot be decoded' "$t/b.err")" -eq 100000 ]
	[ "$(sort -u "$t/b.err" | wc -l)" -eq "$(wc -l < "$t/b.err")" ]
	(cd "$t/z" && "$PT2EVENTS" t.data) | cmp - <(grep -v '/nonexistent/' "$t/b.ev")
	ratio=$(cost_ratio "timeout 60 $PT2EVENTS $t/s/t.data" "timeout 60 $PT2EVENTS $t/b/t.data")
	echo "cost ratio for 10x the missing objects: $ratio"
	awk -v r="$ratio" 'BEGIN { exit !(r < 30) }'
}

# 40,000 mappings of one object that is there (issue 25): libipt's section
# cache and image searched every section they held on each add (3 s, and
# libipt refused sections past its limit: "cannot add to image:
# overflow"). Made here from a fixture: K more MMAP2 records of its first
# mapping's own file, each at its own address where no code runs (perf
# script -D reads the result). Oracle: the decode as without them, no
# warning, and 10x the mappings costing about 10x, timed here.
@test "40,000 mappings of one object: the decode unchanged, no warning, 10x the mappings cost about 10x" {
	runs_alone
	local t=$BATS_TEST_TMPDIR
	grown_flow mmap2obj 40000
	[ "$(perf script -D -i "$t/b/t.data" 2>/dev/null | grep -cE 'PERF_RECORD_MMAP2.*\[0x1[0-9a-f]{10}\(0x1000\)')" -eq 40000 ]
	(cd "$t/b" && timeout 60 "$PT2EVENTS" t.data) > "$t/b.ev" 2> "$t/b.err"
	[ ! -s "$t/b.err" ] || { cat "$t/b.err"; false; }
	(cd "$t/z" && "$PT2EVENTS" t.data) | cmp - <(grep -vE '^# mmap	[0-9]+	0x1[0-9a-f]{10}	' "$t/b.ev")
	ratio=$(cost_ratio "timeout 60 $PT2EVENTS $t/s/t.data" "timeout 60 $PT2EVENTS $t/b/t.data")
	echo "cost ratio for 10x the mappings: $ratio"
	awk -v r="$ratio" 'BEGIN { exit !(r < 30) }'
}

# --pages with 30,000 pages (issue 25): libipt's section cache searched all
# it held on each add (29 s). A real trace (libxdc's foo, real hardware)
# with its own page set and a second one of K pages (a sparse dump) at
# addresses it never runs. Oracle: the decode without the second set
# (equal), and 10x the pages costing about 10x, timed here.
@test "--pages with 30,000 pages: the decode unchanged, 10x the pages cost about 10x" {
	runs_alone
	local t=$BATS_TEST_TMPDIR X=$MT_REAL/libxdc/foo k
	need_shared "$X"
	for k in 3000 30000; do
		python3 -c 'import struct, sys; k = int(sys.argv[1]); sys.stdout.buffer.write(b"".join(struct.pack("<Q", 0x100000000000 + 0x2000 * i) for i in range(k)))' $k > "$t/x$k.addr"
		truncate -s $((k * 4096)) "$t/x$k.dump"
	done
	"$PT2EVENTS" --pt "$X/trace" --pages "$X/data" > "$t/want.ev"
	timeout 60 "$PT2EVENTS" --pt "$X/trace" --pages "$X/data" --pages "$t/x30000" > "$t/got.ev"
	diff <(grep -v '^# fact	format' "$t/want.ev") <(grep -v '^# fact	format' "$t/got.ev")
	grep -q '^# fact	format	raw PT, 30433 image sections$' "$t/got.ev"
	ratio=$(cost_ratio "timeout 60 $PT2EVENTS --pt $X/trace --pages $X/data --pages $t/x3000" \
		"timeout 60 $PT2EVENTS --pt $X/trace --pages $X/data --pages $t/x30000")
	echo "cost ratio for 10x the pages: $ratio"
	awk -v r="$ratio" 'BEGIN { exit !(r < 30) }'
}

# A thread renamed, the records out of time order in the file (issue 26:
# repeated COMM records were dropped and the rest kept in file order, so a
# process named again after two execs kept its middle name). Made here
# from a fixture: after its COMM, three more in file order A (+3 ns), B
# (+2), A (+1). Oracle: perf script -D, which lists them in time order (its
# last is the thread's name), and the Chrome JSON trace's thread name.
@test "a thread's name is its latest in time: renames out of file order, a name given again" {
	cd "$BATS_TEST_TMPDIR"
	"$BATS_TEST_DIRNAME/tools/perfdata-grow.py" "$MT_FIXTURES/flow/plain.data" r.data renames mt-a mt-b
	perf script -D -i r.data 2> /dev/null | sed -n 's/.*PERF_RECORD_COMM[^:]*: \([^:]*\):.*/\1/p' > perf.names
	[ "$(tr '\n' ' ' < perf.names)" = "flow mt-a mt-b mt-a " ]
	"$PT2EVENTS" r.data | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o r.json
	python3 -c 'import json, sys
names = {e["tid"]: e["args"]["name"] for e in json.load(open("r.json"))["traceEvents"] if e.get("name") == "thread_name"}
assert list(names.values()) == [sys.argv[1]], names' "$(tail -1 perf.names)"
}

# An empty recording (issue 25): decoded to an empty stream with exit 0.
# Recorded for real: a sampling period no run of true(1) reaches. Oracle:
# perf report on the same file ("has no samples").
@test "an empty recording is an error, not an empty success" {
	local t=$BATS_TEST_TMPDIR
	perf record -q -e cpu-clock -c 10000000000 -o "$t/empty.data" -- true 2> /dev/null
	perf report -i "$t/empty.data" --stdio 2>&1 | grep -q 'has no samples'
	run --separate-stderr "$PT2EVENTS" -o "$t/ev" "$t/empty.data"
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-pt2events: $t/empty.data: nothing recorded: no trace data and no samples" ]
	[ ! -e "$t/ev" ]
}

# ... and through the pipeline (issue 23): mt-pt2events's stream on a pipe
# said nothing of it, so mt-symbolize and mt-toperfetto exited 0 and left a
# 0-byte trace; under mt-trace the later stages repeated the error. Oracle:
# perf report (no samples), and each stage's status.
@test "an empty recording through the pipeline: every stage exits 1, no trace is left, one message under mt-trace" {
	cd "$BATS_TEST_TMPDIR"
	perf record -q -e cpu-clock -c 10000000000 -o empty.data -- true 2> /dev/null
	perf report -i empty.data --stdio 2>&1 | grep -q 'has no samples'
	local codes
	{
		"$PT2EVENTS" --output-format=binary empty.data 2> /dev/null | "$MT_BIN/mt-symbolize" 2> /dev/null |
			"$MT_BIN/mt-toperfetto" -o t.pftrace 2> /dev/null
		codes="${PIPESTATUS[*]}"
	} || true
	[ "$codes" = "1 1 1" ]
	[ ! -e t.pftrace ]
	# the text stream's last line says why it has nothing
	run --separate-stderr "$PT2EVENTS" empty.data
	[ "$status" -eq 1 ]
	[ "${lines[-1]}" = "# error	empty.data: nothing recorded: no trace data and no samples" ]
	run --separate-stderr "$BATS_TEST_DIRNAME/../pipelines/mt-trace" decode empty.data -o t2.pftrace
	[ "$status" -eq 1 ]
	echo "$stderr"
	[ "$(grep -c 'nothing recorded' <<< "$stderr")" -eq 1 ]
	[ -z "$(grep -E '^mt-(symbolize|toperfetto):' <<< "$stderr")" ]
	[ ! -e t2.pftrace ]
	# a stage's input that is not a perf.data at all: the same, one message
	head -c 100 /dev/zero > zero.data
	run --separate-stderr "$BATS_TEST_DIRNAME/../pipelines/mt-trace" decode zero.data -o t3.pftrace
	[ "$status" -eq 1 ]
	[ -z "$(grep -E '^mt-(symbolize|toperfetto):' <<< "$stderr")" ]
	[[ "$stderr" == *"mt-pt2events: zero.data: "* ]]
	[ ! -e t3.pftrace ]
}

# issue 48: a recording given to a filter that reads streams said "a NUL
# byte in a text line"; a filter with no file on a terminal waited
# silently. Now: what it is and the command that decodes it, exit 1; no
# file on a terminal (a real pty, script(1)): mt-pt2events reads
# ./perf.data as perf script does, the others say what they read, exit 2.
@test "filters given a recording say which command decodes it; with no file on a terminal they do not wait" {
	cd "$BATS_TEST_TMPDIR"
	cp "$MT_FIXTURES/flow/plain.data" perf.data
	"$MT_BIN/mt-bundle" create -o b.tar.zst perf.data 2> /dev/null
	for p in mt-symbolize mt-toperfetto mt-report mt-events; do
		run --separate-stderr "$MT_BIN/$p" perf.data
		[ "$status" -eq 1 ]
		want="mt-pt2events perf.data | $p"
		[ "$p" = mt-toperfetto ] || [ "$p" = mt-report ] && want="mt-pt2events perf.data | mt-symbolize | $p"
		[[ "${stderr%%$'\n'*}" == "$p: perf.data is a perf.data recording, not an mt event stream; decode it first: $want"* ]]
		[[ "$stderr" != *"NUL byte"* ]]
	done
	run --separate-stderr "$MT_BIN/mt-report" - < b.tar.zst
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-report: standard input is an mt bundle or another zstd-compressed archive, not an mt event stream; decode it first: mt-pt2events FILE | mt-symbolize | mt-report" ]
	# the command said works
	"$PT2EVENTS" perf.data | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-report" --format=tsv > r.tsv
	[ "$(wc -l < r.tsv)" -gt 2 ]
	# no file, a terminal on stdin
	for p in mt-symbolize mt-toperfetto mt-report mt-events; do
		run timeout 10 script -qec "$MT_BIN/$p" /dev/null
		[ "$status" -eq 2 ]
		[[ "$output" == *"$p: no FILE, and standard input is a terminal"* ]]
	done
	timeout 30 script -qec "$PT2EVENTS > tty.ev" /dev/null
	"$PT2EVENTS" perf.data | cmp - tty.ev
}

# Outputs (issue 49): one rule in every tool and script. A FIFO with no
# reader, a device (but /dev/null) or a directory as -o/--db/--bundle is
# refused before anything is opened (an open of a FIFO for writing blocks:
# each command runs under timeout, so a wait fails the test); a symlink to a file is
# written through (the link kept), one to a missing file is refused and
# stays a link.
@test "outputs: FIFOs with no reader, devices and directories refused before any open; symlinks written through or refused, never replaced" {
	cd "$BATS_TEST_TMPDIR"
	ev=$MT_FIXTURES/flow/plain.data
	"$PT2EVENTS" "$ev" | "$MT_BIN/mt-symbolize" > flow.ev
	mkfifo fifo
	mkdir dir
	ln -s "$PWD/missing" dangling
	echo old > target
	ln -s "$PWD/target" link
	# each tool: CMD... with OUT where the output goes
	tools=(
		"$PT2EVENTS -o OUT $ev"
		"$MT_BIN/mt-symbolize -o OUT flow.ev"
		"$MT_BIN/mt-toperfetto -o OUT flow.ev"
		"$MT_BIN/mt-events -o OUT flow.ev"
		"$MT_BIN/mt-report --format=tsv -o OUT flow.ev"
		"$MT_BIN/mt-report --format=sqlite -o OUT flow.ev"
		"$MT_BIN/mt-bundle create -o OUT $ev"
		"$MT_BIN/mt-record -o OUT -- /bin/true"
		"$BATS_TEST_DIRNAME/../pipelines/mt-trace decode -o OUT $ev"
		"$BATS_TEST_DIRNAME/../pipelines/mt-batch --db=OUT -d batch $ev"
	)
	for t in "${tools[@]}"; do
		for out in fifo /dev/zero dir dangling; do
			status=0
			PATH=$MT_BIN:$PATH timeout 20 ${t//OUT/$out} > o.txt 2>&1 || status=$?
			{ [ "$status" -ne 0 ] && [ "$status" -ne 124 ]; } || { echo "$t: $out: status $status"; cat o.txt; false; }
			grep -Eq "$out: (is a FIFO|is a character device|is a directory|is not a regular file|a symbolic link to a missing file)" o.txt ||
				{ echo "$t: $out:"; cat o.txt; false; }
		done
		[ -L dangling ]
		[ ! -e missing ]
		# through the link to a file: the file replaced, the link kept
		echo old > target
		PATH=$MT_BIN:$PATH timeout 60 ${t//OUT/link} > o.txt 2>&1 || { echo "$t: link:"; cat o.txt; false; }
		[ -L link ] || { echo "$t: the link was replaced"; false; }
		[ "$(cat target)" != old ] || { echo "$t: the target was not written"; false; }
		rm -rf batch trace.tar.zst
	done
}

# Costs linear in threads (issue 49): each thread was found by a scan of
# all before it: mt-report's (pid, tid) (200,000 threads: 50 s), mt-report
# --per-thread's thread names (4.5 min), mt-pt2events's COMM and FORK
# records (150,000 threads: 42 s). Now by hash: each within 2x of
# mt-toperfetto's CPU time on the same stream (the least of 3 runs each,
# timed here), and the threads all there (perf script -D counts the
# records; the stream's own comm lines count the threads). Held here at
# 60,000 threads each (where the scans cost several times mt-toperfetto;
# the issue's 200,000 and 150,000 are measured in its note), and the
# times only where the tools are built plainly (an ASan build's costs
# are not the tools').
least_cpu() { # COMMAND: the least CPU seconds of 3 runs
	local a b c
	a=$(cpu_seconds bash -c "$1"); b=$(cpu_seconds bash -c "$1"); c=$(cpu_seconds bash -c "$1")
	printf '%s\n%s\n%s\n' "$a" "$b" "$c" | sort -g | head -1
}

@test "many threads in mt-report, many FORK+COMM threads in mt-pt2events: within 2x of mt-toperfetto" {
	runs_alone
	cd "$BATS_TEST_TMPDIR"
	# under ASan (make check SAN=1) the times are not held, and 60,000
	# threads took 13 minutes there (its allocator moves each grown array
	# to a new mapping): 6,000, every thread still checked
	local n=60000 asan=
	if ldd "$PT2EVENTS" | grep -q libasan; then
		n=6000 asan=yes
	fi
	python3 - "$n" <<-'PY'
	import sys
	n = int(sys.argv[1])
	with open("t.ev", "w") as f:
	    f.write("# mt-events 1\n")
	    f.writelines(f"# comm\t{1000 + i}\t{1000 + i}\tw{i}\n" for i in range(n))
	    t = 1000
	    for i in range(n):
	        f.write(f"{t}\t{1000 + i}\t{1000 + i}\tcall\t0x1000\t0x2000\tto_sym=f{i % 100}\n")
	        f.write(f"{t + 10}\t{1000 + i}\t{1000 + i}\treturn\t0x2005\t0x1004\tfrom_sym=f{i % 100}\n")
	        t += 20
	PY
	[ "$("$MT_BIN/mt-report" --format=json t.ev | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["threads"]))')" -eq "$n" ]
	"$BATS_TEST_DIRNAME/tools/perfdata-grow.py" "$MT_FIXTURES/threads/per-cpu.data" f.data forks "$n"
	[ "$(perf script -D -i f.data 2>/dev/null | grep -c 'PERF_RECORD_FORK')" -ge "$n" ]
	"$PT2EVENTS" f.data > f.ev
	[ "$(grep -Ec $'^# comm\t[0-9]+\t1[0-9]{6}\tw[0-9]+$' f.ev)" -eq "$n" ]
	if [ -n "$asan" ]; then
		echo "# times not held: an ASan build" >&3
		return 0
	fi
	rep=$(least_cpu "'$MT_BIN/mt-report' --format=tsv t.ev > /dev/null")
	tp=$(least_cpu "'$MT_BIN/mt-toperfetto' -o /dev/null t.ev")
	echo "mt-report $rep s, mt-toperfetto $tp s"
	awk -v a="$rep" -v b="$tp" 'BEGIN { exit !(a <= 2 * b) }'
	dec=$(least_cpu "'$PT2EVENTS' f.data > /dev/null")
	tp=$(least_cpu "'$MT_BIN/mt-toperfetto' -o /dev/null f.ev")
	echo "mt-pt2events $dec s, mt-toperfetto $tp s"
	awk -v a="$dec" -v b="$tp" 'BEGIN { exit !(a <= 2 * b) }'
}
