/*
 * run: engine runs in a thread per session; see run.h.
 */
#include "run.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "binding.h"
#include "fjson.h"
#include "rounds.h"
#include "roundstore.h"
#include "schema.h"

/* Tool-call turns of one conversation before a run gives up. */
#define MAX_TURNS 12
/* Answers a refused set_parameters (or a round without its tags) gets. */
#define MAX_RETRIES 3

enum flow { FLOW_ANY, FLOW_DATCOM, FLOW_ROUNDS, FLOW_FETCH };

struct run {
	pthread_t thread;
	const struct run_host *host;
	const struct run_options *opt;
	int64_t session;
	enum flow flow;
	atomic_bool cancel;
	atomic_bool finished;
	/* a copy of what the run reads, taken at start */
	char *skill_id;
	char *system;		/* SKILL.md */
	char *prompt;		/* prompt.txt */
	char *description;	/* datcom, scientific-workflow */
	char *io;		/* scientific-workflow */
	long max_rounds;
	json_t *manifest;	/* inputs_manifest() */
	json_t *output_schema;
	json_t *parameter_schema;
	uint64_t output_ino, uploads_ino;
	/* a fetch: request.json's input `key` from `url` to uploads/<name> */
	char *key, *url, *name;
	int64_t reported_ms;
};

/* ---- the state in the store ------------------------------------------- */

static void lock(const struct run *r)
{
	r->host->lock(r->host->ctx);
}

static void unlock(const struct run *r)
{
	r->host->unlock(r->host->ctx);
}

static int set_state(struct store *st, int64_t session, const char *state,
		     const char *message)
{
	static const char sql[] = "UPDATE sessions SET run_state = ?2,"
		" run_message = ?3, run_ns = ?4 WHERE id = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int ret;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_text(q, 2, state, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, message, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, store_now_ns());
	ret = store_errno(sqlite3_step(q));
	store_done(q);
	return ret;
}

/* What the run does now, for status (takes the lock). */
static void progress(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void progress(struct run *r, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lock(r);
	set_state(r->host->st, r->session, "running", msg);
	unlock(r);
}

int run_status_line(struct store *st, int64_t session, struct sbuf *out)
{
	static const char sql[] = "SELECT run_state, coalesce(run_message, '')"
		" FROM sessions WHERE id = ?1 AND run_state IS NOT NULL";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *msg = (const char *)sqlite3_column_text(q, 1);

		ret = sbuf_addf(out, "run: %s%s%s\n",
				(const char *)sqlite3_column_text(q, 0),
				*msg ? ": " : "", msg);
	} else {
		ret = store_errno(rc);
	}
	store_done(q);
	return ret;
}

int run_recover(struct store *st)
{
	static const char runs_sql[] = "UPDATE sessions SET run_state = 'failed',"
		" run_message = 'flowfs stopped during the run'"
		" WHERE run_state = 'running'";
	static const char fetches_sql[] = "UPDATE fetches SET state = 'failed',"
		" message = 'flowfs stopped during the fetch'"
		" WHERE state = 'fetching'";
	int ret = 0;

	for (int i = 0; !ret && i < 2; i++) {
		sqlite3_stmt *q = store_stmt(st, i ? fetches_sql : runs_sql);

		if (!q)
			return -EIO;
		ret = store_errno(sqlite3_step(q));
		store_done(q);
	}
	return ret;
}

int run_render_log(struct store *st, int64_t session, struct sbuf *out,
		   int64_t *mtime_ns)
{
	static const char sql[] = "SELECT line, time_ns FROM engine_log"
		" WHERE session = ?1 ORDER BY id";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	*mtime_ns = 0;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		ret = sbuf_add(out, sqlite3_column_text(q, 0),
			       (size_t)sqlite3_column_bytes(q, 0));
		if (!ret)
			ret = sbuf_addch(out, '\n');
		*mtime_ns = sqlite3_column_int64(q, 1);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	store_done(q);
	return ret;
}

/* engine.h's audit hook: one line of engine.log. */
static void audit(void *ctx, const json_t *record)
{
	static const char sql[] = "INSERT INTO engine_log(session, time_ns, line)"
		" VALUES (?1, ?2, ?3)";
	struct run *r = ctx;
	char *line = json_dumps(record, JSON_COMPACT);
	sqlite3_stmt *q;

	if (!line)
		return;
	lock(r);
	q = store_stmt(r->host->st, sql);
	if (q) {
		sqlite3_bind_int64(q, 1, r->session);
		sqlite3_bind_int64(q, 2, store_now_ns());
		sqlite3_bind_text(q, 3, line, -1, SQLITE_STATIC);
		sqlite3_step(q);
		store_done(q);
	}
	unlock(r);
	free(line);
}

static bool cancelled(void *ctx)
{
	struct run *r = ctx;

	return atomic_load(&r->cancel);
}

/* ---- what the run writes ------------------------------------------------ */

/* output/<name> = data (the lock taken here). */
static int put_output(struct run *r, const char *name, const char *data,
		      size_t len)
{
	int ret;

	lock(r);
	ret = tree_put_file(r->host->tree, r->output_ino, name, data, len, NULL);
	unlock(r);
	return ret;
}

/* Whether the manifest declares `name` (a pattern may hold wildcards). */
static bool declared(const json_t *manifest, const char *name)
{
	size_t i;
	json_t *a;

	if (!*name || *name == '.' || strchr(name, '/') || strlen(name) > 200)
		return false;
	json_array_foreach(manifest, i, a) {
		const char *p = json_string_value(json_object_get(a, "pattern"));

		if (p && fnmatch(p, name, FNM_PERIOD) == 0)
			return true;
	}
	return false;
}

static json_t *function_tool(const char *name, const char *description,
			     json_t *parameters)
{
	return json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function",
			 "function", "name", name, "description", description,
			 "parameters", parameters);
}

