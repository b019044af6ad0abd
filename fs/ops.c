/*
 * ops: the FUSE low-level operations table, and the operations on one
 * inode (lookup, getattr, setattr, readlink, forget, statfs).  The others:
 * ops_name.c (make, remove, rename), ops_file.c (open, read, write, close),
 * ops_dir.c (listings).
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
#include "store/contents.h"


/* The kernel forgets `n` references: a count, unless it was the last one
 * of an unlinked file, whose row then goes (a writer's work).  A row the
 * store could not delete now stays unlinked (nlink 0) until the next
 * mount sweeps it (tree_new()). */
static void forget(struct flowfs *fs, fuse_ino_t ino, uint64_t n)
{
	fs_lock_read(fs);
	if (tree_forget_deletes(fs->tree, ino, n)) {
		fs_unlock(fs);
		fs_lock_write(fs);
	}
	tree_forget(fs->tree, ino, n);
	fs_unlock(fs);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct flowfs *fs = fs_of(req);

	if (fs_ino_counted(ino))
		forget(fs, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct flowfs *fs = fs_of(req);

	/* one at a time: each may delete a big file's data (the lock is
	 * not held across a batch of them) */
	for (size_t i = 0; i < count; i++) {
		if (fs_ino_counted(forgets[i].ino))
			forget(fs, forgets[i].ino, forgets[i].nlookup);
	}
	fuse_reply_none(req);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct flowfs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct node p, n;
	bool made;
	int ret;

	if (strlen(name) > FNAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	fs_lock_read(fs);
	ret = fs_resolve(fs, parent, &p);
	if (!ret)
		ret = fs_lookup_seen(fs, req, &p, name, &n, &made);
	if (!ret)
		ret = fs_fill_made_entry(fs, &p, &n, made, &e);
	/* a name a process sees its own way: the kernel asks each time */
	if (!ret && fs_seen_named(fs, p.ino, name))
		e.entry_timeout = 0.0;
	if (!ret)
		ret = fs_entry_given(fs, e.ino);
	fs_unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else if (fuse_reply_entry(req, &e) < 0)
		fs_entry_not_taken(fs, e.ino);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = fi ? fs_handle_of(fi) : NULL;
	bool made = h && h->kind == H_SINK;
	struct stat st;
	struct node n;
	bool generated;
	int ret;

	/* Through an open handle of generated content or a document, its
	 * copy answers (for a writer: what it has written so far). */
	if (h && h->kind != H_GENERATED && h->kind != H_DOC)
		h = NULL;
	fs_lock_read(fs);
	ret = fs_resolve(fs, ino, &n);
	/* absent now, but made by the caller (a writer of it, cp -a setting
	 * its times, tar's check of its placeholder): there for it */
	if (!ret)
		ret = fs_stat_made(fs, req, &n, &st, &generated, h, made);
	fs_unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, generated ? 0.0 : LONG_TIMEOUT);
}

static void setattr_real(struct flowfs *fs, fuse_req_t req, fuse_ino_t ino,
			 struct stat *attr, int to_set)
{
	struct tree_setattr sa = { 0 };
	struct tree_attr a;
	struct stat st;
	int ret;

	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.what |= TREE_SET_MODE;
		sa.mode = attr->st_mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.what |= TREE_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.what |= TREE_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.what |= TREE_SET_SIZE;
		sa.size = attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		sa.what |= TREE_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.what |= TREE_SET_ATIME;
		sa.atime_ns = fs_ns_from_ts(&attr->st_atim);
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		sa.what |= TREE_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.what |= TREE_SET_MTIME;
		sa.mtime_ns = fs_ns_from_ts(&attr->st_mtim);
	}
	fs_lock_write(fs);
	{
		struct node n;

		ret = fs_resolve(fs, ino, &n);
		if (!ret && fs_frozen(fs, &n))
			ret = -EROFS;
	}
	if (!ret)
		ret = tree_setattr(fs->tree, ino, &sa, &a);
	/* a cut on a full disk: the reserve lets it write its log */
	if (ret == -ENOSPC && (sa.what & TREE_SET_SIZE) &&
	    fs_spend_reserve(fs))
		ret = tree_setattr(fs->tree, ino, &sa, &a);
	/* a cut uploads/deck changes output/for005.dat */
	if (!ret && (to_set & FUSE_SET_ATTR_SIZE))
		fs_changed(fs, a.session);
	fs_unlock(fs);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fs_stat_from_attr(&a, &st);
	fuse_reply_attr(req, &st, LONG_TIMEOUT);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = fi ? fs_handle_of(fi) : NULL;
	const int times = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			  FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW |
			  FUSE_SET_ATTR_CTIME;
	const struct handle *snap;
	struct stat st;
	struct node n;
	bool generated;
	int ret;

	/* touch(1) of a refresh (refresh.c): watchers look, nothing changes */
	if (fs_refresher_is(fs, fuse_req_ctx(req)->pid)) {
		op_getattr(req, ino, NULL);
		return;
	}
	if (!fs_ino_is_virtual(ino) && ino != FS_ROOT_INO) {
		setattr_real(fs, req, ino, attr, to_set);
		return;
	}
	if (h && h->kind != H_DOC)
		h = NULL;
	/* an open document's size and time are its handle's (op_getattr) */
	snap = h;
	fs_lock_write(fs);
	ret = fs_resolve(fs, ino, &n);
	if (ret < 0)
		goto out;
	if (fs_read_only_tree(&n) || n.type == N_ROOT || fs_frozen(fs, &n)) {
		ret = (to_set & ~times) ? -EROFS
					: fs_node_stat_snap(fs, &n, &st, &generated,
							 snap);
		goto out;
	}
	/* not there now, but made by the caller (reserved names, above):
	 * cp -a sets its times and mode */
	ret = fs_stat_made(fs, req, &n, &st, &generated, snap, false);
	if (ret < 0)
		goto out;
	/* a copy brought back sets the mode and owner it had: the ones
	 * there are fine, others are not flowfs's to change — but for
	 * a name the caller made, which is nothing (rsync's temporary files
	 * in parameters_output/ are 0600) */
	if ((((to_set & FUSE_SET_ATTR_MODE) &&
	      (attr->st_mode & 07777) != (st.st_mode & 07777)) ||
	     ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != st.st_uid) ||
	     ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != st.st_gid)) &&
	    !n.nominal && !fs_made_by_caller(fs, req, ino)) {
		ret = -EPERM;
		goto out;
	}
	/* touch(1) on a generated file: nothing to store, not an error */
	if (!(to_set & FUSE_SET_ATTR_SIZE))
		goto out;
	/* Only an open document can be cut: its buffer is the draft of the
	 * next version.  A generated file takes it and stays as it is, as
	 * it does with what is written to it. */
	if (!h) {
		ret = n.type == N_ITEM || fs_entries[n.row].kind == ENTRY_DOC
			      ? -EINVAL : 0;
		goto out;
	}
	ret = attr->st_size > DOC_MAX_SIZE
		      ? -EFBIG : fs_buffer_resize(fs, h, (size_t)attr->st_size);
	if (ret < 0)
		goto out;
	h->dirty = true;
	h->refused = false;
	/* the size it has now */
	ret = fs_node_stat_snap(fs, &n, &st, &generated, snap);
