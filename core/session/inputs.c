/* inputs: seed 002's input protocol (keys, uploads/ matching, resolution,
 * the prompt); see inputs.h. */
#include "session/inputs.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/fjson.h"
#include "lib/fname.h"
#include "lib/schema.h"
#include "lib/template.h"

/* A schema's top-level "properties" and "required", its "$ref" followed
 * (a skill may define its inputs in "definitions"). */
static const json_t *properties(const json_t *schema)
{
	const json_t *p = schema ? json_object_get(schema_deref(schema, NULL),
						   "properties") : NULL;

	return json_is_object(p) ? p : NULL;
}

static bool is_inline(const json_t *prop)
{
	const json_t *src = json_object_get(prop, "x-input-source");

	return json_is_string(src) && !strcmp(json_string_value(src), "inline");
}

/* The schema's top-level "required" (its $ref followed), or NULL. */
static const json_t *required_list(const json_t *schema)
{
	return schema ? json_object_get(schema_deref(schema, NULL), "required")
		      : NULL;
}

/* The required names as a set (an object), for look-ups in a loop; a new
 * reference, NULL on -ENOMEM. */
static json_t *required_set(const json_t *schema)
{
	json_t *set = json_object(), *v;
	size_t i;

	json_array_foreach((json_t *)required_list(schema), i, v)
		if (set && json_is_string(v) &&
		    json_object_set_new(set, json_string_value(v), json_true()))
			json_decref(set), set = NULL;
	return set;
}

/* ---- request.json ------------------------------------------------------- */

static int refuse_at(struct ferr *err, const struct ferr *inner)
{
	char msg[FERR_MESSAGE_MAX];

	snprintf(msg, sizeof(msg), "%s", inner->message);
	if (inner->path[0])
		return ferr_set(err, -EINVAL, "%s: %s", inner->path, msg);
	return ferr_set(err, -EINVAL, "%s", msg);
}

static int check_inputs(const struct skill *sk, const json_t *input,
			struct ferr *err)
{
	const json_t *props = properties(sk->input_schema);
	const char *key;
	json_t *value;

	json_object_foreach((json_t *)input, key, value) {
		const json_t *prop = props ? json_object_get(props, key) : NULL;
		struct ferr inner = FERR_INIT;
		char path[FERR_PATH_MAX];

		if (!prop)
			return ferr_set(err, -EINVAL, "unknown input key '%s'",
					key);
		if (!is_inline(prop) && !inputs_is_url(value))
			return ferr_set(err, -EINVAL,
					"key '%s' is file-sourced; write it to"
					" uploads/%s or give an http:// or"
					" https:// URL to fetch it from", key, key);
		if (!is_inline(prop))
			continue;
		snprintf(path, sizeof(path), "input.%s", key);
		if (schema_validate(sk->input_schema, prop, value, path, 0,
				    &inner) < 0)
			return refuse_at(err, &inner);
	}
	return 0;
}

int inputs_check_request(const struct skill *sk, const json_t *request,
			 struct ferr *err)
{
	const json_t *input, *parameter;
	struct ferr inner = FERR_INIT;
	const char *key;
	json_t *value;
	int ret;

	if (!json_is_object(request))
		return ferr_set(err, -EINVAL,
				"request.json must be an object {\"input\": {...}, \"parameter\": {...}}");
	json_object_foreach((json_t *)request, key, value)
		if (strcmp(key, "input") && strcmp(key, "parameter"))
			return ferr_set(err, -EINVAL,
					"unknown key '%s' (request.json has input, parameter)",
					key);
	input = json_object_get(request, "input");
	parameter = json_object_get(request, "parameter");
	if (input && !json_is_object(input))
		return ferr_set(err, -EINVAL, "input must be an object");
	if (parameter && !json_is_object(parameter))
		return ferr_set(err, -EINVAL, "parameter must be an object");
	/* no skill bound yet: the shape only (the rest once one is) */
	if (!sk)
		return 0;
	if (input) {
		ret = check_inputs(sk, input, err);
		if (ret < 0)
			return ret;
	}
	if (!parameter)
		return 0;
	if (!sk->parameter_schema) {
		if (json_object_size(parameter))
			return ferr_set(err, -EINVAL,
					"skill %s has no parameter schema: give values as inline inputs",
					sk->id);
		return 0;
	}
	if (schema_validate(sk->parameter_schema, NULL, parameter, "parameter",
			    SCHEMA_IGNORE_REQUIRED, &inner) < 0)
		return refuse_at(err, &inner);
	return 0;
}

