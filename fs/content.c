/*
 * content: the content of generated entries, from the render cache
 * (cache.h) when the entry has a version, rendered outside the lock when
 * it renders alone; see ops_i.h.
 */

#include <errno.h>
#include <string.h>

#include "ops_i.h"


/* The cache key of entry `e` of session `s` at `version`. */
static struct fs_cache_key key_of(const struct entry *e, int64_t session,
				  const int64_t version[4])
{
	struct fs_cache_key k = { .what = (const void *)e->render,
				  .session = session };

	memcpy(k.version, version, sizeof(k.version));
	return k;
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
			  struct session_info *s, int64_t version[4],
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
	ret = store_begin_read(reader);
	if (!ret) {
		ret = session_get(reader, s->id, s);
		if (!ret && e->version_alone)
			ret = e->version_alone(&a, version);
		if (!ret)
			ret = e->render_alone(&a, out, mtime_ns);
		store_end_read(reader);
	}
	fs_reader_put(fs, reader);
	fs_lock_read(fs);
	/* the map is still pinned: the version is of the one used */
	if ((!ret || ret == -ENOENT) && !e->version_alone) {
		int vret = e->version(fs, s, version);

		if (vret < 0)
			ret = vret;
	}
	fs->toolfile.pins--;
	return ret;
}

/*
 * The content of an entry with a version, from the render cache (a
 * pointer into it, good while the caller holds `lock`), rendered and kept
 * there on a miss.  A reader renders what is costly outside `lock`
 * (struct entry: render_alone), a writer under it (its transaction may
 * be open).  What is small and cheap to render again is not kept, so as
 * not to push out what is not (an empty session's summary.json, a big
 * one's), unless the entry says it is costly (keep_small: status).  1:
 * the entry has no version now (render it).
 */
static int cached_content(struct flowfs *fs, const struct node *n,
			  const struct entry *e, struct sbuf *scratch,
			  const struct sbuf **content, int64_t *mtime_ns)
{
	struct fs_cache_slot *slot;
	struct session_info s = n->s;
	struct fs_cache_key key;
	int64_t version[4] = { 0 };
	struct sbuf fresh = SBUF_INIT;
	int ret = 1;

	if (e->version(fs, &n->s, version) < 0)
		return 1;
	key = key_of(e, n->s.id, version);
	slot = fs_cache_find(&fs->cache, &key);
	if (slot)
		goto hit;
	if (e->render_alone && !fs_holds_write(fs))
		ret = render_outside(fs, e, &s, version, &fresh, mtime_ns);
	if (ret == 1) {
		s = n->s;
		ret = e->render(fs, &s, &fresh, mtime_ns);
	}
	if (ret < 0 && ret != -ENOENT) {
		sbuf_release(&fresh);
		return ret;
	}
	/* rendered outside `lock`: of the version it was rendered at */
	key = key_of(e, s.id, version);
	slot = (fresh.len >= FS_RENDERED_MIN || e->keep_small)
		       ? fs_cache_keep(&fs->cache, &key, &fresh, *mtime_ns, ret)
		       : NULL;
	if (!slot) {
		if (sbuf_add(scratch, fresh.buf, fresh.len) < 0)
			ret = -ENOMEM;
		sbuf_release(&fresh);
		*content = scratch;
		return ret;
	}
hit:
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
