/*
 * The path → entry table.  Adding a file to every session means adding a
 * row here (and, for a new kind of content, its render/commit functions
 * in core/); the operations in ops.c never name a file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fjson.h"
#include "formats/printout.h"
#include "graph/gexport.h"
#include "graph/picture.h"
#include "flowfs-config.h"
#include "fs.h"
#include "status.h"

void fs_binding_init(struct flowfs *fs, const struct session_info *s,
		     struct fs_binding *b)
{
	snprintf(b->path, sizeof(b->path), "%s/%s", fs->mountpoint, s->name);
	b->ctx = (struct binding_ctx){
		.st = fs->st, .tree = fs->tree, .skills = fs->skills,
		.s = s, .session_path = b->path, .cache = &fs->binding_cache,
	};
}

static int64_t later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int render_version(struct flowfs *fs, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns)
{
	(void)s;
	*mtime_ns = fs->mounted_ns;
	return sbuf_addf(out, "flowfs %s\ndatabase schema %d\n",
			 FLOWFS_VERSION, STORE_SCHEMA_VERSION);
}

/* What this mount runs with: where sessions and skills come from. */
static int render_config(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	json_t *doc, *dirs = json_array();
	int ret = -ENOMEM;

	(void)s;
	*mtime_ns = fs->mounted_ns;
	for (size_t i = 0; dirs && i < skill_dir_count(fs->skills); i++)
		if (json_array_append_new(dirs, json_string(
				skill_dir_at(fs->skills, i))) < 0)
			goto out;
	doc = json_pack("{sssssisOss}", "mountpoint", fs->mountpoint,
			"database", store_path(fs->st),
			"database_schema", STORE_SCHEMA_VERSION,
			"skill_folders", dirs, "tool_map", fs->tools_path);
	/* a tool map that cannot be read is used as empty: say why here */
	if (doc) {
		struct ferr err = FERR_INIT;

		fs_tools(fs, &err);
		if (err.message[0])
			json_object_set_new(doc, "tool_map_error",
					    json_string(err.message));
		/* where runs go; never the key, nor the URL's credentials */
		char *url = fs->run_opt.engine.url
				    ? engine_url_shown(fs->run_opt.engine.url)
				    : NULL;

		/* where the job graph runs */
		json_t *container = json_array();

		for (size_t i = 0; container && fs->container &&
				   fs->container[i]; i++)
			json_array_append_new(container,
					      json_string(fs->container[i]));
		json_object_set_new(doc, "jobs", json_pack(
			"{ss ss si so}", "executor",
			fs->jobs_opt.executor == JOBS_SLURM ? "slurm" : "local",
			"work_dir", fs->jobs_opt.work_dir ? fs->jobs_opt.work_dir
							   : "",
			"slots", fs->jobs_opt.slots ? (int)fs->jobs_opt.slots
				 : (int)sysconf(_SC_NPROCESSORS_ONLN),
			"container", fs->container ? container : json_null()));
		if (!fs->container)
			json_decref(container);
		/* --datcom: what runs DATCOM on sessions' decks */
		json_object_set_new(doc, "datcom", fs->datcom
			? json_pack("{ss si}", "program",
				    fs->datcom->opt.program, "timeout",
				    (int)fs->datcom->opt.timeout_s)
			: json_null());
		json_object_set_new(doc, "engine", url
			? json_pack("{ss ss sb sb}", "url", url,
				    "model", fs->run_opt.engine.model, "key",
				    fs->run_opt.engine.key != NULL, "allow_exec",
				    fs->run_opt.allow_exec)
			: json_null());
		free(url);
	}
	if (doc) {
		ret = fjson_dump(out, doc);
		json_decref(doc);
	}
out:
	json_decref(dirs);
	return ret;
}

static int render_session_json(struct flowfs *fs, const struct session_info *s,
			       struct sbuf *out, int64_t *mtime_ns)
{
	*mtime_ns = s->doc_mtime_ns;
	return session_render_json(fs->st, s, out);
}

static int start_fetches(struct flowfs *fs, const struct session_info *s,
			 const json_t *request, struct ferr *err);

static int commit_session_json(struct flowfs *fs, const struct session_info *s,
			       const char *text, size_t len, struct ferr *err)
{
	struct session_info now;
	json_t *request = NULL;
	int ret = session_commit_json(fs->st, s, fs->skills, text, len, err);

	/* a request stored before the skill was bound (a copy of a session
	 * coming back in any order), or for another skill, gets the URL
	 * inputs of the skill bound now (fetching twice is not done) */
	if (!ret && session_get(fs->st, s->id, &now) == 0 && now.skill[0] &&
	    strcmp(s->skill, now.skill) &&
	    session_load_request(fs->st, &now, &request) == 0 && request)
		ret = start_fetches(fs, &now, request, err);
	json_decref(request);
	return ret;
}

static int render_request(struct flowfs *fs, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns)
{
	*mtime_ns = later(s->request_mtime_ns, s->created_ns);
	return session_render_request(fs->st, s, out);
}

