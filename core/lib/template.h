/*
 * tmpl: the prompt template language, a subset of Jinja2 whose output is
 * byte-identical to Python Jinja2 3.1 (`jinja2.Environment()` with default
 * settings, `env.from_string(text).render(**context)`) for every template
 * it accepts.  Whatever is outside the subset, or whose output flowfs
 * cannot reproduce exactly, is refused with an error naming the line and
 * the construct; it never renders as something else.  Nothing of flowfs
 * here: a template and a JSON context in, text out; no files, no store,
 * no session.
 *
 *	struct ferr err = FERR_INIT;
 *	struct sbuf out = SBUF_INIT;
 *	struct tmpl *t;
 *	if (tmpl_parse(&t, text, len, &err) < 0)
 *		... "line 3, column 9: unknown filter 'capitalize'"
 *	if (tmpl_render(t, context, &out, &err) < 0)
 *		... "line 5: 'input' is undefined"
 *	tmpl_free(t);
 *
 * ---- The subset ----
 * The subset:
 *
 *  - text, `{{ expr }}`, `{# comment #}`, `{% if expr %}` with `{% elif %}`,
 *    `{% else %}`, `{% endif %}`, `{% for NAME[, NAME...] in expr %}` with
 *    `{% else %}` (rendered when nothing was iterated) and `{% endfor %}`;
 *    `{% for k, v in expr.items() %}` over a dict (the only call there is).
 *    A for loop iterates a list, a dict (its keys), a string (its
 *    characters) or an undefined value (nothing).  Inside a loop,
 *    `loop.index`, `index0`, `revindex`, `revindex0`, `first`, `last`,
 *    `length`.
 *  - whitespace control: `-` after `{{ {% {#` strips all whitespace before
 *    the tag, `-` before `}} %} #}` all whitespace after it; `+` is
 *    accepted where Jinja accepts it (no trim_blocks / lstrip_blocks).
 *  - expressions: names, `a.b`, `a.0`, `a[expr]` (Jinja's getattr/getitem
 *    rules), string literals ('...' "..." with Python escapes, adjacent
 *    literals concatenate), decimal integer (int64) and float literals,
 *    `-` before a number literal, true/false/none (any case Jinja takes),
 *    `( expr )`, `not`, `and`, `or` (returning an operand, as in Python),
 *    `==` / `!=` (chainable), `is [not] defined` / `is [not] undefined`,
 *    and the filters default (alias d), tojson, length (alias count), join,
 *    upper, lower, trim with Jinja's positional and keyword parameters
 *    (except join's `attribute`).
 *  - values print as Python's str(): None, True, 1.5, 1e+16, [1, 'a'],
 *    {'k': "it's"}; undefined names print as nothing.  One trailing newline
 *    of the template is dropped; "\r\n" and "\r" in it become "\n".
 *
 * ---- Refused ----
 * Refused although Jinja2 would accept it: every other tag, filter, test,
 * operator and literal form (lists, dicts, tuples, hex/underscore numbers,
 * numbers outside int64 or a double), method calls, slices, inline `if`,
 * non-ASCII names, lookups that find a Python attribute of the value
 * (`d.keys`, `s.upper`; their output is an object address), Jinja's
 * globals (`range`, `dict`, `lipsum`, `cycler`, `joiner`, `namespace`)
 * unless the context defines the name, using `loop` other than for the
 * attributes above, string literals holding a lone surrogate or `\N{...}`,
 * `lower` of a string with U+03A3 (Python's final-sigma rule), and values
 * nested deeper than 100 levels where they must be printed or compared.
 *
 * ---- Limits ----
 * Limits, so any text renders in bounded time and memory and stays inside
 * what Python can compile from Jinja2's generated code (20 nested loops,
 * 100 indentation levels, ~200 nested parentheses): templates up to
 * 16 MiB, blocks nested 16 deep, expressions nested 32 deep (any number of
 * elif branches and and/or operands); a render stops with an error after
 * 5 million steps or 64 MiB of output (or of one intermediate string).
 *
 * ---- Errors ----
 * Errors are matched by occurrence, not by wording: where Jinja2 raises,
 * tmpl_parse or tmpl_render fails, with flowfs's own message.  Some
 * mistakes Jinja2 reports only when a branch runs (a filter given three
 * arguments, an unknown filter) are refused at parse time here.
 */
#ifndef FLOWFS_TEMPLATE_H
#define FLOWFS_TEMPLATE_H

#include <stddef.h>

#include <jansson.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"

struct tmpl;

/*
 * Parse `len` bytes of `text` (UTF-8; need not be NUL-terminated).  On
 * success `*out` is a new template (tmpl_free() it) and 0 is returned.
 * Otherwise `*out` is NULL and the return is -ENOMEM, or -EINVAL with
 * err->line and err->column (1-based, columns in characters) and a message
 * naming the construct: "unsupported tag 'macro'", "unknown filter
 * 'capitalize'", "'endfor' expected, found end of template",
 * "unsupported expression: method call".
 */
int tmpl_parse(struct tmpl **out, const char *text, size_t len,
	       struct ferr *err);

/*
 * Render `t` with the top-level names of `context` (a JSON object; NULL
 * means none) and append the output to `out`.  Returns 0, -ENOMEM, or
 * -EINVAL (err->line set) for what Jinja2 would raise at render time
 * ("'missing' is undefined" for `missing.x`, iterating a number, tojson of
 * an undefined value, ...), for a value it cannot print exactly, or when a
 * limit is hit.  On failure `out` is truncated back to its length before
 * the call.  Context values map as json.loads gives them to Python:
 * object -> dict (insertion order), array -> list, integer -> int,
 * real -> float, string -> str, true/false -> bool, null -> None.
 * A template may be rendered any number of times, also from several
 * threads at once (it is only read; jansson's reference counts are atomic).
 */
int tmpl_render(const struct tmpl *t, const json_t *context, struct sbuf *out,
		struct ferr *err);

/* Free a template; NULL is allowed. */
void tmpl_free(struct tmpl *t);

/* The built-in default prompt template of DESIGN §4, byte for byte. */
extern const char tmpl_default_prompt[];

#endif
