/* Blocks of one growing address range (see range_alloc.h). A few hundred
 * blocks live at once in a training step, so the lists are searched from end
 * to end. */
#include "range_alloc.h"

#include <stdlib.h>
#include <string.h>

void amd_ranges_init(amd_ranges *r, size_t align) {
  memset(r, 0, sizeof *r);
  r->align = align ? align : 1;
}

void amd_ranges_destroy(amd_ranges *r) {
  free(r->free_ranges);
  free(r->used);
  amd_ranges_init(r, r->align);
}

/* Room for n entries in *list of capacity *cap. */
static int reserve(amd_range **list, int *cap, int n) {
  if (n <= *cap) return 0;
  int c = *cap ? *cap : 64;
  while (c < n) c *= 2;
  amd_range *p = realloc(*list, (size_t)c * sizeof *p);
  if (!p) return -1;
  *list = p, *cap = c;
  return 0;
}

int amd_ranges_take(amd_ranges *r, size_t bytes, size_t limit, size_t *off) {
  const size_t size = ((bytes ? bytes : 1) + r->align - 1) / r->align * r->align;
  /* Free ranges lie below or between blocks in use: at most as many as the
   * blocks, one more while a freed block merges. With room for that kept
   * here, amd_ranges_give never allocates. */
  if (reserve(&r->used, &r->cap_used, r->n_used + 1) || reserve(&r->free_ranges, &r->cap_free, r->n_used + 2))
    return -1;
  int best = -1;
  for (int i = 0; i < r->n_free; i++)
    if (r->free_ranges[i].size >= size && (best < 0 || r->free_ranges[i].size < r->free_ranges[best].size)) best = i;
  if (best >= 0) {
    amd_range *f = &r->free_ranges[best];
    *off = f->off;
    if (f->size == size) {
      memmove(f, f + 1, (size_t)(r->n_free - best - 1) * sizeof *f);
      r->n_free--;
    } else {
      f->off += size, f->size -= size;
    }
  } else {
    /* at the end, starting where a free range reaches it */
    amd_range *last = r->n_free ? &r->free_ranges[r->n_free - 1] : NULL;
    const int grow_last = last && last->off + last->size == r->end;
    const size_t start = grow_last ? last->off : r->end;
    if (start + size > limit || start + size < start) return 1;
    if (grow_last) r->n_free--;
    *off = start;
    r->end = start + size;
    if (r->end > r->high) r->high = r->end;
  }
  r->used[r->n_used++] = (amd_range){*off, size};
  return 0;
}

size_t amd_ranges_give(amd_ranges *r, size_t off) {
  int u = -1;
  for (int i = 0; i < r->n_used; i++)
    if (r->used[i].off == off) {
      u = i;
      break;
    }
  if (u < 0) return 0;
  const size_t size = r->used[u].size;
  r->used[u] = r->used[--r->n_used];
  /* the free list, sorted by offset: insert, then merge with the neighbours */
  int at = 0;
  while (at < r->n_free && r->free_ranges[at].off < off) at++;
  amd_range *f = r->free_ranges;
  memmove(f + at + 1, f + at, (size_t)(r->n_free - at) * sizeof *f);
  f[at] = (amd_range){off, size};
  r->n_free++;
  if (at + 1 < r->n_free && f[at].off + f[at].size == f[at + 1].off) {
    f[at].size += f[at + 1].size;
    memmove(f + at + 1, f + at + 2, (size_t)(r->n_free - at - 2) * sizeof *f);
    r->n_free--;
  }
  if (at > 0 && f[at - 1].off + f[at - 1].size == f[at].off) {
    f[at - 1].size += f[at].size;
    memmove(f + at, f + at + 1, (size_t)(r->n_free - at - 1) * sizeof *f);
    r->n_free--;
  }
  /* a free range that reaches the end is no longer below it */
  if (r->n_free && f[r->n_free - 1].off + f[r->n_free - 1].size == r->end) r->end = f[--r->n_free].off;
  return size;
}
