#!/usr/bin/env bats
# mt-perfargs against magic-trace's perf record command lines. Oracle: the
# tables and examples of shared/docs/magic-trace-behaviour.md section 3
# (the argv of its issue #324, the extra-event example, the resolution,
# snapshot and -m rules, when it warns), copied into the expectations; the
# warnings are said in mt's words, each prefixed with the tool's name
# (issue 23).

load helpers
bats_require_minimum_version 1.5.0

PERFARGS=$MT_BIN/mt-perfargs

caps() { # FILE PERF_VERSION INTEL_PT PSB_CYC [LBR] [ROOT] [SAMPLING_EVENT]
	cat > "$1" <<EOC
intel_pt=$3
perf.version=$2
perf.usable=1
perf_event_max_sample_rate=25000
configurable_psb_period=$4
kernel_tracing=${6:-1}
last_branch_record=${5:-1}
sampling.event=${7:-cycles}
EOC
}

pa() { # CAPS ARGS... -> one line in $output
	run --separate-stderr "$PERFARGS" --caps "$1" --shell -C DIR "${@:2}"
}

@test "magic-trace's argv from its issue #324 (perf 5.9, Normal, uk, kcore)" {
	caps "$BATS_TEST_TMPDIR/c" 5.9 1 1
	pa "$BATS_TEST_TMPDIR/c" --scope=uk --pid=377433
	[ "$status" -eq 0 ]
	[ "$output" = "perf record -o DIR/perf.data --timestamp --event=intel_pt/cyc=1,cyc_thresh=1,mtc_period=0/uk --per-thread -t 377433 --snapshot=e --kcore" ]
}

@test "extra events: one --event argument, -t instead of --per-thread (the documented example)" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	pa "$BATS_TEST_TMPDIR/c" --extra-events=branch-misses --pid=7
	[[ "$output" == *" --event=intel_pt/cyc=1,cyc_thresh=1,mtc_period=0/u,branch-misses/period=50/uP -t 7 "* ]]
	pa "$BATS_TEST_TMPDIR/c" --extra-events=cache-misses,branch-misses --pid=7
	[[ "$output" == *"/u,branch-misses/period=50/uP,cache-misses/period=1/uP -t 7"* ]]
	run "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --extra-events=branch-misses,branch-misses
	[ "$status" -eq 2 ]
}

@test "Intel PT resolutions: low, normal, high, custom fields in fixed order" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	for r in "low intel_pt//u" "normal intel_pt/cyc=1,cyc_thresh=1,mtc_period=0/u" \
		 "high intel_pt/cyc=1,cyc_thresh=1,mtc_period=0,noretcomp=1/u" \
		 "custom:psb_period=3,cyc=1,mtc=0 intel_pt/cyc=1,mtc=0,psb_period=3/u"; do
		set -- $r
		pa "$BATS_TEST_TMPDIR/c" --timer-resolution="$1"
		[[ "$output" == *" --event=$2 "* ]]
	done
	run "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --timer-resolution=sample:100
	[ "$status" -eq 2 ]
	[[ "$output" == *"--timer-resolution=sample:... is for sampling"* ]]
}

@test "no psb_cyc: normal and high fall back to low, with magic-trace's warning" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 0
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --timer-resolution=high
	[ "$status" -eq 0 ]
	echo "$output" | grep -qx -- '--event=intel_pt//u'
	[ "$stderr" = "mt-perfargs: warning: this CPU cannot set the PSB period: times are good to ~1 us, not ~10 ns (--timer-resolution=low)" ]
}

@test "snapshot flags by perf version and trigger (section 3.3)" {
	for row in "5.3 - --snapshot" "5.3 --trigger --snapshot" "5.4 - --snapshot=e" "5.9 --trigger --snapshot" \
		   "5.10 - --snapshot=e --control=fd:3,4" "6.1 --trigger --snapshot --control=fd:3,4" \
		   "6.1 --full-execution --control=fd:3,4" "5.4 --full-execution"; do
		set -- $row
		caps "$BATS_TEST_TMPDIR/c" "$1" 1 1
		opt=$2; [ "$opt" = - ] && opt=--scope=u
		shift 2
		pa "$BATS_TEST_TMPDIR/c" "$opt" --pid=9
		[ "${output#*--per-thread -t 9}" = "${*:+ $*}" ]
	done
}

