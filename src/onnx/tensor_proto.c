/* TensorProto <-> amd_tensor, and TensorProto files: see tensor_proto.h. */
#include "tensor_proto.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int amd_read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *len, amd_status *st) {
  FILE *f = fopen(path, "rb");
  if (!f) return amd_fail(st, "cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return amd_fail(st, "'%s' is not a regular file", path);
  }
  if ((uint64_t)sb.st_size > max_bytes) {
    fclose(f);
    return amd_fail(st, "'%s' is too large (%lld bytes)", path, (long long)sb.st_size);
  }
  size_t n = (size_t)sb.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    fclose(f);
    return amd_fail(st, "out of memory reading '%s'", path);
  }
  if (fread(buf, 1, n, f) != n) {
    free(buf);
    fclose(f);
    return amd_fail(st, "cannot read '%s'", path);
  }
  fclose(f);
  *data = buf;
  *len = n;
  return 0;
}

/* The real path (every symbolic link resolved) of external data at location
 * in base_dir, into real; refused unless it lies inside the real path of
 * base_dir. The text checks of the location cannot see a link: a file or a
 * folder on the way that is a link leading out of the model's folder. */
static int resolve_inside(const char *base_dir, const char *location, char real[PATH_MAX], amd_status *st) {
  char path[PATH_MAX], dir[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s/%s", base_dir, location);
  if (n < 0 || n >= (int)sizeof path) return amd_fail(st, "external data path '%s' is too long", location);
  if (!realpath(base_dir, dir))
    return amd_fail(st, "cannot resolve the model's folder '%s': %s", base_dir, strerror(errno));
  if (!realpath(path, real)) return amd_fail(st, "cannot open external data '%s': %s", path, strerror(errno));
  size_t len = strcmp(dir, "/") == 0 ? 0 : strlen(dir); /* in "/", every path is inside */
  if (strncmp(real, dir, len) != 0 || real[len] != '/')
    return amd_fail(st, "external data '%s' resolves to '%s', outside the model's folder '%s'", location,
                    real, dir);
  return 0;
}

/* Reads external data (location relative to base_dir, offset, length); with
 * dst NULL only checks that the file holds nbytes at the offset. The file
 * opened is the resolved one that resolve_inside checked. */
static int read_external(const Onnx__TensorProto *tp, const char *base_dir, uint8_t *dst, size_t nbytes,
                         amd_status *st) {
  const char *location = NULL;
  long long offset = 0, length = -1;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const char *k = tp->external_data[i]->key, *v = tp->external_data[i]->value;
    if (!k || !v) continue;
    if (strcmp(k, "location") == 0) location = v;
    else if (strcmp(k, "offset") == 0) offset = strtoll(v, NULL, 10);
    else if (strcmp(k, "length") == 0) length = strtoll(v, NULL, 10);
  }
  if (!location) return amd_fail(st, "external data without a location");
  if (!base_dir) return amd_fail(st, "external data '%s' but no model folder is known", location);
  if (location[0] == '/' || strstr(location, ".."))
    return amd_fail(st, "external data path '%s' must be relative and stay in the model's folder", location);
  if (offset < 0 || (length >= 0 && (size_t)length != nbytes))
    return amd_fail(st, "external data '%s': offset %lld / length %lld do not match %zu bytes", location,
                    offset, length, nbytes);
  char path[PATH_MAX];
  if (resolve_inside(base_dir, location, path, st)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return amd_fail(st, "cannot open external data '%s': %s", path, strerror(errno));
  struct stat sb;
  int ok = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)offset <= (uint64_t)sb.st_size &&
           nbytes <= (uint64_t)sb.st_size - (uint64_t)offset;
  if (ok && dst) ok = fseeko(f, (off_t)offset, SEEK_SET) == 0 && fread(dst, 1, nbytes, f) == nbytes;
  fclose(f);
  if (!ok) return amd_fail(st, "external data '%s' is shorter than %zu bytes at offset %lld", path, nbytes, offset);
  return 0;
}

