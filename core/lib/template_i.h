/*
 * template_i.h: private to the template family (template*.c), the shared
 * structs and the functions the parts call in each other.  Not a
 * contract: template.h is the only one.
 */
#ifndef FLOWFS_TEMPLATE_I_H
#define FLOWFS_TEMPLATE_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"
#include "lib/template.h"

#define MAX_TEXT (16u << 20)
/* Jinja2 compiles a template to Python, which refuses more than 20 nested
 * loops and 100 levels of indentation, and whose parser and compiler
 * recurse per level of an expression: stay well inside all of that. */
#define MAX_BLOCK_DEPTH 16
#define MAX_EXPR_DEPTH 32
#define MAX_STEPS 5000000L
#define MAX_OUTPUT ((size_t)64 << 20)
/* Far below Python's recursion limit, so whatever Python would print at
 * any nesting level flowfs prints the same or refuses. */
#define MAX_VALUE_DEPTH 100

/* The shape of lib/template_tables.h's case tables (case_map()). */
struct case_run {
	uint32_t first, last;
	int32_t delta;
	uint32_t stride;
};

struct case_multi {
	uint32_t cp;
	uint32_t map[3];
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*** the parsed template ***/

enum ekind {
	E_CONST, E_NAME, E_ATTR, E_ITEM, E_ITEMS, E_NOT, E_AND, E_OR, E_CMP,
	E_FILTER, E_TEST
};

enum filter_id { F_DEFAULT, F_TOJSON, F_LENGTH, F_JOIN, F_UPPER, F_LOWER,
		 F_TRIM };

struct expr {
	enum ekind kind;
	int line, col;
	struct expr *a, *b;
	json_t *cst;			/* E_CONST */
	const char *name;		/* E_NAME, E_ATTR; filter/test name */
	int op;				/* E_CMP: 1 for !=; E_FILTER: filter_id;
					   E_TEST: 1 for 'undefined' */
	bool negated;			/* E_TEST */
	struct expr *args[2];		/* E_FILTER, by parameter */
	struct expr *next;		/* E_CMP, E_AND, E_OR: the next operand
					   (in the next node's a) */
	int height;			/* of the tree below: bounds recursion */
};

enum skind { S_TEXT, S_PRINT, S_IF, S_FOR };

struct stmt {
	enum skind kind;
	int line;
	struct stmt *next;
	const char *text;		/* S_TEXT */
	size_t len;
	struct expr *e;			/* S_PRINT, S_IF test, S_FOR iterable */
	struct stmt *body, *orelse;	/* S_IF: orelse may be one S_IF (elif) */
	const char **targets;		/* S_FOR */
	int ntargets;
	bool elif;			/* an S_IF that is another's orelse */
};

struct tmpl {
	char *src;			/* normalized text; S_TEXT points in */
	void **allocs;
	size_t nallocs, allocs_cap;
	json_t **consts;
	size_t nconsts, consts_cap;
	struct stmt *body;
};

void *tmpl_t_alloc(struct tmpl *t, size_t size);
int tmpl_t_keep(struct tmpl *t, json_t *j);

/*** lexer ***/

enum ttype {
	T_DATA, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END, T_NAME,
	T_STRING, T_INT, T_FLOAT, T_OP, T_EOF
};

struct tok {
	enum ttype type;
	int line, col;
	const char *s;		/* raw span (T_DATA: the text after stripping) */
	size_t n;
	char *str;		/* T_STRING: decoded; T_NAME: NUL-terminated */
	size_t slen;
	uint64_t ival;		/* T_INT, up to 2^63 */
	double fval;
};

struct lexer {
	struct tmpl *t;
	const char *s;
	size_t n, pos;
	int line, col;
	struct tok *toks;
	size_t ntoks, cap;
	struct ferr *err;
};

/* The tokens of lx->s into lx->toks, ending with T_EOF (template_lex.c). */
int tmpl_lex(struct lexer *lx);

/*** parser ***/

struct parser {
	struct tmpl *t;
	struct tok *toks;
	size_t pos;
	struct ferr *err;
	int depth;		/* expression nesting */
	int blocks;		/* block nesting */
	bool items_ok;		/* a for's iterable: x.items() allowed */
	bool items_seen;
};

/*
 * Statements up to end of template or a block tag whose name is in `ends`
 * (left unconsumed, p->pos at its name).
 */
int tmpl_parse_body(struct parser *p, struct stmt **out,
		    const char *const *ends, const char *want);

/*** values: Python semantics of what json.loads gives ***/

enum vkind { V_UNDEF, V_JSON, V_LOOP };

struct loopst {
	size_t index0, length;
};

struct val {
	enum vkind k;
	json_t *j;			/* V_JSON: an owned reference */
	const struct loopst *loop;	/* V_LOOP */
	const char *uname;		/* V_UNDEF: the missing name, if known */
	const char *utype;		/* V_UNDEF: its owner's type, if any */
};

struct frame {
	struct frame *up;
	const struct stmt *s;
	json_t **vals;
	struct loopst loop;
};

struct render {
	const json_t *context;
	struct sbuf *out;
	size_t start;
	struct ferr *err;
	long steps;
	struct frame *top;
	const struct expr *at;	/* for error positions */
};

/* The items of an iterable value, as Python's iter() gives them: list
 * items, dict keys, str characters; none for an undefined value. */
struct iter {
	const json_t *j;
	enum { IT_NONE, IT_LIST, IT_DICT, IT_STR } kind;
	size_t i, n;
	void *it;
};

/* template_value.c: UTF-8 and Python's character classes */
size_t tmpl_u8_dec(const char *p, size_t n, uint32_t *cp);
size_t tmpl_u8_enc(char *out, uint32_t cp);
bool tmpl_py_isspace(uint32_t cp);

/* template_value.c: values, lookups, iteration */
void tmpl_v_release(struct val *v);
int tmpl_v_json(struct val *v, json_t *j);
int tmpl_r_fail(struct render *r, const struct expr *at, const char *fmt,
		...) __attribute__((format(printf, 3, 4)));
const char *tmpl_type_name(const struct val *v);
int tmpl_undefined_error(struct render *r, const struct val *v);
int tmpl_truth(struct render *r, const struct val *v, bool *out);
bool tmpl_is_intlike(const json_t *j, json_int_t *out);
int tmpl_py_eq(struct render *r, const struct val *a, const struct val *b,
	       bool *out);
int tmpl_py_str(struct render *r, struct sbuf *sb, const struct val *v);
int tmpl_v_from_sbuf(struct render *r, struct val *v, const struct sbuf *sb);
void tmpl_set_undef(struct val *out, const char *name, const char *type);
int tmpl_do_getattr(struct render *r, const struct val *obj,
		    const char *name, struct val *out);
int tmpl_do_getitem(struct render *r, const struct val *obj,
		    const struct val *key, struct val *out);
int tmpl_iter_init(struct render *r, const struct val *v, struct iter *it);
int tmpl_iter_next(struct render *r, struct iter *it, json_t **out);

/* template_filter.c */
int tmpl_apply_filter(struct render *r, const struct expr *e,
		      struct val *v, struct val args[2], struct val *out);

/* template_eval.c: the statements from `s` on, into r->out. */
int tmpl_exec_body(struct render *r, const struct stmt *s);

#endif
