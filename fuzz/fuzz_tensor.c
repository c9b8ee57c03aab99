/* libFuzzer target: bytes -> onnx__tensor_proto__unpack -> amd_tensor_from_proto
 * (what amd_tensor_read_file does after reading the file), with the
 * per-process temp folder as the model folder so that external data is
 * fuzzed too: it holds ext.bin (256 bytes) for locations to find. A tensor
 * that converts is written back to a TensorProto (amd_tensor_to_proto + pack)
 * and must unpack again to the same bytes. */
#include "../src/onnx/tensor_proto.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    uint8_t ext[256];
    for (int i = 0; i < 256; i++) ext[i] = (uint8_t)i;
    fuzz_write("ext.bin", ext, sizeof ext);
    ready = 1;
  }
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
  if (!tp) return 0;
  amd_tensor t;
  amd_status st = {{0}};
  if (amd_tensor_from_proto(tp, fuzz_tmpdir(), &t, &st) == 0) {
    if (fuzz_verbose()) fprintf(stderr, "tensor: ok, %lld elements\n", (long long)amd_tensor_numel(&t));
    Onnx__TensorProto out;
    onnx__tensor_proto__init(&out);
    amd_tensor_to_proto(&t, tp->name, &out);
    size_t len = onnx__tensor_proto__get_packed_size(&out);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) abort();
    onnx__tensor_proto__pack(&out, buf);
    Onnx__TensorProto *back = onnx__tensor_proto__unpack(NULL, len, buf);
    amd_tensor t2;
    if (!back || amd_tensor_from_proto(back, NULL, &t2, &st) != 0) abort();
    if (t2.dtype != t.dtype || t2.rank != t.rank || !amd_same_shape(&t, &t2) ||
        memcmp(t.data, t2.data, amd_tensor_nbytes(&t)) != 0)
      abort();
    amd_tensor_free(&t2);
    onnx__tensor_proto__free_unpacked(back, NULL);
    free(buf);
    amd_tensor_free(&t);
  } else if (fuzz_verbose()) {
    fprintf(stderr, "tensor: %s\n", st.msg);
  }
  onnx__tensor_proto__free_unpacked(tp, NULL);
  return 0;
}