/* Copies n typed-field values into t (already allocated). */
static int from_typed_fields(const Onnx__TensorProto *tp, amd_tensor *t, int64_t n, amd_status *st) {
  size_t have;
  switch (t->dtype) {
  case AMD_FLOAT:
    have = tp->n_float_data;
    if ((int64_t)have != n) break;
    if (n) memcpy(t->data, tp->float_data, (size_t)n * 4); /* the field is NULL when empty */
    return 0;
  case AMD_DOUBLE:
    have = tp->n_double_data;
    if ((int64_t)have != n) break;
    if (n) memcpy(t->data, tp->double_data, (size_t)n * 8);
    return 0;
  case AMD_INT64:
    have = tp->n_int64_data;
    if ((int64_t)have != n) break;
    if (n) memcpy(t->data, tp->int64_data, (size_t)n * 8);
    return 0;
  case AMD_UINT32:
  case AMD_UINT64:
    have = tp->n_uint64_data;
    if ((int64_t)have != n) break;
    for (int64_t i = 0; i < n; i++) amd_tensor_set_i64(t, i, (int64_t)tp->uint64_data[i]);
    return 0;
  case AMD_INT32:
  case AMD_INT16:
  case AMD_INT8:
  case AMD_UINT16:
  case AMD_UINT8:
  case AMD_BOOL:
  case AMD_FLOAT16:
  case AMD_BFLOAT16:
    /* narrow types live in int32_data; float16 / bfloat16 as their bit patterns */
    have = tp->n_int32_data;
    if ((int64_t)have != n) break;
    for (int64_t i = 0; i < n; i++) {
      if (t->dtype == AMD_FLOAT16 || t->dtype == AMD_BFLOAT16)
        ((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i];
      else
        amd_tensor_set_i64(t, i, tp->int32_data[i]);
    }
    return 0;
  default:
    return amd_fail(st, "unsupported dtype %s", amd_dtype_name(t->dtype));
  }
  return amd_fail(st, "tensor has %zu values in its typed field, its dims say %lld", have, (long long)n);
}

/* How many values the typed field that holds dtype t has. */
static size_t typed_count(const Onnx__TensorProto *tp, amd_dtype t) {
  switch (t) {
  case AMD_FLOAT: return tp->n_float_data;
  case AMD_DOUBLE: return tp->n_double_data;
  case AMD_INT64: return tp->n_int64_data;
  case AMD_UINT32: case AMD_UINT64: return tp->n_uint64_data;
  default: return tp->n_int32_data; /* narrow types, float16, bfloat16 */
  }
}

int amd_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir, amd_tensor *out,
                          amd_status *st) {
  const char *name = tp->name ? tp->name : "";
  memset(out, 0, sizeof *out);
  if (tp->n_dims > AMD_MAX_RANK)
    return amd_fail(st, "tensor '%s' has rank %zu (at most %d supported)", name, tp->n_dims, AMD_MAX_RANK);
  amd_dtype dt = tp->has_data_type ? (amd_dtype)tp->data_type : AMD_UNDEFINED;
  if (amd_dtype_size(dt) == 0)
    return amd_fail(st, "tensor '%s' has unsupported dtype %s", name, amd_dtype_name(dt));
  out->dtype = dt;
  out->rank = (int)tp->n_dims;
  for (size_t i = 0; i < tp->n_dims; i++) out->dims[i] = tp->dims[i];
  if (tp->segment) return amd_fail(st, "tensor '%s' is segmented (unsupported)", name);
  /* Check the values the file really holds against the dims before allocating
   * what the dims claim (a few bytes must not make us allocate gigabytes).
   * Invalid or too large dims are left to amd_tensor_alloc to report. */
  int64_t claimed = 1;
  for (int i = 0; i < out->rank && claimed >= 0; i++) {
    int64_t d = out->dims[i];
    claimed = d < 0 || (d > 0 && claimed > AMD_MAX_TENSOR_BYTES / d) ? -1 : claimed * d;
  }
  int external =
      tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (claimed >= 0 && external &&
      read_external(tp, base_dir, NULL, (size_t)claimed * amd_dtype_size(dt), st))
    return amd_fail_prefix(st, "tensor '%s'", name);
  if (claimed >= 0 && !external) {
    size_t esize = amd_dtype_size(dt);
    if (tp->has_raw_data && tp->raw_data.len != (size_t)claimed * esize)
      return amd_fail(st, "tensor '%s': raw_data has %zu bytes, dims and dtype say %zu", name,
                      tp->raw_data.len, (size_t)claimed * esize);
    if (!tp->has_raw_data && typed_count(tp, dt) != (size_t)claimed)
      return amd_fail(st, "tensor '%s': tensor has %zu values in its typed field, its dims say %lld", name,
                      typed_count(tp, dt), (long long)claimed);
  }
  if (amd_tensor_alloc(out, st)) return amd_fail_prefix(st, "tensor '%s'", name);
  int64_t n = amd_tensor_numel(out);
  size_t nbytes = amd_tensor_nbytes(out);
  int rc;
  if (external) {
    rc = read_external(tp, base_dir, out->data, nbytes, st);
  } else if (tp->has_raw_data) {
    if (tp->raw_data.len != nbytes)
      rc = amd_fail(st, "raw_data has %zu bytes, dims and dtype say %zu", tp->raw_data.len, nbytes);
    else {
      if (nbytes) memcpy(out->data, tp->raw_data.data, nbytes); /* little-endian host assumed */
      rc = 0;
    }
  } else {
    rc = from_typed_fields(tp, out, n, st);
  }
  if (rc) {
    amd_tensor_free(out);
    return amd_fail_prefix(st, "tensor '%s'", name);
  }
  return 0;
}

