/*
 * The filesystem's two locks (fs.h, struct flowfs): readers take `lock`,
 * writers write_lock and then `lock`, and a writer may let go of `lock`
 * for its slow work.
 *
 * A build with sanitizers (FLOWFS_CHECK_LOCKS) also checks the rule the
 * design rests on: every commit, on either connection, is made by the
 * thread holding write_lock.  A request classed as a reader that writes
 * would wait for SQLite's lock while holding `lock`, and so make every
 * other request wait for the writer after all; the check makes it an
 * abort in the tests instead of a stall nobody sees.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fs.h"

/* Who the calling thread is, for the holders' fields: pthread_self()
 * costs no system call (every request locks and unlocks). */
static unsigned long thread_id(void)
{
	return (unsigned long)pthread_self();
}

bool fs_holds_write(struct flowfs *fs)
{
	return atomic_load(&fs->writer_tid) == thread_id();
}

bool fs_holds_lock(struct flowfs *fs)
{
	return atomic_load(&fs->lock_tid) == thread_id();
}

static void take_lock(struct flowfs *fs)
{
	pthread_mutex_lock(&fs->lock);
	atomic_store(&fs->lock_tid, thread_id());
}

static void let_go_lock(struct flowfs *fs)
{
	atomic_store(&fs->lock_tid, 0);
	pthread_mutex_unlock(&fs->lock);
}

void fs_lock_read(struct flowfs *fs)
{
	take_lock(fs);
}

static void spill_wait(struct flowfs *fs)
{
	pthread_mutex_lock(&fs->spill_lock);
	while (atomic_load(&fs->spill_due))
		pthread_cond_wait(&fs->spill_cond, &fs->spill_lock);
	pthread_mutex_unlock(&fs->spill_lock);
}

static void take_write(struct flowfs *fs, bool gather)
{
	pthread_mutex_lock(&fs->write_lock);
	atomic_store(&fs->writer_tid, thread_id());
	/* SQLite's one writer is the spill thread until it settles */
	if (!gather && atomic_load(&fs->spill_due))
		spill_wait(fs);
	take_lock(fs);
}

void fs_lock_gather(struct flowfs *fs)
{
	take_write(fs, true);
}

void fs_lock_write(struct flowfs *fs)
{
	take_write(fs, false);
}

/*
 * A reader that logged leaves its lines to a writer: itself, once it let
 * go of `lock` (the order is write_lock first), before it answers, so
 * that the log shows them when the call that caused them returns.
 */
void fs_unlock(struct flowfs *fs)
{
	bool writer = fs_holds_write(fs), logged = fs->log_queue != NULL;

	/* a writer gathering beside a spill leaves them to the readers who
	 * logged them: its commit would wait for the spill's */
	if (writer && logged && !atomic_load(&fs->spill_due))
		fs_log_flush(fs);
	/* the data files the writer's commits left unnamed (a delete, a
	 * cut, a copy on write) go now: space back at once */
	if (writer && fs->tree && !atomic_load(&fs->spill_due)) {
		tree_sweep(fs->tree);
		/* the reserve spent by a removal, made again with its room */
		fs_room_to_grow(fs);
	}
	let_go_lock(fs);
	if (writer) {
		atomic_store(&fs->writer_tid, 0);
		pthread_mutex_unlock(&fs->write_lock);
	} else if (logged) {
		fs_lock_write(fs);
		fs_log_flush(fs);
		fs_unlock(fs);
	}
}

void fs_leave(struct flowfs *fs)
{
#ifdef FLOWFS_CHECK_LOCKS
	if (!fs_holds_write(fs)) {
		fprintf(stderr, "flowfs: BUG: fs_leave() by a reader\n");
		abort();
	}
#endif
	fs->writer_out = true;
	let_go_lock(fs);
}

void fs_enter(struct flowfs *fs)
{
	take_lock(fs);
	fs->writer_out = false;
}

void fs_leave_cb(void *fs)
{
	fs_leave(fs);
}

void fs_enter_cb(void *fs)
{
	fs_enter(fs);
}

static void *spill_loop(void *arg)
{
	struct flowfs *fs = arg;

	pthread_mutex_lock(&fs->spill_lock);
	for (;;) {
		while (!atomic_load(&fs->spill_due) && !fs->spill_stop)
			pthread_cond_wait(&fs->spill_cond, &fs->spill_lock);
		if (!atomic_load(&fs->spill_due))
			break;
		pthread_mutex_unlock(&fs->spill_lock);
		tree_spill_commit(fs->tree);
		take_lock(fs);
		tree_spill_settle(fs->tree);
		let_go_lock(fs);
		pthread_mutex_lock(&fs->spill_lock);
		atomic_store(&fs->spill_due, false);
		pthread_cond_broadcast(&fs->spill_cond);
	}
	pthread_mutex_unlock(&fs->spill_lock);
	return NULL;
}

