/* binding: what a session shows because of the skill bound to it (inputs,
 * parameters, prompt, artifacts, problems); see binding.h. */
#include "session/binding.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/datcom.h"
#include "formats/deck.h"
#include "lib/fjson.h"
#include "lib/fname.h"
#include "formats/rounds.h"
#include "session/roundstore.h"
#include "lib/schema.h"

/*
 * What an imported file (a DATCOM deck) adds to a resolution: the part
 * the generated file carries through, and remarks for status.
 */
struct imported {
	struct deck *rest;
	const struct deck *cached_rest;	/* a cache slot's: not ours */
	struct sbuf notes;
	/* the upload it was read from (read: there was one) */
	bool read;
	char name[FNAME_MAX + 1];
	struct tree_attr attr;
};

static void imported_release(struct imported *im)
{
	deck_free(im->rest);
	im->rest = NULL;
	im->cached_rest = NULL;
	sbuf_release(&im->notes);
}

static const struct deck *imported_rest(const struct imported *im)
{
	return im->rest ? im->rest : im->cached_rest;
}

/*
 * Read a DATCOM deck: its first case's parameters (*params) and the rest
 * of it.  A deck that does not parse: -EINVAL with line and column.
 */
static int import_deck(const char *text, size_t len, json_t **params,
		       struct imported *im, struct ferr *err)
{
	struct deck_problems problems = DECK_PROBLEMS_INIT;
	struct deck *d = NULL;
	size_t rejected;
	int ret;

	ret = deck_parse(text, len, &d, &problems);
	if (ret == -EINVAL && problems.nr) {
		const struct deck_problem *p = &problems.v[problems.nr - 1];

		ret = ferr_set_at(err, -EINVAL, (int)p->line, (int)p->column,
				  "%s", p->message);
		goto out;
	}
	if (ret < 0)
		goto out;
	/* lines DATCOM would reject or misread: flowfs writes them cleanly,
	 * but says so */
	rejected = deck_problems_count(&problems, DECK_ERROR);
	for (size_t i = 0; rejected && i < problems.nr; i++)
		if (problems.v[i].severity >= DECK_ERROR) {
			ret = fname_line(&im->notes,
					 "%zu line%s DATCOM would reject or misread (line %u: %s); the deck flowfs generates from it leaves them out or writes them so DATCOM reads them",
					 rejected, rejected == 1 ? "" : "s",
					 problems.v[i].line, problems.v[i].message);
			break;
		}
	if (!ret)
		ret = datcom_from_deck(d, params, &im->rest, &im->notes, err);
out:
	deck_free(d);
	deck_problems_release(&problems);
	return ret;
}

static int render_for005(const struct binding_ctx *c,
			 const struct inputs *in, const struct imported *im,
			 struct sbuf *out)
{
	(void)c;
	return datcom_render_with(in->parameter, imported_rest(im), out,
				  NULL);
}

/* The rounds of a session and its task, for the transcripts. */
static int render_transcript(const struct binding_ctx *c,
			     const struct inputs *in, bool readable,
			     struct sbuf *out)
{
	const char *desc = json_string_value(json_object_get(in->input,
							     "description"));
	const char *io = json_string_value(json_object_get(in->input,
							   "io_instructions"));
	json_t **rounds = NULL;
	size_t n = 0;
	int ret;

	ret = roundstore_load(c->st, c->s->id, &rounds, &n, NULL);
	if (!ret && readable)
		ret = rounds_render_readable(desc, io,
					     (const json_t *const *)rounds, n,
					     out);
	else if (!ret)
		ret = rounds_render_summary(desc, io,
					    (const json_t *const *)rounds, n,
					    out);
	roundstore_free(rounds, n);
	return ret;
}

static int render_summary(const struct binding_ctx *c, const struct inputs *in,
			  const struct imported *im, struct sbuf *out)
{
	(void)im;
	return render_transcript(c, in, false, out);
}

static int render_summary_readable(const struct binding_ctx *c,
				   const struct inputs *in,
				   const struct imported *im, struct sbuf *out)
{
	(void)im;
	return render_transcript(c, in, true, out);
}

/* The transcripts are there when the rounds have no gap (writes keep
 * them valid otherwise: roundstore.h). */
static int transcript_exists(const struct binding_ctx *c)
{
	return roundstore_gap(c->st, c->s->id, NULL) == -EINVAL ? -ENOENT : 0;
}