static json_t *write_artifact_tool(const json_t *manifest)
{
	json_t *names = json_array();
	size_t i;
	json_t *a;

	json_array_foreach(manifest, i, a)
		json_array_append(names, json_object_get(a, "pattern"));
	return function_tool("write_artifact",
		"Write one of the skill's artifacts (a file of output/)",
		json_pack("{s:s, s:{s:{s:s, s:s, s:o}, s:{s:s}}, s:[s,s]}",
			  "type", "object", "properties", "name", "type",
			  "string", "description",
			  "The artifact's file name; one of the declared names",
			  "examples", names, "content", "type", "string",
			  "required", "name", "content"));
}

static json_t *message(const char *role, const char *content)
{
	return json_pack("{s:s, s:s}", "role", role, "content", content);
}

static json_t *tool_message(const json_t *call, const char *content)
{
	return json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
			 json_string_value(json_object_get(call, "id")),
			 "content", content);
}

/* ---- any skill ----------------------------------------------------------- */

/* One write_artifact call: the answer for the engine in `answer`. */
static void write_artifact(struct run *r, const json_t *call, json_t *written,
			   struct sbuf *answer)
{
	const json_t *args = json_object_get(call, "arguments");
	const char *name = json_string_value(json_object_get(args, "name"));
	const json_t *content = json_object_get(args, "content");
	int ret;

	if (!json_is_object(args) || !name || !json_is_string(content)) {
		sbuf_addstr(answer, "refused: write_artifact takes"
			    " {\"name\": string, \"content\": string}");
		return;
	}
	if (!declared(r->manifest, name)) {
		sbuf_addf(answer, "refused: %s is not an artifact of this"
			  " skill", name);
		return;
	}
	ret = put_output(r, name, json_string_value(content),
			 json_string_length(content));
	if (ret < 0) {
		sbuf_addf(answer, "failed: %s", strerror(-ret));
		return;
	}
	sbuf_addf(answer, "written: output/%s (%zu bytes)", name,
		  json_string_length(content));
	json_array_append_new(written, json_string(name));
}

/* output/result.json for the last reply (see run.h). */
static int write_result(struct run *r, const char *reply, json_t *written)
{
	json_t *data = NULL, *warnings = json_array(), *result;
	struct ferr err = FERR_INIT;
	char msg[FERR_MESSAGE_MAX + 64];
	struct sbuf text = SBUF_INIT;
	size_t i;
	json_t *a;
	int ret;

	ret = engine_extract_json(reply, &data, &err);
	if (!ret && schema_validate(r->output_schema, NULL, data, "", 0,
				    &err) < 0)
		json_array_append_new(warnings, json_sprintf("%s%s%s",
			err.path, err.path[0] ? ": " : "", err.message));
	json_array_foreach(r->manifest, i, a) {
		const char *p = json_string_value(json_object_get(a, "pattern"));
		bool found = false;
		size_t j;
		json_t *w;

		json_array_foreach(written, j, w)
			found |= fnmatch(p, json_string_value(w), 0) == 0;
		if (!found && json_is_true(json_object_get(a, "required")))
			json_array_append_new(warnings, json_sprintf(
				"required artifact %s was not written", p));
	}
	result = json_pack("{s:s, s:o, s:O, s:o, s:s?}", "status",
			   ret ? "failed" : "success", "data",
			   data ? data : json_null(), "artifacts", written,
			   "validation_warnings", warnings, "error",
			   ret ? ferr_format(&err, msg, sizeof(msg)) : NULL);
	if (!result)
		return -ENOMEM;
	ret = fjson_dump(&text, result);
	if (!ret)
		ret = put_output(r, "result.json", text.buf, text.len);
	json_decref(result);
	sbuf_release(&text);
	return ret;
}

static int flow_any(struct run *r, const struct engine_hooks *hooks,
		    struct ferr *err)
{
	json_t *messages = json_pack("[o, o]", message("system", r->system),
				     message("user", r->prompt));
	json_t *tools = json_array(), *written = json_array();
	struct engine_reply reply = { 0 };
	int ret = -ENOMEM;

	if (!messages || !tools || !written)
		goto out;
	if (json_array_size(r->manifest))
		json_array_append_new(tools, write_artifact_tool(r->manifest));
	for (int turn = 1;; turn++) {
		size_t i;
		json_t *call;

		progress(r, "waiting for the engine (turn %d)", turn);
		ret = engine_chat(&r->opt->engine, hooks, "run", messages, tools,
				  &reply, err);
		if (ret < 0)
			goto out;
		if (!json_array_size(reply.tool_calls))
			break;
		if (turn == MAX_TURNS) {
			ret = ferr_set(err, -EPROTO, "the engine still called"
				       " tools after %d turns", MAX_TURNS);
			goto out;
		}
		json_array_append(messages, reply.message);
		json_array_foreach(reply.tool_calls, i, call) {
			struct sbuf answer = SBUF_INIT;
			const char *name = json_string_value(
				json_object_get(call, "name"));

			if (!strcmp(name, "write_artifact"))
				write_artifact(r, call, written, &answer);
			else
				sbuf_addf(&answer, "refused: there is no tool"
					  " %s", name);
			json_array_append_new(messages,
					      tool_message(call, answer.buf));
			sbuf_release(&answer);
		}
		engine_reply_release(&reply);
	}
	ret = put_output(r, "response.md", reply.content, strlen(reply.content));
	if (!ret && r->output_schema)
		ret = write_result(r, reply.content, written);
	if (ret < 0 && !err->message[0])
		ferr_set(err, ret, "cannot write output/: %s", strerror(-ret));
out:
	engine_reply_release(&reply);
	json_decref(messages);
	json_decref(tools);
	json_decref(written);
	return ret;
}

/* ---- datcom --------------------------------------------------------------- */

