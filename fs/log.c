/*
 * The logs: every line goes to the store (a session's log, or the mount
 * root's .flowfs/log) and to where the daemon's own messages go — its
 * stderr in the foreground (-f), syslog once it has detached — as the
 * store keeps it (session_log_text()): what an archive or a model named
 * a file reaches no terminal as escapes, and makes no line of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

#include "fs.h"

int fs_log(struct flowfs *fs, int64_t session, const char *name,
	   const char *path, const char *message)
{
	int ret = session_log(fs->st, session, path, message);
	char *where = session_log_text(path), *what = session_log_text(message);
	char *who = session_log_text(name);

	if (!where || !what || !who)
		goto out;
	if (fs->foreground) {
		char when[32];

		fprintf(stderr, "flowfs: %s %s%s%s: %s\n",
			session_format_time(store_now_ns(), when, sizeof(when)),
			who, *who ? "/" : "", where, what);
	} else {
		syslog(LOG_NOTICE, "%s%s%s: %s", who, *who ? "/" : "", where,
		       what);
	}
out:
	free(who);
	free(what);
	free(where);
	return ret;
}