/*
 * The files built-in skills generate in output/ on every read: one row
 * each.  A file is there while its session is ready (no problem in
 * status) and `render` succeeds; `exists`, when set, tells that without
 * rendering.  `check`, when set, is the rules between parameters that
 * a request.json write and status apply (the first problem); `warn`,
 * when set, lines status shows beside the file (DATCOM's STMACH); `render`
 * fails wherever it would.  `import_input`, when set, names the file
 * input whose upload supplies the parameters the request does not give.
 */
static const struct artifact {
	const char *skill;
	const char *name;
	int (*render)(const struct binding_ctx *c, const struct inputs *in,
		      const struct imported *im, struct sbuf *out);
	int (*exists)(const struct binding_ctx *c);
	int (*check)(const json_t *params, struct ferr *err);
	/* status's check of a complete set, when set instead of `check`:
	 * also what it leaves out, given the rest of an imported file */
	int (*check_complete)(const json_t *params, const struct deck *rest,
			      struct ferr *err);
	/* lines for status that do not stop the file, when set */
	int (*warn)(const json_t *params, const struct deck *rest,
		    struct sbuf *out);
	/* what is required beyond the schema's list (a surface begun), when
	 * set: their names, comma-separated, and how many */
	int (*missing)(const json_t *params, const struct deck *rest,
		       struct sbuf *out);
	const char *import_input;
	int (*import)(const char *text, size_t len, json_t **params,
		      struct imported *im, struct ferr *err);
	int64_t import_max;	/* the largest upload read for it */
} artifacts[] = {
	{ "datcom", "for005.dat", render_for005, NULL, datcom_check,
	  datcom_check_with, datcom_warnings_with, datcom_missing_with,
	  "deck", import_deck, DECK_MAX_SIZE },
	{ "scientific-workflow", "summary.json", render_summary,
	  transcript_exists, NULL, NULL, NULL, NULL, NULL, NULL, 0 },
	{ "scientific-workflow", "summary_readable.txt",
	  render_summary_readable, transcript_exists, NULL, NULL, NULL, NULL,
	  NULL, NULL, 0 },
};

#define ARTIFACT_COUNT (sizeof(artifacts) / sizeof(artifacts[0]))

/* The artifact `name` of `skill`, or with name NULL the first of its
 * artifacts from `from` on; NULL when there is none. */
static const struct artifact *find_artifact_from(const char *skill,
						 const char *name,
						 const struct artifact *from)
{
	for (const struct artifact *a = from ? from : artifacts;
	     a < artifacts + ARTIFACT_COUNT; a++)
		if (!strcmp(a->skill, skill) && (!name || !strcmp(a->name, name)))
			return a;
	return NULL;
}

static const struct artifact *find_artifact(const char *skill,
					    const char *name)
{
	return find_artifact_from(skill, name, NULL);
}

/* Every artifact of `skill` with a parameter check. */
#define for_each_checked_artifact(a, skill)				\
	for (const struct artifact *a = find_artifact((skill), NULL); a; \
	     a = find_artifact_from((skill), NULL, a + 1))		\
		if (a->check)

/* The artifact of `skill` that imports an upload, or NULL. */
static const struct artifact *importing_artifact(const char *skill)
{
	for (const struct artifact *a = find_artifact(skill, NULL); a;
	     a = find_artifact_from(skill, NULL, a + 1))
		if (a->import_input)
			return a;
	return NULL;
}

const struct skill *binding_skill(const struct binding_ctx *c)
{
	const struct skill *sk;

	if (!c->s->skill[0])
		return NULL;
	sk = skill_find(c->skills, c->s->skill);
	return sk && !sk->error ? sk : NULL;
}

bool binding_imports(const struct binding_ctx *c)
{
	const struct skill *sk = binding_skill(c);

	return sk && importing_artifact(sk->id);
}

/* ---- the import cache (binding.h) ----------------------------------- */

static void cached_clear(struct binding_cached *e)
{
	json_decref(e->base);
	deck_free(e->rest);
	sbuf_release(&e->notes);
	sbuf_release(&e->problems);
	memset(e, 0, sizeof(*e));
}

static void solved_clear(struct binding_solved *e)
{
	free(e->session_path);
	free(e->import_name);
	sbuf_release(&e->problems);
	sbuf_release(&e->notes);
	memset(e, 0, sizeof(*e));
}

