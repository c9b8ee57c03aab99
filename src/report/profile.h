/* --profile: where the time of a run goes, per stage of the multiplier GEMM
 * work and per op family, as the reference code reported it.
 *
 * One process-wide accumulator, off unless amd_prof_start() was called. The
 * GEMM ops (Conv, Gemm, MatMul) record their stages (forward im2col, forward
 * GEMM, backward-data GEMM and col2im, backward-weights im2col and GEMM) with
 * the multiply-accumulates each GEMM did; the executor and the trainer record
 * each node's forward and backward time under its op type; the commands
 * record the rest of the step (data, loss, optimizer) and the wall time of
 * the measured part. CPU times are host clocks (CLOCK_MONOTONIC) around
 * synchronous work; a GPU backend installs a device clock (CUDA events on its
 * stream: each reading is the GPU's time when the work queued before it has
 * run), so the same calls measure GPU time. Not thread-safe: call from the
 * thread that drives the run (the GEMM's OpenMP workers never call it). */
#ifndef AMD_PROFILE_H
#define AMD_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "../core/status.h"

typedef enum amd_prof_stage {
  AMD_PROF_FWD_IM2COL,
  AMD_PROF_FWD_GEMM,
  AMD_PROF_BWD_DATA_GEMM,
  AMD_PROF_BWD_DATA_COL2IM,
  AMD_PROF_BWD_WEIGHT_IM2COL,
  AMD_PROF_BWD_WEIGHT_GEMM,
  AMD_PROF_STAGE_COUNT
} amd_prof_stage;

/* The rest of a step, recorded by the commands. */
typedef enum amd_prof_part {
  AMD_PROF_DATA,      /* batch assembly, augmentation, upload */
  AMD_PROF_LOSS,      /* softmax cross-entropy and its gradient */
  AMD_PROF_OPTIMIZER, /* the parameter update, BN statistics copy */
  AMD_PROF_ALLREDUCE, /* several processes: the gradient all-reduce, waiting included */
  AMD_PROF_PART_COUNT
} amd_prof_part;

extern int amd_prof_on;

/* Seconds on a monotonic clock: the device clock when one is installed, else
 * the host's. */
double amd_prof_clock(void);
/* Installs (NULL: removes) the clock of a device backend. */
void amd_prof_set_device_clock(double (*clock)(void));
/* Clears every figure and turns recording on. */
void amd_prof_start(void);
void amd_prof_stage_add(amd_prof_stage s, double seconds, double macs);
/* A node's forward or backward time under its op type, which must outlive
 * the profile (the op descriptor's name); is_gemm: Conv, Gemm, MatMul, whose
 * stages are recorded inside that time. */
void amd_prof_op_add(const char *op_type, int is_gemm, int backward, double seconds);
void amd_prof_part_add(amd_prof_part p, double seconds);

/* Timing a region: `double t0 = AMD_PROF_T0;` ... `AMD_PROF_STAGE(t0, s, macs);` */
#define AMD_PROF_T0 (amd_prof_on ? amd_prof_clock() : 0.0)
#define AMD_PROF_STAGE(t0, stage, macs)                                                                      \
  do {                                                                                                       \
    if (amd_prof_on) amd_prof_stage_add((stage), amd_prof_clock() - (t0), (double)(macs));                   \
  } while (0)

/* Prints the table to `out` (may be NULL) and writes it as TSV to tsv_path
 * (may be NULL; written atomically): one row per stage, per op family and
 * direction, per part of the rest, the time nobody recorded, and the total:
 * columns `what seconds share macs macs_per_s`. `wall_seconds` is the wall
 * time of the measured work (the share's denominator), `steps` the number of
 * batches it covered. Recording stops. */
int amd_prof_report(FILE *out, const char *tsv_path, double wall_seconds, int64_t steps, amd_status *st);
/* The same with the table as text in *text (malloc'd, no final newline; the
 * caller frees it), for callers that hand lines on rather than print. */
int amd_prof_report_text(char **text, const char *tsv_path, double wall_seconds, int64_t steps, amd_status *st);

#endif
