/*
 * Fuzz target for the input protocol: the bytes are a request.json text,
 * optionally followed by a NUL byte and the names of uploads/ entries,
 * one per line (a trailing '/' makes a folder).  Without a NUL the names
 * are drawn from a table of the skills' keys and suffixes by a PRNG
 * seeded with a hash of the bytes, so every request seed also exercises
 * the key matching.
 *
 * Each of a few fixed skills (built by hand from JSON schemas in the
 * first call) gets inputs_check_request() and inputs_resolve(); nothing
 * may crash or leak.  The bindings are cross-checked against a separate
 * implementation of issue 3's matching rule: a file input <key> is bound
 * by the entry named <key>, or, when the property declares extensions,
 * by <key><ext> for an allowed ext (case-insensitive, "csv" meaning
 * ".csv"); exactly one candidate binds, two or more bind nothing.  A key
 * bound to a name outside that rule aborts.  Where every declared
 * extension is a single part (".csv", not ".tar.gz"), the converse must
 * hold too: one candidate is bound, two or more give a "keep one" line.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/fjson.h"
#include "lib/fname.h"
#include "session/inputs.h"
#include "session/skill.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define UPLOADS "/mnt/flow/s/uploads"
#define MAX_UPLOADS 64

static const char *const skill_texts[][3] = {
	{
		/* demo-pandas-stats like, with inline inputs */
		"{\"type\": \"object\", \"properties\": {"
		"\"csv_file\": {\"type\": \"string\", \"extensions\": [\".csv\"]},"
		"\"query\": {\"type\": \"string\", \"x-input-source\": \"inline\"},"
		"\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"x-input-source\": \"inline\"}},"
		" \"required\": [\"csv_file\", \"query\"]}",
		"{\"type\": \"object\", \"properties\": {"
		"\"column\": {\"type\": \"string\"},"
		"\"n\": {\"type\": \"integer\", \"default\": 3, \"maximum\": 20}},"
		" \"required\": [\"column\"], \"additionalProperties\": false}",
		"{\"type\": \"object\", \"properties\": {"
		"\"report\": {\"x-type\": \"artifact\", \"x-role\": \"r\", \"x-filename\": \"r.md\"}}}",
	},
	{
		/* many file inputs, odd declarations, no parameter schema */
		"{\"type\": \"object\", \"properties\": {"
		"\"input_file\": {\"extensions\": [\".txt\", \".md\", \"json\"]},"
		"\"data\": {},"
		"\"data.v1\": {\"extensions\": [\".CSV\"]},"
		"\"notes\": {\"extensions\": []},"
		"\"archive\": {\"extensions\": [\".tar.gz\", 7, \".zip\"]},"
		"\"x\": {\"x-input-source\": 5, \"extensions\": [\"\", \".\"]},"
		"\"q\": {\"x-input-source\": \"inline\", \"enum\": [1, \"a\", null]}},"
		" \"required\": [\"input_file\", \"data\", \"q\"]}",
		NULL,
		NULL,
	},
	{
		/* $refs and combinators */
		"{\"definitions\": {\"s\": {\"type\": \"string\", \"maxLength\": 4}},"
		" \"properties\": {"
		"\"query\": {\"$ref\": \"#/definitions/s\", \"x-input-source\": \"inline\"},"
		"\"csv_file\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}],"
		" \"extensions\": [\"csv\", \".tsv\"]}}}",
		"{\"$ref\": \"#/definitions/p\", \"definitions\": {\"p\": {"
		"\"type\": \"object\", \"properties\": {"
		"\"divisor\": {\"type\": \"integer\", \"minimum\": 1, \"default\": 2},"
		"\"mode\": {\"enum\": [\"a\", \"b\"]}}, \"required\": [\"divisor\", \"mode\"]}}}",
		NULL,
	},
	{ NULL, NULL, NULL },
};

#define NSKILLS (sizeof(skill_texts) / sizeof(*skill_texts))

static const char *const keys[] = {
	"csv_file", "query", "input_file", "data", "data.v1", "notes",
	"archive", "x", "q", "limit",
};
static const char *const suffixes[] = {
	"", ".csv", ".CSV", ".txt", ".md", ".json", ".pdf", "_old.csv", ".",
	".csv.csv", "s", ".Md", ".tar.gz", ".TAR.GZ", ".gz", ".zip", ".tsv",
	".v1", ".v1.csv",
};

#define N(a) (sizeof(a) / sizeof(*(a)))

static json_t *parse_or_die(const char *text)
{
	json_t *v = NULL;

	if (!text)
		return NULL;
	if (fjson_parse(&v, text, strlen(text), NULL) < 0)
		abort();
	return v;
}