/* ---- uploads/ key matching ----------------------------------------------- */

bool inputs_is_url(const json_t *value)
{
	const char *s = json_string_value(value);

	return s && (!strncasecmp(s, "http://", 7) ||
		     !strncasecmp(s, "https://", 8)) &&
	       !strpbrk(s, " \t\r\n") && strlen(s) < 8192;
}

/*
 * The extension of `name` after `key` when `name` is `key` + ".…", else
 * NULL.  The whole rest counts, so ".tar.gz" is one extension.
 */
static const char *extension_after(const char *name, const char *key)
{
	size_t klen = strlen(key);

	if (strncmp(name, key, klen) || name[klen] != '.')
		return NULL;
	return name + klen;
}

static bool ext_allowed(const json_t *exts, const char *ext)
{
	const json_t *v;
	size_t i;

	json_array_foreach(exts, i, v) {
		const char *e = json_string_value(v);

		if (!e)
			continue;
		/* tolerate "csv" for ".csv" */
		if (e[0] != '.' && !strcasecmp(e, ext + 1))
			return true;
		if (!strcasecmp(e, ext))
			return true;
	}
	return false;
}

/* The extension of a URL's last path segment (".csv"), or NULL. */
static char *url_extension(const char *url)
{
	const char *path = strstr(url, "://"), *end, *slash, *dot;

	path = path ? strchr(path + 3, '/') : NULL;
	if (!path)
		return NULL;
	end = path + strcspn(path, "?#");
	slash = path;
	for (const char *p = path; p < end; p++)
		if (*p == '/')
			slash = p;
	dot = NULL;
	for (const char *p = slash; p < end; p++)
		if (*p == '.')
			dot = p;
	if (!dot || dot == end - 1 || end - dot > 16)
		return NULL;
	for (const char *p = dot + 1; p < end; p++)
		if (!isalnum((unsigned char)*p))
			return NULL;
	return strndup(dot, (size_t)(end - dot));
}

int inputs_urls(const struct skill *sk, const json_t *request,
		int (*each)(void *ctx, const char *key, const char *url,
			    const char *name),
		void *ctx)
{
	const json_t *props = properties(sk->input_schema);
	const json_t *input = json_object_get(request, "input");
	const char *key;
	json_t *value;
	int ret = 0;

	json_object_foreach((json_t *)input, key, value) {
		const json_t *prop = props ? json_object_get(props, key) : NULL;
		const json_t *exts;
		char *ext, *name = NULL;

		if (!prop || is_inline(prop) || !inputs_is_url(value))
			continue;
		exts = json_object_get(prop, "extensions");
		ext = url_extension(json_string_value(value));
		/* the name that binds the key: <key><ext> when the skill
		 * lists extensions (the URL's if allowed, else the first) */
		if (json_array_size(exts) && (!ext || !ext_allowed(exts, ext))) {
			const char *first = json_string_value(json_array_get(exts, 0));

			free(ext);
			ext = NULL;
			if (first && asprintf(&ext, "%s%s", first[0] == '.' ? ""
					      : ".", first) < 0)
				ext = NULL;
		}
		if (asprintf(&name, "%s%s", key,
			     json_array_size(exts) && ext ? ext : "") < 0)
			name = NULL;
		free(ext);
		if (!name)
			return -ENOMEM;
		ret = each(ctx, key, json_string_value(value), name);
		free(name);
		if (ret < 0)
			break;
	}
	return ret;
}

/* The allowed extensions as "a, b" (only the names among them). */
static int add_list(struct sbuf *sb, const json_t *exts)
{
	const json_t *v;
	bool first = true;
	size_t i;
	int ret = 0;

	json_array_foreach(exts, i, v) {
		if (!json_is_string(v))
			continue;
		ret |= sbuf_addf(sb, "%s%s", first ? "" : ", ",
				 json_string_value(v));
		first = false;
	}
	return ret;
}

