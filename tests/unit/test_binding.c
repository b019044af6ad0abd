/*
 * Unit tests for binding: what a session shows because of its bound
 * skill, with a real store, tree and skill registry (skill folders
 * written to a temp dir).  Expected documents are written here as
 * Python's json.dumps(obj, indent=2) writes them; expected lines are the
 * texts of issue 3 (notes/issue3.md).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "session/binding.h"
#include "formats/deck.h"
#include "flowfs-config.h"
#include "unit.h"

#define SESSION_PATH "/mnt/flow/s1"

struct fixture {
	char dir[64];
	char db[128];
	char skills[128];
	struct store *st;
	struct tree *t;
	struct skill_registry *reg;
	struct session_info s;
};

/* skill "csvstat": a required csv file, an inline query, a required
 * parameter and a defaulted one, one artifact */
static void mk_csvstat(const char *skills)
{
	char root[256];

	snprintf(root, sizeof(root), "%s/csvstat", skills);
	unit_put(root, "SKILL.md", "# csvstat\n");
	unit_put(root, "assets/runner.json",
	    "{\"id\": \"csvstat\", \"engines\": [\"gemini\", \"codex\"],"
	    " \"entrypoint\": {\"prompts\": {\"gemini\": \"Plain prompt.\\n\"}},"
	    " \"schemas\": {\"input\": \"assets/input.json\","
	    " \"parameter\": \"assets/parameter.json\","
	    " \"output\": \"assets/output.json\"}}");
	unit_put(root, "assets/input.json",
	    "{\"type\": \"object\", \"properties\": {"
	    "\"csv_file\": {\"type\": \"string\", \"extensions\": [\".csv\"]},"
	    "\"query\": {\"type\": \"string\", \"x-input-source\": \"inline\"}},"
	    " \"required\": [\"csv_file\"]}");
	unit_put(root, "assets/parameter.json",
	    "{\"type\": \"object\", \"properties\": {"
	    "\"column\": {\"type\": \"string\"},"
	    "\"n\": {\"type\": \"integer\", \"default\": 3}},"
	    " \"required\": [\"column\"]}");
	unit_put(root, "assets/output.json",
	    "{\"type\": \"object\", \"properties\": {"
	    "\"report\": {\"x-type\": \"artifact\", \"x-filename\": \"report.md\"}},"
	    " \"required\": [\"report\"]}");
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	const char *dirs[1];
	struct ferr err = FERR_INIT;

	if (!fx)
		return -1;
	*state = fx;
	if (unit_db_open("binding", fx->dir, fx->db, &fx->st, &fx->t) < 0)
		return -1;
	snprintf(fx->skills, sizeof(fx->skills), "%s/skills", fx->dir);
	mk_csvstat(fx->skills);
	dirs[0] = fx->skills;
	if (skill_registry_new(&fx->reg, dirs, 1) < 0)
		return -1;
	if (session_create(fx->st, fx->t, "s1", 0755, 1000, 1000, &fx->s,
			   &err) < 0)
		return -1;
	return 0;
}

/* The fixture with the built-in skills (datcom) known too. */
static int setup_builtin(void **state)
{
	struct fixture *fx;
	const char *dirs[2];

	if (setup(state) < 0)
		return -1;
	fx = *state;
	skill_registry_free(fx->reg);
	dirs[0] = fx->skills;
	dirs[1] = FLOWFS_SOURCE_SKILLS;
	return skill_registry_new(&fx->reg, dirs, 2) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	skill_registry_free(fx->reg);
	unit_db_close(fx->dir, fx->st, fx->t);
	free(fx);
	return 0;
}

static struct binding_ctx ctx(struct fixture *fx)
{
	struct binding_ctx c = {
		.st = fx->st, .tree = fx->t, .skills = fx->reg, .s = &fx->s,
		.session_path = SESSION_PATH,
	};

	return c;
}

