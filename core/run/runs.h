/*
 * runs: the engine runs and URL fetches of a mount, kept until they end so
 * that a session's can be cancelled (`echo cancel > ctl`, rmdir, a session
 * moved into the trash) and all of them stopped at unmount.  At most one
 * engine run per session goes on at a time (`echo run > ctl` again is
 * refused until it ends); fetches come and go with request.json (run.h:
 * run_fetch_start()).  Ended ones are freed as new ones start.
 *
 * The host's lock guards a `struct runs` (every call but runs_stop(),
 * which takes it itself).  The owner zero-fills it and sets `host` and
 * `opt`, which must outlive it.
 */
#ifndef FLOWFS_RUNS_H
#define FLOWFS_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/ferr.h"
#include "run/run.h"
#include "session/session.h"

#define RUNS_GOING_DEFAULT 4
#define RUNS_GOING_MAX 64

struct runs {
	const struct run_host *host;
	const struct run_options *opt;
	unsigned going_max;	/* 0: RUNS_GOING_DEFAULT */
	struct run **list;
	size_t n;
	int64_t *waiting;	/* sessions whose runs are queued, first first */
	size_t nwaiting;
};

/* `echo run > ctl`: an engine run of session `s`, now or queued; -EINVAL
 * with err when one goes on or waits already, or the session cannot run
 * (run_start()). */
int runs_start(struct runs *rs, const struct session_info *s,
	       struct ferr *err);

/* The fetches of the URL inputs of `request`, session `s`'s stored
 * request (run_fetch_start()); nothing when no usable skill is bound. */
int runs_fetch(struct runs *rs, const struct session_info *s,
	       const json_t *request, struct ferr *err);

/* Cancel session `session`'s run and fetches (they end on their own, a
 * queued fetch at once); how many there were. */
size_t runs_cancel(struct runs *rs, int64_t session);

/* A run has ended (`ended` is still counted): start queued ones while
 * there is room.  The host's ended hook calls it. */
void runs_next(struct runs *rs, const struct run *ended);

/* At unmount: cancel everything (under the host's lock), then wait for
 * each (without it: a run's thread may need the lock to end). */
void runs_stop(struct runs *rs);

#endif
