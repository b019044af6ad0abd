/* graph_check: what a node or an edge document may hold, checked and made
 * canonical (JSON only: no store); see graph.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fname.h"
#include "graph/graph_i.h"
#include "graph/tools.h"

/* Longest id: a file name of 255 bytes minus ".json". */
#define GRAPH_ID_MAX 250

#define DEFAULT_VERSION "1.2"
#define DEFAULT_MACHINE "c2_m4_cpu"

static const char *const node_fields[] = {
	"id", "node_uuid", "node_version", "label", "position_x",
	"position_y", "system_values", "input_parameters",
	"output_parameters", NULL
};
#define NODE_FIELDS_TEXT "id, node_uuid, node_version, label," \
	" position_x, position_y, system_values, input_parameters," \
	" output_parameters"

const char *const graph_edge_fields[] = {
	"id", "source_node_id", "source_parameter_name", "target_node_id",
	"target_parameter_name", NULL
};
#define EDGE_FIELDS_TEXT "id, source_node_id, source_parameter_name," \
	" target_node_id, target_parameter_name"

static const char *const system_fields[] = {
	"machine_type", "image", "docker_image", NULL
};
static const char *const param_fields[] = { "name", "type", "value", NULL };

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

/* ---- small helpers ------------------------------------------------------ */

/*
 * An id (a file name stem): 1..GRAPH_ID_MAX bytes of UTF-8 (it is a JSON
 * string too), no '/' or NUL, not "." or "..".
 */
int graph_check_id(const char *where, const char *what, const char *id,
		   size_t len, struct ferr *err)
{
	if (!len)
		return ferr_set(err, -EINVAL, "%s%s is empty", where, what);
	if (memchr(id, '\0', len))
		return ferr_set(err, -EINVAL, "%s%s contains a NUL character",
				where, what);
	if (len > GRAPH_ID_MAX)
		return ferr_set(err, -ENAMETOOLONG,
				"%s%s \"%.40s...\" is longer than %d bytes",
				where, what, id, GRAPH_ID_MAX);
	if (memchr(id, '/', len))
		return ferr_set(err, -EINVAL, "%s%s \"%s\" contains '/'",
				where, what, id);
	if (!strcmp(id, ".") || !strcmp(id, ".."))
		return ferr_set(err, -EINVAL, "%s%s cannot be \"%s\"", where,
				what, id);
	if (!fname_valid_utf8(id, len))
		return ferr_set(err, -EINVAL, "%s%s is not valid UTF-8", where,
				what);
	return 0;
}

/*
 * The string member `key` of `obj`: 1 and *out when present, 0 when
 * absent, -EINVAL for another type, an empty string (when `nonempty`) or
 * a NUL inside (names are C strings here).
 */
static int get_str(const json_t *obj, const char *key, const char *where,
		   const char *path, bool nonempty, const char **out,
		   struct ferr *err)
{
	const json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || (nonempty && !json_string_length(v)))
		return ferr_set(err, -EINVAL, "%s\"%s%s\" must be a %sstring",
				where, path, key, nonempty ? "non-empty " : "");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return ferr_set(err, -EINVAL,
				"%s\"%s%s\" contains a NUL character", where,
				path, key);
	*out = json_string_value(v);
	return 1;
}

int graph_unknown_fields(const json_t *obj, const char *const *fields,
			 const char *where, const char *path,
			 const char *has, struct ferr *err)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
		if (!in_list(fields, key))
			return ferr_set(err, -EINVAL,
					"%sunknown field \"%s%s\" (%s)", where,
					path, key, has);
	return 0;
}

/* Python's type(value).__name__ for a JSON value. */
static const char *py_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING: return "str";
	case JSON_INTEGER: return "int";
	case JSON_REAL: return "float";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	case JSON_ARRAY: return "list";
	case JSON_OBJECT: return "dict";
	default: return "NoneType";
	}
}

/* obj[key] itself (shared, not copied) when present, else `dflt`. */
static json_t *given_or(const json_t *obj, const char *key, json_t *dflt)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return dflt;
	json_decref(dflt);
	return json_incref(v);
}

/* Set a member, taking the reference; false on ENOMEM. */
bool graph_put(json_t *obj, const char *key, json_t *v)
{
	return v && !json_object_set_new(obj, key, v);
}

/* ---- nodes -------------------------------------------------------------- */

static int build_params(const json_t *list, const char *where, json_t *out,
			struct ferr *err)
{
	struct smap names = SMAP_INIT;
	const json_t *p;
	size_t i;
	int ret = 0;

