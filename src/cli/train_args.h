/* `amdnn-onnx train`: its options. */
#ifndef AMD_TRAIN_ARGS_H
#define AMD_TRAIN_ARGS_H

#include "../train/run.h"

/* Parses the arguments of `train` (argv[0] is the subcommand) into c; prints
 * the usage and exits 0 for --help. 0, or -1 after a line on stderr (exit 2). */
int amd_train_parse_args(int argc, char **argv, amd_train_cfg *c);

#endif
