/*
 * run_fetch: the URL inputs of request.json, fetched into uploads/; see
 * run.h.
 */
#include "run/run_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fclock.h"
#include "lib/utf8.h"
#include "session/inputs.h"

/* ---- URL inputs ------------------------------------------------------------- */

/* Fetches going on at once when run_options.fetch_jobs does not say. */
#define FETCH_JOBS 4

/* This fetch's row, while it is still the fetch of its key (a newer
 * request.json may have named another URL, or none): -ESTALE when not. */
static int fetch_state(struct run *r, const char *state, const char *message)
{
	static const char sql[] = "UPDATE fetches SET state = ?2, message = ?3,"
		" time_ns = ?4 WHERE session = ?1 AND key = ?5 AND url = ?6";
	struct store *st = r->host->st;
	struct sbuf text = SBUF_INIT;
	/* a server's words (an HTTP reason), perhaps cut mid-character */
	int ret = utf8_repair(&text, message, strlen(message));

	if (!ret)
		ret = store_run(st, sql, STORE_INT(r->session),
				STORE_TEXT(state), STORE_TEXT(text.buf),
				STORE_INT(fclock_now_ns()), STORE_TEXT(r->key),
				STORE_TEXT(r->url));
	sbuf_release(&text);
	return !ret && !store_changes(st) ? -ESTALE : ret;
}

