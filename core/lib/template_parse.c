/* template_parse: the template language's parser, tokens to the tree of
 * statements and expressions, refusing what is outside the subset. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/template_i.h"

/*** parser ***/

struct filter_spec {
	const char *name;
	enum filter_id id;
	int nparams;
	const char *params[2];
};

/* Jinja2 3.1's filter signatures (after the value). */
static const struct filter_spec filters[] = {
	{ "default", F_DEFAULT, 2, { "default_value", "boolean" } },
	{ "d", F_DEFAULT, 2, { "default_value", "boolean" } },
	{ "tojson", F_TOJSON, 1, { "indent", NULL } },
	{ "length", F_LENGTH, 0, { NULL, NULL } },
	{ "count", F_LENGTH, 0, { NULL, NULL } },
	{ "join", F_JOIN, 2, { "d", "attribute" } },
	{ "upper", F_UPPER, 0, { NULL, NULL } },
	{ "lower", F_LOWER, 0, { NULL, NULL } },
	{ "trim", F_TRIM, 1, { "chars", NULL } },
};

/* The rest of Jinja2's built-in filters and tests, named as unsupported
 * rather than unknown. */
static const char *const jinja_filters[] = {
	"abs", "attr", "batch", "capitalize", "center", "dictsort", "e",
	"escape", "filesizeformat", "first", "float", "forceescape", "format",
	"groupby", "indent", "int", "items", "last", "list", "map", "max",
	"min", "pprint", "random", "reject", "rejectattr", "replace",
	"reverse", "round", "safe", "select", "selectattr", "slice", "sort",
	"string", "striptags", "sum", "title", "truncate", "unique",
	"urlencode", "urlize", "wordcount", "wordwrap", "xmlattr",
};

static const char *const jinja_tags[] = {
	"autoescape", "block", "break", "call", "continue", "do", "extends",
	"filter", "from", "import", "include", "macro", "pluralize", "raw",
	"set", "trans", "with",
};

static struct tok *cur(struct parser *p) { return &p->toks[p->pos]; }
static struct tok *peek(struct parser *p, size_t k)
{
	size_t i;

	for (i = 0; i < k && p->toks[p->pos + i].type != T_EOF; i++)
		;
	return &p->toks[p->pos + i];
}

static bool is_op(const struct tok *tk, const char *op)
{
	return tk->type == T_OP && tk->n == strlen(op) &&
	       !memcmp(tk->s, op, tk->n);
}

static bool is_name(const struct tok *tk, const char *name)
{
	return tk->type == T_NAME && !strcmp(tk->str, name);
}

static const char *describe(const struct tok *tk, char *buf, size_t size)
{
	switch (tk->type) {
	case T_DATA: return "template text";
	case T_VAR_BEGIN: return "'{{'";
	case T_VAR_END: return "end of print statement";
	case T_BLOCK_BEGIN: return "'{%'";
	case T_BLOCK_END: return "end of statement block";
	case T_EOF: return "end of template";
	case T_STRING: return "string literal";
	case T_INT: return "integer";
	case T_FLOAT: return "float";
	default:
		snprintf(buf, size, "'%.*s'", (int)(tk->n > 40 ? 40 : tk->n),
			 tk->s);
		return buf;
	}
}

static int p_fail_at(struct parser *p, const struct tok *tk, const char *fmt,
		     const char *arg)
{
	return ferr_set_at(p->err, -EINVAL, tk->line, tk->col, fmt, arg);
}

/* An error for an unexpected token, naming the unsupported construct when
 * that is what it is. */
static int p_unexpected(struct parser *p, const char *expected)
{
	struct tok *tk = cur(p);
	char buf[64], msg[160];

	if (tk->type == T_OP) {
		if (is_op(tk, "["))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 "list literal");
		if (is_op(tk, "{"))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 "dict literal");
		if (is_op(tk, ","))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 "tuple");
		if (is_op(tk, "("))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 "call");
		if (is_op(tk, ":"))
			return p_fail_at(p, tk, "unsupported syntax: %s",
					 "':' here");
		if (!is_op(tk, ")") && !is_op(tk, "]") && !is_op(tk, "}")) {
			snprintf(msg, sizeof(msg), "%s", describe(tk, buf, sizeof(buf)));
			return p_fail_at(p, tk, "unsupported operator %s", msg);
		}
	}
	if (tk->type == T_NAME) {
		static const char *const ops[] = { "in", "if", "else" };
		size_t i;

		for (i = 0; i < ARRAY_SIZE(ops); i++)
			if (is_name(tk, ops[i]))
				return p_fail_at(p, tk,
					!strcmp(ops[i], "in") ? "unsupported operator '%s'"
					: "unsupported expression: inline '%s'",
					ops[i]);
	}
	snprintf(msg, sizeof(msg), "%s expected, found %s", expected,
		 describe(tk, buf, sizeof(buf)));
	return p_fail_at(p, tk, "%s", msg);
}