void binding_cache_release(struct binding_cache *bc)
{
	for (int i = 0; i < BINDING_CACHE_SLOTS; i++) {
		cached_clear(&bc->slot[i]);
		solved_clear(&bc->solved[i]);
	}
}

static struct binding_stamp stamp_of(const struct tree_attr *up)
{
	return (struct binding_stamp){ up->ino, up->size, up->mtime_ns,
				       up->ctime_ns };
}

/* Whether the upload `up` is the one stamped `was`, unchanged. */
static bool stamp_holds(const struct binding_stamp *was,
			const struct tree_attr *up)
{
	return was->ino == up->ino && was->size == up->size &&
	       was->mtime_ns == up->mtime_ns && was->ctime_ns == up->ctime_ns;
}

/* The row's identity in the table, for keys. */
static unsigned artifact_index(const struct artifact *a)
{
	return (unsigned)(a - artifacts);
}

static bool cached_is(const struct binding_cached *e,
		      const struct binding_ctx *c, const struct artifact *a,
		      const struct tree_attr *up)
{
	return e->age.valid && e->artifact == artifact_index(a) &&
	       e->session == c->s->id && stamp_holds(&e->up, up);
}

/* What a slot holds, as import_file() would give it. */
static int cached_use(struct binding_cache *bc, struct binding_cached *e,
		      json_t **base, struct imported *im,
		      struct sbuf *problems)
{
	lru_touch(&e->age, &bc->clock);
	bc->hits++;
	if (e->base) {
		*base = json_deep_copy(e->base);
		if (!*base)
			return -ENOMEM;
	}
	im->cached_rest = e->rest;
	if (sbuf_add(&im->notes, e->notes.buf, e->notes.len) < 0 ||
	    sbuf_add(problems, e->problems.buf, e->problems.len) < 0)
		return -ENOMEM;
	return 0;
}

/* Keep what import_file() gave (the slot takes the rest of the deck). */
static int cached_keep(struct binding_cache *bc, const struct binding_ctx *c,
		       const struct artifact *a, const struct tree_attr *up,
		       const json_t *base, struct imported *im,
		       const char *problems, size_t len)
{
	struct binding_cached *e = &bc->slot[lru_pick(&bc->slot[0].age,
						    BINDING_CACHE_SLOTS,
						    sizeof(bc->slot[0]))];

	cached_clear(e);
	if (base) {
		e->base = json_deep_copy(base);
		if (!e->base)
			return -ENOMEM;
	}
	if (sbuf_add(&e->notes, im->notes.buf, im->notes.len) < 0 ||
	    sbuf_add(&e->problems, problems, len) < 0) {
		cached_clear(e);
		return -ENOMEM;
	}
	e->rest = im->rest;
	im->cached_rest = im->rest;
	im->rest = NULL;
	e->artifact = artifact_index(a);
	e->session = c->s->id;
	e->up = stamp_of(up);
	lru_touch(&e->age, &bc->clock);
	bc->misses++;
	return 0;
}

/* Read and import the regular file `up` (named `name` in uploads/). */
static int import_file(const struct binding_ctx *c, const struct artifact *a,
		       const char *name, const struct tree_attr *up,
		       json_t **base, struct imported *im,
		       struct sbuf *problems)
{
	char msg[FERR_MESSAGE_MAX + 64];
	struct sbuf text = SBUF_INIT;
	struct ferr err = FERR_INIT;
	int ret;

	/* refused before it is read: status reads it on every look */
	if (up->size > a->import_max)
		return fname_line(problems, "uploads/%s: %" PRId64 " bytes: at"
				  " most %" PRId64 " are read", name, up->size,
				  a->import_max);
	ret = tree_read_all(c->tree, up, &text);
	if (ret == -EFBIG)
		ret = fname_line(problems, "uploads/%s: too large to read",
				 name);
	if (ret < 0)
		goto out;
	/* bound, and nothing in it: no parameters come from it, which a
	 * person who copied a deck there did not mean */
	if (text.len == 0) {
		ret = fname_line(problems, "uploads/%s: the file is empty (0 "
				 "bytes): no %s to read", name,
				 a->import_input);
		goto out;
	}
	if (c->leave)
		c->leave(c->lock_ctx);
	ret = a->import(text.buf, text.len, base, im, &err);
	if (c->enter)
		c->enter(c->lock_ctx);
	if (ret == -EINVAL) {
		ret = fname_line(problems, "uploads/%s: %s", name,
				 ferr_format(&err, msg, sizeof(msg)));
	} else if (!ret && im->notes.len) {
		/* prefix each remark with the file it is about */
		struct sbuf prefixed = SBUF_INIT;

		for (char *l = im->notes.buf, *nl; !ret && *l; l = nl + 1) {
			nl = strchr(l, '\n');
			if (!nl)
				nl = l + strlen(l) - 1;
			ret = fname_line(&prefixed, "uploads/%s: %.*s", name,
					 (int)(nl - l + (*nl != '\n')), l);
		}
		sbuf_release(&im->notes);
		im->notes = prefixed;
	}
out:
	sbuf_release(&text);
	return ret;
}

