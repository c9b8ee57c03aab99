/* amdnn-onnx: the command-line tool. Every command parses its arguments
 * against the library's option table (args.c), opens a session and makes one
 * library call; `amdnn-onnx --help` and `amdnn-onnx modes` come from the same
 * tables. */
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cli.h"

#define EXITS "0 done, 1 a failure, 2 a bad argument"
#define TRAIN_EXITS EXITS ", 3 stopped early with a checkpoint (resume with --resume), 4 the loss became NaN or Inf"

static const cli_command commands[] = {
    {"info", AMDNN_FOR_INFO, 1, "MODEL.onnx [options]", "inputs, outputs, parameters, MACs, node table",
     "Prints the model's inputs and outputs with their shapes (symbolic dimensions\n"
     "by name), the parameter count, the multiply-accumulates per sample, and a\n"
     "node table: output shape at batch 1, MACs, and the multiplier of each Conv,\n"
     "Gemm and MatMul, forward / backward (every other node is exact).",
     NULL, EXITS, cli_info},
    {"run", AMDNN_FOR_RUN, 1, "MODEL.onnx --input [NAME=]FILE.pb ... --output-dir DIR [options]",
     "runs the model on TensorProto inputs",
     "Runs MODEL once with its own ONNX semantics (a BatchNormalization exported\n"
     "in training mode uses the batch's statistics) and writes each output to\n"
     "DIR/<output name>.pb. An 8-bit table mode runs the integer products of a\n"
     "quantized model through its table; a float Conv / Gemm / MatMul is then\n"
     "quantized on the fly, its data range calibrated on this one call.",
     "input,output-dir", EXITS, cli_run},
    {"train", AMDNN_FOR_TRAIN, 1, "MODEL.onnx --data SPEC -o TRAINED.onnx [options]",
     "trains the model (autograd over its graph)",
     "Trains MODEL (its own weights are the starting point, or --reinit) with\n"
     "softmax cross-entropy on its first output (on the logits before a final\n"
     "Softmax or LogSoftmax), every Conv, Gemm and MatMul product in --mode, in\n"
     "the forward pass and both backward GEMMs. A line per epoch; under mpirun or\n"
     "srun several ranks train together (docs/distributed.md).",
     "data,output", TRAIN_EXITS, cli_train},
    {"eval", AMDNN_FOR_EVAL, 1, "MODEL.onnx --data SPEC [options]", "accuracy under an emulated multiplier",
     "Evaluates MODEL in inference mode (BatchNormalization on its running\n"
     "statistics, no dropout) on a split of SPEC and prints top-1, top-5, the\n"
     "mean cross-entropy, images/s, the accuracy of each class and the confusion\n"
     "matrix (rows: label, columns: prediction). A model that ends in Softmax or\n"
     "LogSoftmax is scored on that node's input. A torchvision ImageNet model:\n"
     "--data images:DIR --resize 256 --crop 224 --normalize imagenet.",
     "data", EXITS, cli_eval},
    {"grad", AMDNN_FOR_GRAD, 1, "MODEL.onnx --input X.pb --labels Y.pb --output-dir DIR [options]",
     "loss and parameter gradients of one batch",
     "Runs one batch X with labels Y in training mode (BatchNormalization on the\n"
     "batch's statistics, Dropout dropping), takes the mean softmax cross-entropy\n"
     "of the model's output, and writes DIR/loss.pb and DIR/<initializer>.pb, the\n"
     "gradient of every trainable initializer.",
     "input,labels,output-dir", EXITS, cli_grad},
    {"bench", AMDNN_FOR_BENCH, 1, "MODEL.onnx [options]", "images/s of training steps (or inference)",
     "Times --steps training steps (forward, softmax cross-entropy, backward, SGD\n"
     "with momentum 0.9 and lr 0.01) after --warmup-steps untimed ones, on one\n"
     "batch of random inputs (uniform in [-1, 1), from --seed) of the model's\n"
     "input shape, and prints images/s and ms per step. The steps are those of\n"
     "train (on a GPU queued ahead and replayed from a CUDA graph); no data\n"
     "loading is timed. --infer times inference passes instead.",
     NULL, EXITS, cli_bench},
    {"sweep", AMDNN_FOR_SWEEP, 1, "MODEL.onnx --data SPEC --mode MODE [options]",
     "top-1 / loss with each Conv/Gemm/MatMul alone in MODE",
     "Per-layer sensitivity: evaluates MODEL on the test split of SPEC with every\n"
     "product exact (acc32, the baseline), then with each Conv/Gemm/MatMul node\n"
     "alone in MODE (the rest acc32), then with all of them in MODE. A row per\n"
     "run: node, op, MACs per sample, top-1, top-5, loss, and the drop of top-1\n"
     "and the rise of the loss from the baseline. --stop-after N stops after N\n"
     "rows with exit status 3; the same command with --tsv continues.",
     "data,mode", EXITS ", 3 stopped by --stop-after", cli_sweep},
    {"lut", AMDNN_FOR_LUT, 0, "--mode MODE -o FILE [--format amdq8|bin] | --describe FILE [--signed]",
     "writes or describes a multiplier table",
     "Writes the table of MODE: a 7-bit design's 16384-byte table (acc16, am16,\n"
     "mit16: entry [i*128 + j] describes (1 + i/128) * (1 + j/128); bit 7 the\n"
     "carry, bits 6..0 the product's top 7 fraction bits), which --mode lut:FILE\n"
     "loads; or with q8u:exact, q8s:exact, q8u:FILE, q8s:FILE the 256 x 256\n"
     "8-bit table, which --mode q8u:FILE / q8s:FILE loads (docs/quantized.md).\n"
     "--describe FILE prints what a table is.",
     NULL, EXITS, cli_lut},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

/* Every mode with one line each (`amdnn-onnx modes`, `amdnn-onnx --help`). */
static void print_modes(FILE *out) {
  for (int i = 0; i < amdnn_mode_count(); i++) {
    const char *name = amdnn_mode_name(i);
    fprintf(out, "  %-16s %s\n", strcmp(name, "lut") ? name : "lut:FILE", amdnn_mode_summary(i));
  }
  fprintf(out, "  %-16s %s\n", "q8u:FILE|exact", "an 8-bit unsigned table, 256 x 256 products of uint8 codes");
  fprintf(out, "  %-16s %s\n", "q8s:FILE|exact", "an 8-bit signed table, 256 x 256 products of int8 codes");
}

static void usage(FILE *out) {
  fprintf(out, "usage: amdnn-onnx COMMAND [options]\n\n"
               "Runs, evaluates and trains ONNX models with the products of every Conv,\n"
               "Gemm and MatMul computed by an emulated (approximate) hardware multiplier.\n\n"
               "commands:\n");
  for (int i = 0; i < N_COMMANDS; i++) fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "  %-8s %s\n", "modes", "lists the multiplier modes");
  fprintf(out, "\nmodes (--mode):\n");
  print_modes(out);
  fprintf(out, "\n`amdnn-onnx COMMAND --help` describes each command's options.\n"
               "Exit status: " EXITS "; train also 3 and 4 (see train --help).\n");
}

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
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("amdnn-onnx %s\n", amdnn_version());
    return 0;
  }
  if (!strcmp(argv[1], "modes")) {
    if (argc > 2 && strcmp(argv[2], "--help") && strcmp(argv[2], "-h")) {
      fprintf(stderr, "amdnn-onnx modes: unexpected argument '%s'\n", argv[2]);
      return 2;
    }
    printf("%s", argc > 2 ? "usage: amdnn-onnx modes\n\nThe multiplier modes that --mode takes:\n" : "");
    print_modes(stdout);
    return 0;
  }
  keep_freed_memory();
  for (int i = 0; i < N_COMMANDS; i++) {
    if (strcmp(argv[1], commands[i].name)) continue;
    cli_args a;
    int rc = cli_parse(&commands[i], argc - 1, argv + 1, &a);
    if (rc < 0) rc = commands[i].run(&commands[i], &a);
    cli_args_free(&a);
    return rc;
  }
  fprintf(stderr, "amdnn-onnx: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