/* Download the URL inputs of `request`, the session's stored request. */
static int start_fetches(struct flowfs *fs, const struct session_info *s,
			 const json_t *request, struct ferr *err)
{
	return runs_fetch(&fs->runs, s, request, err);
}

static int commit_request(struct flowfs *fs, const struct session_info *s,
			  const char *text, size_t len, struct ferr *err)
{
	struct fs_binding b;
	json_t *request = NULL;
	int ret;

	fs_binding_init(fs, s, &b);
	ret = session_commit_request(fs->st, s, binding_skill(&b.ctx),
				     binding_check_request, text, len, err);
	/* URL inputs start downloading once the request holding them is
	 * stored (it parsed, or it would not have been) */
	if (!ret && fjson_parse(&request, text, len, NULL) == 0)
		ret = start_fetches(fs, s, request, err);
	json_decref(request);
	return ret;
}

static int render_input(struct flowfs *fs, const struct session_info *s,
			struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;

	fs_binding_init(fs, s, &b);
	*mtime_ns = binding_mtime(&b.ctx);
	return binding_render_input(&b.ctx, out);
}

static int render_parameter(struct flowfs *fs, const struct session_info *s,
			    struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;

	fs_binding_init(fs, s, &b);
	*mtime_ns = binding_mtime(&b.ctx);
	return binding_render_parameter(&b.ctx, out);
}

static int render_prompt(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;
	int ret;

	fs_binding_init(fs, s, &b);
	*mtime_ns = binding_mtime(&b.ctx);
	ret = binding_render_prompt(&b.ctx, out, NULL);
	/* A prompt that cannot be rendered is no file (status says why). */
	return ret == -EINVAL ? -ENOENT : ret;
}

/* status (the problems or "ready", then what is going on) or status.json */
static int render_status_doc(struct flowfs *fs, const struct session_info *s,
			     struct sbuf *out, int64_t *mtime_ns, bool as_json)
{
	struct fs_binding b;

	struct status_extra x = { .datcom = fs->datcom };

	fs_binding_init(fs, s, &b);
	return status_render_with(&b.ctx, &x, as_json, out, mtime_ns);
}

static int render_status(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	return render_status_doc(fs, s, out, mtime_ns, false);
}

static int render_status_json(struct flowfs *fs, const struct session_info *s,
			      struct sbuf *out, int64_t *mtime_ns)
{
	return render_status_doc(fs, s, out, mtime_ns, true);
}

/* status reads everything of a session (status.h): kept until anything
 * is written anywhere.  Small, but a file manager stats it often. */
static int version_status(struct flowfs *fs, const struct session_info *s,
			  int64_t version[4])
{
	struct fs_binding b;

	struct status_extra x = { .datcom = fs->datcom };

	fs_binding_init(fs, s, &b);
	return status_version_with(&b.ctx, &x, version);
}

/* The session's log; the mount root's (.flowfs/log) for s == NULL. */
static int render_log(struct flowfs *fs, const struct session_info *s,
		      struct sbuf *out, int64_t *mtime_ns)
{
	int ret = session_render_log(fs->st, s ? s->id : 0, out, mtime_ns);

	*mtime_ns = later(*mtime_ns, s ? s->created_ns : fs->mounted_ns);
	return ret;
}

static int render_parameters_alone(const struct fs_alone *a,
				   struct sbuf *out, int64_t *mtime_ns)
{
	*mtime_ns = a->s->graph_mtime_ns ? a->s->graph_mtime_ns
					 : a->s->created_ns;
	return graph_render_parameters(a->st, a->s->id, out);
}

static int render_parameters(struct flowfs *fs, const struct session_info *s,
			     struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_alone a;

	fs_alone_init(fs, fs->st, s, &a);
	return render_parameters_alone(&a, out, mtime_ns);
}

/* parameters_output/'s file: the seed's name for the graph's last change. */
static int name_parameters_output(struct flowfs *fs,
				  const struct session_info *s,
				  struct sbuf *out)
{
	(void)fs;
	return graph_output_name(s->name, s->graph_mtime_ns ? s->graph_mtime_ns
							   : s->created_ns, out);
}

static int render_for005(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;
	int ret;

	fs_binding_init(fs, s, &b);
	ret = binding_render_artifact(&b.ctx, "for005.dat", out);
	/* no query for a file that is not there */
	if (!ret)
		*mtime_ns = binding_mtime(&b.ctx);
	return ret;
}

/* A transcript of the rounds: it changes with them and with the task. */
static int render_transcript(struct flowfs *fs, const struct session_info *s,
			     const char *name, struct sbuf *out,
			     int64_t *mtime_ns)
{
	struct fs_binding b;
	int ret;

	fs_binding_init(fs, s, &b);
	ret = binding_render_artifact(&b.ctx, name, out);
	if (!ret)
		*mtime_ns = later(binding_mtime(&b.ctx), s->rounds_mtime_ns);
	return ret;
}

