/*
 * Showing file managers what changed.  A generated file appears, goes or
 * changes as a side effect of a write elsewhere (request.json makes
 * output/for005.dat), and the kernel tells inotify watchers — Thunar,
 * Nautilus, inotifywait — nothing of FUSE's cache invalidations
 * (measured on Linux 6.18 with libfuse 3.14: notify_inval_entry,
 * notify_delete, notify_inval_inode and notify_expire_entry wake no
 * watcher).  It does tell them of a real operation on a name.  So, once a
 * session holds still (notify.h), the notifier's thread touches its
 * folders — a file manager showing one reads its listing again, and a
 * file that appeared or went shows — and the names flowfs makes in them,
 * whose new size and time then show.  ops.c takes these requests as
 * no-ops: nothing stored changes.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "fs.h"

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

#define REFRESH_NAMES 48

/* Paths of names in the mount, for touch(1). */
struct refresh_list {
	const char *mountpoint;
	char path[REFRESH_NAMES][FS_PATH_MAX * 2];
	size_t n;
};

static void add(struct refresh_list *l, const char *session, const char *name)
{
	if (l->n < REFRESH_NAMES)
		snprintf(l->path[l->n++], sizeof(l->path[0]), "%s/%s%s%s",
			 l->mountpoint, session, *name ? "/" : "", name);
}

/* What to touch in session `s`: its folders that hold names flowfs makes,
 * then those names (the lock held). */
static void list_names(struct flowfs *fs, const struct session_info *s,
		       struct refresh_list *l)
{
	struct sbuf buf = SBUF_INIT;
	char path[FS_PATH_MAX];

	add(l, s->name, "");
	add(l, s->name, "output");
	add(l, s->name, "parameters_output");
	for (unsigned row = 1; row < fs_entry_count; row++) {
		const struct entry *e = &fs_entries[row];
		const char *name;

		if (e->scope < SCOPE_SESSION || S_ISDIR(e->mode))
			continue;
		name = fs_entry_name(fs, s, row, &buf);
		if (!name)
			continue;
		snprintf(path, sizeof(path), "%s%s", fs_scope_folder(e->scope),
			 name);
		add(l, s->name, path);
	}
	sbuf_release(&buf);
}

/* Whether `mountpoint` is still this mount: after a lazy unmount it is
 * the folder underneath, whose files are none of flowfs's business. */
static bool still_mounted(const char *mountpoint)
{
	struct statfs sf;
	struct stat st;

	return statfs(mountpoint, &sf) == 0 &&
	       sf.f_type == FUSE_SUPER_MAGIC && stat(mountpoint, &st) == 0 &&
	       st.st_ino == FS_ROOT_INO;
}

/*
 * The touching is done by touch(1) in a process of its own, not by this
 * thread: a request to this mount can only be answered while the loop
 * runs, and a process waiting for one can be killed at unmount (notify.c),
 * where a thread of the daemon would hold its exit up for good.
 */
pid_t fs_refresh_session(void *ctx, int64_t session)
{
	static char *const env[] = { "LC_ALL=C", NULL };
	struct flowfs *fs = ctx;
	struct refresh_list *l = calloc(1, sizeof(*l));
	char *argv[REFRESH_NAMES + 5];
	posix_spawn_file_actions_t fa;
	struct session_info s;
	pid_t pid = 0;
	size_t argc = 0;

	if (!l)
		return 0;	/* a refresh is not worth failing over */
	l->mountpoint = fs->mountpoint;
	pthread_mutex_lock(&fs->lock);
	if (session_get(fs->st, session, &s) == 0)
		list_names(fs, &s, l);
	pthread_mutex_unlock(&fs->lock);
	if (!l->n || !still_mounted(fs->mountpoint))
		goto out;
	argv[argc++] = "touch";
	argv[argc++] = "-c";	/* absent names stay absent */
	argv[argc++] = "-h";	/* a link itself */
	argv[argc++] = "--";
	for (size_t i = 0; i < l->n; i++)
		argv[argc++] = l->path[i];
	argv[argc] = NULL;
	if (posix_spawn_file_actions_init(&fa) != 0)
		goto out;
	/* others' files (EPERM) are none of its business to report */
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&pid, "/usr/bin/touch", &fa, NULL, argv, env) != 0)
		pid = 0;
	posix_spawn_file_actions_destroy(&fa);
out:
	free(l);
	return pid;
}