void amd_tensor_to_proto(const amd_tensor *t, const char *name, Onnx__TensorProto *tp) {
  tp->n_dims = (size_t)t->rank;
  tp->dims = (int64_t *)t->dims;
  tp->has_data_type = 1;
  tp->data_type = (int32_t)t->dtype;
  tp->name = (char *)(name ? name : "");
  tp->has_raw_data = 1;
  tp->raw_data.len = amd_tensor_nbytes(t);
  tp->raw_data.data = t->data;
}

int amd_tensor_read_file(const char *path, amd_tensor *out, char **name, amd_status *st) {
  uint8_t *buf;
  size_t len;
  if (amd_read_file(path, (size_t)AMD_MAX_TENSOR_BYTES + (1u << 20), &buf, &len, st)) return -1;
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
  free(buf);
  if (!tp) return amd_fail(st, "'%s' is not a valid TensorProto file", path);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  int rc = amd_tensor_from_proto(tp, dir, out, st);
  if (rc == 0 && name) {
    *name = strdup(tp->name ? tp->name : "");
    if (!*name) {
      amd_tensor_free(out);
      rc = amd_fail(st, "out of memory");
    }
  }
  onnx__tensor_proto__free_unpacked(tp, NULL);
  if (rc) return amd_fail_prefix(st, "%s", path);
  return 0;
}

int amd_tensor_write_file(const char *path, const amd_tensor *t, const char *name, amd_status *st) {
  Onnx__TensorProto tp;
  onnx__tensor_proto__init(&tp);
  amd_tensor_to_proto(t, name, &tp);
  size_t len = onnx__tensor_proto__get_packed_size(&tp);
  uint8_t *buf = malloc(len ? len : 1);
  if (!buf) return amd_fail(st, "out of memory writing '%s'", path);
  onnx__tensor_proto__pack(&tp, buf);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    free(buf);
    return amd_fail(st, "cannot write '%s': %s", tmp, strerror(errno));
  }
  int ok = fwrite(buf, 1, len, f) == len;
  ok = (fflush(f) == 0) && ok;
  ok = (fsync(fileno(f)) == 0) && ok;
  ok = (fclose(f) == 0) && ok;
  free(buf);
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return amd_fail(st, "cannot write '%s': %s", path, strerror(e));
  }
  return 0;
}
