/* One parser for every command, and --help generated from the same tables:
 * the library's option table (amdnn_option_at: each option once, with the
 * calls that take it) and the tool's own options below. A command takes the
 * options whose used_by has its bit; an option of the session goes to the
 * session's options, any other to the call's. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The options of the tool alone: files that the library takes as tensors. */
typedef struct cli_own_option {
  const char *name, *metavar;
  unsigned used_by;
  const char *help;
} cli_own_option;

static const cli_own_option own[] = {
    {"input", "[NAME=]FILE.pb", AMDNN_FOR_RUN | AMDNN_FOR_GRAD,
     "a model input as a serialized TensorProto (run: repeat it for each\n"
     "input, NAME= to give it by name, else in the model's order; grad: the\n"
     "batch)"},
    {"labels", "Y.pb", AMDNN_FOR_GRAD, "the batch's labels, int64 or int32 [N] (TensorProto)"},
    {"output-dir", "DIR", AMDNN_FOR_RUN | AMDNN_FOR_GRAD,
     "where the results go, one FILE.pb each (created if missing; characters\n"
     "other than letters, digits, '.', '_' and '-' in names become '_')"},
};
enum { N_OWN = sizeof own / sizeof own[0] };

static const cli_own_option *own_find(const char *name, unsigned used_by) {
  for (int i = 0; i < N_OWN; i++)
    if (!strcmp(own[i].name, name) && (own[i].used_by & used_by)) return &own[i];
  return NULL;
}

void cli_args_free(cli_args *a) {
  amdnn_options_free(a->session);
  amdnn_options_free(a->call);
  a->session = a->call = NULL;
}

static int bad(const cli_args *a, const char *fmt, const char *what) {
  fprintf(stderr, "%s: ", a->prog);
  fprintf(stderr, fmt, what);
  fprintf(stderr, " (see %s --help)\n", a->prog);
  return 2;
}

/* Takes --name [value] at argv[*i] (value inline after '=' or the next
 * argument); 0, or the exit status. */
static int take_option(const cli_command *cmd, int argc, char **argv, int *i, cli_args *a) {
  const char *arg = argv[*i];
  char name[128];
  const char *inline_value = NULL;
  if (arg[1] != '-') { /* a short option, -o */
    snprintf(name, sizeof name, "%s", arg + 1);
  } else {
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    if (len >= sizeof name) return bad(a, "unknown option '%s'", arg);
    memcpy(name, arg + 2, len);
    name[len] = 0;
    inline_value = eq ? eq + 1 : NULL;
  }
  const amdnn_option_info *o = amdnn_option_find(name);
  if (o && !(o->used_by & cmd->used_by)) o = NULL;
  const cli_own_option *mine = o ? NULL : own_find(name, cmd->used_by);
  if (!o && !mine) return bad(a, "unknown option '%s'", arg);
  const char *value = inline_value;
  if (o && o->kind == AMDNN_OPTION_FLAG) {
    if (inline_value) return bad(a, "option '%s' takes no value", arg);
    value = "1";
  } else if (!value) {
    if (*i + 1 >= argc) return bad(a, "option '%s' needs a value", arg);
    value = argv[++*i];
  }
  if (mine) {
    if (!strcmp(mine->name, "input")) {
      if (a->n_inputs == CLI_MAX_INPUTS) return bad(a, "more than %s inputs", "64");
      a->inputs[a->n_inputs++] = value;
    } else if (!strcmp(mine->name, "labels")) {
      a->labels = value;
    } else {
      a->output_dir = value;
    }
    return 0;
  }
  amdnn_options *into = (o->used_by & AMDNN_FOR_SESSION) && cmd->takes_model ? a->session : a->call;
  amdnn_status *st = amdnn_options_set(into, o->name, value);
  if (st) {
    fprintf(stderr, "%s: %s\n", a->prog, amdnn_status_message(st));
    amdnn_status_free(st);
    return 2;
  }
  return 0;
}