	json_array_foreach(list, i, p) {
		char path[48];
		const char *name, *type;
		const json_t *value;
		json_t *q;
		size_t first = 0;
		bool had;

		snprintf(path, sizeof(path), "input_parameters[%zu].", i);
		if (!json_is_object(p)) {
			ret = ferr_set(err, -EINVAL,
				       "%s\"input_parameters[%zu]\" must be an object",
				       where, i);
			goto out;
		}
		ret = graph_unknown_fields(p, param_fields, where, path,
					   "a parameter has name, type, value", err);
		if (ret < 0)
			goto out;
		ret = get_str(p, "name", where, path, true, &name, err);
		if (ret == 0)
			ret = ferr_set(err, -EINVAL,
				       "%sinput_parameters[%zu] has no \"name\"",
				       where, i);
		if (ret < 0)
			goto out;
		ret = get_str(p, "type", where, path, false, &type, err);
		if (ret < 0)
			goto out;
		value = json_object_get(p, "value");
		ret = graph_smap_put(&names, name, strlen(name), i, &had);
		if (ret < 0)
			goto out;
		if (had) {
			graph_smap_get(&names, name, strlen(name), &first);
			ret = ferr_set(err, -EINVAL,
				       "%sinput_parameters[%zu]: name \"%s\" repeats input_parameters[%zu]",
				       where, i, name, first);
			goto out;
		}
		q = json_object();
		if (!q || json_array_append_new(out, q) ||
		    !graph_put(q, "name", given_or(p, "name", NULL)) ||
		    !graph_put(q, "type", type ? given_or(p, "type", NULL)
					 : json_string(py_type(value ? value
								     : json_null()))) ||
		    !graph_put(q, "value", value ? json_incref((json_t *)value)
					   : json_null())) {
			ret = -ENOMEM;
			goto out;
		}
	}
out:
	graph_smap_free(&names);
	return ret;
}

/*
 * Check a node object and build its canonical form: every field, in the
 * documented order.  `file_id`: the id the file name gives (NULL inside
 * parameters.json, where the node must carry its id).  node_uuid is null
 * when the node has none; the caller fills it.
 */
int graph_node_build(const json_t *v, const char *file_id,
		     const struct graph_tools *tools, const char *where,
		     json_t **out, struct ferr *err)
{
	const char *id, *uuid, *version, *label, *s;
	const json_t *x, *y, *sys, *in, *outp, *tool;
	json_t *doc = NULL, *sv, *params;
	int ret;

	*out = NULL;
	if (!json_is_object(v))
		return ferr_set(err, -EINVAL, "%sa node must be a JSON object",
				where);
	ret = graph_unknown_fields(v, node_fields, where, "",
				   "a node has " NODE_FIELDS_TEXT, err);
	if (ret < 0)
		return ret;
	ret = get_str(v, "id", where, "", false, &id, err);
	if (ret < 0)
		return ret;
	if (id && graph_check_id(where, "\"id\"", id, strlen(id), err) < 0)
		return -EINVAL;
	if (file_id && id && strcmp(id, file_id))
		return ferr_set(err, -EINVAL,
				"%sid \"%s\" disagrees with the file name (%s.json)",
				where, id, file_id);
	if (!id && !file_id)
		return ferr_set(err, -EINVAL, "%sa node needs an \"id\"", where);
	if (!id)
		id = file_id;
	if ((ret = get_str(v, "node_uuid", where, "", true, &uuid, err)) < 0 ||
	    (ret = get_str(v, "node_version", where, "", false, &version,
			   err)) < 0)
		return ret;
	ret = get_str(v, "label", where, "", true, &label, err);
	if (ret == 0)
		ret = ferr_set(err, -EINVAL, "%sa node needs a \"label\"", where);
	if (ret < 0)
		return ret;
	x = json_object_get(v, "position_x");
	y = json_object_get(v, "position_y");
	if (x && !json_is_number(x))
		return ferr_set(err, -EINVAL, "%s\"position_x\" must be a number",
				where);
	if (y && !json_is_number(y))
		return ferr_set(err, -EINVAL, "%s\"position_y\" must be a number",
				where);
	sys = json_object_get(v, "system_values");
	if (sys && !json_is_object(sys))
		return ferr_set(err, -EINVAL,
				"%s\"system_values\" must be an object", where);
	if (sys) {
		ret = graph_unknown_fields(sys, system_fields, where,
					   "system_values.",
					   "system_values has machine_type, image, docker_image",
					   err);
		for (int i = 0; !ret && system_fields[i]; i++)
			ret = get_str(sys, system_fields[i], where,
				      "system_values.", false, &s, err);
		if (ret < 0)
			return ret;
	}
	in = json_object_get(v, "input_parameters");
	outp = json_object_get(v, "output_parameters");
	if (in && !json_is_array(in))
		return ferr_set(err, -EINVAL,
				"%s\"input_parameters\" must be an array", where);
	if (outp && !json_is_array(outp))
		return ferr_set(err, -EINVAL,
				"%s\"output_parameters\" must be an array", where);

	tool = graph_tools_entry(tools, label);
	doc = json_object();
	sv = json_object();
	params = json_array();
	if (!doc || !sv || !params) {
		json_decref(sv);
		json_decref(params);
		ret = -ENOMEM;
		goto out;
	}
	if (!graph_put(doc, "id", json_object_get(v, "id") ? given_or(v, "id", NULL)
						     : json_string(id)) ||
	    !graph_put(doc, "node_uuid", uuid ? given_or(v, "node_uuid", NULL)
					: json_null()) ||
	    !graph_put(doc, "node_version", version ? given_or(v, "node_version", NULL)
				      : json_string(DEFAULT_VERSION)) ||
	    !graph_put(doc, "label", given_or(v, "label", NULL)) ||
	    !graph_put(doc, "position_x", x ? json_incref((json_t *)x)
				      : json_real(0.0)) ||
	    !graph_put(doc, "position_y", y ? json_incref((json_t *)y)
				      : json_real(0.0)) ||
	    !graph_put(doc, "system_values", sv)) {
		json_decref(params);
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; system_fields[i]; i++) {
		const json_t *given = json_object_get(sys, system_fields[i]);
		const json_t *mapped = json_object_get(tool, system_fields[i]);
		const char *dflt = i == 0 ? DEFAULT_MACHINE : "";

		if (!graph_put(sv, system_fields[i],
			       given ? json_incref((json_t *)given)
			       : mapped ? json_incref((json_t *)mapped)
					: json_string(dflt))) {
			json_decref(params);
			ret = -ENOMEM;
			goto out;
		}
	}
	if (!graph_put(doc, "input_parameters", params)) {
		ret = -ENOMEM;
		goto out;
	}
	if (in) {
		ret = build_params(in, where, params, err);
		if (ret < 0)
			goto out;
	}
	if (!graph_put(doc, "output_parameters",
		       outp ? json_incref((json_t *)outp) : json_array())) {
		ret = -ENOMEM;
		goto out;
	}
	*out = doc;
	doc = NULL;
out:
	json_decref(doc);
	return ret;
}

