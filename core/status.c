/* status: what a session's status and status.json say; see status.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/fname.h"
#include "session/skill.h"
#include "graph/graph.h"
#include "run/jobs.h"
#include "session/roundstore.h"
#include "run/run.h"
#include "status.h"

static int64_t later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/*
 * The lines of `text` (each ending in '\n') appended to `array`, escaped
 * (fname_escape()): whoever built a line escaped the names in it, so that
 * none breaks it in two; a terminal's escapes from anywhere else (a
 * deck's text) go here.
 */
static int add_lines(json_t *array, const struct sbuf *text)
{
	struct sbuf line = SBUF_INIT;
	int ret = 0;

	for (size_t at = 0; !ret && at < text->len;) {
		const char *nl = memchr(text->buf + at, '\n', text->len - at);
		size_t end = nl ? (size_t)(nl - text->buf) : text->len;
		char *raw = strndup(text->buf + at, end - at);

		sbuf_reset(&line);
		if (!raw || fname_escape(&line, raw, SIZE_MAX) < 0 ||
		    json_array_append_new(array, fjson_text(line.buf,
							     line.len)) < 0)
			ret = -ENOMEM;
		free(raw);
		at = end + 1;
	}
	sbuf_release(&line);
	return ret;
}

/* "<what><name>: <state>[: <message>]" of one of run_report()'s states;
 * the name (a path) and the message (an engine's or a server's answer)
 * are not flowfs's: the whole line is escaped. */
static int state_line(struct sbuf *out, const char *what, const char *name,
		      const json_t *o)
{
	const char *msg = json_string_value(json_object_get(o, "message"));
	const char *state = json_string_value(json_object_get(o, "state"));

	return fname_line(out, "%s%s: %s%s%s", what, name ? name : "",
			  state ? state : "", msg && *msg ? ": " : "",
			  msg ? msg : "");
}

static bool state_is(const json_t *o, const char *state)
{
	const char *s = json_string_value(json_object_get(o, "state"));

	return s && !strcmp(s, state);
}

/* The line of each fetch in `state`. */
static int fetch_lines(struct sbuf *out, const json_t *fetches,
		       const char *state)
{
	const json_t *f;
	size_t i;
	int ret = 0;

	json_array_foreach(fetches, i, f) {
		if (!state_is(f, state))
			continue;
		ret = state_line(out, "fetch ", json_string_value(
					 json_object_get(f, "path")), f);
		if (ret < 0)
			break;
	}
	return ret;
}

/* DATCOM's word on the session's deck: a problem when it failed, and
 * the document's "datcom" (a new reference; JSON null when it has not run
 * on this deck). */
static int datcom_part(const struct binding_ctx *c, struct datcomrun *r,
		       struct sbuf *problems, json_t **part)
{
	struct datcomrun_result *res = NULL;
	struct sbuf deck = SBUF_INIT;
	bool running = false;
	int ret = 0;

	*part = NULL;
	if (binding_has_artifact(c, "for005.dat") &&
	    binding_render_artifact(c, "for005.dat", &deck) == 0)
		res = datcomrun_peek(r, deck.buf, deck.len, &running);
	if (running)
		*part = json_pack("{ss}", "state", "running");
	else if (res && res->ok)
		*part = json_pack("{ss}", "state", "done");
	else if (res)
		*part = json_pack("{ssss}", "state", "failed", "message",
				  res->why);
	else
		*part = json_null();
	if (!*part)
		ret = -ENOMEM;
	if (!ret && res && !res->ok && !running)
		ret = fname_line(problems, "output/for006.dat: %s", res->why);
	datcomrun_put(r, res);
	sbuf_release(&deck);
	return ret;
}

int status_doc(const struct binding_ctx *c, json_t **doc, int64_t *mtime_ns)
{
	return status_doc_with(c, NULL, doc, mtime_ns);
}