static int render_summary(struct flowfs *fs, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns)
{
	return render_transcript(fs, s, "summary.json", out, mtime_ns);
}

static int render_summary_readable(struct flowfs *fs,
				   const struct session_info *s,
				   struct sbuf *out, int64_t *mtime_ns)
{
	return render_transcript(fs, s, "summary_readable.txt", out, mtime_ns);
}

/* What the transcripts read: the session's skill and request (the
 * task), and the rounds. */
static int version_transcript(struct flowfs *fs, const struct session_info *s,
			      int64_t version[4])
{
	struct fs_binding b;

	fs_binding_init(fs, s, &b);
	/* no transcripts for this skill (or a skill gone or broken since):
	 * render says what is there, at no cost */
	if (!binding_has_artifact(&b.ctx, "summary.json"))
		return -ENOENT;
	version[0] = later(s->doc_mtime_ns, s->request_mtime_ns);
	version[1] = s->rounds_mtime_ns;
	return 0;
}

/* parameters.json is the graph's: its change time is strictly
 * increasing (graph.h). */
static int version_parameters(struct flowfs *fs, const struct session_info *s,
			      int64_t version[4])
{
	(void)fs;
	version[0] = s->created_ns;
	version[1] = s->graph_mtime_ns;
	return 0;
}

static int render_engine_log(struct flowfs *fs, const struct session_info *s,
			     struct sbuf *out, int64_t *mtime_ns)
{
	int ret = run_render_log(fs->st, s->id, out, mtime_ns);

	if (!*mtime_ns)
		*mtime_ns = s->created_ns;
	return ret;
}

/* <session>/skill -> the bound skill under .flowfs/skills/, while there
 * is one: a copy of the session holds the link, not the package. */
static int render_skill_link(struct flowfs *fs, const struct session_info *s,
			     struct sbuf *out, int64_t *mtime_ns)
{
	const struct skill *sk;
	int ret = 0;

	*mtime_ns = s->doc_mtime_ns;
	sk = s->skill[0] ? skill_find(fs->skills, s->skill) : NULL;
	if (!sk)
		return -ENOENT;
	/* up to the root: one ../ more for each folder of a trash it is in */
	for (const char *p = s->name; !ret && p; p = strchr(p + 1, '/'))
		ret = sbuf_addstr(out, "../");
	return ret < 0 ? ret : sbuf_addf(out, ".flowfs/skills/%s", sk->id);
}

/* <session>/summary.json -> output/summary.json, while that exists. */
static int render_summary_link(struct flowfs *fs, const struct session_info *s,
			       struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;
	int ret;

	fs_binding_init(fs, s, &b);
	*mtime_ns = binding_mtime(&b.ctx);
	ret = binding_artifact_exists(&b.ctx, "summary.json");
	return ret < 0 ? ret : sbuf_addstr(out, "output/summary.json");
}

static int render_context(struct flowfs *fs, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns)
{
	return session_render_context(fs->st, s, out, mtime_ns);
}

static int commit_context(struct flowfs *fs, const struct session_info *s,
			  const char *text, size_t len, struct ferr *err)
{
	return session_commit_context(fs->st, s, text, len, err);
}

static int render_context_text(struct flowfs *fs, const struct session_info *s,
			       struct sbuf *out, int64_t *mtime_ns)
{
	return session_render_context_text(fs->st, s, out, mtime_ns);
}

static int render_manifest(struct flowfs *fs, const struct session_info *s,
			   struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;

	fs_binding_init(fs, s, &b);
	*mtime_ns = s->doc_mtime_ns;
	return binding_render_manifest(&b.ctx, out);
}

/* ---- ctl ----------------------------------------------------------------- */

static int run_infer_edges(struct flowfs *fs, const struct session_info *s,
			   struct ferr *err)
{
	struct sbuf report = SBUF_INIT;
	size_t added = 0;
	int ret = graph_infer_edges(fs->st, s->id, &added, &report);

	/* Pairs it had to skip are worth a line in status, not a failure. */
	for (char *line = report.buf, *nl; ret == 0 && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line) - 1;
		else
			*nl = '\0';
		fs_log(fs, s->id, s->name, "ctl", line);
	}
	if (ret < 0)
		ferr_set(err, ret, "infer-edges failed: %s", strerror(-ret));
	sbuf_release(&report);
	return ret;
}

static int command_run(struct flowfs *fs, const struct session_info *s,
		       struct ferr *err)
{
	return runs_start(&fs->runs, s, err);
}

/* `echo submit > ctl`: the whole graph checked, then run (jobs.h). */
static int command_submit(struct flowfs *fs, const struct session_info *s,
			  struct ferr *err)
{
	struct ferr tools_err = FERR_INIT;
	const struct graph_tools *tools = fs_tools(fs, &tools_err);

	return jobs_submit(fs->jobs, s, tools, tools_err.message, err);
}