/*
 * The parameters an uploaded file gives (a DATCOM deck bound to input
 * "deck"): *base, or NULL when none is bound; what it cannot be read
 * for goes to `problems`.  From the cache when the file is unchanged.
 */
static int import_upload(const struct binding_ctx *c, const struct artifact *a,
			 const struct inputs *in, json_t **base,
			 struct imported *im, struct sbuf *problems)
{
	const char *path = json_string_value(json_object_get(in->input,
							     a->import_input));
	const char *name = path ? strrchr(path, '/') : NULL;
	struct binding_cache *bc = c->cache;
	size_t before = problems->len;
	struct tree_attr up;
	int ret;

	*base = NULL;
	if (!name)
		return 0;
	name++;
	ret = tree_lookup(c->tree, c->s->uploads_ino, name, &up);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	im->read = true;
	snprintf(im->name, sizeof(im->name), "%s", name);
	im->attr = up;
	if (!S_ISREG(up.mode))
		return fname_line(problems, "uploads/%s: a folder, not a file",
				  name);
	for (int i = 0; bc && i < BINDING_CACHE_SLOTS; i++)
		if (cached_is(&bc->slot[i], c, a, &up))
			return cached_use(bc, &bc->slot[i], base, im,
					  problems);
	ret = import_file(c, a, name, &up, base, im, problems);
	if (!ret && bc)
		ret = cached_keep(bc, c, a, &up, *base, im,
				  problems->buf + before,
				  problems->len - before);
	return ret;
}

/* binding_resolve(), keeping what an imported file adds. */
static int resolve_imported(const struct binding_ctx *c,
			    const struct skill **skill, struct inputs *out,
			    struct imported *im)
{
	struct inputs_upload *ups = NULL;
	struct tree_dir dir = { 0 };
	const struct artifact *a;
	struct sbuf problems = SBUF_INIT;
	json_t *request = NULL, *base = NULL;
	char *uploads_path = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	sbuf_init(&out->problems);
	sbuf_init(&out->notes);
	*skill = binding_skill(c);
	if (!*skill) {
		out->input = json_object();
		out->parameter = json_object();
		return out->input && out->parameter ? 0 : -ENOMEM;
	}
	ret = session_load_request(c->st, c->s, &request);
	if (ret < 0)
		goto out;
	ret = tree_readdir(c->tree, c->s->uploads_ino, &dir);
	if (ret < 0)
		goto out;
	ret = -ENOMEM;
	ups = calloc(dir.n ? dir.n : 1, sizeof(*ups));
	if (!ups || asprintf(&uploads_path, "%s/uploads", c->session_path) < 0)
		goto out;
	for (size_t i = 0; i < dir.n; i++) {
		ups[i].name = dir.ents[i].name;
		ups[i].dir = S_ISDIR(dir.ents[i].attr.mode);
	}
	ret = inputs_resolve(*skill, request, ups, dir.n, uploads_path, out);
	a = importing_artifact((*skill)->id);
	if (ret < 0 || !a)
		goto out;
	/* a bound deck: resolve again with what it gives under the request */
	ret = import_upload(c, a, out, &base, im, &problems);
	if (ret < 0 || (!base && !problems.len))
		goto out;
	/* the deck gave parameters (not only problems): resolve again */
	if (base) {
		inputs_release(out);
		ret = inputs_resolve_base(*skill, request, base, ups, dir.n,
					  uploads_path, out);
	}
	if (!ret)
		ret = sbuf_add(&out->problems, problems.buf, problems.len);
out:
	sbuf_release(&problems);
	json_decref(base);
	free(uploads_path);
	free(ups);
	tree_dir_free(&dir);
	json_decref(request);
	return ret;
}

