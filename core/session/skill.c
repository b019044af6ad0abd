/* skill: the registry of skill packages, read from their folders; see
 * skill.h. */
#include "session/skill.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fjson.h"
#include "lib/fname.h"
#include "lib/sbuf.h"
#include "lib/schema.h"

#define MAX_DEPTH 16

struct serial_name {
	char *id;
	unsigned serial;
};

struct skill_registry {
	char **dirs;
	size_t ndirs;
	struct skill **skills;
	size_t nskills;
	/* id -> serial, kept across scans */
	struct serial_name *serials;
	size_t nserials;
	unsigned long scans;
};

void skill_free(struct skill *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++) {
		free(s->files[i].path);
		free(s->files[i].data);
	}
	free(s->files);
	json_decref(s->runner);
	json_decref(s->input_schema);
	json_decref(s->parameter_schema);
	json_decref(s->output_schema);
	for (size_t i = 0; i < s->nprompts; i++) {
		free(s->prompts[i].engine);
		tmpl_free(s->prompts[i].tmpl);
	}
	free(s->prompts);
	free(s->error);
	free(s->dir);
	free(s->id);
	free(s);
}

static void fail(struct skill *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Record why the skill did not load (the first reason wins). */
static void fail(struct skill *s, const char *fmt, ...)
{
	va_list ap;

	if (s->error)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s->error, fmt, ap) < 0)
		s->error = NULL;
	va_end(ap);
}

static int read_whole(const char *path, size_t size, char **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;
	size_t got = 0;
	int ret = 0;

	*out = NULL;
	if (fd < 0)
		return -errno;
	buf = malloc(size ? size : 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		got += (size_t)n;
	}
	if (ret < 0)
		free(buf);
	else
		*out = buf;
out:
	close(fd);
	return ret;
}

