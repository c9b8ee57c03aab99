/* Helpers shared by the src/data format readers (reader_common.c; not part of
 * the public API). */
#ifndef AMD_DATA_READER_COMMON_H
#define AMD_DATA_READER_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"
#include "dataset.h"

#define AMD_DATA_PATH_MAX 4096

/* dir + "/" + name into out; fails (message) if it does not fit. */
int amd_data_join(char *out, size_t n, const char *dir, const char *name, amd_status *st);

/* Reads a whole file, gzip-compressed or not (zlib reads plain files
 * transparently), into a malloc'd buffer that grows as data arrives, so a
 * lying header cannot make the caller allocate more than the file holds.
 * More than max_bytes of (uncompressed) data is an error. A damaged or
 * truncated gzip stream is an error. */
int amd_data_read_all(const char *path, int64_t max_bytes, uint8_t **data, int64_t *len,
                      amd_status *st);

/* Finds DIR/NAME or DIR/NAME.gz (first that exists) into out; the message
 * names both when neither exists. */
int amd_data_find(char *out, size_t n, const char *dir, const char *name, amd_status *st);

/* Allocates ds->mean / ds->std for ds->c channels and fills them from the
 * training split (uint8) or with 0 / 1 (identity). */
int amd_data_set_stats(amd_dataset *ds, int identity, amd_status *st);

/* Overrides ds->mean / ds->std as o->norm asks (AMD_NORM_DATASET keeps
 * them); fails when the normalisation's channel count does not fit ds->c. */
int amd_data_apply_norm(amd_dataset *ds, const amd_image_opts *o, amd_status *st);

#endif