@test "--kcore for kernel scopes from perf 5.5; the old-perf warning before; MT_PERF_NO_KCORE" {
	caps "$BATS_TEST_TMPDIR/c" 5.4 1 1
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --scope=k
	! echo "$output" | grep -q -- --kcore || false
	[ "$stderr" = "mt-perfargs: warning: perf 5.4 has no --kcore (5.5 and later): kernel code that changes while traced (the kernel patches itself) may decode wrong; install perf 5.5 or later" ]
	caps "$BATS_TEST_TMPDIR/c" 5.5 1 1
	pa "$BATS_TEST_TMPDIR/c" --scope=uk
	[[ "$output" == *" --kcore" ]]
	MT_PERF_NO_KCORE=1 pa "$BATS_TEST_TMPDIR/c" --scope=uk
	[[ "$output" != *"--kcore"* ]]
	pa "$BATS_TEST_TMPDIR/c" --scope=u
	[[ "$output" != *"--kcore"* ]]
}

@test "-m pages: whole pages, the next power of two (with the warning), clamped" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --snapshot-size=4M
	echo "$output" | grep -qx -- -m,1024
	[ -z "$stderr" ]
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --snapshot-size=5M
	echo "$output" | grep -qx -- -m,2048
	[ "$stderr" = "mt-perfargs: warning: --snapshot-size=5M rounded up to a power of two of pages, 8M" ]
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --snapshot-size=100B
	echo "$output" | grep -qx -- -m,1
	[ "$stderr" = "mt-perfargs: warning: --snapshot-size=100B rounded up to the minimum, 4K" ]
}

@test "threads: --per-thread -t by default, -p with --multi-thread" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	pa "$BATS_TEST_TMPDIR/c" --multi-thread --pid=1,2
	[[ "$output" == *" --timestamp --event=intel_pt/cyc=1,cyc_thresh=1,mtc_period=0/u -p 1,2 --snapshot=e"* ]]
}

@test "sampling: --overwrite, no snapshots, call graphs; cpu-clock where there is no cycles event" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	pa "$BATS_TEST_TMPDIR/c" --sampling --pid=5
	[ "$output" = "perf record -o DIR/perf.data --timestamp --event=cycles/freq=10000/u --overwrite --per-thread -t 5 --control=fd:3,4 --call-graph lbr --switch-events -k mono" ]
	pa "$BATS_TEST_TMPDIR/c" --sampling --timer-resolution=high --callgraph=fp --full-execution
	[[ "$output" == *"--event=cycles/freq=25000/u --per-thread"*"--call-graph fp --switch-events -k mono" ]]
	caps "$BATS_TEST_TMPDIR/c" 6.1 0 0 0 1 cpu-clock
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --timer-resolution=sample:99
	echo "$output" | grep -qx -- --event=cpu-clock/freq=99/u
	echo "$output" | grep -qx -- dwarf
	[[ "$stderr" == *"mt-perfargs: no Intel PT on this machine: stack sampling instead"* ]]
	[[ "$stderr" == *"mt-perfargs: warning: --callgraph defaults to dwarf, which costs time and space"* ]]
}

# perf record -k: sampled times on CLOCK_MONOTONIC unless asked otherwise
# (perf inject --jit takes a jitdump's times only from a recording with
# -k mono); with Intel PT none, since the kernel gives no TSC conversion
# for another clock (arch_perf_update_userpage: no time_zero with
# use_clockid).
@test "--clock: -k mono when sampling by default, perf's names taken, perf's own clock on asking; refused with Intel PT" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	for clock in boot:boot boottime:boot realtime:realtime raw:raw monotonic_raw:raw monotonic:mono tai:tai; do
		pa "$BATS_TEST_TMPDIR/c" --sampling --clock="${clock%%:*}"
		[[ "$output" == *" --switch-events -k ${clock#*:}" ]]
	done
	pa "$BATS_TEST_TMPDIR/c" --sampling --clock=perf
	[[ "$output" == *" --switch-events" ]]
	# Intel PT: perf's own clock, no -k; another refused with the reason
	pa "$BATS_TEST_TMPDIR/c"
	[[ "$output" != *" -k "* ]]
	pa "$BATS_TEST_TMPDIR/c" --clock=perf
	[[ "$output" != *" -k "* ]]
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --clock=mono
	[ "$status" -eq 2 ]
	[ "$stderr" = "mt-perfargs: --clock=mono is for sampling: Intel PT's times come from the TSC, which the kernel relates only to perf's own clock" ]
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --sampling --clock=utc
	[ "$status" -eq 2 ]
	[[ "$stderr" == "mt-perfargs: bad --clock 'utc'"* ]]
}

