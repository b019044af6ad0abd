/*
 * Fuzz target for the job graph (core/graph).  The bytes are either one
 * parameters.json text (when they hold no NUL byte) or a script of
 * operations separated by NUL bytes, each starting with a letter:
 *
 *	P<text>           graph_commit_parameters
 *	N<id>\n<text>     graph_commit of a node; E<id>\n<text> of an edge
 *	D<id> / d<id>     graph_delete of a node / an edge
 *	R<from>\n<to>     graph_rename of a node (S: with replace;
 *	                  r and s: the same for edges)
 *	T<id> / t<id>     a draft node / edge; X: graph_drop_all_drafts
 *	I                 graph_infer_edges
 *	anything else     the whole piece as a parameters.json text
 *
 * on one session of an in-memory store, emptied for every input.  After
 * every operation no transaction may be left open; a refused one
 * (a negative return) must leave parameters.json as it was.  After an
 * accepted one the graph must hold its invariants, checked here apart
 * from graph.c: parameters.json parses; its node ids are unique; every
 * edge names two of its nodes and an input the target has (or "input"
 * when it has none); no two edges are equal in all four fields; the
 * edges form no cycle; each listed item renders to exactly its size, in
 * fjson's canonical form, with its id, an edge with the fields of one
 * (a pending edge may lack source_parameter_name); graph_problems() has
 * one line per pending edge (within the bounds of graph.h), and its
 * reason holds against the graph: one waits for a node iff a node it
 * names is missing, one whose nodes exist does not fit (else it would
 * have been placed), and is a duplicate of the edge it names, or closes
 * a cycle, or names an input the target lacks, as it says.  Writing
 * parameters.json's own text back is accepted and reads back the same
 * (when no edge is pending, as it would remove them: so at the end).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fjson.h"
#include "graph/graph.h"
#include "graph/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS 64

struct env {
	struct store *st;
	struct graph_tools *tools;
	int64_t session;
};

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_graph: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	abort();
}

static struct env *env(void)
{
	static struct env e;
	static const char tools_text[] =
		"{\"apex_calculation\": {\"image\": \"registry/apex:0.2.1\","
		" \"machine_type\": \"c2_m8_cpu\"},"
		" \"structure_generate\": {\"image\": \"registry/dpa:46bc\"}}";
	struct ferr err = FERR_INIT;

	if (e.st)
		return &e;
	if (store_open(&e.st, ":memory:", &err) < 0)
		die("store_open", err.message);
	{
		char path[] = "/tmp/fuzz-graph-tools-XXXXXX";
		int fd = mkstemp(path);

		if (fd < 0 || write(fd, tools_text, sizeof(tools_text) - 1) !=
				      (ssize_t)(sizeof(tools_text) - 1))
			die("cannot write a tool map", NULL);
		close(fd);
		if (graph_tools_load(path, &e.tools, &err) < 0)
			die("graph_tools_load", err.message);
		unlink(path);
	}
	if (store_exec(e.st, "INSERT INTO sessions(name, created_ns,"
		       " doc_mtime_ns, template_uuid) VALUES ('fuzz', 1, 1,"
		       " '68a4ed99-9fff-4b1a-9b47-98a8624b5143')") < 0)
		die("cannot make a session", store_errmsg(e.st));
	e.session = sqlite3_last_insert_rowid(store_db(e.st));
	return &e;
}

static void reset(struct env *e)
{
	if (store_exec(e->st, "DELETE FROM graph_edges") < 0 ||
	    store_exec(e->st, "DELETE FROM graph_nodes") < 0 ||
	    store_exec(e->st, "UPDATE sessions SET template_uuid ="
		       " '68a4ed99-9fff-4b1a-9b47-98a8624b5143'") < 0)
		die("reset", store_errmsg(e->st));
}

static char *render_params(struct env *e)
{
	struct sbuf sb = SBUF_INIT;

	if (graph_render_parameters(e->st, e->session, &sb) < 0)
		die("graph_render_parameters failed", NULL);
	return sbuf_detach(&sb, NULL);
}

static const char *str_of(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	if (!s)
		die("a field is not a string", key);
	return s;
}

static bool has_input(const json_t *node, const char *name)
{
	const json_t *list = json_object_get(node, "input_parameters");
	const json_t *p;
	size_t i;

	if (!json_is_array(list))
		die("input_parameters is not an array", NULL);
	if (!json_array_size(list))
		return !strcmp(name, "input");
	json_array_foreach(list, i, p)
		if (!strcmp(str_of(p, "name"), name))
			return true;
	return false;
}

static size_t node_index(const json_t *nodes, const char *id)
{
	const json_t *n;
	size_t i;

	json_array_foreach(nodes, i, n)
		if (!strcmp(str_of(n, "id"), id))
			return i;
	return SIZE_MAX;
}

/* The structural invariants of parameters.json, checked naively; the
 * document, parsed. */
