/* Small helpers shared by the commands: see cli_util.h. */
#include "cli_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *amd_safe_name(const char *name, char *buf, size_t n) {
  size_t j = 0;
  for (; name[j] && j < n - 1; j++) {
    char c = name[j];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
             c == '-';
    buf[j] = ok ? c : '_';
  }
  buf[j] = 0;
  return buf;
}

int amd_make_dir(const char *path, char *err, size_t err_len) {
  if (mkdir(path, 0777) != 0 && errno != EEXIST) {
    snprintf(err, err_len, "cannot create '%s': %s", path, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    snprintf(err, err_len, "'%s' is not a folder", path);
    return -1;
  }
  return 0;
}

int amd_parse_i64(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 0) return -1;
  *out = v;
  return 0;
}

int amd_parse_float(const char *s, float *out) {
  char *end;
  errno = 0;
  float v = strtof(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}
