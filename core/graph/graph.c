/* graph: a session's job graph in the store, node and edge files one by
 * one: listing, drafts, commit, delete, rename, pending edges; see graph.h. */

/*
 * Storage (schema version 3, see store.c): a node is a row of graph_nodes
 * holding its canonical document text (json.dumps(indent=2) of the node
 * object, defaults filled); an edge is a row of graph_edges holding its
 * five fields (a pending edge, version 8: the fields it gives, and why it
 * waits).  In parameters.json (graph_doc.c) nodes are stored as their own
 * canonical text and nested by re-indenting it, so rendering parses
 * nothing.
 */
#include "graph/graph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "graph/graph_i.h"
#include "lib/fjson.h"
#include "graph/jobspec.h"
#include "lib/fclock.h"
#include "lib/fname.h"
#include "lib/utf8.h"

/* ---- a string -> index map (ids, edge keys) ----------------------------- */

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

bool graph_smap_get(const struct smap *m, const char *key, size_t len,
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
int graph_smap_put(struct smap *m, const char *key, size_t len, size_t val,
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

void graph_smap_free(struct smap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->tab[i].key);
	free(m->tab);
	m->tab = NULL;
	m->cap = m->n = 0;
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

static const char *kind_name(enum graph_kind kind)
{
	return kind == GRAPH_NODE ? "node" : "edge";
}

/* ---- the store ------------------------------------------------------------ */

/* Stamp the session's graph as changed now; -ENOENT: no such session. */
int graph_touch(struct store *st, int64_t session, int64_t now)
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
	return graph_put(node, "node_uuid", json_string(s)) ? 0 : -ENOMEM;
}

/* keep_uuid() with the stored node `id`. */
int graph_uuid_for(struct store *st, int64_t session, const char *id,
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

	ret = graph_smap_put(&seen, from, strlen(from), 0, NULL);
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
			ret = graph_smap_put(&seen, t, strlen(t), n, &had);
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
	graph_smap_free(&seen);
	return ret;
}

/*
 * Refuse an edge source -> target that would close a cycle (with the
 * edge `skip` ignored: the old version of the edge being replaced).
 * -EINVAL with "would close a cycle: source -> target -> ... -> source"
 * (the path costs a query per node it reaches: not looked for when err
 * is NULL).
 */
int graph_check_cycle(struct store *st, int64_t session, const char *src,
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
int graph_find_duplicate(struct store *st, int64_t session,
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
int graph_insert_edge(struct store *st, int64_t session,
		      const char *const f[5], const char *why, int64_t now)
{
	static const char sql[] = "INSERT INTO graph_edges(session, id,"
		" source, source_param, target, target_param, pending_why,"
		" mtime_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

	return store_run(st, sql, STORE_INT(session), STORE_TEXT(f[0]),
			 STORE_TEXT(f[1]), STORE_TEXT(f[2]), STORE_TEXT(f[3]),
			 STORE_TEXT(f[4]), STORE_TEXT(why), STORE_INT(now));
}

int graph_insert_node(struct store *st, int64_t session, const char *id,
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
 * Check edge `e` (as graph_edge_check() left it) against the stored
 * graph; reads only.  0 when it can join the graph (a defaulted source
 * parameter is then set, held in `sp`); -ENOENT + err when a node it
 * names does not exist or is a draft (it waits); -EINVAL + err for an
 * input the target lacks, a duplicate, a cycle.  Its own row (an older
 * version, pending or not) counts in neither check.
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
	if (!graph_takes_input(tgt, e->f[4])) {
		ret = graph_no_input(tgt, e->f[3], e->f[4], "", err);
		goto out;
	}
	ret = graph_find_duplicate(st, session, e->f, &scratch);
	if (!ret && scratch.len)
		ret = ferr_set(err, -EINVAL, "duplicates %s", scratch.buf);
	if (!ret)
		ret = graph_check_cycle(st, session, e->f[1], e->f[3], e->f[0], "",
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
		return graph_insert_edge(st, session, f, why, now);
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
	ret = graph_put_edge(&text, 0, f, n);
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
bool graph_edge_row(sqlite3_stmt *q, int idcol, int col,
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
		it->draft = !graph_edge_row(q, 2, 4, f, n);
		if (!it->draft) {
			sbuf_reset(scratch);
			ret = graph_put_edge(scratch, 0, f, n);
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

		if (graph_edge_row(q, 0, 1, f, n))
			ret = graph_put_edge(out, 0, f, n);
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

	ret = graph_check_id("", "id", id, strlen(id), NULL);
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

		if (!graph_takes_input(node, param)) {
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

	ret = graph_node_build(v, id, tools, "", &node, err);
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
		ret = graph_insert_node(st, session, id, &text, now);
	}
	/* edges written before it join the graph with it */
	if (!ret)
		ret = place_ready(st, session, id, now, &placed);
	if (!ret && (changed || placed))
		ret = graph_touch(st, session, now);
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

	ret = graph_edge_check(v, id, "", &e, err);
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
		ret = graph_touch(st, session, now);
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

	ret = graph_check_id("", kind == GRAPH_NODE ? "node id" : "edge id", id,
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
		ret = graph_touch(st, session, now);
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
	if (!graph_put(doc, "id", json_string(to)))
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

	ret = graph_check_id("", kind == GRAPH_NODE ? "node id" : "edge id", to,
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
		ret = graph_touch(st, session, now);
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

int graph_node_count(struct store *st, int64_t session, int64_t *nodes)
{
	int ret;

	*nodes = 0;
	ret = store_int(st, "SELECT nodes FROM graph_counts WHERE"
			" session = ?1", nodes, STORE_INT(session));
	return ret == -ENOENT ? 0 : ret;
}

/* ---- a node's edges kept with the file it left as (graph.h) -------------- */

int graph_keep_edges(struct store *st, int64_t session, const char *node,
		     int64_t ino)
{
	/* drafts (no source) are no edges yet; pending ones are kept too */
	static const char sql[] = "INSERT INTO kept_edges(ino, session, node,"
		" seq, id, source, source_param, target, target_param)"
		" SELECT ?3, session, ?2, seq, id, source, source_param, target,"
		" target_param FROM graph_edges WHERE session = ?1 AND"
		" (source = ?2 OR target = ?2) AND source IS NOT NULL";

	return store_run(st, sql, STORE_INT(session), STORE_TEXT(node),
			 STORE_INT(ino));
}

/* The document of a kept edge (row of graph_kept_edges()'s query), its
 * node `from` named `to`. */
static json_t *kept_doc(sqlite3_stmt *q, const char *from, const char *to)
{
	const char *f[5];
	json_t *doc;

	for (int i = 0; i < 5; i++)
		f[i] = (const char *)sqlite3_column_text(q, i);
	if (!strcmp(f[1], from))
		f[1] = to;
	if (!strcmp(f[3], from))
		f[3] = to;
	doc = json_pack("{ssssssss}", "id", f[0], "source_node_id", f[1],
			"target_node_id", f[3], "target_parameter_name", f[4]);
	/* left out when it gave none, as its file showed it */
	if (doc && f[2] && json_object_set_new(doc, "source_parameter_name",
					       json_string(f[2])) < 0) {
		json_decref(doc);
		doc = NULL;
	}
	return doc;
}

int graph_kept_edges(struct store *st, int64_t session, int64_t ino,
		     const char *to, json_t **edges)
{
	static const char sql[] = "SELECT id, source, source_param, target,"
		" target_param, node FROM kept_edges WHERE ino = ?1 AND"
		" session = ?2 ORDER BY seq";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	*edges = json_array();
	if (!q || !*edges) {
		ret = q ? -ENOMEM : -EIO;
		goto out;
	}
	sqlite3_bind_int64(q, 1, ino);
	sqlite3_bind_int64(q, 2, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		json_t *doc = kept_doc(q, (const char *)sqlite3_column_text(q, 5),
				       to);

		if (!doc || json_array_append_new(*edges, doc) < 0)
			ret = -ENOMEM;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
out:
	if (q)
		store_done(q);
	if (ret < 0) {
		json_decref(*edges);
		*edges = NULL;
	}
	return ret;
}

int graph_restore_edges(struct store *st, int64_t session, int64_t ino,
			const json_t *edges,
			void (*left_out)(void *ctx, const char *id,
					 const char *why),
			void *ctx)
{
	const json_t *doc;
	size_t i;
	int ret;

	/* the file is the node now (its row may stay while the kernel
	 * holds it) */
	ret = store_run(st, "DELETE FROM kept_edges WHERE ino = ?1",
			STORE_INT(ino));
	if (ret < 0)
		return ret;
	json_array_foreach(edges, i, doc) {
		const char *id = json_string_value(json_object_get(doc, "id"));
		struct ferr err = FERR_INIT;
		struct graph_item was;

		/* an edge made since under its name is the user's: kept */
		ret = graph_find(st, session, GRAPH_EDGE, id, &was);
		if (!ret) {
			free(was.id);
			left_out(ctx, id, "another edge has its name");
		} else if (ret == -ENOENT) {
			ret = commit_edge(st, session, id, doc, &err);
			if (ret == -EINVAL) {
				left_out(ctx, id, err.message);
				ret = 0;
			}
		}
		if (ret < 0)
			break;
	}
	return ret;
}
