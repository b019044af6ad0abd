/*
 * Showing file managers what changed.  A generated file appears, goes or
 * changes as a side effect of a write elsewhere (request.json makes
 * output/for005.dat), and the kernel tells inotify watchers — Thunar,
 * Nautilus, inotifywait — nothing of FUSE's cache invalidations
 * (measured on Linux 6.18 with libfuse 3.14: notify_inval_entry,
 * notify_delete, notify_inval_inode and notify_expire_entry wake no
 * watcher).  It does tell them of a real operation on a name.  So, once a
 * session holds still (notify.h), its folders — a file manager showing
 * one reads its listing again, and a file that appeared or went shows —
 * and the names flowfs makes in them, whose new size and time then show,
 * are touched through the mount.  ops.c takes these requests as no-ops:
 * nothing stored changes.
 *
 * The touching is done by a process of its own, the refresher (this
 * program, run as "flowfs --refresh-helper"), started with the mount.
 * No thread of the daemon ever makes a request to its own mount: one
 * waiting for an answer when the loop has stopped (SIGTERM) would hold
 * the daemon's exit up for good; the refresher is killed then.  Its pid
 * is known before it touches anything, so ops.c never mistakes one of
 * its requests for a real one.  It is sent one path per record, each a
 * single write of at most PIPE_BUF bytes, and checks before each that
 * the mountpoint is still this mount (after a lazy unmount another
 * file system may be there).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"
#include "lib/spawn.h"

#define HELPER_ARG "--refresh-helper"

#define HELPER_RESTARTS 5

/* One path, with its NUL, added to `out`: a record the pipe takes whole
 * or not at all. */
static void add_path(struct sbuf *out, const struct flowfs *fs,
		     const char *session, const char *name)
{
	char path[PIPE_BUF];
	int len = snprintf(path, sizeof(path), "%s/%s%s%s", fs->mountpoint,
			   session, *name ? "/" : "", name);

	/* a path cut short could name something outside the mount */
	if (len < 0 || (size_t)len >= sizeof(path))
		return;
	sbuf_add(out, path, (size_t)len + 1);
}

/* Whether a refresh touches row `e`: the folders that hold what flowfs
 * makes (output/, parameters_output/), and those names (but ctl, which
 * never changes). */
static bool touched(const struct entry *e)
{
	if (e->scope < SCOPE_SESSION || e->kind == ENTRY_CONTROL)
		return false;
	return !S_ISDIR(e->mode) || e->kind == ENTRY_DIR ||
	       (e->kind == ENTRY_FOLDER && e->folder == SESSION_OUTPUT);
}

/* The device of the mount at `mountpoint`, asked without a request to it
 * (the attributes the kernel has: the loop may not be running). */
static int mount_dev(const char *mountpoint, dev_t *dev)
{
	struct statx stx;

	*dev = 0;
	if (statx(AT_FDCWD, mountpoint, AT_STATX_DONT_SYNC, STATX_TYPE,
		  &stx) < 0)
		return -errno;
	*dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	return 0;
}

/* Start the refresher for the mount of device `dev` (refresher_lock
 * held, or no other thread yet). */
static int spawn_refresher(struct flowfs *fs, dev_t dev)
{
	static char *const env[] = { "LC_ALL=C", NULL };
	char devtext[64];
	char *argv[] = { "/proc/self/exe", HELPER_ARG, fs->mountpoint,
			 devtext, NULL };
	int p[2], ret = -1;
	/* nothing of the daemon's goes along (spawn.h): no descriptor (a
	 * fetch's socket), no ignored signal, no mask */
	struct spawn sp = { .argv = argv, .envp = env };

	fs->refresher_fd = -1;
	fs->refresher_pid = 0;
	snprintf(devtext, sizeof(devtext), "%u:%u", major(dev), minor(dev));
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	sp.io[0] = (struct spawn_io){ .how = SPAWN_FD, .fd = p[0] };
	if (spawn_start(&sp, &fs->refresher_pid) == 0) {
		fs->refresher_fd = p[1];
		p[1] = -1;
		/* a refresher that is behind drops records, never the daemon */
		ret = fcntl(fs->refresher_fd, F_SETFL, O_NONBLOCK) < 0 ? -1 : 0;
	} else {
		fs->refresher_pid = 0;
	}
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	return ret;
}

/*
 * The refresher ended (its pipe has no reader): reap it, and start it
 * again while the mount is still at the mountpoint (after a lazy unmount
 * another file system may be there: the refresher ends for that) and it
 * was started again fewer than HELPER_RESTARTS times.  What happened goes
 * into `said` for the log.  refresher_lock held.
 */
static void refresher_ended(struct flowfs *fs, char *said, size_t size)
{
	int status = 0;
	dev_t now;
	const char *again;

	/* its pipe has no reader: it has exited, or is exiting (a kill
	 * changes nothing then), and is reaped here, never left a zombie */
	kill(fs->refresher_pid, SIGKILL);
	if (waitpid(fs->refresher_pid, &status, 0) < 0)
		status = 0;
	close(fs->refresher_fd);
	fs->refresher_fd = -1;
	fs->refresher_pid = 0;
	if (mount_dev(fs->mountpoint, &now) < 0 || now != fs->refresher_dev)
		again = "the mountpoint is not this mount any more";
	else if (fs->refresher_restarts >= HELPER_RESTARTS)
		again = "it ended too often to be started again: file managers"
			" will not see generated files change";
	else if (fs->refresher_restarts++, spawn_refresher(fs, now) < 0)
		again = "it cannot be started again: file managers will not"
			" see generated files change";
	else
		again = "started again";
	if (WIFSIGNALED(status))
		snprintf(said, size, "the refresher was killed by signal %d: %s",
			 WTERMSIG(status), again);
	else
		snprintf(said, size, "the refresher ended: %s", again);
}

