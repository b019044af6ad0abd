/* graph_doc: the graph as JSON text: an edge's file, and parameters.json,
 * the whole graph, rendered and committed whole; see graph.h. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "graph/graph_i.h"
#include "lib/fclock.h"

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
int graph_put_edge(struct sbuf *out, int level, const char *const f[5],
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
			ret = sbuf_addstr(out, graph_edge_fields[i]);
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

/* What parameters.json holds: the nodes and the edges that joined the
 * graph, in creation order, and the session's template uuid. */
static const char nodes_sql[] = "SELECT doc FROM graph_nodes"
	" WHERE session = ?1 AND doc IS NOT NULL ORDER BY seq";
static const char edges_sql[] = "SELECT id, source, source_param,"
	" target, target_param FROM graph_edges WHERE session = ?1"
	" AND source IS NOT NULL AND pending_why IS NULL ORDER BY seq";
static const char uuid_sql[] = "SELECT template_uuid FROM sessions"
	" WHERE id = ?1";

int graph_render_parameters(struct store *st, int64_t session,
			    struct sbuf *out)
{
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

		if (!graph_edge_row(q, 0, 1, f, n))
			continue;
		ret = doc_item(out, count++);
		if (!ret)
			ret = graph_put_edge(out, 2, f, n);
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

/* Append the objects of `sql`'s rows to `list`: each row's document
 * (nodes) or its edge fields (edges). */
static int document_rows(struct store *st, const char *sql, int64_t session,
			 bool edges, json_t *list)
{
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc = SQLITE_DONE, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		json_t *item = NULL;
		const char *f[5];
		size_t n[5];

		if (!edges) {
			/* checked when stored: a document that no longer
			 * parses is a damaged database */
			if (fjson_parse(&item, (const char *)sqlite3_column_text(
						q, 0), (size_t)sqlite3_column_bytes(
						q, 0), NULL) < 0)
				ret = -EIO;
		} else if (graph_edge_row(q, 0, 1, f, n)) {
			item = json_object();
			for (int i = 0; item && i < 5; i++)
				if (f[i] && json_object_set_new(item,
						graph_edge_fields[i],
						json_stringn(f[i], n[i])) < 0)
					ret = -EIO;	/* not UTF-8 */
			if (!item)
				ret = -ENOMEM;
		} else {
			continue;
		}
		if (!ret && json_array_append_new(list, item) < 0)
			ret = -ENOMEM;
		else if (ret < 0)
			json_decref(item);
	}
	store_done(q);
	return !ret && rc != SQLITE_DONE ? store_errno(rc) : ret;
}

int graph_document(struct store *st, int64_t session, json_t **out)
{
	json_t *nodes = json_array(), *edges = json_array(), *doc = NULL;
	sqlite3_stmt *q;
	int rc, ret = nodes && edges ? 0 : -ENOMEM;

	*out = NULL;
	if (!ret)
		ret = document_rows(st, nodes_sql, session, false, nodes);
	if (!ret)
		ret = document_rows(st, edges_sql, session, true, edges);
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
		doc = json_pack("{sOsOs{ss%}}", "nodes", nodes, "edges", edges,
				"meta", "template_uuid",
				(const char *)sqlite3_column_text(q, 0),
				(size_t)sqlite3_column_bytes(q, 0));
	ret = rc == SQLITE_ROW ? (doc ? 0 : -ENOMEM)
	      : rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	store_done(q);
	*out = doc;
out:
	json_decref(nodes);
	json_decref(edges);
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
		ret = graph_node_build(v, NULL, tools, where, &g->nodes[i], err);
		if (ret < 0)
			goto out;
		id = pgraph_node_id(g, i);
		ret = graph_smap_put(&ids, id, strlen(id), i, &had);
		if (ret < 0)
			goto out;
		if (had) {
			graph_smap_get(&ids, id, strlen(id), &other);
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
		ret = graph_edge_check(v, NULL, where, e, err);
		if (ret < 0)
			goto out;
		ret = graph_smap_put(&eids, e->f[0], strlen(e->f[0]), i, &had);
		if (ret < 0)
			goto out;
		if (had) {
			graph_smap_get(&eids, e->f[0], strlen(e->f[0]), &other);
			ret = ferr_set(err, -EINVAL,
				       "edges[%zu]: id \"%s\" repeats edges[%zu]",
				       i, e->f[0], other);
			goto out;
		}
		if (!graph_smap_get(&ids, e->f[1], strlen(e->f[1]), &g->src[i])) {
			ret = ferr_set(err, -EINVAL,
				       "edges[%zu]: source node \"%s\" does not exist",
				       i, e->f[1]);
			goto out;
		}
		if (!graph_smap_get(&ids, e->f[3], strlen(e->f[3]), &g->dst[i])) {
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
		if (!graph_takes_input(tgt, e->f[4])) {
			ret = graph_no_input(tgt, e->f[3], e->f[4], where, err);
			goto out;
		}
		ret = edge_key(&key, e->f + 1);
		if (!ret)
			ret = graph_smap_put(&keys, key.buf, key.len, i, &had);
		if (ret < 0)
			goto out;
		if (had) {
			graph_smap_get(&keys, key.buf, key.len, &other);
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
	graph_smap_free(&ids);
	graph_smap_free(&eids);
	graph_smap_free(&keys);
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
			ret = graph_insert_node(st, session, id, &texts[i], now);
	}
	for (size_t j = 0; !ret && j < g->ne; j++) {
		ret = delete_draft_named(st, session, GRAPH_EDGE,
					 g->edges[j].f[0]);
		if (!ret)
			ret = graph_insert_edge(st, session, g->edges[j].f, NULL, now);
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
		ret = graph_touch(st, session, now);
	return ret;
}

/*
 * The top level of a parameters document: nodes and edges, and meta if
 * it is given.  meta holds only the template_uuid the session keeps
 * anyway, and "meta": {} already meant "keep it": a document without
 * meta (a graph written by hand, or by a tool that leaves it out) means
 * the same (issue 29).
 */
static int check_top(const json_t *doc, const json_t **nodes,
		     const json_t **edges, const json_t **uuid,
		     struct ferr *err)
{
	static const char *const top[] = { "nodes", "edges", "meta", NULL };
	static const char *const required[] = { "nodes", "edges", NULL };
	static const char *const meta_fields[] = { "template_uuid", NULL };
	const json_t *meta;
	int ret;

	if (!json_is_object(doc))
		return ferr_set(err, -EINVAL,
				"parameters.json must be a JSON object {\"nodes\": [...], \"edges\": [...], \"meta\": {...}}");
	ret = graph_unknown_fields(doc, top, "", "",
				   "parameters.json has nodes, edges, meta", err);
	if (ret < 0)
		return ret;
	for (int i = 0; required[i]; i++)
		if (!json_object_get(doc, required[i]))
			return ferr_set(err, -EINVAL, "missing \"%s\"",
					required[i]);
	*nodes = json_object_get(doc, "nodes");
	*edges = json_object_get(doc, "edges");
	meta = json_object_get(doc, "meta");
	if (!json_is_array(*nodes))
		return ferr_set(err, -EINVAL, "\"nodes\" must be an array");
	if (!json_is_array(*edges))
		return ferr_set(err, -EINVAL, "\"edges\" must be an array");
	if (meta && !json_is_object(meta))
		return ferr_set(err, -EINVAL, "\"meta\" must be an object");
	ret = meta ? graph_unknown_fields(meta, meta_fields, "", "meta.",
					  "meta has template_uuid", err) : 0;
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
			ret = graph_uuid_for(st, session,
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
