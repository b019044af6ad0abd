/*
 * ops_dir: folder listings (opendir, readdir, readdirplus, releasedir);
 * see ops_i.h.
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

static int dir_add_rows_of(struct flowfs *fs, struct handle *h, size_t *alloc,
			   const struct node *dir, bool trash);


static int dir_add(struct handle *h, size_t *alloc, const char *name,
		   const struct stat *st, bool generated, double timeout)
{
	struct dir_item *it;

	if (h->nitems == *alloc) {
		size_t n = *alloc ? *alloc * 2 : 16;
		struct dir_item *p = realloc(h->items, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		h->items = p;
		*alloc = n;
	}
	it = &h->items[h->nitems];
	it->name = strdup(name);
	if (!it->name)
		return -ENOMEM;
	it->st = *st;
	it->generated = generated;
	it->entry_timeout = timeout;
	h->nitems++;
	return 0;
}

/* Add node `n` of folder `dir`; an entry that does not exist now is
 * left out. */
static int dir_add_node(struct flowfs *fs, struct handle *h, size_t *alloc,
			const struct node *dir, const char *name,
			const struct node *n)
{
	struct stat st;
	bool generated;
	int ret = fs_node_stat(fs, n, &st, &generated);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	/* a name a process sees its own way: the kernel asks each time */
	return dir_add(h, alloc, name, &st, generated,
		       n->type == N_ENTRY && fs_seen_named(fs, dir->ino, name)
			       ? 0.0 : fs_entry_timeout(dir, n, st.st_mode));
}

/* The entries of the table that live in folder `dir`. */
static int dir_add_entries(struct flowfs *fs, struct handle *h, size_t *alloc,
			   enum entry_scope scope, const struct node *dir)
{
	for (unsigned row = 1; row < fs_entry_count; row++) {
		const struct entry *e = &fs_entries[row];
		struct node n;
		int ret;

		if (e->scope != scope || e->hidden)
			continue;
		ret = fs_resolve_row(fs, dir, row, &n);
		if (!ret) {
			struct sbuf buf = SBUF_INIT;
			const char *name = fs_entry_name(fs, dir->has_session
							       ? &dir->s : NULL,
							 row, &buf);

			ret = name ? dir_add_node(fs, h, alloc, dir, name, &n)
				   : -ENOENT;
			sbuf_release(&buf);
		}
		if (ret < 0 && ret != -ENOENT)
			return ret;
	}
	return 0;
}

/* The documents of a collection's folder (one query, no per-item
 * lookups). */
static int dir_add_items(struct flowfs *fs, struct handle *h, size_t *alloc,
			 const struct node *dir)
{
	unsigned coll = (unsigned)fs_collection_of(dir);
	struct fs_item *items = NULL;
	struct sbuf name = SBUF_INIT;
	size_t n = 0;
	int ret;

	ret = fs_collections[coll].list(fs, dir->attr.session, &items, &n);
	for (size_t i = 0; !ret && i < n; i++) {
		struct node in;

		fs_item_node(&in, coll, &items[i], &dir->s);
		sbuf_reset(&name);
		ret = sbuf_addf(&name, "%s.json", items[i].id);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, name.buf, &in);
	}
	free(items);
	sbuf_release(&name);
	return ret;
}

/* Every skill of the registry, read again first. */
static int dir_add_catalog(struct flowfs *fs, struct handle *h, size_t *alloc,
			   const struct node *dir)
{
	/* not while a writer outside the lock holds skills (fs.h): the
	 * listing then shows the last scan's */
	int ret = fs->writer_out ? 0 : skill_registry_scan(fs->skills);

	for (size_t i = 0; !ret && i < skill_count(fs->skills); i++) {
		const struct skill *sk = skill_at(fs->skills, i);
		struct node n;

		ret = fs_resolve(fs, fs_catalog_ino(sk->serial,
					       0), &n);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, sk->id, &n);
	}
	return ret;
}

