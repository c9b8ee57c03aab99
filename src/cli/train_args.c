/* `amdnn-onnx train`: its options (usage text and parsing). */
#include "train_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../report/plot.h"
#include "../train/optim.h"
#include "cli_util.h"

static const char usage[] =
    "usage: amdnn-onnx train MODEL.onnx --data SPEC [options] -o TRAINED.onnx\n"
    "\n"
    "Trains MODEL (its own weights are the starting point) with softmax\n"
    "cross-entropy on its first output. A model that ends in Softmax or\n"
    "LogSoftmax is trained on that node's input (the logits), so the loss is the\n"
    "same cross-entropy either way.\n"
    "\n"
    "data:\n"
    "  --data SPEC            mnist:DIR (IDX, .gz or not; Fashion-MNIST too),\n"
    "                         cifar10:DIR (binary batches, .bin or .bin.gz),\n"
    "                         images:DIR (JPEG/PNG folders, see below),\n"
    "                         tensors:X.pb,Y.pb[,XTEST.pb,YTEST.pb]\n"
    "                         Images are normalised per channel with the training\n"
    "                         set's own mean and std (see --normalize).\n"
    "                         images:DIR holds DIR/train/<class>/ and DIR/val/<class>/\n"
    "                         (or test/), or DIR/<class>/ (one split: test = train),\n"
    "                         or images:DIR,labels=FILE; .jpg, .jpeg, .png\n"
    "%s"
    "  --augment LIST         comma list of crop:P (pad P and crop back), flip, cutout:S,\n"
    "                         rrc[:SMIN] (images: only, with --crop N: torchvision's\n"
    "                         RandomResizedCrop(N, scale=(SMIN, 1), default 0.08) from each\n"
    "                         training image kept after --resize, uncropped)\n"
    "  --val N                hold out N training samples (seeded) as a validation set\n"
    "  --no-shuffle           keep the data order (default: a seeded permutation per epoch)\n"
    "  --limit N              use only the first N samples of each split (quick runs)\n"
    "  --tta                  score the test (and validation) split with test-time\n"
    "                         augmentation: each image also mirrored left-right, the\n"
    "                         mean of the two logits\n"
    "  --host-batches         on a GPU, assemble each batch on the host and upload it\n"
    "                         (default there: the training images are copied to the\n"
    "                         GPU once and each batch is cropped, flipped and\n"
    "                         normalised by a kernel; the batches are the same;\n"
    "                         with --augment rrc always on the host)\n"
    "  --sync-steps           on a GPU, wait for each step's loss before queuing the\n"
    "                         next (default there: the host queues a step while the\n"
    "                         GPU runs the one before, and a step whose loss or\n"
    "                         gradients are not finite changes nothing; the same\n"
    "                         results; fp16 and several ranks always wait)\n"
    "  --no-graph             on a GPU, launch every step's kernels (default there:\n"
    "                         the second step of an epoch is captured into a CUDA\n"
    "                         graph that the later full batches replay; the same\n"
    "                         results)\n"
    "optimisation:\n"
    "  --epochs N             (default 10)\n"
    "  --batch N              (default 128)\n"
    "  --optimizer NAME       sgd, adam, adamw, rmsprop, lion (default sgd)\n"
    "  --lr LR                (default 0.01)\n"
    "  --momentum M           SGD / RMSprop momentum (default 0.9 for sgd)\n"
    "  --nesterov             Nesterov momentum (SGD)\n"
    "  --wd WD                weight decay (default 0; decoupled for adamw)\n"
    "  --schedule SPEC        learning-rate schedule (default constant):\n"
    "%s"
    "  --warmup N             linear warm-up over N epochs (constant, step, cosine)\n"
    "  --label-smoothing EPS  (default 0)\n"
    "  --freeze LIST          comma list; a parameter is kept fixed (no gradient, no\n"
    "                         update, written back unchanged) when an entry is a\n"
    "                         prefix of its initializer name ('layer1.' freezes all of\n"
    "                         layer1, 'fc.weight' one tensor), a pattern with * or ?\n"
    "                         of the whole name ('*.bn1.weight'), or the name or op\n"
    "                         type of a node that reads it ('Conv': every Conv's\n"
    "                         weights and biases)\n"
    "  --seed N               data order, augmentation, dropout, --reinit (default 1)\n"
    "  --reinit               start from fresh weights, initialised as PyTorch does by\n"
    "                         default (default: the model's own weights: fine-tuning)\n"
    "multiplier:\n"
    "  --mode MODE            product of every Conv/Gemm/MatMul GEMM, forward and both\n"
    "                         backward GEMMs (default acc32; see `amdnn-onnx --help`)\n"
    "  --mode-map LIST        NAME_OR_OPTYPE=MODE,... overrides --mode for the nodes of\n"
    "                         that name (see `amdnn-onnx info`) or op type (Conv, Gemm,\n"
    "                         MatMul), e.g. the first Conv and the classifier exact\n"
    "  --backward-mode M      'exact' (acc32) or a mode for both backward GEMMs of every\n"
    "                         node (default: each node's forward mode)\n"
    "  --q8-grad ste|table    the backward of the float Conv/Gemm/MatMul nodes that a q8\n"
    "                         mode quantizes on the fly: ste (default) the clipped\n"
    "                         straight-through estimator, the exact product's gradient;\n"
    "                         table adds the multiplier table's own slopes (its\n"
    "                         central difference quotients along each operand at the\n"
    "                         forward's codes, minus the exact product's), on the\n"
    "                         CPU and the GPU alike; see docs/quantized.md\n"
    "  --q8-calib minmax|percentile[:P]\n"
    "                         the data range of those nodes, calibrated on their first\n"
    "                         4 batches: minmax (default) their min and max;\n"
    "                         percentile[:P] (P default 99.99, 50 < P <= 100) each\n"
    "                         batch's (100-P)-th and P-th percentile (2048-bin\n"
    "                         histogram), the widest over the batches\n"
    "output:\n"
    "  -o FILE                the trained model: the original graph with the trained\n"
    "                         initializers and BN statistics, for inference\n"
    "  --metrics FILE.tsv     a row per epoch: epoch, hours, train_loss, train_acc,\n"
    "                         test_loss, test_top1, lr, images_per_s (+ val columns)\n"
    "  --plot FILE.png        loss and accuracy curves per epoch, redrawn after each epoch\n"
    "  --profile FILE.tsv     time per stage (im2col, GEMM, backward-data, backward-weights)\n"
    "                         and per op family over the training steps (on a GPU timed with\n"
    "                         CUDA events): a table at the end and the same rows in FILE.tsv\n"
    "  --checkpoint-dir DIR   save checkpoints there (the last two are kept)\n"
    "  --checkpoint-every N   every N epochs (default 1 with --checkpoint-dir)\n"
    "  --checkpoint-minutes M also every M minutes of training\n"
    "  --checkpoint-steps N   also every N optimizer steps\n"
    "  --resume               continue from the newest valid checkpoint in DIR\n"
    "  --walltime T           stop with a checkpoint before T (e.g. 47h30m, 90m, 3600s)\n"
    "                         and exit 3; SIGTERM and SIGINT do the same\n"
    "  --stop-after N         stop after N optimizer steps as --walltime would (tests resuming)\n"
    "  --device DEV           cpu or cuda[:N] (default: cuda when a GPU is present; under\n"
    "                         mpirun each rank takes GPU local-rank mod GPU-count)\n"
    "  --debug-sync           synchronise after every GPU kernel (finds a faulting kernel)\n"
    "  --gemm fast|exact      the GPU's GEMM tier of am16 and mbm14: Mitchell products plus\n"
    "                         their correction on tensor cores, the spec's products summed in\n"
    "                         another order (fast, the default), or each product materialised\n"
    "                         and summed in k order, the CPU's bits (exact)\n"
    "several processes (launched by mpirun or srun; see the README): CPU ranks sum\n"
    "their gradients with MPI, GPU ranks (one GPU each) with NCCL; AMD_DIST=mpi,\n"
    "nccl or none overrides the choice\n"
    "  --batch N              is per rank: the global batch is ranks x N\n"
    "  --sync-bn              BatchNormalization statistics over the global batch\n"
    "                         (default: each rank's own batch; running statistics averaged;\n"
    "                         CPU ranks only for now)\n"
    "\n"
    "Exit codes: 0 done, 1 error, 2 bad arguments, 3 stopped early with a\n"
    "checkpoint (resume with --resume), 4 the loss became NaN or Inf.\n";

