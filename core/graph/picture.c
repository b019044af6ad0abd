/* picture: the job graph drawn by Graphviz; see picture.h. */
#include "graph/picture.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <graphviz/gvc.h>
#include <jansson.h>

#include "flowfs-config.h"
#include "formats/printout.h"
#include "graph/graph.h"
#include "lib/fjson.h"
#include "lib/utf8.h"

/*
 * Graphviz runs in a thread of its own, for the daemon's life: its
 * renders take turns (it keeps global state and is not thread-safe), and
 * what it keeps per thread (pango's font map, fontconfig's caches) is
 * made once.  It frees less than it takes (at gvFreeContext(), and when
 * a thread that used pango ends): not flowfs's leaks, and LeakSanitizer
 * in the test builds would fail the daemon for them, so that thread's
 * allocations are left out of its count (flowfs's own code there is
 * build() and the copy of the result, a few lines).
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define GRAPHVIZ_THREAD() __lsan_disable()
#else
#define GRAPHVIZ_THREAD() ((void)0)
#endif

#define FONT "Helvetica,Arial,sans-serif"

/* Graphviz's context, and what it said during the last render: its
 * thread's alone. */
static GVC_t *gv_context;
static char gv_said[512];

/*
 * The two plugins a picture needs, the `dot` layout and the SVG and DOT
 * writers, and no other: gvContext() would load every plugin Graphviz
 * has, pango's text layout among them, which reads the system's fonts
 * (fontconfig, 0.1 s, in threads of its own) to measure labels.  Without
 * it Graphviz measures with its own tables of Helvetica's widths: the
 * same picture on every machine, whatever fonts it has.
 */
static const char *const gv_plugins[] = { "dot_layout", "core" };
static const char *const gv_symbols[] = { "gvplugin_dot_layout_LTX_library",
					  "gvplugin_core_LTX_library" };
#define GV_PLUGINS (sizeof(gv_plugins) / sizeof(gv_plugins[0]))
static void *gv_libs[GV_PLUGINS];

static GVC_t *gv_open(void)
{
	lt_symlist_t builtins[GV_PLUGINS + 1];
	char path[256];

	memset(builtins, 0, sizeof(builtins));
	for (size_t i = 0; i < GV_PLUGINS; i++) {
		snprintf(path, sizeof(path), FLOWFS_GRAPHVIZ_PLUGINS
			 "/libgvplugin_%s.so." FLOWFS_GRAPHVIZ_SONAME,
			 gv_plugins[i]);
		if (!gv_libs[i])
			gv_libs[i] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		builtins[i].name = gv_symbols[i];
		builtins[i].address = gv_libs[i] ? dlsym(gv_libs[i],
							 gv_symbols[i]) : NULL;
		if (!builtins[i].address) {
			snprintf(gv_said, sizeof(gv_said), "cannot load %s: %.200s",
				 path, dlerror());
			return NULL;
		}
	}
	/* no demand loading: the builtins alone, no config file read */
	return gvContextPlugins(builtins, 0);
}

/* A render handed to that thread; gv_lock guards these. */
struct gv_job {
	const struct drawing *d;
	enum picture_format f;
	struct sbuf *out;
	int ret;
	bool done;
};

static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gv_cond = PTHREAD_COND_INITIALIZER;
static struct gv_job *gv_job;
static pthread_t gv_thread;
static bool gv_started, gv_stop;

static int gv_listen(char *message)
{
	size_t n = strlen(gv_said);

	if (n + 1 < sizeof(gv_said))
		snprintf(gv_said + n, sizeof(gv_said) - n, "%s", message);
	return 0;
}

/* A job's state: its rank (picture.h), fill and border colours. */
static const struct state_look {
	const char *state;
	int rank;
	const char *fill, *border;
} looks[] = {
	{ "queued", 1, "#eeeeee", "#9e9e9e" },
	{ "submitted", 2, "#dbe8f7", "#6b8fbf" },
	{ "running", 3, "#fff1b8", "#c9a227" },
	{ "done", 4, "#c8e6c9", "#4c9a52" },
	{ "failed", 4, "#f8c4c4", "#c0392b" },
	{ "skipped", 4, "#e6def0", "#8e7cab" },
	{ "cancelled", 4, "#ffd8b0", "#d9822b" },
};
#define LOOKS (sizeof(looks) / sizeof(looks[0]))

static const struct state_look *look_of(const char *state)
{
	for (size_t i = 0; state && i < LOOKS; i++)
		if (!strcmp(looks[i].state, state))
			return &looks[i];
	return NULL;
}

