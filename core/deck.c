/* deck: stub while the implementation is written; see deck.h. */
#include <errno.h>
#include <stdlib.h>

#include "deck.h"
#include "sbuf.h"

struct deck *deck_new(void) { return calloc(1, sizeof(struct deck)); }
void deck_free(struct deck *d) { free(d); }
int deck_add_case(struct deck *d, struct deck_case **out) { (void)d; (void)out; return -ENOSYS; }
int deck_add_control(struct deck_case *c, const char *line) { (void)c; (void)line; return -ENOSYS; }
int deck_add_caseid(struct deck_case *c, const char *text) { (void)c; (void)text; return -ENOSYS; }
int deck_control_check(const char *line, size_t len, const char **why) { (void)line; (void)len; (void)why; return -ENOSYS; }
int deck_add_namelist(struct deck_case *c, const char *name, struct deck_namelist **out) { (void)c; (void)name; (void)out; return -ENOSYS; }
int deck_add_number(struct deck_namelist *nl, const char *name, double v) { (void)nl; (void)name; (void)v; return -ENOSYS; }
int deck_add_array(struct deck_namelist *nl, const char *name, unsigned index, const double *v, size_t n) { (void)nl; (void)name; (void)index; (void)v; (void)n; return -ENOSYS; }
int deck_add_logical(struct deck_namelist *nl, const char *name, bool v) { (void)nl; (void)name; (void)v; return -ENOSYS; }
int deck_add_text(struct deck_namelist *nl, const char *name, const char *text) { (void)nl; (void)name; (void)text; return -ENOSYS; }
int deck_copy_var(struct deck_namelist *dst, const struct deck_var *src) { (void)dst; (void)src; return -ENOSYS; }
int deck_copy_card(struct deck_case *dst, const struct deck_card *src) { (void)dst; (void)src; return -ENOSYS; }
void deck_remove_var(struct deck_namelist *nl, size_t i) { (void)nl; (void)i; }
struct deck_namelist *deck_find_namelist(const struct deck_case *c, const char *name, size_t *pos) { (void)c; (void)name; (void)pos; return NULL; }
struct deck_var *deck_find_var(const struct deck_namelist *nl, const char *name) { (void)nl; (void)name; return NULL; }
int deck_get_numbers(const struct deck_case *c, const char *nl, const char *var, double *out, size_t max, size_t *n) { (void)c; (void)nl; (void)var; (void)out; (void)max; (void)n; return -ENOSYS; }
int deck_get_logical(const struct deck_case *c, const char *nl, const char *var, bool *out) { (void)c; (void)nl; (void)var; (void)out; return -ENOSYS; }
int deck_format_number(double v, char *buf, size_t size) { (void)v; (void)buf; (void)size; return -ENOSYS; }
int deck_write(const struct deck *d, struct sbuf *out) { (void)d; (void)out; return -ENOSYS; }
void deck_problems_release(struct deck_problems *p) { (void)p; }
size_t deck_problems_count(const struct deck_problems *p, enum deck_severity severity) { (void)p; (void)severity; return 0; }
int deck_parse(const char *text, size_t len, struct deck **out, struct deck_problems *problems) { (void)text; (void)len; (void)problems; *out = NULL; return -ENOSYS; }