static void spill_kick_cb(void *arg)
{
	struct flowfs *fs = arg;

	pthread_mutex_lock(&fs->spill_lock);
	atomic_store(&fs->spill_due, true);
	pthread_cond_broadcast(&fs->spill_cond);
	pthread_mutex_unlock(&fs->spill_lock);
}

static void spill_wait_cb(void *arg)
{
	spill_wait(arg);
}

int fs_spiller_start(struct flowfs *fs)
{
	struct ferr err = FERR_INIT;
	int ret;

	ret = store_open_beside(fs->st, &fs->sst, &err);
	if (ret < 0)
		return ret;
	pthread_mutex_init(&fs->spill_lock, NULL);
	pthread_cond_init(&fs->spill_cond, NULL);
	fs->spill_stop = false;
	atomic_store(&fs->spill_due, false);
	ret = -pthread_create(&fs->spill_thread, NULL, spill_loop, fs);
	if (ret < 0) {
		pthread_cond_destroy(&fs->spill_cond);
		pthread_mutex_destroy(&fs->spill_lock);
		store_close(fs->sst);
		fs->sst = NULL;
		return ret;
	}
	tree_set_spiller(fs->tree, fs->sst, spill_kick_cb, spill_wait_cb);
	return 0;
}

void fs_spiller_stop(struct flowfs *fs)
{
	if (!fs->sst)
		return;
	pthread_mutex_lock(&fs->spill_lock);
	fs->spill_stop = true;
	pthread_cond_broadcast(&fs->spill_cond);
	pthread_mutex_unlock(&fs->spill_lock);
	pthread_join(fs->spill_thread, NULL);
	tree_set_spiller(fs->tree, NULL, NULL, NULL);
	pthread_cond_destroy(&fs->spill_cond);
	pthread_mutex_destroy(&fs->spill_lock);
	store_close(fs->sst);
	fs->sst = NULL;
}

struct store *fs_reader_get(struct flowfs *fs)
{
	struct store *st = NULL;
	struct ferr err = FERR_INIT;
	int free_slot = -1;

	pthread_mutex_lock(&fs->readers_lock);
	for (int i = 0; i < FS_READERS && !st; i++) {
		if (fs->reader_busy[i])
			continue;
		if (fs->readers[i]) {
			st = fs->readers[i];
			fs->reader_busy[i] = true;
		} else if (free_slot < 0) {
			free_slot = i;
		}
	}
	/* a reader reads chunks once: a small page cache is enough */
	if (!st && free_slot >= 0 &&
	    store_open_beside(fs->st, &fs->readers[free_slot], &err) == 0 &&
	    store_cache_limit(fs->readers[free_slot], 512) == 0) {
		st = fs->readers[free_slot];
		fs->reader_busy[free_slot] = true;
		fs_check_locks(fs, st);
	}
	pthread_mutex_unlock(&fs->readers_lock);
	return st;
}

void fs_reader_put(struct flowfs *fs, struct store *st)
{
	pthread_mutex_lock(&fs->readers_lock);
	for (int i = 0; i < FS_READERS; i++)
		if (fs->readers[i] == st)
			fs->reader_busy[i] = false;
	pthread_mutex_unlock(&fs->readers_lock);
}

void fs_readers_close(struct flowfs *fs)
{
	for (int i = 0; i < FS_READERS; i++) {
		store_close(fs->readers[i]);
		fs->readers[i] = NULL;
	}
}

#ifdef FLOWFS_CHECK_LOCKS
#include <sanitizer/common_interface_defs.h>

static int check_commit(void *arg)
{
	struct flowfs *fs = arg;

	if (!fs_holds_write(fs)) {
		fprintf(stderr, "flowfs: BUG: a commit by a thread that does"
			" not hold the write lock\n");
		__sanitizer_print_stack_trace();
		abort();
	}
	return 0;
}
#endif

void fs_check_locks(struct flowfs *fs, struct store *st)
{
#ifdef FLOWFS_CHECK_LOCKS
	store_on_commit(st, fs ? check_commit : NULL, fs);
#else
	(void)fs;
	(void)st;
#endif
}
