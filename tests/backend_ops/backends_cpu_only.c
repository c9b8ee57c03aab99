/* The backends of a build without CUDA: the CPU alone (-b cpu checks the
 * case list on it; without -b there is nothing to test: exit 77). */
#include "harness.h"

const hb_backend *const hb_backends[] = {&hb_backend_cpu, NULL};
