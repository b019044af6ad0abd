/* notify: the kernel's caches invalidated from a thread of their own; see
 * notify.h. */
#include "notify.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/fclock.h"

struct item {
	uint64_t parent;
	struct item *next;
	char name[];
};

/* A session to show file managers again, once it holds still. */
struct pending {
	int64_t session;
	int64_t first_ms, last_ms;	/* asked for, first and last (fclock_mono_ms) */
};

struct fs_notifier {
	struct fuse_session *se;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t settled;		/* `sent` moved */
	struct item *head, **tail;
	uint64_t queued, sent;		/* counts since start */
	void (*refresh)(void *ctx, int64_t session);
	void *ctx;
	struct pending pending[FS_REFRESH_SLOTS];
	size_t npending;
	bool stop;
};

/* The pending session due first (it has held still FS_REFRESH_QUIET_MS,
 * or waited FS_REFRESH_MAX_MS), or -1; *wait_ms: until the next is. */
static int due_refresh(struct fs_notifier *n, int64_t *wait_ms)
{
	int64_t now = fclock_mono_ms();

	*wait_ms = -1;
	for (size_t i = 0; i < n->npending; i++) {
		int64_t quiet = FS_REFRESH_QUIET_MS -
				(now - n->pending[i].last_ms);
		int64_t most = FS_REFRESH_MAX_MS -
			       (now - n->pending[i].first_ms);
		int64_t left = quiet < most ? quiet : most;

		if (left <= 0)
			return (int)i;
		if (*wait_ms < 0 || left < *wait_ms)
			*wait_ms = left;
	}
	return -1;
}

static void wait_ms(struct fs_notifier *n, int64_t ms)
{
	/* the clock the condition waits on (fs_notifier_start()): a jump
	 * of the wall clock must not stall a refresh */
	struct timespec until = fclock_mono_after(ms);

	pthread_cond_timedwait(&n->wake, &n->lock, &until);
}

static void *notify_loop(void *arg)
{
	struct fs_notifier *n = arg;

	pthread_mutex_lock(&n->lock);
	for (;;) {
		struct item *it;
		int64_t wait;
		int due;

		while (!n->head && !n->stop) {
			due = due_refresh(n, &wait);
			if (due >= 0) {
				int64_t session = n->pending[due].session;

				n->pending[due] = n->pending[--n->npending];
				pthread_mutex_unlock(&n->lock);
				n->refresh(n->ctx, session);
				pthread_mutex_lock(&n->lock);
			} else if (wait >= 0) {
				wait_ms(n, wait);
			} else {
				pthread_cond_wait(&n->wake, &n->lock);
			}
		}
		it = n->head;
		if (!it)
			break;	/* stopping, and nothing left */
		n->head = it->next;
		if (!n->head)
			n->tail = &n->head;
		pthread_mutex_unlock(&n->lock);
		/* ENOENT (not cached) and ENOTCONN (unmounted) are fine */
		fuse_lowlevel_notify_inval_entry(n->se, it->parent, it->name,
						 strlen(it->name));
		free(it);
		pthread_mutex_lock(&n->lock);
		n->sent++;
		pthread_cond_broadcast(&n->settled);
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

int fs_notifier_start(struct fs_notifier **out, struct fuse_session *se,
		      void (*refresh)(void *ctx, int64_t session), void *ctx)
{
	struct fs_notifier *n = calloc(1, sizeof(*n));
	pthread_condattr_t monotonic;

	*out = NULL;
	if (!n)
		return -1;
	n->se = se;
	n->refresh = refresh;
	n->ctx = ctx;
	n->tail = &n->head;
	pthread_mutex_init(&n->lock, NULL);
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&n->wake, &monotonic);
	pthread_condattr_destroy(&monotonic);
	pthread_cond_init(&n->settled, NULL);
	if (pthread_create(&n->thread, NULL, notify_loop, n) != 0) {
		pthread_cond_destroy(&n->settled);
		pthread_cond_destroy(&n->wake);
		pthread_mutex_destroy(&n->lock);
		free(n);
		return -1;
	}
	*out = n;
	return 0;
}

void fs_notifier_stop(struct fs_notifier *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stop = true;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
	pthread_cond_destroy(&n->settled);
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n);
}

void fs_notify_entry(struct fs_notifier *n, uint64_t parent, const char *name)
{
	size_t len = strlen(name);
	struct item *it;

	if (!n || !(it = malloc(sizeof(*it) + len + 1)))
		return;
	it->parent = parent;
	it->next = NULL;
	memcpy(it->name, name, len + 1);
	pthread_mutex_lock(&n->lock);
	*n->tail = it;
	n->tail = &it->next;
	n->queued++;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
}

void fs_notify_settle(struct fs_notifier *n)
{
	uint64_t target;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	/* the thread sends everything queued, even when stopping */
	target = n->queued;
	while (n->sent < target)
		pthread_cond_wait(&n->settled, &n->lock);
	pthread_mutex_unlock(&n->lock);
}

void fs_notify_session(struct fs_notifier *n, int64_t session)
{
	int64_t now = fclock_mono_ms();
	size_t i;

	if (!n || !n->refresh)
		return;
	pthread_mutex_lock(&n->lock);
	for (i = 0; i < n->npending && n->pending[i].session != session; i++)
		;
	/* more sessions than slots at once: the others go without */
	if (i == n->npending && n->npending < FS_REFRESH_SLOTS) {
		n->pending[n->npending++] = (struct pending){ session, now, now };
		/* it may be due before what the thread waits for now */
		pthread_cond_signal(&n->wake);
	} else if (i < n->npending) {
		/* no wake: a later change only moves its deadline on, which
		 * the thread finds when it wakes (a wake per change was a
		 * switch of threads per request of a busy session) */
		n->pending[i].last_ms = now;
	}
	pthread_mutex_unlock(&n->lock);
}