static struct expr *new_expr(struct parser *p, enum ekind kind,
			     const struct tok *at)
{
	struct expr *e = tmpl_t_alloc(p->t, sizeof(*e));

	if (e) {
		e->kind = kind;
		e->line = at->line;
		e->col = at->col;
		e->height = 1;
	}
	return e;
}

/* Account for `child` below `e`; fails when the tree gets too high. */
static int grow(struct parser *p, struct expr *e, const struct expr *child)
{
	if (child && child->height + 1 > e->height)
		e->height = child->height + 1;
	if (e->height > MAX_EXPR_DEPTH)
		return ferr_set_at(p->err, -EINVAL, e->line, e->col, "%s",
				   "expression nested too deeply");
	return 0;
}

static int parse_or(struct parser *p, struct expr **out);

static int const_expr(struct parser *p, const struct tok *at, json_t *j,
		      struct expr **out)
{
	struct expr *e;

	if (tmpl_t_keep(p->t, j) < 0)
		return -ENOMEM;
	e = new_expr(p, E_CONST, at);
	if (!e)
		return -ENOMEM;
	e->cst = j;
	*out = e;
	return 0;
}

static bool reserved_name(const char *s)
{
	static const char *const kw[] = {
		"and", "or", "not", "is", "in", "if", "else", "elif",
		"endif", "for", "endfor", "recursive",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kw); i++)
		if (!strcmp(s, kw[i]))
			return true;
	return false;
}

static int parse_primary(struct parser *p, struct expr **out)
{
	struct tok *tk = cur(p);
	int ret;

	if (tk->type == T_NAME) {
		const char *s = tk->str;

		if (!strcmp(s, "true") || !strcmp(s, "True") ||
		    !strcmp(s, "false") || !strcmp(s, "False")) {
			p->pos++;
			return const_expr(p, tk, json_boolean(s[0] == 't' ||
							       s[0] == 'T'), out);
		}
		if (!strcmp(s, "none") || !strcmp(s, "None")) {
			p->pos++;
			return const_expr(p, tk, json_null(), out);
		}
		if (reserved_name(s))
			return p_unexpected(p, "an expression");
		*out = new_expr(p, E_NAME, tk);
		if (!*out)
			return -ENOMEM;
		(*out)->name = s;
		p->pos++;
		return 0;
	}
	if (tk->type == T_STRING) {
		struct sbuf sb = SBUF_INIT;
		json_t *j;

		while (cur(p)->type == T_STRING) {
			if (sbuf_add(&sb, cur(p)->str, cur(p)->slen) < 0) {
				sbuf_release(&sb);
				return -ENOMEM;
			}
			p->pos++;
		}
		j = json_stringn(sb.buf, sb.len);
		sbuf_release(&sb);
		return const_expr(p, tk, j, out);
	}
	if (tk->type == T_INT) {
		if (tk->ival > INT64_MAX)
			return p_fail_at(p, tk, "unsupported number literal: %s",
					 "outside 64 bits");
		p->pos++;
		return const_expr(p, tk, json_integer((json_int_t)tk->ival), out);
	}
	if (tk->type == T_FLOAT) {
		p->pos++;
		return const_expr(p, tk, json_real(tk->fval), out);
	}
	if (is_op(tk, "(")) {
		p->pos++;
		if (is_op(cur(p), ")"))
			return p_fail_at(p, cur(p), "unsupported expression: %s",
					 "tuple");
		ret = parse_or(p, out);
		if (ret < 0)
			return ret;
		if (!is_op(cur(p), ")"))
			return p_unexpected(p, "')'");
		p->pos++;
		return 0;
	}
	return p_unexpected(p, "an expression");
}

