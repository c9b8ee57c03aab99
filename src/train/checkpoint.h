/* Crash-safe training checkpoints: a generic container of named binary
 * sections. The trainer decides what goes in (parameter block, optimizer
 * state blocks, BN statistics, RNG state, epoch/step position, config string,
 * model hash); this layer only stores, verifies and restores bytes.
 *
 * File format (all integers little-endian, whatever the host):
 *   header   "AMDCKPT1" (8 bytes), u32 version (AMD_CKPT_VERSION), u32 section count
 *   section  u32 name length (1..AMD_CKPT_NAME_MAX), name bytes (no NUL),
 *            u64 data size, u32 zlib crc32 of the data, data bytes
 *   trailer  u64 total file length (trailer included),
 *            u32 crc32 of every byte before the trailer that is NOT section
 *            data (the header and all section headers)
 * A file verifies when the magic and version match, every section header lies
 * inside the file, every data crc and the header crc match, and the stored
 * total length equals both the parsed length and the file's size. A single
 * flipped bit anywhere in the file, or a truncation at any length, fails it.
 * Reading never allocates what the file claims: sizes are checked against the
 * bytes the file really has and data is streamed through a fixed buffer.
 *
 * Files are DIR/ckpt-<step as 10+ digits>.amdckpt. Only one process may write
 * checkpoints into a given DIR at a time.
 *
 * Fault injection (tests, hardening): with amd_ckpt_set_faults given a
 * ckpt_write_bytes of N (AMD_FAULT_WRITE_BYTES, core/env.h), every later
 * amd_ckpt_write behaves as if the disk filled up after N bytes of the
 * checkpoint file: the write fails with ENOSPC ("No space left on device")
 * after exactly N bytes reached the temp file. An unparsable value is an
 * error of the write. */
#ifndef AMD_CHECKPOINT_H
#define AMD_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "../core/env.h"
#include "../core/status.h"

#define AMD_CKPT_VERSION 1u
#define AMD_CKPT_NAME_MAX 255

typedef struct amd_ckpt_section {
  const char *name; /* 1..AMD_CKPT_NAME_MAX bytes, unique within a checkpoint */
  void *data;       /* may be NULL only when bytes == 0 */
  size_t bytes;
} amd_ckpt_section;

/* The fault hooks the writer honours from now on (f->ckpt_write_bytes; NULL
 * or a NULL field: none). train sets them from the environment once. */
void amd_ckpt_set_faults(const amd_fault_hooks *f);
/* Writes the n sections to DIR/ckpt-<step, 10 digits>.amdckpt atomically:
 * writes DIR/.tmp-ckpt-<step>-<pid>.amdckpt, fsyncs it, renames it over the
 * final name and fsyncs DIR. Then prunes: keeps the new file and the newest
 * keep-1 checkpoints with a smaller step, deletes older ones, and removes
 * stale DIR/.tmp-ckpt-* files left by a crash. Checkpoints with a LARGER step
 * than the new one (a run resumed from an older checkpoint) are left alone.
 * keep >= 1 (the trainer passes 2). step >= 0.
 * Returns 0 on success (st->msg is "" or, if pruning an old file failed, a
 * "warning: ..." line; the new checkpoint is in place either way). On failure
 * (ENOSPC, EIO, permission, missing or non-directory DIR, bad arguments)
 * returns -1: no existing checkpoint was removed, the temp file is gone, and
 * st names the path, the failed operation and the errno text. */
int amd_ckpt_write(const char *dir, int64_t step, const amd_ckpt_section *secs, int n, int keep,
                   amd_status *st);

/* Finds the newest checkpoint in dir (largest step) that verifies. Corrupt or
 * truncated newer ones are skipped, and if warning is non-NULL one line naming
 * each skipped file and why is written into it, without a "warning:" prefix
 * ("skipped checkpoint P: reason; skipped ..."; "" when none was skipped).
 * Returns 0 with the path in path; 1 when there is no checkpoint at all (dir
 * missing, or no ckpt-*.amdckpt in it; path untouched); -1 on error: dir is
 * unreadable, path_len is too small, or checkpoint files exist but none
 * verifies (starting over silently would throw the run away). */
