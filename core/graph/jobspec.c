/* jobspec: a job graph made into a plan; see jobspec.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/jobspec.h"
#include "graph/jobspec_i.h"
#include "lib/template.h"
#include "lib/utf8.h"

#define FOLDER_NAME_MAX 200
#define JOB_NAME_MAX 128

static const char *const tool_fields[] = {
	"image", "images", "machine_type", "command", "options", "outputs",
	"resources", NULL
};

/* The names a template sees that are flowfs's, not a node's parameters
 * (they shadow an input of the same name). */
static const char *const own_names[] = {
	"inputs", "job_dir", "node", "session", NULL
};

struct resource_rule {
	const char *name;
	long long min, max;
};

static const struct resource_rule resource_rules[] = {
	{ "cpus", 1, 4096 },
	{ "memory_mib", 1, 16777216 },
	{ "gpus", 0, 64 },
	{ "time_minutes", 1, 525600 },
	{ NULL, 0, 0 },
};

static bool listed(const char *const *names, const char *name)
{
	for (; *names; names++)
		if (!strcmp(*names, name))
			return true;
	return false;
}

static bool plain_string(const json_t *v)
{
	return json_is_string(v) &&
	       strlen(json_string_value(v)) == json_string_length(v);
}

/* A relative path inside the job folder: no "", "." or ".." component. */
static bool inside_path(const char *p)
{
	size_t len = strlen(p);

	if (!len || len > 255 || *p == '/')
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (!n || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/' && !*++p)
			return false;
	}
	return true;
}

static bool partition_name(const char *p)
{
	size_t len = strlen(p);

	if (!len || len > 64)
		return false;
	return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_-.") == len;
}

static int check_command(const char *label, const json_t *cmd,
			 struct ferr *err)
{
	size_t i;
	json_t *item;

	if (!json_is_array(cmd) || !json_array_size(cmd) ||
	    json_array_size(cmd) > JOBSPEC_ARGV_MAX)
		return ferr_set(err, -EINVAL, "\"%s\": command must be a list "
				"of 1 to %d strings (an argv; no shell reads "
				"it)", label, JOBSPEC_ARGV_MAX);
	json_array_foreach(cmd, i, item) {
		struct ferr terr = FERR_INIT;
		struct tmpl *t = NULL;
		char where[FERR_MESSAGE_MAX];
		int ret;

		if (!plain_string(item))
			return ferr_set(err, -EINVAL, "\"%s\": command[%zu] "
					"must be a string", label, i);
		if (json_string_length(item) > JOBSPEC_ITEM_MAX)
			return ferr_set(err, -EINVAL, "\"%s\": command[%zu] is "
					"%zu bytes; at most %d", label, i,
					json_string_length(item),
					JOBSPEC_ITEM_MAX);
		ret = tmpl_parse(&t, json_string_value(item),
				 json_string_length(item), &terr);
		tmpl_free(t);
		if (ret == -ENOMEM)
			return ret;
		/* an item may be many lines: say where in it */
		if (ret < 0)
			return ferr_set(err, -EINVAL, "\"%s\": command[%zu]: %s",
					label, i, ferr_format(&terr, where,
							      sizeof(where)));
	}
	return 0;
}

static int check_outputs(const char *label, const json_t *outs,
			 struct ferr *err)
{
	const char *name;
	json_t *file;

	if (!json_is_object(outs))
		return ferr_set(err, -EINVAL, "\"%s\": outputs must be an "
				"object {\"<output parameter>\": \"<file in the "
				"job folder>\"}", label);
	json_object_foreach((json_t *)outs, name, file) {
		if (!*name)
			return ferr_set(err, -EINVAL, "\"%s\": outputs: an "
					"output needs a name", label);
		if (!plain_string(file))
			return ferr_set(err, -EINVAL, "\"%s\": outputs.%s must "
					"be a string", label, name);
		if (!inside_path(json_string_value(file)))
			return ferr_set(err, -EINVAL, "\"%s\": outputs.%s: "
					"\"%s\" leaves the job folder (a "
					"relative path without \"..\", \".\" or "
					"empty parts, up to 255 bytes)", label,
					name, json_string_value(file));
	}
	return 0;
}

static int check_resources(const char *label, const json_t *res,
			   struct ferr *err)
{
	const char *k;
	json_t *v;

	if (!json_is_object(res))
		return ferr_set(err, -EINVAL, "\"%s\": resources must be an "
				"object", label);
	json_object_foreach((json_t *)res, k, v) {
		const struct resource_rule *r = resource_rules;

		if (!strcmp(k, "partition")) {
			if (!plain_string(v) ||
			    !partition_name(json_string_value(v)))
				return ferr_set(err, -EINVAL, "\"%s\": resources."
						"partition must be a partition "
						"name (letters, digits, _ - ., "
						"1 to 64)", label);
			continue;
		}
		while (r->name && strcmp(r->name, k))
			r++;
		if (!r->name)
			return ferr_set(err, -EINVAL, "\"%s\": resources: "
					"unknown field \"%s\" (cpus, memory_mib, "
					"gpus, time_minutes, partition)", label,
					k);
		if (!json_is_integer(v) || json_integer_value(v) < r->min ||
		    json_integer_value(v) > r->max)
			return ferr_set(err, -EINVAL, "\"%s\": resources.%s "
					"must be a whole number from %lld to "
					"%lld", label, k, r->min, r->max);
	}
	return 0;
}

