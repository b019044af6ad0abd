/*
 * The path → entry table.  Adding a file to every session means adding a
 * row here (and, for a new kind of content, its render/commit functions
 * in core/); the operations in ops.c never name a file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fjson.h"
#include "flowfs-config.h"
#include "fs.h"

void fs_binding_init(struct flowfs *fs, const struct session_info *s,
		     struct fs_binding *b)
{
	snprintf(b->path, sizeof(b->path), "%s/%s", fs->mountpoint, s->name);
	b->ctx = (struct binding_ctx){
		.st = fs->st, .tree = fs->tree, .skills = fs->skills,
		.s = s, .session_path = b->path,
	};
}

static int64_t later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int render_version(struct flowfs *fs, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns)
{
	(void)s;
	*mtime_ns = fs->mounted_ns;
	return sbuf_addf(out, "flowfs %s\ndatabase schema %d\n",
			 FLOWFS_VERSION, STORE_SCHEMA_VERSION);
}

/* What this mount runs with: where sessions and skills come from. */
static int render_config(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	json_t *doc, *dirs = json_array();
	int ret = -ENOMEM;

	(void)s;
	*mtime_ns = fs->mounted_ns;
	for (size_t i = 0; dirs && i < skill_dir_count(fs->skills); i++)
		if (json_array_append_new(dirs, json_string(
				skill_dir_at(fs->skills, i))) < 0)
			goto out;
	doc = json_pack("{sssssisO}", "mountpoint", fs->mountpoint,
			"database", store_path(fs->st),
			"database_schema", STORE_SCHEMA_VERSION,
			"skill_folders", dirs);
	if (doc) {
		ret = fjson_dump(out, doc);
		json_decref(doc);
	}
out:
	json_decref(dirs);
	return ret;
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
	int ret = session_commit_json(fs->st, s, fs->skills, text, len, err);

	/* A skill installed since the last scan: look again, then retry. */
	if (ret == -EINVAL && strstr(err->message, "unknown skill") &&
	    skill_registry_scan(fs->skills) == 0) {
		ferr_clear(err);
		ret = session_commit_json(fs->st, s, fs->skills, text, len, err);
	}
	return ret;
}

static int render_request(struct flowfs *fs, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns)
{
	*mtime_ns = later(s->request_mtime_ns, s->created_ns);
	return session_render_request(fs->st, s, out);
}

static int commit_request(struct flowfs *fs, const struct session_info *s,
			  const char *text, size_t len, struct ferr *err)
{
	struct fs_binding b;

	fs_binding_init(fs, s, &b);
	return session_commit_request(fs->st, s, binding_skill(&b.ctx), text,
				      len, err);
}

static int render_input(struct flowfs *fs, const struct session_info *s,
			struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;

	fs_binding_init(fs, s, &b);
	*mtime_ns = binding_mtime(&b.ctx);
	return binding_render_input(&b.ctx, out);
}

static int render_parameter(struct flowfs *fs, const struct session_info *s,
			    struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;

	fs_binding_init(fs, s, &b);
	*mtime_ns = binding_mtime(&b.ctx);
	return binding_render_parameter(&b.ctx, out);
}

static int render_prompt(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;
	int ret;

	fs_binding_init(fs, s, &b);
	*mtime_ns = binding_mtime(&b.ctx);
	ret = binding_render_prompt(&b.ctx, out, NULL);
	/* A prompt that cannot be rendered is no file (status says why). */
	return ret == -EINVAL ? -ENOENT : ret;
}

static int render_status(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns)
{
	struct sbuf problems = SBUF_INIT;
	struct fs_binding b;
	int ret;

	fs_binding_init(fs, s, &b);
	ret = binding_problems(&b.ctx, &problems);
	if (!ret)
		ret = session_render_status(fs->st, s, &problems, out, mtime_ns);
	*mtime_ns = later(*mtime_ns, binding_mtime(&b.ctx));
	sbuf_release(&problems);
	return ret;
}

static int render_manifest(struct flowfs *fs, const struct session_info *s,
			   struct sbuf *out, int64_t *mtime_ns)
{
	struct fs_binding b;

	fs_binding_init(fs, s, &b);
	*mtime_ns = s->doc_mtime_ns;
	return binding_render_manifest(&b.ctx, out);
}

#define FOLDER(n, f) { n, SCOPE_SESSION, ENTRY_FOLDER, S_IFDIR | 0755, f, NULL, NULL }
#define GENERATED(n, scope, fn) \
	{ n, scope, ENTRY_GENERATED, S_IFREG | 0444, 0, fn, NULL }
#define DOC(n, rfn, cfn) \
	{ n, SCOPE_SESSION, ENTRY_DOC, S_IFREG | 0644, 0, rfn, cfn }

const struct entry fs_entries[] = {
	/* row 0 is never used: an entry inode is never FS_VIRTUAL alone */
	{ NULL, SCOPE_ROOT, ENTRY_DIR, 0, 0, NULL, NULL },
	{ ".flowfs", SCOPE_ROOT, ENTRY_DIR, S_IFDIR | 0555, 0, NULL, NULL },
	GENERATED("version", SCOPE_DOTDIR, render_version),
	GENERATED("config", SCOPE_DOTDIR, render_config),
	{ "skills", SCOPE_DOTDIR, ENTRY_CATALOG, S_IFDIR | 0555, 0, NULL, NULL },
	DOC("session.json", render_session_json, commit_session_json),
	DOC("request.json", render_request, commit_request),
	GENERATED("input.json", SCOPE_SESSION, render_input),
	GENERATED("parameter.json", SCOPE_SESSION, render_parameter),
	GENERATED("prompt.txt", SCOPE_SESSION, render_prompt),
	GENERATED("status", SCOPE_SESSION, render_status),
	{ "skill", SCOPE_SESSION, ENTRY_SKILL, S_IFDIR | 0555, 0, NULL, NULL },
	FOLDER("uploads", SESSION_UPLOADS),
	FOLDER("output", SESSION_OUTPUT),
	GENERATED(".manifest.json", SCOPE_OUTPUT, render_manifest),
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
