/*
 * graph: a session's job graph (seed 000, DESIGN §5) — nodes and edges,
 * one JSON document each, and the whole graph as one seed-000 document.
 * How they are stored is in graph.c.
 *
 * Not thread-safe; the caller serializes (see store.h).
 *
 * ---- Ids and times ----
 * Nodes and edges both have a `seq` (row id, never reused:
 * creation order, and the filesystem's inode numbers) and an `id` unique
 * in the session.  An id is a file name stem: 1..250 bytes of UTF-8, no
 * '/' or NUL, not "." or ".." (else -EINVAL; -ENAMETOOLONG past 250
 * bytes).  Every change stamps sessions.graph_mtime_ns (strictly later
 * than the last stamp) and the changed items' mtime_ns; a write that
 * stores the same bytes as before changes nothing, times included.
 *
 * ---- Node documents ----
 * Node documents (nodes/<id>.json): id, node_uuid, node_version, label,
 * position_x, position_y, system_values {machine_type, image,
 * docker_image}, input_parameters [{name, type, value}],
 * output_parameters — always in this key order.  A written node may omit
 * anything but `label`; flowfs fills: id from the file name, node_uuid
 * (the stored one when the node exists, else a fresh random UUID),
 * node_version "1.2", position_x/position_y 0.0, machine_type from the
 * tool map for the label else "c2_m4_cpu", image from the tool map else
 * "", docker_image "", empty parameter lists; in an input parameter
 * {name, type, value} a missing value is null and a missing type is
 * Python's type name of the value ("str", "int", "float", "bool", "list",
 * "dict", "NoneType").  Values that are given are kept as given (an
 * integer position stays an integer; output_parameters is any array).
 * Refused (-EINVAL, err->message for a person): not an object, an
 * unknown field (system_values and parameters included), a wrong type,
 * an empty label, an id that disagrees with the file name, input
 * parameter names that repeat, a parameter without a name, and a new
 * version of a node that lacks an input an edge feeds ("edge \"e1\"
 * feeds input parameter \"structure_file\" of this node, which it would
 * no longer have ...").
 *
 * ---- Edge documents ----
 * Edge documents (edges/<id>.json): id, source_node_id,
 * source_parameter_name, target_node_id, target_parameter_name.
 * source_parameter_name may be omitted: "out_<source label>" (the
 * MatMaster convention); the other three are required non-empty strings,
 * source_node_id and target_node_id ids as above (whether or not the node
 * exists), id optional as for nodes.  Refused (when both its nodes exist):
 * a target_parameter_name the target node lacks (a target with no input
 * parameters at all takes "input", as the MatMaster rule makes), an edge
 * equal in all four fields to another ("duplicates edge-$id1"), an edge
 * that would close a cycle (the message names it: "would close a cycle:
 * node-$id3 -> node-$id1 -> node-$id3").  Replacing an edge (same id)
 * ignores its old version in both checks.  Cycle checks cost O(what the
 * target reaches), never O(n^2).
 *
 * ---- Pending edges ----
 * Pending edges: restores (cp -a, rsync -a, tar x) write files in any
 * order, rsync's edges/ before nodes/, so an edge whose source or target
 * node does not exist or is a draft is not refused but kept pending,
 * checked as a document alone (the checks above still refuse).  Its file
 * is what an edge of the graph shows, with only the fields it gives
 * (source_parameter_name left out when it gives none: the default needs
 * the source's label), so the blanks and key order written are not kept.
 * It is listed (graph_list: pending, not a draft) and rendered, but is
 * not part of the graph: not in parameters.json, in no cycle or duplicate
 * check, feeds no input a node must keep, not seen by graph_infer_edges.
 * It joins the graph ("is placed") in the transaction of the write that
 * lets it: a node's commit or rename that makes its second node exist (or
 * gives the target the input it names), and any delete or rename, or
 * replacement of an edge, that removes what held it back.  It is then
 * checked as any edge (source_parameter_name defaults to out_<label>,
 * input, duplicate, cycle; of two equal pending edges the older joins)
 * and becomes an ordinary edge (its mtime and the graph's stamped); if
 * that check fails it stays pending: a node write is never refused for a
 * pending edge.  graph_problems() says what keeps each one out.  A
 * pending edge is deleted, renamed and replaced (by a valid edge or a
 * pending one) like any edge, follows a renamed node and is deleted with
 * a node it names, as any edge is, so whether an edge survives does not
 * depend on the order its nodes came in (not with a draft: a draft's
 * deletion is a refused or abandoned create, and the edge still waits for
 * the node).  Writing parameters.json removes them all (below).  Their
 * writers are untrusted and nothing in the graph bounds them, so a
 * session keeps at most GRAPH_PENDING_MAX, each at most
 * GRAPH_PENDING_SIZE bytes as its file shows it: past either an edge
 * that would wait is refused (-EINVAL, "cannot wait for its nodes: 1000
 * edges wait already ...", "too big to wait for its nodes: ...").  A
 * bigger graph comes back through its parameters.json.
 *
 * ---- The whole document ----
 * The whole document (parameters.json): {"nodes": [...], "edges": [...],
 * "meta": {"template_uuid": ...}}, nodes and edges in creation order,
 * byte-identical to Python's json.dumps(doc, indent=2,
 * ensure_ascii=False).  Writing one
 * replaces the graph atomically: the document must have nodes (array)
 * and edges (array), and may have meta (an object with at most
 * template_uuid, a string or null; left out, or without template_uuid,
 * the session's is kept), nothing else; every node and edge is checked as above, each must
 * carry its id (there is no file name), ids may not repeat, and the
 * whole new graph must be acyclic (checked in memory, O(V+E)); messages
 * say where: "nodes[2]: unknown field ...", "edges[3]: would close a
 * cycle: b -> c -> a -> b" (the cycle's last edge in the document).
 * Nothing changes unless all pass; then every node and edge is replaced
 * in one transaction, created in document order.  Nodes keep their
 * stored node_uuid when the new document omits it; meta.template_uuid,
 * when given, becomes the session's.  The document is the whole graph:
 * the pending edges go and none joins it, so it reads back as written;
 * drafts stay, unless the document names their id (they give way).  The
 * same bytes as the graph's document are no change, unless edges were
 * pending.
 * The document's own edges must name its nodes: that is still refused.
 *
 * ---- Drafts ----
 * Drafts: a nodes/x.json or edges/x.json being created (open, not yet
 * closed) exists as a draft row with no document, so it has an inode;
 * drafts are not in parameters.json, an edge naming a draft node is
 * pending until the node is written, and drafts are removed by
 * graph_drop_draft() (a refused or abandoned create) and by
 * graph_drop_all_drafts() at mount (after a crash).  Pending edges are
 * not drafts: both leave them be, so they survive a remount.
 */
