/*
 * cache: the render cache — the last content rendered of generated files
 * that have a version (status, the exports, parameters.json, the
 * transcripts), so that the lookup, getattr and open a `cat` sends, and a
 * file manager's stat of every name, render once per state instead of
 * once per request.
 *
 * An entry is keyed by what it is (`what`: the entry's render function),
 * the session and a version: four numbers that change whenever anything
 * the content is rendered from does (struct entry's version(), fs.h).
 * Equal keys, the same content: the cache is never stale as long as the
 * versions are right.  A session holds one slot per `what`: a new version
 * replaces the old one in its slot.  At most FS_CACHE_SLOTS slots and
 * FS_CACHE_BYTES of content, the least recently used going first; content
 * larger than FS_CACHE_BYTES is not kept.  fs_cache_forget() drops a
 * removed session's.
 *
 * The store is all here; when to render and on which connection (outside
 * the filesystem's lock, for what renders alone) is the caller's
 * (resolve.c: entry_content()).  Not thread-safe: the filesystem's lock
 * guards it.  The owner zero-fills it and calls fs_cache_release().
 */
#ifndef FLOWFS_FS_CACHE_H
#define FLOWFS_FS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/lru.h"
#include "lib/sbuf.h"

#define FS_CACHE_SLOTS 16
#define FS_CACHE_BYTES ((size_t)48 << 20)

struct fs_cache_key {
	const void *what;
	int64_t session;
	int64_t version[4];
};

struct fs_cache_slot {
	struct lru_age age;
	struct fs_cache_key key;
	int64_t mtime_ns;	/* of the content */
	int ret;		/* 0, or -ENOENT: the file did not exist */
	struct sbuf content;
};

struct fs_cache {
	struct fs_cache_slot slot[FS_CACHE_SLOTS];
	uint64_t clock;
	size_t bytes;		/* of content, all slots together */
	uint64_t hits, misses;	/* for tests and benches */
};

/* The slot holding `key`, marked used now, or NULL (a miss). */
struct fs_cache_slot *fs_cache_find(struct fs_cache *c,
				    const struct fs_cache_key *key);

/*
 * Keep `content` (taken: *content is left empty) as `key`'s, in the
 * session's slot for key->what or the least recently used one; NULL when
 * it is too large to keep (then *content is the caller's still).
 */
struct fs_cache_slot *fs_cache_keep(struct fs_cache *c,
				    const struct fs_cache_key *key,
				    struct sbuf *content, int64_t mtime_ns,
				    int ret);

/* Drop what is kept of session `session` (it was removed). */
void fs_cache_forget(struct fs_cache *c, int64_t session);

void fs_cache_release(struct fs_cache *c);

#endif
