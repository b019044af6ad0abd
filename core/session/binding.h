/*
 * binding: what a session shows because of the skill bound to it —
 * input.json, parameter.json, prompt.txt, output/.manifest.json and the
 * problems at the top of status.  It gathers the session's state (the
 * bound skill, the stored request, the names in uploads/) and hands it
 * to the input protocol (inputs.h); everything is computed on each call,
 * so what is shown is never stale — but for what a binding_cache (below)
 * keeps, which is keyed by everything it is computed from.
 *
 * `session_path` is the session folder's absolute path as programs see
 * it (<mountpoint>/<session>): input.json holds paths below it.
 *
 * A session with no skill bound shows "{}" for input.json and
 * parameter.json, no prompt.txt and no manifest, and no problems.
 */
#ifndef FLOWFS_BINDING_H
#define FLOWFS_BINDING_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/ferr.h"
#include "session/inputs.h"
#include "lib/lru.h"
#include "lib/sbuf.h"
#include "session/session.h"
#include "session/skill.h"
#include "store/store.h"
#include "store/tree.h"

struct deck;

/*
 * What imported uploads gave (a DATCOM deck's parameters, the rest of
 * it, its remarks and problems), kept between calls: parsing the deck is
 * the costliest part of resolving a session, and status, status.json,
 * input.json, parameter.json, prompt.txt and for005.dat all resolve it,
 * on every read and stat.  A slot is keyed by the session, the import
 * and the upload's inode, size, mtime and ctime (every write of the file
 * moves its mtime, a rename over it its inode), so a hit is what a parse
 * would give.  BINDING_CACHE_SLOTS slots, the least recently used out, at
 * most DECK_MAX_SIZE of text parsed each; the problems of status built on
 * them likewise (below).  The owner (the filesystem
 * context) zero-fills it, serializes its users, and calls
 * binding_cache_release() at the end.
 */
#define BINDING_CACHE_SLOTS 4

/* An upload as the caches compare it: any write moves its mtime, a
 * rename over it its inode, a chmod its ctime. */
struct binding_stamp {
	uint64_t ino;
	int64_t size, mtime_ns, ctime_ns;
};

struct binding_cache {
	struct binding_cached {
		struct lru_age age;
		unsigned artifact;	/* binding.c's row that imported it */
		int64_t session;
		struct binding_stamp up;
		json_t *base;		/* NULL: it gave no parameters */
		struct deck *rest;
		struct sbuf notes, problems;
	} slot[BINDING_CACHE_SLOTS];
	/*
	 * binding_problems() of a session, kept while what it depends on
	 * holds still: the skill, session.json and request.json (their
	 * change times), the names in uploads/ (the folder's mtime and
	 * ctime), the session's path, and the imported upload (its name,
	 * looked up again, and its stamp).  A hit costs two lookups
	 * instead of a listing of uploads/ and a resolution.
	 */
	struct binding_solved {
		struct lru_age age;
		int64_t session;
		const struct skill *skill;
		unsigned long skill_scans;	/* skill_registry_scans() */
		int64_t doc_mtime_ns, request_mtime_ns;
		int64_t dir_mtime_ns, dir_ctime_ns;
		char *session_path;
		char *import_name;	/* NULL: nothing imported */
		struct binding_stamp up;
		struct sbuf problems, notes;
	} solved[BINDING_CACHE_SLOTS];
	uint64_t clock;
	uint64_t hits, misses;	/* for tests and benches */
	uint64_t solved_hits;
};

void binding_cache_release(struct binding_cache *bc);

struct binding_ctx {
	struct store *st;
	struct tree *tree;
	const struct skill_registry *skills;
	const struct session_info *s;
	const char *session_path;
	struct binding_cache *cache;	/* NULL: parse every time */
	/*
	 * Optional: called before and after a deck's parse, which works on
	 * a copy of the upload (a 1 MiB deck is tens of ms), so that the
	 * caller may let go of its lock meanwhile.  Whoever takes that lock
	 * in between may use the cache, never change the session, the tree
	 * or the registry (in flowfs: only readers run then).
	 */
	void (*leave)(void *lock_ctx);
	void (*enter)(void *lock_ctx);
	void *lock_ctx;
};

/* The bound skill, NULL when none is bound or it is gone/broken. */
const struct skill *binding_skill(const struct binding_ctx *c);
/* Whether the bound skill takes parameters from an upload (a deck). */
bool binding_imports(const struct binding_ctx *c);

/* Resolve (see inputs_resolve); *skill is set as binding_skill(). */
int binding_resolve(const struct binding_ctx *c, const struct skill **skill,
		    struct inputs *out);

int binding_render_input(const struct binding_ctx *c, struct sbuf *out);
int binding_render_parameter(const struct binding_ctx *c, struct sbuf *out);
/* -ENOENT when there is no prompt (no skill, or it cannot be rendered). */
int binding_render_prompt(const struct binding_ctx *c, struct sbuf *out,
			  struct ferr *err);
/* The same from inputs the caller resolved already (binding_resolve()). */
int binding_prompt_from(const struct binding_ctx *c, const struct skill *sk,
			const struct inputs *in, struct sbuf *out,
			struct ferr *err);
/* -ENOENT when no skill is bound. */
int binding_render_manifest(const struct binding_ctx *c, struct sbuf *out);

/*
 * A file a built-in skill's session generates in output/ on every read
 * (output/for005.dat of "datcom", output/summary.json and
 * summary_readable.txt of "scientific-workflow"): present while the
 * session is bound to the skill and status has no problem (inputs and
 * parameters complete and valid, rounds without a gap); -ENOENT
 * otherwise (status says what is missing or wrong).
 */
int binding_render_artifact(const struct binding_ctx *c, const char *name,
			    struct sbuf *out);
/* Whether the bound skill generates artifact `name` at all (a look in a
 * table: no query). */
bool binding_has_artifact(const struct binding_ctx *c, const char *name);

/* Whether binding_render_artifact() would succeed: 0 or -ENOENT, without
 * rendering where the file can tell (the transcripts). */
int binding_artifact_exists(const struct binding_ctx *c, const char *name);

/*
 * The checks a built-in skill adds to a request.json write (datcom: the
 * rules between its parameters, on the request's parameters with the
 * schema's defaults): 0, or -EINVAL with `err`.  Others: 0.
 */
int binding_check_request(const struct skill *sk, const json_t *request,
			  struct ferr *err);

/*
 * The problems of the session's binding, one line each; nothing when
 * it is ready (rounds and the job graph have their own, which
 * status_doc() adds: roundstore_problem(), graph_problems()).  Remarks on
 * an imported file that are not problems ("3 cases; the first is
 * used") go to `notes`, one line each (NULL: left out).  *mtime_ns
 * (NULL: not wanted) is set as binding_mtime() sets it, from the same
 * look at uploads/.
 */
int binding_problems(const struct binding_ctx *c, struct sbuf *out,
		     struct sbuf *notes, int64_t *mtime_ns);

/* When what the binding shows last changed (for the files' mtimes). */
int64_t binding_mtime(const struct binding_ctx *c);

#endif