int amd_ckpt_find_latest(const char *dir, char *path, size_t path_len, char *warning, size_t warning_len,
                         amd_status *st);

/* Reads a checkpoint. The whole file is verified first; then every requested
 * section (by name) must exist and its stored size must equal secs[i].bytes
 * (else an error naming the section and both sizes), and only then is each
 * copied into secs[i].data. Stored sections that were not requested are
 * ignored. On -1 no requested buffer has been written, except if the file
 * changed between verification and copying (reported as such). */
int amd_ckpt_read(const char *path, amd_ckpt_section *secs, int n, amd_status *st);

/* Verifies one checkpoint file (see the format above). 0 if it verifies, -1
 * with the reason in st otherwise. */
int amd_ckpt_verify(const char *path, amd_status *st);

/* ------------------------------------------------------------------------
 * The training checkpoint (amdnn-onnx train): what a resumed run needs to
 * continue bit for bit, in these sections:
 *   "train_state_version"  u32, AMD_TRAIN_STATE_VERSION
 *   "params"               the parameter block (floats, host order)
 *   "optimizer"            the optimizer state blocks
 *   "bn_statistics"        the BatchNormalization statistics, in graph order
 *   "train_state"          amd_train_state, field by field (table in
 *                          checkpoint.c), each 8 bytes little-endian
 *   "config"               the options a resume must share (NUL-padded text)
 *   "metrics"              the metrics TSV so far (NUL-padded text)
 * Version 1 (no "train_state_version"; a raw C struct "position") is what
 * builds before the version was written made: refused like any other
 * version but this one, with a message naming both. */
#define AMD_TRAIN_STATE_VERSION 2u

typedef struct amd_train_state {
  int64_t epoch;        /* 0-based epoch in progress */
  int64_t batch;        /* next batch index in that epoch */
  int64_t step;         /* optimizer steps done */
  int64_t seen;         /* training samples in the epoch so far */
  double loss_sum;      /* partial epoch sums */
  int64_t top1;
  double train_seconds; /* training time so far (for the hours column) */
  uint64_t aug_rng;     /* the augmentation stream (crops, flips, cutout) */
  uint64_t dropout_rng; /* the dropout stream (the trainer's ctx.rng) */
  uint64_t model_hash;  /* the model file's hash: a checkpoint resumes only its model */
  double loss_scale;    /* fp16 dynamic loss scaling (1 when unused) */
  int64_t scale_good;   /* finite steps since the scale last changed */
  int64_t skipped;      /* steps skipped for overflowing gradients */
} amd_train_state;

/* The buffers of a training checkpoint (byte images, written and read in
 * place) and its state. */
typedef struct amd_train_ckpt {
  float *params;
  int64_t n_params;
  float *opt;
  int64_t n_opt;
  float *bn;
  int64_t n_bn;
  char *config;
  size_t config_bytes;
  char *metrics;
  size_t metrics_bytes;
  amd_train_state state;
} amd_train_ckpt;

/* Writes c as DIR/ckpt-<c->state.step> (amd_ckpt_write, keeping `keep`). */
int amd_train_ckpt_write(const char *dir, const amd_train_ckpt *c, int keep, amd_status *st);
/* Reads the checkpoint at path into c's buffers (each of c's sizes) and
 * c->state. A checkpoint of another training-state version is refused
 * before anything is read: "... training state version F; this build reads
 * version E ...". */
int amd_train_ckpt_read(const char *path, amd_train_ckpt *c, amd_status *st);
/* The training state version of the checkpoint at path (1 for a file of the
 * unversioned format); -1 when it is not a training checkpoint that verifies. */
int amd_train_ckpt_version(const char *path, uint32_t *version, amd_status *st);
/* c's buffers as a list, the state as the in-memory struct (sending it
 * between processes of one build): n (at most 6) pointers and sizes. */
int amd_train_ckpt_parts(amd_train_ckpt *c, void **bufs, size_t *sizes);

#endif
