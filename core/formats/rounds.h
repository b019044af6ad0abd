/*
 * rounds: the rounds of a scientific workflow (seed 004, DESIGN §7) and
 * the transcript built from them.  Pure logic on jansson: no files, no
 * store, no session.  The caller reads rounds/1.json ..
 * rounds/<n>.json (contiguous numbering is its business: it owns the file
 * names) and hands the parsed documents over in order.
 *
 * ---- A round ----
 * A round is a JSON object whose values are strings (null counts as
 * absent) under the keys phenomenon, hypothesis, model, experiment,
 * observation, inference, conclusion; any other key is refused.  Where
 * each tag may be (n rounds, round i):
 *
 *	round 1		phenomenon, hypothesis, model, experiment; no
 *			inference (nothing was observed before it) and no
 *			conclusion (one needs an inference)
 *	round i > 1	inference, then either hypothesis, model and
 *			experiment, or a conclusion (and then none of
 *			the three); never a phenomenon
 *	conclusion	only in the last round, i = n
 *	observation	the result of the round's own experiment: needed
 *			in every round followed by another (the next
 *			inference is drawn from it), optional in the last
 *			round (its experiment may not have run yet).  A
 *			concluding round runs no experiment; an
 *			observation there is optional and is the text of
 *			the final, repeated Observation block (the seed's
 *			example relabels it "最终观察"), which otherwise
 *			repeats the previous round's observation verbatim
 *			(the seed's code)
 *
 * Every required tag is a non-empty string; an observation may be ""
 * (an experiment can print nothing).  So one round is never concluded:
 * the seed's table row for N = 1 (one Observation, no Experiment) is
 * read as "one round: Phenomenon, Hypothesis, Model, Experiment and the
 * Observation of that experiment, once each; no Conclusion".
 *
 * ---- Refusals ----
 * Refusals are -EINVAL with err->path "rounds/<i>.json" and a message
 * that is complete on its own and names the file and the tag, e.g.
 * `rounds/2.json: a round after the first needs "inference"` and
 * `rounds/2.json: only the last round may conclude; rounds/3.json
 * follows it`.
 *
 * ---- The transcript ----
 * The transcript (the assistant content of summary.json).  Every tag is
 * one block
 *
 *	<Tag>\n<text>\n</Tag>
 *
 * with the text verbatim, and blocks are separated by one blank line
 * ("\n\n"), nothing after the last: the layout of the seed's worked
 * example.  (The seed's sketch of its code appends
 * f"<Observation>{observation}</Observation>" on one line; the example
 * is what its users see and what the skill's engines are shown, so the
 * example's layout wins.)  Blocks come in the seed's order: round 1
 * Phenomenon, Hypothesis, Model, Experiment, Observation; each later
 * round Inference, Hypothesis, Model, Experiment, Observation, or
 * Inference, Conclusion; an Observation only where the round has one.
 * After a Conclusion the final Observation follows: the concluding
 * round's own observation when given, else the previous round's
 * repeated, as the seed does.  So once n rounds are
 * concluded the counts are the seed's table: Phenomenon 1, Hypothesis,
 * Model, Experiment and Inference n-1, Observation n, Conclusion 1;
 * before that it is the transcript so far.
 */
#ifndef FLOWFS_ROUNDS_H
#define FLOWFS_ROUNDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"

/* The tags a round may have, in the order above; NULL after the last. */
#define ROUNDS_TAG_COUNT 7
extern const char *const rounds_tags[ROUNDS_TAG_COUNT + 1];

/*
 * Check round `index` (1-based) as one of `count` rounds (index <= count)
 * on its own: its tags, their types, and the placement rules above.
 * 0, or -EINVAL with err set.
 */
int rounds_check_one(size_t index, size_t count, const json_t *round,
		     struct ferr *err);

/* Check rounds[0..n-1] as rounds 1..n; the first refusal is reported. */
int rounds_check(const json_t *const *rounds, size_t n, struct ferr *err);

/* Whether the last of n checked rounds holds a conclusion. */
bool rounds_concluded(const json_t *const *rounds, size_t n);

/*
 * Append the transcript of rounds[0..n-1] (the layout above) to `out`.
 * The rounds are checked first (-EINVAL when they do not pass; err may
 * be NULL).  0, -EINVAL or -ENOMEM; on failure `out` is as it was.
 */
int rounds_render_content(const json_t *const *rounds, size_t n,
			  struct sbuf *out);

/*
 * output/summary.json: append
 *
 *	[{"role": "user", "content": "<description>\n\nI/O Requirements:\n
 *	  <io_instructions>"}, {"role": "assistant", "content": <transcript>}]
 *
 * as Python's json.dumps(obj, indent=2, ensure_ascii=False) writes it
 * (fjson_dump; no trailing newline).  description and io_instructions
 * are C strings (an inline input holding "\u0000" is cut there); NULL
 * is "" (the "I/O Requirements:" heading stays: the
 * seed's format always has it).  Zero rounds give an empty assistant
 * content.  0, -EINVAL (rounds that do not pass rounds_check, or a
 * description or io_instructions that is not UTF-8) or -ENOMEM; on
 * failure `out` is as it was.
 */
int rounds_render_summary(const char *description, const char *io_instructions,
			  const json_t *const *rounds, size_t n,
			  struct sbuf *out);

/*
 * output/summary_readable.txt: for the same two messages, each as
 *
 *	"=== USER ===\n" <content> "\n\n" <80 '='> "\n\n"
 *
 * ("=== ASSISTANT ===" for the second).  Same returns as above.
 */
int rounds_render_readable(const char *description,
			   const char *io_instructions,
			   const json_t *const *rounds, size_t n,
			   struct sbuf *out);

#endif