size_t fs_cancel_runs(struct flowfs *fs, int64_t session)
{
	size_t cancelled = fs->jobs ? (size_t)jobs_cancel(fs->jobs, session)
				    : 0;

	return cancelled + runs_cancel(&fs->runs, session);
}

static int command_cancel(struct flowfs *fs, const struct session_info *s,
			  struct ferr *err)
{
	if (!fs_cancel_runs(fs, s->id))
		return ferr_set(err, -EINVAL, "no run or job graph is going on");
	return 0;
}

/*
 * fork NEW: a new session NEW with everything this one holds but its
 * runs and jobs (session_fork(): its large files shared, copied on the
 * first write to either side).
 */
static int command_fork(struct flowfs *fs, const struct session_info *s,
			const char *name, struct ferr *err)
{
	struct session_info made;
	char line[sizeof(s->name) + 64];
	int ret;

	if (s->trashed)
		return ferr_set(err, -EROFS, "a session in the trash cannot be"
				" forked (restore it first)");
	ret = session_fork(fs->st, fs->tree, s, name, &made, err);
	if (ret < 0)
		return ret;
	snprintf(line, sizeof(line), "forked to %s", name);
	fs_log(fs, s->id, s->name, "ctl", line);
	snprintf(line, sizeof(line), "forked from %s", s->name);
	fs_log(fs, made.id, made.name, "ctl", line);
	/* a lookup of the name may have left the kernel an absence */
	fs_notify_entry(fs->notifier, FS_ROOT_INO, name);
	return 0;
}

/* Whether a run or a job of the session goes on: -EBUSY with why. */
static int check_quiet(struct flowfs *fs, const struct session_info *s,
		       const char *what, struct ferr *err)
{
	bool running = false;
	int ret = session_running(fs->st, s->id, &running);

	if (!ret && running)
		return ferr_set(err, -EBUSY, "%s: a run goes on (echo cancel >"
				" ctl stops it)", what);
	if (!ret)
		ret = jobs_node_busy(fs->st, s->id, NULL, err);
	if (ret == -EBUSY)
		ferr_set(err, ret, "%s: a job of the graph goes on (echo"
			 " cancel > ctl stops it)", what);
	return ret;
}

/* snapshot LABEL: the session as it is now, read-only, at
 * .snapshots/LABEL/ (session_snapshot()). */
static int command_snapshot(struct flowfs *fs, const struct session_info *s,
			    const char *label, struct ferr *err)
{
	char line[FS_COMMAND_ARG_MAX + 64];
	int ret = session_snapshot(fs->st, fs->tree, s, label, err);

	if (ret < 0)
		return ret;
	snprintf(line, sizeof(line), "snapshot %s kept (.snapshots/%s)",
		 label, label);
	fs_log(fs, s->id, s->name, "ctl", line);
	return 0;
}

/* A command that changed names behind the kernel's back (a restore)
 * asks its caller to wait until the kernel was told, before it answers
 * (fs_command_settle()): one per request thread. */
static _Thread_local bool settle_wanted;

bool fs_command_settle(void)
{
	bool wanted = settle_wanted;

	settle_wanted = false;
	return wanted;
}

/* restore LABEL: the session becomes what the snapshot holds; what it
 * held is kept as a snapshot, named in the log. */
static int command_restore(struct flowfs *fs, const struct session_info *s,
			   const char *label, struct ferr *err)
{
	char kept[96], line[FS_COMMAND_ARG_MAX + 256];
	const char *leaf = strrchr(s->name, '/');
	struct session_info now;
	uint64_t parent = 0;
	int ret = check_quiet(fs, s, "cannot restore", err);

	if (!ret)
		ret = session_restore(fs->st, fs->tree, s, label, kept,
				      sizeof(kept), err);
	if (ret < 0)
		return ret;
	snprintf(line, sizeof(line), "restored snapshot %s; what it replaced"
		 " is kept as snapshot %s (.snapshots/%s)", label, kept, kept);
	fs_log(fs, s->id, s->name, "ctl", line);
	fs_cache_forget(&fs->cache, s->id);
	/* its folder is a new row: the kernel looks the name up again,
	 * and all below it, before the write that asked returns */
	settle_wanted = true;
	if (!s->trashed)
		fs_notify_entry(fs->notifier, FS_ROOT_INO, s->name);
	else if (leaf && session_get(fs->st, s->id, &now) == 0 &&
		 tree_parent(fs->tree, now.root_ino, &parent) == 0)
		fs_notify_entry(fs->notifier, parent, leaf + 1);
	return 0;
}

const struct fs_command fs_commands[] = {
	{ "infer-edges", run_infer_edges, NULL },
	{ "run", command_run, NULL },
	{ "cancel", command_cancel, NULL },
	{ "submit", command_submit, NULL },
	{ "fork", NULL, command_fork },
	{ "snapshot", NULL, command_snapshot },
	{ "restore", NULL, command_restore },
	{ NULL, NULL, NULL },
};

