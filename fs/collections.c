/*
 * The collections of fs.h: nodes/ and edges/ over core/graph, rounds/
 * over core/roundstore.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/* "<id>.json" with a non-empty id that fits `size`. */
static bool json_name_id(const char *name, char *id, size_t size)
{
	size_t len = strlen(name);

	if (len <= 5 || strcmp(name + len - 5, ".json") || len - 5 >= size)
		return false;
	memcpy(id, name, len - 5);
	id[len - 5] = '\0';
	return true;
}

/* `count` zeroed items in *items (NULL for none): 0 or -ENOMEM. */
static int alloc_items(size_t count, struct fs_item **items)
{
	*items = count ? calloc(count, sizeof(**items)) : NULL;
	return count && !*items ? -ENOMEM : 0;
}

/* ---- nodes/ and edges/ ---------------------------------------------------- */

/* A node whose job has not ended may not change (jobs.h). */
static int node_busy(struct flowfs *fs, enum graph_kind kind, int64_t session,
		     const char *id, struct ferr *err)
{
	return kind == GRAPH_NODE ? jobs_node_busy(fs->st, session, id, err)
				  : 0;
}

static void item_from_graph(const struct graph_item *g, struct fs_item *out)
{
	out->key = g->seq;
	out->session = g->session;
	snprintf(out->id, sizeof(out->id), "%s", g->id);
	out->size = g->size;
	out->mtime_ns = g->mtime_ns;
}

static int graph_list_as(enum graph_kind kind, struct flowfs *fs,
			 int64_t session, struct fs_item **items, size_t *n)
{
	struct graph_item *g = NULL;
	size_t count = 0;
	int ret;

	*items = NULL;
	*n = 0;
	ret = graph_list(fs->st, session, kind, &g, &count);
	if (!ret)
		ret = alloc_items(count, items);
	for (size_t i = 0; !ret && i < count; i++)
		item_from_graph(&g[i], &(*items)[i]);
	if (!ret)
		*n = count;
	graph_items_free(g, count);
	return ret;
}

static int graph_find_as(enum graph_kind kind, struct flowfs *fs,
			 int64_t session, const char *id, struct fs_item *out)
{
	struct graph_item g;
	int ret = graph_find(fs->st, session, kind, id, &g);

	if (ret < 0)
		return ret;
	item_from_graph(&g, out);
	free(g.id);
	return 0;
}

static int graph_get_as(enum graph_kind kind, struct flowfs *fs, int64_t key,
			struct fs_item *out)
{
	struct graph_item g;
	int ret = graph_get(fs->st, kind, key, &g);

	if (ret < 0)
		return ret;
	item_from_graph(&g, out);
	free(g.id);
	return 0;
}

/* One set of functions per graph kind (the table wants plain pointers). */
#define GRAPH_OPS(prefix, kind)						\
static int prefix##_list(struct flowfs *fs, int64_t session,		\
			 struct fs_item **items, size_t *n)		\
{									\
	return graph_list_as(kind, fs, session, items, n);		\
}									\
static int prefix##_find(struct flowfs *fs, int64_t session,		\
			 const char *id, struct fs_item *out)		\
{									\
	return graph_find_as(kind, fs, session, id, out);		\
}									\
static int prefix##_get(struct flowfs *fs, int64_t key,			\
			struct fs_item *out)				\
{									\
	return graph_get_as(kind, fs, key, out);			\
}									\
static int prefix##_render(struct flowfs *fs, const struct fs_item *item, \
			   struct sbuf *out)				\
{									\
	return graph_render(fs->st, kind, item->key, out);		\
}									\
static int prefix##_create_draft(struct flowfs *fs, int64_t session,	\
				 const char *id, int64_t *key)		\
{									\
	return graph_create_draft(fs->st, session, kind, id, key);	\
}									\
static int prefix##_drop_draft(struct flowfs *fs, int64_t key)		\
{									\
	return graph_drop_draft(fs->st, kind, key);			\
}									\
static int prefix##_commit(struct flowfs *fs, int64_t session,		\
			   const char *id, const char *text, size_t len, \
			   struct ferr *err)				\
{									\
	int ret = node_busy(fs, kind, session, id, err);		\
									\
	return ret < 0 ? ret : graph_commit(fs->st, fs_tools(fs, NULL),	\
					    session, kind, id, text, len, \
					    err);			\
}									\
static int prefix##_remove(struct flowfs *fs, int64_t session,		\
			   const char *id, struct ferr *err)		\
{									\
	int ret = node_busy(fs, kind, session, id, err);		\
									\
	/* a node goes with its edges: removing all nodes works in	\
	 * any order */							\
	return ret < 0 ? ret : graph_delete(fs->st, session, kind, id);	\
}									\
static int prefix##_rename(struct flowfs *fs, int64_t session,		\
			   const char *from, const char *to,		\
			   bool replace, struct ferr *err)		\
{									\
	int ret = node_busy(fs, kind, session, from, err);		\
									\
	if (!ret && replace)						\
		ret = node_busy(fs, kind, session, to, err);		\
	return ret < 0 ? ret : graph_rename(fs->st, session, kind, from, \
					    to, replace, err);		\
}

