/* What the format readers (idx.c, cifar.c, image_folder.c, tensors.c) share:
 * paths, whole-file reads (plain or gzip) and the per-channel statistics of a
 * uint8 training split. The readers call only this file and dataset.h's
 * types; dataset.c dispatches to the readers, never the other way round. */
#include "reader_common.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/* ---------------------------------------------------------------- files */

int amd_data_join(char *out, size_t n, const char *dir, const char *name, amd_status *st) {
  int k = snprintf(out, n, "%s/%s", dir, name);
  if (k < 0 || (size_t)k >= n) return amd_fail(st, "path too long: %s/%s", dir, name);
  return 0;
}

int amd_data_find(char *out, size_t n, const char *dir, const char *name, amd_status *st) {
  struct stat sb;
  if (amd_data_join(out, n, dir, name, st)) return -1;
  if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) return 0;
  char gz[AMD_DATA_PATH_MAX];
  int k = snprintf(gz, sizeof gz, "%s.gz", out);
  if (k < 0 || (size_t)k >= sizeof gz || (size_t)k >= n) return amd_fail(st, "path too long: %s.gz", out);
  if (stat(gz, &sb) == 0 && S_ISREG(sb.st_mode)) {
    memcpy(out, gz, (size_t)k + 1);
    return 0;
  }
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return amd_fail(st, "data folder '%s' does not exist", dir);
  return amd_fail(st, "missing file: neither %s nor %s exists", out, gz);
}

int amd_data_read_all(const char *path, int64_t max_bytes, uint8_t **data, int64_t *len, amd_status *st) {
  *data = NULL;
  *len = 0;
  errno = 0;
  gzFile f = gzopen(path, "rb");
  if (!f) return amd_fail(st, "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
  gzbuffer(f, 1 << 17);
  int64_t cap = 0, n = 0;
  uint8_t *buf = NULL;
  const char *err = NULL;
  for (;;) {
    if (n == cap) {
      if (cap >= max_bytes + 1) {
        err = "too large";
        break;
      }
      int64_t ncap = cap ? 2 * cap : ((int64_t)1 << 20);
      if (ncap > max_bytes + 1) ncap = max_bytes + 1;
      uint8_t *nb = realloc(buf, (size_t)ncap);
      if (!nb) {
        err = "out of memory";
        break;
      }
      buf = nb;
      cap = ncap;
    }
    int64_t want = cap - n;
    if (want > (1 << 30)) want = 1 << 30;
    int got = gzread(f, buf + n, (unsigned)want);
    if (got < 0) {
      int zerr;
      err = gzerror(f, &zerr);
      break;
    }
    if (got == 0) break;
    n += got;
  }
  if (!err) {
    int zerr = Z_OK;
    const char *m = gzerror(f, &zerr);
    if (zerr == Z_BUF_ERROR)
      err = "truncated gzip stream (file ends in the middle of the data)";
    else if (zerr != Z_OK)
      err = m;
  }
  char msg[256];
  if (err) snprintf(msg, sizeof msg, "%s", err); /* gzerror's text lives in f */
  gzclose_r(f);
  if (err) {
    free(buf);
    if (n > max_bytes)
      return amd_fail(st, "%s: more than %lld bytes of data (limit)", path, (long long)max_bytes);
    return amd_fail(st, "%s: read error: %s", path, msg);
  }
  if (n > max_bytes) {
    free(buf);
    return amd_fail(st, "%s: more than %lld bytes of data (limit)", path, (long long)max_bytes);
  }
  *data = buf;
  *len = n;
  return 0;
}

/* ---------------------------------------------------------------- statistics */

void amd_data_stats_u8(const amd_data_split *s, int64_t c, int64_t hw, float *mean, float *std) {
  for (int64_t ch = 0; ch < c; ch++) {
    uint64_t hist[256] = {0};
    double cnt = 0;
    for (int64_t i = 0; i < s->n; i++) {
      if (s->rag) { /* an uncropped image (HWC): all its pixels */
        const int64_t np = (int64_t)s->rag_h[i] * s->rag_w[i];
        const uint8_t *p = s->rag + s->rag_off[i] + ch;
        for (int64_t k = 0; k < np; k++) hist[p[k * c]]++;
        cnt += (double)np;
        continue;
      }
      const uint8_t *p = s->u8 + (i * c + ch) * hw;
      for (int64_t k = 0; k < hw; k++) hist[p[k]]++;
      cnt += (double)hw;
    }
    double sum = 0, sum2 = 0;
    for (int v = 0; v < 256; v++) {
      double x = v / 255.0;
      sum += (double)hist[v] * x;
      sum2 += (double)hist[v] * x * x;
    }
    double m = cnt > 0 ? sum / cnt : 0.0;
    double var = cnt > 0 ? sum2 / cnt - m * m : 0.0;
    double sd = var > 0 ? sqrt(var) : 0.0;
    mean[ch] = (float)m;
    std[ch] = sd > 1e-12 ? (float)sd : 1.0f;
  }
}

int amd_data_set_stats(amd_dataset *ds, int identity, amd_status *st) {
  ds->mean = malloc((size_t)ds->c * sizeof(float));
  ds->std = malloc((size_t)ds->c * sizeof(float));
  if (!ds->mean || !ds->std) return amd_fail(st, "out of memory");
  if (identity) {
    for (int64_t ch = 0; ch < ds->c; ch++) {
      ds->mean[ch] = 0.0f;
      ds->std[ch] = 1.0f;
    }
  } else {
    amd_data_stats_u8(&ds->train, ds->c, ds->h * ds->w, ds->mean, ds->std);
  }
  return 0;
}