static int parse_postfix(struct parser *p, struct expr **node)
{
	for (;;) {
		struct tok *tk = cur(p);
		struct expr *e;
		int ret;

		if (is_op(tk, ".")) {
			struct tok *nm = peek(p, 1);

			if (nm->type == T_INT) {
				if (nm->ival > INT64_MAX)
					return p_fail_at(p, nm,
						"unsupported number literal: %s",
						"outside 64 bits");
				e = new_expr(p, E_ITEM, tk);
				if (!e)
					return -ENOMEM;
				e->a = *node;
				p->pos += 2;
				ret = const_expr(p, nm,
					json_integer((json_int_t)nm->ival), &e->b);
				if (!ret)
					ret = grow(p, e, e->a);
				if (ret < 0)
					return ret;
				*node = e;
				continue;
			}
			if (nm->type != T_NAME) {
				p->pos++;
				return p_unexpected(p, "a name or number");
			}
			if (is_op(peek(p, 2), "(")) {
				if (p->items_ok && !strcmp(nm->str, "items") &&
				    is_op(peek(p, 3), ")")) {
					e = new_expr(p, E_ITEMS, tk);
					if (!e)
						return -ENOMEM;
					e->a = *node;
					*node = e;
					p->pos += 4;
					if (grow(p, e, e->a) < 0)
						return -EINVAL;
					p->items_ok = false;
					p->items_seen = true;
					continue;
				}
				return p_fail_at(p, peek(p, 2),
						 "unsupported expression: %s",
						 "method call");
			}
			e = new_expr(p, E_ATTR, tk);
			if (!e)
				return -ENOMEM;
			e->a = *node;
			e->name = nm->str;
			p->pos += 2;
			*node = e;
			if (grow(p, e, e->a) < 0)
				return -EINVAL;
			continue;
		}
		if (is_op(tk, "[")) {
			e = new_expr(p, E_ITEM, tk);
			if (!e)
				return -ENOMEM;
			e->a = *node;
			p->pos++;
			if (is_op(cur(p), ":"))
				return p_fail_at(p, cur(p),
					"unsupported expression: %s", "slice");
			if (++p->depth > MAX_EXPR_DEPTH)
				return p_fail_at(p, tk, "%s",
					"expression nested too deeply");
			ret = parse_or(p, &e->b);
			p->depth--;
			if (ret < 0)
				return ret;
			if (is_op(cur(p), ":"))
				return p_fail_at(p, cur(p),
					"unsupported expression: %s", "slice");
			if (!is_op(cur(p), "]"))
				return p_unexpected(p, "']'");
			p->pos++;
			*node = e;
			if (grow(p, e, e->a) < 0 || grow(p, e, e->b) < 0)
				return -EINVAL;
			continue;
		}
		if (is_op(tk, "("))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 (*node)->kind == E_NAME ? "function call"
								: "method call");
		return 0;
	}
}

static const struct filter_spec *find_filter(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(filters); i++)
		if (!strcmp(filters[i].name, name))
			return &filters[i];
	return NULL;
}