out:
	fs_unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, 0.0);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct flowfs *fs = fs_of(req);
	struct sbuf sb = SBUF_INIT;
	struct node n;
	int64_t mtime;
	int ret;

	if (ino == FS_ROOT_INO) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fs_lock_read(fs);
	if (!fs_ino_is_virtual(ino)) {
		ret = tree_readlink(fs->tree, ino, &sb);
	} else {
		ret = fs_resolve(fs, ino, &n);
		if (!ret && (n.type != N_ENTRY ||
			     fs_entries[n.row].kind != ENTRY_LINK))
			ret = -EINVAL;
		if (!ret)
			ret = fs_render_entry(fs, &n, &sb, &mtime);
	}
	fs_unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_readlink(req, sb.buf);
	sbuf_release(&sb);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	int ret;

	(void)ino;
	(void)datasync;
	(void)fi;
	fs_lock_write(fs);
	ret = store_sync(fs->st);
	fs_unlock(fs);
	fuse_reply_err(req, -ret);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct flowfs *fs = fs_of(req);
	struct statvfs sv;

	int64_t used = 0, free_list = 0, data = 0;
	int ret;

	(void)ino;
	if (statvfs(store_path(fs->st), &sv) < 0)
		memset(&sv, 0, sizeof(sv));
	fs_lock_read(fs);
	ret = store_space(fs->st, &used, &free_list);
	if (!ret)
		ret = contents_space(store_contents(fs->st), fs->st, &data);
	fs_unlock(fs);
	used += data;
	/*
	 * What flowfs holds is what is used (the database's pages and the
	 * data files beside it, a shared one once); what it could still
	 * take, the disk's room plus the database's pages waiting to be
	 * given back, is free: `df` on the mount shows flowfs's own size,
	 * not the disk's.  (Files and inodes stay the disk's.)
	 */
	if (!ret && sv.f_frsize) {
		fsblkcnt_t held = (fsblkcnt_t)((used + (int64_t)sv.f_frsize - 1) /
					       (int64_t)sv.f_frsize);
		fsblkcnt_t room = sv.f_bavail +
				  (fsblkcnt_t)(free_list / (int64_t)sv.f_frsize);

		/* what writes may take: not the reserve (contents.h), and
		 * while it is spent, not the room it waits for */
		if (!contents_reserved(store_contents(fs->st))) {
			fsblkcnt_t slop = CONTENTS_RESERVE / sv.f_frsize;

			room = room > slop ? room - slop : 0;
		}
		sv.f_blocks = held + room;
		sv.f_bfree = sv.f_bavail = room;
	}
	sv.f_namemax = FNAME_MAX;
	fuse_reply_statfs(req, &sv);
}

bool fs_spend_reserve(struct flowfs *fs)
{
	return contents_unreserve(store_contents(fs->st));
}

int fs_room_to_grow(struct flowfs *fs)
{
	struct contents *c = store_contents(fs->st);

	return contents_reserved(c) ? 0 : contents_reserve(c);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* Always send attributes with listings: ls -l is the common case. */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* Reads of data files are spliced (ops_file.c: read_spliced()):
	 * the kernel moves the file's pages to the reply. */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
	/* Fewer, larger requests: each round trip costs 20-25 us here. */
	conn->max_write = 1024 * 1024;
	conn->max_readahead = 1024 * 1024;
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.copy_file_range = op_copy_file_range,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.create = op_create,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
};
