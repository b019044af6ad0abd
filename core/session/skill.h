/*
 * skill: the registry of skill packages (seed 002).
 *
 * A skill is a folder holding SKILL.md, assets/runner.json and the
 * schemas runner.json names (schemas.input, schemas.parameter,
 * schemas.output: paths relative to the folder).  runner.json carries
 * `id` (the folder name when absent), `engines` (a non-empty list of
 * names), `entrypoint.prompts.<engine>` (prompt templates) and
 * `runtime.dependencies`.
 *
 * The registry reads every skill folder found in its search folders,
 * first folder first: a skill id found again in a later folder is
 * ignored.  A folder that fails to load stays in the registry with
 * `error` set (never silently skipped), so a person can see why.
 * Each skill's files are read into memory (they are small: at most
 * SKILL_MAX_FILES files of at most SKILL_MAX_FILE_SIZE bytes) so the
 * filesystem can show them without touching the disk again.
 *
 * Skills get a `serial` number that stays the same for an id across
 * rescans of one registry (the filesystem derives inode numbers from it).
 * Pointers returned by skill_find()/skill_at() are valid until the next
 * skill_registry_scan().
 *
 * Not thread-safe; the caller serializes.
 */
#ifndef FLOWFS_SKILL_H
#define FLOWFS_SKILL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/ferr.h"
#include "lib/template.h"

#define SKILL_MAX_FILES 512
#define SKILL_MAX_FILE_SIZE (4 * 1024 * 1024)
#define SKILL_MAX_SERIAL 4095

/* A file or folder of a skill package; folders have data == NULL. */
struct skill_file {
	char *path;		/* relative: "SKILL.md", "assets", "assets/runner.json" */
	bool dir;
	char *data;
	size_t len;
	unsigned mode;		/* permission bits on disk */
	long long mtime_ns;
};

struct skill {
	char *id;
	char *dir;		/* the folder on disk */
	unsigned serial;
	char *error;		/* why it failed to load; NULL when loaded */
	json_t *runner;		/* runner.json; NULL when it did not load */
	json_t *engines;	/* array of strings (borrowed from runner) */
	json_t *input_schema;	/* NULL when the skill has none */
	json_t *parameter_schema;
	json_t *output_schema;
	/* Sorted by path, so a folder's entries follow it. */
	struct skill_file *files;
	size_t nfiles;
	/* Its prompt templates, parsed once when it loads: one per engine
	 * in entrypoint.prompts, then the built-in default (engine NULL). */
	struct skill_prompt *prompts;
	size_t nprompts;
};

struct skill_prompt {
	char *engine;		/* NULL: the default template */
	struct tmpl *tmpl;	/* NULL when it did not parse */
	struct ferr err;	/* why not */
};

struct skill_registry;

/*
 * A registry over `dirs` (searched in this order; missing folders are
 * fine).  The dirs are copied.  Scans once.
 */
int skill_registry_new(struct skill_registry **out, const char *const *dirs,
		       size_t ndirs);
void skill_registry_free(struct skill_registry *r);

/* How many scans the registry has made: a skill pointer is the same
 * skill only while this holds (a freed one's memory may be reused). */
unsigned long skill_registry_scans(const struct skill_registry *r);

/* Read every search folder again. */
int skill_registry_scan(struct skill_registry *r);

size_t skill_count(const struct skill_registry *r);
const struct skill *skill_at(const struct skill_registry *r, size_t i);
const struct skill *skill_find(const struct skill_registry *r, const char *id);
/* skill_find(), scanning the folders again once when `id` is not known:
 * for a skill installed since the last scan (invalidates earlier
 * pointers, as a scan does). */
const struct skill *skill_find_fresh(struct skill_registry *r, const char *id);
const struct skill *skill_by_serial(const struct skill_registry *r,
				    unsigned serial);

/* The search folders, in order. */
size_t skill_dir_count(const struct skill_registry *r);
const char *skill_dir_at(const struct skill_registry *r, size_t i);

/*
 * Load one skill folder (the registry's loader, exposed for tests):
 * always returns a skill (with `error` set when it failed to load), or
 * NULL on -ENOMEM.  Free with skill_free().
 */
struct skill *skill_load(const char *dir, const char *id);
void skill_free(struct skill *s);

/* Whether `engine` is one of the skill's engines. */
bool skill_has_engine(const struct skill *s, const char *engine);
/* The skill's default engine (its first), or NULL. */
const char *skill_default_engine(const struct skill *s);
/* The prompt template for `engine` from runner.json, or NULL. */
const char *skill_prompt(const struct skill *s, const char *engine);

/*
 * Parse every prompt template of `s` once, so a render only renders:
 * skill_load() calls it; a skill built by hand (tests) calls it after
 * setting runner. A template that does not parse is kept with its error,
 * not a failure: -ENOMEM is the only error.
 */
int skill_parse_prompts(struct skill *s);

/*
 * The parsed prompt template for `engine` (runner.json's, else the
 * built-in default): 0 and *t (owned by the skill), or -EINVAL with err
 * saying why it does not parse, -ENOENT for a skill that did not load.
 */
int skill_prompt_template(const struct skill *s, const char *engine,
			  const struct tmpl **t, struct ferr *err);

/* The file at relative `path` ("" is the skill's own folder: NULL). */
const struct skill_file *skill_file_find(const struct skill *s,
					 const char *path, size_t *index);

#endif