static void mib(char *buf, size_t size, int64_t bytes)
{
	snprintf(buf, size, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

/* fetch.h's progress hook: status now and then; stops a cancelled or
 * superseded fetch. */
static bool fetch_progress(void *ctx, int64_t got, int64_t total)
{
	struct run *r = ctx;
	int64_t now = fclock_now_ns() / 1000000;
	char a[32], b[32], msg[96];
	bool stale = false;

	if (now - r->reported_ms >= 250) {
		r->reported_ms = now;
		mib(a, sizeof(a), got);
		mib(b, sizeof(b), total);
		snprintf(msg, sizeof(msg), total > 0 ? "%s of %s" : "%s", a, b);
		run_lock(r);
		stale = fetch_state(r, "fetching", msg) == -ESTALE;
		run_unlock(r);
	}
	return stale || atomic_load(&r->cancel);
}

/* Whether the row still wants this fetch's file (the lock held). */
static bool fetch_current(struct run *r)
{
	static const char sql[] = "SELECT 1 FROM fetches WHERE session = ?1"
		" AND key = ?2 AND url = ?3 AND state = 'fetching'";
	int64_t one;

	return store_int(r->host->st, sql, &one, STORE_INT(r->session),
			 STORE_TEXT(r->key), STORE_TEXT(r->url)) == 0;
}

/* ---- the queue (run.h's struct run_queue; the lock held) ---------------- */

static unsigned fetch_jobs(const struct run_options *opt)
{
	return opt->fetch_jobs ? opt->fetch_jobs : FETCH_JOBS;
}

/* At most this many of a session's fetches go on at once. */
static unsigned session_jobs(const struct run_options *opt)
{
	return (fetch_jobs(opt) + 1) / 2;
}

/* The share of `session` (its row made when `add`), or NULL. */
static struct run_queue_share *share_of(struct run_queue *q, int64_t session,
					bool add)
{
	struct run_queue_share *free_row = NULL;

	for (int i = 0; i < RUN_FETCH_JOBS_MAX; i++) {
		if (q->share[i].going && q->share[i].session == session)
			return &q->share[i];
		if (!q->share[i].going && !free_row)
			free_row = &q->share[i];
	}
	if (add && free_row)
		free_row->session = session;
	return add ? free_row : NULL;
}

static unsigned going_of(struct run_queue *q, int64_t session)
{
	const struct run_queue_share *sh = share_of(q, session, false);

	return sh ? sh->going : 0;
}

static void fetch_ended(struct run_queue *q, int64_t session)
{
	struct run_queue_share *sh = share_of(q, session, false);

	q->going--;
	if (sh)
		sh->going--;
}

/* Whether a fetch of `session` may start now. */
static bool room_for(struct run_queue *q, const struct run_options *opt,
		     int64_t session)
{
	return q->going < fetch_jobs(opt) &&
	       going_of(q, session) < session_jobs(opt);
}

static void enqueue(struct run_queue *q, struct run *r)
{
	r->queue_prev = q->last;
	r->queue_next = NULL;
	if (q->last)
		q->last->queue_next = r;
	else
		q->first = r;
	q->last = r;
	r->queued = true;
}

static void unqueue(struct run_queue *q, struct run *r)
{
	if (r->queue_prev)
		r->queue_prev->queue_next = r->queue_next;
	else
		q->first = r->queue_next;
	if (r->queue_next)
		r->queue_next->queue_prev = r->queue_prev;
	else
		q->last = r->queue_prev;
	r->queue_prev = r->queue_next = NULL;
	r->queued = false;
}

/* The thread of fetch `r`, which is kept (run.h's add hook) and whose
 * row says "fetching". */
static int start_thread(struct run *r)
{
	int ret = -pthread_create(&r->thread, NULL, run_thread, r);

	r->started = !ret;
	if (ret < 0) {
		/* kept, so it is reaped; its row must not stay "fetching" */
		atomic_store(&r->finished, true);
		if (fetch_state(r, "failed", "cannot start a thread") == 0)
			run_log_fetch(r, "fetch failed: cannot start a thread");
	} else {
		struct run_queue *q = r->host->fetches;
		/* fetch_jobs <= RUN_FETCH_JOBS_MAX: a row is always free */
		struct run_queue_share *sh = share_of(q, r->session, true);

		q->going++;
		if (sh)
			sh->going++;
		run_log_fetch(r, "fetch started");
	}
	return ret;
}

/*
 * Start queued fetches while there is room.  One whose row no longer
 * waits for it (its session removed, its key now another URL) is
 * dropped instead: finished, reaped with the others.
 */
static void start_queued(const struct run_host *host,
			 const struct run_options *opt)
{
	static const char sql[] = "UPDATE fetches SET state = 'fetching',"
		" message = 'starting', time_ns = ?4 WHERE session = ?1"
		" AND key = ?2 AND url = ?3 AND state = 'queued'";
	struct run_queue *q = host->fetches;

	while (q->going < fetch_jobs(opt)) {
		struct run *r = NULL;
		unsigned fewest = ~0u;
		int ret;

		/* the first queued of the session with the fewest going */
		for (struct run *o = q->first; o && fewest; o = o->queue_next) {
			unsigned n = going_of(q, o->session);

			if (n < fewest && n < session_jobs(opt)) {
				r = o;
				fewest = n;
			}
		}
		if (!r)
			break;

		unqueue(q, r);
		ret = store_run(host->st, sql, STORE_INT(r->session),
				STORE_TEXT(r->key), STORE_TEXT(r->url),
				STORE_INT(fclock_now_ns()));
		if (!ret && store_changes(host->st)) {
			start_thread(r);
			continue;
		}
		/* a row left "queued" would wait for nothing */
		if (ret < 0 && fetch_state(r, "failed", strerror(-ret)) == 0)
			run_log_fetch(r, "fetch failed: %s", strerror(-ret));
		atomic_store(&r->finished, true);
	}
}

void run_fetch_drop(struct run *r)
{
	unqueue(r->host->fetches, r);
	if (fetch_state(r, "cancelled", "") == 0)
		run_log_fetch(r, "fetch cancelled");
	atomic_store(&r->finished, true);
}

/* ---- a fetch's thread ---------------------------------------------------- */

void run_flow_fetch(struct run *r)
{
	struct ferr err = FERR_INIT;
	struct run_file file;
	char size[32];
	int64_t bytes = 0;
	int ret;

	/* straight into uploads/, in no folder until it is whole */
	ret = run_file_open(r, r->uploads_ino, &file);
	if (!ret)
		ret = fetch_url(r->url, &r->opt->fetch, run_file_write, &file,
				fetch_progress, r, &bytes, &err);
	ret = run_file_close(&file, r->name, ret, fetch_current, &err);
	mib(size, sizeof(size), bytes);
	run_settle(r);
	/* a superseded fetch has no row to write to: fetch_state() changes
	 * nothing */
	run_lock(r);
	if (atomic_load(&r->cancel)) {
		if (fetch_state(r, "cancelled", "") == 0)
			run_log_fetch(r, "fetch cancelled");
	} else if (ret < 0) {
		const char *why = err.message[0] ? err.message : strerror(-ret);

		if (fetch_state(r, "failed", why) == 0)
			run_log_fetch(r, "fetch failed: %s", why);
	} else if (fetch_state(r, "done", size) == 0) {
		run_log_fetch(r, "fetched %s", size);
	}
	/* this thread ends: the next waiting fetch may start */
	fetch_ended(r->host->fetches, r->session);
	start_queued(r->host, r->opt);
	run_unlock(r);
}

bool run_is_fetch(const struct run *r)
{
	return r->flow == FLOW_FETCH;
}

/* What run_fetch_start() hands to inputs_urls(). */
struct fetch_start {
	const struct run_host *host;
	const struct run_options *opt;
	const struct session_info *s;
	int (*add)(void *ctx, struct run *r);
	void *ctx;
	json_t *wanted;		/* key -> URL, what the request asks for */
};

/* Whether `key` is already fetched from `url` (or being fetched). */
static int fetched(const struct fetch_start *f, const char *key,
		   const char *url, const char *name, bool *yes)
{
	static const char sql[] = "SELECT state = 'done' FROM fetches"
		" WHERE session = ?1 AND key = ?2 AND url = ?3 AND name = ?4"
		" AND state IN ('queued', 'fetching', 'done')";
	struct tree_attr a;
	int64_t done = 0;
	int ret = store_int(f->host->st, sql, &done, STORE_INT(f->s->id),
			    STORE_TEXT(key), STORE_TEXT(url), STORE_TEXT(name));

	/* queued, being fetched, or fetched and still there */
	*yes = !ret && (!done || tree_lookup(f->host->tree, f->s->uploads_ino,
					     name, &a) == 0);
	return ret == -ENOENT ? 0 : ret;
}

static int want(void *ctx, const char *key, const char *url, const char *name)
{
	struct fetch_start *f = ctx;

	(void)name;
	return json_object_set_new(f->wanted, key, json_string(url)) < 0
		       ? -ENOMEM : 0;
}

/*
 * Forget the rows of URLs the request no longer names (another URL for
 * the key, or none): a fetch still going on for one of them then finds
 * its row gone, stops, and stores nothing.
 */
static int forget_unwanted(struct fetch_start *f)
{
	static const char rows_sql[] = "SELECT key, url FROM fetches"
		" WHERE session = ?1";
	static const char drop_sql[] = "DELETE FROM fetches WHERE session = ?1"
		" AND key = ?2";
	json_t *drop = json_array();
	sqlite3_stmt *q = store_stmt(f->host->st, rows_sql);
	size_t i;
	json_t *k;
	int rc, ret = 0;

	if (!q || !drop) {
		json_decref(drop);
		return q ? -ENOMEM : -EIO;
	}
	sqlite3_bind_int64(q, 1, f->s->id);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(q, 0);
		const char *url = json_string_value(json_object_get(f->wanted, key));

		if (!url || strcmp(url, (const char *)sqlite3_column_text(q, 1)))
			json_array_append_new(drop, json_string(key));
	}
	ret = store_errno(rc);
	store_done(q);
	json_array_foreach(drop, i, k) {
		if (ret < 0)
			break;
		ret = store_run(f->host->st, drop_sql, STORE_INT(f->s->id),
				STORE_TEXT(json_string_value(k)));
	}
	json_decref(drop);
	return ret;
}

static int start_one_fetch(void *ctx, const char *key, const char *url,
			   const char *name)
{
	static const char sql[] = "INSERT OR REPLACE INTO fetches(session, key,"
		" url, name, state, message, time_ns) VALUES (?1, ?2, ?3, ?4,"
		" ?5, ?6, ?7)";
	struct fetch_start *f = ctx;
	bool now = room_for(f->host->fetches, f->opt, f->s->id);
	struct run *r;
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
	ret = store_run(f->host->st, sql, STORE_INT(f->s->id), STORE_TEXT(key),
			STORE_TEXT(url), STORE_TEXT(name),
			STORE_TEXT(now ? "fetching" : "queued"),
			STORE_TEXT(now ? "starting" : ""),
			STORE_INT(fclock_now_ns()));
	/* kept before its thread starts: once started, it is never lost */
	if (!ret) {
		ret = f->add(f->ctx, r);
		/* not kept: its row must not stay "fetching" */
		if (ret < 0)
			fetch_state(r, "failed", strerror(-ret));
	}
	if (ret < 0) {
		run_release(r);
		return ret;
	}
	if (now)
		return start_thread(r);
	enqueue(f->host->fetches, r);
	run_log_fetch(r, "fetch queued");
	return 0;
}

int run_fetch_start(const struct run_host *host, const struct run_options *opt,
		    const struct session_info *s, const struct skill *sk,
		    const json_t *request,
		    int (*add)(void *ctx, struct run *r), void *ctx,
		    struct ferr *err)
{
	struct fetch_start f = { host, opt, s, add, ctx, json_object() };
	int ret = f.wanted ? inputs_urls(sk, request, want, &f) : -ENOMEM;

	if (!ret)
		ret = forget_unwanted(&f);
	if (!ret)
		ret = inputs_urls(sk, request, start_one_fetch, &f);
	json_decref(f.wanted);
	if (ret < 0)
		ferr_set(err, ret, "cannot start fetching: %s", strerror(-ret));
	return ret;
}