static void bind(struct fixture *fx, const char *doc)
{
	struct ferr err = FERR_INIT;

	if (session_commit_json(fx->st, &fx->s, fx->reg, doc, strlen(doc),
				&err) < 0)
		fail_msg("%s refused: %s", doc, err.message);
	assert_int_equal(session_get(fx->st, fx->s.id, &fx->s), 0);
}

static void request(struct fixture *fx, const char *doc)
{
	struct ferr err = FERR_INIT;
	const struct skill *sk = skill_find(fx->reg, fx->s.skill);

	assert_non_null(sk);
	if (session_commit_request(fx->st, &fx->s, sk, NULL, doc, strlen(doc),
				   &err) < 0)
		fail_msg("%s refused: %s", doc, err.message);
	assert_int_equal(session_get(fx->st, fx->s.id, &fx->s), 0);
}

static void upload(struct fixture *fx, const char *name, bool dir)
{
	struct tree_attr a;

	assert_int_equal(tree_create(fx->t, fx->s.uploads_ino, name,
				     dir ? (S_IFDIR | 0755) : (S_IFREG | 0644),
				     1000, 1000, NULL, &a), 0);
}

typedef int (*render_fn)(const struct binding_ctx *, struct sbuf *);

static void expect_render(struct fixture *fx, render_fn f, const char *want)
{
	struct binding_ctx c = ctx(fx);
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(f(&c, &sb), 0);
	assert_string_equal(sb.buf, want);
	sbuf_release(&sb);
}

static int problems_only(const struct binding_ctx *c, struct sbuf *out)
{
	return binding_problems(c, out, NULL, NULL);
}

static void expect_problems(struct fixture *fx, const char *want)
{
	expect_render(fx, problems_only, want);
}

static void test_unbound(void **state)
{
	struct fixture *fx = *state;
	struct binding_ctx c = ctx(fx);
	struct sbuf sb = SBUF_INIT;
	struct ferr err = FERR_INIT;

	upload(fx, "csv_file.csv", false);
	assert_null(binding_skill(&c));
	expect_render(fx, binding_render_input, "{}");
	expect_render(fx, binding_render_parameter, "{}");
	expect_problems(fx, "");
	assert_int_equal(binding_render_prompt(&c, &sb, &err), -ENOENT);
	assert_int_equal(binding_render_manifest(&c, &sb), -ENOENT);
	sbuf_release(&sb);
}

static void test_bound(void **state)
{
	struct fixture *fx = *state;
	struct binding_ctx c;
	struct sbuf sb = SBUF_INIT;
	struct ferr err = FERR_INIT;

	bind(fx, "{\"skill\": \"csvstat\"}");
	assert_string_equal(fx->s.skill, "csvstat");
	c = ctx(fx);
	assert_ptr_equal(binding_skill(&c), skill_find(fx->reg, "csvstat"));
	expect_render(fx, binding_render_input, "{}");
	expect_render(fx, binding_render_parameter, "{\n  \"n\": 3\n}");
	expect_problems(fx, "missing required input files: csv_file\n"
			    "missing required parameters: column\n");

	upload(fx, "csv_file.csv", false);
	upload(fx, "other", true);
	request(fx, "{\"input\": {\"query\": \"q\"}, \"parameter\": {\"column\": \"a\"}}");
	expect_render(fx, binding_render_input,
		      "{\n  \"csv_file\": \"" SESSION_PATH "/uploads/csv_file.csv\",\n"
		      "  \"query\": \"q\"\n}");
	expect_render(fx, binding_render_parameter,
		      "{\n  \"column\": \"a\",\n  \"n\": 3\n}");
	expect_problems(fx, "");
	expect_render(fx, binding_render_manifest,
		      "[\n  {\n    \"role\": \"output\",\n    \"pattern\": \"report.md\",\n"
		      "    \"required\": true\n  }\n]");

	/* the prompt of the bound engine (first: gemini); a template with
	 * no {{ }} renders as itself */
	assert_int_equal(binding_render_prompt(&c, &sb, &err), 0);
	/* Jinja2 drops the one trailing newline */
	assert_string_equal(sb.buf, "Plain prompt.");
	sbuf_release(&sb);

	/* a second candidate unbinds it, visible at once */
	upload(fx, "csv_file", false);
	expect_render(fx, binding_render_input, "{\n  \"query\": \"q\"\n}");
	expect_problems(fx, "uploads/: 2 files could be input csv_file (csv_file, csv_file.csv); keep one\n"
			    "missing required input files: csv_file\n"
			    "uploads/: other binds no input; the names that"
			    " would bind: csv_file, csv_file.csv\n");
	assert_int_equal(tree_unlink(fx->t, fx->s.uploads_ino, "csv_file.csv"), 0);
	expect_render(fx, binding_render_input,
		      "{\n  \"csv_file\": \"" SESSION_PATH "/uploads/csv_file\",\n"
		      "  \"query\": \"q\"\n}");
	expect_problems(fx, "");
}

