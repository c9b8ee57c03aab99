/* Helpers shared by the libFuzzer targets in fuzz/ (one per reader).
 *
 * Readers that take a path get the fuzz input through files in ONE temp
 * folder per process, created on first use (under $TMPDIR, else /tmp) and
 * reused for every input, so a run of millions of executions creates no more
 * than a handful of files. The folder is removed at normal exit; run.sh points
 * TMPDIR into the build folder so that what a crashed process leaves behind is
 * cleaned up with it. */
#ifndef AMD_FUZZ_COMMON_H
#define AMD_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libFuzzer's entry point (declared here so -Wmissing-prototypes stays quiet). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The per-process temp folder (absolute path); aborts if it cannot be made. */
const char *fuzz_tmpdir(void);
/* fuzz_tmpdir() + "/" + rel into a static-lifetime-free buffer of the caller. */
void fuzz_path(char *out, size_t n, const char *rel);
/* Creates (or truncates) tmpdir/rel with the given bytes; parent folders are
 * made as needed. Aborts on I/O failure (that is a harness problem, not a
 * finding). */
void fuzz_write(const char *rel, const uint8_t *data, size_t size);
/* Makes tmpdir/rel a symbolic link to target (relative to rel's folder), once. */
void fuzz_symlink(const char *target, const char *rel);

/* Set FUZZ_VERBOSE=1 to print each input's status line to stderr (for
 * checking that the seeds load). */
int fuzz_verbose(void);

#endif
