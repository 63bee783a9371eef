#!/usr/bin/env bats
# perf.data in the forms perf 6.x writes it (issue 50). perf record -z:
# records in zstd batches (PERF_RECORD_COMPRESSED), one stream per file, a
# record continuing from one batch into the next. Recorded here for real
# (sampling: the only recording this machine can make), and Intel PT
# traces rewritten so by tests/tools/perfzstd. Oracles: perf script on the
# same file (its samples and frames, tests/tools/framecmp.py; its branches
# for Intel PT), and mt's own output on the uncompressed file, which
# perfzstd's rewrite must not change (perf script's output does not).

load helpers
bats_require_minimum_version 1.5.0

PERFZSTD=$BATS_TEST_DIRNAME/tools/perfzstd

setup() {
	cd "$BATS_TEST_TMPDIR"
}

mt_events() { # PERF.DATA: the stream, symbolized, without its source line
	"$PT2EVENTS" "$1" 2> "$1.err" | "$MT_BIN/mt-symbolize" | grep -v '^# fact	source'
}

@test "perf record -z, for real: every sample and its frames as perf script reads them (frame pointers, dwarf, two threads)" {
	for rec in "fp workers 300" "dwarf hot_nofp 20"; do
		set -- $rec
		perf record -q -z -e cpu-clock/freq=4000/u --call-graph "$1" -o "$1.data" -- "$MT_PROGS/$2" "$3" > /dev/null 2>&1
		perf report -i "$1.data" --header-only 2> /dev/null | grep -q '^# compressed : Zstd'
		n=$(perf report -i "$1.data" --stats 2> /dev/null | awk '$1 == "COMPRESSED" { print $3 }')
		[ "$n" -ge 1 ]
		"$PT2EVENTS" --info "$1.data" | grep -qx "compressed	zstd	batches=$n	lost=0	.*"
		perf script -i "$1.data" -F tid,time,ip,sym --ns --no-inline 2> /dev/null > "$1.perf"
		run --separate-stderr "$PT2EVENTS" "$1.data"
		[ "$status" -eq 0 ]
		[[ "$stderr" != *zstd* ]]
		echo "$output" | "$MT_BIN/mt-symbolize" > "$1.ev"
		# (a sample's line starts with its tid, its callchain's with a tab)
		samples=$(grep -c '^ *[0-9]' "$1.perf")
		echo "$1: $n batches, $(grep -c '	sample	' "$1.ev") samples, perf $samples"
		[ "$(grep -c '	sample	' "$1.ev")" -eq "$samples" ]
		"$BATS_TEST_DIRNAME/tools/framecmp.py" "$1.perf" "$1.ev"
	done
	# the dwarf samples' 8 KB stack copies run across batches
	grep -q "frame=.* main+0x.*hot_loop" dwarf.ev
}

@test "perf record -z in pipe mode, for real: straight from perf into mt-pt2events, perf's samples" {
	perf record -q -z -e cpu-clock/freq=4000/u -g -o - -- "$MT_PROGS/workers" 300 2> /dev/null | tee z.pipe |
		"$PT2EVENTS" - 2> err | "$MT_BIN/mt-symbolize" > z.ev
	[ "$(head -c 8 z.pipe)" = PERFILE2 ]
	perf script -i - -F tid,time,ip,sym --ns --no-inline < z.pipe 2> /dev/null > z.perf
	[ -s z.perf ]
	[ "$(grep -c '	sample	' z.ev)" -eq "$(grep -c '^ *[0-9]' z.perf)" ]
	"$BATS_TEST_DIRNAME/tools/framecmp.py" z.perf z.ev
}

