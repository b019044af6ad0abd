/*
 * binding: what a session shows because of the skill bound to it —
 * input.json, parameter.json, prompt.txt, output/.manifest.json and the
 * problems at the top of status.  It gathers the session's state (the
 * bound skill, the stored request, the names in uploads/) and hands it
 * to the input protocol (inputs.h); everything is computed on each call,
 * so what is shown is never stale.
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

#include "ferr.h"
#include "inputs.h"
#include "sbuf.h"
#include "session.h"
#include "skill.h"
#include "store.h"
#include "tree.h"

struct binding_ctx {
	struct store *st;
	struct tree *tree;
	const struct skill_registry *skills;
	const struct session_info *s;
	const char *session_path;
};

/* The bound skill, NULL when none is bound or it is gone/broken. */
const struct skill *binding_skill(const struct binding_ctx *c);

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
 * used") go to `notes`, one line each (NULL: left out).
 */
int binding_problems(const struct binding_ctx *c, struct sbuf *out,
		     struct sbuf *notes);

/* When what the binding shows last changed (for the files' mtimes). */
int64_t binding_mtime(const struct binding_ctx *c);

#endif