#ifndef FLOWFS_GRAPH_H
#define FLOWFS_GRAPH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"
#include "store/store.h"

/* Bounds of the pending edges of a session (see above). */
#define GRAPH_PENDING_MAX 1000
/*
 * The most nodes and edges (pending ones and drafts included) a
 * session's graph holds: twice the 10,000 of tests/bench/bench_graph.py
 * (a 16 MiB parameters.json of 20,000 nodes takes about a second to
 * store, and every session waits meanwhile).  A write that would pass one
 * is refused (-EINVAL, "the graph has 20000 nodes: a graph holds at most
 * 20000"): parameters.json before anything in it is checked, a new node
 * or edge file before it is stored; infer-edges adds what fits and says
 * where it stopped.
 */
#define GRAPH_MAX_NODES 20000
#define GRAPH_MAX_EDGES 20000
#define GRAPH_PENDING_SIZE 4096

enum graph_kind { GRAPH_NODE, GRAPH_EDGE };

/* A node or edge as a folder lists it. */
struct graph_item {
	int64_t seq;
	int64_t session;
	char *id;
	size_t size;		/* bytes of its document; 0 for a draft */
	int64_t mtime_ns;	/* last change of its document */
	bool draft;
	bool pending;		/* an edge waiting to join the graph */
};

struct graph_tools;	/* graph/tools.h */

/* All items of one kind in creation order (drafts included, flagged). */
int graph_list(struct store *st, int64_t session, enum graph_kind kind,
	       struct graph_item **items, size_t *n);
void graph_items_free(struct graph_item *items, size_t n);

/* One item by id, or by seq (any session); -ENOENT. Free out->id. */
int graph_find(struct store *st, int64_t session, enum graph_kind kind,
	       const char *id, struct graph_item *out);
int graph_get(struct store *st, enum graph_kind kind, int64_t seq,
	      struct graph_item *out);

/* The document of an item (empty for a draft). */
int graph_render(struct store *st, enum graph_kind kind, int64_t seq,
		 struct sbuf *out);

/* A draft for `id` (-EEXIST when the id is taken); its seq. */
int graph_create_draft(struct store *st, int64_t session,
		       enum graph_kind kind, const char *id, int64_t *seq);
/* Remove the item `seq` if it is still a draft (else nothing). */
int graph_drop_draft(struct store *st, enum graph_kind kind, int64_t seq);
int graph_drop_all_drafts(struct store *st);

/*
 * Validate and store `text` as the document of `id` (created, replaced,
 * or a draft completed).  -EINVAL with err for a refusal; nothing stored.
 * An edge naming a node that is not there is stored pending (0); a node
 * takes in the pending edges that name it and now fit.
 */
int graph_commit(struct store *st, const struct graph_tools *tools,
		 int64_t session, enum graph_kind kind, const char *id,
		 const char *text, size_t len, struct ferr *err);