/* The command's required arguments, each given: one line naming every one missing. */
static int check_required(const cli_command *cmd, const cli_args *a) {
  char missing[512] = "", list[256];
  int n = 0;
  if (cmd->takes_model && !a->model) n++, snprintf(missing, sizeof missing, "MODEL.onnx");
  snprintf(list, sizeof list, "%s", cmd->required ? cmd->required : "");
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int set;
    if (!strcmp(tok, "output-dir")) set = a->output_dir != NULL;
    else if (!strcmp(tok, "labels")) set = a->labels != NULL;
    else if (!strcmp(tok, "input")) set = a->n_inputs > 0;
    else set = amdnn_options_get(a->session, tok) || amdnn_options_get(a->call, tok);
    if (set) continue;
    size_t k = strlen(missing);
    snprintf(missing + k, sizeof missing - k, "%s--%s", n ? ", " : "", tok);
    n++;
  }
  if (!n) return 0;
  fprintf(stderr, "%s: %s %s required (see %s --help)\n", a->prog, missing, n > 1 ? "are" : "is", a->prog);
  return 2;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, cli_args *a) {
  memset(a, 0, sizeof *a);
  a->cmd = cmd;
  snprintf(a->prog, sizeof a->prog, "amdnn-onnx %s", cmd->name);
  amdnn_status *st = amdnn_options_create(&a->session);
  if (!st) st = amdnn_options_create(&a->call);
  if (st) {
    fprintf(stderr, "%s: %s\n", a->prog, amdnn_status_message(st));
    amdnn_status_free(st);
    return 1;
  }
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      cli_help(cmd, stdout);
      return 0;
    }
    if (arg[0] == '-' && arg[1]) {
      int rc = take_option(cmd, argc, argv, &i, a);
      if (rc) return rc;
    } else if (cmd->takes_model && !a->model) {
      a->model = arg;
    } else {
      return bad(a, "unexpected argument '%s'", arg);
    }
  }
  int rc = check_required(cmd, a);
  return rc ? rc : -1;
}

/* ---------------------------------------------------------------- --help */

/* One option's lines: "  --name METAVAR" padded to the help column, then
 * its help and default, words wrapped to 80 columns. */
static void help_option(FILE *out, const char *name, char short_name, const char *metavar, const char *help,
                        const char *def) {
  enum { COL = 26, WIDTH = 80 };
  char head[128], text[1536];
  int k = short_name ? snprintf(head, sizeof head, "  -%c, --%s", short_name, name)
                     : snprintf(head, sizeof head, "  --%s", name);
  if (metavar) snprintf(head + k, sizeof head - (size_t)k, " %s", metavar);
  snprintf(text, sizeof text, "%s%s%s%s", help, def ? " (default " : "", def ? def : "", def ? ")" : "");
  fputs(head, out);
  int at = (int)strlen(head);
  if (at > COL - 1) fputc('\n', out), at = 0;
  fprintf(out, "%*s", COL - at, "");
  at = COL;
  for (char *save = NULL, *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
    const int len = (int)strlen(w);
    if (at > COL && at + 1 + len > WIDTH) fprintf(out, "\n%*s", COL, ""), at = COL;
    else if (at > COL) fputc(' ', out), at++;
    fputs(w, out);
    at += len;
  }
  fputc('\n', out);
}

void cli_help(const cli_command *cmd, FILE *out) {
  fprintf(out, "usage: amdnn-onnx %s %s\n\n%s\n", cmd->name, cmd->synopsis, cmd->about);
  /* the groups in the table's order, each once */
  const char *groups[32];
  int n_groups = 0;
  for (int i = 0; i < amdnn_option_count(); i++) {
    const amdnn_option_info *o = amdnn_option_at(i);
    if (!(o->used_by & cmd->used_by)) continue;
    int seen = 0;
    for (int g = 0; g < n_groups; g++) seen |= !strcmp(groups[g], o->group);
    if (!seen && n_groups < 32) groups[n_groups++] = o->group;
  }
  int any_own = 0;
  for (int i = 0; i < N_OWN; i++) any_own |= (own[i].used_by & cmd->used_by) != 0;
  if (any_own) {
    fprintf(out, "\nfiles:\n");
    for (int i = 0; i < N_OWN; i++)
      if (own[i].used_by & cmd->used_by) help_option(out, own[i].name, 0, own[i].metavar, own[i].help, NULL);
  }
  for (int g = 0; g < n_groups; g++) {
    fprintf(out, "\n%s:\n", groups[g]);
    for (int i = 0; i < amdnn_option_count(); i++) {
      const amdnn_option_info *o = amdnn_option_at(i);
      if ((o->used_by & cmd->used_by) && !strcmp(o->group, groups[g]))
        help_option(out, o->name, o->short_name, o->metavar, o->help, o->default_value);
    }
  }
  fprintf(out, "\nExit status: %s.\n", cmd->exits);
}