int picture_version(struct store *st, int64_t session, int64_t graph_stamp,
		    int64_t version[4])
{
	static const char sql[] = "SELECT r.number, r.started_ns,"
		" (SELECT total(CASE state WHEN 'queued' THEN 1"
		"   WHEN 'submitted' THEN 2 WHEN 'running' THEN 3 ELSE 4 END)"
		"  FROM graph_jobs WHERE session = ?1)"
		" FROM graph_runs r WHERE r.session = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	version[0] = graph_stamp;
	version[1] = version[2] = version[3] = 0;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		version[1] = sqlite3_column_int64(q, 0);
		version[2] = sqlite3_column_int64(q, 1);
		version[3] = sqlite3_column_int64(q, 2);
	} else if (rc != SQLITE_DONE) {
		ret = store_errno(rc);
	}
	store_done(q);
	return ret;
}

/* ---- what is drawn ---------------------------------------------------------- */

/* A text for a Graphviz label: at most PICTURE_LABEL_MAX characters (an
 * ellipsis for the rest), a control character as a blank, a backslash
 * doubled (Graphviz reads \n, \N, \G ... in labels). */
static int label_text(struct sbuf *out, const char *s)
{
	size_t len = strlen(s);
	size_t keep = utf8_offset(s, len, PICTURE_LABEL_MAX);
	int ret = 0;

	for (size_t i = 0; !ret && i < keep; i++) {
		unsigned char c = (unsigned char)s[i];

		ret = c == '\\' ? sbuf_addstr(out, "\\\\")
		      : c < 0x20 || c == 0x7f ? sbuf_addch(out, ' ')
		      : sbuf_addch(out, (char)c);
	}
	if (!ret && keep < len)
		ret = sbuf_addstr(out, "\xe2\x80\xa6");
	return ret;
}

/* "<id>\n<label>" (the label when it is not the id). */
static int node_label(struct sbuf *out, const char *id, const char *label)
{
	int ret = label_text(out, id);

	if (!ret && label && *label && strcmp(label, id)) {
		ret = sbuf_addstr(out, "\\n");
		if (!ret)
			ret = label_text(out, label);
	}
	return ret;
}

static int edge_label(struct sbuf *out, const char *from, const char *to,
		      bool pending)
{
	int ret = 0;

	if (from && *from) {
		ret = label_text(out, from);
		if (!ret)
			ret = sbuf_addstr(out, " \xe2\x86\x92 ");
	}
	if (!ret)
		ret = label_text(out, to ? to : "");
	if (!ret && pending)
		ret = sbuf_addstr(out, "\\n(waits)");
	return ret;
}

/* What the picture is made of, read before Graphviz is taken. */
struct drawing {
	json_t *doc;		/* graph_document() */
	json_t *pending;	/* the pending edges' documents */
	json_t *states;		/* {node id: state} of the last run */
	int64_t run;		/* its number; 0: never submitted */
	int64_t nodes, edges;	/* as graph_counts has them */
};

static void drawing_release(struct drawing *d)
{
	json_decref(d->doc);
	json_decref(d->pending);
	json_decref(d->states);
}

static int read_states(struct store *st, int64_t session, struct drawing *d)
{
	static const char sql[] = "SELECT node_id, state FROM graph_jobs"
				  " WHERE session = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	d->states = json_object();
	if (!q || !d->states)
		return q ? -ENOMEM : -EIO;
	sqlite3_bind_int64(q, 1, session);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(q, 0);
		const char *state = (const char *)sqlite3_column_text(q, 1);

		if (id && state &&
		    json_object_set_new(d->states, id, json_string(state)) < 0) {
			ret = -ENOMEM;
			break;
		}
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	store_done(q);
	if (!ret)
		ret = store_int(st, "SELECT number FROM graph_runs WHERE"
				" session = ?1", &d->run, STORE_INT(session));
	return ret == -ENOENT ? 0 : ret;
}

static int read_pending(struct store *st, int64_t session, struct drawing *d)
{
	struct graph_item *items = NULL;
	struct sbuf text = SBUF_INIT;
	size_t n = 0;
	int ret = graph_list(st, session, GRAPH_EDGE, &items, &n);

	d->pending = json_array();
	if (!ret && !d->pending)
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i < n; i++) {
		json_t *edge;

		if (!items[i].pending || items[i].draft)
			continue;
		sbuf_reset(&text);
		ret = graph_render(st, GRAPH_EDGE, items[i].seq, &text);
		/* a pending edge's file is what it gave: a JSON object */
		if (!ret && fjson_parse(&edge, text.buf, text.len, NULL) == 0)
			ret = json_array_append_new(d->pending, edge) < 0
			      ? -ENOMEM : 0;
	}
	graph_items_free(items, n);
	sbuf_release(&text);
	return ret;
}

