/*
 * run_fetch: the URL inputs of request.json, fetched into uploads/; see
 * run.h.
 */
#include "run_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inputs.h"

/* ---- URL inputs ------------------------------------------------------------- */

int run_fetch_state(struct store *st, int64_t session, const char *key,
		    const char *state, const char *message)
{
	static const char sql[] = "UPDATE fetches SET state = ?2, message = ?3,"
		" time_ns = ?4 WHERE session = ?1 AND key = ?5";

	return run_store_state(st, sql, session, key, state, message);
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
		run_lock(r);
		run_fetch_state(r->host->st, r->session, r->key, "fetching", msg);
		run_unlock(r);
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
	run_lock(r);
	ret = tree_getattr(t, r->uploads_ino, &dir);
	if (!ret && tree_lookup(t, r->uploads_ino, scratch, &a) == 0)
		ret = tree_unlink(t, r->uploads_ino, scratch);
	if (!ret)
		ret = tree_create(t, r->uploads_ino, scratch, S_IFREG | 0644,
				  dir.uid, dir.gid, NULL, &a);
	if (!ret)
		ret = tree_open(t, a.ino);
	opened = !ret;
	run_unlock(r);
	if (lseek(fd, 0, SEEK_SET) < 0)
		ret = -errno;
	while (!ret && (n = read(fd, buf, slice)) > 0) {
		run_lock(r);
		ret = tree_write(t, a.ino, buf, (size_t)n, off);
		run_unlock(r);
		off += n;
		if (atomic_load(&r->cancel))
			ret = -ECANCELED;
	}
	run_lock(r);
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
	run_unlock(r);
	free(buf);
	if (ret < 0 && ret != -ECANCELED)
		ferr_set(err, ret, "cannot store uploads/%s: %s", r->name,
			 strerror(-ret));
	return ret;
}

int run_flow_fetch(struct run *r, struct ferr *err)
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
	static const char sql[] = "SELECT 'fetch uploads/' || name, state,"
		" message FROM fetches WHERE session = ?1 ORDER BY key";

	return run_state_lines(st, sql, session, out);
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

