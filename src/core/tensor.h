/* The project's tensor: dense, contiguous, row-major (C order), NCHW for images.
 *
 * dtype values equal ONNX TensorProto.DataType, so conversion is a cast.
 * dims are int64; a scalar has rank 0 and one element. `data` is owned by
 * whoever allocated it (amd_tensor_alloc / amd_tensor_free); `device` says
 * where it lives (AMD_DEVICE_CPU, or a CUDA device added by the CUDA backend). */
#ifndef AMD_TENSOR_H
#define AMD_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define AMD_MAX_RANK 8

/* The largest tensor a file or a shape computation may ask for (elements and
 * bytes): anything larger is an error, not an out-of-memory kill. */
#ifndef AMD_MAX_TENSOR_BYTES /* the fuzz build lowers it: fuzzing is about logic, not 1 GB tensors */
#define AMD_MAX_TENSOR_BYTES ((int64_t)1 << 36)
#endif

typedef enum amd_dtype {
  AMD_UNDEFINED = 0,
  AMD_FLOAT = 1,
  AMD_UINT8 = 2,
  AMD_INT8 = 3,
  AMD_UINT16 = 4,
  AMD_INT16 = 5,
  AMD_INT32 = 6,
  AMD_INT64 = 7,
  AMD_STRING = 8,
  AMD_BOOL = 9,
  AMD_FLOAT16 = 10,
  AMD_DOUBLE = 11,
  AMD_UINT32 = 12,
  AMD_UINT64 = 13,
  AMD_COMPLEX64 = 14,
  AMD_COMPLEX128 = 15,
  AMD_BFLOAT16 = 16,
} amd_dtype;

/* Device tags: host memory, or device memory of the CUDA backend (the backend
 * knows which GPU; a process uses one). */
enum { AMD_DEVICE_CPU = 0, AMD_DEVICE_CUDA = 1 };

typedef struct amd_tensor {
  amd_dtype dtype;
  int rank;
  int64_t dims[AMD_MAX_RANK];
  void *data;
  int device;
} amd_tensor;

/* Size in bytes of one element; 0 for dtypes the project does not compute with
 * (string, complex). */
size_t amd_dtype_size(amd_dtype t);
/* "float", "int64", ...; "dtype(N)" for unknown values (static buffer). */
const char *amd_dtype_name(amd_dtype t);

int64_t amd_tensor_numel(const amd_tensor *t);
size_t amd_tensor_nbytes(const amd_tensor *t);

/* Sets dtype and shape (no allocation). */
void amd_tensor_set_shape(amd_tensor *t, amd_dtype dtype, int rank, const int64_t *dims);
/* Checks that the shape is valid (rank <= AMD_MAX_RANK, dims >= 0, size under
 * AMD_MAX_TENSOR_BYTES) and allocates zeroed host memory for it. */
int amd_tensor_alloc(amd_tensor *t, amd_status *st);
/* Zeroed host memory of at least one byte (free() releases it), NULL when
 * out of memory: calloc, or for a large block malloc and a memset on every
 * core. A step reuses its large blocks from the heap (src/cli/main.c), and
 * calloc would clear a reused block on one core. */
void *amd_zeroed_alloc(size_t bytes);
void amd_tensor_free(amd_tensor *t);
/* Deep copy of src into dst (dst's old data is not freed). */
int amd_tensor_copy(amd_tensor *dst, const amd_tensor *src, amd_status *st);

/* "[1,3,32,32]" into buf. */
const char *amd_shape_str(const amd_tensor *t, char *buf, size_t n);
int amd_same_shape(const amd_tensor *a, const amd_tensor *b);

/* Reads element i of any numeric tensor as double / int64 (for shape inputs,
 * scalars, comparisons). */
double amd_tensor_get_f64(const amd_tensor *t, int64_t i);
int64_t amd_tensor_get_i64(const amd_tensor *t, int64_t i);
/* Writes element i, converting from double / int64 (saturating is not done:
 * ONNX Cast semantics apply C conversion). */
void amd_tensor_set_f64(amd_tensor *t, int64_t i, double v);
void amd_tensor_set_i64(amd_tensor *t, int64_t i, int64_t v);

/* IEEE binary16 / bfloat16 conversions (round to nearest even). */
float amd_half_to_float(uint16_t h);
uint16_t amd_float_to_half(float f);
float amd_bf16_to_float(uint16_t h);
uint16_t amd_float_to_bf16(float f);

#endif