/* `line` (of `len` bytes) is `c`'s name and its argument: run it. */
static int run_with_arg(struct flowfs *fs, const struct session_info *s,
			const struct fs_command *c, const char *line,
			size_t len, struct ferr *err)
{
	char arg[FS_COMMAND_ARG_MAX + 1];
	size_t n = strlen(c->name);

	line += n;
	len -= n;
	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (!len)
		return ferr_set(err, -EINVAL, "%s takes a name: \"%s NAME\"",
				c->name, c->name);
	if (len > FS_COMMAND_ARG_MAX || memchr(line, '\0', len))
		return ferr_set(err, -EINVAL, "%s: the name is longer than %d"
				" bytes or holds a NUL", c->name,
				FS_COMMAND_ARG_MAX);
	memcpy(arg, line, len);
	arg[len] = '\0';
	return c->run_arg(fs, s, arg, err);
}

int fs_run_command(struct flowfs *fs, const struct session_info *s,
		   const char *line, size_t len, struct ferr *err)
{
	struct sbuf names = SBUF_INIT;
	int ret;

	while (len && (line[len - 1] == '\n' || line[len - 1] == ' ' ||
		       line[len - 1] == '\t' || line[len - 1] == '\r'))
		len--;
	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (!len)
		return 0;	/* an empty line asks for nothing */
	for (const struct fs_command *c = fs_commands; c->name; c++) {
		size_t n = strlen(c->name);

		if (len < n || memcmp(c->name, line, n))
			continue;
		if (c->run_arg && (len == n || line[n] == ' ' ||
				   line[n] == '\t'))
			return run_with_arg(fs, s, c, line, len, err);
		if (c->run && len == n)
			return c->run(fs, s, err);
	}
	for (const struct fs_command *c = fs_commands; c->name; c++)
		sbuf_addf(&names, "%s%s", c == fs_commands ? "" : ", ", c->name);
	ret = ferr_set(err, -EINVAL, "unknown command \"%.*s\" (ctl takes: %s)",
		       (int)(len > 64 ? 64 : len), line, names.buf);
	sbuf_release(&names);
	return ret;
}

/* ---- the tool map ------------------------------------------------------------ */

const struct graph_tools *fs_tools(struct flowfs *fs, struct ferr *err)
{
	struct ferr why = FERR_INIT;
	bool fresh_error;
	const struct graph_tools *tools =
		graph_toolfile_get(&fs->toolfile, &why, &fresh_error);

	/* said once per change of the file, in .flowfs/log (and on stderr
	 * or syslog): the map is used as empty until mended */
	if (fresh_error)
		fs_log(fs, 0, "", fs->toolfile.path, why.message);
	if (err)
		*err = why;
	return tools;
}

void fs_alone_init(struct flowfs *fs, struct store *st,
		   const struct session_info *s, struct fs_alone *a)
{
	*a = (struct fs_alone){ .st = st, .s = s,
				.tools_path = fs->tools_path,
				.work_dir = fs->jobs_opt.work_dir };
	a->tools = fs_tools(fs, &a->tools_err);
	a->tools_mtime_ns = fs->toolfile.mtime_ns;
}

/* ---- the job graph for Argo and Slurm (gexport.h) --------------------------- */

/* An export is the graph's and the tool map's, and costly for a big
 * graph (a second for 10,000 nodes): kept by these, rendered outside
 * `lock`. */
static int version_export(struct flowfs *fs, const struct session_info *s,
			  int64_t version[4])
{
	fs_tools(fs, NULL);
	version[0] = s->graph_mtime_ns ? s->graph_mtime_ns : s->created_ns;
	version[1] = fs->toolfile.mtime_ns;
	return 0;
}

static int render_export(const struct fs_alone *a, enum gexport_kind kind,
			 struct sbuf *out, int64_t *mtime_ns)
{
	const struct session_info *s = a->s;
	struct gexport_source src = {
		.graph = { .session = s->id, .tools = a->tools,
			   .tools_error = a->tools_err.message },
		.session_name = s->name, .work_dir = a->work_dir,
		.tools_path = a->tools_path,
	};

	*mtime_ns = later(later(s->graph_mtime_ns, s->created_ns),
			  a->tools_mtime_ns);
	return gexport_file(a->st, kind, &src, out);
}

static int render_argo_alone(const struct fs_alone *a, struct sbuf *out,
			     int64_t *mtime_ns)
{
	return render_export(a, GEXPORT_ARGO, out, mtime_ns);
}

static int render_slurm_alone(const struct fs_alone *a, struct sbuf *out,
			      int64_t *mtime_ns)
{
	return render_export(a, GEXPORT_SLURM, out, mtime_ns);
}

static int render_argo(struct flowfs *fs, const struct session_info *s,
		       struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_alone a;

	fs_alone_init(fs, fs->st, s, &a);
	return render_argo_alone(&a, out, mtime_ns);
}

static int render_submit_slurm(struct flowfs *fs, const struct session_info *s,
			       struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_alone a;

	fs_alone_init(fs, fs->st, s, &a);
	return render_slurm_alone(&a, out, mtime_ns);
}

