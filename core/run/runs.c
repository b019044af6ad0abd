/* runs: the runs and fetches of a mount, until they end; see runs.h. */
#include <errno.h>
#include <stdlib.h>

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

int runs_start(struct runs *rs, const struct session_info *s,
	       struct ferr *err)
{
	struct run *r;
	int ret;

	if (reap(rs, s->id))
		return ferr_set(err, -EINVAL, "a run is going on (echo cancel >"
				" ctl stops it)");
	ret = reserve(rs);
	if (!ret)
		ret = run_start(rs->host, rs->opt, s, &r, err);
	if (!ret)
		rs->list[rs->n++] = r;
	return ret;
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
	size_t cancelled = 0;

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
}
