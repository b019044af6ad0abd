/*
 * Unit tests for rounds: the placement rules and their messages, the
 * transcript of the seed's 3-round Titanic example (its tagged content
 * exactly as the seed shows it, summary.json byte-identical to Python's
 * json.dumps(indent=2, ensure_ascii=False) and summary_readable.txt),
 * the seed's verification snippet, the seed's tag-count table for
 * N = 2..6 (and the transcript so far before a conclusion), and the
 * built-in skill package scientific-workflow.
 *
 * The expected summary.json and summary_readable.txt bytes were made by
 * /usr/bin/python3 from the seed's example (json.dumps of the
 * conversation; the readable file as "=== ROLE ===\n" + content +
 * "\n\n" + "=" * 80 + "\n\n"), not by this code.
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

#include "flowfs-config.h"
#include "lib/fjson.h"
#include "formats/rounds.h"
#include "lib/schema.h"
#include "session/skill.h"
#include "unit.h"

#define SEED "seeds/004_2a6ede36c8ed9259.txt"

static const char description[] =
	"计算泰坦尼克数据集 train.csv 中乘客的平均票价";
static const char io_instructions[] =
	"将平均票价（保留两位小数）写入 output.txt";

/* The seed's example, one round per document. */
static const char *const titanic[] = {
	"{\"phenomenon\": \"第1轮：问题观察\\n泰坦尼克数据集包含乘客信息和票价数据\","
	" \"hypothesis\": \"第1轮：假设\\n可以使用 pandas 计算平均票价\","
	" \"model\": \"第1轮：模型\\nmean_fare = df['Fare'].mean()\","
	" \"experiment\": \"第1轮：实验代码\\nimport pandas as pd\\ndf = pd.read_csv('train.csv')\\nmean_fare = df['Fare'].mean()\\nprint(f'Mean fare: {mean_fare}')\","
	" \"observation\": \"第1轮：观察结果（系统自动插入）\\nMean fare: 32.204208\"}",
	"{\"inference\": \"第2轮：推理\\n平均票价为 32.20，需要保存到文件\","
	" \"hypothesis\": \"第2轮：新假设\\n将结果保存到 output.txt\","
	" \"model\": \"第2轮：模型\\n使用 Python 文件写入\","
	" \"experiment\": \"第2轮：实验代码\\nwith open('output.txt', 'w') as f:\\n    f.write('32.20')\\nprint('Saved to output.txt')\","
	" \"observation\": \"第2轮：观察结果（系统自动插入）\\nSaved to output.txt\"}",
	"{\"inference\": \"第3轮：最终推理\\n成功保存结果到文件\","
	" \"conclusion\": \"第3轮：结论\\n泰坦尼克数据集的平均票价为 32.20 美元，已成功保存到 output.txt\","
	" \"observation\": \"第3轮：最终观察（系统自动插入）\\nSaved to output.txt\"}",
};

static const char titanic_summary[] =
	"[\n"
	"  {\n"
	"    \"role\": \"user\",\n"
	"    \"content\": \"计算泰坦尼克数据集 train.csv 中乘客的平均票价\\n\\nI/O Requirements:\\n将平均票价（保留两位小数）写入 output.txt\"\n"
	"  },\n"
	"  {\n"
	"    \"role\": \"assistant\",\n"
	"    \"content\": \"<Phenomenon>\\n第1轮：问题观察\\n泰坦尼克数据集包含乘客信息和票价数据\\n</Phenomenon>\\n\\n<Hypothesis>\\n第1轮：假设\\n可以使用 pandas 计算平均票价\\n</Hypothesis>\\n\\n<Model>\\n第1轮：模型\\nmean_fare = df['Fare'].mean()\\n</Model>\\n\\n<Experiment>\\n第1轮：实验代码\\nimport pandas as pd\\ndf = pd.read_csv('train.csv')\\nmean_fare = df['Fare'].mean()\\nprint(f'Mean fare: {mean_fare}')\\n</Experiment>\\n\\n<Observation>\\n第1轮：观察结果（系统自动插入）\\nMean fare: 32.204208\\n</Observation>\\n\\n<Inference>\\n第2轮：推理\\n平均票价为 32.20，需要保存到文件\\n</Inference>\\n\\n<Hypothesis>\\n第2轮：新假设\\n将结果保存到 output.txt\\n</Hypothesis>\\n\\n<Model>\\n第2轮：模型\\n使用 Python 文件写入\\n</Model>\\n\\n<Experiment>\\n第2轮：实验代码\\nwith open('output.txt', 'w') as f:\\n    f.write('32.20')\\nprint('Saved to output.txt')\\n</Experiment>\\n\\n<Observation>\\n第2轮：观察结果（系统自动插入）\\nSaved to output.txt\\n</Observation>\\n\\n<Inference>\\n第3轮：最终推理\\n成功保存结果到文件\\n</Inference>\\n\\n<Conclusion>\\n第3轮：结论\\n泰坦尼克数据集的平均票价为 32.20 美元，已成功保存到 output.txt\\n</Conclusion>\\n\\n<Observation>\\n第3轮：最终观察（系统自动插入）\\nSaved to output.txt\\n</Observation>\"\n"
	"  }\n"
	"]";