/* ---- pictures: the job graph (picture.h) ------------------------------------ */

static int64_t graph_stamp(const struct session_info *s)
{
	return s->graph_mtime_ns ? s->graph_mtime_ns : s->created_ns;
}

/* The graph's and its jobs' states: a query of the run, under `lock`
 * for a lookup; in the render's transaction for a render (version_alone). */
static int version_picture(struct flowfs *fs, const struct session_info *s,
			   int64_t version[4])
{
	return picture_version(fs->st, s->id, graph_stamp(s), version);
}

static int version_picture_alone(const struct fs_alone *a, int64_t version[4])
{
	return picture_version(a->st, a->s->id, graph_stamp(a->s), version);
}

static int render_picture_alone(const struct fs_alone *a,
				enum picture_format f, struct sbuf *out,
				int64_t *mtime_ns)
{
	json_t *report = NULL;
	int64_t jobs_ns = 0;
	int ret = jobs_report(a->st, a->s->id, &report, &jobs_ns);

	/* its jobs' states are drawn too: the later of both changes */
	json_decref(report);
	*mtime_ns = later(graph_stamp(a->s), jobs_ns);
	return ret < 0 ? ret : picture_render(a->st, a->s->id, f, out);
}

static int render_svg_alone(const struct fs_alone *a, struct sbuf *out,
			    int64_t *mtime_ns)
{
	return render_picture_alone(a, PICTURE_SVG, out, mtime_ns);
}

static int render_dot_alone(const struct fs_alone *a, struct sbuf *out,
			    int64_t *mtime_ns)
{
	return render_picture_alone(a, PICTURE_DOT, out, mtime_ns);
}

static int render_graph_svg(struct flowfs *fs, const struct session_info *s,
			    struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_alone a;

	fs_alone_init(fs, fs->st, s, &a);
	return render_svg_alone(&a, out, mtime_ns);
}

static int render_graph_dot(struct flowfs *fs, const struct session_info *s,
			    struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_alone a;

	fs_alone_init(fs, fs->st, s, &a);
	return render_dot_alone(&a, out, mtime_ns);
}

/* ---- DATCOM's results (datcomrun.h) ------------------------------------------ */

enum datcom_file { DATCOM_PRINTOUT, DATCOM_CSV, DATCOM_SVG };

/* The session's deck as output/for005.dat shows it; -ENOENT: none now
 * (or no --datcom): no results then either. */
static int datcom_deck(struct flowfs *fs, const struct session_info *s,
		       struct sbuf *deck, int64_t *mtime_ns)
{
	struct fs_binding b;
	int ret;

	if (!fs->datcom)
		return -ENOENT;
	fs_binding_init(fs, s, &b);
	if (!binding_has_artifact(&b.ctx, "for005.dat"))
		return -ENOENT;
	ret = binding_render_artifact(&b.ctx, "for005.dat", deck);
	if (!ret && mtime_ns)
		*mtime_ns = binding_mtime(&b.ctx);
	return ret;
}

/* The deck's hash and whether a result is kept for it (its serial): a
 * render while none was gives way to the one after. */
static int version_datcom(struct flowfs *fs, const struct session_info *s,
			  int64_t version[4])
{
	struct sbuf deck = SBUF_INIT;
	struct datcomrun_result *res;
	int ret = datcom_deck(fs, s, &deck, NULL);

	if (!ret) {
		datcomrun_hash(deck.buf, deck.len, version);
		res = datcomrun_peek(fs->datcom, deck.buf, deck.len, NULL);
		version[2] = res ? (int64_t)res->serial : 0;
		datcomrun_put(fs->datcom, res);
	}
	sbuf_release(&deck);
	return ret;
}

/* What a file shows while DATCOM's result cannot be had now: a line or
 * two, under FS_RENDERED_MIN, so the render cache never keeps it (its
 * version, kept with no result, would serve it again). */
static int datcom_busy(enum datcom_file which, const char *why,
		       struct sbuf *out)
{
	if (which == DATCOM_SVG)
		return printout_message_svg("No plot yet", why, out);
	return sbuf_addf(out, "flowfs: %s\n", why);
}

/*
 * A file of DATCOM's result for the session's deck, run now when none is
 * kept: by a reader, outside `lock` (let go of and taken back, as a
 * render alone is: content.c), so that no other request waits for
 * DATCOM; a writer, which may not let go, shows that it has not run.
 */
