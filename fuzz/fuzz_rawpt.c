/* fuzz_rawpt: raw Intel PT bytes (mt-pt2events --pt) decoded against a
 * fixed code image: the libxdc "foo" pages when MT_FUZZ_PAGES names them
 * (the make target does), else no code (packets are still parsed). */
#include "fuzz.h"

#include <stdlib.h>

#include "events.h"
#include "image.h"
#include "ptdecode.h"

static void sink(void *ctx, const struct mt_event *ev)
{
	mt_events_write(ctx, ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_image img;
	struct mt_err err = {0};
	if (mt_image_init(&img, "fuzz", &err))
		return 0;
	const char *pages = getenv("MT_FUZZ_PAGES");
	if (pages)
		mt_image_add_pageset(&img, pages, &err);
	struct mt_events_writer w;
	if (!mt_events_writer_init(&w, fuzz_devnull())) {
		struct mt_ptdec_config cfg = {.all_branches = true, .want_power = true};
		struct mt_ptdec_stream s = {.data = data, .len = size, .cpu = -1, .sink = sink, .sink_ctx = &w};
		struct mt_ptdec_stats st = {0};
		err = (struct mt_err){0};
		mt_ptdec_decode(&s, &img, &cfg, &st, &err);
		struct mt_err we = {0};
		mt_events_writer_finish(&w, &we);
	}
	mt_image_fini(&img);
	return 0;
}
