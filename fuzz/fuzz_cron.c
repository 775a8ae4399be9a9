/* Cron schedules: any line to dt__cron_parse; a schedule that parses must
** answer dt__cron_next without looping, from a few instants. */
#include "internal.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char buf[512], why[200];
  if (size >= sizeof buf) return 0;
  memcpy(buf, data, size);
  buf[size] = 0;
  dt_cron c;
  if (dt__cron_parse(buf, &c, why, sizeof why) == 0) {
    static const int64_t at[] = {0, 951782400, 1795435200, 4102444800};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) dt__cron_next(&c, at[i]);
    dt__cron_free(&c);
  }
  return 0;
}