/* The skills, built in the first call and kept for the process. */
static struct skill **skills(void)
{
	static struct skill *list[NSKILLS];

	if (list[0])
		return list;
	for (size_t i = 0; i < NSKILLS; i++) {
		struct skill *s = calloc(1, sizeof(*s));
		char id[16];

		if (!s)
			abort();
		snprintf(id, sizeof(id), "fuzz%zu", i);
		s->id = strdup(id);
		s->dir = strdup("/nonexistent");
		s->runner = json_pack("{sss[ss]}", "id", id, "engines",
				      "gemini", "codex");
		if (!s->id || !s->dir || !s->runner)
			abort();
		s->engines = json_object_get(s->runner, "engines");
		s->input_schema = parse_or_die(skill_texts[i][0]);
		s->parameter_schema = parse_or_die(skill_texts[i][1]);
		s->output_schema = parse_or_die(skill_texts[i][2]);
		list[i] = s;
	}
	return list;
}

/* ---- the uploads/ names --------------------------------------------------- */

struct names {
	struct inputs_upload ups[MAX_UPLOADS];
	char *owned[MAX_UPLOADS];
	size_t n;
};

static void add_name(struct names *nm, const char *name, size_t len, bool dir)
{
	char *p;

	if (nm->n >= MAX_UPLOADS || !len || len > 255 || memchr(name, '/', len) ||
	    memchr(name, 0, len))
		return;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return;
	for (size_t i = 0; i < nm->n; i++)
		if (strlen(nm->ups[i].name) == len &&
		    !memcmp(nm->ups[i].name, name, len))
			return;	/* a folder holds a name once */
	p = strndup(name, len);
	if (!p)
		abort();
	nm->owned[nm->n] = p;
	nm->ups[nm->n].name = p;
	nm->ups[nm->n].dir = dir;
	nm->n++;
}

static void names_from_lines(struct names *nm, const char *s, size_t len)
{
	while (len) {
		const char *nl = memchr(s, '\n', len);
		size_t l = nl ? (size_t)(nl - s) : len;
		bool dir = l && s[l - 1] == '/';

		add_name(nm, s, dir ? l - 1 : l, dir);
		if (!nl)
			break;
		len -= l + 1;
		s = nl + 1;
	}
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void names_from_hash(struct names *nm, const uint8_t *data, size_t size)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */
	size_t count;

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ull;
	if (!h)
		h = 1;
	count = next(&h) % 9;
	for (size_t i = 0; i < count; i++) {
		const char *k = keys[next(&h) % N(keys)];
		const char *sfx = suffixes[next(&h) % N(suffixes)];
		char buf[64];

		snprintf(buf, sizeof(buf), "%s%s", k, sfx);
		add_name(nm, buf, strlen(buf), next(&h) % 4 == 0);
	}
}

static void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->owned[i]);
}

/* ---- the rule, written again ------------------------------------------- */

static bool declares_extensions(const json_t *prop)
{
	const json_t *exts = json_object_get(prop, "extensions");

	return json_is_array(exts) && json_array_size(exts) > 0;
}

/* Is `name` <key><ext> for an allowed ext, or <key> itself? */
static bool rule_matches(const char *key, const json_t *prop, const char *name)
{
	const json_t *exts = json_object_get(prop, "extensions");
	size_t klen = strlen(key);
	const char *sfx;
	const json_t *e;
	size_t i;

	if (!strcmp(name, key))
		return true;
	if (!declares_extensions(prop) || strncmp(name, key, klen))
		return false;
	sfx = name + klen;
	if (sfx[0] != '.')
		return false;
	json_array_foreach(exts, i, e) {
		const char *want = json_string_value(e);

		if (!want)
			continue;
		if (want[0] == '.' ? !strcasecmp(sfx, want)
				   : !strcasecmp(sfx + 1, want))
			return true;
	}
	return false;
}

/* Every declared extension is one part: ".csv", "csv", "." or "". */
static bool single_part_extensions(const json_t *prop)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(prop, "extensions"), i, e) {
		const char *s = json_string_value(e);

		if (s && strchr(s[0] == '.' ? s + 1 : s, '.'))
			return false;
	}
	return true;
}

static bool is_inline(const json_t *prop)
{
	const json_t *src = json_object_get(prop, "x-input-source");

	return json_is_string(src) && !strcmp(json_string_value(src), "inline");
}

