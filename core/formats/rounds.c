/* rounds: a round's fields and placement rules, and the summary.json
 * transcript of all rounds; see rounds.h. */
#include "formats/rounds.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/fjson.h"

#define KNOWN_TAGS "phenomenon, hypothesis, model, experiment, observation," \
	" inference, conclusion"

const char *const rounds_tags[ROUNDS_TAG_COUNT + 1] = {
	"phenomenon", "hypothesis", "model", "experiment", "observation",
	"inference", "conclusion", NULL
};

/* The three tags of a round that runs an experiment, in block order. */
static const char *const experiment_tags[] = {
	"hypothesis", "model", "experiment", NULL
};

/* The value of `tag` when it is a string; NULL when absent or null. */
static const char *tag_text(const json_t *round, const char *tag)
{
	const json_t *v = json_object_get(round, tag);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool has(const json_t *round, const char *tag)
{
	return tag_text(round, tag) != NULL;
}

/* Refuse round `index` with a message that names its file. */
__attribute__((format(printf, 3, 4)))
static int refuse(struct ferr *err, size_t index, const char *fmt, ...)
{
	char file[32];
	va_list ap;
	int ret;

	snprintf(file, sizeof(file), "rounds/%zu.json", index);
	va_start(ap, fmt);
	ret = ferr_vrefuse(err, -EINVAL, file, fmt, ap);
	va_end(ap);
	return ret;
}

static int check_types(size_t index, const json_t *round, struct ferr *err)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)round, key, v) {
		size_t i;

		for (i = 0; rounds_tags[i]; i++)
			if (!strcmp(rounds_tags[i], key))
				break;
		if (!rounds_tags[i])
			return refuse(err, index, "unknown tag \"%s\" (known: "
				      KNOWN_TAGS ")", key);
		if (json_is_null(v))
			continue;
		if (!json_is_string(v))
			return refuse(err, index, "\"%s\" must be a string",
				      key);
		if (!json_string_length(v) && strcmp(key, "observation"))
			return refuse(err, index, "\"%s\" is empty", key);
	}
	return 0;
}

int rounds_check_one(size_t index, size_t count, const json_t *round,
		     struct ferr *err)
{
	int ret;

	if (!index || index > count)
		return -EINVAL;
	if (!json_is_object(round))
		return refuse(err, index, "a round is a JSON object of "
			      "strings (" KNOWN_TAGS ")");
	ret = check_types(index, round, err);
	if (ret < 0)
		return ret;

	if (index == 1) {
		static const char *const first[] = {
			"phenomenon", "hypothesis", "model", "experiment", NULL
		};
		for (size_t i = 0; first[i]; i++)
			if (!has(round, first[i]))
				return refuse(err, index, "the first round "
					      "needs \"%s\"", first[i]);
		if (has(round, "inference"))
			return refuse(err, index, "the first round has no "
				      "\"inference\": nothing was observed "
				      "before it");
		if (has(round, "conclusion"))
			return refuse(err, index, "the first round cannot "
				      "conclude: a \"conclusion\" follows an "
				      "inference in a later round");
	} else {
		if (has(round, "phenomenon"))
			return refuse(err, index, "only the first round has a "
				      "\"phenomenon\"");
		if (!has(round, "inference"))
			return refuse(err, index, "a round after the first "
				      "needs \"inference\"");
		if (has(round, "conclusion")) {
			if (index < count)
				return refuse(err, index, "only the last round "
					      "may conclude; rounds/%zu.json "
					      "follows it", index + 1);
			for (size_t i = 0; experiment_tags[i]; i++)
				if (has(round, experiment_tags[i]))
					return refuse(err, index, "a concluding "
						      "round has no \"%s\"",
						      experiment_tags[i]);
			return 0;
		}
		for (size_t i = 0; experiment_tags[i]; i++)
			if (!has(round, experiment_tags[i]))
				return refuse(err, index, "a round after the "
					      "first needs \"%s\" (or a "
					      "\"conclusion\")",
					      experiment_tags[i]);
	}
	if (index < count && !has(round, "observation"))
		return refuse(err, index, "a round followed by another needs "
			      "the \"observation\" of its experiment");
	return 0;
}

int rounds_check(const json_t *const *rounds, size_t n, struct ferr *err)
{
	for (size_t i = 0; i < n; i++) {
		int ret = rounds_check_one(i + 1, n, rounds[i], err);

		if (ret < 0)
			return ret;
	}
	return 0;
}

bool rounds_concluded(const json_t *const *rounds, size_t n)
{
	return n > 1 && has(rounds[n - 1], "conclusion");
}

/*
 * One block: "<Tag>\n<text>\n</Tag>", a blank line before all but the
 * first.  The text may hold NUL bytes ("\u0000"), hence the json_t.
 */
static int add_block(struct sbuf *out, size_t start, const char *tag,
		     const json_t *text)
{
	int ret = 0;

	if (out->len > start)
		ret = sbuf_addstr(out, "\n\n");
	if (!ret)
		ret = sbuf_addf(out, "<%s>\n", tag);
	if (!ret)
		ret = sbuf_add(out, json_string_value(text),
			       json_string_length(text));
	if (!ret)
		ret = sbuf_addf(out, "\n</%s>", tag);
	return ret;
}