@test "Intel PT recordings with -z (file, pipe, per-cpu, snapshot; small batches): the plain file's events, perf script's branches" {
	for v in flow/plain flow/pipe libc/plain libc/per-cpu libc/snapshot libc/pipe threads/per-cpu; do
		f=$MT_FIXTURES/$v.data n=${v//\//-}
		for chunk in 200 60000; do
			"$PERFZSTD" "$f" "$n.z" --chunk=$chunk
			# perf reads the rewrite as it reads the plain file
			cmp <(perf script -i - --itrace=cr -F tid,ip,sym,addr < "$f" 2> /dev/null) \
				<(perf script -i - --itrace=cr -F tid,ip,sym,addr < "$n.z" 2> /dev/null)
			mt_events "$f" > "$n.plain"
			mt_events "$n.z" > "$n.ev"
			[ "$(grep -c '	call	' "$n.plain")" -gt 10 ]
			cmp "$n.plain" "$n.ev"
			[ ! -s "$n.z.err" ] || ! grep -q zstd "$n.z.err" || false
		done
	done
}

@test "-z: a damaged batch: the records before it kept, the loss said with the batch's offset, exit 1; a cut file the same" {
	# a real recording in many small batches (perfzstd), one spoiled in
	# the middle; oracle: mt on the plain recording
	perf record -q -e cpu-clock/freq=4000/u -g -o p.data -- "$MT_PROGS/workers" 300 > /dev/null 2>&1
	"$PERFZSTD" p.data pz.data --chunk=2000
	mt_events p.data > p.ev
	all=$(grep -c '	sample	' p.ev)
	read -r at < <(python3 - pz.data <<'PY'
import struct, sys
path = sys.argv[1]
b = bytearray(open(path, 'rb').read())
off, size = struct.unpack_from('<QQ', b, 40)
pos, batches = off, []
while pos < off + size:
    t, _, s = struct.unpack_from('<IHH', b, pos)
    if t == 81:
        batches.append(pos)
    pos += s
mid = batches[len(batches) // 2]
b[mid + 8 + 4] ^= 0xff  # the zstd frame header's descriptor
open(path, 'wb').write(b)
print(mid)
PY
)
	run --separate-stderr "$PT2EVENTS" pz.data
	[ "$status" -eq 1 ]
	echo "$stderr"
	[[ "$stderr" == *"pz.data: "*" of its "*" zstd-compressed record batches (perf record -z) could not be read (zstd: "*"in the compressed batch at offset $at): the records they held are lost"* ]]
	kept=$(grep -c '	sample	' <<< "$output")
	echo "$kept of $all samples kept"
	[ "$kept" -gt 0 ]
	[ "$kept" -lt "$all" ]
	# every sample kept is the plain file's, with its frames' addresses
	# (not their names: perf writes each CPU's buffer whole in turn, and the
	# MMAP of a program that started on the other CPU may be among the lost)
	grep '	sample	' <<< "$output" > bad.samples
	"$PT2EVENTS" p.data 2> /dev/null | grep '	sample	' > p.samples
	[ "$(grep -cvxFf p.samples bad.samples)" -eq 0 ]
	# and the losses are marked in the stream
	grep -q '	error	.*zstd-compressed' <<< "$output"
	# a -z file cut inside a batch: what came before, the cut said
	head -c $((at + 30)) pz.data > cut.data
	run --separate-stderr "$PT2EVENTS" cut.data
	[ "$status" -eq 1 ]
	[[ "$stderr" == *truncated* ]]
}

@test "compressed records in a file whose header does not say it is compressed: skipped and said, exit 1" {
	f=$MT_FIXTURES/flow/plain.data
	"$PERFZSTD" "$f" z.data --chunk=500
	# the header's bit for HEADER_COMPRESSED (27) cleared
	python3 -c "
import sys
b = bytearray(open('z.data', 'rb').read())
b[72 + 27 // 8] &= ~(1 << 27 % 8)
open('z.data', 'wb').write(b)"
	run --separate-stderr "$PT2EVENTS" z.data
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"zstd-compressed record batches skipped: the file's header does not say it is compressed"* ]]
}

# perf record --threads writes a directory: `data` (the header, perf's own
# records) and a file of records per writer thread, data.N, with no header;
# perf reads them all as one recording (HEADER_DIR_FORMAT). Recorded here
# for real; oracle: perf script on the same directory.
@test "perf record --threads, for real (with -z too): a perf.data directory read whole, every sample and its frames as perf script reads them" {
	for z in "" -z; do
		perf record --threads $z -q -e cpu-clock/freq=4000/u -g -o "t$z.data" -- "$MT_PROGS/workers" 300 > /dev/null 2>&1
		[ -d "t$z.data" ]
		ls "t$z.data"/data.* > /dev/null
		perf script -i "t$z.data" -F tid,time,ip,sym --ns --no-inline 2> /dev/null > "t$z.perf"
		samples=$(grep -c '^ *[0-9]' "t$z.perf")
		# the directory, and its data file named: the same
		for input in "t$z.data" "t$z.data/data"; do
			run --separate-stderr "$PT2EVENTS" "$input"
			[ "$status" -eq 0 ]
			[[ "$stderr" != *"out of time order"* ]]
			echo "$output" | "$MT_BIN/mt-symbolize" > "t$z.ev"
			echo "$input: $(grep -c '	sample	' "t$z.ev") samples, perf $samples"
			[ "$(grep -c '	sample	' "t$z.ev")" -eq "$samples" ]
			"$BATS_TEST_DIRNAME/tools/framecmp.py" "t$z.perf" "t$z.ev"
		done
		files=$(find "t$z.data" -name 'data.*' | wc -l)
		"$PT2EVENTS" --info "t$z.data" | grep -qx "directory	data-files=$files	bytes=.*"
	done
	"$PT2EVENTS" --info t-z.data | grep -q '^compressed	zstd	batches=[1-9][0-9]*	lost=0	'
}

@test "a perf.data directory damaged: a data.N missing, one cut inside a record, the header alone from a pipe: the rest read, the loss said, exit 1" {
	perf record --threads -q -e cpu-clock/freq=4000/u -g -o t.data -- "$MT_PROGS/workers" 300 > /dev/null 2>&1
	[ -e t.data/data.1 ]
	"$PT2EVENTS" t.data 2> /dev/null | grep '	sample	' > all.samples
	# the last data.N gone, data.N+1 in its place: what data.N held is missing
	last=$(find t.data -name 'data.*' | sed 's/.*data\.//' | sort -n | tail -1)
	cp -r t.data g.data
	mv "g.data/data.$last" "g.data/data.$((last + 1))"
	run --separate-stderr "$PT2EVENTS" g.data
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"g.data/data: g.data/data.$last is missing: what it held is lost"* ]]
	grep -q "	error	.*data.$last is missing" <<< "$output"
	# (the data.N+1 it reads is data.N's records: all perf's samples)
	[ "$(grep -c '	sample	' <<< "$output")" -eq "$(wc -l < all.samples)" ]
	# the largest data.N cut inside its last record: its whole records kept
	# (which CPU's file holds records is the scheduler's choice: one may be
	# empty; records are multiples of 8 bytes, so a cut of 20 is inside one)
	big=$(find t.data -name 'data.*' -printf '%s %f\n' | sort -n | tail -1 | cut -d' ' -f2)
	size=$(stat -c %s "t.data/$big")
	echo "$big: $size bytes"
	[ "$size" -gt 100 ]
	cp -r t.data c.data
	truncate -s $((size - 20)) "c.data/$big"
	run --separate-stderr "$PT2EVENTS" c.data
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"c.data/data: c.data/$big ends inside a record at offset "*" bytes of it)"* ]]
	grep '	sample	' <<< "$output" > cut.samples
	[ "$(wc -l < cut.samples)" -ge $(($(wc -l < all.samples) - 1)) ]
	[ "$(grep -cvxFf all.samples cut.samples)" -eq 0 ]
	# the header file alone, from a pipe: its data.N cannot be found
	run --separate-stderr "$PT2EVENTS" - < t.data/data
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"standard input: a perf.data directory's header read without its directory: its data.N files (perf record --threads) are not read"* ]]
}

