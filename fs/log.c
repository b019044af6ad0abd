/*
 * The logs: every line goes to the store (a session's log, or the mount
 * root's .flowfs/log) and to where the daemon's own messages go — its
 * stderr in the foreground (-f), syslog once it has detached — as the
 * store keeps it (session_log_text()): what an archive or a model named
 * a file reaches no terminal as escapes, and makes no line of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "lib/fclock.h"
#include "fs.h"

struct fs_log_line {
	struct fs_log_line *next;
	int64_t session, at_ns;
	char *path, *message;
};

static void line_free(struct fs_log_line *l)
{
	free(l->path);
	free(l->message);
	free(l);
}

/* A reader's line, kept for the writer (fs.h): 0 or -ENOMEM. */
static int queue_line(struct flowfs *fs, int64_t session, const char *path,
		      const char *message)
{
	struct fs_log_line *l = calloc(1, sizeof(*l));

	if (!l || !(l->path = strdup(path)) ||
	    !(l->message = strdup(message))) {
		if (l)
			line_free(l);
		return -ENOMEM;
	}
	l->session = session;
	l->at_ns = fclock_now_ns();
	if (!fs->log_queue)
		fs->log_tail = &fs->log_queue;
	*fs->log_tail = l;
	fs->log_tail = &l->next;
	return 0;
}

/* Empty the queue, writing each line or not. */
static void drain(struct flowfs *fs, bool write)
{
	while (fs->log_queue) {
		struct fs_log_line *l = fs->log_queue;

		fs->log_queue = l->next;
		/* a session removed meanwhile has no log to keep it */
		if (write)
			session_log_at(fs->st, l->session, l->path,
				       l->message, l->at_ns);
		line_free(l);
	}
}

void fs_log_flush(struct flowfs *fs)
{
	drain(fs, true);
}

void fs_log_drop(struct flowfs *fs)
{
	drain(fs, false);
}

int fs_log(struct flowfs *fs, int64_t session, const char *name,
	   const char *path, const char *message)
{
	/* a reader may not write (fs.h: the locks); startup, one thread,
	 * holds no lock and writes */
	int ret = fs_holds_lock(fs) && !fs_holds_write(fs)
			  ? queue_line(fs, session, path, message)
			  : session_log(fs->st, session, path, message);

	fs_log_echo(fs, name, path, message);
	return ret;
}

void fs_log_echo(struct flowfs *fs, const char *name, const char *path,
		 const char *message)
{
	char *where = session_log_text(path), *what = session_log_text(message);
	char *who = session_log_text(name);

	if (!where || !what || !who)
		goto out;
	if (fs->foreground) {
		char when[32];

		fprintf(stderr, "flowfs: %s %s%s%s: %s\n",
			session_format_time(fclock_now_ns(), when, sizeof(when)),
			who, *who ? "/" : "", where, what);
	} else {
		syslog(LOG_NOTICE, "%s%s%s: %s", who, *who ? "/" : "", where,
		       what);
	}
out:
	free(who);
	free(what);
	free(where);
}