static json_t *check_document(const char *text)
{
	json_t *doc = NULL, *nodes, *edges, *meta;
	size_t nn, ne, *src, *dst, *indeg, done = 0;
	bool *gone;
	const json_t *v;
	size_t i;

	if (fjson_parse(&doc, text, strlen(text), NULL) < 0)
		die("parameters.json does not parse", text);
	if (json_object_size(doc) != 3)
		die("parameters.json has other than 3 members", NULL);
	nodes = json_object_get(doc, "nodes");
	edges = json_object_get(doc, "edges");
	meta = json_object_get(doc, "meta");
	if (!json_is_array(nodes) || !json_is_array(edges) ||
	    !json_is_object(meta))
		die("parameters.json has the wrong shape", NULL);
	nn = json_array_size(nodes);
	ne = json_array_size(edges);
	json_array_foreach(nodes, i, v)
		if (node_index(nodes, str_of(v, "id")) != i)
			die("a node id repeats", str_of(v, "id"));
	src = calloc(ne + 1, sizeof(*src));
	dst = calloc(ne + 1, sizeof(*dst));
	indeg = calloc(nn + 1, sizeof(*indeg));
	gone = calloc(nn + 1, sizeof(*gone));
	if (!src || !dst || !indeg || !gone)
		die("out of memory", NULL);
	json_array_foreach(edges, i, v) {
		const json_t *w;
		size_t j;

		src[i] = node_index(nodes, str_of(v, "source_node_id"));
		dst[i] = node_index(nodes, str_of(v, "target_node_id"));
		str_of(v, "source_parameter_name");
		if (src[i] == SIZE_MAX || dst[i] == SIZE_MAX)
			die("an edge names a missing node", str_of(v, "id"));
		if (!has_input(json_array_get(nodes, dst[i]),
			       str_of(v, "target_parameter_name")))
			die("an edge names a missing input", str_of(v, "id"));
		json_array_foreach(edges, j, w) {
			if (j >= i)
				break;
			if (!strcmp(str_of(v, "id"), str_of(w, "id")))
				die("an edge id repeats", str_of(v, "id"));
			if (src[i] == src[j] && dst[i] == dst[j] &&
			    !strcmp(str_of(v, "source_parameter_name"),
				    str_of(w, "source_parameter_name")) &&
			    !strcmp(str_of(v, "target_parameter_name"),
				    str_of(w, "target_parameter_name")))
				die("two edges are equal", str_of(v, "id"));
		}
		indeg[dst[i]]++;
	}
	/* peel sources off until none is left: anything left is a cycle */
	for (bool progress = true; progress;) {
		progress = false;
		for (size_t k = 0; k < nn; k++) {
			if (gone[k] || indeg[k])
				continue;
			gone[k] = true;
			done++;
			progress = true;
			for (size_t j = 0; j < ne; j++)
				if (src[j] == k)
					indeg[dst[j]]--;
		}
	}
	if (done != nn)
		die("the graph has a cycle", NULL);
	free(src);
	free(dst);
	free(indeg);
	free(gone);
	return doc;
}

