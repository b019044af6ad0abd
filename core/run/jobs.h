/*
 * jobs: a session's job graph runs (`echo submit > SESSION/ctl`, issue
 * 16), on this machine or on a Slurm cluster.
 *
 * ---- Submitting ----
 * jobs_submit() (with the host's lock held) makes the plan (jobspec.h)
 * of the graph, refusing it with jobspec's reason, and stores the run:
 * one row per job in state "queued", its batch script, folder, upstream
 * jobs and outputs.  Nothing is started there: one thread per mount (the
 * monitor, jobs_start()) does every fork, sbatch, squeue and scancel
 * without the lock, and takes the lock only to read and store states.
 *
 * ---- Who and where ----
 * Who a job runs as: the daemon's user; on a root daemon, the session's
 * owner, with the groups of their passwd entry (their gid alone when
 * they have none) and no capability, as cron runs a user's table --
 * root only when root owns the session.  Such a job gets only PATH,
 * LANG, LC_*, TZ and SLURM_* of the daemon's environment, and its user's
 * HOME, USER, LOGNAME and SHELL; the daemon's own job gets its whole
 * environment without FLOWFS_* variables.
 *
 * Where: the folders of a user's jobs lie in a folder of theirs
 * (jobdir.h): the work folder when it is theirs alone, else
 * <work>/<user> (0700) -- or, on a root daemon started without
 * --work-dir, <their home>/.local/state/flowfs/jobs -- made and checked
 * at submit (a submit is refused, -EACCES, when it is another's, a link,
 * or can be written by others); below it <session>-<id>/run-<k>/<node>/,
 * each level made and opened beneath a descriptor, never through a link,
 * and checked at the job's start.  The job's script, stdout and stderr
 * are new files made in that folder through its descriptor.
 *
 * ---- Executors ----
 * Executors (the run keeps the one it started with):
 *  - local: a job starts once every job it needs is done and fewer than
 *    `slots` local jobs run (all sessions together).  It runs under a
 *    supervisor of its own (supervise.h: not a child of the daemon, so
 *    it outlives an unmount; the job's subreaper; in a cgroup of its own
 *    where `cgroups` has one): `/bin/bash` reading the script through a
 *    descriptor, in the job's folder (by descriptor too), stdin
 *    /dev/null, stdout and stderr into its folder.  It is known by the
 *    supervisor's pid (the job's process group) and the pid's start time
 *    (/proc), so a remount finds it again and a reused pid is not taken
 *    for it.  With time_minutes it is stopped (SIGTERM to every process
 *    of it, SIGKILL 5 s later) when that time is up.
 *  - slurm: every job is submitted at once in plan order with `sbatch
 *    --parsable` (run as the job's user) and `--dependency=afterok:<ids
 *    of the jobs it needs>`; `squeue -h -u <uids> -o "%i %T"` each poll
 *    says which are pending or running; one that left the queue ended,
 *    and its exit file (jobspec.h) says how.  An sbatch that fails fails
 *    its job with sbatch's own message.
 *
 * ---- Endings ----
 * A job ends "done" (exit 0) or "failed" (the exit code; or why it has
 * none: "ended without an exit status"), and a failed job's descendants
 * are "skipped" (their Slurm jobs cancelled).  A local job ends when its
 * supervisor does, that is once every process it started is gone (what
 * it left running is killed when its first process ends, as Slurm ends
 * a job's processes).  jobs_cancel() stops every job of the session:
 * Slurm jobs are given to `scancel` and queued jobs are "cancelled" at
 * once; a local job that runs stays "running" with the message
 * "stopping: cancelled" while its supervisor stops every process of it
 * (SIGTERM, SIGKILL 5 s later), and is "cancelled" once it is gone.
 *
 * ---- What a user sees ----
 * What a user sees, written into the session's jobs/<node id>/ folder
 * as plain files at each change (host->changed() told): `script` (the
 * batch script), `state` (below), and when the job ends `stdout`,
 * `stderr` (each the last JOBS_LOG_MAX bytes, with a first line saying
 * how much was cut) and its declared outputs that are regular files of
 * at most JOBS_OUTPUT_MAX bytes, each under the base name of its file
 * ("output-<name>" when flowfs's files or an earlier output took it,
 * then "<output parameter>-<name>"; opened beneath the job folder
 * without following a symlink, and only when the job's user owns it
 * and it has no other name -- a hard link could be to anyone's file;
 * anything else is named in `state` as not brought, with why).  `state`
 * is the state word on its first line, then "key value" lines:
 * scheduler_id, exit_code, queued, started, ended (UTC, ISO 8601),
 * message, not_brought.
 *
 * ---- Busy nodes, status, log ----
 * jobs_node_busy() says whether a node's job is queued, submitted or
 * running (its node may not change then); jobs_report() what status
 * says of the run (status.h: "graph: running: 3 of 5 done" while it
 * goes on).  Every transition goes to the session's log
 * (host->log).
 */