# perf record --switch-output writes a recording as a series of files, each
# a whole perf.data; the later ones lack the MMAPs of what was already
# running, so perf script names their samples [unknown]. Several FILEs to
# mt-pt2events are one recording, in time order. Recorded here for real;
# oracle: perf script on each piece (every sample, by thread, time and IP).
@test "perf record --switch-output, for real: its pieces given together are one recording, every piece's samples, named from the first's MMAPs" {
	# (a small ring buffer: perf wakes, and so switches, every 4 KB)
	perf record --switch-output=8K -m 2 -q -e cpu-clock/freq=4000/u -g -o s.data -- "$MT_PROGS/workers" 500 > /dev/null 2>&1
	n=$(find . -name 's.data.*' | wc -l)
	echo "$n pieces"
	[ "$n" -ge 3 ]
	for f in s.data.*; do
		perf script -i "$f" -F tid,time,ip --ns -G 2> /dev/null
	done | awk '{ t = $2; sub(":", "", t); sub("\\.", "", t); printf "%s %s 0x%s\n", $1, t, $3 }' | sort > perf.samples
	[ -s perf.samples ]
	run --separate-stderr "$PT2EVENTS" s.data.*
	[ "$status" -eq 0 ]
	echo "$output" > all.raw
	awk -F'\t' '$4 == "sample" { print $3, $1, $5 }' all.raw | sort > mt.samples
	wc -l perf.samples mt.samples
	cmp perf.samples mt.samples
	# in time order whatever the order given
	"$PT2EVENTS" $(ls -r s.data.*) 2> /dev/null | cmp - all.raw
	# named: where perf script, reading a piece alone, can name a sample
	# (its MMAPs may be in another piece: then [unknown]), mt names it the
	# same; after the first piece mt names the program's frames from the
	# first piece's MMAPs (the threads spend most of their time in crunch)
	for f in s.data.*; do
		perf script -i "$f" -F tid,time,ip,sym --ns -G 2> /dev/null
	done | awk '$4 != "[unknown]" && NF >= 4 { t = $2; sub(":", "", t); sub("\\.", "", t)
		name = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +/, "", name) # the whole name, spaces too (C++)
		sub(/.*@plt$/, "(a PLT stub)", name) # perf 6.1 misnames PLT stubs by index (symbolize.bats)
		print $1, t, name }' | sort > perf.named
	"$MT_BIN/mt-symbolize" all.raw > all.ev
	awk -F'\t' '$4 == "sample" { for (i = 6; i <= NF; i++) if ($i ~ /^from_sym=/) { name = substr($i, 10)
		sub(/.*@plt$/, "(a PLT stub)", name); print $3, $1, name } }' all.ev | sort > mt.named
	echo "perf names $(wc -l < perf.named) samples"
	[ "$(wc -l < perf.named)" -ge 20 ]
	# (on a failure: each sample named otherwise, with mt's name)
	comm -23 perf.named mt.named | head -5 | while read -r tid t name; do
		echo "perf: $tid $t $name; mt: $(grep "^$tid $t " mt.named)"
	done
	[ "$(comm -23 perf.named mt.named | wc -l)" -eq 0 ]
	second=$(for f in s.data.*; do [ "$(perf script -i "$f" -F tid 2> /dev/null | grep -c '^ *[0-9]')" -gt 0 ] && echo "$f"; done | sed -n 2p)
	[ -n "$second" ]
	since=$(perf script -i "$second" -F time --ns 2> /dev/null | awk 'NR == 1 { t = $1; sub(":", "", t); sub("\\.", "", t); print t }')
	awk -F'\t' -v since="$since" '$4 == "sample" && $1 >= since' all.ev > later.ev
	echo "after the first piece: $(wc -l < later.ev) samples, $(grep -c 'from_sym=crunch' later.ev) in crunch"
	[ "$(wc -l < later.ev)" -ge 20 ]
	[ "$(grep -c 'from_sym=crunch' later.ev)" -ge $(($(wc -l < later.ev) / 2)) ]
}

@test "several FILEs: each a perf.data piece of the same recording, else a clear error" {
	perf record --switch-output=20K -m 4 -q -e cpu-clock/freq=4000/u -g -o s.data -- "$MT_PROGS/workers" 200 > /dev/null 2>&1
	first=$(ls s.data.* | head -1)
	run --separate-stderr "$PT2EVENTS" "$first" "$MT_FIXTURES/flow/plain.data"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"is not a piece of the same recording as "*": its events differ"* ]]
	[ -z "$output" ]
	run --separate-stderr "$PT2EVENTS" "$first" - < "$first"
	[ "$status" -eq 2 ]
	[[ "$stderr" == "mt-pt2events: -: several FILEs are the pieces of one recording, each a perf.data file (not standard input, a directory or another kind of file)" ]]
	mkdir d
	run --separate-stderr "$PT2EVENTS" "$first" d
	[ "$status" -eq 2 ]
	run --separate-stderr "$PT2EVENTS" "$first" missing.data
	[ "$status" -eq 1 ]
	[[ "$stderr" == "mt-pt2events: missing.data: No such file or directory" ]]
	head -c 100 "$first" > short.data
	run --separate-stderr "$PT2EVENTS" "$first" short.data
	[ "$status" -eq 1 ]
	[[ "$stderr" == "mt-pt2events: short.data: "* ]]
}

# Branch stacks (perf record -b: PERF_SAMPLE_BRANCH_STACK) as real hardware
# recorded them: Intel LBR (Skylake, perf 4.14), AMD Zen 4's LbrExtV2 with
# speculation info, and an Alder Lake hybrid recording without. Oracle:
# Debian's perf script -F ip,brstack on the same files, entry by entry
# (perf 6.1 does not print the speculation mt adds as /SPEC).
@test "branch stacks of real LBR recordings (Intel, AMD Zen 4): every sample's entries as perf script -F brstack prints them; a hybrid CPU's events by PMU" {
	[ -d "$MT_REAL/quipper" ] || skip "the real recordings are not here ($MT_REAL: ../shared/testdata/real)"
	for f in perf.data.branch-4.14 perf.data.branch_stack_spec perf.data.hybrid_topology; do
		perf script -i "$MT_REAL/quipper/$f" -F ip,brstack 2> /dev/null | awk '{ $1 = $1; print }' > "$f.perf"
		"$PT2EVENTS" "$MT_REAL/quipper/$f" 2> /dev/null > "$f.ev"
		awk -F'\t' '$4 == "sample" { ip = $5; sub("^0x", "", ip); line = ip
			for (i = 6; i <= NF; i++) if ($i ~ /^branch=/) line = line " " substr($i, 8); print line }' "$f.ev" > "$f.mt"
		echo "$f: $(wc -l < "$f.perf") samples, $(grep -o ' 0x' "$f.perf" | wc -l) entries"
		[ -s "$f.perf" ]
		sed -E 's#/(SPEC_WRONG_PATH|NON_SPEC_CORRECT_PATH|SPEC_CORRECT_PATH)( |$)#\2#g' "$f.mt" | cmp - "$f.perf"
	done
	# Skylake's LBR: 32 entries a sample
	[ "$(grep -o ' 0x' perf.data.branch-4.14.perf | wc -l)" -eq $((32 * 13)) ]
	# Zen 4 says each branch's speculation; the hybrid file has no stacks
	grep -q '/NON_SPEC_CORRECT_PATH' perf.data.branch_stack_spec.mt
	[ "$(grep -c branch= perf.data.hybrid_topology.ev)" -eq 0 ]
	# and its events keep their PMU: perf's cpu_core/cycles:ppp/ is
	# cpu_core/cycles, not cpu_core (or cycles, as cpu_atom's would be)
	perf script -i "$MT_REAL/quipper/perf.data.hybrid_topology" -F event 2> /dev/null | sed -E 's/:ppp\/: *$//' | sort | uniq -c > hybrid.perf
	grep -o 'event=[^	]*' perf.data.hybrid_topology.ev | sed 's/^event=//' | sort | uniq -c > hybrid.mt
	cat hybrid.perf hybrid.mt
	cmp hybrid.perf hybrid.mt
}

