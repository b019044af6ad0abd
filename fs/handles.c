/*
 * handles: open file and folder handles, and the budgets of the bytes
 * their buffers hold; see ops_i.h.
 */

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "lib/fclock.h"
#include "lib/fname.h"
#include "ops_i.h"


struct handle *fs_handle_of(struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

/* A new handle of `kind`, on the mount's list of open handles. */
struct handle *fs_handle_new(struct flowfs *fs, enum handle_kind kind)
{
	struct handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	sbuf_init(&h->content);
	h->kind = kind;
	pthread_mutex_lock(&fs->handles_lock);
	h->next = fs->open_handles;
	if (h->next)
		h->next->prev = h;
	fs->open_handles = h;
	pthread_mutex_unlock(&fs->handles_lock);
	return h;
}

/* The mount's total that h's buffer counts in (doc_budget()). */
static size_t *budget_total(struct flowfs *fs, const struct handle *h)
{
	return h->kind == H_DOC ? &fs->doc_bytes : &fs->copy_bytes;
}

void fs_handle_free(struct flowfs *fs, struct handle *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&fs->handles_lock);
	*budget_total(fs, h) -= h->budgeted;
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->open_handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->handles_lock);
	sbuf_release(&h->content);
	for (size_t i = 0; i < h->nitems; i++)
		free(h->items[i].name);
	free(h->items);
	free(h);
}

/*
 * Count `len` bytes for h's buffer when the budgets (above) allow:
 * documents being written and generated files open (each holds the
 * copy it was rendered into) each have their own, so that readers (of
 * the log that says why a write was refused, say) are not refused for a
 * writer's drafts.  The handle list is what a session's and a user's
 * shares are summed from, walked only when the mount's total could let
 * one pass its own (the smallest, DOC_SESSION_BUDGET).
 */
static int doc_budget(struct flowfs *fs, struct handle *h, size_t len)
{
	size_t session = 0, user = 0, others = 0, *total;
	bool other = h->uid != fs->uid;
	int ret = 0;

	pthread_mutex_lock(&fs->handles_lock);
	total = budget_total(fs, h);
	if (*total - h->budgeted + len > DOC_MOUNT_BUDGET) {
		ret = -ENOSPC;
	} else if (len > h->budgeted &&
		   *total - h->budgeted + len > DOC_SESSION_BUDGET) {
		for (const struct handle *o = fs->open_handles; o; o = o->next) {
			if (budget_total(fs, o) != total)
				continue;
			if (o->session == h->session)
				session += o->budgeted;
			if (o->uid == h->uid)
				user += o->budgeted;
			if (o->uid != fs->uid)
				others += o->budgeted;
		}
		if (session - h->budgeted + len > DOC_SESSION_BUDGET ||
		    (other && (user - h->budgeted + len > DOC_USER_BUDGET ||
			       others - h->budgeted + len > DOC_OTHERS_BUDGET)))
			ret = -ENOSPC;
	}
	if (!ret) {
		*total = *total - h->budgeted + len;
		h->budgeted = len;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	return ret;
}

/* The log's line for a buffer refused room (once per descriptor), the
 * lock held. */
static void log_budget(struct flowfs *fs, struct handle *h, size_t len)
{
	struct session_info s;
	char path[STATUS_PATH_MAX], line[FERR_MESSAGE_MAX];

	if (h->budget_logged || session_get(fs->st, h->session, &s) < 0)
		return;
	h->budget_logged = true;
	fs_target_path(&h->target, path, sizeof(path));
	if (h->uid == fs->uid)
		snprintf(line, sizeof(line),
			 "no room to hold %zu bytes: %s hold at most %zu MiB per session and %zu MiB in all until they are closed",
			 len, h->kind == H_DOC ? "documents being written"
					       : "generated files open",
			 DOC_SESSION_BUDGET >> 20, DOC_MOUNT_BUDGET >> 20);
	else
		snprintf(line, sizeof(line),
			 "no room to hold %zu bytes: %s hold at most %zu MiB per session, %zu MiB per user other than the mount's (%zu MiB for all of them) and %zu MiB in all until they are closed",
			 len, h->kind == H_DOC ? "documents being written"
					       : "generated files open",
			 DOC_SESSION_BUDGET >> 20, DOC_USER_BUDGET >> 20,
			 DOC_OTHERS_BUDGET >> 20, DOC_MOUNT_BUDGET >> 20);
	fs_log(fs, s.id, s.name, path, line);
}

/* A document opened for writing, or a generated file opened at all,
 * holds what it read in its buffer. */
int fs_open_budget(struct flowfs *fs, struct handle *h)
{
	int ret = h->kind == H_DOC || h->kind == H_GENERATED ||
			  h->kind == H_SINK
			  ? doc_budget(fs, h, h->content.len) : 0;

	if (ret < 0)
		log_budget(fs, h, h->content.len);
	return ret;
}

/* The handle's buffer (a document's draft) made `size` bytes long: cut,
 * or grown with zeros. */
int fs_buffer_resize(struct flowfs *fs, struct handle *h, size_t size)
{
	int ret = doc_budget(fs, h, size);

	if (ret < 0) {
		log_budget(fs, h, size);
		return ret;
	}
	if (size > h->content.len) {
		size_t old = h->content.len;

		ret = sbuf_grow(&h->content, size - old);
		if (ret < 0)
			return ret;
		memset(h->content.buf + old, 0, size - old);
	} else if (h->content.alloc > 2 * size + 65536) {
		/* the budget counts what is held: a cut buffer gives its
		 * memory back too (write 1 byte at 16 MiB, truncate to 0,
		 * again on another descriptor...) */
		struct sbuf cut = SBUF_INIT;

		if (sbuf_add(&cut, h->content.buf, size) < 0)
			return -ENOMEM;
		sbuf_release(&h->content);
		h->content = cut;
		return 0;
	}
	sbuf_setlen(&h->content, size);
	return 0;
}

/* `size` bytes at `off` into a document's draft. */
int fs_buffer_write(struct flowfs *fs, struct handle *h, const char *buf,
			size_t size, size_t off)
{
	int ret = off + size > h->content.len
			  ? fs_buffer_resize(fs, h, off + size) : 0;

	if (!ret)
		memcpy(h->content.buf + off, buf, size);
	return ret;
}