static bool too_big(const struct drawing *d)
{
	return d->nodes > PICTURE_MAX_NODES || d->edges > PICTURE_MAX_EDGES;
}

/* What is drawn; a picture too big to lay out needs only the counts. */
static int drawing_read(struct store *st, int64_t session,
			enum picture_format f, struct drawing *d)
{
	int ret;

	memset(d, 0, sizeof(*d));
	ret = store_int(st, "SELECT nodes FROM graph_counts WHERE session = ?1",
			&d->nodes, STORE_INT(session));
	if (!ret)
		ret = store_int(st, "SELECT edges FROM graph_counts WHERE"
				" session = ?1", &d->edges, STORE_INT(session));
	if (ret == -ENOENT || (!ret && !d->nodes))
		return -ENOENT;	/* no node (was ever made) */
	if (!ret && f == PICTURE_SVG && too_big(d))
		return 0;
	if (!ret)
		ret = graph_document(st, session, &d->doc);
	if (!ret && !json_array_size(json_object_get(d->doc, "nodes")))
		ret = -ENOENT;
	if (!ret)
		ret = read_states(st, session, d);
	if (!ret)
		ret = read_pending(st, session, d);
	if (ret < 0)
		drawing_release(d);
	return ret;
}

/* ---- Graphviz ----------------------------------------------------------------- */

/* agsafeset() of a text flowfs made (Graphviz copies it). */
static void set(void *obj, const char *name, const char *value)
{
	agsafeset(obj, (char *)name, (char *)value, "");
}

/* The legend: a row of the states' colours, each with how many jobs are
 * in it; an HTML-like label (no text of the session's in it).  Without
 * pango, Graphviz measures text by Helvetica's widths, and viewers draw
 * it in wider fonts (DejaVu Sans): blanks on both sides keep the words
 * inside their cells. */
static int legend(const struct drawing *d, struct sbuf *out)
{
	int ret = sbuf_addf(out, "<TABLE BORDER=\"0\" CELLSPACING=\"6\""
			    " CELLPADDING=\"4\"><TR><TD>jobs of run %lld:"
			    "&#160;&#160;</TD>", (long long)d->run);

	for (size_t i = 0; !ret && i < LOOKS; i++) {
		const char *key;
		json_t *v;
		size_t count = 0;

		json_object_foreach(d->states, key, v)
			count += !strcmp(json_string_value(v), looks[i].state);
		ret = sbuf_addf(out, "<TD BORDER=\"1\" STYLE=\"rounded\""
				" BGCOLOR=\"%s\" COLOR=\"%s\">&#160;&#160;%s"
				" %zu&#160;&#160;</TD>", looks[i].fill,
				looks[i].border, looks[i].state, count);
	}
	return ret ? ret : sbuf_addstr(out, "<TD>&#160;&#160;no job: white"
					     "&#160;&#160;</TD></TR></TABLE>");
}

static void graph_defaults(Agraph_t *g)
{
	agattr(g, AGRAPH, "rankdir", "LR");
	agattr(g, AGRAPH, "bgcolor", "white");
	agattr(g, AGRAPH, "pad", "0.3");
	agattr(g, AGRAPH, "nodesep", "0.35");
	agattr(g, AGRAPH, "ranksep", "0.7");
	agattr(g, AGRAPH, "fontname", FONT);
	agattr(g, AGRAPH, "fontsize", "12");
	agattr(g, AGRAPH, "labelloc", "b");
	agattr(g, AGRAPH, "labeljust", "l");
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "style", "rounded,filled");
	agattr(g, AGNODE, "fillcolor", "white");
	agattr(g, AGNODE, "color", "#555555");
	agattr(g, AGNODE, "penwidth", "1.4");
	agattr(g, AGNODE, "fontname", FONT);
	agattr(g, AGNODE, "fontsize", "12");
	agattr(g, AGNODE, "margin", "0.18,0.08");
	agattr(g, AGEDGE, "fontname", FONT);
	agattr(g, AGEDGE, "fontsize", "10");
	agattr(g, AGEDGE, "fontcolor", "#333333");
	agattr(g, AGEDGE, "color", "#555555");
	agattr(g, AGEDGE, "arrowsize", "0.8");
}

