/*
 * plan: a session's job graph as it would run — the one way a submit
 * (run/jobs.h) and both exports (gexport.h) get it: the stored graph
 * (graph.h, graph_document()) under the tool map (tools.h), made a plan
 * (jobspec.h) in dependency order.
 */
#ifndef FLOWFS_GRAPH_PLAN_H
#define FLOWFS_GRAPH_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/jobspec.h"
#include "graph/tools.h"
#include "lib/ferr.h"
#include "store/store.h"

struct plan_source {
	int64_t session;
	const struct graph_tools *tools;
	/* why the tool map cannot be used (graph_toolfile_get()); NULL or
	 * "" when it can */
	const char *tools_error;
	/* refuse a graph with an edge still waiting for its nodes (a submit:
	 * what runs must be what the user sees); the exports show the graph
	 * those edges are not in */
	bool whole;
};

/*
 * The plan of `src`'s graph into *plan (jobspec_plan_release() it), with
 * the options `jo` (the run's folder, the container runner, the names in
 * messages).  -ENOENT (nothing said) when the graph has no nodes;
 * -EINVAL or -E2BIG with err when it cannot run: the tool map cannot be
 * used ("the tool map cannot be used: <why>"), an edge waits ("the graph
 * is not whole: <the first such edge's line in status>"), or jobspec's
 * reason.
 */
int graph_plan(struct store *st, const struct plan_source *src,
	       const struct jobspec_options *jo, struct jobspec_plan *plan,
	       struct ferr *err);

/*
 * The folder of a session's in a work folder (malloc'd into *out):
 * "<work_dir>/<name>-<id>/<leaf>", the name made safe (jobspec_safe_name()):
 * a run's is "run-<n>", the Slurm export's "export".
 */
int graph_session_dir(const char *work_dir, const char *name, int64_t id,
		      const char *leaf, char **out);

#endif
