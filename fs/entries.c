/*
 * The path → entry table.  Adding a file to every session means adding a
 * row here (and, for a new kind of content, its render/commit functions
 * in core/); the operations in ops.c never name a file.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "flowfs-config.h"
#include "fs.h"

static int render_version(struct flowfs *fs, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns)
{
	(void)s;
	*mtime_ns = fs->mounted_ns;
	return sbuf_addf(out, "flowfs %s\ndatabase schema %d\n",
			 FLOWFS_VERSION, STORE_SCHEMA_VERSION);
}

static int render_session_json(struct flowfs *fs, const struct session_info *s,
			       struct sbuf *out, int64_t *mtime_ns)
{
	*mtime_ns = s->doc_mtime_ns;
	return session_render_json(fs->st, s, out);
}

static int commit_session_json(struct flowfs *fs, const struct session_info *s,
			       const char *text, size_t len, struct ferr *err)
{
	return session_commit_json(fs->st, s, text, len, err);
}

static int render_status(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	return session_render_status(fs->st, s, out, mtime_ns);
}

const struct entry fs_entries[] = {
	/* row 0 is never used: an entry inode is never FS_VIRTUAL alone */
	{ NULL, SCOPE_ROOT, ENTRY_DIR, 0, NULL, NULL },
	{ ".flowfs", SCOPE_ROOT, ENTRY_DIR, S_IFDIR | 0555, NULL, NULL },
	{ "version", SCOPE_DOTDIR, ENTRY_GENERATED, S_IFREG | 0444,
	  render_version, NULL },
	{ "session.json", SCOPE_SESSION, ENTRY_DOC, S_IFREG | 0644,
	  render_session_json, commit_session_json },
	{ "status", SCOPE_SESSION, ENTRY_GENERATED, S_IFREG | 0444,
	  render_status, NULL },
	{ "uploads", SCOPE_SESSION, ENTRY_UPLOADS, S_IFDIR | 0755, NULL, NULL },
};

const unsigned fs_entry_count = sizeof(fs_entries) / sizeof(fs_entries[0]);

int fs_entry_find(enum entry_scope scope, const char *name)
{
	for (unsigned i = 1; i < fs_entry_count; i++)
		if (fs_entries[i].scope == scope &&
		    !strcmp(fs_entries[i].name, name))
			return (int)i;
	return -1;
}
