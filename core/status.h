/*
 * status: what a session's `status` and `status.json` say.
 *
 * One document holds it all:
 *
 *   {"ready": true|false,
 *    "problems": [line...],   everything that keeps the session from
 *                             being run: the binding's (binding_problems),
 *                             a gap in the rounds, a pending edge, a
 *                             failed fetch
 *    "notes": [line...],      remarks that are no problem
 *    "run": {...} | null,     the last run's state (run_report)
 *    "fetches": [{...}...],   each URL input's last fetch state
 *    "graph": {...} | null}   the job graph's last run (jobs_report)
 *
 * `status` is that document for people and for scripts that wait: exactly
 * "ready\n" when there is no problem, else the problems, one line each;
 * then one line for a run, a job graph ("graph: running: 3 of 5 done")
 * or a fetch going on, and for a run or a fetch queued
 * (run.h's struct run_queue).  A run's end is history
 * (the session's log has it), so `status` never shows it and a script can
 * wait for "ready".
 *
 * The mtime of both files is the latest change of anything they show:
 * the session's creation, the binding, a run or fetch's state, the job
 * graph, the rounds.
 */
#ifndef FLOWFS_STATUS_H
#define FLOWFS_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "run/datcomrun.h"
#include "session/binding.h"
#include "lib/sbuf.h"
#include "store/store.h"

/*
 * What status says that is not in the database: with --datcom, DATCOM's
 * word on the session's current deck (datcomrun.h), as it stands — a
 * failure is a problem ("output/for006.dat: DATCOM did not end within
 * 30 s ..."), a run going on a line "datcom: running on the deck" —
 * and the document's "datcom": {"state": "running" | "done" | "failed",
 * "message"} (null before DATCOM ran on this deck).  Without it (NULL,
 * or datcom NULL) there is no "datcom" key.  Nothing here runs DATCOM.
 */
struct status_extra {
	struct datcomrun *datcom;
};

/*
 * Builds the document above into *doc (the caller's reference) and sets
 * *mtime_ns.  0, or a negative errno (*doc NULL).
 */
int status_doc(const struct binding_ctx *c, json_t **doc, int64_t *mtime_ns);
int status_doc_with(const struct binding_ctx *c, const struct status_extra *x,
		    json_t **doc, int64_t *mtime_ns);

/* Appends the text of `status` for a document of status_doc(). */
int status_text(const json_t *doc, struct sbuf *out);

/*
 * What status is computed from, as four numbers that change whenever any
 * of it does: the database's version (store_version(): any write, on any
 * connection — the session's own times, its name and its rows are
 * database rows), the open files' gathered writes (tree_changes()) and the
 * skill folders' scans (skill_registry_scans()).  Equal versions, the same
 * status: a cache of it (fs/cache.h) is never stale, at the cost of a
 * render after unrelated writes.  0, or a negative errno.
 */
int status_version(const struct binding_ctx *c, int64_t version[4]);
/* The same with x's part: its runs' generation moves version[3]. */
int status_version_with(const struct binding_ctx *c,
			const struct status_extra *x, int64_t version[4]);

/* Appends `status` (or with as_json `status.json`) of c's session to
 * `out` and sets *mtime_ns. */
int status_render(const struct binding_ctx *c, bool as_json,
		  struct sbuf *out, int64_t *mtime_ns);
int status_render_with(const struct binding_ctx *c,
		       const struct status_extra *x, bool as_json,
		       struct sbuf *out, int64_t *mtime_ns);

#endif