/*
 * Find the entry that binds file input `key`; -1 when none does, with
 * the reason added to `problems` when there is one.
 */
static int bind_file(const char *key, const json_t *prop,
		     const struct inputs_upload *ups, size_t n,
		     struct sbuf *problems, int *found)
{
	const json_t *exts = json_object_get(prop, "extensions");
	int first = -1, count = 0, ret = 0;
	struct sbuf names = SBUF_INIT, allowed = SBUF_INIT;

	if (!json_is_array(exts) || !json_array_size(exts))
		exts = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *ext = extension_after(ups[i].name, key);

		if (strcmp(ups[i].name, key) &&
		    !(exts && ext && ext_allowed(exts, ext)))
			continue;
		ret |= sbuf_addf(&names, "%s%s", count ? ", " : "", ups[i].name);
		if (first < 0)
			first = (int)i;
		count++;
	}
	*found = -1;
	if (count == 1) {
		*found = first;
	} else if (count > 1) {
		ret |= fname_line(problems,
				  "uploads/: %d files could be input %s (%s); keep one",
				  count, key, names.buf);
	} else if (exts) {
		/* only candidates with extensions the skill refuses */
		for (size_t i = 0; i < n; i++) {
			const char *ext = extension_after(ups[i].name, key);

			if (!ext)
				continue;
			sbuf_reset(&allowed);
			ret |= add_list(&allowed, exts);
			ret |= fname_line(problems,
					  "uploads/%s: extension %s not allowed for %s (allowed: %s)",
					  ups[i].name, ext, key, allowed.buf);
		}
	}
	sbuf_release(&names);
	sbuf_release(&allowed);
	return ret ? -ENOMEM : 0;
}

/* ---- resolution ------------------------------------------------------------ */

void inputs_release(struct inputs *in)
{
	json_decref(in->input);
	json_decref(in->parameter);
	in->input = in->parameter = NULL;
	sbuf_release(&in->problems);
	sbuf_release(&in->notes);
}

/* "missing required <what>: a, b" when `missing` is not empty. */
static int add_missing(struct sbuf *problems, const char *what,
		       const struct sbuf *missing)
{
	if (!missing->len)
		return 0;
	return fname_line(problems, "missing required %s: %s", what,
			  missing->buf);
}

/* The names that bind file input `key` (declared by `prop`) appended to
 * `sb`, comma-separated: the key, then the key with each extension it
 * allows ("csv_file, csv_file.csv"). */
static int add_binding_names(struct sbuf *sb, const char *key,
			     const json_t *prop)
{
	const json_t *v;
	size_t i;
	int ret = sbuf_addf(sb, "%s%s", sb->len ? ", " : "", key);

	json_array_foreach(json_object_get(prop, "extensions"), i, v) {
		const char *e = json_string_value(v);

		if (e && *e)
			ret |= sbuf_addf(sb, ", %s%s%s", key,
					 e[0] == '.' ? "" : ".", e);
	}
	return ret;
}

/* Whether entry `name` of uploads/ is a candidate for some file input
 * (<key>, or <key>.<anything>: bound, or named in a problem). */
static bool candidate_of_any(const json_t *props, const char *name)
{
	const char *key;
	json_t *prop;

	json_object_foreach((json_t *)props, key, prop)
		if (!is_inline(prop) &&
		    (!strcmp(name, key) || extension_after(name, key)))
			return true;
	return false;
}

/*
 * The entries of uploads/ that no file input could take, while some
 * input is unbound (`would`: the names that would bind those): a file
 * copied in under its own name (uploads/data.csv for input csv_file)
 * binds nothing, and nothing else would say so.  One line naming them
 * (the first three, and how many more) and the names that would bind,
 * added to `out`.  Hidden entries — editors' and rsync's temporary
 * files — are left out.
 */
