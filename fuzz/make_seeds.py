#!/usr/bin/env python3
"""Regenerates fuzz/corpus/<target>/ seed files (small: every seed < 100 KB,
all of them < 2 MB). Standard library only.

  python3 fuzz/make_seeds.py TESTDATA AMDNN_ONNX CKPT_SEED

TESTDATA: the ONNX node tests (/usr/share/libonnx-testdata/data/node);
AMDNN_ONNX: a built amdnn-onnx (for the am16 table: `lut --mode am16`);
CKPT_SEED: a checkpoint written by amd_ckpt_write with the sections that
fuzz_ckpt.c reads (params 64 B, step 8 B, config 16 B), or '-' to keep the
one in the corpus. Models: the model.onnx of every test in
tests/conformance_expected.txt (the ops the tool supports) plus a few of
lenet-like shape written here by hand as protobuf bytes."""
import os, shutil, struct, subprocess, sys, tempfile, zlib, gzip

root = os.path.dirname(os.path.abspath(__file__))
corpus = os.path.join(root, 'corpus')
testdata, amdnn, ckpt_seed = sys.argv[1], sys.argv[2], sys.argv[3]


def put(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    assert len(data) < 100_000, (target, name, len(data))
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


# ---- protobuf encoding (just what the seeds need)
def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def fld(num, wt, payload):
    key = varint(num << 3 | wt)
    if wt == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload  # wt 2


def tensor(name, dtype, dims, raw=None, float_data=None, int32_data=None, int64_data=None,
           double_data=None, uint64_data=None, ext=None):
    b = b''.join(fld(1, 0, d) for d in dims) + fld(2, 0, dtype) + fld(8, 2, name.encode())
    if float_data is not None:
        b += fld(4, 2, b''.join(struct.pack('<f', x) for x in float_data))
    if int32_data is not None:
        b += fld(5, 2, b''.join(varint(x) for x in int32_data))
    if int64_data is not None:
        b += fld(7, 2, b''.join(varint(x) for x in int64_data))
    if raw is not None:
        b += fld(9, 2, raw)
    if double_data is not None:
        b += fld(10, 2, b''.join(struct.pack('<d', x) for x in double_data))
    if uint64_data is not None:
        b += fld(11, 2, b''.join(varint(x) for x in uint64_data))
    if ext is not None:
        for k, v in ext:
            b += fld(13, 2, fld(1, 2, k.encode()) + fld(2, 2, v.encode()))
        b += fld(14, 0, 1)
    return b


# ---- fuzz_model
n = 0
with open(os.path.join(root, '..', 'tests', 'conformance_expected.txt')) as f:
    for line in f:
        t = line.strip()
        if not t or t.startswith('#'):
            continue
        p = os.path.join(testdata, t, 'model.onnx')
        if os.path.exists(p) and os.path.getsize(p) < 100_000:
            put('fuzz_model', t + '.onnx', open(p, 'rb').read())
            n += 1


def value_info(name, dtype, dims):
    shape = b''.join(fld(1, 2, fld(1, 0, d) if isinstance(d, int) else fld(2, 2, d.encode()))
                     for d in dims)
    tt = fld(1, 0, dtype) + fld(2, 2, shape)
    return fld(1, 2, name.encode()) + fld(2, 2, fld(1, 2, tt))


def node(op, ins, outs, attrs=b''):
    return (b''.join(fld(1, 2, i.encode()) for i in ins) + b''.join(fld(2, 2, o.encode()) for o in outs)
            + fld(4, 2, op.encode()) + attrs)


def attr_ints(name, vals):  # AttributeProto INTS = 7
    return fld(5, 2, fld(1, 2, name.encode()) + fld(20, 0, 7) + fld(8, 2, b''.join(varint(v) for v in vals)))


def model(nodes, inits, inputs, outputs, opset=13):
    g = b''.join(fld(1, 2, nd) for nd in nodes) + fld(2, 2, b'g')
    g += b''.join(fld(5, 2, t) for t in inits)
    g += b''.join(fld(11, 2, v) for v in inputs) + b''.join(fld(12, 2, v) for v in outputs)
    return fld(1, 0, 8) + fld(7, 2, g) + fld(8, 2, fld(2, 0, opset))


# a small LeNet-like classifier: Conv-Relu-MaxPool-Flatten-Gemm, symbolic batch
w = tensor('w', 1, [4, 1, 3, 3], raw=struct.pack('<36f', *[(i % 7 - 3) / 10 for i in range(36)]))
b = tensor('b', 1, [4], raw=struct.pack('<4f', 0.1, -0.1, 0.2, 0))
fw = tensor('fw', 1, [10, 36], raw=struct.pack('<360f', *[(i % 5 - 2) / 20 for i in range(360)]))
fb = tensor('fb', 1, [10], raw=bytes(40))
shape = tensor('shape', 7, [2], raw=struct.pack('<2q', -1, 36))
put('fuzz_model', 'tiny_lenet.onnx', model(
    [node('Conv', ['x', 'w', 'b'], ['c'], attr_ints('pads', [1, 1, 1, 1])),
     node('Relu', ['c'], ['r']),
     node('MaxPool', ['r'], ['p'], attr_ints('kernel_shape', [2, 2]) + attr_ints('strides', [2, 2])),
     node('Reshape', ['p', 'shape'], ['f']),
     node('Gemm', ['f', 'fw', 'fb'], ['y'], fld(5, 2, fld(1, 2, b'transB') + fld(20, 0, 2) + fld(3, 0, 1)))],
    [w, b, fw, fb, shape], [value_info('x', 1, ['N', 1, 6, 6])], [value_info('y', 1, ['N', 10])]))
# shape computations: Shape -> Gather -> Unsqueeze -> Concat -> Reshape (opset 13)
idx = tensor('idx', 7, [], raw=struct.pack('<q', 0))
axes = tensor('axes', 7, [1], raw=struct.pack('<q', 0))
m1 = tensor('m1', 7, [1], raw=struct.pack('<q', -1))
put('fuzz_model', 'shape_chain.onnx', model(
    [node('Shape', ['x'], ['s']), node('Gather', ['s', 'idx'], ['n']),
     node('Unsqueeze', ['n', 'axes'], ['n1']), node('Concat', ['n1', 'm1'], ['ns'], fld(5, 2, fld(1, 2, b'axis') + fld(20, 0, 2) + fld(3, 0, 0))),
     node('Reshape', ['x', 'ns'], ['y'])],
    [idx, axes, m1], [value_info('x', 1, ['N', 3, 4, 4])], [value_info('y', 1, ['N', 48])]))
# a STRING attribute with no bytes: protobuf-c gives it no data pointer (fuzzer regression)
cw = tensor('w', 1, [2, 1, 3, 3], raw=struct.pack('<18f', *[i / 10 for i in range(18)]))
put('fuzz_model', 'regress-empty-string-attr', model(
    [node('Conv', ['x', 'w'], ['y'], fld(5, 2, fld(1, 2, b'auto_pad') + fld(20, 0, 3) + fld(4, 2, b'')))],
    [cw], [value_info('x', 1, ['N', 1, 5, 5])], [value_info('y', 1, ['N', 2, 3, 3])]))
print(f'fuzz_model: {n} conformance models + 3 hand-made')

# ---- fuzz_tensor: a few test-suite .pb files and typed-field / external ones
for t in ['test_abs', 'test_cast_FLOAT_to_FLOAT16', 'test_cast_FLOAT16_to_DOUBLE', 'test_gather_0',
          'test_and2d', 'test_where_example', 'test_reshape_reordered_all_dims', 'test_argmax_default_axis_example']:
    for pb in ['input_0.pb', 'input_1.pb', 'output_0.pb']:
        p = os.path.join(testdata, t, 'test_data_set_0', pb)
        if os.path.exists(p) and os.path.getsize(p) < 100_000:
            put('fuzz_tensor', f'{t}_{pb}', open(p, 'rb').read())
put('fuzz_tensor', 'typed_float.pb', tensor('f', 1, [2, 3], float_data=[1, 2, 3, 4, 5, -6]))
put('fuzz_tensor', 'typed_int32.pb', tensor('i', 6, [4], int32_data=[1, -2, 3, 2**31 - 1]))
put('fuzz_tensor', 'typed_int8.pb', tensor('i8', 3, [3], int32_data=[-128, 0, 127]))
put('fuzz_tensor', 'typed_f16.pb', tensor('h', 10, [2], int32_data=[0x3C00, 0xFC00]))
put('fuzz_tensor', 'typed_int64.pb', tensor('l', 7, [2, 1], int64_data=[-1, 2**40]))
put('fuzz_tensor', 'typed_double.pb', tensor('d', 11, [2], double_data=[0.5, -1e300]))
put('fuzz_tensor', 'typed_uint64.pb', tensor('u', 13, [1], uint64_data=[2**63 + 5]))
put('fuzz_tensor', 'scalar_raw.pb', tensor('s', 1, [], raw=struct.pack('<f', 3.5)))
put('fuzz_tensor', 'empty.pb', tensor('e', 1, [0, 3], raw=b''))
put('fuzz_tensor', 'external.pb', tensor('x', 1, [4, 4], ext=[('location', 'ext.bin'), ('offset', '128'),
                                                             ('length', '64')]))
print('fuzz_tensor: done')

# ---- fuzz_idx: byte0 = split position (images | labels), see fuzz_idx.c
def idx_pair(n, r, c, labels):
    img = struct.pack('>IIII', 2051, n, r, c) + bytes((i * 37) & 255 for i in range(n * r * c))
    lbl = struct.pack('>II', 2049, n) + bytes(labels)
    return img, lbl


def idx_seed(img, lbl):
    total = len(img) + len(lbl)
    for s in range(256):  # smallest split byte that lands exactly on the boundary
        if total * s // 255 == len(img):
            return bytes([s]) + img + lbl
    raise SystemExit('no split byte for this seed')


img, lbl = idx_pair(3, 4, 5, [0, 2, 1])
put('fuzz_idx', 'plain.idx', idx_seed(img, lbl))
img, lbl = idx_pair(2, 3, 3, [9, 4])
put('fuzz_idx', 'gz_images.idx', idx_seed(gzip.compress(img, mtime=0), lbl))
img, lbl = idx_pair(1, 2, 2, [1])
put('fuzz_idx', 'gz_both.idx', idx_seed(gzip.compress(img, mtime=0), gzip.compress(lbl, mtime=0)))
print('fuzz_idx: done')

# ---- fuzz_cifar: records of label + 3072 bytes
rec = lambda l, k: bytes([l]) + bytes((i * k) & 255 for i in range(3072))
put('fuzz_cifar', 'one.bin', rec(3, 7))
put('fuzz_cifar', 'two.bin', rec(0, 1) + rec(9, 13))
put('fuzz_cifar', 'two.bin.gz', gzip.compress(rec(5, 3) + rec(1, 11), mtime=0))
print('fuzz_cifar: done')

# ---- fuzz_png: byte0 even = same bytes for train and test image
def png(w, h, depth, ctype, rows, plte=None, trns=None, interlace=0):
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
    out = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, interlace))
    if plte:
        out += chunk(b'PLTE', plte)
    if trns:
        out += chunk(b'tRNS', trns)
    raw = b''.join(b'\x00' + r for r in rows)
    return out + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')


