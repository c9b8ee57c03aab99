/* PLACEHOLDER */
#include <stdio.h>

#include "commands.h"

int amd_cmd_lut(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "amdnn-onnx lut: not implemented yet\n");
  return 2;
}
