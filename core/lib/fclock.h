/*
 * fclock: the clocks flowfs reads.  Wall time for what is stored and shown
 * (mtimes, log lines, a job's start); monotonic time for every deadline and
 * interval, so that a jump of the wall clock neither stretches nor cuts a
 * wait.  Nothing of flowfs here.
 */
#ifndef FLOWFS_FCLOCK_H
#define FLOWFS_FCLOCK_H

#include <stdint.h>
#include <time.h>

/* Now as nanoseconds since the epoch (CLOCK_REALTIME). */
int64_t fclock_now_ns(void);

/* CLOCK_MONOTONIC in milliseconds, for deadlines and intervals. */
int64_t fclock_mono_ms(void);

/* CLOCK_MONOTONIC `ms` from now: the deadline of a pthread_cond_timedwait()
 * on a condition set to that clock. */
struct timespec fclock_mono_after(int64_t ms);

#endif
