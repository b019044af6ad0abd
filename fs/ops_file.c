/*
 * ops_file: the operations on open files (open, create, read, write,
 * flush, fsync, release); see ops_i.h.
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
#include <unistd.h>

#include "lib/fclock.h"
#include "lib/fname.h"
#include "ops_i.h"

static void release_handle(struct flowfs *fs, struct handle *h);


static int open_node(struct flowfs *fs, const struct node *n, int flags,
		     uid_t uid, struct handle **out)
{
	bool writing = (flags & O_ACCMODE) != O_RDONLY;
	const struct entry *e;
	struct handle *h;
	int ret;

	*out = NULL;
	if (n->type == N_ROOT)
		return -EISDIR;
	/* a snapshot takes no write */
	if (writing && fs_frozen(fs, n))
		return -EROFS;
	h = fs_handle_new(fs, H_FILE);
	if (!h)
		return -ENOMEM;
	h->ino = n->ino;
	h->uid = uid;
	if (n->type == N_REAL) {
		if (S_ISDIR(n->attr.mode)) {
			ret = -EISDIR;
			goto fail;
		}
		h->kind = H_FILE;
		h->session = n->attr.session;
		ret = tree_open(fs->tree, n->ino);
		if (ret < 0)
			goto fail;
		if (writing && (flags & O_TRUNC) && n->attr.size) {
			struct tree_setattr sa = { .what = TREE_SET_SIZE };
			struct tree_attr a;

			ret = tree_setattr(fs->tree, n->ino, &sa, &a);
			/* `: > file` on a full disk (contents.h) */
			if (ret == -ENOSPC && fs_spend_reserve(fs))
				ret = tree_setattr(fs->tree, n->ino, &sa, &a);
			if (ret < 0) {
				tree_release(fs->tree, n->ino);
				goto fail;
			}
		}
		*out = h;
		return 0;
	}
	if (n->type == N_VIEW && fs_view_is_dir(n)) {
		ret = -EISDIR;
		goto fail;
	}
	if (n->type == N_ITEM) {
		h->kind = writing ? H_DOC : H_GENERATED;
		h->session = n->s.id;
		fs_node_target(n, &h->target);
		h->item_key = n->item.key;
		if (!(writing && (flags & O_TRUNC))) {
			ret = fs_render_entry(fs, n, &h->content, &h->mtime_ns);
			if (ret < 0)
				goto fail;
		}
		ret = fs_open_budget(fs, h);
		if (ret < 0)
			goto fail;
		*out = h;
		return 0;
	}
	e = n->type == N_VIEW ? NULL : &fs_entries[n->row];
	if (e && e->kind == ENTRY_CONTROL) {
		/* reads nothing (a copy of the session gets an empty ctl) */
		h->kind = writing ? H_CONTROL : H_GENERATED;
		h->session = n->s.id;
		*out = h;
		return 0;
	}
	if (e && S_ISDIR(e->mode)) {
		ret = -EISDIR;
		goto fail;
	}
	/* the kernel follows links itself; this is an O_NOFOLLOW open (of a
	 * link: a stand-in for one is a file) */
	if (e && e->kind == ENTRY_LINK && !n->standin) {
		ret = -ELOOP;
		goto fail;
	}
	if (writing && fs_read_only_tree(n)) {
		ret = -EROFS;
		goto fail;
	}
	h->kind = !writing ? H_GENERATED
		  : e->kind == ENTRY_DOC ? H_DOC : H_SINK;
	h->session = n->s.id;
	fs_node_target(n, &h->target);
	if (h->kind == H_SINK)
		fs_node_path(fs, n, h->sink_path, sizeof(h->sink_path));
	/* a name made while absent reads as the empty file it is; a sink
	 * keeps what its file holds (any name in parameters_output/: the
	 * one file there), to tell a copy of it from news */
	if (h->kind == H_SINK ? !n->standin
			      : !(h->kind == H_DOC && (flags & O_TRUNC)) &&
					!n->nominal) {
		ret = fs_render_entry(fs, n, &h->content, &h->mtime_ns);
		if (ret == -ENOENT && h->kind == H_SINK)
			ret = 0;
		if (ret < 0)
			goto fail;
	}
	ret = fs_open_budget(fs, h);
	if (ret < 0)
		goto fail;
	/*
	 * O_TRUNC alone is no new version: shells open, dup2 and close the
	 * file before the first write, and that close must not commit an
	 * empty document.  The first write or truncate makes the draft.
	 */
	*out = h;
	return 0;
