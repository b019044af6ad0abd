/*
 * graph_i.h: private to the graph family (graph*.c), the shared structs
 * and the functions the parts call in each other.  Not a contract:
 * graph.h is the only one.
 */
#ifndef FLOWFS_GRAPH_I_H
#define FLOWFS_GRAPH_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <sqlite3.h>

#include "graph/graph.h"
#include "lib/ferr.h"
#include "lib/sbuf.h"

/* ---- a string -> index map (ids, edge keys): graph.c -------------------- */

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

bool graph_smap_get(const struct smap *m, const char *key, size_t len,
		    size_t *val);
int graph_smap_put(struct smap *m, const char *key, size_t len, size_t val,
		   bool *had);
void graph_smap_free(struct smap *m);

/* ---- node and edge documents: graph_check.c ------------------------------ */

/* The fields of an edge, in the order its document has them. */
extern const char *const graph_edge_fields[];

struct edge_in {
	const char *f[5];	/* id, source, source param (NULL: default),
				 * target, target param */
};

int graph_check_id(const char *where, const char *what, const char *id,
		   size_t len, struct ferr *err);
int graph_unknown_fields(const json_t *obj, const char *const *fields,
			 const char *where, const char *path,
			 const char *has, struct ferr *err);
bool graph_put(json_t *obj, const char *key, json_t *v);
int graph_node_build(const json_t *v, const char *file_id,
		     const struct graph_tools *tools, const char *where,
		     json_t **out, struct ferr *err);
bool graph_takes_input(const json_t *node, const char *name);
int graph_no_input(const json_t *node, const char *id, const char *name,
		   const char *where, struct ferr *err);
int graph_edge_check(const json_t *v, const char *file_id, const char *where,
		     struct edge_in *e, struct ferr *err);

/* ---- the store: graph.c -------------------------------------------------- */

int graph_touch(struct store *st, int64_t session, int64_t now);
int graph_uuid_for(struct store *st, int64_t session, const char *id,
		   json_t *node);
int graph_check_cycle(struct store *st, int64_t session, const char *src,
		      const char *tgt, const char *skip, const char *where,
		      struct ferr *err, struct sbuf *msg);
int graph_find_duplicate(struct store *st, int64_t session,
			 const char *const f[5], struct sbuf *dup);
int graph_insert_edge(struct store *st, int64_t session,
		      const char *const f[5], const char *why, int64_t now);
int graph_insert_node(struct store *st, int64_t session, const char *id,
		      const struct sbuf *doc, int64_t now);
bool graph_edge_row(sqlite3_stmt *q, int idcol, int col,
		    const char *f[5], size_t n[5]);

/* ---- writing: graph_doc.c ------------------------------------------------ */

int graph_put_edge(struct sbuf *out, int level, const char *const f[5],
		   const size_t n[5]);

#endif