/* One edge (a document of edges/); `pending` draws it dashed. */
static int add_edge(Agraph_t *g, const json_t *e, bool pending,
		    struct sbuf *text, size_t *missing)
{
	const char *id = json_string_value(json_object_get(e, "id"));
	const char *from = json_string_value(json_object_get(e,
					     "source_node_id"));
	const char *to = json_string_value(json_object_get(e,
					   "target_node_id"));
	Agnode_t *a = from ? agnode(g, (char *)from, 0) : NULL;
	Agnode_t *b = to ? agnode(g, (char *)to, 0) : NULL;
	Agedge_t *edge;
	int ret;

	if (!a || !b) {
		(*missing)++;
		return 0;
	}
	/* named by its id: two edges between one pair of nodes are two */
	edge = agedge(g, a, b, id ? (char *)id : NULL, 1);
	if (!edge)
		return -ENOMEM;
	sbuf_reset(text);
	ret = edge_label(text, json_string_value(json_object_get(e,
			 "source_parameter_name")),
			 json_string_value(json_object_get(e,
			 "target_parameter_name")), pending);
	if (ret < 0)
		return ret;
	set(edge, "label", text->buf);
	if (pending) {
		set(edge, "style", "dashed");
		set(edge, "color", "#999999");
		set(edge, "fontcolor", "#777777");
	}
	return 0;
}

/* The graph of `d` built in `g`. */
static int build(Agraph_t *g, const struct drawing *d)
{
	struct sbuf text = SBUF_INIT, caption = SBUF_INIT;
	const json_t *v;
	size_t i, missing = 0;
	int ret = 0;

	graph_defaults(g);
	json_array_foreach(json_object_get(d->doc, "nodes"), i, v) {
		const char *id = json_string_value(json_object_get(v, "id"));
		const struct state_look *look;
		Agnode_t *n;

		if (!id)
			continue;
		n = agnode(g, (char *)id, 1);
		if (!n) {
			ret = -ENOMEM;
			break;
		}
		sbuf_reset(&text);
		ret = node_label(&text, id, json_string_value(
					 json_object_get(v, "label")));
		if (ret < 0)
			break;
		set(n, "label", text.buf);
		look = look_of(json_string_value(json_object_get(d->states,
								 id)));
		if (look) {
			set(n, "fillcolor", look->fill);
			set(n, "color", look->border);
		}
	}
	json_array_foreach(json_object_get(d->doc, "edges"), i, v)
		if (!ret)
			ret = add_edge(g, v, false, &text, &missing);
	json_array_foreach(d->pending, i, v)
		if (!ret)
			ret = add_edge(g, v, true, &text, &missing);
	if (!ret && d->run) {
		char *html;

		ret = legend(d, &caption);
		html = ret ? NULL : agstrdup_html(g, caption.buf);
		if (html) {
			agattr(g, AGRAPH, "label", "");
			agset(g, "label", html);
			agstrfree(g, html);
		}
	} else if (!ret) {
		ret = sbuf_addf(&caption, "not submitted yet (echo submit >"
				" ctl runs it)%s", missing ? "\\n" : "");
		if (!ret && missing)
			ret = sbuf_addf(&caption, "%zu edge%s wait%s for nodes"
					" that are not there", missing,
					missing == 1 ? "" : "s",
					missing == 1 ? "s" : "");
		if (!ret)
			set(g, "label", caption.buf);
	}
	sbuf_release(&text);
	sbuf_release(&caption);
	return ret;
}

/* A graph past the bound: a picture that says so, and how to draw it. */
static int draw_too_big(const struct drawing *d, struct sbuf *out)
{
	char text[512];

	snprintf(text, sizeof(text), "This job graph has %lld nodes and %lld"
		 " edges: more than the picture lays out (%d nodes, %d"
		 " edges), as its layout would take seconds."
		 " output/graph.dot holds the whole graph:"
		 " dot -Tsvg graph.dot > graph.svg draws it.",
		 (long long)d->nodes, (long long)d->edges, PICTURE_MAX_NODES,
		 PICTURE_MAX_EDGES);
	return printout_message_svg("Too big to draw", text, out);
}

/* The DOT text of `g` (agwrite() writes to a FILE). */
static int write_dot(Agraph_t *g, struct sbuf *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int ret;

	if (!f)
		return -ENOMEM;
	ret = agwrite(g, f) == 0 ? 0 : -EIO;
	if (fclose(f) != 0 && !ret)
		ret = -ENOMEM;
	if (!ret)
		ret = sbuf_add(out, buf, len);
	free(buf);
	return ret;
}