fail:
	fs_handle_free(fs, h);
	return ret;
}

static void set_open_flags(struct fuse_file_info *fi, const struct handle *h)
{
	fi->fh = (uint64_t)(uintptr_t)h;
	/* Real files change only through this mount: keep their pages
	 * between opens.  Generated ones are read fresh on every open. */
	fi->keep_cache = h->kind == H_FILE;
	/*
	 * and each open reads its own copy, the version it was rendered
	 * into: through the page cache (one per inode), a reader that
	 * opened parameters.json before a change and one that opened it
	 * after would read each other's pages, and the kernel would cut
	 * both at whichever size it heard of last.  (mmap stays possible,
	 * MAP_PRIVATE.)
	 */
	fi->direct_io = h->kind == H_GENERATED || h->kind == H_DOC;
}

void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = NULL;
	struct node n;
	int ret;

	if ((fi->flags & O_ACCMODE) == O_RDONLY && !(fi->flags & O_TRUNC))
		fs_lock_read(fs);
	else
		fs_lock_write(fs);
	ret = fs_resolve(fs, ino, &n);
	if (!ret)
		ret = open_node(fs, &n, fi->flags, fuse_req_ctx(req)->uid, &h);
	fs_unlock(fs);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	set_open_flags(fi, h);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* the caller was interrupted: undo the open */
		fs_lock_write(fs);
		release_handle(fs, h);
		fs_unlock(fs);
		fs_handle_free(fs, h);
	}
}

/*
 * create(2) of `name` in `parent`, opened with `flags`: a reserved name
 * of a session (above), a draft of a new document for <id>.json in a
 * collection's folder (its first valid close makes it a node, an edge, a
 * round), or a real file.
 */
static int create_in(struct flowfs *fs, fuse_req_t req, fuse_ino_t parent,
		     const char *name, mode_t mode, int flags,
		     struct fuse_entry_param *e, struct handle **h)
{
	struct node p, n;
	char id[256];
	int64_t key = 0;
	int coll, ret;

	ret = fs_resolve(fs, parent, &p);
	if (ret < 0)
		return ret;
	if (fs_frozen(fs, &p))
		return -EROFS;
	/* nothing to read in what is made anew (a document's draft) */
	flags |= O_TRUNC;
	coll = fs_item_name(&p, name, id, sizeof(id));
	if (coll >= 0) {
		ret = fs_collections[coll].create_draft(fs, p.attr.session, id,
							&key);
		if (!ret)
			ret = fs_resolve(fs, fs_item_ino((unsigned)coll, key), &n);
		if (!ret)
			ret = fs_fill_entry(fs, &p, &n, e);
	} else {
		ret = fs_make(fs, req, &p, name, S_IFREG | (mode & 07777), NULL,
			   &n, e);
	}
	if (!ret)
		ret = open_node(fs, &n, flags, fuse_req_ctx(req)->uid, h);
	/* its last close drops the draft unless it stored a version */
	if (!ret && coll >= 0)
		(*h)->owns_draft = (*h)->kind == H_DOC;
	/* a sink made under another name (in parameters_output/) is named
	 * so in the log */
	if (!ret && (*h)->kind == H_SINK)
		fs_session_path(&p, name, (*h)->sink_path,
			     sizeof((*h)->sink_path));
	return ret;
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct handle *h = NULL;
	int ret;

	fs_lock_write(fs);
	ret = create_in(fs, req, parent, name, mode, fi->flags, &e, &h);
	if (!ret)
		fs_entry_given(fs, e.ino);
	fs_unlock(fs);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	set_open_flags(fi, h);
	/* any failure: the kernel took neither the handle nor the entry */
	if (fuse_reply_create(req, &e, fi) < 0) {
		fs_lock_write(fs);
		release_handle(fs, h);
		fs_unlock(fs);
		fs_handle_free(fs, h);
		fs_entry_not_taken(fs, e.ino);
	}
}