#define UNBOUND_SHOWN 3
static int add_unbound(const json_t *props, const struct inputs_upload *ups,
		       size_t n, const struct sbuf *would, struct sbuf *out)
{
	struct sbuf names = SBUF_INIT;
	size_t count = 0;
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		if (ups[i].name[0] == '.' || candidate_of_any(props, ups[i].name))
			continue;
		if (count < UNBOUND_SHOWN)
			ret |= sbuf_addf(&names, "%s%s", count ? ", " : "",
					 ups[i].name);
		count++;
	}
	if (count > UNBOUND_SHOWN)
		ret |= sbuf_addf(&names, " and %zu more", count - UNBOUND_SHOWN);
	if (count && !ret)
		ret = fname_line(out, "uploads/: %s bind%s no input; the names"
				 " that would bind: %s", names.buf,
				 count == 1 ? "s" : "", would->buf);
	sbuf_release(&names);
	return ret ? -ENOMEM : 0;
}

static int resolve_inputs(const struct skill *sk, const json_t *req_input,
			  const struct inputs_upload *ups, size_t n,
			  const char *uploads_path, struct inputs *out)
{
	const json_t *props = properties(sk->input_schema);
	struct sbuf miss_files = SBUF_INIT, miss_inline = SBUF_INIT;
	struct sbuf would = SBUF_INIT;
	json_t *required_keys = required_set(sk->input_schema);
	const char *key;
	json_t *prop;
	int ret = required_keys ? 0 : -ENOMEM;

	json_object_foreach((json_t *)props, key, prop) {
		bool required = json_object_get(required_keys, key) != NULL;
		json_t *value = NULL;
		int found;

		if (is_inline(prop)) {
			value = json_incref(json_object_get(req_input, key));
			if (!value && required)
				ret |= sbuf_addf(&miss_inline, "%s%s",
						 miss_inline.len ? ", " : "", key);
		} else {
			ret |= bind_file(key, prop, ups, n, &out->problems,
					 &found);
			if (found >= 0) {
				char *path = NULL;

				if (asprintf(&path, "%s/%s", uploads_path,
					     ups[found].name) < 0)
					path = NULL;
				value = path ? json_string(path) : NULL;
				free(path);
				if (!value) {
					ret = -ENOMEM;
					break;
				}
			} else {
				ret |= add_binding_names(&would, key, prop);
				if (required)
					ret |= sbuf_addf(&miss_files, "%s%s",
							 miss_files.len ? ", "
									: "",
							 key);
			}
		}
		if (value && json_object_set_new(out->input, key, value) < 0)
			ret = -ENOMEM;
	}
	ret |= add_missing(&out->problems, "input files", &miss_files);
	/* what was copied in under another name: beside the line above when
	 * a required file is missing, else a note (status stays ready) */
	if (would.len)
		ret |= add_unbound(props, ups, n, &would,
				   miss_files.len ? &out->problems : &out->notes);
	ret |= add_missing(&out->problems, "inputs", &miss_inline);
	sbuf_release(&miss_files);
	sbuf_release(&miss_inline);
	sbuf_release(&would);
	json_decref(required_keys);
	return ret ? -ENOMEM : 0;
}

/*
 * The required names `instance` lacks: those with a property first, in
 * the schema's property order, then the others in `required` order.
 */
static int add_missing_required(const json_t *schema, const json_t *instance,
				struct sbuf *missing)
{
	const json_t *props = properties(schema);
	const json_t *req = required_list(schema);
	json_t *required = required_set(schema);
	const char *key;
	const json_t *v;
	json_t *prop;
	size_t i;
	int ret = required ? 0 : -ENOMEM;

	json_object_foreach((json_t *)props, key, prop)
		if (json_object_get(required, key) &&
		    !json_object_get(instance, key))
			ret |= sbuf_addf(missing, "%s%s",
					 missing->len ? ", " : "", key);
	json_decref(required);
	json_array_foreach(req, i, v) {
		const char *name = json_string_value(v);

		if (name && !(props && json_object_get(props, name)) &&
		    !json_object_get(instance, name))
			ret |= sbuf_addf(missing, "%s%s",
					 missing->len ? ", " : "", name);
	}
	return ret;
}