static int parse_filter(struct parser *p, struct expr **node)
{
	struct tok *nm = peek(p, 1);
	const struct filter_spec *f;
	struct expr *e;
	int npos = 0, ret;
	bool kw = false;
	size_t i;

	if (nm->type != T_NAME) {
		p->pos++;
		return p_unexpected(p, "a filter name");
	}
	if (is_op(peek(p, 2), "."))
		return p_fail_at(p, nm, "unknown filter '%s'", nm->str);
	f = find_filter(nm->str);
	if (!f) {
		for (i = 0; i < ARRAY_SIZE(jinja_filters); i++)
			if (!strcmp(jinja_filters[i], nm->str))
				return p_fail_at(p, nm, "unsupported filter '%s'",
						 nm->str);
		return p_fail_at(p, nm, "unknown filter '%s'", nm->str);
	}
	e = new_expr(p, E_FILTER, nm);
	if (!e)
		return -ENOMEM;
	e->a = *node;
	e->op = f->id;
	e->name = f->name;
	p->pos += 2;
	if (is_op(cur(p), "(")) {
		p->pos++;
		if (++p->depth > MAX_EXPR_DEPTH)
			return p_fail_at(p, nm, "%s", "expression nested too deeply");
		while (!is_op(cur(p), ")")) {
			struct tok *at = cur(p);
			int slot;

			if (npos || kw) {
				if (!is_op(cur(p), ","))
					return p_unexpected(p, "',' or ')'");
				p->pos++;
				if (is_op(cur(p), ")"))
					break;
				at = cur(p);
			}
			if (at->type == T_NAME && is_op(peek(p, 1), "=")) {
				for (slot = 0; slot < f->nparams; slot++)
					if (!strcmp(f->params[slot], at->str))
						break;
				if (slot == f->nparams)
					return ferr_set_at(p->err, -EINVAL,
						at->line, at->col,
						"filter '%s' has no parameter '%s'",
						f->name, at->str);
				if (e->args[slot])
					return ferr_set_at(p->err, -EINVAL,
						at->line, at->col,
						"filter '%s' got parameter '%s' twice",
						f->name, at->str);
				kw = true;
				p->pos += 2;
			} else {
				if (is_op(at, "*") || is_op(at, "**"))
					return p_fail_at(p, at,
						"unsupported expression: %s",
						"argument unpacking");
				if (kw)
					return p_fail_at(p, at, "%s",
						"positional argument after a keyword argument");
				slot = npos++;
				if (slot >= f->nparams)
					return ferr_set_at(p->err, -EINVAL,
						at->line, at->col,
						"filter '%s' takes at most %d argument%s",
						f->name, f->nparams,
						f->nparams == 1 ? "" : "s");
			}
			ret = parse_or(p, &e->args[slot]);
			if (ret < 0)
				return ret;
		}
		p->depth--;
		p->pos++;
	}
	if (f->id == F_JOIN && e->args[1])
		return p_fail_at(p, nm, "unsupported: %s",
				 "join's 'attribute' parameter");
	*node = e;
	if (grow(p, e, e->a) < 0 || grow(p, e, e->args[0]) < 0 ||
	    grow(p, e, e->args[1]) < 0)
		return -EINVAL;
	return 0;
}

static int parse_test(struct parser *p, struct expr **node)
{
	struct tok *is = cur(p), *nm;
	struct expr *e;
	bool negated = false;

	p->pos++;
	if (is_name(cur(p), "not")) {
		negated = true;
		p->pos++;
	}
	nm = cur(p);
	if (nm->type != T_NAME)
		return p_unexpected(p, "a test name");
	if (strcmp(nm->str, "defined") && strcmp(nm->str, "undefined"))
		return p_fail_at(p, nm, "unsupported test '%s'", nm->str);
	if (is_op(peek(p, 1), "."))
		return p_fail_at(p, nm, "unsupported test '%s.…'", nm->str);
	p->pos++;
	if (is_op(cur(p), "(")) {
		if (!is_op(peek(p, 1), ")"))
			return p_fail_at(p, cur(p), "test '%s' takes no argument",
					 nm->str);
		p->pos += 2;
	} else {
		struct tok *tk = cur(p);

		if ((tk->type == T_NAME && !is_name(tk, "else") &&
		     !is_name(tk, "or") && !is_name(tk, "and")) ||
		    tk->type == T_STRING || tk->type == T_INT ||
		    tk->type == T_FLOAT || is_op(tk, "(") || is_op(tk, "[") ||
		    is_op(tk, "{"))
			return p_fail_at(p, tk, "test '%s' takes no argument",
					 nm->str);
	}
	e = new_expr(p, E_TEST, is);
	if (!e)
		return -ENOMEM;
	e->a = *node;
	e->op = nm->str[0] == 'u';
	e->negated = negated;
	*node = e;
	return grow(p, e, e->a);
}

