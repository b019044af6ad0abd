#include "notify.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct item {
	uint64_t parent;
	struct item *next;
	char name[];
};

struct fs_notifier {
	struct fuse_session *se;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t settled;		/* `sent` moved */
	struct item *head, **tail;
	uint64_t queued, sent;		/* counts since start */
	bool stop;
};

static void *notify_loop(void *arg)
{
	struct fs_notifier *n = arg;

	pthread_mutex_lock(&n->lock);
	for (;;) {
		struct item *it;

		while (!n->head && !n->stop)
			pthread_cond_wait(&n->wake, &n->lock);
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

int fs_notifier_start(struct fs_notifier **out, struct fuse_session *se)
{
	struct fs_notifier *n = calloc(1, sizeof(*n));

	*out = NULL;
	if (!n)
		return -1;
	n->se = se;
	n->tail = &n->head;
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->wake, NULL);
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
