/*
 * notify: kernel cache invalidations sent from a thread of their own.
 *
 * A request handler must never send a notification itself: the kernel
 * may hold a lock the notification waits for (DESIGN §2).  Handlers queue
 * them here instead; the thread sends each as soon as the kernel lets it,
 * i.e. right after the request that queued it has been answered.
 */
#ifndef FLOWFS_NOTIFY_H
#define FLOWFS_NOTIFY_H

#include <stdint.h>
#include <sys/types.h>

/* Sessions waiting for a refresh at once, and how long one waits. */
#define FS_REFRESH_SLOTS 64
#define FS_REFRESH_QUIET_MS 100		/* after the last change */
#define FS_REFRESH_MAX_MS 1000		/* after the first */

struct fuse_session;
struct fs_notifier;

/* refresh(ctx, session) runs on the thread for fs_notify_session(); it
 * must not wait (for the mount least of all). */
int fs_notifier_start(struct fs_notifier **out, struct fuse_session *se,
		      void (*refresh)(void *ctx, int64_t session), void *ctx);
/* Sends what is queued, then stops; NULL is fine. */
void fs_notifier_stop(struct fs_notifier *n);

/* Forget the name `name` in folder `parent` (the kernel looks it up
 * again).  Dropped silently when out of memory: it is only a cache. */
void fs_notify_entry(struct fs_notifier *n, uint64_t parent, const char *name);

/*
 * Returns once everything queued before the call has been sent, so that
 * what a thread changed is seen by the kernel before it says it is done.
 * Never from a request handler, nor with the filesystem lock held: the
 * kernel may need a request answered before it takes a notification.
 */
void fs_notify_settle(struct fs_notifier *n);

/*
 * What a session's folders show changed behind the kernel's back (a
 * generated file appeared, went or changed): the kernel tells inotify
 * watchers — file managers — nothing of its cache invalidations, so once
 * the session has held still FS_REFRESH_QUIET_MS (at most
 * FS_REFRESH_MAX_MS after the first call), the thread calls refresh(),
 * which has the names touched through the mount.  Never waits.
 */
void fs_notify_session(struct fs_notifier *n, int64_t session);

#endif
