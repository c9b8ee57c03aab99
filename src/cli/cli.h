/* The command-line tool on top of the public API (include/amdnn.h, the only
 * header of the library it sees).
 *
 * args.c     one parser for every command: the library's option table
 *            (amdnn_option_at) plus the few options of the tool alone
 *            (files of run and grad), --help generated from both
 * report.c   the callbacks that print what the library reports, the exit
 *            status of a status
 * main.c     the commands, `amdnn-onnx --help`, `modes`, `--version`
 * cmd_*.c    each command: parse, open a session, one library call, print
 *
 * Exit status: 0 done, 1 a failure, 2 a bad argument (an unknown option or
 * mode, a bad value, a missing argument), train 3 stopped early with a
 * checkpoint and 4 the loss became NaN or Inf. */
#ifndef AMD_CLI_H
#define AMD_CLI_H

#include <stdio.h>

#include "../../include/amdnn.h"

#define CLI_MAX_INPUTS 64

struct cli_args;

/* A command of the tool. */
typedef struct cli_command {
  const char *name;
  unsigned used_by;      /* its AMDNN_FOR_* bit: the options it takes */
  int takes_model;       /* its one positional argument is MODEL.onnx */
  const char *synopsis;  /* after "usage: amdnn-onnx NAME " */
  const char *summary;   /* one line for `amdnn-onnx --help` */
  const char *about;     /* the paragraph of its --help */
  const char *required;  /* options it needs, comma-separated ("data,output"), or NULL */
  const char *exits;     /* the exit statuses it can end with, for its --help */
  int (*run)(const struct cli_command *cmd, struct cli_args *a);
} cli_command;

/* A command line, parsed. */
typedef struct cli_args {
  const cli_command *cmd;
  const char *model;
  amdnn_options *session; /* the options of amdnn_session_open */
  amdnn_options *call;    /* the options of the command's call */
  /* the tool's own: run --input [NAME=]FILE (repeated), grad --input, --labels; --output-dir */
  const char *inputs[CLI_MAX_INPUTS];
  int n_inputs;
  const char *labels, *output_dir;
  char prog[64]; /* "amdnn-onnx train": the prefix of its messages */
} cli_args;

/* Parses argv (argv[0] is the command's name) into a. Returns -1 to go on,
 * else the exit status: 0 after --help (printed), 2 after a line on stderr.
 * The caller frees a with cli_args_free, also after a return >= 0. */
int cli_parse(const cli_command *cmd, int argc, char **argv, cli_args *a);
void cli_args_free(cli_args *a);
/* The --help text of a command. */
void cli_help(const cli_command *cmd, FILE *out);

/* The exit status of a failed call (2 bad argument, 3 stopped, 4 diverged,
 * else 1), after its message on stderr (not for 3 and 4, which the call's
 * callbacks reported as they happened); frees st. 0 for NULL. */
int cli_fail(const cli_args *a, amdnn_status *st);
/* Opens the session of a's model and session options, or prints why and
 * returns the exit status (> 0). */
int cli_open(cli_args *a, amdnn_session **s);

/* Printing what the library reports: INFO lines on stdout, the rest on
 * stderr after the command's name; progress as a bar redrawn in place on a
 * terminal, plain lines otherwise. */
typedef struct cli_reporter {
  const cli_args *a;
  int tty;
  amdnn_sweep_row last_row; /* sweep: the row its progress report is about */
  char last_name[256];
} cli_reporter;
/* The callbacks of a command, with user = r. */
amdnn_callbacks cli_callbacks(cli_reporter *r, const cli_args *a);

/* The commands. */
int cli_info(const cli_command *cmd, cli_args *a);
int cli_run(const cli_command *cmd, cli_args *a);
int cli_grad(const cli_command *cmd, cli_args *a);
int cli_train(const cli_command *cmd, cli_args *a);
int cli_eval(const cli_command *cmd, cli_args *a);
int cli_bench(const cli_command *cmd, cli_args *a);
int cli_sweep(const cli_command *cmd, cli_args *a);
int cli_lut(const cli_command *cmd, cli_args *a);

/* "[1,3,224,224]" of a tensor; a file name for a tensor name (characters
 * other than letters, digits, '.', '_' and '-' become '_'). */
const char *cli_shape(int rank, const int64_t *dims, char *buf, size_t n);
const char *cli_safe_name(const char *name, char *buf, size_t n);
/* Creates a folder if missing (one level); 0, or -1 after a line on stderr. */
int cli_make_dir(const cli_args *a, const char *path);

#endif
