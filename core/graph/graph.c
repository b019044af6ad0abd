#include "lib/fclock.h"
#include "graph/graph.h"
#include "graph/tools.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/fjson.h"
#include "graph/jobspec.h"
#include "lib/fname.h"
#include "lib/utf8.h"

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

static const char *const edge_fields[] = {
	"id", "source_node_id", "source_parameter_name", "target_node_id",
	"target_parameter_name", NULL
};
#define EDGE_FIELDS_TEXT "id, source_node_id, source_parameter_name," \
	" target_node_id, target_parameter_name"

static const char *const system_fields[] = {
	"machine_type", "image", "docker_image", NULL
};
static const char *const param_fields[] = { "name", "type", "value", NULL };

/* The keywords of the MatMaster rule for an edge's target parameter. */
static const char *const file_words[] = {
	"file", "path", "url", "input", "output", "structure", "data",
	"result", NULL
};

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

/* ---- a string -> index map (ids, edge keys) ----------------------------- */

struct smap_ent {
	char *key;	/* NULL: empty slot */
	size_t len;
	size_t val;
};

struct smap {
	struct smap_ent *tab;
	size_t cap;	/* a power of two, or 0 */
	size_t n;
};

#define SMAP_INIT { NULL, 0, 0 }

static uint64_t smap_hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static struct smap_ent *smap_slot(struct smap_ent *tab, size_t cap,
				  const char *key, size_t len)
{
	size_t i = (size_t)smap_hash(key, len) & (cap - 1);

	while (tab[i].key && (tab[i].len != len ||
			      memcmp(tab[i].key, key, len)))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static bool smap_get(const struct smap *m, const char *key, size_t len,
		     size_t *val)
{
	struct smap_ent *e;

	if (!m->cap)
		return false;
	e = smap_slot(m->tab, m->cap, key, len);
	if (!e->key)
		return false;
	if (val)
		*val = e->val;
	return true;
}

static int smap_grow(struct smap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct smap_ent *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->tab[i].key)
			*smap_slot(tab, cap, m->tab[i].key, m->tab[i].len) =
				m->tab[i];
	free(m->tab);
	m->tab = tab;
	m->cap = cap;
	return 0;
}

/* Add key -> val; a key already present keeps its value (*had set). */
static int smap_put(struct smap *m, const char *key, size_t len, size_t val,
		    bool *had)
{
	struct smap_ent *e;

	if (had)
		*had = false;
	if ((m->n + 1) * 2 > m->cap && smap_grow(m) < 0)
		return -ENOMEM;
	e = smap_slot(m->tab, m->cap, key, len);
	if (e->key) {
		if (had)
			*had = true;
		return 0;
	}
	e->key = malloc(len + 1);
	if (!e->key)
		return -ENOMEM;
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	e->len = len;
	e->val = val;
	m->n++;
	return 0;
}

static void smap_free(struct smap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->tab[i].key);
	free(m->tab);
	m->tab = NULL;
	m->cap = m->n = 0;
}