/* "47h30m", "90m", "3600s", "2h", "3600" -> seconds; -1 on junk. */
static double parse_duration(const char *s) {
  double total = 0;
  int any = 0;
  while (*s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    double mul = 1;
    if (*end == 'h') mul = 3600, end++;
    else if (*end == 'm') mul = 60, end++;
    else if (*end == 's') end++;
    else if (*end) return -1;
    total += v * mul;
    any = 1;
    s = end;
  }
  return any ? total : -1;
}

int amd_train_parse_args(int argc, char **argv, amd_train_cfg *c) {
  memset(c, 0, sizeof *c);
  c->epochs = 10, c->batch = 128, c->seed = 1, c->lr = 0.01f, c->momentum = 0.9f;
  c->mode = "acc32", c->optimizer = "sgd", c->schedule = "constant";
  c->img.progress = amd_cli_image_progress, c->img.progress_user = (void *)"amdnn-onnx train";
  amd_status img_st;
  int img_k;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
#define OPT(name) (strcmp(a, name) == 0 && v && (++i, 1))
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf(usage, amd_image_opts_help(), amd_schedule_help());
      exit(0);
    } else if (OPT("--data")) c->data = v;
    else if (OPT("-o") || OPT("--output")) c->out = v;
    else if (OPT("--metrics")) c->metrics = v;
    else if (OPT("--plot")) c->plot = v;
    else if (OPT("--profile")) c->profile = v;
    else if (OPT("--checkpoint-dir")) c->ckpt_dir = v;
    else if (OPT("--mode")) c->mode = v;
    else if (OPT("--backward-mode")) c->bmode = v;
    else if (OPT("--mode-map")) c->mode_map = v;
    else if (OPT("--q8-grad")) {
      c->q8_grad = v;
      if (strcmp(v, "ste") != 0 && strcmp(v, "table") != 0) {
        fprintf(stderr, "amdnn-onnx train: --q8-grad '%s': expected ste (the straight-through estimator) or table "
                        "(the multiplier table's own difference quotients)\n", v);
        return -1;
      }
    }
    else if (OPT("--q8-calib")) {
      c->q8_calib = v;
      if (amd_cli_check_q8_calib("amdnn-onnx train", v)) return -1;
    }
    else if (OPT("--optimizer")) c->optimizer = v;
    else if (OPT("--schedule")) c->schedule = v;
    else if (OPT("--augment")) c->augment = v;
    else if (OPT("--freeze")) c->freeze = v;
    else if (OPT("--device")) c->device = v;
    else if (!strcmp(a, "--debug-sync")) c->debug_sync = 1;
    else if (OPT("--gemm")) {
      if (amd_cli_gemm_tier("amdnn-onnx train", v)) return -1;
    }
    else if (OPT("--epochs")) bad = amd_parse_i64(v, &c->epochs) || c->epochs < 1;
    else if (OPT("--batch")) bad = amd_parse_i64(v, &c->batch) || c->batch < 1;
    else if (OPT("--seed")) bad = amd_parse_i64(v, &c->seed);
    else if (OPT("--val")) bad = amd_parse_i64(v, &c->val);
    else if (OPT("--warmup")) bad = amd_parse_i64(v, &c->warmup);
    else if (OPT("--limit")) bad = amd_parse_i64(v, &c->limit) || c->limit < 1;
    else if (OPT("--stop-after")) bad = amd_parse_i64(v, &c->stop_after) || c->stop_after < 1;
    else if (OPT("--checkpoint-every")) bad = amd_parse_i64(v, &c->ckpt_every) || c->ckpt_every < 1;
    else if (OPT("--checkpoint-minutes")) bad = amd_parse_float(v, &c->ckpt_minutes) || c->ckpt_minutes <= 0;
    else if (OPT("--checkpoint-steps")) bad = amd_parse_i64(v, &c->ckpt_steps) || c->ckpt_steps < 1;
    else if (OPT("--lr")) bad = amd_parse_float(v, &c->lr) || c->lr < 0;
    else if (OPT("--momentum")) bad = amd_parse_float(v, &c->momentum) || c->momentum < 0, c->momentum_set = 1;
    else if (OPT("--wd")) bad = amd_parse_float(v, &c->wd) || c->wd < 0;
    else if (OPT("--label-smoothing")) bad = amd_parse_float(v, &c->smoothing) || c->smoothing < 0 || c->smoothing >= 1;
    else if (OPT("--walltime")) bad = (c->walltime_s = parse_duration(v)) <= 0;
    else if (!strcmp(a, "--nesterov")) c->nesterov = 1;
    else if (!strcmp(a, "--tta")) c->tta = 1;
    else if (!strcmp(a, "--no-shuffle")) c->no_shuffle = 1;
    else if (!strcmp(a, "--host-batches")) c->host_batches = 1;
    else if (!strcmp(a, "--sync-steps")) c->sync_steps = 1;
    else if (!strcmp(a, "--no-graph")) c->no_graph = 1;
    else if (!strcmp(a, "--resume")) c->resume = 1;
    else if (!strcmp(a, "--reinit")) c->reinit = 1;
    else if (!strcmp(a, "--sync-bn")) c->sync_bn = 1;
    else if ((img_k = amd_image_opt_parse(a, v, &c->img, &img_st)) != 0) {
      if (img_k < 0) {
        fprintf(stderr, "amdnn-onnx train: %s\n", img_st.msg);
        return -1;
      }
      i += img_k - 1;
    } else if (a[0] != '-' && !c->model) c->model = a;
    else {
      fprintf(stderr, "amdnn-onnx train: unknown or incomplete argument '%s' (see --help)\n", a);
      return -1;
    }
#undef OPT
    if (bad) {
      fprintf(stderr, "amdnn-onnx train: bad value '%s' for %s\n", v, a);
      return -1;
    }
  }
  if (!c->model || !c->data || !c->out) {
    fprintf(stderr, "amdnn-onnx train: MODEL, --data and -o are required (see --help)\n");
    return -1;
  }
  if (c->resume && !c->ckpt_dir) {
    fprintf(stderr, "amdnn-onnx train: --resume needs --checkpoint-dir\n");
    return -1;
  }
  if (c->ckpt_dir && !c->ckpt_every) c->ckpt_every = 1;
  if (c->plot && !amd_plot_available()) {
    fprintf(stderr, "amdnn-onnx train: --plot: built without cairo (install libcairo2-dev and rebuild)\n");
    return -1;
  }
  return 0;
}
