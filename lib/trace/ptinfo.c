/* --info: what a perf.data holds, as tab-separated lines. */
#define _GNU_SOURCE
#include "trace/ptperf.h"

#include <inttypes.h>
#include <stdio.h>

#include "trace/sideband.h"

static void print_config(FILE *out, uint64_t c)
{
	static const struct { int bit; const char *name; } bits[] = {
		{0, "pt"}, {1, "cyc"}, {4, "pwr_evt"}, {5, "fup_on_ptw"}, {9, "mtc"},
		{10, "tsc"}, {11, "noretcomp"}, {12, "ptw"}, {13, "branch"}, {31, "event"}, {55, "notnt"},
	};
	fprintf(out, "0x%" PRIx64 " (", c);
	const char *sep = "";
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		if (c & (1ULL << bits[i].bit)) {
			fprintf(out, "%s%s", sep, bits[i].name);
			sep = ",";
		}
	fprintf(out, "%smtc_period=%u,cyc_thresh=%u,psb_period=%u)", sep, (unsigned)((c >> 14) & 15),
		(unsigned)((c >> 19) & 15), (unsigned)((c >> 24) & 15));
}

int mt_ptperf_info(struct mt_perfdata *pd, FILE *out, struct mt_err *err)
{
	struct side s = {0};
	int rc = mt_side_collect(pd, &s, err);
	if (rc)
		goto out;
	fprintf(out, "file\t%s\nmode\t%s\nsize\t%zu\n", pd->name, pd->pipe_mode ? "pipe" : "file",
		pd->expanded ? (size_t)pd->zstd.input_bytes : pd->len);
	if (pd->hostname) fprintf(out, "hostname\t%s\n", pd->hostname);
	if (pd->osrelease) fprintf(out, "os-release\t%s\n", pd->osrelease);
	if (pd->version) fprintf(out, "perf-version\t%s\n", pd->version);
	if (pd->arch) fprintf(out, "arch\t%s\n", pd->arch);
	if (pd->cpudesc) fprintf(out, "cpu-desc\t%s\n", pd->cpudesc);
	if (pd->cpuid) fprintf(out, "cpuid\t%s\n", pd->cpuid);
	if (pd->nrcpus_avail) fprintf(out, "nr-cpus\t%u online, %u available\n", pd->nrcpus_online, pd->nrcpus_avail);
	if (pd->expanded && pd->zstd.parts)
		fprintf(out, "directory\tdata-files=%u\tbytes=%" PRIu64 "\n", pd->zstd.parts, pd->zstd.parts_bytes);
	if (pd->expanded && pd->zstd.batches)
		fprintf(out, "compressed\tzstd\tbatches=%" PRIu64 "\tlost=%" PRIu64 "\tbytes=%" PRIu64 "\trecord-bytes=%" PRIu64
			"\n", pd->zstd.batches, pd->zstd.batches_lost, pd->zstd.bytes_in, pd->zstd.bytes_out);
	fprintf(out, "features\t");
	const char *sep = "";
	for (int b = 0; b < 256; b++)
		if (pd->features[b / 8] & (1u << (b % 8))) {
			fprintf(out, "%s%d", sep, b);
			sep = ",";
		}
	fprintf(out, "\n");
	for (size_t i = 0; i < pd->nattrs; i++) {
		const struct mt_perf_evattr *a = &pd->attrs[i];
		fprintf(out, "event\t%zu\tname=%s\ttype=%u\tsize=%u\tconfig=", i, a->name ? a->name : "?", a->type, a->size);
		if (s.have_info && a->type == s.priv[PRIV_PMU_TYPE])
			print_config(out, a->config);
		else
			fprintf(out, "0x%" PRIx64, a->config);
		fprintf(out, "\tsample_type=0x%" PRIx64 "\tflags=0x%" PRIx64 "\tids=%zu%s", a->sample_type, a->flags,
			a->nids, (a->flags & MT_ATTR_CONTEXT_SWITCH) ? "\tcontext_switch" : "");
		if (a->branch_sample_type) /* perf record -b, -j, --call-graph lbr */
			fprintf(out, "\tbranch_sample_type=0x%" PRIx64, a->branch_sample_type);
		fputc('\n', out);
	}
	if (pd->max_branches) /* HEADER_CPU_PMU_CAPS: the LBR's depth */
		fprintf(out, "pmu-caps\tbranches=%u\n", pd->max_branches);
	for (int t = 0; t < 128; t++)
		if (s.counts[t])
			fprintf(out, "records\t%s\t%" PRIu64 "\n", mt_perf_record_name((uint32_t)t), s.counts[t]);
	if (s.have_info) {
		static const char *const names[PRIV_COUNT] = {
			"pmu_type", "time_shift", "time_mult", "time_zero", "cap_user_time_zero", "tsc_bit",
			"noretcomp_bit", "have_sched_switch", "snapshot_mode", "per_cpu_mmaps", "mtc_bit",
			"mtc_freq_bits", "tsc_ctc_n", "tsc_ctc_d", "cyc_bit", "max_nonturbo_ratio", "filter_str_len",
		};
		fprintf(out, "auxtrace-info\ttype=%u\tfields=%zu%s\n", s.info_type, s.npriv,
			s.have_cap_event_trace ? "+cap_event_trace" : "");
		for (size_t i = 0; i < s.npriv; i++)
			fprintf(out, "auxtrace-info\t%s\t0x%" PRIx64 "\n", names[i], s.priv[i]);
		if (s.filter)
			fprintf(out, "auxtrace-info\tfilter\t%s\n", s.filter);
		fprintf(out, "decode\t%s\n", mt_side_timed(pd, &s) ? "timed" : "timeless");
	}
	for (size_t i = 0; i < s.bufs.n; i++)
		fprintf(out, "buffer\tcpu=%d\ttid=%d\toffset=0x%" PRIx64 "\tbytes=%" PRIu64 "\n", (int32_t)s.bufs.v[i].cpu,
			(int32_t)s.bufs.v[i].tid, s.bufs.v[i].offset, s.bufs.v[i].size);
	if (s.aux_truncated || s.aux_overwrite || s.aux_collision)
		fprintf(out, "aux-flags\ttruncated=%" PRIu64 "\toverwrite=%" PRIu64 "\tcollision=%" PRIu64 "\n",
			s.aux_truncated, s.aux_overwrite, s.aux_collision);
	for (size_t i = 0; i < s.comms.n; i++)
		fprintf(out, "thread\tpid=%u\ttid=%u\tcomm=%s\n", s.comms.v[i].pid, s.comms.v[i].tid, s.comms.v[i].name);
	for (size_t i = 0; i < s.maps.n; i++)
		fprintf(out, "mmap\tpid=%d\tstart=0x%" PRIx64 "\tlen=0x%" PRIx64 "\tpgoff=0x%" PRIx64 "\t%s\n",
			(int32_t)s.maps.v[i].pid, s.maps.v[i].start, s.maps.v[i].len, s.maps.v[i].pgoff, s.maps.v[i].path);
	if (s.have_time)
		fprintf(out, "time-range\t%" PRIu64 "\t%" PRIu64 "\n", s.tmin, s.tmax);
	if (s.walk_damaged)
		fprintf(out, "damage\t%s\n", s.walk_err);
out:
	mt_side_free(&s);
	return rc;
}