/* An unambiguous key for an edge's four fields (lengths first). */
static int edge_key(struct sbuf *key, const char *const f[4])
{
	sbuf_reset(key);
	for (int i = 0; i < 4; i++)
		if (sbuf_addf(key, "%zu:", strlen(f[i])) < 0 ||
		    sbuf_addstr(key, f[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* ---- writing ------------------------------------------------------------ */

/*
 * A JSON string as fjson writes it.  Names almost never need escaping,
 * so those are copied; the rest go through fjson itself, which keeps the
 * output byte-identical to Python's.
 */
static int put_str(struct sbuf *out, const char *s, size_t n)
{
	json_t *j;
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == '"' || c == '\\')
			break;
	}
	if (i == n) {
		if (sbuf_grow(out, n + 2) < 0)
			return -ENOMEM;
		sbuf_addch(out, '"');
		sbuf_add(out, s, n);
		sbuf_addch(out, '"');
		return 0;
	}
	j = json_stringn(s, n);
	if (!j)
		return -EIO;	/* not UTF-8: the database was damaged */
	ret = fjson_dump(out, j);
	json_decref(j);
	return ret;
}

/* A newline and the indentation of nesting `level`. */
static int put_nl(struct sbuf *out, int level)
{
	size_t n = 1 + 2 * (size_t)level;

	if (sbuf_grow(out, n) < 0)
		return -ENOMEM;
	out->buf[out->len] = '\n';
	memset(out->buf + out->len + 1, ' ', n - 1);
	sbuf_setlen(out, out->len + n);
	return 0;
}

/*
 * An edge object nested `level` deep, as json.dumps(indent=2) writes it.
 * f[i], n[i]: id, source, source parameter, target, target parameter
 * (NULL: a pending edge that gives none, left out).
 */
static int put_edge(struct sbuf *out, int level, const char *const f[5],
		    const size_t n[5])
{
	int ret = sbuf_addch(out, '{');

	for (int i = 0; !ret && i < 5; i++) {
		if (!f[i])
			continue;
		ret = put_nl(out, level + 1);
		if (!ret)
			ret = sbuf_addch(out, '"');
		if (!ret)
			ret = sbuf_addstr(out, edge_fields[i]);
		if (!ret)
			ret = sbuf_add(out, "\": ", 3);
		if (!ret)
			ret = put_str(out, f[i], n[i]);
		if (!ret && i < 4)
			ret = sbuf_addch(out, ',');
	}
	if (!ret)
		ret = put_nl(out, level);
	if (!ret)
		ret = sbuf_addch(out, '}');
	return ret;
}

/*
 * A top-level document nested `level` deep.  A JSON text never holds a
 * raw newline inside a string, so indenting after every newline is
 * exactly what json.dumps(indent=2) does for the deeper position.
 */
static int put_nested(struct sbuf *out, const char *s, size_t n, int level)
{
	size_t lines = 0, pad = 2 * (size_t)level;
	const char *p, *end = s + n;
	char *w;

	for (p = s; (p = memchr(p, '\n', (size_t)(end - p))); p++)
		lines++;
	if (sbuf_grow(out, n + lines * pad) < 0)
		return -ENOMEM;
	w = out->buf + out->len;
	for (p = s; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t run = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		memcpy(w, p, run);
		w += run;
		p += run;
		if (nl) {
			memset(w, ' ', pad);
			w += pad;
		}
	}
	sbuf_setlen(out, (size_t)(w - out->buf));
	return 0;
}

/*
 * parameters.json is assembled piece by piece: doc_open, items of
 * "nodes", doc_next_list, items of "edges", doc_close.
 */
static int doc_open(struct sbuf *out)
{
	return sbuf_addstr(out, "{\n  \"nodes\": [");
}

/* Before the next item of a list (`count` items so far). */
static int doc_item(struct sbuf *out, size_t count)
{
	if (count && sbuf_addch(out, ',') < 0)
		return -ENOMEM;
	return put_nl(out, 2);
}

static int doc_end_list(struct sbuf *out, size_t count)
{
	if (count && put_nl(out, 1) < 0)
		return -ENOMEM;
	return sbuf_addch(out, ']');
}

static int doc_next_list(struct sbuf *out, size_t count)
{
	if (doc_end_list(out, count) < 0)
		return -ENOMEM;
	return sbuf_addstr(out, ",\n  \"edges\": [");
}

/* uuid NULL: null. */
static int doc_close(struct sbuf *out, size_t count, const char *uuid,
		     size_t len)
{
	int ret = doc_end_list(out, count);

	if (!ret)
		ret = sbuf_addstr(out, ",\n  \"meta\": {\n    \"template_uuid\": ");
	if (!ret)
		ret = uuid ? put_str(out, uuid, len) : sbuf_addstr(out, "null");
	if (!ret)
		ret = sbuf_addstr(out, "\n  }\n}");
	return ret;
}

/* ---- small helpers ------------------------------------------------------ */

/* A random version-4 UUID, lowercase 8-4-4-4-12. */
static int make_uuid(char out[37])
{
	unsigned char b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t r = getrandom(b + got, sizeof(b) - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

/*
 * An id (a file name stem): 1..GRAPH_ID_MAX bytes of UTF-8 (it is a JSON
 * string too), no '/' or NUL, not "." or "..".
 */
static int check_id(const char *where, const char *what, const char *id,
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

static const char *kind_name(enum graph_kind kind)
{
	return kind == GRAPH_NODE ? "node" : "edge";
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

static int unknown_fields(const json_t *obj, const char *const *fields,
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
static bool put(json_t *obj, const char *key, json_t *v)
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
		ret = unknown_fields(p, param_fields, where, path,
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
		ret = smap_put(&names, name, strlen(name), i, &had);
		if (ret < 0)
			goto out;
		if (had) {
			smap_get(&names, name, strlen(name), &first);
			ret = ferr_set(err, -EINVAL,
				       "%sinput_parameters[%zu]: name \"%s\" repeats input_parameters[%zu]",
				       where, i, name, first);
			goto out;
		}
		q = json_object();
		if (!q || json_array_append_new(out, q) ||
		    !put(q, "name", given_or(p, "name", NULL)) ||
		    !put(q, "type", type ? given_or(p, "type", NULL)
					 : json_string(py_type(value ? value
								     : json_null()))) ||
		    !put(q, "value", value ? json_incref((json_t *)value)
					   : json_null())) {
			ret = -ENOMEM;
			goto out;
		}
	}
out:
	smap_free(&names);
	return ret;
}

/*
 * Check a node object and build its canonical form: every field, in the
 * documented order.  `file_id`: the id the file name gives (NULL inside
 * parameters.json, where the node must carry its id).  node_uuid is null
 * when the node has none; the caller fills it.
 */
static int node_build(const json_t *v, const char *file_id,
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
	ret = unknown_fields(v, node_fields, where, "",
			     "a node has " NODE_FIELDS_TEXT, err);
	if (ret < 0)
		return ret;
	ret = get_str(v, "id", where, "", false, &id, err);
	if (ret < 0)
		return ret;
	if (id && check_id(where, "\"id\"", id, strlen(id), err) < 0)
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
		ret = unknown_fields(sys, system_fields, where,
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
	if (!put(doc, "id", json_object_get(v, "id") ? given_or(v, "id", NULL)
						     : json_string(id)) ||
	    !put(doc, "node_uuid", uuid ? given_or(v, "node_uuid", NULL)
					: json_null()) ||
	    !put(doc, "node_version", version ? given_or(v, "node_version", NULL)
				      : json_string(DEFAULT_VERSION)) ||
	    !put(doc, "label", given_or(v, "label", NULL)) ||
	    !put(doc, "position_x", x ? json_incref((json_t *)x)
				      : json_real(0.0)) ||
	    !put(doc, "position_y", y ? json_incref((json_t *)y)
				      : json_real(0.0)) ||
	    !put(doc, "system_values", sv)) {
		json_decref(params);
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; system_fields[i]; i++) {
		const json_t *given = json_object_get(sys, system_fields[i]);
		const json_t *mapped = json_object_get(tool, system_fields[i]);
		const char *dflt = i == 0 ? DEFAULT_MACHINE : "";

		if (!put(sv, system_fields[i],
			 given ? json_incref((json_t *)given)
			 : mapped ? json_incref((json_t *)mapped)
				  : json_string(dflt))) {
			json_decref(params);
			ret = -ENOMEM;
			goto out;
		}
	}
	if (!put(doc, "input_parameters", params)) {
		ret = -ENOMEM;
		goto out;
	}
	if (in) {
		ret = build_params(in, where, params, err);
		if (ret < 0)
			goto out;
	}
	if (!put(doc, "output_parameters",
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
static bool takes_input(const json_t *node, const char *name)
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
static int no_input(const json_t *node, const char *id, const char *name,
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

/* The MatMaster rule's target parameter for a node (canonical). */
static const char *rule_input(const json_t *node)
{
	const json_t *list = json_object_get(node, "input_parameters");
	const json_t *p;
	size_t i;

	json_array_foreach(list, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));

		/* ASCII case folding, as the rule's keywords are ASCII (a
		 * name of any length: no copy to fold) */
		for (int w = 0; file_words[w]; w++)
			if (strcasestr(name, file_words[w]))
				return name;
	}
	p = json_array_get(list, 0);
	return p ? json_string_value(json_object_get(p, "name")) : "input";
}

/* ---- edges -------------------------------------------------------------- */

struct edge_in {
	const char *f[5];	/* id, source, source param (NULL: default),
				 * target, target param */
};

static int edge_check(const json_t *v, const char *file_id, const char *where,
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
	ret = unknown_fields(v, edge_fields, where, "",
			     "an edge has " EDGE_FIELDS_TEXT, err);
	if (ret < 0)
		return ret;
	ret = get_str(v, "id", where, "", false, &e->f[0], err);
	if (ret < 0)
		return ret;
	if (e->f[0] && check_id(where, "\"id\"", e->f[0], strlen(e->f[0]),
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
		    check_id(where, name, e->f[i], strlen(e->f[i]), err) < 0)
			return -EINVAL;
	}
	return 0;
}

/* ---- the store ------------------------------------------------------------ */

/* Stamp the session's graph as changed now; -ENOENT: no such session. */
static int touch(struct store *st, int64_t session, int64_t now)
{
	/* strictly later, so a change within one clock tick still shows */
	static const char sql[] = "UPDATE sessions SET graph_mtime_ns ="
		" max(?2, graph_mtime_ns + 1) WHERE id = ?1";
	int ret = store_run(st, sql, STORE_INT(session), STORE_INT(now));

	if (ret < 0)
		return ret;
	return store_changes(st) ? 0 : -ENOENT;
}

static int session_exists(struct store *st, int64_t session)
{
	static const char sql[] = "SELECT 1 FROM sessions WHERE id = ?1";
	int64_t one;

	return store_int(st, sql, &one, STORE_INT(session));
}

/*
 * A node by id: *seq (0: none) and *doc (parsed; NULL for a draft or
 * none).  Either out may be NULL.
 */
static int load_node(struct store *st, int64_t session, const char *id,
		     int64_t *seq, json_t **doc)
{
	static const char sql[] = "SELECT seq, doc FROM graph_nodes"
		" WHERE session = ?1 AND id = ?2";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	if (seq)
		*seq = 0;
	if (doc)
		*doc = NULL;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_text(q, 2, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		if (seq)
			*seq = sqlite3_column_int64(q, 0);
		if (doc && sqlite3_column_type(q, 1) != SQLITE_NULL) {
			ret = store_column_json(q, 1, doc);
		}
	} else if (rc != SQLITE_DONE) {
		ret = store_errno(rc);
	}
	store_done(q);
	return ret;
}

/* node_uuid of `node`: the one `old` (the stored node, or NULL) has, or
 * a fresh one. */
static int keep_uuid(json_t *node, const json_t *old)
{
	const char *s = json_string_value(json_object_get(old, "node_uuid"));
	char fresh[37];
	int ret;

	if (!s) {
		ret = make_uuid(fresh);
		if (ret < 0)
			return ret;
		s = fresh;
	}
	return put(node, "node_uuid", json_string(s)) ? 0 : -ENOMEM;
}

/* keep_uuid() with the stored node `id`. */
static int uuid_for(struct store *st, int64_t session, const char *id,
		    json_t *node)
{
	json_t *old = NULL;
	int ret = load_node(st, session, id, NULL, &old);

	if (!ret)
		ret = keep_uuid(node, old);
	json_decref(old);
	return ret;
}

/* Whether `to` is reachable from `from` over stored edges other than
 * edge `skip` (NULL: none).  O(what `from` reaches). */
static int reaches(struct store *st, int64_t session, const char *from,
		   const char *to, const char *skip, bool *found)
{
	static const char sql[] =
		"WITH RECURSIVE r(n) AS (SELECT ?2"
		" UNION SELECT e.target FROM r JOIN graph_edges e"
		"  ON e.session = ?1 AND e.source = r.n"
		"  WHERE e.id IS NOT ?4 AND e.pending_why IS NULL)"
		" SELECT 1 FROM r WHERE n = ?3 LIMIT 1";
	int64_t one;
	int ret = store_int(st, sql, &one, STORE_INT(session), STORE_TEXT(from),
			    STORE_TEXT(to), STORE_TEXT(skip));

	*found = ret == 0;
	return ret == -ENOENT ? 0 : ret;
}

/*
 * Append a shortest path "from -> ... -> to" over stored edges (other
 * than `skip`); called only when one exists.  Breadth-first over the
 * reachable part, remembering each node's parent.
 */
static int put_path(struct store *st, int64_t session, const char *from,
		    const char *to, const char *skip, struct sbuf *out)
{
	static const char sql[] = "SELECT target FROM graph_edges"
		" WHERE session = ?1 AND source = ?2 AND id IS NOT ?3"
		" AND pending_why IS NULL";
	struct smap seen = SMAP_INIT;
	char **ids = NULL;
	size_t *parent = NULL, n = 0, alloc = 0, head = 0, at = SIZE_MAX;
	int ret;

	ret = smap_put(&seen, from, strlen(from), 0, NULL);
	if (ret < 0)
		goto out;
	alloc = 64;
	ids = malloc(alloc * sizeof(*ids));
	parent = malloc(alloc * sizeof(*parent));
	if (!ids || !parent || !(ids[0] = strdup(from))) {
		ret = -ENOMEM;
		goto out;
	}
	parent[0] = SIZE_MAX;
	n = 1;
	if (!strcmp(from, to))
		at = 0;
	while (at == SIZE_MAX && head < n) {
		sqlite3_stmt *q = store_stmt(st, sql);
		int rc;

		if (!q) {
			ret = -EIO;
			goto out;
		}
		sqlite3_bind_int64(q, 1, session);
		sqlite3_bind_text(q, 2, ids[head], -1, SQLITE_STATIC);
		if (skip)
			sqlite3_bind_text(q, 3, skip, -1, SQLITE_STATIC);
		while (at == SIZE_MAX && (rc = sqlite3_step(q)) == SQLITE_ROW) {
			const char *t = (const char *)sqlite3_column_text(q, 0);
			bool had;

			if (!t)
				continue;
			ret = smap_put(&seen, t, strlen(t), n, &had);
			if (ret < 0)
				break;
			if (had)
				continue;
			if (n == alloc) {
				char **ni = realloc(ids, 2 * alloc * sizeof(*ids));
				size_t *np;

				if (ni)
					ids = ni;
				np = ni ? realloc(parent,
						  2 * alloc * sizeof(*parent))
					: NULL;
				if (!np) {
					ret = -ENOMEM;
					break;
				}
				parent = np;
				alloc *= 2;
			}
			if (!(ids[n] = strdup(t))) {
				ret = -ENOMEM;
				break;
			}
			parent[n] = head;
			if (!strcmp(t, to))
				at = n;
			n++;
		}
		store_done(q);
		if (ret < 0)
			goto out;
		head++;
	}
	if (at == SIZE_MAX) {
		ret = -EIO;	/* the caller saw a path a moment ago */
		goto out;
	}
	{
		/* the chain backwards, then written forwards */
		size_t len = 0, *chain;

		for (size_t k = at; k != SIZE_MAX; k = parent[k])
			len++;
		chain = malloc(len * sizeof(*chain));
		if (!chain) {
			ret = -ENOMEM;
			goto out;
		}
		len = 0;
		for (size_t k = at; k != SIZE_MAX; k = parent[k])
			chain[len++] = k;
		for (size_t k = len; k-- > 0 && !ret;)
			ret = sbuf_addf(out, "%s%s", ids[chain[k]],
					k ? " -> " : "");
		free(chain);
	}
out:
	for (size_t k = 0; k < n; k++)
		free(ids[k]);
	free(ids);
	free(parent);
	smap_free(&seen);
	return ret;
}

/*
 * Refuse an edge source -> target that would close a cycle (with the
 * edge `skip` ignored: the old version of the edge being replaced).
 * -EINVAL with "would close a cycle: source -> target -> ... -> source"
 * (the path costs a query per node it reaches: not looked for when err
 * is NULL).
 */
static int check_cycle(struct store *st, int64_t session, const char *src,
		       const char *tgt, const char *skip, const char *where,
		       struct ferr *err, struct sbuf *msg)
{
	bool found = false;
	int ret = 0;

	sbuf_reset(msg);
	if (strcmp(src, tgt)) {
		ret = reaches(st, session, tgt, src, skip, &found);
		if (ret < 0 || !found)
			return ret;
	}
	if (!err)
		return -EINVAL;
	ret = sbuf_addf(msg, "%s -> ", src);
	if (!ret)
		ret = put_path(st, session, tgt, src, skip, msg);
	if (ret < 0)
		return ret;
	return ferr_set(err, -EINVAL, "%swould close a cycle: %s", where,
			msg->buf);
}

/* An equal edge (all four fields) other than `id`: its id, or none. */
static int find_duplicate(struct store *st, int64_t session,
			  const char *const f[5], struct sbuf *dup)
{
	static const char sql[] = "SELECT id FROM graph_edges"
		" WHERE session = ?1 AND source = ?2 AND source_param = ?3"
		" AND target = ?4 AND target_param = ?5 AND id IS NOT ?6"
		" AND pending_why IS NULL LIMIT 1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	sbuf_reset(dup);
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	for (int i = 1; i < 5; i++)
		sqlite3_bind_text(q, i + 1, f[i], -1, SQLITE_STATIC);
	if (f[0])
		sqlite3_bind_text(q, 6, f[0], -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		ret = sbuf_addstr(dup, (const char *)sqlite3_column_text(q, 0));
	else if (rc != SQLITE_DONE)
		ret = store_errno(rc);
	store_done(q);
	return ret;
}

/* A new edge row: of the graph (`why` NULL), or pending for that reason. */
static int insert_edge(struct store *st, int64_t session,
		       const char *const f[5], const char *why, int64_t now)
{
	static const char sql[] = "INSERT INTO graph_edges(session, id,"
		" source, source_param, target, target_param, pending_why,"
		" mtime_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

	return store_run(st, sql, STORE_INT(session), STORE_TEXT(f[0]),
			 STORE_TEXT(f[1]), STORE_TEXT(f[2]), STORE_TEXT(f[3]),
			 STORE_TEXT(f[4]), STORE_TEXT(why), STORE_INT(now));
}

static int insert_node(struct store *st, int64_t session, const char *id,
		       const struct sbuf *doc, int64_t now)
{
	static const char sql[] = "INSERT INTO graph_nodes(session, id, doc,"
		" mtime_ns) VALUES (?1, ?2, ?3, ?4)";

	return store_run(st, sql, STORE_INT(session), STORE_TEXT(id),
			 STORE_TEXTN(doc->buf, doc->len), STORE_INT(now));
}

/* ---- placing edges ---------------------------------------------------------- */

/* What the row of an edge's id holds, against what is to be stored. */
struct edge_was {
	int64_t seq;		/* 0: no row */
	bool in_graph;		/* an edge of the graph: not a draft, not pending */
	bool pending;
	bool same;		/* already exactly what is to be stored */
};

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * The row of edge f[0], compared with the fields f[1..4] (f[2] NULL: a
 * pending edge that gives no source parameter) and `why` (NULL: an edge
 * of the graph, else pending for that reason).
 */
static int load_edge_was(struct store *st, int64_t session,
			 const char *const f[5], const char *why,
			 struct edge_was *was)
{
	static const char sql[] = "SELECT seq, source, source_param, target,"
		" target_param, pending_why FROM graph_edges"
		" WHERE session = ?1 AND id = ?2";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc;

	memset(was, 0, sizeof(*was));
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_text(q, 2, f[0], -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *had = (const char *)sqlite3_column_text(q, 5);
		bool draft = sqlite3_column_type(q, 1) == SQLITE_NULL;

		was->seq = sqlite3_column_int64(q, 0);
		was->in_graph = !draft && !had;
		was->pending = had != NULL;
		was->same = !draft && same_str(had, why);
		for (int i = 1; was->same && i < 5; i++)
			was->same = same_str((const char *)
					     sqlite3_column_text(q, i), f[i]);
	}
	store_done(q);
	return store_errno(rc);
}

/* Why an edge must wait: -ENOENT with the node(s) it waits for. */
static int waits_for(const struct edge_in *e, bool has_src, bool has_tgt,
		     struct ferr *err)
{
	if (!has_src && !has_tgt && !strcmp(e->f[1], e->f[3]))
		return ferr_set(err, -ENOENT,
				"waits for its source and target node \"%s\", which does not exist",
				e->f[1]);
	if (!has_src && !has_tgt)
		return ferr_set(err, -ENOENT,
				"waits for its source node \"%s\" and its target node \"%s\", which do not exist",
				e->f[1], e->f[3]);
	return ferr_set(err, -ENOENT,
			"waits for its %s node \"%s\", which does not exist",
			has_src ? "target" : "source",
			has_src ? e->f[3] : e->f[1]);
}

/*
 * Check edge `e` (as edge_check() left it) against the stored graph; reads
 * only.  0 when it can join the graph (a defaulted source parameter is
 * then set, held in `sp`); -ENOENT + err when a node it names does not
 * exist or is a draft (it waits); -EINVAL + err for an input the target
 * lacks, a duplicate, a cycle.  Its own row (an older version, pending or
 * not) counts in neither check.
 */
static int edge_fits(struct store *st, int64_t session, struct edge_in *e,
		     struct sbuf *sp, struct ferr *err)
{
	struct sbuf scratch = SBUF_INIT;
	json_t *src = NULL, *tgt = NULL;
	int ret;

	if ((ret = load_node(st, session, e->f[1], NULL, &src)) < 0 ||
	    (ret = load_node(st, session, e->f[3], NULL, &tgt)) < 0)
		goto out;
	if (!src || !tgt) {
		ret = waits_for(e, src != NULL, tgt != NULL, err);
		goto out;
	}
	if (!e->f[2]) {
		sbuf_reset(sp);
		ret = sbuf_addf(sp, "out_%s",
				json_string_value(json_object_get(src, "label")));
		if (ret < 0)
			goto out;
		e->f[2] = sp->buf;
	}
	if (!takes_input(tgt, e->f[4])) {
		ret = no_input(tgt, e->f[3], e->f[4], "", err);
		goto out;
	}
	ret = find_duplicate(st, session, e->f, &scratch);
	if (!ret && scratch.len)
		ret = ferr_set(err, -EINVAL, "duplicates %s", scratch.buf);
	if (!ret)
		ret = check_cycle(st, session, e->f[1], e->f[3], e->f[0], "",
				  err, &scratch);
out:
	json_decref(src);
	json_decref(tgt);
	sbuf_release(&scratch);
	return ret;
}

/*
 * Store edge f (f[2] NULL: pending, giving no source parameter) over its
 * row, or as a new row: an edge of the graph (`why` NULL) or a pending
 * one, with why it waits (status shows it).
 */
static int store_edge(struct store *st, int64_t session,
		      const char *const f[5], const char *why,
		      const struct edge_was *was, int64_t now)
{
	static const char sql[] = "UPDATE graph_edges SET source = ?2,"
		" source_param = ?3, target = ?4, target_param = ?5,"
		" pending_why = ?6, mtime_ns = ?7 WHERE seq = ?1";

	if (was->same)
		return 0;
	if (!was->seq)
		return insert_edge(st, session, f, why, now);
	return store_run(st, sql, STORE_INT(was->seq), STORE_TEXT(f[1]),
			 STORE_TEXT(f[2]), STORE_TEXT(f[3]), STORE_TEXT(f[4]),
			 STORE_TEXT(why), STORE_INT(now));
}

/*
 * Whether edge f may wait (GRAPH_PENDING_MAX, GRAPH_PENDING_SIZE): it is
 * written by whoever writes edges/, and unlike an edge of the graph,
 * nothing bounds what a pending one names, or how many there are.
 * -EINVAL + err when it may not; `replaces` a pending edge: no more wait.
 */
static int room_to_wait(struct store *st, int64_t session,
			const char *const f[5], bool replaces, struct ferr *err)
{
	static const char sql[] = "SELECT count(*) FROM graph_edges"
		" WHERE session = ?1 AND pending_why IS NOT NULL";
	struct sbuf text = SBUF_INIT;
	int64_t count = 0;
	size_t n[5];
	int ret;

	for (int i = 0; i < 5; i++)
		n[i] = f[i] ? strlen(f[i]) : 0;
	ret = put_edge(&text, 0, f, n);
	if (!ret && text.len > GRAPH_PENDING_SIZE)
		ret = ferr_set(err, -EINVAL,
			       "too big to wait for its nodes: %zu bytes as its file would show it (at most %d)",
			       text.len, GRAPH_PENDING_SIZE);
	if (!ret && !replaces)
		ret = store_int(st, sql, &count, STORE_INT(session));
	if (!ret && count >= GRAPH_PENDING_MAX)
		ret = ferr_set(err, -EINVAL,
			       "cannot wait for its nodes: %d edges wait already, the most a session keeps (write their nodes, or parameters.json)",
			       GRAPH_PENDING_MAX);
	sbuf_release(&text);
	return ret;
}

/* A pending edge's reason, when it changed (the file did not: no mtime). */
static int set_why(struct store *st, int64_t seq, const char *why,
		   bool *changed)
{
	static const char sql[] = "UPDATE graph_edges SET pending_why = ?2"
		" WHERE seq = ?1 AND pending_why IS NOT ?2";
	int ret = store_run(st, sql, STORE_INT(seq), STORE_TEXT(why));

	if (!ret && store_changes(st))
		*changed = true;
	return ret;
}

/*
 * Validate edge `e` and make it an edge of the graph, inside the caller's
 * transaction: over the row of its id (a draft, a pending edge, an older
 * version) or as a new row.  *was: what that row held (was->same: no
 * change).  -ENOENT or -EINVAL + err as edge_fits(): nothing is stored.
 */
static int place_edge(struct store *st, int64_t session, struct edge_in *e,
		      struct sbuf *sp, int64_t now, struct edge_was *was,
		      struct ferr *err)
{
	int ret = edge_fits(st, session, e, sp, err);

	if (!ret)
		ret = load_edge_was(st, session, e->f, NULL, was);
	if (!ret)
		ret = store_edge(st, session, e->f, NULL, was, now);
	return ret;
}

/* A pending edge's row, copied out: placing runs other statements. */
struct pending_row {
	int64_t seq;
	struct sbuf f[5];	/* id, source, source param, target, target param */
	bool no_param;		/* it gives no source parameter */
};

/*
 * The first pending edge after seq `after` in creation order (-ENOENT:
 * none): one that names node `node`, else one whose two nodes exist (no
 * other change than a node's arrival lets in one that waits for a node).
 * One row at a time: the rows placing changes are behind the cursor.
 */
static int next_pending(struct store *st, int64_t session, const char *node,
			int64_t after, struct pending_row *row)
{
#define PENDING_COLUMNS "SELECT seq, id, source, source_param, target," \
	" target_param FROM graph_edges"
	static const char held_sql[] = PENDING_COLUMNS " e"
		" WHERE session = ?1 AND pending_why IS NOT NULL AND seq > ?2"
		" AND EXISTS (SELECT 1 FROM graph_nodes n WHERE n.session = ?1"
		"  AND n.id = e.source AND n.doc IS NOT NULL)"
		" AND EXISTS (SELECT 1 FROM graph_nodes n WHERE n.session = ?1"
		"  AND n.id = e.target AND n.doc IS NOT NULL)"
		" ORDER BY seq LIMIT 1";
	/* a UNION, as an OR would scan the session's pending edges */
	static const char node_sql[] = PENDING_COLUMNS
		" WHERE session = ?1 AND source = ?3 AND seq > ?2"
		" AND pending_why IS NOT NULL"
		" UNION ALL " PENDING_COLUMNS
		" WHERE session = ?1 AND target = ?3 AND seq > ?2"
		" AND pending_why IS NOT NULL ORDER BY seq LIMIT 1";
#undef PENDING_COLUMNS
	sqlite3_stmt *q = store_stmt(st, node ? node_sql : held_sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_int64(q, 2, after);
	if (node)
		sqlite3_bind_text(q, 3, node, -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		row->seq = sqlite3_column_int64(q, 0);
		row->no_param = sqlite3_column_type(q, 3) == SQLITE_NULL;
		for (int i = 0; !ret && i < 5; i++) {
			sbuf_reset(&row->f[i]);
			ret = sbuf_add(&row->f[i], sqlite3_column_text(q, i + 1),
				       (size_t)sqlite3_column_bytes(q, i + 1));
		}
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	store_done(q);
	return ret;
}

/*
 * Let pending edges join the graph where they now can, inside the
 * caller's transaction, and keep the reason of those that still cannot
 * right (that never fails the caller's write): those next_pending()
 * selects, in creation order, each checked as any edge (so of two equal
 * ones the older joins).  *changed: whether any joined or has a new
 * reason.
 */
static int place_ready(struct store *st, int64_t session, const char *node,
		       int64_t now, bool *changed)
{
	struct pending_row row = { .seq = 0 };
	struct sbuf sp = SBUF_INIT;
	int ret;

	for (int i = 0; i < 5; i++)
		sbuf_init(&row.f[i]);
	*changed = false;
	while (!(ret = next_pending(st, session, node, row.seq, &row))) {
		struct ferr why = FERR_INIT;
		struct edge_was was = { 0 };
		struct edge_in e;

		for (int i = 0; i < 5; i++)
			e.f[i] = row.f[i].buf;
		if (row.no_param)
			e.f[2] = NULL;
		ret = place_edge(st, session, &e, &sp, now, &was, &why);
		if (!ret && !was.same)
			*changed = true;
		/* it waits on or is held back: status says why */
		if (ret == -ENOENT || ret == -EINVAL)
			ret = set_why(st, row.seq, why.message, changed);
		if (ret < 0)
			break;
	}
	for (int i = 0; i < 5; i++)
		sbuf_release(&row.f[i]);
	sbuf_release(&sp);
	return ret == -ENOENT ? 0 : ret;
}

/* ---- items -------------------------------------------------------------- */

#define NODE_ITEM_COLUMNS "seq, session, id, mtime_ns, doc"
#define EDGE_ITEM_COLUMNS "seq, session, id, mtime_ns, source," \
	" source_param, target, target_param, pending_why"

/*
 * The five fields of an edge row from column `col` on (id first); false
 * for a draft.  f[2] is NULL for a pending edge that gives no source
 * parameter.
 */
static bool edge_row(sqlite3_stmt *q, int idcol, int col,
		     const char *f[5], size_t n[5])
{
	f[0] = (const char *)sqlite3_column_text(q, idcol);
	n[0] = (size_t)sqlite3_column_bytes(q, idcol);
	for (int i = 1; i < 5; i++) {
		f[i] = (const char *)sqlite3_column_text(q, col + i - 1);
		n[i] = (size_t)sqlite3_column_bytes(q, col + i - 1);
	}
	return f[0] && f[1] && f[3] && f[4];
}

/* A row of NODE_ITEM_COLUMNS or EDGE_ITEM_COLUMNS; `scratch` sizes edges. */
static int row_to_item(sqlite3_stmt *q, enum graph_kind kind,
		       struct graph_item *it, struct sbuf *scratch)
{
	const char *id = (const char *)sqlite3_column_text(q, 2);

	memset(it, 0, sizeof(*it));
	it->seq = sqlite3_column_int64(q, 0);
	it->session = sqlite3_column_int64(q, 1);
	it->mtime_ns = sqlite3_column_int64(q, 3);
	it->id = strdup(id ? id : "");
	if (!it->id)
		return -ENOMEM;
	if (kind == GRAPH_NODE) {
		it->draft = sqlite3_column_type(q, 4) == SQLITE_NULL;
		it->size = (size_t)sqlite3_column_bytes(q, 4);
	} else {
		const char *f[5];
		size_t n[5];
		int ret;

		it->pending = sqlite3_column_type(q, 8) != SQLITE_NULL;
		it->draft = !edge_row(q, 2, 4, f, n);
		if (!it->draft) {
			sbuf_reset(scratch);
			ret = put_edge(scratch, 0, f, n);
			if (ret < 0) {
				free(it->id);
				it->id = NULL;
				return ret;
			}
			it->size = scratch->len;
		}
	}
	return 0;
}

void graph_items_free(struct graph_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(items[i].id);
	free(items);
}

int graph_list(struct store *st, int64_t session, enum graph_kind kind,
	       struct graph_item **items, size_t *n)
{
	static const char nodes_sql[] = "SELECT " NODE_ITEM_COLUMNS
		" FROM graph_nodes WHERE session = ?1 ORDER BY seq";
	static const char edges_sql[] = "SELECT " EDGE_ITEM_COLUMNS
		" FROM graph_edges WHERE session = ?1 ORDER BY seq";
	sqlite3_stmt *q = store_stmt(st, kind == GRAPH_NODE ? nodes_sql
							    : edges_sql);
	struct sbuf scratch = SBUF_INIT;
	struct graph_item *list = NULL;
	size_t count = 0, alloc = 0;
	int rc, ret = 0;

	*items = NULL;
	*n = 0;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (count == alloc) {
			size_t na = alloc ? alloc * 2 : 16;
			struct graph_item *p = realloc(list, na * sizeof(*p));

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			list = p;
			alloc = na;
		}
		ret = row_to_item(q, kind, &list[count], &scratch);
		if (ret < 0)
			break;
		count++;
	}
	store_done(q);
	sbuf_release(&scratch);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (ret < 0) {
		graph_items_free(list, count);
		return ret;
	}
	*items = list;
	*n = count;
	return 0;
}

static int one_item(sqlite3_stmt *q, enum graph_kind kind,
		    struct graph_item *out)
{
	struct sbuf scratch = SBUF_INIT;
	int rc, ret;

	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		ret = row_to_item(q, kind, out, &scratch);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	store_done(q);
	sbuf_release(&scratch);
	return ret;
}

int graph_find(struct store *st, int64_t session, enum graph_kind kind,
	       const char *id, struct graph_item *out)
{
	static const char nodes_sql[] = "SELECT " NODE_ITEM_COLUMNS
		" FROM graph_nodes WHERE session = ?1 AND id = ?2";
	static const char edges_sql[] = "SELECT " EDGE_ITEM_COLUMNS
		" FROM graph_edges WHERE session = ?1 AND id = ?2";
	sqlite3_stmt *q = store_stmt(st, kind == GRAPH_NODE ? nodes_sql
							    : edges_sql);

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_text(q, 2, id, -1, SQLITE_STATIC);
	return one_item(q, kind, out);
}

int graph_get(struct store *st, enum graph_kind kind, int64_t seq,
	      struct graph_item *out)
{
	static const char nodes_sql[] = "SELECT " NODE_ITEM_COLUMNS
		" FROM graph_nodes WHERE seq = ?1";
	static const char edges_sql[] = "SELECT " EDGE_ITEM_COLUMNS
		" FROM graph_edges WHERE seq = ?1";
	sqlite3_stmt *q = store_stmt(st, kind == GRAPH_NODE ? nodes_sql
							    : edges_sql);

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, seq);
	return one_item(q, kind, out);
}

int graph_render(struct store *st, enum graph_kind kind, int64_t seq,
		 struct sbuf *out)
{
	static const char nodes_sql[] = "SELECT doc FROM graph_nodes"
		" WHERE seq = ?1";
	static const char edges_sql[] = "SELECT id, source, source_param,"
		" target, target_param FROM graph_edges WHERE seq = ?1";
	sqlite3_stmt *q = store_stmt(st, kind == GRAPH_NODE ? nodes_sql
							    : edges_sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, seq);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && kind == GRAPH_NODE) {
		if (sqlite3_column_type(q, 0) != SQLITE_NULL)
			ret = sbuf_add(out, sqlite3_column_text(q, 0),
				       (size_t)sqlite3_column_bytes(q, 0));
	} else if (rc == SQLITE_ROW) {
		const char *f[5];
		size_t n[5];

		if (edge_row(q, 0, 1, f, n))
			ret = put_edge(out, 0, f, n);
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	store_done(q);
	return ret;
}

/* ---- drafts --------------------------------------------------------------- */

int graph_create_draft(struct store *st, int64_t session,
		       enum graph_kind kind, const char *id, int64_t *seq)
{
	static const char nodes_sql[] = "INSERT INTO graph_nodes(session, id,"
		" mtime_ns) VALUES (?1, ?2, ?3)";
	static const char edges_sql[] = "INSERT INTO graph_edges(session, id,"
		" mtime_ns) VALUES (?1, ?2, ?3)";
	int ret;

	ret = check_id("", "id", id, strlen(id), NULL);
	if (ret < 0)
		return ret;
	ret = session_exists(st, session);
	if (ret < 0)
		return ret;
	ret = store_run(st, kind == GRAPH_NODE ? nodes_sql : edges_sql,
			STORE_INT(session), STORE_TEXT(id),
			STORE_INT(fclock_now_ns()));
	if (ret == 0)
		*seq = sqlite3_last_insert_rowid(store_db(st));
	return ret;
}

int graph_drop_draft(struct store *st, enum graph_kind kind, int64_t seq)
{
	static const char nodes_sql[] = "DELETE FROM graph_nodes"
		" WHERE seq = ?1 AND doc IS NULL";
	static const char edges_sql[] = "DELETE FROM graph_edges"
		" WHERE seq = ?1 AND source IS NULL";

	return store_run(st, kind == GRAPH_NODE ? nodes_sql : edges_sql,
			 STORE_INT(seq));
}

int graph_drop_all_drafts(struct store *st)
{
	int ret = store_begin(st);

	if (ret < 0)
		return ret;
	ret = store_exec(st, "DELETE FROM graph_nodes WHERE doc IS NULL");
	if (!ret)
		ret = store_exec(st, "DELETE FROM graph_edges"
				 " WHERE source IS NULL");
	if (ret < 0) {
		store_rollback(st);
		return ret;
	}
	return store_commit(st);
}

/* ---- commit ----------------------------------------------------------------- */

/* Edges into node `id` must still find their parameter in `node`. */
static int check_edges_into(struct store *st, int64_t session, const char *id,
			    const json_t *node, struct ferr *err)
{
	static const char sql[] = "SELECT id, target_param FROM graph_edges"
		" WHERE session = ?1 AND target = ?2 AND pending_why IS NULL";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_text(q, 2, id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *eid = (const char *)sqlite3_column_text(q, 0);
		const char *param = (const char *)sqlite3_column_text(q, 1);

		if (!takes_input(node, param)) {
			ret = ferr_set(err, -EINVAL,
				       "edge \"%s\" feeds input parameter \"%s\" of this node, which it would no longer have (change or delete the edge first)",
				       eid, param);
			break;
		}
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = store_errno(rc);
	return ret;
}

/*
 * Whether `id` may be stored: it replaces a stored one, or the session
 * holds fewer than the limit of its kind besides its own draft (drafts
 * count: each is an open file that may become one).  The session's count
 * is kept by triggers (graph_counts, store.c): no write counts the graph.
 */
static int room_for(struct store *st, int64_t session, enum graph_kind kind,
		    const char *id, struct ferr *err)
{
	/* a replace takes no room (0); a draft of its own is no other */
#define ROOM_SQL(table, stored, col)					\
	"SELECT CASE WHEN EXISTS (SELECT 1 FROM " table " WHERE"	\
	" session = ?1 AND id = ?2 AND " stored ") THEN 0"		\
	" ELSE coalesce((SELECT " col " FROM graph_counts"		\
	" WHERE session = ?1), 0)"					\
	" - EXISTS (SELECT 1 FROM " table " WHERE session = ?1"		\
	" AND id = ?2) END"
	static const char nodes_sql[] = ROOM_SQL("graph_nodes",
						 "doc IS NOT NULL", "nodes");
	static const char edges_sql[] = ROOM_SQL("graph_edges",
						 "source IS NOT NULL", "edges");
#undef ROOM_SQL
	int64_t count = 0;
	long max = kind == GRAPH_NODE ? GRAPH_MAX_NODES : GRAPH_MAX_EDGES;
	int ret;

	ret = store_int(st, kind == GRAPH_NODE ? nodes_sql : edges_sql,
			&count, STORE_INT(session), STORE_TEXT(id));
	if (!ret && count >= max)
		ret = ferr_set(err, -EINVAL,
			       "the graph has %" PRId64 " %s: a graph holds at most %ld",
			       count, kind == GRAPH_NODE ? "nodes" : "edges",
			       max);
	return ret;
}

static int commit_node(struct store *st, const struct graph_tools *tools,
		       int64_t session, const char *id, const json_t *v,
		       struct ferr *err)
{
	static const char update_sql[] = "UPDATE graph_nodes SET doc = ?2,"
		" mtime_ns = ?3 WHERE seq = ?1 AND doc IS NOT ?2";
	struct sbuf text = SBUF_INIT;
	json_t *node = NULL, *old = NULL;
	int64_t seq, now = fclock_now_ns();
	bool changed = true, placed = false;
	int ret;

	ret = node_build(v, id, tools, "", &node, err);
	if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (ret < 0) {
		ferr_set(err, ret, "the database is busy");
		goto out;
	}
	ret = session_exists(st, session);
	if (!ret)
		ret = room_for(st, session, GRAPH_NODE, id, err);
	if (!ret)
		ret = load_node(st, session, id, &seq, &old);
	if (ret < 0)
		goto rollback;
	if (json_is_null(json_object_get(node, "node_uuid")))
		ret = keep_uuid(node, old);
	if (!ret && old)
		ret = check_edges_into(st, session, id, node, err);
	if (!ret)
		ret = fjson_dump(&text, node);
	if (ret < 0)
		goto rollback;
	if (seq) {
		ret = store_run(st, update_sql, STORE_INT(seq),
				STORE_TEXTN(text.buf, text.len), STORE_INT(now));
		/* the same bytes again: no change, the graph keeps its mtime */
		changed = !ret && store_changes(st);
	} else {
		ret = insert_node(st, session, id, &text, now);
	}
	/* edges written before it join the graph with it */
	if (!ret)
		ret = place_ready(st, session, id, now, &placed);
	if (!ret && (changed || placed))
		ret = touch(st, session, now);
	if (ret < 0)
		goto rollback;
	ret = store_commit(st);
	goto out;
rollback:
	store_rollback(st);
out:
	json_decref(node);
	json_decref(old);
	sbuf_release(&text);
	return ret;
}

/*
 * An edge whose nodes are there must fit the graph (else it is refused);
 * one that names a node that is not there (yet) is kept pending.
 */
static int commit_edge(struct store *st, int64_t session, const char *id,
		       const json_t *v, struct ferr *err)
{
	struct sbuf sp = SBUF_INIT;
	struct edge_was was = { 0 };
	struct ferr why = FERR_INIT;
	struct edge_in e;
	int64_t now = fclock_now_ns();
	bool placed;
	int ret;

	ret = edge_check(v, id, "", &e, err);
	if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (ret < 0) {
		ferr_set(err, ret, "the database is busy");
		goto out;
	}
	ret = session_exists(st, session);
	if (!ret)
		ret = room_for(st, session, GRAPH_EDGE, e.f[0], err);
	if (ret < 0)
		goto rollback;
	ret = place_edge(st, session, &e, &sp, now, &was, &why);
	if (ret == -ENOENT) {
		/* restores write edges before nodes: it waits for them */
		ret = load_edge_was(st, session, e.f, why.message, &was);
		if (!ret && !was.same)
			ret = room_to_wait(st, session, e.f, was.pending, err);
		if (!ret)
			ret = store_edge(st, session, e.f, why.message, &was,
					 now);
	} else if (ret == -EINVAL && err) {
		*err = why;
	}
	/* its old version left the graph: what it held back may join */
	if (!ret && was.in_graph && !was.same)
		ret = place_ready(st, session, NULL, now, &placed);
	if (!ret && !was.same)
		ret = touch(st, session, now);
	if (ret < 0)
		goto rollback;
	ret = store_commit(st);
	goto out;
rollback:
	store_rollback(st);
out:
	sbuf_release(&sp);
	return ret;
}

int graph_commit(struct store *st, const struct graph_tools *tools,
		 int64_t session, enum graph_kind kind, const char *id,
		 const char *text, size_t len, struct ferr *err)
{
	json_t *doc = NULL;
	int ret;

	ret = check_id("", kind == GRAPH_NODE ? "node id" : "edge id", id,
		       strlen(id), err);
	if (ret < 0)
		return ret;
	ret = fjson_parse(&doc, text, len, err);
	if (ret < 0)
		return ret;
	if (kind == GRAPH_NODE)
		ret = commit_node(st, tools, session, id, doc, err);
	else
		ret = commit_edge(st, session, id, doc, err);
	json_decref(doc);
	return ret;
}

/* ---- delete, rename ------------------------------------------------------- */

/*
 * The row of `id`: *seq (-ENOENT), whether it is a draft and whether it
 * is in the graph (not a draft, not a pending edge).
 */
static int find_row(struct store *st, int64_t session, enum graph_kind kind,
		    const char *id, int64_t *seq, bool *draft, bool *in_graph)
{
	static const char nodes_sql[] = "SELECT seq, doc IS NULL,"
		" doc IS NOT NULL FROM graph_nodes WHERE session = ?1 AND id = ?2";
	static const char edges_sql[] = "SELECT seq, source IS NULL,"
		" source IS NOT NULL AND pending_why IS NULL FROM graph_edges"
		" WHERE session = ?1 AND id = ?2";
	sqlite3_stmt *q = store_stmt(st, kind == GRAPH_NODE ? nodes_sql
							    : edges_sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_text(q, 2, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*seq = sqlite3_column_int64(q, 0);
		*draft = sqlite3_column_int(q, 1) != 0;
		*in_graph = sqlite3_column_int(q, 2) != 0;
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	store_done(q);
	return ret;
}

/* Delete a row (a node's edges go with it, pending ones too: the
 * schema's trigger). */
static int delete_row(struct store *st, enum graph_kind kind, int64_t seq)
{
	static const char nodes_sql[] = "DELETE FROM graph_nodes WHERE seq = ?1";
	static const char edges_sql[] = "DELETE FROM graph_edges WHERE seq = ?1";

	return store_run(st, kind == GRAPH_NODE ? nodes_sql : edges_sql,
			 STORE_INT(seq));
}

int graph_delete(struct store *st, int64_t session, enum graph_kind kind,
		 const char *id)
{
	int64_t seq, now = fclock_now_ns();
	bool draft, in_graph, placed;
	int ret = store_begin(st);

	if (ret < 0)
		return ret;
	ret = find_row(st, session, kind, id, &seq, &draft, &in_graph);
	if (!ret)
		ret = delete_row(st, kind, seq);
	/* one that the deleted edges held back joins (a pending edge holds
	 * nothing back) */
	if (!ret && in_graph)
		ret = place_ready(st, session, NULL, now, &placed);
	if (!ret && !draft)
		ret = touch(st, session, now);
	if (ret < 0) {
		store_rollback(st);
		return ret;
	}
	return store_commit(st);
}

/* The document of node `seq` with its id set to `to`. */
static int renamed_doc(struct store *st, int64_t seq, const char *to,
		       struct sbuf *out)
{
	static const char sql[] = "SELECT doc FROM graph_nodes WHERE seq = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	json_t *doc = NULL;
	int rc, ret;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, seq);
	rc = sqlite3_step(q);
	if (rc != SQLITE_ROW) {
		store_done(q);
		return rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	ret = store_column_json(q, 0, &doc);
	store_done(q);
	if (ret < 0)
		return ret;
	/* an existing key keeps its place */
	if (!put(doc, "id", json_string(to)))
		ret = -ENOMEM;
	if (!ret)
		ret = fjson_dump(out, doc);
	json_decref(doc);
	return ret;
}

int graph_rename(struct store *st, int64_t session, enum graph_kind kind,
		 const char *from, const char *to, bool replace,
		 struct ferr *err)
{
	static const char node_sql[] = "UPDATE graph_nodes SET id = ?2,"
		" doc = ?3, mtime_ns = ?4 WHERE seq = ?1";
	static const char edge_sql[] = "UPDATE graph_edges SET id = ?2,"
		" mtime_ns = ?3 WHERE seq = ?1";
	static const char sources_sql[] = "UPDATE graph_edges SET source = ?3,"
		" mtime_ns = ?4 WHERE session = ?1 AND source = ?2";
	static const char targets_sql[] = "UPDATE graph_edges SET target = ?3,"
		" mtime_ns = ?4 WHERE session = ?1 AND target = ?2";
	struct sbuf doc = SBUF_INIT;
	int64_t seq, other, now = fclock_now_ns();
	bool draft, in_graph, other_draft, other_in_graph = false, placed;
	int ret;

	ret = check_id("", kind == GRAPH_NODE ? "node id" : "edge id", to,
		       strlen(to), err);
	if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (ret < 0)
		return ferr_set(err, ret, "the database is busy");
	ret = find_row(st, session, kind, from, &seq, &draft, &in_graph);
	if (ret < 0)
		goto rollback;
	if (!strcmp(from, to))
		goto commit;
	ret = find_row(st, session, kind, to, &other, &other_draft,
		       &other_in_graph);
	if (ret == 0) {
		if (!replace) {
			ret = ferr_set(err, -EEXIST, "%s \"%s\" exists",
				       kind_name(kind), to);
			goto rollback;
		}
		ret = delete_row(st, kind, other);
		if (ret < 0)
			goto rollback;
	} else if (ret != -ENOENT) {
		goto rollback;
	} else {
		other_draft = true;
	}
	if (kind == GRAPH_NODE) {
		if (!draft) {
			ret = renamed_doc(st, seq, to, &doc);
			if (ret < 0)
				goto rollback;
		}
		ret = store_run(st, node_sql, STORE_INT(seq), STORE_TEXT(to),
				draft ? STORE_NULL : STORE_TEXTN(doc.buf, doc.len),
				STORE_INT(now));
		for (int i = 0; !ret && !draft && i < 2; i++)
			ret = store_run(st, i ? targets_sql : sources_sql,
					STORE_INT(session), STORE_TEXT(from),
					STORE_TEXT(to), STORE_INT(now));
	} else {
		ret = store_run(st, edge_sql, STORE_INT(seq), STORE_TEXT(to),
				STORE_INT(now));
	}
	/*
	 * The edges naming the node, pending ones too, followed it: those
	 * naming `to` may join now, and so may one that a replaced item's
	 * edges held back.  Ids take part in no check, so a rename alone
	 * lets no other edge in, but the reasons of those held back name
	 * edges ("duplicates e1") and nodes (a cycle's path).
	 */
	if (!ret && kind == GRAPH_NODE && !draft)
		ret = place_ready(st, session, to, now, &placed);
	if (!ret && (in_graph || other_in_graph))
		ret = place_ready(st, session, NULL, now, &placed);
	if (!ret && (!draft || !other_draft))
		ret = touch(st, session, now);
	if (ret < 0)
		goto rollback;
commit:
	ret = store_commit(st);
	goto out;
rollback:
	store_rollback(st);
out:
	sbuf_release(&doc);
	return ret;
}

/* ---- parameters.json ------------------------------------------------------ */

int graph_template_uuid(struct store *st, int64_t session, struct sbuf *out)
{
	static const char sql[] = "SELECT template_uuid FROM sessions"
		" WHERE id = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		if (sqlite3_column_type(q, 0) != SQLITE_NULL)
			ret = sbuf_add(out, sqlite3_column_text(q, 0),
				       (size_t)sqlite3_column_bytes(q, 0));
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	store_done(q);
	return ret;
}

int graph_render_parameters(struct store *st, int64_t session,
			    struct sbuf *out)
{
	static const char nodes_sql[] = "SELECT doc FROM graph_nodes"
		" WHERE session = ?1 AND doc IS NOT NULL ORDER BY seq";
	static const char edges_sql[] = "SELECT id, source, source_param,"
		" target, target_param FROM graph_edges WHERE session = ?1"
		" AND source IS NOT NULL AND pending_why IS NULL ORDER BY seq";
	static const char uuid_sql[] = "SELECT template_uuid FROM sessions"
		" WHERE id = ?1";
	size_t start = out->len, count = 0;
	sqlite3_stmt *q;
	int rc, ret;

	ret = doc_open(out);
	if (ret < 0)
		goto out;
	q = store_stmt(st, nodes_sql);
	if (!q) {
		ret = -EIO;
		goto out;
	}
	sqlite3_bind_int64(q, 1, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		ret = doc_item(out, count++);
		if (!ret)
			ret = put_nested(out,
					 (const char *)sqlite3_column_text(q, 0),
					 (size_t)sqlite3_column_bytes(q, 0), 2);
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (!ret)
		ret = doc_next_list(out, count);
	if (ret < 0)
		goto out;
	count = 0;
	q = store_stmt(st, edges_sql);
	if (!q) {
		ret = -EIO;
		goto out;
	}
	sqlite3_bind_int64(q, 1, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *f[5];
		size_t n[5];

		if (!edge_row(q, 0, 1, f, n))
			continue;
		ret = doc_item(out, count++);
		if (!ret)
			ret = put_edge(out, 2, f, n);
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (ret < 0)
		goto out;
	q = store_stmt(st, uuid_sql);
	if (!q) {
		ret = -EIO;
		goto out;
	}
	sqlite3_bind_int64(q, 1, session);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		ret = doc_close(out, count,
				(const char *)sqlite3_column_text(q, 0),
				(size_t)sqlite3_column_bytes(q, 0));
	else
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	store_done(q);
out:
	if (ret < 0)
		sbuf_setlen(out, start);
	return ret;
}

/* A new graph being checked in memory. */
struct pgraph {
	size_t nn, ne;
	json_t **nodes;		/* canonical node objects */
	struct edge_in *edges;	/* pointers into the document / sps */
	struct sbuf *sps;	/* default source parameter names */
	size_t *src, *dst;	/* edge -> node index */
};

/* The id of node i of `g` (checked by pgraph_build()). */
static const char *pgraph_node_id(const struct pgraph *g, size_t i)
{
	return json_string_value(json_object_get(g->nodes[i], "id"));
}

static void pgraph_free(struct pgraph *g)
{
	for (size_t i = 0; g->nodes && i < g->nn; i++)
		json_decref(g->nodes[i]);
	for (size_t i = 0; g->sps && i < g->ne; i++)
		sbuf_release(&g->sps[i]);
	free(g->nodes);
	free(g->edges);
	free(g->sps);
	free(g->src);
	free(g->dst);
}

/*
 * Kahn's algorithm over the new graph; when some nodes remain, walk
 * back along edges among them until a node repeats: that is a cycle.
 * It is named from the source of its edge that comes last in the
 * document ("edges[k]: would close a cycle: a -> b -> a").
 */
static int check_acyclic(const struct pgraph *g, struct ferr *err)
{
	size_t n = g->nn, m = g->ne;
	size_t *indeg = calloc(n + 1, sizeof(size_t));
	size_t *off = calloc(n + 1, sizeof(size_t));
	size_t *roff = calloc(n + 1, sizeof(size_t));
	size_t *adj = malloc((m + 1) * sizeof(size_t));
	size_t *radj = malloc((m + 1) * sizeof(size_t));
	size_t *queue = malloc((n + 1) * sizeof(size_t));
	size_t *step = malloc((n + 1) * sizeof(size_t));
	size_t *walk_n = malloc((n + 1) * sizeof(size_t));
	size_t *walk_e = malloc((n + 1) * sizeof(size_t));
	bool *done = calloc(n + 1, sizeof(bool));
	struct sbuf msg = SBUF_INIT;
	size_t head = 0, tail = 0;
	int ret = 0;

	if (!indeg || !off || !roff || !adj || !radj || !queue || !step ||
	    !walk_n || !walk_e || !done) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t j = 0; j < m; j++) {
		off[g->src[j] + 1]++;
		roff[g->dst[j] + 1]++;
		indeg[g->dst[j]]++;
	}
	for (size_t i = 0; i < n; i++) {
		off[i + 1] += off[i];
		roff[i + 1] += roff[i];
	}
	{
		size_t *fill = calloc(n + 1, sizeof(size_t));
		size_t *rfill = calloc(n + 1, sizeof(size_t));

		if (!fill || !rfill) {
			free(fill);
			free(rfill);
			ret = -ENOMEM;
			goto out;
		}
		for (size_t j = 0; j < m; j++) {
			adj[off[g->src[j]] + fill[g->src[j]]++] = j;
			radj[roff[g->dst[j]] + rfill[g->dst[j]]++] = j;
		}
		free(fill);
		free(rfill);
	}
	for (size_t i = 0; i < n; i++)
		if (!indeg[i])
			queue[tail++] = i;
	while (head < tail) {
		size_t v = queue[head++];

		done[v] = true;
		for (size_t k = off[v]; k < off[v + 1]; k++)
			if (!--indeg[g->dst[adj[k]]])
				queue[tail++] = g->dst[adj[k]];
	}
	if (tail == n)
		goto out;
	{
		size_t v = 0, len = 0, first, close, cstart, clen;

		while (done[v])
			v++;
		for (size_t i = 0; i < n; i++)
			step[i] = SIZE_MAX;
		/* every node left has an edge in from another node left */
		while (step[v] == SIZE_MAX) {
			size_t e = SIZE_MAX;

			step[v] = len;
			walk_n[len] = v;
			for (size_t k = roff[v]; k < roff[v + 1]; k++)
				if (!done[g->src[radj[k]]]) {
					e = radj[k];
					break;
				}
			if (e == SIZE_MAX) {	/* cannot happen */
				ret = -EIO;
				goto out;
			}
			walk_e[len++] = e;
			v = g->src[e];
		}
		/* walk_n[first..len) with edges walk_e[k]: walk_n[k+1] ->
		 * walk_n[k] (walk_n[len] being walk_n[first]) */
		first = step[v];
		close = first;
		for (size_t k = first; k < len; k++)
			if (walk_e[k] > walk_e[close])
				close = k;
		/* forwards from the closing edge's source: walk_n[close+1],
		 * walk_n[close], ..., walk_n[first], walk_n[len-1], ... */
		clen = len - first;
		cstart = close + 1 - first;	/* position of its source */
		for (size_t i = 0; i <= clen; i++) {
			size_t pos = (cstart + clen - i) % clen;
			size_t node = walk_n[first + pos];

			sbuf_addf(&msg, "%s%s", i ? " -> " : "",
				  json_string_value(json_object_get(
					  g->nodes[node], "id")));
		}
		ret = ferr_set(err, -EINVAL,
			       "edges[%zu]: would close a cycle: %s",
			       walk_e[close], msg.buf);
	}
out:
	free(indeg);
	free(off);
	free(roff);
	free(adj);
	free(radj);
	free(queue);
	free(step);
	free(walk_n);
	free(walk_e);
	free(done);
	sbuf_release(&msg);
	return ret;
}

/* Check the nodes and edges of a parameters document into `g`. */
static int pgraph_build(const json_t *nodes, const json_t *edges,
			const struct graph_tools *tools, struct pgraph *g,
			struct ferr *err)
{
	struct smap ids = SMAP_INIT, eids = SMAP_INIT, keys = SMAP_INIT;
	struct sbuf key = SBUF_INIT;
	char where[48];
	const json_t *v;
	size_t i, other = 0;
	bool had;
	int ret = 0;

	g->nn = json_array_size(nodes);
	g->ne = json_array_size(edges);
	g->nodes = calloc(g->nn + 1, sizeof(*g->nodes));
	g->edges = calloc(g->ne + 1, sizeof(*g->edges));
	g->sps = calloc(g->ne + 1, sizeof(*g->sps));
	g->src = calloc(g->ne + 1, sizeof(*g->src));
	g->dst = calloc(g->ne + 1, sizeof(*g->dst));
	if (!g->nodes || !g->edges || !g->sps || !g->src || !g->dst) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < g->ne; i++)
		sbuf_init(&g->sps[i]);
	json_array_foreach(nodes, i, v) {
		const char *id;

		snprintf(where, sizeof(where), "nodes[%zu]: ", i);
		ret = node_build(v, NULL, tools, where, &g->nodes[i], err);
		if (ret < 0)
			goto out;
		id = pgraph_node_id(g, i);
		ret = smap_put(&ids, id, strlen(id), i, &had);
		if (ret < 0)
			goto out;
		if (had) {
			smap_get(&ids, id, strlen(id), &other);
			ret = ferr_set(err, -EINVAL,
				       "nodes[%zu]: id \"%s\" repeats nodes[%zu]",
				       i, id, other);
			goto out;
		}
	}
	json_array_foreach(edges, i, v) {
		struct edge_in *e = &g->edges[i];
		const json_t *tgt;

		snprintf(where, sizeof(where), "edges[%zu]: ", i);
		ret = edge_check(v, NULL, where, e, err);
		if (ret < 0)
			goto out;
		ret = smap_put(&eids, e->f[0], strlen(e->f[0]), i, &had);
		if (ret < 0)
			goto out;
		if (had) {
			smap_get(&eids, e->f[0], strlen(e->f[0]), &other);
			ret = ferr_set(err, -EINVAL,
				       "edges[%zu]: id \"%s\" repeats edges[%zu]",
				       i, e->f[0], other);
			goto out;
		}
		if (!smap_get(&ids, e->f[1], strlen(e->f[1]), &g->src[i])) {
			ret = ferr_set(err, -EINVAL,
				       "edges[%zu]: source node \"%s\" does not exist",
				       i, e->f[1]);
			goto out;
		}
		if (!smap_get(&ids, e->f[3], strlen(e->f[3]), &g->dst[i])) {
			ret = ferr_set(err, -EINVAL,
				       "edges[%zu]: target node \"%s\" does not exist",
				       i, e->f[3]);
			goto out;
		}
		if (!e->f[2]) {
			ret = sbuf_addf(&g->sps[i], "out_%s",
					json_string_value(json_object_get(
						g->nodes[g->src[i]], "label")));
			if (ret < 0)
				goto out;
			e->f[2] = g->sps[i].buf;
		}
		tgt = g->nodes[g->dst[i]];
		if (!takes_input(tgt, e->f[4])) {
			ret = no_input(tgt, e->f[3], e->f[4], where, err);
			goto out;
		}
		ret = edge_key(&key, e->f + 1);
		if (!ret)
			ret = smap_put(&keys, key.buf, key.len, i, &had);
		if (ret < 0)
			goto out;
		if (had) {
			smap_get(&keys, key.buf, key.len, &other);
			ret = ferr_set(err, -EINVAL, "edges[%zu]: duplicates %s",
				       i, g->edges[other].f[0]);
			goto out;
		}
		if (g->src[i] == g->dst[i]) {
			ret = ferr_set(err, -EINVAL,
				       "edges[%zu]: would close a cycle: %s -> %s",
				       i, e->f[1], e->f[3]);
			goto out;
		}
	}
	ret = check_acyclic(g, err);
out:
	smap_free(&ids);
	smap_free(&eids);
	smap_free(&keys);
	sbuf_release(&key);
	return ret;
}

static int delete_draft_named(struct store *st, int64_t session,
			      enum graph_kind kind, const char *id)
{
	static const char nodes_sql[] = "DELETE FROM graph_nodes"
		" WHERE session = ?1 AND id = ?2";
	static const char edges_sql[] = "DELETE FROM graph_edges"
		" WHERE session = ?1 AND id = ?2";

	return store_run(st, kind == GRAPH_NODE ? nodes_sql : edges_sql,
			 STORE_INT(session), STORE_TEXT(id));
}

/*
 * Whether the graph's rows (drafts aside) have the ids of `g`, in its
 * order: a parameters.json that changes values only, the common rewrite.
 */
static int same_ids(struct store *st, int64_t session, const struct pgraph *g,
		    bool *same)
{
	static const char nodes_sql[] = "SELECT id FROM graph_nodes"
		" WHERE session = ?1 AND doc IS NOT NULL ORDER BY seq";
	static const char edges_sql[] = "SELECT id FROM graph_edges"
		" WHERE session = ?1 AND source IS NOT NULL ORDER BY seq";
	int ret = 0;

	*same = true;
	for (int edges = 0; !ret && *same && edges < 2; edges++) {
		sqlite3_stmt *q = store_stmt(st, edges ? edges_sql : nodes_sql);
		size_t n = edges ? g->ne : g->nn, i = 0;
		int rc;

		if (!q)
			return -EIO;
		sqlite3_bind_int64(q, 1, session);
		while (*same && (rc = sqlite3_step(q)) == SQLITE_ROW) {
			const char *id = (const char *)sqlite3_column_text(q, 0);
			const char *want = i >= n ? NULL : edges
				? g->edges[i].f[0]
				: pgraph_node_id(g, i);

			*same = want && id && !strcmp(id, want);
			i++;
		}
		if (*same && rc != SQLITE_DONE)
			ret = store_errno(rc);
		*same = *same && i == n;
		store_done(q);
	}
	return ret;
}

/* The rows of same_ids() given g's values, in place: no row is made or
 * deleted (the count triggers stay still), and nodes/ and edges/ keep
 * their inode numbers. */
static int update_graph(struct store *st, int64_t session,
			const struct pgraph *g, const struct sbuf *texts,
			int64_t now)
{
	static const char nodes_sql[] = "UPDATE graph_nodes SET doc = ?3,"
		" mtime_ns = ?4 WHERE session = ?1 AND id = ?2";
	static const char edges_sql[] = "UPDATE graph_edges SET source = ?3,"
		" source_param = ?4, target = ?5, target_param = ?6,"
		" pending_why = NULL, mtime_ns = ?7"
		" WHERE session = ?1 AND id = ?2";
	int ret = 0;

	for (size_t i = 0; !ret && i < g->nn; i++)
		ret = store_run(st, nodes_sql, STORE_INT(session),
				STORE_TEXT(pgraph_node_id(g, i)),
				STORE_TEXTN(texts[i].buf, texts[i].len),
				STORE_INT(now));
	for (size_t j = 0; !ret && j < g->ne; j++) {
		const char *const *f = g->edges[j].f;

		ret = store_run(st, edges_sql, STORE_INT(session),
				STORE_TEXT(f[0]), STORE_TEXT(f[1]),
				STORE_TEXT(f[2]), STORE_TEXT(f[3]),
				STORE_TEXT(f[4]), STORE_INT(now));
	}
	return ret;
}

/* The graph's rows (drafts aside) made anew from `g`. */
static int rewrite_graph(struct store *st, int64_t session,
			 const struct pgraph *g, const struct sbuf *texts,
			 int64_t now)
{
	static const char edges_sql[] = "DELETE FROM graph_edges"
		" WHERE session = ?1 AND source IS NOT NULL";
	static const char nodes_sql[] = "DELETE FROM graph_nodes"
		" WHERE session = ?1 AND doc IS NOT NULL";
	int ret;

	/* edges first, so the trigger finds nothing left to delete */
	ret = store_run(st, edges_sql, STORE_INT(session));
	if (!ret)
		ret = store_run(st, nodes_sql, STORE_INT(session));
	for (size_t i = 0; !ret && i < g->nn; i++) {
		const char *id = pgraph_node_id(g, i);

		/* a draft of the same name gives way */
		ret = delete_draft_named(st, session, GRAPH_NODE, id);
		if (!ret)
			ret = insert_node(st, session, id, &texts[i], now);
	}
	for (size_t j = 0; !ret && j < g->ne; j++) {
		ret = delete_draft_named(st, session, GRAPH_EDGE,
					 g->edges[j].f[0]);
		if (!ret)
			ret = insert_edge(st, session, g->edges[j].f, NULL, now);
	}
	return ret;
}

/*
 * Replace the session's graph by `g` (a transaction is open): the edges
 * that wait go too, as the document is the whole graph.
 */
static int replace_graph(struct store *st, int64_t session,
			 const struct pgraph *g, struct sbuf *texts,
			 const json_t *uuid, int64_t now)
{
	static const char uuid_sql[] = "UPDATE sessions SET template_uuid = ?2"
		" WHERE id = ?1";
	bool same;
	int ret = same_ids(st, session, g, &same);

	if (!ret)
		ret = same ? update_graph(st, session, g, texts, now)
			   : rewrite_graph(st, session, g, texts, now);
	/* a JSON null has no string value: SQL NULL */
	if (!ret && uuid)
		ret = store_run(st, uuid_sql, STORE_INT(session),
				STORE_TEXT(json_string_value(uuid)));
	if (!ret)
		ret = touch(st, session, now);
	return ret;
}

/* The top level of a parameters document: nodes, edges, meta. */
static int check_top(const json_t *doc, const json_t **nodes,
		     const json_t **edges, const json_t **uuid,
		     struct ferr *err)
{
	static const char *const top[] = { "nodes", "edges", "meta", NULL };
	static const char *const meta_fields[] = { "template_uuid", NULL };
	const json_t *meta;
	int ret;

	if (!json_is_object(doc))
		return ferr_set(err, -EINVAL,
				"parameters.json must be a JSON object {\"nodes\": [...], \"edges\": [...], \"meta\": {...}}");
	ret = unknown_fields(doc, top, "", "",
			     "parameters.json has nodes, edges, meta", err);
	if (ret < 0)
		return ret;
	for (int i = 0; top[i]; i++)
		if (!json_object_get(doc, top[i]))
			return ferr_set(err, -EINVAL, "missing \"%s\"", top[i]);
	*nodes = json_object_get(doc, "nodes");
	*edges = json_object_get(doc, "edges");
	meta = json_object_get(doc, "meta");
	if (!json_is_array(*nodes))
		return ferr_set(err, -EINVAL, "\"nodes\" must be an array");
	if (!json_is_array(*edges))
		return ferr_set(err, -EINVAL, "\"edges\" must be an array");
	if (!json_is_object(meta))
		return ferr_set(err, -EINVAL, "\"meta\" must be an object");
	ret = unknown_fields(meta, meta_fields, "", "meta.",
			     "meta has template_uuid", err);
	if (ret < 0)
		return ret;
	/* before anything in them is checked: that is the work it bounds */
	if (json_array_size(*nodes) > GRAPH_MAX_NODES)
		return ferr_set(err, -EINVAL,
				"\"nodes\": %zu nodes: a graph holds at most %d",
				json_array_size(*nodes), GRAPH_MAX_NODES);
	if (json_array_size(*edges) > GRAPH_MAX_EDGES)
		return ferr_set(err, -EINVAL,
				"\"edges\": %zu edges: a graph holds at most %d",
				json_array_size(*edges), GRAPH_MAX_EDGES);
	*uuid = json_object_get(meta, "template_uuid");
	if (*uuid && !json_is_null(*uuid) &&
	    (!json_is_string(*uuid) ||
	     strlen(json_string_value(*uuid)) != json_string_length(*uuid)))
		return ferr_set(err, -EINVAL,
				"\"meta.template_uuid\" must be a string");
	return 0;
}

int graph_commit_parameters(struct store *st, const struct graph_tools *tools,
			    int64_t session, const char *text, size_t len,
			    struct ferr *err)
{
	static const char waiting_sql[] = "SELECT count(*) FROM graph_edges"
		" WHERE session = ?1 AND pending_why IS NOT NULL";
	struct pgraph g = { 0 };
	struct sbuf *texts = NULL, cur = SBUF_INIT, next = SBUF_INIT;
	const json_t *nodes, *edges, *uuid = NULL;
	json_t *doc = NULL;
	int64_t now = fclock_now_ns(), waiting = 0;
	size_t nn = 0;
	int ret;

	ret = fjson_parse(&doc, text, len, err);
	if (ret < 0)
		return ret;
	ret = check_top(doc, &nodes, &edges, &uuid, err);
	if (ret < 0)
		goto out;
	ret = pgraph_build(nodes, edges, tools, &g, err);
	if (ret < 0)
		goto out;
	texts = calloc(g.nn + 1, sizeof(*texts));
	if (!texts) {
		ret = -ENOMEM;
		goto out;
	}
	nn = g.nn;
	for (size_t i = 0; i < nn; i++)
		sbuf_init(&texts[i]);
	ret = store_begin(st);
	if (ret < 0) {
		ferr_set(err, ret, "the database is busy");
		goto out;
	}
	for (size_t i = 0; !ret && i < nn; i++) {
		json_t *node = g.nodes[i];

		if (json_is_null(json_object_get(node, "node_uuid")))
			ret = uuid_for(st, session,
				       json_string_value(json_object_get(node, "id")),
				       node);
		if (!ret)
			ret = fjson_dump(&texts[i], node);
	}
	/* the document before and after, in this transaction: the same
	 * bytes, with no edge waiting to go, are no change (rolled back:
	 * mtimes and inodes stay) */
	if (!ret)
		ret = graph_render_parameters(st, session, &cur);
	if (!ret)
		ret = store_int(st, waiting_sql, &waiting, STORE_INT(session));
	if (ret < 0)
		goto rollback;
	ret = replace_graph(st, session, &g, texts, uuid, now);
	if (ret < 0) {
		ferr_set(err, ret, "cannot store parameters.json: %s",
			 store_errmsg(st));
		goto rollback;
	}
	ret = graph_render_parameters(st, session, &next);
	if (ret < 0)
		goto rollback;
	if (!waiting && cur.len == next.len &&
	    !memcmp(cur.buf, next.buf, cur.len))
		goto rollback;
	ret = store_commit(st);
	goto out;
rollback:
	store_rollback(st);
out:
	for (size_t i = 0; texts && i < nn; i++)
		sbuf_release(&texts[i]);
	free(texts);
	pgraph_free(&g);
	sbuf_release(&cur);
	sbuf_release(&next);
	json_decref(doc);
	return ret;
}

/* ---- pending edges -------------------------------------------------------- */

int graph_problems(struct store *st, int64_t session, struct sbuf *out)
{
	static const char sql[] = "SELECT id, pending_why FROM graph_edges"
		" WHERE session = ?1 AND pending_why IS NOT NULL ORDER BY seq";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW)
		ret = fname_line(out, "edges/%s.json: %s",
				 (const char *)sqlite3_column_text(q, 0),
				 (const char *)sqlite3_column_text(q, 1));
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	return ret;
}

/* ---- infer-edges ---------------------------------------------------------- */

int graph_infer_edges(struct store *st, int64_t session, size_t *added,
		      struct sbuf *report)
{
	static const char nodes_sql[] = "SELECT id, doc FROM graph_nodes"
		" WHERE session = ?1 AND doc IS NOT NULL ORDER BY seq";
	static const char ids_sql[] = "SELECT id FROM graph_edges"
		" WHERE session = ?1";
	struct smap taken = SMAP_INIT;
	struct sbuf sp = SBUF_INIT, dup = SBUF_INIT, path = SBUF_INIT;
	struct sbuf eid = SBUF_INIT;
	char **ids = NULL;
	json_t **docs = NULL;
	size_t n = 0, alloc = 0, next_n = 1, edges = 0;
	int64_t now = fclock_now_ns();
	sqlite3_stmt *q;
	int rc, ret;

	*added = 0;
	ret = store_begin(st);
	if (ret < 0)
		return ret;
	q = store_stmt(st, nodes_sql);
	if (!q) {
		ret = -EIO;
		goto rollback;
	}
	sqlite3_bind_int64(q, 1, session);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (n == alloc) {
			size_t na = alloc ? alloc * 2 : 64;
			char **ni = realloc(ids, na * sizeof(*ni));
			json_t **nd;

			if (ni)
				ids = ni;
			nd = ni ? realloc(docs, na * sizeof(*nd)) : NULL;
			if (!nd) {
				ret = -ENOMEM;
				break;
			}
			docs = nd;
			alloc = na;
		}
		docs[n] = NULL;
		ids[n] = strdup((const char *)sqlite3_column_text(q, 0));
		if (!ids[n]) {
			ret = -ENOMEM;
			break;
		}
		n++;
		ret = store_column_json(q, 1, &docs[n - 1]);
		if (ret < 0)
			break;
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (ret < 0)
		goto rollback;
	q = store_stmt(st, ids_sql);
	if (!q) {
		ret = -EIO;
		goto rollback;
	}
	sqlite3_bind_int64(q, 1, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		ret = smap_put(&taken, (const char *)sqlite3_column_text(q, 0),
			       (size_t)sqlite3_column_bytes(q, 0), 0, NULL);
		edges++;
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (ret < 0)
		goto rollback;
	for (size_t i = 0; i + 1 < n; i++) {
		const char *f[5];
		struct ferr cyc = FERR_INIT;

		sbuf_reset(&sp);
		ret = sbuf_addf(&sp, "out_%s", json_string_value(
					json_object_get(docs[i], "label")));
		if (ret < 0)
			goto rollback;
		f[0] = NULL;
		f[1] = ids[i];
		f[2] = sp.buf;
		f[3] = ids[i + 1];
		f[4] = rule_input(docs[i + 1]);
		ret = find_duplicate(st, session, f, &dup);
		if (ret < 0)
			goto rollback;
		if (dup.len)
			continue;
		ret = check_cycle(st, session, f[1], f[3], NULL, "", &cyc,
				  &path);
		if (ret == -EINVAL) {
			ret = sbuf_addf(report, "%s -> %s skipped: %s\n", f[1],
					f[3], cyc.message);
			if (ret < 0)
				goto rollback;
			continue;
		}
		if (ret < 0)
			goto rollback;
		if (edges + *added >= GRAPH_MAX_EDGES) {
			ret = sbuf_addf(report, "stopped before %s -> %s: a graph holds at most %d edges\n",
					f[1], f[3], GRAPH_MAX_EDGES);
			if (ret < 0)
				goto rollback;
			break;
		}
		for (;;) {
			sbuf_reset(&eid);
			ret = sbuf_addf(&eid, "edge-$id%zu", next_n);
			if (ret < 0 || !smap_get(&taken, eid.buf, eid.len, NULL))
				break;
			next_n++;
		}
		if (!ret)
			ret = smap_put(&taken, eid.buf, eid.len, 0, NULL);
		if (ret < 0)
			goto rollback;
		f[0] = eid.buf;
		ret = insert_edge(st, session, f, NULL, now);
		if (ret < 0)
			goto rollback;
		(*added)++;
	}
	if (*added)
		ret = touch(st, session, now);
	if (ret < 0)
		goto rollback;
	ret = store_commit(st);
	goto out;
rollback:
	store_rollback(st);
	*added = 0;
out:
	for (size_t i = 0; i < n; i++) {
		free(ids[i]);
		json_decref(docs[i]);
	}
	free(ids);
	free(docs);
	smap_free(&taken);
	sbuf_release(&sp);
	sbuf_release(&dup);
	sbuf_release(&path);
	sbuf_release(&eid);
	return ret;
}

/* ---- times and names ------------------------------------------------------ */

int graph_mtime(struct store *st, int64_t session, int64_t *mtime_ns)
{
	static const char sql[] = "SELECT graph_mtime_ns FROM sessions"
		" WHERE id = ?1";

	*mtime_ns = 0;
	return store_int(st, sql, mtime_ns, STORE_INT(session));
}

int graph_output_name(const char *session_id, int64_t mtime_ns,
		      struct sbuf *out)
{
	time_t secs = (time_t)(mtime_ns / 1000000000);
	/* its first 8 characters */
	size_t end = utf8_offset(session_id, strlen(session_id), 8);
	char stamp[32];
	struct tm tm;

	if (mtime_ns < 0 && mtime_ns % 1000000000)
		secs--;		/* floor, as for any time before 1970 */
	if (!localtime_r(&secs, &tm) ||
	    !strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &tm))
		return -EINVAL;
	if (!end)
		return sbuf_addf(out, "parameters_unknown_%s.json", stamp);
	return sbuf_addf(out, "parameters_%.*s_%s.json", (int)end, session_id,
			 stamp);
}
