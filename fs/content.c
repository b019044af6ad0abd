/*
 * content: the content of generated entries, from the render cache
 * (cache.h) when the entry has a version, rendered outside the lock when
 * it renders alone; see ops_i.h.
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


/*
 * The content of an entry with a version, from fs->rendered (rendered
 * into the least recently used slot when no slot holds this version):
 * *content points into the cache until the next call.  1 when the entry
 * has no version now (render it directly).
 */
/* The render cache's slot of (e, session, version), or NULL; *oldest:
 * the one to reuse. */
static struct fs_rendered *rendered_find(struct flowfs *fs,
					 const struct entry *e, int64_t session,
					 const int64_t version[2],
					 struct fs_rendered **oldest)
{
	*oldest = &fs->rendered[0];
	for (int i = 0; i < FS_RENDERED_SLOTS; i++) {
		struct fs_rendered *c = &fs->rendered[i];

		if (c->valid && c->render == e->render &&
		    c->session == session && c->version[0] == version[0] &&
		    c->version[1] == version[1])
			return c;
		if (!c->valid || c->used < (*oldest)->used)
			*oldest = c;
	}
	return NULL;
}

/*
 * A reader's render of an entry that renders alone: outside `lock`, on a
 * connection of the reader pool, the session read again and rendered in
 * one read transaction, with the tool map pinned, so that the content
 * and its version (*version, *s: the session as read, the map as used)
 * are of one moment (perhaps later than the caller's).  `lock` is let go
 * and taken back.  1 when no connection is free (render under `lock`
 * then).
 */
static int render_outside(struct flowfs *fs, const struct entry *e,
			  struct session_info *s, int64_t version[2],
			  struct sbuf *out, int64_t *mtime_ns)
{
	struct store *reader = fs_reader_get(fs);
	struct fs_alone a;
	int ret;

	if (!reader)
		return 1;
	fs_alone_init(fs, reader, s, &a);
	fs->toolfile.pins++;
	fs_unlock(fs);
	ret = store_exec(reader, "BEGIN");
	if (!ret) {
		ret = session_get(reader, s->id, s);
		if (!ret)
			ret = e->render_alone(&a, out, mtime_ns);
		store_exec(reader, ret < 0 && ret != -ENOENT ? "ROLLBACK"
							      : "COMMIT");
	}
	fs_reader_put(fs, reader);
	fs_lock_read(fs);
	/* the map is still pinned: the version is of the one used */
	if (!ret || ret == -ENOENT) {
		int vret = e->version(fs, s, version);

		if (vret < 0)
			ret = vret;
	}
	fs->toolfile.pins--;
	return ret;
}

/*
 * The content of an entry with a version, from the render cache (a
 * pointer into it, good while the caller holds `lock`).  A reader renders
 * what is costly outside `lock` (struct entry: render_alone), a writer
 * under it (its transaction may be open).  1: the entry is not to be
 * cached now (render it).
 */
static int cached_content(struct flowfs *fs, const struct node *n,
			  const struct entry *e, struct sbuf *scratch,
			  const struct sbuf **content, int64_t *mtime_ns)
{
	struct fs_rendered *slot, *oldest;
	struct session_info s = n->s;
	int64_t version[2];
	struct sbuf fresh = SBUF_INIT;
	int ret = 1;

	if (e->version(fs, &n->s, version) < 0)
		return 1;
	slot = rendered_find(fs, e, n->s.id, version, &oldest);
	if (!slot) {
		if (e->render_alone && !fs_holds_write(fs))
			ret = render_outside(fs, e, &s, version, &fresh,
					     mtime_ns);
		if (ret == 1) {
			s = n->s;
			ret = e->render(fs, &s, &fresh, mtime_ns);
		}
		if (ret < 0 && ret != -ENOENT) {
			sbuf_release(&fresh);
			return ret;
		}
		/* what is cheap to render again does not push out what
		 * is not (an empty session's summary.json, a big one's) */
		if (fresh.len < FS_RENDERED_MIN) {
			if (sbuf_add(scratch, fresh.buf, fresh.len) < 0)
				ret = -ENOMEM;
			sbuf_release(&fresh);
			*content = scratch;
			return ret;
		}
		/* another reader may have kept the same meanwhile */
		slot = rendered_find(fs, e, s.id, version, &oldest);
	}
	if (!slot) {
		slot = oldest;
		sbuf_release(&slot->content);
		*slot = (struct fs_rendered){
			.valid = true, .render = e->render,
			.session = s.id, .version = { version[0], version[1] },
			.mtime_ns = *mtime_ns, .ret = ret, .content = fresh,
		};
	} else {
		sbuf_release(&fresh);
	}
	slot->used = ++fs->render_clock;
	*mtime_ns = slot->mtime_ns;
	*content = &slot->content;
	return slot->ret;
}

/*
 * An entry's content: *content is the render cache's copy when the entry
 * has a version, else `scratch`, rendered into.  Its size and mtime
 * follow from it.
 */
int fs_entry_content(struct flowfs *fs, const struct node *n,
			 struct sbuf *scratch, const struct sbuf **content,
			 int64_t *mtime_ns)
{
	const struct entry *e;

	*mtime_ns = fs->mounted_ns;
	*content = scratch;
	if (n->type == N_ITEM) {
		*mtime_ns = n->item.mtime_ns;
		return fs_collections[n->coll].render(fs, &n->item, scratch);
	}
	if (n->type == N_VIEW) {
		if (!fs_view_is_dir(n) && !n->sk->error)
			*mtime_ns = n->sk->files[n->file - 1].mtime_ns;
		return fs_view_content(n, scratch);
	}
	e = &fs_entries[n->row];
	if (!e->render)
		return 0;
	if (e->version && n->has_session) {
		int ret = cached_content(fs, n, e, scratch, content, mtime_ns);

		if (ret <= 0)
			return ret;
		*content = scratch;
	}
	return e->render(fs, n->has_session ? &n->s : NULL, scratch, mtime_ns);
}

/* An entry's content, copied into `out`. */
int fs_render_entry(struct flowfs *fs, const struct node *n,
			struct sbuf *out, int64_t *mtime_ns)
{
	const struct sbuf *c;
	int ret = fs_entry_content(fs, n, out, &c, mtime_ns);

	return ret || c == out ? ret : sbuf_add(out, c->buf, c->len);
}