static const char titanic_readable[] =
	"=== USER ===\n"
	"计算泰坦尼克数据集 train.csv 中乘客的平均票价\n"
	"\n"
	"I/O Requirements:\n"
	"将平均票价（保留两位小数）写入 output.txt\n"
	"\n"
	"================================================================================\n"
	"\n"
	"=== ASSISTANT ===\n"
	"<Phenomenon>\n"
	"第1轮：问题观察\n"
	"泰坦尼克数据集包含乘客信息和票价数据\n"
	"</Phenomenon>\n"
	"\n"
	"<Hypothesis>\n"
	"第1轮：假设\n"
	"可以使用 pandas 计算平均票价\n"
	"</Hypothesis>\n"
	"\n"
	"<Model>\n"
	"第1轮：模型\n"
	"mean_fare = df['Fare'].mean()\n"
	"</Model>\n"
	"\n"
	"<Experiment>\n"
	"第1轮：实验代码\n"
	"import pandas as pd\n"
	"df = pd.read_csv('train.csv')\n"
	"mean_fare = df['Fare'].mean()\n"
	"print(f'Mean fare: {mean_fare}')\n"
	"</Experiment>\n"
	"\n"
	"<Observation>\n"
	"第1轮：观察结果（系统自动插入）\n"
	"Mean fare: 32.204208\n"
	"</Observation>\n"
	"\n"
	"<Inference>\n"
	"第2轮：推理\n"
	"平均票价为 32.20，需要保存到文件\n"
	"</Inference>\n"
	"\n"
	"<Hypothesis>\n"
	"第2轮：新假设\n"
	"将结果保存到 output.txt\n"
	"</Hypothesis>\n"
	"\n"
	"<Model>\n"
	"第2轮：模型\n"
	"使用 Python 文件写入\n"
	"</Model>\n"
	"\n"
	"<Experiment>\n"
	"第2轮：实验代码\n"
	"with open('output.txt', 'w') as f:\n"
	"    f.write('32.20')\n"
	"print('Saved to output.txt')\n"
	"</Experiment>\n"
	"\n"
	"<Observation>\n"
	"第2轮：观察结果（系统自动插入）\n"
	"Saved to output.txt\n"
	"</Observation>\n"
	"\n"
	"<Inference>\n"
	"第3轮：最终推理\n"
	"成功保存结果到文件\n"
	"</Inference>\n"
	"\n"
	"<Conclusion>\n"
	"第3轮：结论\n"
	"泰坦尼克数据集的平均票价为 32.20 美元，已成功保存到 output.txt\n"
	"</Conclusion>\n"
	"\n"
	"<Observation>\n"
	"第3轮：最终观察（系统自动插入）\n"
	"Saved to output.txt\n"
	"</Observation>\n"
	"\n"
	"================================================================================\n"
	"\n"
	"";

static json_t *parse(const char *text)
{
	struct ferr err = FERR_INIT;
	json_t *doc = NULL;

	if (fjson_parse(&doc, text, strlen(text), &err) < 0)
		fail_msg("test document does not parse: %s", err.message);
	return doc;
}

struct set {
	json_t *r[64];
	size_t n;
};

static void set_add(struct set *s, const char *text)
{
	assert_true(s->n < 64);
	s->r[s->n++] = parse(text);
}