@test "impossible combinations are refused with the reason, exit 2" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	run "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --callgraph=fp
	[ "$status" -eq 2 ]
	[[ "$output" == *"mt-perfargs: --callgraph is for sampling"* ]]
	run "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --sampling --timer-resolution=custom:cyc=1
	[ "$status" -eq 2 ]
	[[ "$output" == *"--timer-resolution=custom:... is for Intel PT"* ]]
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1 0
	run "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --sampling --callgraph=lbr
	[ "$status" -eq 2 ]
	[[ "$output" == *"needs last branch record"* ]]
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1 1 0
	run "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" --scope=k
	[ "$status" -eq 2 ]
	[[ "$output" == *"mt-perfargs: tracing the kernel (--scope=k or uk) needs root, CAP_PERFMON or perf_event_paranoid <= 1"* ]]
	printf 'garbage\n' > "$BATS_TEST_TMPDIR/bad"
	run "$PERFARGS" --caps "$BATS_TEST_TMPDIR/bad"
	[ "$status" -eq 1 ]
	# no input at all: said so, with what to run (issue 23: it said
	# "unable to interpret perf version string")
	run --separate-stderr "$PERFARGS" < /dev/null
	[ "$status" -eq 1 ]
	[ "$stderr" = "mt-perfargs: standard input: empty: no mt-caps output (try: mt-caps | mt-perfargs)" ]
	# -o is no option here (it meant --working-directory); -C is
	run "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" -o DIR
	[ "$status" -eq 2 ]
	run "$PERFARGS" --scope=x
	[ "$status" -eq 2 ]
}

@test "real caps of this machine: the sampling fallback on the software clock" {
	"$MT_BIN/mt-caps" | "$PERFARGS" --pid=1 > "$BATS_TEST_TMPDIR/args" 2>/dev/null
	grep -q -- '--event=' "$BATS_TEST_TMPDIR/args"
}

# Issue 22: Intel PT's optional packets and controls, each asked for only
# where the machine can (the kernel's intel_pt/caps files as mt-caps lists
# them, perf's and the kernel's versions); the terms and --filter as perf
# takes them (perf-intel-pt(1): ptw, fup_on_ptw, pwr_evt, event,
# aux-action=start-paused; --filter after its event).
@test "--ptwrite, --power-events, --event-trace, --start-paused: perf's terms where the caps allow, after the resolution's" {
	caps "$BATS_TEST_TMPDIR/c" 6.13 1 1
	printf '%s\n' intel_pt.caps.ptwrite=1 intel_pt.caps.power_event_trace=1 intel_pt.caps.event_trace=1 \
		kernel.release=6.13.2-amd64 >> "$BATS_TEST_TMPDIR/c"
	pa "$BATS_TEST_TMPDIR/c" --ptwrite --pid=7
	[ "$status" -eq 0 ]
	[[ "$output" == *" --event=intel_pt/cyc=1,cyc_thresh=1,mtc_period=0,ptw=1,fup_on_ptw=1/u "* ]]
	pa "$BATS_TEST_TMPDIR/c" --timer-resolution=low --power-events --event-trace --start-paused --pid=7
	[[ "$output" == *" --event=intel_pt/pwr_evt=1,event=1,aux-action=start-paused/u "* ]]
}

