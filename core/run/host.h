/*
 * host: what the daemon lends the threads of core/run (engine runs,
 * fetches, the job graph's monitor): its lock, the store and tree it
 * guards, the skills, and callbacks for what only the filesystem can do
 * (tell the kernel a name changed, log a line where a person looks).
 * It holds no state of a run.  The FUSE adapter fills one per mount
 * (fs/main.c); the unit tests fill their own.
 */
#ifndef FLOWFS_RUN_HOST_H
#define FLOWFS_RUN_HOST_H

#include <stdbool.h>
#include <stdint.h>

struct store;
struct tree;
struct skill_registry;
struct run;
struct run_queue;	/* run.h */

struct run_host {
	void *ctx;
	void (*lock)(void *ctx);
	void (*unlock)(void *ctx);
	/* A name in a tree folder of session `session` now stands for
	 * another file (a fetch or a run replaced it): the kernel's cached
	 * name must go.  Called with the lock held; must not wait on the
	 * kernel. */
	void (*changed)(void *ctx, int64_t session, uint64_t parent,
			const char *name);
	/* Returns once the kernel has dropped every name changed() reported
	 * so far: a run or fetch calls it, without the lock, before its
	 * status says it is done, so that what it says is what a reader
	 * sees.  NULL: nothing to wait for. */
	void (*settle)(void *ctx);
	/* A line for the session's log: a run or fetch started or ended
	 * ("run", "started"; "uploads/x.csv", "fetch failed: HTTP 404").
	 * Called with the lock held.  NULL: not logged. */
	void (*log)(void *ctx, int64_t session, const char *path,
		    const char *message);
	/* Whether output/<name> is a file flowfs makes itself
	 * (.manifest.json, summary.json, ...): one written there would be
	 * hidden behind it.  NULL: none is. */
	bool (*generated)(void *ctx, const char *name);
	/* An engine run has stored its last state and its thread is about to
	 * end (`r` is still counted as going): the host may start a queued
	 * one (runs.h).  Called with the lock held.  NULL: nothing to do. */
	void (*ended)(void *ctx, const struct run *r);
	struct store *st;
	struct tree *tree;
	struct skill_registry *skills;
	const char *mountpoint;
	/* the fetches waiting for a thread (run.h); the host's, zeroed */
	struct run_queue *fetches;
};

#endif