/* An edge's document has an edge's fields, source_parameter_name
 * optional for a pending one. */
static void check_edge_doc(const json_t *doc, bool pending)
{
	static const char *const fields[] = {
		"id", "source_node_id", "source_parameter_name",
		"target_node_id", "target_parameter_name", NULL
	};
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)doc, key, v) {
		int i = 0;

		while (fields[i] && strcmp(fields[i], key))
			i++;
		if (!fields[i])
			die("an edge has an unknown field", key);
	}
	for (int i = 0; fields[i]; i++)
		if (!pending || i != 2)
			str_of(doc, fields[i]);
}

/* Whether `to` is reachable from `from` over the document's edges. */
static bool reaches(const json_t *edges, const char *from, const char *to)
{
	json_t *seen = json_object(), *queue = json_array();
	bool found = false;

	if (!seen || !queue || json_array_append_new(queue, json_string(from)))
		die("out of memory", NULL);
	for (size_t head = 0; !found && head < json_array_size(queue); head++) {
		const char *at = json_string_value(json_array_get(queue, head));
		const json_t *v;
		size_t i;

		json_array_foreach(edges, i, v) {
			const char *t = str_of(v, "target_node_id");

			if (strcmp(str_of(v, "source_node_id"), at) ||
			    json_object_get(seen, t))
				continue;
			found = found || !strcmp(t, to);
			if (json_object_set_new(seen, t, json_true()) ||
			    json_array_append_new(queue, json_string(t)))
				die("out of memory", NULL);
		}
	}
	json_decref(seen);
	json_decref(queue);
	return found;
}

/*
 * `reason`, graph_problems()'s for pending edge `v`, against the graph
 * `doc`: it waits iff a node is missing; with both there it does not fit,
 * for the reason given.
 */
static void check_reason(const json_t *doc, const json_t *v,
			 const char *reason)
{
	const json_t *nodes = json_object_get(doc, "nodes");
	const json_t *edges = json_object_get(doc, "edges");
	const char *src = str_of(v, "source_node_id");
	const char *tgt = str_of(v, "target_node_id");
	const char *tp = str_of(v, "target_parameter_name");
	const json_t *given = json_object_get(v, "source_parameter_name");
	size_t si = node_index(nodes, src), ti = node_index(nodes, tgt);
	bool input, cycle, waits = !strncmp(reason, "waits for ", 10);
	bool dup = false, dup_named = false;
	const char *named = !strncmp(reason, "duplicates ", 11) ? reason + 11
								 : NULL;
	struct sbuf sp = SBUF_INIT;
	const json_t *w;
	size_t i;

	if (waits != (si == SIZE_MAX || ti == SIZE_MAX))
		die("a pending edge's reason is not whether a node is missing",
		    reason);
	if (waits)
		return;
	if (given ? sbuf_addstr(&sp, json_string_value(given)) < 0
		  : sbuf_addf(&sp, "out_%s", str_of(json_array_get(nodes, si),
						    "label")) < 0)
		die("out of memory", NULL);
	input = has_input(json_array_get(nodes, ti), tp);
	json_array_foreach(edges, i, w) {
		if (strcmp(str_of(w, "source_node_id"), src) ||
		    strcmp(str_of(w, "source_parameter_name"), sp.buf) ||
		    strcmp(str_of(w, "target_node_id"), tgt) ||
		    strcmp(str_of(w, "target_parameter_name"), tp))
			continue;
		dup = true;
		dup_named = dup_named || (named && !strcmp(str_of(w, "id"), named));
	}
	cycle = si == ti || reaches(edges, tgt, src);
	if (input && !dup && !cycle)
		die("a pending edge fits the graph", reason);
	if (named) {
		if (!dup_named)
			die("a pending edge duplicates no such edge", reason);
	} else if (!strncmp(reason, "would close a cycle: ", 21)) {
		if (!cycle)
			die("a pending edge would close no cycle", reason);
	} else if (!strncmp(reason, "node \"", 6)) {
		if (input)
			die("a pending edge's target has its input", reason);
	} else {
		die("a pending edge's reason is none of the known", reason);
	}
	sbuf_release(&sp);
}

