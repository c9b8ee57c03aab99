/* Small helpers shared by the commands. */
#ifndef AMD_CLI_UTIL_H
#define AMD_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A file name for a tensor name: characters other than letters, digits, '.',
 * '_' and '-' become '_'. */
const char *amd_safe_name(const char *name, char *buf, size_t n);
/* Creates a folder if missing (one level). */
int amd_make_dir(const char *path, char *err, size_t err_len);
/* Parses a non-negative integer / a float option value; returns -1 on junk. */
int amd_parse_i64(const char *s, int64_t *out);
int amd_parse_float(const char *s, float *out);

#endif
