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
		    json_array_append_new(array, json_stringn(line.buf,
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

int status_doc(const struct binding_ctx *c, json_t **doc, int64_t *mtime_ns)
{
	struct sbuf problems = SBUF_INIT, notes = SBUF_INIT;
	json_t *run = NULL, *fetches = NULL, *plist = NULL, *nlist = NULL;
	json_t *graph = NULL;
	int64_t when = 0, bound_ns = 0, graph_ns = 0;
	int ret;

	*doc = NULL;
	ret = binding_problems(c, &problems, &notes, &bound_ns);
	if (!ret)
		ret = roundstore_problem(c->st, c->s->id, &problems);
	if (!ret)
		ret = graph_problems(c->st, c->s->id, &problems);
	if (!ret)
		ret = run_report(c->st, c->s->id, &run, &fetches, &when);
	if (!ret)
		ret = jobs_report(c->st, c->s->id, &graph, &graph_ns);
	/* the request names a URL that could not be had */
	if (!ret)
		ret = fetch_lines(&problems, fetches, "failed");
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
	*doc = json_pack("{sbsOsOsOsOso}", "ready", !problems.len,
			 "problems", plist, "notes", nlist, "run", run,
			 "fetches", fetches, "graph",
			 graph ? json_incref(graph) : json_null());
	if (!*doc)
		ret = -ENOMEM;
out:
	*mtime_ns = later(later(c->s->created_ns, bound_ns),
			  later(later(when, graph_ns),
				later(c->s->graph_mtime_ns,
				      c->s->rounds_mtime_ns)));
	json_decref(graph);
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
	if (!ret && state_is(run, "running"))
		ret = state_line(out, "run", NULL, run);
	if (!ret && state_is(json_object_get(doc, "graph"), "running"))
		ret = sbuf_addf(out, "graph: running: %" JSON_INTEGER_FORMAT
				" of %" JSON_INTEGER_FORMAT " done\n",
				json_integer_value(json_object_get(
					json_object_get(doc, "graph"), "done")),
				json_integer_value(json_object_get(
					json_object_get(doc, "graph"), "jobs")));
	if (!ret)
		ret = fetch_lines(out, json_object_get(doc, "fetches"),
				  "fetching");
	/* waiting for another session's (or this one's) fetches to end */
	if (!ret)
		ret = fetch_lines(out, json_object_get(doc, "fetches"),
				  "queued");
	return ret;
}

/* ---- the cache (status.h) ------------------------------------------- */

static void cached_clear(struct status_cached *e)
{
	free(e->session_path);
	sbuf_release(&e->text);
	sbuf_release(&e->json);
	memset(e, 0, sizeof(*e));
}

void status_cache_release(struct status_cache *sc)
{
	for (int i = 0; i < STATUS_CACHE_SLOTS; i++)
		cached_clear(&sc->slot[i]);
}

void status_cache_forget(struct status_cache *sc, int64_t session)
{
	for (int i = 0; i < STATUS_CACHE_SLOTS; i++)
		if (sc->slot[i].age.valid && sc->slot[i].key.session == session)
			cached_clear(&sc->slot[i]);
}

/* What c's status is computed from, now. */
static int key_of(const struct binding_ctx *c, struct status_key *k)
{
	memset(k, 0, sizeof(*k));	/* the padding too: keys are memcmp()ed */
	k->session = c->s->id;
	k->tree_changes = tree_changes(c->tree);
	k->skill_scans = skill_registry_scans(c->skills);
	k->created_ns = c->s->created_ns;
	k->doc_mtime_ns = c->s->doc_mtime_ns;
	k->request_mtime_ns = c->s->request_mtime_ns;
	k->graph_mtime_ns = c->s->graph_mtime_ns;
	k->rounds_mtime_ns = c->s->rounds_mtime_ns;
	return store_version(c->st, &k->version);
}

static bool key_eq(const struct status_key *a, const struct status_key *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* Render both files into slot `e`, keyed `k` (taken before: a change
 * while rendering makes the next look render again). */
static int cached_fill(const struct binding_ctx *c, struct status_cache *sc,
		       const struct status_key *k, struct status_cached *e)
{
	json_t *doc = NULL;
	int ret;

	cached_clear(e);
	ret = status_doc(c, &doc, &e->mtime_ns);
	if (!ret)
		ret = status_text(doc, &e->text);
	if (!ret)
		ret = fjson_dump(&e->json, doc);
	if (!ret) {
		e->session_path = strdup(c->session_path);
		ret = e->session_path ? 0 : -ENOMEM;
	}
	json_decref(doc);
	if (ret < 0) {
		cached_clear(e);
		return ret;
	}
	memcpy(&e->key, k, sizeof(*k));
	lru_touch(&e->age, &sc->clock);
	sc->misses++;
	return 0;
}

int status_render(const struct binding_ctx *c, struct status_cache *sc,
		  bool as_json, struct sbuf *out, int64_t *mtime_ns)
{
	struct status_cached *e = NULL;
	struct status_key k;
	json_t *doc;
	int ret;

	if (!sc) {
		ret = status_doc(c, &doc, mtime_ns);
		if (!ret)
			ret = as_json ? fjson_dump(out, doc)
				      : status_text(doc, out);
		json_decref(doc);
		return ret;
	}
	ret = key_of(c, &k);
	if (ret < 0)
		return ret;
	/* one slot a session: a new state replaces the old one */
	for (int i = 0; !e && i < STATUS_CACHE_SLOTS; i++)
		if (sc->slot[i].age.valid && sc->slot[i].key.session == k.session)
			e = &sc->slot[i];
	if (e && key_eq(&e->key, &k) &&
	    !strcmp(e->session_path, c->session_path)) {
		lru_touch(&e->age, &sc->clock);
		sc->hits++;
	} else {
		if (!e)
			e = &sc->slot[lru_pick(&sc->slot[0].age,
					       STATUS_CACHE_SLOTS,
					       sizeof(sc->slot[0]))];
		ret = cached_fill(c, sc, &k, e);
		if (ret < 0)
			return ret;
	}
	*mtime_ns = e->mtime_ns;
	return as_json ? sbuf_add(out, e->json.buf, e->json.len)
		       : sbuf_add(out, e->text.buf, e->text.len);
}