static int resolve_parameters(const struct skill *sk, const json_t *base,
			      const json_t *req_param, struct inputs *out)
{
	const json_t *schema = sk->parameter_schema;
	struct sbuf missing = SBUF_INIT;
	const char *key;
	json_t *prop;
	int ret = 0;

	if (!schema) {
		/* no parameter schema: the inline inputs are the parameters */
		const json_t *props = properties(sk->input_schema);

		json_object_foreach((json_t *)props, key, prop) {
			json_t *v = json_object_get(out->input, key);

			if (v && is_inline(prop) &&
			    json_object_set(out->parameter, key, v) < 0)
				return -ENOMEM;
		}
		return 0;
	}
	if (json_is_object(base) &&
	    json_object_update(out->parameter, (json_t *)base) < 0)
		return -ENOMEM;
	if (json_is_object(req_param) &&
	    json_object_update(out->parameter, (json_t *)req_param) < 0)
		return -ENOMEM;
	if (schema_apply_defaults(schema, schema, out->parameter) < 0)
		return -ENOMEM;
	ret = add_missing_required(schema, out->parameter, &missing);
	ret |= add_missing(&out->problems, "parameters", &missing);
	sbuf_release(&missing);
	return ret ? -ENOMEM : 0;
}

/*
 * The names a parameter schema declares into `set`: its properties and
 * those of the schemas it is made of (allOf, anyOf, oneOf, if, then,
 * else), $refs followed, to a depth that bounds what a skill's schema
 * can cost.
 */
#define DECLARED_DEPTH 16
static int add_declared(const json_t *root, const json_t *schema, json_t *set,
			int depth)
{
	static const char *const lists[] = { "allOf", "anyOf", "oneOf", NULL };
	static const char *const one[] = { "if", "then", "else", NULL };
	const json_t *s = schema_deref(root, schema), *v;
	const char *key;
	size_t i;
	int ret = 0;

	if (!json_is_object(s) || depth > DECLARED_DEPTH)
		return 0;
	json_object_foreach((json_t *)json_object_get(s, "properties"), key, v)
		if (json_object_set_new(set, key, json_true()) < 0)
			return -ENOMEM;
	for (int l = 0; !ret && lists[l]; l++)
		json_array_foreach(json_object_get(s, lists[l]), i, v)
			if (!ret)
				ret = add_declared(root, v, set, depth + 1);
	for (int o = 0; !ret && one[o]; o++)
		if (json_object_get(s, one[o]))
			ret = add_declared(root, json_object_get(s, one[o]),
					   set, depth + 1);
	return ret;
}

/*
 * Parameters the request gives that the skill's schema does not declare
 * ("colum" for "column").  A schema with "additionalProperties": false
 * has them refused when request.json is written; one that says nothing
 * takes them (JSON Schema's default), so a misspelling would go on into
 * parameter.json and the prompt unseen: each is a problem.  One that
 * welcomes them (additionalProperties true, or a schema) wants them: a
 * note.  A schema that declares no property at all tells nothing.
 */
#define DECLARED_SHOWN 8
static int add_undeclared(const struct skill *sk, const json_t *given,
			  struct inputs *out)
{
	const json_t *schema = sk->parameter_schema, *extra, *v;
	struct sbuf has = SBUF_INIT;
	json_t *declared;
	const char *key;
	size_t count = 0;
	int ret;

	if (!schema || !json_object_size(given))
		return 0;
	declared = json_object();
	if (!declared)
		return -ENOMEM;
	ret = add_declared(schema, NULL, declared, 0);
	if (ret < 0 || !json_object_size(declared))
		goto out;
	json_object_foreach(declared, key, v)
		if (count++ < DECLARED_SHOWN)
			ret |= sbuf_addf(&has, "%s%s", has.len ? ", " : "", key);
	if (count > DECLARED_SHOWN)
		ret |= sbuf_addf(&has, " and %zu more", count - DECLARED_SHOWN);
	extra = json_object_get(schema_deref(schema, NULL),
				"additionalProperties");
	json_object_foreach((json_t *)given, key, v) {
		if (ret < 0 || json_object_get(declared, key))
			continue;
		if (extra && !json_is_false(extra))
			ret = fname_line(&out->notes, "request.json: skill %s"
					 " declares no parameter \"%s\" (it has:"
					 " %s); it is passed on as given, as its"
					 " schema allows", sk->id, key, has.buf);
		else
			ret = fname_line(&out->problems, "request.json: skill %s"
					 " has no parameter \"%s\" (it has: %s)",
					 sk->id, key, has.buf);
	}
out:
	sbuf_release(&has);
	json_decref(declared);
	return ret < 0 ? -ENOMEM : 0;
}