/* The files of a skill folder view directly in `dir`. */
static int dir_add_view(struct flowfs *fs, struct handle *h, size_t *alloc,
			const struct node *dir)
{
	const char *path = fs_view_path(dir);
	size_t plen = strlen(path);
	int ret = 0;

	for (size_t i = 1; !ret && i <= fs_view_count(dir->sk); i++) {
		const char *p = dir->sk->error ? FS_VIEW_ERROR_NAME
					       : dir->sk->files[i - 1].path;
		const char *name = p;
		struct node n;

		if (plen) {
			if (strncmp(p, path, plen) || p[plen] != '/')
				continue;
			name = p + plen + 1;
		}
		if (strchr(name, '/'))
			continue;	/* deeper down */
		ret = fs_resolve(fs, fs_view_ino(dir, i), &n);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, name, &n);
	}
	return ret;
}

static int dir_add_sessions(struct flowfs *fs, struct handle *h, size_t *alloc,
			    const struct node *dir)
{
	struct session_list list;
	int ret = session_list(fs->st, &list);

	for (size_t i = 0; !ret && i < list.n; i++) {
		struct node n;

		ret = fs_resolve_session_root(fs, &list.items[i], &n);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, list.items[i].name,
					   &n);
	}
	if (!ret || list.items)
		session_list_free(&list);
	return ret < 0 ? ret : dir_add_rows_of(fs, h, alloc, dir, true);
}

/* The rows of a real folder, or (`trash`) the trash folders at the
 * root, but for names the table has taken. */
static int dir_add_rows_of(struct flowfs *fs, struct handle *h, size_t *alloc,
			   const struct node *dir, bool trash)
{
	struct tree_dir td;
	int ret = trash ? tree_trash_list(fs->tree, &td)
			: tree_readdir(fs->tree, dir->ino, &td);

	for (size_t i = 0; !ret && i < td.n; i++) {
		struct node n = { .type = N_REAL, .ino = td.ents[i].attr.ino };
		struct stat st;

		if (fs_reserved_row(fs, dir, td.ents[i].name) >= 0)
			continue;
		n.attr = td.ents[i].attr;
		fs_stat_from_attr(&td.ents[i].attr, &st);
		ret = dir_add(h, alloc, td.ents[i].name, &st, false,
			      fs_entry_timeout(dir, &n, st.st_mode));
	}
	tree_dir_free(&td);
	return ret;
}

static int dir_add_rows(struct flowfs *fs, struct handle *h, size_t *alloc,
			const struct node *dir)
{
	return dir_add_rows_of(fs, h, alloc, dir, false);
}

/* .snapshots/: the session's snapshots, by label. */
static int dir_add_snapshots(struct flowfs *fs, struct handle *h,
			     size_t *alloc, const struct node *dir)
{
	struct session_list list;
	char **labels;
	int ret = session_list_snapshots(fs->st, dir->s.id, &list, &labels);

	for (size_t i = 0; !ret && i < list.n; i++) {
		struct node n;

		ret = fs_resolve_session_root(fs, &list.items[i], &n);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, labels[i], &n);
	}
	if (list.items)
		session_list_free(&list);
	session_labels_free(labels);
	return ret;
}

static int dir_fill(struct flowfs *fs, struct handle *h, const struct node *dir)
{
	int scope = fs_scope_of(dir);
	struct stat st;
	size_t alloc = 0;
	bool generated;
	int ret;

	ret = fs_node_stat(fs, dir, &st, &generated);
	if (!ret)
		ret = dir_add(h, &alloc, ".", &st, false, 0.0);
	if (!ret) {
		/* ".." is only a name here; its attributes are not used */
		st.st_ino = FS_ROOT_INO;
		ret = dir_add(h, &alloc, "..", &st, false, 0.0);
	}
	if (!ret && scope >= 0)
		ret = dir_add_entries(fs, h, &alloc, (enum entry_scope)scope, dir);
	if (ret < 0)
		return ret;
	switch (dir->type) {
	case N_ROOT:
		return dir_add_sessions(fs, h, &alloc, dir);
	case N_ENTRY:
		if (fs_entries[dir->row].kind == ENTRY_SNAPSHOTS)
			return dir_add_snapshots(fs, h, &alloc, dir);
		return fs_entries[dir->row].kind == ENTRY_CATALOG
			       ? dir_add_catalog(fs, h, &alloc, dir) : 0;
	case N_VIEW:
		return dir_add_view(fs, h, &alloc, dir);
	default:
		if (fs_collection_of(dir) >= 0) {
			ret = dir_add_items(fs, h, &alloc, dir);
			if (ret < 0)
				return ret;
		}
		return dir_add_rows(fs, h, &alloc, dir);
	}
}

