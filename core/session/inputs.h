/*
 * inputs: the input protocol of seed 002.  From a skill, a session's
 * request ({"input": {...}, "parameter": {...}}) and the names in its
 * uploads/ folder, it computes what input.json, parameter.json,
 * prompt.txt, output/.manifest.json and the status problems show.
 *
 * Input keys are the input schema's properties; "x-input-source" is
 * "inline" or (the default, also when missing or invalid) "file".
 * A file input <key> is bound by an entry of uploads/ named exactly
 * <key>, or, when the property declares "extensions", <key><ext> with an
 * allowed extension (compared case-insensitively).  Two candidates, or
 * only candidates with other extensions, leave it unbound with a problem
 * line.  Nothing else binds.
 *
 * Problems are lines for `status`, each ending in '\n', in a fixed order:
 * uploads problems, then "missing required input files: a, b" (and,
 * when entries of uploads/ bind nothing, which they are and the names
 * that would bind), "missing required inputs: q", "missing required
 * parameters: c", then problems of a stored request against the current
 * skill (parameters the skill does not have among them).
 *
 * Notes are remarks that keep nothing from being ready, one line each:
 * entries of uploads/ that bind nothing while a file input is unbound
 * (when none of those is required), parameters a skill does not declare
 * but whose schema takes any.
 *
 * Functions return 0 or a negative errno (-EINVAL with `err` filled for a
 * refused request or a prompt that cannot be rendered, -ENOMEM).
 */
#ifndef FLOWFS_INPUTS_H
#define FLOWFS_INPUTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"
#include "session/skill.h"

/* A top-level entry of uploads/. */
struct inputs_upload {
	const char *name;
	bool dir;
};

struct inputs {
	json_t *input;		/* input.json */
	json_t *parameter;	/* parameter.json */
	struct sbuf problems;	/* status lines */
	struct sbuf notes;	/* status.json's notes (above) */
};

/*
 * The refusal rules for a request.json write: an object with only
 * "input" and "parameter" (objects); no unknown input key, no file input
 * given inline, inline values valid against their property's schema,
 * parameters valid against the parameter schema (missing required ones
 * are allowed: status shows them).  err->message is "<path>: <rule>",
 * e.g. "parameter.nalpha: 25 is greater than the maximum of 20".  With
 * no skill (sk NULL), only the shape is checked: the rest applies once
 * one is bound, and status says what does not fit then.
 */
int inputs_check_request(const struct skill *sk, const json_t *request,
			 struct ferr *err);

/*
 * Resolve.  `request` may be NULL (none written yet); `uploads_path` is
 * the absolute path of the session's uploads/ as a program sees it.
 * Free with inputs_release() (also after a failure).
 */
int inputs_resolve(const struct skill *sk, const json_t *request,
		   const struct inputs_upload *uploads, size_t nuploads,
		   const char *uploads_path, struct inputs *out);

/*
 * inputs_resolve() with parameters from elsewhere (`base`, may be NULL:
 * an imported DATCOM deck) under the request's: the request's values
 * win, then the schema's defaults fill what neither gives.
 */
int inputs_resolve_base(const struct skill *sk, const json_t *request,
			const json_t *base,
			const struct inputs_upload *uploads, size_t nuploads,
			const char *uploads_path, struct inputs *out);
void inputs_release(struct inputs *in);

/*
 * Render the prompt: the template of runner.json entrypoint.prompts
 * <engine>, else the built-in default, with input, parameter, skill (the
 * runner.json object), skill_id, run_dir, skill_dir and params_json.
 * -EINVAL with err (line, construct) when the template is outside the
 * supported subset or fails to render.
 */
int inputs_prompt(const struct skill *sk, const char *engine,
		  const struct inputs *in, const char *run_dir,
		  const char *skill_dir, struct sbuf *out, struct ferr *err);

/* Whether an input value is a URL flowfs fetches (http:// or https://). */
bool inputs_is_url(const json_t *value);

/*
 * For each file input that `request` gives as a URL: each(ctx, key, url,
 * name), name being the upload name that binds the key (<key> plus the
 * URL's extension when the skill lists it, else its first listed one;
 * just <key> when it lists none).  Stops at the first negative return.
 */
int inputs_urls(const struct skill *sk, const json_t *request,
		int (*each)(void *ctx, const char *key, const char *url,
			    const char *name),
		void *ctx);

/*
 * The skill's artifacts: every output-schema property with x-type
 * "artifact" or "file" as {"role", "pattern", "required"} (role:
 * x-role or "output"; pattern: x-filename or the key), in schema order.
 * A new reference to a JSON array, NULL on -ENOMEM.
 */
json_t *inputs_manifest(const struct skill *sk);

#endif
