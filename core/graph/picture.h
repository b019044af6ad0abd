/*
 * picture: a session's job graph drawn by Graphviz (libgvc, the `dot`
 * layout) — output/graph.svg — and the DOT text it is drawn from —
 * output/graph.dot.
 *
 * ---- What is drawn ----
 * One box per node (its id, and its label when that differs, each cut to
 * PICTURE_LABEL_MAX characters), one arrow per edge labelled with its
 * parameter names ("out_make → structure_file"), and, dashed and grey, each
 * pending edge (graph.h) whose two nodes are there ("waits: would close a
 * cycle"); one waiting for a node that is not there has nothing to point
 * at and is counted in the caption instead.  Once the graph was submitted
 * (jobs.h), each box is filled with its job's state's colour from the
 * graph_jobs table — queued, submitted, running, done, failed, skipped,
 * cancelled — and a legend under the graph says which colour is which; a
 * node added since has no job and stays white.  Nothing but the nodes and
 * the edges is a node or an edge of the picture (Graphviz's class="node"
 * and class="edge" groups): the legend is the graph's own label.
 *
 * ---- Bounds ----
 * `dot` takes about 0.5 s for 500 nodes and 1.5 s for 1000 (this
 * machine): a graph of more than PICTURE_MAX_NODES nodes or
 * PICTURE_MAX_EDGES edges (counted as graph_counts keeps them) is not
 * laid out; its graph.svg is a picture saying so.  graph.dot, which needs
 * no layout, is whole at any size (at most the graph's 20,000 nodes and
 * edges).  Graphviz keeps global state and is not thread-safe: every use
 * of it here holds one lock of its own (renders of two sessions take
 * turns), never a lock of the caller's; the caller renders outside its
 * own (fs: render_alone).
 *
 * ---- Version ----
 * picture_version(): four numbers that change whenever anything drawn
 * does: the graph's change stamp (graph.h: strictly increasing), the run
 * (its number and start), and the sum of the jobs' state ranks (queued 1,
 * submitted 2, running 3, an end 4), which a run's jobs only ever raise,
 * so two moments of one run with equal sums are the same moment.  Read in
 * the same read transaction as the render, they key a cache of it.
 */
#ifndef FLOWFS_PICTURE_H
#define FLOWFS_PICTURE_H

#include <stdint.h>

#include "lib/sbuf.h"
#include "store/store.h"

#define PICTURE_MAX_NODES 500
#define PICTURE_MAX_EDGES 1000
#define PICTURE_LABEL_MAX 48

enum picture_format { PICTURE_SVG, PICTURE_DOT };

/*
 * The picture of session `session`'s graph into `out`: 0, -ENOENT when
 * the graph has no node (there is no picture then), or a negative errno.
 * A layout Graphviz refuses is a picture saying why, not an error.
 */
int picture_render(struct store *st, int64_t session, enum picture_format f,
		   struct sbuf *out);

/* The version above; `graph_stamp` is the session's graph_mtime_ns (its
 * creation time when the graph never changed). */
int picture_version(struct store *st, int64_t session, int64_t graph_stamp,
		    int64_t version[4]);

/* Free what Graphviz holds (at the daemon's end, no render going on). */
void picture_shutdown(void);

#endif