GRAPH_OPS(nodes, GRAPH_NODE)
GRAPH_OPS(edges, GRAPH_EDGE)

/* ---- rounds/ ------------------------------------------------------------- */

/*
 * A round's key is its session and number: rounds are few per session
 * (ROUNDSTORE_MAX) and a round keeps its inode across rewrites.
 */
#define ROUND_BITS 10
_Static_assert(ROUNDSTORE_MAX < (1 << ROUND_BITS), "round numbers fit");

static int64_t round_key(int64_t session, int64_t number)
{
	return session << ROUND_BITS | number;
}

static bool round_id(const char *name, char *id, size_t size)
{
	int64_t number;

	if (!roundstore_number(name, &number))
		return false;
	snprintf(id, size, "%" PRId64, number);
	return true;
}

/* The number of an id round_id() made (the adapter never passes others). */
static int64_t round_number(const char *id)
{
	return strtoll(id, NULL, 10);
}

static void item_from_round(int64_t session, const struct roundstore_item *r,
			    struct fs_item *out)
{
	out->key = round_key(session, r->number);
	out->session = session;
	snprintf(out->id, sizeof(out->id), "%" PRId64, r->number);
	out->size = r->size;
	out->mtime_ns = r->mtime_ns;
}

static int rounds_list(struct flowfs *fs, int64_t session,
		       struct fs_item **items, size_t *n)
{
	struct roundstore_item *r = NULL;
	size_t count = 0;
	int ret;

	*items = NULL;
	*n = 0;
	ret = roundstore_list(fs->st, session, &r, &count);
	if (!ret)
		ret = alloc_items(count, items);
	for (size_t i = 0; !ret && i < count; i++)
		item_from_round(session, &r[i], &(*items)[i]);
	if (!ret)
		*n = count;
	free(r);
	return ret;
}

static int rounds_get_number(struct flowfs *fs, int64_t session,
			     int64_t number, struct fs_item *out)
{
	struct roundstore_item r;
	int ret = roundstore_stat(fs->st, session, number, &r);

	if (!ret)
		item_from_round(session, &r, out);
	return ret;
}

static int rounds_find(struct flowfs *fs, int64_t session, const char *id,
		       struct fs_item *out)
{
	return rounds_get_number(fs, session, round_number(id), out);
}

static int rounds_get(struct flowfs *fs, int64_t key, struct fs_item *out)
{
	return rounds_get_number(fs, key >> ROUND_BITS,
				 key & ((1 << ROUND_BITS) - 1), out);
}

static int rounds_render(struct flowfs *fs, const struct fs_item *item,
			 struct sbuf *out)
{
	return roundstore_get(fs->st, item->session, round_number(item->id),
			      out, NULL);
}

static int rounds_create_draft(struct flowfs *fs, int64_t session,
			       const char *id, int64_t *key)
{
	*key = round_key(session, round_number(id));
	return roundstore_create_draft(fs->st, session, round_number(id));
}

static int rounds_drop_draft(struct flowfs *fs, int64_t key)
{
	return roundstore_drop_draft(fs->st, key >> ROUND_BITS,
				     key & ((1 << ROUND_BITS) - 1));
}

static int rounds_commit(struct flowfs *fs, int64_t session, const char *id,
			 const char *text, size_t len, struct ferr *err)
{
	return roundstore_put(fs->st, session, round_number(id), text, len,
			      err);
}

static int rounds_remove(struct flowfs *fs, int64_t session, const char *id,
			 struct ferr *err)
{
	(void)err;
	return roundstore_delete(fs->st, session, round_number(id));
}

static int rounds_rename(struct flowfs *fs, int64_t session, const char *from,
			 const char *to, bool replace, struct ferr *err)
{
	return roundstore_rename(fs->st, session, round_number(from),
				 round_number(to), replace, err);
}

#define COLLECTION(name, tag, id_of, p) { name, tag, id_of, p##_list,	\
	p##_find, p##_get, p##_render, p##_create_draft, p##_drop_draft,	\
	p##_commit, p##_remove, p##_rename }

const struct fs_collection fs_collections[] = {
	COLLECTION("nodes", SESSION_NODES, json_name_id, nodes),
	COLLECTION("edges", SESSION_EDGES, json_name_id, edges),
	COLLECTION("rounds", SESSION_ROUNDS, round_id, rounds),
};

const unsigned fs_collection_count =
	sizeof(fs_collections) / sizeof(fs_collections[0]);

_Static_assert(sizeof(fs_collections) / sizeof(fs_collections[0]) <=
		       1u << (FS_SPACE_SHIFT - FS_COLLECTION_SHIFT),
	       "collection numbers fit their inode bits");

int fs_collection_of_tag(unsigned tag)
{
	for (unsigned i = 0; i < fs_collection_count; i++)
		if ((unsigned)fs_collections[i].tag == tag)
			return (int)i;
	return -1;
}