# perf record --call-graph lbr: a sample's user stack is the LBR's call
# stack, the innermost call's target then each active call's site, the
# chain's user part unused (perf's resolve_lbr_callchain_sample). No LBR
# here: mt-synth's lbr variant writes such a recording from a single-
# stepped run (every call and return; at each sample the innermost 32
# calls, as a 32-entry LBR holds them). Oracles: that truth, address by
# address, and perf script on the same file, name by name. Two
# differences, both perf's: a sample with an empty call stack (in _start,
# before its first call) perf prints as one frame read past the sample's
# end, mt as its IP; and where perf 6.1 stretches _init's zero size over
# .plt.got (_init+0x50), mt names nothing there. The entries' names
# (mt-symbolize's branch_sym) as perf script -F brstacksym gives them.
@test "perf record --call-graph lbr (synthesized from single-stepped runs): each stack the LBR's call stack, as the truth and perf script give it; brstacksym names" {
	for run in libc/libc_flow deep/deep; do
		d=${run%%/*}
		"$MT_BIN/mt-synth" -q -o "$d" --variants=lbr --from-run="$MT_FIXTURES/$run.run" > /dev/null 2>&1
		"$PT2EVENTS" "$d/lbr.data" 2> /dev/null > "$d/mt.ev"
		grep -q '^# fact	callchains	lbr: ' "$d/mt.ev"
		[ "$(grep -c '	sample	' "$d/mt.ev")" -gt 1000 ]
		# the truth: every sample, its IP and its frames (branch= aside)
		diff <(grep -v '^#' "$d/lbr.truth") <(grep -v '^#' "$d/mt.ev" | sed 's/\tbranch=[^\t]*//g')
		perf script -i "$d/lbr.data" -F tid,time,ip,sym --ns 2> /dev/null > "$d/perf"
		"$MT_BIN/mt-symbolize" "$d/mt.ev" 2> /dev/null > "$d/mt.sym"
		"$BATS_TEST_DIRNAME/tools/lbrfilter.py" "$d/perf" "$d/mt.sym" "$d/perf.cmp" "$d/mt.cmp"
		"$BATS_TEST_DIRNAME/tools/framecmp.py" "$d/perf.cmp" "$d/mt.cmp" 100
		# stitched (--stitch-lbr): the thread's earlier frames beyond the
		# LBR, as perf stitches them (the recording says the LBR's depth,
		# and each sample its hw_idx); a chain mt cut, perf's innermost
		perf script -i "$d/lbr.data" --stitch-lbr -F tid,time,ip,sym --ns 2> /dev/null > "$d/perf.st"
		"$PT2EVENTS" --stitch-lbr "$d/lbr.data" 2> /dev/null | "$MT_BIN/mt-symbolize" 2> /dev/null > "$d/mt.st"
		"$BATS_TEST_DIRNAME/tools/lbrfilter.py" "$d/perf.st" "$d/mt.st" "$d/perf.st.cmp" "$d/mt.st.cmp"
		"$BATS_TEST_DIRNAME/tools/framecmp.py" "$d/perf.st.cmp" "$d/mt.st.cmp" 100
		# each entry's ends named as perf script -F brstacksym names them
		# (but the PLT stubs perf 6.1 misnames: bsymcmp.py)
		perf script -i "$d/lbr.data" -F brstacksym 2> /dev/null | sed -e 's/ *$//' > "$d/perf.bsym"
		awk -F'\t' '$4 == "sample" { line = ""; for (i = 7; i <= NF; i++) {
				if ($i ~ /^branch=/) { flags = $i; sub(/^branch=0x[0-9a-f]*\/0x[0-9a-f]*/, "", flags) }
				if ($i ~ /^branch_sym=/) line = line (line == "" ? "" : " ") substr($i, 12) flags }
			print line }' "$d/mt.sym" > "$d/mt.bsym"
		[ "$(grep -c . "$d/perf.bsym")" -gt 1000 ]
		"$BATS_TEST_DIRNAME/tools/bsymcmp.py" "$d/perf.bsym" "$d/mt.bsym"
	done
	grep -q '^_start+0x3/_dl_start+0x0/' libc/perf.bsym
	# deep recursion: stacks of the LBR's 32 calls and the innermost target
	[ "$(awk -F'\t' '$4 == "sample" { n = gsub(/\tframe=/, "&"); if (n > m) m = n } END { print m }' deep/mt.ev)" -eq 33 ]
	# stitched, deeper than the LBR: 253 frames kept, the rest counted
	[ "$(awk -F'\t' '$4 == "sample" { n = gsub(/\tframe=/, "&"); if (n > m) m = n } END { print m }' deep/mt.st)" -eq 253 ]
	grep -q '	frames_cut=' deep/mt.st
	# the LBR's depth as --info reads it (perf --header-only: "cpu pmu
	# capabilities: branches=32"), and the call-stack LBR's bits
	perf report -i deep/lbr.data --header-only 2> /dev/null | grep -q 'cpu pmu capabilities: branches=32'
	"$PT2EVENTS" --info deep/lbr.data | grep -qx 'pmu-caps	branches=32'
	"$PT2EVENTS" --info deep/lbr.data | grep -q '	branch_sample_type=0x2c801$'
	[ "$(grep -c '	sample	.*	frame=.*' deep/mt.ev)" -gt 1000 ]
	# the timeline, as Perfetto's own importer reads it: mt-toperfetto's
	# slices, deep's 33 frames 33 levels (depths 0 to 32)
	tps=${MT_TRACE_PROCESSOR:-$BATS_TEST_DIRNAME/../../shared/tools/perfetto/trace_processor_shell}
	[ -x "$tps" ] || skip "Perfetto's trace_processor_shell is not here ($tps: ../shared/tools/perfetto)"
	for d in libc deep; do
		"$MT_BIN/mt-toperfetto" -o "$d/t.pftrace" "$d/mt.sym" 2> /dev/null
		"$MT_BIN/mt-toperfetto" --format=threads -o "$d/t.threads" "$d/mt.sym" 2> /dev/null
		python3 "$BATS_TEST_DIRNAME/tools/tp_cmp.py" "$tps" "$d/t.pftrace" "$d/t.threads" "$d/mt.sym"
	done
	[ "$("$tps" -Q 'select max(depth) from slice' deep/t.pftrace 2> /dev/null | tail -1)" = 32 ]
}