/*
 * A read of a real file: from a connection of its own, outside `lock`,
 * when all its bytes are stored (readers of different files then read
 * side by side); under `lock` when some are still gathered in memory.
 */
static int read_file(struct flowfs *fs, fuse_ino_t ino, char *buf,
		     size_t size, off_t off, size_t *got)
{
	struct store *reader = NULL;
	int64_t fsize;
	int ret;

	fs_lock_read(fs);
	ret = tree_read_plan(fs->tree, ino, &fsize);
	if (ret == 0)
		reader = fs_reader_get(fs);
	if (!reader) {
		ret = tree_read(fs->tree, ino, buf, size, off, got);
		fs_unlock(fs);
		return ret;
	}
	fs_unlock(fs);
	ret = tree_read_stored(reader, ino, fsize, buf, size, off, got);
	fs_reader_put(fs, reader);
	/* it moved to a data file since the plan: its chunks are gone */
	if (ret == 1) {
		fs_lock_read(fs);
		ret = tree_read(fs->tree, ino, buf, size, off, got);
		fs_unlock(fs);
	}
	return ret;
}

/*
 * A read of a real file whose bytes are in a data file: replied from the
 * file itself (splice: the kernel moves its pages, the daemon copies
 * nothing), from a duplicate of its descriptor taken under the lock, so
 * that neither a release nor a copy-on-write meanwhile closes it under
 * the splice.  1: its bytes are in chunks (read_file()).
 */
static int read_spliced(fuse_req_t req, struct flowfs *fs, fuse_ino_t ino,
			size_t size, off_t off)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);
	int64_t fsize = 0;
	int fd = -1, ret;

	fs_lock_read(fs);
	ret = tree_read_fd(fs->tree, ino, &fd, &fsize);
	fs_unlock(fs);
	if (ret != 0)
		return ret;
	bv.buf[0].size = off < fsize ? (size_t)(fsize - off) < size
			 ? (size_t)(fsize - off) : size : 0;
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY;
	bv.buf[0].fd = fd;
	bv.buf[0].pos = off;
	fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
	close(fd);
	return 0;
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = fs_handle_of(fi);
	size_t got = 0;
	char *buf;
	int ret;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (h->kind == H_FILE) {
		ret = read_spliced(req, fs, ino, size, off);
		if (ret < 0)
			fuse_reply_err(req, -ret);
		if (ret <= 0)
			return;
	}
	/*
	 * Always reply from a private buffer: once the kernel has the reply,
	 * a RELEASE may free the handle on another thread while this one is
	 * still returning from writev().
	 */
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (h->kind != H_FILE) {
		/* a document's buffer changes with writes, truncates and
		 * flushes on other threads; a generated one (a sink's) never
		 * does */
		bool changes = h->kind == H_DOC;

		if (changes)
			fs_lock_read(fs);
		ret = 0;
		if ((size_t)off < h->content.len) {
			got = h->content.len - (size_t)off < size
				      ? h->content.len - (size_t)off : size;
			memcpy(buf, h->content.buf + off, got);
		}
		if (changes)
			fs_unlock(fs);
	} else {
		ret = read_file(fs, ino, buf, size, off, &got);
	}
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, buf, got);
	free(buf);
}

/*
 * A write to ctl: every line is a command, run now; the write fails with
 * the first command that fails (and status says why).
 */
static int run_control(struct flowfs *fs, struct handle *h, const char *buf,
		       size_t size)
{
	struct ferr err = FERR_INIT;
	struct session_info s;
	size_t start = 0;
	int ret;

	fs_lock_write(fs);
	ret = session_get(fs->st, h->session, &s);
	while (!ret && start < size) {
		const char *nl = memchr(buf + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - buf) : size;

		ret = fs_run_command(fs, &s, buf + start, end - start, &err);
		start = end + 1;
	}
	if (ret < 0 && err.message[0])
		fs_log_refusal(fs, &s, "ctl", &err);
	fs_changed_if(fs, h->session, ret);
	fs_unlock(fs);
	/*
	 * A restore replaced the session's rows: the kernel must forget the
	 * old ones before the writer goes on.  Waited for here, in a
	 * request (notify.h advises against it): the lock is let go, the
	 * writer holds no folder's lock (only ctl's), and the other request
	 * threads answer whatever the kernel needs meanwhile.
	 */
	if (fs_command_settle())
		fs_notify_settle(fs->notifier);
	return ret;
}

