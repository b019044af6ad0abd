/*
 * supervise: a local job (jobs.h) under a supervisor of its own, so that
 * every process the job starts ends with it, whatever it does.
 *
 * A job's process group is not enough: a process that calls setsid(),
 * forks twice or daemonizes leaves it, and a signal to the group missed
 * it (issue 25: one kept running after `echo cancel > ctl`).  So each
 * local job runs under a small supervisor process:
 *
 *  - supervise_start() forks it as no child of the caller (a middle
 *    process forks it and exits), in a session and process group of its
 *    own, and it outlives the caller (an unmount stops no job).  It is
 *    the job's *subreaper* (PR_SET_CHILD_SUBREAPER): a process of the
 *    job whose parent ends is given to the supervisor, not to init, so
 *    every process the job started stays below it.  It forks the job
 *    (`argv`), which stays in its process group, where a cgroup
 *    (sandbox/cgroup.h) is given the job is put in it, and as `cred` when
 *    one is given.
 *  - When the job's first process ends, every process left below the
 *    supervisor (and in the cgroup) gets SIGKILL, as Slurm ends what a
 *    job leaves; when the supervisor gets SIGTERM (a cancel, a time
 *    limit: the caller signals its process group), every one of them gets
 *    SIGTERM, and `grace_ns` later SIGKILL.  It kills again until it has
 *    no process left below it, removes the cgroup and exits with the
 *    job's status (128 + the signal that ended it).  So the supervisor
 *    is gone only when nothing of the job is: the caller watches its pid.
 *
 * The supervisor is a fork of the caller that never execs, so it makes
 * only async-signal-safe calls (no allocation): what it needs is made by
 * the caller and handed over in `struct supervise`.  It finds the
 * processes below it by reading /proc (each one's parent), and those of
 * the cgroup in its cgroup.procs.  Not held: a process of the same user
 * as the supervisor (a daemon that is not root runs jobs as itself) may
 * kill the supervisor, and what it then left is no longer below it; a
 * cgroup holds it all the same.
 */
#ifndef FLOWFS_SUPERVISE_H
#define FLOWFS_SUPERVISE_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/spawn.h"
#include "sandbox/cgroup.h"

struct supervise {
	char *const *argv;	/* argv[0] a path: no $PATH search */
	char *const *envp;
	int dir;		/* the job's working folder (fchdir) */
	/* become the job's 0, 1, 2 and 3; every other descriptor is closed */
	int fds[4];
	const struct spawn_cred *cred;	/* NULL: the caller's */
	const struct cgroup *cg;	/* NULL: none */
	int64_t grace_ns;		/* SIGTERM to SIGKILL */
};

/* Start the supervisor of `sv` (above); *pid is its pid, the job's
 * process group.  0, or a negative errno when it could not start. */
int supervise_start(const struct supervise *sv, pid_t *pid);

#endif