# perf record -b -e r20c4 -c 32 (every 32nd taken branch sampled with the
# last 32): the branch stacks cover the whole run, so the timeline drawn
# from them is exact. Recorded with the branch types saved (-j
# any,u,save_type: brstack) and without (-j any,u: brstack-notype, typed
# from the code by mt-pt2events). Oracles: mt-synth's single-step truth
# (the samples as recorded, the types of the instructions at their
# sources; the timeline of the run's exact flow, from the tsc variant's
# truth) and perf script's brstack. Each branch is placed at its target's
# first instruction, one instruction (25 ns) after the truth's. libc_flow
# is held up to its first signal: the kernel's branch into the handler
# ends a window (a SYSRET entry), and what follows is the sampled stacks'
# estimate.
@test "perf record -b (synthesized: every 32nd taken branch, the last 32, types saved or not): each call and return the branch stacks prove, drawn where the truth has it" {
	for run in hits/flow libc/libc_flow; do
		d=${run%%/*}
		"$MT_BIN/mt-synth" -q -o "$d" --variants=brstack,brstack-notype,tsc --from-run="$MT_FIXTURES/$run.run" > /dev/null 2>&1
		"$MT_BIN/mt-symbolize" "$d/tsc.truth" 2> /dev/null | "$MT_BIN/mt-toperfetto" --format=threads -o "$d/truth.threads" 2> /dev/null
		for v in brstack brstack-notype; do
			"$PT2EVENTS" "$d/$v.data" 2> /dev/null > "$d/$v.ev"
			[ "$(grep -c '	sample	.*	branch=.*' "$d/$v.ev")" -gt 20 ]
			diff <(grep -v '^#' "$d/$v.truth") <(grep -v '^#' "$d/$v.ev" | grep -v '	\(comm\|mmap\|exit\)	')
			# every entry, its flags, cycles and type (none without
			# save_type), as perf script reads it
			perf script -i "$d/$v.data" -F brstack 2> /dev/null | sed -e 's/^ *//' -e 's/ *$//' -e 's/  */ /g' > "$d/$v.perf"
			awk -F'\t' '$4 == "sample" { line = ""; for (i = 7; i <= NF; i++) if ($i ~ /^branch=/)
					line = line (line == "" ? "" : " ") substr($i, 8); print line }' "$d/$v.ev" > "$d/$v.mt"
			[ "$(grep -c . "$d/$v.perf")" -gt 50 ]
			diff "$d/$v.perf" "$d/$v.mt"
			"$MT_BIN/mt-symbolize" "$d/$v.ev" 2> /dev/null > "$d/$v.sym"
			"$MT_BIN/mt-toperfetto" --format=threads -o "$d/$v.threads" "$d/$v.sym" 2> /dev/null
			first=$(grep -m1 '	sample	' "$d/$v.sym" | cut -f1)
			second=$(grep '	sample	' "$d/$v.sym" | sed -n 2p | cut -f1)
			hi=$(grep '	sample	' "$d/$v.sym" | tail -1 | cut -f1)
			sig=$(awk -F'\t' '$4 == "begin" && $5 == "raise" { print $3 + 1000000000; exit }' "$d/truth.threads")
			[ -z "$sig" ] || hi=$sig
			run "$BATS_TEST_DIRNAME/tools/brcmp.py" "$d/truth.threads" 1000000000 "$d/$v.threads" "$first" "$second" "$hi" 25
			echo "$v: $output"
			[ "$status" -eq 0 ]
			# most of each run held (libc_flow's first signal comes late)
			[ "$(echo "$output" | awk '/^brcmp:/ { print $2 }')" -gt 500 ]
		done
		grep -q 'branch_type=CALL' "$d/brstack-notype.ev"
		# the check can fail: the same samples drawn as magic-trace draws
		# samples (no branch stacks) miss most of it
		"$MT_BIN/mt-toperfetto" --sample-leaf=ip --format=threads -o "$d/ip.threads" "$d/brstack.sym" 2> /dev/null
		run "$BATS_TEST_DIRNAME/tools/brcmp.py" "$d/truth.threads" 1000000000 "$d/ip.threads" "$first" "$second" "$hi" 25
		[ "$status" -eq 1 ]
	done
	# without the objects, no type: said, and nothing drawn from them
	mkdir emptyfs
	run --separate-stderr "$PT2EVENTS" --symfs=emptyfs libc/brstack-notype.data
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"branch entries in user code have no type (recorded without -j save_type) and none from the code (not found)"* ]]
	[[ "$output" != *branch_type=* ]]
	tps=${MT_TRACE_PROCESSOR:-$BATS_TEST_DIRNAME/../../shared/tools/perfetto/trace_processor_shell}
	[ -x "$tps" ] || skip "Perfetto's trace_processor_shell is not here ($tps: ../shared/tools/perfetto)"
	for d in hits libc; do
		"$MT_BIN/mt-toperfetto" -o "$d/t.pftrace" "$d/brstack-notype.sym" 2> /dev/null
		python3 "$BATS_TEST_DIRNAME/tools/tp_cmp.py" "$tps" "$d/t.pftrace" "$d/brstack-notype.threads" "$d/brstack-notype.sym"
	done
}

