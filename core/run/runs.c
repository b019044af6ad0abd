/* runs: the runs and fetches of a mount, until they end; see runs.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/runs.h"
#include "session/skill.h"

/* Free the runs and fetches that have ended; the run (not fetch) still
 * going on for `session`, or NULL. */
static struct run *reap(struct runs *rs, int64_t session)
{
	struct run *going = NULL;
	size_t kept = 0;

	for (size_t i = 0; i < rs->n; i++) {
		if (run_finished(rs->list[i])) {
			/* its thread has let go of the lock for good */
			run_free(rs->list[i]);
			continue;
		}
		if (run_session(rs->list[i]) == session &&
		    !run_is_fetch(rs->list[i]))
			going = rs->list[i];
		rs->list[kept++] = rs->list[i];
	}
	rs->n = kept;
	return going;
}

/* Room for one more, the ended ones reaped first (so fetches, which no
 * ctl command reaps, do not pile up). */
static int reserve(struct runs *rs)
{
	struct run **grown;

	reap(rs, 0);
	grown = realloc(rs->list, (rs->n + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	rs->list = grown;
	return 0;
}

/* Keep a fetch before its thread starts (run_fetch_start()'s add): a
 * failure here leaves no thread to wait for under the lock. */
static int keep(void *ctx, struct run *r)
{
	struct runs *rs = ctx;
	int ret = reserve(rs);

	if (!ret)
		rs->list[rs->n++] = r;
	return ret;
}

static unsigned going_max(const struct runs *rs)
{
	return rs->going_max ? rs->going_max : RUNS_GOING_DEFAULT;
}

/* Engine runs going on (fetches are bounded on their own), but `not`. */
static unsigned going(const struct runs *rs, const struct run *not)
{
	unsigned n = 0;

	for (size_t i = 0; i < rs->n; i++)
		n += rs->list[i] != not && !run_finished(rs->list[i]) &&
		     !run_is_fetch(rs->list[i]);
	return n;
}

/* Where session `session` waits, or -1. */
static long waiting_at(const struct runs *rs, int64_t session)
{
	for (size_t i = 0; i < rs->nwaiting; i++)
		if (rs->waiting[i] == session)
			return (long)i;
	return -1;
}

static void unwait(struct runs *rs, size_t at)
{
	memmove(rs->waiting + at, rs->waiting + at + 1,
		(rs->nwaiting - at - 1) * sizeof(*rs->waiting));
	rs->nwaiting--;
}

/* Start session `s`'s run now. */
static int start_now(struct runs *rs, const struct session_info *s,
		     struct ferr *err)
{
	struct run *r;
	int ret = reserve(rs);

	if (!ret)
		ret = run_start(rs->host, rs->opt, s, &r, err);
	if (!ret)
		rs->list[rs->n++] = r;
	return ret;
}

int runs_start(struct runs *rs, const struct session_info *s,
	       struct ferr *err)
{
	int64_t *grown;
	char why[128];

	if (reap(rs, s->id))
		return ferr_set(err, -EINVAL, "a run is going on (echo cancel >"
				" ctl stops it)");
	if (waiting_at(rs, s->id) >= 0)
		return ferr_set(err, -EINVAL, "a run is queued (echo cancel >"
				" ctl takes it back)");
	if (going(rs, NULL) < going_max(rs))
		return start_now(rs, s, err);
	grown = realloc(rs->waiting, (rs->nwaiting + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	rs->waiting = grown;
	rs->waiting[rs->nwaiting++] = s->id;
	snprintf(why, sizeof(why), "waiting for one of the %u runs going on"
		 " (--runs)", going_max(rs));
	return run_mark(rs->host, s->id, "queued", why);
}

void runs_next(struct runs *rs, const struct run *ended)
{
	while (rs->nwaiting && going(rs, ended) < going_max(rs)) {
		struct ferr err = FERR_INIT;
		struct session_info s;
		int64_t id = rs->waiting[0];
		int ret;

		unwait(rs, 0);
		/* removed meanwhile: nothing to run, nothing to tell */
		if (session_get(rs->host->st, id, &s) < 0)
			continue;
		ret = start_now(rs, &s, &err);
		if (ret < 0)
			run_mark(rs->host, id, "failed", err.message[0]
				 ? err.message : strerror(-ret));
	}
}

int runs_fetch(struct runs *rs, const struct session_info *s,
	       const json_t *request, struct ferr *err)
{
	const struct skill *sk = s->skill[0] ? skill_find(rs->host->skills,
							  s->skill) : NULL;

	if (!sk || sk->error)
		return 0;
	return run_fetch_start(rs->host, rs->opt, s, sk, request, keep, rs,
			       err);
}

size_t runs_cancel(struct runs *rs, int64_t session)
{
	long at = waiting_at(rs, session);
	size_t cancelled = 0;

	/* a queued run never starts (a removed session's row is gone:
	 * nothing to mark) */
	if (at >= 0) {
		unwait(rs, (size_t)at);
		run_mark(rs->host, session, "cancelled", "");
		cancelled++;
	}
	reap(rs, session);
	for (size_t i = 0; i < rs->n; i++)
		if (run_session(rs->list[i]) == session) {
			run_cancel(rs->list[i]);
			cancelled++;
		}
	return cancelled;
}

void runs_stop(struct runs *rs)
{
	/* under the lock: a queued fetch leaves the queue now, so no fetch
	 * ending below starts it */
	rs->host->lock(rs->host->ctx);
	for (size_t i = 0; i < rs->n; i++)
		run_cancel(rs->list[i]);
	rs->host->unlock(rs->host->ctx);
	for (size_t i = 0; i < rs->n; i++)
		run_free(rs->list[i]);
	free(rs->list);
	rs->list = NULL;
	rs->n = 0;
	/* the queued ones read "failed" after the next mount (run_recover()) */
	free(rs->waiting);
	rs->waiting = NULL;
	rs->nwaiting = 0;
}