static void check_key(const char *key, const json_t *prop,
		      const struct names *nm, const struct inputs *in)
{
	const json_t *v = json_object_get(in->input, key);
	size_t candidates = 0, last = 0;
	const char *bound = NULL;

	if (v) {
		const char *path = json_string_value(v);
		size_t plen = strlen(UPLOADS "/");

		if (!path || strncmp(path, UPLOADS "/", plen))
			abort();
		bound = path + plen;
		if (!rule_matches(key, prop, bound))
			abort();	/* bound to a name outside the rule */
	}
	for (size_t i = 0; i < nm->n; i++)
		if (rule_matches(key, prop, nm->ups[i].name)) {
			candidates++;
			last = i;
		}
	if (bound) {
		bool present = false;

		for (size_t i = 0; i < nm->n; i++)
			present |= !strcmp(nm->ups[i].name, bound);
		if (!present)
			abort();	/* not an entry of uploads/ */
	}
	if (!single_part_extensions(prop))
		return;
	if (candidates == 1 && (!bound || strcmp(bound, nm->ups[last].name)))
		abort();
	if (candidates != 1 && bound)
		abort();
	if (candidates > 1) {
		char line[320];

		snprintf(line, sizeof(line),
			 "uploads/: %zu files could be input %s (", candidates,
			 key);
		if (!strstr(in->problems.buf, line))
			abort();
	}
}

/* Whether a line of `text` starts with `prefix` (an upload's name may hold
 * the same words further along a line). */
/* Whether a line of `text` starts with `prefix` and is not one of the
 * lines an accepted request may have: a parameter the skill does not
 * declare ("request.json: skill S has no parameter \"P\" ..."). */
static bool line_starts(const char *text, const char *prefix)
{
	size_t len = strlen(prefix);

	for (const char *l = text; l; l = strchr(l, '\n')) {
		const char *end;

		if (*l == '\n')
			l++;
		if (strncmp(l, prefix, len))
			continue;
		end = strchr(l, '\n');
		if (!strncmp(l + len, "skill ", 6) &&
		    memmem(l, end ? (size_t)(end - l) : strlen(l),
			   " has no parameter \"", 19))
			continue;
		return true;
	}
	return false;
}

static void check_resolved(const struct skill *sk, const json_t *req,
			   const struct names *nm, const struct inputs *in,
			   int check_ret, const struct ferr *check_err)
{
	const json_t *props = json_object_get(sk->input_schema, "properties");
	const json_t *req_input = json_object_get(req, "input");
	void *it = json_object_iter(in->input);
	const char *key;
	json_t *prop;

	if (!json_is_object(props))
		props = NULL;
	/* input.json: schema keys, in schema order */
	json_object_foreach((json_t *)props, key, prop) {
		if (it && !strcmp(json_object_iter_key(it), key))
			it = json_object_iter_next(in->input, it);
		if (is_inline(prop)) {
			const json_t *want = json_object_get(req_input, key);
			const json_t *got = json_object_get(in->input, key);

			if ((want || got) && !json_equal(want, got))
				abort();
		} else {
			check_key(key, prop, nm, in);
		}
	}
	if (it)
		abort();	/* a key not in schema order, or not a property */
	/* problem lines end in a newline */
	if (in->problems.len && in->problems.buf[in->problems.len - 1] != '\n')
		abort();
	if (check_ret == -EINVAL) {
		/* as status shows it: a key may hold a line break */
		char *shown = fname_shown(check_err->message, SIZE_MAX);
		char line[6 * FERR_MESSAGE_MAX + 32];

		if (!shown)
			abort();
		snprintf(line, sizeof(line), "request.json: %s\n", shown);
		free(shown);
		if (!strstr(in->problems.buf, line))
			abort();
	} else if (line_starts(in->problems.buf, "request.json: ")) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct skill **list = skills();
	const uint8_t *nul = memchr(data, 0, size);
	size_t rlen = nul ? (size_t)(nul - data) : size;
	struct names nm = { .n = 0 };
	json_t *req = NULL;

	if (nul)
		names_from_lines(&nm, (const char *)nul + 1, size - rlen - 1);
	else
		names_from_hash(&nm, data, size);
	if (fjson_parse(&req, (const char *)data, rlen, NULL) < 0)
		req = NULL;	/* none written yet */

	for (size_t i = 0; i < NSKILLS; i++) {
		struct ferr err = FERR_INIT;
		struct inputs in;
		json_t *manifest;
		int ret = 0;

		if (req) {
			ret = inputs_check_request(list[i], req, &err);
			if (ret != 0 && ret != -EINVAL && ret != -ENOMEM)
				abort();
			if (ret == -EINVAL && !err.message[0])
				abort();
		}
		if (inputs_resolve(list[i], req, nm.ups, nm.n, UPLOADS, &in) == 0)
			check_resolved(list[i], req, &nm, &in, ret, &err);
		inputs_release(&in);
		manifest = inputs_manifest(list[i]);
		if (!json_is_array(manifest))
			abort();
		json_decref(manifest);
	}
	json_decref(req);
	names_free(&nm);
	return 0;
}
