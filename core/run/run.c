/*
 * run: a run's life — the checks, the start, the thread, its state in
 * the store, cancel, the audit log; see run.h.  The flows are in
 * run_chat.c, run_rounds.c and run_fetch.c.
 */
#include "run/run_private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fclock.h"
#include "lib/fjson.h"
#include "lib/utf8.h"
#include "session/binding.h"
#include "session/roundstore.h"

/* ---- the state in the store ------------------------------------------- */

void run_lock(const struct run *r)
{
	r->host->lock(r->host->ctx);
}

void run_unlock(const struct run *r)
{
	r->host->unlock(r->host->ctx);
}

void run_settle(const struct run *r)
{
	if (r->host->settle)
		r->host->settle(r->host->ctx);
}

/* A run's state and its message (an engine's or a server's words,
 * perhaps cut mid-character: stored as valid UTF-8). */
static int set_state(struct store *st, int64_t session, const char *state,
		     const char *message)
{
	static const char sql[] = "UPDATE sessions SET run_state = ?2,"
		" run_message = ?3, run_ns = ?4 WHERE id = ?1";
	struct sbuf text = SBUF_INIT;
	int ret = utf8_repair(&text, message, strlen(message));

	if (!ret)
		ret = store_run(st, sql, STORE_INT(session), STORE_TEXT(state),
				STORE_TEXT(text.buf), STORE_INT(fclock_now_ns()));
	sbuf_release(&text);
	return !ret && !store_changes(st) ? -ESTALE : ret;
}

static void log_line(const struct run *r, const char *path, const char *fmt,
		     va_list ap)
{
	struct sbuf msg = SBUF_INIT;

	/* a line that cannot be made is not worth failing a run over */
	if (r->host->log && sbuf_vaddf(&msg, fmt, ap) == 0)
		r->host->log(r->host->ctx, r->session, path, msg.buf);
	sbuf_release(&msg);
}

void run_log(const struct run *r, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(r, path, fmt, ap);
	va_end(ap);
}

void run_log_fetch(const struct run *r, const char *fmt, ...)
{
	struct sbuf path = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	if (sbuf_addf(&path, "uploads/%s", r->name) == 0)
		log_line(r, path.buf, fmt, ap);
	va_end(ap);
	sbuf_release(&path);
}

/* What the run does now, for status (takes the lock). */
void run_progress(struct run *r, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	run_lock(r);
	set_state(r->host->st, r->session, "running", msg);
	run_unlock(r);
}

/* One state as status.json shows it, from a row of (state, message,
 * time_ns[, name]); NULL when out of memory. */