/* Whether `args` with the schema's defaults is a whole valid set. */
static int complete_parameters(const struct run *r, const struct skill *sk,
			       const json_t *args, struct ferr *err)
{
	json_t *params = json_deep_copy(args), *request;
	int ret;

	if (!params)
		return -ENOMEM;
	ret = schema_apply_defaults(r->parameter_schema, NULL, params);
	if (!ret)
		ret = schema_validate(r->parameter_schema, NULL, params,
				      "parameter", 0, err);
	request = ret ? NULL : json_pack("{s:O}", "parameter", params);
	if (!ret)
		ret = request ? binding_check_request(sk, request, err) : -ENOMEM;
	json_decref(request);
	json_decref(params);
	return ret;
}

/*
 * The parameters of a set_parameters call, made the session's when they
 * pass; otherwise the reason in `answer` for the engine.
 */
static int set_parameters(struct run *r, const json_t *args,
			  struct sbuf *answer)
{
	struct ferr err = FERR_INIT;
	char msg[FERR_MESSAGE_MAX + 64];
	struct session_info s;
	const struct skill *sk;
	json_t *request = NULL, *doc = NULL;
	struct sbuf text = SBUF_INIT;
	int ret;

	if (!json_is_object(args)) {
		ret = sbuf_addstr(answer, "refused: the arguments must be a"
				  " JSON object of parameters");
		return ret < 0 ? ret : 1;
	}
	lock(r);
	ret = session_get(r->host->st, r->session, &s);
	sk = ret ? NULL : skill_find(r->host->skills, r->skill_id);
	if (!ret && !sk)
		ret = ferr_set(&err, -ENOENT, "skill %s is gone", r->skill_id);
	if (!ret)
		ret = session_load_request(r->host->st, &s, &request);
	/* complete and valid, not just acceptable as a request: the run
	 * exists to make output/for005.dat */
	if (!ret)
		ret = complete_parameters(r, sk, args, &err);
	if (!ret) {
		const json_t *input = json_object_get(request, "input");

		doc = json_pack("{s:O, s:O}", "input",
				input ? input : json_object(), "parameter", args);
		ret = doc ? fjson_dump(&text, doc) : -ENOMEM;
	}
	if (!ret)
		ret = session_commit_request(r->host->st, &s, sk,
					     binding_check_request, text.buf,
					     text.len, &err);
	unlock(r);
	json_decref(request);
	json_decref(doc);
	sbuf_release(&text);
	if (ret == -EINVAL) {
		sbuf_addf(answer, "refused: %s; call set_parameters again with"
			  " this corrected", ferr_format(&err, msg, sizeof(msg)));
		return 1;
	}
	if (ret < 0)
		return ret;
	sbuf_addstr(answer, "accepted");
	return 0;
}

static int flow_datcom(struct run *r, const struct engine_hooks *hooks,
		       struct ferr *err)
{
	struct sbuf user = SBUF_INIT;
	json_t *messages = NULL, *tools = NULL;
	struct engine_reply reply = { 0 };
	int refusals = 0, ret = -ENOMEM;

	if (sbuf_addf(&user, "Turn the aircraft described below into the"
		      " parameters of a Digital DATCOM deck. Call the tool"
		      " set_parameters once, with every parameter; use the"
		      " units and limits its schema gives.\n\n%s",
		      r->description) < 0)
		goto out;
	messages = json_pack("[o, o]", message("system", r->system),
			     message("user", user.buf));
	tools = json_pack("[o]", function_tool("set_parameters",
		"Set the DATCOM parameters of the session (all of them at once)",
		json_deep_copy(r->parameter_schema)));
	if (!messages || !tools)
		goto out;
	for (int turn = 1;; turn++) {
		json_t *call = NULL, *c;
		struct sbuf answer = SBUF_INIT;
		size_t i;

		progress(r, "waiting for the engine (turn %d)", turn);
		ret = engine_chat(&r->opt->engine, hooks, "parameters",
				  messages, tools, &reply, err);
		if (ret < 0)
			goto out;
		json_array_append(messages, reply.message);
		json_array_foreach(reply.tool_calls, i, c)
			if (!call && !strcmp(json_string_value(json_object_get(
						     c, "name")), "set_parameters"))
				call = c;
		if (!call) {
			ret = ++refusals > MAX_RETRIES ? -EPROTO : 1;
			if (ret < 0) {
				ferr_set(err, -EPROTO, "the engine did not call"
					 " set_parameters");
				goto out;
			}
			json_array_append_new(messages, message("user",
				"Call the tool set_parameters with the"
				" parameters."));
			engine_reply_release(&reply);
			continue;
		}
		if (json_object_get(call, "error") &&
		    !json_is_null(json_object_get(call, "error"))) {
			sbuf_addf(&answer, "refused: the arguments are not JSON"
				  " (%s)", json_string_value(json_object_get(
						   call, "error")));
			ret = 1;
		} else {
			ret = set_parameters(r, json_object_get(call, "arguments"),
					     &answer);
		}
		/* every call of the turn gets an answer */
		json_array_foreach(reply.tool_calls, i, c)
			json_array_append_new(messages, tool_message(c,
				c == call ? answer.buf
					  : "ignored: one set_parameters call is enough"));
		if (ret == 1 && ++refusals > MAX_RETRIES)
			ret = ferr_set(err, -EINVAL, "the engine's parameters"
				       " were refused %d times; the last time:"
				       " %s", refusals, answer.buf + 9);
		sbuf_release(&answer);
		engine_reply_release(&reply);
		if (ret != 1)
			break;
	}
out:
	engine_reply_release(&reply);
	json_decref(messages);
	json_decref(tools);
	sbuf_release(&user);
	return ret;
}

/* ---- scientific-workflow -------------------------------------------------- */

