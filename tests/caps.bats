#!/usr/bin/env bats
# mt-caps on fake sysfs/procfs trees and fake perf binaries. Oracle: the
# capability table of shared/docs/magic-trace-behaviour.md section 2 (its
# thresholds: psb_cyc reads exactly "1\n"; pdcm on every flags line; kcore
# perf >= 5.5, snapshot_on_exit >= 5.4, ctlfd >= 5.10, dlfilter >= 5.14).

load helpers

CAPS=$MT_BIN/mt-caps

# make_machine DIR KIND: skylake | broadwell | nopt | vm
make_machine() {
	local d=$1
	mkdir -p "$d/sys/bus/event_source/devices/software" "$d/proc/sys/kernel" "$d/proc/self"
	echo 5.15.0-test > "$d/proc/sys/kernel/osrelease"
	echo 2 > "$d/proc/sys/kernel/perf_event_paranoid"
	echo 516 > "$d/proc/sys/kernel/perf_event_mlock_kb"
	echo 1 > "$d/proc/sys/kernel/kptr_restrict"
	printf 'Name:\tx\nCapEff:\t0000000000000000\n' > "$d/proc/self/status"
	local flags="fpu vme pdcm sse"
	case $2 in
	skylake|broadwell)
		local pt=$d/sys/bus/event_source/devices/intel_pt
		mkdir -p "$pt/caps" "$d/sys/bus/event_source/devices/cpu/events"
		echo 8 > "$pt/type"
		printf '%s\n' "$([ "$2" = skylake ] && echo 1 || echo 0)" > "$pt/caps/psb_cyc"
		echo 1 > "$pt/caps/mtc"
		echo 1 > "$pt/caps/ip_filtering"
		echo 2 > "$pt/caps/num_address_ranges"
		echo 'event=0x3c' > "$d/sys/bus/event_source/devices/cpu/events/cpu-cycles"
		echo 'event=0xc4' > "$d/sys/bus/event_source/devices/cpu/events/branch-instructions"
		;;
	vm) flags="fpu vme sse hypervisor" ;;
	esac
	printf 'processor\t: 0\nflags\t\t: %s\n\nprocessor\t: 1\nflags\t\t: %s\n' "$flags" "$flags" > "$d/proc/cpuinfo"
}

fake_perf() { # DIR VERSION [EXIT]
	printf '#!/bin/sh\necho "perf version %s"\nexit %s\n' "$2" "${3:-0}" > "$1/perf"
	chmod +x "$1/perf"
}

caps() { # DIR [args]
	run "$CAPS" --sysfs-root="$1/sys" --procfs-root="$1/proc" --perf="$1/perf" "${@:2}"
	[ "$status" -eq 0 ]
}

has() { echo "$output" | grep -qx "$1"; }

@test "Skylake-like: intel_pt with its type and every caps file; psb_cyc gives configurable_psb_period" {
	make_machine "$BATS_TEST_TMPDIR/m" skylake
	fake_perf "$BATS_TEST_TMPDIR/m" 6.1.0
	caps "$BATS_TEST_TMPDIR/m"
	has intel_pt=1; has intel_pt.type=8; has intel_pt.caps.psb_cyc=1; has intel_pt.caps.mtc=1
	has intel_pt.caps.num_address_ranges=2; has configurable_psb_period=1; has mode=intel_pt
	has last_branch_record=1; has hypervisor=0; has sampling.event=cycles
	has events.hardware=branch-instructions,cpu-cycles
	has kernel.release=5.15.0-test; has perf_event_paranoid=2; has perf_event_mlock_kb=516; has kptr_restrict=1
	has cap_perfmon=0; has cap_sys_admin=0
	has perf.version=6.1.0; has kcore=1; has snapshot_on_exit=1; has ctlfd=1; has dlfilter=1
	# another machine's tree: no self-test of its debug registers
	has trigger.hw_breakpoint=unknown; has trigger.uprobe=0
}

@test "Broadwell: psb_cyc 0 -> no configurable PSB period; psb_cyc without its newline is not \"1\\n\" either" {
	make_machine "$BATS_TEST_TMPDIR/m" broadwell
	fake_perf "$BATS_TEST_TMPDIR/m" 6.1.0
	caps "$BATS_TEST_TMPDIR/m"
	has configurable_psb_period=0
	printf 1 > "$BATS_TEST_TMPDIR/m/sys/bus/event_source/devices/intel_pt/caps/psb_cyc"
	caps "$BATS_TEST_TMPDIR/m"
	has configurable_psb_period=0
}