static int parse_unary(struct parser *p, struct expr **out)
{
	struct tok *tk = cur(p);
	int ret;

	if (is_op(tk, "-")) {
		struct tok *num = peek(p, 1);
		json_t *j;

		if (num->type == T_INT)
			j = json_integer(num->ival == (uint64_t)1 << 63 ? INT64_MIN
					 : -(json_int_t)num->ival);
		else if (num->type == T_FLOAT)
			j = json_real(-num->fval);
		else
			return p_fail_at(p, tk, "unsupported operator %s",
					 "'-' (only before a number)");
		p->pos += 2;
		ret = const_expr(p, tk, j, out);
		if (ret < 0)
			return ret;
		if (is_op(cur(p), ".") || is_op(cur(p), "[") || is_op(cur(p), "("))
			return p_fail_at(p, cur(p), "unsupported expression: %s",
					 "lookup on a negated number");
	} else if (is_op(tk, "+")) {
		return p_fail_at(p, tk, "unsupported operator %s", "'+'");
	} else {
		ret = parse_primary(p, out);
		if (ret < 0)
			return ret;
		ret = parse_postfix(p, out);
		if (ret < 0)
			return ret;
	}
	for (;;) {
		if (is_op(cur(p), "|"))
			ret = parse_filter(p, out);
		else if (is_name(cur(p), "is"))
			ret = parse_test(p, out);
		else if (is_op(cur(p), "("))
			return p_fail_at(p, cur(p), "unsupported expression: %s",
					 "call");
		else
			return 0;
		if (ret < 0)
			return ret;
	}
}

static int parse_compare(struct parser *p, struct expr **out)
{
	struct expr *first, *cmp = NULL, **tail = NULL;
	int ret = parse_unary(p, &first);

	if (ret < 0)
		return ret;
	for (;;) {
		struct tok *tk = cur(p);
		struct expr *e;

		if (is_op(tk, ">") || is_op(tk, "<") || is_op(tk, ">=") ||
		    is_op(tk, "<=") || is_name(tk, "in") ||
		    (is_name(tk, "not") && is_name(peek(p, 1), "in")))
			return p_fail_at(p, tk, "unsupported operator %s",
					 is_name(tk, "not") ? "'not in'" :
					 is_name(tk, "in") ? "'in'" : "(comparison)");
		if (!is_op(tk, "==") && !is_op(tk, "!="))
			break;
		if (!cmp) {
			cmp = new_expr(p, E_CMP, tk);
			if (!cmp)
				return -ENOMEM;
			cmp->a = first;
			tail = &cmp->next;
		}
		e = new_expr(p, E_CMP, tk);
		if (!e)
			return -ENOMEM;
		e->op = tk->s[0] == '!';
		p->pos++;
		ret = parse_unary(p, &e->a);
		if (!ret)
			ret = grow(p, cmp, first);
		if (!ret)
			ret = grow(p, cmp, e->a);
		if (ret < 0)
			return ret;
		*tail = e;
		tail = &e->next;
	}
	*out = cmp ? cmp : first;
	return 0;
}

static int parse_not(struct parser *p, struct expr **out)
{
	struct tok *tk = cur(p);
	struct expr *e;
	int ret;

	if (!is_name(tk, "not") || is_name(peek(p, 1), "in"))
		return parse_compare(p, out);
	if (++p->depth > MAX_EXPR_DEPTH)
		return p_fail_at(p, tk, "%s", "expression nested too deeply");
	e = new_expr(p, E_NOT, tk);
	if (!e)
		return -ENOMEM;
	p->pos++;
	ret = parse_not(p, &e->a);
	p->depth--;
	*out = e;
	return ret ? ret : grow(p, e, e->a);
}

/* `a and b and c` as one node with a list of operands, so evaluating a
 * long chain does not recurse. */
static int parse_chain(struct parser *p, struct expr **out, enum ekind kind,
		       const char *word,
		       int (*operand)(struct parser *, struct expr **))
{
	struct expr *first, *chain = NULL, **tail = NULL;
	int ret = operand(p, &first);

	while (ret == 0 && is_name(cur(p), word)) {
		struct expr *e;

		if (!chain) {
			chain = new_expr(p, kind, cur(p));
			if (!chain)
				return -ENOMEM;
			chain->a = first;
			tail = &chain->next;
			ret = grow(p, chain, first);
			if (ret < 0)
				return ret;
		}
		e = new_expr(p, kind, cur(p));
		if (!e)
			return -ENOMEM;
		p->pos++;
		ret = operand(p, &e->a);
		if (!ret)
			ret = grow(p, chain, e->a);
		*tail = e;
		tail = &e->next;
	}
	*out = chain ? chain : first;
	return ret;
}

static int parse_and(struct parser *p, struct expr **out)
{
	return parse_chain(p, out, E_AND, "and", parse_not);
}

