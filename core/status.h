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
 * or a fetch going on, and for a fetch queued
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

#include "session/binding.h"
#include "lib/lru.h"
#include "lib/sbuf.h"
#include "store/store.h"

/*
 * Builds the document above into *doc (the caller's reference) and sets
 * *mtime_ns.  0, or a negative errno (*doc NULL).
 */
int status_doc(const struct binding_ctx *c, json_t **doc, int64_t *mtime_ns);

/* Appends the text of `status` for a document of status_doc(). */
int status_text(const json_t *doc, struct sbuf *out);

/*
 * The rendered `status` and `status.json` of the sessions last read, so
 * that a stat and a read (file managers stat often) render once per
 * state.  Everything status_doc() reads is in the database, the open
 * files' gathered writes, the skill registry or the session's path, so
 * an entry is keyed by store_version(), tree_changes(),
 * skill_registry_scans(), the session (its id, path and times): any
 * write anywhere renders again — never stale, at the cost of a render
 * after unrelated writes.  One slot a session (a new state replaces
 * its last), STATUS_CACHE_SLOTS sessions, the least recently used out;
 * status_cache_forget() drops a removed session's.  The owner zero-fills it, serializes its users and
 * calls status_cache_release() at the end.
 */
#define STATUS_CACHE_SLOTS 8

struct status_key {
	int64_t session;
	struct store_version version;
	uint64_t tree_changes;
	unsigned long skill_scans;
	int64_t created_ns, doc_mtime_ns, request_mtime_ns;
	int64_t graph_mtime_ns, rounds_mtime_ns;
};

struct status_cache {
	struct status_cached {
		struct lru_age age;
		struct status_key key;
		char *session_path;
		int64_t mtime_ns;
		struct sbuf text, json;
	} slot[STATUS_CACHE_SLOTS];
	uint64_t clock;
	uint64_t hits, misses;	/* for tests and benches */
};

void status_cache_release(struct status_cache *sc);

/* Drop what is kept of session `session` (it was removed). */
void status_cache_forget(struct status_cache *sc, int64_t session);

/*
 * Appends `status` (or with as_json `status.json`) of c's session to
 * `out` and sets *mtime_ns: from `sc` when nothing it depends on
 * changed, else rendered and kept there (sc NULL: always rendered).
 */
int status_render(const struct binding_ctx *c, struct status_cache *sc,
		  bool as_json, struct sbuf *out, int64_t *mtime_ns);

#endif