@test "no intel_pt: sampling mode; no hardware events: the software clock" {
	make_machine "$BATS_TEST_TMPDIR/m" nopt
	fake_perf "$BATS_TEST_TMPDIR/m" 6.1.0
	caps "$BATS_TEST_TMPDIR/m"
	has intel_pt=0; has mode=sampling; has sampling.event=cpu-clock; has events.software=cpu-clock,task-clock
	! echo "$output" | grep -q '^intel_pt.type=' || false
}

@test "VM: hypervisor flag; pdcm missing on a flags line -> no LBR" {
	make_machine "$BATS_TEST_TMPDIR/m" vm
	fake_perf "$BATS_TEST_TMPDIR/m" 6.1.0
	caps "$BATS_TEST_TMPDIR/m"
	has hypervisor=1; has last_branch_record=0
	printf 'flags\t\t: pdcm\n\nflags\t\t: fpu\n' > "$BATS_TEST_TMPDIR/m/proc/cpuinfo"
	caps "$BATS_TEST_TMPDIR/m"
	has last_branch_record=0
}

@test "perf version thresholds: snapshot_on_exit 5.4, kcore 5.5, ctlfd 5.10, dlfilter 5.14" {
	make_machine "$BATS_TEST_TMPDIR/m" skylake
	for v in "5.3 0 0 0 0" "5.4 1 0 0 0" "5.5 1 1 0 0" "5.9 1 1 0 0" "5.10 1 1 1 0" "5.13 1 1 1 0" "5.14 1 1 1 1" "6.0 1 1 1 1"; do
		set -- $v
		fake_perf "$BATS_TEST_TMPDIR/m" "$1.0"
		caps "$BATS_TEST_TMPDIR/m"
		has "snapshot_on_exit=$2"; has "kcore=$3"; has "ctlfd=$4"; has "dlfilter=$5"
	done
}

@test "perf that fails or is missing: nothing derived from it; MT_PERF_NO_KCORE turns kcore off" {
	make_machine "$BATS_TEST_TMPDIR/m" skylake
	fake_perf "$BATS_TEST_TMPDIR/m" 6.1.0 1
	caps "$BATS_TEST_TMPDIR/m"
	has perf.usable=0; has kcore=0; has snapshot_on_exit=0
	run "$CAPS" --sysfs-root="$BATS_TEST_TMPDIR/m/sys" --procfs-root="$BATS_TEST_TMPDIR/m/proc" --perf=/nonexistent
	[ "$status" -eq 0 ]
	echo "$output" | grep -qx perf.usable=0
	fake_perf "$BATS_TEST_TMPDIR/m" 6.1.0
	MT_PERF_NO_KCORE=1 caps "$BATS_TEST_TMPDIR/m"
	has kcore=0
	MAGIC_TRACE_PERF_PATH="$BATS_TEST_TMPDIR/m/perf" run "$CAPS" --sysfs-root="$BATS_TEST_TMPDIR/m/sys"
	echo "$output" | grep -qx "perf.path=$BATS_TEST_TMPDIR/m/perf"
}

@test "CAP_PERFMON in the effective set is reported; --json is one object a JSON parser reads" {
	make_machine "$BATS_TEST_TMPDIR/m" nopt
	fake_perf "$BATS_TEST_TMPDIR/m" 6.1.0
	printf 'CapEff:\t0000004000000000\n' > "$BATS_TEST_TMPDIR/m/proc/self/status"
	caps "$BATS_TEST_TMPDIR/m"
	has cap_perfmon=1; has cap_sys_admin=0
	caps "$BATS_TEST_TMPDIR/m" --json
	echo "$output" | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["cap_perfmon"] == "1" and d["mode"] == "sampling"'
}

@test "this machine, for real: AMD VM without intel_pt, perf found" {
	run "$CAPS"
	[ "$status" -eq 0 ]
	echo "$output" | grep -qx "perf.usable=1"
	[ "$(echo "$output" | sed -n 's/^intel_pt=//p')" = "$([ -e /sys/bus/event_source/devices/intel_pt ] && echo 1 || echo 0)" ]
	[ "$(echo "$output" | sed -n 's/^trigger.uprobe=//p')" = "$([ -e /sys/bus/event_source/devices/uprobe ] && echo 1 || echo 0)" ]
	echo "$output" | grep -qx "trigger.hw_breakpoint=[01]" # tested on the live machine
	run "$CAPS" --bogus
	[ "$status" -eq 2 ]
}