# perf record -k: the clock of the recording's times. Oracle: this
# machine's CLOCK_REALTIME read just before and just after the recording
# (Python's time.time_ns; perf's own clock counts from boot, 56 years
# away): every sample time lies between them.
@test "perf record -k: the stream says its clock, and every time is that clock's" {
	before=$(python3 -c 'import time; print(time.time_ns())')
	perf record -q -k realtime -e cpu-clock/freq=4000/u -g -o r.data -- "$MT_PROGS/workers" 200 > /dev/null 2>&1
	after=$(python3 -c 'import time; print(time.time_ns())')
	"$PT2EVENTS" r.data 2> /dev/null > r.ev
	grep -qx '# fact	clock	realtime (perf record -k)' r.ev
	awk -F'\t' -v a="$before" -v b="$after" '$4 == "sample" { n++; if ($1 < a || $1 > b) bad++ }
		END { print n " samples, " bad + 0 " outside [" a ", " b "]"; exit !(n > 100 && bad == 0) }' r.ev
	perf record -q -k mono -e cpu-clock/freq=4000/u -o m.data -- "$MT_PROGS/workers" 100 > /dev/null 2>&1
	"$PT2EVENTS" m.data 2> /dev/null | grep -qx '# fact	clock	monotonic (perf record -k)'
	# without -k: perf's own clock, no clock said
	perf record -q -e cpu-clock/freq=4000/u -o p.data -- "$MT_PROGS/workers" 100 > /dev/null 2>&1
	"$PT2EVENTS" p.data 2> /dev/null > p.ev
	[ "$(grep -c '^# fact	clock' p.ev)" -eq 0 ]
	[ "$(awk -F'\t' '$4 == "sample" { print $1; exit }' p.ev)" -lt "$before" ]
	# Perfetto's own importer: the trace's clock is the recording's
	# (REALTIME 1, MONOTONIC 3; perf's own labelled BOOTTIME 6, as
	# magic-trace does), every slice at the stream's time, so inside
	# [before, after] on CLOCK_REALTIME
	tps=${MT_TRACE_PROCESSOR:-$BATS_TEST_DIRNAME/../../shared/tools/perfetto/trace_processor_shell}
	[ -x "$tps" ] || skip "Perfetto's trace_processor_shell is not here ($tps: ../shared/tools/perfetto)"
	for x in r:1 m:3 p:6; do
		f=${x%:*}
		"$PT2EVENTS" "$f.data" 2> /dev/null | "$MT_BIN/mt-symbolize" 2> /dev/null > "$f.sym"
		"$MT_BIN/mt-toperfetto" -o "$f.pftrace" "$f.sym" 2> /dev/null
		"$MT_BIN/mt-toperfetto" --format=threads -o "$f.threads" "$f.sym" 2> /dev/null
		python3 "$BATS_TEST_DIRNAME/tools/tp_cmp.py" "$tps" "$f.pftrace" "$f.threads" "$f.sym"
		clock=$("$tps" -Q "select int_value from metadata where name = 'trace_time_clock_id'" "$f.pftrace" 2> /dev/null | tail -1)
		echo "$f: trace_time_clock_id $clock"
		[ "$clock" = "${x#*:}" ]
	done
	"$tps" -Q "select min(ts), max(ts), count(*) from slice" r.pftrace 2> /dev/null | tail -1 | tr ',' ' ' > r.bounds
	read -r lo hi n < r.bounds
	echo "REALTIME slices: $n in [$lo, $hi]"
	[ "$n" -gt 0 ]
	[ "$lo" -ge "$before" ]
	[ "$hi" -le "$after" ]
}

# mt-record samples on CLOCK_MONOTONIC unless told otherwise (perf record
# -k mono: perf inject --jit takes a jitdump's times only then, and it is
# the clock other traces use): oracle, CLOCK_MONOTONIC read just before
# and after (Python's time.monotonic_ns).
@test "mt-record samples on CLOCK_MONOTONIC (perf record -k mono): every time between the clock's readings around it" {
	before=$(python3 -c 'import time; print(time.monotonic_ns())')
	"$MT_BIN/mt-record" -o k.data -- "$MT_PROGS/workers" 200 > /dev/null 2>&1
	after=$(python3 -c 'import time; print(time.monotonic_ns())')
	"$PT2EVENTS" k.data 2> /dev/null > k.ev
	grep -qx '# fact	clock	monotonic (perf record -k)' k.ev
	awk -F'\t' -v a="$before" -v b="$after" '$4 == "sample" { n++; if ($1 < a || $1 > b) bad++ }
		END { print n " samples, " bad + 0 " outside [" a ", " b "]"; exit !(n > 50 && bad == 0) }' k.ev
	# --clock=perf: perf's own, no clock said
	"$MT_BIN/mt-record" --clock=perf -o q.data -- "$MT_PROGS/workers" 50 > /dev/null 2>&1
	"$PT2EVENTS" q.data 2> /dev/null > q.ev
	grep -q '	sample	' q.ev
	[ "$(grep -c '^# fact	clock' q.ev)" -eq 0 ]
}