void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h;
	struct node n;
	int ret;

	h = fs_handle_new(fs, H_DIR);
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->ino = ino;
	fs_lock_read(fs);
	ret = fs_resolve(fs, ino, &n);
	if (!ret && !fs_node_is_dir(&n))
		ret = -ENOTDIR;
	if (!ret)
		ret = dir_fill(fs, h, &n);
	if (!ret && n.type == N_REAL) {
		h->dir_real = true;
		h->dir_mtime_ns = n.attr.mtime_ns;
	}
	fs_unlock(fs);
	if (ret < 0) {
		fs_handle_free(fs, h);
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_open(req, fi) == -ENOENT)
		fs_handle_free(fs, h);
}

static bool is_dot(const char *name)
{
	return name[0] == '.' &&
	       (!name[1] || (name[1] == '.' && !name[2]));
}

/*
 * Whether a real folder changed since its listing was taken at opendir
 * (its mtime moved: a name made, removed or renamed), so that its
 * entries must be checked before they bind names (the lock held).
 */
static bool listing_changed(struct flowfs *fs, const struct handle *h)
{
	struct tree_attr a;

	return h->dir_real && (tree_getattr(fs->tree, h->ino, &a) < 0 ||
			       a.mtime_ns != h->dir_mtime_ns);
}

/* Whether item `it` of a real folder's listing still names its inode. */
static bool still_named(struct flowfs *fs, const struct handle *h,
			const struct dir_item *it)
{
	struct tree_attr a;

	if (!fs_ino_counted(it->st.st_ino))
		return true;
	return tree_lookup(fs->tree, h->ino, it->name, &a) == 0 &&
	       a.ino == (uint64_t)it->st.st_ino;
}

static void reply_dir(fuse_req_t req, struct handle *h, size_t size, off_t off,
		      bool plus)
{
	struct flowfs *fs = fs_of(req);
	char *buf = malloc(size);
	size_t used = 0, first = off > 0 ? (size_t)off : 0, end = first;
	bool stale;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (plus)
		fs_lock_read(fs);
	stale = plus && listing_changed(fs, h);
	for (size_t i = first; i < h->nitems; i++, end = i) {
		struct dir_item *it = &h->items[i];
		size_t n;

		if (plus) {
			struct fuse_entry_param e = { 0 };
			bool dot = is_dot(it->name);

			e.attr = it->st;
			/* "." and ".." must not create dentries, nor may a
			 * name the listing has wrong now: the kernel would
			 * bind it to what it named (a file renamed over,
			 * for the hour an entry lives) */
			e.ino = dot || (stale && !still_named(fs, h, it))
				? 0 : it->st.st_ino;
			e.generation = 1;
			e.entry_timeout = it->entry_timeout;
			e.attr_timeout = it->generated ? 0.0 : LONG_TIMEOUT;
			n = fuse_add_direntry_plus(req, buf + used, size - used,
						   it->name, &e, (off_t)i + 1);
			/* the kernel takes a reference of each entry but
			 * "." and ".." (no room for one: the entries so far) */
			it->given = false;
			if (n <= size - used) {
				if (fs_entry_given(fs, e.ino) < 0)
					break;
				it->given = fs_ino_counted(e.ino);
			}
		} else {
			n = fuse_add_direntry(req, buf + used, size - used,
					      it->name, &it->st, (off_t)i + 1);
		}
		if (n > size - used)
			break;
		used += n;
	}
	if (plus)
		fs_unlock(fs);
	if (fuse_reply_buf(req, buf, used) < 0 && plus)
		for (size_t i = first; i < end; i++)
			if (h->items[i].given)
				fs_entry_not_taken(fs, h->items[i].st.st_ino);
	free(buf);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	reply_dir(req, fs_handle_of(fi), size, off, false);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	reply_dir(req, fs_handle_of(fi), size, off, true);
}

void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	fs_handle_free(fs_of(req), fs_handle_of(fi));
	fuse_reply_err(req, 0);
}