static json_t *state_object(sqlite3_stmt *q, int64_t *mtime_ns)
{
	int64_t t = sqlite3_column_int64(q, 2);
	char when[32];
	json_t *o;

	if (t > *mtime_ns)
		*mtime_ns = t;
	o = json_object();
	/* what an older flowfs stored unchecked never fails status */
	if (o && sqlite3_column_count(q) > 3 &&
	    json_object_set_new(o, "path", json_sprintf("uploads/%s",
			(const char *)sqlite3_column_text(q, 3))) < 0)
		goto fail;
	if (o && (json_object_set_new(o, "state", fjson_text(
			(const char *)sqlite3_column_text(q, 0),
			(size_t)sqlite3_column_bytes(q, 0))) < 0 ||
		  json_object_set_new(o, "message", fjson_text(
			(const char *)sqlite3_column_text(q, 1),
			(size_t)sqlite3_column_bytes(q, 1))) < 0 ||
		  json_object_set_new(o, "time", json_string(
			session_format_time(t, when, sizeof(when)))) < 0))
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

int run_report(struct store *st, int64_t session, json_t **run,
	       json_t **fetches, int64_t *mtime_ns)
{
	static const char run_sql[] = "SELECT run_state,"
		" coalesce(run_message, ''), run_ns FROM sessions"
		" WHERE id = ?1 AND run_state IS NOT NULL";
	static const char fetch_sql[] = "SELECT state, message, time_ns, name"
		" FROM fetches WHERE session = ?1 ORDER BY key";
	sqlite3_stmt *q = store_stmt(st, run_sql);
	int rc = SQLITE_ERROR, ret = -ENOMEM;

	*mtime_ns = 0;
	*run = NULL;
	*fetches = json_array();
	if (!q || !*fetches)
		goto fail;
	sqlite3_bind_int64(q, 1, session);
	rc = sqlite3_step(q);
	*run = rc == SQLITE_ROW ? state_object(q, mtime_ns) : json_null();
	store_done(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		goto fail_rc;
	if (!*run)
		goto fail;
	q = store_stmt(st, fetch_sql);
	if (!q) {
		rc = SQLITE_ERROR;
		goto fail_rc;
	}
	sqlite3_bind_int64(q, 1, session);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		if (json_array_append_new(*fetches,
					  state_object(q, mtime_ns)) < 0)
			break;
	store_done(q);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc == SQLITE_ROW)
		goto fail;
fail_rc:
	ret = store_errno(rc) ? store_errno(rc) : -EIO;
fail:
	json_decref(*run);
	json_decref(*fetches);
	*run = *fetches = NULL;
	return ret;
}

int run_mark(const struct run_host *host, int64_t session,
	     const char *state, const char *message)
{
	int ret = set_state(host->st, session, state, message);

	if (!ret && host->log) {
		struct sbuf line = SBUF_INIT;

		if (sbuf_addf(&line, "%s%s%s", state, *message ? ": " : "",
			      message) == 0)
			host->log(host->ctx, session, "run", line.buf);
		sbuf_release(&line);
	}
	return ret;
}

int run_recover(struct store *st)
{
	return store_exec(st, "UPDATE sessions SET run_state = 'failed',"
			  " run_message = 'flowfs stopped during the run'"
			  " WHERE run_state = 'running';"
			  "UPDATE sessions SET run_state = 'failed',"
			  " run_message = 'flowfs stopped before the run"
			  " started'"
			  " WHERE run_state = 'queued';"
			  "UPDATE fetches SET state = 'failed',"
			  " message = 'flowfs stopped during the fetch'"
			  " WHERE state IN ('fetching', 'queued')");
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

	if (!line)
		return;
	run_lock(r);
	/* a line that cannot be stored is lost: the run goes on */
	(void)store_run(r->host->st, sql, STORE_INT(r->session),
			STORE_INT(fclock_now_ns()), STORE_TEXT(line));
	run_unlock(r);
	free(line);
}

bool run_cancelled(void *ctx)
{
	struct run *r = ctx;

	return atomic_load(&r->cancel);
}

/* ---- what the run writes ------------------------------------------------ */

/* output/<name> = data (the lock taken here). */
int run_put_output(struct run *r, const char *name, const char *data,
		   size_t len)
{
	int ret;

	run_lock(r);
	ret = tree_put_file(r->host->tree, r->output_ino, name, data, len, NULL);
	if (!ret)
		r->host->changed(r->host->ctx, r->session, r->output_ino, name);
	run_unlock(r);
	return ret;
}

#define RUN_FILE_SLICE ((size_t)1 << 20)

int run_file_open(struct run *r, uint64_t parent, struct run_file *f)
{
	int ret;

	*f = (struct run_file){ .r = r, .parent = parent };
	f->buf = malloc(RUN_FILE_SLICE);
	if (!f->buf)
		return -ENOMEM;
	run_lock(r);
	ret = tree_create_unlinked(r->host->tree, parent, &f->file);
	run_unlock(r);
	if (ret < 0) {
		free(f->buf);
		f->buf = NULL;
	}
	return ret;
}

/* What is gathered in f->buf into the file, under the lock. */
static int put_slice(struct run_file *f)
{
	int ret;

	if (!f->len)
		return 0;
	run_lock(f->r);
	ret = tree_write(f->r->host->tree, f->file.ino, f->buf, f->len,
			 f->off);
	run_unlock(f->r);
	f->off += (int64_t)f->len;
	f->len = 0;
	if (!ret && atomic_load(&f->r->cancel))
		ret = -ECANCELED;
	return ret;
}

int run_file_write(void *ctx, const char *data, size_t n)
{
	struct run_file *f = ctx;
	int ret = 0;

	while (!ret && n) {
		size_t take = RUN_FILE_SLICE - f->len;

		if (take > n)
			take = n;
		memcpy(f->buf + f->len, data, take);
		f->len += take;
		data += take;
		n -= take;
		if (f->len == RUN_FILE_SLICE)
			ret = put_slice(f);
	}
	return ret;
}

int run_file_close(struct run_file *f, const char *name, int ret,
		   bool (*current)(struct run *r), struct ferr *err)
{
	struct run *r = f->r;
	struct tree *t = r->host->tree;
	int rr;

	if (!f->buf)
		return ret;
	if (!ret)
		ret = put_slice(f);
	run_lock(r);
	/* checked where the link happens, under the lock */
	if (!ret && current && !current(r))
		ret = -ESTALE;
	if (!ret)
		ret = tree_link_unlinked(t, f->file.ino, f->parent, name);
	if (!ret)
		r->host->changed(r->host->ctx, r->session, f->parent, name);
	/* not linked: this release deletes it */
	rr = tree_release(t, f->file.ino);
	run_unlock(r);
	free(f->buf);
	f->buf = NULL;
	if (!ret)
		ret = rr;
	if (ret < 0 && ret != -ECANCELED && ret != -ESTALE &&
	    (!err || !err->message[0]))
		ferr_set(err, ret, "cannot store %s: %s", name, strerror(-ret));
	return ret;
}

bool run_reserved_output(const struct run *r, const char *name)
{
	return !strcmp(name, "response.md") || !strcmp(name, "result.json") ||
	       (r->host->generated && r->host->generated(r->host->ctx, name));
}

int run_store_fd(struct run *r, int fd, uint64_t parent, const char *name,
		 size_t max, struct ferr *err)
{
	struct run_file f;
	ssize_t n = 0;
	int ret = run_file_open(r, parent, &f);

	if (!ret && lseek(fd, 0, SEEK_SET) < 0)
		ret = -errno;
	/* straight into the slice buffer */
	while (!ret && max &&
	       (n = read(fd, f.buf + f.len, RUN_FILE_SLICE - f.len < max ?
				RUN_FILE_SLICE - f.len : max)) > 0) {
		f.len += (size_t)n;
		max -= (size_t)n;
		if (f.len == RUN_FILE_SLICE)
			ret = put_slice(&f);
	}
	if (!ret && n < 0)
		ret = -errno;
	return run_file_close(&f, name, ret, NULL, err);
}

json_t *run_function_tool(const char *name, const char *description,
			  json_t *parameters)
{
	return json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function",
			 "function", "name", name, "description", description,
			 "parameters", parameters);
}