static void test_mtime(void **state)
{
	struct fixture *fx = *state;
	struct binding_ctx c;
	struct tree_attr up;
	int64_t t0;

	bind(fx, "{\"skill\": \"csvstat\"}");
	c = ctx(fx);
	t0 = binding_mtime(&c);
	assert_true(t0 >= fx->s.doc_mtime_ns);
	upload(fx, "csv_file.csv", false);
	assert_int_equal(tree_getattr(fx->t, fx->s.uploads_ino, &up), 0);
	assert_true(binding_mtime(&c) >= up.mtime_ns);
	assert_true(binding_mtime(&c) >= t0);
}

static void test_skill_gone(void **state)
{
	struct fixture *fx = *state;
	struct binding_ctx c;
	struct sbuf sb = SBUF_INIT;
	struct ferr err = FERR_INIT;
	char path[256];

	bind(fx, "{\"skill\": \"csvstat\"}");
	upload(fx, "csv_file.csv", false);
	snprintf(path, sizeof(path), "%s/csvstat", fx->skills);
	unit_rmtree(path);
	assert_int_equal(skill_registry_scan(fx->reg), 0);
	c = ctx(fx);
	assert_null(binding_skill(&c));
	expect_problems(fx, "skill csvstat is not installed (any more)\n");
	expect_render(fx, binding_render_input, "{}");
	expect_render(fx, binding_render_parameter, "{}");
	assert_int_equal(binding_render_prompt(&c, &sb, &err), -ENOENT);
	assert_int_equal(binding_render_manifest(&c, &sb), -ENOENT);
	sbuf_release(&sb);
}

static void test_skill_broken(void **state)
{
	struct fixture *fx = *state;
	struct binding_ctx c;
	char want[FERR_MESSAGE_MAX + 64];

	bind(fx, "{\"skill\": \"csvstat\"}");
	unit_put(fx->skills, "csvstat/assets/runner.json", "{\"engines\": []}");
	assert_int_equal(skill_registry_scan(fx->reg), 0);
	c = ctx(fx);
	assert_null(binding_skill(&c));
	snprintf(want, sizeof(want), "skill csvstat did not load: %s\n",
		 "runner.json engines must be a non-empty list of engine names");
	expect_problems(fx, want);
	expect_render(fx, binding_render_input, "{}");
}

/* What the session's problems and notes say, from `cache` (or none). */
static void problems_with(struct fixture *fx, struct binding_cache *cache,
			  struct sbuf *out)
{
	struct binding_ctx c = ctx(fx);
	struct sbuf notes = SBUF_INIT;

	c.cache = cache;
	sbuf_reset(out);
	assert_int_equal(binding_problems(&c, out, &notes, NULL), 0);
	assert_int_equal(sbuf_add(out, notes.buf, notes.len), 0);
	sbuf_release(&notes);
}

static void put_deck(struct fixture *fx, const char *text, size_t len)
{
	assert_int_equal(tree_put_file(fx->t, fx->s.uploads_ino, "deck.dat",
				       text, len, NULL), 0);
}

/* A parsed deck is kept until its file changes, and what is kept reads
 * as a parse would. */
