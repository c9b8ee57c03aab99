/* The allocation trace (see alloc_trace.h). */
#include "alloc_trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static FILE *trace;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int amd_alloc_trace_open(const char *path, amd_status *st) {
  if (!path || !*path) return 0;
  char name[4096];
  size_t o = 0;
  for (const char *c = path; *c && o + 24 < sizeof name; c++) {
    if (c[0] == '%' && c[1] == 'p') {
      o += (size_t)snprintf(name + o, sizeof name - o, "%ld", (long)getpid());
      c++;
    } else {
      name[o++] = *c;
    }
  }
  name[o] = 0;
  FILE *f = fopen(name, "w");
  if (!f) return amd_fail(st, "AMD_ALLOC_TRACE: cannot write %s: %s", name, strerror(errno));
  pthread_mutex_lock(&lock);
  if (trace) fclose(trace);
  trace = f;
  pthread_mutex_unlock(&lock);
  return 0;
}

void amd_alloc_trace_alloc(int device, size_t bytes, const void *p) {
  if (!trace || !p) return;
  pthread_mutex_lock(&lock);
  fprintf(trace, "a %s %zu %p\n", device ? "device" : "host", bytes, p);
  pthread_mutex_unlock(&lock);
}

void amd_alloc_trace_free(const void *p) {
  if (!trace || !p) return;
  pthread_mutex_lock(&lock);
  fprintf(trace, "f %p\n", p);
  pthread_mutex_unlock(&lock);
}

void amd_alloc_trace_workspace(int slot, size_t bytes) {
  if (!trace) return;
  pthread_mutex_lock(&lock);
  fprintf(trace, "w %d %zu\n", slot, bytes);
  pthread_mutex_unlock(&lock);
}