static int render_datcom(struct flowfs *fs, const struct session_info *s,
			 enum datcom_file which, struct sbuf *out,
			 int64_t *mtime_ns)
{
	struct sbuf deck = SBUF_INIT;
	struct datcomrun_result *res;
	const struct sbuf *part;
	bool fresh = false;
	int ret = datcom_deck(fs, s, &deck, mtime_ns);

	if (ret < 0)
		goto out;
	res = datcomrun_peek(fs->datcom, deck.buf, deck.len, NULL);
	if (!res && fs_holds_write(fs)) {
		ret = datcom_busy(which, "DATCOM has not run on this deck yet:"
				  " read this file to run it", out);
		goto out;
	}
	if (!res) {
		fs_unlock(fs);
		ret = datcomrun_get(fs->datcom, deck.buf, deck.len, &res,
				    &fresh);
		fs_lock_read(fs);
	}
	if (ret == -EAGAIN) {
		ret = datcom_busy(which, "DATCOM is busy with other decks"
				  " (at most 2 at once): read this file again"
				  " in a moment", out);
		goto out;
	}
	if (ret < 0)
		goto out;
	/* once per run, in the log of the session that ran it */
	if (fresh) {
		char line[700];

		if (res->ok)
			snprintf(line, sizeof(line), "DATCOM ran on the deck in"
				 " %.1f s", (double)res->seconds_ms / 1000);
		else
			snprintf(line, sizeof(line), "%s", res->why);
		fs_log(fs, s->id, s->name, "output/for006.dat", line);
	}
	part = which == DATCOM_PRINTOUT ? &res->printout
	       : which == DATCOM_CSV ? &res->csv : &res->svg;
	ret = sbuf_add(out, part->buf, part->len);
	datcomrun_put(fs->datcom, res);
out:
	sbuf_release(&deck);
	return ret;
}

static int render_for006(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	return render_datcom(fs, s, DATCOM_PRINTOUT, out, mtime_ns);
}

static int render_coefficients_csv(struct flowfs *fs,
				   const struct session_info *s,
				   struct sbuf *out, int64_t *mtime_ns)
{
	return render_datcom(fs, s, DATCOM_CSV, out, mtime_ns);
}

static int render_coefficients_svg(struct flowfs *fs,
				   const struct session_info *s,
				   struct sbuf *out, int64_t *mtime_ns)
{
	return render_datcom(fs, s, DATCOM_SVG, out, mtime_ns);
}

/*
 * Designated fields: a row names only what it has.  What a session shows
 * is writable by its owner, generated files too (what is written to them
 * is dropped: ops.c), so that a copy of a session can be copied back and
 * its owner can rm -rf it; .flowfs/ is read-only.
 */
#define FOLDER(n, f) { .name = n, .scope = SCOPE_SESSION, \
	.kind = ENTRY_FOLDER, .mode = S_IFDIR | 0755, .folder = f }
#define GENERATED(n, sc, fn) { .name = n, .scope = sc, \
	.kind = ENTRY_GENERATED, .mode = S_IFREG | 0644, .render = fn }
#define READ_ONLY(n, fn) { .name = n, .scope = SCOPE_DOTDIR, \
	.kind = ENTRY_GENERATED, .mode = S_IFREG | 0444, .render = fn }
#define VERSIONED(n, sc, fn, vfn) { .name = n, .scope = sc, \
	.kind = ENTRY_GENERATED, .mode = S_IFREG | 0644, .render = fn, \
	.version = vfn }
#define DOC(n, rfn, cfn, empty) { .name = n, .scope = SCOPE_SESSION, \
	.kind = ENTRY_DOC, .mode = S_IFREG | 0644, .render = rfn, \
	.commit = cfn, .cleared = empty }
#define DIR(n, sc, k, m, h) { .name = n, .scope = sc, .kind = k, \
	.mode = S_IFDIR | m, .holds = h }
#define EXPORT(n, fn, afn) { .name = n, .scope = SCOPE_OUTPUT, \
	.kind = ENTRY_GENERATED, .mode = S_IFREG | 0644, .render = fn, \
	.render_alone = afn, .version = version_export }
/* laid out outside `lock`; the version read with it (job states) */
#define PICTURE(n, fn, afn) { .name = n, .scope = SCOPE_OUTPUT, \
	.kind = ENTRY_GENERATED, .mode = S_IFREG | 0644, .render = fn, \
	.render_alone = afn, .version = version_picture, \
	.version_alone = version_picture_alone, .keep_small = true }
#define LINK(n, fn) { .name = n, .scope = SCOPE_SESSION, .kind = ENTRY_LINK, \
	.mode = S_IFLNK | 0777, .render = fn }