static int add_file(struct skill *s, const char *rel, const struct stat *st,
		    const char *abs)
{
	struct skill_file *f;
	struct skill_file *p;
	int ret;

	if (s->nfiles >= SKILL_MAX_FILES) {
		fail(s, "more than %d files", SKILL_MAX_FILES);
		return 0;
	}
	p = realloc(s->files, (s->nfiles + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->files = p;
	f = &s->files[s->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = strdup(rel);
	if (!f->path)
		return -ENOMEM;
	f->dir = S_ISDIR(st->st_mode);
	f->mode = st->st_mode & 0777;
	f->mtime_ns = (long long)st->st_mtim.tv_sec * 1000000000 +
		      st->st_mtim.tv_nsec;
	s->nfiles++;
	if (f->dir)
		return 0;
	ret = read_whole(abs, (size_t)st->st_size, &f->data);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0) {
		fail(s, "%s: %s", rel, strerror(-ret));
		return 0;
	}
	f->len = (size_t)st->st_size;
	return 0;
}

/* Read the folder `abs` (relative path `rel`, "" at the top). */
static int walk(struct skill *s, const char *abs, const char *rel, int depth)
{
	struct dirent **names = NULL;
	int n, ret = 0;

	if (depth > MAX_DEPTH) {
		fail(s, "%s: folders nested too deep", rel);
		return 0;
	}
	n = scandir(abs, &names, NULL, alphasort);
	if (n < 0) {
		fail(s, "cannot read %s: %s", *rel ? rel : "the folder",
		     strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		char *sub_abs = NULL, *sub_rel = NULL;
		struct stat st;

		if (ret < 0 || !strcmp(name, ".") || !strcmp(name, ".."))
			goto next;
		if (asprintf(&sub_abs, "%s/%s", abs, name) < 0 ||
		    asprintf(&sub_rel, "%s%s%s", rel, *rel ? "/" : "", name) < 0) {
			ret = -ENOMEM;
			goto next;
		}
		if (stat(sub_abs, &st) < 0 ||
		    (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
			goto next;	/* dangling links, fifos: not package files */
		if (S_ISREG(st.st_mode) && st.st_size > SKILL_MAX_FILE_SIZE)
			goto next;	/* large data files are not shown */
		ret = add_file(s, sub_rel, &st, sub_abs);
		if (!ret && S_ISDIR(st.st_mode))
			ret = walk(s, sub_abs, sub_rel, depth + 1);
next:
		free(sub_abs);
		free(sub_rel);
		free(names[i]);
	}
	free(names);
	return ret;
}

static int compare_files(const void *a, const void *b)
{
	return strcmp(((const struct skill_file *)a)->path,
		      ((const struct skill_file *)b)->path);
}

const struct skill_file *skill_file_find(const struct skill *s,
					 const char *path, size_t *index)
{
	struct skill_file key = { .path = (char *)path };
	const struct skill_file *f;

	if (!s->nfiles)
		return NULL;
	f = bsearch(&key, s->files, s->nfiles, sizeof(*s->files),
		    compare_files);
	if (f && index)
		*index = (size_t)(f - s->files);
	return f;
}

/* Whether a relative path has a ".." part (would leave the folder). */
static bool has_parent_part(const char *path)
{
	for (const char *p = path; p; p = strchr(p, '/')) {
		if (*p == '/')
			p++;
		if (p[0] == '.' && p[1] == '.' && (!p[2] || p[2] == '/'))
			return true;
	}
	return false;
}

/* Parse a JSON file of the package; NULL (and the skill fails) if not. */
static json_t *load_json(struct skill *s, const char *path, const char *what)
{
	const struct skill_file *f;
	struct ferr err = FERR_INIT;
	char msg[FERR_MESSAGE_MAX + 64];
	json_t *v = NULL;

	while (path[0] == '.' && path[1] == '/')
		path += 2;
	if (path[0] == '/' || has_parent_part(path)) {
		fail(s, "%s: %s must be a path inside the skill folder", what,
		     path);
		return NULL;
	}
	f = skill_file_find(s, path, NULL);
	if (!f || f->dir) {
		fail(s, "%s: %s does not exist", what, path);
		return NULL;
	}
	if (fjson_parse(&v, f->data, f->len, &err) < 0) {
		fail(s, "%s: %s", path, ferr_format(&err, msg, sizeof(msg)));
		return NULL;
	}
	return v;
}

static json_t *load_schema(struct skill *s, const json_t *schemas,
			   const char *key)
{
	const json_t *path = json_object_get(schemas, key);
	struct ferr err = FERR_INIT;
	char what[64];
	json_t *schema;

	if (!path || json_is_null(path))
		return NULL;
	snprintf(what, sizeof(what), "runner.json schemas.%s", key);
	if (!json_is_string(path)) {
		fail(s, "%s must be a path (a string)", what);
		return NULL;
	}
	schema = load_json(s, json_string_value(path), what);
	if (schema && schema_check(schema, &err) < 0) {
		fail(s, "%s: %s", json_string_value(path), err.message);
		json_decref(schema);
		return NULL;
	}
	return schema;
}

/* Whether <key><ext> (ext with or without its dot) is a name uploads/
 * may hold; 0, or err says why. */
static int check_upload_name(const char *key, const char *ext,
			     struct ferr *err)
{
	char name[FNAME_MAX + 2];
	int len;

	if (strchr(key, '/') || strchr(ext, '/'))
		return ferr_set(err, -EINVAL, "it holds a '/'");
	len = snprintf(name, sizeof(name), "%s%s%s", key,
		       *ext && *ext != '.' ? "." : "", ext);
	if (len > FNAME_MAX)
		return ferr_set(err, -ENAMETOOLONG,
				"name is %d bytes long (at most %d)", len,
				FNAME_MAX);
	return fname_check_entry(name, err);
}

/*
 * A file input <key> becomes uploads/<key>[.ext] (inputs.h), the
 * extension one the skill lists: a key, or a key and one of its
 * extensions, that is no file name ("", ".", "..", "a/b", over
 * FNAME_MAX bytes together) would put an entry no folder may hold into
 * uploads/, or make a fetched file nowhere to go, so the skill is
 * refused, naming it.  Inline keys are checked too: a skill may turn one
 * into a file input.
 */
static void check_input_keys(struct skill *s, const char *path)
{
	const json_t *props = json_object_get(
		schema_deref(s->input_schema, NULL), "properties");
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)props, key, v) {
		const json_t *exts = json_object_get(v, "extensions"), *ext;
		struct ferr err = FERR_INIT;
		size_t i;

		if (check_upload_name(key, "", &err) < 0) {
			fail(s, "%s: input key \"%s\" cannot name a file in"
			     " uploads/: %s", path, key, err.message);
			return;
		}
		json_array_foreach(exts, i, ext) {
			if (!json_is_string(ext) ||
			    check_upload_name(key, json_string_value(ext),
					      &err) == 0)
				continue;
			fail(s, "%s: input key \"%s\" with extension \"%s\""
			     " cannot name a file in uploads/: %s", path, key,
			     json_string_value(ext), err.message);
			return;
		}
	}
}

static void check_runner(struct skill *s, const char *folder_id)
{
	const json_t *id = json_object_get(s->runner, "id");
	const json_t *schemas = json_object_get(s->runner, "schemas");
	const json_t *entry = json_object_get(s->runner, "entrypoint");
	const json_t *prompts = entry ? json_object_get(entry, "prompts") : NULL;
	const json_t *v;
	const char *key;
	size_t i;

	if (!json_is_object(s->runner)) {
		fail(s, "assets/runner.json must hold a JSON object");
		return;
	}
	if (id && !json_is_string(id))
		fail(s, "runner.json id must be a string (the folder name \"%s\")",
		     folder_id);
	else if (id && strcmp(json_string_value(id), folder_id))
		fail(s, "runner.json id \"%s\" does not match the folder name \"%s\"",
		     json_string_value(id), folder_id);
	s->engines = json_object_get(s->runner, "engines");
	if (!json_is_array(s->engines) || !json_array_size(s->engines))
		fail(s, "runner.json engines must be a non-empty list of engine names");
	json_array_foreach(s->engines, i, v)
		if (!json_is_string(v) || !json_string_length(v))
			fail(s, "runner.json engines[%zu] must be a name", i);
	if (schemas && !json_is_object(schemas))
		fail(s, "runner.json schemas must be an object");
	if (entry && !json_is_object(entry))
		fail(s, "runner.json entrypoint must be an object");
	if (prompts && !json_is_object(prompts))
		fail(s, "runner.json entrypoint.prompts must be an object");
	json_object_foreach((json_t *)prompts, key, v)
		if (!json_is_string(v))
			fail(s, "runner.json entrypoint.prompts.%s must be a template (a string)",
			     key);
	if (s->error || !schemas)
		return;
	s->input_schema = load_schema(s, schemas, "input");
	if (s->input_schema)
		check_input_keys(s, json_string_value(json_object_get(schemas,
								      "input")));
	s->parameter_schema = load_schema(s, schemas, "parameter");
	s->output_schema = load_schema(s, schemas, "output");
}

struct skill *skill_load(const char *dir, const char *id)
{
	struct skill *s = calloc(1, sizeof(*s));
	const struct skill_file *f;

	if (!s)
		return NULL;
	s->id = strdup(id);
	s->dir = strdup(dir);
	if (!s->id || !s->dir || walk(s, dir, "", 0) < 0)
		goto nomem;
	qsort(s->files, s->nfiles, sizeof(*s->files), compare_files);
	f = skill_file_find(s, "SKILL.md", NULL);
	if (!f || f->dir)
		fail(s, "SKILL.md is missing");
	f = skill_file_find(s, "assets/runner.json", NULL);
	if (!f || f->dir)
		fail(s, "assets/runner.json is missing");
	if (s->error)
		return s;
	s->runner = load_json(s, "assets/runner.json", "assets/runner.json");
	if (s->runner)
		check_runner(s, id);
	if (!s->error && skill_parse_prompts(s) < 0)
		goto nomem;
	if (s->error) {
		json_decref(s->input_schema);
		json_decref(s->parameter_schema);
		json_decref(s->output_schema);
		s->input_schema = s->parameter_schema = s->output_schema = NULL;
		s->engines = NULL;
	}
	return s;
nomem:
	skill_free(s);
	return NULL;
}

bool skill_has_engine(const struct skill *s, const char *engine)
{
	const json_t *v;
	size_t i;

	json_array_foreach(s->engines, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), engine))
			return true;
	return false;
}

const char *skill_default_engine(const struct skill *s)
{
	return json_string_value(json_array_get(s->engines, 0));
}

const char *skill_prompt(const struct skill *s, const char *engine)
{
	const json_t *entry = json_object_get(s->runner, "entrypoint");
	const json_t *prompts = entry ? json_object_get(entry, "prompts") : NULL;

	return engine && prompts
		       ? json_string_value(json_object_get(prompts, engine))
		       : NULL;
}

/* One prompt of the skill parsed: a template that does not parse is
 * kept with its error (status and prompt.txt say it), not a load failure. */
static int add_prompt(struct skill *s, const char *engine, const char *text)
{
	struct skill_prompt *p = &s->prompts[s->nprompts];

	memset(p, 0, sizeof(*p));
	if (engine && !(p->engine = strdup(engine)))
		return -ENOMEM;
	s->nprompts++;
	if (tmpl_parse(&p->tmpl, text, strlen(text), &p->err) == -ENOMEM)
		return -ENOMEM;
	return 0;
}

int skill_parse_prompts(struct skill *s)
{
	const json_t *entry = json_object_get(s->runner, "entrypoint");
	const json_t *prompts = entry ? json_object_get(entry, "prompts") : NULL;
	const char *engine;
	json_t *v;
	int ret = 0;

	s->prompts = calloc(json_object_size(prompts) + 1, sizeof(*s->prompts));
	if (!s->prompts)
		return -ENOMEM;
	json_object_foreach((json_t *)prompts, engine, v)
		if (!ret && json_is_string(v))
			ret = add_prompt(s, engine, json_string_value(v));
	return ret ? ret : add_prompt(s, NULL, tmpl_default_prompt);
}

int skill_prompt_template(const struct skill *s, const char *engine,
			  const struct tmpl **t, struct ferr *err)
{
	const struct skill_prompt *p = NULL;

	for (size_t i = 0; i < s->nprompts && !p; i++)
		if (s->prompts[i].engine && engine &&
		    !strcmp(s->prompts[i].engine, engine))
			p = &s->prompts[i];
	if (!p && s->nprompts)
		p = &s->prompts[s->nprompts - 1];	/* the default */
	if (!p)
		return -ENOENT;
	if (!p->tmpl) {
		if (err)
			*err = p->err;
		return -EINVAL;
	}
	*t = p->tmpl;
	return 0;
}

/* ---- registry ------------------------------------------------------------- */

static int serial_for(struct skill_registry *r, const char *id,
		      unsigned *serial)
{
	struct serial_name *p;

	for (size_t i = 0; i < r->nserials; i++)
		if (!strcmp(r->serials[i].id, id)) {
			*serial = r->serials[i].serial;
			return 0;
		}
	if (r->nserials >= SKILL_MAX_SERIAL)
		return -ENOSPC;
	p = realloc(r->serials, (r->nserials + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	r->serials = p;
	p[r->nserials].id = strdup(id);
	if (!p[r->nserials].id)
		return -ENOMEM;
	/* serial 0 is never used, so an inode never encodes "no skill" */
	p[r->nserials].serial = (unsigned)r->nserials + 1;
	*serial = p[r->nserials++].serial;
	return 0;
}

static void drop_skills(struct skill **skills, size_t n)
{
	for (size_t i = 0; i < n; i++)
		skill_free(skills[i]);
	free(skills);
}

static int compare_skills(const void *a, const void *b)
{
	return strcmp((*(struct skill *const *)a)->id,
		      (*(struct skill *const *)b)->id);
}

/* Load the skills of one search folder into `list`. */
static int scan_dir(struct skill_registry *r, const char *dir,
		    struct skill ***list, size_t *n)
{
	struct dirent **names = NULL;
	int count, ret = 0;

	count = scandir(dir, &names, NULL, alphasort);
	if (count < 0)
		return 0;	/* a missing search folder holds no skills */
	for (int i = 0; i < count; i++) {
		const char *id = names[i]->d_name;
		char *path = NULL;
		struct skill **p, *s;
		struct stat st;
		bool taken = false;

		if (ret < 0 || id[0] == '.')
			goto next;
		for (size_t k = 0; k < *n; k++)
			taken |= !strcmp((*list)[k]->id, id);
		if (taken)
			goto next;	/* an earlier folder has it */
		if (asprintf(&path, "%s/%s", dir, id) < 0) {
			ret = -ENOMEM;
			goto next;
		}
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			goto next;
		s = skill_load(path, id);
		p = s ? realloc(*list, (*n + 1) * sizeof(*p)) : NULL;
		if (!p) {
			skill_free(s);
			ret = -ENOMEM;
			goto next;
		}
		*list = p;
		(*list)[(*n)++] = s;
		ret = serial_for(r, id, &s->serial);
		if (ret == -ENOSPC) {
			fail(s, "too many skills (at most %d)", SKILL_MAX_SERIAL);
			ret = 0;
		}
next:
		free(path);
		free(names[i]);
	}
	free(names);
	return ret;
}

int skill_registry_scan(struct skill_registry *r)
{
	struct skill **list = NULL;
	size_t n = 0;
	int ret = 0;

	for (size_t i = 0; !ret && i < r->ndirs; i++)
		ret = scan_dir(r, r->dirs[i], &list, &n);
	if (ret < 0) {
		drop_skills(list, n);
		return ret;
	}
	if (n)
		qsort(list, n, sizeof(*list), compare_skills);
	drop_skills(r->skills, r->nskills);
	r->skills = list;
	r->nskills = n;
	r->scans++;
	return 0;
}

unsigned long skill_registry_scans(const struct skill_registry *r)
{
	return r->scans;
}

int skill_registry_new(struct skill_registry **out, const char *const *dirs,
		       size_t ndirs)
{
	struct skill_registry *r = calloc(1, sizeof(*r));
	int ret = -ENOMEM;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->dirs = calloc(ndirs ? ndirs : 1, sizeof(*r->dirs));
	if (!r->dirs)
		goto fail;
	for (size_t i = 0; i < ndirs; i++) {
		r->dirs[i] = strdup(dirs[i]);
		if (!r->dirs[i])
			goto fail;
		r->ndirs++;
	}
	ret = skill_registry_scan(r);
	if (ret < 0)
		goto fail;
	*out = r;
	return 0;
fail:
	skill_registry_free(r);
	return ret;
}

void skill_registry_free(struct skill_registry *r)
{
	if (!r)
		return;
	drop_skills(r->skills, r->nskills);
	for (size_t i = 0; i < r->ndirs; i++)
		free(r->dirs[i]);
	free(r->dirs);
	for (size_t i = 0; i < r->nserials; i++)
		free(r->serials[i].id);
	free(r->serials);
	free(r);
}

size_t skill_count(const struct skill_registry *r)
{
	return r->nskills;
}

const struct skill *skill_at(const struct skill_registry *r, size_t i)
{
	return i < r->nskills ? r->skills[i] : NULL;
}

const struct skill *skill_find(const struct skill_registry *r, const char *id)
{
	for (size_t i = 0; i < r->nskills; i++)
		if (!strcmp(r->skills[i]->id, id))
			return r->skills[i];
	return NULL;
}

const struct skill *skill_find_fresh(struct skill_registry *r, const char *id)
{
	const struct skill *sk = skill_find(r, id);

	if (!sk && skill_registry_scan(r) == 0)
		sk = skill_find(r, id);
	return sk;
}

const struct skill *skill_by_serial(const struct skill_registry *r,
				    unsigned serial)
{
	for (size_t i = 0; i < r->nskills; i++)
		if (r->skills[i]->serial == serial)
			return r->skills[i];
	return NULL;
}

size_t skill_dir_count(const struct skill_registry *r)
{
	return r->ndirs;
}

const char *skill_dir_at(const struct skill_registry *r, size_t i)
{
	return i < r->ndirs ? r->dirs[i] : NULL;
}