/* What is written to a sink is dropped, but compared with what the file
 * holds first: a copy of it brought back is no news (flush_sink()). */
static void sink_write(struct handle *h, const char *buf, size_t size,
		       size_t off)
{
	if (off > h->content.len || size > h->content.len - off ||
	    memcmp(h->content.buf + off, buf, size))
		h->sink_differs = true;
	if (off + size > h->sink_end)
		h->sink_end = off + size;
	h->sink_bytes += size;
	h->dirty = true;
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = fs_handle_of(fi);
	int ret = 0;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (h->kind == H_SINK) {
		/* a flush of a dup'ed descriptor may read it meanwhile */
		fs_lock_read(fs);
		sink_write(h, buf, size, (size_t)off);
		fs_unlock(fs);
		fuse_reply_write(req, size);
		return;
	}
	if (h->kind == H_DOC) {
		if ((size_t)off > DOC_MAX_SIZE ||
		    size > DOC_MAX_SIZE - (size_t)off) {
			fuse_reply_err(req, EFBIG);
			return;
		}
		/* a flush of a dup'ed descriptor may read it meanwhile,
		 * outside `lock` too (fs_commit_target()) */
		fs_lock_write(fs);
		ret = fs_buffer_write(fs, h, buf, size, (size_t)off);
		if (!ret) {
			h->dirty = true;
			h->refused = false;
		}
		fs_unlock(fs);
		if (ret < 0)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_write(req, size);
		return;
	}
	if (h->kind == H_CONTROL) {
		ret = run_control(fs, h, buf, size);
		if (ret < 0)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_write(req, size);
		return;
	}
	if (h->kind != H_FILE) {
		fuse_reply_err(req, EBADF);
		return;
	}
	/* POSIX: a write that reaches past the largest file writes the
	 * bytes that fit; only a write starting there fails (EFBIG) */
	if (off >= 0 && off < TREE_MAX_SIZE &&
	    (int64_t)size > TREE_MAX_SIZE - off)
		size = (size_t)(TREE_MAX_SIZE - off);
	fs_lock_gather(fs);
	/* the reserve spent: no write until it is made again */
	ret = fs_room_to_grow(fs);
	if (!ret)
		ret = tree_write(fs->tree, ino, buf, size, off);
	if (!ret)
		h->dirty = true;
	fs_unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, size);
}

/* What a sink was given is dropped; the log says so unless it was what
 * the file holds. */
static void flush_sink(struct flowfs *fs, struct handle *h)
{
	struct node n;

	if (!h->dirty)
		return;
	h->dirty = false;
	/* a session gone meanwhile has no log to tell */
	if ((h->sink_differs || h->sink_end != h->content.len) &&
	    fs_resolve(fs, h->ino, &n) == 0)
		fs_log_dropped(fs, &n, h->sink_path, h->sink_bytes, "written to");
	h->sink_bytes = 0;
	h->sink_differs = false;
}

/* The last close of a file handle (the caller holds the lock). */
static void release_handle(struct flowfs *fs, struct handle *h)
{
	if (h->kind == H_SINK)
		flush_sink(fs, h);
	if (h->kind == H_FILE) {
		tree_release(fs->tree, h->ino);
	} else if (h->kind == H_DOC) {
		/* flush normally came first; this catches writers that
		 * never flushed (the error can only reach status) */
		fs_flush_doc(fs, h, false);
		/* a new document that never got a valid version */
		if (h->owns_draft)
			fs_collections[h->target.coll].drop_draft(fs,
								  h->item_key);
	}
}

/*
 * A file written in a session whose skill imports an upload (datcom's
 * deck) may be that upload: parse it now, in the writer's time and
 * outside `lock`, into the binding cache, so that no reader (status,
 * for005.dat: every session's) waits for the parse.  In any other
 * session a close or rename costs a session_get() and nothing more.
 */
