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

struct fuse_session;
struct fs_notifier;

int fs_notifier_start(struct fs_notifier **out, struct fuse_session *se);
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

#endif
