/*
 * exec: run a scientific workflow's experiment (seed 004) — Python code
 * an engine wrote — and turn what it printed into an observation.
 *
 * exec_python() runs `python3 -I <file>` in `dir` (a scratch copy of the
 * session's uploads/), stdin from /dev/null, in a process group of its
 * own, with limits: CPU seconds, address space, file size, no core
 * files, a wall-clock timeout, and no network where the kernel lets a
 * new network namespace be made (as root; elsewhere it runs with the
 * network it has).  A cancel hook is polled.
 *
 * exec_observation() is the seed's observation: stdout when the program
 * succeeded, else stderr (else "exit status N" / "killed by signal N"),
 * with runs of 3 or more identical lines folded to one line
 * "<line> (repeated N times)" and text over 16,000 characters cut to its
 * first and last 8,000 with a line saying how many were cut.
 */
#ifndef FLOWFS_EXEC_H
#define FLOWFS_EXEC_H

#include <stdbool.h>
#include <stddef.h>

#include "ferr.h"
#include "sbuf.h"

struct exec_limits {
	long cpu_s;		/* RLIMIT_CPU; 0: 60 */
	long wall_s;		/* killed after this; 0: 120 */
	long memory_mib;	/* RLIMIT_AS; 0: 2048 */
	long file_mib;		/* RLIMIT_FSIZE; 0: 256 */
};

struct exec_result {
	int status;		/* as waitpid() gives it */
	bool timed_out;
	struct sbuf out, err;	/* what it printed (each kept to 64 MiB) */
};

void exec_result_release(struct exec_result *r);

/*
 * Run `python3 -I file` in `dir`.  0 and *res (whatever the program's
 * own exit status), -ECANCELED when cancelled(ctx) said so (the process
 * group is killed), or a negative errno when it could not be started
 * (err says why).
 */
int exec_python(const char *dir, const char *file,
		const struct exec_limits *limits, bool (*cancelled)(void *ctx),
		void *ctx, struct exec_result *res, struct ferr *err);

/* The observation for `res` (see above), appended to `out`. */
int exec_observation(const struct exec_result *res, const struct exec_limits *limits,
		     struct sbuf *out);

/* Fold and cut `text` (see above), appended to `out`. */
int exec_fold(const char *text, size_t len, struct sbuf *out);

#endif