#ifndef FLOWFS_JOBS_H
#define FLOWFS_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/ferr.h"
#include "graph/tools.h"
#include "run/host.h"
#include "lib/sbuf.h"
#include "sandbox/cgroup.h"
#include "session/session.h"
#include "store/store.h"

#define JOBS_LOG_MAX (4 << 20)
#define JOBS_OUTPUT_MAX (64 << 20)

enum jobs_executor { JOBS_LOCAL, JOBS_SLURM };

struct jobs_options {
	enum jobs_executor executor;	/* for new runs */
	const char *work_dir;		/* absolute; run folders go here */
	/* --work-dir was given: a root daemon runs another user's jobs
	 * there too (in a folder of theirs), not in their home */
	bool work_dir_given;
	/* where each local job gets a cgroup; NULL or none found: the
	 * supervisor alone holds its processes (supervise.h) */
	const struct cgroup_base *cgroups;
	unsigned slots;			/* local jobs at once; 0: CPUs */
	const char *const *container;	/* jobspec_options.container */
	const char *tools_path;		/* named in messages */
	unsigned poll_ms;		/* 0: 200 (local), 1000 (slurm) */
};

struct jobs;

/* Start the monitor: it takes up the runs the database says go on (a
 * remount re-attaches).  0, or a negative errno with err. */
int jobs_start(struct jobs **out, struct run_host *host,
	       const struct jobs_options *opt, struct ferr *err);
/* Stop the monitor; the jobs go on (the next mount takes them up). */
void jobs_stop(struct jobs *jobs);

/* Lock held.  The session's graph checked whole and planned
 * (graph/plan.h) under the tool map `tools` (`tools_error`: why it
 * cannot be used, NULL or "" when it can), then run.  -EBUSY (err) while
 * the session's run goes on; -EINVAL or -E2BIG with the plan's reason
 * ("the graph has no nodes" too); -EACCES when the folder of the jobs'
 * user is not theirs alone ("no folder for the jobs: /scratch/alice
 * belongs to uid 1002, not to alice (uid 1001), ..."). */
int jobs_submit(struct jobs *jobs, const struct session_info *s,
		const struct graph_tools *tools, const char *tools_error,
		struct ferr *err);

/* Lock held.  1 when something was stopped, 0 when nothing went on. */
int jobs_cancel(struct jobs *jobs, int64_t session);
/* Lock held.  -EBUSY with err when node `id`'s job has not ended (id
 * NULL: any job of the session). */
int jobs_node_busy(struct store *st, int64_t session, const char *id,
		   struct ferr *err);
/* The session's last graph run for status.json: {"state" (running,
 * done, failed, cancelled), "executor", "jobs", "done", "failed",
 * "skipped", "cancelled", "running", "started", "ended" (UTC, ISO 8601;
 * null while it runs)}, NULL when it never ran; *when its last change. */
int jobs_report(struct store *st, int64_t session, json_t **report,
		int64_t *when);

/*
 * The line status shows for the session's last graph run while it is
 * current state — it failed or was cancelled, and the graph has not
 * changed since it was submitted (graph_mtime_ns: the graph's last
 * change) — appended to `out`: "graph: failed: 1 of 2 jobs failed
 * (count: exited with 2)" (the first job that failed, and why),
 * "graph: cancelled: 2 of 5 done".  Nothing for a run that went well,
 * goes on, or is history.  0, or a negative errno.
 */
int jobs_problem(struct store *st, int64_t session, int64_t graph_mtime_ns,
		 struct sbuf *out);

#endif