/* Whether a node (canonical) has input parameter `name` under the rule. */
bool graph_takes_input(const json_t *node, const char *name)
{
	const json_t *list = json_object_get(node, "input_parameters");
	const json_t *p;
	size_t i;

	if (!json_array_size(list))
		return !strcmp(name, "input");
	json_array_foreach(list, i, p)
		if (!strcmp(json_string_value(json_object_get(p, "name")), name))
			return true;
	return false;
}

/* Why an edge cannot target `name` of node `id`. */
int graph_no_input(const json_t *node, const char *id, const char *name,
		   const char *where, struct ferr *err)
{
	const json_t *list = json_object_get(node, "input_parameters");
	struct sbuf have = SBUF_INIT;
	const json_t *p;
	size_t i;
	int ret;

	if (!err)
		return -EINVAL;
	if (!json_array_size(list))
		return ferr_set(err, -EINVAL,
				"%snode \"%s\" has no input parameter \"%s\" (it has none, so an edge into it uses \"input\")",
				where, id, name);
	json_array_foreach(list, i, p)
		sbuf_addf(&have, "%s%s", i ? ", " : "",
			  json_string_value(json_object_get(p, "name")));
	ret = ferr_set(err, -EINVAL,
		       "%snode \"%s\" has no input parameter \"%s\" (it has: %s)",
		       where, id, name, have.buf);
	sbuf_release(&have);
	return ret;
}

/* ---- edges -------------------------------------------------------------- */

int graph_edge_check(const json_t *v, const char *file_id, const char *where,
		     struct edge_in *e, struct ferr *err)
{
	static const char *const what[5] = {
		NULL, "source_node_id", "source_parameter_name",
		"target_node_id", "target_parameter_name"
	};
	int ret;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(v))
		return ferr_set(err, -EINVAL, "%san edge must be a JSON object",
				where);
	ret = graph_unknown_fields(v, graph_edge_fields, where, "",
				   "an edge has " EDGE_FIELDS_TEXT, err);
	if (ret < 0)
		return ret;
	ret = get_str(v, "id", where, "", false, &e->f[0], err);
	if (ret < 0)
		return ret;
	if (e->f[0] && graph_check_id(where, "\"id\"", e->f[0], strlen(e->f[0]),
				      err) < 0)
		return -EINVAL;
	if (file_id && e->f[0] && strcmp(e->f[0], file_id))
		return ferr_set(err, -EINVAL,
				"%sid \"%s\" disagrees with the file name (%s.json)",
				where, e->f[0], file_id);
	if (!e->f[0] && !file_id)
		return ferr_set(err, -EINVAL, "%san edge needs an \"id\"",
				where);
	if (!e->f[0])
		e->f[0] = file_id;
	for (int i = 1; i < 5; i++) {
		char name[32];

		ret = get_str(v, what[i], where, "", true, &e->f[i], err);
		if (ret == 0 && i != 2)
			ret = ferr_set(err, -EINVAL, "%san edge needs \"%s\"",
				       where, what[i]);
		if (ret < 0)
			return ret;
		/* ids even of nodes not there yet: a pending edge keeps them */
		snprintf(name, sizeof(name), "\"%s\"", what[i]);
		if ((i == 1 || i == 3) &&
		    graph_check_id(where, name, e->f[i], strlen(e->f[i]), err) < 0)
			return -EINVAL;
	}
	return 0;
}
