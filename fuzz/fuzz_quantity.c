/* Quantities: any bytes to dt_quantity_parse, and a parsed value formatted
** back must read as itself. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char buf[256];
  if (size >= sizeof buf) return 0;
  memcpy(buf, data, size);
  buf[size] = 0;
  int64_t v;
  dt_error err;
  if (dt_quantity_parse(buf, &v, &err) == 0 && v >= 0) {
    char out[64];
    int64_t back;
    dt__fmt_quantity(out, sizeof out, "cpu", v);
    if (dt_quantity_parse(out, &back, &err) || back != v) abort();
  }
  return 0;
}