static void set_free(struct set *s)
{
	for (size_t i = 0; i < s->n; i++)
		json_decref(s->r[i]);
	s->n = 0;
}

static const json_t *const *rs(const struct set *s)
{
	return (const json_t *const *)s->r;
}

static void load_titanic(struct set *s)
{
	for (size_t i = 0; i < 3; i++)
		set_add(s, titanic[i]);
}

static void assert_bytes(const struct sbuf *got, const char *want)
{
	if (got->len != strlen(want) || memcmp(got->buf, want, got->len))
		fail_msg("got (%zu bytes):\n%s\nwant (%zu bytes):\n%s",
			 got->len, got->buf, strlen(want), want);
}

/* The example's content is exactly the seed's ```xml block. */
static void test_titanic_content(void **state)
{
	struct set s = { .n = 0 };
	struct sbuf out = SBUF_INIT;
	size_t len;
	char *seed = unit_read_shared(SEED, &len);
	char *start, *end;

	(void)state;
	if (!seed)
		skip();
	start = strstr(seed, "```xml\n");
	assert_non_null(start);
	start += strlen("```xml\n");
	end = strstr(start, "\n```");
	assert_non_null(end);
	*end = '\0';

	load_titanic(&s);
	assert_int_equal(rounds_check(rs(&s), s.n, NULL), 0);
	assert_true(rounds_concluded(rs(&s), s.n));
	assert_int_equal(rounds_render_content(rs(&s), s.n, &out), 0);
	assert_bytes(&out, start);
	sbuf_release(&out);
	set_free(&s);
	free(seed);
}

static void test_titanic_summary(void **state)
{
	struct set s = { .n = 0 };
	struct sbuf out = SBUF_INIT;

	(void)state;
	load_titanic(&s);
	assert_int_equal(sbuf_addstr(&out, "kept"), 0);
	assert_int_equal(rounds_render_summary(description, io_instructions,
					       rs(&s), s.n, &out), 0);
	assert_memory_equal(out.buf, "kept", 4);
	sbuf_setlen(&out, 0);
	assert_int_equal(rounds_render_summary(description, io_instructions,
					       rs(&s), s.n, &out), 0);
	assert_bytes(&out, titanic_summary);
	sbuf_release(&out);
	set_free(&s);
}

