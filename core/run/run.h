/*
 * run: a session's run against an engine (`echo run > X/ctl`), in a
 * thread of its own so that no file operation waits on the network.
 *
 * ---- Starting ----
 * run_start() is called with the host's lock held: it checks that the
 * session can run (an engine is configured, a skill is bound, its
 * required inputs are present, and — except for datcom, whose run exists
 * to fill them — its required parameters), takes a copy of everything
 * the run reads (prompt, SKILL.md, schemas, inputs), records the state
 * "running" and starts the thread.  The thread takes the lock only to
 * store what it got (output files, rounds, the request, the audit log,
 * its state), never across a network call or an experiment.
 *
 * ---- What a run does ----
 * What a run does depends on the skill:
 *  - any skill: the prompt (prompt.txt) with SKILL.md as the system
 *    message; tool calls write_artifact(name, content) write output/<name>
 *    for the names the manifest declares; the last reply goes to
 *    output/response.md.  With an output schema, the JSON in the reply
 *    (engine_extract_json) is validated and output/result.json is
 *    {"status", "data", "artifacts", "validation_warnings", "error"}.
 *  - datcom: the aircraft description (inline input `description`, or
 *    the text of uploads/description) and a set_parameters tool whose
 *    schema is the skill's parameter schema; a call whose parameters do
 *    not pass is answered with the reason, at most 3 times; parameters
 *    that pass become the request's, so output/for005.dat appears.
 *  - scientific-workflow: the rounds of seed 004: an initial prompt
 *    (round 1: phenomenon, hypothesis, model, experiment), continue
 *    prompts carrying the last observation (rounds 2..N-1), a final
 *    prompt (round N: inference, conclusion), N = max_iterations; each
 *    reply's tags become rounds/<n>.json.  Experiments run (sandbox.h) only
 *    when the host allows it; otherwise the run stops before the first.
 *
 * ---- State ----
 * The state shows in status as one line while the run goes on ("run:
 * running: <what now>"), its start and end ("done", "failed: <why>",
 * "cancelled") in the session's log (run_host.log) and in run_report()
 * ever after; the audit log
 * (one JSON line per HTTP call, engine.h) as engine.log.  A run that
 * was going on when the daemon stopped reads "failed" after the next
 * mount (run_recover()).
 */
#ifndef FLOWFS_RUN_H
#define FLOWFS_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "run/engine.h"
#include "run/host.h"
#include "sandbox/sandbox.h"
#include "run/fetch.h"
#include "lib/ferr.h"
#include "lib/sbuf.h"
#include "session/session.h"
#include "session/skill.h"
#include "store/store.h"
#include "store/tree.h"

/*
 * The fetches of all sessions: at most run_options.fetch_jobs of them
 * go on at once, each in a thread of its own, and at most half of them
 * (rounded up) for one session, so that one request.json of slow URLs
 * cannot hold every slot; the others wait here with the state "queued"
 * (status: "fetch uploads/<name>: queued").  A fetch that ends starts the
 * next: the first queued of the session with the fewest going.  The
 * host's lock guards it.
 */
#define RUN_FETCH_JOBS_MAX 64

struct run_queue {
	struct run *first, *last;
	unsigned going;		/* fetch threads started and not ended */
	/* how many of those each session has (going > 0 rows only) */
	struct run_queue_share {
		int64_t session;
		unsigned going;
	} share[RUN_FETCH_JOBS_MAX];
};

struct run_options {
	struct engine_config engine;	/* engine.url NULL: none configured */
	bool allow_exec;
	const char *scratch;	/* with allow_exec: sandbox_scratch_open()'s folder */
	struct sandbox_limits limits;
	struct fetch_limits fetch;
	unsigned fetch_jobs;	/* fetches going on at once; 0: 4 */
};

struct run;

/*
 * Start a run of session `s` (the host's lock held).  0 and *out, or
 * -EINVAL with err saying why it cannot run, -EBUSY when... never: the
 * caller keeps one run per session.  `host` and `opt` must outlive the
 * run.
 */
int run_start(const struct run_host *host, const struct run_options *opt,
	      const struct session_info *s, struct run **out,
	      struct ferr *err);

/*
 * Start downloading the URL inputs of `request` (just stored as the
 * session's request.json; the lock held): a fetch per file input given
 * as an http(s) URL, unless that URL is being fetched (or queued) or was
 * fetched into a file that is still there.  Each fetch is a run
 * (run_is_fetch()) handed to add(ctx, r) before its thread starts (a
 * failing add starts nothing), at once when fewer than
 * opt->fetch_jobs fetches go on, else queued (struct run_queue).  It
 * writes uploads/<name> (inputs_urls()) under a scratch
 * name and renames it when the download is complete, so a failed fetch
 * leaves nothing half-written.  A URL the request no longer names (the
 * key now names another, or none) is forgotten: its fetch, if still
 * going on, stops and stores nothing.  status shows a line per URL
 * input: "fetch uploads/<name>: queued", "... fetching: 3.0 of 40.0
 * MiB", "... done: 40.0 MiB", "... failed: HTTP 404", "... cancelled".
 * A run does not start while a fetch of its session is queued or going
 * on.
 */
int run_fetch_start(const struct run_host *host, const struct run_options *opt,
		    const struct session_info *s, const struct skill *sk,
		    const json_t *request,
		    int (*add)(void *ctx, struct run *r), void *ctx,
		    struct ferr *err);
bool run_is_fetch(const struct run *r);


/* Ask the run to stop (the host's lock held; returns at once).  A
 * queued fetch leaves the queue at once, cancelled: it never starts. */
void run_cancel(struct run *r);

/* Whether the thread has ended (then run_free() does not wait). */
bool run_finished(const struct run *r);

int64_t run_session(const struct run *r);

/* Wait for the thread and free the run (without the host's lock: the
 * thread may need it to finish). */
void run_free(struct run *r);

/*
 * What status says of a session's run and fetches, as status.json has
 * it: *run = {"state", "message", "time"} of its last run (JSON null when
 * it never ran), *fetches = [{"path", "state", "message", "time"}], one
 * per URL input ("uploads/<name>"), "time" being when the state or its
 * message last changed ("2026-11-21T08:45:59Z": a running run's step, a
 * fetch's progress).  *mtime_ns: the latest of those (0: none).
 */
int run_report(struct store *st, int64_t session, json_t **run,
	       json_t **fetches, int64_t *mtime_ns);

/* engine.log: the audit lines of the session's runs, oldest first. */
int run_render_log(struct store *st, int64_t session, struct sbuf *out,
		   int64_t *mtime_ns);

/* A run's state (the lock held) that no thread of it stores: "queued"
 * while it waits for a free place (runs.h), "failed" or "cancelled"
 * before it started; logged as "<state>: <message>". */
int run_mark(const struct run_host *host, int64_t session,
	     const char *state, const char *message);

/* At mount: runs that were going on, or queued, when the daemon stopped
 * failed. */
int run_recover(struct store *st);

/* Seed 004's tags in a reply: the text inside <Tag>...</Tag> (trimmed),
 * for each of rounds_tags that is there, as a round object. */
json_t *run_parse_tags(const char *reply);

#endif