static int parse_or(struct parser *p, struct expr **out)
{
	int ret;

	if (++p->depth > MAX_EXPR_DEPTH)
		return p_fail_at(p, cur(p), "%s", "expression nested too deeply");
	ret = parse_chain(p, out, E_OR, "or", parse_and);
	p->depth--;
	return ret;
}

/* A whole expression, then the end of its tag. */
static int parse_tag_expr(struct parser *p, struct expr **out,
			  enum ttype end)
{
	int ret = parse_or(p, out);

	if (ret < 0)
		return ret;
	if (cur(p)->type != end)
		return p_unexpected(p, end == T_VAR_END ? "'}}'" : "'%}'");
	p->pos++;
	return 0;
}

static int expect_block_end(struct parser *p)
{
	if (cur(p)->type != T_BLOCK_END)
		return p_unexpected(p, "'%}'");
	p->pos++;
	return 0;
}

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

static int parse_if(struct parser *p, struct stmt **out)
{
	static const char *const ends[] = { "elif", "else", "endif", NULL };
	static const char *const endif[] = { "endif", NULL };
	struct stmt **slot = out;
	bool elif = false;
	int ret;

	/* elif chains are a loop, not recursion: any number of them */
	for (;;) {
		struct stmt *s = tmpl_t_alloc(p->t, sizeof(*s));
		struct tok *kw = cur(p);

		if (!s)
			return -ENOMEM;
		s->kind = S_IF;
		s->line = kw->line;
		s->elif = elif;
		*slot = s;
		p->pos++;
		ret = parse_tag_expr(p, &s->e, T_BLOCK_END);
		if (ret < 0)
			return ret;
		ret = tmpl_parse_body(p, &s->body, ends, "'elif', 'else' or 'endif'");
		if (ret < 0)
			return ret;
		if (is_name(cur(p), "elif")) {
			slot = &s->orelse;
			elif = true;
			continue;
		}
		if (is_name(cur(p), "else")) {
			p->pos++;
			ret = expect_block_end(p);
			if (ret < 0)
				return ret;
			ret = tmpl_parse_body(p, &s->orelse, endif, "'endif'");
			if (ret < 0)
				return ret;
		}
		break;
	}
	p->pos++;	/* endif */
	return expect_block_end(p);
}

static int parse_for(struct parser *p, struct stmt **out)
{
	static const char *const ends[] = { "else", "endfor", NULL };
	static const char *const endfor[] = { "endfor", NULL };
	struct stmt *s = tmpl_t_alloc(p->t, sizeof(*s));
	struct tok *kw = cur(p);
	int ret, n = 0;
	size_t start;

	if (!s)
		return -ENOMEM;
	s->kind = S_FOR;
	s->line = kw->line;
	p->pos++;
	start = p->pos;
	for (;;) {
		struct tok *tk = cur(p);

		if (tk->type != T_NAME || reserved_name(tk->str)) {
			if (is_op(tk, "("))
				return p_fail_at(p, tk, "unsupported syntax: %s",
						 "parenthesized loop targets");
			return p_unexpected(p, "a loop variable name");
		}
		if (!strcmp(tk->str, "loop"))
			return p_fail_at(p, tk, "%s",
				"can't assign to special loop variable in for-loop target");
		if (!strcmp(tk->str, "true") || !strcmp(tk->str, "True") ||
		    !strcmp(tk->str, "false") || !strcmp(tk->str, "False") ||
		    !strcmp(tk->str, "none") || !strcmp(tk->str, "None"))
			return p_fail_at(p, tk, "unsupported loop variable name '%s'",
					 tk->str);
		n++;
		p->pos++;
		if (!is_op(cur(p), ","))
			break;
		p->pos++;
		if (is_name(cur(p), "in"))
			return p_fail_at(p, cur(p), "unsupported syntax: %s",
					 "trailing ',' in loop targets");
	}
	if (!is_name(cur(p), "in"))
		return p_unexpected(p, "'in'");
	s->targets = tmpl_t_alloc(p->t, sizeof(*s->targets) * (size_t)n);
	if (!s->targets)
		return -ENOMEM;
	for (s->ntargets = 0; s->ntargets < n; s->ntargets++) {
		int i;

		s->targets[s->ntargets] = p->toks[start + 2 * (size_t)s->ntargets].str;
		for (i = 0; i < s->ntargets; i++)
			if (!strcmp(s->targets[i], s->targets[s->ntargets]))
				return p_fail_at(p, &p->toks[start + 2 * (size_t)s->ntargets],
					"unsupported: loop variable '%s' named twice",
					s->targets[i]);
	}
	p->pos++;
	p->items_ok = true;
	p->items_seen = false;
	{
		struct tok *at = cur(p);

		ret = parse_or(p, &s->e);
		p->items_ok = false;
		if (ret < 0)
			return ret;
		if (p->items_seen && s->e->kind != E_ITEMS)
			return p_fail_at(p, at, "unsupported expression: %s",
					 "method call");
		if (s->e->kind == E_ITEMS && n != 2)
			return p_fail_at(p, at, "unsupported: %s",
					 "a loop over .items() needs two loop variables");
	}
	if (is_name(cur(p), "if") || is_name(cur(p), "recursive"))
		return p_fail_at(p, cur(p), "unsupported: '%s' in a for loop",
				 cur(p)->str);
	ret = expect_block_end(p);
	if (ret < 0)
		return ret;
	ret = tmpl_parse_body(p, &s->body, ends, "'else' or 'endfor'");
	if (ret < 0)
		return ret;
	if (is_name(cur(p), "else")) {
		p->pos++;
		ret = expect_block_end(p);
		if (ret < 0)
			return ret;
		ret = tmpl_parse_body(p, &s->orelse, endfor, "'endfor'");
		if (ret < 0)
			return ret;
	}
	p->pos++;	/* endfor */
	*out = s;
	return expect_block_end(p);
}

