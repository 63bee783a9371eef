/* loop: the part of a run a large trace repeats. A program's run from
 * _start never returns (it ends in exit), so copies of it pile up as a
 * staircase of _starts; one call of main, from the call to its return, is
 * what a long run of a real program looks like repeated: its work in a
 * loop. Internal to synth/. */
#ifndef MT_SYNTH_LOOP_H
#define MT_SYNTH_LOOP_H

#include <stdbool.h>
#include <stddef.h>

#include "synth/synth.h"

/* The run's call of main: the index of the call instruction into *from, of
 * main's return into *to. False when the program has no main symbol (a
 * -nostdlib program), main is never called, or it never returns. */
bool mt_synth_main_call(const struct mt_synth_run *run, size_t *from, size_t *to);

#endif
