/* cache: the render cache of generated files' content; see cache.h. */
#include <string.h>

#include "cache.h"

static bool key_eq(const struct fs_cache_key *a, const struct fs_cache_key *b)
{
	return a->what == b->what && a->session == b->session &&
	       !memcmp(a->version, b->version, sizeof(a->version));
}

static void slot_clear(struct fs_cache *c, struct fs_cache_slot *s)
{
	if (s->age.valid)
		c->bytes -= s->content.len;
	sbuf_release(&s->content);
	memset(s, 0, sizeof(*s));
}

struct fs_cache_slot *fs_cache_find(struct fs_cache *c,
				    const struct fs_cache_key *key)
{
	for (int i = 0; i < FS_CACHE_SLOTS; i++) {
		struct fs_cache_slot *s = &c->slot[i];

		if (s->age.valid && key_eq(&s->key, key)) {
			lru_touch(&s->age, &c->clock);
			c->hits++;
			return s;
		}
	}
	c->misses++;
	return NULL;
}

/* The slot a new content of `key` goes in: its session's for the same
 * `what` (a new state replaces the last), else a free or the least
 * recently used one. */
static struct fs_cache_slot *slot_for(struct fs_cache *c,
				      const struct fs_cache_key *key)
{
	for (int i = 0; i < FS_CACHE_SLOTS; i++) {
		struct fs_cache_slot *s = &c->slot[i];

		if (s->age.valid && s->key.what == key->what &&
		    s->key.session == key->session)
			return s;
	}
	return &c->slot[lru_pick(&c->slot[0].age, FS_CACHE_SLOTS,
				 sizeof(c->slot[0]))];
}

/* The least recently used slot holding content, but `keep`; NULL when
 * there is none. */
static struct fs_cache_slot *oldest_but(struct fs_cache *c,
					const struct fs_cache_slot *keep)
{
	struct fs_cache_slot *oldest = NULL;

	for (int i = 0; i < FS_CACHE_SLOTS; i++) {
		struct fs_cache_slot *s = &c->slot[i];

		if (s != keep && s->age.valid &&
		    (!oldest || s->age.used < oldest->age.used))
			oldest = s;
	}
	return oldest;
}

struct fs_cache_slot *fs_cache_keep(struct fs_cache *c,
				    const struct fs_cache_key *key,
				    struct sbuf *content, int64_t mtime_ns,
				    int ret)
{
	struct fs_cache_slot *s, *old;

	if (content->len > FS_CACHE_BYTES)
		return NULL;
	s = slot_for(c, key);
	slot_clear(c, s);
	while (c->bytes + content->len > FS_CACHE_BYTES &&
	       (old = oldest_but(c, s)))
		slot_clear(c, old);
	s->key = *key;
	s->mtime_ns = mtime_ns;
	s->ret = ret;
	s->content = *content;
	sbuf_init(content);
	c->bytes += s->content.len;
	lru_touch(&s->age, &c->clock);
	return s;
}

void fs_cache_forget(struct fs_cache *c, int64_t session)
{
	for (int i = 0; i < FS_CACHE_SLOTS; i++)
		if (c->slot[i].age.valid && c->slot[i].key.session == session)
			slot_clear(c, &c->slot[i]);
}

void fs_cache_release(struct fs_cache *c)
{
	for (int i = 0; i < FS_CACHE_SLOTS; i++)
		slot_clear(c, &c->slot[i]);
	c->bytes = 0;
}