static void test_deck_cache(void **state)
{
	static const char good[] = " $FLTCON WT=4960.0$\nNEXT CASE\n"
				   " $FLTCON WT=1.0$\n";
	static const char bad[] = " $FLTCON WT=49.0,,$\nNEXT CASE\n";
	struct fixture *fx = *state;
	struct binding_cache cache;
	struct sbuf want = SBUF_INIT, got = SBUF_INIT;

	memset(&cache, 0, sizeof(cache));
	bind(fx, "{\"skill\": \"datcom\"}");
	put_deck(fx, good, strlen(good));
	problems_with(fx, NULL, &want);
	assert_non_null(strstr(want.buf, "uploads/deck.dat: "));
	problems_with(fx, &cache, &got);
	assert_string_equal(got.buf, want.buf);
	problems_with(fx, &cache, &got);
	assert_string_equal(got.buf, want.buf);
	assert_int_equal(cache.misses, 1);
	assert_int_equal(cache.solved_hits, 1);
	/* another request: resolved again, the deck as it was parsed */
	request(fx, "{\"parameter\": {\"case_id\": \"x\"}}");
	problems_with(fx, NULL, &want);
	problems_with(fx, &cache, &got);
	assert_string_equal(got.buf, want.buf);
	assert_int_equal(cache.misses, 1);
	assert_int_equal(cache.hits, 1);
	/* a new version of the file: parsed again */
	put_deck(fx, bad, strlen(bad));
	problems_with(fx, NULL, &want);
	assert_non_null(strstr(want.buf, "uploads/deck.dat: line 1, column"));
	problems_with(fx, &cache, &got);
	assert_string_equal(got.buf, want.buf);
	assert_int_equal(cache.misses, 2);
	/* the same file written in place, same size: read again */
	{
		struct tree_attr a;

		assert_int_equal(tree_lookup(fx->t, fx->s.uploads_ino,
					     "deck.dat", &a), 0);
		assert_int_equal(tree_open(fx->t, a.ino), 0);
		assert_int_equal(tree_write(fx->t, a.ino, good, strlen(bad), 0),
				 0);
		assert_int_equal(tree_release(fx->t, a.ino), 0);
	}
	problems_with(fx, NULL, &want);
	assert_null(strstr(want.buf, "uploads/deck.dat: line 1, column"));
	problems_with(fx, &cache, &got);
	assert_string_equal(got.buf, want.buf);
	assert_int_equal(cache.misses, 3);
	assert_int_equal(cache.solved_hits, 1);
	problems_with(fx, &cache, &got);
	assert_int_equal(cache.solved_hits, 2);
	/* a rescan of the skills: the problems are worked out again (the
	 * skill's memory may be another skill's now) */
	assert_int_equal(skill_registry_scan(fx->reg), 0);
	problems_with(fx, &cache, &got);
	assert_string_equal(got.buf, want.buf);
	assert_int_equal(cache.solved_hits, 2);
	binding_cache_release(&cache);
	sbuf_release(&want);
	sbuf_release(&got);
}

/* A deck past DECK_MAX_SIZE is a problem, not read. */
static void test_deck_too_big(void **state)
{
	struct fixture *fx = *state;
	size_t len = DECK_MAX_SIZE + 1;
	char *text = malloc(len), want[128];
	struct sbuf got = SBUF_INIT;

	assert_non_null(text);
	memset(text, ' ', len);
	bind(fx, "{\"skill\": \"datcom\"}");
	put_deck(fx, text, len);
	problems_with(fx, NULL, &got);
	snprintf(want, sizeof(want),
		 "uploads/deck.dat: %zu bytes: at most %d are read\n", len,
		 DECK_MAX_SIZE);
	assert_non_null(strstr(got.buf, want));
	free(text);
	sbuf_release(&got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unbound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mtime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_skill_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_skill_broken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deck_cache, setup_builtin,
						teardown),
		cmocka_unit_test_setup_teardown(test_deck_too_big, setup_builtin,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