int binding_resolve(const struct binding_ctx *c, const struct skill **skill,
		    struct inputs *out)
{
	struct imported im = { .notes = SBUF_INIT };
	int ret = resolve_imported(c, skill, out, &im);

	imported_release(&im);
	return ret;
}

static int render_part(const struct binding_ctx *c, bool parameter,
		       struct sbuf *out)
{
	const struct skill *sk;
	struct inputs in;
	int ret = binding_resolve(c, &sk, &in);

	if (!ret)
		ret = fjson_dump(out, parameter ? in.parameter : in.input);
	inputs_release(&in);
	return ret;
}

int binding_render_input(const struct binding_ctx *c, struct sbuf *out)
{
	return render_part(c, false, out);
}

int binding_render_parameter(const struct binding_ctx *c, struct sbuf *out)
{
	return render_part(c, true, out);
}

/* prompt.txt from inputs already resolved for skill `sk`. */
int binding_prompt_from(const struct binding_ctx *c, const struct skill *sk,
			const struct inputs *in, struct sbuf *out,
			struct ferr *err)
{
	char *skill_dir = NULL;
	int ret;

	if (asprintf(&skill_dir, "%s/skill", c->session_path) < 0)
		return -ENOMEM;
	ret = inputs_prompt(sk, c->s->engine, in, c->session_path, skill_dir,
			    out, err);
	free(skill_dir);
	return ret;
}

int binding_render_prompt(const struct binding_ctx *c, struct sbuf *out,
			  struct ferr *err)
{
	const struct skill *sk;
	struct inputs in;
	int ret = binding_resolve(c, &sk, &in);

	if (!ret && !sk)
		ret = -ENOENT;
	if (!ret)
		ret = binding_prompt_from(c, sk, &in, out, err);
	inputs_release(&in);
	return ret;
}

int binding_render_manifest(const struct binding_ctx *c, struct sbuf *out)
{
	const struct skill *sk = binding_skill(c);
	json_t *list;
	int ret;

	if (!sk)
		return -ENOENT;
	list = inputs_manifest(sk);
	if (!list)
		return -ENOMEM;
	ret = fjson_dump(out, list);
	json_decref(list);
	return ret;
}

/*
 * Artifact `name` of the session: rendered into `out` when `out` is
 * given, else only looked for.  0, or -ENOENT when it is not there now
 * (status says why).
 */
static int artifact(const struct binding_ctx *c, const char *name,
		    struct sbuf *out)
{
	struct imported im = { .notes = SBUF_INIT };
	struct sbuf scratch = SBUF_INIT;
	const struct artifact *a;
	const struct skill *sk;
	struct inputs in;
	int ret;

	/* most sessions have no such file: know it before resolving */
	sk = binding_skill(c);
	if (!sk || !(a = find_artifact(sk->id, name)))
		return -ENOENT;
	/* sk is still the skill found above: it is the session's */
	ret = resolve_imported(c, &sk, &in, &im);
	/* incomplete or invalid inputs: no file (status says why); render
	 * checks what `check` does, so it is not run first */
	if (!ret && in.problems.len)
		ret = -ENOENT;
	if (!ret && !out && a->exists)
		ret = a->exists(c);
	else if (!ret)
		ret = a->render(c, &in, &im, out ? out : &scratch) < 0 ? -ENOENT
									: 0;
	sbuf_release(&scratch);
	inputs_release(&in);
	imported_release(&im);
	return ret;
}

int binding_render_artifact(const struct binding_ctx *c, const char *name,
			    struct sbuf *out)
{
	return artifact(c, name, out);
}

bool binding_has_artifact(const struct binding_ctx *c, const char *name)
{
	const struct skill *sk = binding_skill(c);

	return sk && find_artifact(sk->id, name);
}

int binding_artifact_exists(const struct binding_ctx *c, const char *name)
{
	return artifact(c, name, NULL);
}

int binding_check_request(const struct skill *sk, const json_t *request,
			  struct ferr *err)
{
	const json_t *given = json_object_get(request, "parameter");
	json_t *params = NULL;
	int ret = 0;

	for_each_checked_artifact(a, sk->id) {
		if (!params) {
			params = json_is_object(given) ? json_deep_copy(given)
						       : json_object();
			if (!params)
				return -ENOMEM;
			ret = schema_apply_defaults(sk->parameter_schema,
						    sk->parameter_schema, params);
		}
		if (!ret)
			ret = a->check(params, err);
		if (ret < 0)
			break;
	}
	json_decref(params);
	return ret;
}