/* Send the records of `paths`; a refresher that ended is dealt with
 * (refresher_ended()) and `said` filled. */
static void send_paths(struct flowfs *fs, const struct sbuf *paths,
		       char *said, size_t size)
{
	size_t at = 0;

	pthread_mutex_lock(&fs->refresher_lock);
	while (!fs->refresher_stopped && fs->refresher_fd >= 0 &&
	       at < paths->len) {
		size_t len = strlen(paths->buf + at) + 1;

		if (write(fs->refresher_fd, paths->buf + at, len) < 0 &&
		    errno == EPIPE) {
			refresher_ended(fs, said, size);
			continue;
		}
		/* else sent, or a full pipe (the refresher is behind): this
		 * one goes without */
		at += len;
	}
	pthread_mutex_unlock(&fs->refresher_lock);
}

void fs_refresh_session(void *ctx, int64_t session)
{
	struct flowfs *fs = ctx;
	struct session_info s;
	struct sbuf buf = SBUF_INIT, paths = SBUF_INIT;
	uid_t me = geteuid();
	char said[256] = "";
	bool none;

	/* no refresher (stopped, or not started again): nothing to gather */
	pthread_mutex_lock(&fs->refresher_lock);
	none = fs->refresher_stopped || fs->refresher_fd < 0;
	pthread_mutex_unlock(&fs->refresher_lock);
	if (none)
		return;
	fs_lock_read(fs);
	/*
	 * Others' folders are not the daemon's to touch unless it is root
	 * (with allow_other): the kernel refuses before flowfs sees it.
	 */
	if (session_get(fs->st, session, &s) < 0 || (me != 0 && s.uid != me)) {
		fs_unlock(fs);
		goto out;
	}
	add_path(&paths, fs, s.name, "");
	/* the folders first: a file manager reads them again */
	for (int dirs = 1; dirs >= 0; dirs--)
		for (unsigned row = 1; row < fs_entry_count; row++) {
			const struct entry *e = &fs_entries[row];
			bool dir = S_ISDIR(e->mode);
			char path[FS_PATH_MAX];
			const char *shown;

			if (!touched(e) || dir != (dirs == 1))
				continue;
			shown = fs_entry_name(fs, &s, row, &buf);
			if (shown && (size_t)snprintf(path, sizeof(path), "%s%s",
					fs_scope_folder(e->scope), shown) <
					     sizeof(path))
				add_path(&paths, fs, s.name, path);
		}
	fs_unlock(fs);
	/* no I/O under the filesystem's lock */
	send_paths(fs, &paths, said, sizeof(said));
	if (said[0]) {
		fs_lock_write(fs);
		fs_log(fs, 0, "", fs->mountpoint, said);
		fs_unlock(fs);
	}
out:
	sbuf_release(&paths);
	sbuf_release(&buf);
}

int fs_refresher_start(struct flowfs *fs)
{
	fs->refresher_fd = -1;
	if (mount_dev(fs->mountpoint, &fs->refresher_dev) < 0)
		return -1;
	return spawn_refresher(fs, fs->refresher_dev);
}

void fs_refresher_stop(struct flowfs *fs)
{
	pid_t pid;

	/* the notifier's thread may be sending it a path, or starting it
	 * again */
	pthread_mutex_lock(&fs->refresher_lock);
	fs->refresher_stopped = true;
	pid = fs->refresher_pid;
	if (fs->refresher_fd >= 0)
		close(fs->refresher_fd);
	fs->refresher_fd = -1;
	pthread_mutex_unlock(&fs->refresher_lock);
	if (pid <= 0)
		return;
	/* it may be waiting for an answer that will not come */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	pthread_mutex_lock(&fs->refresher_lock);
	fs->refresher_pid = 0;
	pthread_mutex_unlock(&fs->refresher_lock);
}

int fs_refresher_main(int argc, char **argv)
{
	char buf[2 * PIPE_BUF];
	size_t have = 0;
	unsigned maj, min;
	dev_t dev;

	if (argc != 4 || strcmp(argv[1], HELPER_ARG) ||
	    sscanf(argv[3], "%u:%u", &maj, &min) != 2)
		return 2;
	dev = makedev(maj, min);
	for (;;) {
		ssize_t got = read(0, buf + have, sizeof(buf) - have);
		char *start = buf, *end;
		dev_t now;

		if (got < 0 && errno == EINTR)
			continue;
		/* the daemon closed the pipe, or is gone */
		if (got <= 0)
			return 0;
		have += (size_t)got;
		while ((end = memchr(start, '\0', have - (size_t)(start - buf)))) {
			/* not this mount any more (lazily unmounted): done */
			if (mount_dev(argv[2], &now) < 0 || now != dev)
				return 0;
			/* touch -c -h: absent names stay absent, a link is
			 * touched itself; others' files are not its to
			 * report */
			utimensat(AT_FDCWD, start, NULL, AT_SYMLINK_NOFOLLOW);
			start = end + 1;
		}
		have -= (size_t)(start - buf);
		memmove(buf, start, have);
		/* no record is longer than PIPE_BUF: a full buffer holds one */
		if (have == sizeof(buf))
			have = 0;
	}
}

bool fs_refresher_is(struct flowfs *fs, pid_t pid)
{
	bool is;

	pthread_mutex_lock(&fs->refresher_lock);
	is = pid && pid == fs->refresher_pid;
	pthread_mutex_unlock(&fs->refresher_lock);
	return is;
}