json_t *run_parse_tags(const char *reply)
{
	json_t *round = json_object();
	const char *const *tag;

	for (tag = rounds_tags; round && *tag; tag++) {
		char open[32], close[32];
		const char *start, *end;
		json_t *text;
		size_t len;

		/* the tag's name as the transcript writes it: capitalized */
		snprintf(open, sizeof(open), "<%c%s>", **tag - 32, *tag + 1);
		snprintf(close, sizeof(close), "</%c%s>", **tag - 32, *tag + 1);
		start = strstr(reply, open);
		end = start ? strstr(start, close) : NULL;
		if (!end)
			continue;
		start += strlen(open);
		while (start < end && strchr(" \t\r\n", *start))
			start++;
		len = (size_t)(end - start);
		while (len && strchr(" \t\r\n", start[len - 1]))
			len--;
		/* code in a fence inside <Experiment>: the code */
		if (!strcmp(*tag, "experiment") && len > 6 &&
		    !strncmp(start, "```", 3) && !strncmp(start + len - 3, "```", 3)) {
			const char *nl = memchr(start, '\n', len);

			if (nl) {
				len -= (size_t)(nl + 1 - start) + 3;
				start = nl + 1;
				while (len && strchr(" \t\r\n", start[len - 1]))
					len--;
			}
		}
		/* text that is not UTF-8 is no tag (a reply from JSON always
		 * is; the caller may hand anything) */
		text = json_stringn(start, len);
		if (text && json_object_set_new(round, *tag, text) < 0) {
			json_decref(round);
			round = NULL;
		}
	}
	return round;
}

/* rounds/<n>.json = round (the lock taken here). */
static int put_round(struct run *r, long n, const json_t *round,
		     struct ferr *err)
{
	struct sbuf text = SBUF_INIT;
	int ret = fjson_dump(&text, round);

	if (!ret) {
		lock(r);
		ret = roundstore_put(r->host->st, r->session, n, text.buf,
				     text.len, err);
		unlock(r);
	}
	sbuf_release(&text);
	return ret;
}

/* Copy file `ino` of the tree to `path` in 1 MiB slices, the lock taken
 * for each (an upload of gigabytes must not stall the mount). */
static int copy_file_out(struct run *r, uint64_t ino, const char *path)
{
	static const size_t slice = 1 << 20;
	char *buf = malloc(slice);
	int64_t off = 0;
	size_t got = 1;
	int fd, ret = 0;

	fd = buf ? open(path, O_WRONLY | O_CREAT | O_EXCL, 0600) : -1;
	if (fd < 0) {
		free(buf);
		return buf ? -errno : -ENOMEM;
	}
	while (!ret && got) {
		lock(r);
		ret = tree_read(r->host->tree, ino, buf, slice, off, &got);
		unlock(r);
		if (!ret && got && write(fd, buf, got) != (ssize_t)got)
			ret = -EIO;
		off += (int64_t)got;
		if (atomic_load(&r->cancel))
			ret = -ECANCELED;
	}
	close(fd);
	free(buf);
	return ret;
}

/* Copy folder `ino` of the tree into `dir`. */
static int copy_out(struct run *r, uint64_t ino, const char *dir, int depth)
{
	struct tree_dir d = { 0 };
	struct sbuf target = SBUF_INIT;
	int ret;

	if (depth > 64)
		return -ELOOP;
	lock(r);
	ret = tree_readdir(r->host->tree, ino, &d);
	unlock(r);
	for (size_t i = 0; !ret && i < d.n; i++) {
		const struct tree_attr *a = &d.ents[i].attr;
		char *path = NULL;

		if (asprintf(&path, "%s/%s", dir, d.ents[i].name) < 0) {
			ret = -ENOMEM;
			break;
		}
		if (S_ISDIR(a->mode)) {
			ret = mkdir(path, 0700) < 0 ? -errno : 0;
			if (!ret)
				ret = copy_out(r, a->ino, path, depth + 1);
		} else if (S_ISLNK(a->mode)) {
			sbuf_reset(&target);
			lock(r);
			ret = tree_readlink(r->host->tree, a->ino, &target);
			unlock(r);
			if (!ret && symlink(target.buf, path) < 0)
				ret = -errno;
		} else if (S_ISREG(a->mode)) {
			ret = copy_file_out(r, a->ino, path);
		}
		free(path);
	}
	tree_dir_free(&d);
	sbuf_release(&target);
	return ret;
}

static void remove_tree(const char *dir)
{
	char *cmd = NULL;

	/* the scratch folder is ours, under a name mkdtemp made */
	if (asprintf(&cmd, "rm -rf -- '%s'", dir) >= 0 && system(cmd) < 0)
		(void)0;
	free(cmd);
}

/* Files larger than this, made by an experiment, stay behind. */
#define MADE_FILE_MAX (64 << 20)

/*
 * The regular files the experiments made at the top of the scratch
 * folder (not there in uploads/, not hidden) into output/, the lock
 * taken for each.
 */
static int keep_made_files(struct run *r, const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (e = readdir(d))) {
		struct tree_attr a;
		struct stat st;
		struct sbuf data = SBUF_INIT;
		bool was_upload;
		char *path = NULL;
		int fd;

		if (e->d_name[0] == '.' || strlen(e->d_name) > 200)
			continue;
		lock(r);
		was_upload = tree_lookup(r->host->tree, r->uploads_ino, e->d_name,
					 &a) == 0;
		unlock(r);
		if (was_upload || asprintf(&path, "%s/%s", dir, e->d_name) < 0)
			continue;
		fd = open(path, O_RDONLY | O_NOFOLLOW);
		free(path);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size <= MADE_FILE_MAX &&
		    sbuf_grow(&data, (size_t)st.st_size + 1) == 0) {
			ssize_t n = read(fd, data.buf, (size_t)st.st_size);

			if (n == st.st_size) {
				sbuf_setlen(&data, (size_t)n);
				ret = put_output(r, e->d_name, data.buf, data.len);
			}
		}
		close(fd);
		sbuf_release(&data);
	}
	closedir(d);
	return ret;
}