# JIT code named from the jitdump the JIT wrote (perf's format: V8's
# --perf-prof here, with Debian's nodejs) and mapped, so that the recording
# says where it is. Recorded for real with -k mono, perf's clock rule for
# jitdumps. Oracle: perf inject --jit, then perf script: the name of every
# sample's innermost frame in JIT code.
@test "a jitdump (node --perf-prof, for real): JIT-compiled functions named in samples as perf inject --jit names them" {
	command -v node > /dev/null || skip "no node (Debian's nodejs) here"
	cat > hot.js <<'JS'
function hotLoop(n) { let s = 0; for (let i = 0; i < n; i++) s += (i * i) % 7; return s; }
function middle(n) { return hotLoop(n); }
let t = 0; const end = Date.now() + 600;
while (Date.now() < end) t += middle(100000);
JS
	perf record -q -k mono -e cpu-clock/freq=2000/u -g -o n.data -- node --perf-prof hot.js > /dev/null 2>&1
	ls jit-*.dump > /dev/null
	perf inject --jit -i n.data -o j.data 2> /dev/null
	perf script -i j.data -F tid,time,ip,sym --ns --no-inline 2> /dev/null > j.perf
	"$PT2EVENTS" n.data 2> /dev/null | "$MT_BIN/mt-symbolize" 2> sym.err > n.ev
	"$BATS_TEST_DIRNAME/tools/jitleaf.py" j.perf n.ev '\.dump$' hotLoop 100
	# perf inject --jit's own output (a jitted-PID-N.so per load, MMAP2s
	# for them): the same names, from those objects
	"$PT2EVENTS" j.data 2> /dev/null | "$MT_BIN/mt-symbolize" 2> /dev/null | grep '	sample	' > inj.samples
	[ "$(grep -c 'from_sym=JS:' inj.samples)" -gt 100 ]
	cmp <(grep '	sample	' n.ev | grep -o 'from_sym=JS:[^	]*' | sort | uniq -c) <(grep -o 'from_sym=JS:[^	]*' inj.samples | sort | uniq -c)
	# in a bundle: the dump goes with it, and names the code from there
	"$MT_BIN/mt-bundle" create --no-kallsyms -o n.tar.zst n.data 2> /dev/null
	dump=$(ls jit-*.dump)
	mv "$dump" gone.dump
	"$PT2EVENTS" n.tar.zst 2> /dev/null | "$MT_BIN/mt-symbolize" 2> /dev/null | grep '	sample	' > b.samples
	mv gone.dump "$dump"
	grep '	sample	' n.ev | grep -v '^# ' > n.samples
	[ "$(grep -c 'from_sym=JS:' b.samples)" -gt 100 ]
	cmp <(grep -o 'from_sym=[^	]*' n.samples) <(grep -o 'from_sym=[^	]*' b.samples)
	# a record at the dump's end that claims more than there is (a JIT
	# killed while writing): the loads before it named, the damage said
	dump=$(ls jit-*.dump)
	python3 -c "
import struct, sys
open(sys.argv[1], 'ab').write(struct.pack('<IIQ', 0, 1 << 30, 0) + b'JS:cut')" "$dump"
	"$PT2EVENTS" n.data 2> /dev/null | "$MT_BIN/mt-symbolize" 2> cut.err > cut.ev
	grep -q "warning: .*$dump: a record at offset [0-9]* is cut or lies about its size" cut.err
	grep -q 'from_sym=JS:.hotLoop' cut.ev
	# not a jitdump at all: said, its code unnamed
	printf 'not a dump' > "$dump"
	"$PT2EVENTS" n.data 2> /dev/null | "$MT_BIN/mt-symbolize" 2> bad.err > /dev/null
	grep -q "$dump: not a jitdump (no JiTD header)" bad.err
}

# Java (Debian's openjdk-17): HotSpot writes its compiled methods to
# /tmp/perf-PID.map at exit (-XX:+DumpPerfMapAtExit; Debian ships no perf
# JVMTI agent for a jitdump). Recorded for real; oracle: perf script on the
# same file, which reads the same map: every sample in JIT code named as
# perf names it.
@test "Java (openjdk, -XX:+DumpPerfMapAtExit), for real: JIT-compiled methods named in samples as perf script names them" {
	command -v javac > /dev/null || skip "no javac (Debian's openjdk-17-jdk-headless) here"
	cat > Hot.java <<'JAVA'
public class Hot {
    static long hotLoop(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * i) % 7; return s; }
    static long middle(long n) { return hotLoop(n); }
    public static void main(String[] a) {
        long t = 0, end = System.currentTimeMillis() + 800;
        while (System.currentTimeMillis() < end) t += middle(100000);
        System.out.println(t & 1);
    }
}
JAVA
	javac Hot.java
	perf record -q -k mono -e cpu-clock/freq=2000/u -g -o j.data -- \
		java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp . Hot > /dev/null 2>&1
	perf script -i j.data -F tid,time,ip,sym --ns --no-inline 2> /dev/null > j.perf
	"$PT2EVENTS" j.data 2> /dev/null | "$MT_BIN/mt-symbolize" 2> /dev/null > j.ev
	maps=$(awk -F'\t' '$4 == "sample" { print $2 }' j.ev | sort -u | sed 's,^,/tmp/perf-,; s,$,.map,')
	"$BATS_TEST_DIRNAME/tools/jitleaf.py" j.perf j.ev '^/tmp/perf-[0-9]+\.map$' 'long Hot.hotLoop(long)' 200
	rm -f $maps # (HotSpot's, left in /tmp)
}

# A jitdump's source lines (its DEBUG_INFO records): testdata/progs/jit.c
# JIT-compiles two functions and says, before each load, the line of each
# instruction in a made-up source. Oracle: that program's own table (its
# head comment), the truth: every sample in JIT code at the line of the
# instruction it is at. (perf 6.1 cannot be the oracle: perf inject --jit
# writes the lines into its ELF, but names every "\xff" entry's file
# "\xff", and perf script prints no srcline for them.) The names: as perf
# inject --jit names them, sample by sample (half way the program loads
# jit_first's code again as jit_third: each sample is named by the load
# current at its time).
@test "a jitdump's source lines (DEBUG_INFO), for real: every sample in JIT code at its instruction's line, as the JIT said" {
	perf record -q -k mono -e cpu-clock/freq=4000/u -o jit.data -- "$MT_PROGS/jit" 300 > /dev/null 2>&1
	ls jit-*.dump > /dev/null
	"$PT2EVENTS" jit.data 2> /dev/null | "$MT_BIN/mt-symbolize" --lines 2> /dev/null > jit.ev
	python3 - jit.ev <<'PY'
import sys
# jit.c's table: offset ranges -> line; jit_second's lines 100 on
table = [(0x00, 10), (0x02, 11), (0x05, 12), (0x09, 13), (0x10, 14), (0x15, 15)]
files = {"jit_first": ("/jit/first.src", 0), "jit_second": ("/jit/second.src", 100),
         "jit_third": ("/jit/third.src", 200)}
n, seen = 0, set()
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) < 4 or f[3] != "sample":
        continue
    kv = dict(x.split("=", 1) for x in f[6:] if "=" in x)
    sym = kv.get("from_sym")
    if sym not in files:
        continue
    off = int(kv["from_off"], 16)
    want = [l for o, l in table if o <= off][-1] + files[sym][1]
    got = (kv.get("from_file"), int(kv.get("from_line", 0)))
    assert got == (files[sym][0], want), (f[0], sym, hex(off), got, want)
    assert kv.get("frame_src") == "%s:%d" % got, kv.get("frame_src")
    n += 1
    seen.add((sym, want))
