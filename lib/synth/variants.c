/* variants: the kinds of perf.data mt-synth writes from one run. */
#include "synth/synth.h"

#include <string.h>

const struct mt_synth_variant mt_synth_variants[] = {
	{.name = "plain"},
	{.name = "long-tnt", .long_tnt = true},
	{.name = "noretcomp", .noretcomp = true},
	{.name = "tsc", .timing = MT_SYNTH_TSC},
	{.name = "mtc", .timing = MT_SYNTH_MTC, .long_tnt = true},
	{.name = "psb", .timing = MT_SYNTH_TSC, .psb_every = 3000},
	{.name = "psb-timeless", .psb_every = 1000}, /* repeatable: long traces to cut at PSBs */
	{.name = "wrap", .psb_every = 1000, .wrap_at_psb = 2},
	{.name = "pipe", .pipe = true},
	{.name = "per-cpu", .timing = MT_SYNTH_TSC, .per_cpu = true},
	{.name = "buildid", .build_ids = true},
	{.name = "cyc", .timing = MT_SYNTH_MTC, .cyc = true},
	{.name = "cyc-turbo", .timing = MT_SYNTH_MTC, .cyc = true, .turbo = true},
	{.name = "per-cpu-mtc", .timing = MT_SYNTH_MTC, .per_cpu = true, .psb_every = 5000},
	{.name = "snapshot", .psb_every = 1000, .snapshot = true},
	{.name = "snapshot-gap", .psb_every = 1000, .snapshot = true, .gap = true},
	{.name = "kernel", .kernel = true},
	{.name = "kcore", .kernel = true, .kcore = true, .noretcomp = true},
	/* PTWRITE (any variant has a program's PTW packets, with the payload
	 * alone: a decoder's walk finds the instruction): each with a FUP,
	 * perf's fup_on_ptw */
	{.name = "ptw-fup", .ptw_fup = true},
	{.name = "power", .power = true},
	/* sampling, not PT: perf record -e cycles --call-graph lbr */
	{.name = "lbr", .lbr = true},
	/* sampling, not PT: perf record -b -j any,u,save_type -e r20c4 -c 32 */
	{.name = "brstack", .lbr = true, .brstack = true},
	/* the same recorded as perf record -b -j any,u: no types saved */
	{.name = "brstack-notype", .lbr = true, .brstack = true, .brstack_notype = true},
	{.name = NULL},
};

const struct mt_synth_variant *mt_synth_variant_find(const char *name)
{
	for (const struct mt_synth_variant *v = mt_synth_variants; v->name; v++)
		if (!strcmp(v->name, name))
			return v;
	return NULL;
}