void fs_take_in_uploads(struct flowfs *fs, int64_t session)
{
	struct sbuf problems = SBUF_INIT;
	struct session_info s;
	struct fs_binding b;

	if (!session || session_get(fs->st, session, &s) < 0 || !s.skill[0])
		return;
	fs_binding_init(fs, &s, &b);
	if (!binding_imports(&b.ctx))
		return;
	b.ctx.leave = fs_leave_cb;
	b.ctx.enter = fs_enter_cb;
	b.ctx.lock_ctx = fs;
	binding_problems(&b.ctx, &problems, NULL, NULL);
	sbuf_release(&problems);
}

/*
 * The lock a flush (or the last close: `release`) of `h` needs: a
 * writer's when it stores something — a document, a file's gathered
 * bytes, an fsync, the last close of an unlinked file — else a
 * reader's, so that closing what was only read never waits for another
 * session's commit.  A sink given bytes takes a writer's too: what it
 * logs (its dropped bytes) rewrites the session's line that sums up a
 * copy's (fs_log_dropped()).
 */
static void lock_handle(struct flowfs *fs, const struct handle *h,
			bool durable, bool release)
{
	if (h->kind == H_DOC || (h->kind == H_SINK && h->dirty)) {
		fs_lock_write(fs);
		return;
	}
	fs_lock_read(fs);
	/* a file written through `h`: its close may import a deck */
	if (h->kind == H_FILE &&
	    (h->dirty || (release ? tree_release_writes(fs->tree, h->ino)
				  : tree_flush_writes(fs->tree, h->ino,
						      durable)))) {
		fs_unlock(fs);
		fs_lock_write(fs);
	}
}

static void sync_handle(fuse_req_t req, struct fuse_file_info *fi,
			bool durable)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = fs_handle_of(fi);
	int ret = 0;

	lock_handle(fs, h, durable, false);
	if (h->kind == H_FILE) {
		ret = tree_flush(fs->tree, h->ino, durable);
		/* what was written may bind an input, import a deck */
		if (h->dirty && !fs_changed_if(fs, h->session, ret))
			fs_take_in_uploads(fs, h->session);
		h->dirty = false;
	}
	else if (h->kind == H_DOC)
		ret = fs_flush_doc(fs, h, durable);
	else if (h->kind == H_SINK)
		flush_sink(fs, h);
	fs_unlock(fs);
	fuse_reply_err(req, -ret);
}

void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	sync_handle(req, fi, false);
}

void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	sync_handle(req, fi, true);
}

void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = fs_handle_of(fi);

	(void)ino;
	lock_handle(fs, h, false, true);
	release_handle(fs, h);
	fs_unlock(fs);
	fs_handle_free(fs, h);
	fuse_reply_err(req, 0);
}

/*
 * copy_file_range(2) inside the mount (cp, cp --reflink): the whole of a
 * large file into an empty one shares its data file — nothing is copied
 * until either side is written.  Anything else is EOPNOTSUPP, and the
 * caller (coreutils, the kernel) copies the bytes itself.
 */
void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			off_t off_out, struct fuse_file_info *fi_out,
			size_t len, int flags)
{
	struct flowfs *fs = fs_of(req);
	struct handle *in = fs_handle_of(fi_in), *out = fs_handle_of(fi_out);
	struct tree_attr a;
	int64_t shared = 0;
	int ret = -EOPNOTSUPP;

	if (flags || in->kind != H_FILE || out->kind != H_FILE) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	fs_lock_write(fs);
	ret = tree_getattr(fs->tree, ino_in, &a);
	/* the call after a whole file was shared: its end */
	if (!ret && off_in && off_in >= a.size)
		ret = 1;
	else if (!ret)
		ret = off_in || off_out || (int64_t)len < a.size ? -EOPNOTSUPP
			: tree_share(fs->tree, ino_in, ino_out, &shared);
	if (!ret) {
		out->dirty = true;
		fs_changed(fs, out->session);
	}
	fs_unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, (size_t)shared);
}

void fs_release_open_handles(struct flowfs *fs)
{
	while (fs->open_handles) {
		struct handle *h = fs->open_handles;

		fs_lock_write(fs);
		if (h->kind != H_DIR)
			release_handle(fs, h);
		fs_unlock(fs);
		fs_handle_free(fs, h);
	}
}