/* Run round n's experiment in the scratch folder: the observation. */
static int experiment(struct run *r, const char *dir, long n, const char *code,
		      struct sbuf *observation, struct ferr *err)
{
	struct exec_result res;
	char file[64], *path = NULL;
	int fd, ret;

	snprintf(file, sizeof(file), ".flowfs-experiment-%ld.py", n);
	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ret = fd < 0 ? -errno : 0;
	if (!ret && write(fd, code, strlen(code)) != (ssize_t)strlen(code))
		ret = -EIO;
	if (fd >= 0)
		close(fd);
	free(path);
	if (ret < 0)
		return ferr_set(err, ret, "cannot write the experiment: %s",
				strerror(-ret));
	progress(r, "round %ld: running the experiment", n);
	ret = exec_python(dir, file, &r->opt->limits, cancelled, r, &res, err);
	if (ret < 0)
		return ret;
	ret = exec_observation(&res, &r->opt->limits, observation);
	exec_result_release(&res);
	return ret;
}

/* One reply whose tags make round n (asked again when tags are missing). */
static int ask_round(struct run *r, const struct engine_hooks *hooks,
		     json_t *messages, long n, bool last, json_t **round,
		     struct ferr *err)
{
	struct engine_reply reply = { 0 };
	char purpose[32];
	int ret;

	snprintf(purpose, sizeof(purpose), "round %ld", n);
	for (int attempt = 0;; attempt++) {
		struct ferr why = FERR_INIT;

		progress(r, "round %ld: waiting for the engine", n);
		ret = engine_chat(&r->opt->engine, hooks, purpose, messages, NULL,
				  &reply, err);
		if (ret < 0)
			return ret;
		json_array_append(messages, reply.message);
		*round = run_parse_tags(reply.content);
		engine_reply_release(&reply);
		if (!*round)
			return -ENOMEM;
		/* a concluding round runs no experiment: drop what is not its */
		if (last) {
			json_object_del(*round, "hypothesis");
			json_object_del(*round, "model");
			json_object_del(*round, "experiment");
		}
		json_object_del(*round, "observation");
		if (n > 1)
			json_object_del(*round, "phenomenon");
		if (!last)
			json_object_del(*round, "conclusion");
		ret = rounds_check_one((size_t)n, (size_t)n, *round, &why);
		if (!ret)
			return 0;
		json_decref(*round);
		*round = NULL;
		if (attempt == MAX_RETRIES)
			return ferr_set(err, -EPROTO, "round %ld: %s", n,
					why.message);
		json_array_append_new(messages, message("user", why.message));
	}
}

static int flow_rounds(struct run *r, const struct engine_hooks *hooks,
		       struct ferr *err)
{
	struct sbuf prompt = SBUF_INIT, observation = SBUF_INIT;
	char dir[] = "/tmp/flowfs-experiment-XXXXXX";
	bool have_dir = false;
	json_t *messages = NULL, *round = NULL;
	long n, last = r->max_rounds;
	int ret = -ENOMEM;

	if (sbuf_addf(&prompt, "%s\n\nI/O Requirements:\n%s\n\nWork on this"
		      " task in rounds of the scientific method, at most %ld."
		      " This is round 1. Answer with these tagged blocks:\n"
		      "<Phenomenon>what the task and its data show</Phenomenon>\n"
		      "<Hypothesis>what you expect</Hypothesis>\n"
		      "<Model>how you will test it</Model>\n"
		      "<Experiment>Python 3 code to run; the working folder holds"
		      " the uploaded files; print what you need to see"
		      "</Experiment>", r->description, r->io ? r->io : "",
		      last) < 0)
		goto out;
	messages = json_pack("[o, o]", message("system", r->system),
			     message("user", prompt.buf));
	if (!messages)
		goto out;
	for (n = 1; n <= last; n++) {
		bool concluding = n == last && n > 1;

		ret = ask_round(r, hooks, messages, n, concluding, &round, err);
		if (!ret)
			ret = put_round(r, n, round, err);
		if (ret < 0 || concluding)
			break;
		if (!r->opt->allow_exec) {
			ret = ferr_set(err, -EPERM, "round %ld: experiments run"
				       " only when flowfs is started with"
				       " --allow-exec; rounds/%ld.json holds the"
				       " experiment", n, n);
			break;
		}
		if (!have_dir) {
			if (!mkdtemp(dir)) {
				ret = ferr_set(err, -errno, "cannot make a scratch"
					       " folder: %s", strerror(errno));
				break;
			}
			have_dir = true;
			progress(r, "copying uploads/ for the experiments");
			ret = copy_out(r, r->uploads_ino, dir, 0);
			if (ret < 0) {
				ferr_set(err, ret, "cannot copy uploads/: %s",
					 strerror(-ret));
				break;
			}
		}
		sbuf_reset(&observation);
		ret = experiment(r, dir, n, json_string_value(json_object_get(
					round, "experiment")), &observation, err);
		/* what a program prints ends in a newline the block has */
		while (observation.len &&
		       strchr(" \t\r\n", observation.buf[observation.len - 1]))
			sbuf_setlen(&observation, observation.len - 1);
		if (!ret && json_object_set_new(round, "observation",
						json_string(observation.buf)) < 0)
			ret = -ENOMEM;
		if (!ret)
			ret = put_round(r, n, round, err);
		if (ret < 0)
			break;
		json_decref(round);
		round = NULL;
		if (n == last)
			break;
		sbuf_reset(&prompt);
		if (n + 1 < last)
			ret = sbuf_addf(&prompt, "<Observation>\n%s\n</Observation>"
					"\n\nThis is round %ld. From the"
					" observation, answer with:\n"
					"<Inference>what the observation tells</Inference>\n"
					"<Hypothesis>...</Hypothesis>\n<Model>...</Model>\n"
					"<Experiment>Python 3 code</Experiment>",
					observation.buf, n + 1);
		else if (n + 1 == last)
			ret = sbuf_addf(&prompt, "<Observation>\n%s\n</Observation>"
					"\n\nThis is the last round (%ld). Answer"
					" with:\n<Inference>what the observation"
					" tells</Inference>\n<Conclusion>the answer"
					" to the task</Conclusion>",
					observation.buf, n + 1);
		if (ret < 0 || json_array_append_new(messages,
					message("user", prompt.buf)) < 0) {
			ret = -ENOMEM;
			break;
		}
	}
out:
	if (have_dir) {
		/* what the experiments made is the run's result too (the
		 * seed's example writes output.txt), even when it failed */
		int kept = keep_made_files(r, dir);

		if (!ret && kept < 0)
			ret = ferr_set(err, kept, "cannot copy what the"
				       " experiments wrote into output/: %s",
				       strerror(-kept));
		remove_tree(dir);
	}
	json_decref(round);
	json_decref(messages);
	sbuf_release(&prompt);
	sbuf_release(&observation);
	return ret;
}