int status_doc_with(const struct binding_ctx *c, const struct status_extra *x,
		    json_t **doc, int64_t *mtime_ns)
{
	json_t *datcom = NULL;
	struct sbuf problems = SBUF_INIT, notes = SBUF_INIT;
	json_t *run = NULL, *fetches = NULL, *plist = NULL, *nlist = NULL;
	json_t *graph = NULL, *snapshots = NULL, *fork_of = NULL;
	int64_t when = 0, bound_ns = 0, graph_ns = 0;
	int ret;

	*doc = NULL;
	ret = binding_problems(c, &problems, &notes, &bound_ns);
	/* "ready" says nothing is missing; a script that cannot tell an
	 * empty session from a finished one reads this note */
	if (!ret && !c->s->skill[0]) {
		int64_t nodes = 0;

		ret = graph_node_count(c->st, c->s->id, &nodes);
		if (!ret && !nodes)
			ret = sbuf_addstr(&notes, "nothing to do yet: no skill is"
					  " bound (session.json) and the job"
					  " graph is empty (nodes/)\n");
	}
	if (!ret)
		ret = roundstore_problem(c->st, c->s->id, &problems);
	if (!ret)
		ret = graph_problems(c->st, c->s->id, &problems);
	/* what a shell's redirect or an unchecked close() never showed */
	if (!ret)
		ret = session_refusal_lines(c->st, c->s->id, &problems);
	/* a graph that failed is not ready until it is submitted again or
	 * changed */
	if (!ret)
		ret = jobs_problem(c->st, c->s->id, c->s->graph_mtime_ns,
				   &problems);
	if (!ret)
		ret = run_report(c->st, c->s->id, &run, &fetches, &when);
	if (!ret)
		ret = jobs_report(c->st, c->s->id, &graph, &graph_ns);
	if (!ret)
		ret = session_copies_report(c->st, c->s->id, &snapshots,
					    &fork_of);
	/* the request names a URL that could not be had */
	if (!ret)
		ret = fetch_lines(&problems, fetches, "failed");
	if (!ret && x && x->datcom)
		ret = datcom_part(c, x->datcom, &problems, &datcom);
	if (ret < 0)
		goto out;
	plist = json_array();
	nlist = json_array();
	if (!plist || !nlist) {
		ret = -ENOMEM;
		goto out;
	}
	ret = add_lines(plist, &problems);
	if (!ret)
		ret = add_lines(nlist, &notes);
	if (ret < 0)
		goto out;
	*doc = json_pack("{sbsOsOsOsOsosOso}", "ready", !problems.len,
			 "problems", plist, "notes", nlist, "run", run,
			 "fetches", fetches, "graph",
			 graph ? json_incref(graph) : json_null(),
			 "snapshots", snapshots,
			 "fork_of", fork_of ? json_incref(fork_of)
					    : json_null());
	if (*doc && datcom &&
	    json_object_set(*doc, "datcom", datcom) < 0) {
		json_decref(*doc);
		*doc = NULL;
	}
	if (!*doc)
		ret = -ENOMEM;
out:
	json_decref(datcom);
	*mtime_ns = later(later(c->s->created_ns, bound_ns),
			  later(later(when, graph_ns),
				later(c->s->graph_mtime_ns,
				      c->s->rounds_mtime_ns)));
	json_decref(graph);
	json_decref(snapshots);
	json_decref(fork_of);
	json_decref(plist);
	json_decref(nlist);
	json_decref(run);
	json_decref(fetches);
	sbuf_release(&problems);
	sbuf_release(&notes);
	return ret;
}

int status_text(const json_t *doc, struct sbuf *out)
{
	const json_t *run = json_object_get(doc, "run"), *p;
	size_t i;
	int ret = 0;

	if (json_is_true(json_object_get(doc, "ready")))
		ret = sbuf_addstr(out, "ready\n");
	json_array_foreach(json_object_get(doc, "problems"), i, p)
		if (!ret)
			ret = sbuf_addf(out, "%s\n", json_string_value(p));
	if (!ret && (state_is(run, "running") || state_is(run, "queued")))
		ret = state_line(out, "run", NULL, run);
	if (!ret && state_is(json_object_get(doc, "graph"), "running"))
		ret = sbuf_addf(out, "graph: running: %" JSON_INTEGER_FORMAT
				" of %" JSON_INTEGER_FORMAT " done\n",
				json_integer_value(json_object_get(
					json_object_get(doc, "graph"), "done")),
				json_integer_value(json_object_get(
					json_object_get(doc, "graph"), "jobs")));
	if (!ret && state_is(json_object_get(doc, "datcom"), "running"))
		ret = sbuf_addstr(out, "datcom: running on the deck\n");
	if (!ret)
		ret = fetch_lines(out, json_object_get(doc, "fetches"),
				  "fetching");
	/* waiting for another session's (or this one's) fetches to end */
	if (!ret)
		ret = fetch_lines(out, json_object_get(doc, "fetches"),
				  "queued");
	return ret;
}

int status_version(const struct binding_ctx *c, int64_t version[4])
{
	return status_version_with(c, NULL, version);
}

int status_version_with(const struct binding_ctx *c,
			const struct status_extra *x, int64_t version[4])
{
	struct store_version v;
	int ret = store_version(c->st, &v);

	if (ret < 0)
		return ret;
	version[0] = v.own;
	version[1] = v.others;
	version[2] = (int64_t)tree_changes(c->tree);
	version[3] = (int64_t)skill_registry_scans(c->skills);
	/* both small counters: each in its own half */
	if (x && x->datcom)
		version[3] += (int64_t)(datcomrun_generation(x->datcom) << 32);
	return 0;
}

int status_render(const struct binding_ctx *c, bool as_json,
		  struct sbuf *out, int64_t *mtime_ns)
{
	return status_render_with(c, NULL, as_json, out, mtime_ns);
}

int status_render_with(const struct binding_ctx *c,
		       const struct status_extra *x, bool as_json,
		       struct sbuf *out, int64_t *mtime_ns)
{
	json_t *doc;
	int ret = status_doc_with(c, x, &doc, mtime_ns);

	if (!ret)
		ret = as_json ? fjson_dump(out, doc) : status_text(doc, out);
	json_decref(doc);
	return ret;
}