/*
 * Every item of `kind`; for the pending edges, graph_problems(): one line
 * each, in order, its reason checked against the graph `doc`.  The
 * number of pending edges.
 */
static size_t check_items(struct env *e, enum graph_kind kind,
			  const json_t *doc)
{
	static const char why_sql[] = "SELECT pending_why FROM graph_edges"
		" WHERE seq = ?1";
	struct graph_item *items;
	struct sbuf sb = SBUF_INIT, canon = SBUF_INIT, problems = SBUF_INIT;
	struct sbuf want = SBUF_INIT;
	size_t n, pending = 0;

	if (graph_problems(e->st, e->session, &problems) < 0)
		die("graph_problems failed", NULL);

	if (graph_list(e->st, e->session, kind, &items, &n) < 0)
		die("graph_list failed", NULL);
	for (size_t i = 0; i < n; i++) {
		struct graph_item it;
		json_t *item = NULL;

		sbuf_reset(&sb);
		if (graph_render(e->st, kind, items[i].seq, &sb) < 0)
			die("graph_render failed", items[i].id);
		if (sb.len != items[i].size)
			die("an item's size is not its document's", items[i].id);
		if (graph_get(e->st, kind, items[i].seq, &it) < 0 ||
		    strcmp(it.id, items[i].id) || it.size != items[i].size)
			die("graph_get disagrees with graph_list", items[i].id);
		free(it.id);
		if (items[i].draft) {
			if (sb.len)
				die("a draft has a document", items[i].id);
			continue;
		}
		if (items[i].pending && kind != GRAPH_EDGE)
			die("a node is pending", items[i].id);
		if (fjson_parse(&item, sb.buf, sb.len, NULL) < 0)
			die("an item's document does not parse", sb.buf);
		if (strcmp(str_of(item, "id"), items[i].id))
			die("a document's id is not its item's", items[i].id);
		sbuf_reset(&canon);
		if (fjson_dump(&canon, item) < 0 || canon.len != sb.len ||
		    memcmp(canon.buf, sb.buf, sb.len))
			die("a document is not in canonical form", sb.buf);
		if (kind == GRAPH_EDGE)
			check_edge_doc(item, items[i].pending);
		if (items[i].pending) {
			sqlite3_stmt *q;
			const char *why;

			if (++pending > GRAPH_PENDING_MAX ||
			    sb.len > GRAPH_PENDING_SIZE)
				die("a pending edge is past the bounds",
				    items[i].id);
			if (sqlite3_prepare_v2(store_db(e->st), why_sql, -1, &q,
					       NULL) != SQLITE_OK)
				die("cannot read a reason", store_errmsg(e->st));
			sqlite3_bind_int64(q, 1, items[i].seq);
			why = sqlite3_step(q) == SQLITE_ROW
				? (const char *)sqlite3_column_text(q, 0) : NULL;
			if (!why)
				die("a pending edge has no reason", items[i].id);
			check_reason(doc, item, why);
			if (sbuf_addf(&want, "edges/%s.json: %s\n", items[i].id,
				      why) < 0)
				die("out of memory", NULL);
			sqlite3_finalize(q);
		}
		json_decref(item);
	}
	if (kind == GRAPH_EDGE && (problems.len != want.len ||
				   memcmp(problems.buf, want.buf, want.len)))
		die("graph_problems is not a line per pending edge", problems.buf);
	graph_items_free(items, n);
	sbuf_release(&sb);
	sbuf_release(&canon);
	sbuf_release(&problems);
	sbuf_release(&want);
	return pending;
}