print("%d samples in JIT code, each at its line; lines seen: %s" % (n, sorted(seen)))
assert n > 200 and {s for s, _ in seen} == set(files) and len(seen) >= 6
PY
	# without --lines: names, no lines
	"$PT2EVENTS" jit.data 2> /dev/null | "$MT_BIN/mt-symbolize" 2> /dev/null > plain.ev
	grep -q 'from_sym=jit_first' plain.ev
	[ "$(grep -c 'from_file=' plain.ev)" -eq 0 ]
	# the names as perf inject --jit gives them, sample by sample
	perf inject --jit -i jit.data -o inj.data 2> /dev/null
	perf script -i inj.data -F tid,time,ip,sym --ns 2> /dev/null | awk '{ sub(/:$/, "", $2); print $1, $2, $4 }' | grep ' jit_' | sort > perf.names
	awk -F'\t' '$4 == "sample" { for (i = 7; i <= NF; i++) if ($i ~ /^from_sym=jit_/) print $3, substr($1, 1, length($1) - 9) "." substr($1, length($1) - 8), substr($i, 10) }' plain.ev | sort > mt.names
	[ "$(wc -l < perf.names)" -gt 200 ]
	diff perf.names mt.names
}

# perf record -a: every process on every CPU, kernel frames among them.
# Recorded here for real (a busy program running beside it, and a shell
# forking /bin/true: hundreds of processes whose inherited mappings lie at
# the shell's very addresses); oracle: perf script on the same file (names
# from this kernel's /proc/kallsyms, aliases chosen as perf chooses).
@test "perf record -a, for real: every process's samples and frames, kernel ones too, as perf script reads them" {
	"$MT_PROGS/workers" 1200 > /dev/null &
	busy=$!
	sh -c 'while [ ! -e stop ]; do /bin/true; done' &
	churn=$!
	perf record -q -a -g -e cpu-clock/freq=1000/ -o a.data -- sleep 1 2> /dev/null
	touch stop
	wait "$busy" "$churn"
	perf script -i a.data -F tid,time,ip,sym --ns --no-inline 2> /dev/null > a.perf
	"$PT2EVENTS" a.data 2> /dev/null | "$MT_BIN/mt-symbolize" --kallsyms=/proc/kallsyms 2> /dev/null > a.ev
	# (a sample's line is any line not a callchain's: a tid of -1 too)
	[ "$(grep -c '	sample	' a.ev)" -eq "$(grep -c '^[^	]' a.perf)" ]
	# every process's samples; the frames of the programs run for it (the
	# machine's others may be C++, which perf names without parameters)
	[ "$(awk -F'\t' '$4 == "sample" { print $2 }' a.ev | sort -u | wc -l)" -ge 2 ]
	perf script -i a.data --pid="$busy" -F tid,time,ip,sym --ns --no-inline 2> /dev/null > busy.perf
	awk -F'\t' -v p="$busy" '$2 == p' a.ev > busy.ev
	[ "$(grep -c '	sample	' busy.ev)" -ge 20 ]
	"$BATS_TEST_DIRNAME/tools/framecmp.py" busy.perf busy.ev
	# the shell: its children, forked by the hundred, map what it maps
	# (more than the 64 mappings the old lookup looked back over; here
	# 190 to 270 of them, and 22 to 33 of the shell's samples, on this
	# 2-core VM under a make check's load)
	[ "$(awk -F'\t' '$1 == "# comm" && $4 == "true"' a.ev | wc -l)" -ge 65 ]
	perf script -i a.data --pid="$churn" -F tid,time,ip,sym --ns --no-inline 2> /dev/null > churn.perf
	awk -F'\t' -v p="$churn" '$2 == p' a.ev > churn.ev
	[ "$(grep -c '	sample	' churn.ev)" -ge 5 ]
	"$BATS_TEST_DIRNAME/tools/framecmp.py" churn.perf churn.ev
	# aliases (__x64_sys_vfork, __ia32_sys_vfork): perf keeps the last at
	# an address in the file; each group's order turned round, the other
	awk '{ if ($1 != a) { printf "%s", g; g = "" } a = $1; g = $0 "\n" g } END { printf "%s", g }' /proc/kallsyms > rev.kallsyms
	perf script -i a.data --kallsyms=rev.kallsyms --pid="$churn" -F tid,time,ip,sym --ns --no-inline 2> /dev/null > rev.perf
	"$PT2EVENTS" a.data 2> /dev/null | "$MT_BIN/mt-symbolize" --kallsyms=rev.kallsyms 2> /dev/null | awk -F'\t' -v p="$churn" '$2 == p' > rev.ev
	"$BATS_TEST_DIRNAME/tools/framecmp.py" rev.perf rev.ev
	# idle CPUs' stacks run through init text (start_kernel), past the
	# kernel's mapping: named as perf names them, where there are any
	perf script -i a.data --pid=0 -F tid,time,ip,sym --ns --no-inline 2> /dev/null > idle.perf
	if grep -q '^ *0 ' idle.perf; then
		awk -F'\t' '$2 == 0' a.ev > idle.ev
		"$BATS_TEST_DIRNAME/tools/framecmp.py" idle.perf idle.ev
	fi
	# kernel frames named, as perf names them from this kernel's kallsyms
	grep -q 'frame=0xffff[0-9a-f]* [a-z_]' a.ev
}