static void test_titanic_readable(void **state)
{
	struct set s = { .n = 0 };
	struct sbuf out = SBUF_INIT;

	(void)state;
	load_titanic(&s);
	assert_int_equal(rounds_render_readable(description, io_instructions,
						rs(&s), s.n, &out), 0);
	assert_bytes(&out, titanic_readable);
	sbuf_release(&out);
	set_free(&s);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The seed's "验证要点" snippet, on summary.json as a reader parses it. */
static void verify_snippet(const struct sbuf *summary)
{
	struct ferr err = FERR_INIT;
	json_t *data = NULL;
	const char *content;

	if (fjson_parse(&data, summary->buf, summary->len, &err) < 0)
		fail_msg("summary.json does not parse: %s", err.message);
	content = json_string_value(json_object_get(json_array_get(data, 1),
						    "content"));
	assert_non_null(content);
	assert_non_null(strstr(content, "<Phenomenon>"));
	assert_non_null(strstr(content, "<Conclusion>"));
	assert_true(count(content, "<Experiment>") >= 2);
	assert_true(count(content, "<Observation>") >= 2);
	json_decref(data);
}

static void test_seed_snippet(void **state)
{
	struct set s = { .n = 0 };
	struct sbuf out = SBUF_INIT;

	(void)state;
	load_titanic(&s);
	assert_int_equal(rounds_render_summary(description, io_instructions,
					       rs(&s), s.n, &out), 0);
	verify_snippet(&out);
	sbuf_release(&out);
	set_free(&s);
}

/* Rounds 1..n of a made-up run, concluding in round n when asked. */
static void make_run(struct set *s, size_t n, bool conclude)
{
	char buf[512];

	set_free(s);
	for (size_t i = 1; i <= n; i++) {
		if (i == 1)
			snprintf(buf, sizeof(buf), "{\"phenomenon\": \"p\","
				 " \"hypothesis\": \"h1\", \"model\": \"m1\","
				 " \"experiment\": \"e1\","
				 " \"observation\": \"o1\"}");
		else if (i == n && conclude)
			snprintf(buf, sizeof(buf), "{\"inference\": \"i%zu\","
				 " \"conclusion\": \"c\"}", i);
		else
			snprintf(buf, sizeof(buf), "{\"inference\": \"i%zu\","
				 " \"hypothesis\": \"h%zu\", \"model\": \"m%zu\","
				 " \"experiment\": \"e%zu\","
				 " \"observation\": \"o%zu\"}", i, i, i, i, i);
		set_add(s, buf);
	}
}

struct counts {
	size_t phenomenon, hypothesis, model, experiment, observation,
	       inference, conclusion;
};

static struct counts tags(const char *content)
{
	struct counts c = {
		count(content, "<Phenomenon>"), count(content, "<Hypothesis>"),
		count(content, "<Model>"), count(content, "<Experiment>"),
		count(content, "<Observation>"), count(content, "<Inference>"),
		count(content, "<Conclusion>"),
	};

	/* Every opened block is closed. */
	assert_int_equal(count(content, "</Phenomenon>"), c.phenomenon);
	assert_int_equal(count(content, "</Observation>"), c.observation);
	assert_int_equal(count(content, "</Conclusion>"), c.conclusion);
	return c;
}

/* The seed's table: once N rounds concluded, P 1, H/M/E/I N-1, O N, C 1. */
static void test_table_counts(void **state)
{
	struct set s = { .n = 0 };

	(void)state;
	for (size_t n = 2; n <= 6; n++) {
		struct sbuf out = SBUF_INIT;
		struct counts c;
		char last[16];

		make_run(&s, n, true);
		assert_int_equal(rounds_check(rs(&s), n, NULL), 0);
		assert_true(rounds_concluded(rs(&s), n));
		assert_int_equal(rounds_render_content(rs(&s), n, &out), 0);
		c = tags(out.buf);
		print_message("N=%zu: Phenomenon %zu Hypothesis %zu Model %zu"
			      " Experiment %zu Observation %zu Inference %zu"
			      " Conclusion %zu\n", n, c.phenomenon,
			      c.hypothesis, c.model, c.experiment,
			      c.observation, c.inference, c.conclusion);
		assert_int_equal(c.phenomenon, 1);
		assert_int_equal(c.hypothesis, n - 1);
		assert_int_equal(c.model, n - 1);
		assert_int_equal(c.experiment, n - 1);
		assert_int_equal(c.inference, n - 1);
		assert_int_equal(c.observation, n);
		assert_int_equal(c.conclusion, 1);
		/* The final Observation repeats round N-1's verbatim. */
		snprintf(last, sizeof(last), "o%zu", n - 1);
		assert_int_equal(count(out.buf, last), 2);
		{
			char tail[64];

			snprintf(tail, sizeof(tail), "</Conclusion>\n\n"
				 "<Observation>\n%s\n</Observation>", last);
			assert_true(out.len > strlen(tail));
			assert_string_equal(out.buf + out.len - strlen(tail),
					    tail);
		}
		if (n >= 3) {
			sbuf_reset(&out);
			assert_int_equal(rounds_render_summary("d", "io",
					 rs(&s), n, &out), 0);
			verify_snippet(&out);
		}
		sbuf_release(&out);
	}
	set_free(&s);
}

/* Before the conclusion: the transcript so far. */
static void test_so_far(void **state)
{
	struct set s = { .n = 0 };
	struct sbuf out = SBUF_INIT;
	struct counts c;

	(void)state;
	for (size_t n = 1; n <= 6; n++) {
		make_run(&s, n, false);
		assert_false(rounds_concluded(rs(&s), n));
		sbuf_reset(&out);
		assert_int_equal(rounds_render_content(rs(&s), n, &out), 0);
		c = tags(out.buf);
		assert_int_equal(c.phenomenon, 1);
		assert_int_equal(c.hypothesis, n);
		assert_int_equal(c.model, n);
		assert_int_equal(c.experiment, n);
		assert_int_equal(c.inference, n - 1);
		assert_int_equal(c.observation, n);
		assert_int_equal(c.conclusion, 0);
	}
	/* N = 1, the table's contradictory row: one of each, its
	 * Observation right after its Experiment, no Conclusion. */
	make_run(&s, 1, false);
	sbuf_reset(&out);
	assert_int_equal(rounds_render_content(rs(&s), 1, &out), 0);
	assert_string_equal(out.buf,
		"<Phenomenon>\np\n</Phenomenon>\n\n"
		"<Hypothesis>\nh1\n</Hypothesis>\n\n"
		"<Model>\nm1\n</Model>\n\n"
		"<Experiment>\ne1\n</Experiment>\n\n"
		"<Observation>\no1\n</Observation>");

	/* The last round's experiment has not run yet: no Observation. */
	set_free(&s);
	set_add(&s, "{\"phenomenon\": \"p\", \"hypothesis\": \"h\","
		" \"model\": \"m\", \"experiment\": \"e\", \"observation\": \"o\"}");
	set_add(&s, "{\"inference\": \"i\", \"hypothesis\": \"h2\","
		" \"model\": \"m2\", \"experiment\": \"e2\", \"observation\": null}");
	sbuf_reset(&out);
	assert_int_equal(rounds_render_content(rs(&s), 2, &out), 0);
	c = tags(out.buf);
	assert_int_equal(c.observation, 1);
	assert_int_equal(c.experiment, 2);
	assert_memory_equal(out.buf + out.len - strlen("</Experiment>"),
			    "</Experiment>", strlen("</Experiment>"));

	/* No rounds: an empty assistant message. */
	sbuf_reset(&out);
	assert_int_equal(rounds_render_summary("d", NULL, NULL, 0, &out), 0);
	assert_string_equal(out.buf,
		"[\n  {\n    \"role\": \"user\",\n"
		"    \"content\": \"d\\n\\nI/O Requirements:\\n\"\n  },\n"
		"  {\n    \"role\": \"assistant\",\n    \"content\": \"\"\n  }\n]");
	sbuf_release(&out);
	set_free(&s);
}

/* Check rounds given as texts; the message, or "" when accepted. */
static const char *verdict(struct ferr *err, size_t n, ...)
{
	struct set s = { .n = 0 };
	va_list ap;
	int ret;

	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		set_add(&s, va_arg(ap, const char *));
	va_end(ap);
	ferr_clear(err);
	ret = rounds_check(rs(&s), n, err);
	if (ret < 0) {
		struct sbuf out = SBUF_INIT;

		assert_int_equal(ret, -EINVAL);
		/* Rendering refuses what the check refuses. */
		assert_int_equal(rounds_render_summary("d", "io", rs(&s), n,
						       &out), -EINVAL);
		assert_int_equal(out.len, 0);
		assert_int_equal(rounds_render_readable("d", "io", rs(&s), n,
							&out), -EINVAL);
		assert_int_equal(out.len, 0);
		sbuf_release(&out);
	} else {
		assert_int_equal(err->message[0], '\0');
	}
	set_free(&s);
	return err->message;
}

#define R1 "{\"phenomenon\": \"p\", \"hypothesis\": \"h\", \"model\": \"m\"," \
	" \"experiment\": \"e\", \"observation\": \"o\"}"
#define RX "{\"inference\": \"i\", \"hypothesis\": \"h\", \"model\": \"m\"," \
	" \"experiment\": \"e\", \"observation\": \"o\"}"
#define RC "{\"inference\": \"i\", \"conclusion\": \"c\"}"

static void test_placement(void **state)
{
	struct ferr err = FERR_INIT;

	(void)state;
	assert_string_equal(verdict(&err, 1, R1), "");
	assert_string_equal(verdict(&err, 2, R1, RC), "");
	assert_string_equal(verdict(&err, 3, R1, RX, RC), "");
	assert_string_equal(verdict(&err, 3, R1, RX, RX), "");

	assert_string_equal(verdict(&err, 2, R1,
		"{\"hypothesis\": \"h\", \"model\": \"m\", \"experiment\": \"e\"}"),
		"rounds/2.json: a round after the first needs \"inference\"");
	assert_string_equal(err.path, "rounds/2.json");
	assert_string_equal(verdict(&err, 3, R1, RC, RC),
		"rounds/2.json: only the last round may conclude;"
		" rounds/3.json follows it");
	assert_string_equal(err.path, "rounds/2.json");
	assert_string_equal(verdict(&err, 3, R1, RC, RX),
		"rounds/2.json: only the last round may conclude;"
		" rounds/3.json follows it");
	assert_string_equal(verdict(&err, 1,
		"{\"phenomenon\": \"p\", \"hypothesis\": \"h\", \"experiment\": \"e\"}"),
		"rounds/1.json: the first round needs \"model\"");
	assert_string_equal(verdict(&err, 1,
		"{\"hypothesis\": \"h\", \"model\": \"m\", \"experiment\": \"e\"}"),
		"rounds/1.json: the first round needs \"phenomenon\"");
	assert_string_equal(verdict(&err, 1,
		"{\"phenomenon\": \"p\", \"hypothesis\": \"h\", \"model\": \"m\","
		" \"experiment\": \"e\", \"conclusion\": \"c\"}"),
		"rounds/1.json: the first round cannot conclude: a \"conclusion\""
		" follows an inference in a later round");
	assert_string_equal(verdict(&err, 1,
		"{\"phenomenon\": \"p\", \"hypothesis\": \"h\", \"model\": \"m\","
		" \"experiment\": \"e\", \"inference\": \"i\"}"),
		"rounds/1.json: the first round has no \"inference\": nothing"
		" was observed before it");
	assert_string_equal(verdict(&err, 2, R1,
		"{\"inference\": \"i\", \"hypothesis\": \"h\", \"model\": \"m\"}"),
		"rounds/2.json: a round after the first needs \"experiment\""
		" (or a \"conclusion\")");
	assert_string_equal(verdict(&err, 2, R1,
		"{\"inference\": \"i\", \"conclusion\": \"c\", \"model\": \"m\"}"),
		"rounds/2.json: a concluding round has no \"model\"");
	assert_string_equal(verdict(&err, 2, R1,
		"{\"phenomenon\": \"p\", \"inference\": \"i\", \"conclusion\": \"c\"}"),
		"rounds/2.json: only the first round has a \"phenomenon\"");
	assert_string_equal(verdict(&err, 2,
		"{\"phenomenon\": \"p\", \"hypothesis\": \"h\", \"model\": \"m\","
		" \"experiment\": \"e\"}", RC),
		"rounds/1.json: a round followed by another needs the"
		" \"observation\" of its experiment");
	assert_string_equal(verdict(&err, 1,
		"{\"phenomenon\": \"p\", \"hypothesis\": \"h\", \"model\": \"m\","
		" \"experiment\": \"e\", \"result\": \"r\"}"),
		"rounds/1.json: unknown tag \"result\" (known: phenomenon,"
		" hypothesis, model, experiment, observation, inference,"
		" conclusion)");
	assert_string_equal(verdict(&err, 1,
		"{\"phenomenon\": \"p\", \"hypothesis\": 3, \"model\": \"m\","
		" \"experiment\": \"e\"}"),
		"rounds/1.json: \"hypothesis\" must be a string");
	assert_string_equal(verdict(&err, 1,
		"{\"phenomenon\": \"\", \"hypothesis\": \"h\", \"model\": \"m\","
		" \"experiment\": \"e\"}"),
		"rounds/1.json: \"phenomenon\" is empty");
	assert_string_equal(verdict(&err, 2, R1, "[\"inference\"]"),
		"rounds/2.json: a round is a JSON object of strings (phenomenon,"
		" hypothesis, model, experiment, observation, inference,"
		" conclusion)");
	/* An empty observation is what an experiment printing nothing gives. */
	assert_string_equal(verdict(&err, 2,
		"{\"phenomenon\": \"p\", \"hypothesis\": \"h\", \"model\": \"m\","
		" \"experiment\": \"e\", \"observation\": \"\"}", RC), "");

	/* One file as the index-th of count. */
	{
		json_t *r = parse(RC);

		assert_int_equal(rounds_check_one(3, 3, r, NULL), 0);
		assert_int_equal(rounds_check_one(2, 3, r, &err), -EINVAL);
		assert_string_equal(err.message, "rounds/2.json: only the last"
				    " round may conclude; rounds/3.json follows it");
		assert_int_equal(rounds_check_one(0, 3, r, NULL), -EINVAL);
		assert_int_equal(rounds_check_one(4, 3, r, NULL), -EINVAL);
		json_decref(r);
	}
}

/* Text with "\u0000" and a description that is not UTF-8. */
static void test_odd_text(void **state)
{
	struct set s = { .n = 0 };
	struct sbuf out = SBUF_INIT;
	struct ferr err = FERR_INIT;
	json_t *doc = NULL;
	const json_t *content;

	(void)state;
	set_add(&s, "{\"phenomenon\": \"a\\u0000b\", \"hypothesis\": \"\\\"h\\\"\","
		" \"model\": \"m\\\\\", \"experiment\": \"\\u001f\"}");
	assert_int_equal(rounds_render_summary("d", "io", rs(&s), 1, &out), 0);
	assert_int_equal(fjson_parse(&doc, out.buf, out.len, &err), 0);
	content = json_object_get(json_array_get(doc, 1), "content");
	assert_int_equal(json_string_length(content),
			 strlen("<Phenomenon>\na") + 1 + strlen("b\n</Phenomenon>\n\n"
			 "<Hypothesis>\n\"h\"\n</Hypothesis>\n\n<Model>\nm\\\n"
			 "</Model>\n\n<Experiment>\n\x1f\n</Experiment>"));
	json_decref(doc);
	sbuf_reset(&out);
	assert_int_equal(rounds_render_summary("\xff", "io", rs(&s), 1, &out),
			 -EINVAL);
	assert_int_equal(out.len, 0);
	sbuf_release(&out);
	set_free(&s);
}

static void test_skill_package(void **state)
{
	struct skill *s = skill_load(FLOWFS_SOURCE_SKILLS "/scientific-workflow",
				     "scientific-workflow");
	struct ferr err = FERR_INIT;
	const json_t *props, *p;
	json_t *params;

	(void)state;
	assert_non_null(s);
	if (s->error)
		fail_msg("the skill did not load: %s", s->error);
	assert_string_equal(s->id, "scientific-workflow");
	assert_non_null(skill_default_engine(s));
	for (size_t i = 0; i < json_array_size(s->engines); i++)
		assert_non_null(skill_prompt(s,
			json_string_value(json_array_get(s->engines, i))));
	assert_non_null(skill_file_find(s, "SKILL.md", NULL));

	assert_int_equal(schema_check(s->input_schema, &err), 0);
	assert_int_equal(schema_check(s->parameter_schema, &err), 0);
	assert_int_equal(schema_check(s->output_schema, &err), 0);

	props = json_object_get(s->input_schema, "properties");
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(props, "description"), "x-input-source")),
		"inline");
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(props, "io_instructions"), "x-input-source")),
		"inline");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
		s->input_schema, "required"), 0)), "description");

	params = json_object();
	assert_int_equal(schema_apply_defaults(s->parameter_schema, NULL,
					       params), 0);
	assert_int_equal(json_integer_value(json_object_get(params,
							    "max_iterations")), 5);
	assert_int_equal(schema_validate(s->parameter_schema, NULL, params,
					 "parameter", 0, &err), 0);
	json_object_set_new(params, "max_iterations", json_integer(0));
	assert_int_equal(schema_validate(s->parameter_schema, NULL, params,
					 "parameter", 0, &err), -EINVAL);
	json_decref(params);

	props = json_object_get(s->output_schema, "properties");
	p = json_object_get(props, "summary");
	assert_string_equal(json_string_value(json_object_get(p, "x-type")),
			    "artifact");
	assert_string_equal(json_string_value(json_object_get(p, "x-filename")),
			    "summary.json");
	p = json_object_get(props, "summary_readable");
	assert_string_equal(json_string_value(json_object_get(p, "x-type")),
			    "artifact");
	assert_string_equal(json_string_value(json_object_get(p, "x-filename")),
			    "summary_readable.txt");
	skill_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_titanic_content),
		cmocka_unit_test(test_titanic_summary),
		cmocka_unit_test(test_titanic_readable),
		cmocka_unit_test(test_seed_snippet),
		cmocka_unit_test(test_table_counts),
		cmocka_unit_test(test_so_far),
		cmocka_unit_test(test_placement),
		cmocka_unit_test(test_odd_text),
		cmocka_unit_test(test_skill_package),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