@test "--ptwrite and the others: refused with the reason where the CPU, perf or kernel cannot, and with sampling" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	printf '%s\n' intel_pt.caps.ptwrite=0 kernel.release=6.1.0-13-amd64 >> "$BATS_TEST_TMPDIR/c"
	pa "$BATS_TEST_TMPDIR/c" --ptwrite
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--ptwrite: this CPU's Intel PT has no PTWRITE (intel_pt/caps/ptwrite is not 1)"* ]]
	pa "$BATS_TEST_TMPDIR/c" --power-events
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--power-events: this CPU's Intel PT has no power events"* ]]
	pa "$BATS_TEST_TMPDIR/c" --event-trace
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"no Event Trace"* ]]
	pa "$BATS_TEST_TMPDIR/c" --start-paused
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--start-paused: perf 6.1 has no aux-action (6.13 and later)"* ]]
	caps "$BATS_TEST_TMPDIR/k" 6.13 1 1
	echo kernel.release=6.12.1 >> "$BATS_TEST_TMPDIR/k"
	pa "$BATS_TEST_TMPDIR/k" --start-paused
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--start-paused: kernel 6.12.1 cannot pause the AUX area (6.13 and later)"* ]]
	# no Intel PT at all: sampling, where none of them applies
	caps "$BATS_TEST_TMPDIR/n" 6.1 0 0
	pa "$BATS_TEST_TMPDIR/n" --ptwrite
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"are for Intel PT, not sampling (this machine has none)"* ]]
}

@test "--filter: perf's --filter after the event, its ranges counted against the CPU's" {
	caps "$BATS_TEST_TMPDIR/c" 6.1 1 1
	printf '%s\n' intel_pt.caps.ip_filtering=1 intel_pt.caps.num_address_ranges=2 >> "$BATS_TEST_TMPDIR/c"
	run --separate-stderr "$PERFARGS" --caps "$BATS_TEST_TMPDIR/c" -C DIR --filter='filter main @ /bin/app, start 0x1000 @ /bin/app' --pid=7
	[ "$status" -eq 0 ]
	[ "$(sed -n 6p <<< "$output")" = "--event=intel_pt/cyc=1,cyc_thresh=1,mtc_period=0/u" ]
	[ "$(sed -n 7p <<< "$output")" = "--filter" ]
	[ "$(sed -n 8p <<< "$output")" = "filter main @ /bin/app, start 0x1000 @ /bin/app" ]
	pa "$BATS_TEST_TMPDIR/c" --filter='filter a @ /x, filter b @ /x, filter c @ /x'
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--filter: 3 address ranges, and this CPU has 2"* ]]
	for bad in 'main @ /bin/app' 'filter main' 'filter main @ /x,' 'trace main @ /x'; do
		pa "$BATS_TEST_TMPDIR/c" --filter="$bad"
		[ "$status" -eq 2 ]
		[[ "$stderr" == *"expected perf's address filters"* ]]
	done
	caps "$BATS_TEST_TMPDIR/n" 6.1 1 1
	pa "$BATS_TEST_TMPDIR/n" --filter='filter main @ /bin/app'
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"cannot filter by address (intel_pt/caps/ip_filtering is not 1)"* ]]
}

# The same through mt-caps on a fake sysfs tree, and mt-record's dry run.
@test "--ptwrite from a fake sysfs tree's caps/ptwrite through mt-caps, mt-perfargs and mt-record --dry-run" {
	local m=$BATS_TEST_TMPDIR/m
	mkdir -p "$m/sys/bus/event_source/devices/intel_pt/caps"
	echo 8 > "$m/sys/bus/event_source/devices/intel_pt/type"
	for f in psb_cyc ptwrite; do echo 1 > "$m/sys/bus/event_source/devices/intel_pt/caps/$f"; done
	"$MT_BIN/mt-caps" --sysfs-root="$m/sys" --perf=perf > "$BATS_TEST_TMPDIR/caps"
	grep -qx 'intel_pt.caps.ptwrite=1' "$BATS_TEST_TMPDIR/caps"
	pa "$BATS_TEST_TMPDIR/caps" --ptwrite --pid=7
	[ "$status" -eq 0 ]
	[[ "$output" == *",ptw=1,fup_on_ptw=1/u "* ]]
	run --separate-stderr "$MT_BIN/mt-record" --caps "$BATS_TEST_TMPDIR/caps" --dry-run --ptwrite --pid 7
	[ "$status" -eq 0 ]
	[[ "$output" == *"ptw=1,fup_on_ptw=1"* ]]
	echo 0 > "$m/sys/bus/event_source/devices/intel_pt/caps/ptwrite"
	"$MT_BIN/mt-caps" --sysfs-root="$m/sys" --perf=perf > "$BATS_TEST_TMPDIR/caps"
	run --separate-stderr "$MT_BIN/mt-record" --caps "$BATS_TEST_TMPDIR/caps" --dry-run --ptwrite --pid 7
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"no PTWRITE"* ]]
}