/* Delete an item; a node takes its edges with it (pending ones too), in
 * one transaction. */
int graph_delete(struct store *st, int64_t session, enum graph_kind kind,
		 const char *id);

/*
 * Rename an item (mv nodes/a.json nodes/b.json): the document's id
 * follows, and so do the edges that name a renamed node (pending ones
 * too; not those that wait for a draft).  -EEXIST when
 * `to` is taken (unless `replace`: the old `to` goes, a node with its
 * edges).
 */
int graph_rename(struct store *st, int64_t session, enum graph_kind kind,
		 const char *from, const char *to, bool replace,
		 struct ferr *err);

/*
 * What keeps each pending edge out of the graph, one line each in
 * creation order: "edges/<id>.json: <reason>\n", the reason for a
 * person: 'waits for its source node "n1", which does not exist' (or
 * target node; or 'its source node "a" and its target node "b", which
 * do not exist'; or 'its source and target node "a", ...'), "would close
 * a cycle: a -> b -> a", 'node "b" has no input parameter "x" (it has:
 * y)', "duplicates e1".  One indexed query: a reason is stored when
 * the edge is checked, and every change that can change it checks the
 * edge again (a node's write or rename checks the edges that name it; a
 * change that removes or renames an edge or a node of the graph, those
 * whose two nodes exist).
 */
int graph_problems(struct store *st, int64_t session, struct sbuf *out);

/* parameters.json */
int graph_render_parameters(struct store *st, int64_t session,
			    struct sbuf *out);
/* The same document as JSON values, not text (for a plan: plan.h): *doc
 * a new reference.  -ENOENT: no such session. */
int graph_document(struct store *st, int64_t session, json_t **doc);
/* How many nodes the session's graph has (drafts not counted). */
int graph_node_count(struct store *st, int64_t session, int64_t *nodes);
int graph_commit_parameters(struct store *st, const struct graph_tools *tools,
			    int64_t session, const char *text, size_t len,
			    struct ferr *err);

/*
 * The MatMaster rule (DESIGN §5): for consecutive nodes in creation
 * order, an edge source -> target with source_parameter_name
 * "out_<source label>" and as target parameter the first input whose
 * lower-cased name contains file, path, url, input, output, structure,
 * data or result, else the first input, else "input".  Existing edges
 * stay; an edge equal to one that exists is not added; one that would
 * close a cycle is skipped with a line in `report` ("d -> e skipped:
 * would close a cycle: d -> e -> a -> d\n").  New edges get ids
 * "edge-$id<N>" with the smallest free N >= 1.  *added: how many.
 * One transaction.
 */
int graph_infer_edges(struct store *st, int64_t session, size_t *added,
		      struct sbuf *report);

/*
 * A node moved out of its session (into the trash: gio trash, a file
 * manager's Delete) leaves the graph with its edges, as any delete does;
 * the edges are kept with the file the node became, inode `ino`, so that
 * moving that file back (the trash's restore) brings them back.
 * graph_keep_edges(): before the node goes, its edges (pending ones
 * too) are kept for `ino`.  graph_kept_edges(): the edges kept for
 * `ino` in `session` (none for another session), as edge documents in
 * creation order with the node's id turned into `to` (the name it comes
 * back as); *edges a new array.  graph_restore_edges(): once the node is
 * back, each is committed as a write of edges/<id>.json would be — it
 * joins the graph, or waits for a node that is not there (the node at
 * its other end in the trash too), or is refused — but for one whose id
 * another edge has taken meanwhile; left_out(ctx, id, why) is called
 * for each that did not come back, and the rows kept for `ino` are
 * forgotten.  Kept rows go with the file too (an emptied trash), and with
 * the session.
 */
int graph_keep_edges(struct store *st, int64_t session, const char *node,
		     int64_t ino);
int graph_kept_edges(struct store *st, int64_t session, int64_t ino,
		     const char *to, json_t **edges);
int graph_restore_edges(struct store *st, int64_t session, int64_t ino,
			const json_t *edges,
			void (*left_out)(void *ctx, const char *id,
					 const char *why),
			void *ctx);

/* When the graph last changed (0: never). */
int graph_mtime(struct store *st, int64_t session, int64_t *mtime_ns);

/*
 * The seed's file name: parameters_<sid8>_<YYYYMMDD_HHMMSS>.json, sid8 =
 * the first 8 characters (UTF-8 code points, not bytes) of the session
 * id ("unknown" for an empty one), the time local (localtime_r of the
 * whole seconds).  For a graph that never changed (graph_mtime() 0) the
 * caller passes the session's creation time.
 */
int graph_output_name(const char *session_id, int64_t mtime_ns,
		      struct sbuf *out);

/* The session's template UUID (made when the session is); nothing is
 * appended when it has none (parameters.json then shows null). */
int graph_template_uuid(struct store *st, int64_t session, struct sbuf *out);

#endif
