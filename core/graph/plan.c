/* plan: a session's job graph as it would run; see plan.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/plan.h"
#include "lib/sbuf.h"

int graph_plan(struct store *st, const struct plan_source *src,
	       const struct jobspec_options *jo, struct jobspec_plan *plan,
	       struct ferr *err)
{
	struct sbuf waiting = SBUF_INIT;
	json_t *graph = NULL;
	int64_t nodes = 0;
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = graph_node_count(st, src->session, &nodes);
	if (!ret && !nodes)
		ret = -ENOENT;
	if (!ret && src->tools_error && src->tools_error[0])
		ret = ferr_set(err, -EINVAL, "the tool map cannot be used: %s",
			       src->tools_error);
	if (!ret && src->whole)
		ret = graph_problems(st, src->session, &waiting);
	if (!ret && waiting.len) {
		char *nl = strchr(waiting.buf, '\n');

		if (nl)
			*nl = '\0';
		ret = ferr_set(err, -EINVAL, "the graph is not whole: %s",
			       waiting.buf);
	}
	if (!ret)
		ret = graph_document(st, src->session, &graph);
	if (!ret)
		ret = jobspec_plan(graph, graph_tools_map(src->tools), jo, plan,
				   err);
	json_decref(graph);
	sbuf_release(&waiting);
	return ret;
}

int graph_session_dir(const char *work_dir, const char *name, int64_t id,
		      const char *leaf, char **out)
{
	char safe[128];

	jobspec_safe_name(name, safe, sizeof(safe));
	return asprintf(out, "%s/%s-%" PRId64 "/%s", work_dir, safe, id,
			leaf) < 0 ? -ENOMEM : 0;
}