json_t *run_message(const char *role, const char *content)
{
	return json_pack("{s:s, s:s}", "role", role, "content", content);
}

json_t *run_tool_message(const json_t *call, const char *content)
{
	return json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
			 json_string_value(json_object_get(call, "id")),
			 "content", content);
}

/* ---- the thread ------------------------------------------------------------ */

void *run_thread(void *arg)
{
	struct run *r = arg;
	struct engine_hooks hooks = { r, run_cancelled, audit };
	struct ferr err = FERR_INIT;
	int ret;

	switch (r->flow) {
	case FLOW_FETCH:
		/* to tell them from the FUSE loop's in /proc/PID/task */
		pthread_setname_np(pthread_self(), "flowfs-fetch");
		/* a fetch keeps its own row (run_fetch.c) */
		run_flow_fetch(r);
		atomic_store(&r->finished, true);
		return NULL;
	case FLOW_DATCOM:
		ret = run_flow_datcom(r, &hooks, &err);
		break;
	case FLOW_ROUNDS:
		ret = run_flow_rounds(r, &hooks, &err);
		break;
	default:
		ret = run_flow_any(r, &hooks, &err);
		break;
	}
	run_settle(r);
	run_lock(r);
	if (atomic_load(&r->cancel)) {
		set_state(r->host->st, r->session, "cancelled", "");
		run_log(r, "run", "cancelled");
	} else if (ret < 0) {
		const char *why = err.message[0] ? err.message : strerror(-ret);

		set_state(r->host->st, r->session, "failed", why);
		run_log(r, "run", "failed: %s", why);
	} else {
		set_state(r->host->st, r->session, "done", "");
		run_log(r, "run", "done");
	}
	if (r->host->ended)
		r->host->ended(r->host->ctx, r);
	run_unlock(r);
	atomic_store(&r->finished, true);
	return NULL;
}

/* ---- starting --------------------------------------------------------- */

void run_release(struct run *r)
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

/* Whether a fetch of the session is queued or going on. */
bool run_fetching(struct store *st, int64_t session)
{
	static const char sql[] = "SELECT 1 FROM fetches WHERE session = ?1"
		" AND state IN ('fetching', 'queued')";
	int64_t one;

	return store_int(st, sql, &one, STORE_INT(session)) == 0;
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
	    !S_ISREG(a.mode) || tree_read_all(r->host->tree, &a, &text) < 0 ||
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
	ctx = (struct binding_ctx){ .st = host->st, .tree = host->tree,
				    .skills = host->skills, .s = s,
				    .session_path = path };
	/* fills `in` whatever it returns */
	ret = binding_resolve(&ctx, &sk, &in);
	if (!ret && !sk)
		ret = ferr_set(err, -EINVAL, "skill %s is not loaded (see"
			       " .flowfs/skills)", s->skill);
	if (ret < 0)
		goto fail;
	r->flow = !strcmp(sk->id, "datcom") ? FLOW_DATCOM
		  : !strcmp(sk->id, "scientific-workflow") ? FLOW_ROUNDS
							    : FLOW_ANY;
	blocking_problems(r, &in, &problems);
	if (!problems.len && run_fetching(host->st, s->id))
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
		ret = binding_prompt_from(&ctx, sk, &in, &prompt, err);
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
		run_log(r, "run", "failed: cannot start a thread");
		goto fail;
	}
	run_log(r, "run", "started: skill %s, model %s", r->skill_id,
		opt->engine.model);
	r->started = true;
	inputs_release(&in);
	sbuf_release(&problems);
	free(path);
	*out = r;
	return 0;
fail:
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
	if (r->queued)
		run_fetch_drop(r);
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
	if (r->started)
		pthread_join(r->thread, NULL);
	run_release(r);
}

