/*
 * The logs: every line goes to the store (a session's log, or the mount
 * root's .flowfs/log) and to where the daemon's own messages go — its
 * stderr in the foreground (-f), syslog once it has detached.
 */
#include <stdio.h>
#include <syslog.h>

#include "fs.h"

int fs_log(struct flowfs *fs, int64_t session, const char *name,
	   const char *path, const char *message)
{
	int ret = session_log(fs->st, session, path, message);

	if (fs->foreground) {
		char when[32];

		fprintf(stderr, "flowfs: %s %s%s%s: %s\n",
			session_format_time(store_now_ns(), when, sizeof(when)),
			name, *name ? "/" : "", path, message);
	} else {
		syslog(LOG_NOTICE, "%s%s%s: %s", name, *name ? "/" : "", path,
		       message);
	}
	return ret;
}