/* The invariants after an accepted operation (`last`: the input's last,
 * when parameters.json is written back whatever is pending). */
static void check_accepted(struct env *e, bool last)
{
	struct ferr err = FERR_INIT;
	char *text = render_params(e), *again;
	json_t *doc = check_document(text);
	size_t pending;

	check_items(e, GRAPH_NODE, doc);
	pending = check_items(e, GRAPH_EDGE, doc);
	json_decref(doc);
	if (pending && !last) {
		free(text);
		return;
	}
	if (graph_commit_parameters(e->st, e->tools, e->session, text,
				    strlen(text), &err) < 0)
		die("parameters.json's own text is refused", err.message);
	again = render_params(e);
	if (strcmp(text, again))
		die("parameters.json changed when written back", again);
	/* it is the whole graph: what waited is gone */
	if (check_items(e, GRAPH_EDGE, NULL))
		die("an edge is pending after parameters.json", NULL);
	free(text);
	free(again);
}

/* Split "<a>\n<b>" (b may be absent: NULL). */
static char *split_line(char *s)
{
	char *nl = strchr(s, '\n');

	if (!nl)
		return NULL;
	*nl = '\0';
	return nl + 1;
}

static int run_op(struct env *e, char *op, size_t len)
{
	struct ferr err = FERR_INIT;
	char *rest = op + 1, *second;
	int64_t seq;

	switch (len ? op[0] : 0) {
	case 'P':
		return graph_commit_parameters(e->st, e->tools, e->session,
					       rest, len - 1, &err);
	case 'N':
	case 'E':
		second = split_line(rest);
		if (!second)
			return -EINVAL;
		return graph_commit(e->st, e->tools, e->session,
				    op[0] == 'N' ? GRAPH_NODE : GRAPH_EDGE,
				    rest, second, strlen(second), &err);
	case 'D':
	case 'd':
		return graph_delete(e->st, e->session,
				    op[0] == 'D' ? GRAPH_NODE : GRAPH_EDGE, rest);
	case 'R':
	case 'S':
	case 'r':
	case 's':
		second = split_line(rest);
		if (!second)
			return -EINVAL;
		return graph_rename(e->st, e->session,
				    op[0] == 'R' || op[0] == 'S' ? GRAPH_NODE
								 : GRAPH_EDGE,
				    rest, second, op[0] == 'S' || op[0] == 's',
				    &err);
	case 'T':
	case 't':
		return graph_create_draft(e->st, e->session,
					  op[0] == 'T' ? GRAPH_NODE : GRAPH_EDGE,
					  rest, &seq);
	case 'X':
		return graph_drop_all_drafts(e->st);
	case 'I': {
		struct sbuf report = SBUF_INIT;
		size_t added;
		int ret = graph_infer_edges(e->st, e->session, &added, &report);

		sbuf_release(&report);
		return ret;
	}
	default:
		return graph_commit_parameters(e->st, e->tools, e->session, op,
					       len, &err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct env *e = env();
	char *buf = malloc(size + 1);
	size_t start = 0;
	int ops = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	reset(e);
	while (start <= size && ops++ < MAX_OPS) {
		char *piece = buf + start;
		size_t len = strlen(piece);	/* up to the next NUL */
		char *before = render_params(e), *after;
		int ret;

		ret = run_op(e, piece, len);
		if (!sqlite3_get_autocommit(store_db(e->st)))
			die("a transaction was left open", NULL);
		start += len + 1;
		if (ret < 0) {
			after = render_params(e);
			if (strcmp(before, after))
				die("a refused operation changed the graph", piece);
			free(after);
		} else {
			check_accepted(e, start > size || ops == MAX_OPS);
		}
		free(before);
	}
	free(buf);
	return 0;
}