int inputs_resolve(const struct skill *sk, const json_t *request,
		   const struct inputs_upload *uploads, size_t nuploads,
		   const char *uploads_path, struct inputs *out)
{
	return inputs_resolve_base(sk, request, NULL, uploads, nuploads,
				   uploads_path, out);
}

int inputs_resolve_base(const struct skill *sk, const json_t *request,
			const json_t *base,
			const struct inputs_upload *uploads, size_t nuploads,
			const char *uploads_path, struct inputs *out)
{
	struct ferr err = FERR_INIT;
	int ret;

	sbuf_init(&out->problems);
	sbuf_init(&out->notes);
	out->input = json_object();
	out->parameter = json_object();
	if (!out->input || !out->parameter)
		return -ENOMEM;
	ret = resolve_inputs(sk, json_object_get(request, "input"), uploads,
			     nuploads, uploads_path, out);
	if (!ret)
		ret = resolve_parameters(sk, base,
					 json_object_get(request, "parameter"),
					 out);
	/* A request stored for another skill (or before the skill changed). */
	if (!ret && request && inputs_check_request(sk, request, &err) < 0)
		ret = fname_line(&out->problems, "request.json: %s",
				 err.message);
	else if (!ret && request)
		ret = add_undeclared(sk, json_object_get(request, "parameter"),
				     out);
	return ret;
}

/* ---- prompt, manifest --------------------------------------------------- */

int inputs_prompt(const struct skill *sk, const char *engine,
		  const struct inputs *in, const char *run_dir,
		  const char *skill_dir, struct sbuf *out, struct ferr *err)
{
	struct sbuf params = SBUF_INIT;
	const struct tmpl *t = NULL;
	json_t *ctx = NULL, *both = NULL;
	int ret;

	/* parsed when the skill loaded */
	ret = skill_prompt_template(sk, engine, &t, err);
	if (ret < 0)
		goto out;
	ret = -ENOMEM;
	both = json_pack("{sOsO}", "input", in->input, "parameter",
			 in->parameter);
	if (!both || fjson_dump(&params, both) < 0)
		goto out;
	ctx = json_pack("{sOsOsOssssssss#}", "input", in->input, "parameter",
			in->parameter, "skill", sk->runner, "skill_id", sk->id,
			"run_dir", run_dir, "skill_dir", skill_dir,
			"params_json", params.buf, params.len);
	if (!ctx)
		goto out;
	ret = tmpl_render(t, ctx, out, err);
out:
	json_decref(ctx);
	json_decref(both);
	sbuf_release(&params);
	return ret;
}

json_t *inputs_manifest(const struct skill *sk)
{
	const json_t *props = properties(sk->output_schema);
	json_t *list = json_array(), *required = required_set(sk->output_schema);
	const char *key;
	json_t *prop;

	if (!list || !required) {
		json_decref(list);
		json_decref(required);
		return NULL;
	}
	json_object_foreach((json_t *)props, key, prop) {
		const char *type = json_string_value(json_object_get(prop, "x-type"));
		const char *role = json_string_value(json_object_get(prop, "x-role"));
		const char *file = json_string_value(json_object_get(prop, "x-filename"));

		if (!type || (strcmp(type, "artifact") && strcmp(type, "file")))
			continue;
		if (json_array_append_new(list, json_pack("{sssssb}",
				"role", role ? role : "output",
				"pattern", file ? file : key,
				"required", json_object_get(required, key) != NULL)) < 0) {
			json_decref(list);
			list = NULL;
			break;
		}
	}
	json_decref(required);
	return list;
}