/* What keeps a built-in skill's generated files from existing. */
static int artifact_problems(const struct skill *sk, const struct inputs *in,
			     const struct imported *im, struct sbuf *out)
{
	char msg[FERR_MESSAGE_MAX + 64];
	int ret = 0;

	/* missing values are already listed; check only complete sets */
	if (in->problems.len)
		return 0;
	for (size_t i = 0; i < ARTIFACT_COUNT; i++) {
		const struct artifact *a = &artifacts[i];
		struct sbuf names = SBUF_INIT;
		int n;

		if (strcmp(a->skill, sk->id) || !a->missing)
			continue;
		n = a->missing(in->parameter, imported_rest(im), &names);
		ret = n > 0 ? fname_line(out, "missing required parameters: %s",
					 names.buf) : n;
		sbuf_release(&names);
		if (ret < 0 || n > 0)
			return ret;
	}
	for_each_checked_artifact(a, sk->id) {
		struct ferr err = FERR_INIT;

		if ((a->check_complete ?
		     a->check_complete(in->parameter, imported_rest(im), &err) :
		     a->check(in->parameter, &err)) == 0)
			continue;
		if (err.path[0])
			ret = fname_line(out, "output/%s: %s: %s", a->name,
					 err.path, err.message);
		else
			ret = fname_line(out, "output/%s: %s", a->name,
					 ferr_format(&err, msg, sizeof(msg)));
		if (ret < 0)
			break;
	}
	return ret;
}

/* The warnings of a complete, accepted set of parameters: no problem
 * (`problems` bytes of them) before. */
static int artifact_warnings(const struct skill *sk, const struct inputs *in,
			     const struct imported *im, size_t problems,
			     struct sbuf *notes)
{
	int ret = 0;

	if (problems || in->problems.len)
		return 0;
	for (size_t i = 0; !ret && i < ARTIFACT_COUNT; i++)
		if (!strcmp(artifacts[i].skill, sk->id) && artifacts[i].warn)
			ret = artifacts[i].warn(in->parameter,
						imported_rest(im), notes);
	return ret;
}

/* binding_problems() without the cache; *im says what was imported. */
static int solve(const struct binding_ctx *c, struct sbuf *out,
		 struct sbuf *notes, struct imported *im)
{
	const struct skill *sk;
	struct sbuf prompt = SBUF_INIT;
	struct ferr err = FERR_INIT;
	char msg[FERR_MESSAGE_MAX + 64];
	struct inputs in;
	int ret;

	if (c->s->skill[0] && !binding_skill(c)) {
		const struct skill *broken = skill_find(c->skills, c->s->skill);

		if (broken)
			return fname_line(out, "skill %s did not load: %s",
					  broken->id, broken->error);
		return fname_line(out, "skill %s is not installed (any more)",
				  c->s->skill);
	}
	ret = resolve_imported(c, &sk, &in, im);
	if (!ret)
		ret = sbuf_add(out, in.problems.buf, in.problems.len);
	/* uploads that bind nothing while an optional input is unbound,
	 * parameters the skill does not declare but takes */
	if (!ret)
		ret = sbuf_add(notes, in.notes.buf, in.notes.len);
	if (!ret && sk)
		ret = artifact_problems(sk, &in, im, out);
	if (!ret && sk)
		ret = artifact_warnings(sk, &in, im, out->len, notes);
	/* a template that does not render is a problem of the session */
	if (!ret && sk) {
		ret = binding_prompt_from(c, sk, &in, &prompt, &err);
		sbuf_release(&prompt);
		if (ret == -EINVAL)
			ret = fname_line(out, "prompt.txt: %s",
					 ferr_format(&err, msg, sizeof(msg)));
	}
	inputs_release(&in);
	if (!ret)
		ret = sbuf_add(notes, im->notes.buf, im->notes.len);
	return ret;
}