int tmpl_parse_body(struct parser *p, struct stmt **out,
		    const char *const *ends, const char *want)
{
	static const char *const all_ends[] = {
		"elif", "else", "endif", "endfor", NULL
	};
	struct stmt **tail = out;
	int ret = 0;

	*out = NULL;
	if (++p->blocks > MAX_BLOCK_DEPTH + 1)	/* + the top level */
		return p_fail_at(p, cur(p), "%s", "blocks nested too deeply");
	for (;;) {
		struct tok *tk = cur(p);
		struct stmt *s = NULL;

		if (tk->type == T_EOF) {
			if (ends)
				return p_fail_at(p, tk,
					"%s expected, found end of template", want);
			break;
		}
		if (tk->type == T_DATA) {
			s = tmpl_t_alloc(p->t, sizeof(*s));
			if (!s)
				return -ENOMEM;
			s->kind = S_TEXT;
			s->line = tk->line;
			s->text = tk->s;
			s->len = tk->n;
			p->pos++;
		} else if (tk->type == T_VAR_BEGIN) {
			s = tmpl_t_alloc(p->t, sizeof(*s));
			if (!s)
				return -ENOMEM;
			s->kind = S_PRINT;
			s->line = tk->line;
			p->pos++;
			ret = parse_tag_expr(p, &s->e, T_VAR_END);
			if (ret < 0)
				return ret;
		} else if (tk->type == T_BLOCK_BEGIN) {
			struct tok *nm = peek(p, 1);

			if (nm->type != T_NAME) {
				p->pos++;
				return p_unexpected(p, "a tag name");
			}
			if (ends && in_list(nm->str, ends)) {
				p->pos++;
				break;
			}
			if (in_list(nm->str, all_ends))
				return ends ? ferr_set_at(p->err, -EINVAL, nm->line,
						nm->col, "%s expected, found '%s'",
						want, nm->str)
					    : p_fail_at(p, nm, "unexpected '%s'",
							nm->str);
			p->pos++;
			if (!strcmp(nm->str, "if"))
				ret = parse_if(p, &s);
			else if (!strcmp(nm->str, "for"))
				ret = parse_for(p, &s);
			else {
				size_t i;

				for (i = 0; i < ARRAY_SIZE(jinja_tags); i++)
					if (!strcmp(jinja_tags[i], nm->str))
						return p_fail_at(p, nm,
							"unsupported tag '%s'", nm->str);
				return p_fail_at(p, nm, "unknown tag '%s'", nm->str);
			}
			if (ret < 0)
				return ret;
		} else {
			return p_unexpected(p, "template text or a tag");
		}
		*tail = s;
		tail = &s->next;
	}
	p->blocks--;
	return ret;
}