/* Append the tag of `round` as a block when it is there. */
static int add_tag(struct sbuf *out, size_t start, const json_t *round,
		   const char *key, const char *tag)
{
	const json_t *text = json_object_get(round, key);

	return json_is_string(text) ? add_block(out, start, tag, text) : 0;
}

int rounds_render_content(const json_t *const *rounds, size_t n,
			  struct sbuf *out)
{
	size_t start = out->len;
	const json_t *last_observation = NULL;
	int ret;

	ret = rounds_check(rounds, n, NULL);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n && !ret; i++) {
		const json_t *r = rounds[i];

		if (i == 0)
			ret = add_tag(out, start, r, "phenomenon", "Phenomenon");
		else
			ret = add_tag(out, start, r, "inference", "Inference");
		if (!ret && has(r, "conclusion")) {
			ret = add_tag(out, start, r, "conclusion", "Conclusion");
			/*
			 * The final Observation: the round's own when it
			 * gives one (the seed's example labels it anew),
			 * else the one before, repeated as the seed's code
			 * does (rounds_check made round i-1 carry one).
			 */
			if (!ret && has(r, "observation"))
				last_observation = json_object_get(r,
								   "observation");
			if (!ret && last_observation)
				ret = add_block(out, start, "Observation",
						last_observation);
			continue;
		}
		if (!ret)
			ret = add_tag(out, start, r, "hypothesis", "Hypothesis");
		if (!ret)
			ret = add_tag(out, start, r, "model", "Model");
		if (!ret)
			ret = add_tag(out, start, r, "experiment", "Experiment");
		if (!ret)
			ret = add_tag(out, start, r, "observation",
				      "Observation");
		if (has(r, "observation"))
			last_observation = json_object_get(r, "observation");
	}
	if (ret < 0)
		sbuf_setlen(out, start);
	return ret;
}

static int user_content(const char *description, const char *io_instructions,
			struct sbuf *sb)
{
	int ret = sbuf_addstr(sb, description ? description : "");

	if (!ret)
		ret = sbuf_addstr(sb, "\n\nI/O Requirements:\n");
	if (!ret)
		ret = sbuf_addstr(sb, io_instructions ? io_instructions : "");
	return ret;
}

/* The two contents; both sbufs are released by the caller. */
static int contents(const char *description, const char *io_instructions,
		    const json_t *const *rounds, size_t n, struct sbuf *user,
		    struct sbuf *assistant)
{
	int ret = rounds_render_content(rounds, n, assistant);

	if (!ret)
		ret = user_content(description, io_instructions, user);
	return ret;
}

static json_t *message(const char *role, const struct sbuf *content)
{
	json_t *m = json_object();

	if (!m)
		return NULL;
	if (json_object_set_new(m, "role", json_string(role)) < 0 ||
	    json_object_set_new(m, "content",
				json_stringn(content->buf, content->len)) < 0) {
		json_decref(m);
		return NULL;
	}
	return m;
}

int rounds_render_summary(const char *description, const char *io_instructions,
			  const json_t *const *rounds, size_t n,
			  struct sbuf *out)
{
	struct sbuf user = SBUF_INIT, assistant = SBUF_INIT;
	json_t *doc = NULL;
	int ret;

	ret = contents(description, io_instructions, rounds, n, &user,
		       &assistant);
	if (ret < 0)
		goto out;
	/*
	 * json_stringn refuses text that is not UTF-8 (a description from
	 * the caller), and fails the same way on ENOMEM; the first is the
	 * one a person can do something about.
	 */
	ret = -EINVAL;
	doc = json_array();
	if (!doc || json_array_append_new(doc, message("user", &user)) < 0 ||
	    json_array_append_new(doc, message("assistant", &assistant)) < 0)
		goto out;
	ret = fjson_dump(out, doc);
out:
	json_decref(doc);
	sbuf_release(&user);
	sbuf_release(&assistant);
	return ret;
}

static int add_readable(struct sbuf *out, const char *role,
			const struct sbuf *content)
{
	static const char rule[] =
		"========================================"
		"========================================";
	int ret = sbuf_addf(out, "=== %s ===\n", role);

	if (!ret)
		ret = sbuf_add(out, content->buf, content->len);
	if (!ret)
		ret = sbuf_addf(out, "\n\n%s\n\n", rule);
	return ret;
}

int rounds_render_readable(const char *description,
			   const char *io_instructions,
			   const json_t *const *rounds, size_t n,
			   struct sbuf *out)
{
	struct sbuf user = SBUF_INIT, assistant = SBUF_INIT;
	size_t start = out->len;
	int ret;

	ret = contents(description, io_instructions, rounds, n, &user,
		       &assistant);
	if (!ret)
		ret = add_readable(out, "USER", &user);
	if (!ret)
		ret = add_readable(out, "ASSISTANT", &assistant);
	if (ret < 0)
		sbuf_setlen(out, start);
	sbuf_release(&user);
	sbuf_release(&assistant);
	return ret;
}
