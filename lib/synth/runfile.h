/* runfile: a recorded run (struct mt_synth_run) saved to a file and read
 * back, so that one single-stepped run of a program (seconds of ptrace)
 * gives any number of traces later: mt-synth --save-run and --from-run.
 *
 * The file: "MTSYNRUN", a version, then the run's fields in the host's
 * byte order (mt-synth is x86-64 only), each array after its count, and
 * "END." last. Reading trusts nothing: every count is held against the
 * bytes left, and the run read must be one recording could give (every
 * step an instruction of an executable mapping, each thread's steps a
 * possible flow, its threads, PTWRITEs in order), or the read fails. */
#ifndef MT_SYNTH_RUNFILE_H
#define MT_SYNTH_RUNFILE_H

#include <stdio.h>

#include "base/mt_err.h"
#include "synth/synth.h"

#define MT_SYNTH_RUNFILE_VERSION 1

int mt_synth_run_save(const struct mt_synth_run *run, FILE *f, struct mt_err *err);

/* Reads the whole file f (size bytes) into run (freed with
 * mt_synth_run_free, on failure too). MT_EFORMAT, MT_ETRUNC, MT_EIO or
 * MT_ENOMEM with err set. */
int mt_synth_run_load(FILE *f, uint64_t size, struct mt_synth_run *run, struct mt_err *err);

#endif