put('fuzz_png', 'gray8.png', b'\x00' + png(4, 3, 8, 0, [bytes([i * 20 + j for j in range(4)]) for i in range(3)]))
put('fuzz_png', 'rgb8.png', b'\x00' + png(3, 2, 8, 2, [bytes(range(i, i + 9)) for i in range(2)]))
put('fuzz_png', 'rgba8.png', b'\x00' + png(2, 2, 8, 6, [bytes(range(i, i + 8)) for i in range(2)]))
put('fuzz_png', 'graya8.png', b'\x00' + png(2, 2, 8, 4, [bytes([9, 255, 200, 0]) for _ in range(2)]))
put('fuzz_png', 'palette.png', b'\x00' + png(4, 2, 2, 3, [b'\x1b', b'\xe4'], plte=bytes(range(12)), trns=b'\x00\x80'))
put('fuzz_png', 'gray1.png', b'\x00' + png(9, 2, 1, 0, [b'\xaa\x80', b'\x55\x00']))
put('fuzz_png', 'gray16.png', b'\x00' + png(1, 1, 16, 0, [b'\x12\x34']))
# 3x3 Adam7: passes 1, 4, 5, 6 (two rows), 7 hold pixels; each row starts with filter byte 0
put('fuzz_png', 'interlaced.png', b'\x00' + png(3, 3, 8, 0, [b'\x01', b'\x03', b'\x01\x03', b'\x02', b'\x02',
                                                            b'\x01\x02\x03'], interlace=1))
a = png(2, 2, 8, 0, [b'\x00\xff'] * 2)
bb = png(3, 2, 8, 0, [b'\x00\xff\x10'] * 2)
split = next(s for s in range(256) if (len(a) + len(bb)) * s // 255 == len(a))
put('fuzz_png', 'train_test_differ.png', b'\x01' + bytes([split]) + a + bb)
print('fuzz_png: done')

# ---- fuzz_lut: the am16 table and small ones
with tempfile.TemporaryDirectory() as d:
    subprocess.run([amdnn, 'lut', '--mode', 'am16', '-o', os.path.join(d, 't')], check=True,
                   stdout=subprocess.DEVNULL)
    put('fuzz_lut', 'am16.lut', open(os.path.join(d, 't'), 'rb').read())
for m in range(1, 5):
    put('fuzz_lut', f'm{m}.lut', bytes((i * 53) & 255 for i in range(4 ** m)))
print('fuzz_lut: done')

# ---- fuzz_ckpt
if ckpt_seed != '-':
    put('fuzz_ckpt', 'valid.amdckpt', open(ckpt_seed, 'rb').read())
print('fuzz_ckpt: done')
