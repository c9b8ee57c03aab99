/* Blocks of one address range that grows at its end: a request takes the
 * smallest free range that holds it (the block split off its start), else
 * goes at the end; a freed block merges with its free neighbours, and the end
 * comes back down when the last block is freed. Offsets only: the range's
 * memory is the caller's (the CUDA backend maps device memory under the end
 * as it grows, cuda/backend_cuda.cu). Against a cache that keeps a block per
 * size, this holds close to the live bytes: ResNet-50's training step came
 * within 1% of its live peak, the block cache 11% over
 * (docs/gpu.md#where-the-memory-goes; tools/alloc_replay.py's "one arena" is
 * the same policy). */
#ifndef AMD_RANGE_ALLOC_H
#define AMD_RANGE_ALLOC_H

#include <stddef.h>

typedef struct amd_range {
  size_t off, size;
} amd_range;

typedef struct amd_ranges {
  size_t align; /* every block's offset and size are multiples of it */
  size_t end;   /* the end of the highest block in use (0 when none) */
  size_t high;  /* the highest end so far */
  amd_range *free_ranges; /* sorted by offset, merged, all below end */
  int n_free, cap_free;
  amd_range *used; /* blocks in use, in no order */
  int n_used, cap_used;
} amd_ranges;

/* Empty ranges whose blocks are multiples of align (a power of two). */
void amd_ranges_init(amd_ranges *r, size_t align);
void amd_ranges_destroy(amd_ranges *r);
/* A block of at least bytes at *off: 0; 1 when it would end above limit
 * (nothing changes); -1 when the host is out of memory (nothing changes). */
int amd_ranges_take(amd_ranges *r, size_t bytes, size_t limit, size_t *off);
/* Frees the block at off: its size, or 0 when no block in use starts there. */
size_t amd_ranges_give(amd_ranges *r, size_t off);

#endif