/* `s` cut to a length a message holds, at a character, "..." after. */
static const char *shown(const char *s, char *buf, size_t size)
{
	size_t n = strlen(s), cut = n < size ? n : utf8_cut(s, n, size - 4);

	snprintf(buf, size, "%.*s%s", (int)cut, s, cut < n ? "..." : "");
	return buf;
}

static int check_image(const char *label, const char *field,
		       const json_t *v, struct ferr *err)
{
	const char *why;
	char show[96];

	if (!plain_string(v))
		return ferr_set(err, -EINVAL, "\"%s\": %s must be a string",
				label, field);
	/* "": none, as a node without an image */
	if (!*json_string_value(v) && !strcmp(field, "image"))
		return 0;
	if (jobspec_image_check(json_string_value(v), &why) < 0)
		return ferr_set(err, -EINVAL, "\"%s\": %s: \"%s\" is not an "
				"image reference (registry/name:tag@digest): %s",
				label, field, shown(json_string_value(v), show,
						    sizeof(show)), why);
	return 0;
}

static int check_images(const char *label, const json_t *list,
			struct ferr *err)
{
	char field[32];
	size_t i;
	json_t *v;
	int ret;

	if (!json_is_array(list) || json_array_size(list) > JOBSPEC_IMAGES_MAX)
		return ferr_set(err, -EINVAL, "\"%s\": images must be a list of "
				"at most %d image references", label,
				JOBSPEC_IMAGES_MAX);
	json_array_foreach(list, i, v) {
		snprintf(field, sizeof(field), "images[%zu]", i);
		ret = check_image(label, field, v, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int check_options(const char *label, const json_t *list,
			 struct ferr *err)
{
	size_t i;
	json_t *v;

	if (!json_is_array(list) || json_array_size(list) > JOBSPEC_ARGV_MAX)
		return ferr_set(err, -EINVAL, "\"%s\": options must be a list of "
				"at most %d input parameter names (those whose "
				"value may begin an argument with \"-\")", label,
				JOBSPEC_ARGV_MAX);
	json_array_foreach(list, i, v) {
		if (!plain_string(v) || !*json_string_value(v))
			return ferr_set(err, -EINVAL, "\"%s\": options[%zu] must "
					"be the name of an input parameter", label,
					i);
		if (listed(own_names, json_string_value(v)))
			return ferr_set(err, -EINVAL, "\"%s\": options[%zu]: "
					"\"%s\" is flowfs's, no input parameter "
					"(inputs, job_dir, node and session "
					"cannot begin an argument with \"-\")",
					label, i, json_string_value(v));
	}
	return 0;
}

int jobspec_check_tool(const char *label, const json_t *entry,
		       struct ferr *err)
{
	const char *k;
	json_t *v;
	int ret;

	if (!json_is_object(entry))
		return ferr_set(err, -EINVAL, "\"%s\" must be an object",
				label);
	json_object_foreach((json_t *)entry, k, v) {
		if (!listed(tool_fields, k))
			return ferr_set(err, -EINVAL, "\"%s\": unknown field "
					"\"%s\" (a tool has image, images, "
					"machine_type, command, options, "
					"outputs, resources)", label, k);
		if (!strcmp(k, "command"))
			ret = check_command(label, v, err);
		else if (!strcmp(k, "outputs"))
			ret = check_outputs(label, v, err);
		else if (!strcmp(k, "resources"))
			ret = check_resources(label, v, err);
		else if (!strcmp(k, "images"))
			ret = check_images(label, v, err);
		else if (!strcmp(k, "options"))
			ret = check_options(label, v, err);
		else if (!strcmp(k, "image") && plain_string(v))
			ret = check_image(label, "image", v, err);
		else
			ret = plain_string(v) ? 0
			      : ferr_set(err, -EINVAL, "\"%s.%s\" must be a "
					 "string", label, k);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ---- the plan ------------------------------------------------------------ */

/* What a graph's node and edge say, read once. */
struct pnode {
	const char *id, *label, *machine_type, *image;
	const json_t *tool;	/* the map's entry, or NULL */
	json_t *inputs;		/* name -> value, edges applied */
	size_t indegree;
	size_t *next, nnext;	/* the jobs that need this one */
	bool placed;
};

struct pgraph {
	struct pnode *nodes;
	size_t n;
	json_t *index;		/* id -> its index in nodes: 10,000 nodes
				 * and their edges, looked up in O(1) */
	const json_t *graph;
	const json_t *tools;
	const struct jobspec_options *opt;
};

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
	const json_t *v = json_object_get(obj, key);

	return plain_string(v) ? json_string_value(v) : dflt;
}

static long find_node(const struct pgraph *g, const char *id)
{
	const json_t *i = json_object_get(g->index, id);

	return i ? (long)json_integer_value(i) : -1;
}

/* MatMaster's c<cpus>_m<GiB>_<kind>: false when it is not that form. */
static bool machine_resources(const char *mt, unsigned *cpus,
			      unsigned long *memory_mib, unsigned *gpus)
{
	unsigned long c, m;
	char *end;

	if (mt[0] != 'c' || mt[1] < '0' || mt[1] > '9')
		return false;
	c = strtoul(mt + 1, &end, 10);
	if (end[0] != '_' || end[1] != 'm' || end[2] < '0' || end[2] > '9')
		return false;
	m = strtoul(end + 2, &end, 10);
	if (end[0] != '_' || !end[1] || !c || c > 4096 || m > 16384)
		return false;
	*cpus = (unsigned)c;
	*memory_mib = m * 1024;
	*gpus = 0;
	if (strcmp(end + 1, "cpu")) {
		unsigned long n = strtoul(end + 1, NULL, 10);

		*gpus = n >= 1 && n <= 64 ? (unsigned)n : 1;
	}
	return true;
}

/*
 * The node's image (jobspec.h, "Images"): none, or an image reference
 * the map allows for its label.  The runner and the Argo export take it
 * as it is, so a node's words must not become the runner's options
 * ("--privileged") or an image the map author never chose.
 */
static int check_node_image(const struct pnode *p, struct ferr *err)
{
	const json_t *own = json_object_get(p->tool, "image");
	const json_t *list = json_object_get(p->tool, "images");
	struct sbuf allows = SBUF_INIT;
	const char *why;
	char show[96];
	size_t i;
	json_t *v;
	int ret;

	if (!*p->image)
		return 0;
	if (jobspec_image_check(p->image, &why) < 0)
		return ferr_set(err, -EINVAL, "node \"%s\": system_values.image "
				"\"%s\" is not an image reference "
				"(registry/name:tag@digest): %s", p->id,
				shown(p->image, show, sizeof(show)), why);
	if (plain_string(own) && !strcmp(json_string_value(own), p->image))
		return 0;
	json_array_foreach(list, i, v)
		if (!strcmp(json_string_value(v), p->image))
			return 0;
	/* what it allows, for the message (a short list only shortens it) */
	if (plain_string(own) && *json_string_value(own))
		sbuf_addstr(&allows, json_string_value(own));
	json_array_foreach(list, i, v) {
		if (allows.len)
			sbuf_addstr(&allows, ", ");
		sbuf_addstr(&allows, json_string_value(v));
	}
	ret = ferr_set(err, -EINVAL, "node \"%s\": system_values.image \"%s\" "
		       "is not an image the tool map allows for \"%s\" (%s%s)",
		       p->id, shown(p->image, show, sizeof(show)), p->label,
		       allows.len ? "it allows: " : "it names no \"image\" or "
		       "\"images\" for it", allows.buf);
	sbuf_release(&allows);
	return ret;
}

static int read_graph(struct pgraph *g, struct ferr *err)
{
	const json_t *nodes = json_object_get(g->graph, "nodes");
	const json_t *node;
	size_t i;

	if (!json_is_array(nodes) || !json_array_size(nodes))
		return ferr_set(err, -EINVAL, "the graph has no nodes");
	if (json_array_size(nodes) > JOBSPEC_NODES_MAX)
		return ferr_set(err, -E2BIG, "the graph has %zu nodes; a run "
				"takes at most %d", json_array_size(nodes),
				JOBSPEC_NODES_MAX);
	g->nodes = calloc(json_array_size(nodes), sizeof(*g->nodes));
	g->index = json_object();
	if (!g->nodes || !g->index)
		return -ENOMEM;
	json_array_foreach(nodes, i, node) {
		struct pnode *p = &g->nodes[g->n];
		const json_t *sv = json_object_get(node, "system_values");
		const json_t *params = json_object_get(node,
						       "input_parameters");
		const json_t *par;
		size_t j;

		p->id = str_or(node, "id", NULL);
		p->label = str_or(node, "label", NULL);
		/* an empty id would make the job folder run_dir itself */
		if (!p->id || !p->label || !*p->id || !*p->label)
			return ferr_set(err, -EINVAL, "nodes[%zu] has no id or "
					"label", i);
		if (find_node(g, p->id) >= 0)
			return ferr_set(err, -EINVAL, "two nodes are \"%s\"",
					p->id);
		if (json_object_set_new(g->index, p->id,
					json_integer((json_int_t)g->n)) < 0)
			return -ENOMEM;
		g->n++;
		p->tool = g->tools ? json_object_get(g->tools, p->label) : NULL;
		p->machine_type = str_or(sv, "machine_type", "");
		if (!*p->machine_type)
			p->machine_type = str_or(p->tool, "machine_type", "");
		p->image = str_or(sv, "image", "");
		if (!*p->image)
			p->image = str_or(p->tool, "image", "");
		p->inputs = json_object();
		if (!p->inputs)
			return -ENOMEM;
		json_array_foreach(params, j, par) {
			const char *name = str_or(par, "name", NULL);
			json_t *v = json_object_get(par, "value");

			if (name && json_object_set(p->inputs, name,
						    v ? v : json_null()) < 0)
				return -ENOMEM;
		}
	}
	for (i = 0; i < g->n; i++) {
		const char *path = g->opt->tools_path ? g->opt->tools_path
						      : "tools.json";
		char why[FERR_MESSAGE_MAX];
		int ret;

		if (!json_object_get(g->nodes[i].tool, "command"))
			return ferr_set(err, -EINVAL, "node \"%s\": its label "
					"\"%s\" has no command in the tool map "
					"(%s)", g->nodes[i].id,
					g->nodes[i].label, path);
		/* the map is the caller's: an entry no one checked would
		 * give an empty argv, a "(null)" path or 0 CPUs below */
		ret = jobspec_check_tool(g->nodes[i].label, g->nodes[i].tool,
					 err);
		if (ret < 0) {
			snprintf(why, sizeof(why), "%s",
				 err ? err->message : "");
			return ret == -ENOMEM ? ret
			       : ferr_set(err, ret, "%s: %s", path, why);
		}
		ret = check_node_image(&g->nodes[i], err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Whether `name` is out_<label>; a label has no bound, so no buffer. */
static bool default_output(const char *name, const char *label)
{
	return !strncmp(name, "out_", 4) && !strcmp(name + 4, label);
}

/* Whether node p has output `name`; `have` lists what it has (a message:
 * a failure to grow it only shortens the list). */
static bool has_output(const struct pnode *p, const char *name,
		       struct sbuf *have)
{
	const json_t *outs = json_object_get(p->tool, "outputs");
	const char *k;
	json_t *v;
	bool found = default_output(name, p->label);

	sbuf_addf(have, "out_%s", p->label);
	json_object_foreach((json_t *)outs, k, v) {
		found = found || !strcmp(k, name);
		if (!default_output(k, p->label)) {
			sbuf_addstr(have, ", ");
			sbuf_addstr(have, k);
		}
	}
	return found;
}

static int add_next(struct pnode *from, size_t to)
{
	size_t *grown = realloc(from->next, (from->nnext + 1) *
					    sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	from->next = grown;
	from->next[from->nnext++] = to;
	return 0;
}

/* Links the nodes by the edges; each edge's input gets a placeholder the
 * paths replace once the folders are known (edge_source). */
static int read_edges(struct pgraph *g, struct ferr *err)
{
	const json_t *edges = json_object_get(g->graph, "edges");
	const json_t *e;
	size_t i;
	int ret;

	json_array_foreach(edges, i, e) {
		const char *id = str_or(e, "id", "?");
		const char *src = str_or(e, "source_node_id", "");
		const char *dst = str_or(e, "target_node_id", "");
		long s = find_node(g, src), t = find_node(g, dst);
		struct sbuf have = SBUF_INIT;
		const char *out;

		if (s < 0 || t < 0)
			return ferr_set(err, -EINVAL, "edge \"%s\": node \"%s\""
					" is not in the graph", id,
					s < 0 ? src : dst);
		/* none named: out_<label>, which every node has */
		out = str_or(e, "source_parameter_name", NULL);
		if (out && !has_output(&g->nodes[s], out, &have)) {
			ret = ferr_set(err, -EINVAL, "edge \"%s\": node \"%s\" "
				       "(%s) has no output \"%s\" (it has: %s)",
				       id, src, g->nodes[s].label, out,
				       have.buf);
			sbuf_release(&have);
			return ret;
		}
		sbuf_release(&have);
		ret = add_next(&g->nodes[s], (size_t)t);
		if (ret < 0)
			return ret;
		g->nodes[t].indegree++;
	}
	return 0;
}

/*
 * "a -> b -> a" for a cycle among the nodes Kahn's algorithm left.  Every
 * node left has a predecessor left (else it would have been placed), but
 * not always a successor (a node after a cycle), so the walk goes
 * backwards: from any node left, predecessor after predecessor, until one
 * repeats; that one is on a cycle, printed forwards.
 */
static int cycle_error(const struct pgraph *g, struct ferr *err)
{
	struct sbuf path = SBUF_INIT;
	size_t *pred = malloc(g->n * sizeof(*pred));
	size_t *cyc = malloc((g->n + 1) * sizeof(*cyc));
	bool *seen = calloc(g->n, sizeof(*seen));
	size_t at = 0, n = 0;
	int ret = -ENOMEM;

	if (!pred || !cyc || !seen)
		goto out;
	for (size_t i = 0; i < g->n; i++)
		pred[i] = SIZE_MAX;
	for (size_t i = 0; i < g->n; i++)
		for (size_t k = 0; !g->nodes[i].placed && k < g->nodes[i].nnext;
		     k++)
			if (pred[g->nodes[i].next[k]] == SIZE_MAX)
				pred[g->nodes[i].next[k]] = i;
	while (g->nodes[at].placed)
		at++;
	for (; !seen[at]; at = pred[at])
		seen[at] = true;
	/* at is on the cycle: backwards round it, then printed reversed */
	do {
		cyc[n++] = at;
		at = pred[at];
	} while (at != cyc[0]);
	cyc[n++] = at;
	for (size_t i = n; i-- > 0;) {
		/* a message has room for a few hundred bytes of ids */
		if (path.len > 400 && i > 0) {
			sbuf_addstr(&path, "... -> ");
			i = 0;
		}
		sbuf_addstr(&path, g->nodes[cyc[i]].id);
		if (i)
			sbuf_addstr(&path, " -> ");
	}
	ret = ferr_set(err, -EINVAL, "the graph has a cycle: %s", path.buf);
out:
	free(pred);
	free(cyc);
	free(seen);
	sbuf_release(&path);
	return ret;
}

/* A min-heap of node indices: the ready job listed first goes first. */
static void heap_push(size_t *heap, size_t *n, size_t v)
{
	size_t at = (*n)++;

	for (; at && heap[(at - 1) / 2] > v; at = (at - 1) / 2)
		heap[at] = heap[(at - 1) / 2];
	heap[at] = v;
}

static size_t heap_pop(size_t *heap, size_t *n)
{
	size_t top = heap[0], last = heap[--*n], at = 0;

	for (;;) {
		size_t c = 2 * at + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && heap[c + 1] < heap[c])
			c++;
		if (heap[c] >= last)
			break;
		heap[at] = heap[c];
		at = c;
	}
	heap[at] = last;
	return top;
}

/*
 * The node indices in dependency order (Kahn; of the jobs ready, the one
 * listed first, so a graph listed in an order that works keeps it).
 */
static int order_nodes(struct pgraph *g, size_t *order, struct ferr *err)
{
	size_t *indeg = malloc(g->n * sizeof(*indeg));
	size_t *heap = malloc(g->n * sizeof(*heap));
	size_t done = 0, nheap = 0;
	int ret = -ENOMEM;

	if (!indeg || !heap)
		goto out;
	for (size_t i = 0; i < g->n; i++) {
		indeg[i] = g->nodes[i].indegree;
		if (!indeg[i])
			heap_push(heap, &nheap, i);
	}
	while (nheap) {
		struct pnode *p;

		order[done] = heap_pop(heap, &nheap);
		p = &g->nodes[order[done++]];
		p->placed = true;
		for (size_t k = 0; k < p->nnext; k++)
			if (!--indeg[p->next[k]])
				heap_push(heap, &nheap, p->next[k]);
	}
	ret = done == g->n ? 0 : cycle_error(g, err);
out:
	free(indeg);
	free(heap);
	return ret;
}

static char *strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A folder or job name: bytes outside [A-Za-z0-9._-] made "_". */
void jobspec_safe_name(const char *id, char *out, size_t size)
{
	size_t i;

	for (i = 0; id[i] && i + 1 < size; i++) {
		unsigned char c = (unsigned char)id[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-' ||
			  (c == '.' && i);

		out[i] = ok ? (char)c : '_';
	}
	out[i] = '\0';
}

/*
 * Job i's folder.  `taken` holds the names given; `tried` the last
 * suffix tried per base name (those below it stay taken), so 10,000 ids
 * that all make one name cost O(n), not O(n^2) tries.
 */
static int job_folder(struct jobspec_plan *plan, size_t i,
		      const struct jobspec_options *opt, json_t *taken,
		      json_t *tried)
{
	char base[FOLDER_NAME_MAX + 1], name[FOLDER_NAME_MAX + 32];
	json_int_t n;

	jobspec_safe_name(plan->jobs[i].node_id, base, sizeof(base));
	snprintf(name, sizeof(name), "%s", base);
	n = json_integer_value(json_object_get(tried, base));
	if (n > 1)	/* 1: the base itself */
		snprintf(name, sizeof(name), "%s-%" JSON_INTEGER_FORMAT, base,
			 n);
	else
		n = 1;
	while (json_object_get(taken, name))
		snprintf(name, sizeof(name), "%s-%" JSON_INTEGER_FORMAT, base,
			 ++n);
	if (json_object_set_new(taken, name, json_true()) < 0 ||
	    json_object_set_new(tried, base, json_integer(n)) < 0)
		return -ENOMEM;
	if (asprintf(&plan->jobs[i].job_dir, "%s/%s", opt->run_dir, name) < 0) {
		plan->jobs[i].job_dir = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int set_outputs(struct jobspec_job *job, const json_t *tool)
{
	const json_t *outs = json_object_get(tool, "outputs");
	const json_t *declared = NULL;
	const char *k;
	json_t *v;
	size_t n = 1 + json_object_size(outs);

	job->outputs = calloc(n, sizeof(*job->outputs));
	if (!job->outputs)
		return -ENOMEM;
	job->noutputs = 1;
	if (asprintf(&job->outputs[0].name, "out_%s", job->label) < 0) {
		job->outputs[0].name = NULL;
		return -ENOMEM;
	}
	json_object_foreach((json_t *)outs, k, v)
		if (default_output(k, job->label))
			declared = v;
	if (!declared)
		job->outputs[0].path = strdup(job->job_dir);
	else if (asprintf(&job->outputs[0].path, "%s/%s", job->job_dir,
			  json_string_value(declared)) < 0)
		job->outputs[0].path = NULL;
	if (!job->outputs[0].path)
		return -ENOMEM;
	json_object_foreach((json_t *)outs, k, v) {
		struct jobspec_output *o = &job->outputs[job->noutputs];

		if (default_output(k, job->label))
			continue;
		o->name = strdup(k);
		if (asprintf(&o->path, "%s/%s", job->job_dir,
			     json_string_value(v)) < 0)
			o->path = NULL;
		job->noutputs++;
		if (!o->name || !o->path)
			return -ENOMEM;
	}
	return 0;
}

static const char *output_path(const struct jobspec_job *job,
			       const char *name)
{
	for (size_t i = 0; i < job->noutputs; i++)
		if (!strcmp(job->outputs[i].name, name))
			return job->outputs[i].path;
	return NULL;
}

/* Each edge's input becomes its source's output path; two edges into
 * one input make a list of paths, in edge order. */
static int apply_edges(const struct pgraph *g, struct jobspec_plan *plan,
		       const size_t *job_of)
{
	const json_t *edges = json_object_get(g->graph, "edges");
	json_t *fed = json_object();	/* "<job>/<input>": true */
	const json_t *e;
	size_t i;
	int ret = 0;

	if (!fed)
		return -ENOMEM;
	json_array_foreach(edges, i, e) {
		size_t s = job_of[find_node(g, str_or(e, "source_node_id", ""))];
		size_t t = job_of[find_node(g, str_or(e, "target_node_id", ""))];
		struct jobspec_job *src = &plan->jobs[s], *dst = &plan->jobs[t];
		const char *input = str_or(e, "target_parameter_name", "input");
		const char *out = str_or(e, "source_parameter_name",
					 src->outputs[0].name);
		json_t *path = json_string(output_path(src, out));
		json_t *old = json_object_get(dst->inputs, input);
		char key[64];

		snprintf(key, sizeof(key), "%zu", t);
		if (!path) {
			ret = -ENOMEM;
			goto out;
		}
		if (!json_object_get(fed, key))
			json_object_set_new(fed, key, json_object());
		if (!json_object_get(json_object_get(fed, key), input)) {
			json_object_set_new(json_object_get(fed, key), input,
					    json_true());
			ret = json_object_set_new(dst->inputs, input, path);
		} else if (json_is_array(old)) {
			ret = json_array_append_new(old, path);
		} else {
			ret = json_object_set_new(dst->inputs, input,
						  json_pack("[Oo]", old, path));
		}
		if (ret < 0) {
			ret = -ENOMEM;
			goto out;
		}
	}
out:
	json_decref(fed);
	return ret;
}

static void set_resources(struct jobspec_job *job, const json_t *tool)
{
	const json_t *res = json_object_get(tool, "resources");
	const json_t *v;

	job->cpus = 1;
	machine_resources(job->machine_type, &job->cpus, &job->memory_mib,
			  &job->gpus);
	if ((v = json_object_get(res, "cpus")))
		job->cpus = (unsigned)json_integer_value(v);
	if ((v = json_object_get(res, "memory_mib")))
		job->memory_mib = (unsigned long)json_integer_value(v);
	if ((v = json_object_get(res, "gpus")))
		job->gpus = (unsigned)json_integer_value(v);
	if ((v = json_object_get(res, "time_minutes")))
		job->time_minutes = (unsigned)json_integer_value(v);
}

static int push_arg(struct jobspec_job *job, const char *text, size_t len)
{
	char **grown = realloc(job->argv, (job->argc + 2) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	job->argv = grown;
	job->argv[job->argc] = strndup(text, len);
	if (!job->argv[job->argc])
		return -ENOMEM;
	job->argv[++job->argc] = NULL;
	return 0;
}

/* Argument `i` of the command (jobspec.h, "Options"): not an option a
 * node's value begins, unless the map lets that parameter. */
static int check_option(const struct jobspec_job *job, const json_t *tool,
			const char *item, size_t i, const json_t *context,
			const struct sbuf *arg, struct ferr *err)
{
	char expr[200], show[96];
	int ret = jobspec_arg_origin(item, context, arg->buf, arg->len,
				     json_object_get(tool, "options"), expr,
				     sizeof(expr));

	if (ret <= 0)
		return ret;
	shown(arg->buf, show, sizeof(show));
	if (!*expr)
		return ferr_set(err, -EINVAL, "node \"%s\": command[%zu] \"%s\" "
				"begins with \"-\", and where from could not be "
				"told: a program would read it as an option",
				job->node_id, i, show);
	return ferr_set(err, -EINVAL, "node \"%s\": command[%zu] \"%s\" "
			"begins with \"-\" from the node's value %s: a program "
			"would read it as an option; only input parameters the "
			"tool map lists in \"options\" for \"%s\" may do that",
			job->node_id, i, show, expr, job->label);
}

/* Render each template of `items` into job->argv; `what` names them.
 * `tool`: the command's (its arguments are checked for options), NULL for
 * the runner's words (the daemon owner's, filled with checked values). */
static int render_items(struct jobspec_job *job, const char *const *items,
			size_t nitems, const json_t *context, const char *what,
			const json_t *tool, size_t *total, struct ferr *err)
{
	struct sbuf out = SBUF_INIT;
	int ret = 0;

	for (size_t i = 0; i < nitems; i++) {
		struct ferr terr = FERR_INIT;
		struct tmpl *t = NULL;

		sbuf_reset(&out);
		ret = tmpl_parse(&t, items[i], strlen(items[i]), &terr);
		if (!ret)
			ret = tmpl_render(t, context, &out, &terr);
		tmpl_free(t);
		if (ret == -ENOMEM)
			goto out;
		if (ret < 0) {
			ret = ferr_set(err, -EINVAL, "node \"%s\": %s[%zu]: %s",
				       job->node_id, what, i, terr.message);
			goto out;
		}
		if (memchr(out.buf, '\0', out.len)) {
			ret = ferr_set(err, -EINVAL, "node \"%s\": %s[%zu] "
				       "renders with a NUL byte, which no "
				       "argument can hold", job->node_id,
				       what, i);
			goto out;
		}
		if (tool) {
			ret = check_option(job, tool, items[i], i, context,
					   &out, err);
			if (ret < 0)
				goto out;
		}
		*total += out.len + 1;
		if (*total > JOBSPEC_COMMAND_MAX) {
			ret = ferr_set(err, -E2BIG, "node \"%s\": its command "
				       "renders to more than %d bytes",
				       job->node_id, JOBSPEC_COMMAND_MAX);
			goto out;
		}
		ret = push_arg(job, out.buf, out.len);
		if (ret < 0)
			goto out;
	}
out:
	sbuf_release(&out);
	return ret;
}

static int render_argv(struct jobspec_job *job, const json_t *tool,
		       const struct jobspec_options *opt, struct ferr *err)
{
	const json_t *cmd = json_object_get(tool, "command");
	const char **items = calloc(json_array_size(cmd) + 1, sizeof(*items));
	json_t *ctx = json_deep_copy(job->inputs);
	/* the runner sees only these two: `image` is no name the command
	 * sees, so an input called image keeps its value there */
	json_t *runner_ctx = json_pack("{ssss}", "image", job->image,
				       "job_dir", job->job_dir);
	size_t total = 0, n = 0;
	int ret = -ENOMEM;

	if (!items || !ctx || !runner_ctx)
		goto out;
	if (json_object_set(ctx, "inputs", job->inputs) < 0 ||
	    json_object_set_new(ctx, "job_dir", json_string(job->job_dir)) ||
	    json_object_set_new(ctx, "node", json_pack("{ssss}", "id",
						       job->node_id, "label",
						       job->label)) ||
	    json_object_set_new(ctx, "session", json_string(opt->session)))
		goto out;
	if (opt->container && *job->image) {
		while (opt->container[n])
			n++;
		ret = render_items(job, opt->container, n, runner_ctx,
				   "the container runner", NULL, &total, err);
		if (ret < 0)
			goto out;
	}
	for (size_t i = 0; i < json_array_size(cmd); i++)
		items[i] = json_string_value(json_array_get(cmd, i));
	ret = render_items(job, items, json_array_size(cmd), ctx, "command",
			   tool, &total, err);
out:
	free(items);
	json_decref(ctx);
	json_decref(runner_ctx);
	return ret;
}

int jobspec_plan(const json_t *graph, const json_t *tools,
		 const struct jobspec_options *opt, struct jobspec_plan *out,
		 struct ferr *err)
{
	struct pgraph g = { .graph = graph, .tools = tools, .opt = opt };
	size_t *order = NULL, *job_of = NULL;
	json_t *taken = json_object(), *tried = json_object();
	int ret;

	memset(out, 0, sizeof(*out));
	if (!taken || !tried) {
		ret = -ENOMEM;
		goto out;
	}
	ret = read_graph(&g, err);
	if (!ret)
		ret = read_edges(&g, err);
	if (ret < 0)
		goto out;
	order = malloc(g.n * sizeof(*order));
	job_of = malloc(g.n * sizeof(*job_of));
	out->jobs = calloc(g.n, sizeof(*out->jobs));
	if (!order || !job_of || !out->jobs) {
		ret = -ENOMEM;
		goto out;
	}
	/* folders, outputs and resources first: the edges need the paths,
	 * the commands the edges; the order is checked last, as documented */
	for (size_t i = 0; i < g.n; i++) {
		struct jobspec_job *job = &out->jobs[i];
		const struct pnode *p = &g.nodes[i];

		out->n++;
		job_of[i] = i;
		job->node_id = strdup(p->id);
		job->label = strdup(p->label);
		job->image = strdup(p->image);
		job->machine_type = strdup(p->machine_type);
		job->inputs = json_deep_copy(p->inputs);
		if (!job->node_id || !job->label || !job->image ||
		    !job->machine_type || !job->inputs) {
			ret = -ENOMEM;
			goto out;
		}
		job->partition = strdup_or_null(str_or(
			json_object_get(p->tool, "resources"), "partition",
			NULL));
		ret = job_folder(out, i, opt, taken, tried);
		if (!ret)
			ret = set_outputs(job, p->tool);
		if (ret < 0)
			goto out;
		set_resources(job, p->tool);
	}
	ret = apply_edges(&g, out, job_of);
	for (size_t i = 0; !ret && i < g.n; i++)
		ret = render_argv(&out->jobs[i], g.nodes[i].tool, opt, err);
	if (!ret)
		ret = order_nodes(&g, order, err);
	if (ret < 0)
		goto out;
	/* put the jobs in dependency order, deps as positions in it */
	{
		struct jobspec_job *sorted = calloc(g.n, sizeof(*sorted));
		size_t *pos = malloc(g.n * sizeof(*pos));

		if (!sorted || !pos) {
			free(sorted);
			free(pos);
			ret = -ENOMEM;
			goto out;
		}
		for (size_t k = 0; k < g.n; k++) {
			sorted[k] = out->jobs[order[k]];
			pos[order[k]] = k;
		}
		free(out->jobs);
		out->jobs = sorted;
		for (size_t i = 0; !ret && i < g.n; i++)
			for (size_t k = 0; k < g.nodes[i].nnext; k++) {
				struct jobspec_job *t =
					&out->jobs[pos[g.nodes[i].next[k]]];
				size_t *grown = realloc(t->deps,
					(t->ndeps + 1) * sizeof(*grown));
				bool dup = false;

				if (!grown) {
					ret = -ENOMEM;
					break;
				}
				t->deps = grown;
				for (size_t d = 0; d < t->ndeps; d++)
					dup = dup || t->deps[d] == pos[i];
				if (!dup)
					t->deps[t->ndeps++] = pos[i];
			}
		free(pos);
		/* deps in plan order, so scripts and exports are stable */
		for (size_t i = 0; !ret && i < g.n; i++) {
			struct jobspec_job *j = &out->jobs[i];

			for (size_t a = 1; a < j->ndeps; a++)
				for (size_t b = a; b > 0 &&
				     j->deps[b - 1] > j->deps[b]; b--) {
					size_t tmp = j->deps[b];

					j->deps[b] = j->deps[b - 1];
					j->deps[b - 1] = tmp;
				}
		}
	}
out:
	for (size_t i = 0; i < g.n; i++) {
		json_decref(g.nodes[i].inputs);
		free(g.nodes[i].next);
	}
	free(g.nodes);
	json_decref(g.index);
	json_decref(taken);
	json_decref(tried);
	free(order);
	free(job_of);
	if (ret < 0)
		jobspec_plan_release(out);
	return ret;
}

void jobspec_plan_release(struct jobspec_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++) {
		struct jobspec_job *j = &plan->jobs[i];

		free(j->node_id);
		free(j->label);
		free(j->job_dir);
		free(j->image);
		free(j->machine_type);
		for (size_t a = 0; a < j->argc; a++)
			free(j->argv[a]);
		free(j->argv);
		free(j->partition);
		free(j->deps);
		for (size_t o = 0; o < j->noutputs; o++) {
			free(j->outputs[o].name);
			free(j->outputs[o].path);
		}
		free(j->outputs);
		json_decref(j->inputs);
	}
	free(plan->jobs);
	plan->jobs = NULL;
	plan->n = 0;
}

long jobspec_find(const struct jobspec_plan *plan, const char *id)
{
	for (size_t i = 0; i < plan->n; i++)
		if (!strcmp(plan->jobs[i].node_id, id))
			return (long)i;
	return -1;
}

/* ---- scripts ------------------------------------------------------------- */

/* `force`: quoted even when it could be bare (a command's first word:
 * bare, "X=1" would be an assignment and "if" a keyword). */
static int quote(struct sbuf *out, const char *s, bool force)
{
	size_t len = strlen(s);
	int ret;

	if (!force && len &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
		      "XYZ0123456789_./=:,@%+-") == len)
		return sbuf_addstr(out, s);
	ret = sbuf_addch(out, '\'');
	for (; !ret && *s; s++)
		ret = *s == '\'' ? sbuf_addstr(out, "'\\''")
				 : sbuf_addch(out, *s);
	return ret ? ret : sbuf_addch(out, '\'');
}

int jobspec_shell_quote(struct sbuf *out, const char *s)
{
	return quote(out, s, false);
}

int jobspec_script(const struct jobspec_plan *plan, size_t i,
		   const struct jobspec_options *opt, struct sbuf *out)
{
	const struct jobspec_job *j = &plan->jobs[i];
	char session[JOB_NAME_MAX], node[JOB_NAME_MAX], label[JOB_NAME_MAX];
	int ret = 0;

	jobspec_safe_name(opt->session, session, sizeof(session));
	jobspec_safe_name(j->node_id, node, sizeof(node));
	jobspec_safe_name(j->label, label, sizeof(label));
	ret = sbuf_addf(out, "#!/bin/bash\n"
			"#SBATCH --job-name=flowfs-%s-%s\n"
			"#SBATCH --nodes=1\n"
			"#SBATCH --ntasks=1\n"
			"#SBATCH --cpus-per-task=%u\n",
			session, node, j->cpus);
	if (!ret && j->memory_mib)
		ret = sbuf_addf(out, "#SBATCH --mem=%luM\n", j->memory_mib);
	if (!ret && j->gpus)
		ret = sbuf_addf(out, "#SBATCH --gres=gpu:%u\n", j->gpus);
	if (!ret && j->time_minutes)
		ret = sbuf_addf(out, "#SBATCH --time=%u\n", j->time_minutes);
	if (!ret && j->partition)
		ret = sbuf_addf(out, "#SBATCH --partition=%s\n", j->partition);
	/* names in a comment line in their safe form: a newline in one
	 * would end the comment */
	if (!ret)
		ret = sbuf_addf(out, "# node %s (label %s) of session %s, "
				"made by flowfs\n", node, label, session);
	if (!ret)
		ret = sbuf_addstr(out, "cd ");
	if (!ret)
		ret = jobspec_shell_quote(out, j->job_dir);
	if (!ret)
		ret = sbuf_addstr(out, " || exit 1\n"
				  "date +%s > " JOBSPEC_STARTED ".tmp && mv -f "
				  JOBSPEC_STARTED ".tmp " JOBSPEC_STARTED "\n");
	for (size_t a = 0; !ret && a < j->argc; a++) {
		ret = quote(out, j->argv[a], a == 0);
		if (!ret)
			ret = sbuf_addstr(out, a + 1 < j->argc ? " \\\n  "
							       : "\n");
	}
	if (!ret)
		ret = sbuf_addstr(out, "code=$?\n"
				  "printf '%s %s\\n' \"$code\" \"$(date +%s)\" > "
				  JOBSPEC_EXIT ".tmp && mv -f " JOBSPEC_EXIT
				  ".tmp " JOBSPEC_EXIT "\n"
				  "exit \"$code\"\n");
	return ret;
}

int jobspec_sbatch_flags(const struct jobspec_plan *plan, size_t i,
			 char ***flags)
{
	const char *dir = plan->jobs[i].job_dir;
	char **f = calloc(4, sizeof(*f));

	*flags = NULL;
	if (!f)
		return -ENOMEM;
	if (asprintf(&f[0], "--chdir=%s", dir) < 0)
		f[0] = NULL;
	if (asprintf(&f[1], "--output=%s/" JOBSPEC_STDOUT, dir) < 0)
		f[1] = NULL;
	if (asprintf(&f[2], "--error=%s/" JOBSPEC_STDERR, dir) < 0)
		f[2] = NULL;
	if (!f[0] || !f[1] || !f[2]) {
		for (int k = 0; k < 3; k++)
			free(f[k]);
		free(f);
		return -ENOMEM;
	}
	*flags = f;
	return 0;
}
