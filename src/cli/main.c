/* amdnn-onnx: command-line entry point; dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cli_util.h"
#include "commands.h"

static const char usage[] =
    "usage: amdnn-onnx COMMAND [options]\n"
    "\n"
    "Runs ONNX models with the products of Conv, Gemm and MatMul computed by an\n"
    "emulated (approximate) hardware multiplier.\n"
    "\n"
    "commands:\n"
    "  info MODEL.onnx              inputs, outputs, parameters, MACs, node table\n"
    "  run MODEL.onnx --input NAME=FILE.pb ... --output-dir DIR\n"
    "                               run the model on TensorProto inputs\n"
    "  train MODEL.onnx --data SPEC -o OUT.onnx [options]\n"
    "                               train the model (autograd over its graph)\n"
    "  eval MODEL.onnx --data SPEC [--mode MODE]\n"
    "                               accuracy under an emulated multiplier\n"
    "  grad MODEL.onnx --input X.pb --labels Y.pb --output-dir DIR\n"
    "                               loss and parameter gradients of one batch\n"
    "  bench MODEL.onnx [--batch N] [--mode MODE] [--infer] [--profile FILE.tsv]\n"
    "                               images/s of training steps (or inference)\n"
    "  sweep MODEL.onnx --data SPEC --mode MODE [--tsv FILE] [--plot FILE.png]\n"
    "                               top-1 / loss with each Conv/Gemm/MatMul alone in MODE\n"
    "  lut --mode MODE -o FILE      write the 16384-byte table of a 16-bit mode (or an 8-bit q8 table)\n"
    "  lut --describe FILE          an 8-bit table's signedness, SHA-256 and error\n"
    "\n"
    "`amdnn-onnx COMMAND --help` describes each command's options.\n";

/* A training or evaluation step frees and allocates the same large tensors
 * again and again. By default glibc maps each large block afresh (and hands
 * free memory at the top of the heap back), so every step pays a page fault
 * per 4 KB page it touches first, several times the cost of the calloc that
 * clears a reused block (docs/ARCHITECTURE.md, "CPU memory and threads").
 * Blocks up to 1 GB come from the heap instead, and freed memory stays with
 * the process for the next step. */
static void keep_freed_memory(void) {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("amdnn-onnx %s\n", AMD_VERSION);
    return 0;
  }
  amd_cli_env(); /* the environment, read and applied once */
  keep_freed_memory();
  static const struct {
    const char *name;
    int (*fn)(int, char **);
  } cmds[] = {{"info", amd_cmd_info}, {"run", amd_cmd_run}, {"lut", amd_cmd_lut}, {"grad", amd_cmd_grad}, {"train", amd_cmd_train}, {"eval", amd_cmd_eval}, {"bench", amd_cmd_bench}, {"sweep", amd_cmd_sweep}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (strcmp(argv[1], cmds[i].name) == 0) return cmds[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "amdnn-onnx: unknown command '%s'\n\n%s", argv[1], usage);
  return 2;
}