/* ---- URL inputs ------------------------------------------------------------- */

static int fetch_state(struct store *st, int64_t session, const char *key,
		       const char *state, const char *message)
{
	static const char sql[] = "UPDATE fetches SET state = ?3, message = ?4,"
		" time_ns = ?5 WHERE session = ?1 AND key = ?2";
	sqlite3_stmt *q = store_stmt(st, sql);
	int ret;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, state, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, message, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 5, store_now_ns());
	ret = store_errno(sqlite3_step(q));
	store_done(q);
	return ret;
}

static void mib(char *buf, size_t size, int64_t bytes)
{
	snprintf(buf, size, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

/* fetch.h's progress hook: status now and then, and the cancel. */
static bool fetch_progress(void *ctx, int64_t got, int64_t total)
{
	struct run *r = ctx;
	int64_t now = store_now_ns() / 1000000;
	char a[32], b[32], msg[96];

	if (now - r->reported_ms >= 250) {
		r->reported_ms = now;
		mib(a, sizeof(a), got);
		mib(b, sizeof(b), total);
		snprintf(msg, sizeof(msg), total > 0 ? "%s of %s" : "%s", a, b);
		lock(r);
		fetch_state(r->host->st, r->session, r->key, "fetching", msg);
		unlock(r);
	}
	return atomic_load(&r->cancel);
}

/* The downloaded file `fd` as uploads/<name>: written under a scratch
 * name, in slices (the lock is let go between them), then renamed. */
static int store_upload(struct run *r, int fd, struct ferr *err)
{
	static const size_t slice = 1 << 20;
	char scratch[300], *buf = malloc(slice);
	struct tree *t = r->host->tree;
	struct tree_attr dir, a = { 0 };
	int64_t off = 0;
	bool opened = false;
	ssize_t n;
	int ret;

	if (!buf)
		return -ENOMEM;
	snprintf(scratch, sizeof(scratch), ".%s.flowfs-fetch", r->name);
	lock(r);
	ret = tree_getattr(t, r->uploads_ino, &dir);
	if (!ret && tree_lookup(t, r->uploads_ino, scratch, &a) == 0)
		ret = tree_unlink(t, r->uploads_ino, scratch);
	if (!ret)
		ret = tree_create(t, r->uploads_ino, scratch, S_IFREG | 0644,
				  dir.uid, dir.gid, NULL, &a);
	if (!ret)
		ret = tree_open(t, a.ino);
	opened = !ret;
	unlock(r);
	if (lseek(fd, 0, SEEK_SET) < 0)
		ret = -errno;
	while (!ret && (n = read(fd, buf, slice)) > 0) {
		lock(r);
		ret = tree_write(t, a.ino, buf, (size_t)n, off);
		unlock(r);
		off += n;
		if (atomic_load(&r->cancel))
			ret = -ECANCELED;
	}
	lock(r);
	if (opened) {
		int rr = tree_release(t, a.ino);

		if (!ret)
			ret = rr;
	}
	if (!ret)
		ret = tree_rename(t, r->uploads_ino, scratch, r->uploads_ino,
				  r->name, false);
	if (ret < 0 && a.ino)
		tree_unlink(t, r->uploads_ino, scratch);
	unlock(r);
	free(buf);
	if (ret < 0 && ret != -ECANCELED)
		ferr_set(err, ret, "cannot store uploads/%s: %s", r->name,
			 strerror(-ret));
	return ret;
}

static int flow_fetch(struct run *r, struct ferr *err)
{
	char tmp[] = "/tmp/flowfs-fetch-XXXXXX";
	int64_t bytes = 0;
	int fd, ret;

	fd = mkstemp(tmp);
	if (fd < 0)
		return ferr_set(err, -errno, "cannot make a scratch file: %s",
				strerror(errno));
	unlink(tmp);
	ret = fetch_url(r->url, fd, &r->opt->fetch, fetch_progress, r, &bytes,
			err);
	if (!ret)
		ret = store_upload(r, fd, err);
	close(fd);
	if (!ret) {
		char size[32];

		mib(size, sizeof(size), bytes);
		snprintf(err->message, sizeof(err->message), "%s", size);
	}
	return ret;
}

int run_fetch_lines(struct store *st, int64_t session, struct sbuf *out)
{
	static const char sql[] = "SELECT name, state, message FROM fetches"
		" WHERE session = ?1 ORDER BY key";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *msg = (const char *)sqlite3_column_text(q, 2);

		ret = sbuf_addf(out, "fetch uploads/%s: %s%s%s\n",
				(const char *)sqlite3_column_text(q, 0),
				(const char *)sqlite3_column_text(q, 1),
				*msg ? ": " : "", msg);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	store_done(q);
	return ret;
}

bool run_is_fetch(const struct run *r)
{
	return r->flow == FLOW_FETCH;
}

/* ---- the thread ------------------------------------------------------------ */

static void *run_thread(void *arg)
{
	struct run *r = arg;
	struct engine_hooks hooks = { r, cancelled, audit };
	struct ferr err = FERR_INIT;
	int ret;

	switch (r->flow) {
	case FLOW_FETCH:
		ret = flow_fetch(r, &err);
		lock(r);
		fetch_state(r->host->st, r->session, r->key,
			    atomic_load(&r->cancel) ? "cancelled"
			    : ret < 0 ? "failed" : "done",
			    atomic_load(&r->cancel) ? ""
			    : err.message[0] ? err.message : strerror(-ret));
		unlock(r);
		atomic_store(&r->finished, true);
		return NULL;
	case FLOW_DATCOM:
		ret = flow_datcom(r, &hooks, &err);
		break;
	case FLOW_ROUNDS:
		ret = flow_rounds(r, &hooks, &err);
		break;
	default:
		ret = flow_any(r, &hooks, &err);
		break;
	}
	lock(r);
	if (atomic_load(&r->cancel))
		set_state(r->host->st, r->session, "cancelled", "");
	else if (ret < 0)
		set_state(r->host->st, r->session, "failed",
			  err.message[0] ? err.message : strerror(-ret));
	else
		set_state(r->host->st, r->session, "done", "");
	unlock(r);
	atomic_store(&r->finished, true);
	return NULL;
}

/* ---- starting --------------------------------------------------------- */

static void run_release(struct run *r)
{
	free(r->skill_id);
	free(r->system);
	free(r->prompt);
	free(r->description);
	free(r->io);
	json_decref(r->manifest);
	json_decref(r->output_schema);
	json_decref(r->parameter_schema);
	free(r->key);
	free(r->url);
	free(r->name);
	free(r);
}

/* What run_fetch_start() hands to inputs_urls(). */
struct fetch_start {
	const struct run_host *host;
	const struct run_options *opt;
	const struct session_info *s;
	int (*add)(void *ctx, struct run *r);
	void *ctx;
};

/* Whether `key` is already fetched from `url` (or being fetched). */
static int fetched(const struct fetch_start *f, const char *key,
		   const char *url, const char *name, bool *yes)
{
	static const char sql[] = "SELECT state FROM fetches WHERE session = ?1"
		" AND key = ?2 AND url = ?3 AND name = ?4"
		" AND state IN ('fetching', 'done')";
	sqlite3_stmt *q = store_stmt(f->host->st, sql);
	struct tree_attr a;
	int rc;

	*yes = false;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, f->s->id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, url, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*yes = strcmp((const char *)sqlite3_column_text(q, 0), "done") ||
		       tree_lookup(f->host->tree, f->s->uploads_ino, name, &a) == 0;
	store_done(q);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_errno(rc);
}

static int start_one_fetch(void *ctx, const char *key, const char *url,
			   const char *name)
{
	static const char sql[] = "INSERT OR REPLACE INTO fetches(session, key,"
		" url, name, state, message, time_ns) VALUES (?1, ?2, ?3, ?4,"
		" 'fetching', 'starting', ?5)";
	struct fetch_start *f = ctx;
	struct run *r;
	sqlite3_stmt *q;
	bool yes;
	int ret = fetched(f, key, url, name, &yes);

	if (ret < 0 || yes)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->host = f->host;
	r->opt = f->opt;
	r->session = f->s->id;
	r->flow = FLOW_FETCH;
	r->uploads_ino = f->s->uploads_ino;
	r->key = strdup(key);
	r->url = strdup(url);
	r->name = strdup(name);
	if (!r->key || !r->url || !r->name) {
		run_release(r);
		return -ENOMEM;
	}
	q = store_stmt(f->host->st, sql);
	if (!q) {
		run_release(r);
		return -EIO;
	}
	sqlite3_bind_int64(q, 1, f->s->id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, url, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 5, store_now_ns());
	ret = store_errno(sqlite3_step(q));
	store_done(q);
	if (!ret)
		ret = -pthread_create(&r->thread, NULL, run_thread, r);
	if (ret < 0) {
		run_release(r);
		return ret;
	}
	return f->add(f->ctx, r);
}

int run_fetch_start(const struct run_host *host, const struct run_options *opt,
		    const struct session_info *s, const struct skill *sk,
		    const json_t *request,
		    int (*add)(void *ctx, struct run *r), void *ctx,
		    struct ferr *err)
{
	struct fetch_start f = { host, opt, s, add, ctx };
	int ret = inputs_urls(sk, request, start_one_fetch, &f);

	if (ret < 0)
		ferr_set(err, ret, "cannot start fetching: %s", strerror(-ret));
	return ret;
}

/* Problem lines that keep a run from starting (datcom's missing
 * parameters do not: its run exists to fill them). */
static int blocking_problems(const struct run *r, const struct inputs *in,
			     struct sbuf *out)
{
	const char *p = in->problems.buf;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (r->flow != FLOW_DATCOM ||
		    strncmp(p, "missing required parameters", 27))
			sbuf_addf(out, "%s%.*s", out->len ? "; " : "", (int)len, p);
		p += len + (nl != NULL);
	}
	return 0;
}

/* Whether a fetch of the session is going on. */
static bool fetching(struct store *st, int64_t session)
{
	static const char sql[] = "SELECT 1 FROM fetches WHERE session = ?1"
		" AND state = 'fetching'";
	sqlite3_stmt *q = store_stmt(st, sql);
	bool yes;

	if (!q)
		return false;
	sqlite3_bind_int64(q, 1, session);
	yes = sqlite3_step(q) == SQLITE_ROW;
	store_done(q);
	return yes;
}

/* datcom's description: the inline input, else uploads/description. */
static char *datcom_description(struct run *r, const struct inputs *in)
{
	const char *inline_text = json_string_value(json_object_get(in->input,
								    "description"));
	struct tree_attr a;
	struct sbuf text = SBUF_INIT;

	if (inline_text && *inline_text)
		return strdup(inline_text);
	if (tree_lookup(r->host->tree, r->uploads_ino, "description", &a) < 0 ||
	    !S_ISREG(a.mode) || tree_read_all(r->host->tree, a.ino, &text) < 0 ||
	    !text.len) {
		sbuf_release(&text);
		return NULL;
	}
	return sbuf_detach(&text, NULL);
}

int run_start(const struct run_host *host, const struct run_options *opt,
	      const struct session_info *s, struct run **out,
	      struct ferr *err)
{
	struct sbuf problems = SBUF_INIT, prompt = SBUF_INIT;
	char *path = NULL;
	struct binding_ctx ctx;
	const struct skill_file *md;
	const struct skill *sk;
	struct inputs in;
	struct run *r;
	bool resolved = false;
	int ret;

	*out = NULL;
	if (!opt->engine.url)
		return ferr_set(err, -EINVAL, "no engine is configured: start"
				" flowfs with --engine-url=URL");
	if (!s->skill[0])
		return ferr_set(err, -EINVAL, "no skill is bound: set \"skill\""
				" in session.json");
	r = calloc(1, sizeof(*r));
	if (!r || asprintf(&path, "%s/%s", host->mountpoint, s->name) < 0) {
		free(r);
		return -ENOMEM;
	}
	r->host = host;
	r->opt = opt;
	r->session = s->id;
	r->output_ino = s->output_ino;
	r->uploads_ino = s->uploads_ino;
	ctx = (struct binding_ctx){ host->st, host->tree, host->skills, s, path };
	ret = binding_resolve(&ctx, &sk, &in);
	resolved = true;
	if (!ret && !sk)
		ret = ferr_set(err, -EINVAL, "skill %s is not loaded (see"
			       " .flowfs/skills)", s->skill);
	if (ret < 0)
		goto fail;
	r->flow = !strcmp(sk->id, "datcom") ? FLOW_DATCOM
		  : !strcmp(sk->id, "scientific-workflow") ? FLOW_ROUNDS
							    : FLOW_ANY;
	blocking_problems(r, &in, &problems);
	if (!problems.len && fetching(host->st, s->id))
		sbuf_addstr(&problems, "a URL input is still being fetched (see"
			    " the fetch lines)");
	if (problems.len) {
		ret = ferr_set(err, -EINVAL, "cannot run: %s", problems.buf);
		goto fail;
	}
	md = skill_file_find(sk, "SKILL.md", NULL);
	r->skill_id = strdup(sk->id);
	r->system = md ? strndup(md->data, md->len) : strdup("");
	r->manifest = inputs_manifest(sk);
	r->output_schema = json_deep_copy(sk->output_schema);
	r->parameter_schema = sk->parameter_schema
				      ? json_deep_copy(sk->parameter_schema)
				      : json_object();
	if (!r->skill_id || !r->system || !r->manifest || !r->parameter_schema) {
		ret = -ENOMEM;
		goto fail;
	}
	if (r->flow == FLOW_DATCOM) {
		r->description = datcom_description(r, &in);
		if (!r->description) {
			ret = ferr_set(err, -EINVAL, "cannot run: datcom needs"
				       " the aircraft's description (inline"
				       " input \"description\" or"
				       " uploads/description)");
			goto fail;
		}
	} else if (r->flow == FLOW_ROUNDS) {
		struct roundstore_item *items = NULL;
		size_t count = 0;
		const json_t *io = json_object_get(in.input, "io_instructions");
		const json_t *max = json_object_get(in.parameter, "max_iterations");

		r->description = strdup(json_string_value(json_object_get(
			in.input, "description")));
		r->io = json_is_string(io) ? strdup(json_string_value(io)) : NULL;
		r->max_rounds = json_is_integer(max) ? (long)json_integer_value(max)
						     : 5;
		if (r->max_rounds < 1)
			r->max_rounds = 1;
		/* a run writes rounds 1..N: it never writes over a person's */
		ret = roundstore_list(host->st, s->id, &items, &count);
		free(items);
		if (!ret && count)
			ret = ferr_set(err, -EINVAL, "cannot run: rounds/ already"
				       " holds rounds (remove them to run again)");
		if (ret < 0)
			goto fail;
		if (!r->description) {
			ret = -ENOMEM;
			goto fail;
		}
	} else {
		ret = binding_render_prompt(&ctx, &prompt, err);
		if (ret == -EINVAL || ret == -ENOENT) {
			ret = ferr_set(err, -EINVAL, "cannot run: prompt.txt"
				       " cannot be rendered (%s)", err->message);
			goto fail;
		}
		if (ret < 0)
			goto fail;
		r->prompt = sbuf_detach(&prompt, NULL);
	}
	ret = set_state(host->st, s->id, "running", "starting");
	if (ret < 0)
		goto fail;
	ret = -pthread_create(&r->thread, NULL, run_thread, r);
	if (ret < 0) {
		set_state(host->st, s->id, "failed", "cannot start a thread");
		goto fail;
	}
	inputs_release(&in);
	sbuf_release(&problems);
	free(path);
	*out = r;
	return 0;
fail:
	if (resolved)
		inputs_release(&in);
	sbuf_release(&problems);
	sbuf_release(&prompt);
	free(path);
	run_release(r);
	return ret;
}

void run_cancel(struct run *r)
{
	atomic_store(&r->cancel, true);
}

bool run_finished(const struct run *r)
{
	return atomic_load(&r->finished);
}

int64_t run_session(const struct run *r)
{
	return r->session;
}

void run_free(struct run *r)
{
	if (!r)
		return;
	pthread_join(r->thread, NULL);
	run_release(r);
}