const struct entry fs_entries[] = {
	/* row 0 is never used: an entry inode is never FS_VIRTUAL alone */
	{ .name = NULL },
	DIR(".flowfs", SCOPE_ROOT, ENTRY_DIR, 0555, SCOPE_DOTDIR),
	READ_ONLY("version", render_version),
	READ_ONLY("config", render_config),
	DIR("skills", SCOPE_DOTDIR, ENTRY_CATALOG, 0555, 0),
	DOC("session.json", render_session_json, commit_session_json, "{}"),
	DOC("request.json", render_request, commit_request, "{}"),
	GENERATED("input.json", SCOPE_SESSION, render_input),
	GENERATED("parameter.json", SCOPE_SESSION, render_parameter),
	GENERATED("prompt.txt", SCOPE_SESSION, render_prompt),
	{ .name = "status", .scope = SCOPE_SESSION, .kind = ENTRY_GENERATED,
	  .mode = S_IFREG | 0644, .render = render_status,
	  .version = version_status, .keep_small = true },
	LINK("skill", render_skill_link),
	FOLDER("uploads", SESSION_UPLOADS),
	FOLDER("output", SESSION_OUTPUT),
	GENERATED(".manifest.json", SCOPE_OUTPUT, render_manifest),
	GENERATED("for005.dat", SCOPE_OUTPUT, render_for005),
	VERSIONED("summary.json", SCOPE_OUTPUT, render_summary,
		  version_transcript),
	VERSIONED("summary_readable.txt", SCOPE_OUTPUT,
		  render_summary_readable, version_transcript),
	FOLDER("nodes", SESSION_NODES),
	FOLDER("edges", SESSION_EDGES),
	{ .name = "parameters.json", .scope = SCOPE_SESSION, .kind = ENTRY_DOC,
	  .mode = S_IFREG | 0644, .render = render_parameters,
	  .render_alone = render_parameters_alone,
	  /* a 10,000-node graph is half a second's work: not in `lock` */
	  .commit_alone = graph_commit_parameters,
	  .version = version_parameters,
	  .cleared = "{\"nodes\": [], \"edges\": [], \"meta\": {}}" },
	DIR("parameters_output", SCOPE_SESSION, ENTRY_DIR, 0755, SCOPE_PARAMOUT),
	{ .scope = SCOPE_PARAMOUT, .kind = ENTRY_GENERATED,
	  .mode = S_IFREG | 0644, .name_fn = name_parameters_output,
	  .render = render_parameters,
	  .render_alone = render_parameters_alone,
	  .version = version_parameters },
	/* readable (as empty) so that copying a session out copies it */
	{ .name = "ctl", .scope = SCOPE_SESSION, .kind = ENTRY_CONTROL,
	  .mode = S_IFREG | 0600 },
	DOC("context.json", render_context, commit_context, "null"),
	GENERATED("context.txt", SCOPE_SESSION, render_context_text),
	FOLDER("rounds", SESSION_ROUNDS),
	LINK("summary.json", render_summary_link),
	GENERATED("engine.log", SCOPE_SESSION, render_engine_log),
	/* new rows go last: a row's number is part of its inode numbers */
	READ_ONLY("log", render_log),
	{ .name = "status.json", .scope = SCOPE_SESSION,
	  .kind = ENTRY_GENERATED, .mode = S_IFREG | 0644,
	  .render = render_status_json, .version = version_status,
	  .keep_small = true },
	GENERATED("log", SCOPE_SESSION, render_log),
	FOLDER("jobs", SESSION_JOBS),
	EXPORT("workflow.argo.yaml", render_argo, render_argo_alone),
	EXPORT("submit.slurm.sh", render_submit_slurm, render_slurm_alone),
	/* a session's snapshots (like ZFS's .zfs: hidden, reached by name);
	 * writable by the owner, for the kernel lets rmdir remove one only
	 * then (nothing is made in it: EROFS) */
	{ .name = ".snapshots", .scope = SCOPE_SESSION,
	  .kind = ENTRY_SNAPSHOTS, .mode = S_IFDIR | 0755, .hidden = true },
	PICTURE("graph.svg", render_graph_svg, render_svg_alone),
	PICTURE("graph.dot", render_graph_dot, render_dot_alone),
	VERSIONED("for006.dat", SCOPE_OUTPUT, render_for006, version_datcom),
	VERSIONED("coefficients.csv", SCOPE_OUTPUT, render_coefficients_csv,
		  version_datcom),
	VERSIONED("coefficients.svg", SCOPE_OUTPUT, render_coefficients_svg,
		  version_datcom),
};

const unsigned fs_entry_count = sizeof(fs_entries) / sizeof(fs_entries[0]);

const char *fs_scope_folder(enum entry_scope scope)
{
	return scope == SCOPE_OUTPUT	 ? "output/"
	       : scope == SCOPE_PARAMOUT ? "parameters_output/"
					 : "";
}

const char *fs_entry_name(struct flowfs *fs, const struct session_info *s,
			  unsigned row, struct sbuf *buf)
{
	const struct entry *e = &fs_entries[row];

	if (!e->name_fn)
		return e->name;
	sbuf_reset(buf);
	if (!s || e->name_fn(fs, s, buf) < 0)
		return NULL;
	return buf->buf;
}

int fs_entry_find(struct flowfs *fs, const struct session_info *s,
		  enum entry_scope scope, const char *name)
{
	struct sbuf buf = SBUF_INIT;
	int found = -1;

	for (unsigned i = 1; found < 0 && i < fs_entry_count; i++) {
		const char *n;

		if (fs_entries[i].scope != scope)
			continue;
		n = fs_entry_name(fs, s, i, &buf);
		if (n && !strcmp(n, name))
			found = (int)i;
	}
	sbuf_release(&buf);
	return found;
}
