/* graph_infer: infer-edges, which links the nodes in their order by the
 * MatMaster rule; see graph.h. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_i.h"
#include "lib/fclock.h"

/* The keywords of the MatMaster rule for an edge's target parameter. */
static const char *const file_words[] = {
	"file", "path", "url", "input", "output", "structure", "data",
	"result", NULL
};

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
		ret = graph_smap_put(&taken, (const char *)sqlite3_column_text(q, 0),
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
		ret = graph_find_duplicate(st, session, f, &dup);
		if (ret < 0)
			goto rollback;
		if (dup.len)
			continue;
		ret = graph_check_cycle(st, session, f[1], f[3], NULL, "", &cyc,
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
			if (ret < 0 || !graph_smap_get(&taken, eid.buf, eid.len, NULL))
				break;
			next_n++;
		}
		if (!ret)
			ret = graph_smap_put(&taken, eid.buf, eid.len, 0, NULL);
		if (ret < 0)
			goto rollback;
		f[0] = eid.buf;
		ret = graph_insert_edge(st, session, f, NULL, now);
		if (ret < 0)
			goto rollback;
		(*added)++;
	}
	if (*added)
		ret = graph_touch(st, session, now);
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
	graph_smap_free(&taken);
	sbuf_release(&sp);
	sbuf_release(&dup);
	sbuf_release(&path);
	sbuf_release(&eid);
	return ret;
}