/* A layout Graphviz refused: the picture says why. */
static int layout_failed(struct sbuf *out)
{
	char text[700];

	snprintf(text, sizeof(text), "Graphviz said: %s",
		 gv_said[0] ? gv_said : "(nothing)");
	for (char *c = text; *c; c++)
		if (*c == '\n' || *c == '\t')
			*c = ' ';
	return printout_message_svg("Graphviz could not lay out this job graph",
				    text, out);
}

static int draw(const struct drawing *d, enum picture_format f,
		struct sbuf *out)
{
	Agraph_t *g;
	char *buf = NULL;
	unsigned len = 0;
	int ret = 0;

	if (f == PICTURE_SVG && too_big(d))
		return draw_too_big(d, out);
	gv_said[0] = '\0';
	agseterrf(gv_listen);
	if (!gv_context)
		gv_context = gv_open();
	if (!gv_context) {
		ret = -EIO;
		goto out;
	}
	g = agopen("jobs", Agdirected, NULL);
	if (!g) {
		ret = -ENOMEM;
		goto out;
	}
	ret = build(g, d);
	if (!ret && f == PICTURE_DOT) {
		ret = write_dot(g, out);
	} else if (!ret && gvLayout(gv_context, g, "dot") != 0) {
		ret = layout_failed(out);
	} else if (!ret) {
		if (gvRenderData(gv_context, g, "svg", &buf, &len) != 0)
			ret = layout_failed(out);
		else
			ret = sbuf_add(out, buf, len);
		gvFreeRenderData(buf);
		gvFreeLayout(gv_context, g);
	}
	agclose(g);
out:
	return ret;
}

static void *gv_main(void *arg)
{
	(void)arg;
	GRAPHVIZ_THREAD();
	pthread_mutex_lock(&gv_lock);
	for (;;) {
		struct gv_job *job;

		while (!gv_job && !gv_stop)
			pthread_cond_wait(&gv_cond, &gv_lock);
		if (!gv_job)
			break;
		job = gv_job;
		pthread_mutex_unlock(&gv_lock);
		job->ret = draw(job->d, job->f, job->out);
		pthread_mutex_lock(&gv_lock);
		job->done = true;
		gv_job = NULL;
		pthread_cond_broadcast(&gv_cond);
	}
	pthread_mutex_unlock(&gv_lock);
	if (gv_context)
		gvFreeContext(gv_context);
	gv_context = NULL;
	for (size_t i = 0; i < GV_PLUGINS; i++)
		if (gv_libs[i])
			dlclose(gv_libs[i]);
	memset(gv_libs, 0, sizeof(gv_libs));
	return NULL;
}

/* draw() in Graphviz's thread (started on first use), waited for. */
static int draw_there(const struct drawing *d, enum picture_format f,
		      struct sbuf *out)
{
	struct gv_job job = { .d = d, .f = f, .out = out };
	int ret = 0;

	pthread_mutex_lock(&gv_lock);
	if (!gv_started) {
		ret = -pthread_create(&gv_thread, NULL, gv_main, NULL);
		gv_started = !ret;
	}
	while (!ret && gv_job)
		pthread_cond_wait(&gv_cond, &gv_lock);
	if (!ret && gv_stop)
		ret = -ECANCELED;
	if (!ret) {
		gv_job = &job;
		pthread_cond_broadcast(&gv_cond);
		while (!job.done)
			pthread_cond_wait(&gv_cond, &gv_lock);
		ret = job.ret;
	}
	pthread_mutex_unlock(&gv_lock);
	return ret;
}

int picture_render(struct store *st, int64_t session, enum picture_format f,
		   struct sbuf *out)
{
	struct drawing d;
	int ret = drawing_read(st, session, f, &d);

	if (ret < 0)
		return ret;
	ret = draw_there(&d, f, out);
	drawing_release(&d);
	return ret;
}

void picture_shutdown(void)
{
	bool started;

	pthread_mutex_lock(&gv_lock);
	gv_stop = true;
	started = gv_started;
	pthread_cond_broadcast(&gv_cond);
	pthread_mutex_unlock(&gv_lock);
	if (started)
		pthread_join(gv_thread, NULL);
	pthread_mutex_lock(&gv_lock);
	gv_started = gv_stop = false;
	pthread_mutex_unlock(&gv_lock);
}