/* The slot of `c`'s problems that still holds, or NULL. */
static struct binding_solved *solved_find(struct binding_cache *bc,
					  const struct binding_ctx *c,
					  const struct skill *sk,
					  const struct tree_attr *dir)
{
	for (int i = 0; i < BINDING_CACHE_SLOTS; i++) {
		struct binding_solved *e = &bc->solved[i];
		struct tree_attr up;

		if (!e->age.valid || e->session != c->s->id || e->skill != sk ||
		    e->skill_scans != skill_registry_scans(c->skills) ||
		    e->doc_mtime_ns != c->s->doc_mtime_ns ||
		    e->request_mtime_ns != c->s->request_mtime_ns ||
		    e->dir_mtime_ns != dir->mtime_ns ||
		    e->dir_ctime_ns != dir->ctime_ns ||
		    strcmp(e->session_path, c->session_path))
			continue;
		if (!e->import_name)
			return e;
		if (tree_lookup(c->tree, c->s->uploads_ino, e->import_name,
				&up) == 0 && stamp_holds(&e->up, &up))
			return e;
	}
	return NULL;
}

/* Keep what solve() gave, in the least recently used slot. */
static int solved_keep(struct binding_cache *bc, const struct binding_ctx *c,
		       const struct skill *sk, const struct tree_attr *dir,
		       const struct imported *im, const struct sbuf *problems,
		       const struct sbuf *notes)
{
	struct binding_solved *e = &bc->solved[lru_pick(&bc->solved[0].age,
						      BINDING_CACHE_SLOTS,
						      sizeof(bc->solved[0]))];

	solved_clear(e);
	e->session_path = strdup(c->session_path);
	e->import_name = im->read ? strdup(im->name) : NULL;
	if (!e->session_path || (im->read && !e->import_name) ||
	    sbuf_add(&e->problems, problems->buf, problems->len) < 0 ||
	    sbuf_add(&e->notes, notes->buf, notes->len) < 0) {
		solved_clear(e);
		return -ENOMEM;
	}
	e->session = c->s->id;
	e->skill = sk;
	e->skill_scans = skill_registry_scans(c->skills);
	e->doc_mtime_ns = c->s->doc_mtime_ns;
	e->request_mtime_ns = c->s->request_mtime_ns;
	e->dir_mtime_ns = dir->mtime_ns;
	e->dir_ctime_ns = dir->ctime_ns;
	e->up = stamp_of(&im->attr);
	lru_touch(&e->age, &bc->clock);
	return 0;
}

/* binding_mtime() from a look at uploads/ (dir NULL: it failed). */
static int64_t mtime_with(const struct binding_ctx *c,
			  const struct tree_attr *dir)
{
	int64_t t = c->s->doc_mtime_ns;

	if (c->s->request_mtime_ns > t)
		t = c->s->request_mtime_ns;
	/* names in uploads/ bind files: the folder's mtime follows them */
	if (dir && dir->mtime_ns > t)
		t = dir->mtime_ns;
	return t;
}

int binding_problems(const struct binding_ctx *c, struct sbuf *out,
		     struct sbuf *notes, int64_t *mtime_ns)
{
	struct imported im = { .notes = SBUF_INIT };
	struct sbuf p = SBUF_INIT, n = SBUF_INIT;
	const struct skill *sk = binding_skill(c);
	struct binding_solved *e = NULL;
	struct tree_attr dir;
	bool seen = false, keep;
	int ret;

	/* one look at uploads/ serves the key and the mtime */
	if ((c->cache && sk) || mtime_ns)
		seen = tree_getattr(c->tree, c->s->uploads_ino, &dir) == 0;
	if (mtime_ns)
		*mtime_ns = mtime_with(c, seen ? &dir : NULL);
	keep = seen && c->cache && sk;
	if (keep)
		e = solved_find(c->cache, c, sk, &dir);
	if (e) {
		lru_touch(&e->age, &c->cache->clock);
		c->cache->solved_hits++;
		ret = sbuf_add(out, e->problems.buf, e->problems.len);
		if (!ret && notes)
			ret = sbuf_add(notes, e->notes.buf, e->notes.len);
		return ret;
	}
	ret = solve(c, &p, &n, &im);
	if (!ret && keep)
		ret = solved_keep(c->cache, c, sk, &dir, &im, &p, &n);
	if (!ret)
		ret = sbuf_add(out, p.buf, p.len);
	if (!ret && notes)
		ret = sbuf_add(notes, n.buf, n.len);
	imported_release(&im);
	sbuf_release(&p);
	sbuf_release(&n);
	return ret;
}

int64_t binding_mtime(const struct binding_ctx *c)
{
	struct tree_attr dir;

	return mtime_with(c, tree_getattr(c->tree, c->s->uploads_ino,
					  &dir) == 0 ? &dir : NULL);
}
