/* batchsched: a stage that reads its input from a pipe is a later stage of
 * a pipeline, a batch job by nature; it asks the scheduler to treat it as
 * one (SCHED_BATCH, sched(7): same nice value and CPU share, but it does
 * not preempt a running task when it wakes). In mt's pipeline on two CPUs
 * the three processes then took turns less often: each time data came
 * through a pipe the later stage woke and preempted the decoder, which is
 * the one that sets the pipeline's pace. Measured on this project's VM
 * (chrt -b on mt-symbolize and mt-toperfetto, interleaved runs, 16 MB
 * traces): binary pipeline mean wall 1.04 -> 0.95 s, text 1.46 -> 1.38 s,
 * the deep program's 0.84 -> 0.76 s. Any process may take SCHED_BATCH
 * for itself; threads made afterwards inherit it. */
#ifndef MT_BATCHSCHED_H
#define MT_BATCHSCHED_H

#include <stdbool.h>

/* Switches the calling thread (and the threads it starts later) to
 * SCHED_BATCH if fd is a pipe or FIFO and the thread is under the default
 * policy (SCHED_OTHER: a policy the user chose, chrt's, is kept). Returns
 * whether it switched. Never fails: the default policy is only slower. */
bool mt_batchsched_for_pipe(int fd);

#endif
